/* SPDX-License-Identifier: GPL-2.0 */
/* The virtio devices cube-vmm offers; each in its own file. */
#ifndef CUBE_VMM_DEVICES_H
#define CUBE_VMM_DEVICES_H

#include <stdint.h>

struct virtio_mmio;
struct vm;

/*
 * virtio-blk (virtio_blk.c): read-only over an image file (the rootfs,
 * GET_ID "cube-rootfs"), or writable over an open file (the sandbox's
 * disk, GET_ID "cube-disk": writes, flush, discard, write zeroes).
 */
struct virtio_mmio *virtio_blk_create(struct vm *vm, uint64_t base,
				      uint32_t irq, const char *path,
				      const char **err);
int virtio_blk_disk_check(int fd, uint64_t *size, const char **err);
struct virtio_mmio *virtio_blk_create_disk(struct vm *vm, uint64_t base,
					   uint32_t irq, int fd, uint64_t size);
/* Capacity in bytes; the file it serves (still the device's). */
uint64_t virtio_blk_size(struct virtio_mmio *t);
int virtio_blk_fd(struct virtio_mmio *t);
void virtio_blk_destroy(struct virtio_mmio *t);

/* virtio-rng from getrandom() (virtio_rng.c). */
struct virtio_mmio *virtio_rng_create(struct vm *vm, uint64_t base,
				      uint32_t irq);
void virtio_rng_destroy(struct virtio_mmio *t);

#endif /* CUBE_VMM_DEVICES_H */
