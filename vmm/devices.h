/* SPDX-License-Identifier: GPL-2.0 */
/* The virtio devices cube-vmm offers; each in its own file. */
#ifndef CUBE_VMM_DEVICES_H
#define CUBE_VMM_DEVICES_H

#include <stdint.h>

struct virtio_mmio;
struct vm;

/* virtio-blk, read-only, over an image file (virtio_blk.c). */
struct virtio_mmio *virtio_blk_create(struct vm *vm, uint64_t base,
				      uint32_t irq, const char *path,
				      const char **err);
uint64_t virtio_blk_size(struct virtio_mmio *t);
void virtio_blk_destroy(struct virtio_mmio *t);

/* virtio-rng from getrandom() (virtio_rng.c). */
struct virtio_mmio *virtio_rng_create(struct vm *vm, uint64_t base,
				      uint32_t irq);
void virtio_rng_destroy(struct virtio_mmio *t);

#endif /* CUBE_VMM_DEVICES_H */
