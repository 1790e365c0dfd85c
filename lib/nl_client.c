// SPDX-License-Identifier: GPL-2.0
/*
 * nl_client.c: client of cube.ko's generic-netlink family "cube" (libnl-3).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "nl_client.h"

#define EV_BUF_LEN	(64 * 1024)

struct cube_nl {
	struct nl_sock *sk;
	int family;
	/* event sockets: received bytes not yet handed out */
	unsigned char *buf;
	size_t len, off;
};

/* libnl's own error codes to errno, for failures before the kernel answers */
static int nlerr_to_errno(int err)
{
	switch (-err) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_INVAL:
		return -EINVAL;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_NOADDR:
	case NLE_NODEV:
		return -ENODEV;
	default:
		return -EIO;
	}
}

static int open_sock(struct cube_nl **out, bool events)
{
	struct cube_nl *nl;
	int ret, grp;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		free(nl);
		return -ENOMEM;
	}
	ret = genl_connect(nl->sk);
	if (ret) {
		ret = nlerr_to_errno(ret);
		goto err;
	}
	nl->family = genl_ctrl_resolve(nl->sk, CUBE_GENL_NAME);
	if (nl->family < 0) {
		ret = -ENOPKG;
		goto err;
	}
	if (events) {
		grp = genl_ctrl_resolve_grp(nl->sk, CUBE_GENL_NAME,
					    CUBE_GENL_MCGRP_EVENTS);
		if (grp < 0) {
			ret = -ENOPKG;
			goto err;
		}
		nl_socket_disable_seq_check(nl->sk);
		ret = nl_socket_add_membership(nl->sk, grp);
		if (ret) {
			ret = nlerr_to_errno(ret);
			goto err;
		}
		nl->buf = malloc(EV_BUF_LEN);
		if (!nl->buf) {
			ret = -ENOMEM;
			goto err;
		}
	}
	*out = nl;
	return 0;
err:
	nl_socket_free(nl->sk);
	free(nl);
	return ret;
}

int cube_nl_open(struct cube_nl **out)
{
	return open_sock(out, false);
}

int cube_nl_events_open(struct cube_nl **out)
{
	return open_sock(out, true);
}

void cube_nl_close(struct cube_nl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->sk);
	free(nl->buf);
	free(nl);
}

int cube_nl_fd(struct cube_nl *nl)
{
	return nl_socket_get_fd(nl->sk);
}

int cube_nl_set_nonblocking(struct cube_nl *nl)
{
	return nl_socket_set_nonblocking(nl->sk) ? -EIO : 0;
}

/* --- attribute parsing --- */

static struct nla_policy sandbox_policy[CUBE_SANDBOX_A_MAX + 1] = {
	[CUBE_SANDBOX_A_ID]		= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_STATE]		= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_EXIT_REASON]	= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_FLAGS]		= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_OWNER_PID]	= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_OWNER_UID]	= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_TEMPLATE]	= { .type = NLA_STRING },
	[CUBE_SANDBOX_A_VCPUS]		= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_VM_VCPUS]	= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_MEMORY]		= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_PRIVATE_PAGES]	= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_SHARED_PAGES]	= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_NETNS_COOKIE]	= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_BPF_LINKS]	= { .type = NLA_U32 },
	[CUBE_SANDBOX_A_CREATED_NS]	= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_LABELS]		= { .type = NLA_NESTED },
	[CUBE_SANDBOX_A_POOL]		= { .type = NLA_STRING },
	[CUBE_SANDBOX_A_GRACE_MS]	= { .type = NLA_U32 },
};

static struct nla_policy label_policy[CUBE_LABEL_A_MAX + 1] = {
	[CUBE_LABEL_A_KEY]	= { .type = NLA_STRING },
	[CUBE_LABEL_A_VALUE]	= { .type = NLA_STRING },
};

static struct nla_policy pool_policy[CUBE_POOL_A_MAX + 1] = {
	[CUBE_POOL_A_NAME]	= { .type = NLA_STRING },
	[CUBE_POOL_A_TEMPLATE]	= { .type = NLA_STRING },
	[CUBE_POOL_A_TARGET]	= { .type = NLA_U32 },
	[CUBE_POOL_A_LOW]	= { .type = NLA_U32 },
	[CUBE_POOL_A_SIZE]	= { .type = NLA_U32 },
	[CUBE_POOL_A_TAKEN]	= { .type = NLA_U64 },
	[CUBE_POOL_A_SANDBOX_ID] = { .type = NLA_U64 },
	[CUBE_POOL_A_OWNER_PID]	= { .type = NLA_U32 },
};

static struct nla_policy stats_policy[CUBE_STATS_A_MAX + 1] = {
	[CUBE_STATS_A_SANDBOXES]	= { .type = NLA_U64 },
	[CUBE_STATS_A_POOLS]		= { .type = NLA_U64 },
	[CUBE_STATS_A_SNAPSHOTS]	= { .type = NLA_U64 },
	[CUBE_STATS_A_CLONES]		= { .type = NLA_U64 },
	[CUBE_STATS_A_SHARED_PAGES]	= { .type = NLA_U64 },
	[CUBE_STATS_A_PRIVATE_PAGES]	= { .type = NLA_U64 },
	[CUBE_STATS_A_POOLED]		= { .type = NLA_U64 },
};

static struct nla_policy snapshot_policy[CUBE_SNAPSHOT_A_MAX + 1] = {
	[CUBE_SNAPSHOT_A_ID]		= { .type = NLA_U64 },
	[CUBE_SNAPSHOT_A_SIZE]		= { .type = NLA_U64 },
	[CUBE_SNAPSHOT_A_PAGES]		= { .type = NLA_U64 },
	[CUBE_SNAPSHOT_A_PARENT_ID]	= { .type = NLA_U64 },
	[CUBE_SNAPSHOT_A_DEPTH]		= { .type = NLA_U32 },
	[CUBE_SNAPSHOT_A_CLONES]	= { .type = NLA_U32 },
	[CUBE_SNAPSHOT_A_CHILDREN]	= { .type = NLA_U32 },
	[CUBE_SNAPSHOT_A_WS_PAGES]	= { .type = NLA_U64 },
};

static uint64_t get_u64(struct nlattr *a)
{
	return a ? nla_get_u64(a) : 0;
}

static uint32_t get_u32(struct nlattr *a)
{
	return a ? nla_get_u32(a) : 0;
}

static void get_str(struct nlattr *a, char *buf, size_t len)
{
	buf[0] = '\0';
	if (a)
		nla_strlcpy(buf, a, len);
}

static int parse_labels(struct nlattr *nest, struct cube_nl_sandbox *sb)
{
	struct nlattr *tb[CUBE_LABEL_A_MAX + 1], *l;
	int rem;

	nla_for_each_nested(l, nest, rem) {
		struct cube_nl_label *lab;

		if (nla_type(l) != CUBE_LABELS_A_LABEL)
			continue;
		if (sb->nlabels >= CUBE_LABELS_MAX)
			return -E2BIG;
		if (nla_parse_nested(tb, CUBE_LABEL_A_MAX, l, label_policy))
			return -EBADMSG;
		lab = &sb->labels[sb->nlabels++];
		get_str(tb[CUBE_LABEL_A_KEY], lab->key, sizeof(lab->key));
		get_str(tb[CUBE_LABEL_A_VALUE], lab->value, sizeof(lab->value));
	}
	return 0;
}

static int parse_sandbox(struct nlattr *nest, struct cube_nl_sandbox *sb)
{
	struct nlattr *tb[CUBE_SANDBOX_A_MAX + 1];

	memset(sb, 0, sizeof(*sb));
	if (nla_parse_nested(tb, CUBE_SANDBOX_A_MAX, nest, sandbox_policy))
		return -EBADMSG;
	if (!tb[CUBE_SANDBOX_A_ID])
		return -EBADMSG;
	sb->id = get_u64(tb[CUBE_SANDBOX_A_ID]);
	sb->state = get_u32(tb[CUBE_SANDBOX_A_STATE]);
	sb->exit_reason = get_u32(tb[CUBE_SANDBOX_A_EXIT_REASON]);
	sb->flags = get_u32(tb[CUBE_SANDBOX_A_FLAGS]);
	sb->owner_pid = get_u32(tb[CUBE_SANDBOX_A_OWNER_PID]);
	sb->owner_uid = get_u32(tb[CUBE_SANDBOX_A_OWNER_UID]);
	sb->vcpus = get_u32(tb[CUBE_SANDBOX_A_VCPUS]);
	sb->vm_vcpus = get_u32(tb[CUBE_SANDBOX_A_VM_VCPUS]);
	sb->bpf_links = get_u32(tb[CUBE_SANDBOX_A_BPF_LINKS]);
	sb->memory = get_u64(tb[CUBE_SANDBOX_A_MEMORY]);
	sb->private_pages = get_u64(tb[CUBE_SANDBOX_A_PRIVATE_PAGES]);
	sb->shared_pages = get_u64(tb[CUBE_SANDBOX_A_SHARED_PAGES]);
	sb->netns_cookie = get_u64(tb[CUBE_SANDBOX_A_NETNS_COOKIE]);
	sb->created_ns = get_u64(tb[CUBE_SANDBOX_A_CREATED_NS]);
	get_str(tb[CUBE_SANDBOX_A_TEMPLATE], sb->template_name, sizeof(sb->template_name));
	get_str(tb[CUBE_SANDBOX_A_POOL], sb->pool, sizeof(sb->pool));
	if (tb[CUBE_SANDBOX_A_LABELS])
		return parse_labels(tb[CUBE_SANDBOX_A_LABELS], sb);
	return 0;
}

static int parse_pool(struct nlattr *nest, struct cube_nl_pool *p)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];

	memset(p, 0, sizeof(*p));
	if (nla_parse_nested(tb, CUBE_POOL_A_MAX, nest, pool_policy))
		return -EBADMSG;
	get_str(tb[CUBE_POOL_A_NAME], p->name, sizeof(p->name));
	get_str(tb[CUBE_POOL_A_TEMPLATE], p->template_name, sizeof(p->template_name));
	p->target = get_u32(tb[CUBE_POOL_A_TARGET]);
	p->low = get_u32(tb[CUBE_POOL_A_LOW]);
	p->size = get_u32(tb[CUBE_POOL_A_SIZE]);
	p->taken = get_u64(tb[CUBE_POOL_A_TAKEN]);
	return 0;
}

static int parse_snapshot(struct nlattr *nest, struct cube_nl_snapshot *s)
{
	struct nlattr *tb[CUBE_SNAPSHOT_A_MAX + 1];

	memset(s, 0, sizeof(*s));
	if (nla_parse_nested(tb, CUBE_SNAPSHOT_A_MAX, nest, snapshot_policy))
		return -EBADMSG;
	s->id = get_u64(tb[CUBE_SNAPSHOT_A_ID]);
	s->size = get_u64(tb[CUBE_SNAPSHOT_A_SIZE]);
	s->pages = get_u64(tb[CUBE_SNAPSHOT_A_PAGES]);
	s->parent_id = get_u64(tb[CUBE_SNAPSHOT_A_PARENT_ID]);
	s->depth = get_u32(tb[CUBE_SNAPSHOT_A_DEPTH]);
	s->clones = get_u32(tb[CUBE_SNAPSHOT_A_CLONES]);
	s->children = get_u32(tb[CUBE_SNAPSHOT_A_CHILDREN]);
	s->ws_pages = get_u64(tb[CUBE_SNAPSHOT_A_WS_PAGES]);
	return 0;
}

/* --- request / reply --- */

struct req_ctx {
	int err;		/* the kernel's errno, negative */
	int parse_err;
	/* one reply message at a time goes to @fn */
	int (*fn)(struct nlattr **tb, void *arg);
	void *arg;
	bool done;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct req_ctx *ctx = arg;
	struct nlattr *tb[CUBE_A_MAX + 1];
	int ret;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CUBE_A_MAX, NULL)) {
		ctx->parse_err = -EBADMSG;
		return NL_SKIP;
	}
	if (!ctx->fn)
		return NL_OK;
	ret = ctx->fn(tb, ctx->arg);
	if (ret && !ctx->parse_err)
		ctx->parse_err = ret;
	return NL_OK;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct req_ctx *ctx = arg;

	ctx->err = e->error < 0 ? e->error : -e->error;
	ctx->done = true;
	return NL_STOP;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct req_ctx *ctx = arg;

	ctx->done = true;
	return NL_STOP;
}

typedef int (*build_fn)(struct nl_msg *msg, const void *arg);

static int request(struct cube_nl *nl, uint8_t cmd, bool dump,
		   build_fn build, const void *barg,
		   int (*fn)(struct nlattr **tb, void *arg), void *arg)
{
	struct req_ctx ctx = { .fn = fn, .arg = arg };
	struct nl_msg *msg;
	struct nl_cb *cb;
	int ret;

	msg = nlmsg_alloc();
	if (!msg)
		return -ENOMEM;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
			 NLM_F_REQUEST | NLM_F_ACK | (dump ? NLM_F_DUMP : 0),
			 cmd, CUBE_GENL_VERSION)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	if (build) {
		ret = build(msg, barg);
		if (ret < 0) {
			nlmsg_free(msg);
			return ret == -NLE_NOMEM ? -EMSGSIZE : ret;
		}
	}
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &ctx);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_finish, &ctx);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &ctx);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &ctx);

	ret = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		nl_cb_put(cb);
		return nlerr_to_errno(ret);
	}
	ret = 0;
	while (!ctx.done) {
		ret = nl_recvmsgs(nl->sk, cb);
		if (ret < 0)
			break;
	}
	nl_cb_put(cb);
	if (ctx.err)
		return ctx.err;
	if (ret < 0)
		return nlerr_to_errno(ret);
	return ctx.parse_err;
}

/* --- message builders --- */

static int put_sandbox_id(struct nl_msg *msg, const void *arg)
{
	const uint64_t *id = arg;
	struct nlattr *n = nla_nest_start(msg, CUBE_A_SANDBOX);

	if (!n || nla_put_u64(msg, CUBE_SANDBOX_A_ID, *id))
		return -EMSGSIZE;
	nla_nest_end(msg, n);
	return 0;
}

struct kill_arg {
	uint64_t id;
	uint32_t grace_ms;
};

static int put_kill(struct nl_msg *msg, const void *arg)
{
	const struct kill_arg *k = arg;
	struct nlattr *n = nla_nest_start(msg, CUBE_A_SANDBOX);

	if (!n || nla_put_u64(msg, CUBE_SANDBOX_A_ID, k->id))
		return -EMSGSIZE;
	if (k->grace_ms && nla_put_u32(msg, CUBE_SANDBOX_A_GRACE_MS,
				       k->grace_ms))
		return -EMSGSIZE;
	nla_nest_end(msg, n);
	return 0;
}

struct pool_arg {
	const char *name;
	const char *template;
	uint32_t target, low;
	bool set_target, set_low;
};

static int put_pool(struct nl_msg *msg, const void *arg)
{
	const struct pool_arg *p = arg;
	struct nlattr *n = nla_nest_start(msg, CUBE_A_POOL);

	if (!n || nla_put_string(msg, CUBE_POOL_A_NAME, p->name))
		return -EMSGSIZE;
	if (p->template && nla_put_string(msg, CUBE_POOL_A_TEMPLATE,
					  p->template))
		return -EMSGSIZE;
	if (p->set_target && nla_put_u32(msg, CUBE_POOL_A_TARGET, p->target))
		return -EMSGSIZE;
	if (p->set_low && nla_put_u32(msg, CUBE_POOL_A_LOW, p->low))
		return -EMSGSIZE;
	nla_nest_end(msg, n);
	return 0;
}

static int put_snapshot_id(struct nl_msg *msg, const void *arg)
{
	const uint64_t *id = arg;
	struct nlattr *n = nla_nest_start(msg, CUBE_A_SNAPSHOT);

	if (!n || nla_put_u64(msg, CUBE_SNAPSHOT_A_ID, *id))
		return -EMSGSIZE;
	nla_nest_end(msg, n);
	return 0;
}

/* --- reply collectors --- */

struct vec {
	void *v;
	size_t n, cap, size;
};

static void *vec_push(struct vec *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 16;
		void *nv = realloc(v->v, cap * v->size);

		if (!nv)
			return NULL;
		v->v = nv;
		v->cap = cap;
	}
	return (char *)v->v + v->n++ * v->size;
}

static int collect_sandbox(struct nlattr **tb, void *arg)
{
	struct vec *v = arg;
	struct cube_nl_sandbox *sb;

	if (!tb[CUBE_A_SANDBOX])
		return 0;
	sb = vec_push(v);
	if (!sb)
		return -ENOMEM;
	if (parse_sandbox(tb[CUBE_A_SANDBOX], sb)) {
		v->n--;
		return -EBADMSG;
	}
	return 0;
}

static int collect_pool(struct nlattr **tb, void *arg)
{
	struct vec *v = arg;
	struct cube_nl_pool *p;

	if (!tb[CUBE_A_POOL])
		return 0;
	p = vec_push(v);
	if (!p)
		return -ENOMEM;
	if (parse_pool(tb[CUBE_A_POOL], p)) {
		v->n--;
		return -EBADMSG;
	}
	return 0;
}

static int collect_snapshot(struct nlattr **tb, void *arg)
{
	struct vec *v = arg;
	struct cube_nl_snapshot *s;

	if (!tb[CUBE_A_SNAPSHOT])
		return 0;
	s = vec_push(v);
	if (!s)
		return -ENOMEM;
	if (parse_snapshot(tb[CUBE_A_SNAPSHOT], s)) {
		v->n--;
		return -EBADMSG;
	}
	return 0;
}

static int collect_stats(struct nlattr **tb, void *arg)
{
	struct nlattr *st[CUBE_STATS_A_MAX + 1];
	struct cube_nl_stats *s = arg;

	if (!tb[CUBE_A_STATS])
		return -EBADMSG;
	if (nla_parse_nested(st, CUBE_STATS_A_MAX, tb[CUBE_A_STATS],
			     stats_policy))
		return -EBADMSG;
	s->sandboxes = get_u64(st[CUBE_STATS_A_SANDBOXES]);
	s->pools = get_u64(st[CUBE_STATS_A_POOLS]);
	s->snapshots = get_u64(st[CUBE_STATS_A_SNAPSHOTS]);
	s->clones = get_u64(st[CUBE_STATS_A_CLONES]);
	s->shared_pages = get_u64(st[CUBE_STATS_A_SHARED_PAGES]);
	s->private_pages = get_u64(st[CUBE_STATS_A_PRIVATE_PAGES]);
	s->pooled = get_u64(st[CUBE_STATS_A_POOLED]);
	return 0;
}

/* --- public requests --- */

int cube_nl_stats(struct cube_nl *nl, struct cube_nl_stats *st)
{
	memset(st, 0, sizeof(*st));
	return request(nl, CUBE_CMD_GET_STATS, false, NULL, NULL,
		       collect_stats, st);
}

int cube_nl_sandbox_get(struct cube_nl *nl, uint64_t id,
			struct cube_nl_sandbox *out)
{
	struct vec v = { .size = sizeof(*out) };
	int ret;

	ret = request(nl, CUBE_CMD_GET_SANDBOX, false, put_sandbox_id, &id,
		      collect_sandbox, &v);
	if (!ret && v.n != 1)
		ret = -EBADMSG;
	if (!ret)
		memcpy(out, v.v, sizeof(*out));
	free(v.v);
	return ret;
}

int cube_nl_sandbox_dump(struct cube_nl *nl, struct cube_nl_sandbox **out,
			 size_t *n)
{
	struct vec v = { .size = sizeof(**out) };
	int ret;

	ret = request(nl, CUBE_CMD_GET_SANDBOX, true, NULL, NULL,
		      collect_sandbox, &v);
	if (ret) {
		free(v.v);
		return ret;
	}
	*out = v.v;
	*n = v.n;
	return 0;
}

int cube_nl_sandbox_kill(struct cube_nl *nl, uint64_t id, uint32_t grace_ms)
{
	struct kill_arg k = { .id = id, .grace_ms = grace_ms };

	return request(nl, CUBE_CMD_KILL_SANDBOX, false, put_kill, &k,
		       NULL, NULL);
}

int cube_nl_pool_new(struct cube_nl *nl, const char *name,
		     const char *template, uint32_t target, uint32_t low)
{
	struct pool_arg p = {
		.name = name, .template = template, .target = target,
		.low = low, .set_target = true, .set_low = true,
	};

	return request(nl, CUBE_CMD_NEW_POOL, false, put_pool, &p, NULL, NULL);
}

int cube_nl_pool_set(struct cube_nl *nl, const char *name, uint32_t target,
		     uint32_t low)
{
	struct pool_arg p = {
		.name = name, .target = target, .low = low,
		.set_target = true, .set_low = true,
	};

	return request(nl, CUBE_CMD_SET_POOL, false, put_pool, &p, NULL, NULL);
}

int cube_nl_pool_del(struct cube_nl *nl, const char *name)
{
	struct pool_arg p = { .name = name };

	return request(nl, CUBE_CMD_DEL_POOL, false, put_pool, &p, NULL, NULL);
}

int cube_nl_pool_get(struct cube_nl *nl, const char *name,
		     struct cube_nl_pool *out)
{
	struct vec v = { .size = sizeof(*out) };
	struct pool_arg p = { .name = name };
	int ret;

	ret = request(nl, CUBE_CMD_GET_POOL, false, put_pool, &p,
		      collect_pool, &v);
	if (!ret && v.n != 1)
		ret = -EBADMSG;
	if (!ret)
		memcpy(out, v.v, sizeof(*out));
	free(v.v);
	return ret;
}

int cube_nl_pool_dump(struct cube_nl *nl, struct cube_nl_pool **out,
		      size_t *n)
{
	struct vec v = { .size = sizeof(**out) };
	int ret;

	ret = request(nl, CUBE_CMD_GET_POOL, true, NULL, NULL,
		      collect_pool, &v);
	if (ret) {
		free(v.v);
		return ret;
	}
	*out = v.v;
	*n = v.n;
	return 0;
}

struct take_ctx {
	uint64_t id;
	uint32_t owner_pid;
	bool got;
};

static int collect_take(struct nlattr **tb, void *arg)
{
	struct nlattr *pt[CUBE_POOL_A_MAX + 1];
	struct take_ctx *t = arg;

	if (!tb[CUBE_A_POOL] ||
	    nla_parse_nested(pt, CUBE_POOL_A_MAX, tb[CUBE_A_POOL], pool_policy) ||
	    !pt[CUBE_POOL_A_SANDBOX_ID])
		return -EBADMSG;
	t->id = nla_get_u64(pt[CUBE_POOL_A_SANDBOX_ID]);
	t->owner_pid = get_u32(pt[CUBE_POOL_A_OWNER_PID]);
	t->got = true;
	return 0;
}

int cube_nl_pool_take(struct cube_nl *nl, const char *name, uint64_t *id,
		      uint32_t *owner_pid)
{
	struct pool_arg p = { .name = name };
	struct take_ctx t = { 0 };
	int ret;

	ret = request(nl, CUBE_CMD_TAKE_POOL, false, put_pool, &p,
		      collect_take, &t);
	if (!ret && !t.got)
		ret = -EBADMSG;
	if (ret)
		return ret;
	*id = t.id;
	if (owner_pid)
		*owner_pid = t.owner_pid;
	return 0;
}

int cube_nl_snapshot_dump(struct cube_nl *nl, struct cube_nl_snapshot **out,
			  size_t *n)
{
	struct vec v = { .size = sizeof(**out) };
	int ret;

	ret = request(nl, CUBE_CMD_GET_SNAPSHOT, true, NULL, NULL,
		      collect_snapshot, &v);
	if (ret) {
		free(v.v);
		return ret;
	}
	*out = v.v;
	*n = v.n;
	return 0;
}

int cube_nl_snapshot_del(struct cube_nl *nl, uint64_t id)
{
	return request(nl, CUBE_CMD_DEL_SNAPSHOT, false, put_snapshot_id, &id,
		       NULL, NULL);
}

/* --- events --- */

static int parse_event(struct nlmsghdr *nlh, int family,
		       struct cube_nl_event *ev)
{
	struct nlattr *tb[CUBE_A_MAX + 1];
	struct genlmsghdr *gh;

	if (nlh->nlmsg_type != family)
		return -EAGAIN;		/* not ours: skip */
	if (genlmsg_parse(nlh, 0, tb, CUBE_A_MAX, NULL))
		return -EBADMSG;
	gh = nlmsg_data(nlh);
	memset(ev, 0, sizeof(*ev));
	ev->cmd = gh->cmd;
	if (tb[CUBE_A_SANDBOX]) {
		if (parse_sandbox(tb[CUBE_A_SANDBOX], &ev->sandbox))
			return -EBADMSG;
		ev->has_sandbox = true;
	}
	if (tb[CUBE_A_POOL]) {
		if (parse_pool(tb[CUBE_A_POOL], &ev->pool))
			return -EBADMSG;
		ev->has_pool = true;
	}
	return 0;
}

int cube_nl_event_next(struct cube_nl *nl, struct cube_nl_event *ev)
{
	int fd = nl_socket_get_fd(nl->sk);

	if (!nl->buf)
		return -EINVAL;
	for (;;) {
		struct nlmsghdr *nlh;
		size_t rem;
		ssize_t n;
		int ret;

		while (nl->off < nl->len) {
			nlh = (struct nlmsghdr *)(nl->buf + nl->off);
			rem = nl->len - nl->off;
			if (!nlmsg_ok(nlh, rem)) {
				nl->off = nl->len;
				break;
			}
			nl->off += NLMSG_ALIGN(nlh->nlmsg_len);
			ret = parse_event(nlh, nl->family, ev);
			if (ret == -EAGAIN)
				continue;
			return ret;
		}
		n = recv(fd, nl->buf, EV_BUF_LEN, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		nl->len = n;
		nl->off = 0;
	}
}

/* --- names --- */

const char *cube_nl_state_name(uint32_t state)
{
	static const char * const names[] = {
		[CUBE_SANDBOX_CREATING] = "creating",
		[CUBE_SANDBOX_READY] = "ready",
		[CUBE_SANDBOX_RUNNING] = "running",
		[CUBE_SANDBOX_PAUSED] = "paused",
		[CUBE_SANDBOX_EXITED] = "exited",
	};

	return state < __CUBE_SANDBOX_STATE_MAX ? names[state] : "unknown";
}

const char *cube_nl_exit_name(uint32_t reason)
{
	static const char * const names[] = {
		[CUBE_EXIT_NONE] = "none",
		[CUBE_EXIT_SHUTDOWN] = "shutdown",
		[CUBE_EXIT_CRASH] = "crash",
		[CUBE_EXIT_KILLED] = "killed",
		[CUBE_EXIT_ERROR] = "error",
		[CUBE_EXIT_CLOSED] = "closed",
	};

	return reason < __CUBE_EXIT_MAX ? names[reason] : "unknown";
}

const char *cube_nl_event_name(uint8_t cmd)
{
	switch (cmd) {
	case CUBE_CMD_EVENT_SANDBOX_NEW:
		return "sandbox-new";
	case CUBE_CMD_EVENT_SANDBOX_STATE:
		return "sandbox-state";
	case CUBE_CMD_EVENT_SANDBOX_EXIT:
		return "sandbox-exit";
	case CUBE_CMD_EVENT_POOL_LOW:
		return "pool-low";
	default:
		return "unknown";
	}
}
