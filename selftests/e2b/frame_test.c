// SPDX-License-Identifier: GPL-2.0
/*
 * frame_test: Connect-RPC envelope encoding and incremental decoding,
 * including truncated, oversized and malformed envelopes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connect_frame.h"
#include "cube_test.h"

TEST(header_big_endian)
{
	uint8_t h[CF_HDR_LEN];

	cf_put_header(h, CF_FLAG_END_STREAM, 0x01020304);
	ASSERT_EQ(h[0], 0x02);
	ASSERT_EQ(h[1], 0x01);
	ASSERT_EQ(h[2], 0x02);
	ASSERT_EQ(h[3], 0x03);
	ASSERT_EQ(h[4], 0x04);
}

TEST(frame_roundtrip)
{
	struct cf_decoder d;
	size_t len, used, plen;
	uint8_t *f, *p, flags;

	f = cf_frame(0, "{\"a\":1}", 7, &len);
	ASSERT_TRUE(f != NULL);
	ASSERT_EQ(len, 12);
	cf_decoder_init(&d, 0);
	ASSERT_EQ(cf_decode(&d, f, len, &used), 1);
	ASSERT_EQ(used, len);
	p = cf_take(&d, &flags, &plen);
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(flags, 0);
	ASSERT_EQ(plen, 7);
	ASSERT_STREQ((char *)p, "{\"a\":1}");
	ASSERT_FALSE(cf_pending(&d));
	free(p);
	free(f);
	cf_decoder_free(&d);
}

TEST(byte_at_a_time)
{
	struct cf_decoder d;
	size_t len, used, i, plen;
	uint8_t *f, *p = NULL, flags;
	int r = 0;

	f = cf_frame(CF_FLAG_END_STREAM, "{}", 2, &len);
	ASSERT_TRUE(f != NULL);
	cf_decoder_init(&d, 0);
	for (i = 0; i < len; i++) {
		r = cf_decode(&d, f + i, 1, &used);
		ASSERT_EQ(used, 1);
		if (i < len - 1) {
			ASSERT_EQ(r, 0);
			ASSERT_TRUE(cf_pending(&d));
		}
	}
	ASSERT_EQ(r, 1);
	p = cf_take(&d, &flags, &plen);
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(flags, CF_FLAG_END_STREAM);
	ASSERT_STREQ((char *)p, "{}");
	free(p);
	free(f);
	cf_decoder_free(&d);
}

TEST(two_messages_in_one_buffer)
{
	uint8_t buf[64], *p, flags;
	struct cf_decoder d;
	size_t used, plen, off = 0;

	cf_put_header(buf, 0, 3);
	memcpy(buf + 5, "abc", 3);
	cf_put_header(buf + 8, 0, 0);
	cf_decoder_init(&d, 0);
	ASSERT_EQ(cf_decode(&d, buf, 8 + 5, &used), 1);
	ASSERT_EQ(used, 8);
	/* not taken yet: the decoder refuses more input */
	ASSERT_EQ(cf_decode(&d, buf + 8, 5, &off), 1);
	ASSERT_EQ(off, 0);
	p = cf_take(&d, &flags, &plen);
	ASSERT_STREQ((char *)p, "abc");
	free(p);
	ASSERT_EQ(cf_decode(&d, buf + 8, 5, &used), 1);
	ASSERT_EQ(used, 5);
	p = cf_take(&d, &flags, &plen);
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(plen, 0);
	ASSERT_STREQ((char *)p, "");
	free(p);
	cf_decoder_free(&d);
}

TEST(truncated_is_pending)
{
	struct cf_decoder d;
	uint8_t buf[16];
	size_t used;

	cf_put_header(buf, 0, 10);
	memcpy(buf + 5, "abc", 3);
	cf_decoder_init(&d, 0);
	ASSERT_EQ(cf_decode(&d, buf, 8, &used), 0);
	ASSERT_EQ(used, 8);
	ASSERT_TRUE(cf_pending(&d));
	cf_decoder_free(&d);
	ASSERT_FALSE(cf_pending(&d));
}

TEST(oversized_rejected)
{
	struct cf_decoder d;
	uint8_t buf[5];
	size_t used;

	cf_put_header(buf, 0, 101);
	cf_decoder_init(&d, 100);
	ASSERT_EQ(cf_decode(&d, buf, 5, &used), -EMSGSIZE);
	cf_decoder_free(&d);
	/* the largest length field is refused by the default limit */
	cf_put_header(buf, 0, 0xffffffff);
	cf_decoder_init(&d, 0);
	ASSERT_EQ(cf_decode(&d, buf, 5, &used), -EMSGSIZE);
	cf_decoder_free(&d);
}

TEST(compressed_and_unknown_flags_rejected)
{
	struct cf_decoder d;
	uint8_t buf[5];
	size_t used;

	cf_put_header(buf, CF_FLAG_COMPRESSED, 1);
	cf_decoder_init(&d, 0);
	ASSERT_EQ(cf_decode(&d, buf, 5, &used), -EPROTO);
	cf_decoder_free(&d);
	cf_put_header(buf, 0x80, 1);
	cf_decoder_init(&d, 0);
	ASSERT_EQ(cf_decode(&d, buf, 5, &used), -EPROTO);
	cf_decoder_free(&d);
}

TEST(take_without_message)
{
	struct cf_decoder d;
	size_t len;
	uint8_t flags;

	cf_decoder_init(&d, 0);
	ASSERT_TRUE(cf_take(&d, &flags, &len) == NULL);
	cf_decoder_free(&d);
}

TEST(codes)
{
	ASSERT_STREQ(cf_code_name(CF_NOT_FOUND), "not_found");
	ASSERT_STREQ(cf_code_name(CF_UNAUTHENTICATED), "unauthenticated");
	ASSERT_STREQ(cf_code_name(CF_INVALID_ARGUMENT), "invalid_argument");
	ASSERT_TRUE(cf_code_name(__CF_CODE_MAX) == NULL);
	ASSERT_EQ(cf_code_http(CF_NOT_FOUND), 404);
	ASSERT_EQ(cf_code_http(CF_UNAUTHENTICATED), 401);
	ASSERT_EQ(cf_code_http(CF_INVALID_ARGUMENT), 400);
	ASSERT_EQ(cf_code_http(CF_UNAVAILABLE), 503);
	ASSERT_EQ(cf_code_http(CF_RESOURCE_EXHAUSTED), 429);
	ASSERT_EQ(cf_code_from_errno(-ENOENT), CF_NOT_FOUND);
	ASSERT_EQ(cf_code_from_errno(EEXIST), CF_ALREADY_EXISTS);
	ASSERT_EQ(cf_code_from_errno(-EINVAL), CF_INVALID_ARGUMENT);
	ASSERT_EQ(cf_code_from_errno(-EACCES), CF_PERMISSION_DENIED);
	ASSERT_EQ(cf_code_from_errno(-ECONNRESET), CF_UNAVAILABLE);
	ASSERT_EQ(cf_code_from_errno(-EIO), CF_INTERNAL);
	ASSERT_EQ(cf_code_from_errno(0), CF_OK);
}

TEST_MAIN()
