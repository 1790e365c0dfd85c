// SPDX-License-Identifier: GPL-2.0
/* The jail of one cube-vmm: inherited fds, rlimits, vCPU filters; jail.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>

#include "control.h"
#include "jail.h"
#include "util.h"
#include "vm.h"
#include "vsock.h"

static bool keep_fd(int fd, const int *keep, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (keep[i] == fd)
			return true;
	return false;
}

int jail_close_fds(const int *keep, int n)
{
	struct dirent *de;
	int fds[256], nr = 0, i, dfd;
	bool more = true;
	DIR *d;

	/* Collect first, close after: closing while reading the dir is racy. */
	while (more) {
		d = opendir("/proc/self/fd");
		if (!d)
			return -errno;
		dfd = dirfd(d);
		nr = 0;
		more = false;
		while ((de = readdir(d))) {
			char *end;
			long fd = strtol(de->d_name, &end, 10);

			if (*end || de->d_name[0] == '.' || fd < 3 ||
			    fd == dfd || keep_fd(fd, keep, n))
				continue;
			if (nr == (int)ARRAY_SIZE(fds)) {
				more = true;
				break;
			}
			fds[nr++] = fd;
		}
		closedir(d);
		for (i = 0; i < nr; i++)
			close(fds[i]);
	}
	return 0;
}

/* fds open now; the VMM's own, with what it holds open for ever */
static int count_fds(void)
{
	struct dirent *de;
	int nr = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			nr++;
	closedir(d);
	return nr - 1;	/* the directory's own */
}

int jail_rlimits(uint64_t fsize)
{
	struct rlimit core = { 0, 0 }, fs = { fsize, fsize }, nofile;
	int open_fds = count_fds();

	if (open_fds < 0)
		return open_fds;
	/*
	 * Every vsock connection holds a host socket, every control client
	 * one; a snapshot opens a few files, an accept a spare.
	 */
	nofile.rlim_cur = open_fds + VSOCK_MAX_CONNS + CONTROL_MAX_CLIENTS + 16;
	nofile.rlim_max = nofile.rlim_cur;
	if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
		return -errno;
	if (setrlimit(RLIMIT_CORE, &core) || setrlimit(RLIMIT_FSIZE, &fs) ||
	    setrlimit(RLIMIT_NOFILE, &nofile))
		return -errno;
	return 0;
}

/*
 * What a vCPU thread does: KVM_RUN, the devices' exits (virtio-blk's
 * pread, and with a writable disk pwrite and hole punching; virtio-net's
 * TX writev and epoll_ctl, virtio-rng's getrandom,
 * eventfd kicks, interrupts), locks, the kick signal, malloc, logging.
 * No new files, sockets or processes, no snapshot calls.
 */
static const int vcpu_syscalls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(preadv), SCMP_SYS(getrandom),
	SCMP_SYS(close), SCMP_SYS(epoll_ctl), SCMP_SYS(fstat),
	SCMP_SYS(futex), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(madvise),
	SCMP_SYS(mprotect), SCMP_SYS(brk), SCMP_SYS(mremap),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(getpid),
	SCMP_SYS(gettid), SCMP_SYS(exit),
	SCMP_SYS(exit_group), SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep), SCMP_SYS(sched_yield),
	SCMP_SYS(restart_syscall), SCMP_SYS(rseq),
};

struct vcpu_filter {
	struct sock_filter *insns;
	unsigned short len;
};

static struct vcpu_filter vcpu_filters[VM_MAX_VCPUS];

/* libseccomp's program for ctx, read back through a memfd. */
static int export_bpf(scmp_filter_ctx ctx, struct vcpu_filter *f)
{
	int fd = memfd_create("cube-vcpu-filter", MFD_CLOEXEC), ret;
	off_t size;

	if (fd < 0)
		return -errno;
	ret = seccomp_export_bpf(ctx, fd);
	if (ret)
		goto out;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter) ||
	    size / sizeof(struct sock_filter) > BPF_MAXINSNS) {
		ret = -EINVAL;
		goto out;
	}
	f->insns = malloc(size);
	if (!f->insns) {
		ret = -ENOMEM;
		goto out;
	}
	ret = pread_full(fd, f->insns, size, 0);
	if (ret) {
		free(f->insns);
		f->insns = NULL;
		goto out;
	}
	f->len = size / sizeof(struct sock_filter);
out:
	close(fd);
	return ret;
}

static int vcpu_filter_build(struct vm *vm, struct vcpu *vcpu,
			     struct vcpu_filter *f)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	unsigned int i;
	int ret;

	if (!ctx)
		return -ENOMEM;
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
	for (i = 0; !ret && i < ARRAY_SIZE(vcpu_syscalls); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, vcpu_syscalls[i], 0);
	/* KVM_RUN on this vCPU only, interrupts on this VM only */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 2,
				       SCMP_A0(SCMP_CMP_EQ, vcpu->fd),
				       SCMP_A1(SCMP_CMP_EQ, KVM_RUN));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 2,
				       SCMP_A0(SCMP_CMP_EQ, vm->vm_fd),
				       SCMP_A1(SCMP_CMP_EQ, KVM_IRQ_LINE));
	/* the writable disk: writes, and holes for DISCARD/WRITE_ZEROES */
	if (!ret && vm->devs[VM_DEV_DISK])
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(pwrite64), 0);
	if (!ret && vm->devs[VM_DEV_DISK])
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fallocate), 1,
				       SCMP_A1(SCMP_CMP_EQ, FALLOC_FL_PUNCH_HOLE |
					       FALLOC_FL_KEEP_SIZE));
	/* fstat() is newfstatat(fd, "", AT_EMPTY_PATH): on an fd, no path */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
				       SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH,
					       AT_EMPTY_PATH));
	/* waking the other vCPUs: signals to this process only */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				       SCMP_A0(SCMP_CMP_EQ, getpid()));
	/* stdio asks whether a stream is a terminal */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       SCMP_A1(SCMP_CMP_EQ, TCGETS));
	if (!ret)
		ret = export_bpf(ctx, f);
	seccomp_release(ctx);
	return ret;
}

int jail_vcpu_prepare(struct vm *vm)
{
	int i, ret;

	for (i = 0; i < vm->nr_vcpus; i++) {
		ret = vcpu_filter_build(vm, &vm->vcpus[i], &vcpu_filters[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int jail_vcpu_enter(struct vcpu *vcpu)
{
	struct vcpu_filter *f = &vcpu_filters[vcpu->id];
	struct sock_fprog prog = { .len = f->len, .filter = f->insns };

	if (!f->insns)
		return 0;
	/* no_new_privs is the thread's since its creation (sandbox.c) */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
#ifdef CUBE_VMM_TEST_HOOKS
	if (vcpu->id == 0)
		jail_test_hook("vcpu", vcpu->vm->vm_fd);
#endif
	return 0;
}

#ifdef CUBE_VMM_TEST_HOOKS
void jail_test_hook(const char *thread, int vm_fd)
{
	const char *t = getenv("CUBE_VMM_TEST_THREAD");
	const char *call = getenv("CUBE_VMM_TEST_CALL");
	struct kvm_clock_data clock;
	int fd;

	if (!t || !call || strcmp(t, thread))
		return;
	pr_err("test hook: %s thread calls %s", thread, call);
	if (!strcmp(call, "socket")) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0)
			close(fd);
	} else if (!strcmp(call, "kvm-get-clock")) {
		ioctl(vm_fd, KVM_GET_CLOCK, &clock);
	} else if (!strcmp(call, "getppid")) {
		syscall(SYS_getppid);
	}
	pr_err("test hook: %s thread survived %s", thread, call);
}
#endif
