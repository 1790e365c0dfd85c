/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_sandbox_disk.h: the writable disks of running sandboxes.
 *
 * A sandbox of a template with a disk gets $CUBE_STATE_DIR/disks/<id>.img:
 * a sparse (or, on XFS and btrfs, reflinked) copy of the disk.img of the
 * snapshot it starts from, possibly larger.  The file is on the state
 * directory's file system, not in the run directory's tmpfs: what a guest
 * writes costs host disk, never host memory.
 *
 * Whoever holds the file open holds a shared flock(2) on it (cube-shim,
 * and cube-vmm through the inherited descriptor), so a disk whose holders
 * all died unlocks by itself: the next create removes it before it counts
 * what the live disks may grow to.  That sum, plus the new disk, must fit
 * the host-wide limit: $CUBE_DISK_LIMIT (a size, e.g. "200G"), or else what
 * the file system has available plus what the live disks already hold, so
 * that every disk filling up cannot run the host out of space.
 */
#ifndef CUBE_SANDBOX_DISK_H
#define CUBE_SANDBOX_DISK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cube_disk.h"	/* CUBE_DISK_FILE: the disk in a snapshot */

#define CUBE_DISKS_DIR		"disks"

/**
 * cube_sandbox_disk_create() - make sandbox @id's disk from a snapshot's
 * @id: the sandbox
 * @snapshot: the snapshot directory it starts from (holds disk.img)
 * @size: the disk's size in bytes; 0: the snapshot's
 * @size_out: the size it got
 * @err: a one-line reason on failure (CUBE_ERR_MAX bytes)
 *
 * Return: an O_RDWR descriptor (close-on-exec, holding the shared lock), or
 * -ENOENT when the snapshot has no disk, -EINVAL when @size is smaller than
 * the snapshot's disk, -ENOSPC when the host-wide limit is reached, another
 * -errno.  On failure no file is left.
 */
int cube_sandbox_disk_create(uint64_t id, const char *snapshot, uint64_t size,
			     uint64_t *size_out, char *err);

/* Removes sandbox @id's disk and closes @fd (-1: not open here). */
void cube_sandbox_disk_remove(uint64_t id, int fd);

/* The size of sandbox @id's disk in bytes; 0 when it has none. */
uint64_t cube_sandbox_disk_size(uint64_t id);
/* lstat(2) of sandbox @id's disk: 0, or -ENOENT when it has none. */
int cube_sandbox_disk_stat(uint64_t id, struct stat *st);

#endif /* CUBE_SANDBOX_DISK_H */
