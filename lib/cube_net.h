/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_net.h: the host side of a sandbox's network.
 *
 * Every sandbox with a network gets its own network namespace holding
 *
 *   tap0   CUBE_NET_GW_IP/30 (the guest's gateway; cube-vmm's virtio-net
 *          backend reads and writes its fd), with the egress policy, an XDP
 *          program attached through a BPF link;
 *   eth0   one end of a veth pair, an address of a /31 of the cube range
 *          (default 10.200.0.0/16); the other end, cube<slot>, is in the
 *          host's namespace;
 *   nftables: SNAT of the guest's address to eth0's, DNAT of DNS to the
 *          gateway to the host's resolver.
 *
 * The host holds one shared table "ip cube" (masquerade of the cube range
 * out of every other interface, no input from sandboxes but DNS), created
 * idempotently.  Nothing else of a sandbox lives outside its namespace, and
 * nothing is pinned: when cube.ko drops the namespace and the BPF links (the
 * sandbox died, however), the kernel removes every device, address, route,
 * rule, program and map.  See Documentation/networking.rst.
 */
#ifndef CUBE_NET_H
#define CUBE_NET_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CUBE_NET_ERR_MAX	256
/* rules of one policy (lines of a policy file) */
#define CUBE_NET_RULES_MAX	256
/* a policy file's size */
#define CUBE_NET_FILE_MAX	(64 * 1024)
/* default cube range: one /31 per sandbox */
#define CUBE_NET_RANGE_DEFAULT	"10.200.0.0/16"
/* BPF links cube_net_create() returns */
#define CUBE_NET_LINKS_MAX	1

/* --- policies (cube_net_policy.c; no root, no kernel) --- */

enum cube_net_mode {
	CUBE_NET_NONE,		/* no network device at all */
	CUBE_NET_DENY,		/* a device, nothing out but ARP to the gateway */
	CUBE_NET_INTERNET,	/* public addresses, DNS through the gateway */
	CUBE_NET_LIST,		/* the rules below, DNS through the gateway */
};

enum cube_net_action {
	CUBE_NET_ALLOW = 1,
	CUBE_NET_DENY_RULE = 2,
};

/**
 * struct cube_net_rule - one "allow|deny CIDR[:PORTS]" line
 * @action: enum cube_net_action
 * @family: AF_INET or AF_INET6
 * @plen: prefix length
 * @addr: the network, host bits zero (IPv4: the first 4 bytes)
 * @port_lo, @port_hi: TCP/UDP destination ports; 0 and 0 for every port
 *	(which also matches packets without ports, ICMP say)
 */
struct cube_net_rule {
	uint8_t action;
	uint8_t family;
	uint8_t plen;
	uint8_t addr[16];
	uint16_t port_lo;
	uint16_t port_hi;
};

struct cube_net_policy {
	enum cube_net_mode mode;
	unsigned int nrules;
	struct cube_net_rule rules[CUBE_NET_RULES_MAX];
};

/*
 * cube_net_policy_parse_arg() - a policy from the command line: "none",
 * "deny", "internet", or else the path of a policy file.
 * cube_net_policy_parse_text() - the rules of a policy file (mode LIST);
 *	@name prefixes error messages ("FILE:LINE: ...").
 * Both: -EINVAL (bad line), -E2BIG (too many rules), -ENOENT and other
 * errors of reading the file; @err says which and where; @p is only
 * written on success.
 */
int cube_net_policy_parse_arg(const char *arg, struct cube_net_policy *p,
			      char *err);
int cube_net_policy_parse_text(const char *text, const char *name,
			       struct cube_net_policy *p, char *err);
/* "10.0.0.0/8", "2001:db8::/32", with ":PORT" / ":LO-HI" when set */
int cube_net_parse_cidr(const char *s, struct cube_net_rule *r, char *err);
void cube_net_rule_format(const struct cube_net_rule *r, char *buf,
			  size_t len);
const char *cube_net_mode_name(enum cube_net_mode m);

/*
 * The policy as one string, for a command line (cube-shim --net-policy):
 * "none", "deny", "internet", or "rules:" and the rules, one a line.
 * cube_net_policy_decode() takes it back.  Encode returns the length, or
 * -ENOSPC when @len is too small.
 */
int cube_net_policy_encode(const struct cube_net_policy *p, char *buf,
			   size_t len);
int cube_net_policy_decode(const char *s, struct cube_net_policy *p,
			   char *err);

/* --- a sandbox's network (root) --- */

/**
 * struct cube_net_config - what cube_net_create() builds
 * @sandbox_id: the module's sandbox id: recorded in the program's config
 *	(how cube_net_open() finds it) and the start of the slot search
 * @policy: the initial policy; mode NONE creates nothing
 * @range: the cube range, "A.B.C.D/LEN" with LEN 16..30 (NULL: default)
 * @resolver: the DNS server the gateway's port 53 goes to (NULL: the
 *	first non-loopback nameserver of /etc/resolv.conf; none there: DNS
 *	to the gateway is not answered)
 */
struct cube_net_config {
	uint64_t sandbox_id;
	const struct cube_net_policy *policy;
	const char *range;
	const char *resolver;
};

/**
 * struct cube_net - what cube_net_create() made; every fd close-on-exec
 * @netns_fd: the namespace: for CUBE_IOC_SANDBOX_SET_NETNS
 * @tap_fd: tap0, opened IFF_TAP | IFF_NO_PI | IFF_VNET_HDR: for cube-vmm's
 *	--net-tap-fd
 * @link_fds, @nlinks: BPF links: each for CUBE_IOC_SANDBOX_ADD_BPF_LINK
 * @slot: the /31 of the cube range used
 * @host_ifname: the host's end of the veth, "cube<slot>"
 * @host_addr, @ns_addr: the /31's two addresses (host end, namespace end)
 * @resolver: where DNS to the gateway goes (INADDR_ANY: nowhere)
 *
 * All fds are -1 for mode NONE.
 */
struct cube_net {
	int netns_fd;
	int tap_fd;
	int link_fds[CUBE_NET_LINKS_MAX];
	unsigned int nlinks;
	unsigned int slot;
	char host_ifname[IF_NAMESIZE];
	struct in_addr host_addr;
	struct in_addr ns_addr;
	struct in_addr resolver;
};

/**
 * cube_net_create() - a sandbox's namespace, devices, NAT and policy
 * @cfg: what to build
 * @out: the result; its fds are the caller's
 * @err: a one-line reason on failure (CUBE_NET_ERR_MAX bytes)
 *
 * The calling thread's namespace is the host's (the work is done in a
 * thread of its own; the caller's namespace never changes).  On failure
 * nothing is left: no namespace, device, program or map (the host's
 * shared "cube" table and ip_forward=1 stay; they are not the sandbox's).
 *
 * Return: 0; -EPERM without CAP_NET_ADMIN/CAP_SYS_ADMIN/CAP_BPF; -EINVAL
 * for a bad range or resolver; -ENOSPC when every slot of the range is in
 * use; other -errno.
 */
int cube_net_create(const struct cube_net_config *cfg, struct cube_net *out,
		    char *err);
/* close every fd of @n still open (-1 skips) and mark it closed */
void cube_net_close(struct cube_net *n);

/* the host's shared table and forwarding; cube_net_create() calls it */
int cube_net_host_setup(const char *range, char *err);

/* --- a running sandbox's policy and counters (root) --- */

enum cube_net_reason {
	CUBE_NET_PASSED,
	CUBE_NET_DROP_POLICY,
	CUBE_NET_DROP_METADATA,
	CUBE_NET_DROP_PRIVATE,
	CUBE_NET_DROP_HOST,
	CUBE_NET_DROP_DNS,
	CUBE_NET_DROP_SPOOF,
	CUBE_NET_DROP_PROTO,
	CUBE_NET_NR_REASONS
};

/* "passed", "policy", "metadata", ... */
const char *cube_net_reason_name(enum cube_net_reason r);

struct cube_net_counters {
	uint64_t packets[CUBE_NET_NR_REASONS];
	uint64_t bytes[CUBE_NET_NR_REASONS];
};

/**
 * struct cube_net_handle - the maps of one sandbox's egress program
 * @sandbox_id: the sandbox
 * @prog_id: the program's id
 * @outer_fd, @fixed_fd, @cfg_fd, @counters_fd: map fds
 */
struct cube_net_handle {
	uint64_t sandbox_id;
	uint32_t prog_id;
	int outer_fd;
	int fixed_fd;
	int cfg_fd;
	int counters_fd;
};

/*
 * cube_net_open() - find a running sandbox's egress program by its id
 * (walking the loaded programs: root only; no pins).  -ENOENT when no
 * program of that sandbox is loaded (a sandbox without a network).
 * cube_net_open_link() - the same from one of its BPF link fds.
 */
int cube_net_open(uint64_t sandbox_id, struct cube_net_handle *h);
int cube_net_open_link(int link_fd, struct cube_net_handle *h);
void cube_net_handle_close(struct cube_net_handle *h);

/*
 * cube_net_set_policy() - replace the policy at once: a new trie is built
 * aside and swapped in with one map update, so every packet sees either
 * the old policy or the new one.  Mode NONE is refused (-EINVAL): a
 * sandbox keeps its device.  On error the old policy stays.
 */
int cube_net_set_policy(struct cube_net_handle *h,
			const struct cube_net_policy *p, char *err);
/* the policy in force (its own rules, not the inherited copies) */
int cube_net_get_policy(struct cube_net_handle *h, struct cube_net_policy *p,
			uint32_t *generation);
int cube_net_get_counters(struct cube_net_handle *h,
			  struct cube_net_counters *c);

/* the addresses recorded at creation */
struct cube_net_info {
	unsigned int slot;
	struct in_addr ns_addr, host_addr, resolver;
};
int cube_net_get_info(struct cube_net_handle *h, struct cube_net_info *info);

#endif /* CUBE_NET_H */
