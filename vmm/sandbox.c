// SPDX-License-Identifier: GPL-2.0
/* cgroup v2, capabilities and seccomp for one cube-vmm; see sandbox.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/cube.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/magic.h>
#include <linux/seccomp.h>

#include "sandbox.h"
#include "util.h"

#define CGROUP_ROOT	"/sys/fs/cgroup"

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write_full(fd, s, strlen(s));
	close(fd);
	return ret;
}

static bool cgroup2_writable(void)
{
	struct statfs sf;

	if (statfs(CGROUP_ROOT, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC)
		return false;
	return access(CGROUP_ROOT "/cgroup.subtree_control", W_OK) == 0;
}

static pid_t child_pid;
/*
 * The VM process's end of a pipe whose other end its cgroup supervisor
 * holds open as long as it lives: a hang-up says it is gone, where
 * getppid() cannot (0 in a pid namespace of its own).
 */
static int parent_fd = -1;

int sandbox_watch_parent(void)
{
	struct pollfd p = { .fd = parent_fd, .events = POLLIN };

	if (parent_fd < 0)
		return 0;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		return -errno;
	/* armed: a supervisor that dies from now on takes the VM with it */
	if (poll(&p, 1, 0) < 0)
		return -errno;
	return p.revents ? -ESRCH : 0;
}

void sandbox_release_parent(void)
{
	if (parent_fd >= 0)
		close(parent_fd);
	parent_fd = -1;
}

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static int set_limits(const char *dir, const struct cgroup_limits *lim)
{
	char path[512], val[64];

	if (strlen(dir) > 256)
		return -ENAMETOOLONG;
	int ret = 0;

	if (lim->cpu_quota_us) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		snprintf(val, sizeof(val), "%llu 100000",
			 (unsigned long long)lim->cpu_quota_us);
		ret = ret ? ret : write_str(path, val);
	}
	if (lim->memory_max) {
		snprintf(path, sizeof(path), "%s/memory.max", dir);
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)lim->memory_max);
		ret = ret ? ret : write_str(path, val);
	}
	if (lim->pids_max) {
		snprintf(path, sizeof(path), "%s/pids.max", dir);
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)lim->pids_max);
		ret = ret ? ret : write_str(path, val);
	}
	return ret;
}

/*
 * The sandbox's cgroup @dir (@len), made under its parent with its limits:
 * 0, 1 without a writable cgroup v2 (nothing done), or -errno with @err.
 */
static int cgroup_make(const struct cgroup_limits *lim, char *dir, size_t len,
		       const char **err)
{
	const char *parent = lim->parent ? lim->parent : CGROUP_ROOT "/cube";
	char path[PATH_MAX];
	int ret;

	if (!cgroup2_writable())
		return 1;
	if (strchr(lim->name, '/') || !strcmp(lim->name, "..") ||
	    !strcmp(lim->name, ".")) {
		*err = "bad sandbox id for a cgroup name";
		return -EINVAL;
	}
	/* Controllers must be enabled from the root down to our parent. */
	write_str(CGROUP_ROOT "/cgroup.subtree_control", "+cpu +memory +pids");
	if (mkdir(parent, 0755) && errno != EEXIST) {
		*err = "cannot create the cgroup parent";
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
	write_str(path, "+cpu +memory +pids");
	if (snprintf(dir, len, "%s/%s", parent, lim->name) >= (int)len) {
		*err = "cgroup path too long";
		return -ENAMETOOLONG;
	}
	if (mkdir(dir, 0755)) {
		*err = errno == EEXIST ? "a cgroup of that sandbox id exists" :
			"cannot create the sandbox cgroup";
		return -errno;
	}
	ret = set_limits(dir, lim);
	if (ret) {
		*err = "cannot set the cgroup limits";
		rmdir(dir);
	}
	return ret;
}

void sandbox_set_parent(int fd)
{
	parent_fd = fd;
}

int sandbox_cgroup_join(const struct cgroup_limits *lim, const char **err)
{
	char dir[256], path[PATH_MAX];
	int ret;

	ret = cgroup_make(lim, dir, sizeof(dir), err);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	ret = write_str(path, "0");
	if (ret) {
		*err = "cannot move into the sandbox cgroup";
		rmdir(dir);
	}
	return ret;
}

int sandbox_cgroup_enter(const struct cgroup_limits *lim, const char **err)
{
	char dir[256], path[PATH_MAX], val[32];
	struct sigaction sa = { .sa_handler = forward_signal };
	int ret, status, pfd[2], i;
	char go = 0;

	ret = cgroup_make(lim, dir, sizeof(dir), err);
	if (ret)
		return ret;
	if (pipe2(pfd, O_CLOEXEC)) {
		*err = "pipe";
		rmdir(dir);
		return -errno;
	}
	child_pid = fork();
	if (child_pid < 0) {
		ret = -errno;
		*err = "fork";
		rmdir(dir);
		return ret;
	}
	if (child_pid == 0) {
		close(pfd[1]);
		/* Wait until the parent has moved us into the cgroup. */
		if (read(pfd[0], &go, 1) != 1 || go != 1)
			_exit(1);
		parent_fd = pfd[0];
		if (sandbox_watch_parent())
			_exit(1);
		return 0;
	}
	close(pfd[0]);
	for (i = 0; i < lim->nr_parent_close; i++)
		if (lim->parent_close[i] >= 0)
			close(lim->parent_close[i]);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(val, sizeof(val), "%d", (int)child_pid);
	if (write_str(path, val)) {
		pr_err("cannot move into cgroup %s", dir);
		kill(child_pid, SIGKILL);
	} else {
		go = 1;
		if (write(pfd[1], &go, 1) != 1)
			kill(child_pid, SIGKILL);
	}
	/* pfd[1] stays open: the child sees it hang up when this exits */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	while (waitpid(child_pid, &status, 0) < 0 && errno == EINTR)
		;
	/* The cgroup empties once the child is reaped. */
	while (rmdir(dir) && errno == EBUSY)
		usleep(1000);
	if (WIFEXITED(status))
		exit(WEXITSTATUS(status));
	pr_err("killed by signal %d", WTERMSIG(status));
	exit(128 + WTERMSIG(status));
}

int sandbox_drop_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL &&
		    errno != EPERM)
			return -errno;
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

static const int allowed_syscalls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(pwrite64), SCMP_SYS(recvfrom),
	SCMP_SYS(sendto), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),
	SCMP_SYS(accept4), SCMP_SYS(accept), SCMP_SYS(close),
	SCMP_SYS(shutdown), SCMP_SYS(futex),
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(madvise),
	SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(brk),
	SCMP_SYS(mremap), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
	SCMP_SYS(statx), SCMP_SYS(lseek), SCMP_SYS(ftruncate),
	SCMP_SYS(fsync), SCMP_SYS(fdatasync),
	SCMP_SYS(getrandom), SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
	SCMP_SYS(sched_yield), SCMP_SYS(restart_syscall), SCMP_SYS(fcntl),
	SCMP_SYS(timerfd_settime), SCMP_SYS(alarm), SCMP_SYS(getrusage),
	SCMP_SYS(rseq), SCMP_SYS(set_robust_list),
};

/*
 * Files and sockets by name: snapshots and checkpoints into a directory,
 * guest-initiated vsock streams to "<vsock-uds>_<port>".  A jailed VMM is
 * given its files as descriptors and its streams by a connect broker
 * instead, and has none of these.
 */
static const int path_syscalls[] = {
	SCMP_SYS(openat), SCMP_SYS(mkdir), SCMP_SYS(mkdirat),
	SCMP_SYS(rename), SCMP_SYS(renameat), SCMP_SYS(renameat2),
	SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(connect),
};

static const unsigned long allowed_ioctls[] = {
	KVM_RUN, KVM_IRQ_LINE,
	KVM_GET_REGS, KVM_GET_SREGS, KVM_GET_FPU, KVM_GET_XSAVE,
	KVM_GET_XCRS, KVM_GET_MSRS, KVM_GET_MSR_INDEX_LIST, KVM_GET_LAPIC,
	KVM_GET_VCPU_EVENTS, KVM_GET_MP_STATE, KVM_GET_DEBUGREGS,
	KVM_GET_CPUID2, KVM_GET_IRQCHIP, KVM_GET_PIT2, KVM_GET_CLOCK,
	TCGETS,
	/* "status": the counters of the clone the guest memory is (read only) */
	CUBE_IOC_CLONE_COUNTERS,
	/* "trim": its pages that hold the snapshot's contents again go */
	CUBE_IOC_CLONE_TRIM,
	/* and, with --merge-group, those its group's clones hold too */
	CUBE_IOC_CLONE_MERGE,
};

/*
 * A VM on a cube.ko clone: checkpoints (snapshots of the clone) and
 * rollbacks (a clone rewound or a new clone, the state loaded again).
 */
static const unsigned long rollback_ioctls[] = {
	KVM_SET_REGS, KVM_SET_SREGS, KVM_SET_FPU, KVM_SET_XSAVE,
	KVM_SET_XCRS, KVM_SET_MSRS, KVM_SET_LAPIC, KVM_SET_VCPU_EVENTS,
	KVM_SET_MP_STATE, KVM_SET_DEBUGREGS, KVM_SET_IRQCHIP, KVM_SET_PIT2,
	KVM_SET_CLOCK,
	CUBE_IOC_SNAPSHOT_CREATE, CUBE_IOC_SNAPSHOT_DELETE,
	CUBE_IOC_SNAPSHOT_INFO, CUBE_IOC_CLONE_CREATE, CUBE_IOC_CLONE_RESET,
	CUBE_IOC_CLONE_REWIND,
};

/*
 * The writable disk: DISCARD and WRITE_ZEROES punch holes (that mode of
 * fallocate only, in the vCPU threads), snapshots and checkpoints copy
 * it (FICLONE, copy_file_range; lseek, pread, pwrite and ftruncate are
 * on the list already).
 */
static int allow_disk(scmp_filter_ctx ctx)
{
	int ret;

	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fallocate), 1,
			       SCMP_A1(SCMP_CMP_EQ, FALLOC_FL_PUNCH_HOLE |
				       FALLOC_FL_KEEP_SIZE));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       SCMP_A1(SCMP_CMP_EQ, FICLONE));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
				       SCMP_SYS(copy_file_range), 0);
	return ret;
}

int sandbox_seccomp(bool rollback, bool disk, bool paths)
{
	scmp_filter_ctx ctx;
	unsigned int i;
	int ret;

	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return -ENOMEM;
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	/* A kill is logged by the kernel with the syscall number. */
	if (!ret)
		ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
	for (i = 0; !ret && i < ARRAY_SIZE(allowed_syscalls); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
				       allowed_syscalls[i], 0);
	for (i = 0; paths && !ret && i < ARRAY_SIZE(path_syscalls); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, path_syscalls[i], 0);
	/* Only the KVM requests a running VM needs, and snapshots. */
	for (i = 0; !ret && i < ARRAY_SIZE(allowed_ioctls); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       SCMP_A1(SCMP_CMP_EQ,
					       allowed_ioctls[i]));
	for (i = 0; rollback && !ret && i < ARRAY_SIZE(rollback_ioctls); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       SCMP_A1(SCMP_CMP_EQ,
					       rollback_ioctls[i]));
	if (disk && !ret)
		ret = allow_disk(ctx);
	/* Signals to its own threads only (the vCPU kick), no one else's. */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				       SCMP_A0(SCMP_CMP_EQ, getpid()));
	/* Each vCPU thread stacks its own, narrower filter on this one. */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(seccomp), 2,
				       SCMP_A0(SCMP_CMP_EQ,
					       SECCOMP_SET_MODE_FILTER),
				       SCMP_A1(SCMP_CMP_EQ, 0));
	/* New sockets: Unix streams only (guest-to-host vsock by path). */
	if (paths && !ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				       SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (!ret)
		ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}
