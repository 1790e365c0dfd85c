/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_nl.h: a small client of the "cube" generic-netlink family for the
 * selftests, on libnl-genl-3.  Every request returns 0 or -errno exactly as
 * the kernel answered; the extack message of the last error is kept.
 */
#ifndef CUBE_NL_H
#define CUBE_NL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <linux/cube.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct cnl {
	struct nl_sock *sk;
	int family;
	int mcgrp;
	int err;		/* errno of the last NLMSG_ERROR */
	char ext_msg[256];	/* its extack message */
	uint32_t ext_offs;	/* its NLMSGERR_ATTR_OFFS, 0 when none */
	bool done;
	int (*parse)(struct nlattr **tb, void *arg);
	void *arg;
};

struct cnl_sandbox {
	uint64_t id;
	uint32_t state, exit_reason, flags, owner_pid, owner_uid;
	uint32_t vcpus, vm_vcpus, bpf_links;
	uint64_t memory, private_pages, shared_pages, netns_cookie, created_ns;
	uint64_t vm_memory;
	char template[CUBE_NAME_MAX];
	char pool[CUBE_NAME_MAX];
	unsigned int nr_labels;
	char label_key[CUBE_LABELS_MAX][CUBE_NAME_MAX];
	char label_value[CUBE_LABELS_MAX][CUBE_LABEL_VALUE_MAX];
};

struct cnl_pool {
	char name[CUBE_NAME_MAX];
	char template[CUBE_NAME_MAX];
	uint32_t target, low, size, owner_pid;
	uint64_t taken, sandbox_id;
};

static inline int cnl_open(struct cnl *c)
{
	int one = 1, fd;

	memset(c, 0, sizeof(*c));
	c->sk = nl_socket_alloc();
	if (!c->sk)
		return -ENOMEM;
	if (genl_connect(c->sk))
		goto err;
	fd = nl_socket_get_fd(c->sk);
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	nl_socket_set_msg_buf_size(c->sk, 65536);
	c->family = genl_ctrl_resolve(c->sk, CUBE_GENL_NAME);
	if (c->family < 0)
		goto err;
	c->mcgrp = genl_ctrl_resolve_grp(c->sk, CUBE_GENL_NAME,
					 CUBE_GENL_MCGRP_EVENTS);
	if (c->mcgrp < 0)
		goto err;
	return 0;
err:
	nl_socket_free(c->sk);
	c->sk = NULL;
	return -ENOENT;
}

static inline void cnl_close(struct cnl *c)
{
	if (c->sk)
		nl_socket_free(c->sk);
	c->sk = NULL;
}

/* A request of command @cmd; @flags: NLM_F_DUMP or 0. */
static inline struct nl_msg *cnl_msg(struct cnl *c, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc_size(16384);

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags,
			 cmd, CUBE_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static inline int cnl_err_cb(struct sockaddr_nl *nla, struct nlmsgerr *err,
			     void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)err - NLMSG_HDRLEN);
	struct cnl *c = arg;
	size_t off = NLMSG_HDRLEN + sizeof(*err);
	struct nlattr *a;
	int rem;

	c->err = err->error;
	c->done = true;
	c->ext_msg[0] = 0;
	c->ext_offs = 0;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += err->msg.nlmsg_len - NLMSG_HDRLEN;
	if (off >= nlh->nlmsg_len)
		return NL_STOP;
	a = (struct nlattr *)((char *)nlh + off);
	rem = nlh->nlmsg_len - off;
	for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
		if (nla_type(a) == NLMSGERR_ATTR_MSG)
			snprintf(c->ext_msg, sizeof(c->ext_msg), "%.*s",
				 nla_len(a), (char *)nla_data(a));
		else if (nla_type(a) == NLMSGERR_ATTR_OFFS &&
			 nla_len(a) >= 4)
			c->ext_offs = nla_get_u32(a);
	}
	return NL_STOP;
}

static inline int cnl_finish_cb(struct nl_msg *msg, void *arg)
{
	struct cnl *c = arg;

	c->done = true;
	c->err = 0;
	return NL_STOP;
}

static inline int cnl_valid_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[CUBE_A_MAX + 1];
	struct cnl *c = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CUBE_A_MAX, NULL))
		return NL_SKIP;
	if (c->parse && c->parse(tb, c->arg))
		return NL_STOP;
	return NL_OK;
}

/*
 * Send @msg (consumed) and read the answer up to its ack, NLMSG_DONE or
 * error; @parse sees each reply's top-level attributes.
 */
static inline int cnl_exchange(struct cnl *c, struct nl_msg *msg,
			       int (*parse)(struct nlattr **, void *),
			       void *arg)
{
	struct nl_cb *cb;
	int ret;

	if (!msg)
		return -ENOMEM;
	cb = nl_cb_alloc(NL_CB_CUSTOM);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	c->done = false;
	c->err = 0;
	c->parse = parse;
	c->arg = arg;
	nl_cb_err(cb, NL_CB_CUSTOM, cnl_err_cb, c);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, cnl_finish_cb, c);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, cnl_finish_cb, c);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cnl_valid_cb, c);
	ret = nl_send_auto(c->sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		nl_cb_put(cb);
		return -EIO;
	}
	while (!c->done) {
		ret = nl_recvmsgs(c->sk, cb);
		if (ret < 0 && !c->done) {
			nl_cb_put(cb);
			return -EIO;
		}
	}
	nl_cb_put(cb);
	return c->err;
}

static inline void cnl_parse_sandbox(struct nlattr *nest, struct cnl_sandbox *s)
{
	struct nlattr *tb[CUBE_SANDBOX_A_MAX + 1], *l;
	int rem;

	memset(s, 0, sizeof(*s));
	if (nla_parse_nested(tb, CUBE_SANDBOX_A_MAX, nest, NULL))
		return;
#define CNL_U32(a, f) if (tb[a]) s->f = nla_get_u32(tb[a])
#define CNL_U64(a, f) if (tb[a]) s->f = nla_get_u64(tb[a])
	CNL_U64(CUBE_SANDBOX_A_ID, id);
	CNL_U32(CUBE_SANDBOX_A_STATE, state);
	CNL_U32(CUBE_SANDBOX_A_EXIT_REASON, exit_reason);
	CNL_U32(CUBE_SANDBOX_A_FLAGS, flags);
	CNL_U32(CUBE_SANDBOX_A_OWNER_PID, owner_pid);
	CNL_U32(CUBE_SANDBOX_A_OWNER_UID, owner_uid);
	CNL_U32(CUBE_SANDBOX_A_VCPUS, vcpus);
	CNL_U32(CUBE_SANDBOX_A_VM_VCPUS, vm_vcpus);
	CNL_U32(CUBE_SANDBOX_A_BPF_LINKS, bpf_links);
	CNL_U64(CUBE_SANDBOX_A_MEMORY, memory);
	CNL_U64(CUBE_SANDBOX_A_PRIVATE_PAGES, private_pages);
	CNL_U64(CUBE_SANDBOX_A_SHARED_PAGES, shared_pages);
	CNL_U64(CUBE_SANDBOX_A_NETNS_COOKIE, netns_cookie);
	CNL_U64(CUBE_SANDBOX_A_CREATED_NS, created_ns);
	CNL_U64(CUBE_SANDBOX_A_VM_MEMORY, vm_memory);
#undef CNL_U32
#undef CNL_U64
	if (tb[CUBE_SANDBOX_A_TEMPLATE])
		nla_strlcpy(s->template, tb[CUBE_SANDBOX_A_TEMPLATE],
			    sizeof(s->template));
	if (tb[CUBE_SANDBOX_A_POOL])
		nla_strlcpy(s->pool, tb[CUBE_SANDBOX_A_POOL], sizeof(s->pool));
	if (!tb[CUBE_SANDBOX_A_LABELS])
		return;
	nla_for_each_nested(l, tb[CUBE_SANDBOX_A_LABELS], rem) {
		struct nlattr *lb[CUBE_LABEL_A_MAX + 1];
		unsigned int i = s->nr_labels;

		if (nla_type(l) != CUBE_LABELS_A_LABEL || i >= CUBE_LABELS_MAX ||
		    nla_parse_nested(lb, CUBE_LABEL_A_MAX, l, NULL) ||
		    !lb[CUBE_LABEL_A_KEY] || !lb[CUBE_LABEL_A_VALUE])
			continue;
		nla_strlcpy(s->label_key[i], lb[CUBE_LABEL_A_KEY], CUBE_NAME_MAX);
		nla_strlcpy(s->label_value[i], lb[CUBE_LABEL_A_VALUE],
			    CUBE_LABEL_VALUE_MAX);
		s->nr_labels++;
	}
}

static inline void cnl_parse_pool(struct nlattr *nest, struct cnl_pool *p)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];

	memset(p, 0, sizeof(*p));
	if (nla_parse_nested(tb, CUBE_POOL_A_MAX, nest, NULL))
		return;
	if (tb[CUBE_POOL_A_NAME])
		nla_strlcpy(p->name, tb[CUBE_POOL_A_NAME], sizeof(p->name));
	if (tb[CUBE_POOL_A_TEMPLATE])
		nla_strlcpy(p->template, tb[CUBE_POOL_A_TEMPLATE],
			    sizeof(p->template));
	if (tb[CUBE_POOL_A_TARGET])
		p->target = nla_get_u32(tb[CUBE_POOL_A_TARGET]);
	if (tb[CUBE_POOL_A_LOW])
		p->low = nla_get_u32(tb[CUBE_POOL_A_LOW]);
	if (tb[CUBE_POOL_A_SIZE])
		p->size = nla_get_u32(tb[CUBE_POOL_A_SIZE]);
	if (tb[CUBE_POOL_A_OWNER_PID])
		p->owner_pid = nla_get_u32(tb[CUBE_POOL_A_OWNER_PID]);
	if (tb[CUBE_POOL_A_TAKEN])
		p->taken = nla_get_u64(tb[CUBE_POOL_A_TAKEN]);
	if (tb[CUBE_POOL_A_SANDBOX_ID])
		p->sandbox_id = nla_get_u64(tb[CUBE_POOL_A_SANDBOX_ID]);
}

/* Module counters, indexed by enum cube_stats_attr. */
struct cnl_stats {
	uint64_t v[CUBE_STATS_A_MAX + 1];
	bool present[CUBE_STATS_A_MAX + 1];
};

static inline int cnl_stats_cb(struct nlattr **tb, void *arg)
{
	struct nlattr *st[CUBE_STATS_A_MAX + 1];
	struct cnl_stats *s = arg;
	int i;

	if (!tb[CUBE_A_STATS] ||
	    nla_parse_nested(st, CUBE_STATS_A_MAX, tb[CUBE_A_STATS], NULL))
		return 0;
	for (i = CUBE_STATS_A_SANDBOXES; i <= CUBE_STATS_A_MAX; i++) {
		if (!st[i])
			continue;
		s->v[i] = nla_get_u64(st[i]);
		s->present[i] = true;
	}
	return 0;
}

static inline int cnl_stats(struct cnl *c, struct cnl_stats *s)
{
	memset(s, 0, sizeof(*s));
	return cnl_exchange(c, cnl_msg(c, CUBE_CMD_GET_STATS, 0),
			    cnl_stats_cb, s);
}

static inline int cnl_sandbox_cb(struct nlattr **tb, void *arg)
{
	if (tb[CUBE_A_SANDBOX])
		cnl_parse_sandbox(tb[CUBE_A_SANDBOX], arg);
	return 0;
}

static inline int cnl_sandbox_get(struct cnl *c, uint64_t id,
				  struct cnl_sandbox *s)
{
	struct nl_msg *msg = cnl_msg(c, CUBE_CMD_GET_SANDBOX, 0);
	struct nlattr *n;

	if (!msg)
		return -ENOMEM;
	n = nla_nest_start(msg, CUBE_A_SANDBOX);
	nla_put_u64(msg, CUBE_SANDBOX_A_ID, id);
	nla_nest_end(msg, n);
	memset(s, 0, sizeof(*s));
	return cnl_exchange(c, msg, cnl_sandbox_cb, s);
}

/* Kill sandbox @id; @grace_ms < 0: the default grace period. */
static inline int cnl_kill(struct cnl *c, uint64_t id, int64_t grace_ms)
{
	struct nl_msg *msg = cnl_msg(c, CUBE_CMD_KILL_SANDBOX, 0);
	struct nlattr *n;

	if (!msg)
		return -ENOMEM;
	n = nla_nest_start(msg, CUBE_A_SANDBOX);
	nla_put_u64(msg, CUBE_SANDBOX_A_ID, id);
	if (grace_ms >= 0)
		nla_put_u32(msg, CUBE_SANDBOX_A_GRACE_MS, grace_ms);
	nla_nest_end(msg, n);
	return cnl_exchange(c, msg, NULL, NULL);
}

/* Pool request: @target / @low < 0 are left out, @template may be NULL. */
static inline struct nl_msg *cnl_pool_msg(struct cnl *c, uint8_t cmd,
					  const char *name,
					  const char *template,
					  int64_t target, int64_t low)
{
	struct nl_msg *msg = cnl_msg(c, cmd, 0);
	struct nlattr *n;

	if (!msg)
		return NULL;
	n = nla_nest_start(msg, CUBE_A_POOL);
	if (name)
		nla_put_string(msg, CUBE_POOL_A_NAME, name);
	if (template)
		nla_put_string(msg, CUBE_POOL_A_TEMPLATE, template);
	if (target >= 0)
		nla_put_u32(msg, CUBE_POOL_A_TARGET, target);
	if (low >= 0)
		nla_put_u32(msg, CUBE_POOL_A_LOW, low);
	nla_nest_end(msg, n);
	return msg;
}

static inline int cnl_pool_new(struct cnl *c, const char *name,
			       const char *template, uint32_t target,
			       uint32_t low)
{
	return cnl_exchange(c, cnl_pool_msg(c, CUBE_CMD_NEW_POOL, name,
					    template, target, low), NULL, NULL);
}

static inline int cnl_pool_del(struct cnl *c, const char *name)
{
	return cnl_exchange(c, cnl_pool_msg(c, CUBE_CMD_DEL_POOL, name, NULL,
					    -1, -1), NULL, NULL);
}

static inline int cnl_pool_set(struct cnl *c, const char *name,
			       int64_t target, int64_t low)
{
	return cnl_exchange(c, cnl_pool_msg(c, CUBE_CMD_SET_POOL, name, NULL,
					    target, low), NULL, NULL);
}

static inline int cnl_pool_cb(struct nlattr **tb, void *arg)
{
	if (tb[CUBE_A_POOL])
		cnl_parse_pool(tb[CUBE_A_POOL], arg);
	return 0;
}

static inline int cnl_pool_get(struct cnl *c, const char *name,
			       struct cnl_pool *p)
{
	memset(p, 0, sizeof(*p));
	return cnl_exchange(c, cnl_pool_msg(c, CUBE_CMD_GET_POOL, name, NULL,
					    -1, -1), cnl_pool_cb, p);
}

static inline int cnl_pool_take(struct cnl *c, const char *name,
				struct cnl_pool *p)
{
	memset(p, 0, sizeof(*p));
	return cnl_exchange(c, cnl_pool_msg(c, CUBE_CMD_TAKE_POOL, name, NULL,
					    -1, -1), cnl_pool_cb, p);
}

/* Wait until the module's live sandbox count is @n (max ~30 s: emulation). */
static inline int cnl_wait_sandboxes(struct cnl *c, uint64_t n)
{
	struct cnl_stats s;
	int i;

	for (i = 0; i < 3000; i++) {
		if (cnl_stats(c, &s))
			return -EIO;
		if (s.v[CUBE_STATS_A_SANDBOXES] == n)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

#endif /* CUBE_NL_H */
