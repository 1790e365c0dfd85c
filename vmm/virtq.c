// SPDX-License-Identifier: GPL-2.0
/* Split virtqueues read from hostile guest memory; see virtq.h. */
#include <errno.h>
#include <string.h>

#include <linux/virtio_ring.h>

#include "virtq.h"

#define VQ_LOAD16(p)	__atomic_load_n((uint16_t *)(p), __ATOMIC_ACQUIRE)
#define MIN_SZ(a, b)	((a) < (b) ? (a) : (b))
#define VQ_STORE16(p, v) __atomic_store_n((uint16_t *)(p), (v), __ATOMIC_RELEASE)

void virtq_reset(struct virtq *vq)
{
	memset(vq, 0, sizeof(*vq));
}

int virtq_activate(struct virtq *vq, const struct guest_mem *gm)
{
	uint64_t n = vq->num;

	vq->desc = vq->avail = vq->used = NULL;
	if (!n || n > VIRTQ_MAX_SIZE || (n & (n - 1)))
		goto bad;
	if ((vq->desc_addr & 15) || (vq->avail_addr & 1) || (vq->used_addr & 3))
		goto bad;
	vq->desc = gm_ptr(gm, vq->desc_addr, 16 * n);
	vq->avail = gm_ptr(gm, vq->avail_addr, 6 + 2 * n);
	vq->used = gm_ptr(gm, vq->used_addr, 6 + 8 * n);
	if (!vq->desc || !vq->avail || !vq->used)
		goto bad;
	vq->broken = false;
	return 0;
bad:
	vq->broken = true;
	return -EINVAL;
}

static int vq_break(struct virtq *vq)
{
	vq->broken = true;
	return -EINVAL;
}

bool virtq_has_avail(struct virtq *vq)
{
	struct vring_avail *avail = vq->avail;

	if (!vq->ready || vq->broken || !avail)
		return false;
	return VQ_LOAD16(&avail->idx) != vq->last_avail;
}

bool virtq_want_interrupt(struct virtq *vq)
{
	struct vring_avail *avail = vq->avail;

	if (!vq->ready || vq->broken || !avail)
		return false;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !(VQ_LOAD16(&avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
}

void virtq_set_notify(struct virtq *vq, bool on)
{
	struct vring_used *used = vq->used;

	if (!vq->ready || vq->broken || !used)
		return;
	VQ_STORE16(&used->flags, on ? 0 : VRING_USED_F_NO_NOTIFY);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int virtq_pop(struct virtq *vq, const struct guest_mem *gm,
	      struct virtq_chain *c)
{
	struct vring_avail *avail = vq->avail;
	struct vring_desc *ring = vq->desc;
	uint16_t avail_idx, idx;
	unsigned int count = 0;
	bool seen_write = false;

	if (!vq->ready || vq->broken || !avail)
		return vq->broken ? -EINVAL : 0;
	avail_idx = VQ_LOAD16(&avail->idx);
	if (avail_idx == vq->last_avail)
		return 0;
	/* The driver can be at most a ring ahead of us. */
	if ((uint16_t)(avail_idx - vq->last_avail) > vq->num)
		return vq_break(vq);

	idx = __atomic_load_n(&avail->ring[vq->last_avail % vq->num],
			      __ATOMIC_RELAXED);
	if (idx >= vq->num)
		return vq_break(vq);
	c->head = idx;
	c->nr_out = c->nr_in = 0;
	c->out_len = c->in_len = 0;

	for (;;) {
		struct vring_desc d;
		void *p;

		/* A chain visits each descriptor at most once: no loops. */
		if (count >= vq->num)
			return vq_break(vq);
		memcpy(&d, &ring[idx], sizeof(d));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (d.flags & VRING_DESC_F_INDIRECT)
			return vq_break(vq);	/* not negotiated */
		p = gm_ptr(gm, d.addr, d.len);
		if (!p)
			return vq_break(vq);
		if (d.flags & VRING_DESC_F_WRITE) {
			seen_write = true;
			c->nr_in++;
			c->in_len += d.len;
		} else {
			if (seen_write)
				return vq_break(vq);
			c->nr_out++;
			c->out_len += d.len;
		}
		c->iov[count].iov_base = p;
		c->iov[count].iov_len = d.len;
		count++;
		if (!(d.flags & VRING_DESC_F_NEXT))
			break;
		idx = d.next;
		if (idx >= vq->num)
			return vq_break(vq);
	}
	vq->last_avail++;
	return 1;
}

void virtq_unpop(struct virtq *vq)
{
	vq->last_avail--;
}

void virtq_push(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct vring_used *used = vq->used;
	struct vring_used_elem *e;

	if (!used || vq->broken)
		return;
	e = &used->ring[vq->used_idx % vq->num];
	e->id = head;
	e->len = len;
	vq->used_idx++;
	VQ_STORE16(&used->idx, vq->used_idx);
}

size_t iov_to_buf(const struct iovec *iov, unsigned int n, size_t skip,
		  void *buf, size_t len)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len, c;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		c = MIN_SZ(l - skip, len - done);
		memcpy((char *)buf + done, (char *)iov[i].iov_base + skip, c);
		done += c;
		skip = 0;
	}
	return done;
}

size_t buf_to_iov(const struct iovec *iov, unsigned int n, size_t skip,
		  const void *buf, size_t len)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len, c;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		c = MIN_SZ(l - skip, len - done);
		memcpy((char *)iov[i].iov_base + skip, (const char *)buf + done, c);
		done += c;
		skip = 0;
	}
	return done;
}

unsigned int iov_skip(const struct iovec *iov, unsigned int n, size_t skip,
		      struct iovec *out)
{
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		size_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		out[k].iov_base = (char *)iov[i].iov_base + skip;
		out[k].iov_len = l - skip;
		skip = 0;
		k++;
	}
	return k;
}
