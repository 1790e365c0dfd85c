// SPDX-License-Identifier: GPL-2.0
/* virtio-mmio transport, version 2; see virtio_mmio.h. */
#include <errno.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>

#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"

#define VIRTIO_MMIO_MAGIC	0x74726976	/* "virt" */
#define VIRTIO_VENDOR_ID	0x45425543	/* "CUBE" */

void virtio_mmio_init(struct virtio_mmio *t, struct vm *vm,
		      const struct virtio_dev_ops *ops, void *priv,
		      uint64_t base, uint32_t irq)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->vm = vm;
	t->ops = ops;
	t->priv = priv;
	t->base = base;
	t->irq = irq;
}

bool virtio_mmio_live(const struct virtio_mmio *t)
{
	return (t->status & VIRTIO_CONFIG_S_DRIVER_OK) &&
	       !(t->status & (VIRTIO_CONFIG_S_FAILED |
			      VIRTIO_CONFIG_S_NEEDS_RESET));
}

static void virtio_mmio_irq(struct virtio_mmio *t)
{
	/* Edge-triggered line: one rising edge per event. */
	vm_irq_line(t->vm, t->irq, 1);
	vm_irq_line(t->vm, t->irq, 0);
}

void virtio_mmio_signal(struct virtio_mmio *t)
{
	t->int_status |= VIRTIO_MMIO_INT_VRING;
	virtio_mmio_irq(t);
}

/**
 * virtio_mmio_config_changed() - tell the driver its config space changed
 * @t: the transport, its lock held
 *
 * ConfigGeneration goes up, so a driver reading the config space across
 * the change reads it again; a live driver also gets the configuration
 * change interrupt (InterruptStatus bit 1) and reads what changed (a
 * virtio-blk driver, the capacity).  A driver not live yet reads the
 * config space when it sets up.
 */
void virtio_mmio_config_changed(struct virtio_mmio *t)
{
	t->config_gen++;
	if (!virtio_mmio_live(t))
		return;
	t->int_status |= VIRTIO_MMIO_INT_CONFIG;
	virtio_mmio_irq(t);
}

void virtio_mmio_fail(struct virtio_mmio *t, const char *why)
{
	if (t->status & VIRTIO_CONFIG_S_NEEDS_RESET)
		return;
	pr_err("%s: guest driver error: %s; device needs reset",
	       t->ops->name, why);
	t->status |= VIRTIO_CONFIG_S_NEEDS_RESET;
	t->int_status |= VIRTIO_MMIO_INT_CONFIG;
	t->config_gen++;
	virtio_mmio_irq(t);
}

static void virtio_mmio_reset(struct virtio_mmio *t)
{
	unsigned int i;

	t->status = 0;
	t->dev_feat_sel = t->drv_feat_sel = 0;
	t->drv_features = 0;
	t->queue_sel = 0;
	t->int_status = 0;
	for (i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++)
		virtq_reset(&t->vq[i]);
	if (t->ops->reset)
		t->ops->reset(t);
}

static uint64_t dev_features(const struct virtio_mmio *t)
{
	return t->ops->features | (1ULL << VIRTIO_F_VERSION_1);
}

static struct virtq *cur_vq(struct virtio_mmio *t)
{
	if (t->queue_sel >= t->ops->nr_queues)
		return NULL;
	return &t->vq[t->queue_sel];
}

static uint32_t reg_read(struct virtio_mmio *t, uint64_t off)
{
	struct virtq *vq = cur_vq(t);

	switch (off) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		return VIRTIO_MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:
		return 2;
	case VIRTIO_MMIO_DEVICE_ID:
		return t->ops->device_id;
	case VIRTIO_MMIO_VENDOR_ID:
		return VIRTIO_VENDOR_ID;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		if (t->dev_feat_sel > 1)
			return 0;
		return dev_features(t) >> (32 * t->dev_feat_sel);
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return vq ? VIRTQ_MAX_SIZE : 0;
	case VIRTIO_MMIO_QUEUE_READY:
		return vq ? vq->ready : 0;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return t->int_status;
	case VIRTIO_MMIO_STATUS:
		return t->status;
	case VIRTIO_MMIO_CONFIG_GENERATION:
		return t->config_gen;
	}
	return 0;
}

static void set_addr(uint64_t *a, uint32_t v, bool high)
{
	if (high)
		*a = (*a & 0xffffffffULL) | ((uint64_t)v << 32);
	else
		*a = (*a & ~0xffffffffULL) | v;
}

static void queue_write(struct virtio_mmio *t, struct virtq *vq,
			uint64_t off, uint32_t v)
{
	/* Queue layout is frozen while the queue is ready. */
	if (vq->ready && off != VIRTIO_MMIO_QUEUE_READY)
		return;
	switch (off) {
	case VIRTIO_MMIO_QUEUE_NUM:
		vq->num = v <= VIRTQ_MAX_SIZE ? v : 0;
		break;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		set_addr(&vq->desc_addr, v, off == VIRTIO_MMIO_QUEUE_DESC_HIGH);
		break;
	case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
	case VIRTIO_MMIO_QUEUE_AVAIL_HIGH:
		set_addr(&vq->avail_addr, v, off == VIRTIO_MMIO_QUEUE_AVAIL_HIGH);
		break;
	case VIRTIO_MMIO_QUEUE_USED_LOW:
	case VIRTIO_MMIO_QUEUE_USED_HIGH:
		set_addr(&vq->used_addr, v, off == VIRTIO_MMIO_QUEUE_USED_HIGH);
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		if (!v) {
			vq->ready = false;
			break;
		}
		if (vq->ready)
			break;
		if (virtq_activate(vq, &t->vm->mem)) {
			virtio_mmio_fail(t, "bad queue layout");
			break;
		}
		vq->ready = true;
		break;
	}
}

static void reg_write(struct virtio_mmio *t, uint64_t off, uint32_t v)
{
	struct virtq *vq = cur_vq(t);

	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		t->dev_feat_sel = v;
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		if (t->status & VIRTIO_CONFIG_S_FEATURES_OK)
			break;
		if (t->drv_feat_sel == 0)
			t->drv_features = (t->drv_features & ~0xffffffffULL) | v;
		else if (t->drv_feat_sel == 1)
			t->drv_features = (t->drv_features & 0xffffffffULL) |
					  ((uint64_t)v << 32);
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		t->drv_feat_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		t->queue_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_NUM:
	case VIRTIO_MMIO_QUEUE_READY:
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
	case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
	case VIRTIO_MMIO_QUEUE_AVAIL_HIGH:
	case VIRTIO_MMIO_QUEUE_USED_LOW:
	case VIRTIO_MMIO_QUEUE_USED_HIGH:
		if (vq)
			queue_write(t, vq, off, v);
		break;
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		if (v < t->ops->nr_queues && virtio_mmio_live(t) &&
		    t->vq[v].ready && t->ops->notify)
			t->ops->notify(t, v);
		break;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		t->int_status &= ~v;
		break;
	case VIRTIO_MMIO_STATUS:
		if (v == 0) {
			virtio_mmio_reset(t);
			break;
		}
		if ((v & VIRTIO_CONFIG_S_FEATURES_OK) &&
		    !(t->status & VIRTIO_CONFIG_S_FEATURES_OK)) {
			/* Only what we offer, and always VERSION_1. */
			if ((t->drv_features & ~dev_features(t)) ||
			    !(t->drv_features & (1ULL << VIRTIO_F_VERSION_1)))
				v &= ~VIRTIO_CONFIG_S_FEATURES_OK;
		}
		if ((v & VIRTIO_CONFIG_S_DRIVER_OK) &&
		    !(t->status & VIRTIO_CONFIG_S_DRIVER_OK)) {
			t->status = v | (t->status & VIRTIO_CONFIG_S_NEEDS_RESET);
			if (t->ops->driver_ok && virtio_mmio_live(t))
				t->ops->driver_ok(t);
			break;
		}
		t->status = v | (t->status & VIRTIO_CONFIG_S_NEEDS_RESET);
		break;
	}
}

void virtio_mmio_access(struct virtio_mmio *t, uint64_t off, uint8_t *data,
			uint32_t len, bool write)
{
	pthread_mutex_lock(&t->lock);
	if (off >= VIRTIO_MMIO_CONFIG) {
		uint64_t c = off - VIRTIO_MMIO_CONFIG;

		/* Config space: any width, device-specific, read-only here. */
		if (!write) {
			memset(data, 0, len);
			if (c < t->config_len && len <= t->config_len - c)
				memcpy(data, t->config + c, len);
		}
	} else if (len == 4 && !(off & 3)) {
		uint32_t v;

		if (write) {
			memcpy(&v, data, 4);
			reg_write(t, off, v);
		} else {
			v = reg_read(t, off);
			memcpy(data, &v, 4);
		}
	} else if (!write) {
		/* Registers are 32-bit wide only. */
		memset(data, 0, len);
	}
	pthread_mutex_unlock(&t->lock);
}

void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *s)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
	s->device_id = t->ops->device_id;
	s->status = t->status;
	s->dev_feat_sel = t->dev_feat_sel;
	s->drv_feat_sel = t->drv_feat_sel;
	s->drv_features = t->drv_features;
	s->queue_sel = t->queue_sel;
	s->int_status = t->int_status;
	s->config_gen = t->config_gen;
	s->nr_queues = t->ops->nr_queues;
	for (i = 0; i < t->ops->nr_queues; i++) {
		struct virtq *vq = &t->vq[i];

		s->q[i].desc = vq->desc_addr;
		s->q[i].avail = vq->avail_addr;
		s->q[i].used = vq->used_addr;
		s->q[i].num = vq->num;
		s->q[i].last_avail = vq->last_avail;
		s->q[i].used_idx = vq->used_idx;
		s->q[i].ready = vq->ready;
		s->q[i].broken = vq->broken;
	}
}

int virtio_mmio_load(struct virtio_mmio *t, const struct virtio_mmio_state *s)
{
	unsigned int i;

	if (s->device_id != t->ops->device_id ||
	    s->nr_queues != t->ops->nr_queues)
		return -EINVAL;
	t->status = s->status;
	t->dev_feat_sel = s->dev_feat_sel;
	t->drv_feat_sel = s->drv_feat_sel;
	t->drv_features = s->drv_features;
	t->queue_sel = s->queue_sel;
	t->int_status = s->int_status;
	t->config_gen = s->config_gen;
	for (i = 0; i < t->ops->nr_queues; i++) {
		struct virtq *vq = &t->vq[i];

		virtq_reset(vq);
		vq->desc_addr = s->q[i].desc;
		vq->avail_addr = s->q[i].avail;
		vq->used_addr = s->q[i].used;
		vq->num = s->q[i].num;
		vq->last_avail = s->q[i].last_avail;
		vq->used_idx = s->q[i].used_idx;
		if (s->q[i].ready) {
			if (virtq_activate(vq, &t->vm->mem))
				return -EINVAL;
			vq->ready = true;
		}
		vq->broken = s->q[i].broken;
	}
	return 0;
}

void vm_handle_mmio(struct vm *vm, struct kvm_run *run)
{
	uint64_t addr = run->mmio.phys_addr;
	uint32_t len = run->mmio.len;
	unsigned int i;

	if (len > sizeof(run->mmio.data))
		return;
	for (i = 0; i < VM_MAX_DEVS; i++) {
		struct virtio_mmio *t = vm->devs[i];

		if (t && addr >= t->base && addr - t->base < VM_MMIO_SIZE &&
		    len <= VM_MMIO_SIZE - (addr - t->base)) {
			virtio_mmio_access(t, addr - t->base, run->mmio.data,
					   len, run->mmio.is_write);
			return;
		}
	}
	/* Nothing there: reads see all ones. */
	if (!run->mmio.is_write)
		memset(run->mmio.data, 0xff, len);
}
