/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_checkpoint.h: what a supervisor does with the checkpoints of a
 * cube-vmm that did not exit cleanly.
 *
 * Each checkpoint of a cube-vmm is a directory DIR/NAME/ (the record
 * format is in cube_checkpoint_rec.h): made by the VMM (--checkpoint-dir
 * DIR), or by its caller, who passes the files with the request
 * (cube_checkpoint_files()), as a jailed VMM needs.  The VMM deletes its
 * module snapshots when it exits.  When it was killed, they live on in
 * cube.ko until someone deletes them: cube_checkpoints_release() does.
 * A record is written by the VMM, so it is trusted for nothing: what it
 * names is deleted only with the VMM's own uid.
 */
#ifndef CUBE_CHECKPOINT_H
#define CUBE_CHECKPOINT_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Delete every module snapshot recorded under @dir/ * / that cube.ko
 * confirms is still the recorded one (an id of an earlier module load, or
 * of a snapshot deleted since, is left alone), then remove @dir's
 * checkpoint directories and @dir itself.  The deletions are made as
 * @owner, the uid the VMM ran as (a child takes it when it is not ours,
 * which needs root), so a record its VMM forged to name another user's
 * snapshot deletes nothing.  Idempotent; 0 when @dir does not exist.  Returns 0 or the first
 * -errno, described in @err; what could be released is released either
 * way, and a snapshot that could not be deleted keeps its record.  Not
 * while a cube-vmm still uses @dir.
 */
int cube_checkpoints_release(const char *dir, uid_t owner, char *err,
			     size_t errlen);
/*
 * Remove checkpoint @dir/@name/'s files and directory, deleting nothing in
 * cube.ko: what a caller does once the VMM is done with the checkpoint
 * (removed it, or never made it).  0 (also when it does not exist), or
 * -EBUSY when its record names a live snapshot (the VMM still has it, or
 * forged it): it stays for cube_checkpoints_release() at the sandbox's
 * end.  @dir itself stays.
 */
int cube_checkpoint_remove(const char *dir, const char *name, char *err,
			   size_t errlen);
/*
 * For a "checkpoint NAME" request to a VMM that opens no file itself (a
 * jailed one): makes @dir/@name/ (mode 0700) holding its record, state
 * and disk files, new, empty and open read-write in @fds[0..2], in the
 * order the request passes them.  0, -EEXIST when @dir/@name exists, or
 * -errno with nothing left behind.  The caller closes the fds.
 */
int cube_checkpoint_files(const char *dir, const char *name, int fds[3]);

#endif /* CUBE_CHECKPOINT_H */
