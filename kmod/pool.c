// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: pools of ready sandboxes.
 *
 * A pool is a named FIFO of sandboxes of one template that are booted and
 * waiting for work.  Their VMMs put them in (CUBE_IOC_SANDBOX_POOL_ENTER);
 * takers claim them one at a time (CUBE_CMD_TAKE_POOL, CUBE_IOC_POOL_TAKE).
 * Everything here runs under cube_pool_lock, so a sandbox is handed to one
 * taker only, and leaves its pool before its fd's teardown goes on.
 */
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "sandbox.h"

DEFINE_MUTEX(cube_pool_lock);
static LIST_HEAD(cube_pools);
static unsigned int cube_nr_pools;

struct cube_pool *cube_pool_find(const char *name)
{
	struct cube_pool *pool;

	lockdep_assert_held(&cube_pool_lock);
	list_for_each_entry(pool, &cube_pools, node)
		if (!strcmp(pool->name, name))
			return pool;
	return NULL;
}

/* Unlink @sb from its pool; cube_pool_lock and sb->lock are held. */
static void cube_pool_unlink(struct cube_sandbox *sb)
{
	struct cube_pool *pool = sb->pool;

	list_del_init(&sb->pool_node);
	sb->pool = NULL;
	pool->size--;
	if (pool->size < pool->low)
		cube_genl_pool_low(pool);
}

/**
 * cube_pool_remove_locked() - take a sandbox out of its pool, if any
 * @sb: the sandbox, with cube_pool_lock and sb->lock held
 */
void cube_pool_remove_locked(struct cube_sandbox *sb)
{
	lockdep_assert_held(&cube_pool_lock);
	lockdep_assert_held(&sb->lock);
	if (sb->pool)
		cube_pool_unlink(sb);
}

int cube_pool_create(const char *name, const char *template, u32 target,
		     u32 low)
{
	struct cube_pool *pool;
	int ret = 0;

	pool = kzalloc(sizeof(*pool), GFP_KERNEL_ACCOUNT);
	if (!pool)
		return -ENOMEM;
	INIT_LIST_HEAD(&pool->members);
	strscpy(pool->name, name, sizeof(pool->name));
	strscpy(pool->template, template, sizeof(pool->template));
	pool->owner = current_euid();
	pool->target = target;
	pool->low = low;

	mutex_lock(&cube_pool_lock);
	if (cube_pool_find(name))
		ret = -EEXIST;
	else if (cube_nr_pools == CUBE_POOLS_MAX)
		ret = -ENOSPC;
	if (!ret) {
		list_add_tail(&pool->node, &cube_pools);
		cube_nr_pools++;
		atomic64_inc(&cube_stats.pools);
		pool = NULL;
	}
	mutex_unlock(&cube_pool_lock);
	kfree(pool);
	return ret;
}

/*
 * Free @pool; cube_pool_lock is held.  Its warm sandboxes leave it and,
 * with @kill, are asked to stop: nobody took them, so nobody else would
 * end them.  A member is alive while it is on the list (its teardown
 * takes it off under cube_pool_lock first), so it can be killed here.
 */
static void cube_pool_free_locked(struct cube_pool *pool, bool kill)
{
	struct cube_sandbox *sb, *tmp;

	list_for_each_entry_safe(sb, tmp, &pool->members, pool_node) {
		mutex_lock(&sb->lock);
		list_del_init(&sb->pool_node);
		sb->pool = NULL;
		mutex_unlock(&sb->lock);
		if (kill)
			cube_sandbox_kill(sb, CUBE_KILL_GRACE_MS_DEFAULT);
	}
	list_del(&pool->node);
	cube_nr_pools--;
	atomic64_dec(&cube_stats.pools);
	kfree(pool);
}

/**
 * cube_pool_destroy() - delete a pool and end its warm sandboxes
 * @name: the pool
 *
 * The sandboxes waiting in the pool (never taken) are asked to stop, with
 * the default grace period, as by CUBE_CMD_KILL_SANDBOX; those taken from
 * it before are not the pool's any more and go on.
 *
 * Return: 0 or -ENOENT (no such pool).
 */
int cube_pool_destroy(const char *name)
{
	struct cube_pool *pool;
	int ret = 0;

	mutex_lock(&cube_pool_lock);
	pool = cube_pool_find(name);
	if (pool)
		cube_pool_free_locked(pool, true);
	else
		ret = -ENOENT;
	mutex_unlock(&cube_pool_lock);
	return ret;
}

void cube_pool_destroy_all(void)
{
	struct cube_pool *pool, *tmp;

	mutex_lock(&cube_pool_lock);
	/* on unload: no sandbox is left to kill */
	list_for_each_entry_safe(pool, tmp, &cube_pools, node)
		cube_pool_free_locked(pool, false);
	mutex_unlock(&cube_pool_lock);
}

/**
 * cube_pool_set() - change a pool's target and/or low watermark
 * @name: the pool
 * @target: the new target, or NULL to keep it
 * @low: the new low watermark, or NULL to keep it
 *
 * Return: 0, -ENOENT (no such pool) or -ERANGE (low above target).
 * Sandboxes beyond a lowered target stay in the pool.
 */
int cube_pool_set(const char *name, const u32 *target, const u32 *low)
{
	struct cube_pool *pool;
	u32 t, l;
	int ret = 0;

	mutex_lock(&cube_pool_lock);
	pool = cube_pool_find(name);
	if (!pool) {
		ret = -ENOENT;
		goto out;
	}
	t = target ? *target : pool->target;
	l = low ? *low : pool->low;
	if (l > t) {
		ret = -ERANGE;
		goto out;
	}
	pool->target = t;
	pool->low = l;
out:
	mutex_unlock(&cube_pool_lock);
	return ret;
}

/**
 * cube_pool_take() - claim the oldest sandbox of a pool
 * @name: the pool
 * @id: out: the sandbox's id
 * @owner: out: a reference on its owner's pid, for the caller to put
 *
 * Return: 0, -ENOENT (no such pool), -EACCES (another user's pool, see
 * cube_may_use()) or -EAGAIN (the pool is empty).
 */
int cube_pool_take(const char *name, u64 *id, struct pid **owner)
{
	struct cube_sandbox *sb;
	struct cube_pool *pool;
	int ret = 0;

	mutex_lock(&cube_pool_lock);
	pool = cube_pool_find(name);
	if (!pool) {
		ret = -ENOENT;
		goto out;
	}
	if (!cube_may_use(pool->owner)) {
		ret = -EACCES;
		goto out;
	}
	sb = list_first_entry_or_null(&pool->members, struct cube_sandbox,
				      pool_node);
	if (!sb) {
		ret = -EAGAIN;
		goto out;
	}
	mutex_lock(&sb->lock);
	cube_pool_unlink(sb);
	pool->taken++;
	cube_sandbox_mark_taken(sb);
	*id = sb->id;
	*owner = get_pid(sb->owner);
	mutex_unlock(&sb->lock);
out:
	mutex_unlock(&cube_pool_lock);
	return ret;
}

/**
 * cube_pool_enter() - put a ready sandbox into a pool
 * @sb: the sandbox
 * @name: the pool
 *
 * Return: 0; -ENOENT: no such pool; -EACCES: another user's pool (a tenant
 * must not hand its sandbox to another's takers); -EBUSY: the sandbox is not ready, or
 * already pooled or taken; -EXDEV: its template is not the pool's;
 * -ENOSPC: the pool holds its target already.
 */
int cube_pool_enter(struct cube_sandbox *sb, const char *name)
{
	struct cube_pool *pool;
	int ret = 0;

	mutex_lock(&cube_pool_lock);
	mutex_lock(&sb->lock);
	pool = cube_pool_find(name);
	if (!pool)
		ret = -ENOENT;
	else if (!cube_may_use(pool->owner))
		ret = -EACCES;
	else if (sb->state != CUBE_SANDBOX_READY || sb->pool ||
		 (sb->flags & (CUBE_SANDBOX_F_TAKEN |
			       CUBE_SANDBOX_F_KILL_REQUESTED)))
		ret = -EBUSY;
	else if (strcmp(sb->template, pool->template))
		ret = -EXDEV;
	else if (pool->size >= pool->target)
		ret = -ENOSPC;
	if (!ret) {
		list_add_tail(&sb->pool_node, &pool->members);
		sb->pool = pool;
		pool->size++;
	}
	mutex_unlock(&sb->lock);
	mutex_unlock(&cube_pool_lock);
	return ret;
}

/* Take a sandbox back out of its pool; -ENOENT if it is not pooled. */
int cube_pool_leave(struct cube_sandbox *sb)
{
	int ret = 0;

	mutex_lock(&cube_pool_lock);
	mutex_lock(&sb->lock);
	if (sb->pool)
		cube_pool_unlink(sb);
	else
		ret = -ENOENT;
	mutex_unlock(&sb->lock);
	mutex_unlock(&cube_pool_lock);
	return ret;
}

/* Sandboxes waiting in all pools. */
u64 cube_pool_pooled(void)
{
	struct cube_pool *pool;
	u64 n = 0;

	mutex_lock(&cube_pool_lock);
	list_for_each_entry(pool, &cube_pools, node)
		n += pool->size;
	mutex_unlock(&cube_pool_lock);
	return n;
}

/**
 * cube_pool_nth() - the pool at a position of the pool list, for dumps
 * @n: position
 *
 * Return: the pool, or NULL past the end; cube_pool_lock is held.
 */
struct cube_pool *cube_pool_nth(unsigned long n)
{
	struct cube_pool *pool;

	lockdep_assert_held(&cube_pool_lock);
	list_for_each_entry(pool, &cube_pools, node)
		if (!n--)
			return pool;
	return NULL;
}
