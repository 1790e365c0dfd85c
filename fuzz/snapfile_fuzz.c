// SPDX-License-Identifier: GPL-2.0
/*
 * snapfile_fuzz: the snapshot state file parser, snap_parse(), on any
 * bytes.  The first byte chooses: odd, the checksums are first made right
 * (snap_fix), so mutations reach the section walk; even, the rest is
 * parsed as it is.  A file the parser accepts must index sections that lie
 * inside it, end with END, and be found again by snap_find().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "snap_fix.h"
#include "snapfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snap_image img;
	char err[160];
	uint8_t *buf;
	unsigned int i;
	int ret;

	if (!size)
		return 0;
	/* a copy of exactly the file's size: reads past it are caught */
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	if (data[0] & 1)
		snap_fix(buf, size - 1);
	err[0] = 0;
	ret = snap_parse(buf, size - 1, &img, err, sizeof(err));
	if (ret) {
		if (ret != -EINVAL && ret != -EPROTONOSUPPORT &&
		    ret != -ENODATA && ret != -EBADMSG && ret != -ENOMEM)
			abort();
		if (!err[0] || img.secs || img.nr)
			abort();	/* a refusal says why and holds nothing */
	} else {
		if (!img.nr || img.secs[img.nr - 1].type != SNAP_SEC_END)
			abort();
		for (i = 0; i < img.nr; i++) {
			const struct snap_section *s = &img.secs[i];
			const uint8_t *d = s->data;

			if (d < buf || d > buf + size - 1 ||
			    s->size > (uint64_t)(buf + size - 1 - d))
				abort();
			if (!snap_find(&img, s->type, s->id))
				abort();
		}
		snap_image_free(&img);
	}
	free(buf);
	return 0;
}
