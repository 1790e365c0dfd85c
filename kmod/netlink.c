// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: the "cube" generic-netlink family.
 *
 * Every operation has its own strict policy; objects travel in nests
 * (CUBE_A_SANDBOX, CUBE_A_POOL, ...).  Reading is open to everyone in the
 * initial network namespace, changing anything needs CAP_NET_ADMIN.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/pid.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "compat.h"
#include "sandbox.h"

enum {
	CUBE_MCGRP_EVENTS_ID,
};

/* Room for one sandbox with every label at its largest. */
#define CUBE_NL_SANDBOX_SIZE	8192

static struct genl_family cube_genl_family;

static struct netlink_range_validation cube_grace_range = {
	.max	= CUBE_KILL_GRACE_MS_MAX,
};

/* Policies of the nests, one per operation so each takes only its keys. */
static const struct nla_policy
cube_sandbox_id_policy[CUBE_SANDBOX_A_MAX + 1] = {
	[CUBE_SANDBOX_A_ID]		= { .type = NLA_U64 },
};

static const struct nla_policy
cube_sandbox_kill_policy[CUBE_SANDBOX_A_MAX + 1] = {
	[CUBE_SANDBOX_A_ID]		= { .type = NLA_U64 },
	[CUBE_SANDBOX_A_GRACE_MS]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &cube_grace_range),
};

static const struct nla_policy
cube_pool_name_policy[CUBE_POOL_A_MAX + 1] = {
	[CUBE_POOL_A_NAME]	= { .type = NLA_NUL_STRING,
				    .len = CUBE_NAME_MAX - 1 },
};

static const struct nla_policy
cube_pool_new_policy[CUBE_POOL_A_MAX + 1] = {
	[CUBE_POOL_A_NAME]	= { .type = NLA_NUL_STRING,
				    .len = CUBE_NAME_MAX - 1 },
	[CUBE_POOL_A_TEMPLATE]	= { .type = NLA_NUL_STRING,
				    .len = CUBE_NAME_MAX - 1 },
	[CUBE_POOL_A_TARGET]	=
		NLA_POLICY_RANGE(NLA_U32, 1, CUBE_POOL_TARGET_MAX),
	[CUBE_POOL_A_LOW]	=
		NLA_POLICY_MAX(NLA_U32, CUBE_POOL_TARGET_MAX),
};

static const struct nla_policy
cube_pool_set_policy[CUBE_POOL_A_MAX + 1] = {
	[CUBE_POOL_A_NAME]	= { .type = NLA_NUL_STRING,
				    .len = CUBE_NAME_MAX - 1 },
	[CUBE_POOL_A_TARGET]	=
		NLA_POLICY_RANGE(NLA_U32, 1, CUBE_POOL_TARGET_MAX),
	[CUBE_POOL_A_LOW]	=
		NLA_POLICY_MAX(NLA_U32, CUBE_POOL_TARGET_MAX),
};

/* Top-level policies. */
static const struct nla_policy cube_nl_sandbox_get_policy[] = {
	[CUBE_A_SANDBOX]	= NLA_POLICY_NESTED(cube_sandbox_id_policy),
};

static const struct nla_policy cube_nl_sandbox_kill_policy[] = {
	[CUBE_A_SANDBOX]	= NLA_POLICY_NESTED(cube_sandbox_kill_policy),
};

static const struct nla_policy cube_nl_snapshot_policy[] = {
	[CUBE_A_SNAPSHOT]	= _NLA_POLICY_NESTED(CUBE_SNAPSHOT_A_MAX,
						     cube_snapshot_nl_policy),
};

static const struct nla_policy cube_nl_pool_name_policy[] = {
	[CUBE_A_POOL]		= NLA_POLICY_NESTED(cube_pool_name_policy),
};

static const struct nla_policy cube_nl_pool_new_policy[] = {
	[CUBE_A_POOL]		= NLA_POLICY_NESTED(cube_pool_new_policy),
};

static const struct nla_policy cube_nl_pool_set_policy[] = {
	[CUBE_A_POOL]		= NLA_POLICY_NESTED(cube_pool_set_policy),
};

static int cube_nl_put_labels(struct sk_buff *skb, struct cube_sandbox *sb)
{
	struct nlattr *labels, *label;
	unsigned int i;

	labels = nla_nest_start(skb, CUBE_SANDBOX_A_LABELS);
	if (!labels)
		return -EMSGSIZE;
	for (i = 0; i < sb->nr_labels; i++) {
		label = nla_nest_start(skb, CUBE_LABELS_A_LABEL);
		if (!label ||
		    nla_put_string(skb, CUBE_LABEL_A_KEY, sb->labels[i].key) ||
		    nla_put_string(skb, CUBE_LABEL_A_VALUE,
				   sb->labels[i].value))
			return -EMSGSIZE;
		nla_nest_end(skb, label);
	}
	nla_nest_end(skb, labels);
	return 0;
}

/* The sandbox's attributes; sb->lock is held. */
static int cube_nl_put_sandbox(struct sk_buff *skb, struct cube_sandbox *sb,
			       bool global_pid)
{
	u64 priv = 0, shared = 0, faults;
	u32 flags = sb->flags;

	if (sb->clone)
		cube_clone_counters(sb->clone, &priv, &shared, &faults);
	if (sb->pool)
		flags |= CUBE_SANDBOX_F_POOLED;
	if (nla_put_u64_64bit(skb, CUBE_SANDBOX_A_ID, sb->id,
			      CUBE_SANDBOX_A_PAD) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_STATE, sb->state) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_EXIT_REASON, sb->exit_reason) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_FLAGS, flags) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_OWNER_PID,
			global_pid ? pid_nr(sb->owner) : pid_vnr(sb->owner)) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_OWNER_UID, sb->owner_uid) ||
	    (sb->template[0] &&
	     nla_put_string(skb, CUBE_SANDBOX_A_TEMPLATE, sb->template)) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_VCPUS, sb->vcpus) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_VM_VCPUS,
			cube_sandbox_vm_vcpus(sb)) ||
	    nla_put_u64_64bit(skb, CUBE_SANDBOX_A_MEMORY, sb->memory_bytes,
			      CUBE_SANDBOX_A_PAD) ||
	    nla_put_u64_64bit(skb, CUBE_SANDBOX_A_VM_MEMORY,
			      cube_sandbox_vm_memory(sb), CUBE_SANDBOX_A_PAD) ||
	    nla_put_u64_64bit(skb, CUBE_SANDBOX_A_PRIVATE_PAGES, priv,
			      CUBE_SANDBOX_A_PAD) ||
	    nla_put_u64_64bit(skb, CUBE_SANDBOX_A_SHARED_PAGES, shared,
			      CUBE_SANDBOX_A_PAD) ||
	    nla_put_u64_64bit(skb, CUBE_SANDBOX_A_NETNS_COOKIE,
			      sb->netns_cookie, CUBE_SANDBOX_A_PAD) ||
	    nla_put_u32(skb, CUBE_SANDBOX_A_BPF_LINKS, sb->nr_links) ||
	    nla_put_u64_64bit(skb, CUBE_SANDBOX_A_CREATED_NS, sb->created_ns,
			      CUBE_SANDBOX_A_PAD) ||
	    (sb->pool &&
	     nla_put_string(skb, CUBE_SANDBOX_A_POOL, sb->pool->name)))
		return -EMSGSIZE;
	return cube_nl_put_labels(skb, sb);
}

static int cube_nl_sandbox_msg(struct sk_buff *skb, struct cube_sandbox *sb,
			       u32 portid, u32 seq, int flags, u8 cmd,
			       bool global_pid)
{
	struct nlattr *nest;
	void *hdr;
	int ret;

	hdr = genlmsg_put(skb, portid, seq, &cube_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, CUBE_A_SANDBOX);
	if (!nest)
		goto cancel;
	mutex_lock(&sb->lock);
	ret = cube_nl_put_sandbox(skb, sb, global_pid);
	mutex_unlock(&sb->lock);
	if (ret)
		goto cancel;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* The pool's attributes; cube_pool_lock is held. */
static int cube_nl_put_pool(struct sk_buff *skb, struct cube_pool *pool)
{
	if (nla_put_string(skb, CUBE_POOL_A_NAME, pool->name) ||
	    nla_put_string(skb, CUBE_POOL_A_TEMPLATE, pool->template) ||
	    nla_put_u32(skb, CUBE_POOL_A_TARGET, pool->target) ||
	    nla_put_u32(skb, CUBE_POOL_A_LOW, pool->low) ||
	    nla_put_u32(skb, CUBE_POOL_A_SIZE, pool->size) ||
	    nla_put_u64_64bit(skb, CUBE_POOL_A_TAKEN, pool->taken,
			      CUBE_POOL_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int cube_nl_pool_msg(struct sk_buff *skb, struct cube_pool *pool,
			    u32 portid, u32 seq, int flags, u8 cmd)
{
	struct nlattr *nest;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &cube_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, CUBE_A_POOL);
	if (!nest || cube_nl_put_pool(skb, pool)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * Parse a request's object nest.  The core validated it against the
 * operation's policy already; this only splits it and reports a missing nest.
 */
static int cube_nl_parse_nest(struct genl_info *info, int type,
			      struct nlattr **tb, int maxtype,
			      const struct nla_policy *policy)
{
	if (GENL_REQ_ATTR_CHECK(info, type))
		return -EINVAL;
	return nla_parse_nested(tb, maxtype, info->attrs[type], policy,
				info->extack);
}

static struct cube_sandbox *cube_nl_sandbox_lookup(struct genl_info *info,
						   struct nlattr **tb)
{
	struct cube_sandbox *sb;

	if (NL_REQ_ATTR_CHECK(info->extack, info->attrs[CUBE_A_SANDBOX], tb,
			      CUBE_SANDBOX_A_ID))
		return ERR_PTR(-EINVAL);
	sb = cube_sandbox_get_by_id(nla_get_u64(tb[CUBE_SANDBOX_A_ID]));
	if (!sb) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_SANDBOX_A_ID],
				    "no such sandbox");
		return ERR_PTR(-ENOENT);
	}
	return sb;
}

static int cube_nl_stats_doit(struct sk_buff *skb, struct genl_info *info)
{
	static const struct {
		int attr;
		atomic64_t *v;
	} c[] = {
		{ CUBE_STATS_A_SANDBOXES, &cube_stats.sandboxes },
		{ CUBE_STATS_A_POOLS, &cube_stats.pools },
		{ CUBE_STATS_A_SNAPSHOTS, &cube_stats.snapshots },
		{ CUBE_STATS_A_CLONES, &cube_stats.clones },
		{ CUBE_STATS_A_SHARED_PAGES, &cube_stats.shared_pages },
		{ CUBE_STATS_A_PRIVATE_PAGES, &cube_stats.private_pages },
	};
	struct nlattr *nest;
	struct sk_buff *msg;
	unsigned int i;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &cube_genl_family, 0,
				CUBE_CMD_GET_STATS);
	if (!hdr)
		goto nospace;
	nest = nla_nest_start(msg, CUBE_A_STATS);
	if (!nest)
		goto nospace;
	for (i = 0; i < ARRAY_SIZE(c); i++)
		if (nla_put_u64_64bit(msg, c[i].attr, atomic64_read(c[i].v),
				      CUBE_STATS_A_PAD))
			goto nospace;
	if (nla_put_u64_64bit(msg, CUBE_STATS_A_POOLED, cube_pool_pooled(),
			      CUBE_STATS_A_PAD))
		goto nospace;
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

static int cube_nl_sandbox_get_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	struct nlattr *tb[CUBE_SANDBOX_A_MAX + 1];
	struct cube_sandbox *sb;
	struct sk_buff *msg;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_SANDBOX, tb, CUBE_SANDBOX_A_MAX,
				 cube_sandbox_id_policy);
	if (ret)
		return ret;
	sb = cube_nl_sandbox_lookup(info, tb);
	if (IS_ERR(sb))
		return PTR_ERR(sb);
	msg = genlmsg_new(CUBE_NL_SANDBOX_SIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out;
	}
	ret = cube_nl_sandbox_msg(msg, sb, info->snd_portid, info->snd_seq, 0,
				  CUBE_CMD_GET_SANDBOX, false);
	if (ret) {
		nlmsg_free(msg);
		goto out;
	}
	ret = genlmsg_reply(msg, info);
out:
	cube_sandbox_put(sb);
	return ret;
}

static int cube_nl_sandbox_dump_start(struct netlink_callback *cb)
{
	cb->min_dump_alloc = CUBE_NL_SANDBOX_SIZE;
	cb->args[0] = 0;
	return 0;
}

/* cb->args[0]: the next sandbox id to report. */
static int cube_nl_sandbox_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	unsigned long index = cb->args[0];
	struct cube_sandbox *sb;
	int ret;

	while ((sb = cube_sandbox_get_next(&index))) {
		ret = cube_nl_sandbox_msg(skb, sb,
					  NETLINK_CB(cb->skb).portid,
					  cb->nlh->nlmsg_seq, NLM_F_MULTI,
					  CUBE_CMD_GET_SANDBOX, false);
		cube_sandbox_put(sb);
		if (ret)
			break;
		if (index == ULONG_MAX)
			break;
		index++;
	}
	cb->args[0] = index;
	return skb->len;
}

static int cube_nl_sandbox_kill_doit(struct sk_buff *skb,
				     struct genl_info *info)
{
	struct nlattr *tb[CUBE_SANDBOX_A_MAX + 1];
	unsigned int grace = CUBE_KILL_GRACE_MS_DEFAULT;
	struct cube_sandbox *sb;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_SANDBOX, tb, CUBE_SANDBOX_A_MAX,
				 cube_sandbox_kill_policy);
	if (ret)
		return ret;
	sb = cube_nl_sandbox_lookup(info, tb);
	if (IS_ERR(sb))
		return PTR_ERR(sb);
	if (tb[CUBE_SANDBOX_A_GRACE_MS])
		grace = nla_get_u32(tb[CUBE_SANDBOX_A_GRACE_MS]);
	ret = cube_sandbox_kill(sb, grace);
	if (ret == -EALREADY)
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_SANDBOX_A_ID],
				    "sandbox already asked to stop");
	else if (ret)
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_SANDBOX_A_ID],
				    "sandbox is going away");
	cube_sandbox_put(sb);
	return ret;
}

static int cube_nl_pool_name(struct genl_info *info, struct nlattr **tb,
			     const char **name)
{
	if (NL_REQ_ATTR_CHECK(info->extack, info->attrs[CUBE_A_POOL], tb,
			      CUBE_POOL_A_NAME))
		return -EINVAL;
	*name = nla_data(tb[CUBE_POOL_A_NAME]);
	if (!cube_name_valid(*name, false)) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_NAME],
				    "pool names are [A-Za-z0-9._-]+");
		return -EINVAL;
	}
	return 0;
}

static void cube_nl_pool_missing(struct genl_info *info, struct nlattr **tb)
{
	NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_NAME],
			    "no such pool");
}

static int cube_nl_pool_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];
	const char *name, *template;
	u32 target, low = 0;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_POOL, tb, CUBE_POOL_A_MAX,
				 cube_pool_new_policy);
	if (ret)
		return ret;
	ret = cube_nl_pool_name(info, tb, &name);
	if (ret)
		return ret;
	if (NL_REQ_ATTR_CHECK(info->extack, info->attrs[CUBE_A_POOL], tb,
			      CUBE_POOL_A_TEMPLATE) ||
	    NL_REQ_ATTR_CHECK(info->extack, info->attrs[CUBE_A_POOL], tb,
			      CUBE_POOL_A_TARGET))
		return -EINVAL;
	template = nla_data(tb[CUBE_POOL_A_TEMPLATE]);
	if (!cube_name_valid(template, false)) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_TEMPLATE],
				    "template names are [A-Za-z0-9._-]+");
		return -EINVAL;
	}
	target = nla_get_u32(tb[CUBE_POOL_A_TARGET]);
	if (tb[CUBE_POOL_A_LOW])
		low = nla_get_u32(tb[CUBE_POOL_A_LOW]);
	if (low > target) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_LOW],
				    "low watermark above target");
		return -ERANGE;
	}
	ret = cube_pool_create(name, template, target, low);
	if (ret == -EEXIST)
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_NAME],
				    "pool exists");
	else if (ret == -ENOSPC)
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_NAME],
				    "too many pools");
	return ret;
}

static int cube_nl_pool_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];
	struct cube_pool *pool;
	struct sk_buff *msg;
	const char *name;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_POOL, tb, CUBE_POOL_A_MAX,
				 cube_pool_name_policy);
	if (ret)
		return ret;
	ret = cube_nl_pool_name(info, tb, &name);
	if (ret)
		return ret;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&cube_pool_lock);
	pool = cube_pool_find(name);
	if (pool)
		ret = cube_nl_pool_msg(msg, pool, info->snd_portid,
				       info->snd_seq, 0, CUBE_CMD_GET_POOL);
	else
		ret = -ENOENT;
	mutex_unlock(&cube_pool_lock);
	if (ret) {
		if (ret == -ENOENT)
			cube_nl_pool_missing(info, tb);
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/* cb->args[0]: position in the pool list of the next pool to report. */
static int cube_nl_pool_dumpit(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	struct cube_pool *pool;

	mutex_lock(&cube_pool_lock);
	while ((pool = cube_pool_nth(cb->args[0]))) {
		if (cube_nl_pool_msg(skb, pool, NETLINK_CB(cb->skb).portid,
				     cb->nlh->nlmsg_seq, NLM_F_MULTI,
				     CUBE_CMD_GET_POOL))
			break;
		cb->args[0]++;
	}
	mutex_unlock(&cube_pool_lock);
	return skb->len;
}

static int cube_nl_pool_take_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];
	struct nlattr *nest;
	struct sk_buff *msg;
	struct pid *owner;
	const char *name;
	void *hdr;
	u64 id;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_POOL, tb, CUBE_POOL_A_MAX,
				 cube_pool_name_policy);
	if (ret)
		return ret;
	ret = cube_nl_pool_name(info, tb, &name);
	if (ret)
		return ret;
	/* Allocate first: once taken, the answer must get out. */
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = cube_pool_take(name, &id, &owner);
	if (ret) {
		if (ret == -ENOENT)
			cube_nl_pool_missing(info, tb);
		else
			NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_NAME],
					    "pool is empty");
		nlmsg_free(msg);
		return ret;
	}
	hdr = genlmsg_put_reply(msg, info, &cube_genl_family, 0,
				CUBE_CMD_TAKE_POOL);
	/* A fresh NLMSG_GOODSIZE message always has room for these. */
	nest = nla_nest_start(msg, CUBE_A_POOL);
	nla_put_string(msg, CUBE_POOL_A_NAME, name);
	nla_put_u64_64bit(msg, CUBE_POOL_A_SANDBOX_ID, id, CUBE_POOL_A_PAD);
	nla_put_u32(msg, CUBE_POOL_A_OWNER_PID, pid_vnr(owner));
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	put_pid(owner);
	return genlmsg_reply(msg, info);
}

static int cube_nl_pool_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];
	u32 target = 0, low = 0;
	const char *name;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_POOL, tb, CUBE_POOL_A_MAX,
				 cube_pool_set_policy);
	if (ret)
		return ret;
	ret = cube_nl_pool_name(info, tb, &name);
	if (ret)
		return ret;
	if (!tb[CUBE_POOL_A_TARGET] && !tb[CUBE_POOL_A_LOW]) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[CUBE_A_POOL],
				    "nothing to change");
		return -EINVAL;
	}
	if (tb[CUBE_POOL_A_TARGET])
		target = nla_get_u32(tb[CUBE_POOL_A_TARGET]);
	if (tb[CUBE_POOL_A_LOW])
		low = nla_get_u32(tb[CUBE_POOL_A_LOW]);
	ret = cube_pool_set(name, tb[CUBE_POOL_A_TARGET] ? &target : NULL,
			    tb[CUBE_POOL_A_LOW] ? &low : NULL);
	if (ret == -ENOENT)
		cube_nl_pool_missing(info, tb);
	else if (ret == -ERANGE)
		NL_SET_ERR_MSG_ATTR(info->extack, tb[CUBE_POOL_A_LOW] ?
				    tb[CUBE_POOL_A_LOW] : tb[CUBE_POOL_A_TARGET],
				    "low watermark above target");
	return ret;
}

static int cube_nl_pool_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[CUBE_POOL_A_MAX + 1];
	const char *name;
	int ret;

	ret = cube_nl_parse_nest(info, CUBE_A_POOL, tb, CUBE_POOL_A_MAX,
				 cube_pool_name_policy);
	if (ret)
		return ret;
	ret = cube_nl_pool_name(info, tb, &name);
	if (ret)
		return ret;
	ret = cube_pool_destroy(name);
	if (ret == -ENOENT)
		cube_nl_pool_missing(info, tb);
	return ret;
}

static const struct genl_ops cube_genl_ops[] = {
	{
		.cmd		= CUBE_CMD_GET_STATS,
		.doit		= cube_nl_stats_doit,
	},
	{
		.cmd		= CUBE_CMD_GET_SANDBOX,
		.doit		= cube_nl_sandbox_get_doit,
		.start		= cube_nl_sandbox_dump_start,
		.dumpit		= cube_nl_sandbox_dumpit,
		.policy		= cube_nl_sandbox_get_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_sandbox_get_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_KILL_SANDBOX,
		.flags		= GENL_ADMIN_PERM,
		.doit		= cube_nl_sandbox_kill_doit,
		.policy		= cube_nl_sandbox_kill_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_sandbox_kill_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_GET_SNAPSHOT,
		.doit		= cube_snapshot_nl_get_doit,
		.dumpit		= cube_snapshot_nl_get_dumpit,
		.policy		= cube_nl_snapshot_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_snapshot_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_DEL_SNAPSHOT,
		.flags		= GENL_ADMIN_PERM,
		.doit		= cube_snapshot_nl_del_doit,
		.policy		= cube_nl_snapshot_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_snapshot_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_NEW_POOL,
		.flags		= GENL_ADMIN_PERM,
		.doit		= cube_nl_pool_new_doit,
		.policy		= cube_nl_pool_new_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_pool_new_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_GET_POOL,
		.doit		= cube_nl_pool_get_doit,
		.dumpit		= cube_nl_pool_dumpit,
		.policy		= cube_nl_pool_name_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_pool_name_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_TAKE_POOL,
		.flags		= GENL_ADMIN_PERM,
		.doit		= cube_nl_pool_take_doit,
		.policy		= cube_nl_pool_name_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_pool_name_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_SET_POOL,
		.flags		= GENL_ADMIN_PERM,
		.doit		= cube_nl_pool_set_doit,
		.policy		= cube_nl_pool_set_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_pool_set_policy) - 1,
	},
	{
		.cmd		= CUBE_CMD_DEL_POOL,
		.flags		= GENL_ADMIN_PERM,
		.doit		= cube_nl_pool_del_doit,
		.policy		= cube_nl_pool_name_policy,
		.maxattr	= ARRAY_SIZE(cube_nl_pool_name_policy) - 1,
	},
};

static const struct genl_multicast_group cube_genl_mcgrps[] = {
	/* Events name sandboxes and their VMMs' pids: admins only, as the
	 * commands that act on them.
	 */
	[CUBE_MCGRP_EVENTS_ID] = { .name = CUBE_GENL_MCGRP_EVENTS,
				   .flags = GENL_MCAST_CAP_NET_ADMIN },
};

static struct genl_family cube_genl_family __ro_after_init = {
	.name		= CUBE_GENL_NAME,
	.version	= CUBE_GENL_VERSION,
	.module		= THIS_MODULE,
	.ops		= cube_genl_ops,
	.n_ops		= ARRAY_SIZE(cube_genl_ops),
	/* Strict validation of every op, header and attributes alike. */
	.resv_start_op	= CUBE_CMD_UNSPEC,
	.mcgrps		= cube_genl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(cube_genl_mcgrps),
};

/**
 * cube_genl_sandbox_event() - multicast a sandbox event to "events"
 * @sb: the sandbox
 * @cmd: %CUBE_CMD_EVENT_SANDBOX_NEW, _STATE or _EXIT
 *
 * Owner pids in events are in the initial pid namespace.
 */
void cube_genl_sandbox_event(struct cube_sandbox *sb, u8 cmd)
{
	struct sk_buff *msg;

	if (!genl_has_listeners(&cube_genl_family, &init_net,
				CUBE_MCGRP_EVENTS_ID))
		return;
	msg = genlmsg_new(CUBE_NL_SANDBOX_SIZE, GFP_KERNEL);
	if (!msg)
		return;
	if (cube_nl_sandbox_msg(msg, sb, 0, 0, 0, cmd, true)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_multicast(&cube_genl_family, msg, 0, CUBE_MCGRP_EVENTS_ID,
			  GFP_KERNEL);
}

/**
 * cube_genl_pool_low() - multicast %CUBE_CMD_EVENT_POOL_LOW
 * @pool: the pool, with cube_pool_lock held
 */
void cube_genl_pool_low(struct cube_pool *pool)
{
	struct sk_buff *msg;

	if (!genl_has_listeners(&cube_genl_family, &init_net,
				CUBE_MCGRP_EVENTS_ID))
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;
	if (cube_nl_pool_msg(msg, pool, 0, 0, 0, CUBE_CMD_EVENT_POOL_LOW)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_multicast(&cube_genl_family, msg, 0, CUBE_MCGRP_EVENTS_ID,
			  GFP_KERNEL);
}

int __init cube_genl_init(void)
{
	return genl_register_family(&cube_genl_family);
}

void cube_genl_exit(void)
{
	genl_unregister_family(&cube_genl_family);
}
