// SPDX-License-Identifier: GPL-2.0
/*
 * reload_test: snapshot ids kept across a reload of cube.ko name nothing.
 *
 * Files in the state directory (DIR/cube-snapshot-id of templates, paused
 * sandboxes and forks) outlive the module, whose sequence numbers start
 * again at each load.  An id of an earlier load must answer ENOENT to every
 * request, ioctl and netlink alike, and never reach a snapshot made since:
 * a restore of an old record must map its own memory file, not another
 * one's, and removing a directory with an old record must not delete
 * another directory's snapshot.  Each test reloads the module ($CUBE_KO)
 * twice, so the two loads' first snapshots have the same sequence number.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "cube_test.h"
#include "cube_module.h"
#include "mem_util.h"
#include "cube_clone.h"
#include "cube_runtime.h"
#include "nl_client.h"

#define NR_PAGES	16

/* NR_PAGES pages, each filled with @c. */
static void *pattern(int c)
{
	void *p = mmap(NULL, NR_PAGES * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(p, MAP_FAILED);
	memset(p, c, NR_PAGES * PAGE);
	return p;
}

/* The first byte that is not @c in a clone's memory, or -1. */
static long clone_differs(int clone, int c)
{
	unsigned char *m = mmap(NULL, NR_PAGES * PAGE, PROT_READ, MAP_SHARED,
				clone, 0);
	long i, bad = -1;

	ASSERT_NE(m, MAP_FAILED);
	for (i = 0; i < (long)(NR_PAGES * PAGE); i++) {
		if (m[i] != c) {
			bad = i;
			break;
		}
	}
	if (bad >= 0)
		TH_LOG("byte %ld is '%c', not '%c'", bad, m[bad], c);
	munmap(m, NR_PAGES * PAGE);
	return bad;
}

/* A snapshot of NR_PAGES pages of @c, made after the last reload. */
static uint64_t snapshot_of(int c)
{
	void *p = pattern(c);
	uint64_t id = 0;
	int dev = mem_open_dev();

	ASSERT_GE(dev, 0);
	ASSERT_OK(mem_snapshot_user(dev, p, NR_PAGES * PAGE, &id));
	close(dev);
	munmap(p, NR_PAGES * PAGE);
	return id;
}

/* Whether a netlink dump of the snapshots lists @id. */
static bool nl_lists(uint64_t id)
{
	struct cube_nl_snapshot *v = NULL;
	struct cube_nl *nl;
	bool found = false;
	size_t n = 0, i;

	ASSERT_OK(cube_nl_open(&nl));
	ASSERT_OK(cube_nl_snapshot_dump(nl, &v, &n));
	for (i = 0; i < n; i++)
		found |= v[i].id == id;
	free(v);
	cube_nl_close(nl);
	return found;
}

static int nl_del(uint64_t id)
{
	struct cube_nl *nl;
	int ret;

	ASSERT_OK(cube_nl_open(&nl));
	ret = cube_nl_snapshot_del(nl, id);
	cube_nl_close(nl);
	return ret;
}

TEST(old_load_ids_answer_enoent)
{
	struct cube_snapshot_info info;
	uint64_t old_id, id;
	int dev, c;

	ct_reload_module();
	old_id = snapshot_of('A');
	TH_LOG("first load: snapshot %#" PRIx64, old_id);
	ct_reload_module();
	id = snapshot_of('B');
	TH_LOG("second load: snapshot %#" PRIx64, id);
	EXPECT_NE(id, old_id);

	dev = mem_open_dev();
	ASSERT_GE(dev, 0);
	/* The old id names nothing, for every request... */
	EXPECT_ERRNO(mem_snapshot_info(dev, old_id, &info), ENOENT);
	EXPECT_ERRNO(mem_clone(dev, old_id, 0), ENOENT);
	EXPECT_ERRNO(mem_clone(dev, old_id, CUBE_CLONE_F_PREFAULT), ENOENT);
	EXPECT_ERRNO(mem_snapshot_delete(dev, old_id), ENOENT);
	EXPECT_EQ(nl_del(old_id), -ENOENT);
	EXPECT_FALSE(nl_lists(old_id));
	/* ... and deleting it left the new snapshot alone. */
	ASSERT_OK(mem_snapshot_info(dev, id, &info));
	EXPECT_EQ(info.id, id);
	EXPECT_TRUE(nl_lists(id));
	c = mem_clone(dev, id, 0);
	ASSERT_GE(c, 0);
	EXPECT_EQ(clone_differs(c, 'B'), -1);
	close(c);

	/* Within a load, only the exact id resolves. */
	EXPECT_ERRNO(mem_snapshot_info(dev, id ^ (1ULL << 32), &info), ENOENT);
	EXPECT_ERRNO(mem_snapshot_info(dev, id ^ (1ULL << 63), &info), ENOENT);
	EXPECT_ERRNO(mem_snapshot_info(dev, id & 0xffffffffULL, &info),
		     ENOENT);
	EXPECT_ERRNO(mem_snapshot_info(dev, id & ~0xffffffffULL, &info),
		     ENOENT);
	EXPECT_ERRNO(mem_snapshot_delete(dev, id ^ (1ULL << 40)), ENOENT);
	EXPECT_ERRNO(mem_clone(dev, id ^ (1ULL << 33), 0), ENOENT);
	ASSERT_OK(mem_snapshot_delete(dev, id));
	EXPECT_ERRNO(mem_snapshot_info(dev, id, &info), ENOENT);
	close(dev);
}

/* A snapshot directory: DIR/memory of NR_PAGES pages of @c. */
static void make_dir(char *dir, size_t len, const char *name, int c)
{
	char path[256];
	void *p = pattern(c);
	int fd;

	snprintf(dir, len, "%s/cube-reload-%s-%d",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name,
		 (int)getpid());
	ASSERT_OK(mkdir(dir, 0700));
	snprintf(path, sizeof(path), "%s/memory", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, p, NR_PAGES * PAGE), (ssize_t)(NR_PAGES * PAGE));
	close(fd);
	munmap(p, NR_PAGES * PAGE);
}

/*
 * What cube-vmm --restore does for guest memory: a clone of DIR's module
 * snapshot (made and recorded on first use); checks the clone maps @c.
 */
static void restore(const char *dir, int c)
{
	char path[256], err[256] = "";
	int mem, fd;

	snprintf(path, sizeof(path), "%s/memory", dir);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(mem, 0);
	fd = cube_clone_open(dir, mem, NR_PAGES * PAGE, err, sizeof(err));
	close(mem);
	if (fd < 0)
		TH_LOG("cube_clone_open %s: %d %s", dir, fd, err);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(clone_differs(fd, c), -1);
	close(fd);
}

static uint64_t recorded_id(const char *dir)
{
	char path[256], buf[128];
	uint64_t id = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" CUBE_CLONE_ID_FILE, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_GT(n, 0);
	buf[n] = 0;
	ASSERT_EQ(sscanf(buf, "%" SCNu64, &id), 1);
	return id;
}

static void copy_record(const char *from, const char *to)
{
	char src[256], dst[256], buf[128];
	ssize_t n;
	int in, out;

	snprintf(src, sizeof(src), "%s/" CUBE_CLONE_ID_FILE, from);
	snprintf(dst, sizeof(dst), "%s/" CUBE_CLONE_ID_FILE, to);
	in = open(src, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(in, 0);
	n = read(in, buf, sizeof(buf));
	close(in);
	ASSERT_GT(n, 0);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_GE(out, 0);
	ASSERT_EQ(write(out, buf, n), n);
	close(out);
}

/*
 * Template A is restored (its record written), cube.ko reloads, template B
 * of the same size is restored (its snapshot takes the first sequence
 * number again), then A: A's restore must map A's memory, and removing a
 * directory holding A's old record must leave B's snapshot.
 */
TEST(restore_and_remove_after_reload)
{
	char a[128], b[128], old[128];
	struct cube_snapshot_info info;
	uint64_t stale, bid;
	int dev;

	make_dir(a, sizeof(a), "a", 'A');
	make_dir(b, sizeof(b), "b", 'B');
	make_dir(old, sizeof(old), "old", 'O');

	ct_reload_module();
	restore(a, 'A');
	stale = recorded_id(a);
	copy_record(a, old);		/* as it was before the reload */
	ct_reload_module();
	restore(b, 'B');
	bid = recorded_id(b);
	TH_LOG("A's record from the first load %#" PRIx64
	       ", B's snapshot %#" PRIx64, stale, bid);

	/* A's record is stale: A gets a snapshot of its own memory. */
	restore(a, 'A');
	EXPECT_NE(recorded_id(a), bid);
	restore(b, 'B');
	restore(a, 'A');

	/* Removing a directory with a stale record deletes nothing else. */
	ASSERT_OK(cube_remove_tree(old));
	EXPECT_NE(access(old, F_OK), 0);
	dev = mem_open_dev();
	ASSERT_GE(dev, 0);
	EXPECT_EQ(mem_snapshot_info(dev, bid, &info), 0);
	EXPECT_EQ(info.size, NR_PAGES * PAGE);
	close(dev);
	restore(b, 'B');

	/* Removing A's directory deletes A's current snapshot only. */
	stale = recorded_id(a);
	ASSERT_OK(cube_remove_tree(a));
	dev = mem_open_dev();
	ASSERT_GE(dev, 0);
	EXPECT_ERRNO(mem_snapshot_info(dev, stale, &info), ENOENT);
	EXPECT_EQ(mem_snapshot_info(dev, bid, &info), 0);
	close(dev);

	ASSERT_OK(cube_remove_tree(b));
	dev = mem_open_dev();
	ASSERT_GE(dev, 0);
	EXPECT_ERRNO(mem_snapshot_info(dev, bid, &info), ENOENT);
	close(dev);
}

TEST_MAIN()
