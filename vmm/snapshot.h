/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Snapshot and restore of a whole VM: a directory with two files,
 *   state   the state file (snapfile.h): vCPUs, irqchip, PIT, clock, devices
 *   memory  the guest memory, raw, mem_size bytes (sparse where zero)
 *   disk.img  with a writable disk: a copy of it (sparse, or a reflink)
 * Restore maps memory with MAP_PRIVATE: clones share the file's pages
 * copy-on-write.
 */
#ifndef CUBE_VMM_SNAPSHOT_H
#define CUBE_VMM_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "snapfile.h"
#include "virtio_net.h"

struct vm;

#define SNAP_CFG_BLK		(1U << 0)
#define SNAP_CFG_NET		(1U << 1)	/* virtio-net: a NET section */
#define SNAP_CFG_DISK		(1U << 2)	/* writable disk: a DISK section */
#define SNAP_CFG_ALL		(SNAP_CFG_BLK | SNAP_CFG_NET | SNAP_CFG_DISK)

/* The DISK section: the writable disk's size when saved. */
struct snap_disk_state {
	uint64_t size;			/* bytes, as cube_disk.h bounds it */
	uint32_t reserved[2];		/* 0 */
};

/* The VM's shape: what a restore must rebuild before loading state. */
struct snap_config {
	uint64_t mem_size;
	uint32_t nr_vcpus;
	uint32_t flags;			/* SNAP_CFG_* */
	uint64_t guest_cid;
	uint64_t blk_size;		/* bytes of the rootfs image */
	char rootfs[256];		/* its path when saved */
};

struct snap_restore {
	struct snap_image img;
	void *file;			/* the state file's bytes */
	size_t file_len;
	struct snap_config cfg;
	struct virtio_net_state net;	/* with SNAP_CFG_NET */
	struct snap_disk_state disk;	/* with SNAP_CFG_DISK */
	int mem_fd;
};

/* Pause first (vm_pause); writes dir/state, dir/memory, dir/disk.img. */
int snapshot_save(struct vm *vm, const struct snap_config *cfg,
		  const char *dir, char *err, size_t errlen);
/* The same into the open directory dfd. */
int snapshot_save_at(struct vm *vm, const struct snap_config *cfg, int dfd,
		     char *err, size_t errlen);
/*
 * The same into files the caller made and opened (a jailed VMM's only
 * way: it opens and names nothing): the state, the memory and the disk's
 * copy, each emptied first; the disk's stays empty for a VM without one.
 * The caller commits the snapshot (state.tmp renamed to state).
 */
enum { SNAP_FD_STATE, SNAP_FD_MEMORY, SNAP_FD_DISK, SNAP_FDS };
int snapshot_save_files(struct vm *vm, const struct snap_config *cfg,
			const int fds[SNAP_FDS], char *err, size_t errlen);
/* Read and check dir/state and dir/memory; fills r (mem_fd open). */
int snapshot_open(struct snap_restore *r, const char *dir, bool verify_mem,
		  char *err, size_t errlen);
/* Load the state into a VM built from r->cfg with its devices. */
int snapshot_load(struct vm *vm, struct snap_restore *r, char *err,
		  size_t errlen);
void snapshot_close(struct snap_restore *r);

/*
 * In-place checkpoints and rollbacks (checkpoint.c) of a paused VM:
 * snapshot_lock_devs() holds every device's lock, so no device thread
 * touches guest memory or queues in between.
 */
void snapshot_lock_devs(struct vm *vm, bool lock);
/* With the devices locked: the whole state file, in b (memory crc 0). */
int snapshot_save_state(struct vm *vm, const struct snap_config *cfg,
			struct snap_buf *b, char *err, size_t errlen);
/*
 * With the devices locked: a copy of the VM's writable disk (if it has
 * one) in a new file disk.img of directory dfd; 0 or -errno.
 */
int snapshot_save_disk(struct vm *vm, int dfd, char *err, size_t errlen);
/* Read and check the state file "state" of directory dfd (no memory). */
int snapshot_read_state(int dfd, struct snap_restore *r, char *err,
			size_t errlen);
/* The same from the state file open as fd (read from its start). */
int snapshot_read_state_fd(int fd, struct snap_restore *r, char *err,
			   size_t errlen);
/* Whether r's state fits this VM's shape and devices: 0 or -EINVAL. */
int snapshot_check_devs(struct vm *vm, const struct snap_restore *r,
			char *err, size_t errlen);
/* With the devices locked: load r into a VM that has run (CPUID kept). */
int snapshot_reload(struct vm *vm, struct snap_restore *r, char *err,
		    size_t errlen);

#endif /* CUBE_VMM_SNAPSHOT_H */
