/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sb_util.h: helpers of the sandbox and netlink selftests: sandboxes, KVM
 * VMs, network namespaces and eBPF links made with raw syscalls.
 */
#ifndef SB_UTIL_H
#define SB_UTIL_H

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/cube.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define SB_DEV "/dev/" CUBE_DEVICE_NAME

/* Copy @src into the zeroed buffer @dst of @size bytes, truncating. */
static inline void sb_strcpy(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);

	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
}

static inline int sb_open_dev(void)
{
	return open(SB_DEV, O_RDWR | O_CLOEXEC);
}

/* A new sandbox fd, its id in *@id; -1 with errno on error. */
static inline int sb_create(int dev, uint64_t *id)
{
	struct cube_sandbox_create c = { 0 };
	int fd = ioctl(dev, CUBE_IOC_SANDBOX_CREATE, &c);

	if (fd >= 0 && id)
		*id = c.id;
	return fd;
}

static inline int sb_set_state(int sb, uint32_t state, uint32_t reason)
{
	struct cube_sandbox_state_arg a = { .state = state,
					    .exit_reason = reason };

	return ioctl(sb, CUBE_IOC_SANDBOX_SET_STATE, &a);
}

static inline int sb_set_limits(int sb, const char *template, uint32_t vcpus,
				uint64_t memory)
{
	struct cube_sandbox_limits l = { .vcpus = vcpus,
					 .memory_bytes = memory,
					 .owner_uid = 1000 };

	sb_strcpy(l.template_name, sizeof(l.template_name), template);
	return ioctl(sb, CUBE_IOC_SANDBOX_SET_LIMITS, &l);
}

static inline int sb_set_label(int sb, const char *key, const char *value,
			       uint32_t flags)
{
	struct cube_sandbox_label l = { .flags = flags };

	sb_strcpy(l.key, sizeof(l.key), key);
	sb_strcpy(l.value, sizeof(l.value), value);
	return ioctl(sb, CUBE_IOC_SANDBOX_SET_LABEL, &l);
}

static inline int sb_fd_ioctl(int sb, unsigned long cmd, int fd)
{
	struct cube_fd_arg a = { .fd = fd };

	return ioctl(sb, cmd, &a);
}

static inline int sb_info(int sb, struct cube_sandbox_info *info)
{
	memset(info, 0xa5, sizeof(*info));
	return ioctl(sb, CUBE_IOC_SANDBOX_GET_INFO, info);
}

static inline int sb_pool_enter(int sb, const char *pool)
{
	struct cube_pool_arg a = { 0 };

	sb_strcpy(a.name, sizeof(a.name), pool);
	return ioctl(sb, CUBE_IOC_SANDBOX_POOL_ENTER, &a);
}

static inline int sb_pool_take(int dev, const char *pool, uint64_t *id,
			       uint32_t *pid)
{
	struct cube_pool_arg a = { 0 };
	int ret;

	sb_strcpy(a.name, sizeof(a.name), pool);
	ret = ioctl(dev, CUBE_IOC_POOL_TAKE, &a);
	if (!ret) {
		*id = a.id;
		*pid = a.owner_pid;
	}
	return ret;
}

/* A ready sandbox of @template, its id in *@id. */
static inline int sb_create_ready(int dev, const char *template, uint64_t *id)
{
	int fd = sb_create(dev, id);

	if (fd < 0)
		return -1;
	if (sb_set_limits(fd, template, 1, 1 << 20) ||
	    sb_set_state(fd, CUBE_SANDBOX_READY, 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A fresh network namespace, as an fd; the caller stays in its own. */
static inline int sb_new_netns(void)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int fd = -1;

	if (self < 0)
		return -1;
	if (!unshare(CLONE_NEWNET)) {
		fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (setns(self, CLONE_NEWNET)) {
			close(fd);
			fd = -1;
		}
	}
	close(self);
	return fd;
}

/* Cookie of the netns @nsfd, read with SO_NETNS_COOKIE on a socket in it. */
static inline uint64_t sb_netns_cookie(int nsfd)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int s;

	if (self < 0)
		return 0;
	if (!setns(nsfd, CLONE_NEWNET)) {
		s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (s >= 0) {
			if (getsockopt(s, SOL_SOCKET, 71 /* SO_NETNS_COOKIE */,
				       &cookie, &len))
				cookie = 0;
			close(s);
		}
		if (setns(self, CLONE_NEWNET))
			cookie = 0;
	}
	close(self);
	return cookie;
}

static inline long sb_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* An sk_lookup program that lets everything through. */
static inline int sb_sk_lookup_prog(void)
{
	static const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SK_LOOKUP;
	a.expected_attach_type = BPF_SK_LOOKUP;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uintptr_t)"GPL";
	return sb_bpf(BPF_PROG_LOAD, &a);
}

/* A BPF link of @prog on the netns @nsfd. */
static inline int sb_netns_link(int prog, int nsfd)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = prog;
	a.link_create.target_fd = nsfd;
	a.link_create.attach_type = BPF_SK_LOOKUP;
	return sb_bpf(BPF_LINK_CREATE, &a);
}

static inline int sb_link_info(int link, struct bpf_link_info *info)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	memset(info, 0, sizeof(*info));
	a.info.bpf_fd = link;
	a.info.info_len = sizeof(*info);
	a.info.info = (uintptr_t)info;
	return sb_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
}

/* Whether a BPF link of this id still exists. */
static inline int sb_link_exists(uint32_t id)
{
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.link_id = id;
	fd = sb_bpf(BPF_LINK_GET_FD_BY_ID, &a);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return 0;
}

/* Netns inode a netns link is attached to; 0 once that netns is gone. */
static inline uint32_t sb_link_netns_ino(int link)
{
	struct bpf_link_info info;

	if (sb_link_info(link, &info))
		return 0;
	return info.netns.netns_ino;
}

/* A KVM VM fd, or -1 when there is no usable /dev/kvm. */
static inline int sb_kvm_vm(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int vm;

	if (kvm < 0)
		return -1;
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	close(kvm);
	return vm;
}

#endif /* SB_UTIL_H */
