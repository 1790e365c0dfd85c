/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Checkpoints and in-place rollbacks of a VM restored onto a cube.ko clone:
 * the same process and KVM VM go back to an earlier state.
 *
 * A checkpoint is a module snapshot of the live clone (its private pages
 * copied, the rest shared) plus the vCPU and device state, kept in memory
 * and written (lib/cube_checkpoint_rec.h) either to --checkpoint-dir/NAME/
 * or, as a jailed VMM must, into the record, state and disk files passed
 * with the request (CKPT_FD_*), with a copy of the writable disk when the
 * VM has one (held open for rollbacks: a rollback opens nothing).  A
 * rollback to the snapshot the VM was restored from resets the clone; to a
 * checkpoint, maps a new clone of its snapshot over the guest memory; the
 * disk is put back from the target's disk.img.
 * Everything that can fail is done before guest memory is touched.
 */
#ifndef CUBE_VMM_CHECKPOINT_H
#define CUBE_VMM_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cube_checkpoint_rec.h"
#include "snapshot.h"

#define CKPT_MAX		16

/* The descriptors a "checkpoint NAME" request may pass, in this order. */
enum {
	CKPT_FD_REC,		/* the record (CUBE_CKPT_REC_FILE) */
	CKPT_FD_STATE,		/* the state */
	CKPT_FD_DISK,		/* the disk's copy; left empty without one */
	CKPT_FDS
};

struct vm;

struct ckpt {
	char name[CUBE_CKPT_NAME_MAX + 1];
	struct cube_ckpt_rec rec;
	struct snap_restore st;		/* its state, parsed */
	int disk_fd;			/* its disk's copy, -1: no disk */
	bool in_dir;			/* its files are ours in dir_fd */
};

struct ckpt_set {
	struct vm *vm;
	const struct snap_config *cfg;
	int *mem_fd;			/* the guest memory's clone fd */
	bool mem_shared;		/* *mem_fd is a cube.ko clone */
	bool *paused;			/* paused by a control request */
	struct snap_restore *base;	/* the restore's state (NULL: boot) */
	uint64_t base_id;		/* its module snapshot */
	int base_disk_fd;		/* its disk.img (-1: none, no disk) */
	int dir_fd;			/* --checkpoint-dir, -1: none */
	int dev_fd;			/* /dev/cube, -1: none */
	/*
	 * An unmapped clone of base_id, or -1 while *mem_fd is one: the way
	 * back to the restore snapshot, which a jailed VMM (another uid than
	 * the snapshot's owner) may not clone itself.
	 */
	int base_spare_fd;
	bool want_spare;		/* keep one (a jailed VMM's checkpoints) */
	/*
	 * Private pages a rollback onto the clone's own snapshot keeps,
	 * the snapshot copied back in (CUBE_IOC_CLONE_REWIND); UINT64_MAX:
	 * all.  Set by the caller.
	 */
	uint64_t keep_pages;
	unsigned int nr;
	struct ckpt *c[CKPT_MAX];
	unsigned long checkpoints;	/* made since start */
	unsigned long rollbacks;
};

/*
 * Before the jail: opens dir (may be NULL) and, for memory on a clone,
 * /dev/cube and, with want_spare, a spare clone of the clone's
 * snapshot, noted as the base.  0 or -errno with err set.
 * base_disk_fd is the caller's to set, before or after; ckpt_fini()
 * closes it.
 */
int ckpt_init(struct ckpt_set *s, const char *dir, char *err, size_t errlen);
/* The control requests; each writes its one-line reply. */
void ckpt_checkpoint(struct ckpt_set *s, const char *name, const int *fds,
		     int nfds, char *reply, size_t len);
void ckpt_list(struct ckpt_set *s, char *reply, size_t len);
void ckpt_remove(struct ckpt_set *s, const char *name, char *reply,
		 size_t len);
void ckpt_rollback(struct ckpt_set *s, const char *name, char *reply,
		   size_t len);
/* Delete every checkpoint (module snapshots and files), close the fds. */
void ckpt_fini(struct ckpt_set *s);

#endif /* CUBE_VMM_CHECKPOINT_H */
