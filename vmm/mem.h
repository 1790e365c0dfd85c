/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest physical memory: one slot at guest address 0.  Every address the
 * guest hands the VMM goes through gm_ptr(), which refuses ranges that are
 * not wholly inside the slot (overflow-safe).
 */
#ifndef CUBE_VMM_MEM_H
#define CUBE_VMM_MEM_H

#include <stdint.h>

struct guest_mem {
	uint8_t *host;
	uint64_t size;
};

static inline void *gm_ptr(const struct guest_mem *gm, uint64_t gpa,
			   uint64_t len)
{
	if (gpa > gm->size || len > gm->size - gpa)
		return NULL;
	return gm->host + gpa;
}

#endif /* CUBE_VMM_MEM_H */
