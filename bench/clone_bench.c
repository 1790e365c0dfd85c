// SPDX-License-Identifier: GPL-2.0
/*
 * clone_bench: what restoring a sandbox's memory from a snapshot costs.
 *
 * A 256 MiB snapshot holding 32 MiB of data (every 8th page).  Each round
 * creates a clone, maps it and touches the working set: reads every data
 * page and writes every 8th of them.  Measured, in one run:
 *
 *   clone          cube clone, pages fault in one by one
 *   clone+record   the same, recording the working set into the snapshot
 *   clone+prefault the first fault maps the recorded working set
 *   memfd-private  the same data in a memfd, mapped MAP_PRIVATE
 *
 * Reported per round (median of ROUNDS): wall time, minor faults
 * (getrusage), faults the clone handled, and the clone's private pages.
 * Then the cost of forking a touched clone into a new snapshot.
 * Not a test: it prints figures and fails only when something errors.
 *
 *	clone_bench [-r ROUNDS]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <linux/cube.h>

#define PAGE		4096UL
#define SNAP_SIZE	(256UL << 20)
#define NR_PAGES	(SNAP_SIZE / PAGE)
#define DATA_STRIDE	8	/* every 8th page has data: 32 MiB */
#define WRITE_STRIDE	8	/* every 8th data page is written */
#define MAX_ROUNDS	64

struct sample {
	double ms;
	long minflt;
	uint64_t faults;
	uint64_t private_pages;
};

static int dev = -1, memfd = -1;
static uint64_t snap_id;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Read every data page, write every WRITE_STRIDE-th one; 0 if all read right. */
static int touch(volatile unsigned char *m)
{
	unsigned long p, n = 0;
	int bad = 0;

	for (p = 0; p < NR_PAGES; p += DATA_STRIDE, n++) {
		bad |= m[p * PAGE] != (unsigned char)(p | 1);
		if (n % WRITE_STRIDE == 0)
			m[p * PAGE + 1] = 0xff;
	}
	return bad;
}

static int setup(void)
{
	struct cube_snapshot_create c = {
		.source = CUBE_SNAPSHOT_SRC_MEMFD,
		.length = SNAP_SIZE,
	};
	unsigned char *m;
	unsigned long p;
	double t;

	memfd = memfd_create("bench", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, SNAP_SIZE))
		return -errno;
	m = mmap(NULL, SNAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m == MAP_FAILED)
		return -errno;
	for (p = 0; p < NR_PAGES; p += DATA_STRIDE)
		memset(m + p * PAGE, (unsigned char)(p | 1), PAGE);
	munmap(m, SNAP_SIZE);

	c.fd = memfd;
	t = now_ms();
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c))
		return -errno;
	printf("# snapshot: %lu MiB, %lu MiB of data, taken in %.1f ms\n",
	       SNAP_SIZE >> 20, (SNAP_SIZE / DATA_STRIDE) >> 20, now_ms() - t);
	snap_id = c.id;
	return 0;
}

static int round_clone(uint32_t flags, struct sample *s)
{
	struct cube_clone_create cc = { .snapshot_id = snap_id, .flags = flags };
	struct cube_clone_counters cnt;
	long f0 = minflt();
	double t0 = now_ms();
	unsigned char *m;
	int fd, bad;

	fd = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	if (fd < 0)
		return -errno;
	m = mmap(NULL, SNAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	bad = touch(m);
	s->ms = now_ms() - t0;
	s->minflt = minflt() - f0;
	if (ioctl(fd, CUBE_IOC_CLONE_COUNTERS, &cnt))
		bad = 1;
	s->faults = cnt.faults;
	s->private_pages = cnt.private_pages;
	munmap(m, SNAP_SIZE);
	close(fd);
	return bad ? -EIO : 0;
}

/* Anonymous memory of the process, in pages (from smaps_rollup). */
static long anon_pages(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Anonymous: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb / (long)(PAGE / 1024);
}

static int round_memfd(struct sample *s)
{
	long a0 = anon_pages(), f0 = minflt();
	double t0 = now_ms();
	unsigned char *m;
	int bad;

	m = mmap(NULL, SNAP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 memfd, 0);
	if (m == MAP_FAILED)
		return -errno;
	bad = touch(m);
	s->ms = now_ms() - t0;
	s->minflt = minflt() - f0;
	s->faults = 0;
	/* the anonymous copies the writes made */
	s->private_pages = anon_pages() - a0;
	munmap(m, SNAP_SIZE);
	return bad ? -EIO : 0;
}

/* Fork a touched clone: the new snapshot copies only its private pages. */
static int fork_cost(void)
{
	struct cube_clone_create cc = { .snapshot_id = snap_id };
	struct cube_snapshot_create sc = { .source = CUBE_SNAPSHOT_SRC_CLONE };
	struct cube_snapshot_info info = { 0 };
	struct cube_snapshot_id del = { 0 };
	unsigned char *m;
	double t;
	int fd, ret = 0;

	fd = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	if (fd < 0)
		return -errno;
	m = mmap(NULL, SNAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	touch(m);
	sc.fd = fd;
	t = now_ms();
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &sc)) {
		ret = -errno;
		goto out_unmap;
	}
	t = now_ms() - t;
	info.id = sc.id;
	if (!ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info))
		printf("# fork of a touched clone: %.2f ms, %llu pages copied\n",
		       t, (unsigned long long)info.pages);
	del.id = sc.id;
	ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del);
out_unmap:
	munmap(m, SNAP_SIZE);
out:
	close(fd);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *name, struct sample *s, int n)
{
	double ms[MAX_ROUNDS];
	int i;

	for (i = 0; i < n; i++)
		ms[i] = s[i].ms;
	qsort(ms, n, sizeof(ms[0]), cmp_double);
	printf("# %-15s %9.2f %9.2f %9ld %9llu %9llu\n", name, ms[n / 2],
	       ms[0], s[n - 1].minflt, (unsigned long long)s[n - 1].faults,
	       (unsigned long long)s[n - 1].private_pages);
	printf("bench: figure=clone variant=%s median_ms=%.2f minflt=%ld clone_faults=%llu private_pages=%llu\n",
	       name, ms[n / 2], s[n - 1].minflt,
	       (unsigned long long)s[n - 1].faults,
	       (unsigned long long)s[n - 1].private_pages);
}

int main(int argc, char **argv)
{
	static struct sample plain[MAX_ROUNDS], rec[MAX_ROUNDS],
		pre[MAX_ROUNDS], priv[MAX_ROUNDS];
	struct cube_snapshot_id del = { 0 };
	int rounds = 5, opt, i, ret = 0;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt == 'r' && atoi(optarg) > 0 && atoi(optarg) <= MAX_ROUNDS)
			rounds = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-r ROUNDS (1-%d)]\n",
				argv[0], MAX_ROUNDS);
			return 2;
		}
	}
	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		fprintf(stderr, "clone_bench: /dev/%s: %s\n", CUBE_DEVICE_NAME,
			strerror(errno));
		return 4;
	}
	ret = setup();
	for (i = 0; !ret && i < rounds; i++) {
		ret = round_clone(0, &plain[i]);
		if (!ret)
			ret = round_clone(CUBE_CLONE_F_RECORD, &rec[i]);
		if (!ret)
			ret = round_clone(CUBE_CLONE_F_PREFAULT, &pre[i]);
		if (!ret)
			ret = round_memfd(&priv[i]);
	}
	if (ret) {
		fprintf(stderr, "clone_bench: %s\n", strerror(-ret));
	} else {
		printf("# touch: read %lu data pages, write %lu; %d rounds\n",
		       NR_PAGES / DATA_STRIDE,
		       NR_PAGES / DATA_STRIDE / WRITE_STRIDE, rounds);
		printf("# %-15s %9s %9s %9s %9s %9s\n", "variant", "median-ms",
		       "best-ms", "minflt", "faults", "private");
		report("clone", plain, rounds);
		report("clone+record", rec, rounds);
		report("clone+prefault", pre, rounds);
		report("memfd-private", priv, rounds);
		ret = fork_cost();
		if (ret)
			fprintf(stderr, "clone_bench: fork: %s\n",
				strerror(-ret));
	}
	if (snap_id) {
		del.id = snap_id;
		ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del);
	}
	close(memfd);
	close(dev);
	return ret ? 1 : 0;
}
