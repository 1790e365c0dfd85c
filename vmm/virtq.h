/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Split virtqueues (virtio 1.x, section 2.7) read from guest memory.
 *
 * Everything in the rings is written by the guest and may change under our
 * feet: each field is read once into a local copy, then checked.  A queue
 * whose driver breaks the rules (an index beyond the ring, a chain longer
 * than the ring or looping, a buffer outside guest memory, a readable
 * buffer after a writable one) is marked broken and never touched again
 * until the device is reset.
 */
#ifndef CUBE_VMM_VIRTQ_H
#define CUBE_VMM_VIRTQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mem.h"

#define VIRTQ_MAX_SIZE	256

struct virtq {
	/* Set by the driver through the transport. */
	uint16_t num;
	bool ready;
	uint64_t desc_addr;
	uint64_t avail_addr;
	uint64_t used_addr;
	/* Device side. */
	uint16_t last_avail;		/* next avail ring slot to take */
	uint16_t used_idx;		/* next used ring slot to fill */
	bool broken;
	/* Host views of the rings, valid while ready && !broken. */
	void *desc;
	void *avail;
	void *used;
};

/* A descriptor chain taken from a queue: readable buffers, then writable. */
struct virtq_chain {
	uint16_t head;
	unsigned int nr_out;		/* iov[0 .. nr_out) device-readable */
	unsigned int nr_in;		/* iov[nr_out .. +nr_in) device-writable */
	uint64_t out_len;
	uint64_t in_len;
	struct iovec iov[VIRTQ_MAX_SIZE];
};

/* Check the ring addresses against guest memory and map them; 0 or -EINVAL. */
int virtq_activate(struct virtq *vq, const struct guest_mem *gm);
/* Forget everything (device reset). */
void virtq_reset(struct virtq *vq);
/*
 * Take the next available chain.  Returns 1 with *c filled, 0 when the ring
 * is empty, -EINVAL when the driver broke the rules (vq->broken is set).
 */
int virtq_pop(struct virtq *vq, const struct guest_mem *gm,
	      struct virtq_chain *c);
/* Put the last popped chain back, unused (it is taken again next time). */
void virtq_unpop(struct virtq *vq);
/* Give a chain back with len bytes written; publishes the used index. */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t len);
/* Is a chain waiting?  (false when not ready or broken) */
bool virtq_has_avail(struct virtq *vq);
/*
 * Does the driver want an interrupt for the chains pushed so far?  False
 * while it polls (VRING_AVAIL_F_NO_INTERRUPT); a full barrier orders the
 * used index written before against the flag read.
 */
bool virtq_want_interrupt(struct virtq *vq);
/*
 * Tell the driver whether to kick on new chains (VRING_USED_F_NO_NOTIFY
 * when not).  After turning kicks back on, check virtq_has_avail() again:
 * a chain added just before was not kicked.
 */
void virtq_set_notify(struct virtq *vq, bool on);

/* Copy between an iovec range and a flat buffer; return bytes copied. */
size_t iov_to_buf(const struct iovec *iov, unsigned int n, size_t skip,
		  void *buf, size_t len);
size_t buf_to_iov(const struct iovec *iov, unsigned int n, size_t skip,
		  const void *buf, size_t len);
/*
 * The iovec range from byte skip on, into out (room for n entries); returns
 * how many entries it has.  The buffers are not copied.
 */
unsigned int iov_skip(const struct iovec *iov, unsigned int n, size_t skip,
		      struct iovec *out);

#endif /* CUBE_VMM_VIRTQ_H */
