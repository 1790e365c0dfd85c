/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube.ko internal declarations shared between the module's files.
 */
#ifndef _CUBE_INTERNAL_H
#define _CUBE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/cube.h>

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

/* sandbox.c, pool.c, netlink.c: sandboxes, pools, the genl family */
int cube_sandbox_init(void);
void cube_sandbox_exit(void);
long cube_sandbox_dev_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg);
int cube_genl_init(void);
void cube_genl_exit(void);

/* snapshot.c, clone.c: guest memory snapshots and copy-on-write clones */
struct cube_clone;
int cube_mem_init(void);
void cube_mem_exit(void);
long cube_mem_dev_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg);

#endif /* _CUBE_INTERNAL_H */
