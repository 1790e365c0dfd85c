/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_disk.h: copies of a sandbox's writable disk (cube-vmm --disk).
 *
 * A sandbox's disk is a sparse file on the host.  Its copies (a snapshot's
 * or a checkpoint's disk.img, the disk put back by a rollback, a new
 * sandbox's disk made from a template's) cost only what was written: a
 * reflink where the file system has them, else only the data ranges are
 * copied and the holes stay holes.
 */
#ifndef CUBE_DISK_H
#define CUBE_DISK_H

#include <stdint.h>

/* The bounds of a disk file: a multiple of 4 KiB, 1 MiB to 16 TiB. */
#define CUBE_DISK_ALIGN		4096ULL
#define CUBE_DISK_MIN		(1ULL << 20)
#define CUBE_DISK_MAX		(16ULL << 40)
/* The name of the disk's copy in a snapshot or checkpoint directory. */
#define CUBE_DISK_FILE		"disk.img"

int cube_disk_copy(int src_fd, int dst_fd, uint64_t size);

#endif /* CUBE_DISK_H */
