// SPDX-License-Identifier: GPL-2.0
/* virtio-rng (virtio 1.x, section 5.4): writable buffers filled by getrandom(). */
#include <stdlib.h>
#include <sys/random.h>

#include <linux/virtio_ids.h>

#include "devices.h"
#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"

#define RNG_MAX_PER_REQ		4096

struct virtio_rng {
	struct virtio_mmio t;
	struct virtq_chain chain;
};

static void rng_notify(struct virtio_mmio *t, unsigned int q)
{
	struct virtio_rng *r = t->priv;
	struct virtq_chain *c = &r->chain;
	struct virtq *vq = &t->vq[0];
	bool done = false;
	int ret;

	while ((ret = virtq_pop(vq, &t->vm->mem, c)) > 0) {
		uint32_t written = 0;
		unsigned int i;

		for (i = c->nr_out; i < c->nr_out + c->nr_in; i++) {
			size_t want = MIN(c->iov[i].iov_len,
					  (size_t)(RNG_MAX_PER_REQ - written));
			ssize_t n;

			if (!want)
				break;
			n = getrandom(c->iov[i].iov_base, want, 0);
			if (n <= 0)
				break;
			written += n;
		}
		virtq_push(vq, c->head, written);
		done = true;
	}
	if (ret < 0)
		virtio_mmio_fail(t, "virtio-rng: bad descriptor chain");
	if (done)
		virtio_mmio_signal(t);
}

static const struct virtio_dev_ops rng_ops = {
	.name = "virtio-rng",
	.device_id = VIRTIO_ID_RNG,
	.nr_queues = 1,
	.notify = rng_notify,
};

struct virtio_mmio *virtio_rng_create(struct vm *vm, uint64_t base,
				      uint32_t irq)
{
	struct virtio_rng *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	virtio_mmio_init(&r->t, vm, &rng_ops, r, base, irq);
	return &r->t;
}

void virtio_rng_destroy(struct virtio_mmio *t)
{
	if (t)
		free(t->priv);
}
