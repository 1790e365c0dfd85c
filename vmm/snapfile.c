// SPDX-License-Identifier: GPL-2.0
/* Snapshot state file: building and parsing; see snapfile.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "snapfile.h"

#define SNAP_ALIGN	8

uint32_t snap_crc32(const void *data, size_t len)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	const uint8_t *p = data;

	/* zlib takes uInt lengths: feed it in chunks. */
	while (len) {
		uInt n = len > (1U << 30) ? (1U << 30) : (uInt)len;

		crc = crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)crc;
}

/* A section's crc32 covers its header (crc32 field zero) and payload. */
static uint32_t sec_crc(const struct snap_sec_header *sh, const void *data)
{
	struct snap_sec_header h = *sh;
	uLong crc;

	h.crc32 = 0;
	crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)&h, sizeof(h));
	while (data && h.size) {
		uInt n = h.size > (1U << 30) ? (1U << 30) : (uInt)h.size;

		crc = crc32(crc, data, n);
		data = (const uint8_t *)data + n;
		h.size -= n;
	}
	return (uint32_t)crc;
}

static void reserve(struct snap_buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return;
	if (more <= b->cap - b->len)
		return;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < more)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return;
	}
	memset(p + b->cap, 0, cap - b->cap);
	b->data = p;
	b->cap = cap;
}

void snap_buf_init(struct snap_buf *b)
{
	memset(b, 0, sizeof(*b));
	reserve(b, sizeof(struct snap_header));
	if (!b->err)
		b->len = sizeof(struct snap_header);
}

void snap_add(struct snap_buf *b, uint32_t type, uint32_t id,
	      const void *data, size_t len)
{
	struct snap_sec_header sh = { .type = type, .id = id, .size = len };
	size_t padded = (len + SNAP_ALIGN - 1) & ~(size_t)(SNAP_ALIGN - 1);

	if (!b->err && b->nr >= SNAP_MAX_SECTIONS - 1)
		b->err = -E2BIG;
	reserve(b, sizeof(sh) + padded);
	if (b->err)
		return;
	sh.crc32 = sec_crc(&sh, data);
	memcpy(b->data + b->len, &sh, sizeof(sh));
	if (len)
		memcpy(b->data + b->len + sizeof(sh), data, len);
	memset(b->data + b->len + sizeof(sh) + len, 0, padded - len);
	b->len += sizeof(sh) + padded;
	b->nr++;
}

int snap_finish(struct snap_buf *b, uint64_t mem_size, uint32_t mem_crc32,
		uint32_t nr_vcpus)
{
	struct snap_header h;

	snap_add(b, SNAP_SEC_END, 0, NULL, 0);
	if (b->err)
		return b->err;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SNAP_MAGIC, 8);
	h.version = SNAP_VERSION;
	h.header_size = sizeof(h);
	h.file_size = b->len;
	h.mem_size = mem_size;
	h.mem_crc32 = mem_crc32;
	h.nr_vcpus = nr_vcpus;
	h.nr_sections = b->nr;
	h.header_crc32 = snap_crc32(&h, sizeof(h));
	memcpy(b->data, &h, sizeof(h));
	return 0;
}

void snap_buf_free(struct snap_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

int snap_parse(const void *buf, size_t len, struct snap_image *img,
	       char *err, size_t errlen)
{
	static const uint8_t zero[SNAP_ALIGN];
	const uint8_t *p = buf;
	struct snap_header h;
	size_t off;
	uint32_t crc;
	unsigned int i;

	memset(img, 0, sizeof(*img));
	if (len < sizeof(h)) {
		if (len >= 8 && memcmp(p, SNAP_MAGIC, 8))
			return fail(err, errlen, -EINVAL,
				    "not a cube snapshot (bad magic)");
		return fail(err, errlen, -ENODATA,
			    "truncated: %zu bytes, header needs %zu", len,
			    sizeof(h));
	}
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, SNAP_MAGIC, 8))
		return fail(err, errlen, -EINVAL,
			    "not a cube snapshot (bad magic)");
	if (h.version != SNAP_VERSION)
		return fail(err, errlen, -EPROTONOSUPPORT,
			    "snapshot version %u, this cube-vmm reads %u",
			    h.version, SNAP_VERSION);
	crc = h.header_crc32;
	h.header_crc32 = 0;
	if (snap_crc32(&h, sizeof(h)) != crc)
		return fail(err, errlen, -EBADMSG, "header checksum mismatch");
	h.header_crc32 = crc;
	if (h.header_size != sizeof(h) || h.reserved || h.flags)
		return fail(err, errlen, -EINVAL, "bad header size %u",
			    h.header_size);
	if (h.file_size > len)
		return fail(err, errlen, -ENODATA,
			    "truncated: %zu of %llu bytes", len,
			    (unsigned long long)h.file_size);
	if (h.file_size < len)
		return fail(err, errlen, -EINVAL,
			    "%zu bytes of trailing garbage",
			    len - (size_t)h.file_size);
	if (!h.nr_sections || h.nr_sections > SNAP_MAX_SECTIONS)
		return fail(err, errlen, -EINVAL, "bad section count %u",
			    h.nr_sections);

	img->secs = calloc(h.nr_sections, sizeof(*img->secs));
	if (!img->secs)
		return fail(err, errlen, -ENOMEM, "out of memory");
	off = sizeof(h);
	for (i = 0; i < h.nr_sections; i++) {
		struct snap_sec_header sh;
		uint64_t padded;

		if (len - off < sizeof(sh)) {
			snap_image_free(img);
			return fail(err, errlen, -EINVAL,
				    "section %u header runs past the end", i);
		}
		memcpy(&sh, p + off, sizeof(sh));
		off += sizeof(sh);
		padded = (sh.size + SNAP_ALIGN - 1) & ~(uint64_t)(SNAP_ALIGN - 1);
		if (sh.size > len - off || padded > len - off) {
			snap_image_free(img);
			return fail(err, errlen, -EINVAL,
				    "section %u (type %#x) runs past the end",
				    i, sh.type);
		}
		if (sec_crc(&sh, p + off) != sh.crc32) {
			snap_image_free(img);
			return fail(err, errlen, -EBADMSG,
				    "section %u (type %#x) checksum mismatch",
				    i, sh.type);
		}
		if (sh.reserved || memcmp(p + off + sh.size, zero,
					  padded - sh.size)) {
			snap_image_free(img);
			return fail(err, errlen, -EINVAL,
				    "section %u (type %#x) has nonzero padding",
				    i, sh.type);
		}
		img->secs[i] = (struct snap_section) {
			.type = sh.type, .id = sh.id, .size = sh.size,
			.data = p + off,
		};
		off += padded;
		if (sh.type == SNAP_SEC_END) {
			i++;
			break;
		}
	}
	if (i != h.nr_sections || img->secs[i - 1].type != SNAP_SEC_END ||
	    off != len) {
		snap_image_free(img);
		return fail(err, errlen, -EINVAL,
			    "section table does not end with END at the end of the file");
	}
	img->nr = i;
	img->hdr = h;
	return 0;
}

const struct snap_section *snap_find(const struct snap_image *img,
				     uint32_t type, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < img->nr; i++)
		if (img->secs[i].type == type && img->secs[i].id == id)
			return &img->secs[i];
	return NULL;
}

void snap_image_free(struct snap_image *img)
{
	free(img->secs);
	img->secs = NULL;
	img->nr = 0;
}
