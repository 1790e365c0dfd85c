// SPDX-License-Identifier: GPL-2.0
/*
 * sandbox_test: the sandbox ioctls of /dev/cube and of sandbox fds, each
 * with its success path and every rejected input, which must change nothing.
 */
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "cube_nl.h"
#include "sb_util.h"

FIXTURE(sb) {
	int dev;
	int fd;
	uint64_t id;
	struct cnl nl;
};

FIXTURE_SETUP(sb)
{
	self->dev = sb_open_dev();
	ASSERT_GE(self->dev, 0);
	ASSERT_EQ(cnl_open(&self->nl), 0);
	self->fd = sb_create(self->dev, &self->id);
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(sb)
{
	close(self->fd);
	close(self->dev);
	cnl_close(&self->nl);
}

static uint64_t live_sandboxes(struct cnl *nl)
{
	struct cnl_stats s;

	if (cnl_stats(nl, &s))
		return ~0ull;
	return s.v[CUBE_STATS_A_SANDBOXES];
}

TEST_F(sb, create)
{
	struct cube_sandbox_info info;
	struct cnl_sandbox s;
	uint64_t id2;
	int fd2;

	EXPECT_GT(self->id, 0ull);
	EXPECT_TRUE(fcntl(self->fd, F_GETFD) & FD_CLOEXEC);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.id, self->id);
	EXPECT_EQ(info.state, (uint32_t)CUBE_SANDBOX_CREATING);
	EXPECT_EQ(info.exit_reason, (uint32_t)CUBE_EXIT_NONE);
	EXPECT_EQ(info.flags, 0u);
	EXPECT_EQ(info.netns_cookie, 0ull);
	EXPECT_EQ(info.nr_bpf_links, 0u);
	EXPECT_EQ(info.vm_memory_bytes, 0ull);

	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_EQ(s.id, self->id);
	EXPECT_EQ(s.owner_pid, (uint32_t)getpid());
	EXPECT_EQ(s.state, (uint32_t)CUBE_SANDBOX_CREATING);
	EXPECT_GT(s.created_ns, 0ull);

	fd2 = sb_create(self->dev, &id2);
	ASSERT_GE(fd2, 0);
	EXPECT_GT(id2, self->id);
	EXPECT_EQ(live_sandboxes(&self->nl), 2ull);
	close(fd2);
	/* ids are never reused: the closed one is gone for good */
	EXPECT_EQ(cnl_sandbox_get(&self->nl, id2, &s), -ENOENT);
	EXPECT_EQ(live_sandboxes(&self->nl), 1ull);
}

TEST_F(sb, create_rejects)
{
	struct cube_sandbox_create c;
	uint64_t before = live_sandboxes(&self->nl);

	memset(&c, 0, sizeof(c));
	c.flags = 1;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SANDBOX_CREATE, &c), EINVAL);
	memset(&c, 0, sizeof(c));
	c.reserved = 1;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SANDBOX_CREATE, &c), EINVAL);
	memset(&c, 0, sizeof(c));
	c.id = 5;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SANDBOX_CREATE, &c), EINVAL);
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SANDBOX_CREATE, NULL), EFAULT);
	/* read-only memory: the id cannot be written back */
	{
		void *ro = mmap(NULL, 4096, PROT_READ,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		ASSERT_NE(ro, MAP_FAILED);
		EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SANDBOX_CREATE, ro),
			     EFAULT);
		munmap(ro, 4096);
	}
	/* same number, other size or direction */
	EXPECT_ERRNO(ioctl(self->dev, _IOWR(CUBE_IOCTL_MAGIC, 0x10, __u32), &c),
		     ENOTTY);
	EXPECT_ERRNO(ioctl(self->dev, _IOW(CUBE_IOCTL_MAGIC, 0x10,
					   struct cube_sandbox_create), &c),
		     ENOTTY);
	EXPECT_ERRNO(ioctl(self->dev, _IO(CUBE_IOCTL_MAGIC, 0x2f), 0), ENOTTY);
	/* sandbox-fd ioctls are not /dev/cube ioctls and vice versa */
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SANDBOX_GET_INFO, &c), ENOTTY);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_CREATE, &c), ENOTTY);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_VERSION, &c), ENOTTY);
	EXPECT_ERRNO(ioctl(self->fd, _IO(CUBE_IOCTL_MAGIC, 0x22), 0), ENOTTY);
	EXPECT_ERRNO(ioctl(self->fd, _IO('K', 0x1f), 0), ENOTTY);
	EXPECT_EQ(live_sandboxes(&self->nl), before);
}

static void expect_state(int fd, uint32_t state, uint32_t reason)
{
	struct cube_sandbox_info info;

	ASSERT_OK(sb_info(fd, &info));
	EXPECT_EQ(info.state, state);
	EXPECT_EQ(info.exit_reason, reason);
}

/* Bring a fresh sandbox to @state by allowed transitions. */
static int sandbox_in(int dev, uint32_t state)
{
	static const uint32_t path[] = {
		CUBE_SANDBOX_READY, CUBE_SANDBOX_RUNNING, CUBE_SANDBOX_PAUSED,
	};
	int fd = sb_create(dev, NULL);
	unsigned int i;

	if (fd < 0)
		return -1;
	if (state == CUBE_SANDBOX_EXITED)
		return sb_set_state(fd, state, CUBE_EXIT_SHUTDOWN) ? -1 : fd;
	for (i = 0; i < 3 && state != CUBE_SANDBOX_CREATING; i++) {
		if (sb_set_state(fd, path[i], 0))
			return -1;
		if (path[i] == state)
			break;
	}
	return fd;
}

TEST_F(sb, state_transitions)
{
	/* allowed[from][to] */
	static const int allowed[5][5] = {
		[CUBE_SANDBOX_CREATING] = { [CUBE_SANDBOX_READY] = 1,
					    [CUBE_SANDBOX_EXITED] = 1 },
		[CUBE_SANDBOX_READY] = { [CUBE_SANDBOX_RUNNING] = 1,
					 [CUBE_SANDBOX_EXITED] = 1 },
		[CUBE_SANDBOX_RUNNING] = { [CUBE_SANDBOX_PAUSED] = 1,
					   [CUBE_SANDBOX_EXITED] = 1 },
		[CUBE_SANDBOX_PAUSED] = { [CUBE_SANDBOX_RUNNING] = 1,
					  [CUBE_SANDBOX_EXITED] = 1 },
	};
	uint32_t from, to;

	for (from = 0; from < 5; from++) {
		for (to = 0; to < 5; to++) {
			uint32_t reason = to == CUBE_SANDBOX_EXITED ?
					  CUBE_EXIT_CRASH : 0;
			uint32_t old_reason = from == CUBE_SANDBOX_EXITED ?
					      CUBE_EXIT_SHUTDOWN : 0;
			int fd = sandbox_in(self->dev, from);

			ASSERT_GE(fd, 0);
			expect_state(fd, from, old_reason);
			if (allowed[from][to]) {
				EXPECT_EQ(sb_set_state(fd, to, reason), 0);
				expect_state(fd, to, reason);
			} else {
				EXPECT_ERRNO(sb_set_state(fd, to, reason),
					     EBUSY);
				expect_state(fd, from, old_reason);
			}
			close(fd);
		}
	}
}

TEST_F(sb, state_rejects)
{
	struct cube_sandbox_state_arg a;

	EXPECT_ERRNO(sb_set_state(self->fd, 5, 0), EINVAL);
	EXPECT_ERRNO(sb_set_state(self->fd, 0xffffffff, 0), EINVAL);
	/* a reason only with EXITED, and never CLOSED or unknown */
	EXPECT_ERRNO(sb_set_state(self->fd, CUBE_SANDBOX_READY,
				  CUBE_EXIT_CRASH), EINVAL);
	EXPECT_ERRNO(sb_set_state(self->fd, CUBE_SANDBOX_EXITED, 0), EINVAL);
	EXPECT_ERRNO(sb_set_state(self->fd, CUBE_SANDBOX_EXITED,
				  CUBE_EXIT_CLOSED), EINVAL);
	EXPECT_ERRNO(sb_set_state(self->fd, CUBE_SANDBOX_EXITED, 6), EINVAL);
	memset(&a, 0, sizeof(a));
	a.state = CUBE_SANDBOX_READY;
	a.reserved = 1;
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_STATE, &a), EINVAL);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_STATE, NULL),
		     EFAULT);
	expect_state(self->fd, CUBE_SANDBOX_CREATING, 0);
}

TEST_F(sb, limits)
{
	struct cube_sandbox_limits l;
	struct cube_sandbox_info info;
	struct cnl_sandbox s;

	ASSERT_OK(sb_set_limits(self->fd, "py-3.12_a.b", 4, 256 << 20));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.vcpus, 4u);
	EXPECT_EQ(info.memory_bytes, 256ull << 20);
	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_STREQ(s.template, "py-3.12_a.b");
	EXPECT_EQ(s.vcpus, 4u);
	EXPECT_EQ(s.owner_uid, 1000u);
	EXPECT_EQ(s.memory, 256ull << 20);
	/* may be changed while creating */
	ASSERT_OK(sb_set_limits(self->fd, "node", 1, 4096));

#define BAD_LIMITS(field, value) do {					\
	memset(&l, 0, sizeof(l));					\
	l.vcpus = 2;							\
	l.memory_bytes = 1 << 20;					\
	strcpy(l.template_name, "t");					\
	field = value;							\
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_LIMITS, &l), EINVAL); \
} while (0)
	BAD_LIMITS(l.flags, 1);
	BAD_LIMITS(l.reserved, 1);
	BAD_LIMITS(l.vcpus, 0);
	BAD_LIMITS(l.vcpus, CUBE_VCPUS_MAX + 1);
	BAD_LIMITS(l.memory_bytes, 0);
	BAD_LIMITS(l.memory_bytes, 4097);
	BAD_LIMITS(l.template_name[0], 0);			/* empty */
	BAD_LIMITS(l.template_name[0], ' ');			/* bad character */
	BAD_LIMITS(l.template_name[0], '/');
	BAD_LIMITS(l.template_name[3], 'x');			/* garbage after NUL */
	memset(&l, 0, sizeof(l));
	l.vcpus = 2;
	l.memory_bytes = 1 << 20;
	memset(l.template_name, 'a', sizeof(l.template_name));	/* no NUL */
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_LIMITS, &l), EINVAL);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_LIMITS, NULL),
		     EFAULT);

	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.vcpus, 1u);
	EXPECT_EQ(info.memory_bytes, 4096ull);
	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_STREQ(s.template, "node");

	/* configuration ends with CREATING */
	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_READY, 0));
	EXPECT_ERRNO(sb_set_limits(self->fd, "other", 2, 8192), EBUSY);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.vcpus, 1u);
}

TEST_F(sb, labels)
{
	struct cube_sandbox_label l;
	struct cnl_sandbox s;
	char key[16];
	int i;

	ASSERT_OK(sb_set_label(self->fd, "tenant", "acme", 0));
	ASSERT_OK(sb_set_label(self->fd, "app/tier", "web 1", 0));
	ASSERT_OK(sb_set_label(self->fd, "tenant", "initech", 0));
	ASSERT_OK(sb_set_label(self->fd, "empty", "", 0));
	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	ASSERT_EQ(s.nr_labels, 3u);
	for (i = 0; i < 3; i++) {
		if (!strcmp(s.label_key[i], "tenant"))
			EXPECT_STREQ(s.label_value[i], "initech");
		else if (!strcmp(s.label_key[i], "app/tier"))
			EXPECT_STREQ(s.label_value[i], "web 1");
		else
			EXPECT_STREQ(s.label_key[i], "empty");
	}
	ASSERT_OK(sb_set_label(self->fd, "empty", "", CUBE_LABEL_F_DELETE));
	EXPECT_ERRNO(sb_set_label(self->fd, "empty", "", CUBE_LABEL_F_DELETE),
		     ENOENT);

	/* bounded in number */
	for (i = 2; i < CUBE_LABELS_MAX; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ASSERT_OK(sb_set_label(self->fd, key, "v", 0));
	}
	EXPECT_ERRNO(sb_set_label(self->fd, "one-more", "v", 0), ENOSPC);
	/* replacing still works when full */
	ASSERT_OK(sb_set_label(self->fd, "k2", "w", 0));

#define BAD_LABEL(f_, v_) do {					\
	memset(&l, 0, sizeof(l));					\
	strcpy(l.key, "tenant");					\
	strcpy(l.value, "x");						\
	f_ = v_;							\
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_LABEL, &l), EINVAL); \
} while (0)
	BAD_LABEL(l.flags, 2);
	BAD_LABEL(l.flags, CUBE_LABEL_F_DELETE);	/* delete with a value */
	BAD_LABEL(l.reserved, 1);
	BAD_LABEL(l.key[0], 0);
	BAD_LABEL(l.key[0], '=');
	BAD_LABEL(l.key[8], 'x');			/* garbage after NUL */
	BAD_LABEL(l.value[0], '\n');
	BAD_LABEL(l.value[0], (char)0x80);
	BAD_LABEL(l.value[4], 'x');
	memset(&l, 0, sizeof(l));
	strcpy(l.key, "tenant");
	memset(l.value, 'v', sizeof(l.value));		/* no NUL */
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_LABEL, &l), EINVAL);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_SET_LABEL, NULL),
		     EFAULT);

	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_EQ(s.nr_labels, (unsigned int)CUBE_LABELS_MAX);
	for (i = 0; i < (int)s.nr_labels; i++)
		if (!strcmp(s.label_key[i], "tenant"))
			EXPECT_STREQ(s.label_value[i], "initech");

	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_READY, 0));
	EXPECT_ERRNO(sb_set_label(self->fd, "late", "v", 0), EBUSY);
}

TEST_F(sb, fd_arg_rejects)
{
	static const unsigned long cmds[] = {
		CUBE_IOC_SANDBOX_BIND_VM, CUBE_IOC_SANDBOX_SET_NETNS,
		CUBE_IOC_SANDBOX_ADD_BPF_LINK, CUBE_IOC_SANDBOX_SET_CLONE,
	};
	struct cube_sandbox_info info;
	struct cube_fd_arg a;
	unsigned int i;
	int memfd = memfd_create("cube-test", MFD_CLOEXEC);

	ASSERT_GE(memfd, 0);
	for (i = 0; i < 4; i++) {
		TH_LOG("ioctl %#lx", cmds[i]);
		EXPECT_ERRNO(sb_fd_ioctl(self->fd, cmds[i], -1), EBADF);
		EXPECT_ERRNO(sb_fd_ioctl(self->fd, cmds[i], 4000), EBADF);
		EXPECT_ERRNO(sb_fd_ioctl(self->fd, cmds[i], memfd), EINVAL);
		EXPECT_ERRNO(sb_fd_ioctl(self->fd, cmds[i], self->dev), EINVAL);
		EXPECT_ERRNO(sb_fd_ioctl(self->fd, cmds[i], self->fd), EINVAL);
		a.fd = memfd;
		a.flags = 1;
		EXPECT_ERRNO(ioctl(self->fd, cmds[i], &a), EINVAL);
		EXPECT_ERRNO(ioctl(self->fd, cmds[i], NULL), EFAULT);
	}
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, 0u);
	EXPECT_EQ(info.nr_bpf_links, 0u);
	close(memfd);
}

TEST_F(sb, bind_vm)
{
	struct kvm_userspace_memory_region region = { 0 };
	struct cube_sandbox_info info;
	struct cnl_sandbox s;
	int vm, vm2, vcpu;
	void *mem;

	vm = sb_kvm_vm();
	if (vm < 0)
		SKIP("no usable /dev/kvm");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	ASSERT_GE(vcpu, 0);
	/* a vCPU fd is a KVM anon inode but not a VM */
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_BIND_VM, vcpu),
		     EINVAL);
	ASSERT_OK(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_BIND_VM, vm));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_VM);
	EXPECT_EQ(info.vm_vcpus, 1u);
	EXPECT_EQ(info.vm_memory_bytes, 0ull);
	/* guest memory as KVM has it: two slots, 2 MiB + 1 MiB */
	mem = mmap(NULL, 3 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED);
	region.slot = 0;
	region.guest_phys_addr = 0;
	region.memory_size = 2 << 20;
	region.userspace_addr = (uintptr_t)mem;
	ASSERT_OK(ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region));
	region.slot = 1;
	region.guest_phys_addr = 4 << 20;
	region.memory_size = 1 << 20;
	region.userspace_addr = (uintptr_t)mem + (2 << 20);
	ASSERT_OK(ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.vm_memory_bytes, 3ull << 20);
	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_EQ(s.vm_memory, 3ull << 20);
	EXPECT_EQ(s.vm_vcpus, 1u);
	vm2 = sb_kvm_vm();
	ASSERT_GE(vm2, 0);
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_BIND_VM, vm2),
		     EBUSY);
	/* the sandbox keeps the VM alive after the VMM closed its fds */
	close(vcpu);
	close(vm);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.vm_vcpus, 1u);
	EXPECT_EQ(info.vm_memory_bytes, 3ull << 20);
	close(vm2);
	munmap(mem, 3 << 20);
}

TEST_F(sb, bind_vm_not_creating)
{
	int vm = sb_kvm_vm();

	if (vm < 0)
		SKIP("no usable /dev/kvm");
	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_READY, 0));
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_BIND_VM, vm),
		     EBUSY);
	close(vm);
}

TEST_F(sb, netns)
{
	struct cube_sandbox_info info;
	struct cnl_sandbox s;
	int ns = sb_new_netns(), ns2;
	uint64_t cookie;

	ASSERT_GE(ns, 0);
	cookie = sb_netns_cookie(ns);
	ASSERT_NE(cookie, 0ull);
	ASSERT_OK(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_SET_NETNS, ns));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.netns_cookie, cookie);
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_NETNS);
	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_EQ(s.netns_cookie, cookie);
	ns2 = sb_new_netns();
	ASSERT_GE(ns2, 0);
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_SET_NETNS, ns2),
		     EBUSY);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.netns_cookie, cookie);
	close(ns);
	close(ns2);
}

static int netns_open(int dev, uint64_t id, uint32_t flags)
{
	struct cube_sandbox_ref r = { .id = id, .flags = flags };

	return ioctl(dev, CUBE_IOC_SANDBOX_NETNS_OPEN, &r);
}

TEST_F(sb, netns_open)
{
	struct stat a, b;
	int ns = sb_new_netns(), got, status;
	pid_t pid;

	ASSERT_GE(ns, 0);
	/* no namespace yet */
	EXPECT_ERRNO(netns_open(self->dev, self->id, 0), ENOENT);
	ASSERT_OK(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_SET_NETNS, ns));
	EXPECT_ERRNO(netns_open(self->dev, self->id, 1), EINVAL);
	EXPECT_ERRNO(netns_open(self->dev, self->id + 1000000, 0), ENOENT);

	/* the very namespace the sandbox holds, close-on-exec */
	got = netns_open(self->dev, self->id, 0);
	ASSERT_GE(got, 0);
	ASSERT_OK(fstat(ns, &a));
	ASSERT_OK(fstat(got, &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(a.st_dev, b.st_dev);
	EXPECT_TRUE(fcntl(got, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(sb_netns_cookie(got), sb_netns_cookie(ns));
	close(got);

	/* not for a user without CAP_NET_ADMIN */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		_exit(netns_open(self->dev, self->id, 0) < 0 &&
		      errno == EPERM ? 0 : 11);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_EXIT(status, 0);

	/* gone with the sandbox */
	close(self->fd);
	self->fd = -1;
	EXPECT_ERRNO(netns_open(self->dev, self->id, 0), ENOENT);
	close(ns);
}

TEST_F(sb, bpf_links)
{
	struct cube_sandbox_info info;
	int ns = sb_new_netns(), prog, links[CUBE_BPF_LINKS_MAX + 1], i;

	ASSERT_GE(ns, 0);
	prog = sb_sk_lookup_prog();
	if (prog < 0)
		SKIP("cannot load an sk_lookup program: %s", strerror(errno));
	/* a program is not a link */
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_ADD_BPF_LINK, prog),
		     EINVAL);
	for (i = 0; i <= CUBE_BPF_LINKS_MAX; i++) {
		links[i] = sb_netns_link(prog, ns);
		ASSERT_GE(links[i], 0);
	}
	for (i = 0; i < CUBE_BPF_LINKS_MAX; i++)
		ASSERT_OK(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_ADD_BPF_LINK,
				      links[i]));
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_ADD_BPF_LINK,
				 links[0]), EEXIST);
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_ADD_BPF_LINK,
				 links[CUBE_BPF_LINKS_MAX]), ENOSPC);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.nr_bpf_links, (uint32_t)CUBE_BPF_LINKS_MAX);
	for (i = 0; i <= CUBE_BPF_LINKS_MAX; i++)
		close(links[i]);
	close(prog);
	close(ns);
}

/* A clone of a 16-page snapshot of a memfd; the snapshot id in *@snap. */
static int make_clone(int dev, uint64_t *snap)
{
	struct cube_snapshot_create sc = { .source = CUBE_SNAPSHOT_SRC_MEMFD };
	struct cube_clone_create cc = { 0 };
	int memfd = memfd_create("cube-snap", MFD_CLOEXEC), fd;

	if (memfd < 0 || ftruncate(memfd, 16 * 4096) ||
	    pwrite(memfd, "data", 4, 4096) != 4)
		return -1;
	sc.fd = memfd;
	sc.length = 16 * 4096;
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &sc)) {
		close(memfd);
		return -1;
	}
	close(memfd);
	*snap = sc.id;
	cc.snapshot_id = sc.id;
	fd = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	return fd;
}

TEST_F(sb, clone)
{
	struct cube_snapshot_id del = { 0 };
	struct cube_clone_counters cnt;
	struct cube_sandbox_info info;
	struct cnl_sandbox s;
	struct cnl_stats st;
	uint64_t snap = 0;
	volatile char *p;
	int clone, clone2;

	clone = make_clone(self->dev, &snap);
	ASSERT_GE(clone, 0);
	p = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, clone,
		 0);
	ASSERT_NE((void *)p, MAP_FAILED);
	EXPECT_EQ(p[4096], 'd');	/* one shared page */
	p[0] = 1;			/* one private page */
	p[8192] = 1;			/* and another */
	ASSERT_OK(ioctl(clone, CUBE_IOC_CLONE_COUNTERS, &cnt));
	ASSERT_GT(cnt.private_pages, 0ull);

	ASSERT_OK(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_SET_CLONE, clone));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_CLONE);
	EXPECT_EQ(info.private_pages, cnt.private_pages);
	EXPECT_EQ(info.shared_pages, cnt.shared_pages);
	ASSERT_EQ(cnl_sandbox_get(&self->nl, self->id, &s), 0);
	EXPECT_EQ(s.private_pages, cnt.private_pages);
	EXPECT_EQ(s.shared_pages, cnt.shared_pages);

	clone2 = ioctl(self->dev, CUBE_IOC_CLONE_CREATE,
		       &(struct cube_clone_create){ .snapshot_id = snap });
	ASSERT_GE(clone2, 0);
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_SET_CLONE, clone2),
		     EBUSY);
	close(clone2);

	/* the sandbox holds the clone after the VMM let go of it */
	munmap((void *)p, 16 * 4096);
	close(clone);
	ASSERT_EQ(cnl_stats(&self->nl, &st), 0);
	EXPECT_EQ(st.v[CUBE_STATS_A_CLONES], 1ull);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.private_pages, cnt.private_pages);
	close(self->fd);
	self->fd = sb_create(self->dev, &self->id);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(cnl_stats(&self->nl, &st), 0);
	EXPECT_EQ(st.v[CUBE_STATS_A_CLONES], 0ull);
	EXPECT_EQ(st.v[CUBE_STATS_A_PRIVATE_PAGES], 0ull);
	del.id = snap;
	ASSERT_OK(ioctl(self->dev, CUBE_IOC_SNAPSHOT_DELETE, &del));
}

TEST_F(sb, clone_not_creating)
{
	struct cube_snapshot_id del = { 0 };
	uint64_t snap = 0;
	int clone = make_clone(self->dev, &snap);

	ASSERT_GE(clone, 0);
	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_READY, 0));
	EXPECT_ERRNO(sb_fd_ioctl(self->fd, CUBE_IOC_SANDBOX_SET_CLONE, clone),
		     EBUSY);
	close(clone);
	del.id = snap;
	ASSERT_OK(ioctl(self->dev, CUBE_IOC_SNAPSHOT_DELETE, &del));
}

TEST_F(sb, kill_request_poll)
{
	struct cube_sandbox_info info;
	struct pollfd p = { .fd = self->fd, .events = POLLIN | POLLPRI };

	EXPECT_EQ(poll(&p, 1, 0), 0);
	ASSERT_EQ(cnl_kill(&self->nl, self->id, CUBE_KILL_GRACE_MS_MAX), 0);
	ASSERT_EQ(poll(&p, 1, 1000), 1);
	EXPECT_EQ(p.revents & (POLLIN | POLLPRI), POLLIN | POLLPRI);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_KILL_REQUESTED);
	EXPECT_EQ(cnl_kill(&self->nl, self->id, 0), -EALREADY);
	EXPECT_STREQ(self->nl.ext_msg, "sandbox already asked to stop");
	/* a sandbox asked to stop is not offered to takers */
	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_READY, 0));
	/* the owner stops by itself: closing ends the pending kill */
}

TEST_F(sb, pool_ioctls)
{
	struct cube_sandbox_info info;
	struct cube_pool_arg a;
	struct pollfd p = { .events = POLLRDBAND };
	uint32_t pid = 0;
	uint64_t id = 0;
	int full;

	cnl_pool_del(&self->nl, "sbt");
	cnl_pool_del(&self->nl, "sbt-small");
	ASSERT_EQ(cnl_pool_new(&self->nl, "sbt", "tpl", 4, 1), 0);
	ASSERT_EQ(cnl_pool_new(&self->nl, "sbt-small", "tpl", 1, 0), 0);

	/* only READY sandboxes of the pool's template */
	EXPECT_ERRNO(sb_pool_enter(self->fd, "sbt"), EBUSY);
	ASSERT_OK(sb_set_limits(self->fd, "other", 1, 4096));
	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_READY, 0));
	EXPECT_ERRNO(sb_pool_enter(self->fd, "sbt"), EXDEV);
	close(self->fd);
	self->fd = sb_create_ready(self->dev, "tpl", &self->id);
	ASSERT_GE(self->fd, 0);
	EXPECT_ERRNO(sb_pool_enter(self->fd, "nope"), ENOENT);
	EXPECT_ERRNO(sb_pool_enter(self->fd, "bad name"), EINVAL);
	EXPECT_ERRNO(sb_pool_enter(self->fd, ""), EINVAL);
#define BAD_POOL_ARG(fd_, cmd_, f_) do {				\
	memset(&a, 0, sizeof(a));					\
	strcpy(a.name, "sbt");						\
	f_ = 1;								\
	EXPECT_ERRNO(ioctl(fd_, cmd_, &a), EINVAL);			\
} while (0)
	BAD_POOL_ARG(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, a.flags);
	BAD_POOL_ARG(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, a.reserved);
	BAD_POOL_ARG(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, a.id);
	BAD_POOL_ARG(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, a.owner_pid);
	BAD_POOL_ARG(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, a.reserved2);
	BAD_POOL_ARG(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, a.name[5]);
	memset(&a, 0, sizeof(a));
	memset(a.name, 's', sizeof(a.name));		/* no NUL */
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, &a), EINVAL);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_POOL_ENTER, NULL),
		     EFAULT);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_POOL_LEAVE, 0), ENOENT);
	EXPECT_ERRNO(ioctl(self->fd, CUBE_IOC_SANDBOX_POOL_LEAVE, 1), EINVAL);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, 0u);

	ASSERT_OK(sb_pool_enter(self->fd, "sbt"));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_POOLED);
	EXPECT_ERRNO(sb_pool_enter(self->fd, "sbt"), EBUSY);
	EXPECT_ERRNO(sb_pool_enter(self->fd, "sbt-small"), EBUSY);
	/* pooled sandboxes only leave READY by exiting */
	EXPECT_ERRNO(sb_set_state(self->fd, CUBE_SANDBOX_RUNNING, 0), EBUSY);
	ASSERT_OK(ioctl(self->fd, CUBE_IOC_SANDBOX_POOL_LEAVE, 0));
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, 0u);
	ASSERT_OK(sb_pool_enter(self->fd, "sbt"));

	/* a full pool */
	full = sb_create_ready(self->dev, "tpl", NULL);
	ASSERT_GE(full, 0);
	ASSERT_OK(sb_pool_enter(full, "sbt-small"));
	{
		int fd3 = sb_create_ready(self->dev, "tpl", NULL);

		ASSERT_GE(fd3, 0);
		EXPECT_ERRNO(sb_pool_enter(fd3, "sbt-small"), ENOSPC);
		close(fd3);
	}

	/* take through /dev/cube */
	BAD_POOL_ARG(self->dev, CUBE_IOC_POOL_TAKE, a.flags);
	BAD_POOL_ARG(self->dev, CUBE_IOC_POOL_TAKE, a.reserved);
	BAD_POOL_ARG(self->dev, CUBE_IOC_POOL_TAKE, a.id);
	BAD_POOL_ARG(self->dev, CUBE_IOC_POOL_TAKE, a.owner_pid);
	BAD_POOL_ARG(self->dev, CUBE_IOC_POOL_TAKE, a.reserved2);
	BAD_POOL_ARG(self->dev, CUBE_IOC_POOL_TAKE, a.name[4]);
	EXPECT_ERRNO(sb_pool_take(self->dev, "nope", &id, &pid), ENOENT);
	EXPECT_ERRNO(sb_pool_take(self->dev, "a/b", &id, &pid), EINVAL);
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_POOL_TAKE, NULL), EFAULT);
	p.fd = self->fd;
	EXPECT_EQ(poll(&p, 1, 0), 0);
	ASSERT_OK(sb_pool_take(self->dev, "sbt", &id, &pid));
	EXPECT_EQ(id, self->id);
	EXPECT_EQ(pid, (uint32_t)getpid());
	EXPECT_ERRNO(sb_pool_take(self->dev, "sbt", &id, &pid), EAGAIN);
	ASSERT_EQ(poll(&p, 1, 0), 1);
	EXPECT_EQ(p.revents, POLLRDBAND);
	ASSERT_OK(sb_info(self->fd, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_TAKEN);
	/* taken once, never offered again */
	EXPECT_ERRNO(sb_pool_enter(self->fd, "sbt"), EBUSY);
	ASSERT_OK(sb_set_state(self->fd, CUBE_SANDBOX_RUNNING, 0));

	/*
	 * destroying a pool asks its warm members to stop (closing the fd
	 * before the grace period ends cancels the SIGKILL to its owner)
	 */
	ASSERT_EQ(cnl_pool_del(&self->nl, "sbt-small"), 0);
	ASSERT_OK(sb_info(full, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_KILL_REQUESTED);
	close(full);
	ASSERT_EQ(cnl_pool_del(&self->nl, "sbt"), 0);
}

TEST_MAIN()
