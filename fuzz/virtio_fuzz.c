// SPDX-License-Identifier: GPL-2.0
/*
 * virtio_fuzz: a guest driver whose every move is the fuzzer's, against
 * cube-vmm's virtio-mmio transport (vmm/virtio_mmio.c), its virtqueues
 * (vmm/virtq.c) and the rng, blk and net devices behind them.  The input
 * is a program of operations: register writes and reads at any offset and
 * width, bytes written into guest memory, a queue set up at a known place
 * and descriptor chains published in it, queue notifies, resets, frames
 * arriving for the guest's network card, and a transport saved and loaded
 * back (its own state must load, and save again to the same) or loaded
 * from the fuzzer's bytes as a snapshot would.  Guest memory is a heap
 * allocation, so the sanitizer sees any access past it.
 *
 * vsock is not driven here: it works in its own I/O thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

#include "devices.h"
#include "fuzz.h"
#include "util.h"
#include "virtio_mmio.h"
#include "virtio_net.h"
#include "vm.h"

#define GUEST_MEM	(64 * 1024)
#define QUEUE_AREA	0x8000		/* where SETUP puts the rings */
#define QUEUE_SIZE	0x400		/* one queue's rings */
#define NR_DEVS		3
#define NR_Q		2

enum { DEV_RNG, DEV_BLK, DEV_NET };

enum op {
	OP_WRITE, OP_READ, OP_MEM, OP_SETUP, OP_CHAIN, OP_NOTIFY, OP_NET_RX,
	OP_POLL, OP_RESET, OP_SAVE_LOAD, OP_LOAD, NR_OPS
};

struct qlayout {
	bool set;
	uint16_t num;
	uint16_t next_desc;
	uint16_t avail_idx;
	uint64_t desc, avail, used;
};

int vmm_verbose;
static struct vm vm;
static struct virtio_mmio *devs[NR_DEVS];
static int net_peer = -1;	/* frames for the guest go in here */
static int net_dev_fd = -1;	/* the device's end, drained between inputs */
static struct qlayout layout[NR_DEVS][NR_Q];

/* The VMM's log: the guest's mistakes are expected here, by the million. */
void vmm_log(const char *fmt, ...)
{
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 2 };
	char image[] = "/tmp/cube-fuzz-blk.XXXXXX";
	const char *err = "?";
	uint8_t sector[512];
	int fd, sv[2], i;

	vm.mem.size = GUEST_MEM;
	vm.mem.host = aligned_alloc(4096, GUEST_MEM);
	if (!vm.mem.host)
		die("guest memory");
	vm.kvm_fd = vm.vm_fd = -1;

	fd = mkstemp(image);
	if (fd < 0)
		die("mkstemp");
	for (i = 0; i < 32; i++) {
		memset(sector, 'a' + i % 26, sizeof(sector));
		if (write(fd, sector, sizeof(sector)) != sizeof(sector))
			die("image");
	}
	close(fd);
	devs[DEV_RNG] = virtio_rng_create(&vm, VM_MMIO_BASE, 5);
	devs[DEV_BLK] = virtio_blk_create(&vm, VM_MMIO_BASE + VM_MMIO_STRIDE,
					  6, image, &err);
	unlink(image);		/* the device holds it open */
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		die("socketpair");
	net_dev_fd = sv[0];
	net_peer = sv[1];
	devs[DEV_NET] = virtio_net_create(&vm, VM_MMIO_BASE + 2 * VM_MMIO_STRIDE,
					  7, sv[0], mac, &err);
	if (!devs[DEV_RNG] || !devs[DEV_BLK] || !devs[DEV_NET]) {
		fprintf(stderr, "virtio_fuzz: devices: %s\n", err);
		exit(1);
	}
	return 0;
}

static void reg_write(struct virtio_mmio *t, uint64_t off, uint32_t v)
{
	virtio_mmio_access(t, off, (uint8_t *)&v, 4, true);
}

static uint32_t reg_read(struct virtio_mmio *t, uint64_t off)
{
	uint32_t v = 0xdeadbeef;

	virtio_mmio_access(t, off, (uint8_t *)&v, 4, false);
	return v;
}

static void put16(uint64_t gpa, uint16_t v)
{
	memcpy(vm.mem.host + gpa, &v, 2);
}

/* A driver's set-up of queue @q of @d, its rings at a fixed place. */
static void setup(unsigned int d, unsigned int q, uint16_t num)
{
	struct virtio_mmio *t = devs[d];
	struct qlayout *l = &layout[d][q];
	uint64_t base = QUEUE_AREA + (d * NR_Q + q) * QUEUE_SIZE;

	l->num = num;
	l->desc = base;
	l->avail = base + 16 * num;
	l->used = (l->avail + 6 + 2 * num + 3) & ~3ULL;
	l->next_desc = l->avail_idx = 0;
	l->set = true;
	reg_write(t, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
		  VIRTIO_CONFIG_S_DRIVER);
	reg_write(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	reg_write(t, VIRTIO_MMIO_DRIVER_FEATURES, 1);	/* VERSION_1 */
	reg_write(t, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
		  VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK);
	reg_write(t, VIRTIO_MMIO_QUEUE_SEL, q);
	reg_write(t, VIRTIO_MMIO_QUEUE_NUM, num);
	reg_write(t, VIRTIO_MMIO_QUEUE_DESC_LOW, l->desc);
	reg_write(t, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	reg_write(t, VIRTIO_MMIO_QUEUE_AVAIL_LOW, l->avail);
	reg_write(t, VIRTIO_MMIO_QUEUE_AVAIL_HIGH, 0);
	reg_write(t, VIRTIO_MMIO_QUEUE_USED_LOW, l->used);
	reg_write(t, VIRTIO_MMIO_QUEUE_USED_HIGH, 0);
	reg_write(t, VIRTIO_MMIO_QUEUE_READY, 1);
	reg_write(t, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
		  VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK |
		  VIRTIO_CONFIG_S_DRIVER_OK);
}

/* Up to four descriptors, chained, published in the avail ring. */
static void chain(struct fuzz_in *in, unsigned int d, unsigned int q)
{
	struct qlayout *l = &layout[d][q];
	unsigned int n = fuzz_u8(in) % 4 + 1, i;
	uint16_t head;

	if (!l->set)
		return;
	head = l->next_desc % l->num;
	for (i = 0; i < n; i++) {
		uint16_t slot = (head + i) % l->num;
		struct vring_desc desc = {
			.addr = fuzz_u16(in) % QUEUE_AREA,
			.len = fuzz_u16(in),
		};
		uint8_t f = fuzz_u8(in);

		desc.flags = (f & 1 ? VRING_DESC_F_WRITE : 0) |
			     (i + 1 < n ? VRING_DESC_F_NEXT : 0) |
			     (f & 2 ? VRING_DESC_F_INDIRECT : 0);
		desc.next = f & 4 ? fuzz_u8(in) : (head + i + 1) % l->num;
		memcpy(vm.mem.host + l->desc + 16 * slot, &desc, sizeof(desc));
	}
	l->next_desc += n;
	put16(l->avail + 4 + 2 * (l->avail_idx % l->num), head);
	l->avail_idx++;
	put16(l->avail + 2, l->avail_idx);
}

static void drain_net(void)
{
	char frame[2048];

	while (recv(net_peer, frame, sizeof(frame), MSG_DONTWAIT) >= 0)
		;
	while (recv(net_dev_fd, frame, sizeof(frame), MSG_DONTWAIT) >= 0)
		;
}

static void save_load(struct virtio_mmio *t)
{
	struct virtio_mmio_state a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	pthread_mutex_lock(&t->lock);
	virtio_mmio_save(t, &a);
	/* what the device saved of itself, it loads back, and saves the same */
	if (virtio_mmio_load(t, &a))
		abort();
	virtio_mmio_save(t, &b);
	pthread_mutex_unlock(&t->lock);
	if (memcmp(&a, &b, sizeof(a)))
		abort();
}

static void load(struct fuzz_in *in, struct virtio_mmio *t)
{
	struct virtio_mmio_state s;
	size_t n = in->left < sizeof(s) ? in->left : sizeof(s);

	memset(&s, 0, sizeof(s));
	memcpy(&s, in->p, n);
	in->p += n;
	in->left -= n;
	/* the device a restore built: else the first check refuses it */
	s.device_id = t->ops->device_id;
	s.nr_queues = t->ops->nr_queues;
	pthread_mutex_lock(&t->lock);
	virtio_mmio_load(t, &s);
	pthread_mutex_unlock(&t->lock);
}

static void run(struct fuzz_in *in)
{
	uint8_t op = fuzz_u8(in) % NR_OPS;
	unsigned int d = fuzz_u8(in) % NR_DEVS;
	struct virtio_mmio *t = devs[d];
	uint8_t buf[8];
	uint32_t v;
	uint16_t off;
	size_t n;

	switch (op) {
	case OP_WRITE:
		off = fuzz_u16(in) % VM_MMIO_SIZE;
		v = fuzz_u16(in) | (uint32_t)fuzz_u16(in) << 16;
		reg_write(t, off, v);
		break;
	case OP_READ:
		off = fuzz_u16(in) % VM_MMIO_SIZE;
		n = 1u << (fuzz_u8(in) % 4);
		virtio_mmio_access(t, off, buf, n, false);
		break;
	case OP_MEM:
		off = fuzz_u16(in) % GUEST_MEM;
		n = fuzz_u8(in);
		if (n > in->left)
			n = in->left;
		if (n > GUEST_MEM - off)
			n = GUEST_MEM - off;
		memcpy(vm.mem.host + off, in->p, n);
		in->p += n;
		in->left -= n;
		break;
	case OP_SETUP:
		v = fuzz_u8(in);
		setup(d, v % NR_Q, 1u << (v / NR_Q % 5));	/* 1..16 */
		break;
	case OP_CHAIN:
		chain(in, d, fuzz_u8(in) % NR_Q);
		break;
	case OP_NOTIFY:
		reg_write(t, VIRTIO_MMIO_QUEUE_NOTIFY, fuzz_u8(in) % 4);
		break;
	case OP_NET_RX:
		n = fuzz_u8(in) * 8;
		if (n > in->left)
			n = in->left;
		if (send(net_peer, in->p, n, MSG_DONTWAIT) < 0 && errno != EAGAIN)
			abort();
		in->p += n;
		in->left -= n;
		/* fall through: the I/O thread's turn */
	case OP_POLL:
		pthread_mutex_lock(&devs[DEV_NET]->lock);
		virtio_net_poll(devs[DEV_NET]);
		pthread_mutex_unlock(&devs[DEV_NET]->lock);
		break;
	case OP_RESET:
		reg_write(t, VIRTIO_MMIO_STATUS, 0);
		if (reg_read(t, VIRTIO_MMIO_STATUS))
			abort();
		break;
	case OP_SAVE_LOAD:
		save_load(t);
		break;
	case OP_LOAD:
		load(in, t);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	unsigned int i;

	memset(vm.mem.host, 0, GUEST_MEM);
	memset(layout, 0, sizeof(layout));
	drain_net();
	for (i = 0; i < NR_DEVS; i++) {
		reg_write(devs[i], VIRTIO_MMIO_STATUS, 0);
		if (reg_read(devs[i], VIRTIO_MMIO_MAGIC_VALUE) != 0x74726976)
			abort();	/* "virt" */
	}
	while (in.left)
		run(&in);
	return 0;
}
