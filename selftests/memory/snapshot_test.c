// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot_test: snapshots and copy-on-write clones of /dev/cube.
 *
 * Every ioctl with good and bad arguments (each bad field has its errno and
 * changes nothing), copy-on-write isolation between clones, snapshots of
 * clones, zero-page dedup, reset, prefault and working-set recording, and
 * deferred deletion.  Every test checks that the module's counters are back
 * where they were once its objects are gone.
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "cube_test.h"
#include "mem_util.h"

FIXTURE(mem) {
	int dev;
	uint64_t first_id;
	struct cube_mem_stats base;
};

FIXTURE_SETUP(mem)
{
	self->dev = mem_open_dev();
	if (self->dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	self->first_id = mem_probe_id(self->dev);
	ASSERT_NE(self->first_id, 0);
	ASSERT_OK(mem_stats(self->dev, &self->base));
}

FIXTURE_TEARDOWN(mem)
{
	if (self->dev < 0)
		return;
	/* a failed test leaves no snapshot behind */
	mem_delete_since(self->dev, self->first_id);
	close(self->dev);
}

/* The counters now, minus the fixture's baseline. */
static struct cube_mem_stats delta(int dev, const struct cube_mem_stats *base)
{
	struct cube_mem_stats st;

	if (mem_stats(dev, &st))
		memset(&st, 0xff, sizeof(st));
	st.snapshots -= base->snapshots;
	st.clones -= base->clones;
	st.shared_pages -= base->shared_pages;
	st.private_pages -= base->private_pages;
	return st;
}

#define EXPECT_DELTA(n_snap, n_clone, n_shared, n_priv) do {		\
	struct cube_mem_stats d_ = delta(self->dev, &self->base);	\
	EXPECT_EQ(d_.snapshots, (uint64_t)(n_snap));			\
	EXPECT_EQ(d_.clones, (uint64_t)(n_clone));			\
	EXPECT_EQ(d_.shared_pages, (uint64_t)(n_shared));		\
	EXPECT_EQ(d_.private_pages, (uint64_t)(n_priv));		\
} while (0)

static void fill(void *p, size_t page, unsigned char seed)
{
	memset((char *)p + page * PAGE, seed, PAGE);
}

static int page_is(const void *p, size_t page, unsigned char v)
{
	const unsigned char *b = (const unsigned char *)p + page * PAGE;
	size_t i;

	for (i = 0; i < PAGE; i++)
		if (b[i] != v)
			return 0;
	return 1;
}

/*
 * A snapshot of @n pages of the caller's memory, page i filled with i + 1
 * for every page i < @n in @data (terminated by -1).
 */
static uint64_t snap_of(int dev, size_t n, const int *data)
{
	char *r = mem_region(n * PAGE);
	uint64_t id = 0;

	if (r == MAP_FAILED)
		return 0;
	for (; *data >= 0; data++)
		if ((size_t)*data < n)
			fill(r, *data, *data + 1);
	if (mem_snapshot_user(dev, r, n * PAGE, &id))
		id = 0;
	munmap(r, n * PAGE);
	return id;
}

static const int data_0_3_7[] = { 0, 3, 7, -1 };

TEST_F(mem, user_snapshot_info_delete)
{
	struct cube_snapshot_info info;
	uint64_t id = snap_of(self->dev, 16, data_0_3_7);

	ASSERT_NE(id, 0);
	ASSERT_OK(mem_snapshot_info(self->dev, id, &info));
	EXPECT_EQ(info.id, id);
	EXPECT_EQ(info.size, 16 * PAGE);
	EXPECT_EQ(info.pages, 3u);
	EXPECT_EQ(info.depth, 1u);
	EXPECT_EQ(info.parent_id, 0u);
	EXPECT_EQ(info.clones, 0u);
	EXPECT_EQ(info.children, 0u);
	EXPECT_DELTA(1, 0, 3, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
	EXPECT_ERRNO(mem_snapshot_delete(self->dev, id), ENOENT);
	EXPECT_ERRNO(mem_snapshot_info(self->dev, id, &info), ENOENT);
}

TEST_F(mem, ids_are_not_reused)
{
	uint64_t a = snap_of(self->dev, 8, data_0_3_7);
	uint64_t b;

	ASSERT_NE(a, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, a));
	b = snap_of(self->dev, 8, data_0_3_7);
	ASSERT_NE(b, 0);
	EXPECT_GT(b, a);
	ASSERT_OK(mem_snapshot_delete(self->dev, b));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, memfd_snapshot)
{
	struct cube_snapshot_info info;
	unsigned char *m;
	uint64_t id = 0;
	int fd, c;

	fd = memfd_create("guest", MFD_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_OK(ftruncate(fd, 64 * PAGE));
	m = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(m, MAP_FAILED);
	fill(m, 4, 0xa4);	/* offset 4: first page of the snapshot */
	fill(m, 10, 0xaa);
	fill(m, 11, 0);		/* written, but zeros: takes no memory */
	fill(m, 35, 0xb3);	/* the snapshot's last page */
	fill(m, 36, 0xb4);	/* past its end */
	ASSERT_EQ(lseek(fd, 123, SEEK_SET), 123);

	ASSERT_OK(mem_snapshot_memfd(self->dev, fd, 4 * PAGE, 32 * PAGE, &id));
	EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 123);	/* position untouched */
	ASSERT_OK(mem_snapshot_info(self->dev, id, &info));
	EXPECT_EQ(info.pages, 3u);
	EXPECT_EQ(info.size, 32 * PAGE);
	EXPECT_DELTA(1, 0, 3, 0);

	/* the snapshot does not follow later writes to the memfd */
	fill(m, 10, 0x55);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	munmap(m, 64 * PAGE);
	m = mem_map(c, 32 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_TRUE(page_is(m, 0, 0xa4));
	EXPECT_TRUE(page_is(m, 6, 0xaa));
	EXPECT_TRUE(page_is(m, 7, 0));
	EXPECT_TRUE(page_is(m, 31, 0xb3));
	EXPECT_TRUE(page_is(m, 1, 0));
	munmap(m, 32 * PAGE);
	close(c);
	close(fd);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static int create_raw(int dev, struct cube_snapshot_create c)
{
	return ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c);
}

TEST_F(mem, bad_snapshot_create)
{
	char *r = mem_region(8 * PAGE);
	struct cube_snapshot_create u = {
		.source = CUBE_SNAPSHOT_SRC_USER, .fd = -1,
		.addr = (uintptr_t)r, .length = 4 * PAGE,
	};
	struct cube_snapshot_create c;
	int memfd, ro, dirfd, pipefd[2], clone;
	uint64_t id = 0;
	char path[64];
	void *hole;

	ASSERT_NE(r, MAP_FAILED);
	memfd = memfd_create("bad", MFD_CLOEXEC);
	ASSERT_GE(memfd, 0);
	ASSERT_OK(ftruncate(memfd, 8 * PAGE));
	ASSERT_OK(pipe(pipefd));
	dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_GE(dirfd, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	ro = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_GE(ro, 0);
	hole = mem_region(4 * PAGE);
	ASSERT_NE(hole, MAP_FAILED);
	munmap(hole, 4 * PAGE);

	/* the command itself */
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SNAPSHOT_CREATE, NULL), EFAULT);
	EXPECT_ERRNO(ioctl(self->dev, _IOC(_IOC_READ | _IOC_WRITE,
		CUBE_IOCTL_MAGIC, 0x30, sizeof(u) - 8), &u), ENOTTY);
	EXPECT_ERRNO(ioctl(self->dev, _IOC(_IOC_WRITE, CUBE_IOCTL_MAGIC, 0x30,
		sizeof(u)), &u), ENOTTY);
	EXPECT_ERRNO(ioctl(self->dev, _IO(CUBE_IOCTL_MAGIC, 0x3f), 0), ENOTTY);

	/* common fields */
	c = u; c.source = 0;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.source = 4;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.flags = 1;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.reserved = 1;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);

	/* user source */
	c = u; c.length = 0;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.length = PAGE + 1;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.addr += 8;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.offset = PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.fd = memfd;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.addr = -PAGE; c.length = 2 * PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EOVERFLOW);
	c = u; c.addr = 0; c.length = CUBE_SNAPSHOT_MAX_SIZE + PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EFBIG);
	c = u; c.addr = (uintptr_t)hole;
	EXPECT_ERRNO(create_raw(self->dev, c), EFAULT);
	c = u; c.addr = 0xffff888000000000ULL;
	EXPECT_ERRNO(create_raw(self->dev, c), EFAULT);
	c = u; c.length = 8 * PAGE;	/* runs into unmapped memory */
	munmap(r + 4 * PAGE, 4 * PAGE);
	EXPECT_ERRNO(create_raw(self->dev, c), EFAULT);

	/* memfd source */
	c = u; c.source = CUBE_SNAPSHOT_SRC_MEMFD; c.addr = 0; c.fd = memfd;
	u = c;
	ASSERT_OK(ioctl(self->dev, CUBE_IOC_SNAPSHOT_CREATE, &c));
	ASSERT_NE(c.id, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, c.id));
	c = u; c.addr = PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.offset = 100;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.offset = 6 * PAGE;	/* 6 + 4 pages > 8 */
	EXPECT_ERRNO(create_raw(self->dev, c), ERANGE);
	c = u; c.length = 16 * PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), ERANGE);
	c = u; c.offset = -PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EOVERFLOW);
	c = u; c.offset = 1ULL << 63;
	EXPECT_ERRNO(create_raw(self->dev, c), EOVERFLOW);
	c = u; c.fd = -1;
	EXPECT_ERRNO(create_raw(self->dev, c), EBADF);
	c = u; c.fd = 1000;
	EXPECT_ERRNO(create_raw(self->dev, c), EBADF);
	c = u; c.fd = ro;		/* not open for reading */
	EXPECT_ERRNO(create_raw(self->dev, c), EBADF);
	c = u; c.fd = pipefd[0];
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.fd = dirfd;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c = u; c.fd = self->dev;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c.fd = memfd_create("huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (c.fd >= 0) {		/* hugetlbfs is not shmem */
		EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
		close(c.fd);
	}

	/* clone source */
	ASSERT_OK(mem_snapshot_memfd(self->dev, memfd, 0, 4 * PAGE, &id));
	clone = mem_clone(self->dev, id, 0);
	ASSERT_GE(clone, 0);
	c = u; c.fd = clone;		/* a clone fd is not a memfd */
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	memset(&c, 0, sizeof(c));
	c.source = CUBE_SNAPSHOT_SRC_CLONE;
	c.fd = memfd;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c.fd = 1000;
	EXPECT_ERRNO(create_raw(self->dev, c), EBADF);
	c.fd = clone; c.length = PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c.length = 0; c.offset = PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);
	c.offset = 0; c.addr = PAGE;
	EXPECT_ERRNO(create_raw(self->dev, c), EINVAL);

	EXPECT_DELTA(1, 1, 0, 0);	/* only the good ones exist */
	close(clone);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	close(ro);
	close(dirfd);
	close(pipefd[0]);
	close(pipefd[1]);
	close(memfd);
	munmap(r, 8 * PAGE);
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, bad_delete_info_clone)
{
	struct cube_snapshot_id d = { 0 };
	struct cube_snapshot_info info = { 0 };
	struct cube_clone_create cc = { 0 };
	uint64_t id = snap_of(self->dev, 8, data_0_3_7);

	ASSERT_NE(id, 0);
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SNAPSHOT_DELETE, NULL), EFAULT);
	d.id = id; d.flags = 1;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SNAPSHOT_DELETE, &d), EINVAL);
	d.flags = 0; d.reserved = 1;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SNAPSHOT_DELETE, &d), EINVAL);
	EXPECT_ERRNO(mem_snapshot_delete(self->dev, 0), ENOENT);
	EXPECT_ERRNO(mem_snapshot_delete(self->dev, id + 1000), ENOENT);
	EXPECT_ERRNO(mem_snapshot_delete(self->dev, ~0ULL), ENOENT);

	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SNAPSHOT_INFO, NULL), EFAULT);
	info.id = id; info.flags = 1;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_SNAPSHOT_INFO, &info), EINVAL);
	EXPECT_ERRNO(mem_snapshot_info(self->dev, 0, &info), ENOENT);
	EXPECT_ERRNO(mem_snapshot_info(self->dev, id + 1000, &info), ENOENT);

	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_CREATE, NULL), EFAULT);
	cc.snapshot_id = id; cc.flags = 1U << 2;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_CREATE, &cc), EINVAL);
	cc.flags = 0; cc.reserved = 1;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_CREATE, &cc), EINVAL);
	EXPECT_ERRNO(mem_clone(self->dev, 0, 0), ENOENT);
	EXPECT_ERRNO(mem_clone(self->dev, id + 1000, 0), ENOENT);
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_MEM_STATS, NULL), EFAULT);

	EXPECT_DELTA(1, 0, 3, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, bad_clone_fd_use)
{
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 16, data_0_3_7);
	int c, other;
	char buf[8];
	void *m;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	EXPECT_TRUE(fcntl(c, F_GETFD) & FD_CLOEXEC);
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_COUNTERS, NULL), EFAULT);
	EXPECT_ERRNO(ioctl(c, _IO(CUBE_IOCTL_MAGIC, 0x42), 0), ENOTTY);
	EXPECT_ERRNO(ioctl(c, _IOC(_IOC_READ, CUBE_IOCTL_MAGIC, 0x41,
		sizeof(cnt) - 8), &cnt), ENOTTY);
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_MEM_STATS, &cnt), ENOTTY);
	/* the clone-fd ioctls are not /dev/cube ioctls */
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_RESET, 0), ENOTTY);
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_COUNTERS, &cnt), ENOTTY);
	EXPECT_ERRNO(read(c, buf, sizeof(buf)), EINVAL);
	EXPECT_ERRNO(write(c, buf, sizeof(buf)), EINVAL);

	EXPECT_EQ(mmap(NULL, 16 * PAGE, PROT_READ, MAP_PRIVATE, c, 0),
		  MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(mem_map(c, 17 * PAGE), MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, c, 16 * PAGE),
		  MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, c, 15 * PAGE),
		  MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	/* a mapping of a part, and it cannot grow */
	m = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, c, 12 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_EQ(mremap(m, 4 * PAGE, 8 * PAGE, MREMAP_MAYMOVE), MAP_FAILED);
	munmap(m, 4 * PAGE);

	/* a snapshot id is not a clone: counters of a fresh clone */
	other = mem_clone(self->dev, id, 0);
	ASSERT_GE(other, 0);
	ASSERT_OK(mem_counters(other, &cnt));
	EXPECT_EQ(cnt.snapshot_id, id);
	EXPECT_EQ(cnt.size, 16 * PAGE);
	EXPECT_EQ(cnt.private_pages, 0u);
	EXPECT_EQ(cnt.faults, 0u);
	EXPECT_DELTA(1, 2, 3, 0);
	close(other);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static const int data_8[] = { 0, 1, 2, 3, 4, 5, 6, 7, -1 };

/* Minor faults of the calling thread so far. */
static long thread_minflt(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_minflt;
}

/*
 * The clone's faults and the thread's minor faults that writing @page of
 * @m costs.
 */
static void write_cost(int c, unsigned char *m, size_t page,
		       unsigned char v, uint64_t *faults, long *minflt)
{
	struct cube_clone_counters before, after;
	long flt;

	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	mem_counters(c, &before);
	flt = thread_minflt();
	fill(m, page, v);
	*minflt = thread_minflt() - flt;
	mem_counters(c, &after);
	*faults = after.faults - before.faults;
}

TEST_F(mem, write_after_read_is_one_copy_and_one_fault)
{
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 16, data_8), faults;
	unsigned char *m, *m2;
	long minflt;
	int c;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 16 * PAGE);
	m2 = mem_map(c, 16 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	ASSERT_NE(m2, MAP_FAILED);
	/* both mappings read page 1 and hole 12: shared, read-only PTEs */
	ASSERT_TRUE(page_is(m, 1, 2));
	ASSERT_TRUE(page_is(m2, 1, 2));
	ASSERT_TRUE(page_is(m, 12, 0));
	ASSERT_TRUE(page_is(m2, 12, 0));

	/* a write after a read: one fault that copies, none after it */
	write_cost(c, m, 1, 0x10, &faults, &minflt);
	EXPECT_EQ(faults, 1u);
	EXPECT_EQ(minflt, 1);
	/* the same for a hole */
	write_cost(c, m, 12, 0x12, &faults, &minflt);
	EXPECT_EQ(faults, 1u);
	EXPECT_EQ(minflt, 1);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.cow_faults, 2u);
	EXPECT_EQ(cnt.private_pages, 2u);

	/* the other mapping no longer maps the shared pages */
	EXPECT_TRUE(page_is(m2, 1, 0x10));
	EXPECT_TRUE(page_is(m2, 12, 0x12));
	/* ... and writes the private page in one fault that copies nothing */
	write_cost(c, m2, 1, 0x11, &faults, &minflt);
	EXPECT_EQ(faults, 1u);
	EXPECT_TRUE(page_is(m, 1, 0x11));
	/* a second write faults no more */
	write_cost(c, m, 1, 0x13, &faults, &minflt);
	EXPECT_EQ(faults, 0u);
	EXPECT_EQ(minflt, 0);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.cow_faults, 2u);

	/* a reset drops the written pages from both mappings */
	ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET));
	EXPECT_TRUE(page_is(m, 1, 2));
	EXPECT_TRUE(page_is(m2, 12, 0));
	write_cost(c, m2, 1, 0x14, &faults, &minflt);
	EXPECT_TRUE(page_is(m, 1, 0x14));
	EXPECT_DELTA(1, 1, 8, 1);

	munmap(m, 16 * PAGE);
	munmap(m2, 16 * PAGE);
	close(c);
	EXPECT_DELTA(1, 0, 8, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, cow_isolation_three_clones)
{
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 16, data_8);
	unsigned char *m[4];
	int c[4], i;

	ASSERT_NE(id, 0);
	for (i = 0; i < 4; i++) {
		c[i] = mem_clone(self->dev, id, 0);
		ASSERT_GE(c[i], 0);
		m[i] = mem_map(c[i], 16 * PAGE);
		ASSERT_NE(m[i], MAP_FAILED);
	}
	/* everybody reads page 1 first: shared, read-only PTEs */
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(page_is(m[i], 1, 2));
	fill(m[0], 1, 0x10);		/* write after read */
	fill(m[1], 1, 0x11);
	fill(m[2], 12, 0x12);		/* write into a hole */
	ASSERT_TRUE(page_is(m[0], 1, 0x10));
	ASSERT_TRUE(page_is(m[1], 1, 0x11));
	ASSERT_TRUE(page_is(m[2], 1, 2));
	ASSERT_TRUE(page_is(m[3], 1, 2));
	ASSERT_TRUE(page_is(m[2], 12, 0x12));
	for (i = 0; i < 4; i++)
		if (i != 2)
			EXPECT_TRUE(page_is(m[i], 12, 0));
	for (i = 0; i < 4; i++) {
		EXPECT_TRUE(page_is(m[i], 0, 1));
		EXPECT_TRUE(page_is(m[i], 7, 8));
	}
	ASSERT_OK(mem_counters(c[0], &cnt));
	EXPECT_EQ(cnt.private_pages, 1u);
	EXPECT_GE(cnt.cow_faults, 1u);
	ASSERT_OK(mem_counters(c[3], &cnt));
	EXPECT_EQ(cnt.private_pages, 0u);
	EXPECT_EQ(cnt.shared_pages, 9u);	/* 0-7 (fault-around), hole 12 */
	EXPECT_DELTA(1, 4, 8, 3);

	/* a new clone sees the snapshot, not any clone's writes */
	munmap(m[3], 16 * PAGE);
	close(c[3]);
	c[3] = mem_clone(self->dev, id, 0);
	ASSERT_GE(c[3], 0);
	m[3] = mem_map(c[3], 16 * PAGE);
	ASSERT_NE(m[3], MAP_FAILED);
	EXPECT_TRUE(page_is(m[3], 1, 2));
	EXPECT_TRUE(page_is(m[3], 12, 0));

	for (i = 0; i < 4; i++) {
		munmap(m[i], 16 * PAGE);
		close(c[i]);
	}
	EXPECT_DELTA(1, 0, 8, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, two_mappings_of_one_clone)
{
	uint64_t id = snap_of(self->dev, 8, data_8);
	unsigned char *a, *b;
	int c;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	a = mem_map(c, 8 * PAGE);
	b = mem_map(c, 8 * PAGE);
	ASSERT_NE(a, MAP_FAILED);
	ASSERT_NE(b, MAP_FAILED);
	ASSERT_TRUE(page_is(b, 2, 3));	/* b maps the shared page */
	fill(a, 2, 0x77);		/* a's write replaces it for b too */
	EXPECT_TRUE(page_is(b, 2, 0x77));
	fill(b, 3, 0x78);
	EXPECT_TRUE(page_is(a, 3, 0x78));
	munmap(a, 8 * PAGE);
	munmap(b, 8 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, gup_write_through_proc_mem)
{
	uint64_t id = snap_of(self->dev, 4, data_8);
	unsigned char *a, *b, v[PAGE];
	int ca, cb, memfd;

	ASSERT_NE(id, 0);
	ca = mem_clone(self->dev, id, 0);
	cb = mem_clone(self->dev, id, 0);
	ASSERT_GE(ca, 0);
	ASSERT_GE(cb, 0);
	a = mem_map(ca, 4 * PAGE);
	b = mem_map(cb, 4 * PAGE);
	ASSERT_NE(a, MAP_FAILED);
	ASSERT_NE(b, MAP_FAILED);
	ASSERT_TRUE(page_is(a, 1, 2));
	/* get_user_pages(FOLL_WRITE) on the read-only PTE */
	memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_GE(memfd, 0);
	memset(v, 0x99, sizeof(v));
	ASSERT_EQ(pwrite(memfd, v, PAGE, (off_t)(uintptr_t)(a + PAGE)),
		  (ssize_t)PAGE);
	ASSERT_EQ(pwrite(memfd, v, PAGE, (off_t)(uintptr_t)(a + 3 * PAGE)),
		  (ssize_t)PAGE);
	close(memfd);
	EXPECT_TRUE(page_is(a, 1, 0x99));
	EXPECT_TRUE(page_is(a, 3, 0x99));
	EXPECT_TRUE(page_is(b, 1, 2));
	EXPECT_TRUE(page_is(b, 3, 4));
	munmap(a, 4 * PAGE);
	munmap(b, 4 * PAGE);
	close(ca);
	close(cb);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, forked_process_shares_the_clone)
{
	uint64_t id = snap_of(self->dev, 4, data_8);
	unsigned char *a;
	int c, status;
	pid_t pid;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	a = mem_map(c, 4 * PAGE);
	ASSERT_NE(a, MAP_FAILED);
	fill(a, 0, 0x31);
	ASSERT_TRUE(page_is(a, 1, 2));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (!page_is(a, 0, 0x31))
			_exit(1);
		fill(a, 1, 0x32);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_EQ(status, 0);
	EXPECT_TRUE(page_is(a, 1, 0x32));	/* MAP_SHARED: one memory */
	munmap(a, 4 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, snapshot_of_clone)
{
	struct cube_snapshot_info info;
	uint64_t id = snap_of(self->dev, 16, data_8), fork_id = 0, fork2 = 0;
	unsigned char *a, *f, *g;
	int ca, cf, cf2;

	ASSERT_NE(id, 0);
	ca = mem_clone(self->dev, id, 0);
	ASSERT_GE(ca, 0);
	a = mem_map(ca, 16 * PAGE);
	ASSERT_NE(a, MAP_FAILED);
	fill(a, 1, 0x41);	/* changed */
	fill(a, 2, 0);		/* zeroed: must hide the parent's data */
	fill(a, 9, 0x49);	/* new data in a hole */
	fill(a, 10, 0);		/* zeros over a hole: nothing to store */
	ASSERT_OK(mem_snapshot_clone(self->dev, ca, &fork_id));
	ASSERT_OK(mem_snapshot_info(self->dev, fork_id, &info));
	EXPECT_EQ(info.parent_id, id);
	EXPECT_EQ(info.depth, 2u);
	EXPECT_EQ(info.pages, 2u);	/* pages 1 and 9 only */
	EXPECT_EQ(info.size, 16 * PAGE);
	ASSERT_OK(mem_snapshot_info(self->dev, id, &info));
	EXPECT_EQ(info.children, 1u);
	EXPECT_EQ(info.clones, 1u);
	EXPECT_DELTA(2, 1, 10, 4);

	/* the clone goes on; the fork keeps what it had */
	fill(a, 1, 0x42);
	fill(a, 3, 0x43);
	cf = mem_clone(self->dev, fork_id, 0);
	ASSERT_GE(cf, 0);
	f = mem_map(cf, 16 * PAGE);
	ASSERT_NE(f, MAP_FAILED);
	EXPECT_TRUE(page_is(f, 0, 1));
	EXPECT_TRUE(page_is(f, 1, 0x41));
	EXPECT_TRUE(page_is(f, 2, 0));
	EXPECT_TRUE(page_is(f, 3, 4));
	EXPECT_TRUE(page_is(f, 9, 0x49));
	EXPECT_TRUE(page_is(f, 10, 0));
	EXPECT_TRUE(page_is(f, 15, 0));
	/* and the fork's clone is copy-on-write too */
	fill(f, 0, 0x50);
	EXPECT_TRUE(page_is(a, 0, 1));

	/* fork the fork's clone: depth 3 */
	ASSERT_OK(mem_snapshot_clone(self->dev, cf, &fork2));
	ASSERT_OK(mem_snapshot_info(self->dev, fork2, &info));
	EXPECT_EQ(info.depth, 3u);
	EXPECT_EQ(info.parent_id, fork_id);
	EXPECT_EQ(info.pages, 1u);
	cf2 = mem_clone(self->dev, fork2, 0);
	ASSERT_GE(cf2, 0);
	g = mem_map(cf2, 16 * PAGE);
	ASSERT_NE(g, MAP_FAILED);
	EXPECT_TRUE(page_is(g, 0, 0x50));
	EXPECT_TRUE(page_is(g, 1, 0x41));
	EXPECT_TRUE(page_is(g, 7, 8));

	/* deleting the base defers: the forks still read through it */
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_ERRNO(mem_snapshot_info(self->dev, id, &info), ENOENT);
	EXPECT_ERRNO(mem_clone(self->dev, id, 0), ENOENT);
	ASSERT_OK(mem_snapshot_info(self->dev, fork_id, &info));
	EXPECT_EQ(info.parent_id, id);
	EXPECT_TRUE(page_is(g, 5, 6));
	EXPECT_DELTA(3, 3, 11, 6);

	munmap(g, 16 * PAGE);
	close(cf2);
	munmap(f, 16 * PAGE);
	close(cf);
	munmap(a, 16 * PAGE);
	close(ca);
	EXPECT_DELTA(3, 0, 11, 0);	/* fork and fork2 still linked */
	ASSERT_OK(mem_snapshot_delete(self->dev, fork_id));
	EXPECT_DELTA(3, 0, 11, 0);	/* fork2 holds its parent chain */
	ASSERT_OK(mem_snapshot_delete(self->dev, fork2));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, snapshot_chain_depth_limit)
{
	uint64_t ids[CUBE_SNAPSHOT_MAX_DEPTH + 1];
	int c = -1, i, n = 0;

	ids[n++] = snap_of(self->dev, 8, data_0_3_7);
	ASSERT_NE(ids[0], 0);
	for (i = 1; i < CUBE_SNAPSHOT_MAX_DEPTH; i++) {
		c = mem_clone(self->dev, ids[n - 1], 0);
		ASSERT_GE(c, 0);
		ASSERT_OK(mem_snapshot_clone(self->dev, c, &ids[n]));
		n++;
		close(c);
	}
	c = mem_clone(self->dev, ids[n - 1], 0);
	ASSERT_GE(c, 0);
	EXPECT_ERRNO(mem_snapshot_clone(self->dev, c, &ids[n]), EMLINK);
	EXPECT_DELTA(CUBE_SNAPSHOT_MAX_DEPTH, 1, 3, 0);
	close(c);
	for (i = 0; i < n; i++)
		ASSERT_OK(mem_snapshot_delete(self->dev, ids[i]));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, zero_pages_take_no_memory)
{
	const size_t len = 512 * MiB, n = len / PAGE;
	struct cube_snapshot_info info;
	unsigned char *r, *m;
	uint64_t id = 0, id2 = 0;
	size_t i;
	int c, fd;

	r = mem_region(len);
	ASSERT_NE(r, MAP_FAILED);
	for (i = 0; i < 16; i++)
		fill(r, i * (n / 16) + 5, 0xc0 + i);
	fill(r, 100, 0);		/* touched, still zero */
	ASSERT_OK(mem_snapshot_user(self->dev, r, len, &id));
	ASSERT_OK(mem_snapshot_info(self->dev, id, &info));
	EXPECT_EQ(info.pages, 16u);
	EXPECT_DELTA(1, 0, 16, 0);

	/* the same from a sparse memfd */
	fd = memfd_create("sparse", MFD_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_OK(ftruncate(fd, len));
	for (i = 0; i < 16; i++)
		ASSERT_EQ(pwrite(fd, r + (i * (n / 16) + 5) * PAGE, PAGE,
				 (i * (n / 16) + 5) * PAGE), (ssize_t)PAGE);
	ASSERT_EQ(pwrite(fd, r + 100 * PAGE, PAGE, 100 * PAGE), (ssize_t)PAGE);
	munmap(r, len);
	ASSERT_OK(mem_snapshot_memfd(self->dev, fd, 0, len, &id2));
	close(fd);
	EXPECT_DELTA(2, 0, 32, 0);

	c = mem_clone(self->dev, id2, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, len);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_TRUE(page_is(m, 5, 0xc0));
	EXPECT_TRUE(page_is(m, 15 * (n / 16) + 5, 0xcf));
	EXPECT_TRUE(page_is(m, 6, 0));
	EXPECT_TRUE(page_is(m, n - 1, 0));
	munmap(m, len);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	ASSERT_OK(mem_snapshot_delete(self->dev, id2));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, reset_restores_the_snapshot)
{
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 16, data_8);
	unsigned char *m;
	int c, i;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 16 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (i = 0; i < 16; i++)
		fill(m, i, 0xe0 + i);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 16u);
	EXPECT_DELTA(1, 1, 8, 16);

	ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET, 0));
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 0u);
	EXPECT_EQ(cnt.shared_pages, 0u);
	EXPECT_EQ(cnt.resets, 1u);
	EXPECT_DELTA(1, 1, 8, 0);
	/* the same mapping reads the snapshot again */
	for (i = 0; i < 16; i++)
		EXPECT_TRUE(page_is(m, i, i < 8 ? i + 1 : 0));
	/* and is copy-on-write again */
	fill(m, 2, 0x22);
	EXPECT_TRUE(page_is(m, 2, 0x22));
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 1u);
	ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET, 0));	/* twice is fine */
	ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET, 0));
	EXPECT_TRUE(page_is(m, 2, 3));
	munmap(m, 16 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static const int data_64[] = {
	 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
	32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
	48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, -1
};

/*
 * A reset zaps only where the clone had private pages: what it mapped of
 * the snapshot (data and holes) stays mapped and is read without a fault,
 * while every written page shows the snapshot again.  Every third page of
 * 256 is written: 86 runs, past the 64 zapped one by one, so the rest goes
 * as one span (whose unwritten pages may fault again, correctly).
 */
TEST_F(mem, reset_keeps_the_snapshot_mappings)
{
	const size_t n = 256, one_by_one = 3 * 64;
	struct cube_clone_counters before, after;
	uint64_t id = snap_of(self->dev, n, data_64);
	unsigned char *m;
	size_t i;
	int c;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, n * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (i = 0; i < n; i++)
		ASSERT_TRUE(page_is(m, i, i < 64 ? i + 1 : 0));
	for (i = 0; i < n; i += 3)
		fill(m, i, 0xee);
	ASSERT_OK(mem_counters(c, &before));
	EXPECT_EQ(before.private_pages, 86u);

	ASSERT_OK(ioctl(c, CUBE_IOC_CLONE_RESET));
	ASSERT_OK(mem_counters(c, &before));
	EXPECT_EQ(before.private_pages, 0u);
	EXPECT_EQ(before.shared_pages, n - 86);	/* still mapped */
	for (i = 0; i < one_by_one; i++)
		if (i % 3)
			EXPECT_TRUE(page_is(m, i, i < 64 ? i + 1 : 0));
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_EQ(after.faults, before.faults);
	for (i = 0; i < n; i++)
		EXPECT_TRUE(page_is(m, i, i < 64 ? i + 1 : 0));
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_GT(after.faults, before.faults);
	EXPECT_EQ(after.private_pages, 0u);
	/* copy-on-write again, for a page of each kind */
	fill(m, 3, 0x33);
	fill(m, 4, 0x44);
	fill(m, 200, 0x20);
	EXPECT_TRUE(page_is(m, 3, 0x33) && page_is(m, 4, 0x44) &&
		    page_is(m, 200, 0x20));
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_EQ(after.private_pages, 3u);
	munmap(m, n * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static int rewind_clone(int c, uint64_t keep, struct cube_clone_rewind *rw)
{
	memset(rw, 0, sizeof(*rw));
	rw->keep_pages = keep;
	return ioctl(c, CUBE_IOC_CLONE_REWIND, rw);
}

/*
 * A rewind copies the snapshot back into the pages it keeps: the clone
 * reads its snapshot, the kept pages stay private and mapped writable (a
 * write to one costs no fault), the others are dropped as by a reset.
 */
TEST_F(mem, rewind_copies_the_snapshot_back_in_place)
{
	struct cube_clone_counters before, after;
	struct cube_clone_rewind rw;
	uint64_t id = snap_of(self->dev, 16, data_8);
	unsigned char *m, *m2;
	int c, i;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 16 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (i = 0; i < 16; i++)
		fill(m, i, 0xe0 + i);
	EXPECT_DELTA(1, 1, 8, 16);

	ASSERT_OK(rewind_clone(c, UINT64_MAX, &rw));
	EXPECT_EQ(rw.kept, 16u);
	EXPECT_EQ(rw.dropped, 0u);
	ASSERT_OK(mem_counters(c, &before));
	EXPECT_EQ(before.private_pages, 16u);
	EXPECT_EQ(before.resets, 1u);
	EXPECT_DELTA(1, 1, 8, 16);
	/* data pages and holes read the snapshot again, without a fault */
	for (i = 0; i < 16; i++)
		EXPECT_TRUE(page_is(m, i, i < 8 ? i + 1 : 0));
	for (i = 0; i < 16; i++)
		fill(m, i, 0x55);
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_EQ(after.faults, before.faults);
	EXPECT_EQ(after.cow_faults, before.cow_faults);
	EXPECT_EQ(after.private_pages, 16u);
	/* every mapping sees the same memory */
	m2 = mem_map(c, 16 * PAGE);
	ASSERT_NE(m2, MAP_FAILED);
	EXPECT_TRUE(page_is(m2, 3, 0x55) && page_is(m2, 12, 0x55));

	/* a cap: the lowest offsets are kept, the rest dropped */
	ASSERT_OK(rewind_clone(c, 4, &rw));
	EXPECT_EQ(rw.kept, 4u);
	EXPECT_EQ(rw.dropped, 12u);
	EXPECT_DELTA(1, 1, 8, 4);
	for (i = 0; i < 16; i++)
		EXPECT_TRUE(page_is(m2, i, i < 8 ? i + 1 : 0));
	ASSERT_OK(mem_counters(c, &before));
	fill(m, 2, 0x22);			/* kept: no fault */
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_EQ(after.faults, before.faults);
	fill(m, 10, 0x10);			/* dropped: copy-on-write again */
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_EQ(after.cow_faults, before.cow_faults + 1);
	EXPECT_TRUE(page_is(m2, 2, 0x22) && page_is(m2, 10, 0x10));

	/* keeping none is a reset */
	ASSERT_OK(rewind_clone(c, 0, &rw));
	EXPECT_EQ(rw.kept, 0u);
	EXPECT_EQ(rw.dropped, 5u);
	EXPECT_DELTA(1, 1, 8, 0);
	EXPECT_TRUE(page_is(m, 2, 3) && page_is(m, 10, 0));
	ASSERT_OK(mem_counters(c, &after));
	EXPECT_EQ(after.resets, 3u);
	munmap(m2, 16 * PAGE);
	munmap(m, 16 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

/* Each bad argument fails with its errno and leaves the clone as it was. */
TEST_F(mem, rewind_bad_arguments_change_nothing)
{
	struct cube_clone_counters cnt;
	struct cube_clone_rewind rw = { .keep_pages = UINT64_MAX };
	uint64_t id = snap_of(self->dev, 8, data_8);
	void *ro;
	unsigned char *m;
	int c, i;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 8 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (i = 0; i < 8; i += 2)
		fill(m, i, 0xa0);
	ro = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(ro, MAP_FAILED);

	rw.flags = 1;
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_REWIND, &rw), EINVAL);
	rw.flags = 0;
	rw.reserved = 1;
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_REWIND, &rw), EINVAL);
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_REWIND, NULL), EFAULT);
	/* readable but not writable: the answer could not be given */
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_REWIND, ro), EFAULT);
	rw.reserved = 0;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_REWIND, &rw), ENOTTY);

	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 4u);
	EXPECT_EQ(cnt.resets, 0u);
	for (i = 0; i < 8; i++)
		EXPECT_TRUE(page_is(m, i, i % 2 ? i + 1 : 0xa0));
	EXPECT_DELTA(1, 1, 8, 4);
	munmap(ro, PAGE);
	munmap(m, 8 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

/* Rewinds over and over hold what the clone wrote once, no more. */
TEST_F(mem, many_rewinds_leak_nothing)
{
	struct cube_clone_counters cnt;
	struct cube_clone_rewind rw;
	uint64_t id = snap_of(self->dev, 64, data_64);
	unsigned char *m;
	int c, i, round;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 64 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (round = 0; round < 500; round++) {
		for (i = round % 3; i < 64; i += 3)
			fill(m, i, 0xf0);
		ASSERT_OK(mem_counters(c, &cnt));
		ASSERT_OK(rewind_clone(c, 32, &rw));
		ASSERT_EQ(rw.kept, cnt.private_pages < 32 ? cnt.private_pages : 32);
		ASSERT_EQ(rw.dropped, cnt.private_pages - rw.kept);
		ASSERT_OK(mem_counters(c, &cnt));
		ASSERT_EQ(cnt.private_pages, rw.kept);
	}
	EXPECT_EQ(rw.kept, 32u);
	EXPECT_EQ(cnt.resets, 500u);
	for (i = 0; i < 64; i++)
		EXPECT_TRUE(page_is(m, i, i + 1));
	EXPECT_DELTA(1, 1, 64, rw.kept);
	munmap(m, 64 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static int trim_clone(int c, struct cube_clone_trim *tr)
{
	memset(tr, 0, sizeof(*tr));
	return ioctl(c, CUBE_IOC_CLONE_TRIM, tr);
}

/*
 * A trim drops the private pages that hold the snapshot's contents again
 * (a data page written back as it was, a hole's page zeroed), and only
 * those; the clone reads the same before and after.
 */
TEST_F(mem, trim_gives_back_pages_equal_to_the_snapshot)
{
	struct cube_clone_counters cnt;
	struct cube_clone_trim tr;
	uint64_t id = snap_of(self->dev, 16, data_8);
	unsigned char *m;
	int c, i;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 16 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	fill(m, 0, 1);			/* as it was */
	fill(m, 1, 0x77);
	fill(m, 9, 0);			/* a hole, zeroed */
	fill(m, 10, 0x10);
	fill(m, 3, 0x55);		/* back as it was, one byte at a time */
	m[3 * PAGE + 100] = 4;
	fill(m, 3, 4);
	m[4 * PAGE + PAGE - 1] = 0;	/* one byte off */
	EXPECT_DELTA(1, 1, 8, 6);

	ASSERT_OK(trim_clone(c, &tr));
	EXPECT_EQ(tr.scanned, 6u);
	EXPECT_EQ(tr.dropped, 3u);
	EXPECT_DELTA(1, 1, 8, 3);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 3u);
	for (i = 0; i < 16; i++) {
		unsigned char want = i == 1 ? 0x77 : i == 10 ? 0x10 :
				     i < 8 ? i + 1 : 0;

		if (i == 4)
			EXPECT_TRUE(m[4 * PAGE] == 5 && m[5 * PAGE - 1] == 0);
		else
			EXPECT_TRUE(page_is(m, i, want));
	}
	/* a dropped page is copy-on-write again */
	fill(m, 0, 0x0f);
	EXPECT_TRUE(page_is(m, 0, 0x0f));
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 4u);
	/* nothing more to give back */
	ASSERT_OK(trim_clone(c, &tr));
	EXPECT_EQ(tr.scanned, 4u);
	EXPECT_EQ(tr.dropped, 0u);
	munmap(m, 16 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

/* Each bad argument fails with its errno and leaves the clone as it was. */
TEST_F(mem, trim_bad_arguments_change_nothing)
{
	struct cube_clone_trim tr = { 0 };
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 8, data_8);
	unsigned char *m;
	void *ro;
	int c;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 8 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	fill(m, 2, 3);			/* the snapshot's: a trim would drop it */
	ro = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(ro, MAP_FAILED);

	tr.flags = 1;
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_TRIM, &tr), EINVAL);
	tr.flags = 0;
	tr.reserved = 2;
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_TRIM, &tr), EINVAL);
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_TRIM, NULL), EFAULT);
	EXPECT_ERRNO(ioctl(c, CUBE_IOC_CLONE_TRIM, ro), EFAULT);
	tr.reserved = 0;
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_TRIM, &tr), ENOTTY);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.private_pages, 1u);
	EXPECT_DELTA(1, 1, 8, 1);
	munmap(ro, PAGE);
	munmap(m, 8 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static int merge_clone(int c, uint64_t group, struct cube_clone_merge *m)
{
	memset(m, 0, sizeof(*m));
	m->group = group;
	return ioctl(c, CUBE_IOC_CLONE_MERGE, m);
}

#define EXPECT_MERGE(c, group, n_scanned, n_merged, n_promoted) do {	\
	struct cube_clone_merge m_;					\
	ASSERT_OK(merge_clone(c, group, &m_));				\
	EXPECT_EQ(m_.scanned, (uint64_t)(n_scanned));			\
	EXPECT_EQ(m_.merged, (uint64_t)(n_merged));			\
	EXPECT_EQ(m_.promoted, (uint64_t)(n_promoted));			\
} while (0)

/*
 * Clones of one snapshot in one group share the pages they hold with the
 * same bytes at the same offset: the second clone that offers them gives
 * its page to the group, the others' are freed.  Nothing reads
 * differently, a write (also through get_user_pages()) copies again and
 * leaves the siblings as they were, another group or another snapshot
 * shares nothing, a snapshot of a clone keeps the shared bytes, a reset
 * reads the snapshot again, and the group's pages go with its last clone.
 */
TEST_F(mem, merge_shares_identical_pages_within_a_group)
{
	uint64_t id = snap_of(self->dev, 16, data_8), other, fork_id = 0;
	unsigned char *m[5], *f, v[PAGE];
	struct cube_snapshot_info info;
	struct cube_clone_counters cnt;
	int c[5], cf, memfd, i;

	ASSERT_NE(id, 0);
	other = snap_of(self->dev, 16, data_8);
	ASSERT_NE(other, 0);
	/* a, b, c in group 1, d in group 2, e: group 1 of another snapshot */
	for (i = 0; i < 5; i++) {
		c[i] = mem_clone(self->dev, i == 4 ? other : id, 0);
		ASSERT_GE(c[i], 0);
		m[i] = mem_map(c[i], 16 * PAGE);
		ASSERT_NE(m[i], MAP_FAILED);
		fill(m[i], 1, 0x11);		/* over the snapshot's data */
		fill(m[i], 9, 0x99);		/* in a hole */
		fill(m[i], 2, i == 1 ? 0xb2 : 0xa2);
	}
	EXPECT_DELTA(2, 5, 16, 15);

	EXPECT_MERGE(c[0], 1, 3, 0, 0);		/* offered */
	EXPECT_MERGE(c[1], 1, 3, 0, 2);		/* 1 and 9 become the group's */
	EXPECT_DELTA(2, 5, 18, 13);
	EXPECT_MERGE(c[2], 1, 3, 2, 0);		/* its 1 and 9 freed */
	EXPECT_MERGE(c[3], 2, 3, 0, 0);
	EXPECT_MERGE(c[4], 1, 3, 0, 0);
	EXPECT_DELTA(2, 5, 18, 11);
	/* a's 1 and 9 are freed; its 2 matches c's, offered last */
	EXPECT_MERGE(c[0], 1, 3, 2, 1);
	EXPECT_DELTA(2, 5, 19, 8);
	EXPECT_MERGE(c[2], 1, 1, 1, 0);
	EXPECT_DELTA(2, 5, 19, 7);
	ASSERT_OK(mem_counters(c[2], &cnt));
	EXPECT_EQ(cnt.private_pages, 0u);
	ASSERT_OK(mem_counters(c[1], &cnt));
	EXPECT_EQ(cnt.private_pages, 1u);

	for (i = 0; i < 5; i++) {
		EXPECT_TRUE(page_is(m[i], 0, 1));
		EXPECT_TRUE(page_is(m[i], 1, 0x11));
		EXPECT_TRUE(page_is(m[i], 2, i == 1 ? 0xb2 : 0xa2));
		EXPECT_TRUE(page_is(m[i], 9, 0x99));
		EXPECT_TRUE(page_is(m[i], 10, 0));
	}

	/* a write copies; the siblings keep the shared bytes */
	m[2][PAGE + 7] = 0x12;
	EXPECT_EQ(m[2][PAGE + 7], 0x12);
	EXPECT_TRUE(page_is(m[0], 1, 0x11));
	EXPECT_TRUE(page_is(m[1], 1, 0x11));
	memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_GE(memfd, 0);
	memset(v, 0x9a, sizeof(v));
	ASSERT_EQ(pwrite(memfd, v, PAGE, (off_t)(uintptr_t)(m[1] + 9 * PAGE)),
		  (ssize_t)PAGE);
	close(memfd);
	EXPECT_TRUE(page_is(m[1], 9, 0x9a));
	EXPECT_TRUE(page_is(m[0], 9, 0x99));
	EXPECT_TRUE(page_is(m[2], 9, 0x99));
	EXPECT_DELTA(2, 5, 19, 9);
	/* written back as the group has it: merged again */
	fill(m[1], 9, 0x99);
	EXPECT_MERGE(c[1], 1, 2, 1, 0);

	/* a snapshot of a clone holds the bytes it shares */
	ASSERT_OK(mem_snapshot_clone(self->dev, c[0], &fork_id));
	ASSERT_OK(mem_snapshot_info(self->dev, fork_id, &info));
	EXPECT_EQ(info.pages, 3u);
	cf = mem_clone(self->dev, fork_id, 0);
	ASSERT_GE(cf, 0);
	f = mem_map(cf, 16 * PAGE);
	ASSERT_NE(f, MAP_FAILED);
	EXPECT_TRUE(page_is(f, 1, 0x11));
	EXPECT_TRUE(page_is(f, 2, 0xa2));
	EXPECT_TRUE(page_is(f, 9, 0x99));
	munmap(f, 16 * PAGE);
	close(cf);
	ASSERT_OK(mem_snapshot_delete(self->dev, fork_id));

	/* a reset reads the snapshot again, the siblings keep theirs */
	ASSERT_OK(ioctl(c[0], CUBE_IOC_CLONE_RESET));
	EXPECT_TRUE(page_is(m[0], 1, 2));
	EXPECT_TRUE(page_is(m[0], 2, 3));
	EXPECT_TRUE(page_is(m[0], 9, 0));
	EXPECT_TRUE(page_is(m[2], 2, 0xa2));
	EXPECT_TRUE(page_is(m[1], 1, 0x11));
	ASSERT_OK(mem_counters(c[0], &cnt));
	EXPECT_EQ(cnt.private_pages, 0u);

	/* the group's 3 pages live while one of its clones does */
	EXPECT_DELTA(2, 5, 19, 8);
	for (i = 0; i < 5; i++) {
		if (i == 2)
			continue;
		munmap(m[i], 16 * PAGE);
		close(c[i]);
	}
	EXPECT_TRUE(page_is(m[2], 9, 0x99));
	EXPECT_DELTA(2, 1, 19, 1);
	munmap(m[2], 16 * PAGE);
	close(c[2]);
	EXPECT_DELTA(2, 0, 16, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	ASSERT_OK(mem_snapshot_delete(self->dev, other));
	EXPECT_DELTA(0, 0, 0, 0);
}

/* Each bad argument fails with its errno and leaves the clone as it was. */
TEST_F(mem, merge_bad_arguments_change_nothing)
{
	struct cube_clone_merge mg = { 0 };
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 8, data_8);
	unsigned char *m[2];
	int c[2], i;
	void *ro;

	ASSERT_NE(id, 0);
	for (i = 0; i < 2; i++) {
		c[i] = mem_clone(self->dev, id, 0);
		ASSERT_GE(c[i], 0);
		m[i] = mem_map(c[i], 8 * PAGE);
		ASSERT_NE(m[i], MAP_FAILED);
		fill(m[i], 2, 0x33);
	}
	/* a good argument that cannot be written back */
	ro = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(ro, MAP_FAILED);
	((struct cube_clone_merge *)ro)->group = 1;
	ASSERT_OK(mprotect(ro, PAGE, PROT_READ));

	EXPECT_ERRNO(ioctl(c[1], CUBE_IOC_CLONE_MERGE, &mg), EINVAL);
	mg.group = 1;
	mg.flags = 1;
	EXPECT_ERRNO(ioctl(c[1], CUBE_IOC_CLONE_MERGE, &mg), EINVAL);
	mg.flags = 0;
	mg.reserved = 2;
	EXPECT_ERRNO(ioctl(c[1], CUBE_IOC_CLONE_MERGE, &mg), EINVAL);
	mg.reserved = 0;
	EXPECT_ERRNO(ioctl(c[1], CUBE_IOC_CLONE_MERGE, NULL), EFAULT);
	EXPECT_ERRNO(ioctl(c[1], CUBE_IOC_CLONE_MERGE, ro), EFAULT);
	EXPECT_ERRNO(ioctl(self->dev, CUBE_IOC_CLONE_MERGE, &mg), ENOTTY);
	/* the first call fixes the group */
	EXPECT_MERGE(c[0], 1, 1, 0, 0);
	EXPECT_ERRNO(merge_clone(c[0], 2, &mg), EBUSY);
	EXPECT_EQ(mg.scanned, 0u);
	/* none of the failed calls joined c[1] to a group or offered a page */
	EXPECT_MERGE(c[1], 2, 1, 0, 0);
	ASSERT_OK(mem_counters(c[1], &cnt));
	EXPECT_EQ(cnt.private_pages, 1u);
	EXPECT_MERGE(c[0], 1, 1, 0, 0);
	EXPECT_DELTA(1, 2, 8, 2);
	munmap(ro, PAGE);
	for (i = 0; i < 2; i++) {
		munmap(m[i], 8 * PAGE);
		close(c[i]);
	}
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

static uint64_t read_all(int c, size_t n, int *ok)
{
	struct cube_clone_counters cnt;
	unsigned char *m = mem_map(c, n * PAGE);
	size_t i;

	*ok = m != MAP_FAILED;
	if (!*ok)
		return 0;
	for (i = 0; i < 64; i++)
		*ok &= page_is(m, i, i + 1);
	for (i = 64; i < n; i += 16)
		*ok &= page_is(m, i, 0);
	munmap(m, n * PAGE);
	if (mem_counters(c, &cnt))
		*ok = 0;
	return cnt.faults;
}

TEST_F(mem, prefault_and_fault_around)
{
	struct cube_clone_counters cnt;
	uint64_t id = snap_of(self->dev, 256, data_64), faults;
	int c, ok;

	ASSERT_NE(id, 0);
	/* a recording clone maps nothing ahead: a fault per page read */
	c = mem_clone(self->dev, id, CUBE_CLONE_F_RECORD);
	ASSERT_GE(c, 0);
	faults = read_all(c, 256, &ok);
	EXPECT_TRUE(ok);
	EXPECT_EQ(faults, 64u + 12u);
	close(c);

	/* fault-around: one fault per 16 data pages; holes fault alone */
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	faults = read_all(c, 256, &ok);
	EXPECT_TRUE(ok);
	EXPECT_EQ(faults, 4u + 12u);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.around, 60u);
	EXPECT_EQ(cnt.prefaulted, 0u);
	close(c);

	/* prefault: the first fault maps the working set (76 pages) */
	c = mem_clone(self->dev, id, CUBE_CLONE_F_PREFAULT);
	ASSERT_GE(c, 0);
	faults = read_all(c, 256, &ok);
	EXPECT_TRUE(ok);
	EXPECT_EQ(faults, 1u);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.prefaulted, 76u);
	close(c);

	EXPECT_DELTA(1, 0, 64, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, record_working_set)
{
	struct cube_clone_counters cnt;
	struct cube_snapshot_info info;
	uint64_t id = snap_of(self->dev, 256, data_64);
	unsigned char *m;
	int c, i;

	ASSERT_NE(id, 0);
	/* without a working set, prefault maps every data page */
	c = mem_clone(self->dev, id, CUBE_CLONE_F_PREFAULT);
	ASSERT_GE(c, 0);
	m = mem_map(c, 256 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_TRUE(page_is(m, 63, 64));
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.prefaulted, 64u);
	munmap(m, 256 * PAGE);
	close(c);

	/* record: the pages touched become the working set */
	c = mem_clone(self->dev, id, CUBE_CLONE_F_RECORD);
	ASSERT_GE(c, 0);
	m = mem_map(c, 256 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	for (i = 0; i < 10; i++)
		EXPECT_TRUE(page_is(m, i * 3, i * 3 + 1));
	fill(m, 200, 0x20);		/* a written hole counts */
	munmap(m, 256 * PAGE);
	close(c);
	ASSERT_OK(mem_snapshot_info(self->dev, id, &info));
	EXPECT_EQ(info.ws_pages, 11u);

	c = mem_clone(self->dev, id, CUBE_CLONE_F_PREFAULT);
	ASSERT_GE(c, 0);
	m = mem_map(c, 256 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_TRUE(page_is(m, 0, 1));	/* the first fault maps the set */
	for (i = 0; i < 10; i++)
		EXPECT_TRUE(page_is(m, i * 3, i * 3 + 1));
	EXPECT_TRUE(page_is(m, 200, 0));
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.prefaulted, 11u);
	EXPECT_EQ(cnt.faults, 1u);
	/* the page the recording wrote was copied ahead: its write is one
	 * fault that copies nothing */
	EXPECT_EQ(cnt.private_pages, 1u);
	EXPECT_EQ(cnt.cow_faults, 1u);
	/* ... and mapped writable: its write costs no fault at all */
	fill(m, 200, 0x44);
	ASSERT_OK(mem_counters(c, &cnt));
	EXPECT_EQ(cnt.faults, 1u);
	EXPECT_EQ(cnt.cow_faults, 1u);
	EXPECT_EQ(cnt.private_pages, 1u);
	/* prefaulted pages are still copy-on-write */
	fill(m, 3, 0x33);
	EXPECT_TRUE(page_is(m, 3, 0x33));
	munmap(m, 256 * PAGE);
	close(c);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	m = mem_map(c, 256 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	EXPECT_TRUE(page_is(m, 3, 4));
	munmap(m, 256 * PAGE);
	close(c);

	EXPECT_DELTA(1, 0, 64, 0);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_F(mem, delete_is_deferred_while_cloned)
{
	struct cube_snapshot_info info;
	uint64_t id = snap_of(self->dev, 8, data_8);
	unsigned char *m;
	int c;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	ASSERT_OK(mem_snapshot_info(self->dev, id, &info));
	EXPECT_EQ(info.clones, 1u);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
	EXPECT_ERRNO(mem_snapshot_delete(self->dev, id), ENOENT);
	EXPECT_DELTA(1, 1, 8, 0);	/* still there for the clone */
	m = mem_map(c, 8 * PAGE);
	ASSERT_NE(m, MAP_FAILED);
	close(c);			/* the mapping keeps the clone */
	EXPECT_DELTA(1, 1, 8, 0);
	EXPECT_TRUE(page_is(m, 4, 5));
	fill(m, 4, 0x44);
	EXPECT_DELTA(1, 1, 8, 1);
	munmap(m, 8 * PAGE);
	EXPECT_DELTA(0, 0, 0, 0);
}

TEST_MAIN()
