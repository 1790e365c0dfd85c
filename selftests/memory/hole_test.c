// SPDX-License-Identifier: GPL-2.0
/*
 * hole_test: the holes of a clone (offsets no snapshot of its chain holds
 * data for) and what a clone's private pages are charged to.
 *
 * A hole reads as the kernel's zero page, mapped without a reference: its
 * count does not grow with the PTEs that map it, in this process or a
 * forked one.  A write to it through any path (a store, GUP through
 * /proc/self/mem) makes a private page and never writes the zero page.
 * Mappings of one clone agree at every moment while holes are written
 * under readers.  Private pages are charged to the memory cgroup of the
 * task that faults them: a clone cannot grow past its cgroup's memory.max,
 * and a clone outside that cgroup is unaffected.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "mem_util.h"

FIXTURE(hole) {
	int dev;
	uint64_t first_id;
	struct cube_mem_stats base;
};

FIXTURE_SETUP(hole)
{
	self->dev = mem_open_dev();
	if (self->dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	self->first_id = mem_probe_id(self->dev);
	ASSERT_NE(self->first_id, 0);
	ASSERT_OK(mem_stats(self->dev, &self->base));
}

FIXTURE_TEARDOWN(hole)
{
	if (self->dev < 0)
		return;
	mem_delete_since(self->dev, self->first_id);
	close(self->dev);
}

/* The page frame number behind @addr (root reads it), 0 if none. */
static uint64_t pfn_of(const void *addr)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, sizeof(e), (uintptr_t)addr / PAGE * sizeof(e)) !=
	    sizeof(e))
		e = 0;
	close(fd);
	if (!(e & (1ULL << 63)))	/* not present */
		return 0;
	return e & ((1ULL << 55) - 1);
}

/* /proc/kpagecount of @pfn: how many PTEs map the page; -1 on error. */
static int64_t kpagecount(uint64_t pfn)
{
	uint64_t n = 0;
	int fd = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (pread(fd, &n, sizeof(n), pfn * sizeof(n)) != sizeof(n)) {
		close(fd);
		return -1;
	}
	close(fd);
	return (int64_t)n;
}

/* The kernel's zero page: what a read of untouched anonymous memory maps. */
static uint64_t zero_pfn(void)
{
	volatile unsigned char *p;
	uint64_t pfn;

	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	(void)p[0];
	pfn = pfn_of((const void *)p);
	munmap((void *)p, PAGE);
	return pfn;
}

static int all_zero(const volatile unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* A snapshot of @n pages where only page @data holds bytes (@data + 1). */
static uint64_t snap_with_one_page(int dev, size_t n, size_t data)
{
	unsigned char *r = mem_region(n * PAGE);
	uint64_t id = 0;

	if (r == MAP_FAILED)
		return 0;
	memset(r + data * PAGE, (int)data + 1, PAGE);
	if (mem_snapshot_user(dev, r, n * PAGE, &id))
		id = 0;
	munmap(r, n * PAGE);
	return id;
}

/*
 * Whether this kernel lets cube.ko map the kernel's zero page into a
 * writable shared mapping: before 6.11; from 6.11 on, each clone's holes
 * map a page of zeros of its own.
 */
static int kernel_maps_zero_pfn(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return -1;
	return major < 6 || (major == 6 && minor < 11);
}

TEST_F(hole, holes_map_the_zero_page_without_a_count)
{
	const size_t n = 2048;
	volatile unsigned char *m[4], *o;
	int64_t before, after;
	uint64_t id, zpfn, hpfn, pfn;
	size_t i, k;
	pid_t pid;
	int c, c2, st, zero_pfn_mode;

	if (geteuid())
		SKIP("page frame numbers need root");
	zero_pfn_mode = kernel_maps_zero_pfn();
	ASSERT_GE(zero_pfn_mode, 0);
	zpfn = zero_pfn();
	ASSERT_NE(zpfn, 0);
	id = snap_with_one_page(self->dev, n, 7);
	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	for (k = 0; k < 4; k++) {
		m[k] = mem_map(c, n * PAGE);
		ASSERT_NE((void *)m[k], MAP_FAILED);
	}

	/* a hole maps the zero page, a data page does not */
	EXPECT_EQ(m[0][0], 0);
	EXPECT_EQ(m[0][7 * PAGE], 8);
	hpfn = pfn_of((const void *)m[0]);
	ASSERT_NE(hpfn, 0);
	pfn = pfn_of((const void *)(m[0] + 7 * PAGE));
	EXPECT_NE(pfn, 0);
	EXPECT_NE(pfn, hpfn);
	EXPECT_NE(pfn, zpfn);

	if (!zero_pfn_mode) {
		/*
		 * The clone's own page of zeros: never the kernel's, never
		 * another clone's (no page whose count every tenant drives).
		 */
		EXPECT_NE(hpfn, zpfn);
		c2 = mem_clone(self->dev, id, 0);
		ASSERT_GE(c2, 0);
		o = mem_map(c2, n * PAGE);
		ASSERT_NE((void *)o, MAP_FAILED);
		EXPECT_EQ(o[PAGE], 0);
		EXPECT_NE(pfn_of((const void *)(o + PAGE)), 0);
		EXPECT_NE(pfn_of((const void *)(o + PAGE)), hpfn);
		EXPECT_EQ(m[3][5 * PAGE], 0);
		EXPECT_EQ(pfn_of((const void *)(m[3] + 5 * PAGE)), hpfn);
		munmap((void *)o, n * PAGE);
		close(c2);
		goto out;
	}
	EXPECT_EQ(hpfn, zpfn);

	/*
	 * 4 x 2047 hole PTEs, and a forked child's copies: the count of the
	 * page they map does not grow with them.
	 */
	before = kpagecount(hpfn);
	ASSERT_GE(before, 0);
	for (k = 0; k < 4; k++)
		for (i = 0; i < n; i++)
			(void)m[k][i * PAGE];
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		for (k = 0; k < 4; k++)
			for (i = 0; i < n; i++)
				if (m[k][i * PAGE] != (i == 7 ? 8 : 0))
					_exit(1);
		_exit(kpagecount(hpfn) - before < (int64_t)n ? 0 : 2);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_EXIT(st, 0);
	after = kpagecount(hpfn);
	EXPECT_LT(after - before, (int64_t)n);
	for (i = 0; i < n; i++)
		if (i != 7 && pfn_of((const void *)(m[3] + i * PAGE)) != zpfn)
			break;
	EXPECT_EQ(i, n);

out:
	for (k = 0; k < 4; k++)
		munmap((void *)m[k], n * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
}

TEST_F(hole, writes_to_a_read_hole_never_reach_the_zero_page)
{
	const size_t n = 64;
	volatile unsigned char *a, *b;
	static const char msg[] = "through /proc/self/mem";
	struct cube_clone_counters cnt;
	uint64_t id, zpfn;
	int c, mem;

	id = snap_with_one_page(self->dev, n, 0);
	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	a = mem_map(c, n * PAGE);
	b = mem_map(c, n * PAGE);
	ASSERT_NE((void *)a, MAP_FAILED);
	ASSERT_NE((void *)b, MAP_FAILED);

	/* read through both mappings, then write through one: a private page */
	EXPECT_TRUE(all_zero(a + PAGE, (n - 1) * PAGE));
	EXPECT_TRUE(all_zero(b + PAGE, (n - 1) * PAGE));
	b[5 * PAGE + 1] = 0x5a;
	EXPECT_EQ(a[5 * PAGE + 1], 0x5a);
	EXPECT_EQ(b[5 * PAGE + 1], 0x5a);
	if (!geteuid()) {
		zpfn = zero_pfn();
		EXPECT_NE(pfn_of((const void *)(a + 5 * PAGE)), zpfn);
	}

	/* GUP with FOLL_WRITE (|FOLL_FORCE) on a read hole */
	EXPECT_EQ(a[9 * PAGE], 0);
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_GE(mem, 0);
	EXPECT_EQ(pwrite(mem, msg, sizeof(msg), (uintptr_t)(a + 9 * PAGE)),
		  (ssize_t)sizeof(msg));
	close(mem);
	EXPECT_EQ(memcmp((const void *)(b + 9 * PAGE), msg, sizeof(msg)), 0);

	/* the zero page is still zeros, everywhere */
	EXPECT_TRUE(all_zero(a + 10 * PAGE, PAGE));
	{
		volatile unsigned char *z = mmap(NULL, PAGE, PROT_READ,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		ASSERT_NE((void *)z, MAP_FAILED);
		EXPECT_TRUE(all_zero(z, PAGE));
		munmap((void *)z, PAGE);
	}
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 2u);

	/* a reset maps holes again, as zeros */
	ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET));
	EXPECT_TRUE(all_zero(a + PAGE, (n - 1) * PAGE));
	EXPECT_TRUE(all_zero(b + PAGE, (n - 1) * PAGE));
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 0u);

	munmap((void *)a, n * PAGE);
	munmap((void *)b, n * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
}

/*
 * Readers keep mapping holes through one mapping while a writer turns
 * them into private pages through another: once a store has returned,
 * no mapping may still read the hole's zeros.
 */
struct race {
	volatile unsigned char *r, *w;
	size_t n;
	atomic_size_t written;		/* pages [0, written) hold their byte */
	atomic_int stop;
	atomic_long stale;
};

static void *race_reader(void *arg)
{
	struct race *rc = arg;
	size_t i, upto;

	while (!atomic_load(&rc->stop)) {
		upto = atomic_load(&rc->written);
		for (i = 0; i < upto; i++)
			if (rc->r[i * PAGE + 64] != (unsigned char)(i | 1))
				atomic_fetch_add(&rc->stale, 1);
		for (i = upto; i < rc->n; i += 7)
			(void)rc->r[i * PAGE];
	}
	return NULL;
}

TEST_F(hole, mappings_agree_while_holes_are_written)
{
	const size_t n = 1024;
	pthread_t th[2];
	struct race rc = { .n = n };
	uint64_t id;
	int c, round, t;
	size_t i;

	id = snap_with_one_page(self->dev, n, n - 1);
	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	rc.r = mem_map(c, n * PAGE);
	rc.w = mem_map(c, n * PAGE);
	ASSERT_NE((void *)rc.r, MAP_FAILED);
	ASSERT_NE((void *)rc.w, MAP_FAILED);

	for (round = 0; round < 8; round++) {
		atomic_store(&rc.written, 0);
		atomic_store(&rc.stop, 0);
		for (t = 0; t < 2; t++)
			ASSERT_EQ(pthread_create(&th[t], NULL, race_reader, &rc),
				  0);
		for (i = 0; i < n - 1; i++) {
			rc.w[i * PAGE + 64] = (unsigned char)(i | 1);
			atomic_store(&rc.written, i + 1);
		}
		atomic_store(&rc.stop, 1);
		for (t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
		EXPECT_EQ(atomic_load(&rc.stale), 0);
		ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET));
		EXPECT_TRUE(all_zero(rc.r, 64 * PAGE));
	}

	munmap((void *)rc.r, n * PAGE);
	munmap((void *)rc.w, n * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
}

/* Write @val to the cgroup file @dir/@file. */
static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -1;
	close(fd);
	return ret;
}

/* The value of "@key N" in @dir/@file, or -1. */
static long long cg_read_key(const char *dir, const char *file,
			     const char *key)
{
	char path[256], k[64];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", k, &v) == 2)
		if (!strcmp(k, key))
			ret = v;
	fclose(f);
	return ret;
}

/* The single number in @dir/@file, or -1. */
static long long cg_read_number(const char *dir, const char *file)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

TEST_F(hole, private_pages_are_charged_to_the_faulting_cgroup)
{
	const char *cg = "/sys/fs/cgroup/cube-hole-test";
	const size_t n = 64 * MiB / PAGE;	/* twice memory.max */
	struct cube_mem_stats st;
	volatile unsigned char *m;
	long long peak;
	char pidbuf[32];
	uint64_t id;
	size_t i;
	pid_t pid;
	int c, st_;

	if (access("/sys/fs/cgroup/cgroup.subtree_control", W_OK))
		SKIP("no writable cgroup2 hierarchy");
	if (cg_write("/sys/fs/cgroup", "cgroup.subtree_control", "+memory"))
		SKIP("cannot enable the memory controller");
	rmdir(cg);
	ASSERT_OK(mkdir(cg, 0755));
	ASSERT_OK(cg_write(cg, "memory.max", "32M"));
	cg_write(cg, "memory.swap.max", "0");	/* absent without swap */

	id = snap_with_one_page(self->dev, n, 0);
	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		snprintf(pidbuf, sizeof(pidbuf), "%d", getpid());
		if (cg_write(cg, "cgroup.procs", pidbuf))
			_exit(3);
		m = mem_map(c, n * PAGE);
		if ((void *)m == MAP_FAILED)
			_exit(4);
		for (i = 0; i < n; i++)
			m[i * PAGE] = 1;	/* 64 MiB of private pages */
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &st_, 0), pid);
	/* the memory cgroup's OOM killer ended it: it could not grow past */
	EXPECT_KILLED(st_, SIGKILL);
	EXPECT_GE(cg_read_key(cg, "memory.events", "oom_kill"), 1);
	peak = cg_read_number(cg, "memory.peak");
	if (peak >= 0)
		EXPECT_LE(peak, 32LL * MiB);

	/* what it made is still the clone's, charged until the clone goes */
	ASSERT_OK(mem_stats(self->dev, &st));
	EXPECT_GT(st.private_pages - self->base.private_pages, 0u);
	EXPECT_LT(st.private_pages - self->base.private_pages, (uint64_t)n);

	/* a clone outside that cgroup grows as it needs */
	m = mem_map(c, n * PAGE);
	ASSERT_NE((void *)m, MAP_FAILED);
	for (i = 0; i < n; i++)
		m[i * PAGE] = 2;
	ASSERT_OK(mem_stats(self->dev, &st));
	EXPECT_EQ(st.private_pages - self->base.private_pages, (uint64_t)n);
	munmap((void *)m, n * PAGE);
	close(c);
	ASSERT_OK(mem_stats(self->dev, &st));
	EXPECT_EQ(st.private_pages, self->base.private_pages);

	/* nothing stays charged to the cgroup: it can go */
	EXPECT_EQ(rmdir(cg), 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
}

TEST_MAIN()
