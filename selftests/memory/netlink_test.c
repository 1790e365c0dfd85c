// SPDX-License-Identifier: GPL-2.0
/*
 * netlink_test: CUBE_CMD_GET_SNAPSHOT and CUBE_CMD_DEL_SNAPSHOT.
 *
 * One snapshot (doit) and all of them (dumpit), with their attributes;
 * a snapshot of a clone with its parent; deletion, and the errors of a
 * missing nest, a missing id and an unknown id.
 */
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "cube_test.h"
#include "mem_util.h"

#define MAX_SEEN	64

struct snap_attrs {
	int n;
	uint64_t id[MAX_SEEN], size[MAX_SEEN], pages[MAX_SEEN];
	uint64_t parent[MAX_SEEN];
	uint32_t depth[MAX_SEEN], clones[MAX_SEEN], children[MAX_SEEN];
	int has_parent[MAX_SEEN];
};

FIXTURE(nl) {
	int dev, family;
	struct nl_sock *sk;
	struct cube_mem_stats base;
};

FIXTURE_SETUP(nl)
{
	self->dev = mem_open_dev();
	if (self->dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	ASSERT_OK(mem_stats(self->dev, &self->base));
	self->sk = nl_socket_alloc();
	ASSERT_TRUE(self->sk != NULL);
	ASSERT_EQ(genl_connect(self->sk), 0);
	self->family = genl_ctrl_resolve(self->sk, CUBE_GENL_NAME);
	if (self->family < 0)
		SKIP("no genl family %s", CUBE_GENL_NAME);
}

FIXTURE_TEARDOWN(nl)
{
	if (self->sk)
		nl_socket_free(self->sk);
	if (self->dev >= 0)
		close(self->dev);
}

#define EXPECT_DELTA_SNAPSHOTS(self, n) do {				\
	struct cube_mem_stats st_;					\
	ASSERT_OK(mem_stats((self)->dev, &st_));			\
	EXPECT_EQ(st_.snapshots - (self)->base.snapshots, (uint64_t)(n)); \
	EXPECT_EQ(st_.shared_pages - (self)->base.shared_pages,		\
		  (uint64_t)(n) * 2);					\
} while (0)

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct snap_attrs *a = arg;
	struct nlattr *tb[CUBE_A_MAX + 1], *sn[CUBE_SNAPSHOT_A_MAX + 1];
	int i = a->n;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CUBE_A_MAX, NULL) ||
	    !tb[CUBE_A_SNAPSHOT] ||
	    nla_parse_nested(sn, CUBE_SNAPSHOT_A_MAX, tb[CUBE_A_SNAPSHOT],
			     NULL) || i >= MAX_SEEN)
		return NL_SKIP;
	if (!sn[CUBE_SNAPSHOT_A_ID] || !sn[CUBE_SNAPSHOT_A_SIZE] ||
	    !sn[CUBE_SNAPSHOT_A_PAGES] || !sn[CUBE_SNAPSHOT_A_DEPTH] ||
	    !sn[CUBE_SNAPSHOT_A_CLONES] || !sn[CUBE_SNAPSHOT_A_CHILDREN] ||
	    !sn[CUBE_SNAPSHOT_A_WS_PAGES])
		return NL_SKIP;
	a->id[i] = nla_get_u64(sn[CUBE_SNAPSHOT_A_ID]);
	a->size[i] = nla_get_u64(sn[CUBE_SNAPSHOT_A_SIZE]);
	a->pages[i] = nla_get_u64(sn[CUBE_SNAPSHOT_A_PAGES]);
	a->depth[i] = nla_get_u32(sn[CUBE_SNAPSHOT_A_DEPTH]);
	a->clones[i] = nla_get_u32(sn[CUBE_SNAPSHOT_A_CLONES]);
	a->children[i] = nla_get_u32(sn[CUBE_SNAPSHOT_A_CHILDREN]);
	a->has_parent[i] = !!sn[CUBE_SNAPSHOT_A_PARENT_ID];
	if (a->has_parent[i])
		a->parent[i] = nla_get_u64(sn[CUBE_SNAPSHOT_A_PARENT_ID]);
	a->n++;
	return NL_OK;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	*(int *)arg = e->error;
	return NL_STOP;
}

static int on_done(struct nl_msg *msg, void *arg)
{
	*(int *)arg = 0;
	return NL_STOP;
}

/*
 * Send @cmd (with a snapshot nest holding @id unless @nest is 0; 2: the
 * nest without an id) and collect the answers.  Returns 0 or -errno.
 */
static int request(int family, struct nl_sock *sk, int cmd, int flags,
		   int nest, uint64_t id, struct snap_attrs *a)
{
	struct nl_msg *msg = nlmsg_alloc();
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	struct nlattr *n;
	int err = 1;

	if (!msg || !cb)
		return -ENOMEM;
	memset(a, 0, sizeof(*a));
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
		    CUBE_GENL_VERSION);
	if (nest) {
		n = nla_nest_start(msg, CUBE_A_SNAPSHOT);
		if (nest == 1)
			nla_put_u64(msg, CUBE_SNAPSHOT_A_ID, id);
		nla_nest_end(msg, n);
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, a);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_done, &err);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &err);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &err);
	if (nl_send_auto(sk, msg) < 0)
		err = -EIO;
	while (err > 0)
		if (nl_recvmsgs(sk, cb) < 0 && err > 0)
			err = -EIO;
	nlmsg_free(msg);
	nl_cb_put(cb);
	return err;
}

static uint64_t snapshot(int dev)
{
	unsigned char *r = mem_region(32 * PAGE);
	uint64_t id = 0;

	if (r == MAP_FAILED)
		return 0;
	r[0] = 1;
	r[5 * PAGE] = 2;
	if (mem_snapshot_user(dev, r, 32 * PAGE, &id))
		id = 0;
	munmap(r, 32 * PAGE);
	return id;
}

TEST_F(nl, get_one)
{
	static struct snap_attrs a;
	uint64_t id = snapshot(self->dev);
	int c;

	ASSERT_NE(id, 0);
	c = mem_clone(self->dev, id, 0);
	ASSERT_GE(c, 0);
	ASSERT_EQ(request(self->family, self->sk, CUBE_CMD_GET_SNAPSHOT, 0, 1,
			  id, &a), 0);
	ASSERT_EQ(a.n, 1);
	EXPECT_EQ(a.id[0], id);
	EXPECT_EQ(a.size[0], 32 * PAGE);
	EXPECT_EQ(a.pages[0], 2u);
	EXPECT_EQ(a.depth[0], 1u);
	EXPECT_EQ(a.clones[0], 1u);
	EXPECT_EQ(a.children[0], 0u);
	EXPECT_FALSE(a.has_parent[0]);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
}

TEST_F(nl, get_errors)
{
	static struct snap_attrs a;
	uint64_t id = snapshot(self->dev);

	ASSERT_NE(id, 0);
	EXPECT_EQ(request(self->family, self->sk, CUBE_CMD_GET_SNAPSHOT, 0, 1,
			  id + 1000, &a), -ENOENT);
	EXPECT_EQ(request(self->family, self->sk, CUBE_CMD_GET_SNAPSHOT, 0, 0,
			  0, &a), -EINVAL);
	EXPECT_EQ(request(self->family, self->sk, CUBE_CMD_GET_SNAPSHOT, 0, 2,
			  0, &a), -EINVAL);
	EXPECT_EQ(request(self->family, self->sk, CUBE_CMD_DEL_SNAPSHOT, 0, 1,
			  id + 1000, &a), -ENOENT);
	EXPECT_EQ(request(self->family, self->sk, CUBE_CMD_DEL_SNAPSHOT, 0, 2,
			  0, &a), -EINVAL);
	EXPECT_DELTA_SNAPSHOTS(self, 1);
	ASSERT_OK(mem_snapshot_delete(self->dev, id));
}

TEST_F(nl, dump_and_parent)
{
	static struct snap_attrs a;
	uint64_t ids[3], fork_id = 0;
	int i, j, found = 0, c;

	for (i = 0; i < 3; i++) {
		ids[i] = snapshot(self->dev);
		ASSERT_NE(ids[i], 0);
	}
	c = mem_clone(self->dev, ids[1], 0);
	ASSERT_GE(c, 0);
	ASSERT_OK(mem_snapshot_clone(self->dev, c, &fork_id));
	ASSERT_EQ(request(self->family, self->sk, CUBE_CMD_GET_SNAPSHOT,
			  NLM_F_DUMP, 0, 0, &a), 0);
	for (j = 1; j < a.n; j++)
		EXPECT_GT(a.id[j], a.id[j - 1]);
	for (j = 0; j < a.n; j++) {
		for (i = 0; i < 3; i++)
			found += a.id[j] == ids[i];
		if (a.id[j] == fork_id) {
			found++;
			EXPECT_TRUE(a.has_parent[j]);
			EXPECT_EQ(a.parent[j], ids[1]);
			EXPECT_EQ(a.depth[j], 2u);
			EXPECT_EQ(a.pages[j], 0u);
		}
		if (a.id[j] == ids[1])
			EXPECT_EQ(a.children[j], 1u);
	}
	EXPECT_EQ(found, 4);
	close(c);
	ASSERT_OK(mem_snapshot_delete(self->dev, fork_id));
	for (i = 0; i < 3; i++)
		ASSERT_OK(mem_snapshot_delete(self->dev, ids[i]));
}

TEST_F(nl, delete)
{
	static struct snap_attrs a;
	struct cube_snapshot_info info;
	uint64_t id = snapshot(self->dev);

	ASSERT_NE(id, 0);
	ASSERT_EQ(request(self->family, self->sk, CUBE_CMD_DEL_SNAPSHOT, 0, 1,
			  id, &a), 0);
	EXPECT_ERRNO(mem_snapshot_info(self->dev, id, &info), ENOENT);
	EXPECT_EQ(request(self->family, self->sk, CUBE_CMD_DEL_SNAPSHOT, 0, 1,
			  id, &a), -ENOENT);
	EXPECT_DELTA_SNAPSHOTS(self, 0);
}

TEST_MAIN()
