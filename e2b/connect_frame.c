// SPDX-License-Identifier: GPL-2.0
/*
 * connect_frame.c: Connect-RPC envelopes and error codes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connect_frame.h"

void cf_put_header(uint8_t hdr[CF_HDR_LEN], uint8_t flags, uint32_t len)
{
	hdr[0] = flags;
	hdr[1] = len >> 24;
	hdr[2] = len >> 16;
	hdr[3] = len >> 8;
	hdr[4] = len;
}

uint8_t *cf_frame(uint8_t flags, const void *payload, size_t len,
		  size_t *out_len)
{
	uint8_t *f;

	if (len > UINT32_MAX)
		return NULL;
	f = malloc(CF_HDR_LEN + len);
	if (!f)
		return NULL;
	cf_put_header(f, flags, len);
	if (len)
		memcpy(f + CF_HDR_LEN, payload, len);
	*out_len = CF_HDR_LEN + len;
	return f;
}

void cf_decoder_init(struct cf_decoder *d, size_t max)
{
	memset(d, 0, sizeof(*d));
	d->max = max ? max : CF_DEFAULT_MAX;
}

void cf_decoder_free(struct cf_decoder *d)
{
	free(d->buf);
	d->buf = NULL;
	d->hdr_have = 0;
	d->have = 0;
	d->len = 0;
}

int cf_pending(const struct cf_decoder *d)
{
	return d->hdr_have > 0;
}

int cf_decode(struct cf_decoder *d, const void *data, size_t len,
	      size_t *used)
{
	const uint8_t *p = data;
	size_t n = 0, take;

	*used = 0;
	if (d->hdr_have == CF_HDR_LEN && d->buf && d->have == d->len)
		return 1;	/* previous message not taken yet */
	while (d->hdr_have < CF_HDR_LEN && n < len)
		d->hdr[d->hdr_have++] = p[n++];
	*used = n;
	if (d->hdr_have < CF_HDR_LEN)
		return 0;
	if (!d->buf) {
		d->flags = d->hdr[0];
		d->len = (size_t)d->hdr[1] << 24 | (size_t)d->hdr[2] << 16 |
			 (size_t)d->hdr[3] << 8 | d->hdr[4];
		if (d->flags & ~(CF_FLAG_END_STREAM))
			return -EPROTO;
		if (d->len > d->max)
			return -EMSGSIZE;
		d->buf = malloc(d->len + 1);
		if (!d->buf)
			return -ENOMEM;
		d->have = 0;
	}
	take = d->len - d->have;
	if (take > len - n)
		take = len - n;
	memcpy(d->buf + d->have, p + n, take);
	d->have += take;
	n += take;
	*used = n;
	return d->have == d->len;
}

uint8_t *cf_take(struct cf_decoder *d, uint8_t *flags, size_t *len)
{
	uint8_t *b = d->buf;

	if (!b || d->have != d->len)
		return NULL;
	b[d->len] = '\0';
	*flags = d->flags;
	*len = d->len;
	d->buf = NULL;
	d->hdr_have = 0;
	d->have = 0;
	d->len = 0;
	return b;
}

static const struct {
	const char *name;
	unsigned int http;
} cf_codes[__CF_CODE_MAX] = {
	[CF_OK]			= { "ok", 200 },
	[CF_CANCELED]		= { "canceled", 499 },
	[CF_UNKNOWN]		= { "unknown", 500 },
	[CF_INVALID_ARGUMENT]	= { "invalid_argument", 400 },
	[CF_DEADLINE_EXCEEDED]	= { "deadline_exceeded", 504 },
	[CF_NOT_FOUND]		= { "not_found", 404 },
	[CF_ALREADY_EXISTS]	= { "already_exists", 409 },
	[CF_PERMISSION_DENIED]	= { "permission_denied", 403 },
	[CF_RESOURCE_EXHAUSTED]	= { "resource_exhausted", 429 },
	[CF_FAILED_PRECONDITION] = { "failed_precondition", 400 },
	[CF_ABORTED]		= { "aborted", 409 },
	[CF_OUT_OF_RANGE]	= { "out_of_range", 400 },
	[CF_UNIMPLEMENTED]	= { "unimplemented", 501 },
	[CF_INTERNAL]		= { "internal", 500 },
	[CF_UNAVAILABLE]	= { "unavailable", 503 },
	[CF_DATA_LOSS]		= { "data_loss", 500 },
	[CF_UNAUTHENTICATED]	= { "unauthenticated", 401 },
};

const char *cf_code_name(enum cf_code code)
{
	if ((unsigned int)code >= __CF_CODE_MAX)
		return NULL;
	return cf_codes[code].name;
}

unsigned int cf_code_http(enum cf_code code)
{
	if ((unsigned int)code >= __CF_CODE_MAX)
		return 500;
	return cf_codes[code].http;
}

enum cf_code cf_code_from_errno(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return CF_OK;
	case ENOENT:
	case ESRCH:
		return CF_NOT_FOUND;
	case EEXIST:
		return CF_ALREADY_EXISTS;
	case EINVAL:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case E2BIG:
		return CF_INVALID_ARGUMENT;
	case EACCES:
	case EPERM:
		return CF_PERMISSION_DENIED;
	case ENOSPC:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case EAGAIN:
		return CF_RESOURCE_EXHAUSTED;
	case ETIMEDOUT:
		return CF_DEADLINE_EXCEEDED;
	case ECANCELED:
		return CF_CANCELED;
	case EOPNOTSUPP:
	case ENOSYS:
		return CF_UNIMPLEMENTED;
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case ENOTCONN:
	case ESHUTDOWN:
		return CF_UNAVAILABLE;
	case ENOTEMPTY:
	case EBUSY:
		return CF_FAILED_PRECONDITION;
	default:
		return CF_INTERNAL;
	}
}
