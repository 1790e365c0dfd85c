// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of cube-vmm's split virtqueue parser against a fake
 * guest memory: good chains, then every kind of hostile ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_ring.h>

#include "cube_test.h"
#include "virtq.h"

#define MEM_SIZE	(1 << 20)
#define NUM		8
#define DESC_GPA	0x1000
#define AVAIL_GPA	0x2000
#define USED_GPA	0x3000
#define BUF_GPA		0x10000

struct fake {
	struct guest_mem gm;
	struct virtq vq;
	struct virtq_chain c;
};

static struct vring_desc *desc(struct fake *f)
{
	return (void *)(f->gm.host + DESC_GPA);
}

static struct vring_avail *avail(struct fake *f)
{
	return (void *)(f->gm.host + AVAIL_GPA);
}

static struct vring_used *used(struct fake *f)
{
	return (void *)(f->gm.host + USED_GPA);
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->gm.host = calloc(1, MEM_SIZE);
	f->gm.size = MEM_SIZE;
	f->vq.num = NUM;
	f->vq.desc_addr = DESC_GPA;
	f->vq.avail_addr = AVAIL_GPA;
	f->vq.used_addr = USED_GPA;
	ASSERT_EQ(virtq_activate(&f->vq, &f->gm), 0);
	f->vq.ready = true;
}

static void set_desc(struct fake *f, int i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	desc(f)[i].addr = addr;
	desc(f)[i].len = len;
	desc(f)[i].flags = flags;
	desc(f)[i].next = next;
}

static void offer(struct fake *f, uint16_t head)
{
	struct vring_avail *a = avail(f);

	a->ring[a->idx % NUM] = head;
	a->idx++;
}

TEST(empty_ring)
{
	struct fake f;

	fake_init(&f);
	EXPECT_FALSE(virtq_has_avail(&f.vq));
	EXPECT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 0);
	EXPECT_FALSE(f.vq.broken);
}

TEST(good_chain_and_push)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 3, BUF_GPA, 16, VRING_DESC_F_NEXT, 5);
	set_desc(&f, 5, BUF_GPA + 16, 512, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
	set_desc(&f, 1, BUF_GPA + 600, 1, VRING_DESC_F_WRITE, 0);
	offer(&f, 3);
	EXPECT_TRUE(virtq_has_avail(&f.vq));
	ASSERT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 1);
	EXPECT_EQ(f.c.head, 3);
	EXPECT_EQ(f.c.nr_out, 1);
	EXPECT_EQ(f.c.nr_in, 2);
	EXPECT_EQ(f.c.out_len, 16);
	EXPECT_EQ(f.c.in_len, 513);
	EXPECT_TRUE(f.c.iov[0].iov_base == f.gm.host + BUF_GPA);
	EXPECT_TRUE(f.c.iov[2].iov_base == f.gm.host + BUF_GPA + 600);
	virtq_push(&f.vq, f.c.head, 513);
	EXPECT_EQ(used(&f)->idx, 1);
	EXPECT_EQ(used(&f)->ring[0].id, 3);
	EXPECT_EQ(used(&f)->ring[0].len, 513);
	EXPECT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 0);
}

TEST(unpop_gives_same_chain)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 2, BUF_GPA, 64, VRING_DESC_F_WRITE, 0);
	offer(&f, 2);
	ASSERT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 1);
	virtq_unpop(&f.vq);
	ASSERT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 1);
	EXPECT_EQ(f.c.head, 2);
}

TEST(ring_wraps_many_times)
{
	struct fake f;
	int i;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 8, 0, 0);
	for (i = 0; i < 70000; i++) {
		offer(&f, 0);
		ASSERT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 1);
		virtq_push(&f.vq, 0, 0);
	}
	EXPECT_EQ(used(&f)->idx, (uint16_t)70000);
	EXPECT_FALSE(f.vq.broken);
}

static void expect_broken(struct fake *f)
{
	EXPECT_EQ(virtq_pop(&f->vq, &f->gm, &f->c), -EINVAL);
	EXPECT_TRUE(f->vq.broken);
	/* Broken stays broken: nothing more is taken, nothing hangs. */
	EXPECT_EQ(virtq_pop(&f->vq, &f->gm, &f->c), -EINVAL);
	EXPECT_FALSE(virtq_has_avail(&f->vq));
	virtq_push(&f->vq, 0, 0);
	EXPECT_EQ(used(f)->idx, 0);
}

TEST(loop_two)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1);
	set_desc(&f, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(self_loop)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 4, BUF_GPA, 8, VRING_DESC_F_NEXT, 4);
	offer(&f, 4);
	expect_broken(&f);
}

TEST(chain_uses_whole_ring_ok)
{
	struct fake f;
	int i;

	fake_init(&f);
	for (i = 0; i < NUM; i++)
		set_desc(&f, i, BUF_GPA + i * 8, 8,
			 i < NUM - 1 ? VRING_DESC_F_NEXT : 0, i + 1);
	offer(&f, 0);
	ASSERT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 1);
	EXPECT_EQ(f.c.nr_out, NUM);
}

TEST(huge_length)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 0xffffffff, 0, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(address_outside_memory)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, MEM_SIZE, 1, 0, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(address_ends_past_memory)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, MEM_SIZE - 4, 8, 0, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(address_wraps)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, 0xfffffffffffff000ULL, 0x2000, 0, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(last_byte_of_memory_ok)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, MEM_SIZE - 1, 1, 0, 0);
	offer(&f, 0);
	EXPECT_EQ(virtq_pop(&f.vq, &f.gm, &f.c), 1);
}

TEST(next_out_of_range)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, NUM);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(head_out_of_range)
{
	struct fake f;

	fake_init(&f);
	offer(&f, NUM + 3);
	expect_broken(&f);
}

TEST(avail_index_jumps)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 8, 0, 0);
	avail(&f)->idx = NUM + 1;
	expect_broken(&f);
}

TEST(indirect_refused)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 16, VRING_DESC_F_INDIRECT, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(readable_after_writable)
{
	struct fake f;

	fake_init(&f);
	set_desc(&f, 0, BUF_GPA, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(&f, 1, BUF_GPA + 8, 8, 0, 0);
	offer(&f, 0);
	expect_broken(&f);
}

TEST(activate_bad_layouts)
{
	struct guest_mem gm = { calloc(1, MEM_SIZE), MEM_SIZE };
	struct virtq vq;

	memset(&vq, 0, sizeof(vq));
	vq.desc_addr = DESC_GPA;
	vq.avail_addr = AVAIL_GPA;
	vq.used_addr = USED_GPA;
	vq.num = 0;
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.num = 3;
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.num = VIRTQ_MAX_SIZE * 2;
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.num = NUM;
	vq.desc_addr = DESC_GPA + 8;		/* misaligned */
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.desc_addr = MEM_SIZE - 16;		/* runs past the end */
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.desc_addr = DESC_GPA;
	vq.used_addr = 0xfffffffffffff000ULL;
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.used_addr = USED_GPA + 2;		/* misaligned */
	EXPECT_EQ(virtq_activate(&vq, &gm), -EINVAL);
	vq.used_addr = USED_GPA;
	EXPECT_EQ(virtq_activate(&vq, &gm), 0);
	free(gm.host);
}

TEST(iov_copies_respect_bounds)
{
	char a[4] = "abc", b[8] = "defghij", out[16];
	struct iovec iov[2] = { { a, 3 }, { b, 7 } };

	memset(out, 0, sizeof(out));
	EXPECT_EQ(iov_to_buf(iov, 2, 2, out, sizeof(out)), 8);
	EXPECT_STREQ(out, "cdefghij");
	EXPECT_EQ(iov_to_buf(iov, 2, 20, out, sizeof(out)), 0);
	EXPECT_EQ(buf_to_iov(iov, 2, 1, "XYZW", 4), 4);
	EXPECT_EQ(memcmp(a, "aXY", 3), 0);
	EXPECT_EQ(memcmp(b, "ZWfghij", 7), 0);
}

TEST(iov_skip_leaves_out_the_first_bytes)
{
	char a[4], b[8], c[1];
	struct iovec iov[4] = { { a, 4 }, { b, 0 }, { b, 8 }, { c, 1 } }, out[4];

	EXPECT_EQ(iov_skip(iov, 4, 0, out), 3);	/* empty buffers dropped */
	EXPECT_EQ(iov_skip(iov, 4, 6, out), 2);
	EXPECT_TRUE(out[0].iov_base == b + 2);
	EXPECT_EQ(out[0].iov_len, 6);
	EXPECT_TRUE(out[1].iov_base == c);
	EXPECT_EQ(iov_skip(iov, 4, 12, out), 1);
	EXPECT_EQ(iov_skip(iov, 4, 13, out), 0);
	EXPECT_EQ(iov_skip(iov, 4, 100, out), 0);
}

TEST(notify_and_interrupt_flags)
{
	struct fake f;

	fake_init(&f);
	EXPECT_TRUE(virtq_want_interrupt(&f.vq));
	avail(&f)->flags = VRING_AVAIL_F_NO_INTERRUPT;
	EXPECT_FALSE(virtq_want_interrupt(&f.vq));
	virtq_set_notify(&f.vq, false);
	EXPECT_EQ(used(&f)->flags, VRING_USED_F_NO_NOTIFY);
	virtq_set_notify(&f.vq, true);
	EXPECT_EQ(used(&f)->flags, 0);
	/* A broken queue is left alone. */
	f.vq.broken = true;
	virtq_set_notify(&f.vq, false);
	EXPECT_EQ(used(&f)->flags, 0);
	avail(&f)->flags = 0;
	EXPECT_FALSE(virtq_want_interrupt(&f.vq));
}

TEST_MAIN()
