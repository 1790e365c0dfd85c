// SPDX-License-Identifier: GPL-2.0
/*
 * lifetime_test: processes die at the worst moments and nothing leaks.
 *
 * A process killed with clones mapped and private pages, one killed in the
 * middle of taking a large snapshot, one killed while forking a clone: the
 * module's counters come back to where they were.  Snapshots outlive
 * their creator until deleted, and go when the module is unloaded; a clone
 * keeps the module loaded.
 */
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include "cube_test.h"
#include "cube_module.h"
#include "mem_util.h"

FIXTURE(life) {
	int dev;
	struct cube_mem_stats base;
};

FIXTURE_SETUP(life)
{
	self->dev = mem_open_dev();
	if (self->dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	ASSERT_OK(mem_stats(self->dev, &self->base));
}

FIXTURE_TEARDOWN(life)
{
	close(self->dev);
}

static uint64_t small_snapshot(int dev)
{
	unsigned char *r = mem_region(64 * PAGE);
	uint64_t id = 0;
	int p;

	if (r == MAP_FAILED)
		return 0;
	for (p = 0; p < 64; p++)
		r[p * PAGE] = p + 1;
	if (mem_snapshot_user(dev, r, 64 * PAGE, &id))
		id = 0;
	munmap(r, 64 * PAGE);
	return id;
}

/* Delete every snapshot with an id between two probes: a dead child's. */
static int delete_between(int dev, uint64_t lo, uint64_t hi)
{
	int n = 0;

	for (lo++; lo < hi; lo++)
		n += !mem_snapshot_delete(dev, lo);
	return n;
}

static void expect_base(int dev, const struct cube_mem_stats *base)
{
	struct cube_mem_stats st;

	ASSERT_OK(mem_stats(dev, &st));
	EXPECT_EQ(st.snapshots, base->snapshots);
	EXPECT_EQ(st.clones, base->clones);
	EXPECT_EQ(st.shared_pages, base->shared_pages);
	EXPECT_EQ(st.private_pages, base->private_pages);
}

static void kill_and_reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

TEST_F(life, killed_with_clones_mapped)
{
	uint64_t id = small_snapshot(self->dev);
	struct cube_mem_stats st;
	int ready[2];
	pid_t pid;
	char ch;

	ASSERT_NE(id, 0);
	ASSERT_OK(pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int i, c;

		for (i = 0; i < 8; i++) {
			unsigned char *m;

			c = mem_clone(self->dev, id, i % 2 ?
				      CUBE_CLONE_F_PREFAULT : 0);
			if (c < 0)
				_exit(1);
			m = mem_map(c, 64 * PAGE);
			if (m == MAP_FAILED)
				_exit(1);
			memset(m, i, 16 * PAGE);	/* private pages */
			if (i % 2)
				close(c);		/* mapped only */
		}
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(read(ready[0], &ch, 1), 1);
	ASSERT_OK(mem_stats(self->dev, &st));
	EXPECT_EQ(st.clones, self->base.clones + 8);
	EXPECT_EQ(st.private_pages, self->base.private_pages + 8 * 16);
	kill_and_reap(pid);
	close(ready[0]);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	expect_base(self->dev, &self->base);
}

TEST_F(life, snapshot_outlives_its_creator)
{
	struct cube_snapshot_info info;
	uint64_t id = 0;
	int status, c;
	pid_t pid;
	unsigned char *m;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int d = mem_open_dev();

		id = small_snapshot(d);
		_exit(id ? 0 : 1);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_EQ(status, 0);
	/* the child's is the newest snapshot: find it by probing */
	id = small_snapshot(self->dev);
	ASSERT_NE(id, 0);
	ASSERT_OK(mem_snapshot_info(self->dev, id - 1, &info));
	EXPECT_EQ(info.pages, 64u);
	c = mem_clone(self->dev, id - 1, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 64 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_EQ(m[5 * PAGE], 6);
	munmap(m, 64 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id - 1));
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	expect_base(self->dev, &self->base);
}

/* A child that takes a snapshot of @len bytes of data until killed. */
static void killed_mid_snapshot(int dev, const struct cube_mem_stats *base,
				int from_memfd)
{
	const size_t len = 64 * MiB;
	uint64_t lo = small_snapshot(dev), hi;
	struct timespec ts = { 0, 30 * 1000 * 1000 };
	int ready[2], n;
	pid_t pid;
	char ch;

	ASSERT_NE(lo, 0);
	ASSERT_OK(mem_snapshot_delete(dev, lo));
	ASSERT_OK(pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		unsigned char *r;
		uint64_t id;
		int fd = -1;

		if (from_memfd) {
			fd = memfd_create("big", MFD_CLOEXEC);
			if (fd < 0 || ftruncate(fd, len))
				_exit(1);
			r = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
		} else {
			r = mem_region(len);
		}
		if (r == MAP_FAILED)
			_exit(1);
		memset(r, 0x5a, len);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;) {
			if (from_memfd)
				mem_snapshot_memfd(dev, fd, 0, len, &id);
			else
				mem_snapshot_user(dev, r, len, &id);
		}
	}
	close(ready[1]);
	ASSERT_EQ(read(ready[0], &ch, 1), 1);
	close(ready[0]);
	nanosleep(&ts, NULL);
	kill_and_reap(pid);
	hi = small_snapshot(dev);
	ASSERT_NE(hi, 0);
	ASSERT_OK(mem_snapshot_delete(dev, hi));
	n = delete_between(dev, lo, hi);
	TH_LOG("%d snapshots completed before the kill", n);
	expect_base(dev, base);
}

TEST_F(life, killed_mid_user_snapshot)
{
	killed_mid_snapshot(self->dev, &self->base, 0);
}

TEST_F(life, killed_mid_memfd_snapshot)
{
	killed_mid_snapshot(self->dev, &self->base, 1);
}

TEST_F(life, killed_mid_clone_fork)
{
	uint64_t id = small_snapshot(self->dev), lo, hi;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int ready[2];
	pid_t pid;
	char ch;

	ASSERT_NE(id, 0);
	lo = id;
	ASSERT_OK(pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		const size_t len = 32 * MiB;
		unsigned char *r = mem_region(len), *m;
		uint64_t big, f;
		int c;

		memset(r, 0, len);
		if (mem_snapshot_user(self->dev, r, len, &big))
			_exit(1);
		c = mem_clone(self->dev, big, 0);
		m = mem_map(c, len);
		if (c < 0 || m == MAP_FAILED)
			_exit(1);
		memset(m, 0x11, len);		/* all private */
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;) {
			if (!mem_snapshot_clone(self->dev, c, &f))
				mem_snapshot_delete(self->dev, f);
		}
	}
	close(ready[1]);
	ASSERT_EQ(read(ready[0], &ch, 1), 1);
	close(ready[0]);
	nanosleep(&ts, NULL);
	kill_and_reap(pid);
	hi = small_snapshot(self->dev);
	ASSERT_NE(hi, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, hi));
	delete_between(self->dev, lo, hi);	/* the child's base snapshot */
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	expect_base(self->dev, &self->base);
}

TEST_F(life, mapping_outlives_the_fd_and_fork)
{
	uint64_t id = small_snapshot(self->dev);
	unsigned char *m;
	int c, status;
	pid_t pid;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 64 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	close(c);
	m[0] = 0x99;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		munmap(m, 64 * PAGE);	/* the parent still maps it */
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_EQ(m[0], 0x99);
	EXPECT_EQ(m[PAGE], 2);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	munmap(m, 64 * PAGE);
	expect_base(self->dev, &self->base);
}

/* Last: unloads and reloads cube.ko ($CUBE_KO). */
TEST(unload_with_snapshots)
{
	const char *ko = getenv("CUBE_KO");
	struct cube_mem_stats st;
	uint64_t id, fork_id;
	unsigned char *m;
	int dev, c, fd, i;

	if (!ko || access(ko, R_OK))
		SKIP("no $CUBE_KO to reload the module from");
	dev = mem_open_dev();
	if (dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	id = small_snapshot(dev);
	ASSERT_NE(id, 0);
	c = mem_clone(dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 64 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	m[0] = 0x77;
	ASSERT_OK(mem_snapshot_clone(dev, c, &fork_id));
	close(dev);
	if (ct_module_refs() != 1)
		SKIP("cube.ko is in use by others (%d references)",
		     ct_module_refs());
	/* the clone (its mapping) pins the module */
	ASSERT_ERRNO(syscall(SYS_delete_module, "cube", O_NONBLOCK),
		     EWOULDBLOCK);
	close(c);
	ASSERT_EQ(ct_module_refs(), 1);	/* the mapping */
	munmap(m, 64 * PAGE);
	ASSERT_EQ(ct_module_refs(), 0);
	ASSERT_OK(syscall(SYS_delete_module, "cube", O_NONBLOCK));
	EXPECT_NE(access("/dev/" CUBE_DEVICE_NAME, F_OK), 0);

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_OK(syscall(SYS_finit_module, fd, "", 0));
	close(fd);
	for (i = 0; i < 100 && (dev = mem_open_dev()) < 0; i++)
		usleep(10000);
	ASSERT_GE(dev, 0);
	ASSERT_OK(mem_stats(dev, &st));
	EXPECT_EQ(st.snapshots, 0u);
	EXPECT_EQ(st.shared_pages, 0u);
	EXPECT_EQ(st.clones, 0u);
	EXPECT_EQ(st.private_pages, 0u);
	close(dev);
}

TEST_MAIN()
