// SPDX-License-Identifier: GPL-2.0
/*
 * vmm_bench: cube-vmm against qemu -M microvm on the same kernel and
 * initramfs (the tiny L2 guest of the vmm selftests).
 *
 *   boot    wall time to CUBE-L2-BOOT-OK on the serial console, VM exits
 *           (the global /sys/kernel/debug/kvm/exits, sampled while the run
 *           lasts as it only sums live VMs; runs are sequential), minor
 *           faults and max RSS of the VMM (with its children)
 *   restore cube-vmm snapshot of a guest in vsock echo mode, then --restore
 *           (onto /dev/cube clones when it exists, and with --no-cube): time
 *           to the first vsock echo, exits and faults, RSS and private
 *           guest pages of the idle restored VM
 *
 * Medians over -n runs (default 5; 2 under QEMU TCG, where the VM
 * harness gives a program 600 s).  A measurement, not a test: needs
 * /dev/kvm, debugfs for the exit counts, and qemu-system-x86_64 for the peer.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/cube.h>

#define MAX_RUNS	64
#define TIMEOUT		300.0
#define MEM_MIB		"192"
#define CMDLINE		"console=ttyS0 reboot=k panic=-1 pci=off nomodeset quiet"
#define ECHO_PORT	1234
#define EXITS_PATH	"/sys/kernel/debug/kvm/exits"

struct run {
	double ready;		/* seconds from spawn to ready, <0: never */
	double exits;		/* VM exits over the run, <0: unknown */
	double minflt;
	double maxrss_kib;
	double rss_kib;		/* restore: VmRSS of the idle VM */
	double priv_kib;	/* restore: smaps_rollup Private_* */
	double clone_pages;	/* restore onto /dev/cube: module private pages */
};

static const char *vmm, *qemu, *kernel, *initrd;
static char work[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double read_exits(void)
{
	unsigned long long v;
	FILE *f = fopen(EXITS_PATH, "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	return n == 1 ? (double)v : -1;
}

/*
 * The global exits file sums the VMs alive now: a VM's count is gone with
 * it.  So sample while the VMM runs and keep the highest sum.
 */
static double exits_peak;

static void sample_exits(void)
{
	double e = read_exits();

	if (e > exits_peak)
		exits_peak = e;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[65536];
	size_t n;
	FILE *f = fopen(path, "r");
	bool r;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	r = strstr(buf, needle) != NULL;
	return r;
}

/* Sum of the kB fields of PATH whose names start with KEY. */
static double kib_field(const char *path, const char *key)
{
	char line[256];
	double sum = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		char *c = strchr(line, ':');

		if (!strncmp(line, key, strlen(key)) && c &&
		    sscanf(c + 1, "%llu", &v) == 1)
			sum += v;
	}
	fclose(f);
	return sum;
}

/* Has pid exited?  (Left to reap() for its rusage.) */
static bool exited(pid_t pid)
{
	siginfo_t si = { 0 };

	return !waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
	       si.si_pid == pid;
}

static pid_t spawn(const char *const *argv, const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Reap pid within timeout (then SIGKILL); fills the rusage figures. */
static int reap(pid_t pid, double timeout, struct run *r)
{
	double end = now_s() + timeout;
	struct rusage ru;
	int st = 0;

	for (;;) {
		pid_t w = wait4(pid, &st, WNOHANG, &ru);

		if (w == pid)
			break;
		if (w < 0)
			return -1;
		sample_exits();
		if (now_s() > end) {
			kill(pid, SIGKILL);
			wait4(pid, &st, 0, &ru);
			break;
		}
		usleep(10000);
	}
	r->minflt = ru.ru_minflt;
	r->maxrss_kib = ru.ru_maxrss;
	return st;
}

/* One boot: spawn argv, time to marker in log, wait for the power-off. */
static void boot_run(const char *const *argv, const char *log,
		     const char *marker, struct run *r)
{
	double e0 = read_exits(), t0 = now_s();
	char out[128];
	pid_t pid;

	snprintf(out, sizeof(out), "%s/vmm.out", work);
	unlink(log);
	r->ready = -1;
	exits_peak = e0;
	pid = spawn(argv, out);
	while (now_s() - t0 < TIMEOUT) {
		sample_exits();
		if (file_has(log, marker)) {
			r->ready = now_s() - t0;
			break;
		}
		if (exited(pid))
			break;
		usleep(2000);
	}
	reap(pid, 60, r);
	r->exits = e0 >= 0 ? exits_peak - e0 : -1;
	if (r->ready < 0) {
		fprintf(stderr, "# %s: no %s; output:\n", argv[0], marker);
		if (system("tail -n 5 /tmp/cube-vmm-bench.*/vmm.out "
			   "/tmp/cube-vmm-bench.*/*.log >&2")) {
			/* best effort */
		}
	}
}

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int read_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&p, 1, timeout_ms) <= 0 || read(fd, &c, 1) != 1)
			return -1;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
	return 0;
}

static int control(const char *sock, const char *req, char *reply,
		   size_t len)
{
	int fd = unix_connect(sock), r = -1;

	if (fd < 0)
		return -1;
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req) &&
	    write(fd, "\n", 1) == 1)
		r = read_line(fd, reply, len, 120000);
	close(fd);
	return r;
}

/* Connect to the guest's echo port and bounce 64 bytes; 0 on success. */
static int vsock_echo(const char *uds)
{
	char line[64], in[64];
	int fd = unix_connect(uds), ret = -1;
	size_t got = 0;

	if (fd < 0)
		return -1;
	snprintf(line, sizeof(line), "CONNECT %u\n", ECHO_PORT);
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    read_line(fd, line, sizeof(line), 20000) || strncmp(line, "OK ", 3))
		goto out;
	memset(line, 'e', sizeof(line));
	if (write(fd, line, sizeof(line)) != sizeof(line))
		goto out;
	while (got < sizeof(in)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 20000) <= 0)
			goto out;
		n = read(fd, in + got, sizeof(in) - got);
		if (n <= 0)
			goto out;
		got += n;
	}
	ret = memcmp(in, line, sizeof(in)) ? -1 : 0;
out:
	close(fd);
	return ret;
}

static double cube_private_pages(void)
{
	struct cube_mem_stats ms = { 0 };
	int dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	int r;

	if (dev < 0)
		return -1;
	r = ioctl(dev, CUBE_IOC_MEM_STATS, &ms);
	close(dev);
	return r ? -1 : (double)ms.private_pages;
}

/* Boot the guest in vsock mode and snapshot it into work/snap. */
static int make_snapshot(void)
{
	char log[128], uds[128], ctl[128], out[128], req[192], reply[256];
	const char *argv[] = { vmm, "--kernel", kernel, "--initrd", initrd,
		"--append", "cube.test=vsock", "--mem", MEM_MIB,
		"--console-log", log, "--vsock-uds", uds, "--control", ctl,
		"--timeout", "600", NULL };
	struct run r;
	double t0 = now_s();
	pid_t pid;
	int ret = -1;

	snprintf(log, sizeof(log), "%s/snapboot.log", work);
	snprintf(uds, sizeof(uds), "%s/snapboot.vsock", work);
	snprintf(ctl, sizeof(ctl), "%s/snapboot.ctl", work);
	snprintf(out, sizeof(out), "%s/snapboot.out", work);
	pid = spawn(argv, out);
	while (now_s() - t0 < TIMEOUT && vsock_echo(uds))
		usleep(100000);
	snprintf(req, sizeof(req), "snapshot %s/snap", work);
	if (!control(ctl, req, reply, sizeof(reply)) &&
	    !strncmp(reply, "OK snapshot", 11))
		ret = 0;
	else
		fprintf(stderr, "# snapshot failed: %s\n", reply);
	control(ctl, "stop", reply, sizeof(reply));
	reap(pid, 60, &r);
	return ret;
}

/* cube-vmm runs the VM in a child of its cgroup supervisor: that child. */
static pid_t vm_process(pid_t pid)
{
	char path[64];
	FILE *f;
	int child;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	f = fopen(path, "r");
	if (!f)
		return pid;
	if (fscanf(f, "%d", &child) != 1)
		child = pid;
	fclose(f);
	return child;
}

static void show_run(const char *name, int i, const struct run *r)
{
	printf("# run %d %s: ready %.3f s, exits %.0f, minflt %.0f, maxrss %.0f kB\n",
	       i, name, r->ready, r->exits, r->minflt, r->maxrss_kib);
	fflush(stdout);
}

static void restore_run(bool cube, struct run *r)
{
	char snap[128], uds[128], ctl[128], log[128], out[128], reply[256];
	const char *argv[] = { vmm, "--restore", snap, "--vsock-uds", uds,
		"--control", ctl, "--console-log", log, "--timeout", "600",
		cube ? NULL : "--no-cube", NULL };
	double e0, p0, t0;
	char path[64];
	pid_t pid, vm;

	snprintf(snap, sizeof(snap), "%s/snap", work);
	snprintf(uds, sizeof(uds), "%s/restore.vsock", work);
	snprintf(ctl, sizeof(ctl), "%s/restore.ctl", work);
	snprintf(log, sizeof(log), "%s/restore.log", work);
	snprintf(out, sizeof(out), "%s/restore.out", work);
	unlink(uds);
	unlink(ctl);
	p0 = cube_private_pages();
	e0 = read_exits();
	exits_peak = e0;
	t0 = now_s();
	r->ready = -1;
	pid = spawn(argv, out);
	while (now_s() - t0 < TIMEOUT) {
		sample_exits();
		if (!vsock_echo(uds)) {
			r->ready = now_s() - t0;
			break;
		}
		if (exited(pid))
			break;
		usleep(2000);
	}
	/* Idle a moment, then what the restored VM holds. */
	usleep(500000);
	sample_exits();
	vm = vm_process(pid);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)vm);
	r->rss_kib = kib_field(path, "VmRSS");
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)vm);
	r->priv_kib = kib_field(path, "Private_");
	r->clone_pages = cube && p0 >= 0 ? cube_private_pages() - p0 : -1;
	control(ctl, "stop", reply, sizeof(reply));
	reap(pid, 60, r);
	r->exits = e0 >= 0 ? exits_peak - e0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of one field over n runs; -1 when any run lacks it. */
static double median(const struct run *rs, int n, size_t off)
{
	double v[MAX_RUNS];
	int i;

	for (i = 0; i < n; i++) {
		v[i] = *(const double *)((const char *)&rs[i] + off);
		if (v[i] < 0)
			return -1;
	}
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MED(rs, n, f) median(rs, n, offsetof(struct run, f))

static double ratio(double a, double b)
{
	return a >= 0 && b > 0 ? a / b : -1;
}

static void report(const char *name, const struct run *rs, int n)
{
	printf("# %-16s %9.3f %10.0f %10.0f %10.0f", name, MED(rs, n, ready),
	       MED(rs, n, exits), MED(rs, n, minflt), MED(rs, n, maxrss_kib));
	if (MED(rs, n, rss_kib) > 0)
		printf(" %9.0f %9.0f %9.0f", MED(rs, n, rss_kib),
		       MED(rs, n, priv_kib), MED(rs, n, clone_pages));
	printf("\n");
}

static void report_kv(const char *name, const struct run *rs, int n)
{
	printf("bench: figure=%s runs=%d ready_s=%.3f exits=%.0f minflt=%.0f maxrss_kib=%.0f",
	       name, n, MED(rs, n, ready), MED(rs, n, exits),
	       MED(rs, n, minflt), MED(rs, n, maxrss_kib));
	if (MED(rs, n, rss_kib) > 0)
		printf(" rss_kib=%.0f private_kib=%.0f clone_private_pages=%.0f",
		       MED(rs, n, rss_kib), MED(rs, n, priv_kib),
		       MED(rs, n, clone_pages));
	printf("\n");
}

/* self_dir/../a if it exists, else b (absolute, or under self_dir/..). */
static const char *beside(const char *self_dir, const char *a, const char *b)
{
	static char buf[4][PATH_MAX];
	static int slot;
	char *p = buf[slot++ % 4];

	snprintf(p, PATH_MAX, "%s/../%s", self_dir, a);
	if (!access(p, R_OK))
		return p;
	if (b[0] == '/')
		return b;
	snprintf(p, PATH_MAX, "%s/../%s", self_dir, b);
	return p;
}

/* The CPU is QEMU's emulation (hypervisor leaf "TCGTCGTCGTCG"). */
static bool under_tcg(void)
{
	unsigned int a, b, c, d;
	char sig[13];

	__cpuid(1, a, b, c, d);
	if (!(c & (1u << 31)))
		return false;
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = 0;
	return !strcmp(sig, "TCGTCGTCGTCG");
}

static void usage(void)
{
	fprintf(stderr, "usage: vmm_bench [-n RUNS] [-k KERNEL] [-i INITRD] "
		"[-V CUBE_VMM] [-Q QEMU]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct run cv[MAX_RUNS], qm[MAX_RUNS], rc[MAX_RUNS], rf[MAX_RUNS];
	char self[PATH_MAX], *slash, log[128], cmd[192], hr[PATH_MAX + 160];
	bool have_qemu, have_cube;
	int n = 0, i, c, ret = 0;
	ssize_t len;

	while ((c = getopt(argc, argv, "n:k:i:V:Q:")) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			if (n < 1 || n > MAX_RUNS) {
				fprintf(stderr, "vmm_bench: -n %s: 1..%d\n",
					optarg, MAX_RUNS);
				return 2;
			}
			break;
		case 'k': kernel = optarg; break;
		case 'i': initrd = optarg; break;
		case 'V': vmm = optarg; break;
		case 'Q': qemu = optarg; break;
		default: usage();
		}
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return 1;
	self[len] = 0;
	slash = strrchr(self, '/');
	*slash = 0;
	if (!vmm)
		vmm = beside(self, "vmm/cube-vmm", "selftests/vmm/cube-vmm");
	if (!initrd)
		initrd = beside(self, "vmm/l2.cpio.gz", "selftests/vmm/l2.cpio.gz");
	if (!kernel)
		kernel = getenv("CUBE_L2_KERNEL") ? getenv("CUBE_L2_KERNEL") :
			"/boot/vmlinuz";
	if (!qemu)
		qemu = beside(self, "bench/qemu/bin/qemu-system-x86_64",
			      "/usr/bin/qemu-system-x86_64");
	signal(SIGPIPE, SIG_IGN);

	printf("TAP version 13\n1..1\n");
	if (access("/dev/kvm", R_OK | W_OK) || access(vmm, X_OK) ||
	    access(initrd, R_OK) || access(kernel, R_OK)) {
		printf("ok 1 vmm_bench # SKIP needs /dev/kvm, %s, %s, %s\n",
		       vmm, kernel, initrd);
		return 4;
	}
	if (read_exits() < 0 && system("mount -t debugfs none /sys/kernel/debug 2>/dev/null")) {
		/* exits are then reported as -1 */
	}
	have_qemu = !access(qemu, X_OK);
	have_cube = !access("/dev/cube", R_OK | W_OK);
	snprintf(work, sizeof(work), "/tmp/cube-vmm-bench.%d", (int)getpid());
	mkdir(work, 0700);
	snprintf(log, sizeof(log), "%s/console.log", work);

	/* Emulated, fewer runs: the harness gives a program 600 s. */
	if (!n)
		n = under_tcg() ? 2 : 5;
	printf("# vmm_bench: kernel %s, initramfs %s, %s MiB, 1 vCPU, %d runs (medians)\n",
	       kernel, initrd, MEM_MIB, n);
	if (under_tcg())
		printf("# under QEMU TCG (the VM harness, nested SVM): times are not\n"
		       "# real KVM times; compare the counts and the cube-vmm/qemu ratio\n");
	if (read_exits() < 0)
		printf("# no %s: exits not counted (-1)\n", EXITS_PATH);

	for (i = 0; i < n; i++) {
		char serial[160];
		const char *va[] = { vmm, "--kernel", kernel, "--initrd", initrd,
			"--append", "cube.test=boot", "--mem", MEM_MIB,
			"--console-log", log, "--timeout", "300", NULL };
		const char *qa[] = { qemu, "-M", "microvm", "-accel", "kvm",
			"-cpu", "host", "-m", MEM_MIB, "-smp", "1", "-nodefaults",
			"-no-user-config", "-nographic", "-no-reboot",
			"-serial", serial, "-kernel", kernel, "-initrd", initrd,
			"-append", CMDLINE " cube.test=boot", NULL };

		snprintf(serial, sizeof(serial), "file:%s", log);
		boot_run(va, log, "CUBE-L2-BOOT-OK", &cv[i]);
		show_run("boot cube-vmm", i, &cv[i]);
		if (have_qemu) {
			boot_run(qa, log, "CUBE-L2-BOOT-OK", &qm[i]);
			show_run("boot qemu-microvm", i, &qm[i]);
		}
	}
	have_qemu = have_qemu && MED(qm, n, ready) > 0;
	if (!make_snapshot()) {
		/* How much of the guest's memory could be mapped huge. */
		snprintf(hr, sizeof(hr), "'%s/huge_ranges' '%s/snap/memory'",
			 self, work);
		if (system(hr))
			printf("# huge_ranges did not run: %s\n", hr);
		/* The first restore onto /dev/cube makes the module snapshot. */
		if (have_cube) {
			struct run first;

			restore_run(true, &first);
			show_run("restore /dev/cube, first (makes the module snapshot)",
				 0, &first);
			printf("bench: figure=restore_cube_first ready_s=%.3f exits=%.0f minflt=%.0f maxrss_kib=%.0f\n",
			       first.ready, first.exits, first.minflt,
			       first.maxrss_kib);
		}
		for (i = 0; i < n; i++) {
			if (have_cube) {
				restore_run(true, &rc[i]);
				show_run("restore /dev/cube", i, &rc[i]);
			}
			restore_run(false, &rf[i]);
			show_run("restore --no-cube", i, &rf[i]);
		}
	} else {
		ret = 1;
	}

	printf("# %-16s %9s %10s %10s %10s %9s %9s %9s\n", "figure", "ready_s",
	       "exits", "minflt", "maxrss_kB", "rss_kB", "priv_kB", "clonepg");
	report("boot cube-vmm", cv, n);
	if (have_qemu)
		report("boot qemu-microvm", qm, n);
	else
		printf("# qemu -M microvm: %s\n", access(qemu, X_OK) ?
		       "no qemu-system-x86_64" : "did not reach the marker");
	if (!ret) {
		if (have_cube)
			report("restore /dev/cube", rc, n);
		report("restore --no-cube", rf, n);
	}
	report_kv("boot_cube_vmm", cv, n);
	if (have_qemu) {
		report_kv("boot_qemu_microvm", qm, n);
		printf("bench: figure=boot_ratio_cube_vmm_over_qemu ready=%.3f exits=%.3f minflt=%.3f maxrss=%.3f\n",
		       ratio(MED(cv, n, ready), MED(qm, n, ready)),
		       ratio(MED(cv, n, exits), MED(qm, n, exits)),
		       ratio(MED(cv, n, minflt), MED(qm, n, minflt)),
		       ratio(MED(cv, n, maxrss_kib), MED(qm, n, maxrss_kib)));
	}
	if (!ret) {
		if (have_cube)
			report_kv("restore_cube", rc, n);
		report_kv("restore_no_cube", rf, n);
	}
	/* The module snapshot the cube restores cached for the folder. */
	snprintf(cmd, sizeof(cmd), "%s/snap/cube-snapshot-id", work);
	if (have_cube && !access(cmd, R_OK)) {
		struct cube_snapshot_id del = { 0 };
		FILE *f = fopen(cmd, "r");
		int dev = open("/dev/cube", O_RDWR | O_CLOEXEC);

		if (f && fscanf(f, "%" SCNu64, (uint64_t *)&del.id) == 1 && dev >= 0)
			ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del);
		if (f)
			fclose(f);
		if (dev >= 0)
			close(dev);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	if (system(cmd)) {
		/* best effort */
	}
	printf("%s 1 vmm_bench\n", ret ? "not ok" : "ok");
	return ret;
}
