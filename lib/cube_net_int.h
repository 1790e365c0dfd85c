/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_net_int.h: what the cube_net*.c files share.
 */
#ifndef CUBE_NET_INT_H
#define CUBE_NET_INT_H

#include <stdarg.h>

#include "cube_egress.h"
#include "cube_net.h"

/* one entry of a policy or fixed trie */
struct cube_net_entry {
	struct cube_egress_key key;
	struct cube_egress_rules val;
};

/* "error: ..." into @err (CUBE_NET_ERR_MAX); returns @ret */
int cube_net_err(char *err, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The policy as trie entries: the header first, then one entry per prefix
 * with its rules and those it inherits from wider prefixes, in the order
 * the program checks them.  @out holds CUBE_EGRESS_TRIE_MAX entries.
 * -E2BIG when a prefix would need more than CUBE_EGRESS_PORT_RULES rules.
 */
int cube_net_policy_compile(const struct cube_net_policy *p,
			    uint32_t generation, struct cube_net_entry *out,
			    unsigned int *n, char *err);
/* back from the entries (own rules only) */
int cube_net_policy_decompile(const struct cube_net_entry *e, unsigned int n,
			      struct cube_net_policy *p, uint32_t *generation);

/* the built-in ranges of the fixed trie: metadata, private, loopback */
struct cube_net_range {
	uint8_t family;
	uint8_t plen;
	uint8_t addr[16];
	uint32_t class;		/* CUBE_EGRESS_CLASS_* */
};
extern const struct cube_net_range cube_net_builtin[];
extern const unsigned int cube_net_nbuiltin;

void cube_net_key(struct cube_egress_key *k, int family, const uint8_t *addr,
		  unsigned int plen);

/*
 * What the program decides for a destination, computed here from the
 * entries (the unit tests check the compiler against it): a
 * CUBE_EGRESS_PASS / DROP_POLICY / DROP_PRIVATE; @port -1: no port.
 */
unsigned int cube_net_policy_eval(const struct cube_net_entry *e,
				  unsigned int n, int family,
				  const uint8_t *addr, int port);

/* rtnetlink (cube_net_rtnl.c): one socket in the namespace it was made in */
struct cube_rtnl {
	int fd;
	uint32_t seq;
};
int cube_rtnl_open(struct cube_rtnl *r);
void cube_rtnl_close(struct cube_rtnl *r);
int cube_rtnl_veth(struct cube_rtnl *r, const char *name, const char *peer,
		   int peer_netns_fd);
int cube_rtnl_link_up(struct cube_rtnl *r, int ifindex, const uint8_t *mac);
int cube_rtnl_addr4(struct cube_rtnl *r, int ifindex, struct in_addr a,
		    unsigned int plen);
int cube_rtnl_route4_default(struct cube_rtnl *r, struct in_addr gw);
int cube_rtnl_neigh4(struct cube_rtnl *r, int ifindex, struct in_addr a,
		     const uint8_t *mac);

/* nftables (cube_net_nft.c), in the calling thread's namespace */
int cube_net_nft_sandbox(struct in_addr ns_addr, struct in_addr resolver,
			 char *err);
int cube_net_nft_host(const char *range, char *err);

/* BPF (cube_net_bpf.c): load, fill, attach to @ifindex (calling thread's
 * namespace); returns the link fd */
int cube_net_bpf_attach(int ifindex, const struct cube_egress_cfg *cfg,
			const struct cube_net_policy *p,
			const struct cube_net_range *fixed, unsigned int nfixed,
			char *err);

#endif /* CUBE_NET_INT_H */
