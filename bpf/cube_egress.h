/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_egress.h: what the egress policy program (cube_egress.bpf.c) and
 * libcube (lib/cube_net_bpf.c) share: map keys and values, drop reasons.
 *
 * Every sandbox loads its own copy of the program and maps; none is pinned.
 * See Documentation/networking.rst.
 */
#ifndef CUBE_EGRESS_H
#define CUBE_EGRESS_H

#include <linux/types.h>

/* Key kinds: the first byte of every trie key. */
#define CUBE_EGRESS_KIND_HDR	0	/* the policy header (policy tries only) */
#define CUBE_EGRESS_KIND_V4	4
#define CUBE_EGRESS_KIND_V6	6
/* Bits of the key before the address: the kind byte and three zero bytes. */
#define CUBE_EGRESS_KEY_BITS	32

/*
 * struct cube_egress_key - key of the policy and fixed LPM tries
 * @prefixlen: CUBE_EGRESS_KEY_BITS + the address's prefix length
 * @kind: CUBE_EGRESS_KIND_*
 * @pad: zero
 * @addr: the address, network byte order (IPv4: the first 4 bytes)
 *
 * IPv4 and IPv6 share one trie: the kind byte keeps them apart, so one map
 * holds a whole policy and replacing it is one update.
 */
struct cube_egress_key {
	__u32 prefixlen;
	__u8 kind;
	__u8 pad[3];
	__u8 addr[16];
};

/* Port rules of one prefix, inherited ones included, checked in order. */
#define CUBE_EGRESS_PORT_RULES	16
/* Entries of one policy trie: the header and up to 256 prefixes. */
#define CUBE_EGRESS_TRIE_MAX	257
/* Entries of the fixed trie: built-in ranges and the host's addresses. */
#define CUBE_EGRESS_FIXED_MAX	512

#define CUBE_EGRESS_ALLOW	1
#define CUBE_EGRESS_DENY	2

/* struct cube_egress_port_rule.flags */
#define CUBE_EGRESS_R_ANY	(1U << 0)	/* every port, and packets without ports */
#define CUBE_EGRESS_R_PRIVATE	(1U << 1)	/* an allow that names a private range */
#define CUBE_EGRESS_R_OWN	(1U << 2)	/* written for this prefix, not inherited */

/*
 * struct cube_egress_port_rule - one rule of a prefix
 * @lo, @hi: destination port range (TCP, UDP), host byte order
 * @action: CUBE_EGRESS_ALLOW or CUBE_EGRESS_DENY
 * @flags: CUBE_EGRESS_R_*
 */
struct cube_egress_port_rule {
	__u16 lo;
	__u16 hi;
	__u8 action;
	__u8 flags;
};

/* Policy modes, in the header's value (struct cube_egress_rules.mode). */
#define CUBE_EGRESS_MODE_DENY		1
#define CUBE_EGRESS_MODE_INTERNET	2
#define CUBE_EGRESS_MODE_LIST		3

/* struct cube_egress_rules.hflags (header only) */
#define CUBE_EGRESS_H_DNS	(1U << 0)	/* DNS to the gateway is allowed */

/*
 * struct cube_egress_rules - value of a policy trie entry
 * @nrules: rules used in @r
 * @mode: header only: CUBE_EGRESS_MODE_*
 * @hflags: header only: CUBE_EGRESS_H_*
 * @generation: header only: bumped by every policy change
 * @r: the rules; the first whose ports match decides
 */
struct cube_egress_rules {
	__u16 nrules;
	__u8 mode;
	__u8 hflags;
	__u32 generation;
	struct cube_egress_port_rule r[CUBE_EGRESS_PORT_RULES];
};

/* Value of the fixed trie: the class of a destination range. */
#define CUBE_EGRESS_CLASS_METADATA	1
#define CUBE_EGRESS_CLASS_HOST		2
#define CUBE_EGRESS_CLASS_PRIVATE	3

/* Reasons: the index of the counters array. */
enum cube_egress_reason {
	CUBE_EGRESS_PASS,
	CUBE_EGRESS_DROP_POLICY,	/* the policy denies it */
	CUBE_EGRESS_DROP_METADATA,	/* link-local: 169.254/16, fe80::/10 */
	CUBE_EGRESS_DROP_PRIVATE,	/* private or special, not named by an allow */
	CUBE_EGRESS_DROP_HOST,		/* the cube range, the host's addresses */
	CUBE_EGRESS_DROP_DNS,		/* DNS to anything but the gateway */
	CUBE_EGRESS_DROP_SPOOF,		/* source address not the guest's */
	CUBE_EGRESS_DROP_PROTO,		/* other ethertypes, fragments, bad headers */
	CUBE_EGRESS_NR_REASONS
};

/* struct cube_egress_count - per-CPU value of the counters array */
struct cube_egress_count {
	__u64 packets;
	__u64 bytes;
};

#define CUBE_EGRESS_CFG_MAGIC	0x63756265	/* "cube" */

/*
 * struct cube_egress_cfg - the one entry of the config array, written
 * before the program is attached and never changed after
 * @magic: CUBE_EGRESS_CFG_MAGIC once written (zero: drop everything)
 * @guest_ip, @gw_ip: the guest's and the gateway's address (network order)
 * @sandbox_id: the module's sandbox id (how cubectl finds these maps)
 * @ns_ip: the netns' address on its veth, that the guest's traffic leaves
 *	with (network order)
 * @host_ip: the host end of the veth (network order)
 * @resolver_ip: where DNS to the gateway goes (network order; 0: none)
 * @slot: the /31 of the cube range; the host's device is cube<slot>
 */
struct cube_egress_cfg {
	__u32 magic;
	__u32 guest_ip;
	__u32 gw_ip;
	__u32 ns_ip;
	__u64 sandbox_id;
	__u32 host_ip;
	__u32 resolver_ip;
	__u32 slot;
	__u32 reserved;
};

#endif /* CUBE_EGRESS_H */
