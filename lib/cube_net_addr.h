/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_net_addr.h: the one network every sandbox's guest sees.
 *
 * Constants only, shared by cube-vmm (the virtio-net device), the guest
 * agent (which configures eth0 at boot) and the host side (the tap in the
 * sandbox's network namespace, NAT, egress policy).  Every sandbox has the
 * same addresses, fixed when the template is built, so a clone restored
 * from a snapshot works at once: nothing in the guest is reconfigured.
 *
 *   guest eth0   CUBE_NET_GUEST_IP/CUBE_NET_PREFIX_LEN, CUBE_NET_GUEST_MAC
 *   tap (host)   CUBE_NET_GW_IP/CUBE_NET_PREFIX_LEN, CUBE_NET_GW_MAC, in
 *                the sandbox's own netns; the guest's default gateway
 *   DNS          CUBE_NET_DNS_IP port 53 (the netns forwards it to the
 *                host's resolver)
 *
 * The tap's MAC is fixed too: a restored guest's ARP cache still holds the
 * gateway's MAC of the netns the snapshot was taken in, and a tap with a
 * random MAC would ignore its frames until that entry expired.
 */
#ifndef CUBE_NET_ADDR_H
#define CUBE_NET_ADDR_H

#define CUBE_NET_GUEST_IP	"169.254.0.21"
#define CUBE_NET_GW_IP		"169.254.0.22"
#define CUBE_NET_DNS_IP		"169.254.0.22"
#define CUBE_NET_PREFIX_LEN	30
#define CUBE_NET_NETMASK	"255.255.255.252"

/* Host byte order forms of the addresses above. */
#define CUBE_NET_GUEST_IP_U32	0xa9fe0015U
#define CUBE_NET_GW_IP_U32	0xa9fe0016U

/* Locally administered unicast MACs. */
#define CUBE_NET_GUEST_MAC	"06:cb:00:00:00:15"
#define CUBE_NET_GUEST_MAC_BYTES { 0x06, 0xcb, 0x00, 0x00, 0x00, 0x15 }
#define CUBE_NET_GW_MAC		"06:cb:00:00:00:16"
#define CUBE_NET_GW_MAC_BYTES	{ 0x06, 0xcb, 0x00, 0x00, 0x00, 0x16 }

#define CUBE_NET_MTU		1500

/* The guest's interface name (no udev in the guest: the kernel's first). */
#define CUBE_NET_GUEST_IFNAME	"eth0"

#endif /* CUBE_NET_ADDR_H */
