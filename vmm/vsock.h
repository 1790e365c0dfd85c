/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-vsock (virtio 1.x, section 5.10) with the host side on a Unix
 * socket, hybrid style:
 *
 *   host -> guest: connect to the UDS, write "CONNECT <port>\n"; once the
 *     guest accepts, read "OK <host port>\n"; then the stream is the guest
 *     socket's.  A refused or failed connection is closed without a reply.
 *   guest -> host: a guest connect() to CID 2 port P is bridged to the UDS
 *     "<path>_<P>" if something listens there, else it is reset.  With a
 *     connect broker (vsock_set_broker()) the VMM names no path: it asks
 *     the broker, which connects for it and passes the stream back (a
 *     jailed VMM, whose filter has neither socket nor connect, has no other
 *     way; without a broker its guest's connects are reset).
 *
 * Credit-based flow control per connection both ways; anything malformed
 * from the guest resets the connection it names (RST).  One I/O thread
 * owns every connection and does all queue work under the transport lock.
 */
#ifndef CUBE_VMM_VSOCK_H
#define CUBE_VMM_VSOCK_H

#include <stdint.h>

#define VSOCK_HOST_CID		2
#define VSOCK_DEFAULT_CID	3
#define VSOCK_MAX_CONNS		1024
#define VSOCK_BUF_ALLOC		(256 * 1024)

struct vm;
struct virtio_mmio;

/* Create the device; uds_path may be NULL (no host side). */
struct virtio_mmio *vsock_create(struct vm *vm, uint64_t base, uint32_t irq,
				 uint64_t guest_cid, const char *uds_path,
				 const char **err);
int vsock_start(struct virtio_mmio *t);
/*
 * Before vsock_start(), once the root is the jail's: the socket paths
 * lose their first @root_len bytes (the jail root's path), and the
 * listening socket's file is left to the root's owner at the end.
 */
void vsock_rebase(struct virtio_mmio *t, size_t root_len);

/*
 * Before vsock_start(): guest connects go through the broker on fd (owned),
 * by the protocol of lib/cube_vsock_broker.h.  An answer that takes longer
 * than VSOCK_BROKER_WAIT_MS resets that connection; an answer for another
 * port is dropped.
 */
#define VSOCK_BROKER_WAIT_MS	1000

void vsock_set_broker(struct virtio_mmio *t, int fd);
/*
 * Before vsock_start(): @fn(@arg) is called from the I/O thread on each new
 * connection, either way (a sign the sandbox is in use).
 */
void vsock_set_activity(struct virtio_mmio *t, void (*fn)(void *), void *arg);
/*
 * One round of the I/O thread's work without waiting, for a caller that
 * runs the device without vsock_start() (the fuzzer); the lock not held.
 */
void vsock_poll(struct virtio_mmio *t);
void vsock_destroy(struct virtio_mmio *t);

/* Snapshot: the connection table (host streams are reset on restore). */
struct vsock_state {
	uint64_t guest_cid;
	uint32_t next_port;
	uint32_t nr_conns;
	struct {
		uint32_t local_port;
		uint32_t peer_port;
	} conns[VSOCK_MAX_CONNS];
};

/* Both with the transport lock held. */
void vsock_save(struct virtio_mmio *t, struct vsock_state *s);
/*
 * After the transport state is loaded: reset every saved connection in
 * the guest (an RST each, before any new connection's packets).
 */
int vsock_load(struct virtio_mmio *t, const struct vsock_state *s);
/*
 * Before a rollback's vsock_load(), the transport lock held: close every
 * host stream (its peer sees the end) and forget every connection and
 * pending RST of the state being left.
 */
void vsock_drop_all(struct virtio_mmio *t);

#endif /* CUBE_VMM_VSOCK_H */
