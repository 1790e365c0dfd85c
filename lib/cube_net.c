// SPDX-License-Identifier: GPL-2.0
/*
 * cube_net.c: building a sandbox's network namespace.
 *
 * The work runs in a thread of its own, which unshares its network
 * namespace: the caller's never changes, and when something fails the
 * namespace (with whatever was made in it, the veth's host end included)
 * goes when the thread ends and the fds are closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_tun.h>

#include "cube_net_addr.h"
#include "cube_net_int.h"

#define HOST_ADDRS_MAX	(CUBE_EGRESS_FIXED_MAX - 64)

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : n < 0 ? -errno : -EIO;
}

/* "A.B.C.D/LEN", LEN 16..30, host bits zero */
static int parse_range(const char *s, struct in_addr *base, unsigned int *plen,
		       char *err)
{
	struct cube_net_rule r;
	char e[CUBE_NET_ERR_MAX];

	if (cube_net_parse_cidr(s, &r, e) || r.family != AF_INET || r.port_lo ||
	    !strchr(s, '/'))
		return cube_net_err(err, -EINVAL, "bad cube range '%s' (want A.B.C.D/LEN)", s);
	if (r.plen < 16 || r.plen > 30)
		return cube_net_err(err, -EINVAL, "cube range '%s': the length must be 16..30", s);
	memcpy(&base->s_addr, r.addr, 4);
	*plen = r.plen;
	return 0;
}

/* the first IPv4 nameserver of resolv.conf that is not loopback */
static struct in_addr host_resolver(void)
{
	struct in_addr a = { INADDR_ANY };
	char line[256], w[64];
	FILE *f = fopen("/etc/resolv.conf", "re");

	if (!f)
		return a;
	while (fgets(line, sizeof(line), f)) {
		struct in_addr t;

		if (sscanf(line, " nameserver %63s", w) != 1 ||
		    inet_pton(AF_INET, w, &t) != 1 ||
		    (ntohl(t.s_addr) >> 24) == 127 || t.s_addr == INADDR_ANY)
			continue;
		a = t;
		break;
	}
	fclose(f);
	return a;
}

int cube_net_host_setup(const char *range, char *err)
{
	struct in_addr base;
	unsigned int plen;
	char r[INET_ADDRSTRLEN + 4];
	int ret;

	ret = parse_range(range ? range : CUBE_NET_RANGE_DEFAULT, &base, &plen, err);
	if (ret)
		return ret;
	inet_ntop(AF_INET, &base, r, INET_ADDRSTRLEN);
	snprintf(r + strlen(r), 4, "/%u", plen);
	ret = write_file("/proc/sys/net/ipv4/ip_forward", "1");
	if (ret)
		return cube_net_err(err, ret, "cannot enable IPv4 forwarding: %s", strerror(-ret));
	return cube_net_nft_host(r, err);
}

/* the fixed trie: the cube range and the host's addresses (class HOST)
 * first, so that they win over a built-in range of the same prefix */
static int fixed_ranges(struct in_addr base, unsigned int plen,
			struct cube_net_range **out, unsigned int *n)
{
	struct cube_net_range *f;
	struct ifaddrs *ifa, *i;
	unsigned int k = 0, b;

	f = calloc(HOST_ADDRS_MAX + cube_net_nbuiltin + 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f[k].family = AF_INET;
	f[k].plen = plen;
	memcpy(f[k].addr, &base, 4);
	f[k++].class = CUBE_EGRESS_CLASS_HOST;
	if (!getifaddrs(&ifa)) {
		for (i = ifa; i && k < HOST_ADDRS_MAX; i = i->ifa_next) {
			if (!i->ifa_addr)
				continue;
			if (i->ifa_addr->sa_family == AF_INET) {
				f[k].family = AF_INET;
				f[k].plen = 32;
				memcpy(f[k].addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			} else if (i->ifa_addr->sa_family == AF_INET6) {
				f[k].family = AF_INET6;
				f[k].plen = 128;
				memcpy(f[k].addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
			} else {
				continue;
			}
			f[k++].class = CUBE_EGRESS_CLASS_HOST;
		}
		freeifaddrs(ifa);
	}
	for (b = 0; b < cube_net_nbuiltin; b++)
		f[k++] = cube_net_builtin[b];
	*out = f;
	*n = k;
	return 0;
}

static int open_tap(char *err)
{
	struct ifreq ifr = { 0 };
	int fd;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return cube_net_err(err, -errno, "cannot open /dev/net/tun: %s", strerror(errno));
	strcpy(ifr.ifr_name, "tap0");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr)) {
		int e = errno;

		close(fd);
		return cube_net_err(err, -e, "cannot create tap0: %s", strerror(e));
	}
	return fd;
}

struct job {
	const struct cube_net_config *cfg;
	struct cube_net *out;
	char *err;
	int ret;
};

#define FAIL(ret_, ...)	do { ret = cube_net_err(err, (ret_), __VA_ARGS__); goto out; } while (0)

static int build(const struct cube_net_config *cfg, struct cube_net *o, char *err)
{
	static const uint8_t gw_mac[6] = CUBE_NET_GW_MAC_BYTES;
	static const uint8_t guest_mac[6] = CUBE_NET_GUEST_MAC_BYTES;
	const char *range = cfg->range ? cfg->range : CUBE_NET_RANGE_DEFAULT;
	struct cube_rtnl host = { .fd = -1 }, ns = { .fd = -1 };
	struct cube_egress_cfg ecfg = { .magic = CUBE_EGRESS_CFG_MAGIC };
	struct cube_net_range *fixed = NULL;
	unsigned int plen, nslots, k, nfixed;
	struct in_addr base, resolver, guest, gw;
	int self = -1, ret, ifi, link;
	char name[IF_NAMESIZE];

	ret = parse_range(range, &base, &plen, err);
	if (ret)
		return ret;
	if (cfg->resolver) {
		if (inet_pton(AF_INET, cfg->resolver, &resolver) != 1 ||
		    resolver.s_addr == INADDR_ANY)
			return cube_net_err(err, -EINVAL, "bad resolver address '%s' (IPv4)", cfg->resolver);
	} else {
		resolver = host_resolver();
	}
	inet_pton(AF_INET, CUBE_NET_GUEST_IP, &guest);
	inet_pton(AF_INET, CUBE_NET_GW_IP, &gw);
	ret = fixed_ranges(base, plen, &fixed, &nfixed);
	if (ret)
		return cube_net_err(err, ret, "out of memory");
	ret = cube_net_host_setup(range, err);
	if (ret)
		goto out;
	if ((ret = cube_rtnl_open(&host)))
		FAIL(ret, "rtnetlink: %s", strerror(-ret));
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		FAIL(-errno, "cannot open our network namespace: %s", strerror(errno));
	if (unshare(CLONE_NEWNET))
		FAIL(-errno, "cannot create a network namespace: %s", strerror(errno));
	o->netns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (o->netns_fd < 0)
		FAIL(-errno, "cannot open the new network namespace: %s", strerror(errno));

	/* in the new namespace */
	if ((ret = cube_rtnl_open(&ns)))
		FAIL(ret, "rtnetlink: %s", strerror(-ret));
	ret = open_tap(err);
	if (ret < 0)
		goto out;
	o->tap_fd = ret;
	/* no IPv6 in the namespace: nothing of it reaches the host */
	write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	if ((ret = write_file("/proc/sys/net/ipv4/ip_forward", "1")))
		FAIL(ret, "cannot enable forwarding in the namespace: %s", strerror(-ret));

	/* the veth: a free slot's host name is the lock on its /31 */
	nslots = 1U << (32 - plen - 1);
	for (k = 0; k < nslots; k++) {
		o->slot = (cfg->sandbox_id + k) % nslots;
		snprintf(name, sizeof(name), "cube%u", o->slot);
		ret = cube_rtnl_veth(&host, name, "eth0", o->netns_fd);
		if (ret != -EEXIST)
			break;
	}
	if (ret == -EEXIST)
		FAIL(-ENOSPC, "every /31 of the cube range %s is in use", range);
	if (ret)
		FAIL(ret, "cannot create the veth pair %s: %s", name, strerror(-ret));
	strcpy(o->host_ifname, name);
	o->host_addr.s_addr = htonl(ntohl(base.s_addr) + 2 * o->slot);
	o->ns_addr.s_addr = htonl(ntohl(base.s_addr) + 2 * o->slot + 1);
	o->resolver = resolver;

	/* the host's end, from the host's namespace */
	if (setns(self, CLONE_NEWNET))
		FAIL(-errno, "cannot return to the host's namespace: %s", strerror(errno));
	ifi = if_nametoindex(name);
	if (!ifi)
		FAIL(-errno, "%s vanished: %s", name, strerror(errno));
	if ((ret = cube_rtnl_addr4(&host, ifi, o->host_addr, 31)) ||
	    (ret = cube_rtnl_link_up(&host, ifi, NULL)))
		FAIL(ret, "cannot configure %s: %s", name, strerror(-ret));
	if (setns(o->netns_fd, CLONE_NEWNET))
		FAIL(-errno, "cannot enter the sandbox's namespace: %s", strerror(errno));

	/* lo, eth0 towards the host, tap0 towards the guest */
	if ((ret = cube_rtnl_link_up(&ns, if_nametoindex("lo"), NULL)))
		FAIL(ret, "cannot bring lo up: %s", strerror(-ret));
	ifi = if_nametoindex("eth0");
	if (!ifi || (ret = cube_rtnl_addr4(&ns, ifi, o->ns_addr, 31)) ||
	    (ret = cube_rtnl_link_up(&ns, ifi, NULL)) ||
	    (ret = cube_rtnl_route4_default(&ns, o->host_addr)))
		FAIL(ret ? ret : -ENODEV, "cannot configure eth0: %s", strerror(ret ? -ret : ENODEV));
	ifi = if_nametoindex("tap0");
	if (!ifi || (ret = cube_rtnl_link_up(&ns, ifi, gw_mac)) ||
	    (ret = cube_rtnl_addr4(&ns, ifi, gw, CUBE_NET_PREFIX_LEN)) ||
	    (ret = cube_rtnl_neigh4(&ns, ifi, guest, guest_mac)))
		FAIL(ret ? ret : -ENODEV, "cannot configure tap0: %s", strerror(ret ? -ret : ENODEV));
	ret = cube_net_nft_sandbox(o->ns_addr, resolver, err);
	if (ret)
		goto out;

	ecfg.guest_ip = guest.s_addr;
	ecfg.gw_ip = gw.s_addr;
	ecfg.ns_ip = o->ns_addr.s_addr;
	ecfg.host_ip = o->host_addr.s_addr;
	ecfg.resolver_ip = resolver.s_addr;
	ecfg.sandbox_id = cfg->sandbox_id;
	ecfg.slot = o->slot;
	link = cube_net_bpf_attach(ifi, &ecfg, cfg->policy, fixed, nfixed, err);
	if (link < 0) {
		ret = link;
		goto out;
	}
	o->link_fds[0] = link;
	o->nlinks = 1;
	ret = 0;
out:
	cube_rtnl_close(&ns);
	cube_rtnl_close(&host);
	if (self >= 0)
		close(self);
	free(fixed);
	return ret;
}

static void *build_thread(void *arg)
{
	struct job *j = arg;

	j->ret = build(j->cfg, j->out, j->err);
	return NULL;
}

void cube_net_close(struct cube_net *n)
{
	unsigned int i;

	if (n->netns_fd >= 0)
		close(n->netns_fd);
	if (n->tap_fd >= 0)
		close(n->tap_fd);
	for (i = 0; i < CUBE_NET_LINKS_MAX; i++) {
		if (n->link_fds[i] >= 0)
			close(n->link_fds[i]);
		n->link_fds[i] = -1;
	}
	n->netns_fd = n->tap_fd = -1;
	n->nlinks = 0;
}

int cube_net_create(const struct cube_net_config *cfg, struct cube_net *out,
		    char *err)
{
	struct cube_net o = { .netns_fd = -1, .tap_fd = -1 };
	struct job j = { .cfg = cfg, .out = &o, .err = err };
	pthread_t t;
	unsigned int i;
	int ret;

	for (i = 0; i < CUBE_NET_LINKS_MAX; i++)
		o.link_fds[i] = -1;
	if (err)
		err[0] = '\0';
	if (!cfg->policy)
		return cube_net_err(err, -EINVAL, "no network policy");
	if (cfg->policy->mode == CUBE_NET_NONE) {
		*out = o;
		return 0;
	}
	ret = pthread_create(&t, NULL, build_thread, &j);
	if (ret)
		return cube_net_err(err, -ret, "cannot start a thread: %s", strerror(ret));
	pthread_join(t, NULL);
	if (j.ret) {
		cube_net_close(&o);
		return j.ret;
	}
	*out = o;
	return 0;
}
