// SPDX-License-Identifier: GPL-2.0
/*
 * cube_net_rtnl.c: the few rtnetlink requests a sandbox's network needs
 * (veth pair, addresses, link up, default route, a permanent neighbour).
 * A socket acts in the namespace it was created in.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "cube_net_int.h"

#define RTNL_BUF	1024

struct req {
	struct nlmsghdr *nh;
	size_t cap;
};

int cube_rtnl_open(struct cube_rtnl *r)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	r->seq = 1;
	r->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (r->fd < 0)
		return -errno;
	if (bind(r->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(r->fd);
		r->fd = -1;
		return -e;
	}
	return 0;
}

void cube_rtnl_close(struct cube_rtnl *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static struct rtattr *put(struct req *q, unsigned short type, const void *data,
			  size_t len)
{
	struct rtattr *a;
	size_t sz = RTA_LENGTH(len);

	if (NLMSG_ALIGN(q->nh->nlmsg_len) + RTA_ALIGN(sz) > q->cap)
		return NULL;
	a = (struct rtattr *)((char *)q->nh + NLMSG_ALIGN(q->nh->nlmsg_len));
	a->rta_type = type;
	a->rta_len = sz;
	if (len)
		memcpy(RTA_DATA(a), data, len);
	q->nh->nlmsg_len = NLMSG_ALIGN(q->nh->nlmsg_len) + RTA_ALIGN(sz);
	return a;
}

static void nest_end(struct req *q, struct rtattr *a)
{
	a->rta_len = (char *)q->nh + q->nh->nlmsg_len - (char *)a;
}

/* send @nh and wait for its acknowledgement */
static int talk(struct cube_rtnl *r, struct nlmsghdr *nh)
{
	char buf[4096];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	ssize_t n;

	nh->nlmsg_seq = ++r->seq;
	nh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (sendto(r->fd, nh, nh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		struct nlmsghdr *h;

		n = recv(r->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != r->seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
}

#define REQ_INIT(q, buf, type, flags, hdr)				\
	do {								\
		memset(buf, 0, sizeof(buf));				\
		(q).nh = (struct nlmsghdr *)(buf);			\
		(q).cap = sizeof(buf);					\
		(q).nh->nlmsg_type = (type);				\
		(q).nh->nlmsg_flags = (flags);				\
		(q).nh->nlmsg_len = NLMSG_LENGTH(sizeof(hdr));		\
	} while (0)

int cube_rtnl_veth(struct cube_rtnl *r, const char *name, const char *peer,
		   int peer_netns_fd)
{
	char buf[RTNL_BUF] __attribute__((aligned(8)));
	struct ifinfomsg *ifi, pifi = { .ifi_family = AF_UNSPEC };
	struct rtattr *li, *data, *pa;
	struct req q;
	uint32_t nsfd = peer_netns_fd;

	REQ_INIT(q, buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, struct ifinfomsg);
	ifi = NLMSG_DATA(q.nh);
	ifi->ifi_family = AF_UNSPEC;
	if (!put(&q, IFLA_IFNAME, name, strlen(name) + 1) ||
	    !(li = put(&q, IFLA_LINKINFO, NULL, 0)) ||
	    !put(&q, IFLA_INFO_KIND, "veth", 5) ||
	    !(data = put(&q, IFLA_INFO_DATA, NULL, 0)) ||
	    !(pa = put(&q, VETH_INFO_PEER, &pifi, sizeof(pifi))) ||
	    !put(&q, IFLA_IFNAME, peer, strlen(peer) + 1) ||
	    !put(&q, IFLA_NET_NS_FD, &nsfd, sizeof(nsfd)))
		return -ENOBUFS;
	nest_end(&q, pa);
	nest_end(&q, data);
	nest_end(&q, li);
	return talk(r, q.nh);
}

int cube_rtnl_link_up(struct cube_rtnl *r, int ifindex, const uint8_t *mac)
{
	char buf[RTNL_BUF] __attribute__((aligned(8)));
	struct ifinfomsg *ifi;
	struct req q;

	REQ_INIT(q, buf, RTM_NEWLINK, 0, struct ifinfomsg);
	ifi = NLMSG_DATA(q.nh);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	if (mac && !put(&q, IFLA_ADDRESS, mac, 6))
		return -ENOBUFS;
	return talk(r, q.nh);
}

int cube_rtnl_addr4(struct cube_rtnl *r, int ifindex, struct in_addr a,
		    unsigned int plen)
{
	char buf[RTNL_BUF] __attribute__((aligned(8)));
	struct ifaddrmsg *ifa;
	struct req q;

	REQ_INIT(q, buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, struct ifaddrmsg);
	ifa = NLMSG_DATA(q.nh);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = plen;
	ifa->ifa_index = ifindex;
	if (!put(&q, IFA_LOCAL, &a, 4) || !put(&q, IFA_ADDRESS, &a, 4))
		return -ENOBUFS;
	return talk(r, q.nh);
}

int cube_rtnl_route4_default(struct cube_rtnl *r, struct in_addr gw)
{
	char buf[RTNL_BUF] __attribute__((aligned(8)));
	struct rtmsg *rt;
	struct req q;

	REQ_INIT(q, buf, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, struct rtmsg);
	rt = NLMSG_DATA(q.nh);
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	if (!put(&q, RTA_GATEWAY, &gw, 4))
		return -ENOBUFS;
	return talk(r, q.nh);
}

int cube_rtnl_neigh4(struct cube_rtnl *r, int ifindex, struct in_addr a,
		     const uint8_t *mac)
{
	char buf[RTNL_BUF] __attribute__((aligned(8)));
	struct ndmsg *nd;
	struct req q;

	REQ_INIT(q, buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, struct ndmsg);
	nd = NLMSG_DATA(q.nh);
	nd->ndm_family = AF_INET;
	nd->ndm_ifindex = ifindex;
	nd->ndm_state = NUD_PERMANENT;
	if (!put(&q, NDA_DST, &a, 4) || !put(&q, NDA_LLADDR, mac, 6))
		return -ENOBUFS;
	return talk(r, q.nh);
}
