/* SPDX-License-Identifier: GPL-2.0 */
/*
 * net_util.h: the small world the network tests build in namespaces, and
 * a guest without a VM: frames written into a sandbox's tap fd (with the
 * virtio-net header) and the replies read back.
 *
 * The test's own namespace plays the host.  Beside it:
 *   inet  203.0.113.10/24 (host end wan0 203.0.113.1): TCP listeners,
 *         UDP echo (53 included: the test's resolver)
 *   md    169.254.169.254/24 (host end md0 169.254.169.1)
 *   lan   10.1.0.10/24 (host end lan0 10.1.0.1)
 * and a TCP listener on the host itself.
 */
#ifndef NET_UTIL_H
#define NET_UTIL_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_net.h>

#include "cube_net_addr.h"
#include "cube_net_int.h"

#define INET_ADDR	"203.0.113.10"
#define INET_HOST	"203.0.113.1"
#define MD_ADDR		"169.254.169.254"
#define LAN_ADDR	"10.1.0.10"
#define TCP_PORTS	{ 22, 80, 443, 8080, 8081, 8090, 9000 }
#define UDP_PORTS	{ 7, 53, 5353 }

static inline struct in_addr nu_ip(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a;
}

static inline int nu_write(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, v, strlen(v));
	close(fd);
	return n == (ssize_t)strlen(v) ? 0 : -1;
}

static inline void nu_modprobe(void)
{
	/* L1 loads modules on demand only where told; harmless elsewhere */
	static const char *const mods[] = { "tun", "veth", "nf_tables", "nft_nat",
		"nft_chain_nat", "nft_masq", "nft_ct", NULL };
	char cmd[128];
	int i;

	for (i = 0; mods[i]; i++) {
		snprintf(cmd, sizeof(cmd), "modprobe -q %s 2>/dev/null", mods[i]);
		if (system(cmd)) {
			/* built in, or not there: the tests will say */
		}
	}
	/* without devtmpfs the node may be missing: misc 10, 200 */
	if (access("/dev/net/tun", F_OK)) {
		mkdir("/dev/net", 0755);
		mknod("/dev/net/tun", S_IFCHR | 0666, makedev(10, 200));
	}
}

/* UDP echo on @ports of the current namespace, in a child */
static inline pid_t nu_udp_echo(void)
{
	static const uint16_t ports[] = UDP_PORTS;
	struct pollfd p[sizeof(ports) / sizeof(ports[0])];
	unsigned int i, n = sizeof(ports) / sizeof(ports[0]);
	pid_t pid;

	for (i = 0; i < n; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(ports[i]) };
		int one = 1;

		p[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		setsockopt(p[i].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(p[i].fd, (struct sockaddr *)&sa, sizeof(sa)))
			return -1;
		p[i].events = POLLIN;
	}
	pid = fork();
	if (pid)
		goto out;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		if (poll(p, n, -1) < 0)
			continue;
		for (i = 0; i < n; i++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			char buf[2048];
			ssize_t r;

			if (!(p[i].revents & POLLIN))
				continue;
			r = recvfrom(p[i].fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			if (r > 0)
				sendto(p[i].fd, buf, r, 0, (struct sockaddr *)&from, fl);
		}
	}
out:
	for (i = 0; i < n; i++)
		close(p[i].fd);
	return pid;
}

/* TCP listeners on the ports of TCP_PORTS (fds stay open in the caller;
 * the kernel answers SYNs without accept()) */
static inline int nu_tcp_listen(void)
{
	static const uint16_t ports[] = TCP_PORTS;
	unsigned int i;

	for (i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(ports[i]) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(fd, 1024))
			return -1;
	}
	return 0;
}

/*
 * A peer namespace linked to ours by a veth @host_if (@host_addr/24 here,
 * @peer_addr/24 there, its default route through us), with listeners.
 */
static inline int nu_peer(const char *host_if, const char *host_addr,
			  const char *peer_addr)
{
	struct cube_rtnl host = { .fd = -1 }, peer = { .fd = -1 };
	int self, ns, ret = -1, ifi;

	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0 || cube_rtnl_open(&host) || unshare(CLONE_NEWNET))
		return -1;
	ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns < 0 || cube_rtnl_open(&peer))
		return -1;
	if (cube_rtnl_veth(&host, host_if, "eth0", ns))
		goto out;
	ifi = if_nametoindex("eth0");
	if (cube_rtnl_link_up(&peer, if_nametoindex("lo"), NULL) ||
	    cube_rtnl_addr4(&peer, ifi, nu_ip(peer_addr), 24) ||
	    cube_rtnl_link_up(&peer, ifi, NULL) ||
	    cube_rtnl_route4_default(&peer, nu_ip(host_addr)))
		goto out;
	if (nu_tcp_listen() || nu_udp_echo() < 0)
		goto out;
	if (setns(self, CLONE_NEWNET))
		goto out;
	ifi = if_nametoindex(host_if);
	if (cube_rtnl_addr4(&host, ifi, nu_ip(host_addr), 24) ||
	    cube_rtnl_link_up(&host, ifi, NULL))
		goto out;
	ret = 0;
out:
	cube_rtnl_close(&host);
	cube_rtnl_close(&peer);
	close(ns);
	close(self);
	return ret;
}

/* the namespace the test started in (where cube.ko's netlink family is) */
static int nu_orig_ns = -1;

/* the host: a fresh namespace for this test, three peers, a listener */
static inline int nu_world(void)
{
	struct cube_rtnl r = { .fd = -1 };

	nu_modprobe();
	nu_orig_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (nu_orig_ns < 0 || unshare(CLONE_NEWNET) || cube_rtnl_open(&r) ||
	    cube_rtnl_link_up(&r, if_nametoindex("lo"), NULL))
		return -1;
	cube_rtnl_close(&r);
	if (nu_peer("wan0", INET_HOST, INET_ADDR) ||
	    nu_peer("md0", "169.254.169.1", MD_ADDR) ||
	    nu_peer("lan0", "10.1.0.1", LAN_ADDR))
		return -1;
	return nu_tcp_listen();
}

/* --- the guest --- */

static inline uint16_t nu_csum(const void *p, size_t n, uint32_t sum)
{
	const uint8_t *b = p;

	for (; n > 1; n -= 2, b += 2)
		sum += (b[0] << 8) | b[1];
	if (n)
		sum += b[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

struct nu_frame {
	struct virtio_net_hdr vh;
	uint8_t f[1514];
} __attribute__((packed));

/* build an IPv4 frame from @src to @dst of @proto (6 TCP SYN, 17 UDP,
 * 1 ICMP echo) into @fr; returns its length (virtio header included) */
static inline size_t nu_ip4(struct nu_frame *fr, const char *src,
			    const char *dst, int proto, uint16_t sport,
			    uint16_t dport, const char *payload)
{
	static const uint8_t gw[6] = CUBE_NET_GW_MAC_BYTES;
	static const uint8_t me[6] = CUBE_NET_GUEST_MAC_BYTES;
	uint8_t *e = fr->f, *ip = e + 14, *l4 = ip + 20;
	size_t plen = payload ? strlen(payload) : 0, l4len;
	struct in_addr s = nu_ip(src), d = nu_ip(dst);
	uint32_t ph;

	memset(fr, 0, sizeof(*fr));
	memcpy(e, gw, 6);
	memcpy(e + 6, me, 6);
	e[12] = 0x08;
	if (proto == 6) {
		l4len = 20;
		l4[0] = sport >> 8; l4[1] = sport;
		l4[2] = dport >> 8; l4[3] = dport;
		l4[7] = 1;			/* seq */
		l4[12] = 5 << 4;		/* data offset */
		l4[13] = 0x02;			/* SYN */
		l4[14] = 0xff; l4[15] = 0xff;	/* window */
	} else if (proto == 17) {
		l4len = 8 + plen;
		l4[0] = sport >> 8; l4[1] = sport;
		l4[2] = dport >> 8; l4[3] = dport;
		l4[4] = l4len >> 8; l4[5] = l4len;
		memcpy(l4 + 8, payload, plen);
	} else {
		l4len = 8 + plen;
		l4[0] = 8;			/* echo request */
		l4[4] = sport >> 8; l4[5] = sport;
		memcpy(l4 + 8, payload, plen);
	}
	ip[0] = 0x45;
	ip[2] = (20 + l4len) >> 8; ip[3] = 20 + l4len;
	ip[6] = 0x40;			/* DF */
	ip[8] = 64;
	ip[9] = proto;
	memcpy(ip + 12, &s, 4);
	memcpy(ip + 16, &d, 4);
	ph = (uint16_t)~nu_csum(ip, 20, 0);
	ip[10] = ph >> 8; ip[11] = ph;
	if (proto == 1) {
		ph = (uint16_t)~nu_csum(l4, l4len, 0);
	} else {
		uint8_t pseudo[12];

		memcpy(pseudo, &s, 4);
		memcpy(pseudo + 4, &d, 4);
		pseudo[8] = 0; pseudo[9] = proto;
		pseudo[10] = l4len >> 8; pseudo[11] = l4len;
		ph = (uint16_t)~nu_csum(l4, l4len, nu_csum(pseudo, 12, 0));
	}
	l4[proto == 6 ? 16 : proto == 17 ? 6 : 2] = ph >> 8;
	l4[proto == 6 ? 17 : proto == 17 ? 7 : 3] = ph;
	return sizeof(fr->vh) + 14 + 20 + l4len;
}

static inline uint64_t nu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ULL + t.tv_nsec / 1000000;
}

/*
 * Does an IPv4 frame come back on @tap from @dst:@dport (proto @proto) to
 * our @sport within @ms?  TCP: a SYN-ACK or a RST both say "reached".
 */
static inline int nu_reply(int tap, const char *dst, int proto,
			   uint16_t sport, uint16_t dport, int ms)
{
	struct in_addr d = nu_ip(dst);
	uint64_t end = nu_ms() + ms;

	for (;;) {
		struct pollfd p = { .fd = tap, .events = POLLIN };
		int64_t left = (int64_t)(end - nu_ms());
		struct nu_frame fr;
		uint8_t *ip, *l4;
		ssize_t n;

		if (left <= 0)
			return 0;
		if (poll(&p, 1, left) <= 0)
			continue;
		n = read(tap, &fr, sizeof(fr));
		if (n < (ssize_t)(sizeof(fr.vh) + 14 + 20 + 8))
			continue;
		ip = fr.f + 14;
		l4 = ip + (ip[0] & 0xf) * 4;
		if (fr.f[12] != 0x08 || fr.f[13] != 0 || ip[9] != proto ||
		    memcmp(ip + 12, &d, 4))
			continue;
		if (proto == 1) {
			if (l4[0] == 0 && ((l4[4] << 8) | l4[5]) == sport)
				return 1;
			continue;
		}
		if (((l4[0] << 8) | l4[1]) == dport && ((l4[2] << 8) | l4[3]) == sport)
			return 1;
	}
}

/* one probe as the guest: 1 reached, 0 not, -1 the write failed */
static inline int nu_probe(int tap, const char *dst, int proto,
			   uint16_t dport, int ms)
{
	static uint16_t sport = 20000;
	struct nu_frame fr;
	size_t len;

	sport++;
	len = nu_ip4(&fr, CUBE_NET_GUEST_IP, dst, proto, sport, dport, "cube probe");
	if (write(tap, &fr, len) != (ssize_t)len)
		return -1;
	return nu_reply(tap, dst, proto, sport, dport, ms);
}

#endif /* NET_UTIL_H */
