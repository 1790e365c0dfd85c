/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest memory of a restore as a cube.ko clone: the snapshot directory's
 * memory file becomes one module snapshot, shared by every restore of it.
 */
#ifndef CUBE_VMM_CUBE_CLONE_H
#define CUBE_VMM_CUBE_CLONE_H

#include <stddef.h>
#include <stdint.h>

/* Name of the file in the snapshot directory that records the snapshot. */
#define CUBE_CLONE_ID_FILE	"cube-snapshot-id"

/*
 * Returns a clone fd of the module snapshot of @dir's memory file @mem_fd
 * (@size bytes), creating and recording that snapshot on first use.
 * -ENODEV: /dev/cube is not there (use the file).  Other negative errnos
 * are failures, described in @err.
 */
int cube_clone_open(const char *dir, int mem_fd, uint64_t size, char *err,
		    size_t errlen);

#endif /* CUBE_VMM_CUBE_CLONE_H */
