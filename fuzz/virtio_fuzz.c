// SPDX-License-Identifier: GPL-2.0
/*
 * virtio_fuzz: a guest driver whose every move is the fuzzer's, against
 * cube-vmm's virtio-mmio transport (vmm/virtio_mmio.c), its virtqueues
 * (vmm/virtq.c) and the rng, blk (read-only and writable), net and vsock
 * devices behind them.  The
 * input is a program of operations: register writes and reads at any
 * offset and width, bytes written into guest memory, a queue set up at a
 * known place and descriptor chains published in it, queue notifies,
 * resets, frames arriving for the guest's network card, the host's side
 * of vsock (connections made with any CONNECT line, written, read, shut
 * and closed; the guest's connections to a host port accepted), and a
 * transport saved and loaded back (its own state must load, and save again
 * to the same) or loaded from the fuzzer's bytes as a snapshot would.
 * The vsock I/O thread's rounds run in between (vsock_poll()), so guest
 * packets and host events interleave as the program says.  Guest memory
 * is a heap allocation, so the sanitizer sees any access past it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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
#include "vsock.h"

#define GUEST_MEM	(64 * 1024)
#define QUEUE_AREA	0x8000		/* where SETUP puts the rings */
#define QUEUE_SIZE	0x400		/* one queue's rings */
#define NR_DEVS		5
#define NR_Q		3
#define NR_HOST		8		/* host-side vsock sockets at once */
#define GUEST_PORT	1234		/* the host port guests may connect to */

enum { DEV_RNG, DEV_BLK, DEV_NET, DEV_VSOCK, DEV_DISK };

enum op {
	OP_WRITE, OP_READ, OP_MEM, OP_SETUP, OP_CHAIN, OP_NOTIFY, OP_NET_RX,
	OP_POLL, OP_RESET, OP_SAVE_LOAD, OP_LOAD, OP_HOST_CONNECT,
	OP_HOST_WRITE, OP_HOST_READ, OP_HOST_CLOSE, OP_HOST_ACCEPT, NR_OPS
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
static char vsock_dir[64];
static struct sockaddr_un vsock_uds;	/* where the host connects */
static char guest_port_path[128];
static int guest_port_fd = -1;		/* the host service guests reach */
static int host[NR_HOST];

/* The VMM's log: the guest's mistakes are expected here, by the million. */
void vmm_log(const char *fmt, ...)
{
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void cleanup(void)
{
	unlink(vsock_uds.sun_path);
	unlink(guest_port_path);
	rmdir(vsock_dir);
}

static void listen_guest_port(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(guest_port_path, sizeof(guest_port_path), "%s_%u",
		 vsock_uds.sun_path, GUEST_PORT);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", guest_port_path);
	guest_port_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0);
	if (guest_port_fd < 0 ||
	    bind(guest_port_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(guest_port_fd, 64))
		die("guest port");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 2 };
	char image[] = "/tmp/cube-fuzz-blk.XXXXXX";
	char disk[] = "/tmp/cube-fuzz-disk.XXXXXX";
	uint64_t disk_size = 0;
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
	/* the writable disk: 1 MiB, sparse; writes and holes land in it */
	fd = mkstemp(disk);
	if (fd < 0)
		die("mkstemp");
	unlink(disk);
	if (ftruncate(fd, 1 << 20) || virtio_blk_disk_check(fd, &disk_size, &err))
		die("disk");
	devs[DEV_DISK] = virtio_blk_create_disk(&vm, VM_MMIO_BASE +
						4 * VM_MMIO_STRIDE, 9, fd,
						disk_size);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		die("socketpair");
	net_dev_fd = sv[0];
	net_peer = sv[1];
	devs[DEV_NET] = virtio_net_create(&vm, VM_MMIO_BASE + 2 * VM_MMIO_STRIDE,
					  7, sv[0], mac, &err);
	snprintf(vsock_dir, sizeof(vsock_dir), "/tmp/cube-fuzz-vsock.XXXXXX");
	if (!mkdtemp(vsock_dir))
		die("mkdtemp");
	vsock_uds.sun_family = AF_UNIX;
	snprintf(vsock_uds.sun_path, sizeof(vsock_uds.sun_path), "%s/v.sock",
		 vsock_dir);
	atexit(cleanup);
	devs[DEV_VSOCK] = vsock_create(&vm, VM_MMIO_BASE + 3 * VM_MMIO_STRIDE,
				       8, 3, vsock_uds.sun_path, &err);
	if (!devs[DEV_RNG] || !devs[DEV_BLK] || !devs[DEV_NET] ||
	    !devs[DEV_VSOCK] || !devs[DEV_DISK]) {
		fprintf(stderr, "virtio_fuzz: devices: %s\n", err);
		exit(1);
	}
	listen_guest_port();
	for (i = 0; i < NR_HOST; i++)
		host[i] = -1;
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

static void host_add(int fd)
{
	unsigned int i;

	for (i = 0; i < NR_HOST; i++) {
		if (host[i] < 0) {
			host[i] = fd;
			return;
		}
	}
	close(fd);
}

/* The host's side of vsock: what cube's agent client does, and worse. */
static void host_op(uint8_t op, struct fuzz_in *in)
{
	unsigned int i = fuzz_u8(in) % NR_HOST;
	char buf[4096], line[40];
	size_t n;
	int fd;

	switch (op) {
	case OP_HOST_CONNECT:
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			abort();
		if (connect(fd, (struct sockaddr *)&vsock_uds, sizeof(vsock_uds))) {
			close(fd);	/* backlog full: the VMM has not accepted */
			return;
		}
		if (fuzz_u8(in) & 1) {
			/* any line, up to a newline */
			if (!fuzz_line(in, line, sizeof(line) - 1))
				line[0] = 0;
			n = strlen(line);
			line[n++] = '\n';
		} else {
			n = snprintf(line, sizeof(line), "CONNECT %u\n",
				     fuzz_u16(in));
		}
		if (send(fd, line, n, MSG_NOSIGNAL) < 0)
			abort();
		host_add(fd);
		break;
	case OP_HOST_WRITE:
		n = fuzz_u8(in) * 16;
		if (n > in->left)
			n = in->left;
		if (host[i] >= 0 &&
		    send(host[i], in->p, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
		    errno != EAGAIN && errno != EPIPE && errno != ECONNRESET)
			abort();
		in->p += n;
		in->left -= n;
		break;
	case OP_HOST_READ:
		if (host[i] >= 0)
			while (recv(host[i], buf, sizeof(buf), MSG_DONTWAIT) > 0)
				;
		break;
	case OP_HOST_CLOSE:
		if (host[i] < 0)
			break;
		if (fuzz_u8(in) & 1) {
			shutdown(host[i], SHUT_WR);
		} else {
			close(host[i]);
			host[i] = -1;
		}
		break;
	case OP_HOST_ACCEPT:
		fd = accept4(guest_port_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			host_add(fd);
		break;
	}
}

static void host_close_all(void)
{
	unsigned int i;
	int fd;

	for (i = 0; i < NR_HOST; i++) {
		if (host[i] >= 0)
			close(host[i]);
		host[i] = -1;
	}
	while ((fd = accept4(guest_port_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
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
		setup(d, v % t->ops->nr_queues, 1u << (v / NR_Q % 5)); /* 1..16 */
		break;
	case OP_CHAIN:
		chain(in, d, fuzz_u8(in) % t->ops->nr_queues);
		break;
	case OP_NOTIFY:
		reg_write(t, VIRTIO_MMIO_QUEUE_NOTIFY, fuzz_u8(in) % 4);
		if (d == DEV_VSOCK)
			vsock_poll(t);	/* a notify only wakes its thread */
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
		vsock_poll(devs[DEV_VSOCK]);
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
	default:
		host_op(op, in);
		vsock_poll(devs[DEV_VSOCK]);
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
	/* the last input's host sockets go; the device drops what it had */
	host_close_all();
	vsock_poll(devs[DEV_VSOCK]);
	for (i = 0; i < NR_DEVS; i++) {
		reg_write(devs[i], VIRTIO_MMIO_STATUS, 0);
		if (reg_read(devs[i], VIRTIO_MMIO_MAGIC_VALUE) != 0x74726976)
			abort();	/* "virt" */
	}
	vsock_poll(devs[DEV_VSOCK]);
	while (in.left)
		run(&in);
	return 0;
}
