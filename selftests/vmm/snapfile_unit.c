// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of cube-vmm's snapshot state file format: a built file
 * parses back; every single-byte corruption and every truncation is
 * refused with its own error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cube_test.h"
#include "snapfile.h"

static void build(struct snap_buf *b)
{
	static const char a[] = "vcpu zero regs", c[] = "odd";
	uint8_t big[3000];
	unsigned int i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = i * 7;
	snap_buf_init(b);
	snap_add(b, SNAP_SEC_CONFIG, 0, a, sizeof(a));
	snap_add(b, SNAP_SEC_VCPU_REGS, 0, big, sizeof(big));
	snap_add(b, SNAP_SEC_VCPU_REGS, 1, c, 3);
	snap_add(b, SNAP_SEC_CLOCK, 0, NULL, 0);
	ASSERT_EQ(snap_finish(b, 128 << 20, 0x1234abcd, 2), 0);
}

TEST(round_trip)
{
	const struct snap_section *s;
	struct snap_image img;
	struct snap_buf b;
	char err[128];

	build(&b);
	ASSERT_EQ(snap_parse(b.data, b.len, &img, err, sizeof(err)), 0);
	EXPECT_EQ(img.nr, 5);
	EXPECT_EQ(img.hdr.mem_size, 128 << 20);
	EXPECT_EQ(img.hdr.mem_crc32, 0x1234abcd);
	EXPECT_EQ(img.hdr.nr_vcpus, 2);
	s = snap_find(&img, SNAP_SEC_VCPU_REGS, 1);
	ASSERT_TRUE(s != NULL);
	EXPECT_EQ(s->size, 3);
	EXPECT_EQ(memcmp(s->data, "odd", 3), 0);
	s = snap_find(&img, SNAP_SEC_VCPU_REGS, 0);
	ASSERT_TRUE(s != NULL);
	EXPECT_EQ(s->size, 3000);
	EXPECT_EQ(((const uint8_t *)s->data)[2999], (uint8_t)(2999 * 7));
	EXPECT_TRUE(snap_find(&img, SNAP_SEC_VCPU_REGS, 2) == NULL);
	s = snap_find(&img, SNAP_SEC_CLOCK, 0);
	ASSERT_TRUE(s != NULL);
	EXPECT_EQ(s->size, 0);
	snap_image_free(&img);
	snap_buf_free(&b);
}

TEST(every_byte_flip_refused)
{
	struct snap_image img;
	struct snap_buf b;
	char err[128];
	size_t i;

	build(&b);
	for (i = 0; i < b.len; i++) {
		int r;

		b.data[i] ^= 0x20;
		r = snap_parse(b.data, b.len, &img, err, sizeof(err));
		b.data[i] ^= 0x20;
		if (r == 0)
			TH_LOG("flip at %zu accepted", i);
		ASSERT_NE(r, 0);
		/* Past the magic, a flip is a checksum or shape error. */
		if (i >= 8 && i < 12)
			EXPECT_TRUE(r == -EPROTONOSUPPORT || r == -EBADMSG);
		else if (i >= 12)
			EXPECT_TRUE(r == -EBADMSG || r == -EINVAL ||
				    r == -ENODATA);
	}
	snap_buf_free(&b);
}

TEST(bad_magic)
{
	struct snap_image img;
	struct snap_buf b;
	char err[128];

	build(&b);
	b.data[0] = 'X';
	EXPECT_EQ(snap_parse(b.data, b.len, &img, err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "magic") != NULL);
	EXPECT_EQ(snap_parse("hello world, not a snapshot", 27, &img, err,
			     sizeof(err)), -EINVAL);
	snap_buf_free(&b);
}

TEST(other_version)
{
	struct snap_header *h;
	struct snap_image img;
	struct snap_buf b;
	char err[128];

	build(&b);
	h = (struct snap_header *)b.data;
	h->version = 2;
	h->header_crc32 = 0;
	h->header_crc32 = snap_crc32(h, sizeof(*h));
	EXPECT_EQ(snap_parse(b.data, b.len, &img, err, sizeof(err)),
		  -EPROTONOSUPPORT);
	EXPECT_TRUE(strstr(err, "version 2") != NULL);
	snap_buf_free(&b);
}

TEST(every_truncation_refused)
{
	struct snap_image img;
	struct snap_buf b;
	char err[128];
	size_t len;

	build(&b);
	for (len = 0; len < b.len; len++) {
		int r = snap_parse(b.data, len, &img, err, sizeof(err));

		ASSERT_EQ(r, -ENODATA);
	}
	EXPECT_TRUE(strstr(err, "truncated") != NULL);
	snap_buf_free(&b);
}

TEST(trailing_garbage_refused)
{
	struct snap_image img;
	struct snap_buf b;
	char err[128];
	uint8_t *p;

	build(&b);
	p = calloc(1, b.len + 8);
	memcpy(p, b.data, b.len);
	EXPECT_EQ(snap_parse(p, b.len + 8, &img, err, sizeof(err)), -EINVAL);
	free(p);
	snap_buf_free(&b);
}

TEST(section_checksum_names_section)
{
	struct snap_image img;
	struct snap_buf b;
	char err[128];

	build(&b);
	/* The second section's payload: header, sec header, 15+1 bytes, sec. */
	b.data[sizeof(struct snap_header) + 2 * sizeof(struct snap_sec_header) +
	       16 + 100] ^= 1;
	EXPECT_EQ(snap_parse(b.data, b.len, &img, err, sizeof(err)), -EBADMSG);
	EXPECT_TRUE(strstr(err, "section 1") != NULL);
	snap_buf_free(&b);
}

TEST_MAIN()
