// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of cube-vmm's virtio-blk device in its writable mode
 * (the sandbox's disk) and, for contrast, its read-only mode, driven
 * through the real virtio-mmio transport by a small driver written here
 * over fake guest memory, on a sparse file in /tmp.  What the guest's
 * block layer never sends is sent here: writes past the end or across
 * it, sizes that are not whole sectors, DISCARD and WRITE_ZEROES with
 * bad segments (past the end, too many, too long, flags), a host write
 * error; none may touch the file past its size or punch a hole a request
 * did not ask for.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

#include "cube_test.h"
#include "devices.h"
#include "virtio_mmio.h"
#include "vm.h"

#define MEM_SIZE	(4 << 20)
#define NUM		8
#define RING		0x1000
#define HDR_GPA		0x4000
#define SEGS_GPA	0x5000
#define STATUS_GPA	0x6000
#define DATA_GPA	0x100000
#define DISK_SIZE	(1 << 20)
#define SECTORS		(DISK_SIZE / 512)

static int irq_edges;

/* The transport's interrupt line: count the rising edges. */
int vm_irq_line(struct vm *vm, uint32_t irq, int level)
{
	if (level)
		irq_edges++;
	return 0;
}

struct drv {
	struct vm vm;
	struct virtio_mmio *t;
	char path[64];
	int fd;			/* the test's own fd of the disk file */
	uint16_t avail, used_seen;
};

static struct drv d;

static uint8_t *gpa(uint64_t a)
{
	return d.vm.mem.host + a;
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

static void driver_init(void)
{
	uint32_t st = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;
	uint32_t f = rd(VIRTIO_MMIO_DEVICE_FEATURES);

	wr(VIRTIO_MMIO_STATUS, 0);
	wr(VIRTIO_MMIO_STATUS, st);
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, f);
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, 1U << (VIRTIO_F_VERSION_1 - 32));
	st |= VIRTIO_CONFIG_S_FEATURES_OK;
	wr(VIRTIO_MMIO_STATUS, st);
	ASSERT_TRUE(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	memset(gpa(RING), 0, 0x3000);
	wr(VIRTIO_MMIO_QUEUE_SEL, 0);
	wr(VIRTIO_MMIO_QUEUE_NUM, NUM);
	wr(VIRTIO_MMIO_QUEUE_DESC_LOW, RING);
	wr(VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	wr(VIRTIO_MMIO_QUEUE_AVAIL_LOW, RING + 0x1000);
	wr(VIRTIO_MMIO_QUEUE_AVAIL_HIGH, 0);
	wr(VIRTIO_MMIO_QUEUE_USED_LOW, RING + 0x2000);
	wr(VIRTIO_MMIO_QUEUE_USED_HIGH, 0);
	wr(VIRTIO_MMIO_QUEUE_READY, 1);
	wr(VIRTIO_MMIO_STATUS, st | VIRTIO_CONFIG_S_DRIVER_OK);
	d.avail = d.used_seen = 0;
}

/* A writable disk of DISK_SIZE (sparse), or the read-only device. */
static void dev_open(bool writable)
{
	memset(&d, 0, sizeof(d));
	d.vm.mem.size = MEM_SIZE;
	d.vm.mem.host = calloc(1, MEM_SIZE);
	ASSERT_TRUE(d.vm.mem.host != NULL);
	snprintf(d.path, sizeof(d.path), "/tmp/blk_unit.%d", getpid());
	d.fd = open(d.path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_GE(d.fd, 0);
	ASSERT_EQ(ftruncate(d.fd, DISK_SIZE), 0);
	if (writable) {
		uint64_t size = 0;
		const char *err = NULL;
		int fd = open(d.path, O_RDWR | O_CLOEXEC);

		ASSERT_EQ(virtio_blk_disk_check(fd, &size, &err), 0);
		ASSERT_EQ(size, (uint64_t)DISK_SIZE);
		d.t = virtio_blk_create_disk(&d.vm, 0xd0004000, 9, fd, size);
	} else {
		const char *err = NULL;

		d.t = virtio_blk_create(&d.vm, 0xd0002000, 7, d.path, &err);
	}
	ASSERT_TRUE(d.t != NULL);
	driver_init();
}

static void dev_close(void)
{
	virtio_blk_destroy(d.t);
	close(d.fd);
	unlink(d.path);
	free(d.vm.mem.host);
}

static void set_desc(int i, uint64_t addr, uint32_t len, uint16_t flags)
{
	struct vring_desc *ds = (void *)gpa(RING);

	ds[i].addr = addr;
	ds[i].len = len;
	ds[i].flags = flags;
	ds[i].next = i + 1;
}

/*
 * One request: header, then out bytes at DATA_GPA (or SEGS_GPA for
 * segments), or in bytes, then the status byte.  Returns the status, or
 * -1 when the device gave nothing back.
 */
static int request(uint32_t type, uint64_t sector, uint64_t data,
		   uint32_t len, bool in)
{
	struct virtio_blk_outhdr *h = (void *)gpa(HDR_GPA);
	struct vring_avail *a = (void *)gpa(RING + 0x1000);
	struct vring_used *u = (void *)gpa(RING + 0x2000);
	int n = 0;

	h->type = type;
	h->ioprio = 0;
	h->sector = sector;
	*gpa(STATUS_GPA) = 0xee;
	set_desc(n++, HDR_GPA, sizeof(*h), VRING_DESC_F_NEXT);
	if (len)
		set_desc(n++, data, len, VRING_DESC_F_NEXT |
			 (in ? VRING_DESC_F_WRITE : 0));
	set_desc(n++, STATUS_GPA, 1, VRING_DESC_F_WRITE);
	a->ring[d.avail % NUM] = 0;
	d.avail++;
	__atomic_store_n(&a->idx, d.avail, __ATOMIC_RELEASE);
	wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	if (__atomic_load_n(&u->idx, __ATOMIC_ACQUIRE) == d.used_seen)
		return -1;
	d.used_seen++;
	return *gpa(STATUS_GPA);
}

static void seg(int i, uint64_t sector, uint32_t n, uint32_t flags)
{
	struct virtio_blk_discard_write_zeroes *s = (void *)gpa(SEGS_GPA);

	s[i].sector = sector;
	s[i].num_sectors = n;
	s[i].flags = flags;
}

static void fill(uint64_t a, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		gpa(a)[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 9)) | 1;
}

static bool file_is(uint64_t off, const uint8_t *want, size_t len)
{
	uint8_t *b = malloc(len);
	bool same = b && pread(d.fd, b, len, off) == (ssize_t)len &&
		    !memcmp(b, want, len);

	free(b);
	return same;
}

static bool file_zero(uint64_t off, size_t len)
{
	uint8_t *z = calloc(1, len);
	bool r = z && file_is(off, z, len);

	free(z);
	return r;
}

static long long blocks(void)
{
	struct stat st;

	return fstat(d.fd, &st) ? -1 : (long long)st.st_blocks;
}

static long long size(void)
{
	struct stat st;

	return fstat(d.fd, &st) ? -1 : (long long)st.st_size;
}

static bool broken_dev(void);

TEST(writable_device_shape)
{
	struct virtio_blk_config cfg;
	char id[VIRTIO_BLK_ID_BYTES + 1] = { 0 };
	uint32_t f;

	dev_open(true);
	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	f = rd(VIRTIO_MMIO_DEVICE_FEATURES);
	EXPECT_FALSE(f & (1U << VIRTIO_BLK_F_RO));
	EXPECT_TRUE(f & (1U << VIRTIO_BLK_F_FLUSH));
	EXPECT_TRUE(f & (1U << VIRTIO_BLK_F_DISCARD));
	EXPECT_TRUE(f & (1U << VIRTIO_BLK_F_WRITE_ZEROES));
	memset(&cfg, 0, sizeof(cfg));
	virtio_mmio_access(d.t, VIRTIO_MMIO_CONFIG, (uint8_t *)&cfg,
			   offsetof(struct virtio_blk_config, unused1), false);
	EXPECT_EQ(cfg.capacity, (uint64_t)SECTORS);
	EXPECT_EQ(cfg.max_discard_seg, 32);
	EXPECT_GT(cfg.max_discard_sectors, 0);
	EXPECT_EQ(cfg.discard_sector_alignment, 8);
	EXPECT_EQ(cfg.max_write_zeroes_seg, 32);
	EXPECT_EQ(cfg.write_zeroes_may_unmap, 1);
	EXPECT_EQ(request(VIRTIO_BLK_T_GET_ID, 0, DATA_GPA, VIRTIO_BLK_ID_BYTES,
			  true), VIRTIO_BLK_S_OK);
	memcpy(id, gpa(DATA_GPA), VIRTIO_BLK_ID_BYTES);
	EXPECT_STREQ(id, "cube-disk");
	EXPECT_EQ(request(VIRTIO_BLK_T_FLUSH, 0, 0, 0, false), VIRTIO_BLK_S_OK);
	dev_close();
}

TEST(writes_land_and_read_back)
{
	dev_open(true);
	fill(DATA_GPA, 8192, 1);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, 16, DATA_GPA, 8192, false),
		  VIRTIO_BLK_S_OK);
	EXPECT_TRUE(file_is(16 * 512, gpa(DATA_GPA), 8192));
	EXPECT_TRUE(file_zero(0, 16 * 512));
	/* the last sector */
	fill(DATA_GPA, 512, 2);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, SECTORS - 1, DATA_GPA, 512, false),
		  VIRTIO_BLK_S_OK);
	EXPECT_TRUE(file_is(DISK_SIZE - 512, gpa(DATA_GPA), 512));
	memset(gpa(DATA_GPA + 0x10000), 0, 512);
	EXPECT_EQ(request(VIRTIO_BLK_T_IN, SECTORS - 1, DATA_GPA + 0x10000,
			  512, true), VIRTIO_BLK_S_OK);
	EXPECT_EQ(memcmp(gpa(DATA_GPA), gpa(DATA_GPA + 0x10000), 512), 0);
	EXPECT_EQ(size(), DISK_SIZE);
	dev_close();
}

TEST(writes_past_the_end_or_not_whole_sectors_fail)
{
	long long b0;

	dev_open(true);
	fill(DATA_GPA, 4096, 3);
	b0 = blocks();
	/* wholly past, straddling the end, at a sector far out, overflow */
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, SECTORS, DATA_GPA, 512, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, SECTORS - 1, DATA_GPA, 1024, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, 1ULL << 40, DATA_GPA, 512, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, ~0ULL >> 9, DATA_GPA, 512, false),
		  VIRTIO_BLK_S_IOERR);
	/* not whole sectors */
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, 0, DATA_GPA, 100, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(size(), DISK_SIZE);
	EXPECT_EQ(blocks(), b0);
	EXPECT_TRUE(file_zero(DISK_SIZE - 4096, 4096));
	EXPECT_FALSE(broken_dev());
	dev_close();
}

TEST(host_write_error_is_ioerr)
{
	struct rlimit r = { 64 * 1024, 64 * 1024 };

	dev_open(true);
	/* files may not grow past 64 KiB here: the write fails (EFBIG) */
	signal(SIGXFSZ, SIG_IGN);
	ASSERT_EQ(ftruncate(d.fd, 0), 0);
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &r), 0);
	fill(DATA_GPA, 4096, 4);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, 512, DATA_GPA, 4096, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(size(), 0);
	dev_close();
}

TEST(discard_and_write_zeroes_punch_holes)
{
	long long b0, b1;

	dev_open(true);
	fill(DATA_GPA, 256 * 1024, 5);
	ASSERT_EQ(request(VIRTIO_BLK_T_OUT, 0, DATA_GPA, 256 * 1024, false),
		  VIRTIO_BLK_S_OK);
	b0 = blocks();
	/* two segments: [64 KiB, 128 KiB) and [192 KiB, 256 KiB) */
	seg(0, 128, 128, 0);
	seg(1, 384, 128, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_OK);
	b1 = blocks();
	TH_LOG("blocks %lld -> %lld", b0, b1);
	EXPECT_LE(b1, b0 - 2 * 128 + 16);
	EXPECT_TRUE(file_zero(64 * 1024, 64 * 1024));
	EXPECT_TRUE(file_zero(192 * 1024, 64 * 1024));
	EXPECT_TRUE(file_is(0, gpa(DATA_GPA), 64 * 1024));
	EXPECT_TRUE(file_is(128 * 1024, gpa(DATA_GPA + 128 * 1024), 64 * 1024));
	/* write zeroes, with and without UNMAP */
	seg(0, 0, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	seg(1, 256, 8, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_WRITE_ZEROES, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_OK);
	EXPECT_TRUE(file_zero(0, 4096));
	EXPECT_TRUE(file_zero(128 * 1024, 4096));
	EXPECT_TRUE(file_is(4096, gpa(DATA_GPA + 4096), 4096));
	EXPECT_EQ(size(), DISK_SIZE);
	dev_close();
}

TEST(bad_segments_punch_nothing)
{
	long long b0;
	int i;

	dev_open(true);
	fill(DATA_GPA, 64 * 1024, 6);
	ASSERT_EQ(request(VIRTIO_BLK_T_OUT, 0, DATA_GPA, 64 * 1024, false),
		  VIRTIO_BLK_S_OK);
	b0 = blocks();
	/* a good first segment, then one past the end: nothing is done */
	seg(0, 0, 8, 0);
	seg(1, SECTORS - 4, 8, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_IOERR);
	seg(1, 0xffffffffffffff00ULL, 0x200, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_IOERR);
	/* a discard with flags, a write-zeroes with a reserved flag */
	seg(1, 16, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_UNSUPP);
	seg(1, 16, 8, 2);
	EXPECT_EQ(request(VIRTIO_BLK_T_WRITE_ZEROES, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_UNSUPP);
	/* longer than max_discard_sectors, more than max_discard_seg */
	seg(1, 16, 0xffffffffU, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 32, false),
		  VIRTIO_BLK_S_UNSUPP);
	for (i = 0; i < 33; i++)
		seg(i, i * 8, 8, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 33 * 16, false),
		  VIRTIO_BLK_S_UNSUPP);
	/* not whole segments, no segment at all */
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 24, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, 0, 0, false),
		  VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(blocks(), b0);
	EXPECT_TRUE(file_is(0, gpa(DATA_GPA), 64 * 1024));
	EXPECT_EQ(size(), DISK_SIZE);
	EXPECT_FALSE(broken_dev());
	dev_close();
}

TEST(read_only_device_refuses_writes_and_discards)
{
	char id[VIRTIO_BLK_ID_BYTES + 1] = { 0 };

	dev_open(false);
	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	EXPECT_TRUE(rd(VIRTIO_MMIO_DEVICE_FEATURES) & (1U << VIRTIO_BLK_F_RO));
	fill(DATA_GPA, 512, 7);
	EXPECT_EQ(request(VIRTIO_BLK_T_OUT, 0, DATA_GPA, 512, false),
		  VIRTIO_BLK_S_IOERR);
	seg(0, 0, 8, 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 16, false),
		  VIRTIO_BLK_S_UNSUPP);
	EXPECT_EQ(blocks(), 0);
	EXPECT_EQ(request(VIRTIO_BLK_T_GET_ID, 0, DATA_GPA, VIRTIO_BLK_ID_BYTES,
			  true), VIRTIO_BLK_S_OK);
	memcpy(id, gpa(DATA_GPA), VIRTIO_BLK_ID_BYTES);
	EXPECT_STREQ(id, "cube-rootfs");
	dev_close();
}

TEST(config_change_interrupt)
{
	uint32_t gen;
	int edges;

	dev_open(true);
	gen = rd(VIRTIO_MMIO_CONFIG_GENERATION);
	edges = irq_edges;
	pthread_mutex_lock(&d.t->lock);
	virtio_mmio_config_changed(d.t);
	pthread_mutex_unlock(&d.t->lock);
	EXPECT_EQ(rd(VIRTIO_MMIO_CONFIG_GENERATION), gen + 1);
	EXPECT_TRUE(rd(VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	EXPECT_EQ(irq_edges, edges + 1);
	/* before the driver is live: the generation only */
	wr(VIRTIO_MMIO_STATUS, 0);
	edges = irq_edges;
	pthread_mutex_lock(&d.t->lock);
	virtio_mmio_config_changed(d.t);
	pthread_mutex_unlock(&d.t->lock);
	EXPECT_EQ(irq_edges, edges);
	EXPECT_FALSE(rd(VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	dev_close();
}

static bool broken_dev(void)
{
	return rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET;
}

TEST_MAIN()
