// SPDX-License-Identifier: GPL-2.0
/*
 * disk_store_test: the host side of sandboxes' writable disks
 * (lib/cube_sandbox_disk.c), natively.  A disk is a sparse copy of its
 * snapshot's disk.img, at least that large; a disk nobody holds is swept by
 * the next create; the host-wide limit counts what live disks may grow to
 * and refuses a disk that does not fit, leaving nothing; bad snapshots and
 * sizes are refused and leave nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cube_runtime.h"
#include "cube_sandbox_disk.h"
#include "cube_test.h"

#define MiB	(1ULL << 20)

FIXTURE(store) {
	char dir[64];
	char snap[128];
	char disks[128];
};

static void write_at(const char *path, off_t off, const char *s)
{
	int fd = open(path, O_WRONLY);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(pwrite(fd, s, strlen(s), off), (ssize_t)strlen(s));
	close(fd);
}

static int count_disks(const char *dir)
{
	char cmd[256];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null | grep -c '\\.img$'",
		 dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

FIXTURE_SETUP(store)
{
	char path[256];
	int fd;

	strcpy(self->dir, "/tmp/disk_store_test.XXXXXX");
	ASSERT_TRUE(mkdtemp(self->dir) != NULL);
	setenv("CUBE_STATE_DIR", self->dir, 1);
	unsetenv("CUBE_DISK_LIMIT");
	snprintf(self->snap, sizeof(self->snap), "%s/snap", self->dir);
	snprintf(self->disks, sizeof(self->disks), "%s/disks", self->dir);
	ASSERT_EQ(mkdir(self->snap, 0700), 0);
	/* a 32 MiB disk with data at its start, middle and end */
	snprintf(path, sizeof(path), "%s/disk.img", self->snap);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(ftruncate(fd, 32 * MiB), 0);
	close(fd);
	write_at(path, 0, "superblock");
	write_at(path, 17 * MiB + 5, "middle");
	write_at(path, 32 * MiB - 4, "end!");
}

FIXTURE_TEARDOWN(store)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	EXPECT_EQ(system(cmd), 0);
}

static void expect_at(int fd, off_t off, const char *s)
{
	char buf[32] = "";

	ASSERT_EQ(pread(fd, buf, strlen(s), off), (ssize_t)strlen(s));
	EXPECT_EQ(memcmp(buf, s, strlen(s)), 0);
}

TEST_F(store, a_disk_is_a_sparse_copy_at_least_the_snapshots_size)
{
	char err[CUBE_ERR_MAX] = "";
	uint64_t size = 0;
	struct stat st;
	int fd;

	fd = cube_sandbox_disk_create(7, self->snap, 0, &size, err);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(size, 32 * MiB);
	ASSERT_EQ(fstat(fd, &st), 0);
	EXPECT_EQ((uint64_t)st.st_size, 32 * MiB);
	/* holes stay holes: far below the disk's size */
	EXPECT_LT((uint64_t)st.st_blocks * 512, 4 * MiB);
	expect_at(fd, 0, "superblock");
	expect_at(fd, 17 * MiB + 5, "middle");
	expect_at(fd, 32 * MiB - 4, "end!");
	EXPECT_EQ(cube_sandbox_disk_size(7), 32 * MiB);
	cube_sandbox_disk_remove(7, fd);
	EXPECT_EQ(cube_sandbox_disk_size(7), 0);

	/* larger: extended with a hole, the data where it was */
	fd = cube_sandbox_disk_create(8, self->snap, 64 * MiB, &size, err);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(size, 64 * MiB);
	expect_at(fd, 32 * MiB - 4, "end!");
	cube_sandbox_disk_remove(8, fd);
	EXPECT_EQ(count_disks(self->disks), 0);
}

TEST_F(store, bad_sizes_and_snapshots_leave_nothing)
{
	char err[CUBE_ERR_MAX] = "", path[256];
	uint64_t size = 0;

	EXPECT_EQ(cube_sandbox_disk_create(7, self->snap, 16 * MiB, &size, err),
		  -EINVAL);
	EXPECT_TRUE(strstr(err, "at least") != NULL);
	EXPECT_EQ(cube_sandbox_disk_create(7, self->dir, 0, &size, err),
		  -ENOENT);
	/* a disk.img that is no disk image: a symlink, an odd size */
	snprintf(path, sizeof(path), "%s/disk.img", self->snap);
	ASSERT_EQ(truncate(path, 32 * MiB + 1), 0);
	EXPECT_EQ(cube_sandbox_disk_create(7, self->snap, 0, &size, err),
		  -EINVAL);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(symlink("/etc/passwd", path), 0);
	EXPECT_LT(cube_sandbox_disk_create(7, self->snap, 0, &size, err), 0);
	EXPECT_EQ(count_disks(self->disks), 0);
	EXPECT_EQ(cube_sandbox_disk_size(7), 0);
}

TEST_F(store, the_host_limit_counts_live_disks_and_sweeps_dead_ones)
{
	char err[CUBE_ERR_MAX] = "", path[256];
	uint64_t size = 0;
	int a, b, fd;

	setenv("CUBE_DISK_LIMIT", "100M", 1);
	a = cube_sandbox_disk_create(1, self->snap, 0, &size, err);
	ASSERT_GE(a, 0);
	b = cube_sandbox_disk_create(2, self->snap, 48 * MiB, &size, err);
	ASSERT_GE(b, 0);
	/* 32 + 48 live: another 32 does not fit in 100 */
	EXPECT_EQ(cube_sandbox_disk_create(3, self->snap, 0, &size, err),
		  -ENOSPC);
	EXPECT_TRUE(strstr(err, "no room") != NULL);
	EXPECT_EQ(count_disks(self->disks), 2);
	/*
	 * Disk 2's holders die without removing it (its fd closes, the file
	 * stays): the next create sweeps it and then fits.
	 */
	close(b);
	EXPECT_EQ(count_disks(self->disks), 2);
	fd = cube_sandbox_disk_create(3, self->snap, 0, &size, err);
	ASSERT_GE(fd, 0);
	snprintf(path, sizeof(path), "%s/2.img", self->disks);
	EXPECT_NE(access(path, F_OK), 0);
	/* a live disk is never swept: 1 is still held */
	snprintf(path, sizeof(path), "%s/1.img", self->disks);
	EXPECT_EQ(access(path, F_OK), 0);
	/* a live disk's id cannot be taken twice */
	EXPECT_EQ(cube_sandbox_disk_create(1, self->snap, 0, &size, err),
		  -EEXIST);
	cube_sandbox_disk_remove(1, a);
	cube_sandbox_disk_remove(3, fd);
	EXPECT_EQ(count_disks(self->disks), 0);

	setenv("CUBE_DISK_LIMIT", "lots", 1);
	EXPECT_EQ(cube_sandbox_disk_create(4, self->snap, 0, &size, err),
		  -EINVAL);
	EXPECT_TRUE(strstr(err, "CUBE_DISK_LIMIT") != NULL);
	EXPECT_EQ(count_disks(self->disks), 0);
}

TEST(sizes_parse)
{
	uint64_t v = 0;

	EXPECT_EQ(cube_parse_disk_size("64M", &v), 0);
	EXPECT_EQ(v, 64 * MiB);
	EXPECT_EQ(cube_parse_disk_size("2G", &v), 0);
	EXPECT_EQ(v, 2048 * MiB);
	EXPECT_EQ(cube_parse_disk_size("1GiB", &v), 0);
	EXPECT_EQ(v, 1024 * MiB);
	EXPECT_EQ(cube_parse_disk_size("16777216", &v), 0);
	EXPECT_EQ(v, 16 * MiB);
	EXPECT_EQ(cube_parse_disk_size("16T", &v), 0);
	EXPECT_EQ(cube_parse_disk_size("15M", &v), -EINVAL);	/* too small */
	EXPECT_EQ(cube_parse_disk_size("17T", &v), -EINVAL);
	EXPECT_EQ(cube_parse_disk_size("16777217", &v), -EINVAL);
	EXPECT_EQ(cube_parse_disk_size("64X", &v), -EINVAL);
	EXPECT_EQ(cube_parse_disk_size("-64M", &v), -EINVAL);
	EXPECT_EQ(cube_parse_disk_size("", &v), -EINVAL);
	EXPECT_EQ(cube_parse_disk_size("99999999999999999999G", &v), -EINVAL);
	EXPECT_EQ(cube_parse_disk_size("64MB", &v), 0);
	EXPECT_EQ(cube_parse_disk_size("64Mx", &v), -EINVAL);
}

TEST_MAIN()
