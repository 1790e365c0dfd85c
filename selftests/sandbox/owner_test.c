// SPDX-License-Identifier: GPL-2.0
/*
 * owner_test: snapshots and pools belong to the user that made them.  Two
 * unprivileged users, A and B, both in the group that may open /dev/cube:
 * B can neither read, clone nor delete A's snapshot, nor take from or feed
 * a pool that is not its own, nor listen to the events group; A (from any
 * of its processes) and an administrator can.  What one user holds in
 * snapshots is bounded (count and memory); reaching a bound fails with
 * EDQUOT and costs nobody else anything.
 */
#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <linux/genetlink.h>
#include <netlink/genl/ctrl.h>

#include "cube_test.h"
#include "cube_nl.h"
#include "sb_util.h"

#define UID_A		61001
#define UID_B		61002
#define GID_CUBE	61000
#define PAGE		4096UL

/*
 * Run @fn as @uid (supplementary group GID_CUBE, no capabilities) in a
 * child; return its exit status, or -1.
 */
static int as_user(uid_t uid, int (*fn)(void *), void *arg)
{
	gid_t groups[] = { GID_CUBE };
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(1, groups) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* /dev/cube opened by the group, as the optional udev rule sets it. */
static void share_dev(void)
{
	ASSERT_EQ(chown(SB_DEV, 0, GID_CUBE), 0);
	ASSERT_EQ(chmod(SB_DEV, 0660), 0);
}

static void unshare_dev(void)
{
	chmod(SB_DEV, 0600);
	chown(SB_DEV, 0, 0);
}

struct snap_arg {
	uint64_t id;
	int *shared;		/* MAP_SHARED: what the child reports */
};

/* A: a one-page snapshot of its own memory. */
static int a_make_snapshot(void *p)
{
	struct snap_arg *a = p;
	struct cube_snapshot_create c = {
		.source = CUBE_SNAPSHOT_SRC_USER, .fd = -1, .length = PAGE,
	};
	char *buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int dev = sb_open_dev();

	if (dev < 0 || buf == MAP_FAILED)
		return 1;
	memset(buf, 0xa5, PAGE);
	c.addr = (uintptr_t)buf;
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c))
		return 2;
	a->id = c.id;
	memcpy(a->shared, &c.id, sizeof(c.id));
	return 0;
}

/* The three uses of a snapshot, each answering @want_errno (0: works). */
static int use_snapshot(uint64_t id, int want_errno, bool del)
{
	struct cube_snapshot_info info = { .id = id };
	struct cube_clone_create cc = { .snapshot_id = id };
	struct cube_snapshot_id d = { .id = id };
	int dev = sb_open_dev(), fd;

	if (dev < 0)
		return 10;
	errno = 0;
	if ((ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info) ? errno : 0) != want_errno)
		return 11;
	fd = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	if ((fd < 0 ? errno : 0) != want_errno)
		return 12;
	if (fd >= 0) {
		/* the clone reads A's data */
		unsigned char *m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED,
					fd, 0);

		if (m == MAP_FAILED || m[0] != 0xa5 || m[PAGE - 1] != 0xa5)
			return 13;
		munmap(m, PAGE);
		close(fd);
	}
	if (del && (ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &d) ? errno : 0) !=
		   want_errno)
		return 14;
	return 0;
}

static int b_denied(void *p)
{
	return use_snapshot(*(uint64_t *)p, EACCES, true);
}

static int a_allowed_keep(void *p)
{
	return use_snapshot(*(uint64_t *)p, 0, false);
}

static int a_allowed_delete(void *p)
{
	return use_snapshot(*(uint64_t *)p, 0, true);
}

TEST(snapshot_belongs_to_its_creator)
{
	uint64_t *shared = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct snap_arg a = { .shared = (int *)shared };
	struct cube_snapshot_info info;
	int dev = sb_open_dev();

	ASSERT_GE(dev, 0);
	ASSERT_NE(shared, MAP_FAILED);
	share_dev();
	ASSERT_EQ(as_user(UID_A, a_make_snapshot, &a), 0);
	a.id = *shared;
	ASSERT_NE(a.id, 0ull);

	/* B: every use refused, and the snapshot is still there */
	EXPECT_EQ(as_user(UID_B, b_denied, &a.id), 0);
	memset(&info, 0, sizeof(info));
	info.id = a.id;
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), 0);
	EXPECT_EQ(info.size, PAGE);

	/* an administrator may use it; A, from another process, too */
	EXPECT_EQ(use_snapshot(a.id, 0, false), 0);
	EXPECT_EQ(as_user(UID_A, a_allowed_keep, &a.id), 0);
	EXPECT_EQ(as_user(UID_A, a_allowed_delete, &a.id), 0);
	info.id = a.id;
	EXPECT_ERRNO(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), ENOENT);
	unshare_dev();
	close(dev);
}

struct pool_arg {
	const char *pool;
	int want_errno;
};

/* Enter a ready sandbox of the pool's template: refused for B. */
static int user_pool_enter(void *p)
{
	struct pool_arg *a = p;
	int dev = sb_open_dev(), sb;
	uint64_t id;

	if (dev < 0)
		return 10;
	sb = sb_create_ready(dev, "owner-t", &id);
	if (sb < 0)
		return 11;
	errno = 0;
	if ((sb_pool_enter(sb, a->pool) ? errno : 0) != a->want_errno)
		return 12;
	return 0;
}

static int user_pool_take(void *p)
{
	struct pool_arg *a = p;
	int dev = sb_open_dev();
	uint32_t pid;
	uint64_t id;

	if (dev < 0)
		return 10;
	errno = 0;
	if ((sb_pool_take(dev, a->pool, &id, &pid) ? errno : 0) !=
	    a->want_errno)
		return 11;
	return 0;
}

TEST(pool_belongs_to_its_creator)
{
	struct pool_arg denied = { "owner-p", EACCES };
	struct cnl_pool p;
	struct cnl nl;
	uint32_t pid;
	uint64_t id, taken;
	int dev, sb;

	ASSERT_EQ(cnl_open(&nl), 0);
	dev = sb_open_dev();
	ASSERT_GE(dev, 0);
	cnl_pool_del(&nl, "owner-p");
	ASSERT_EQ(cnl_pool_new(&nl, "owner-p", "owner-t", 2, 0), 0);
	share_dev();

	/* B may not hand its sandbox to the pool's takers */
	EXPECT_EQ(as_user(UID_B, user_pool_enter, &denied), 0);
	ASSERT_EQ(cnl_pool_get(&nl, "owner-p", &p), 0);
	EXPECT_EQ(p.size, 0u);

	/* nor take what the pool's owner put in */
	sb = sb_create_ready(dev, "owner-t", &id);
	ASSERT_GE(sb, 0);
	ASSERT_EQ(sb_pool_enter(sb, "owner-p"), 0);
	EXPECT_EQ(as_user(UID_B, user_pool_take, &denied), 0);
	ASSERT_EQ(cnl_pool_get(&nl, "owner-p", &p), 0);
	EXPECT_EQ(p.size, 1u);
	ASSERT_EQ(sb_pool_take(dev, "owner-p", &taken, &pid), 0);
	EXPECT_EQ(taken, id);

	close(sb);
	EXPECT_EQ(cnl_pool_del(&nl, "owner-p"), 0);
	unshare_dev();
	cnl_close(&nl);
	close(dev);
}

#define PARAMS	"/sys/module/cube/parameters/"

static int set_param(const char *name, unsigned int v)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%u\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/* A snapshot of @pages pages of data; its id, or 0 with errno set. */
static uint64_t snap_pages(int dev, size_t pages)
{
	struct cube_snapshot_create c = {
		.source = CUBE_SNAPSHOT_SRC_USER, .fd = -1,
		.length = pages * PAGE,
	};
	char *buf = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (buf == MAP_FAILED)
		return 0;
	memset(buf, 0x5a, pages * PAGE);	/* no page is a hole */
	c.addr = (uintptr_t)buf;
	ret = ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c);
	munmap(buf, pages * PAGE);
	return ret ? 0 : c.id;
}

static int del(int dev, uint64_t id)
{
	struct cube_snapshot_id d = { .id = id };

	return ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &d);
}

/* A, with at most 2 snapshots: the third fails, a deleted one in use by a
 * clone still counts, one gone for good makes room. */
static int a_count_bound(void *p)
{
	struct cube_clone_create cc = { 0 };
	int dev = sb_open_dev(), clone;
	uint64_t s1, s2;

	if (dev < 0)
		return 10;
	s1 = snap_pages(dev, 1);
	s2 = snap_pages(dev, 1);
	if (!s1 || !s2)
		return 11;
	if (snap_pages(dev, 1) || errno != EDQUOT)
		return 12;
	cc.snapshot_id = s1;
	clone = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	if (clone < 0 || del(dev, s1))
		return 13;
	if (snap_pages(dev, 1) || errno != EDQUOT)
		return 14;		/* the clone still holds s1 */
	close(clone);
	s1 = snap_pages(dev, 1);
	if (!s1)
		return 15;
	return del(dev, s1) || del(dev, s2) ? 16 : 0;
}

/* B, meanwhile: its own bound, untouched by A's snapshots. */
static int b_one_more(void *p)
{
	int dev = sb_open_dev();
	uint64_t id;

	if (dev < 0)
		return 10;
	id = snap_pages(dev, 1);
	if (!id)
		return 11;
	*(uint64_t *)p = id;
	return 0;
}

/* A, with at most 1 MiB (256 pages): 2 MiB fails, 256 pages fit, one
 * page more does not. */
static int a_size_bound(void *p)
{
	int dev = sb_open_dev();
	uint64_t id;

	if (dev < 0)
		return 10;
	if (snap_pages(dev, 512) || errno != EDQUOT)
		return 11;
	id = snap_pages(dev, 256);
	if (!id)
		return 12;
	if (snap_pages(dev, 1) || errno != EDQUOT)
		return 13;
	return del(dev, id) ? 14 : 0;
}

TEST(snapshots_per_user_are_bounded)
{
	uint64_t *b_id = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int dev = sb_open_dev();

	ASSERT_GE(dev, 0);
	ASSERT_NE(b_id, MAP_FAILED);
	share_dev();
	ASSERT_EQ(set_param("max_snapshot_mib_per_user", 0), 0);
	ASSERT_EQ(set_param("max_snapshots_per_user", 2), 0);
	ASSERT_EQ(as_user(UID_B, b_one_more, b_id), 0);
	EXPECT_EQ(as_user(UID_A, a_count_bound, NULL), 0);
	ASSERT_EQ(set_param("max_snapshots_per_user", 0), 0);
	ASSERT_EQ(set_param("max_snapshot_mib_per_user", 1), 0);
	EXPECT_EQ(as_user(UID_A, a_size_bound, NULL), 0);
	/* B's snapshot was never in the way, and is still there */
	EXPECT_EQ(del(dev, *b_id), 0);
	set_param("max_snapshot_mib_per_user", 0);
	set_param("max_snapshots_per_user", 4096);
	unshare_dev();
	close(dev);
}

/* Joining "events" as a user without CAP_NET_ADMIN: 0 if refused. */
static int user_join_events(void *p)
{
	struct nl_sock *sk = nl_socket_alloc();
	int grp, fd;

	if (!sk || genl_connect(sk))
		return 10;
	grp = genl_ctrl_resolve_grp(sk, CUBE_GENL_NAME, CUBE_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return 11;
	fd = nl_socket_get_fd(sk);
	if (!setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
			sizeof(grp)))
		return 12;
	return errno == EPERM ? 0 : 13;
}

TEST(events_group_is_for_admins)
{
	EXPECT_EQ(as_user(UID_A, user_join_events, NULL), 0);
}

TEST_MAIN()
