// SPDX-License-Identifier: GPL-2.0
/* snap_fix.c: checksums of a mutated state file, recomputed; see snap_fix.h. */
#include <string.h>
#include <zlib.h>

#include "snap_fix.h"
#include "snapfile.h"

static uint32_t sec_crc(const struct snap_sec_header *sh, const uint8_t *data)
{
	struct snap_sec_header h = *sh;
	uLong crc;

	h.crc32 = 0;
	crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)&h, sizeof(h));
	if (h.size)
		crc = crc32(crc, data, (uInt)h.size);
	return (uint32_t)crc;
}

void snap_fix(uint8_t *buf, size_t len)
{
	struct snap_header h;
	size_t off;
	unsigned int i;

	if (len < sizeof(h))
		return;
	memcpy(&h, buf, sizeof(h));
	h.file_size = len;
	h.header_crc32 = 0;
	h.header_crc32 = snap_crc32(&h, sizeof(h));
	memcpy(buf, &h, sizeof(h));

	off = sizeof(h);
	for (i = 0; i < SNAP_MAX_SECTIONS; i++) {
		struct snap_sec_header sh;
		uint64_t padded;

		if (len - off < sizeof(sh))
			return;
		memcpy(&sh, buf + off, sizeof(sh));
		padded = (sh.size + 7) & ~7ULL;
		if (sh.size > len - off - sizeof(sh) ||
		    padded > len - off - sizeof(sh))
			return;
		sh.crc32 = sec_crc(&sh, buf + off + sizeof(sh));
		memcpy(buf + off, &sh, sizeof(sh));
		off += sizeof(sh) + padded;
		if (sh.type == SNAP_SEC_END)
			return;
	}
}
