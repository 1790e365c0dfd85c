// SPDX-License-Identifier: GPL-2.0
/*
 * evil-virtq: guest-side helper of the vmm selftests.  With no virtio
 * driver loaded, it drives cube-vmm's virtio-blk transport through
 * /dev/mem and hands it hostile virtqueues: descriptor loops, huge
 * lengths, addresses outside guest memory, indices beyond the ring,
 * indirect descriptors never negotiated, bad queue layouts, and random
 * register accesses.  Each malformed case must leave the device in
 * DEVICE_NEEDS_RESET; a valid request after a reset must still work.
 * Prints "CUBE-L2-EVIL <case> ok|FAIL ...", then "CUBE-L2-EVIL-DONE".
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BLK_MMIO	0xd0002000UL
#define QNUM		8

#define R_MAGIC		0x000
#define R_DEVICE_ID	0x008
#define R_DRV_FEAT	0x020
#define R_DRV_FEAT_SEL	0x024
#define R_QUEUE_SEL	0x030
#define R_QUEUE_NUM	0x038
#define R_QUEUE_READY	0x044
#define R_QUEUE_NOTIFY	0x050
#define R_STATUS	0x070
#define R_DESC_LO	0x080
#define R_DESC_HI	0x084
#define R_AVAIL_LO	0x090
#define R_AVAIL_HI	0x094
#define R_USED_LO	0x0a0
#define R_USED_HI	0x0a4

#define S_ACK		1
#define S_DRIVER	2
#define S_DRIVER_OK	4
#define S_FEATURES_OK	8
#define S_NEEDS_RESET	0x40

#define F_NEXT		1
#define F_WRITE		2
#define F_INDIRECT	4

struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

static volatile uint8_t *mmio;
static uint8_t *ring, *data;
static uint64_t ring_pa, data_pa;
static int failures;

static uint32_t rd(unsigned int off)
{
	return *(volatile uint32_t *)(mmio + off);
}

static void wr(unsigned int off, uint32_t v)
{
	*(volatile uint32_t *)(mmio + off) = v;
}

static uint64_t phys_of(void *p)
{
	uint64_t ent;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0 || pread(fd, &ent, 8, ((uintptr_t)p / 4096) * 8) != 8) {
		perror("pagemap");
		exit(1);
	}
	close(fd);
	if (!(ent & (1ULL << 63)))
		exit(1);
	return (ent & ((1ULL << 55) - 1)) * 4096;
}

#define DESC	((struct desc *)ring)
#define AVAIL	((uint16_t *)(ring + 0x800))	/* flags, idx, ring[] */
#define USED	((uint16_t *)(ring + 0xc00))	/* flags, idx, elems */

/* Reset and set the queue up with the given layout; returns status. */
static uint32_t setup(uint64_t desc, uint64_t avail, uint64_t used,
		      uint32_t num)
{
	wr(R_STATUS, 0);
	memset(ring, 0, 4096);
	wr(R_STATUS, S_ACK | S_DRIVER);
	wr(R_DRV_FEAT_SEL, 1);
	wr(R_DRV_FEAT, 1);		/* VIRTIO_F_VERSION_1 */
	wr(R_DRV_FEAT_SEL, 0);
	wr(R_DRV_FEAT, 0);
	wr(R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK);
	wr(R_QUEUE_SEL, 0);
	wr(R_QUEUE_NUM, num);
	wr(R_DESC_LO, desc);
	wr(R_DESC_HI, desc >> 32);
	wr(R_AVAIL_LO, avail);
	wr(R_AVAIL_HI, avail >> 32);
	wr(R_USED_LO, used);
	wr(R_USED_HI, used >> 32);
	wr(R_QUEUE_READY, 1);
	wr(R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
	return rd(R_STATUS);
}

static void setup_good(void)
{
	setup(ring_pa, ring_pa + 0x800, ring_pa + 0xc00, QNUM);
}

static void kick(uint16_t idx, uint16_t head)
{
	AVAIL[2] = head;
	__sync_synchronize();
	AVAIL[1] = idx;
	__sync_synchronize();
	wr(R_QUEUE_NOTIFY, 0);
	__sync_synchronize();
}

static void expect_reset(const char *name)
{
	uint32_t st = rd(R_STATUS);
	int ok = !!(st & S_NEEDS_RESET);

	printf("CUBE-L2-EVIL %s %s status=%#x\n", name, ok ? "ok" : "FAIL", st);
	failures += !ok;
}

/*
 * Wait up to @ms for the device to publish used index @idx: no fixed pause
 * that a slow (emulated) host could outrun.
 */
static int wait_used(uint16_t idx, int ms)
{
	while (*(volatile uint16_t *)&USED[1] != idx && ms-- > 0)
		usleep(1000);
	return *(volatile uint16_t *)&USED[1] == idx;
}

/* A good read of sector 0: header, 512-byte buffer, status byte. */
static void valid(const char *name)
{
	uint8_t *status = data + 0x800;
	int ok;

	setup_good();
	memset(data, 0, 4096);
	*status = 0xff;
	DESC[0] = (struct desc){ data_pa, 16, F_NEXT, 1 };
	DESC[1] = (struct desc){ data_pa + 0x100, 512, F_NEXT | F_WRITE, 2 };
	DESC[2] = (struct desc){ data_pa + 0x800, 1, F_WRITE, 0 };
	kick(1, 0);
	ok = wait_used(1, 20000) && *status == 0 &&
	     !(rd(R_STATUS) & S_NEEDS_RESET);
	printf("CUBE-L2-EVIL %s %s used=%u status=%u\n", name,
	       ok ? "ok" : "FAIL", USED[1], *status);
	failures += !ok;
}

static void chain_case(const char *name, struct desc d0, struct desc d1,
		       uint16_t idx, uint16_t head)
{
	setup_good();
	DESC[0] = d0;
	DESC[1] = d1;
	kick(idx, head);
	expect_reset(name);
}

static void layout_case(const char *name, uint64_t desc, uint32_t num)
{
	setup(desc, ring_pa + 0x800, ring_pa + 0xc00, num);
	expect_reset(name);
}

static void fuzz_registers(void)
{
	unsigned int i, seed = 1;

	/* Random widths and offsets, reads and writes: nothing may hang. */
	for (i = 0; i < 20000; i++) {
		unsigned int off, w;
		uint32_t v;

		seed = seed * 1103515245 + 12345;
		off = (seed >> 8) % 0x200;
		w = 1 << ((seed >> 4) & 3);
		if (w == 8)
			w = 4;
		if (off + w > 0x200)
			continue;
		v = seed ^ (seed >> 13);
		if (off == R_QUEUE_NOTIFY || off == R_STATUS)
			continue;
		if (seed & 1) {
			if (w == 1)
				*(volatile uint8_t *)(mmio + off) = v;
			else if (w == 2)
				*(volatile uint16_t *)(mmio + (off & ~1)) = v;
			else
				*(volatile uint32_t *)(mmio + (off & ~3)) = v;
		} else {
			if (w == 1)
				(void)*(volatile uint8_t *)(mmio + off);
			else if (w == 2)
				(void)*(volatile uint16_t *)(mmio + (off & ~1));
			else
				(void)*(volatile uint32_t *)(mmio + (off & ~3));
		}
	}
	printf("CUBE-L2-EVIL fuzz ok magic=%#x\n", rd(R_MAGIC));
}

int main(void)
{
	int fd = open("/dev/mem", O_RDWR | O_SYNC);
	void *m;

	if (fd < 0) {
		perror("CUBE-L2-EVIL-FAILED /dev/mem");
		return 1;
	}
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, BLK_MMIO);
	if (m == MAP_FAILED) {
		perror("CUBE-L2-EVIL-FAILED mmap");
		return 1;
	}
	mmio = m;
	if (rd(R_MAGIC) != 0x74726976 || rd(R_DEVICE_ID) != 2) {
		printf("CUBE-L2-EVIL-FAILED no virtio-blk at %#lx\n", BLK_MMIO);
		return 1;
	}
	ring = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE,
		    -1, 0);
	if (ring == MAP_FAILED) {
		perror("CUBE-L2-EVIL-FAILED ring");
		return 1;
	}
	data = ring + 4096;
	ring_pa = phys_of(ring);
	data_pa = phys_of(data);
	setvbuf(stdout, NULL, _IOLBF, 0);

	valid("valid-first");
	chain_case("loop", (struct desc){ data_pa, 16, F_NEXT, 1 },
		   (struct desc){ data_pa + 16, 16, F_NEXT, 0 }, 1, 0);
	chain_case("self-loop", (struct desc){ data_pa, 16, F_NEXT, 0 },
		   (struct desc){ 0 }, 1, 0);
	chain_case("huge-len", (struct desc){ data_pa, 0xffffffff, 0, 0 },
		   (struct desc){ 0 }, 1, 0);
	chain_case("outside", (struct desc){ 0x7fff00000000ULL, 512, 0, 0 },
		   (struct desc){ 0 }, 1, 0);
	chain_case("wrap", (struct desc){ 0xfffffffffffff000ULL, 0x2000, 0, 0 },
		   (struct desc){ 0 }, 1, 0);
	chain_case("next-range", (struct desc){ data_pa, 16, F_NEXT, 50 },
		   (struct desc){ 0 }, 1, 0);
	chain_case("indirect", (struct desc){ data_pa, 16, F_INDIRECT, 0 },
		   (struct desc){ 0 }, 1, 0);
	chain_case("write-then-read",
		   (struct desc){ data_pa, 16, F_WRITE | F_NEXT, 1 },
		   (struct desc){ data_pa + 16, 16, 0, 0 }, 1, 0);
	chain_case("avail-jump", (struct desc){ data_pa, 16, 0, 0 },
		   (struct desc){ 0 }, 200, 0);
	chain_case("head-range", (struct desc){ data_pa, 16, 0, 0 },
		   (struct desc){ 0 }, 1, 100);
	chain_case("short-header", (struct desc){ data_pa, 8, F_NEXT, 1 },
		   (struct desc){ data_pa + 16, 1, F_WRITE, 0 }, 1, 0);
	layout_case("ring-outside", 0xfff00000000ULL, QNUM);
	layout_case("ring-wrap", 0xfffffffffffff000ULL, QNUM);
	layout_case("num-not-pow2", ring_pa, 3);
	layout_case("num-zero", ring_pa, 0);
	fuzz_registers();
	valid("valid-after");
	wr(R_STATUS, 0);
	printf("CUBE-L2-EVIL-DONE failures=%d\n", failures);
	return failures != 0;
}
