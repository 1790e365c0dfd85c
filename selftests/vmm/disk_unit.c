// SPDX-License-Identifier: GPL-2.0
/*
 * disk_unit: cube_disk_copy() (lib/cube_disk.c), the copy of a sandbox's
 * writable disk that snapshots, checkpoints and rollbacks make.  A copy
 * must be the same bytes, cost about what the source holds (holes stay
 * holes), replace what the destination held and refuse bad fds.  Native,
 * in /tmp (FICLONE works there only on XFS or btrfs: elsewhere this is
 * the data-range path).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cube_disk.h"
#include "cube_test.h"

#define MIB		(1ULL << 20)

static int tmp_file(char *path, size_t len, const char *tag)
{
	snprintf(path, len, "/tmp/disk_unit.%s.%d", tag, getpid());
	unlink(path);
	return open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

/* len bytes of a pattern that differs at each offset, seeded */
static int put_pattern(int fd, uint64_t off, size_t len, unsigned int seed)
{
	uint8_t *b = malloc(len);
	size_t i;
	int ret;

	if (!b)
		return -1;
	for (i = 0; i < len; i++)
		b[i] = (uint8_t)((off + i) * 131 + seed + ((off + i) >> 12));
	ret = pwrite(fd, b, len, off) == (ssize_t)len ? 0 : -1;
	free(b);
	return ret;
}

/* 0 when the first size bytes of a and b are equal and both are size long */
static int same_bytes(int a, int b, uint64_t size)
{
	static uint8_t ba[1 << 20], bb[1 << 20];
	struct stat sa, sb;
	uint64_t off;

	if (fstat(a, &sa) || fstat(b, &sb) || (uint64_t)sa.st_size != size ||
	    (uint64_t)sb.st_size != size)
		return -1;
	for (off = 0; off < size; off += sizeof(ba)) {
		size_t n = size - off < sizeof(ba) ? size - off : sizeof(ba);

		if (pread(a, ba, n, off) != (ssize_t)n ||
		    pread(b, bb, n, off) != (ssize_t)n || memcmp(ba, bb, n))
			return -1;
	}
	return 0;
}

static bool is_zero(int fd, uint64_t off, size_t len)
{
	uint8_t *b = malloc(len);
	bool z = b && pread(fd, b, len, off) == (ssize_t)len;
	size_t i;

	for (i = 0; z && i < len; i++)
		z = !b[i];
	free(b);
	return z;
}

TEST(sparse_copy_is_equal_and_stays_sparse)
{
	const uint64_t size = 64 * MIB;
	char sp[96], dp[96];
	struct stat ss, ds;
	int src, dst;

	src = tmp_file(sp, sizeof(sp), "src");
	dst = tmp_file(dp, sizeof(dp), "dst");
	ASSERT_OK(src);
	ASSERT_OK(dst);
	ASSERT_OK(ftruncate(src, size));
	/* data at the start, unaligned in the middle, a run, the very end */
	ASSERT_OK(put_pattern(src, 0, 4096, 1));
	ASSERT_OK(put_pattern(src, MIB + 123, 10000, 2));
	ASSERT_OK(put_pattern(src, 17 * MIB, MIB, 3));
	ASSERT_OK(put_pattern(src, 40 * MIB + 4096, 3 * 4096, 4));
	ASSERT_OK(put_pattern(src, size - 4096, 4096, 5));
	EXPECT_EQ(cube_disk_copy(src, dst, size), 0);
	EXPECT_EQ(same_bytes(src, dst, size), 0);
	ASSERT_OK(fstat(src, &ss));
	ASSERT_OK(fstat(dst, &ds));
	TH_LOG("source %lld blocks, copy %lld blocks (of %llu if full)",
	       (long long)ss.st_blocks, (long long)ds.st_blocks,
	       (unsigned long long)(size / 512));
	/* what the source holds, give or take a few blocks of rounding */
	EXPECT_LE(ds.st_blocks, ss.st_blocks + 64);
	EXPECT_LT(ds.st_blocks, (blkcnt_t)(size / 512 / 8));
	close(src);
	close(dst);
	unlink(sp);
	unlink(dp);
}

TEST(copy_replaces_the_destination_and_grows_to_size)
{
	char sp[96], dp[96];
	int src, dst;

	src = tmp_file(sp, sizeof(sp), "src2");
	dst = tmp_file(dp, sizeof(dp), "dst2");
	ASSERT_OK(src);
	ASSERT_OK(dst);
	ASSERT_OK(ftruncate(src, 2 * MIB));
	ASSERT_OK(put_pattern(src, 8192, 8192, 7));
	/* the destination held other data, some past the source's end */
	ASSERT_OK(ftruncate(dst, 8 * MIB));
	ASSERT_OK(put_pattern(dst, 0, 65536, 9));
	ASSERT_OK(put_pattern(dst, 3 * MIB, 65536, 9));
	/* a rollback onto a larger live disk: the rest reads zero */
	EXPECT_EQ(cube_disk_copy(src, dst, 4 * MIB), 0);
	{
		struct stat st;
		uint8_t a[8192], b[8192];

		ASSERT_OK(fstat(dst, &st));
		EXPECT_EQ(st.st_size, (off_t)(4 * MIB));
		EXPECT_TRUE(is_zero(dst, 0, 8192));
		ASSERT_EQ(pread(src, a, sizeof(a), 8192), (ssize_t)sizeof(a));
		ASSERT_EQ(pread(dst, b, sizeof(b), 8192), (ssize_t)sizeof(b));
		EXPECT_EQ(memcmp(a, b, sizeof(a)), 0);
		EXPECT_TRUE(is_zero(dst, 16384, 2 * MIB - 16384));
		EXPECT_TRUE(is_zero(dst, 2 * MIB, 2 * MIB));
	}
	/* and a copy of a shorter size ends there */
	EXPECT_EQ(cube_disk_copy(src, dst, MIB), 0);
	{
		struct stat st;

		ASSERT_OK(fstat(dst, &st));
		EXPECT_EQ(st.st_size, (off_t)MIB);
	}
	close(src);
	close(dst);
	unlink(sp);
	unlink(dp);
}

TEST(empty_source_gives_an_all_hole_copy)
{
	char sp[96], dp[96];
	struct stat st;
	int src, dst;

	src = tmp_file(sp, sizeof(sp), "src3");
	dst = tmp_file(dp, sizeof(dp), "dst3");
	ASSERT_OK(src);
	ASSERT_OK(dst);
	ASSERT_OK(ftruncate(src, 16 * MIB));
	EXPECT_EQ(cube_disk_copy(src, dst, 16 * MIB), 0);
	ASSERT_OK(fstat(dst, &st));
	EXPECT_EQ(st.st_size, (off_t)(16 * MIB));
	EXPECT_LE(st.st_blocks, 8);
	close(src);
	close(dst);
	unlink(sp);
	unlink(dp);
}

TEST(bad_fds_are_refused)
{
	char sp[96];
	int src, closed, dir;

	src = tmp_file(sp, sizeof(sp), "src4");
	ASSERT_OK(src);
	ASSERT_OK(ftruncate(src, MIB));
	closed = dup(src);
	ASSERT_OK(closed);
	close(closed);
	EXPECT_EQ(cube_disk_copy(-1, src, MIB), -EBADF);
	EXPECT_EQ(cube_disk_copy(src, -1, MIB), -EBADF);
	EXPECT_EQ(cube_disk_copy(closed, src, MIB), -EBADF);
	EXPECT_EQ(cube_disk_copy(src, closed, MIB), -EBADF);
	dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_OK(dir);
	EXPECT_EQ(cube_disk_copy(dir, src, MIB), -EINVAL);
	EXPECT_EQ(cube_disk_copy(src, dir, MIB), -EINVAL);
	close(dir);
	/* the source was left alone by every refusal */
	{
		struct stat st;

		ASSERT_OK(fstat(src, &st));
		EXPECT_EQ(st.st_size, (off_t)MIB);
	}
	close(src);
	unlink(sp);
}

TEST_MAIN()
