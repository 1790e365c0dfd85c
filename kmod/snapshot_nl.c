// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: the snapshot commands of the "cube" generic-netlink family
 * (CUBE_CMD_GET_SNAPSHOT, CUBE_CMD_DEL_SNAPSHOT).  The family itself lives
 * in netlink.c; these handlers only need the request's header, so they
 * reply with the family id and version the request carried.
 */
#include <linux/cube.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "cube.h"
#include "mem.h"

const struct nla_policy cube_snapshot_nl_policy[CUBE_SNAPSHOT_A_MAX + 1] = {
	[CUBE_SNAPSHOT_A_ID]		= { .type = NLA_U64 },
};

static struct nlmsghdr *cube_snapshot_nl_hdr(struct sk_buff *skb, u32 portid,
					      u32 seq,
					      const struct nlmsghdr *req,
					      int flags)
{
	const struct genlmsghdr *rgh = nlmsg_data(req);
	struct genlmsghdr *gh;
	struct nlmsghdr *nlh;

	nlh = nlmsg_put(skb, portid, seq, req->nlmsg_type, GENL_HDRLEN, flags);
	if (!nlh)
		return NULL;
	gh = nlmsg_data(nlh);
	gh->cmd = CUBE_CMD_GET_SNAPSHOT;
	gh->version = rgh->version;
	gh->reserved = 0;
	return nlh;
}

static int cube_snapshot_nl_fill(struct sk_buff *skb,
				 struct cube_snapshot *snap, u32 portid,
				 u32 seq, const struct nlmsghdr *req,
				 int flags)
{
	struct cube_snapshot_info info;
	struct nlmsghdr *nlh;
	struct nlattr *nest;

	nlh = cube_snapshot_nl_hdr(skb, portid, seq, req, flags);
	if (!nlh)
		return -EMSGSIZE;
	cube_snapshot_info(snap, &info);
	nest = nla_nest_start(skb, CUBE_A_SNAPSHOT);
	if (!nest)
		goto cancel;
	if (nla_put_u64_64bit(skb, CUBE_SNAPSHOT_A_ID, info.id,
			      CUBE_SNAPSHOT_A_PAD) ||
	    nla_put_u64_64bit(skb, CUBE_SNAPSHOT_A_SIZE, info.size,
			      CUBE_SNAPSHOT_A_PAD) ||
	    nla_put_u64_64bit(skb, CUBE_SNAPSHOT_A_PAGES, info.pages,
			      CUBE_SNAPSHOT_A_PAD) ||
	    (info.parent_id &&
	     nla_put_u64_64bit(skb, CUBE_SNAPSHOT_A_PARENT_ID, info.parent_id,
			       CUBE_SNAPSHOT_A_PAD)) ||
	    nla_put_u32(skb, CUBE_SNAPSHOT_A_DEPTH, info.depth) ||
	    nla_put_u32(skb, CUBE_SNAPSHOT_A_CLONES, info.clones) ||
	    nla_put_u32(skb, CUBE_SNAPSHOT_A_CHILDREN, info.children) ||
	    nla_put_u64_64bit(skb, CUBE_SNAPSHOT_A_WS_PAGES, info.ws_pages,
			      CUBE_SNAPSHOT_A_PAD))
		goto cancel;
	nla_nest_end(skb, nest);
	nlmsg_end(skb, nlh);
	return 0;
cancel:
	nlmsg_cancel(skb, nlh);
	return -EMSGSIZE;
}

/* The snapshot id of a request's CUBE_A_SNAPSHOT nest. */
static int cube_snapshot_nl_id(struct genl_info *info, u64 *id)
{
	struct nlattr *tb[CUBE_SNAPSHOT_A_MAX + 1];
	int ret;

	if (!info->attrs[CUBE_A_SNAPSHOT]) {
		NL_SET_ERR_MSG(info->extack, "missing snapshot nest");
		return -EINVAL;
	}
	ret = nla_parse_nested(tb, CUBE_SNAPSHOT_A_MAX,
			       info->attrs[CUBE_A_SNAPSHOT],
			       cube_snapshot_nl_policy, info->extack);
	if (ret)
		return ret;
	if (!tb[CUBE_SNAPSHOT_A_ID]) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[CUBE_A_SNAPSHOT],
				    "missing snapshot id");
		return -EINVAL;
	}
	*id = nla_get_u64(tb[CUBE_SNAPSHOT_A_ID]);
	return 0;
}

int cube_snapshot_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct cube_snapshot *snap;
	struct sk_buff *msg;
	u64 id;
	int ret;

	ret = cube_snapshot_nl_id(info, &id);
	if (ret)
		return ret;
	snap = cube_snapshot_get_id(id);
	if (!snap) {
		NL_SET_ERR_MSG(info->extack, "no such snapshot");
		return -ENOENT;
	}
	ret = -ENOMEM;
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		goto out;
	ret = cube_snapshot_nl_fill(msg, snap, info->snd_portid,
				    info->snd_seq, info->nlhdr, 0);
	if (ret) {
		nlmsg_free(msg);
		goto out;
	}
	ret = genlmsg_reply(msg, info);
out:
	cube_snapshot_put(snap);
	return ret;
}

/* cb->args[0]: the table index of the next snapshot to dump. */
int cube_snapshot_nl_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	unsigned long index = cb->args[0] ? cb->args[0] : 1;
	struct cube_snapshot *snap;

	while ((snap = cube_snapshot_next(&index))) {
		int ret = cube_snapshot_nl_fill(skb, snap,
						NETLINK_CB(cb->skb).portid,
						cb->nlh->nlmsg_seq, cb->nlh,
						NLM_F_MULTI);

		cube_snapshot_put(snap);
		if (ret)
			break;
		index++;
	}
	cb->args[0] = index;
	return skb->len;
}

int cube_snapshot_nl_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	u64 id;
	int ret;

	ret = cube_snapshot_nl_id(info, &id);
	if (ret)
		return ret;
	ret = cube_snapshot_delete(id, true);
	if (ret)
		NL_SET_ERR_MSG(info->extack, "no such snapshot");
	return ret;
}
