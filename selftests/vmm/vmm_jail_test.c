// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm's jail, on running VMs (Documentation/vmm.rst, "The jail"):
 *
 *  - a booted VM and a VM restored from its snapshot get the same cgroup
 *    limits (memory.max, cpu.max, pids.max), the ones of their shape;
 *  - a VM's fd table is what it needs and nothing it inherited: a pipe
 *    left open by whoever started it (as a supervisor's report pipe) is
 *    closed, so its reader sees the end while the VM runs;
 *  - its rlimits (/proc/PID/limits): no core, a bounded file size and
 *    descriptor count; every thread has no capabilities, no_new_privs
 *    and seccomp, the vCPU threads two filters, the others one;
 *  - with the test build (cube-vmm-hooks), a call outside a vCPU thread's
 *    list (a socket, an ioctl other than KVM_RUN/KVM_IRQ_LINE) kills the
 *    VMM with SIGSYS, while the main thread makes the same socket call
 *    and lives;
 *  - fails closed: without a writable cgroup v2 or without seccomp the VM
 *    does not start and says why; --no-cgroup / --no-seccomp opt out.
 */
#include <dirent.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>

#include "vmm_util.h"

#define HOOKS_BIN	"./cube-vmm-hooks"
#define MEM_MIB		160
#define VCPUS		2

struct vmm {
	char dir[128], log[192], err[192], uds[192], ctl[192];
	pid_t pid;		/* the cgroup supervisor */
};

enum jail_off { JAIL_ALL, NO_CGROUP, NO_SECCOMP };

/*
 * Start @bin in mode cube.test=vsock, or --restore @snap; @marker, if not
 * -1, is left open (no O_CLOEXEC) as fd 9; @env "NAME=VALUE" pairs set.
 */
static void start(struct vmm *v, const char *bin, const char *tag,
		  const char *snap, int marker, const char *const *env,
		  enum jail_off off)
{
	const char *argv[32];
	char mem[16], cpus[16];
	pid_t parent;
	int n = 0;

	mk_scratch(v->dir, sizeof(v->dir), tag);
	snprintf(v->log, sizeof(v->log), "%s/console.log", v->dir);
	snprintf(v->err, sizeof(v->err), "%s/stderr.log", v->dir);
	snprintf(v->uds, sizeof(v->uds), "%s/vsock", v->dir);
	snprintf(v->ctl, sizeof(v->ctl), "%s/control", v->dir);
	snprintf(mem, sizeof(mem), "%d", MEM_MIB);
	snprintf(cpus, sizeof(cpus), "%d", VCPUS);
	argv[n++] = "cube-vmm";
	if (snap) {
		argv[n++] = "--restore";
		argv[n++] = snap;
		argv[n++] = "--no-cube";
	} else {
		argv[n++] = "--kernel";
		argv[n++] = l2_kernel();
		argv[n++] = "--initrd";
		argv[n++] = L2_INITRD;
		argv[n++] = "--append";
		argv[n++] = "cube.test=vsock";
		argv[n++] = "--mem";
		argv[n++] = mem;
		argv[n++] = "--vcpus";
		argv[n++] = cpus;
	}
	argv[n++] = "--console-log";
	argv[n++] = v->log;
	argv[n++] = "--vsock-uds";
	argv[n++] = v->uds;
	argv[n++] = "--control";
	argv[n++] = v->ctl;
	argv[n++] = "--timeout";
	argv[n++] = "300";
	if (off == NO_CGROUP)
		argv[n++] = "--no-cgroup";
	if (off == NO_SECCOMP)
		argv[n++] = "--no-seccomp";
	argv[n] = NULL;
	parent = getpid();
	v->pid = fork();
	if (v->pid == 0) {
		int fd = open(v->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		die_with(parent);

		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		if (marker >= 0 && dup2(marker, 9) != 9)
			_exit(126);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
}

static void stop(struct vmm *v)
{
	char reply[128];
	int st;

	if (control(v->ctl, "stop", reply, sizeof(reply)))
		kill(v->pid, SIGTERM);
	st = vmm_wait(v->pid, 60);
	EXPECT_EXIT(st, 0);
}

static bool wait_ready(struct vmm *v)
{
	if (wait_for(v->log, "CUBE-L2-VSOCK-READY", BOOT_TIMEOUT, v->pid))
		return true;
	dump_file("console", v->log);
	dump_file("stderr", v->err);
	return false;
}

/* wait until the restored guest's echo service answers */
static bool wait_restored(struct vmm *v)
{
	double end = now_s() + 60;

	while (now_s() < end) {
		int fd = vsock_open(v->uds, 1234);

		if (fd >= 0) {
			close(fd);
			return true;
		}
		if (waitpid(v->pid, NULL, WNOHANG) == v->pid)
			break;
		usleep(100000);
	}
	dump_file("stderr", v->err);
	return false;
}

static void cg_path(const struct vmm *v, const char *file, char *buf,
		    size_t len)
{
	snprintf(buf, len, "/sys/fs/cgroup/cube/cube-vmm-%d/%s", (int)v->pid,
		 file);
}

/* the first line of a cgroup file of the VM, "" if none */
static void cg_read(const struct vmm *v, const char *file, char *buf,
		    size_t len)
{
	char path[256], *s;

	cg_path(v, file, path, sizeof(path));
	s = slurp(path);
	snprintf(buf, len, "%s", s);
	buf[strcspn(buf, "\n")] = 0;
	free(s);
}

/* the process that runs the VM: the cgroup supervisor's child */
static pid_t vm_pid(const struct vmm *v)
{
	char path[64];
	int child = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)v->pid,
		 (int)v->pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &child) != 1)
		child = -1;
	fclose(f);
	return child;
}

/* a "Name:\tvalue" field of a status file */
static long status_field(const char *path, const char *name, int base)
{
	char *s = slurp(path), *p = strstr(s, name);
	long v = -1;

	if (p && p[strlen(name)] == ':')
		v = strtol(p + strlen(name) + 1, NULL, base);
	free(s);
	return v;
}

/*
 * Every fd of @pid from 3 up is one the VMM made for itself: KVM, its
 * eventfds, epolls, signalfd, timerfd, its two listening sockets, the
 * console log.  Nothing else, above all no pipe.
 */
static void check_fds(pid_t pid, const struct vmm *v)
{
	static const char * const kinds[] = {
		"/dev/kvm", "anon_inode:kvm-vm", "anon_inode:kvm-vcpu:",
		"anon_inode:[eventfd]", "anon_inode:[eventpoll]",
		"anon_inode:[signalfd]", "anon_inode:[timerfd]", "socket:[",
	};
	char dir[64], path[320], target[256];
	int vcpus = 0, sockets = 0, logs = 0, other = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d))) {
		unsigned int i;
		ssize_t n;
		bool known = false;

		if (de->d_name[0] == '.' || atoi(de->d_name) < 3)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strncmp(target, kinds[i], strlen(kinds[i])))
				known = true;
		vcpus += !strncmp(target, "anon_inode:kvm-vcpu:", 20);
		sockets += !strncmp(target, "socket:[", 8);
		if (!strcmp(target, v->log)) {
			known = true;
			logs++;
		}
		if (!known) {
			TH_LOG("fd %s of the VM: %s", de->d_name, target);
			other++;
		}
	}
	closedir(d);
	EXPECT_EQ(other, 0);
	EXPECT_EQ(vcpus, VCPUS);
	/* the two listeners, and a stream the test just closed, maybe */
	EXPECT_GE(sockets, 2);
	EXPECT_EQ(logs, 1);
}

/* /proc/PID/limits: "Max core file size  0  0  bytes" */
static void limit(pid_t pid, const char *name, char *soft, char *hard)
{
	char path[64], *s, *p;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	s = slurp(path);
	p = strstr(s, name);
	soft[0] = hard[0] = 0;
	if (p)
		sscanf(p + strlen(name), "%31s %31s", soft, hard);
	free(s);
}

static void check_limits(pid_t pid)
{
	char soft[32], hard[32], want[32];

	limit(pid, "Max core file size", soft, hard);
	EXPECT_STREQ(soft, "0");
	EXPECT_STREQ(hard, "0");
	limit(pid, "Max file size", soft, hard);
	snprintf(want, sizeof(want), "%llu", (MEM_MIB + 64ULL) << 20);
	EXPECT_STREQ(soft, want);
	EXPECT_STREQ(hard, want);
	limit(pid, "Max open files", soft, hard);
	EXPECT_STREQ(soft, hard);
	/* its own fds, then room for 1024 vsock streams and 8 clients */
	EXPECT_GT(atoi(soft), 1024 + 8);
	EXPECT_LT(atoi(soft), 1024 + 8 + 16 + 64);
}

/* every thread: no capabilities, no_new_privs, seccomp; vCPUs stack one */
static void check_threads(pid_t pid)
{
	char dir[64], path[384];
	int threads = 0, two = 0, one = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d))) {
		long filters;

		if (de->d_name[0] == '.')
			continue;
		threads++;
		snprintf(path, sizeof(path), "%s/%s/status", dir, de->d_name);
		EXPECT_EQ(status_field(path, "CapEff", 16), 0);
		EXPECT_EQ(status_field(path, "CapPrm", 16), 0);
		EXPECT_EQ(status_field(path, "CapBnd", 16), 0);
		EXPECT_EQ(status_field(path, "NoNewPrivs", 10), 1);
		EXPECT_EQ(status_field(path, "Seccomp", 10), 2);
		filters = status_field(path, "Seccomp_filters", 10);
		two += filters == 2;
		one += filters == 1;
	}
	closedir(d);
	/* main, vsock I/O and the vCPUs */
	EXPECT_EQ(threads, VCPUS + 2);
	EXPECT_EQ(two, VCPUS);
	EXPECT_EQ(one, threads - VCPUS);
}

/* Nobody but the test holds the pipe's write end: its reader sees EOF. */
static void check_marker_closed(int rd)
{
	struct pollfd p = { .fd = rd, .events = POLLIN };

	EXPECT_EQ(poll(&p, 1, 2000), 1);
	EXPECT_TRUE(p.revents & POLLHUP);
}

static void check_vm(const struct vmm *v, int marker_rd)
{
	pid_t pid = vm_pid(v);

	ASSERT_GT(pid, 0);
	check_fds(pid, v);
	check_limits(pid);
	check_threads(pid);
	check_marker_closed(marker_rd);
}

TEST(booted_and_restored_vms_are_jailed_alike)
{
	char mem[2][64], cpu[2][64], pids[2][64], want[64], snap[192];
	char req[256], reply[256];
	struct vmm boot, clone;
	int p[2], st;

	need_kvm();
	/* the stand-in of a supervisor's report pipe */
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	start(&boot, VMM_BIN, "jail-boot", NULL, p[1], NULL, JAIL_ALL);
	close(p[1]);
	ASSERT_GT(boot.pid, 0);
	ASSERT_TRUE(wait_ready(&boot));
	cg_read(&boot, "memory.max", mem[0], sizeof(mem[0]));
	cg_read(&boot, "cpu.max", cpu[0], sizeof(cpu[0]));
	cg_read(&boot, "pids.max", pids[0], sizeof(pids[0]));
	snprintf(want, sizeof(want), "%llu", (MEM_MIB + 128ULL) << 20);
	EXPECT_STREQ(mem[0], want);
	snprintf(want, sizeof(want), "%d 100000", VCPUS * 100000);
	EXPECT_STREQ(cpu[0], want);
	snprintf(want, sizeof(want), "%d", VCPUS + 16);
	EXPECT_STREQ(pids[0], want);
	check_vm(&boot, p[0]);
	close(p[0]);

	snprintf(snap, sizeof(snap), "%s/snap", boot.dir);
	snprintf(req, sizeof(req), "snapshot %s", snap);
	ASSERT_EQ(control(boot.ctl, req, reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK snapshot", 11), 0);
	stop(&boot);

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	start(&clone, VMM_BIN, "jail-clone", snap, p[1], NULL, JAIL_ALL);
	close(p[1]);
	ASSERT_GT(clone.pid, 0);
	ASSERT_TRUE(wait_restored(&clone));
	cg_read(&clone, "memory.max", mem[1], sizeof(mem[1]));
	cg_read(&clone, "cpu.max", cpu[1], sizeof(cpu[1]));
	cg_read(&clone, "pids.max", pids[1], sizeof(pids[1]));
	/* the restore's limits are its shape's, as the boot's were */
	EXPECT_STREQ(mem[1], mem[0]);
	EXPECT_STREQ(cpu[1], cpu[0]);
	EXPECT_STREQ(pids[1], pids[0]);
	check_vm(&clone, p[0]);
	close(p[0]);
	stop(&clone);
	st = access(snap, F_OK);
	EXPECT_EQ(st, 0);
	rm_tree(boot.dir);
	rm_tree(clone.dir);
}

/* cube-vmm-hooks: @thread makes @call once the filters are in */
static int hooked(struct vmm *v, const char *thread, const char *call)
{
	char t[64], c[64];
	const char *env[] = { t, c, NULL };

	snprintf(t, sizeof(t), "CUBE_VMM_TEST_THREAD=%s", thread);
	snprintf(c, sizeof(c), "CUBE_VMM_TEST_CALL=%s", call);
	start(v, HOOKS_BIN, call, NULL, -1, env, JAIL_ALL);
	return v->pid;
}

TEST(a_vcpu_thread_call_outside_its_list_kills_the_vmm)
{
	static const char * const calls[] = { "socket", "kvm-get-clock" };
	char line[96];
	unsigned int i;
	struct vmm v;
	int st;

	need_kvm();
	if (access(HOOKS_BIN, X_OK))
		SKIP("no %s", HOOKS_BIN);
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		TH_LOG("vCPU thread: %s", calls[i]);
		ASSERT_GT(hooked(&v, "vcpu", calls[i]), 0);
		st = vmm_wait(v.pid, 120);
		/* the cgroup supervisor exits 128 + the VM's signal */
		EXPECT_EXIT(st, 128 + SIGSYS);
		snprintf(line, sizeof(line), "vcpu thread calls %s", calls[i]);
		EXPECT_TRUE(file_has(v.err, line));
		EXPECT_TRUE(file_has(v.err, "killed by signal 31"));
		EXPECT_FALSE(file_has(v.err, "survived"));
		if (!ct_exited_with(st, 128 + SIGSYS))
			dump_file("stderr", v.err);
		rm_tree(v.dir);
	}
	/* the same socket call from the main thread is allowed */
	ASSERT_GT(hooked(&v, "main", "socket"), 0);
	ASSERT_TRUE(wait_ready(&v));
	EXPECT_TRUE(file_has(v.err, "main thread survived socket"));
	stop(&v);
	rm_tree(v.dir);
}

/* Run cube-vmm in a mount namespace where /sys/fs/cgroup is a tmpfs. */
static void start_without_cgroup2(struct vmm *v, enum jail_off off)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		die_with(parent);
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tmpfs", "/sys/fs/cgroup", "tmpfs", 0, NULL))
			_exit(125);
		start(v, VMM_BIN, "nocg", NULL, -1, NULL, off);
		_exit(ct_exit_code(vmm_wait(v->pid, 240)));
	}
	v->pid = pid;
}

TEST(no_cgroup2_no_vm)
{
	char path[256];
	struct vmm v;
	int st;

	need_kvm();
	start_without_cgroup2(&v, JAIL_ALL);
	st = vmm_wait(v.pid, 60);
	EXPECT_EXIT(st, 1);
	/* the child's scratch dir has the child's pid: find its stderr */
	snprintf(path, sizeof(path), "/tmp/vmm-nocg-%d/stderr.log", (int)v.pid);
	EXPECT_TRUE(file_has(path, "not a writable cgroup v2 mount"));
	EXPECT_TRUE(file_has(path, "--no-cgroup"));
	snprintf(path, sizeof(path), "/tmp/vmm-nocg-%d", (int)v.pid);
	rm_tree(path);
}

TEST(no_cgroup2_with_no_cgroup_runs)
{
	char path[256], ctl[256], reply[128];
	double end = now_s() + BOOT_TIMEOUT;
	struct vmm v;
	int st;

	need_kvm();
	start_without_cgroup2(&v, NO_CGROUP);
	snprintf(path, sizeof(path), "/tmp/vmm-nocg-%d/console.log", (int)v.pid);
	snprintf(ctl, sizeof(ctl), "/tmp/vmm-nocg-%d/control", (int)v.pid);
	EXPECT_TRUE(wait_for(path, "CUBE-L2-VSOCK-READY", BOOT_TIMEOUT, v.pid));
	while (control(ctl, "stop", reply, sizeof(reply)) && now_s() < end)
		usleep(100000);
	st = vmm_wait(v.pid, 60);
	EXPECT_EXIT(st, 0);
	snprintf(path, sizeof(path), "/tmp/vmm-nocg-%d", (int)v.pid);
	rm_tree(path);
}

/* seccomp() and prctl(PR_SET_SECCOMP) fail for the child and what it runs */
static int deny_seccomp(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int ret;

	if (!ctx)
		return -1;
	ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(seccomp), 0);
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL),
				       SCMP_SYS(prctl), 1,
				       SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP));
	if (!ret)
		ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}

TEST(no_seccomp_no_vm)
{
	char path[256];
	pid_t parent, pid;
	int st;

	need_kvm();
	parent = getpid();
	pid = fork();
	if (pid == 0) {
		struct vmm v;

		die_with(parent);
		if (deny_seccomp())
			_exit(125);
		start(&v, VMM_BIN, "nosc", NULL, -1, NULL, JAIL_ALL);
		_exit(ct_exit_code(vmm_wait(v.pid, 240)));
	}
	st = vmm_wait(pid, 120);
	EXPECT_EXIT(st, 1);
	snprintf(path, sizeof(path), "/tmp/vmm-nosc-%d/stderr.log", (int)pid);
	/* the filters are built, then loaded: either step may say it */
	EXPECT_TRUE(file_has(path, "seccomp filter"));
	EXPECT_TRUE(file_has(path, "(--no-seccomp runs without, for development)"));
	dump_file("stderr", path);
	/* no guest ran */
	snprintf(path, sizeof(path), "/tmp/vmm-nosc-%d/console.log", (int)pid);
	EXPECT_FALSE(file_has(path, "CUBE-L2-INIT"));
	snprintf(path, sizeof(path), "/tmp/vmm-nosc-%d", (int)pid);
	rm_tree(path);
}

VMM_TEST_MAIN()
