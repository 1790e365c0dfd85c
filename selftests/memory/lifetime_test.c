// SPDX-License-Identifier: GPL-2.0
/*
 * lifetime_test: processes die at the worst moments and nothing leaks.
 *
 * A process killed with clones mapped and private pages, one killed in the
 * middle of taking a large snapshot, one killed while forking a clone (each
 * of these two seen asleep inside the ioctl, in /proc/PID/syscall, before
 * the kill): the module's counters come back to where they were.  Snapshots outlive
 * their creator until deleted, and go when the module is unloaded; a clone
 * keeps the module loaded.
 */
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include "cube_test.h"
#include "cube_wait.h"
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

/*
 * A range of this process's memory whose pages, while never touched, stall
 * whoever reads them (the kernel too) until the returned userfaultfd is
 * closed or its reader is killed: nothing here answers its faults.
 */
static int stall_range(void *addr, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)addr, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (uffd < 0)
		return -1;
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		close(uffd);
		return -1;
	}
	return uffd;
}

/*
 * Wait up to @ms for @pid to sleep inside ioctl(@cmd), as
 * /proc/PID/syscall shows it ("running" while it runs, the system call and
 * its arguments while it sleeps in one): 0 once it does.
 */
static int wait_in_ioctl(pid_t pid, unsigned long cmd, int ms)
{
	char path[64], buf[256];
	unsigned long a0, a1;
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (; ms > 0; ms -= 10) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return -1;	/* gone */
		buf[n] = '\0';
		if (sscanf(buf, "%ld 0x%lx 0x%lx", &nr, &a0, &a1) == 3 &&
		    nr == SYS_ioctl && a1 == cmd)
			return 0;
		usleep(10000);
	}
	TH_LOG("pid %d not seen in ioctl %#lx: %s", (int)pid, cmd, buf);
	return -1;
}

/*
 * A child takes one snapshot of its memory: the first half is data, the
 * second half stalls the module's copy at its first page.  Once the child
 * is seen asleep in the ioctl with half a snapshot built, it is killed
 * there: the half-built snapshot goes, no id was handed out.
 */
TEST_F(life, killed_mid_user_snapshot)
{
	const size_t len = 64 * MiB, half = len / 2;
	uint64_t lo = small_snapshot(self->dev), hi;
	struct cube_mem_stats st;
	int ready[2], status;
	pid_t pid;
	char ch;

	ASSERT_NE(lo, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, lo));
	ASSERT_OK(pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		unsigned char *r = mem_region(len);
		uint64_t id;

		if (r == MAP_FAILED)
			_exit(1);
		memset(r, 0x5a, half);
		if (stall_range(r + half, len - half) < 0)
			_exit(2);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		mem_snapshot_user(self->dev, r, len, &id);
		_exit(3);	/* the ioctl came back: it was never stalled */
	}
	close(ready[1]);
	if (read(ready[0], &ch, 1) != 1) {
		status = ct_reap(pid);
		if (ct_exited_with(status, 2))
			SKIP("no userfaultfd to stall the snapshot with");
		ASSERT_EXIT(status, 0);
	}
	close(ready[0]);
	ASSERT_EQ(wait_in_ioctl(pid, CUBE_IOC_SNAPSHOT_CREATE, 60000), 0);
	/* in it: a snapshot with the first half's pages, not yet linked */
	ASSERT_OK(mem_stats(self->dev, &st));
	EXPECT_EQ(st.snapshots, self->base.snapshots + 1);
	EXPECT_EQ(st.shared_pages, self->base.shared_pages + half / PAGE);
	kill(pid, SIGKILL);
	EXPECT_KILLED(ct_reap(pid), SIGKILL);
	hi = small_snapshot(self->dev);
	ASSERT_NE(hi, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, hi));
	EXPECT_EQ(delete_between(self->dev, lo, hi), 0);
	expect_base(self->dev, &self->base);
}

struct stalled_write {
	int fd;
	void *buf;
	ssize_t ret;
};

/* write() from a stalled page: it waits holding the memfd's inode lock. */
static void *stalled_writer(void *arg)
{
	struct stalled_write *w = arg;

	w->ret = pwrite(w->fd, w->buf, PAGE, 0);
	return NULL;
}

/*
 * A child snapshots a memfd (data extents between holes) again and again.
 * Reading it, the module takes the memfd's inode lock at each extent; a
 * write() of ours, stalled on a page of its source, holds that lock, so
 * the child soon sleeps inside the ioctl, before its first extent or
 * between two.  It is killed there, then the writer is let go: the ioctl
 * must notice the kill and free what it built.
 */
TEST_F(life, killed_mid_memfd_snapshot)
{
	const size_t len = 64 * MiB, extent = 4 * MiB;
	uint64_t lo = small_snapshot(self->dev), hi;
	struct stalled_write w = { .ret = -2 };
	struct cube_mem_stats st;
	int ready[2], uffd;
	pthread_t writer;
	size_t off;
	pid_t pid;
	char ch;

	ASSERT_NE(lo, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, lo));
	w.fd = memfd_create("big", MFD_CLOEXEC);
	ASSERT_GE(w.fd, 0);
	ASSERT_OK(ftruncate(w.fd, len));
	{
		unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_SHARED, w.fd, 0);

		ASSERT_NE(m, MAP_FAILED);
		/* data, then a one-page hole, extent after extent */
		for (off = 0; off < len; off += extent)
			memset(m + off, 0x5a, extent - PAGE);
		munmap(m, len);
	}
	w.buf = mem_region(PAGE);
	ASSERT_NE(w.buf, MAP_FAILED);
	uffd = stall_range(w.buf, PAGE);
	if (uffd < 0)
		SKIP("no userfaultfd to stall the write with: %s",
		     strerror(errno));
	ASSERT_OK(pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		uint64_t id;

		close(uffd);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;) {
			if (!mem_snapshot_memfd(self->dev, w.fd, 0, len, &id))
				mem_snapshot_delete(self->dev, id);
		}
	}
	close(ready[1]);
	ASSERT_EQ(read(ready[0], &ch, 1), 1);
	close(ready[0]);
	ASSERT_EQ(pthread_create(&writer, NULL, stalled_writer, &w), 0);
	if (wait_in_ioctl(pid, CUBE_IOC_SNAPSHOT_CREATE, 60000)) {
		kill(pid, SIGKILL);
		ct_reap(pid);
		close(uffd);
		pthread_join(writer, NULL);
		ASSERT_TRUE(0);
	}
	ASSERT_OK(mem_stats(self->dev, &st));
	TH_LOG("in the ioctl with %llu of %zu pages read",
	       (unsigned long long)(st.shared_pages - self->base.shared_pages),
	       (len - len / extent * PAGE) / PAGE);
	EXPECT_EQ(st.snapshots, self->base.snapshots + 1);
	kill(pid, SIGKILL);
	close(uffd);		/* the write goes on, then the child */
	EXPECT_KILLED(ct_reap(pid), SIGKILL);
	ASSERT_EQ(pthread_join(writer, NULL), 0);
	EXPECT_EQ(w.ret, (ssize_t)PAGE);
	close(w.fd);
	munmap(w.buf, PAGE);
	hi = small_snapshot(self->dev);
	ASSERT_NE(hi, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, hi));
	delete_between(self->dev, lo, hi);	/* the ones completed before */
	expect_base(self->dev, &self->base);
}

struct fork_loop {
	int dev, clone;
	volatile int stop;
	int bad;
};

/* Snapshot a clone and delete the snapshot, over and over. */
static void *fork_looper(void *arg)
{
	struct fork_loop *f = arg;
	uint64_t id;

	while (!f->stop) {
		if (mem_snapshot_clone(f->dev, f->clone, &id) ||
		    mem_snapshot_delete(f->dev, id))
			f->bad = 1;
	}
	return NULL;
}

/*
 * A child forks a clone with 32 MiB of private pages over and over; so do
 * we, on the same clone.  A fork holds the clone's lock while it copies,
 * so the child soon sleeps inside the ioctl waiting for it, as
 * /proc/PID/syscall shows; it is killed there, and what it was building
 * goes.
 */
TEST_F(life, killed_mid_clone_fork)
{
	const size_t len = 32 * MiB;
	uint64_t id = small_snapshot(self->dev), big = 0, lo, hi;
	struct fork_loop f = { .dev = self->dev };
	unsigned char *r, *m;
	pthread_t looper;
	pid_t pid;
	int seen;

	ASSERT_NE(id, 0);
	lo = id;
	r = mem_region(len);
	ASSERT_NE(r, MAP_FAILED);
	ASSERT_OK(mem_snapshot_user(self->dev, r, len, &big));
	munmap(r, len);
	f.clone = mem_clone(self->dev, big, 0);
	ASSERT_GE(f.clone, 0);
	m = mem_map(f.clone, len);
	ASSERT_NE(m, MAP_FAILED);
	memset(m, 0x11, len);		/* all private */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		uint64_t s;

		for (;;) {
			if (!mem_snapshot_clone(self->dev, f.clone, &s))
				mem_snapshot_delete(self->dev, s);
		}
	}
	ASSERT_EQ(pthread_create(&looper, NULL, fork_looper, &f), 0);
	seen = wait_in_ioctl(pid, CUBE_IOC_SNAPSHOT_CREATE, 60000);
	kill(pid, SIGKILL);
	EXPECT_KILLED(ct_reap(pid), SIGKILL);
	f.stop = 1;
	ASSERT_EQ(pthread_join(looper, NULL), 0);
	EXPECT_EQ(seen, 0);
	EXPECT_EQ(f.bad, 0);
	munmap(m, len);
	close(f.clone);
	hi = small_snapshot(self->dev);
	ASSERT_NE(hi, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, hi));
	delete_between(self->dev, lo, hi);	/* big, and the child's last */
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
	if (ct_module_settle(1, 30) != 1)
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
