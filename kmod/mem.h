/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest memory snapshots and copy-on-write clones: declarations shared by
 * snapshot.c, clone.c and snapshot_nl.c.
 */
#ifndef _CUBE_MEM_H
#define _CUBE_MEM_H

#include <linux/kref.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/xarray.h>

/*
 * A snapshot: immutable guest memory.  @pages maps a page offset to a
 * struct page the snapshot holds a reference on, or to CUBE_SNAP_ZERO (a
 * page the snapshot's clone zeroed although the parent has data there).
 * A missing entry falls through to @parent, and reads as zeros at the end
 * of the chain.  @ws is the recorded working set: offsets with value
 * entries, CUBE_WS_READ or CUBE_WS_WRITE.
 *
 * References: one while the id is linked in the snapshot table, one per
 * clone and one per child snapshot.
 */
struct cube_snapshot {
	struct kref ref;
	u64 id;
	kuid_t owner;			/* effective uid of the creator */
	bool charged;			/* to its owner's quota (quota.c) */
	pgoff_t nr_pages;
	unsigned int depth;
	struct cube_snapshot *parent;
	struct xarray pages;
	unsigned long held;		/* struct pages in @pages */
	struct xarray ws;
	atomic_long_t ws_pages;
	atomic_t clones;
	atomic_t children;
	struct xarray groups;		/* merge groups by id (merge.c) */
	struct mutex groups_lock;
};

/**
 * struct cube_merge_group - the pages clones of one snapshot share
 * @id: the group's id, as clones named it (%CUBE_IOC_CLONE_MERGE)
 * @snap: the snapshot (its clones in the group hold references on it)
 * @users: clones that named the group, under the snapshot's @groups_lock
 * @stable: offset -> the group's page there: referenced, never written,
 *	and never replaced or removed while the group lives, so a clone may
 *	read an entry without a lock
 * @seen: offset -> the last offer made there without a page to merge
 *	with: a value entry of the hash of the bytes and the offering clone
 */
struct cube_merge_group {
	u64 id;
	struct cube_snapshot *snap;
	unsigned int users;
	struct xarray stable;
	struct xarray seen;
};

#define CUBE_SNAP_ZERO		xa_mk_value(0)
#define CUBE_WS_READ		xa_mk_value(0)
#define CUBE_WS_WRITE		xa_mk_value(1)

/* snapshot.c */
struct cube_snapshot *cube_snapshot_get_id(u64 id);
struct cube_snapshot *cube_snapshot_get_owned(u64 id, int *err);
void cube_snapshot_put(struct cube_snapshot *snap);
int cube_snapshot_delete(u64 id, bool check_owner);
struct page *cube_snapshot_page(struct cube_snapshot *snap, pgoff_t index);
int cube_snapshot_record(struct cube_snapshot *snap, pgoff_t index,
			 bool write);
void cube_snapshot_info(struct cube_snapshot *snap,
			struct cube_snapshot_info *info);
struct cube_snapshot *cube_snapshot_next(unsigned long *index);
struct cube_snapshot *cube_snapshot_alloc(pgoff_t nr_pages,
					  struct cube_snapshot *parent);
int cube_snapshot_store(struct cube_snapshot *snap, pgoff_t index,
			struct page *page);
void cube_snapshot_unlink_all(void);

/* merge.c */
struct cube_merge_group *cube_merge_group_get(struct cube_snapshot *snap,
					      u64 id);
void cube_merge_group_put(struct cube_merge_group *group);
u32 cube_page_hash(struct page *page);

/* clone.c */
int cube_clone_fork(int fd, struct cube_snapshot **out);
long cube_clone_create_ioctl(void __user *argp);
int cube_clone_fs_init(void);
void cube_clone_fs_exit(void);

#endif /* _CUBE_MEM_H */
