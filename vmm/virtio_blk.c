// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk (virtio 1.x, section 5.2) over a file, in one of two modes:
 *
 *  - read-only, the template's root image (--rootfs): writes fail with
 *    VIRTIO_BLK_S_IOERR;
 *  - writable, the sandbox's own disk (--disk, --disk-fd): writes with
 *    pwrite(), FLUSH answered at once (the disk dies with the sandbox),
 *    DISCARD and WRITE_ZEROES punch holes in the file, so what the guest
 *    frees stops costing host disk.
 *
 * Requests are served synchronously in the vCPU thread that kicked the
 * queue; unknown requests get VIRTIO_BLK_S_UNSUPP, a request outside the
 * disk VIRTIO_BLK_S_IOERR, and a malformed chain breaks the queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_ids.h>

#include "cube_disk.h"
#include "devices.h"
#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"

#define BLK_SECTOR		512ULL
#define BLK_ROOTFS_ID		"cube-rootfs"
#define BLK_DISK_ID		"cube-disk"
#define BLK_HDR			sizeof(struct virtio_blk_outhdr)
/* Per DISCARD or WRITE_ZEROES request: segments, sectors per segment. */
#define BLK_MAX_SEGS		32
#define BLK_MAX_SECTORS		(1U << 22)	/* 2 GiB */
#define BLK_ALIGN_SECTORS	(CUBE_DISK_ALIGN / BLK_SECTOR)

struct virtio_blk {
	struct virtio_mmio t;
	int fd;
	bool writable;
	const char *id;
	uint64_t size;		/* bytes, a multiple of 512 */
	struct virtq_chain chain;
};

/* Is [sector, sector + bytes / 512) inside the disk?  Overflow-safe. */
static bool blk_in_range(const struct virtio_blk *b, uint64_t sector,
			 uint64_t bytes)
{
	return sector <= b->size / BLK_SECTOR &&
	       bytes <= b->size - sector * BLK_SECTOR;
}

static uint8_t blk_read(struct virtio_blk *b, struct virtq_chain *c,
			uint64_t sector, uint32_t *written)
{
	uint64_t off, len = c->in_len - 1;
	struct iovec *iov = &c->iov[c->nr_out];
	unsigned int n = c->nr_in;
	ssize_t r;

	if (len % BLK_SECTOR || !blk_in_range(b, sector, len))
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

/* The device-readable bytes after the header go to the disk at sector. */
static uint8_t blk_write(struct virtio_blk *b, struct virtq_chain *c,
			 uint64_t sector)
{
	uint64_t off, len = c->out_len - BLK_HDR;
	size_t skip = BLK_HDR;
	unsigned int i;

	if (!b->writable)
		return VIRTIO_BLK_S_IOERR;
	if (len % BLK_SECTOR || !blk_in_range(b, sector, len))
		return VIRTIO_BLK_S_IOERR;
	off = sector * BLK_SECTOR;
	for (i = 0; i < c->nr_out; i++) {
		const uint8_t *p = c->iov[i].iov_base;
		size_t l = c->iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		p += skip;
		l -= skip;
		skip = 0;
		while (l) {
			ssize_t r = pwrite(b->fd, p, l, off);

			if (r < 0 && errno == EINTR)
				continue;
			/* ENOSPC, EIO, EFBIG: the guest sees an I/O error */
			if (r <= 0)
				return VIRTIO_BLK_S_IOERR;
			p += r;
			l -= r;
			off += r;
		}
	}
	return VIRTIO_BLK_S_OK;
}

/*
 * DISCARD and WRITE_ZEROES: every segment is checked before any is done;
 * both punch a hole (reads give zeroes, the host frees the blocks).
 */
static uint8_t blk_punch(struct virtio_blk *b, struct virtq_chain *c,
			 uint32_t type)
{
	struct virtio_blk_discard_write_zeroes segs[BLK_MAX_SEGS];
	uint64_t len = c->out_len - BLK_HDR;
	uint32_t allowed;
	unsigned int i, n;

	if (!b->writable)
		return VIRTIO_BLK_S_UNSUPP;
	if (!len || len % sizeof(segs[0]))
		return VIRTIO_BLK_S_IOERR;
	if (len > sizeof(segs))
		return VIRTIO_BLK_S_UNSUPP;	/* more than max_*_seg */
	n = len / sizeof(segs[0]);
	if (iov_to_buf(c->iov, c->nr_out, BLK_HDR, segs, len) != len)
		return VIRTIO_BLK_S_IOERR;
	/* A discard has no flags; a write-zeroes may ask to unmap. */
	allowed = type == VIRTIO_BLK_T_WRITE_ZEROES ?
		  VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP : 0;
	for (i = 0; i < n; i++) {
		if (segs[i].flags & ~allowed ||
		    segs[i].num_sectors > BLK_MAX_SECTORS)
			return VIRTIO_BLK_S_UNSUPP;
		if (!blk_in_range(b, segs[i].sector,
				  segs[i].num_sectors * BLK_SECTOR))
			return VIRTIO_BLK_S_IOERR;
	}
	for (i = 0; i < n; i++) {
		if (!segs[i].num_sectors)
			continue;
		if (fallocate(b->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      segs[i].sector * BLK_SECTOR,
			      segs[i].num_sectors * BLK_SECTOR))
			return VIRTIO_BLK_S_IOERR;
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
			status = blk_write(b, c, hdr.sector);
			break;
		case VIRTIO_BLK_T_FLUSH:
			/* Nothing to sync: the disk dies with the sandbox. */
			status = VIRTIO_BLK_S_OK;
			break;
		case VIRTIO_BLK_T_DISCARD:
		case VIRTIO_BLK_T_WRITE_ZEROES:
			status = blk_punch(b, c, hdr.type);
			break;
		case VIRTIO_BLK_T_GET_ID: {
			char id[VIRTIO_BLK_ID_BYTES] = { 0 };

			memcpy(id, b->id, strlen(b->id));
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

static const struct virtio_dev_ops blk_ro_ops = {
	.name = "virtio-blk",
	.device_id = VIRTIO_ID_BLOCK,
	.features = (1ULL << VIRTIO_BLK_F_RO) | (1ULL << VIRTIO_BLK_F_SEG_MAX) |
		    (1ULL << VIRTIO_BLK_F_FLUSH),
	.nr_queues = 1,
	.notify = blk_notify,
};

static const struct virtio_dev_ops blk_rw_ops = {
	.name = "virtio-blk (disk)",
	.device_id = VIRTIO_ID_BLOCK,
	.features = (1ULL << VIRTIO_BLK_F_SEG_MAX) |
		    (1ULL << VIRTIO_BLK_F_FLUSH) |
		    (1ULL << VIRTIO_BLK_F_DISCARD) |
		    (1ULL << VIRTIO_BLK_F_WRITE_ZEROES),
	.nr_queues = 1,
	.notify = blk_notify,
};

/* Config space of b at its size (lock held, or not yet shared). */
static void blk_set_config(struct virtio_blk *b)
{
	struct virtio_blk_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = b->size / BLK_SECTOR;
	cfg.seg_max = VIRTQ_MAX_SIZE - 2;
	cfg.blk_size = BLK_SECTOR;
	if (b->writable) {
		cfg.max_discard_sectors = BLK_MAX_SECTORS;
		cfg.max_discard_seg = BLK_MAX_SEGS;
		cfg.discard_sector_alignment = BLK_ALIGN_SECTORS;
		cfg.max_write_zeroes_sectors = BLK_MAX_SECTORS;
		cfg.max_write_zeroes_seg = BLK_MAX_SEGS;
		cfg.write_zeroes_may_unmap = 1;
	}
	b->t.config_len = MIN(sizeof(cfg), (size_t)VIRTIO_MMIO_CONFIG_MAX);
	memcpy(b->t.config, &cfg, b->t.config_len);
}

static struct virtio_mmio *blk_new(struct vm *vm, uint64_t base, uint32_t irq,
				   int fd, uint64_t size, bool writable)
{
	struct virtio_blk *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->fd = fd;
	b->writable = writable;
	b->id = writable ? BLK_DISK_ID : BLK_ROOTFS_ID;
	b->size = size & ~(BLK_SECTOR - 1);
	virtio_mmio_init(&b->t, vm, writable ? &blk_rw_ops : &blk_ro_ops, b,
			 base, irq);
	blk_set_config(b);
	return &b->t;
}

/**
 * virtio_blk_create() - the read-only root disk over an image file
 * @vm: the VM
 * @base: its MMIO window
 * @irq: its interrupt line
 * @path: the image, opened read-only; its size is rounded down to 512
 * @err: set to a reason on failure
 *
 * Return: the transport, or NULL.
 */
struct virtio_mmio *virtio_blk_create(struct vm *vm, uint64_t base,
				      uint32_t irq, const char *path,
				      const char **err)
{
	struct virtio_mmio *t;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = strerror(errno);
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*err = "not a regular file";
		goto fail;
	}
	t = blk_new(vm, base, irq, fd, st.st_size, false);
	if (!t) {
		*err = "out of memory";
		goto fail;
	}
	return t;
fail:
	close(fd);
	return NULL;
}

/**
 * virtio_blk_disk_check() - is @fd usable as a sandbox's writable disk?
 * @fd: the disk file
 * @size: set to its size
 * @err: set to a reason when not
 *
 * A regular file, open read-write, whose size is a multiple of 4 KiB from
 * 1 MiB to 16 TiB (cube_disk.h).
 *
 * Return: 0 or -errno.
 */
int virtio_blk_disk_check(int fd, uint64_t *size, const char **err)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st)) {
		*err = errno == EBADF ? "not an open file descriptor" :
		       strerror(errno);
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = "not a regular file";
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR) {
		*err = "not open for reading and writing";
		return -EBADF;
	}
	if ((uint64_t)st.st_size % CUBE_DISK_ALIGN) {
		*err = "its size is not a multiple of 4096 bytes";
		return -EINVAL;
	}
	if ((uint64_t)st.st_size < CUBE_DISK_MIN ||
	    (uint64_t)st.st_size > CUBE_DISK_MAX) {
		*err = "its size is not between 1 MiB and 16 TiB";
		return -EINVAL;
	}
	*size = st.st_size;
	return 0;
}

/**
 * virtio_blk_create_disk() - the sandbox's writable disk over an open file
 * @vm: the VM
 * @base: its MMIO window
 * @irq: its interrupt line
 * @fd: the disk, checked with virtio_blk_disk_check(); the device owns it
 *	from now on (closed by virtio_blk_destroy(), or here on failure)
 * @size: its size in bytes, the device's capacity
 *
 * Return: the transport, or NULL when out of memory.
 */
struct virtio_mmio *virtio_blk_create_disk(struct vm *vm, uint64_t base,
					   uint32_t irq, int fd, uint64_t size)
{
	struct virtio_mmio *t = blk_new(vm, base, irq, fd, size, true);

	if (!t)
		close(fd);
	return t;
}

uint64_t virtio_blk_size(struct virtio_mmio *t)
{
	return ((struct virtio_blk *)t->priv)->size;
}

int virtio_blk_fd(struct virtio_mmio *t)
{
	return ((struct virtio_blk *)t->priv)->fd;
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
