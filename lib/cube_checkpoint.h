/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_checkpoint.h: what a supervisor does with the checkpoints of a
 * cube-vmm that did not exit cleanly.
 *
 * cube-vmm --checkpoint-dir DIR keeps each checkpoint in DIR/NAME/ (the
 * record format is in cube_checkpoint_rec.h) and deletes them when it
 * exits.  When it was killed, its module snapshots live on in cube.ko
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

#endif /* CUBE_CHECKPOINT_H */
