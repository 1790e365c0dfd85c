// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: immutable, refcounted snapshots of guest memory.
 *
 * A snapshot copies guest memory once, from a memfd range or from a range
 * of the caller's memory, into pages of its own, indexed by page offset in
 * an xarray.  All-zero pages are not stored.  A snapshot of a clone (see
 * clone.c) stores only the clone's private pages and falls through to the
 * clone's snapshot for every other offset.
 *
 * Snapshots are named by 64-bit ids and stay until deleted.  Deleting a
 * snapshot that clones or child snapshots still use unlinks its id at once;
 * its pages go with its last reference.
 *
 * An id is the load's generation (bits 63-32: random, never zero, drawn
 * when the module loads) over a sequence number (bits 31-0: 1, 2, ...,
 * never reused while the module is loaded), which is the snapshot's index
 * in the table.  Ids that userspace kept across an unload (in files that
 * outlive the module) carry another generation and name nothing in this
 * load, so they cannot reach a snapshot made since.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "cube.h"
#include "mem.h"

/* Linked snapshots by sequence number; the table holds a reference on each. */
static DEFINE_XARRAY(cube_snapshots);
static atomic64_t cube_snapshot_last_seq = ATOMIC64_INIT(0);
/* This load's generation: the high 32 bits of every id it gives out. */
static u32 cube_snapshot_gen;

#define CUBE_SNAPSHOT_SEQ_MAX	U32_MAX

/*
 * The table index of an id of this load, or 0 for an id that cannot name
 * a snapshot (zero, or of another generation).
 */
static unsigned long cube_snapshot_index(u64 id)
{
	if (upper_32_bits(id) != cube_snapshot_gen)
		return 0;
	return lower_32_bits(id);
}

/**
 * cube_page_is_zero() - whether a page holds only zero bytes
 * @page: the page
 */
static bool cube_page_is_zero(struct page *page)
{
	void *p = kmap_local_page(page);
	bool zero = !memchr_inv(p, 0, PAGE_SIZE);

	kunmap_local(p);
	return zero;
}

/**
 * cube_snapshot_alloc() - a new, unlinked, empty snapshot
 * @nr_pages: its size in pages
 * @parent: the snapshot it extends, or NULL; takes a reference on it
 *
 * Return: the snapshot with one reference, or NULL.
 */
struct cube_snapshot *cube_snapshot_alloc(pgoff_t nr_pages,
					  struct cube_snapshot *parent)
{
	struct cube_snapshot *snap;

	snap = kzalloc(sizeof(*snap), GFP_KERNEL_ACCOUNT);
	if (!snap)
		return NULL;
	kref_init(&snap->ref);
	snap->owner = current_euid();
	snap->nr_pages = nr_pages;
	snap->depth = 1;
	xa_init(&snap->pages);
	xa_init(&snap->ws);
	xa_init(&snap->groups);
	mutex_init(&snap->groups_lock);
	if (parent) {
		kref_get(&parent->ref);
		atomic_inc(&parent->children);
		snap->parent = parent;
		snap->depth = parent->depth + 1;
	}
	atomic64_inc(&cube_stats.snapshots);
	return snap;
}

static void cube_snapshot_release(struct kref *ref)
{
	struct cube_snapshot *snap = container_of(ref, struct cube_snapshot,
						  ref);
	struct cube_snapshot *parent = snap->parent;
	unsigned long index;
	void *entry;

	xa_for_each(&snap->pages, index, entry) {
		if (xa_is_value(entry))
			continue;
		put_page(entry);
		atomic64_dec(&cube_stats.shared_pages);
		cond_resched();		/* up to CUBE_SNAPSHOT_MAX_SIZE */
	}
	xa_destroy(&snap->pages);
	xa_destroy(&snap->ws);
	WARN_ON(!xa_empty(&snap->groups));	/* each clone holds @snap */
	if (snap->charged)
		cube_quota_uncharge(snap->owner, snap->held);
	kfree(snap);
	atomic64_dec(&cube_stats.snapshots);
	if (parent) {
		atomic_dec(&parent->children);
		cube_snapshot_put(parent);
	}
}

/**
 * cube_snapshot_put() - drop a reference on a snapshot
 * @snap: the snapshot, or NULL
 */
void cube_snapshot_put(struct cube_snapshot *snap)
{
	if (snap)
		kref_put(&snap->ref, cube_snapshot_release);
}

/**
 * cube_snapshot_get_id() - look up a linked snapshot
 * @id: its id
 *
 * Return: the snapshot with a new reference, or NULL.
 */
struct cube_snapshot *cube_snapshot_get_id(u64 id)
{
	unsigned long index = cube_snapshot_index(id);
	struct cube_snapshot *snap;

	if (!index)
		return NULL;
	xa_lock(&cube_snapshots);
	snap = xa_load(&cube_snapshots, index);
	if (snap && snap->id == id)
		kref_get(&snap->ref);
	else
		snap = NULL;
	xa_unlock(&cube_snapshots);
	return snap;
}

/**
 * cube_snapshot_get_owned() - look up a linked snapshot the caller may use
 * @id: its id
 * @err: out: -ENOENT (no such snapshot) or -EACCES (another user's)
 *
 * Return: the snapshot with a new reference, or NULL.
 */
struct cube_snapshot *cube_snapshot_get_owned(u64 id, int *err)
{
	struct cube_snapshot *snap = cube_snapshot_get_id(id);

	*err = -ENOENT;
	if (snap && !cube_may_use(snap->owner)) {
		cube_snapshot_put(snap);
		*err = -EACCES;
		return NULL;
	}
	return snap;
}

/**
 * cube_snapshot_next() - iterate over linked snapshots in id order
 * @index: in: the lowest table index wanted (start at 1); out: the index
 *	found (the low 32 bits of its id)
 *
 * Return: the snapshot with a new reference, or NULL when none is left.
 */
struct cube_snapshot *cube_snapshot_next(unsigned long *index)
{
	unsigned long i = *index;
	struct cube_snapshot *snap;

	xa_lock(&cube_snapshots);
	snap = xa_find(&cube_snapshots, &i, CUBE_SNAPSHOT_SEQ_MAX, XA_PRESENT);
	if (snap) {
		kref_get(&snap->ref);
		*index = i;
	}
	xa_unlock(&cube_snapshots);
	return snap;
}

/**
 * cube_snapshot_link() - give a filled snapshot an id and publish it
 * @snap: the snapshot; the table takes over the caller's reference
 * @id: out: its id
 *
 * Once published, a concurrent delete of the (predictable) id may free the
 * snapshot at any time: the caller must not touch @snap again, and reads
 * the id from @id.
 *
 * Return: 0, -EDQUOT (its owner holds too much already, see quota.c),
 * -ENOSPC (this load gave out every sequence number) or another negative
 * errno (the reference is dropped then).
 */
static int cube_snapshot_link(struct cube_snapshot *snap, u64 *id)
{
	s64 seq;
	int ret;

	ret = cube_quota_charge(snap->owner, snap->held);
	if (ret)
		goto err;
	snap->charged = true;
	/* Never wraps: a number is used once per load, even on failure. */
	seq = atomic64_inc_return(&cube_snapshot_last_seq);
	ret = -ENOSPC;
	if (seq > CUBE_SNAPSHOT_SEQ_MAX)
		goto err;
	snap->id = (u64)cube_snapshot_gen << 32 | seq;
	ret = xa_insert(&cube_snapshots, seq, snap, GFP_KERNEL);
	if (ret)
		goto err;
	*id = snap->id;
	return 0;
err:
	cube_snapshot_put(snap);
	return ret;
}

/**
 * cube_snapshot_delete() - unlink a snapshot's id
 * @id: the snapshot
 * @check_owner: refuse another user's snapshot (see cube_may_use())
 *
 * Its memory is freed now, or when its last clone or child snapshot goes.
 *
 * Return: 0, -ENOENT for an unknown id, -EACCES for another user's.
 */
int cube_snapshot_delete(u64 id, bool check_owner)
{
	struct cube_snapshot *snap;

	/* The owner check may sleep (capable()): not under the xarray lock. */
	snap = cube_snapshot_get_id(id);
	if (!snap)
		return -ENOENT;
	if (check_owner && !cube_may_use(snap->owner)) {
		cube_snapshot_put(snap);
		return -EACCES;
	}
	/* Unlink this snapshot only: sequence numbers are never reused. */
	if (xa_cmpxchg(&cube_snapshots, cube_snapshot_index(id), snap, NULL,
		       0) != snap) {
		cube_snapshot_put(snap);
		return -ENOENT;		/* deleted meanwhile */
	}
	cube_snapshot_put(snap);	/* the table's */
	cube_snapshot_put(snap);	/* ours */
	return 0;
}

/**
 * cube_snapshot_unlink_all() - delete every snapshot (module exit)
 */
void cube_snapshot_unlink_all(void)
{
	struct cube_snapshot *snap;
	unsigned long index;
	unsigned long n = 0;

	xa_for_each(&cube_snapshots, index, snap) {
		xa_erase(&cube_snapshots, index);
		cube_snapshot_put(snap);
		n++;
	}
	if (n)
		pr_info("deleted %lu snapshots at unload\n", n);
}

/**
 * cube_snapshot_page() - the page a snapshot has at an offset
 * @snap: the snapshot
 * @index: page offset
 *
 * Return: the page (the snapshot keeps the reference), or NULL for a page
 * of zeros.
 */
struct page *cube_snapshot_page(struct cube_snapshot *snap, pgoff_t index)
{
	for (; snap; snap = snap->parent) {
		void *entry = xa_load(&snap->pages, index);

		if (!entry)
			continue;
		return xa_is_value(entry) ? NULL : entry;
	}
	return NULL;
}

/**
 * cube_snapshot_record() - add an offset to a snapshot's working set
 * @snap: the snapshot
 * @index: page offset
 * @write: the offset was written (a clone of the working set copies it
 *	ahead of the write), not only read
 *
 * Return: 0 or -ENOMEM.
 */
int cube_snapshot_record(struct cube_snapshot *snap, pgoff_t index,
			 bool write)
{
	void *old = xa_cmpxchg(&snap->ws, index, NULL,
			       write ? CUBE_WS_WRITE : CUBE_WS_READ,
			       GFP_KERNEL_ACCOUNT);

	if (xa_is_err(old))
		return xa_err(old);
	if (!old)
		atomic_long_inc(&snap->ws_pages);
	else if (write && old == CUBE_WS_READ)
		xa_cmpxchg(&snap->ws, index, CUBE_WS_READ, CUBE_WS_WRITE, 0);
	return 0;
}

void cube_snapshot_info(struct cube_snapshot *snap,
			struct cube_snapshot_info *info)
{
	info->id = snap->id;
	info->depth = snap->depth;
	info->size = (u64)snap->nr_pages << PAGE_SHIFT;
	info->pages = snap->held;
	info->parent_id = snap->parent ? snap->parent->id : 0;
	info->clones = atomic_read(&snap->clones);
	info->children = atomic_read(&snap->children);
	info->ws_pages = atomic_long_read(&snap->ws_pages);
}

/*
 * Store one page of data at @index, or nothing when it is all zeros.
 * Takes over @page's reference on success; on -ENOMEM the caller frees it.
 */
static int cube_snapshot_add(struct cube_snapshot *snap, pgoff_t index,
			     struct page *page)
{
	int ret;

	ret = xa_insert(&snap->pages, index, page, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	snap->held++;
	atomic64_inc(&cube_stats.shared_pages);
	return 0;
}

/**
 * cube_snapshot_store() - store a page of a snapshot being filled
 * @snap: the snapshot
 * @index: page offset
 * @page: the data, with a reference the snapshot takes over, unless the
 *	page is all zeros
 *
 * Return: 1 when @page was taken, 0 when it is all zeros (the caller keeps
 * it), or a negative errno.
 */
int cube_snapshot_store(struct cube_snapshot *snap, pgoff_t index,
			struct page *page)
{
	int ret;

	if (cube_page_is_zero(page)) {
		/* Mask the parent's data, where there is some. */
		if (!snap->parent || !cube_snapshot_page(snap->parent, index))
			return 0;
		ret = xa_insert(&snap->pages, index, CUBE_SNAP_ZERO,
				GFP_KERNEL_ACCOUNT);
		return ret;
	}
	ret = cube_snapshot_add(snap, index, page);
	return ret ? ret : 1;
}

static int cube_snapshot_fill_user(struct cube_snapshot *snap,
				   unsigned long addr)
{
	struct page *page = NULL;
	pgoff_t index;
	int ret = 0;

	for (index = 0; index < snap->nr_pages; index++) {
		void *p;
		unsigned long left;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (!page) {
			page = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT);
			if (!page) {
				ret = -ENOMEM;
				break;
			}
		}
		p = kmap_local_page(page);
		left = copy_from_user(p, (void __user *)(addr +
						(index << PAGE_SHIFT)),
				      PAGE_SIZE);
		kunmap_local(p);
		if (left) {
			ret = -EFAULT;
			break;
		}
		ret = cube_snapshot_store(snap, index, page);
		if (ret < 0)
			break;
		if (ret)
			page = NULL;
		ret = 0;
		cond_resched();
	}
	if (page)
		__free_page(page);
	return ret;
}

/*
 * Read @snap->nr_pages pages at @off of a shmem file.  A private struct
 * file on the same inode lets SEEK_DATA skip holes without moving the
 * caller's file position; reading never allocates shmem pages for holes.
 */
static int cube_snapshot_fill_memfd(struct cube_snapshot *snap,
				    struct file *memfd, loff_t off)
{
	loff_t end = off + ((loff_t)snap->nr_pages << PAGE_SHIFT);
	struct page *page = NULL;
	struct file *file;
	loff_t pos = off;
	int ret = 0;

	file = dentry_open(&memfd->f_path, O_RDONLY | O_LARGEFILE,
			   current_cred());
	if (IS_ERR(file))
		return PTR_ERR(file);

	while (pos < end && !ret) {
		loff_t data, hole;

		data = vfs_llseek(file, pos, SEEK_DATA);
		if (data == -ENXIO || data >= end)
			break;
		if (data < 0) {
			ret = data;
			break;
		}
		data = round_down(data, PAGE_SIZE);
		hole = vfs_llseek(file, data, SEEK_HOLE);
		if (hole < 0) {
			ret = hole;
			break;
		}
		hole = min(round_up(hole, PAGE_SIZE), end);
		for (pos = max(data, pos); pos < hole; pos += PAGE_SIZE) {
			loff_t rpos = pos;
			ssize_t n;
			void *p;

			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				break;
			}
			if (!page) {
				page = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT);
				if (!page) {
					ret = -ENOMEM;
					break;
				}
			}
			p = kmap_local_page(page);
			n = kernel_read(file, p, PAGE_SIZE, &rpos);
			if (n >= 0 && n < PAGE_SIZE)
				memset(p + n, 0, PAGE_SIZE - n);
			kunmap_local(p);
			if (n < 0) {
				ret = n;
				break;
			}
			ret = cube_snapshot_store(snap, (pos - off) >> PAGE_SHIFT,
						  page);
			if (ret < 0)
				break;
			if (ret)
				page = NULL;
			ret = 0;
			cond_resched();
		}
	}
	if (page)
		__free_page(page);
	fput(file);
	return ret;
}

static int cube_snapshot_check_range(const struct cube_snapshot_create *arg,
				     u64 start)
{
	u64 end;

	if (!arg->length || !PAGE_ALIGNED(arg->length) || !PAGE_ALIGNED(start))
		return -EINVAL;
	if (check_add_overflow(start, arg->length, &end))
		return -EOVERFLOW;
	if (arg->length > CUBE_SNAPSHOT_MAX_SIZE)
		return -EFBIG;
	return 0;
}

static int cube_snapshot_from_memfd(const struct cube_snapshot_create *arg,
				    struct cube_snapshot **out)
{
	struct cube_snapshot *snap;
	struct inode *inode;
	struct fd f;
	int ret;

	if (arg->addr)
		return -EINVAL;
	ret = cube_snapshot_check_range(arg, arg->offset);
	if (ret)
		return ret;
	if (arg->offset + arg->length > LLONG_MAX)
		return -EOVERFLOW;
	f = fdget(arg->fd);
	if (!fd_file(f))
		return -EBADF;
	inode = file_inode(fd_file(f));
	ret = -EINVAL;
	if (!S_ISREG(inode->i_mode) || inode->i_sb->s_magic != TMPFS_MAGIC)
		goto out;
	ret = -EBADF;
	if (!(fd_file(f)->f_mode & FMODE_READ))
		goto out;
	ret = -ERANGE;
	if (arg->offset + arg->length > i_size_read(inode))
		goto out;
	ret = -ENOMEM;
	snap = cube_snapshot_alloc(arg->length >> PAGE_SHIFT, NULL);
	if (!snap)
		goto out;
	ret = cube_snapshot_fill_memfd(snap, fd_file(f), arg->offset);
	if (ret)
		cube_snapshot_put(snap);
	else
		*out = snap;
out:
	fdput(f);
	return ret;
}

static int cube_snapshot_from_user(const struct cube_snapshot_create *arg,
				   struct cube_snapshot **out)
{
	struct cube_snapshot *snap;
	int ret;

	if (arg->offset || arg->fd != -1)
		return -EINVAL;
	ret = cube_snapshot_check_range(arg, arg->addr);
	if (ret)
		return ret;
	if (!access_ok((void __user *)(unsigned long)arg->addr, arg->length))
		return -EFAULT;
	snap = cube_snapshot_alloc(arg->length >> PAGE_SHIFT, NULL);
	if (!snap)
		return -ENOMEM;
	ret = cube_snapshot_fill_user(snap, arg->addr);
	if (ret) {
		cube_snapshot_put(snap);
		return ret;
	}
	*out = snap;
	return 0;
}

static long cube_snapshot_create(void __user *argp)
{
	struct cube_snapshot_create arg;
	struct cube_snapshot *snap = NULL;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	switch (arg.source) {
	case CUBE_SNAPSHOT_SRC_MEMFD:
		ret = cube_snapshot_from_memfd(&arg, &snap);
		break;
	case CUBE_SNAPSHOT_SRC_USER:
		ret = cube_snapshot_from_user(&arg, &snap);
		break;
	case CUBE_SNAPSHOT_SRC_CLONE:
		if (arg.offset || arg.addr || arg.length)
			return -EINVAL;
		ret = cube_clone_fork(arg.fd, &snap);
		break;
	default:
		return -EINVAL;
	}
	if (ret)
		return ret;
	ret = cube_snapshot_link(snap, &arg.id);
	if (ret)
		return ret;
	if (copy_to_user(argp, &arg, sizeof(arg))) {
		cube_snapshot_delete(arg.id, false);
		return -EFAULT;
	}
	return 0;
}

static long cube_snapshot_delete_ioctl(void __user *argp)
{
	struct cube_snapshot_id arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	return cube_snapshot_delete(arg.id, true);
}

static long cube_snapshot_info_ioctl(void __user *argp)
{
	struct cube_snapshot_info arg;
	struct cube_snapshot *snap;
	int err;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	snap = cube_snapshot_get_owned(arg.id, &err);
	if (!snap)
		return err;
	cube_snapshot_info(snap, &arg);
	cube_snapshot_put(snap);
	return copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static long cube_mem_stats_ioctl(void __user *argp)
{
	struct cube_mem_stats st = {
		.snapshots = atomic64_read(&cube_stats.snapshots),
		.clones = atomic64_read(&cube_stats.clones),
		.shared_pages = atomic64_read(&cube_stats.shared_pages),
		.private_pages = atomic64_read(&cube_stats.private_pages),
	};

	return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
}

/**
 * cube_mem_dev_ioctl() - the snapshot and clone ioctls of /dev/cube
 * @file: the /dev/cube file
 * @cmd: an ioctl number of the 0x30-0x4f range
 * @arg: its argument
 */
long cube_mem_dev_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case CUBE_IOC_SNAPSHOT_CREATE:
		return cube_snapshot_create(argp);
	case CUBE_IOC_SNAPSHOT_DELETE:
		return cube_snapshot_delete_ioctl(argp);
	case CUBE_IOC_SNAPSHOT_INFO:
		return cube_snapshot_info_ioctl(argp);
	case CUBE_IOC_CLONE_CREATE:
		return cube_clone_create_ioctl(argp);
	case CUBE_IOC_MEM_STATS:
		return cube_mem_stats_ioctl(argp);
	}
	return -ENOTTY;
}

int cube_mem_init(void)
{
	do {
		cube_snapshot_gen = get_random_u32();
	} while (!cube_snapshot_gen);
	return cube_clone_fs_init();
}

void cube_mem_exit(void)
{
	cube_snapshot_unlink_all();
	cube_quota_exit();
	cube_clone_fs_exit();
}
