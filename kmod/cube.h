/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube.ko internal declarations shared between the module's files.
 */
#ifndef _CUBE_INTERNAL_H
#define _CUBE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/cube.h>
#include <net/netlink.h>

struct sk_buff;
struct netlink_callback;
struct genl_info;

/*
 * Module-wide counters, reported by CUBE_CMD_GET_STATS.  Every object
 * increments its counter when created and decrements it when freed; at
 * module exit they must all be zero, or the module reports a leak.
 */
struct cube_stats {
	atomic64_t sandboxes;
	atomic64_t pools;
	atomic64_t snapshots;
	atomic64_t clones;
	atomic64_t shared_pages;	/* pages held by snapshots */
	atomic64_t private_pages;	/* pages held privately by clones */
};
extern struct cube_stats cube_stats;

/* main.c */
void cube_check_leaks(void);

/**
 * cube_may_use() - whether the caller may use an object that @owner made
 * @owner: the effective uid recorded when the object was created
 *
 * Snapshots and pools belong to the effective uid that created them; only
 * that uid, or an administrator (CAP_NET_ADMIN, as the family's mutating
 * netlink commands require), may clone, read, delete or take from them.
 */
static inline bool cube_may_use(kuid_t owner)
{
	return uid_eq(current_euid(), owner) || capable(CAP_NET_ADMIN);
}

/* sandbox.c, pool.c, netlink.c: sandboxes, pools, the genl family */
int cube_sandbox_init(void);
void cube_sandbox_exit(void);
long cube_sandbox_dev_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg);
int cube_genl_init(void);
void cube_genl_exit(void);

/*
 * Netlink handlers of the memory side, called by the genl family's
 * CUBE_CMD_GET_SNAPSHOT and CUBE_CMD_DEL_SNAPSHOT ops.
 * cube_snapshot_nl_policy is the policy of the CUBE_A_SNAPSHOT nest
 * (enum cube_snapshot_attr, CUBE_SNAPSHOT_A_MAX).
 */
int cube_snapshot_nl_get_doit(struct sk_buff *skb, struct genl_info *info);
int cube_snapshot_nl_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb);
int cube_snapshot_nl_del_doit(struct sk_buff *skb, struct genl_info *info);
extern const struct nla_policy cube_snapshot_nl_policy[];

/* quota.c: bounds on what one user holds in snapshots */
int cube_quota_charge(kuid_t owner, unsigned long pages);
void cube_quota_uncharge(kuid_t owner, unsigned long pages);
void cube_quota_exit(void);

/* snapshot.c, clone.c: guest memory snapshots and copy-on-write clones */
struct cube_clone;
/*
 * A clone backs a sandbox's memory: cube_clone_fget() takes a reference on
 * the clone behind a clone fd (ERR_PTR on error), cube_clone_put() drops it,
 * cube_clone_counters() reads its page counters.
 */
struct cube_clone *cube_clone_fget(int fd);
void cube_clone_put(struct cube_clone *clone);
void cube_clone_counters(struct cube_clone *clone, u64 *private_pages,
			 u64 *shared_pages, u64 *faults);
int cube_mem_init(void);
void cube_mem_exit(void);
long cube_mem_dev_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg);

#endif /* _CUBE_INTERNAL_H */
