// SPDX-License-Identifier: GPL-2.0
/*
 * jail_unit: cube-vmm's jail (vmm/jail.c, vmm/sandbox.c) on real
 * processes, natively: a vCPU thread's filter lets through KVM_RUN on its
 * own vCPU fd and KVM_IRQ_LINE on the VM fd, and kills the process for any
 * other ioctl, a new socket, a file opened or renamed; stacked on the
 * process-wide list it still loads and still kills, while the other
 * threads keep the wider list; the rlimits are what jail.h says and a
 * write past RLIMIT_FSIZE fails instead of killing; inherited fds are
 * closed but the ones kept; with a writable disk, a vCPU thread may
 * also pwrite and punch holes (that fallocate mode only) and the process
 * list copy (FICLONE, copy_file_range); the Landlock domain leaves only
 * its directory.  Each case runs in a child of its own, with
 * eventfds standing in for the KVM fds (the ioctls fail with ENOTTY when
 * the filter lets them through).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/falloc.h>
#include <linux/fs.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "jail.h"
#include "sandbox.h"
#include "util.h"
#include "vm.h"

static struct vm vm;
static bool with_disk;		/* the fake VM has a writable disk */
static bool with_paths = true;	/* not jailed: files by name allowed */
static const char *log_path;	/* stderr: this file, 4 KiB at most */
static int log_flags;		/* opened with these */

static void fake_vm(void)
{
	int i;

	memset(&vm, 0, sizeof(vm));
	/* the filters look only at whether the device is there */
	if (with_disk)
		vm.devs[VM_DEV_DISK] = (struct virtio_mmio *)&vm;
	vm.nr_vcpus = 2;
	vm.vm_fd = eventfd(0, EFD_CLOEXEC);
	for (i = 0; i < vm.nr_vcpus; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
		vm.vcpus[i].fd = eventfd(0, EFD_CLOEXEC);
	}
}

/* What a vCPU thread may be made to do; each returns normally if allowed. */
static void do_call(const char *call)
{
	struct kvm_irq_level irq = { .irq = 5 };
	struct kvm_clock_data clock;
	struct stat st;
	char buf[8] = { 0 };

	if (!strcmp(call, "kvm-run-own"))
		ioctl(vm.vcpus[0].fd, KVM_RUN, 0);
	else if (!strcmp(call, "kvm-run-other"))
		ioctl(vm.vcpus[1].fd, KVM_RUN, 0);
	else if (!strcmp(call, "irq-line"))
		ioctl(vm.vm_fd, KVM_IRQ_LINE, &irq);
	else if (!strcmp(call, "irq-line-on-vcpu"))
		ioctl(vm.vcpus[0].fd, KVM_IRQ_LINE, &irq);
	else if (!strcmp(call, "get-clock"))
		ioctl(vm.vm_fd, KVM_GET_CLOCK, &clock);
	else if (!strcmp(call, "getrandom"))
		getrandom(buf, sizeof(buf), 0);
	else if (!strcmp(call, "pread"))
		pread(vm.vm_fd, buf, 8, 0);
	else if (!strcmp(call, "socket"))
		socket(AF_UNIX, SOCK_STREAM, 0);
	else if (!strcmp(call, "openat"))
		open("/proc/self/status", O_RDONLY);
	else if (!strcmp(call, "rename"))
		rename("/nonexistent-a", "/nonexistent-b");
	else if (!strcmp(call, "unlink"))
		unlink("/nonexistent-a");
	else if (!strcmp(call, "fstat"))
		fstat(vm.vm_fd, &st);
	else if (!strcmp(call, "stat"))
		stat("/proc/self/status", &st);
	else if (!strcmp(call, "tgkill-self"))
		syscall(SYS_tgkill, getpid(), gettid(), 0);
	else if (!strcmp(call, "tgkill-parent"))
		syscall(SYS_tgkill, getppid(), getppid(), 0);
	else if (!strcmp(call, "kill-parent"))
		kill(getppid(), 0);
	else if (!strcmp(call, "getppid"))
		syscall(SYS_getppid);
	else if (!strcmp(call, "pwrite"))
		pwrite(vm.vm_fd, buf, 8, 0);
	else if (!strcmp(call, "punch"))
		fallocate(vm.vm_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  0, 4096);
	else if (!strcmp(call, "fallocate"))
		fallocate(vm.vm_fd, 0, 0, 4096);
	else if (!strcmp(call, "ficlone"))
		ioctl(vm.vm_fd, FICLONE, vm.vcpus[0].fd);
	else if (!strcmp(call, "copy-file-range"))
		copy_file_range(vm.vm_fd, NULL, vm.vcpus[0].fd, NULL, 8, 0);
	else if (!strcmp(call, "log-flood"))
		for (int i = 0; i < 300; i++)
			pr_err("a message of about fifty bytes, number %04d", i);
	else if (!strcmp(call, "pwrite-stdout"))
		pwrite(STDOUT_FILENO, buf, 8, 0);
}

/* stderr to log_path, if set, with the log's bounds small. */
static void log_setup(void)
{
	int fd;

	if (!log_path)
		return;
	fd = open(log_path, log_flags | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(13);
	close(fd);
	vmm_log_set_limits(1000000, 1000000, 4096);
}

static void no_core(void)
{
	struct rlimit r = { 0, 0 };

	setrlimit(RLIMIT_CORE, &r);
}

/* A child whose only thread is vCPU 0 and makes @call: its wait status. */
static int vcpu_call(const char *call)
{
	pid_t pid = fork();

	if (pid == 0) {
		no_core();
		fake_vm();
		log_setup();
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			_exit(10);
		if (jail_vcpu_prepare(&vm))
			_exit(11);
		if (jail_vcpu_enter(&vm.vcpus[0]))
			_exit(12);
		do_call(call);
		_exit(0);
	}
	return ct_reap(pid);
}

TEST(vcpu_filter_allows_what_a_vcpu_does)
{
	static const char * const ok[] = {
		"kvm-run-own", "irq-line", "getrandom", "pread", "fstat",
		"tgkill-self",
	};
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int st = vcpu_call(ok[i]);

		TH_LOG("%s", ok[i]);
		EXPECT_EXIT(st, 0);
	}
}

TEST(vcpu_filter_kills_anything_else)
{
	static const char * const bad[] = {
		"kvm-run-other", "irq-line-on-vcpu", "get-clock", "socket",
		"openat", "rename", "unlink", "stat", "tgkill-parent",
		"kill-parent", "getppid",
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int st = vcpu_call(bad[i]);

		TH_LOG("%s", bad[i]);
		EXPECT_KILLED(st, SIGSYS);
	}
}

/* the process-wide list, then a vCPU thread stacking its own */
struct stacked {
	int go[2];
	const char *vcpu_call;
	int err;
};

static void *stacked_vcpu(void *arg)
{
	struct stacked *s = arg;
	char c;

	if (read(s->go[0], &c, 1) != 1)
		return NULL;
	s->err = jail_vcpu_enter(&vm.vcpus[0]);
	if (!s->err)
		do_call(s->vcpu_call);
	return NULL;
}

/* @vcpu_call in the vCPU thread, then @main_call in the main thread */
static int stacked_call(const char *vcpu_call, const char *main_call)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct stacked s = { .vcpu_call = vcpu_call };
		pthread_t t;

		no_core();
		fake_vm();
		if (pipe(s.go) || sandbox_drop_caps() || jail_vcpu_prepare(&vm) ||
		    pthread_create(&t, NULL, stacked_vcpu, &s))
			_exit(10);
		if (sandbox_seccomp(false, with_disk, with_paths))
			_exit(11);
		if (write(s.go[1], "x", 1) != 1)
			_exit(12);
		pthread_join(t, NULL);
		if (s.err)
			_exit(13);
		do_call(main_call);
		_exit(0);
	}
	return ct_reap(pid);
}

TEST(vcpu_filter_stacks_on_the_process_list)
{
	int st;

	/* the process list lets the vCPU thread load its filter */
	st = stacked_call("kvm-run-own", "");
	EXPECT_EXIT(st, 0);
	/* a Unix socket: the I/O and main threads may, a vCPU may not */
	st = stacked_call("", "socket");
	EXPECT_EXIT(st, 0);
	st = stacked_call("socket", "");
	EXPECT_KILLED(st, SIGSYS);
	st = stacked_call("get-clock", "");
	EXPECT_KILLED(st, SIGSYS);
	st = stacked_call("", "get-clock");
	EXPECT_EXIT(st, 0);
	/* signals: its own threads only, from any thread */
	st = stacked_call("", "tgkill-self");
	EXPECT_EXIT(st, 0);
	st = stacked_call("", "tgkill-parent");
	EXPECT_KILLED(st, SIGSYS);
	st = stacked_call("", "kill-parent");
	EXPECT_KILLED(st, SIGSYS);
	/* and what neither list has kills from any thread */
	st = stacked_call("", "getppid");
	EXPECT_KILLED(st, SIGSYS);
}

/*
 * A jailed VMM is passed the files of its snapshots and checkpoints: its
 * list has no call that names a file, which an unjailed one keeps.
 */
TEST(a_jailed_vmm_opens_no_file_by_name)
{
	static const char * const by_name[] = { "openat", "rename", "unlink" };
	unsigned int i;

	for (i = 0; i < sizeof(by_name) / sizeof(by_name[0]); i++) {
		TH_LOG("%s", by_name[i]);
		with_paths = true;
		EXPECT_EXIT(stacked_call("", by_name[i]), 0);
		with_paths = false;
		EXPECT_KILLED(stacked_call("", by_name[i]), SIGSYS);
	}
	with_paths = true;
	/* what it does with the fds it is passed stays allowed */
	with_paths = false;
	EXPECT_EXIT(stacked_call("", "fstat"), 0);
	with_paths = true;
}

/*
 * cube-vmm's own log, read-write, rotates at its cap from a vCPU thread
 * too (a guest makes a vCPU log in a loop): the filter lets through the
 * rotation's calls on stderr, and only there.
 */
TEST(a_vcpu_rotates_the_log_on_stderr_only)
{
	char path[64];
	struct stat st;
	int n = 0;
	FILE *f;
	char line[128];

	snprintf(path, sizeof(path), "/tmp/jail_unit.log.%d", getpid());
	log_path = path;
	log_flags = O_RDWR | O_APPEND;
	EXPECT_EXIT(vcpu_call("log-flood"), 0);
	ASSERT_OK(stat(path, &st));
	EXPECT_LE(st.st_size, 4096);
	f = fopen(path, "r");
	ASSERT_NE(f, NULL);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "the log keeps its newest") ||
		     strstr(line, "number 0299");
	fclose(f);
	EXPECT_GE(n, 2);
	/* the rotation's calls on another fd still kill */
	EXPECT_KILLED(vcpu_call("pwrite-stdout"), SIGSYS);
	/* a log open for writing only stops at the cap: nothing to allow */
	log_flags = O_WRONLY | O_APPEND;
	EXPECT_EXIT(vcpu_call("log-flood"), 0);
	ASSERT_OK(stat(path, &st));
	EXPECT_LE(st.st_size, 4096 + 100);
	log_path = NULL;
	unlink(path);
}

TEST(a_writable_disk_adds_its_calls_only)
{
	int st;

	/* without a disk: no writes, no holes, no copies */
	with_disk = false;
	EXPECT_KILLED(vcpu_call("pwrite"), SIGSYS);
	EXPECT_KILLED(vcpu_call("punch"), SIGSYS);
	EXPECT_KILLED(stacked_call("", "punch"), SIGSYS);
	EXPECT_KILLED(stacked_call("", "ficlone"), SIGSYS);
	EXPECT_KILLED(stacked_call("", "copy-file-range"), SIGSYS);
	/* with one: a vCPU writes and punches holes, nothing more */
	with_disk = true;
	EXPECT_EXIT(vcpu_call("pwrite"), 0);
	EXPECT_EXIT(vcpu_call("punch"), 0);
	EXPECT_KILLED(vcpu_call("fallocate"), SIGSYS);
	EXPECT_KILLED(vcpu_call("ficlone"), SIGSYS);
	EXPECT_KILLED(vcpu_call("copy-file-range"), SIGSYS);
	st = stacked_call("punch", "");
	EXPECT_EXIT(st, 0);
	st = stacked_call("pwrite", "");
	EXPECT_EXIT(st, 0);
	/* the main thread copies: FICLONE, copy_file_range */
	EXPECT_EXIT(stacked_call("", "ficlone"), 0);
	EXPECT_EXIT(stacked_call("", "copy-file-range"), 0);
	EXPECT_KILLED(stacked_call("", "fallocate"), SIGSYS);
	with_disk = false;
}

TEST(rlimits)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char path[] = "/tmp/jail-unit-XXXXXX", buf[4096] = { 0 };
		struct rlimit r;
		int fd = mkstemp(path), i, before;
		ssize_t n = 0;

		if (fd < 0)
			_exit(10);
		unlink(path);
		/* what jail_rlimits() counts */
		for (before = 0, i = 0; i < 65536; i++)
			if (fcntl(i, F_GETFD) >= 0)
				before++;
		if (jail_rlimits(64 * 1024))
			_exit(11);
		if (getrlimit(RLIMIT_CORE, &r) || r.rlim_cur || r.rlim_max)
			_exit(12);
		if (getrlimit(RLIMIT_FSIZE, &r) || r.rlim_cur != 64 * 1024 ||
		    r.rlim_max != 64 * 1024)
			_exit(13);
		if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur != r.rlim_max ||
		    r.rlim_cur != (rlim_t)before + 1024 + 8 + 16 + 16)
			_exit(14);
		/* past the size: EFBIG, and the process lives on */
		for (i = 0; i < 17; i++) {
			n = write(fd, buf, sizeof(buf));
			if (n < 0)
				break;
		}
		if (i != 16 || n >= 0 || errno != EFBIG)
			_exit(15);
		_exit(0);
	}
	st = ct_reap(pid);
	EXPECT_EXIT(st, 0);
}

TEST(inherited_fds_are_closed_but_the_kept_ones)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int p[2], keep[2] = { 41, -1 };

		if (pipe(p) || dup2(p[1], 40) != 40 || dup2(p[0], 41) != 41)
			_exit(10);
		if (jail_close_fds(keep, 2))
			_exit(11);
		if (fcntl(40, F_GETFD) >= 0 || errno != EBADF)
			_exit(12);
		if (fcntl(p[0], F_GETFD) >= 0 || fcntl(p[1], F_GETFD) >= 0)
			_exit(13);
		if (fcntl(41, F_GETFD) < 0)
			_exit(14);
		if (fcntl(0, F_GETFD) < 0 && fcntl(2, F_GETFD) < 0)
			_exit(15);
		_exit(0);
	}
	st = ct_reap(pid);
	EXPECT_EXIT(st, 0);
}

/*
 * jail_landlock(): beneath the directory given, files and directories are
 * made, written, read, renamed there and removed; anywhere else no file
 * opens, not even one world-readable, while an fd opened before goes on.
 * Exit 4 when the kernel has no Landlock.
 */
TEST(landlock_leaves_only_the_directory_given)
{
	char dir[] = "/tmp/jail-unit-ll-XXXXXX";
	pid_t pid;
	int st;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	pid = fork();
	if (pid == 0) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int before = open("/etc/passwd", O_RDONLY | O_CLOEXEC), fd, ret;
		char c;

		if (dfd < 0 || before < 0)
			_exit(10);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			_exit(11);
		ret = jail_landlock(dfd);
		if (ret > 0)
			_exit(CT_EXIT_SKIP);
		if (ret)
			_exit(12);
		if (mkdirat(dfd, "ck", 0700))
			_exit(13);
		fd = openat(dfd, "ck/state.tmp", O_WRONLY | O_CREAT | O_CLOEXEC,
			    0600);
		if (fd < 0 || write(fd, "x", 1) != 1 || ftruncate(fd, 0))
			_exit(14);
		close(fd);
		if (renameat(dfd, "ck/state.tmp", dfd, "ck/state") ||
		    unlinkat(dfd, "ck/state", 0) ||
		    unlinkat(dfd, "ck", AT_REMOVEDIR))
			_exit(15);
		/* elsewhere: nothing, by any path */
		if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) >= 0 ||
		    errno != EACCES)
			_exit(16);
		if (openat(dfd, "../", O_RDONLY | O_DIRECTORY | O_CLOEXEC) >= 0 ||
		    errno != EACCES)
			_exit(17);
		if (open("/tmp/jail-unit-ll-new", O_WRONLY | O_CREAT | O_CLOEXEC,
			 0600) >= 0 || errno != EACCES)
			_exit(18);
		/* what was open before stays usable */
		if (read(before, &c, 1) != 1)
			_exit(19);
		_exit(0);
	}
	st = ct_reap(pid);
	rmdir(dir);
	if (WIFEXITED(st) && WEXITSTATUS(st) == CT_EXIT_SKIP)
		SKIP("no Landlock in this kernel");
	EXPECT_EXIT(st, 0);
}

TEST_MAIN()
