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
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/cube.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cube_runtime.h"

#define MAX_LEVELS	8
#define MAX_WORKERS	256

extern char **environ;

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

/* Run argv; its stdout (first line) into @out when given.  Exit status. */
static int run(char *const argv[], char *out, size_t outlen)
{
	posix_spawn_file_actions_t fa;
	int pfd[2], st = -1;
	pid_t pid;
	ssize_t n = 0, r;

	if (pipe(pfd))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (r) {
		close(pfd[0]);
		return -(int)r;
	}
	while (out && (size_t)n < outlen - 1 &&
	       (r = read(pfd[0], out + n, outlen - 1 - n)) > 0)
		n += r;
	if (out) {
		out[n] = 0;
		out[strcspn(out, "\n")] = 0;
	}
	close(pfd[0]);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One worker: create, then the first command; results through a pipe. */
static void worker(const char *cubectl, const char *tmpl, int fd)
{
	struct sample s = { 0 };
	char id[32], *create[] = { (char *)cubectl, "create", "--template",
				   (char *)tmpl, NULL };
	double t0 = now_ms();

	if (run(create, id, sizeof(id)) == 0 && *id) {
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
 * The VMM of sandbox @id: the child of the sandbox's owner, the cube-shim,
 * whose pid `cubectl --json inspect` reports.
 */
static pid_t vmm_pid(const char *cubectl, uint64_t id)
{
	char ids[32], out[4096], buf[64], *p;
	char *argv[] = { (char *)cubectl, "--json", "inspect", ids, NULL };
	posix_spawn_file_actions_t fa;
	pid_t shim = 0, child = 0, pid;
	int pfd[2];
	ssize_t n = 0, r;
	FILE *f;

	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	if (pipe(pfd))
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
	snprintf(buf, sizeof(buf), "/proc/%d/task/%d/children", shim, shim);
	f = fopen(buf, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &child) != 1)
		child = 0;
	fclose(f);
	return child;
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
		/* fields after "comm)": state(3) ... minflt(10) */
		for (i = 3; i < 10 && p; i++)
			p = strchr(p + 1, ' ');
		if (p)
			v = strtol(p + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static void report_idle(const char *cubectl, struct sample *s, int n)
{
	struct cube_mem_stats ms;
	long rss = 0, flt = 0, exits = 0;
	int fd, seen = 0, i;

	for (i = 0; i < n; i++) {
		char path[PATH_MAX], reply[256], *e;
		pid_t pid;

		if (!s[i].ok)
			continue;
		pid = vmm_pid(cubectl, s[i].id);
		if (pid <= 0)
			continue;
		rss += proc_value(pid, "VmRSS:");
		flt += proc_minflt(pid);
		if (cube_sandbox_path(path, sizeof(path), s[i].id, "control") == 0 &&
		    cube_control(path, "status", reply, sizeof(reply)) == 0 &&
		    (e = strstr(reply, "exits=")))
			exits += strtol(e + 6, NULL, 10);
		seen++;
	}
	if (seen)
		printf("#   per idle sandbox (%d measured): VMM RSS %ld KiB, VMM minor faults %ld, VM exits %ld\n",
		       seen, rss / seen, flt / seen, exits / seen);
	fd = open("/dev/" CUBE_DEVICE_NAME, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && ioctl(fd, CUBE_IOC_MEM_STATS, &ms) == 0 && ms.clones)
		printf("#   module: %" PRIu64 " clones, %" PRIu64 " private pages per clone, %" PRIu64 " shared pages in %" PRIu64 " snapshots\n",
		       (uint64_t)ms.clones, (uint64_t)(ms.private_pages / ms.clones),
		       (uint64_t)ms.shared_pages, (uint64_t)ms.snapshots);
	else
		printf("#   module: no clones (restores use the file fallback)\n");
	if (fd >= 0)
		close(fd);
}

static int level(const char *cubectl, const char *tmpl, int conc, int samples)
{
	int rounds = (samples + conc - 1) / conc;
	struct sample *all = calloc((size_t)conc * rounds, sizeof(*all));
	double *c = calloc((size_t)conc * rounds, sizeof(double));
	double *e = calloc((size_t)conc * rounds, sizeof(double));
	int r, i, n = 0, failed = 0;

	if (!all || !c || !e)
		return -ENOMEM;
	for (r = 0; r < rounds; r++) {
		struct sample *batch = all + (size_t)r * conc;
		int pfd[2];

		if (pipe(pfd))
			return -errno;
		for (i = 0; i < conc; i++) {
			pid_t pid = fork();

			if (pid == 0) {
				close(pfd[0]);
				worker(cubectl, tmpl, pfd[1]);
			}
			if (pid < 0)
				return -errno;
		}
		close(pfd[1]);
		for (i = 0; i < conc; i++)
			if (read(pfd[0], &batch[i], sizeof(batch[i])) != sizeof(batch[i]))
				batch[i].ok = 0;
		close(pfd[0]);
		while (wait(NULL) > 0)
			;
		if (r == rounds - 1)
			report_idle(cubectl, batch, conc);
		for (i = 0; i < conc; i++) {
			char id[32], *kill[] = { (char *)cubectl, "kill", id, NULL };

			if (!batch[i].ok) {
				failed++;
				continue;
			}
			c[n] = batch[i].create_ms;
			e[n++] = batch[i].exec_ms;
			snprintf(id, sizeof(id), "%" PRIu64, batch[i].id);
			run(kill, NULL, 0);
		}
	}
	qsort(c, n, sizeof(*c), cmp_double);
	qsort(e, n, sizeof(*e), cmp_double);
	printf("concurrency %3d: %4d runs (%d failed)  create p50 %8.1f ms p95 %8.1f ms   exec true p50 %8.1f ms p95 %8.1f ms\n",
	       conc, n, failed, pct(c, n, 50), pct(c, n, 95), pct(e, n, 50),
	       pct(e, n, 95));
	free(all);
	free(c);
	free(e);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *tmpl = "bench", *cubectl = "cubectl";
	int levels[MAX_LEVELS], nl = 0, samples = 50, opt, i, ret = 0;
	char found[PATH_MAX];

	while ((opt = getopt(argc, argv, "t:n:c:C:")) != -1) {
		switch (opt) {
		case 't':
			tmpl = optarg;
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
		case 'C':
			cubectl = optarg;
			break;
		default:
			fprintf(stderr, "usage: sandbox_bench [-t TEMPLATE] [-n SAMPLES] [-c CONCURRENCY]... [-C CUBECTL]\n");
			return 2;
		}
	}
	if (samples < 1) {
		fprintf(stderr, "sandbox_bench: -n must be at least 1\n");
		return 2;
	}
	if (!nl) {
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
	printf("# template %s, %d runs a level, cubectl %s\n", tmpl, samples, cubectl);
	for (i = 0; i < nl; i++)
		ret |= level(cubectl, tmpl, levels[i], samples) != 0;
	return ret;
}
