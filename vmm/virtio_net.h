/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-net (virtio 1.x, section 5.1) over a tap file descriptor.
 *
 * The supervisor opens the tap (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR) in the
 * sandbox's network namespace and hands it to cube-vmm, which never opens
 * /dev/net/tun and needs no network capability.  Two queues, RX and TX;
 * features VERSION_1, MAC and MTU, no offloads: the tap's offloads are off,
 * so every frame is a plain Ethernet frame of at most NET_MAX_FRAME bytes
 * behind a 12-byte virtio_net_hdr_v1 that the device writes itself.
 *
 * TX is served in the vCPU thread that kicked the queue; RX in an I/O
 * thread that reads the tap only while the guest has given receive
 * buffers (back-pressure: no buffers, no reads, the tap queue fills and
 * the host drops).  A malformed chain breaks the device until reset.
 */
#ifndef CUBE_VMM_VIRTIO_NET_H
#define CUBE_VMM_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/virtio_net.h>

#define NET_HDR_LEN		sizeof(struct virtio_net_hdr_v1)
#define NET_ETH_HLEN		14
#define NET_VLAN_HLEN		4
#define NET_MTU			1500
/* The largest frame either way: MTU, Ethernet header, one VLAN tag. */
#define NET_MAX_FRAME		(NET_MTU + NET_ETH_HLEN + NET_VLAN_HLEN)
/* Frames read from the tap per I/O thread round (then the lock is freed). */
#define NET_RX_BUDGET		64

struct vm;
struct virtio_mmio;

/*
 * Create the device over fd, a tap set up by net_tap_setup() (or, in the
 * unit tests, a datagram socket: one datagram per frame, header included).
 * The device owns fd from then on and closes it.
 */
struct virtio_mmio *virtio_net_create(struct vm *vm, uint64_t base,
				      uint32_t irq, int fd,
				      const uint8_t mac[6], const char **err);
/* Start the RX I/O thread (before the seccomp filter goes in). */
int virtio_net_start(struct virtio_mmio *t);
void virtio_net_destroy(struct virtio_mmio *t);

/*
 * One round of the I/O thread's work, lock held: frames from fd into the
 * RX queue, and which events of fd to wait for next.  The unit tests call
 * it instead of starting the thread.
 */
void virtio_net_poll(struct virtio_mmio *t);
/* Is the device waiting for fd to be readable (RX buffers there)? */
bool virtio_net_reading(struct virtio_mmio *t);

struct virtio_net_stats {
	uint64_t rx_packets;
	uint64_t rx_dropped;	/* too big for the buffer or the MTU */
	uint64_t tx_packets;
	uint64_t tx_dropped;	/* too short, too long, or the tap refused */
};

void virtio_net_get_stats(struct virtio_mmio *t, struct virtio_net_stats *s);

/* Snapshot: what the device was created with (the rings are the transport's). */
struct virtio_net_state {
	uint8_t mac[6];
	uint16_t mtu;
	uint32_t reserved[3];
};

void virtio_net_save(struct virtio_mmio *t, struct virtio_net_state *s);
/* Check a saved state against the device built for the restore; 0 or -EINVAL. */
int virtio_net_load(struct virtio_mmio *t, const struct virtio_net_state *s);

/*
 * Check that fd is a tap opened with IFF_NO_PI and IFF_VNET_HDR, set its
 * header size to NET_HDR_LEN, its offloads off and make it non-blocking
 * (net_tap.c).  0, or a negative errno with *err saying what is wrong.
 */
int net_tap_setup(int fd, const char **err);

/* Parse "xx:xx:xx:xx:xx:xx" (a unicast address); 0 or -EINVAL. */
int net_parse_mac(const char *s, uint8_t mac[6]);

#endif /* CUBE_VMM_VIRTIO_NET_H */
