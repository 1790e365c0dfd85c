// SPDX-License-Identifier: GPL-2.0
/*
 * connect_frame_fuzz: the Connect envelope decoder (e2b/connect_frame.c)
 * on any stream.  The first byte sets the payload limit and how the
 * stream is cut into the pieces fed to cf_decode(); the stream is decoded
 * once whole and once in those pieces, and both must give the same
 * messages, each the bytes its header declared (read back from the input
 * itself), NUL-terminated, within the limit, and the same error at the
 * same place.  Each message must also survive cf_frame() unchanged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connect_frame.h"
#include "fuzz.h"

struct result {
	uint32_t sum;		/* over the messages' flags, lengths, bytes */
	unsigned int nr;
	int err;
	size_t at;		/* input consumed when it ended */
};

static void check_msg(const uint8_t *in, size_t end, uint8_t flags,
		      const uint8_t *msg, size_t len, size_t max)
{
	uint8_t *framed;
	size_t flen;

	/* the message ends at @end: its header is 5 + len bytes before */
	if (len > max || end < CF_HDR_LEN + len || msg[len] ||
	    in[end - len - CF_HDR_LEN] != flags ||
	    memcmp(in + end - len, msg, len))
		abort();
	framed = cf_frame(flags, msg, len, &flen);
	if (!framed)
		return;
	if (flen != CF_HDR_LEN + len ||
	    memcmp(framed, in + end - len - CF_HDR_LEN, flen))
		abort();
	free(framed);
}

static struct result decode(const uint8_t *in, size_t size, size_t max,
			    size_t piece)
{
	struct result r = { 0 };
	struct cf_decoder d;
	size_t off = 0;

	cf_decoder_init(&d, max);
	while (off < size) {
		size_t n = size - off, used = 0;
		int ret;

		if (piece && n > piece)
			n = piece;
		ret = cf_decode(&d, in + off, n, &used);
		if (used > n)
			abort();
		off += used;
		if (ret < 0) {
			if (ret != -EMSGSIZE && ret != -EPROTO && ret != -ENOMEM)
				abort();
			r.err = ret;
			break;
		}
		if (ret == 1) {
			uint8_t flags, *msg;
			size_t len, i;

			msg = cf_take(&d, &flags, &len);
			if (!msg)
				abort();
			check_msg(in, off, flags, msg, len, d.max);
			r.sum = r.sum * 31 + flags + (uint32_t)len;
			for (i = 0; i < len; i++)
				r.sum = r.sum * 31 + msg[i];
			r.nr++;
			free(msg);
			if (cf_pending(&d))
				abort();
		} else if (used != n) {
			abort();	/* wanted more but left input unread */
		}
	}
	r.at = off;
	cf_decoder_free(&d);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result whole, cut;
	size_t max, piece;

	if (!size)
		return 0;
	/* 0 is the decoder's default, CF_DEFAULT_MAX */
	max = data[0] & 0x80 ? 0 : (size_t)(data[0] & 0x3f) * 4;
	piece = (data[0] & 0x40) ? 1 : (size_t)(data[0] & 0x0f) + 2;
	whole = decode(data + 1, size - 1, max, 0);
	cut = decode(data + 1, size - 1, max, piece);
	if (whole.sum != cut.sum || whole.nr != cut.nr ||
	    whole.err != cut.err || whole.at != cut.at)
		abort();
	return 0;
}
