// SPDX-License-Identifier: GPL-2.0
/*
 * parallel_test: many clones of one snapshot at once.
 *
 * 64 processes and 64 threads each clone one snapshot, check they read it,
 * write their own pattern and check they never see another clone's.
 * Several threads share one clone and race reads, writes and resets on
 * it: every read sees the snapshot or the value its page's owner wrote.
 * Trims and merges race writers and lose no write.
 * Then writers, a resetter, a forker (snapshots of the clone, cloned and
 * read back) and a mapper (mmap, touch, munmap) all at once, for a few
 * seconds: nothing crashes, nothing leaks.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "cube_test.h"
#include "mem_util.h"

#define NR_CLONES	64
#define NR_PAGES	64
#define SNAP_BYTE(p)	((unsigned char)(0x80 | (p)))

static int dev;
static uint64_t snap_id;

static uint64_t make_snapshot(void)
{
	unsigned char *r = mem_region(NR_PAGES * PAGE);
	uint64_t id = 0;
	int p;

	if (r == MAP_FAILED)
		return 0;
	for (p = 0; p < NR_PAGES; p += 2)	/* odd pages are holes */
		memset(r + p * PAGE, SNAP_BYTE(p), PAGE);
	if (mem_snapshot_user(dev, r, NR_PAGES * PAGE, &id))
		id = 0;
	munmap(r, NR_PAGES * PAGE);
	return id;
}

static unsigned char snap_byte(int p)
{
	return p % 2 ? 0 : SNAP_BYTE(p);
}

/* One clone's life; returns 0 when everything it saw was right. */
static int clone_worker(int me)
{
	unsigned char *m;
	int c, p, round, bad = 0;

	c = mem_clone(dev, snap_id, me % 3 ? 0 : CUBE_CLONE_F_PREFAULT);
	if (c < 0)
		return 1;
	m = mem_map(c, NR_PAGES * PAGE);
	if (m == MAP_FAILED) {
		close(c);
		return 1;
	}
	for (p = 0; p < NR_PAGES; p++)
		bad |= m[p * PAGE + me] != snap_byte(p);
	for (round = 0; round < 4; round++) {
		for (p = round; p < NR_PAGES; p += 4)
			memset(m + p * PAGE, me + 1, PAGE);
		for (p = 0; p < NR_PAGES; p++) {
			unsigned char want = p % 4 <= round ? me + 1 :
					     snap_byte(p);

			bad |= m[p * PAGE] != want ||
			       m[p * PAGE + PAGE - 1] != want;
		}
		sched_yield();
	}
	munmap(m, NR_PAGES * PAGE);
	close(c);
	return bad;
}

FIXTURE(par) {
	struct cube_mem_stats base;
};

FIXTURE_SETUP(par)
{
	dev = mem_open_dev();
	if (dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	ASSERT_OK(mem_stats(dev, &self->base));
	snap_id = make_snapshot();
	ASSERT_NE(snap_id, 0);
}

static void check_back(const struct cube_mem_stats *base)
{
	struct cube_mem_stats st;
	unsigned char *m;
	int c, p;

	/* the snapshot itself never changed */
	c = mem_clone(dev, snap_id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, NR_PAGES * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (p = 0; p < NR_PAGES; p++)
		EXPECT_EQ(m[p * PAGE + 7], snap_byte(p));
	munmap(m, NR_PAGES * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(dev, snap_id));
	snap_id = 0;
	ASSERT_OK(mem_stats(dev, &st));
	EXPECT_EQ(st.snapshots, base->snapshots);
	EXPECT_EQ(st.clones, base->clones);
	EXPECT_EQ(st.shared_pages, base->shared_pages);
	EXPECT_EQ(st.private_pages, base->private_pages);
}

FIXTURE_TEARDOWN(par)
{
	if (snap_id)
		mem_snapshot_delete(dev, snap_id);
	close(dev);
}

TEST_F(par, processes_64)
{
	pid_t pids[NR_CLONES];
	int i, status, failed = 0;
	int go[2];
	char ch;

	ASSERT_OK(pipe(go));
	for (i = 0; i < NR_CLONES; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (!pids[i]) {
			close(go[1]);
			if (read(go[0], &ch, 1) != 0)	/* start together */
				_exit(2);
			_exit(clone_worker(i));
		}
	}
	close(go[0]);
	close(go[1]);
	for (i = 0; i < NR_CLONES; i++) {
		ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			TH_LOG("clone process %d: status 0x%x", i, status);
			failed++;
		}
	}
	EXPECT_EQ(failed, 0);
	check_back(&self->base);
}

static pthread_barrier_t barrier;

static void *thread_worker(void *arg)
{
	pthread_barrier_wait(&barrier);
	return (void *)(intptr_t)clone_worker((int)(intptr_t)arg);
}

TEST_F(par, threads_64)
{
	pthread_t t[NR_CLONES];
	void *ret;
	int i, failed = 0;

	pthread_barrier_init(&barrier, NULL, NR_CLONES);
	for (i = 0; i < NR_CLONES; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, thread_worker,
					 (void *)(intptr_t)i), 0);
	for (i = 0; i < NR_CLONES; i++) {
		ASSERT_EQ(pthread_join(t[i], &ret), 0);
		failed += ret != NULL;
	}
	EXPECT_EQ(failed, 0);
	check_back(&self->base);
}

/* Threads sharing one clone: thread t owns the pages p with p % 4 == t. */
struct shared_clone {
	int clone;
	unsigned char *m;
	volatile int stop;
	int bad;
};

static struct shared_clone sc;

static void *owner_thread(void *arg)
{
	int t = (int)(intptr_t)arg, p, n;

	for (n = 0; n < 200; n++) {
		for (p = 0; p < NR_PAGES; p++) {
			unsigned char v = sc.m[p * PAGE + 100];

			if (v != snap_byte(p) && v != 0x40 + p % 4)
				__atomic_store_n(&sc.bad, 1, __ATOMIC_RELAXED);
			if (p % 4 == t && (n + p) % 3 == 0)
				memset(sc.m + p * PAGE, 0x40 + t, PAGE);
		}
	}
	return NULL;
}

static void *reset_thread(void *arg)
{
	while (!sc.stop) {
		if (ioctl(sc.clone, CUBE_IOC_CLONE_RESET, 0))
			__atomic_store_n(&sc.bad, 1, __ATOMIC_RELAXED);
		usleep(500);
	}
	return NULL;
}

TEST_F(par, threads_race_on_one_clone)
{
	pthread_t t[4], r;
	int i;

	sc.clone = mem_clone(dev, snap_id, 0);
	ASSERT_GE(sc.clone, 0);
	sc.m = mem_map(sc.clone, NR_PAGES * PAGE);
	ASSERT_NE(sc.m, MAP_FAILED);
	ASSERT_EQ(pthread_create(&r, NULL, reset_thread, NULL), 0);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, owner_thread,
					 (void *)(intptr_t)i), 0);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(pthread_join(t[i], NULL), 0);
	sc.stop = 1;
	ASSERT_EQ(pthread_join(r, NULL), 0);
	EXPECT_EQ(sc.bad, 0);
	/* quiet now: a reset leaves exactly the snapshot */
	ASSERT_OK(ioctl(sc.clone, CUBE_IOC_CLONE_RESET, 0));
	for (i = 0; i < NR_PAGES; i++)
		EXPECT_EQ(sc.m[i * PAGE + 5], snap_byte(i));
	munmap(sc.m, NR_PAGES * PAGE);
	close(sc.clone);
	check_back(&self->base);
}

/*
 * Trims race a writer that puts each of its pages back to the snapshot's
 * contents and off it again: a trim may drop a page only while it holds
 * the snapshot's contents, so the writer reads back every value it wrote
 * last, and the trims drop pages all along.
 */
static volatile int trim_stop;
static uint64_t trim_dropped;

static void *trim_thread(void *arg)
{
	struct cube_clone_trim tr;

	while (!trim_stop) {
		memset(&tr, 0, sizeof(tr));
		if (ioctl(sc.clone, CUBE_IOC_CLONE_TRIM, &tr))
			__atomic_store_n(&sc.bad, 1, __ATOMIC_RELAXED);
		trim_dropped += tr.dropped;
	}
	return NULL;
}

TEST_F(par, trims_race_a_writer_without_losing_a_write)
{
	struct cube_clone_counters cnt;
	struct cube_clone_trim tr;
	unsigned char last[NR_PAGES];
	int n, p, differ = 0;
	pthread_t t;

	sc.clone = mem_clone(dev, snap_id, 0);
	ASSERT_GE(sc.clone, 0);
	sc.m = mem_map(sc.clone, NR_PAGES * PAGE);
	ASSERT_NE(sc.m, MAP_FAILED);
	sc.bad = 0;
	trim_stop = 0;
	trim_dropped = 0;
	ASSERT_EQ(pthread_create(&t, NULL, trim_thread, NULL), 0);
	for (n = 0; n < 2000; n++) {
		for (p = 0; p < NR_PAGES; p++) {
			unsigned char *b = sc.m + p * PAGE + 7;

			/* the snapshot's byte, or another */
			last[p] = (n + p) % 2 ? snap_byte(p) : 0x33;
			*b = last[p];
			if (*b != last[p])
				sc.bad = 2;
		}
		for (p = 0; p < NR_PAGES; p++)
			if (sc.m[p * PAGE + 7] != last[p])
				sc.bad = 3;
		sched_yield();	/* one CPU: let the trims in */
	}
	trim_stop = 1;
	ASSERT_EQ(pthread_join(t, NULL), 0);
	EXPECT_EQ(sc.bad, 0);
	TH_LOG("%llu pages dropped by the racing trims",
	       (unsigned long long)trim_dropped);
	for (p = 0; p < NR_PAGES; p++) {
		EXPECT_EQ(sc.m[p * PAGE + 7], last[p]);
		differ += last[p] != snap_byte(p);
	}
	/* quiet now: a trim leaves exactly the pages that differ */
	memset(&tr, 0, sizeof(tr));
	ASSERT_OK(ioctl(sc.clone, CUBE_IOC_CLONE_TRIM, &tr));
	ASSERT_OK(mem_counters(sc.clone, &cnt));
	EXPECT_EQ(cnt.private_pages, (uint64_t)differ);
	for (p = 0; p < NR_PAGES; p++)
		EXPECT_EQ(sc.m[p * PAGE + 7], last[p]);
	munmap(sc.m, NR_PAGES * PAGE);
	close(sc.clone);
	check_back(&self->base);
}

/*
 * Merges race a writer: clone A's writer puts byte 7 of each page to 0x33,
 * the value a sibling B holds there, and off it again, while a thread
 * merges A and B into one group.  A merge may share A's page only while it
 * holds B's bytes, and a page of the group is never written: the writer
 * reads back every value it wrote last, and B reads its own bytes all
 * along, whatever A does to the pages it shares with it.
 */
static volatile int merge_stop;
static int merge_clones[2];
static uint64_t merge_shared;

static void *merge_thread(void *arg)
{
	struct cube_clone_merge mg;
	int i = 0;

	while (!merge_stop) {
		memset(&mg, 0, sizeof(mg));
		mg.group = 7;
		if (ioctl(merge_clones[i++ % 2], CUBE_IOC_CLONE_MERGE, &mg))
			__atomic_store_n(&sc.bad, 1, __ATOMIC_RELAXED);
		merge_shared += mg.merged + mg.promoted;
	}
	return NULL;
}

TEST_F(par, merges_race_a_writer_without_losing_a_write)
{
	struct cube_clone_counters cnt;
	struct cube_clone_merge mg;
	unsigned char last[NR_PAGES], *b;
	int n, p, differ = 0;
	pthread_t t;

	sc.clone = mem_clone(dev, snap_id, 0);
	ASSERT_GE(sc.clone, 0);
	sc.m = mem_map(sc.clone, NR_PAGES * PAGE);
	ASSERT_NE(sc.m, MAP_FAILED);
	merge_clones[1] = mem_clone(dev, snap_id, 0);
	ASSERT_GE(merge_clones[1], 0);
	b = mem_map(merge_clones[1], NR_PAGES * PAGE);
	ASSERT_NE(b, MAP_FAILED);
	for (p = 0; p < NR_PAGES; p++)
		b[p * PAGE + 7] = 0x33;
	merge_clones[0] = sc.clone;
	sc.bad = 0;
	merge_stop = 0;
	merge_shared = 0;
	ASSERT_EQ(pthread_create(&t, NULL, merge_thread, NULL), 0);
	for (n = 0; n < 2000; n++) {
		for (p = 0; p < NR_PAGES; p++) {
			unsigned char *a = sc.m + p * PAGE + 7;

			/* B's byte, or another */
			last[p] = (n + p) % 3 ? 0x33 : 0x44;
			*a = last[p];
			if (*a != last[p])
				sc.bad = 2;
		}
		for (p = 0; p < NR_PAGES; p++) {
			if (sc.m[p * PAGE + 7] != last[p] ||
			    sc.m[p * PAGE + 8] != snap_byte(p))
				sc.bad = 3;
			if (b[p * PAGE + 7] != 0x33 ||
			    b[p * PAGE + 8] != snap_byte(p))
				sc.bad = 4;
		}
		sched_yield();	/* one CPU: let the merges in */
	}
	merge_stop = 1;
	ASSERT_EQ(pthread_join(t, NULL), 0);
	EXPECT_EQ(sc.bad, 0);
	TH_LOG("%llu pages shared by the racing merges",
	       (unsigned long long)merge_shared);
	EXPECT_GT(merge_shared, 0u);
	for (p = 0; p < NR_PAGES; p++) {
		EXPECT_EQ(sc.m[p * PAGE + 7], last[p]);
		EXPECT_EQ(b[p * PAGE + 7], 0x33);
		differ += last[p] != 0x33;
	}
	/*
	 * quiet now: B offers (or shares) all its pages, then A keeps
	 * exactly the pages that differ from B's
	 */
	memset(&mg, 0, sizeof(mg));
	mg.group = 7;
	ASSERT_OK(ioctl(merge_clones[1], CUBE_IOC_CLONE_MERGE, &mg));
	memset(&mg, 0, sizeof(mg));
	mg.group = 7;
	ASSERT_OK(ioctl(sc.clone, CUBE_IOC_CLONE_MERGE, &mg));
	ASSERT_OK(mem_counters(sc.clone, &cnt));
	EXPECT_EQ(cnt.private_pages, (uint64_t)differ);
	for (p = 0; p < NR_PAGES; p++)
		EXPECT_EQ(sc.m[p * PAGE + 7], last[p]);
	munmap(b, NR_PAGES * PAGE);
	close(merge_clones[1]);
	munmap(sc.m, NR_PAGES * PAGE);
	close(sc.clone);
	check_back(&self->base);
}

static volatile int chaos_stop;
static int chaos_bad;
static int chaos_forks, chaos_maps;

static void *chaos_writer(void *arg)
{
	unsigned int seed = (unsigned int)(intptr_t)arg;

	while (!chaos_stop) {
		int p = rand_r(&seed) % NR_PAGES;

		if (rand_r(&seed) % 2)
			sc.m[p * PAGE + rand_r(&seed) % PAGE] = 0x40 + p % 4;
		else if (sc.m[p * PAGE] != snap_byte(p) &&
			 sc.m[p * PAGE] != 0x40 + p % 4)
			chaos_bad = 1;
	}
	return NULL;
}

static void *chaos_forker(void *arg)
{
	while (!chaos_stop) {
		uint64_t id;
		unsigned char *m;
		int c;

		if (mem_snapshot_clone(dev, sc.clone, &id)) {
			chaos_bad = 1;
			break;
		}
		c = mem_clone(dev, id, CUBE_CLONE_F_PREFAULT);
		if (c >= 0) {
			m = mem_map(c, NR_PAGES * PAGE);
			if (m != MAP_FAILED) {
				if (m[2 * PAGE] != snap_byte(2) &&
				    m[2 * PAGE] != 0x42)
					chaos_bad = 1;
				m[3 * PAGE] = 1;
				munmap(m, NR_PAGES * PAGE);
			}
			close(c);
		}
		if (mem_snapshot_delete(dev, id))
			chaos_bad = 1;
		__atomic_add_fetch(&chaos_forks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *chaos_mapper(void *arg)
{
	while (!chaos_stop) {
		size_t off = (rand() % 8) * 8;
		unsigned char *m = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE,
					MAP_SHARED, sc.clone, off * PAGE);

		if (m == MAP_FAILED) {
			chaos_bad = 1;
			break;
		}
		m[PAGE] = 0x40 + (off + 1) % 4;
		madvise(m, 8 * PAGE, MADV_DONTNEED);
		(void)*(volatile unsigned char *)(m + 5 * PAGE);
		munmap(m, 8 * PAGE);
		__atomic_add_fetch(&chaos_maps, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static long long chaos_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Let the threads race for @min_ms, and on until forks and mappings have
 * each happened @min_each times (a slow, emulated host gets there late),
 * but no longer than @max_ms.
 */
static void chaos_run(long long min_ms, int min_each, long long max_ms)
{
	long long t0 = chaos_ms();

	while (chaos_ms() - t0 < max_ms &&
	       (chaos_ms() - t0 < min_ms ||
		__atomic_load_n(&chaos_forks, __ATOMIC_RELAXED) < min_each ||
		__atomic_load_n(&chaos_maps, __ATOMIC_RELAXED) < min_each))
		usleep(10000);
}

TEST_F(par, chaos_on_one_clone)
{
	pthread_t t[6];
	int i;

	sc.clone = mem_clone(dev, snap_id, 0);
	ASSERT_GE(sc.clone, 0);
	sc.m = mem_map(sc.clone, NR_PAGES * PAGE);
	ASSERT_NE(sc.m, MAP_FAILED);
	sc.stop = 0;
	chaos_stop = 0;
	ASSERT_EQ(pthread_create(&t[0], NULL, chaos_writer, (void *)1), 0);
	ASSERT_EQ(pthread_create(&t[1], NULL, chaos_writer, (void *)2), 0);
	ASSERT_EQ(pthread_create(&t[2], NULL, chaos_forker, NULL), 0);
	ASSERT_EQ(pthread_create(&t[3], NULL, chaos_mapper, NULL), 0);
	ASSERT_EQ(pthread_create(&t[4], NULL, reset_thread, NULL), 0);
	ASSERT_EQ(pthread_create(&t[5], NULL, chaos_forker, NULL), 0);
	chaos_run(3000, 10, 40000);
	chaos_stop = 1;
	sc.stop = 1;
	for (i = 0; i < 6; i++)
		ASSERT_EQ(pthread_join(t[i], NULL), 0);
	TH_LOG("%d forks, %d mappings", chaos_forks, chaos_maps);
	EXPECT_GE(chaos_forks, 10);
	EXPECT_GE(chaos_maps, 10);
	EXPECT_EQ(chaos_bad, 0);
	EXPECT_EQ(sc.bad, 0);
	munmap(sc.m, NR_PAGES * PAGE);
	close(sc.clone);
	check_back(&self->base);
}

TEST_MAIN()
