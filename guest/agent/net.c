// SPDX-License-Identifier: GPL-2.0
/*
 * net.c: the sandbox network, when the guest has a network card.
 *
 * Every sandbox sees the same network (lib/cube_net_addr.h), so a guest
 * restored from a snapshot needs nothing done: the addresses are set once,
 * when the template boots.  The card is the first Ethernet interface with
 * a device behind it (virtio-net: eth0); none means no network, and
 * nothing here costs more than a look at /sys/class/net.  Plain ioctls, as
 * the initramfs has no iproute2: address and netmask, link up, default
 * route through the gateway; IPv6 off on it (the sandbox network is IPv4
 * only, and no router answers its solicitations).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "cube_net_addr.h"

#define SYS_NET		"/sys/class/net"

static int read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* An Ethernet interface backed by a device (not lo, not a virtual one). */
static bool is_nic(const char *name)
{
	char path[320], type[16];
	struct stat st;

	snprintf(path, sizeof(path), SYS_NET "/%s/type", name);
	if (read_small(path, type, sizeof(type)) || atoi(type) != ARPHRD_ETHER)
		return false;
	snprintf(path, sizeof(path), SYS_NET "/%s/device", name);
	return !stat(path, &st);
}

/**
 * net_find_nic() - the guest's network card
 * @name: receives its name (IFNAMSIZ bytes)
 *
 * CUBE_NET_GUEST_IFNAME if it is one, else the first in name order.
 *
 * Return: 1 found, 0 none, or a negative errno.
 */
int net_find_nic(char *name)
{
	struct dirent *de;
	char best[IFNAMSIZ] = "";
	DIR *d;

	if (is_nic(CUBE_NET_GUEST_IFNAME)) {
		snprintf(name, IFNAMSIZ, "%s", CUBE_NET_GUEST_IFNAME);
		return 1;
	}
	d = opendir(SYS_NET);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= IFNAMSIZ)
			continue;
		if (is_nic(de->d_name) && (!best[0] || strcmp(de->d_name, best) < 0))
			snprintf(best, sizeof(best), "%s", de->d_name);
	}
	closedir(d);
	if (!best[0])
		return 0;
	memcpy(name, best, IFNAMSIZ);
	return 1;
}

static int set_addr(int s, unsigned long req, const char *ifname,
		    const char *addr)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	return ioctl(s, req, &ifr) ? -errno : 0;
}

static int link_up(int s, const char *ifname)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	if (ioctl(s, SIOCGIFFLAGS, &ifr))
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) ? -errno : 0;
}

static int default_route(int s, const char *ifname)
{
	struct rtentry rt;
	struct sockaddr_in *gw = (struct sockaddr_in *)&rt.rt_gateway;
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
	struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;
	char dev[IFNAMSIZ];

	memset(&rt, 0, sizeof(rt));
	snprintf(dev, sizeof(dev), "%s", ifname);
	dst->sin_family = mask->sin_family = gw->sin_family = AF_INET;
	inet_pton(AF_INET, CUBE_NET_GW_IP, &gw->sin_addr);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	rt.rt_dev = dev;
	if (ioctl(s, SIOCADDRT, &rt) && errno != EEXIST)
		return -errno;
	return 0;
}

static void ipv6_off(const char *ifname)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
		 ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;		/* no IPv6 in this kernel */
	if (write(fd, "1", 1) != 1) {
		/* then it keeps its link-local address: harmless */
	}
	close(fd);
}

/**
 * net_setup() - configure the guest's network card, if it has one
 * @ifname: receives the card's name (IFNAMSIZ bytes), "" when none
 * @what: receives the step that failed
 *
 * Return: 1 configured, 0 no card (nothing done), or a negative errno.
 */
int net_setup(char *ifname, const char **what)
{
	int s, err;

	ifname[0] = 0;
	*what = "finding the network card";
	err = net_find_nic(ifname);
	if (err <= 0)
		return err;
	ipv6_off(ifname);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	*what = "setting the address";
	err = set_addr(s, SIOCSIFADDR, ifname, CUBE_NET_GUEST_IP);
	if (!err) {
		*what = "setting the netmask";
		err = set_addr(s, SIOCSIFNETMASK, ifname, CUBE_NET_NETMASK);
	}
	if (!err) {
		*what = "bringing the link up";
		err = link_up(s, ifname);
	}
	if (!err) {
		*what = "adding the default route";
		err = default_route(s, ifname);
	}
	close(s);
	return err ? err : 1;
}

/**
 * net_write_resolv() - name the sandbox's resolver in ROOT/etc/resolv.conf
 * @root: the guest's root directory
 *
 * Written beside it and renamed over it, so a symbolic link there (to
 * systemd-resolved's file, say) is replaced, never followed.
 *
 * Return: 0 or a negative errno.
 */
int net_write_resolv(const char *root)
{
	static const char text[] = "# cube sandbox network\n"
				   "nameserver " CUBE_NET_DNS_IP "\n";
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s/etc/.resolv.conf.cube", root);
	snprintf(path, sizeof(path), "%s/etc/resolv.conf", root);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) ||
	    write(fd, text, sizeof(text) - 1) != sizeof(text) - 1)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/**
 * net_write_hosts() - give ROOT an /etc/hosts naming localhost, if it has none
 * @root: the guest's root directory
 *
 * Without one, a lookup of "localhost" would go to the sandbox's resolver,
 * out of the guest.  An existing file is left as it is.
 *
 * Return: 0 or a negative errno.
 */
int net_write_hosts(const char *root)
{
	static const char text[] = "127.0.0.1\tlocalhost\n"
				   "::1\tlocalhost ip6-localhost ip6-loopback\n";
	char path[PATH_MAX];
	struct stat st;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/etc/hosts", root);
	if (!lstat(path, &st))
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	if (fchmod(fd, 0644) ||
	    write(fd, text, sizeof(text) - 1) != sizeof(text) - 1)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}
