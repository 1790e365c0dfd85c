/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sandbox and pool objects, shared by sandbox.c, pool.c and netlink.c.
 *
 * Locking:
 *  - cube_sandboxes (an xarray keyed by id) holds every live sandbox, from
 *    creation until its fd is released.  Lookups run under RCU and take a
 *    reference with kref_get_unless_zero(); sandboxes are freed after an
 *    RCU grace period.
 *  - cube_pool_lock (a mutex) protects the pool list, every pool and every
 *    sandbox's pool membership (->pool, ->pool_node).
 *  - sandbox->lock (a mutex) protects the rest of a sandbox.  Lock order:
 *    cube_pool_lock, then sandbox->lock.  Pool membership changes with
 *    both held, so either one is enough to read it.
 */
#ifndef _CUBE_SANDBOX_H
#define _CUBE_SANDBOX_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "cube.h"

struct bpf_link;
struct net;
struct pid;
struct cube_pool;

struct cube_label {
	char key[CUBE_NAME_MAX];
	char value[CUBE_LABEL_VALUE_MAX];
};

struct cube_sandbox {
	struct kref ref;
	struct rcu_head rcu;
	u64 id;
	u64 created_ns;
	struct pid *owner;		/* tgid of the creator, the VMM */
	wait_queue_head_t wq;		/* poll(): kill requests, take */
	struct delayed_work kill_work;	/* SIGKILL after the grace time */

	struct mutex lock;		/* protects the fields below */
	bool dead;			/* fd released, being torn down */
	u32 state;			/* enum cube_sandbox_state */
	u32 exit_reason;		/* enum cube_exit_reason */
	u32 flags;			/* CUBE_SANDBOX_F_*; poll reads it
					 * without the lock
					 */
	u32 vcpus;
	u32 owner_uid;
	u64 memory_bytes;
	char template[CUBE_NAME_MAX];
	unsigned int nr_labels;
	struct cube_label labels[CUBE_LABELS_MAX];
	struct file *vm_file;
	struct net *net;
	u64 netns_cookie;
	unsigned int nr_links;
	struct bpf_link *links[CUBE_BPF_LINKS_MAX];
	struct cube_clone *clone;

	/* protected by cube_pool_lock (and, for writes, ->lock too) */
	struct cube_pool *pool;
	struct list_head pool_node;
};

struct cube_pool {
	struct list_head node;		/* in the pool list */
	struct list_head members;	/* cube_sandbox.pool_node */
	char name[CUBE_NAME_MAX];
	char template[CUBE_NAME_MAX];
	kuid_t owner;			/* effective uid of the creator */
	u32 target;
	u32 low;
	u32 size;
	u64 taken;
};

extern struct mutex cube_pool_lock;

/* sandbox.c */
struct cube_sandbox *cube_sandbox_get_by_id(u64 id);
struct cube_sandbox *cube_sandbox_get_next(unsigned long *index);
void cube_sandbox_put(struct cube_sandbox *sb);
int cube_sandbox_kill(struct cube_sandbox *sb, unsigned int grace_ms);
u32 cube_sandbox_vm_vcpus(struct cube_sandbox *sb);
u64 cube_sandbox_vm_memory(struct cube_sandbox *sb);
bool cube_name_valid(const char *name, bool slash);
void cube_sandbox_mark_taken(struct cube_sandbox *sb);

/* pool.c; the caller holds cube_pool_lock where a pool is passed */
struct cube_pool *cube_pool_find(const char *name);
struct cube_pool *cube_pool_nth(unsigned long n);
int cube_pool_create(const char *name, const char *template, u32 target,
		     u32 low);
int cube_pool_destroy(const char *name);
int cube_pool_set(const char *name, const u32 *target, const u32 *low);
int cube_pool_take(const char *name, u64 *id, struct pid **owner);
int cube_pool_enter(struct cube_sandbox *sb, const char *name);
int cube_pool_leave(struct cube_sandbox *sb);
void cube_pool_remove_locked(struct cube_sandbox *sb);
u64 cube_pool_pooled(void);
void cube_pool_destroy_all(void);

/* netlink.c: multicast events */
void cube_genl_sandbox_event(struct cube_sandbox *sb, u8 cmd);
void cube_genl_pool_low(struct cube_pool *pool);

#endif /* _CUBE_SANDBOX_H */
