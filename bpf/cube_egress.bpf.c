// SPDX-License-Identifier: GPL-2.0
/*
 * cube_egress.bpf.c: the egress policy of one sandbox.
 *
 * Attached (generic XDP, through a BPF link) to tap0 in the sandbox's
 * network namespace: the tap's receive side is what the guest sends.  Every
 * frame is passed or dropped and counted under its reason.  The checks, in
 * order: ARP only from the guest to the gateway; IPv4 from the guest's
 * address only, no fragments; TCP replies to the gateway (cubed's port
 * proxy); DNS only to the gateway; link-local (metadata)
 * and the host (the cube range, the host's addresses) never; then the
 * policy trie decides, and an allow reaches a private range only when the
 * rule names that range.  See Documentation/networking.rst.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/ipv6.h>
#include <linux/icmpv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "cube_egress.h"

/* linux/if_arp.h drags in more than BPF needs: the few bits used here */
#define ARPHRD_ETHER	1
#define ARPOP_REQUEST	1
#define ARPOP_REPLY	2

struct arp_eth_ipv4 {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[6];
	__u8 spa[4];
	__u8 tha[6];
	__u8 tpa[4];
} __attribute__((packed));

struct policy_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CUBE_EGRESS_TRIE_MAX);
	__uint(key_size, sizeof(struct cube_egress_key));
	__uint(value_size, sizeof(struct cube_egress_rules));
};

/* slot 0: the sandbox's policy; userspace replaces it in one update */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct policy_trie);
} cube_policy SEC(".maps");

/* built-in ranges and the host's addresses: value CUBE_EGRESS_CLASS_* */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CUBE_EGRESS_FIXED_MAX);
	__type(key, struct cube_egress_key);
	__type(value, __u32);
} cube_fixed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cube_egress_cfg);
} cube_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CUBE_EGRESS_NR_REASONS);
	__type(key, __u32);
	__type(value, struct cube_egress_count);
} cube_counters SEC(".maps");

/* a destination, as the policy sees it */
struct dest {
	struct cube_egress_key key;
	__u16 port;		/* host order */
	bool has_port;		/* TCP or UDP */
};

static __always_inline int verdict(__u32 reason, __u64 bytes)
{
	struct cube_egress_count *c;

	c = bpf_map_lookup_elem(&cube_counters, &reason);
	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	return reason == CUBE_EGRESS_PASS ? XDP_PASS : XDP_DROP;
}

static __always_inline __u32 check_arp(void *p, void *end,
				       const struct cube_egress_cfg *cfg)
{
	struct arp_eth_ipv4 *a = p;

	if ((void *)(a + 1) > end)
		return CUBE_EGRESS_DROP_PROTO;
	if (a->htype != bpf_htons(ARPHRD_ETHER) ||
	    a->ptype != bpf_htons(ETH_P_IP) || a->hlen != 6 || a->plen != 4 ||
	    (a->op != bpf_htons(ARPOP_REQUEST) && a->op != bpf_htons(ARPOP_REPLY)))
		return CUBE_EGRESS_DROP_PROTO;
	if (__builtin_memcmp(a->spa, &cfg->guest_ip, 4))
		return CUBE_EGRESS_DROP_SPOOF;
	if (__builtin_memcmp(a->tpa, &cfg->gw_ip, 4))
		return CUBE_EGRESS_DROP_PROTO;
	return CUBE_EGRESS_PASS;
}

/* the policy's answer for @d: PASS, DROP_POLICY or DROP_PRIVATE */
static __always_inline __u32 check_policy(struct dest *d, bool private)
{
	struct cube_egress_rules *v;
	__u32 zero = 0, i;
	void *trie;

	trie = bpf_map_lookup_elem(&cube_policy, &zero);
	if (!trie)
		return CUBE_EGRESS_DROP_POLICY;
	v = bpf_map_lookup_elem(trie, &d->key);
	if (!v)
		return CUBE_EGRESS_DROP_POLICY;
	for (i = 0; i < CUBE_EGRESS_PORT_RULES; i++) {
		struct cube_egress_port_rule *r = &v->r[i];

		if (i >= v->nrules)
			break;
		if (d->has_port ? (d->port < r->lo || d->port > r->hi) :
		    !(r->flags & CUBE_EGRESS_R_ANY))
			continue;
		if (r->action != CUBE_EGRESS_ALLOW)
			return CUBE_EGRESS_DROP_POLICY;
		if (private && !(r->flags & CUBE_EGRESS_R_PRIVATE))
			return CUBE_EGRESS_DROP_PRIVATE;
		return CUBE_EGRESS_PASS;
	}
	return CUBE_EGRESS_DROP_POLICY;
}

/* DNS to the gateway: the header of the policy says whether it may */
static __always_inline __u32 check_gateway_dns(void)
{
	struct cube_egress_key hk = { .prefixlen = CUBE_EGRESS_KEY_BITS };
	struct cube_egress_rules *h;
	__u32 zero = 0;
	void *trie;

	trie = bpf_map_lookup_elem(&cube_policy, &zero);
	if (!trie)
		return CUBE_EGRESS_DROP_POLICY;
	h = bpf_map_lookup_elem(trie, &hk);
	if (!h || !(h->hflags & CUBE_EGRESS_H_DNS))
		return CUBE_EGRESS_DROP_POLICY;
	return CUBE_EGRESS_PASS;
}

/* after the address checks of each family: classes, then the policy */
static __always_inline __u32 check_dest(struct dest *d)
{
	__u32 *class = bpf_map_lookup_elem(&cube_fixed, &d->key);
	bool private = false;

	if (class) {
		if (*class == CUBE_EGRESS_CLASS_METADATA)
			return CUBE_EGRESS_DROP_METADATA;
		if (*class == CUBE_EGRESS_CLASS_HOST)
			return CUBE_EGRESS_DROP_HOST;
		private = *class == CUBE_EGRESS_CLASS_PRIVATE;
	}
	return check_policy(d, private);
}

static __always_inline bool read_port(void *l4, void *end, __u8 proto,
				      struct dest *d)
{
	__be16 *ports = l4;

	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return true;
	if ((void *)(ports + 2) > end)
		return false;
	d->port = bpf_ntohs(ports[1]);
	d->has_port = true;
	return true;
}

/*
 * The guest's side of a connection cubed's port proxy opened: the proxy
 * connects from inside the namespace, from the gateway's address, so the
 * guest answers the gateway.  Only segments that acknowledge something
 * pass (SYN-ACK and after): a connection towards the namespace cannot be
 * opened this way, and the namespace's input takes established flows only.
 */
static __always_inline bool proxy_reply(void *l4, void *end,
					const struct iphdr *ip,
					const struct cube_egress_cfg *cfg)
{
	struct tcphdr *th = l4;

	if (ip->protocol != IPPROTO_TCP || ip->daddr != cfg->gw_ip)
		return false;
	if ((void *)(th + 1) > end)
		return false;
	return th->ack;
}

static __always_inline __u32 check_ipv4(void *p, void *end,
					const struct cube_egress_cfg *cfg)
{
	struct dest d = { .key = { .prefixlen = CUBE_EGRESS_KEY_BITS + 32,
				   .kind = CUBE_EGRESS_KIND_V4 } };
	struct iphdr *ip = p;

	if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
		return CUBE_EGRESS_DROP_PROTO;
	if (ip->saddr != cfg->guest_ip)
		return CUBE_EGRESS_DROP_SPOOF;
	/* no fragments: the first alone would carry the ports */
	if (ip->frag_off & bpf_htons(0x3fff))
		return CUBE_EGRESS_DROP_PROTO;
	if (!read_port(p + ip->ihl * 4, end, ip->protocol, &d))
		return CUBE_EGRESS_DROP_PROTO;
	if (proxy_reply(p + ip->ihl * 4, end, ip, cfg))
		return CUBE_EGRESS_PASS;
	if (d.has_port && d.port == 53) {
		if (ip->daddr != cfg->gw_ip)
			return CUBE_EGRESS_DROP_DNS;
		return check_gateway_dns();
	}
	__builtin_memcpy(d.key.addr, &ip->daddr, 4);
	return check_dest(&d);
}

static __always_inline __u32 check_ipv6(void *p, void *end)
{
	struct dest d = { .key = { .prefixlen = CUBE_EGRESS_KEY_BITS + 128,
				   .kind = CUBE_EGRESS_KIND_V6 } };
	struct ipv6hdr *ip6 = p;
	void *l4 = ip6 + 1;

	if ((void *)(ip6 + 1) > end || ip6->version != 6)
		return CUBE_EGRESS_DROP_PROTO;
	if (ip6->nexthdr == IPPROTO_ICMPV6) {
		struct icmp6hdr *ic = l4;
		__u8 a0 = ip6->daddr.in6_u.u6_addr8[0];
		__u8 a1 = ip6->daddr.in6_u.u6_addr8[1];

		if ((void *)(ic + 1) > end)
			return CUBE_EGRESS_DROP_PROTO;
		/* neighbour discovery stays on the link: link-local or
		 * link-scope multicast destinations only */
		if (ic->icmp6_type >= 133 && ic->icmp6_type <= 136 &&
		    ip6->hop_limit == 255 &&
		    ((a0 == 0xfe && (a1 & 0xc0) == 0x80) ||
		     (a0 == 0xff && (a1 & 0x0f) == 0x02)))
			return CUBE_EGRESS_PASS;
	} else if (ip6->nexthdr != IPPROTO_TCP && ip6->nexthdr != IPPROTO_UDP) {
		/* extension headers (fragments among them): not parsed */
		return CUBE_EGRESS_DROP_PROTO;
	}
	if (!read_port(l4, end, ip6->nexthdr, &d))
		return CUBE_EGRESS_DROP_PROTO;
	if (d.has_port && d.port == 53)
		return CUBE_EGRESS_DROP_DNS;
	__builtin_memcpy(d.key.addr, &ip6->daddr, 16);
	return check_dest(&d);
}

SEC("xdp")
int cube_egress(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct cube_egress_cfg *cfg;
	struct ethhdr *eth = data;
	__u64 bytes = end - data;
	__u32 zero = 0, reason;

	cfg = bpf_map_lookup_elem(&cube_cfg, &zero);
	if (!cfg || cfg->magic != CUBE_EGRESS_CFG_MAGIC)
		return verdict(CUBE_EGRESS_DROP_POLICY, bytes);
	if ((void *)(eth + 1) > end)
		return verdict(CUBE_EGRESS_DROP_PROTO, bytes);
	switch (eth->h_proto) {
	case bpf_htons(ETH_P_ARP):
		reason = check_arp(eth + 1, end, cfg);
		break;
	case bpf_htons(ETH_P_IP):
		reason = check_ipv4(eth + 1, end, cfg);
		break;
	case bpf_htons(ETH_P_IPV6):
		reason = check_ipv6(eth + 1, end);
		break;
	default:
		reason = CUBE_EGRESS_DROP_PROTO;
	}
	return verdict(reason, bytes);
}

char LICENSE[] SEC("license") = "GPL";
