/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_checkpoint_rec.h: the on-disk record of one cube-vmm checkpoint.
 *
 * Shared by cube-vmm (which writes it) and libcube's
 * cube_checkpoints_release() (which deletes what a killed VMM left):
 *
 *   DIR/NAME/state             the vCPU and device state (the state file
 *                              format of a snapshot, no memory file)
 *   DIR/NAME/cube-snapshot-id  "<id> <parent id> <size>\n": the cube.ko
 *                              snapshot of the guest memory, the snapshot
 *                              the clone it was taken of belongs to, and
 *                              the memory size in bytes
 *
 * The record outlives the module load it was made in.  Snapshot ids carry
 * the load's random generation, and an id is only trusted when cube.ko
 * confirms it names a snapshot of a clone with the recorded parent and
 * size (cube_ckpt_rec_confirmed()), so a stale record never deletes a
 * snapshot made since.
 */
#ifndef CUBE_CHECKPOINT_REC_H
#define CUBE_CHECKPOINT_REC_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/cube.h>

#define CUBE_CKPT_STATE_FILE	"state"
#define CUBE_CKPT_REC_FILE	"cube-snapshot-id"
#define CUBE_CKPT_REC_TMP	"cube-snapshot-id.tmp"
#define CUBE_CKPT_NAME_MAX	64
/* Every file a checkpoint directory may hold (the rest is not ours). */
#define CUBE_CKPT_DISK_FILE	"disk.img"	/* a VM with a writable disk */
#define CUBE_CKPT_FILES		{ CUBE_CKPT_STATE_FILE, CUBE_CKPT_REC_FILE, \
				  CUBE_CKPT_REC_TMP, CUBE_CKPT_STATE_FILE ".tmp", \
				  CUBE_CKPT_DISK_FILE }

struct cube_ckpt_rec {
	uint64_t id;
	uint64_t parent_id;
	uint64_t size;
};

/* 1-64 of [A-Za-z0-9._-], not starting with '.'. */
static inline int cube_ckpt_name_ok(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n > CUBE_CKPT_NAME_MAX || name[0] == '.')
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

/* The record's text in buf; its length, or -1 when buf is too small. */
static inline int cube_ckpt_rec_format(const struct cube_ckpt_rec *rec,
				       char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			 rec->id, rec->parent_id, rec->size);

	return n < 0 || (size_t)n >= len ? -1 : n;
}

/* 0 and *rec filled, or -EINVAL for anything that is not a record. */
static inline int cube_ckpt_rec_parse(const char *buf, struct cube_ckpt_rec *rec)
{
	char end;

	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 "%c", &rec->id,
		   &rec->parent_id, &rec->size, &end) != 4 || end != '\n' ||
	    !rec->id || !rec->parent_id || !rec->size)
		return -EINVAL;
	return 0;
}

/*
 * Whether cube.ko (the /dev/cube fd dev) confirms that rec names a live
 * snapshot of a clone of rec->parent_id, rec->size bytes: 1 confirmed,
 * 0 not (no such id in this load, or another snapshot), or -errno.
 */
static inline int cube_ckpt_rec_confirmed(int dev, const struct cube_ckpt_rec *rec)
{
	struct cube_snapshot_info info = { .id = rec->id };

	if (ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info))
		return errno == ENOENT ? 0 : -errno;
	return info.id == rec->id && info.depth >= 2 &&
	       info.parent_id == rec->parent_id && info.size == rec->size;
}

#endif /* CUBE_CHECKPOINT_REC_H */
