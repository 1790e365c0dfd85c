// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: what one user may hold in snapshots.
 *
 * A snapshot outlives the process that made it, and its pages are the
 * module's, so without a bound one user of /dev/cube could pin the host's
 * memory.  Each owner (the effective uid recorded at creation, see
 * cube_may_use()) has a count of linked snapshots and of the pages they
 * hold, bounded by the module parameters max_snapshots_per_user and
 * max_snapshot_mib_per_user (0: no bound).  A snapshot is charged when it
 * is linked, and creating it fails with EDQUOT when that would pass a
 * bound; it is uncharged when its memory is freed, which may be after its
 * id was deleted (while clones still use it).
 *
 * The pages themselves are also charged to the memory cgroup of the task
 * that made the snapshot (__GFP_ACCOUNT), and a clone's private copies to
 * the cgroup of the task that faults them in: the VMM of its sandbox.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "cube.h"

static unsigned int max_snapshots_per_user = 4096;
module_param(max_snapshots_per_user, uint, 0644);
MODULE_PARM_DESC(max_snapshots_per_user,
		 "snapshots one user may hold, deleted ones still in use included (0: no bound)");

static unsigned int max_snapshot_mib_per_user;
module_param(max_snapshot_mib_per_user, uint, 0644);
MODULE_PARM_DESC(max_snapshot_mib_per_user,
		 "MiB of snapshot memory one user may hold (0: no bound)");

struct cube_quota {
	struct list_head node;
	kuid_t uid;
	unsigned long snapshots;
	unsigned long pages;
};

/* One entry per user holding snapshots; few users, so a list. */
static LIST_HEAD(cube_quotas);
static DEFINE_SPINLOCK(cube_quota_lock);

static struct cube_quota *cube_quota_find(kuid_t uid)
{
	struct cube_quota *q;

	list_for_each_entry(q, &cube_quotas, node)
		if (uid_eq(q->uid, uid))
			return q;
	return NULL;
}

/**
 * cube_quota_charge() - charge one snapshot of @pages pages to @owner
 * @owner: the snapshot's owner
 * @pages: the pages it holds
 *
 * Return: 0, -EDQUOT when a bound would be passed, -ENOMEM.
 */
int cube_quota_charge(kuid_t owner, unsigned long pages)
{
	unsigned long max_pages = (unsigned long)READ_ONCE(max_snapshot_mib_per_user)
				  << (20 - PAGE_SHIFT);
	unsigned int max_snaps = READ_ONCE(max_snapshots_per_user);
	struct cube_quota *q, *new;
	int ret = 0;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return -ENOMEM;
	spin_lock(&cube_quota_lock);
	q = cube_quota_find(owner);
	if (!q) {
		q = new;
		new = NULL;
		q->uid = owner;
		list_add(&q->node, &cube_quotas);
	}
	if ((max_snaps && q->snapshots + 1 > max_snaps) ||
	    (max_pages && q->pages + pages > max_pages))
		ret = -EDQUOT;
	if (!ret) {
		q->snapshots++;
		q->pages += pages;
	} else if (!q->snapshots) {
		list_del(&q->node);
		new = q;		/* freed below */
	}
	spin_unlock(&cube_quota_lock);
	kfree(new);
	return ret;
}

/**
 * cube_quota_uncharge() - undo cube_quota_charge()
 * @owner: the snapshot's owner
 * @pages: the pages charged for it
 */
void cube_quota_uncharge(kuid_t owner, unsigned long pages)
{
	struct cube_quota *q;

	spin_lock(&cube_quota_lock);
	q = cube_quota_find(owner);
	if (!WARN_ON_ONCE(!q || !q->snapshots || q->pages < pages)) {
		q->snapshots--;
		q->pages -= pages;
		if (!q->snapshots)
			list_del(&q->node);
		else
			q = NULL;
	} else {
		q = NULL;
	}
	spin_unlock(&cube_quota_lock);
	kfree(q);
}

/* At module exit every snapshot is gone, so is every entry. */
void cube_quota_exit(void)
{
	struct cube_quota *q, *tmp;

	list_for_each_entry_safe(q, tmp, &cube_quotas, node) {
		pr_err("leak: quota of uid %u\n",
		       from_kuid(&init_user_ns, q->uid));
		list_del(&q->node);
		kfree(q);
	}
}
