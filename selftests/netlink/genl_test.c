// SPDX-License-Identifier: GPL-2.0
/*
 * genl_test: every command of the "cube" generic-netlink family, with its
 * success path, its rejected requests (specific errno, extack message, no
 * state change), the CAP_NET_ADMIN rule and the "events" multicast group.
 */
#include <linux/capability.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "cube_nl.h"
#include "sb_util.h"

FIXTURE(nl) {
	struct cnl nl;
	int dev;
};

FIXTURE_SETUP(nl)
{
	ASSERT_EQ(cnl_open(&self->nl), 0);
	self->dev = sb_open_dev();
	ASSERT_GE(self->dev, 0);
}

FIXTURE_TEARDOWN(nl)
{
	close(self->dev);
	cnl_close(&self->nl);
}

/* A request with a CUBE_A_SANDBOX nest holding one attribute. */
static struct nl_msg *sandbox_msg(struct cnl *c, uint8_t cmd, int type,
				  const void *data, int len)
{
	struct nl_msg *msg = cnl_msg(c, cmd, 0);
	struct nlattr *n = nla_nest_start(msg, CUBE_A_SANDBOX);

	if (type)
		nla_put(msg, type, len, data);
	nla_nest_end(msg, n);
	return msg;
}

TEST_F(nl, stats)
{
	struct cnl_stats s;
	struct nl_msg *msg;
	int i;

	ASSERT_EQ(cnl_stats(&self->nl, &s), 0);
	for (i = CUBE_STATS_A_SANDBOXES; i <= CUBE_STATS_A_MAX; i++)
		EXPECT_TRUE(s.present[i]);
	EXPECT_EQ(s.v[CUBE_STATS_A_SANDBOXES], 0ull);
	/* GET_STATS takes no attributes at all */
	msg = cnl_msg(&self->nl, CUBE_CMD_GET_STATS, 0);
	nla_put_u32(msg, CUBE_A_STATS, 1);
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
}

TEST_F(nl, unknown_commands)
{
	static const uint8_t cmds[] = {
		CUBE_CMD_UNSPEC, CUBE_CMD_EVENT_SANDBOX_NEW,
		CUBE_CMD_EVENT_SANDBOX_STATE, CUBE_CMD_EVENT_SANDBOX_EXIT,
		CUBE_CMD_EVENT_POOL_LOW, CUBE_CMD_MAX + 1, 200,
	};
	unsigned int i;

	for (i = 0; i < sizeof(cmds); i++)
		EXPECT_EQ(cnl_exchange(&self->nl, cnl_msg(&self->nl, cmds[i], 0),
				       NULL, NULL), -EOPNOTSUPP);
}

TEST_F(nl, reserved_header_rejected)
{
	struct nl_msg *msg = cnl_msg(&self->nl, CUBE_CMD_GET_STATS, 0);
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));

	g->reserved = 1;
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
}

TEST_F(nl, get_sandbox)
{
	struct cnl_sandbox s;
	uint64_t id, bogus;
	uint32_t u32 = 1;
	struct nl_msg *msg;
	int fd;

	fd = sb_create(self->dev, &id);
	ASSERT_GE(fd, 0);
	ASSERT_OK(sb_set_limits(fd, "tpl", 2, 1 << 20));
	ASSERT_OK(sb_set_label(fd, "a", "b", 0));
	ASSERT_EQ(cnl_sandbox_get(&self->nl, id, &s), 0);
	EXPECT_EQ(s.id, id);
	EXPECT_EQ(s.owner_pid, (uint32_t)getpid());
	EXPECT_STREQ(s.template, "tpl");
	EXPECT_EQ(s.vcpus, 2u);
	EXPECT_EQ(s.memory, 1ull << 20);
	EXPECT_EQ(s.nr_labels, 1u);
	EXPECT_STREQ(s.label_key[0], "a");
	EXPECT_STREQ(s.label_value[0], "b");

	/* no nest, empty nest, bad id, wrong sizes and types */
	EXPECT_EQ(cnl_exchange(&self->nl,
			       cnl_msg(&self->nl, CUBE_CMD_GET_SANDBOX, 0),
			       NULL, NULL), -EINVAL);
	EXPECT_EQ(cnl_exchange(&self->nl, sandbox_msg(&self->nl,
			       CUBE_CMD_GET_SANDBOX, 0, NULL, 0), NULL, NULL),
		  -EINVAL);
	EXPECT_EQ(cnl_sandbox_get(&self->nl, id + 1000, &s), -ENOENT);
	EXPECT_STREQ(self->nl.ext_msg, "no such sandbox");
	EXPECT_EQ(cnl_sandbox_get(&self->nl, 0, &s), -ENOENT);
	EXPECT_EQ(cnl_sandbox_get(&self->nl, ~0ull, &s), -ENOENT);
	EXPECT_EQ(cnl_exchange(&self->nl, sandbox_msg(&self->nl,
			       CUBE_CMD_GET_SANDBOX, CUBE_SANDBOX_A_ID, &u32, 4),
			       NULL, NULL), -EINVAL);
	/* attributes the command does not take */
	bogus = CUBE_SANDBOX_READY;
	EXPECT_EQ(cnl_exchange(&self->nl, sandbox_msg(&self->nl,
			       CUBE_CMD_GET_SANDBOX, CUBE_SANDBOX_A_STATE,
			       &u32, 4), NULL, NULL), -EINVAL);
	EXPECT_EQ(cnl_exchange(&self->nl, sandbox_msg(&self->nl,
			       CUBE_CMD_GET_SANDBOX, CUBE_SANDBOX_A_MAX + 1,
			       &bogus, 8), NULL, NULL), -EINVAL);
	msg = sandbox_msg(&self->nl, CUBE_CMD_GET_SANDBOX, CUBE_SANDBOX_A_ID,
			  &id, 8);
	nla_put_u32(msg, CUBE_A_POOL, 1);
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
	msg = cnl_msg(&self->nl, CUBE_CMD_GET_SANDBOX, 0);
	nla_put_u64(msg, CUBE_A_SANDBOX, id);	/* not a nest */
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
	close(fd);
	EXPECT_EQ(cnl_sandbox_get(&self->nl, id, &s), -ENOENT);
}

struct dump_state {
	uint64_t ids[64];
	unsigned int n;
	bool ordered;
};

static int dump_cb(struct nlattr **tb, void *arg)
{
	struct dump_state *d = arg;
	struct cnl_sandbox s;

	if (!tb[CUBE_A_SANDBOX])
		return 0;
	cnl_parse_sandbox(tb[CUBE_A_SANDBOX], &s);
	if (d->n && s.id <= d->ids[d->n - 1])
		d->ordered = false;
	if (d->n < 64)
		d->ids[d->n++] = s.id;
	return 0;
}

TEST_F(nl, dump_sandboxes)
{
	struct dump_state d = { .ordered = true };
	uint64_t ids[40];
	int fds[40], i, j, found;
	char v[CUBE_LABEL_VALUE_MAX];

	/* enough full-size labels to need several dump messages */
	memset(v, 'v', sizeof(v) - 1);
	v[sizeof(v) - 1] = 0;
	for (i = 0; i < 40; i++) {
		fds[i] = sb_create(self->dev, &ids[i]);
		ASSERT_GE(fds[i], 0);
		for (j = 0; j < CUBE_LABELS_MAX; j++) {
			char k[CUBE_NAME_MAX];

			memset(k, 'k', sizeof(k) - 1);
			k[sizeof(k) - 1] = 0;
			k[0] = 'a' + j;
			ASSERT_OK(sb_set_label(fds[i], k, v, 0));
		}
	}
	ASSERT_EQ(cnl_exchange(&self->nl,
			       cnl_msg(&self->nl, CUBE_CMD_GET_SANDBOX,
				       NLM_F_DUMP), dump_cb, &d), 0);
	EXPECT_TRUE(d.ordered);
	EXPECT_EQ(d.n, 40u);
	for (i = 0; i < 40; i++) {
		found = 0;
		for (j = 0; j < (int)d.n; j++)
			found += d.ids[j] == ids[i];
		EXPECT_EQ(found, 1);
	}
	for (i = 0; i < 40; i++)
		close(fds[i]);
	d.n = 0;
	ASSERT_EQ(cnl_exchange(&self->nl,
			       cnl_msg(&self->nl, CUBE_CMD_GET_SANDBOX,
				       NLM_F_DUMP), dump_cb, &d), 0);
	EXPECT_EQ(d.n, 0u);
}

TEST_F(nl, kill_rejects)
{
	struct cube_sandbox_info info;
	uint32_t grace = CUBE_KILL_GRACE_MS_MAX + 1, small = 100;
	struct nl_msg *msg;
	struct nlattr *n;
	uint64_t id;
	int fd;

	fd = sb_create(self->dev, &id);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(cnl_kill(&self->nl, id + 1000, 0), -ENOENT);
	EXPECT_STREQ(self->nl.ext_msg, "no such sandbox");
	EXPECT_EQ(cnl_exchange(&self->nl, sandbox_msg(&self->nl,
			       CUBE_CMD_KILL_SANDBOX, 0, NULL, 0), NULL, NULL),
		  -EINVAL);
	EXPECT_EQ(cnl_exchange(&self->nl, sandbox_msg(&self->nl,
			       CUBE_CMD_KILL_SANDBOX, CUBE_SANDBOX_A_GRACE_MS,
			       &small, 4), NULL, NULL), -EINVAL);
	msg = cnl_msg(&self->nl, CUBE_CMD_KILL_SANDBOX, 0);
	n = nla_nest_start(msg, CUBE_A_SANDBOX);
	nla_put_u64(msg, CUBE_SANDBOX_A_ID, id);
	nla_put_u32(msg, CUBE_SANDBOX_A_GRACE_MS, grace);
	nla_nest_end(msg, n);
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -ERANGE);
	msg = cnl_msg(&self->nl, CUBE_CMD_KILL_SANDBOX, 0);
	n = nla_nest_start(msg, CUBE_A_SANDBOX);
	nla_put_u64(msg, CUBE_SANDBOX_A_ID, id);
	nla_put_u32(msg, CUBE_SANDBOX_A_STATE, 0);
	nla_nest_end(msg, n);
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
	ASSERT_OK(sb_info(fd, &info));
	EXPECT_EQ(info.flags, 0u);
	close(fd);
}

TEST_F(nl, pools)
{
	struct cnl_pool p;
	char longname[CUBE_NAME_MAX + 1];
	uint64_t id;
	int fd, fd2;

	cnl_pool_del(&self->nl, "nlt");
	ASSERT_EQ(cnl_pool_new(&self->nl, "nlt", "tpl", 3, 1), 0);
	EXPECT_EQ(cnl_pool_new(&self->nl, "nlt", "tpl", 3, 1), -EEXIST);
	EXPECT_STREQ(self->nl.ext_msg, "pool exists");
	ASSERT_EQ(cnl_pool_get(&self->nl, "nlt", &p), 0);
	EXPECT_STREQ(p.name, "nlt");
	EXPECT_STREQ(p.template, "tpl");
	EXPECT_EQ(p.target, 3u);
	EXPECT_EQ(p.low, 1u);
	EXPECT_EQ(p.size, 0u);
	EXPECT_EQ(p.taken, 0ull);

	/* NEW rejects */
	memset(longname, 'n', CUBE_NAME_MAX);
	longname[CUBE_NAME_MAX] = 0;
	EXPECT_EQ(cnl_exchange(&self->nl, cnl_pool_msg(&self->nl,
			       CUBE_CMD_NEW_POOL, NULL, "tpl", 1, 0), NULL,
			       NULL), -EINVAL);
	EXPECT_EQ(cnl_exchange(&self->nl, cnl_pool_msg(&self->nl,
			       CUBE_CMD_NEW_POOL, "x", NULL, 1, 0), NULL, NULL),
		  -EINVAL);
	EXPECT_EQ(cnl_exchange(&self->nl, cnl_pool_msg(&self->nl,
			       CUBE_CMD_NEW_POOL, "x", "tpl", -1, 0), NULL,
			       NULL), -EINVAL);
	EXPECT_EQ(cnl_pool_new(&self->nl, "x", "tpl", 0, 0), -ERANGE);
	EXPECT_EQ(cnl_pool_new(&self->nl, "x", "tpl",
			       CUBE_POOL_TARGET_MAX + 1, 0), -ERANGE);
	EXPECT_EQ(cnl_pool_new(&self->nl, "x", "tpl", 2, 3), -ERANGE);
	EXPECT_STREQ(self->nl.ext_msg, "low watermark above target");
	EXPECT_EQ(cnl_pool_new(&self->nl, "a b", "tpl", 2, 1), -EINVAL);
	EXPECT_STREQ(self->nl.ext_msg, "pool names are [A-Za-z0-9._-]+");
	EXPECT_EQ(cnl_pool_new(&self->nl, "", "tpl", 2, 1), -EINVAL);
	EXPECT_EQ(cnl_pool_new(&self->nl, "x", "t/p", 2, 1), -EINVAL);
	EXPECT_EQ(cnl_pool_new(&self->nl, longname, "tpl", 2, 1), -EINVAL);
	EXPECT_EQ(cnl_pool_get(&self->nl, "x", &p), -ENOENT);
	EXPECT_STREQ(self->nl.ext_msg, "no such pool");

	/* SET */
	ASSERT_EQ(cnl_pool_set(&self->nl, "nlt", 5, -1), 0);
	ASSERT_EQ(cnl_pool_set(&self->nl, "nlt", -1, 2), 0);
	ASSERT_EQ(cnl_pool_get(&self->nl, "nlt", &p), 0);
	EXPECT_EQ(p.target, 5u);
	EXPECT_EQ(p.low, 2u);
	EXPECT_EQ(cnl_pool_set(&self->nl, "nlt", 1, -1), -ERANGE);
	EXPECT_EQ(cnl_pool_set(&self->nl, "nlt", -1, 6), -ERANGE);
	EXPECT_EQ(cnl_pool_set(&self->nl, "nlt", 0, -1), -ERANGE);
	EXPECT_EQ(cnl_pool_set(&self->nl, "nlt", -1, -1), -EINVAL);
	EXPECT_STREQ(self->nl.ext_msg, "nothing to change");
	EXPECT_EQ(cnl_pool_set(&self->nl, "x", 4, 1), -ENOENT);
	EXPECT_EQ(cnl_exchange(&self->nl, cnl_pool_msg(&self->nl,
			       CUBE_CMD_SET_POOL, "nlt", "tpl", 4, 1), NULL,
			       NULL), -EINVAL);	/* the template is fixed */
	ASSERT_EQ(cnl_pool_get(&self->nl, "nlt", &p), 0);
	EXPECT_EQ(p.target, 5u);
	EXPECT_EQ(p.low, 2u);

	/* TAKE */
	EXPECT_EQ(cnl_pool_take(&self->nl, "nlt", &p), -EAGAIN);
	EXPECT_STREQ(self->nl.ext_msg, "pool is empty");
	EXPECT_EQ(cnl_pool_take(&self->nl, "x", &p), -ENOENT);
	fd = sb_create_ready(self->dev, "tpl", &id);
	ASSERT_GE(fd, 0);
	fd2 = sb_create_ready(self->dev, "tpl", NULL);
	ASSERT_GE(fd2, 0);
	ASSERT_OK(sb_pool_enter(fd, "nlt"));
	ASSERT_OK(sb_pool_enter(fd2, "nlt"));
	ASSERT_EQ(cnl_pool_get(&self->nl, "nlt", &p), 0);
	EXPECT_EQ(p.size, 2u);
	ASSERT_EQ(cnl_pool_take(&self->nl, "nlt", &p), 0);
	EXPECT_EQ(p.sandbox_id, id);		/* oldest first */
	EXPECT_EQ(p.owner_pid, (uint32_t)getpid());
	ASSERT_EQ(cnl_pool_get(&self->nl, "nlt", &p), 0);
	EXPECT_EQ(p.size, 1u);
	EXPECT_EQ(p.taken, 1ull);

	/*
	 * DEL asks the warm members to stop (closing the fd within the
	 * grace period cancels the SIGKILL to their owner, this test), then
	 * frees the name; a sandbox taken before is not asked to stop
	 */
	ASSERT_EQ(cnl_pool_del(&self->nl, "nlt"), 0);
	EXPECT_EQ(cnl_pool_del(&self->nl, "nlt"), -ENOENT);
	EXPECT_EQ(cnl_pool_get(&self->nl, "nlt", &p), -ENOENT);
	{
		struct cube_sandbox_info info;

		ASSERT_OK(sb_info(fd2, &info));
		EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_KILL_REQUESTED);
		ASSERT_OK(sb_info(fd, &info));
		EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_TAKEN);
	}
	close(fd);
	close(fd2);
}

static int count_pools_cb(struct nlattr **tb, void *arg)
{
	if (tb[CUBE_A_POOL])
		(*(int *)arg)++;
	return 0;
}

TEST_F(nl, pool_limit_and_dump)
{
	char name[16];
	int i, n = 0;

	for (i = 0; i < CUBE_POOLS_MAX; i++) {
		snprintf(name, sizeof(name), "lim%d", i);
		ASSERT_EQ(cnl_pool_new(&self->nl, name, "tpl", 1, 0), 0);
	}
	EXPECT_EQ(cnl_pool_new(&self->nl, "one-more", "tpl", 1, 0), -ENOSPC);
	EXPECT_STREQ(self->nl.ext_msg, "too many pools");
	ASSERT_EQ(cnl_exchange(&self->nl, cnl_msg(&self->nl, CUBE_CMD_GET_POOL,
						  NLM_F_DUMP),
			       count_pools_cb, &n), 0);
	EXPECT_EQ(n, CUBE_POOLS_MAX);
	for (i = 0; i < CUBE_POOLS_MAX; i++) {
		snprintf(name, sizeof(name), "lim%d", i);
		ASSERT_EQ(cnl_pool_del(&self->nl, name), 0);
	}
	n = 0;
	ASSERT_EQ(cnl_exchange(&self->nl, cnl_msg(&self->nl, CUBE_CMD_GET_POOL,
						  NLM_F_DUMP),
			       count_pools_cb, &n), 0);
	EXPECT_EQ(n, 0);
}

TEST_F(nl, snapshot_policy)
{
	struct nl_msg *msg;
	struct nlattr *n;

	/* the family checks the nest before the snapshot code sees it */
	msg = cnl_msg(&self->nl, CUBE_CMD_GET_SNAPSHOT, 0);
	n = nla_nest_start(msg, CUBE_A_SNAPSHOT);
	nla_put_u32(msg, CUBE_SNAPSHOT_A_MAX + 1, 0);
	nla_nest_end(msg, n);
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
	msg = cnl_msg(&self->nl, CUBE_CMD_DEL_SNAPSHOT, 0);
	nla_put_u32(msg, CUBE_A_SANDBOX, 0);
	EXPECT_EQ(cnl_exchange(&self->nl, msg, NULL, NULL), -EINVAL);
	EXPECT_EQ(cnl_exchange(&self->nl, cnl_msg(&self->nl,
			       CUBE_CMD_GET_SNAPSHOT, NLM_F_DUMP), NULL, NULL),
		  0);
}

static int snapshot_id_cb(struct nlattr **tb, void *arg)
{
	struct nlattr *st[CUBE_SNAPSHOT_A_MAX + 1];

	if (tb[CUBE_A_SNAPSHOT] &&
	    !nla_parse_nested(st, CUBE_SNAPSHOT_A_MAX, tb[CUBE_A_SNAPSHOT],
			      NULL) && st[CUBE_SNAPSHOT_A_ID])
		*(uint64_t *)arg = nla_get_u64(st[CUBE_SNAPSHOT_A_ID]);
	return 0;
}

static struct nl_msg *snapshot_msg(struct cnl *c, uint8_t cmd, uint64_t id)
{
	struct nl_msg *msg = cnl_msg(c, cmd, 0);
	struct nlattr *n = nla_nest_start(msg, CUBE_A_SNAPSHOT);

	nla_put_u64(msg, CUBE_SNAPSHOT_A_ID, id);
	nla_nest_end(msg, n);
	return msg;
}

/* The family hands the snapshot commands to the snapshot code. */
TEST_F(nl, snapshot_commands)
{
	struct cube_snapshot_create sc = { .source = CUBE_SNAPSHOT_SRC_MEMFD };
	int memfd = memfd_create("cube-nl", MFD_CLOEXEC);
	uint64_t got = 0;

	ASSERT_GE(memfd, 0);
	ASSERT_OK(ftruncate(memfd, 4 * 4096));
	sc.fd = memfd;
	sc.length = 4 * 4096;
	ASSERT_OK(ioctl(self->dev, CUBE_IOC_SNAPSHOT_CREATE, &sc));
	close(memfd);
	ASSERT_EQ(cnl_exchange(&self->nl, snapshot_msg(&self->nl,
			       CUBE_CMD_GET_SNAPSHOT, sc.id), snapshot_id_cb,
			       &got), 0);
	EXPECT_EQ(got, sc.id);
	ASSERT_EQ(cnl_exchange(&self->nl, snapshot_msg(&self->nl,
			       CUBE_CMD_DEL_SNAPSHOT, sc.id), NULL, NULL), 0);
	EXPECT_EQ(cnl_exchange(&self->nl, snapshot_msg(&self->nl,
			       CUBE_CMD_GET_SNAPSHOT, sc.id), NULL, NULL),
		  -ENOENT);
	EXPECT_EQ(cnl_exchange(&self->nl, snapshot_msg(&self->nl,
			       CUBE_CMD_DEL_SNAPSHOT, sc.id), NULL, NULL),
		  -ENOENT);
}

/* Drop CAP_NET_ADMIN from the effective set of this process. */
static int drop_net_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
	d[CAP_NET_ADMIN / 32].permitted &= ~(1u << (CAP_NET_ADMIN % 32));
	return syscall(SYS_capset, &h, d);
}

TEST_F(nl, cap_net_admin_required)
{
	struct cube_sandbox_info info;
	struct cnl_pool p;
	struct cnl_stats s;
	uint64_t id;
	int fd, status;
	pid_t pid;

	cnl_pool_del(&self->nl, "capt");
	ASSERT_EQ(cnl_pool_new(&self->nl, "capt", "tpl", 2, 0), 0);
	fd = sb_create_ready(self->dev, "tpl", &id);
	ASSERT_GE(fd, 0);
	ASSERT_OK(sb_pool_enter(fd, "capt"));

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct cnl c;
		struct cnl_sandbox sb;
		struct nl_msg *msg;
		struct nlattr *n;

		if (drop_net_admin() || cnl_open(&c))
			_exit(10);
		/* reading is open */
		if (cnl_stats(&c, &s) || cnl_pool_get(&c, "capt", &p) ||
		    cnl_sandbox_get(&c, id, &sb))
			_exit(11);
		if (cnl_kill(&c, id, 0) != -EPERM ||
		    cnl_pool_new(&c, "capt2", "tpl", 1, 0) != -EPERM ||
		    cnl_pool_take(&c, "capt", &p) != -EPERM ||
		    cnl_pool_set(&c, "capt", 1, 0) != -EPERM ||
		    cnl_pool_del(&c, "capt") != -EPERM)
			_exit(12);
		msg = cnl_msg(&c, CUBE_CMD_DEL_SNAPSHOT, 0);
		n = nla_nest_start(msg, CUBE_A_SNAPSHOT);
		nla_put_u64(msg, CUBE_SNAPSHOT_A_ID, 1);
		nla_nest_end(msg, n);
		if (cnl_exchange(&c, msg, NULL, NULL) != -EPERM)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_EXIT(status, 0);
	/* nothing changed */
	ASSERT_EQ(cnl_pool_get(&self->nl, "capt", &p), 0);
	EXPECT_EQ(p.size, 1u);
	EXPECT_EQ(p.target, 2u);
	EXPECT_EQ(cnl_pool_get(&self->nl, "capt2", &p), -ENOENT);
	ASSERT_OK(sb_info(fd, &info));
	EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_POOLED);
	close(fd);
	EXPECT_EQ(cnl_pool_del(&self->nl, "capt"), 0);
}

/* The events socket and what it received. */
struct evsock {
	struct nl_sock *sk;
	uint8_t cmd;
	struct cnl_sandbox sb;
	struct cnl_pool pool;
};

static int ev_cb(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[CUBE_A_MAX + 1];
	struct evsock *e = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CUBE_A_MAX, NULL))
		return NL_SKIP;
	e->cmd = g->cmd;
	if (tb[CUBE_A_SANDBOX])
		cnl_parse_sandbox(tb[CUBE_A_SANDBOX], &e->sb);
	if (tb[CUBE_A_POOL])
		cnl_parse_pool(tb[CUBE_A_POOL], &e->pool);
	return NL_STOP;
}

static int ev_open(struct evsock *e, int grp)
{
	struct timeval tv = { .tv_sec = 30 };	/* a bound for emulated hosts */

	memset(e, 0, sizeof(*e));
	e->sk = nl_socket_alloc();
	if (!e->sk || genl_connect(e->sk))
		return -1;
	nl_socket_disable_seq_check(e->sk);
	nl_socket_modify_cb(e->sk, NL_CB_VALID, NL_CB_CUSTOM, ev_cb, e);
	setsockopt(nl_socket_get_fd(e->sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	return nl_socket_add_membership(e->sk, grp);
}

/* Next event; 0 when none came within the timeout. */
static uint8_t ev_next(struct evsock *e)
{
	e->cmd = 0;
	if (nl_recvmsgs_default(e->sk) < 0)
		return 0;
	return e->cmd;
}

TEST_F(nl, events)
{
	struct cnl_pool p;
	struct evsock e;
	uint64_t id, id2;
	int fd, fd2;

	ASSERT_EQ(ev_open(&e, self->nl.mcgrp), 0);
	cnl_pool_del(&self->nl, "evt");
	ASSERT_EQ(cnl_pool_new(&self->nl, "evt", "tpl", 2, 2), 0);

	fd = sb_create(self->dev, &id);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_NEW);
	EXPECT_EQ(e.sb.id, id);
	EXPECT_EQ(e.sb.state, (uint32_t)CUBE_SANDBOX_CREATING);
	EXPECT_EQ(e.sb.owner_pid, (uint32_t)getpid());
	ASSERT_OK(sb_set_limits(fd, "tpl", 1, 4096));
	ASSERT_OK(sb_set_state(fd, CUBE_SANDBOX_READY, 0));
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_STATE);
	EXPECT_EQ(e.sb.id, id);
	EXPECT_EQ(e.sb.state, (uint32_t)CUBE_SANDBOX_READY);

	fd2 = sb_create_ready(self->dev, "tpl", &id2);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_NEW);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_STATE);
	ASSERT_OK(sb_pool_enter(fd, "evt"));
	ASSERT_OK(sb_pool_enter(fd2, "evt"));
	/* taking one leaves the pool below its low watermark */
	ASSERT_EQ(cnl_pool_take(&self->nl, "evt", &p), 0);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_POOL_LOW);
	EXPECT_STREQ(e.pool.name, "evt");
	EXPECT_EQ(e.pool.size, 1u);
	EXPECT_EQ(e.pool.low, 2u);

	ASSERT_OK(sb_set_state(fd, CUBE_SANDBOX_EXITED, CUBE_EXIT_SHUTDOWN));
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_STATE);
	EXPECT_EQ(e.sb.state, (uint32_t)CUBE_SANDBOX_EXITED);
	EXPECT_EQ(e.sb.exit_reason, (uint32_t)CUBE_EXIT_SHUTDOWN);
	close(fd);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_EXIT);
	EXPECT_EQ(e.sb.id, id);
	EXPECT_EQ(e.sb.exit_reason, (uint32_t)CUBE_EXIT_SHUTDOWN);
	/* closing a pooled sandbox: it leaves (pool low), then exits */
	close(fd2);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_POOL_LOW);
	EXPECT_EQ(e.pool.size, 0u);
	ASSERT_EQ(ev_next(&e), CUBE_CMD_EVENT_SANDBOX_EXIT);
	EXPECT_EQ(e.sb.id, id2);
	EXPECT_EQ(e.sb.state, (uint32_t)CUBE_SANDBOX_EXITED);
	EXPECT_EQ(e.sb.exit_reason, (uint32_t)CUBE_EXIT_CLOSED);
	EXPECT_EQ(cnl_pool_del(&self->nl, "evt"), 0);
	nl_socket_free(e.sk);
}

TEST_MAIN()
