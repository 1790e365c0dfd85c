/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_checkpoint.h: what a supervisor does with the checkpoints of a
 * cube-vmm that did not exit cleanly.
 *
 * Each checkpoint of a cube-vmm is a directory DIR/NAME/ (the record
 * format is in cube_checkpoint_rec.h): made by the VMM (--checkpoint-dir
 * DIR), or by its caller, who passes the files with the request
 * (cube_checkpoint_files()), as a jailed VMM needs.  The VMM deletes its
 * module snapshots when it exits, and those it made the files of.  When it was killed, its module snapshots live on in cube.ko
 * until someone deletes them: cube_checkpoints_release() does.
 */
#ifndef CUBE_CHECKPOINT_H
#define CUBE_CHECKPOINT_H

#include <stddef.h>

/*
 * Delete every module snapshot recorded under @dir/ * / that cube.ko
 * confirms is still the recorded one (an id of an earlier module load, or
 * of a snapshot deleted since, is left alone), then remove @dir's
 * checkpoint directories and @dir itself.  Idempotent; 0 when @dir does
 * not exist.  Returns 0 or the first -errno, described in @err; what
 * could be released is released either way.  Not while a cube-vmm still
 * uses @dir.
 */
int cube_checkpoints_release(const char *dir, char *err, size_t errlen);
/*
 * The same for the one checkpoint @dir/@name/ (0 when it does not exist);
 * @dir itself stays.  Not while its cube-vmm still has that checkpoint.
 */
int cube_checkpoint_release(const char *dir, const char *name, char *err,
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
