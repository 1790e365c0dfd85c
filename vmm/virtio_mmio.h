/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The virtio-mmio transport, version 2 (virtio 1.x, section 4.2).
 *
 * One lock per transport serialises register accesses from vCPU threads
 * with the device's own work (notify handlers, the vsock I/O thread).
 * Devices signal the guest with virtio_mmio_signal(), which sets the used
 * buffer bit and sends an edge on the transport's IRQ.
 */
#ifndef CUBE_VMM_VIRTIO_MMIO_H
#define CUBE_VMM_VIRTIO_MMIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtq.h"

#define VIRTIO_MMIO_MAX_QUEUES	4
#define VIRTIO_MMIO_CONFIG_MAX	64

struct vm;
struct virtio_mmio;

struct virtio_dev_ops {
	const char *name;
	uint32_t device_id;
	uint64_t features;		/* besides VIRTIO_F_VERSION_1 */
	unsigned int nr_queues;
	/* A queue was kicked; called with the transport lock held. */
	void (*notify)(struct virtio_mmio *t, unsigned int q);
	/* The driver reset the device or set DRIVER_OK; lock held. */
	void (*reset)(struct virtio_mmio *t);
	void (*driver_ok)(struct virtio_mmio *t);
};

struct virtio_mmio {
	pthread_mutex_t lock;
	struct vm *vm;
	const struct virtio_dev_ops *ops;
	void *priv;
	uint64_t base;
	uint32_t irq;

	uint32_t status;
	uint32_t dev_feat_sel;
	uint32_t drv_feat_sel;
	uint64_t drv_features;
	uint32_t queue_sel;
	uint32_t int_status;
	uint32_t config_gen;
	struct virtq vq[VIRTIO_MMIO_MAX_QUEUES];

	uint8_t config[VIRTIO_MMIO_CONFIG_MAX];
	uint32_t config_len;
};

void virtio_mmio_init(struct virtio_mmio *t, struct vm *vm,
		      const struct virtio_dev_ops *ops, void *priv,
		      uint64_t base, uint32_t irq);
/* Register access; off and len come from the guest. */
void virtio_mmio_access(struct virtio_mmio *t, uint64_t off, uint8_t *data,
			uint32_t len, bool write);
/* Used buffers are ready (lock held). */
void virtio_mmio_signal(struct virtio_mmio *t);
/* Config space changed (lock held): bump the generation, tell the driver. */
void virtio_mmio_config_changed(struct virtio_mmio *t);
/* Mark the device broken (DEVICE_NEEDS_RESET) and tell the driver. */
void virtio_mmio_fail(struct virtio_mmio *t, const char *why);
/* Is the driver done with set-up (DRIVER_OK, not failed)? */
bool virtio_mmio_live(const struct virtio_mmio *t);

/* Snapshot form of a transport, fixed layout. */
struct virtio_mmio_state {
	uint32_t device_id;
	uint32_t status;
	uint32_t dev_feat_sel;
	uint32_t drv_feat_sel;
	uint64_t drv_features;
	uint32_t queue_sel;
	uint32_t int_status;
	uint32_t config_gen;
	uint32_t nr_queues;
	struct {
		uint64_t desc, avail, used;
		uint16_t num, last_avail, used_idx;
		uint8_t ready, broken;
	} q[VIRTIO_MMIO_MAX_QUEUES];
};

void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *s);
/* Restore into a transport of the same device; 0 or -EINVAL. */
int virtio_mmio_load(struct virtio_mmio *t, const struct virtio_mmio_state *s);

#endif /* CUBE_VMM_VIRTIO_MMIO_H */
