// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk (virtio 1.x, section 5.2), read-only over an image file.
 * Requests are served synchronously in the vCPU thread that kicked the
 * queue.  Writes fail with VIRTIO_BLK_S_IOERR, unknown requests with
 * VIRTIO_BLK_S_UNSUPP; a malformed chain breaks the queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_ids.h>

#include "devices.h"
#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"

#define BLK_SECTOR		512ULL
#define BLK_ID			"cube-rootfs"

struct virtio_blk {
	struct virtio_mmio t;
	int fd;
	uint64_t size;		/* bytes, a multiple of 512 */
	struct virtq_chain chain;
};

static uint8_t blk_read(struct virtio_blk *b, struct virtq_chain *c,
			uint64_t sector, uint32_t *written)
{
	uint64_t off, len = c->in_len - 1;
	struct iovec *iov = &c->iov[c->nr_out];
	unsigned int n = c->nr_in;
	ssize_t r;

	if (len % BLK_SECTOR)
		return VIRTIO_BLK_S_IOERR;
	if (sector > b->size / BLK_SECTOR ||
	    len > b->size - sector * BLK_SECTOR)
		return VIRTIO_BLK_S_IOERR;
	off = sector * BLK_SECTOR;
	/* The last writable byte is the status: leave it out of the read. */
	while (n && len) {
		size_t l = MIN((uint64_t)iov->iov_len, len);

		r = pread(b->fd, iov->iov_base, l, off);
		if (r != (ssize_t)l)
			return VIRTIO_BLK_S_IOERR;
		off += l;
		len -= l;
		*written += l;
		iov++;
		n--;
	}
	return VIRTIO_BLK_S_OK;
}

static void blk_notify(struct virtio_mmio *t, unsigned int q)
{
	struct virtio_blk *b = t->priv;
	struct virtq *vq = &t->vq[0];
	struct virtq_chain *c = &b->chain;
	bool done = false;
	int r;

	while ((r = virtq_pop(vq, &t->vm->mem, c)) > 0) {
		struct virtio_blk_outhdr hdr;
		uint32_t written = 0;
		uint8_t status, *sp;
		struct iovec *last;

		if (iov_to_buf(c->iov, c->nr_out, 0, &hdr, sizeof(hdr)) !=
		    sizeof(hdr) || !c->nr_in ||
		    !c->iov[c->nr_out + c->nr_in - 1].iov_len) {
			virtio_mmio_fail(t, "virtio-blk: malformed request");
			return;
		}
		last = &c->iov[c->nr_out + c->nr_in - 1];
		sp = (uint8_t *)last->iov_base + last->iov_len - 1;
		switch (hdr.type) {
		case VIRTIO_BLK_T_IN:
			status = blk_read(b, c, hdr.sector, &written);
			break;
		case VIRTIO_BLK_T_OUT:
			status = VIRTIO_BLK_S_IOERR;	/* read-only */
			break;
		case VIRTIO_BLK_T_FLUSH:
			status = VIRTIO_BLK_S_OK;
			break;
		case VIRTIO_BLK_T_GET_ID: {
			char id[VIRTIO_BLK_ID_BYTES] = BLK_ID;

			written = buf_to_iov(&c->iov[c->nr_out], c->nr_in, 0,
					     id, MIN(sizeof(id), c->in_len - 1));
			status = VIRTIO_BLK_S_OK;
			break;
		}
		default:
			status = VIRTIO_BLK_S_UNSUPP;
			break;
		}
		*sp = status;
		virtq_push(vq, c->head, written + 1);
		done = true;
	}
	if (r < 0)
		virtio_mmio_fail(t, "virtio-blk: bad descriptor chain");
	if (done)
		virtio_mmio_signal(t);
}

static const struct virtio_dev_ops blk_ops = {
	.name = "virtio-blk",
	.device_id = VIRTIO_ID_BLOCK,
	.features = (1ULL << VIRTIO_BLK_F_RO) | (1ULL << VIRTIO_BLK_F_SEG_MAX) |
		    (1ULL << VIRTIO_BLK_F_FLUSH),
	.nr_queues = 1,
	.notify = blk_notify,
};

struct virtio_mmio *virtio_blk_create(struct vm *vm, uint64_t base,
				      uint32_t irq, const char *path,
				      const char **err)
{
	struct virtio_blk_config cfg;
	struct virtio_blk *b;
	struct stat st;

	b = calloc(1, sizeof(*b));
	if (!b) {
		*err = "out of memory";
		return NULL;
	}
	b->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (b->fd < 0) {
		*err = strerror(errno);
		goto fail;
	}
	if (fstat(b->fd, &st) || !S_ISREG(st.st_mode)) {
		*err = "not a regular file";
		goto fail;
	}
	b->size = st.st_size & ~(BLK_SECTOR - 1);
	virtio_mmio_init(&b->t, vm, &blk_ops, b, base, irq);
	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = b->size / BLK_SECTOR;
	cfg.seg_max = VIRTQ_MAX_SIZE - 2;
	cfg.blk_size = BLK_SECTOR;
	b->t.config_len = MIN(sizeof(cfg), (size_t)VIRTIO_MMIO_CONFIG_MAX);
	memcpy(b->t.config, &cfg, b->t.config_len);
	return &b->t;
fail:
	if (b->fd >= 0)
		close(b->fd);
	free(b);
	return NULL;
}

uint64_t virtio_blk_size(struct virtio_mmio *t)
{
	return ((struct virtio_blk *)t->priv)->size;
}

void virtio_blk_destroy(struct virtio_mmio *t)
{
	struct virtio_blk *b;

	if (!t)
		return;
	b = t->priv;
	close(b->fd);
	free(b);
}
