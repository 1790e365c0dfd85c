// SPDX-License-Identifier: GPL-2.0
/*
 * The tap behind virtio-net: checks and set-up of an inherited tap fd, and
 * MAC address parsing.  Every request here works on the fd alone, with no
 * capability: TUNGETIFF, TUNSETVNETHDRSZ and TUNSETOFFLOAD act on the tun
 * file the supervisor opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/if.h>
#include <linux/if_tun.h>

#include "virtio_net.h"

int net_tap_setup(int fd, const char **err)
{
	struct ifreq ifr;
	int hdr = NET_HDR_LEN, fl;

	if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
		*err = "not an open file descriptor";
		return -EBADF;
	}
	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr)) {
		*err = "not a tap device (TUNGETIFF failed)";
		return -ENOTTY;
	}
	if (!(ifr.ifr_flags & IFF_TAP)) {
		*err = "a tun device, not a tap";
		return -EINVAL;
	}
	if (!(ifr.ifr_flags & IFF_NO_PI) || !(ifr.ifr_flags & IFF_VNET_HDR)) {
		*err = "the tap was not opened with IFF_NO_PI | IFF_VNET_HDR";
		return -EINVAL;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr)) {
		*err = "TUNSETVNETHDRSZ failed";
		return -errno;
	}
	/* No offloads: the host hands us whole frames with their checksums. */
	if (ioctl(fd, TUNSETOFFLOAD, 0)) {
		*err = "TUNSETOFFLOAD failed";
		return -errno;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC)) {
		*err = "fcntl failed";
		return -errno;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int net_parse_mac(const char *s, uint8_t mac[6])
{
	int i;

	if (strlen(s) != 17)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		int hi = hexval(s[3 * i]), lo = hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = hi << 4 | lo;
	}
	/* Unicast, not all zeroes. */
	if ((mac[0] & 1) || !(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return -EINVAL;
	return 0;
}
