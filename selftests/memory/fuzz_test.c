// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: random snapshot and clone ioctls for a bounded time.
 *
 * Random command numbers of the 0x30-0x4f range (random direction and size
 * bits too) with random argument bytes, seeded with valid ids, fds and
 * addresses now and then, on /dev/cube and on clone fds; random mmap,
 * touches, madvise, mprotect and munmap of clone fds.  Afterwards every object it made is
 * deleted and the module's counters must be back where they were.
 *
 * CUBE_FUZZ_SECONDS (default 10) bounds the run, CUBE_FUZZ_SEED seeds it.
 */
#include <time.h>

#include "cube_test.h"
#include "mem_util.h"

#define MAX_FDS		16
#define MAX_MAPS	16

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

struct fuzz {
	int dev;
	int fds[MAX_FDS];		/* clone fds */
	int memfd;
	struct { unsigned char *p; size_t len; } maps[MAX_MAPS];
	uint64_t ids[8];
	unsigned char *region;
	size_t region_len;
	unsigned long calls, ok;
};

static uint64_t interesting(struct fuzz *f)
{
	switch (rnd() % 12) {
	case 0: return f->ids[rnd() % 8];
	case 1: return f->fds[rnd() % MAX_FDS];
	case 2: return f->memfd;
	case 3: return (uintptr_t)f->region + (rnd() % 8) * PAGE;
	case 4: return (rnd() % 16) * PAGE;
	case 5: return -1;
	case 6: return 0;
	case 7: return 1ULL << (rnd() % 64);
	case 8: return CUBE_SNAPSHOT_SRC_MEMFD + rnd() % 3;
	default: return rnd();
	}
}

static void add_fd(struct fuzz *f, int fd)
{
	int i = rnd() % MAX_FDS;

	if (f->fds[i] >= 0)
		close(f->fds[i]);
	f->fds[i] = fd;
}

static void fuzz_ioctl(struct fuzz *f)
{
	uint64_t arg[16];
	unsigned int nr, dir, size, cmd;
	int fd, i, ret;

	for (i = 0; i < 16; i++)
		arg[i] = rnd() % 3 ? interesting(f) : 0;
	nr = 0x30 + rnd() % 0x20;
	if (rnd() % 4) {
		/* mostly a real command: the argument checks get exercised */
		static const unsigned int cmds[] = {
			CUBE_IOC_SNAPSHOT_CREATE, CUBE_IOC_SNAPSHOT_DELETE,
			CUBE_IOC_SNAPSHOT_INFO, CUBE_IOC_CLONE_CREATE,
			CUBE_IOC_MEM_STATS, CUBE_IOC_CLONE_RESET,
			CUBE_IOC_CLONE_COUNTERS, CUBE_IOC_CLONE_REWIND,
			CUBE_IOC_CLONE_TRIM, CUBE_IOC_CLONE_MERGE,
		};
		cmd = cmds[rnd() % (sizeof(cmds) / sizeof(cmds[0]))];
	} else {
		dir = rnd() % 4;
		size = rnd() % 128;
		cmd = _IOC(dir, CUBE_IOCTL_MAGIC, nr, size);
	}
	fd = rnd() % 2 ? f->dev : f->fds[rnd() % MAX_FDS];
	if (fd < 0)
		fd = f->dev;
	ret = ioctl(fd, cmd, rnd() % 16 ? (void *)arg : (void *)rnd());
	f->calls++;
	if (ret < 0)
		return;
	f->ok++;
	if (cmd == CUBE_IOC_CLONE_CREATE && fd == f->dev)
		add_fd(f, ret);
	if (cmd == CUBE_IOC_SNAPSHOT_CREATE && fd == f->dev)
		f->ids[rnd() % 8] = arg[5];	/* the id field */
}

static void fuzz_map(struct fuzz *f)
{
	int i = rnd() % MAX_MAPS, fd = f->fds[rnd() % MAX_FDS];
	size_t len, off;

	if (f->maps[i].p) {
		if (rnd() % 2) {
			munmap(f->maps[i].p, f->maps[i].len);
			f->maps[i].p = NULL;
		}
		return;
	}
	if (fd < 0)
		return;
	len = (1 + rnd() % 32) * PAGE;
	off = (rnd() % 8) * PAGE;
	f->maps[i].p = mmap(NULL, len, rnd() % 4 ? PROT_READ | PROT_WRITE :
			    PROT_READ, rnd() % 8 ? MAP_SHARED : MAP_PRIVATE,
			    fd, off);
	if (f->maps[i].p == MAP_FAILED)
		f->maps[i].p = NULL;
	else
		f->maps[i].len = len;
}

static void fuzz_touch(struct fuzz *f)
{
	int i = rnd() % MAX_MAPS;
	unsigned char *p = f->maps[i].p;
	size_t at;
	int prot_ok;

	if (!p)
		return;
	at = (rnd() % (f->maps[i].len / PAGE)) * PAGE + rnd() % PAGE;
	/* writing a read-only mapping would fault: only read those */
	prot_ok = rnd() % 2;
	if (prot_ok && !mprotect(p, f->maps[i].len, PROT_READ | PROT_WRITE))
		p[at] = (unsigned char)rnd();
	else
		(void)*(volatile unsigned char *)(p + at);
}

static void fuzz_madvise(struct fuzz *f)
{
	static const int advice[] = {
		MADV_DONTNEED, MADV_COLD, MADV_PAGEOUT, MADV_WILLNEED,
		MADV_POPULATE_READ, MADV_POPULATE_WRITE, MADV_REMOVE,
		MADV_DONTFORK, MADV_DOFORK, MADV_MERGEABLE, MADV_HUGEPAGE,
	};
	int i = rnd() % MAX_MAPS;
	size_t pages, first, n;

	if (!f->maps[i].p)
		return;
	pages = f->maps[i].len / PAGE;
	first = rnd() % pages;
	n = 1 + rnd() % (pages - first);
	if (rnd() % 4 == 0)
		mprotect(f->maps[i].p + first * PAGE, n * PAGE,
			 rnd() % 2 ? PROT_READ : PROT_READ | PROT_WRITE);
	else
		madvise(f->maps[i].p + first * PAGE, n * PAGE,
			advice[rnd() % (sizeof(advice) / sizeof(advice[0]))]);
}

static void snapshot_seed(struct fuzz *f)
{
	size_t i;

	for (i = 0; i < f->region_len; i += 3 * PAGE)
		f->region[i] = (unsigned char)i | 1;
	for (i = 0; i < 4; i++)
		mem_snapshot_user(f->dev, f->region, f->region_len, &f->ids[i]);
	mem_snapshot_memfd(f->dev, f->memfd, 0, 16 * PAGE, &f->ids[4]);
	for (i = 0; i < 4; i++)
		add_fd(f, mem_clone(f->dev, f->ids[i % 4], i & 3));
}

TEST(fuzz_ioctls_and_mappings)
{
	const char *env = getenv("CUBE_FUZZ_SECONDS");
	int seconds = env && atoi(env) > 0 ? atoi(env) : 10;
	struct cube_mem_stats base, st;
	uint64_t first = 0, last = 0, id;
	struct fuzz f;
	time_t end;
	int i;

	memset(&f, 0, sizeof(f));
	f.dev = mem_open_dev();
	if (f.dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	env = getenv("CUBE_FUZZ_SEED");
	rnd_state = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	if (!rnd_state)
		rnd_state = 1;
	TH_LOG("seed %llu, %d s", (unsigned long long)rnd_state, seconds);
	ASSERT_OK(mem_stats(f.dev, &base));
	for (i = 0; i < MAX_FDS; i++)
		f.fds[i] = -1;
	f.memfd = memfd_create("fuzz", MFD_CLOEXEC);
	ASSERT_GE(f.memfd, 0);
	ASSERT_OK(ftruncate(f.memfd, 16 * PAGE));
	ASSERT_EQ(pwrite(f.memfd, "data", 4, 3 * PAGE), 4);
	f.region_len = 16 * PAGE;
	f.region = mem_region(f.region_len);
	ASSERT_NE(f.region, MAP_FAILED);
	ASSERT_OK(mem_snapshot_user(f.dev, f.region, PAGE, &first));
	ASSERT_OK(mem_snapshot_delete(f.dev, first));
	snapshot_seed(&f);

	end = time(NULL) + seconds;
	while (time(NULL) < end) {
		for (i = 0; i < 64; i++) {
			switch (rnd() % 9) {
			case 0:
				fuzz_map(&f);
				break;
			case 8:
				fuzz_madvise(&f);
				break;
			case 1:
			case 2:
				fuzz_touch(&f);
				break;
			default:
				fuzz_ioctl(&f);
			}
		}
	}
	TH_LOG("%lu calls, %lu succeeded", f.calls, f.ok);

	for (i = 0; i < MAX_MAPS; i++)
		if (f.maps[i].p)
			munmap(f.maps[i].p, f.maps[i].len);
	for (i = 0; i < MAX_FDS; i++)
		if (f.fds[i] >= 0)
			close(f.fds[i]);
	ASSERT_OK(mem_snapshot_user(f.dev, f.region, PAGE, &last));
	for (id = first + 1; id <= last; id++)
		mem_snapshot_delete(f.dev, id);
	close(f.memfd);
	ASSERT_OK(mem_stats(f.dev, &st));
	EXPECT_EQ(st.snapshots, base.snapshots);
	EXPECT_EQ(st.clones, base.clones);
	EXPECT_EQ(st.shared_pages, base.shared_pages);
	EXPECT_EQ(st.private_pages, base.private_pages);
	close(f.dev);
}

TEST_MAIN()
