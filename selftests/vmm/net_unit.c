// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of cube-vmm's virtio-net device, driven through its real
 * virtio-mmio transport by a small driver written here, over fake guest
 * memory, with a SOCK_SEQPACKET socketpair in place of the tap (one packet
 * per frame, virtio_net_hdr_v1 included, as a tap with IFF_VNET_HDR reads
 * and writes them; end of file once shut down, as a tap gone away).  Good
 * traffic both ways, then every kind of hostile chain, back-pressure
 * without buffers, kick and interrupt suppression, and resets in the
 * middle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

#include "cube_test.h"
#include "virtio_mmio.h"
#include "virtio_net.h"
#include "vm.h"

#define MEM_SIZE	(1 << 20)
#define NUM		8
#define RING_GPA(q)	(0x1000 + (q) * 0x1000)
#define DESC_OFF	0x000
#define AVAIL_OFF	0x400
#define USED_OFF	0x800
#define BUF_GPA(q, i)	(0x10000 + (q) * 0x20000 + (i) * 0x2000)
#define RXQ		0
#define TXQ		1
#define STATUS_NEEDS_RESET 0x40

static const uint8_t test_mac[6] = { 0x06, 0xcb, 0x00, 0x00, 0x00, 0x15 };
static int irq_edges;

/* The transport's interrupt line: count the rising edges. */
int vm_irq_line(struct vm *vm, uint32_t irq, int level)
{
	if (level)
		__atomic_add_fetch(&irq_edges, 1, __ATOMIC_RELAXED);
	return 0;
}

struct drv {
	struct vm vm;
	struct virtio_mmio *t;
	int host;		/* the tap's other end */
	int dev_fd;		/* a second fd of the device's end */
	uint64_t ring[2];	/* ring area of each queue */
	uint16_t avail[2];	/* next avail index of each queue */
	uint16_t used_seen[2];
};

static struct drv d;

static uint8_t *gpa(uint64_t a)
{
	return d.vm.mem.host + a;
}

static struct vring_desc *desc(int q)
{
	return (void *)gpa(d.ring[q] + DESC_OFF);
}

static struct vring_avail *avail(int q)
{
	return (void *)gpa(d.ring[q] + AVAIL_OFF);
}

static struct vring_used *used(int q)
{
	return (void *)gpa(d.ring[q] + USED_OFF);
}

static uint16_t used_idx(int q)
{
	return __atomic_load_n(&used(q)->idx, __ATOMIC_ACQUIRE);
}

static void wr(uint64_t off, uint32_t v)
{
	virtio_mmio_access(d.t, off, (uint8_t *)&v, 4, true);
}

static uint32_t rd(uint64_t off)
{
	uint32_t v;

	virtio_mmio_access(d.t, off, (uint8_t *)&v, 4, false);
	return v;
}

static void setup_queue(int q, uint64_t ring)
{
	d.ring[q] = ring;
	d.avail[q] = d.used_seen[q] = 0;
	memset(gpa(ring), 0, 0x1000);
	wr(VIRTIO_MMIO_QUEUE_SEL, q);
	wr(VIRTIO_MMIO_QUEUE_NUM, NUM);
	wr(VIRTIO_MMIO_QUEUE_DESC_LOW, ring + DESC_OFF);
	wr(VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	wr(VIRTIO_MMIO_QUEUE_AVAIL_LOW, ring + AVAIL_OFF);
	wr(VIRTIO_MMIO_QUEUE_AVAIL_HIGH, 0);
	wr(VIRTIO_MMIO_QUEUE_USED_LOW, ring + USED_OFF);
	wr(VIRTIO_MMIO_QUEUE_USED_HIGH, 0);
	wr(VIRTIO_MMIO_QUEUE_READY, 1);
}

/* The driver's side of set-up (virtio 1.x, 3.1.1), rings at base. */
static void driver_init(uint64_t base)
{
	uint32_t st = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;

	wr(VIRTIO_MMIO_STATUS, 0);
	wr(VIRTIO_MMIO_STATUS, st);
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(VIRTIO_MMIO_DRIVER_FEATURES,
	   (1U << VIRTIO_NET_F_MAC) | (1U << VIRTIO_NET_F_MTU));
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, 1U << (VIRTIO_F_VERSION_1 - 32));
	st |= VIRTIO_CONFIG_S_FEATURES_OK;
	wr(VIRTIO_MMIO_STATUS, st);
	ASSERT_TRUE(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	setup_queue(RXQ, base);
	setup_queue(TXQ, base + 0x1000);
	wr(VIRTIO_MMIO_STATUS, st | VIRTIO_CONFIG_S_DRIVER_OK);
}

static void dev_open(int sndbuf)
{
	int sv[2];

	memset(&d, 0, sizeof(d));
	d.vm.mem.size = MEM_SIZE;
	d.vm.mem.host = calloc(1, MEM_SIZE);
	ASSERT_TRUE(d.vm.mem.host != NULL);
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	if (sndbuf)
		ASSERT_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
				     sizeof(sndbuf)), 0);
	d.host = sv[1];
	d.dev_fd = dup(sv[0]);
	{
		const char *err = NULL;

		d.t = virtio_net_create(&d.vm, 0xd0003000, 8, sv[0], test_mac,
					&err);
		ASSERT_TRUE(d.t != NULL);
	}
	driver_init(RING_GPA(0));
}

static void set_desc(int q, int i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	desc(q)[i].addr = addr;
	desc(q)[i].len = len;
	desc(q)[i].flags = flags;
	desc(q)[i].next = next;
}

static void offer(int q, uint16_t head)
{
	struct vring_avail *a = avail(q);

	a->ring[d.avail[q] % NUM] = head;
	d.avail[q]++;
	__atomic_store_n(&a->idx, d.avail[q], __ATOMIC_RELEASE);
}

static void kick(int q)
{
	wr(VIRTIO_MMIO_QUEUE_NOTIFY, q);
}

static void poll_dev(void)
{
	pthread_mutex_lock(&d.t->lock);
	virtio_net_poll(d.t);
	pthread_mutex_unlock(&d.t->lock);
}

static bool broken(void)
{
	return rd(VIRTIO_MMIO_STATUS) & STATUS_NEEDS_RESET;
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 8));
}

/* One TX chain: header and frame in one buffer (descriptor slot i). */
static void tx_frame(int i, size_t frame_len, unsigned int seed)
{
	struct virtio_net_hdr_v1 *h = (void *)gpa(BUF_GPA(TXQ, i));

	/* Garbage in the header: the device must not pass it on. */
	memset(h, 0xa5, NET_HDR_LEN);
	fill(gpa(BUF_GPA(TXQ, i)) + NET_HDR_LEN, frame_len, seed);
	set_desc(TXQ, i, BUF_GPA(TXQ, i), NET_HDR_LEN + frame_len, 0, 0);
	offer(TXQ, i);
}

/* One RX buffer of len bytes in descriptor slot i. */
static void rx_buf(int i, uint32_t len)
{
	memset(gpa(BUF_GPA(RXQ, i)), 0xee, len);
	set_desc(RXQ, i, BUF_GPA(RXQ, i), len, VRING_DESC_F_WRITE, 0);
	offer(RXQ, i);
}

/* What the tap would hand the device: a header (with junk) and a frame. */
static void host_send(size_t frame_len, unsigned int seed)
{
	uint8_t buf[NET_HDR_LEN + 70000];

	memset(buf, 0, NET_HDR_LEN);
	buf[0] = VIRTIO_NET_HDR_F_DATA_VALID;
	fill(buf + NET_HDR_LEN, frame_len, seed);
	ASSERT_EQ(send(d.host, buf, NET_HDR_LEN + frame_len, 0),
		  (ssize_t)(NET_HDR_LEN + frame_len));
}

/* The next frame the device wrote to the tap; its length or -1. */
static ssize_t host_recv(uint8_t *buf, size_t len)
{
	return recv(d.host, buf, len, MSG_DONTWAIT);
}

static void expect_rx_frame(int slot, size_t frame_len, unsigned int seed)
{
	struct vring_used_elem *e = &used(RXQ)->ring[d.used_seen[RXQ] % NUM];
	struct virtio_net_hdr_v1 want = { .num_buffers = 1 };
	uint8_t frame[2048];

	ASSERT_NE(used_idx(RXQ), d.used_seen[RXQ]);
	EXPECT_EQ(e->id, slot);
	EXPECT_EQ(e->len, NET_HDR_LEN + frame_len);
	d.used_seen[RXQ]++;
	EXPECT_EQ(memcmp(gpa(BUF_GPA(RXQ, slot)), &want, NET_HDR_LEN), 0);
	fill(frame, frame_len, seed);
	EXPECT_EQ(memcmp(gpa(BUF_GPA(RXQ, slot)) + NET_HDR_LEN, frame,
			 frame_len), 0);
}

static void nothing_on_tap(void)
{
	uint8_t buf[64];

	EXPECT_EQ(host_recv(buf, sizeof(buf)), -1);
}

static struct virtio_net_stats stats(void)
{
	struct virtio_net_stats s;

	virtio_net_get_stats(d.t, &s);
	return s;
}

TEST(config_space_and_features)
{
	uint8_t cfg[12];
	uint32_t lo, hi;
	int i;

	dev_open(0);
	EXPECT_EQ(rd(VIRTIO_MMIO_DEVICE_ID), 1);
	for (i = 0; i < 12; i++)
		virtio_mmio_access(d.t, VIRTIO_MMIO_CONFIG + i, &cfg[i], 1, false);
	EXPECT_EQ(memcmp(cfg, test_mac, 6), 0);
	EXPECT_EQ(cfg[10] | cfg[11] << 8, 1500);
	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	lo = rd(VIRTIO_MMIO_DEVICE_FEATURES);
	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	hi = rd(VIRTIO_MMIO_DEVICE_FEATURES);
	/* MAC, MTU, VERSION_1: no offloads, no control queue. */
	EXPECT_EQ(lo, (1U << VIRTIO_NET_F_MAC) | (1U << VIRTIO_NET_F_MTU));
	EXPECT_EQ(hi, 1U << (VIRTIO_F_VERSION_1 - 32));
	wr(VIRTIO_MMIO_QUEUE_SEL, 2);
	EXPECT_EQ(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), 0);
	EXPECT_FALSE(broken());
}

TEST(tx_frames_reach_the_tap_with_a_clean_header)
{
	struct virtio_net_hdr_v1 zero = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	uint8_t buf[4096], frame[2048];
	int edges;

	dev_open(0);
	edges = irq_edges;
	tx_frame(0, 60, 1);
	tx_frame(1, NET_MAX_FRAME, 2);
	kick(TXQ);
	EXPECT_EQ(used_idx(TXQ), 2);
	EXPECT_EQ(used(TXQ)->ring[0].id, 0);
	EXPECT_EQ(used(TXQ)->ring[0].len, 0);
	EXPECT_EQ(used(TXQ)->ring[1].id, 1);
	EXPECT_GT(irq_edges, edges);

	ASSERT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 60);
	EXPECT_EQ(memcmp(buf, &zero, NET_HDR_LEN), 0);
	fill(frame, 60, 1);
	EXPECT_EQ(memcmp(buf + NET_HDR_LEN, frame, 60), 0);
	ASSERT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + NET_MAX_FRAME);
	fill(frame, NET_MAX_FRAME, 2);
	EXPECT_EQ(memcmp(buf + NET_HDR_LEN, frame, NET_MAX_FRAME), 0);
	nothing_on_tap();
	EXPECT_EQ(stats().tx_packets, 2);
	EXPECT_FALSE(broken());
}

TEST(tx_frame_split_over_descriptors)
{
	uint8_t buf[4096], frame[600];

	dev_open(0);
	/* header alone, then the frame in two pieces */
	memset(gpa(BUF_GPA(TXQ, 0)), 0, NET_HDR_LEN);
	fill(frame, sizeof(frame), 9);
	memcpy(gpa(BUF_GPA(TXQ, 1)), frame, 100);
	memcpy(gpa(BUF_GPA(TXQ, 2)), frame + 100, 500);
	set_desc(TXQ, 0, BUF_GPA(TXQ, 0), NET_HDR_LEN, VRING_DESC_F_NEXT, 1);
	set_desc(TXQ, 1, BUF_GPA(TXQ, 1), 100, VRING_DESC_F_NEXT, 2);
	set_desc(TXQ, 2, BUF_GPA(TXQ, 2), 500, 0, 0);
	offer(TXQ, 0);
	kick(TXQ);
	ASSERT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 600);
	EXPECT_EQ(memcmp(buf + NET_HDR_LEN, frame, 600), 0);
}

TEST(rx_frames_reach_the_guest)
{
	int edges;

	dev_open(0);
	rx_buf(0, 2048);
	rx_buf(1, 2048);
	host_send(60, 3);
	host_send(1514, 4);
	edges = irq_edges;
	poll_dev();
	expect_rx_frame(0, 60, 3);
	expect_rx_frame(1, 1514, 4);
	EXPECT_GT(irq_edges, edges);
	EXPECT_EQ(stats().rx_packets, 2);
	EXPECT_EQ(stats().rx_dropped, 0);
	/* No buffer left: no longer waiting for the tap. */
	EXPECT_FALSE(virtio_net_reading(d.t));
}

TEST(rx_frame_split_over_descriptors)
{
	uint8_t frame[1000];

	dev_open(0);
	/* 5 bytes, then 1000: the header straddles the two. */
	set_desc(RXQ, 0, BUF_GPA(RXQ, 0), 5, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(RXQ, 1, BUF_GPA(RXQ, 1), 1000, VRING_DESC_F_WRITE, 0);
	offer(RXQ, 0);
	host_send(900, 5);
	poll_dev();
	ASSERT_EQ(used_idx(RXQ), 1);
	EXPECT_EQ(used(RXQ)->ring[0].len, NET_HDR_LEN + 900);
	fill(frame, 900, 5);
	EXPECT_EQ(memcmp(gpa(BUF_GPA(RXQ, 1)) + NET_HDR_LEN - 5, frame, 900), 0);
	/* num_buffers (bytes 10, 11 of the header) in the second buffer */
	EXPECT_EQ(gpa(BUF_GPA(RXQ, 1))[5], 1);
	EXPECT_EQ(gpa(BUF_GPA(RXQ, 1))[6], 0);
}

TEST(chain_longer_than_the_ring_breaks_the_device)
{
	uint8_t buf[64];
	int i;

	dev_open(0);
	/* A loop: 0 -> 1 -> ... -> 7 -> 0: more descriptors than the ring. */
	for (i = 0; i < NUM; i++)
		set_desc(TXQ, i, BUF_GPA(TXQ, i), 64, VRING_DESC_F_NEXT,
			 (i + 1) % NUM);
	offer(TXQ, 0);
	kick(TXQ);
	EXPECT_TRUE(broken());
	EXPECT_EQ(used_idx(TXQ), 0);
	EXPECT_EQ(host_recv(buf, sizeof(buf)), -1);
	/* Further kicks do nothing. */
	tx_frame(0, 60, 1);
	kick(TXQ);
	EXPECT_EQ(host_recv(buf, sizeof(buf)), -1);
}

TEST(rx_chain_longer_than_the_ring_breaks_the_device)
{
	int i;

	dev_open(0);
	for (i = 0; i < NUM; i++)
		set_desc(RXQ, i, BUF_GPA(RXQ, i), 64,
			 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, (i + 1) % NUM);
	offer(RXQ, 0);
	host_send(60, 1);
	poll_dev();
	EXPECT_TRUE(broken());
	EXPECT_EQ(used_idx(RXQ), 0);
	EXPECT_FALSE(virtio_net_reading(d.t));
}

TEST(buffer_outside_guest_memory_breaks_the_device)
{
	uint8_t buf[64];

	dev_open(0);
	set_desc(TXQ, 0, MEM_SIZE - 32, 64, 0, 0);
	offer(TXQ, 0);
	kick(TXQ);
	EXPECT_TRUE(broken());
	EXPECT_EQ(host_recv(buf, sizeof(buf)), -1);

	dev_open(0);
	set_desc(RXQ, 0, 0xfffffffffffff000ULL, 0x2000, VRING_DESC_F_WRITE, 0);
	offer(RXQ, 0);
	host_send(60, 1);
	poll_dev();
	EXPECT_TRUE(broken());
	EXPECT_EQ(used_idx(RXQ), 0);
}

TEST(too_short_header_breaks_the_device)
{
	uint8_t buf[64];

	dev_open(0);
	set_desc(TXQ, 0, BUF_GPA(TXQ, 0), NET_HDR_LEN - 1, 0, 0);
	offer(TXQ, 0);
	kick(TXQ);
	EXPECT_TRUE(broken());
	EXPECT_EQ(host_recv(buf, sizeof(buf)), -1);

	dev_open(0);
	rx_buf(0, NET_HDR_LEN - 2);
	host_send(60, 1);
	poll_dev();
	EXPECT_TRUE(broken());
	EXPECT_EQ(used_idx(RXQ), 0);
}

TEST(writable_tx_or_readable_rx_buffer_breaks_the_device)
{
	dev_open(0);
	set_desc(TXQ, 0, BUF_GPA(TXQ, 0), 100, VRING_DESC_F_WRITE, 0);
	offer(TXQ, 0);
	kick(TXQ);
	EXPECT_TRUE(broken());

	dev_open(0);
	set_desc(RXQ, 0, BUF_GPA(RXQ, 0), 2048, 0, 0);
	offer(RXQ, 0);
	host_send(60, 1);
	poll_dev();
	EXPECT_TRUE(broken());
}

TEST(tx_frames_too_big_or_too_small_are_dropped)
{
	uint8_t buf[4096];

	dev_open(0);
	tx_frame(0, NET_MAX_FRAME + 1, 1);	/* beyond the MTU */
	tx_frame(1, 8000, 2);			/* far beyond */
	tx_frame(2, NET_ETH_HLEN - 1, 3);	/* not even a header */
	tx_frame(3, 0, 4);			/* the virtio header alone */
	tx_frame(4, 100, 5);			/* a good one after them */
	kick(TXQ);
	/* Every chain comes back, the bad frames never reach the tap. */
	EXPECT_EQ(used_idx(TXQ), 5);
	ASSERT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 100);
	EXPECT_EQ(host_recv(buf, sizeof(buf)), -1);
	EXPECT_EQ(stats().tx_dropped, 4);
	EXPECT_EQ(stats().tx_packets, 1);
	EXPECT_FALSE(broken());
}

TEST(rx_frames_too_big_are_dropped_and_the_buffer_reused)
{
	dev_open(0);
	rx_buf(0, NET_HDR_LEN + 100);
	host_send(200, 1);		/* does not fit the buffer */
	host_send(NET_MAX_FRAME + 1, 2);	/* beyond the MTU */
	host_send(5, 3);		/* no Ethernet header */
	host_send(80, 4);		/* fits */
	poll_dev();
	EXPECT_EQ(stats().rx_dropped, 3);
	EXPECT_EQ(stats().rx_packets, 1);
	ASSERT_EQ(used_idx(RXQ), 1);
	expect_rx_frame(0, 80, 4);
	EXPECT_FALSE(broken());

	/* A frame beyond the MTU is dropped even into a big buffer. */
	rx_buf(1, 0x2000);
	host_send(4000, 5);
	host_send(64, 6);
	poll_dev();
	EXPECT_EQ(stats().rx_dropped, 4);
	expect_rx_frame(1, 64, 6);
}

TEST(rx_without_buffers_waits_and_loses_nothing)
{
	int i;

	dev_open(0);
	for (i = 0; i < 5; i++)
		host_send(100 + i, 10 + i);
	poll_dev();
	poll_dev();
	/* Nothing taken from the tap, nothing dropped, not waiting on it. */
	EXPECT_EQ(stats().rx_packets, 0);
	EXPECT_EQ(stats().rx_dropped, 0);
	EXPECT_FALSE(virtio_net_reading(d.t));
	for (i = 0; i < 5; i++)
		rx_buf(i, 2048);
	kick(RXQ);
	poll_dev();
	for (i = 0; i < 5; i++)
		expect_rx_frame(i, 100 + i, 10 + i);
	EXPECT_EQ(stats().rx_dropped, 0);
}

TEST(rx_kicks_are_asked_for_only_without_buffers)
{
	dev_open(0);
	rx_buf(0, 2048);
	rx_buf(1, 2048);
	poll_dev();
	/* Buffers wait and the tap is watched: no kick needed for more. */
	EXPECT_TRUE(virtio_net_reading(d.t));
	EXPECT_EQ(used(RXQ)->flags, VRING_USED_F_NO_NOTIFY);
	host_send(60, 1);
	host_send(60, 2);
	poll_dev();
	expect_rx_frame(0, 60, 1);
	expect_rx_frame(1, 60, 2);
	/* Out of buffers: the driver must kick again. */
	EXPECT_EQ(used(RXQ)->flags, 0);
	EXPECT_FALSE(virtio_net_reading(d.t));
	/* A buffer added without a kick is still found (no lost wakeup). */
	rx_buf(2, 2048);
	host_send(60, 3);
	poll_dev();
	expect_rx_frame(2, 60, 3);
}

TEST(no_interrupt_while_the_driver_polls)
{
	uint8_t buf[256];
	int edges;

	dev_open(0);
	avail(RXQ)->flags = VRING_AVAIL_F_NO_INTERRUPT;
	avail(TXQ)->flags = VRING_AVAIL_F_NO_INTERRUPT;
	rx_buf(0, 2048);
	rx_buf(1, 2048);
	host_send(60, 1);
	edges = irq_edges;
	poll_dev();
	tx_frame(0, 60, 2);
	kick(TXQ);
	expect_rx_frame(0, 60, 1);
	EXPECT_EQ(used_idx(TXQ), 1);
	EXPECT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 60);
	EXPECT_EQ(irq_edges, edges);
	/* Interrupts wanted again: each queue raises one. */
	avail(RXQ)->flags = 0;
	avail(TXQ)->flags = 0;
	host_send(60, 3);
	poll_dev();
	expect_rx_frame(1, 60, 3);
	EXPECT_EQ(irq_edges, edges + 1);
	tx_frame(1, 60, 4);
	kick(TXQ);
	EXPECT_EQ(irq_edges, edges + 2);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool wait_used(int q, uint16_t idx, int ms)
{
	while (ms-- > 0) {
		if (used_idx(q) == idx)
			return true;
		usleep(1000);
	}
	return used_idx(q) == idx;
}

TEST(rx_thread_does_not_spin_without_buffers)
{
	double cpu0;
	int i;

	dev_open(0);
	ASSERT_EQ(virtio_net_start(d.t), 0);
	for (i = 0; i < 8; i++)
		host_send(100, i);
	cpu0 = cpu_s();
	usleep(300 * 1000);
	/* A spinning I/O thread would burn the whole 300 ms. */
	EXPECT_LT(cpu_s() - cpu0, 0.05);
	EXPECT_EQ(stats().rx_packets, 0);
	EXPECT_EQ(stats().rx_dropped, 0);
	/* Buffers and a kick: the thread delivers every waiting frame. */
	for (i = 0; i < NUM; i++)
		rx_buf(i, 2048);
	kick(RXQ);
	ASSERT_TRUE(wait_used(RXQ, NUM, 5000));
	for (i = 0; i < NUM; i++)
		expect_rx_frame(i, 100, i);
	/* Frames that arrive while buffers wait are delivered too. */
	rx_buf(0, 2048);
	kick(RXQ);
	usleep(50 * 1000);
	host_send(300, 42);
	ASSERT_TRUE(wait_used(RXQ, NUM + 1, 5000));
	expect_rx_frame(0, 300, 42);
	virtio_net_destroy(d.t);
}

TEST(tx_backpressure_holds_frames_until_the_tap_drains)
{
	uint8_t buf[4096], frame[200];
	int i, got = 0, sent = 0, round, blocked = 0;

	/* A small send buffer: a few frames in flight, then EAGAIN. */
	dev_open(4096);
	ASSERT_EQ(virtio_net_start(d.t), 0);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < NUM; i++)
			tx_frame(i, 200, sent + i);
		kick(TXQ);
		if (used_idx(TXQ) != (uint16_t)(sent + NUM))
			blocked++;
		/* Read what arrived; the device resends blocked frames itself. */
		while (!wait_used(TXQ, (uint16_t)(sent + NUM), 20)) {
			ssize_t n = host_recv(buf, sizeof(buf));

			if (n < 0)
				continue;
			ASSERT_EQ(n, NET_HDR_LEN + 200);
			fill(frame, 200, got);
			EXPECT_EQ(memcmp(buf + NET_HDR_LEN, frame, 200), 0);
			got++;
		}
		sent += NUM;
	}
	while (got < sent) {
		ssize_t n = host_recv(buf, sizeof(buf));

		ASSERT_EQ(n, NET_HDR_LEN + 200);
		fill(frame, 200, got);
		EXPECT_EQ(memcmp(buf + NET_HDR_LEN, frame, 200), 0);
		got++;
	}
	nothing_on_tap();
	/* The tap did push back, and nothing was lost to it. */
	EXPECT_EQ(blocked, 3);
	EXPECT_EQ(stats().tx_packets, sent);
	EXPECT_EQ(stats().tx_dropped, 0);
	virtio_net_destroy(d.t);
}

TEST(reset_in_the_middle_forgets_the_old_rings)
{
	uint8_t before[2048];

	dev_open(0);
	rx_buf(0, 2048);
	memcpy(before, gpa(BUF_GPA(RXQ, 0)), sizeof(before));
	host_send(100, 1);
	/* The driver resets before the device got to the frame. */
	wr(VIRTIO_MMIO_STATUS, 0);
	poll_dev();
	EXPECT_EQ(memcmp(before, gpa(BUF_GPA(RXQ, 0)), sizeof(before)), 0);
	EXPECT_EQ(used_idx(RXQ), 0);
	EXPECT_FALSE(virtio_net_reading(d.t));
	/* TX kicks on a reset device do nothing. */
	tx_frame(0, 60, 1);
	kick(TXQ);
	nothing_on_tap();

	/* Set up again elsewhere: the waiting frame lands in the new ring. */
	driver_init(RING_GPA(4));
	rx_buf(3, 2048);
	poll_dev();
	expect_rx_frame(3, 100, 1);
	EXPECT_EQ(memcmp(before, gpa(BUF_GPA(RXQ, 0)), sizeof(before)), 0);
	tx_frame(2, 70, 2);
	kick(TXQ);
	{
		uint8_t buf[256];

		EXPECT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 70);
	}
}

TEST(broken_device_recovers_after_reset)
{
	uint8_t buf[256];

	dev_open(0);
	set_desc(TXQ, 0, MEM_SIZE, 64, 0, 0);
	offer(TXQ, 0);
	kick(TXQ);
	ASSERT_TRUE(broken());
	driver_init(RING_GPA(0));
	EXPECT_FALSE(broken());
	tx_frame(1, 64, 7);
	kick(TXQ);
	EXPECT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 64);
	rx_buf(0, 2048);
	host_send(64, 8);
	poll_dev();
	expect_rx_frame(0, 64, 8);
}

TEST(dead_tap_stops_reading_and_drops_tx)
{
	uint8_t buf[64];

	dev_open(0);
	rx_buf(0, 2048);
	/* The tap gone: reads see end of file, writes fail. */
	ASSERT_EQ(shutdown(d.dev_fd, SHUT_RDWR), 0);
	poll_dev();
	poll_dev();
	EXPECT_FALSE(virtio_net_reading(d.t));
	EXPECT_EQ(used_idx(RXQ), 0);
	tx_frame(0, 60, 1);
	kick(TXQ);
	/* The chain comes back (dropped), the guest is not stuck. */
	EXPECT_EQ(used_idx(TXQ), 1);
	EXPECT_EQ(stats().tx_dropped, 1);
	EXPECT_FALSE(broken());
	EXPECT_LE(host_recv(buf, sizeof(buf)), 0);
}

TEST(snapshot_state_round_trip)
{
	struct virtio_net_state s;

	dev_open(0);
	virtio_net_save(d.t, &s);
	EXPECT_EQ(memcmp(s.mac, test_mac, 6), 0);
	EXPECT_EQ(s.mtu, 1500);
	EXPECT_EQ(virtio_net_load(d.t, &s), 0);
	s.mac[5] ^= 1;
	EXPECT_EQ(virtio_net_load(d.t, &s), -EINVAL);
	s.mac[5] ^= 1;
	s.reserved[1] = 1;
	EXPECT_EQ(virtio_net_load(d.t, &s), -EINVAL);
}

TEST(restore_sends_tx_left_in_the_ring)
{
	struct virtio_net_state s;
	uint8_t buf[256];

	dev_open(0);
	virtio_net_save(d.t, &s);
	/* Queued by the guest, never kicked (or refused by the old tap). */
	tx_frame(0, 80, 5);
	ASSERT_EQ(virtio_net_load(d.t, &s), 0);
	nothing_on_tap();
	poll_dev();
	EXPECT_EQ(host_recv(buf, sizeof(buf)), NET_HDR_LEN + 80);
	EXPECT_EQ(used_idx(TXQ), 1);
}

TEST(mac_parsing)
{
	uint8_t mac[6];

	EXPECT_EQ(net_parse_mac("06:cb:00:00:00:15", mac), 0);
	EXPECT_EQ(memcmp(mac, test_mac, 6), 0);
	EXPECT_EQ(net_parse_mac("06:CB:00:0a:Ff:15", mac), 0);
	EXPECT_EQ(mac[4], 0xff);
	EXPECT_EQ(net_parse_mac("07:cb:00:00:00:15", mac), -EINVAL); /* multicast */
	EXPECT_EQ(net_parse_mac("00:00:00:00:00:00", mac), -EINVAL);
	EXPECT_EQ(net_parse_mac("06:cb:00:00:00", mac), -EINVAL);
	EXPECT_EQ(net_parse_mac("06:cb:00:00:00:150", mac), -EINVAL);
	EXPECT_EQ(net_parse_mac("06-cb-00-00-00-15", mac), -EINVAL);
	EXPECT_EQ(net_parse_mac("0x:cb:00:00:00:15", mac), -EINVAL);
	EXPECT_EQ(net_parse_mac(" 6:cb:00:00:00:15", mac), -EINVAL);
}

TEST(tap_setup_refuses_what_is_not_a_tap)
{
	const char *err = NULL;
	int sv[2];

	EXPECT_EQ(net_tap_setup(-1, &err), -EBADF);
	EXPECT_EQ(net_tap_setup(12345, &err), -EBADF);
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	EXPECT_EQ(net_tap_setup(sv[0], &err), -ENOTTY);
	EXPECT_TRUE(err && strstr(err, "not a tap"));
	close(sv[0]);
	close(sv[1]);
}

TEST_MAIN()
