// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: merge groups, the pages clones of one snapshot share.
 *
 * A group is named by the clones that merge into it (CUBE_IOC_CLONE_MERGE;
 * clone.c does the merging) and lives in its snapshot's @groups while one
 * of them is left.  Its pages are the clones' own pages that became the
 * group's: they are never written again and are released with the group,
 * when no clone that could map them is left.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/jhash.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "cube.h"
#include "mem.h"

/**
 * cube_merge_group_get() - a clone joins a merge group of its snapshot
 * @snap: the snapshot
 * @id: the group, non-zero
 *
 * Return: the group, made now if no clone named it yet, with one more
 * user; NULL without memory.
 */
struct cube_merge_group *cube_merge_group_get(struct cube_snapshot *snap,
					      u64 id)
{
	struct cube_merge_group *group;

	BUILD_BUG_ON(sizeof(unsigned long) < sizeof(u64));
	mutex_lock(&snap->groups_lock);
	group = xa_load(&snap->groups, id);
	if (group) {
		group->users++;
		goto out;
	}
	group = kzalloc(sizeof(*group), GFP_KERNEL_ACCOUNT);
	if (!group)
		goto out;
	group->id = id;
	group->snap = snap;
	group->users = 1;
	xa_init(&group->stable);
	xa_init(&group->seen);
	if (xa_insert(&snap->groups, id, group, GFP_KERNEL_ACCOUNT)) {
		kfree(group);
		group = NULL;
	}
out:
	mutex_unlock(&snap->groups_lock);
	return group;
}

static void cube_merge_group_free(struct cube_merge_group *group)
{
	unsigned long index;
	struct page *page;

	xa_for_each(&group->stable, index, page) {
		put_page(page);
		atomic64_dec(&cube_stats.shared_pages);
		cond_resched();		/* up to the snapshot's size */
	}
	xa_destroy(&group->stable);
	xa_destroy(&group->seen);
	kfree(group);
}

/**
 * cube_merge_group_put() - a clone of the group is gone
 * @group: the group, or NULL
 *
 * The last user's put frees the group and its pages: no clone is left
 * that maps them.
 */
void cube_merge_group_put(struct cube_merge_group *group)
{
	struct cube_snapshot *snap;
	bool last;

	if (!group)
		return;
	snap = group->snap;
	mutex_lock(&snap->groups_lock);
	last = !--group->users;
	if (last)
		xa_erase(&snap->groups, group->id);
	mutex_unlock(&snap->groups_lock);
	if (last)
		cube_merge_group_free(group);
}

/* A 32-bit hash of a page's bytes, to notice the same bytes offered twice. */
u32 cube_page_hash(struct page *page)
{
	u32 *p = kmap_local_page(page);
	u32 hash = jhash2(p, PAGE_SIZE / sizeof(u32), 0);

	kunmap_local(p);
	return hash;
}
