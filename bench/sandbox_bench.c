// SPDX-License-Identifier: GPL-2.0
/*
 * sandbox_bench: what a sandbox costs through cubectl.
 *
 *	sandbox_bench [-t TEMPLATE] [-n SAMPLES] [-c CONCURRENCY]... [-C CUBECTL]
 *
 * For each concurrency level (default 1, then 50), batches of that many
 * workers (as many batches as make SAMPLES runs, default 50) each run
 *	cubectl create --template TEMPLATE	(restore to agent ready)
 *	cubectl exec ID -- true			(first command)
 * and the program reports p50/p95 of both steps.  After each batch, while
 * its sandboxes idle, it reads per sandbox: the VMM's RSS and minor page
 * faults (/proc), its VM exits (the VMM's control socket "status"), and the
 * module's private and shared guest pages per live clone (/dev/cube
 * CUBE_IOC_MEM_STATS); then kills the batch.  Times under emulation say
 * nothing of real hardware; the counts do.
 *
 *	sandbox_bench ... -P			(the same from a warm pool)
 *	sandbox_bench ... -m N [-m N]...	(memory per idle sandbox)
 *	sandbox_bench ... -D MIB [-x MAX] [-S SECONDS]	(density in a memory budget)
 *	sandbox_bench ... -T SECONDS		(stop, cleanly, after that long)
 *	sandbox_bench ... -r ROUNDS -L SECONDS	(more batches where time allows)
 *
 * -r: at least ROUNDS batches at each concurrency (-n 50 -r 4 makes 50 runs
 * at concurrency 1 and 200 at 50), but -L: no batch starts once a level has
 * run SECONDS (after its first), so a slow machine measures fewer; the
 * figure says how many runs it has.
 *
 * -P: the template has a warm pool (cubectl pool set, filled by cubed):
 * before each batch the program waits until the pool holds as many ready
 * sandboxes as the batch has workers, and the workers create without a
 * label, so that each create takes one; sandboxes are then told apart by
 * the ids the workers report (and by state: pooled ones are left alone).
 * Every latency level also prints its samples ("bench: samples=..." lines,
 * create to first output in ms) for a latency CDF.
 *
 * -m: N sandboxes of the template idle at once (each after one command):
 * host memory used (MemAvailable), with -g the cgroup's memory.current
 * (the program moves itself, and so every shim and VMM it starts, into a
 * cgroup of its own; -1 without -g), the module's private and shared page counters, each
 * divided by N, and the VMM process's own overhead (anonymous memory, page
 * tables, threads) apart; then, over 10 s, their VM exits a second and
 * their VMMs' CPU time a minute, per sandbox.  -D: sandboxes are made one
 * by one until the host memory they use passes MIB, a create fails, or MAX
 * (default 64) are up; the count is the density (with CUBE_VMM naming a VMM that
 * restores with --no-cube, that of the MAP_PRIVATE file path).  Past MIB,
 * it waits up to -S SECONDS (default 30) for the sandboxes to settle (they
 * give back pages once idle, cube-vmm --trim-every) and goes on if they
 * are back within MIB.
 *
 * Machine-readable results are the "bench: figure=NAME key=value..."
 * lines.  SIGTERM, SIGINT, SIGHUP or the -T alarm stop the workers and
 * kill every sandbox this run made (label cube-bench=PID) before it exits.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/cube.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cube_runtime.h"
#include "kmem.h"
#include "nl_client.h"

#define MAX_LEVELS	8
#define MAX_WORKERS	256
#define MAX_LIVE	512
#define MEM_BATCH	10	/* concurrent creates while filling memory */
#define SETTLE_S	3	/* idle time before memory is read */

extern char **environ;

static const char *cubectl = "cubectl";
static char cgroup[128];		/* ours, "" when none */
static volatile sig_atomic_t stopping;

struct sample {
	uint64_t id;
	double create_ms;
	double exec_ms;
	int ok;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Run argv; its stdout into @out when given (the rest is read and
 * dropped).  Exit status. */
static bool run_quiet;		/* run(): the program's stderr to /dev/null */

static int run(char *const argv[], char *out, size_t outlen)
{
	posix_spawn_file_actions_t fa;
	int pfd[2], st = -1;
	pid_t pid;
	ssize_t n = 0, r;
	char sink[4096];

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	if (run_quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
						 O_WRONLY, 0);
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (r) {
		close(pfd[0]);
		return -(int)r;
	}
	for (;;) {
		if (out && (size_t)n < outlen - 1)
			r = read(pfd[0], out + n, outlen - 1 - n);
		else
			r = read(pfd[0], sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out && (size_t)n < outlen - 1)
			n += r;
	}
	if (out)
		out[n] = 0;
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char label[64];		/* cube-bench=PID on every sandbox made */
static bool use_pool;		/* -P: creates take from the template's pool */

/* One worker: create, then the first command; results through a pipe. */
static void worker(const char *tmpl, int fd)
{
	struct sample s = { 0 };
	char id[32], *create[] = { (char *)cubectl, "create", "--template",
				   (char *)tmpl, "--label", label, NULL };
	double t0 = now_ms();

	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (use_pool)
		create[4] = NULL;	/* a labelled create never takes */
	if (run(create, id, sizeof(id)) == 0 &&
	    (id[strcspn(id, "\r\n")] = 0, *id)) {
		char *exec[] = { (char *)cubectl, "exec", id, "--", "true", NULL };

		s.create_ms = now_ms() - t0;
		s.id = strtoull(id, NULL, 10);
		s.ok = run(exec, NULL, 0) == 0;
		s.exec_ms = now_ms() - t0 - s.create_ms;
	}
	if (write(fd, &s, sizeof(s)) != sizeof(s))
		_exit(1);
	_exit(0);
}

/*
 * Start @n workers; their samples into @out (ok = 0 for a worker that
 * reported nothing).  Returns how many reported.
 */
static int batch(const char *tmpl, struct sample *out, int n)
{
	int pfd[2], i, got = 0;

	memset(out, 0, n * sizeof(*out));
	if (pipe2(pfd, O_CLOEXEC))
		return 0;
	for (i = 0; i < n && !stopping; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			close(pfd[0]);
			worker(tmpl, pfd[1]);
		}
		if (pid < 0)
			break;
	}
	close(pfd[1]);
	for (i = 0; i < n && !stopping; i++) {
		ssize_t r = read(pfd[0], &out[got], sizeof(out[got]));

		if (r == sizeof(out[got]))
			got++;
		else if (r < 0 && errno == EINTR)
			i--;
		else
			break;
	}
	close(pfd[0]);
	while (!stopping && wait(NULL) > 0)
		;
	return got;
}

/*
 * Kill every sandbox this run made (its label), also those whose id no
 * worker lived to report, and wait until the module lists none.
 */
static const char *bench_tmpl = "bench";

/* In pool mode: a sandbox of the template that is no longer pooled */
static bool taken_from_pool(char *line)
{
	char id[32], state[32], tmpl[64];

	if (sscanf(line, "%31s %31s %63s", id, state, tmpl) != 3)
		return false;
	return strtoull(id, NULL, 10) && strcmp(state, "pooled") &&
	       !strcmp(tmpl, bench_tmpl);
}

static void kill_ours(void)
{
	char *ls[] = { (char *)cubectl, "ls", NULL };
	int tries;

	for (tries = 0; tries < 60; tries++) {
		char out[65536], *line, *save = NULL;
		char *argv[2 + 64 + 1] = { (char *)cubectl, "kill" };
		int n = 2, found = 0;

		if (run(ls, out, sizeof(out)) != 0 && tries)
			return;
		for (line = strtok_r(out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *sp;

			line[strcspn(line, "\r")] = 0;

			if (use_pool) {
				if (!taken_from_pool(line))
					continue;
			} else {
				sp = strstr(line, label);
				if (!sp || (sp[strlen(label)] &&
					    sp[strlen(label)] != ','))
					continue;
			}
			found++;
			sp = strchr(line, ' ');
			if (sp)
				*sp = 0;
			if (n < 2 + 64)
				argv[n++] = line;
		}
		if (!found)
			return;
		argv[n] = NULL;
		/*
		 * after the first pass, what is listed is mostly on its way
		 * out already ("not found", "already in progress"): quiet
		 */
		run_quiet = tries > 0;
		if (n > 2)
			run(argv, NULL, 0);
		run_quiet = false;
		sleep(1);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, int p)
{
	int i = (n * p + 99) / 100 - 1;

	return n ? v[i < 0 ? 0 : i] : 0;
}

/*
 * The processes of sandbox @id, its shim first (the sandbox's owner, whose
 * pid `cubectl --json inspect` reports): shim -> cube-vmm, which runs the
 * VM itself when the shim cloned it into its pid namespace (--parent-fd),
 * else in a child of its own inside the sandbox's cgroup and only waits
 * for it.  Return: how many of @chain (up to 3) were found.
 */
static int sandbox_procs(uint64_t id, pid_t chain[3])
{
	char ids[32], out[4096], buf[64], *p;
	char *argv[] = { (char *)cubectl, "--json", "inspect", ids, NULL };
	posix_spawn_file_actions_t fa;
	pid_t shim = 0, child = 0, pid;
	int pfd[2], depth = 0;
	ssize_t n = 0, r;
	FILE *f;

	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	if (pipe2(pfd, O_CLOEXEC))
		return 0;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	r = posix_spawn(&pid, cubectl, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	while (!r && (size_t)n < sizeof(out) - 1 &&
	       (r = read(pfd[0], out + n, sizeof(out) - 1 - n)) > 0) {
		n += r;
		r = 0;
	}
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	out[n] = 0;
	p = strstr(out, "\"owner_pid\"");
	if (p && (p = strchr(p, ':')))
		shim = strtol(p + 1, NULL, 10);
	if (shim <= 0)
		return 0;
	chain[0] = shim;
	for (pid = shim; depth < 2; depth++) {
		snprintf(buf, sizeof(buf), "/proc/%d/task/%d/children", pid, pid);
		f = fopen(buf, "r");
		if (!f)
			break;
		if (fscanf(f, "%d", &child) != 1)
			child = 0;
		fclose(f);
		if (child <= 0)
			break;
		pid = child;
		chain[depth + 1] = pid;
	}
	return depth + 1;
}

/* The process that runs sandbox @id's VM: the deepest of its chain. */
static pid_t vmm_pid(uint64_t id)
{
	pid_t chain[3];
	int n = sandbox_procs(id, chain);

	return n > 1 ? chain[n - 1] : 0;
}

static long proc_value(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

static long proc_minflt(pid_t pid)
{
	char path[64], buf[1024], *p;
	long v = -1;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
		/* the Nth field follows the (N - 2)th space after "comm)":
		 * minflt is the 10th */
		for (i = 3; i <= 10 && p; i++)
			p = strchr(p + 1, ' ');
		if (p)
			v = strtol(p + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static long mem_available_kib(void)
{
	return kib_field("/proc/meminfo", "MemAvailable:");
}

/* our cgroup's memory.current in KiB, -1 without one */
static long cgroup_kib(void)
{
	char path[192];
	long long v;
	FILE *f;

	if (!cgroup[0])
		return -1;
	snprintf(path, sizeof(path), "%s/memory.current", cgroup);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1024;
	fclose(f);
	return v / 1024;
}

/*
 * A cgroup v2 of our own, with the memory controller, holding this program
 * and so every shim and VMM it starts.  Nothing happens when cgroup2 is
 * not at /sys/fs/cgroup; memory.current is then reported as -1.
 */
static void cgroup_enter(void)
{
	char path[192], pid[32];
	int fd;

	fd = open("/sys/fs/cgroup/cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		/* fails when already on, or not ours to change */
		ssize_t w = write(fd, "+memory", 7);

		(void)w;
		close(fd);
	}
	snprintf(cgroup, sizeof(cgroup), "/sys/fs/cgroup/cube-bench.%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (mkdir(cgroup, 0755) && errno != EEXIST) {
		cgroup[0] = 0;
		return;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, pid, strlen(pid)) < 0) {
		rmdir(cgroup);
		cgroup[0] = 0;
	}
	if (fd >= 0)
		close(fd);
}

/* back to the root cgroup, and ours removed (once nothing is left in it) */
static void cgroup_leave(void)
{
	char pid[32];
	int fd, i;

	if (!cgroup[0])
		return;
	fd = open("/sys/fs/cgroup/cgroup.procs", O_WRONLY | O_CLOEXEC);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (fd >= 0) {
		ssize_t w = write(fd, pid, strlen(pid));

		(void)w;
		close(fd);
	}
	for (i = 0; i < 50 && rmdir(cgroup) && errno == EBUSY; i++)
		usleep(100 * 1000);
	cgroup[0] = 0;
}

/* the VM exits of every live VM (debugfs), -1 without it */
/*
 * KVM's counters, summed over every VM of the host (only ours run while
 * this measures): all exits, then those of each reason KVM counts apart,
 * then two events that are not exits (a halted vCPU woken; an interrupt
 * injected).  What "exits" holds beyond the reasons is the rest (MSR
 * writes such as the guest's timer deadline, CPUID, ...).
 */
static const char *const kvm_stat_names[] = {
	"exits", "halt_exits", "irq_exits", "io_exits", "mmio_exits",
	"irq_window_exits", "signal_exits", "request_irq_exits",
	"insn_emulation", "hypercalls", "halt_wakeup", "irq_injections",
};
#define KVM_STATS	(sizeof(kvm_stat_names) / sizeof(kvm_stat_names[0]))

static long long kvm_stat(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void kvm_stats(long long *v)
{
	size_t i;

	for (i = 0; i < KVM_STATS; i++)
		v[i] = kvm_stat(kvm_stat_names[i]);
}

static long long kvm_exits(void)
{
	return kvm_stat("exits");
}

/* utime + stime of @pid, in clock ticks; -1 when gone */
static long long cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;
	int i, ok = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
		/* after "comm)": the 12th space precedes utime (field 14),
		 * then stime */
		for (i = 3; i <= 14 && p; i++)
			p = strchr(p + 1, ' ');
		ok = p && sscanf(p + 1, "%llu %llu", &ut, &st) == 2;
	}
	fclose(f);
	return ok ? (long long)(ut + st) : -1;
}

static int mem_stats(struct cube_mem_stats *ms)
{
	int fd = open("/dev/" CUBE_DEVICE_NAME, O_RDONLY | O_CLOEXEC);
	int ret;

	memset(ms, 0, sizeof(*ms));
	if (fd < 0)
		return -errno;
	ret = ioctl(fd, CUBE_IOC_MEM_STATS, ms) ? -errno : 0;
	close(fd);
	return ret;
}

/* what the VMMs of @s cost themselves, averaged (KiB; threads a count) */
struct vmm_cost {
	int seen, clones, clone_err;
	long rss, anon, pte, threads, minflt, exits;
	long shim_anon, parent_anon;	/* the shim's, the VMM parent's */
	long long faults, cow_faults, around;
};

/* @key's value in a VMM "status" reply; -1 when the reply has none */
static long long status_field(const char *reply, const char *key)
{
	const char *p = strstr(reply, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void vmm_cost(struct sample *s, int n, struct vmm_cost *c)
{
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < n; i++) {
		char path[PATH_MAX], reply[512];
		pid_t pid;

		pid_t chain[3];
		int np;

		if (!s[i].ok || (np = sandbox_procs(s[i].id, chain)) < 2)
			continue;
		pid = chain[np - 1];
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup",
			 (int)chain[0]);
		c->shim_anon += kib_field(path, "Anonymous:");
		/* a supervisor between shim and VM: none since --parent-fd */
		if (np == 3) {
			snprintf(path, sizeof(path), "/proc/%d/smaps_rollup",
				 (int)chain[1]);
			c->parent_anon += kib_field(path, "Anonymous:");
		}
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
		c->anon += kib_field(path, "Anonymous:");
		c->rss += proc_value(pid, "VmRSS:");
		c->pte += proc_value(pid, "VmPTE:");
		c->threads += proc_value(pid, "Threads:");
		c->minflt += proc_minflt(pid);
		/*
		 * The VMM answers "status" with its VM exits and, on a cube.ko
		 * clone, the clone's counters (CUBE_IOC_CLONE_COUNTERS).
		 */
		if (cube_sandbox_path(path, sizeof(path), s[i].id, "control") ||
		    cube_control(path, "status\n", reply, sizeof(reply))) {
			c->clone_err = -EIO;
		} else {
			long long f = status_field(reply, " clone_faults=");

			c->exits += status_field(reply, " exits=");
			if (f >= 0) {
				c->faults += f;
				c->cow_faults += status_field(reply, " clone_cow_faults=");
				c->around += status_field(reply, " clone_around=");
				c->clones++;
			} else {
				c->clone_err = -ENOENT;
			}
		}
		c->seen++;
	}
	if (c->seen) {
		c->rss /= c->seen;
		c->anon /= c->seen;
		c->shim_anon /= c->seen;
		c->parent_anon /= c->seen;
		c->pte /= c->seen;
		c->threads /= c->seen;
		c->minflt /= c->seen;
		c->exits /= c->seen;
	}
	if (c->clones) {
		c->faults /= c->clones;
		c->cow_faults /= c->clones;
		c->around /= c->clones;
	}
}

/*
 * "trim" on every VMM of the batch (the pages each guest wrote back to the
 * snapshot's contents, zeroed free pages above all, go back to the
 * module): the private pages per clone before and after, and the VMMs'
 * own time for it.
 */
static void report_trim(struct sample *s, int n, int conc)
{
	struct cube_mem_stats before, after;
	long long dropped = 0, us = 0;
	int i, done = 0;

	if (mem_stats(&before) || !before.clones)
		return;
	for (i = 0; i < n; i++) {
		char path[PATH_MAX], reply[256];

		if (!s[i].ok ||
		    cube_sandbox_path(path, sizeof(path), s[i].id, "control") ||
		    cube_control(path, "trim\n", reply, sizeof(reply)) ||
		    strncmp(reply, "OK trim ", 8))
			continue;
		dropped += status_field(reply, " dropped=");
		us += status_field(reply, " us=");
		done++;
	}
	if (!done || mem_stats(&after) || !after.clones) {
		printf("bench: missing=restore_trim reason=\"the VMMs did not answer a trim request\"\n");
		return;
	}
	printf("bench: figure=restore_trim pool=%d concurrency=%d measured=%d private_pages_before=%" PRIu64 " private_pages_after=%" PRIu64 " dropped=%lld trim_us=%lld\n",
	       use_pool, conc, done,
	       (uint64_t)(before.private_pages / before.clones),
	       (uint64_t)(after.private_pages / after.clones),
	       dropped / done, us / done);
}

static void report_idle(struct sample *s, int n, int conc)
{
	struct cube_mem_stats ms;
	struct vmm_cost c;

	vmm_cost(s, n, &c);
	if (c.seen)
		printf("#   per idle sandbox (%d measured): VMM RSS %ld KiB, VMM minor faults %ld, VM exits %ld\n",
		       c.seen, c.rss, c.minflt, c.exits);
	if (c.clones)
		printf("#   per clone (%d read): %lld faults it handled, %lld private copies, %lld pages mapped around faults\n",
		       c.clones, c.faults, c.cow_faults, c.around);
	else if (c.seen)
		printf("#   per clone: %s\n", c.clone_err == -ENOENT ?
		       "the VMMs report no clone (their memory is the file, MAP_PRIVATE)" :
		       "the VMMs' control sockets did not answer \"status\"");
	if (mem_stats(&ms) == 0 && ms.clones)
		printf("#   module: %" PRIu64 " clones, %" PRIu64 " private pages per clone, %" PRIu64 " shared pages in %" PRIu64 " snapshots\n",
		       (uint64_t)ms.clones, (uint64_t)(ms.private_pages / ms.clones),
		       (uint64_t)ms.shared_pages, (uint64_t)ms.snapshots);
	else
		printf("#   module: no clones (restores use the file fallback)\n");
	printf("bench: figure=restore_counts pool=%d concurrency=%d measured=%d vm_exits=%ld vmm_minflt=%ld clone_faults=%lld clone_cow_faults=%lld clone_private_pages=%" PRIu64 "\n",
	       use_pool, conc, c.seen, c.exits, c.minflt,
	       c.clones ? c.faults : -1LL, c.clones ? c.cow_faults : -1LL,
	       (uint64_t)(ms.clones ? ms.private_pages / ms.clones : 0));
	report_trim(s, n, conc);
}

#define POOL_WAIT_S	900

/*
 * Pool mode: wait until the pool of @tmpl holds @n ready sandboxes.
 * 0, or -ETIMEDOUT (or the netlink error) when it does not in POOL_WAIT_S.
 */
static int wait_pool(const char *tmpl, int n)
{
	struct cube_nl_pool p = { 0 };
	struct cube_nl *nl;
	int ret, i;

	ret = cube_nl_open(&nl);
	if (ret)
		return ret;
	for (i = 0; i < POOL_WAIT_S * 10 && !stopping; i++) {
		ret = cube_nl_pool_get(nl, tmpl, &p);
		if (ret || p.size >= (uint32_t)n)
			break;
		usleep(100 * 1000);
	}
	cube_nl_close(nl);
	if (ret)
		return ret;
	return p.size >= (uint32_t)n ? 0 : -ETIMEDOUT;
}

/* the sorted samples of one level, for a CDF: "bench: samples=NAME ..." */
static void print_samples(const char *name, int conc, const double *v, int n)
{
	int i;

	printf("bench: samples=%s pool=%d concurrency=%d ms=", name, use_pool,
	       conc);
	for (i = 0; i < n; i++)
		printf("%s%.1f", i ? "," : "", v[i]);
	printf("\n");
}

static int min_rounds = 1;	/* -r */
static int level_s;		/* -L, 0: no bound */

static int level(const char *tmpl, int conc, int samples)
{
	int rounds = (samples + conc - 1) / conc;
	double t0 = now_ms();
	struct sample *all = calloc((size_t)conc * rounds, sizeof(*all));
	double *c = calloc((size_t)conc * rounds, sizeof(double));
	double *e = calloc((size_t)conc * rounds, sizeof(double));
	double *t = calloc((size_t)conc * rounds, sizeof(double));
	int r, i, n = 0, failed = 0, ret;

	if (rounds < min_rounds) {
		rounds = min_rounds;
		all = realloc(all, (size_t)conc * rounds * sizeof(*all));
		c = realloc(c, (size_t)conc * rounds * sizeof(double));
		e = realloc(e, (size_t)conc * rounds * sizeof(double));
		t = realloc(t, (size_t)conc * rounds * sizeof(double));
		if (all)
			memset(all, 0, (size_t)conc * rounds * sizeof(*all));
	}
	if (!all || !c || !e || !t) {
		ret = -ENOMEM;
		goto out;
	}
	for (r = 0; r < rounds && !stopping; r++) {
		struct sample *b = all + (size_t)r * conc;
		int got;

		if (r && level_s && now_ms() - t0 > level_s * 1000.0) {
			printf("# concurrency %d: %d of %d batches in %d s, no more\n",
			       conc, r, rounds, level_s);
			rounds = r;
			break;
		}
		if (use_pool && (ret = wait_pool(tmpl, conc))) {
			printf("# pool %s did not hold %d ready sandboxes: %s\n",
			       tmpl, conc, strerror(-ret));
			failed += (rounds - r) * conc;
			break;
		}
		got = batch(tmpl, b, conc);

		failed += conc - got;
		if ((r == rounds - 1 || (level_s && now_ms() - t0 > level_s * 1000.0)) &&
		    !stopping)
			report_idle(b, got, conc);
		for (i = 0; i < got; i++) {
			if (!b[i].ok) {
				failed++;
				continue;
			}
			c[n] = b[i].create_ms;
			t[n] = b[i].create_ms + b[i].exec_ms;
			e[n++] = b[i].exec_ms;
		}
		kill_ours();
	}
	qsort(c, n, sizeof(*c), cmp_double);
	qsort(e, n, sizeof(*e), cmp_double);
	qsort(t, n, sizeof(*t), cmp_double);
	printf("concurrency %3d%s: %4d runs (%d failed)  create p50 %8.1f ms p95 %8.1f ms   to first output p50 %8.1f ms p95 %8.1f ms p99 %8.1f ms\n",
	       conc, use_pool ? " (warm pool)" : "", n, failed, pct(c, n, 50),
	       pct(c, n, 95), pct(t, n, 50), pct(t, n, 95), pct(t, n, 99));
	printf("bench: figure=latency_cubectl pool=%d concurrency=%d runs=%d failed=%d create_p50_ms=%.1f create_p95_ms=%.1f create_p99_ms=%.1f exec_p50_ms=%.1f exec_p95_ms=%.1f first_output_p50_ms=%.1f first_output_p95_ms=%.1f first_output_p99_ms=%.1f\n",
	       use_pool, conc, n, failed, pct(c, n, 50), pct(c, n, 95),
	       pct(c, n, 99), pct(e, n, 50), pct(e, n, 95), pct(t, n, 50),
	       pct(t, n, 95), pct(t, n, 99));
	print_samples("latency_cubectl", conc, t, n);
	ret = failed ? 1 : 0;
out:
	free(all);
	free(c);
	free(e);
	free(t);
	return ret;
}

#define IDLE_WINDOW_S	10

/*
 * What idle sandboxes cost in time: VM exits (all live VMs; only ours run)
 * and the VMM processes' CPU time over IDLE_WINDOW_S, per sandbox.
 */
static void idle_cost(struct sample *s, int n)
{
	pid_t pid[MAX_LIVE];
	long long t0 = 0, t1 = 0, e0, e1, s0[KVM_STATS], s1[KVM_STATS];
	int i, k = 0;
	size_t j;

	for (i = 0; i < n && k < MAX_LIVE; i++)
		if (s[i].ok && (pid[k] = vmm_pid(s[i].id)) > 0)
			k++;
	if (!k)
		return;
	kvm_stats(s0);
	e0 = kvm_exits();
	for (i = 0; i < k; i++)
		t0 += cpu_ticks(pid[i]);
	sleep(IDLE_WINDOW_S);
	e1 = kvm_exits();
	kvm_stats(s1);
	for (i = 0; i < k; i++)
		t1 += cpu_ticks(pid[i]);
	printf("# %3d idle sandboxes over %d s: %.1f VM exits a second each, VMM CPU %.1f ms a minute each\n",
	       k, IDLE_WINDOW_S,
	       e0 < 0 || e1 < 0 ? -1.0 : (double)(e1 - e0) / IDLE_WINDOW_S / k,
	       (double)(t1 - t0) * 1000.0 / sysconf(_SC_CLK_TCK) * 60 / IDLE_WINDOW_S / k);
	printf("bench: figure=idle_cost n=%d window_s=%d exits_per_s=%.2f vmm_cpu_ms_per_min=%.2f\n",
	       k, IDLE_WINDOW_S,
	       e0 < 0 || e1 < 0 ? -1.0 : (double)(e1 - e0) / IDLE_WINDOW_S / k,
	       (double)(t1 - t0) * 1000.0 / sysconf(_SC_CLK_TCK) * 60 / IDLE_WINDOW_S / k);
	/* the same exits by reason, a second per sandbox */
	printf("bench: figure=idle_exits n=%d window_s=%d", k, IDLE_WINDOW_S);
	for (j = 0; j < KVM_STATS; j++)
		printf(" %s=%.2f", kvm_stat_names[j],
		       s0[j] < 0 || s1[j] < 0 ? -1.0 :
		       (double)(s1[j] - s0[j]) / IDLE_WINDOW_S / k);
	printf("\n");
}

/*
 * N idle sandboxes at once: what they cost the host, per sandbox.  Made in
 * batches of MEM_BATCH, each after one command, then left idle SETTLE_S.
 */
static int mem_level(const char *tmpl, int n)
{
	struct sample *s = calloc(n, sizeof(*s));
	struct cube_mem_stats m0, m1;
	long a0, a1, g0, g1;
	struct vmm_cost c;
	int made = 0, ok = 0, i;

	if (!s)
		return -ENOMEM;
	a0 = mem_available_kib();
	g0 = cgroup_kib();
	mem_stats(&m0);
	while (made < n && !stopping) {
		int k = n - made < MEM_BATCH ? n - made : MEM_BATCH;
		int got = batch(tmpl, s + made, k);

		made += got;
		if (got < k)
			break;
	}
	for (i = 0; i < made; i++)
		ok += s[i].ok;
	sleep(SETTLE_S);
	a1 = mem_available_kib();
	g1 = cgroup_kib();
	mem_stats(&m1);
	vmm_cost(s, made, &c);
	idle_cost(s, made);
	if (ok) {
		long priv = (long)(m1.private_pages - m0.private_pages) * 4;
		long shared = (long)m1.shared_pages * 4;

		printf("# %3d idle sandboxes (%d asked): per sandbox host %ld KiB (MemAvailable), cgroup %ld KiB, guest private %ld KiB (module), VMM anon %ld KiB + page tables %ld KiB (%ld threads, RSS %ld KiB), its parent's anon %ld KiB, the shim's %ld KiB; shared snapshot pages %ld KiB in all\n",
		       ok, n, (a0 - a1) / ok, g0 < 0 ? -1 : (g1 - g0) / ok, priv / ok,
		       c.anon, c.pte, c.threads, c.rss, c.parent_anon,
		       c.shim_anon, shared);
		printf("bench: figure=memory_idle n=%d asked=%d host_kib=%ld cgroup_kib=%ld guest_private_kib=%ld vmm_anon_kib=%ld vmm_pte_kib=%ld vmm_threads=%ld vmm_rss_kib=%ld shared_kib=%ld clones=%" PRIu64 " shim_anon_kib=%ld vmm_parent_anon_kib=%ld\n",
		       ok, n, (a0 - a1) / ok, g0 < 0 ? -1 : (g1 - g0) / ok, priv / ok,
		       c.anon, c.pte, c.threads, c.rss, shared,
		       (uint64_t)(m1.clones - m0.clones), c.shim_anon,
		       c.parent_anon);
	} else {
		printf("# %3d idle sandboxes: none could be made\n", n);
	}
	kill_ours();
	free(s);
	return ok == n ? 0 : 1;
}

/* cube-shim and cube-vmm processes running now (anyone's), or -1. */
static int cube_processes(void)
{
	char path[300], comm[32];
	struct dirent *e;
	DIR *d = opendir("/proc");
	FILE *f;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;	/* gone meanwhile */
		if (fgets(comm, sizeof(comm), f) &&
		    (!strcmp(comm, "cube-shim\n") || !strcmp(comm, "cube-vmm\n")))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * Wait, up to @max_s seconds, until at most @procs cube processes are left
 * (any number for -1) and the host's free memory moved by less than a MiB
 * in the last second: what sandboxes killed before free as they exit is
 * not room a density pass made.  Returns the seconds waited.
 */
static int wait_quiet(int procs, int max_s)
{
	long f0 = kib_field("/proc/meminfo", "MemFree:"), f1;
	int w;

	for (w = 1; w <= max_s && !stopping; w++) {
		sleep(1);
		f1 = kib_field("/proc/meminfo", "MemFree:");
		if ((procs < 0 || cube_processes() <= procs) &&
		    labs(f1 - f0) < 1024)
			break;
		f0 = f1;
	}
	return w;
}

/*
 * Sandboxes made one by one until the host memory they use passes
 * @budget_mib, a create fails, or @max are up.  Then where the memory
 * went: the change of the host's /proc/meminfo fields, per sandbox made.
 */
static int density(const char *tmpl, int budget_mib, int max, int settle_s)
{
	struct sample *s = calloc(max, sizeof(*s));
	long a0, used = 0;
	long m0[NR_KMEM_FIELDS], m1[NR_KMEM_FIELDS];
	struct slab_use *c0 = calloc(2 * MAX_SLAB_CACHES, sizeof(*c0));
	struct slab_use *c1 = c0 + MAX_SLAB_CACHES;
	const char *vmm = getenv("CUBE_VMM");
	struct cube_mem_stats ms0 = { 0 }, ms1 = { 0 };
	int n = 0, made = 0, n0 = -1, n1 = -1, waited = 0, w;
	const char *why = "the maximum";
	int procs0;
	size_t i;

	if (!s || !c0) {
		free(s);
		free(c0);
		return -ENOMEM;
	}
	/* what ran before (an earlier pass, the other figures) is gone */
	w = wait_quiet(-1, 30);
	printf("# density: %d s for the host's free memory to settle first\n", w);
	/*
	 * Each pass starts with the slab caches' empty pages given back, and
	 * is read so at its end: otherwise a pass after another fills the
	 * free objects the first left in partly used slabs, and looks cheaper.
	 */
	slab_shrink(NULL);
	procs0 = cube_processes();
	a0 = mem_available_kib();
	kmem_read(m0);
	n0 = slab_snapshot(c0, MAX_SLAB_CACHES);
	mem_stats(&ms0);	/* zeros without the module: 0 moved */
	while (n < max && !stopping) {
		if (batch(tmpl, s + n, 1) != 1 || !s[n].ok) {
			why = "a create failed";
			break;
		}
		n++;
		made = n;
		used = a0 - mem_available_kib();
		/* idle sandboxes give pages back once they settle */
		for (w = 0; w < settle_s && used > (long)budget_mib * 1024 &&
		     !stopping; w++) {
			sleep(1);
			used = a0 - mem_available_kib();
			waited++;
		}
		if (used > (long)budget_mib * 1024) {
			why = "the budget";
			n--;	/* the last one did not fit */
			break;
		}
	}
	slab_shrink(NULL);
	kmem_read(m1);
	n1 = slab_snapshot(c1, MAX_SLAB_CACHES);
	if (mem_stats(&ms1))
		ms1 = ms0;
	printf("# density: %d idle sandboxes in %d MiB (stopped by %s; %ld KiB used by the last count + 1; %d s waited for them to settle), VMM %s\n",
	       n, budget_mib, why, used, waited, vmm ? vmm : "cube-vmm");
	printf("bench: figure=density budget_mib=%d sandboxes=%d stopped_by=\"%s\" host_kib=%ld settle_wait_s=%d\n",
	       budget_mib, n, why, used, waited);
	for (i = 0; made && i < 2; i++) {
		bool fig = i;	/* the comment line, then the figure */
		size_t f;

		if (fig)
			printf("bench: figure=density_meminfo made=%d", made);
		else
			printf("# density: per sandbox made (%d), the host's /proc/meminfo moved by (KiB):",
			       made);
		for (f = 0; f < NR_KMEM_FIELDS; f++)
			printf(fig ? " %s_kib=%ld" : " %s %+ld",
			       kmem_fields[f], (m1[f] - m0[f]) / made);
		/* xarray and radix tree nodes: where a clone keeps its pages */
		if (n0 >= 0 && n1 >= 0)
			printf(fig ? " xarray_nodes_kib=%ld" :
				     "; of the slab, xarray nodes %+ld",
			       (slab_kib(c1, n1, "radix_tree_node") -
				slab_kib(c0, n0, "radix_tree_node")) / made);
		/*
		 * cube.ko: the clones' private pages, and the pages held for
		 * all (the merge groups' pages, when sandboxes share them)
		 */
		printf(fig ? " module_private_kib=%lld module_shared_kib=%lld" :
			     "; cube.ko's private pages %+lld, shared %+lld",
		       (long long)(ms1.private_pages - ms0.private_pages) * 4 /
		       made,
		       (long long)(ms1.shared_pages - ms0.shared_pages) * 4 /
		       made);
		printf("\n");
		if (n0 >= 0 && n1 >= 0)
			print_slab_growth(c0, n0, c1, n1, made, fig, "density",
					  "sandbox");
	}
	kill_ours();
	/*
	 * Their VMMs free the clones' pages as they exit, after the module's
	 * sandboxes are gone: a pass that starts meanwhile would count that
	 * memory coming back as room.  So the next one waits for it.
	 */
	for (w = 0; w < 120 && !stopping; w++) {
		if (mem_stats(&ms1) || ms1.clones <= ms0.clones)
			break;
		sleep(1);
	}
	printf("# density: %d s for the clones to be freed after the kill\n", w);
	/* and the processes, with what they hold (a --no-cube guest's copies) */
	w = wait_quiet(procs0, 120);
	printf("# density: %d s for its processes to be gone and free memory to settle\n", w);
	free(c0);
	free(s);
	return 0;
}

static void on_signal(int sig)
{
	stopping = sig;
}

int main(int argc, char **argv)
{
	const char *tmpl = "bench";
	int levels[MAX_LEVELS], mems[MAX_LEVELS], nl = 0, nm = 0, samples = 50;
	int budget = 0, max = 64, limit = -1, settle = 30, opt, i, ret = 0;
	bool use_cgroup = false;
	struct sigaction sa = { .sa_handler = on_signal };
	char found[PATH_MAX];

	while ((opt = getopt(argc, argv, "t:n:c:C:m:D:x:S:T:r:L:gP")) != -1) {
		switch (opt) {
		case 't':
			tmpl = optarg;
			break;
		case 'P':
			use_pool = true;
			break;
		case 'n':
			samples = atoi(optarg);
			break;
		case 'c':
			if (nl == MAX_LEVELS || atoi(optarg) < 1 ||
			    atoi(optarg) > MAX_WORKERS) {
				fprintf(stderr, "sandbox_bench: bad -c '%s' (1..%d, at most %d levels)\n",
					optarg, MAX_WORKERS, MAX_LEVELS);
				return 2;
			}
			levels[nl++] = atoi(optarg);
			break;
		case 'm':
			if (nm == MAX_LEVELS || atoi(optarg) < 1 ||
			    atoi(optarg) > MAX_LIVE) {
				fprintf(stderr, "sandbox_bench: bad -m '%s' (1..%d, at most %d levels)\n",
					optarg, MAX_LIVE, MAX_LEVELS);
				return 2;
			}
			mems[nm++] = atoi(optarg);
			break;
		case 'D':
			budget = atoi(optarg);
			break;
		case 'S':
			settle = atoi(optarg);
			break;
		case 'x':
			max = atoi(optarg);
			break;
		case 'T':
			limit = atoi(optarg);
			break;
		case 'r':
			min_rounds = atoi(optarg);
			break;
		case 'L':
			level_s = atoi(optarg);
			break;
		case 'g':
			use_cgroup = true;
			break;
		case 'C':
			cubectl = optarg;
			break;
		default:
			fprintf(stderr, "usage: sandbox_bench [-t TEMPLATE] [-n SAMPLES] [-c CONCURRENCY]... [-m N]... [-D MIB [-x MAX] [-S SECONDS]] [-T SECONDS] [-r ROUNDS] [-L SECONDS] [-g] [-P] [-C CUBECTL]\n");
			return 2;
		}
	}
	if (samples < 1 || max < 1 || max > MAX_LIVE || budget < 0 ||
	    min_rounds < 1 || min_rounds > 100 || level_s < 0) {
		fprintf(stderr, "sandbox_bench: -n must be at least 1, -x 1..%d, -D not negative, -r 1..100, -L not negative\n",
			MAX_LIVE);
		return 2;
	}
	if (!nl && !nm && !budget) {
		levels[nl++] = 1;
		levels[nl++] = 50;
	}
	if (!strchr(cubectl, '/')) {
		if (cube_find_helper("cubectl", "CUBECTL", found, sizeof(found))) {
			fprintf(stderr, "sandbox_bench: cubectl not found (use -C)\n");
			return 2;
		}
		cubectl = found;
	}
	if (use_pool && (nm || budget)) {
		fprintf(stderr, "sandbox_bench: -P measures latency only (no -m, -D)\n");
		return 2;
	}
	bench_tmpl = tmpl;
	snprintf(label, sizeof(label), "cube-bench=%d", (int)getpid());
	/* no SA_RESTART: a signal ends the wait for the workers at once */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	if (limit == 0) {
		printf("# sandbox_bench: no time left (-T 0)\n");
		return 1;
	}
	if (limit > 0)
		alarm(limit);
	setpgid(0, 0);
	if (use_cgroup)
		cgroup_enter();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# template %s, cubectl %s\n", tmpl, cubectl);
	for (i = 0; i < nl && !stopping; i++) {
		int want = (samples + levels[i] - 1) / levels[i];

		if (want < min_rounds)
			want = min_rounds;
		printf("# latency: %d runs at concurrency %d%s\n", want * levels[i],
		       levels[i], level_s ? " (fewer if time runs out)" : "");
		ret |= level(tmpl, levels[i], samples) != 0;
	}
	for (i = 0; i < nm && !stopping; i++)
		ret |= mem_level(tmpl, mems[i]) != 0;
	if (budget && !stopping)
		ret |= density(tmpl, budget, max, settle) != 0;
	if (stopping) {
		/* the workers and the cubectl they run: the shims notice the
		 * caller gone and stop their VMMs */
		signal(SIGTERM, SIG_IGN);
		kill(0, SIGTERM);
		while (wait(NULL) > 0)
			;
		printf("# stopped by signal %d: killing what this run made\n",
		       (int)stopping);
		kill_ours();
		ret = 1;
	}
	cgroup_leave();
	return ret;
}
