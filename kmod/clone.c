// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: copy-on-write clones of snapshots.
 *
 * A clone fd is a file of cube's own pseudo filesystem, so every clone has
 * an address_space of its own: unmap_mapping_range() on it reaches every
 * mapping of the clone, in every process, and fires the MMU notifiers (KVM
 * drops its SPTEs).  The clone's pages are not in that address_space's page
 * cache; ->fault hands the core mm a referenced, locked struct page, or
 * maps the zero page itself:
 *
 *  - a read fault maps the snapshot's page.  The mapping is MAP_SHARED with
 *    ->page_mkwrite, so the core mm maps it read-only;
 *  - a read fault on a hole (no data in the snapshot chain) maps the
 *    kernel's zero page as a special PTE (vmf_insert_mixed()): no struct
 *    page reference and no rmap, so no count grows with the number of
 *    PTEs, and a write to it reaches ->pfn_mkwrite.  Where the kernel
 *    refuses that (CUBE_HOLES_MAP_ZERO_PFN is 0), holes map @zero, a page
 *    of zeros of the clone's own, like a snapshot page: its count grows
 *    only with this clone's PTEs, paid for by its owner's page tables;
 *  - the first write to a page (a write fault, ->page_mkwrite on a
 *    read-only PTE or ->pfn_mkwrite on the zero page) copies the page into
 *    a private page of the clone and zaps the old PTEs of that offset in
 *    every mapping; the private page is then mapped writable.  A shared
 *    page is never mapped writable.
 *
 * @pages maps an offset to the clone's private page, or to CUBE_CLONE_SEEN
 * when the clone may map the snapshot's page (or the zero page) there, or
 * to CUBE_CLONE_MERGED when it may map its merge group's page there (a
 * page that was a clone's own, shared read-only by the clones of its
 * group that hold the same bytes at that offset; merge.c): no PTE of this
 * clone maps a shared page at an offset without one of those entries, so
 * a write to an offset never seen makes its private page without zapping
 * anything (and without an MMU-notifier round trip for KVM).  A write to
 * a group's page copies it into a private one, as for a snapshot page.
 *
 * Ordering against PTE installation: a fault checks what the offset
 * resolves to and installs its PTE under a lock that whoever changes a
 * CUBE_CLONE_SEEN entry must also take, then zaps the offset: a fault that
 * checked before sees its PTE zapped, a fault that checks after sees the
 * new entry.  That lock is the lock of the page a PTE would map (a private
 * page, a snapshot page, a group's page, @zero: the core mm installs the PTE before
 * unlocking the page ->fault returns), or, for the kernel's zero page, the
 * clone's @holes semaphore, held for reading while it is mapped.  No lock is shared by every
 * clone, and nothing allocates memory under a page lock: the xarray slot
 * exists before it is swapped, the recorded working set is updated outside
 * locks, and page tables are populated before pages are locked and mapped.
 * Private pages and CUBE_CLONE_SEEN entries are only removed (reset,
 * release) under @lock, so the snapshot of a clone can walk them; a rewind
 * copies the snapshot back into a private page it keeps under @lock and
 * the page's lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/pfn_t.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "cube.h"
#include "mem.h"

#define CUBE_MEM_MAGIC		0x63756265	/* "cube" */
#define CUBE_CLONE_SEEN		xa_mk_value(1)
#define CUBE_CLONE_MERGED	xa_mk_value(2)

struct cube_clone {
	struct kref ref;
	struct cube_snapshot *snap;
	struct inode *inode;
	pgoff_t nr_pages;
	unsigned int flags;
	struct xarray pages;
	struct mutex lock;
	struct rw_semaphore holes;
	struct page *zero;
	struct cube_merge_group *group;	/* set once, under @lock */
	u32 tag;			/* tells its offers from a sibling's */
	atomic64_t private_pages;
	atomic64_t shared_pages;
	atomic64_t faults;
	atomic64_t cow_faults;
	atomic64_t prefaulted;
	atomic64_t around;
	atomic64_t resets;
};

/* What cube_clone_pte_mkwrite() makes writable. */
struct cube_clone_wr {
	struct vm_area_struct *vma;
	struct page *page;
};

static struct vfsmount *cube_mem_mnt;
static atomic_t cube_clone_tags;
static const struct file_operations cube_clone_fops;

static void cube_clone_release_pages(struct cube_clone *clone)
{
	unsigned long index;
	void *entry;

	xa_for_each(&clone->pages, index, entry) {
		cond_resched();		/* up to the clone's size in entries */
		if (xa_is_value(entry))
			continue;
		put_page(entry);
		atomic64_dec(&cube_stats.private_pages);
	}
	xa_destroy(&clone->pages);
}

static void cube_clone_free(struct kref *ref)
{
	struct cube_clone *clone = container_of(ref, struct cube_clone, ref);

	/* No mapping is left: every VMA holds the file. */
	cube_clone_release_pages(clone);
	if (clone->zero)
		put_page(clone->zero);
	cube_merge_group_put(clone->group);
	atomic_dec(&clone->snap->clones);
	cube_snapshot_put(clone->snap);
	iput(clone->inode);
	kfree(clone);
	atomic64_dec(&cube_stats.clones);
}

void cube_clone_put(struct cube_clone *clone)
{
	if (clone)
		kref_put(&clone->ref, cube_clone_free);
}

/**
 * cube_clone_fget() - the clone behind a clone fd
 * @fd: the file descriptor
 *
 * Return: the clone with a new reference; ERR_PTR(-EBADF) when @fd is not
 * open, ERR_PTR(-EINVAL) when it is not a clone fd.
 */
struct cube_clone *cube_clone_fget(int fd)
{
	struct cube_clone *clone;
	struct fd f = fdget(fd);

	if (!fd_file(f))
		return ERR_PTR(-EBADF);
	if (fd_file(f)->f_op != &cube_clone_fops) {
		fdput(f);
		return ERR_PTR(-EINVAL);
	}
	clone = fd_file(f)->private_data;
	kref_get(&clone->ref);
	fdput(f);
	return clone;
}

void cube_clone_counters(struct cube_clone *clone, u64 *private_pages,
			 u64 *shared_pages, u64 *faults)
{
	*private_pages = atomic64_read(&clone->private_pages);
	*shared_pages = atomic64_read(&clone->shared_pages);
	*faults = atomic64_read(&clone->faults);
}

static void cube_clone_zap(struct cube_clone *clone, pgoff_t index,
			   pgoff_t nr)
{
	unmap_mapping_range(clone->inode->i_mapping,
			    (loff_t)index << PAGE_SHIFT,
			    (loff_t)nr << PAGE_SHIFT, 1);
}

/* The clone's private page at @index, referenced, or NULL. */
static struct page *cube_clone_private(struct cube_clone *clone,
				       pgoff_t index)
{
	struct page *page;

	xa_lock(&clone->pages);
	page = xa_load(&clone->pages, index);
	if (xa_is_value(page))
		page = NULL;
	if (page)
		get_page(page);
	xa_unlock(&clone->pages);
	return page;
}

/*
 * The shared page a value entry @entry of @index maps: the group's page
 * for CUBE_CLONE_MERGED, else the snapshot's (NULL: zeros).
 */
static struct page *cube_clone_shared_page(struct cube_clone *clone,
					   pgoff_t index, void *entry)
{
	struct cube_merge_group *group;

	if (entry != CUBE_CLONE_MERGED)
		return cube_snapshot_page(clone->snap, index);
	/* set before the first CUBE_CLONE_MERGED entry was stored */
	group = smp_load_acquire(&clone->group);
	return xa_load(&group->stable, index);
}

/* Lock @page, or with @try only take it when it is free at once. */
static bool cube_clone_lock_page(struct page *page, bool try)
{
	if (try)
		return trylock_page(page);
	lock_page(page);
	return true;
}

/*
 * The lock a fault holds while it maps the shared page of a CUBE_CLONE_SEEN
 * offset: the snapshot's page @src, or for a hole (@src NULL) the clone's
 * @holes and, where holes map it, the lock of @zero.  Whoever changes a
 * CUBE_CLONE_SEEN entry takes it.
 */
static void cube_clone_lock_shared(struct cube_clone *clone, struct page *src)
{
	if (src) {
		lock_page(src);
		return;
	}
	down_write(&clone->holes);
	if (clone->zero)
		lock_page(clone->zero);
}

static void cube_clone_unlock_shared(struct cube_clone *clone,
				     struct page *src)
{
	if (src) {
		unlock_page(src);
		return;
	}
	if (clone->zero)
		unlock_page(clone->zero);
	up_write(&clone->holes);
}

static void cube_clone_touch(struct cube_clone *clone, pgoff_t index,
			     bool write)
{
	if (clone->flags & CUBE_CLONE_F_RECORD)
		cube_snapshot_record(clone->snap, index, write);
}

/*
 * What @index resolves to now, for a read: the clone's private page or the
 * snapshot's page (or @zero), referenced and locked; NULL for a hole that
 * maps the kernel's zero page, with @holes held for reading (map it with
 * cube_clone_map_zero(), which drops it).  @touch: a real access, which a recording clone adds to the working
 * set.  @try: fail with -EBUSY rather than wait for a lock.
 */
static struct page *cube_clone_get_page(struct cube_clone *clone,
					pgoff_t index, bool touch, bool try)
{
	struct page *page;
	void *old;

	for (;;) {
		page = cube_clone_private(clone, index);
		if (page) {
			if (!cube_clone_lock_page(page, try)) {
				put_page(page);
				return ERR_PTR(-EBUSY);
			}
			if (xa_load(&clone->pages, index) == page)
				return page;
			unlock_page(page);	/* reset meanwhile */
			put_page(page);
			continue;
		}
		old = xa_cmpxchg(&clone->pages, index, NULL, CUBE_CLONE_SEEN,
				 GFP_KERNEL_ACCOUNT);
		if (xa_is_err(old))
			return ERR_PTR(xa_err(old));
		if (!old) {
			atomic64_inc(&clone->shared_pages);
			if (touch)
				cube_clone_touch(clone, index, false);
			old = CUBE_CLONE_SEEN;
		} else if (!xa_is_value(old)) {
			continue;	/* a private page appeared */
		}
		page = cube_clone_shared_page(clone, index, old) ?: clone->zero;
		if (!page) {
			if (!try)
				down_read(&clone->holes);
			else if (!down_read_trylock(&clone->holes))
				return ERR_PTR(-EBUSY);
			if (xa_load(&clone->pages, index) == CUBE_CLONE_SEEN)
				return NULL;
			up_read(&clone->holes);	/* reset or written meanwhile */
			continue;
		}
		get_page(page);
		if (!cube_clone_lock_page(page, try)) {
			put_page(page);
			return ERR_PTR(-EBUSY);
		}
		if (xa_load(&clone->pages, index) == old)
			return page;
		unlock_page(page);	/* reset or written meanwhile */
		put_page(page);
	}
}

/*
 * Map the zero page read-only at @addr: a special PTE, no reference taken.
 * Called with @holes held for reading by cube_clone_get_page(); drops it.
 */
static vm_fault_t cube_clone_map_zero(struct cube_clone *clone,
				      struct vm_area_struct *vma,
				      unsigned long addr)
{
	vm_fault_t ret;

	ret = vmf_insert_mixed(vma, addr, pfn_to_pfn_t(my_zero_pfn(addr)));
	up_read(&clone->holes);
	return ret;
}

/*
 * The clone's private page at @index, referenced and locked; made now from
 * the snapshot's page (or zeros) when there is none.  *@zapped tells
 * whether the offset's PTEs were zapped.
 */
static struct page *cube_clone_get_private(struct cube_clone *clone,
					   pgoff_t index, bool *zapped)
{
	struct page *page, *src;
	void *entry, *old;

	*zapped = false;
	for (;;) {
		page = cube_clone_private(clone, index);
		if (page) {
			lock_page(page);
			if (xa_load(&clone->pages, index) == page)
				return page;
			unlock_page(page);	/* reset meanwhile */
			put_page(page);
			continue;
		}
		entry = xa_load(&clone->pages, index);
		if (entry && !xa_is_value(entry))
			continue;	/* a private page appeared */
		page = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT);
		if (!page)
			return ERR_PTR(-ENOMEM);
		src = cube_clone_shared_page(clone, index, entry);
		if (src)
			copy_highpage(page, src);
		else
			clear_highpage(page);
		__SetPageLocked(page);

		/*
		 * Never mapped at this offset: nothing to order against.  A
		 * group's page was copied: the offset must still map it.
		 */
		if (entry == CUBE_CLONE_MERGED)
			old = CUBE_CLONE_MERGED;
		else
			old = xa_cmpxchg(&clone->pages, index, NULL, page,
					 GFP_KERNEL_ACCOUNT);
		if (!old) {
			cube_clone_touch(clone, index, true);
		} else if (xa_is_value(old) &&
			   (old == CUBE_CLONE_MERGED) ==
			   (entry == CUBE_CLONE_MERGED)) {
			/*
			 * Maybe mapped shared: swap under the lock its faults
			 * hold.  The slot exists, so nothing is allocated.
			 */
			void *shared = old;

			cube_clone_lock_shared(clone, src);
			old = xa_cmpxchg(&clone->pages, index, shared, page, 0);
			cube_clone_unlock_shared(clone, src);
			if (old == shared) {
				atomic64_dec(&clone->shared_pages);
				cube_clone_touch(clone, index, true);
				*zapped = true;
				old = NULL;
			} else if (!old) {
				old = CUBE_CLONE_SEEN;	/* reset: retry */
			}
		}
		if (old) {
			__ClearPageLocked(page);
			put_page(page);
			if (xa_is_err(old))
				return ERR_PTR(xa_err(old));
			continue;
		}
		atomic64_inc(&clone->private_pages);
		atomic64_inc(&clone->cow_faults);
		atomic64_inc(&cube_stats.private_pages);
		/* Mappings may still map the shared page: zap them. */
		if (*zapped)
			cube_clone_zap(clone, index, 1);
		get_page(page);		/* for the caller; @pages has one */
		return page;
	}
}

static int cube_clone_pte_noop(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

/*
 * Make sure the page table that maps @addr exists, so that mapping a page
 * there allocates nothing while a page lock is held.  *@done: the PMD range
 * already known to have one.
 */
static int cube_clone_populate(struct vm_area_struct *vma, unsigned long addr,
			       unsigned long *done)
{
	int ret;

	if (*done == (addr & PMD_MASK))
		return 0;
	ret = apply_to_page_range(vma->vm_mm, addr & PAGE_MASK, PAGE_SIZE,
				  cube_clone_pte_noop, NULL);
	if (!ret)
		*done = addr & PMD_MASK;
	return ret;
}

/*
 * Make the PTE at @addr writable and dirty if it maps @data, a private
 * page of the clone: what the core mm's write fault does to a page that
 * ->page_mkwrite allows, done here because a write fault cannot swap the
 * page a shared mapping maps.  The PTE only gains permissions, so no TLB
 * flush and no MMU notifier are needed.  Called under the PTE lock.
 */
static int cube_clone_pte_mkwrite(pte_t *pte, unsigned long addr, void *data)
{
	struct cube_clone_wr *wr = data;
	pte_t old = ptep_get(pte);

	if (pte_present(old) && pte_pfn(old) == page_to_pfn(wr->page))
		set_pte_at(wr->vma->vm_mm, addr, pte,
			   pte_mkdirty(cube_pte_mkwrite(pte_mkyoung(old))));
	return 0;
}

/*
 * Map the clone's private @page, locked, writable at @addr: its first write
 * then costs no fault of its own.  The page lock orders this against a
 * reset (which zaps after removing the page), as for a fault's PTE.  The
 * page table already exists (cube_clone_populate()), so nothing is
 * allocated under the page lock.  Return: whether the page is mapped.
 */
static bool cube_clone_map_writable(struct vm_area_struct *vma,
				    unsigned long addr, struct page *page)
{
	struct cube_clone_wr wr = { .vma = vma, .page = page };
	int ret;

	ret = vm_insert_page(vma, addr, page);
	if (ret && ret != -EBUSY)
		return false;
	if (vma->vm_flags & VM_WRITE)
		apply_to_page_range(vma->vm_mm, addr, PAGE_SIZE,
				    cube_clone_pte_mkwrite, &wr);
	return !ret;
}

/*
 * Map @index into @vma ahead of any access (prefault); count it in
 * @counter.  @write: the page will be written, make its private copy now.
 * *@done as for cube_clone_populate().
 */
static void cube_clone_map_one(struct cube_clone *clone,
			       struct vm_area_struct *vma, pgoff_t index,
			       bool write, unsigned long *done,
			       atomic64_t *counter)
{
	unsigned long addr;
	struct page *page;
	bool zapped;

	if (index < vma->vm_pgoff || index - vma->vm_pgoff >= vma_pages(vma))
		return;
	addr = vma->vm_start + ((index - vma->vm_pgoff) << PAGE_SHIFT);
	if (cube_clone_populate(vma, addr, done))
		return;
	if (write)
		page = cube_clone_get_private(clone, index, &zapped);
	else
		page = cube_clone_get_page(clone, index, false, false);
	if (IS_ERR(page))
		return;
	if (!page) {
		if (cube_clone_map_zero(clone, vma, addr) == VM_FAULT_NOPAGE)
			atomic64_inc(counter);
		return;
	}
	if (write ? cube_clone_map_writable(vma, addr, page) :
		    !vm_insert_page(vma, addr, page))
		atomic64_inc(counter);
	unlock_page(page);
	put_page(page);
}

/*
 * Map what the snapshot holds for this VMA: its working set if recorded,
 * with private copies of the pages it wrote made ahead (their write then
 * costs one fault that copies nothing), else every page with data.
 */
static void cube_clone_prefault(struct cube_clone *clone,
				struct vm_area_struct *vma)
{
	pgoff_t first = vma->vm_pgoff, last = first + vma_pages(vma) - 1;
	struct cube_snapshot *snap = clone->snap;
	unsigned long index, done = ~0UL;
	void *entry;

	if (atomic_long_read(&snap->ws_pages)) {
		xa_for_each_range(&snap->ws, index, entry, first, last) {
			if (fatal_signal_pending(current))
				return;
			cube_clone_map_one(clone, vma, index,
					   entry == CUBE_WS_WRITE, &done,
					   &clone->prefaulted);
			cond_resched();
		}
		return;
	}
	for (; snap; snap = snap->parent) {
		xa_for_each_range(&snap->pages, index, entry, first, last) {
			if (fatal_signal_pending(current))
				return;
			cube_clone_map_one(clone, vma, index, false, &done,
					   &clone->prefaulted);
			cond_resched();
		}
	}
}

/*
 * Fault-around: a read fault also maps the neighbours of the faulting
 * page that hold data (a snapshot page or a private page), as the page
 * cache does for files.  Holes are left to fault on their own, and so is
 * a neighbour whose page lock is taken.  Not for recording clones: their
 * faults are the working set.
 */
#define CUBE_FAULT_AROUND	16

/*
 * Map @n locked pages at consecutive offsets from @index with as few page
 * table lock round trips as the kernel allows, skipping those already
 * mapped; then unlock and release them.
 */
static void cube_clone_map_run(struct cube_clone *clone,
			       struct vm_area_struct *vma, pgoff_t index,
			       struct page **pages, unsigned long n)
{
	unsigned long addr = vma->vm_start +
			     ((index - vma->vm_pgoff) << PAGE_SHIFT);
	unsigned long i = 0, left;

	while (i < n) {
		left = n - i;
		if (!vm_insert_pages(vma, addr + (i << PAGE_SHIFT), pages + i,
				     &left)) {
			atomic64_add(n - i, &clone->around);
			break;
		}
		/* pages[n - left] is already mapped (or failed): skip it */
		atomic64_add(n - left - i, &clone->around);
		i = n - left + 1;
	}
	for (i = 0; i < n; i++) {
		unlock_page(pages[i]);
		put_page(pages[i]);
	}
}

/* Whether @index holds data: a private page, a group's or a snapshot's. */
static bool cube_clone_has_data(struct cube_clone *clone, pgoff_t index)
{
	void *entry = xa_load(&clone->pages, index);

	return (entry && !xa_is_value(entry)) || entry == CUBE_CLONE_MERGED ||
	       cube_snapshot_page(clone->snap, index);
}

static void cube_clone_fault_around(struct cube_clone *clone,
				    struct vm_area_struct *vma, pgoff_t index,
				    unsigned long *done)
{
	pgoff_t first = max_t(pgoff_t, round_down(index, CUBE_FAULT_AROUND),
			      vma->vm_pgoff);
	pgoff_t end = min_t(pgoff_t, first + CUBE_FAULT_AROUND,
			    vma->vm_pgoff + vma_pages(vma));
	struct page *pages[CUBE_FAULT_AROUND], *page;
	unsigned long n = 0;
	pgoff_t i, run = 0;

	/* runs of neighbours locked at once, then mapped together */
	for (i = first; i <= end; i++) {
		page = NULL;
		if (i < end && i != index && cube_clone_has_data(clone, i) &&
		    !cube_clone_populate(vma, vma->vm_start +
					 ((i - vma->vm_pgoff) << PAGE_SHIFT),
					 done)) {
			page = cube_clone_get_page(clone, i, false, true);
			if (!page)	/* a hole after all: @holes is held */
				up_read(&clone->holes);
			if (IS_ERR_OR_NULL(page))
				page = NULL;
		}
		if (page) {
			if (!n)
				run = i;
			pages[n++] = page;
			continue;
		}
		if (n)
			cube_clone_map_run(clone, vma, run, pages, n);
		n = 0;
	}
}

static vm_fault_t cube_clone_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct cube_clone *clone = vma->vm_file->private_data;
	unsigned long done = ~0UL;
	struct page *page;
	bool zapped;

	if (vmf->pgoff >= clone->nr_pages)
		return VM_FAULT_SIGBUS;
	atomic64_inc(&clone->faults);
	/*
	 * CUBE_CLONE_F_PREFAULT: the first fault on a VMA maps the working
	 * set.  Done here rather than at mmap() time, so the VMA is already
	 * in the address_space and every zap reaches what is mapped.
	 */
	if (vma->vm_private_data &&
	    cmpxchg(&vma->vm_private_data, clone, NULL) == clone)
		cube_clone_prefault(clone, vma);

	if (vmf->flags & FAULT_FLAG_WRITE) {
		page = cube_clone_get_private(clone, vmf->pgoff, &zapped);
	} else {
		if (cube_clone_populate(vma, vmf->address, &done))
			return VM_FAULT_OOM;
		if (!(clone->flags & CUBE_CLONE_F_RECORD))
			cube_clone_fault_around(clone, vma, vmf->pgoff, &done);
		page = cube_clone_get_page(clone, vmf->pgoff, true, false);
		if (!page)
			return cube_clone_map_zero(clone, vma, vmf->address);
	}
	if (IS_ERR(page))
		return vmf_error(PTR_ERR(page));
	vmf->page = page;
	return VM_FAULT_LOCKED;
}

/*
 * A write through a read-only PTE of a shared page (or of a private page
 * that was replaced meanwhile): make the private copy, zap the offset in
 * every mapping and map the copy writable here, so the access that is
 * retried does not fault again.  A write after a read is one copy and one
 * fault.
 */
static vm_fault_t cube_clone_unshare(struct cube_clone *clone,
				     struct vm_fault *vmf)
{
	unsigned long addr = vmf->address & PAGE_MASK, done = ~0UL;
	struct page *page;
	bool zapped;

	if (cube_clone_populate(vmf->vma, addr, &done))
		return VM_FAULT_OOM;
	page = cube_clone_get_private(clone, vmf->pgoff, &zapped);
	if (IS_ERR(page))
		return vmf_error(PTR_ERR(page));
	if (!zapped)	/* a stale page, already replaced */
		cube_clone_zap(clone, vmf->pgoff, 1);
	cube_clone_map_writable(vmf->vma, addr, page);
	unlock_page(page);
	put_page(page);
	return VM_FAULT_NOPAGE;
}

static vm_fault_t cube_clone_page_mkwrite(struct vm_fault *vmf)
{
	struct cube_clone *clone = vmf->vma->vm_file->private_data;
	struct page *page = vmf->page;

	atomic64_inc(&clone->faults);
	lock_page(page);
	if (xa_load(&clone->pages, vmf->pgoff) == page)
		return VM_FAULT_LOCKED;		/* private: may be written */
	unlock_page(page);
	return cube_clone_unshare(clone, vmf);
}

/* Only holes are mapped without a struct page: the zero page. */
static vm_fault_t cube_clone_pfn_mkwrite(struct vm_fault *vmf)
{
	struct cube_clone *clone = vmf->vma->vm_file->private_data;

	atomic64_inc(&clone->faults);
	return cube_clone_unshare(clone, vmf);
}

static const struct vm_operations_struct cube_clone_vm_ops = {
	.fault		= cube_clone_fault,
	.page_mkwrite	= cube_clone_page_mkwrite,
	.pfn_mkwrite	= cube_clone_pfn_mkwrite,
};

static int cube_clone_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct cube_clone *clone = file->private_data;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= clone->nr_pages ||
	    vma_pages(vma) > clone->nr_pages - vma->vm_pgoff)
		return -EINVAL;
	/*
	 * Normal struct-page PTEs (GUP and KVM work on them) and the zero
	 * page's special PTEs: VM_MIXEDMAP lets ->fault use vm_insert_page()
	 * and vmf_insert_mixed().
	 */
	vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND);
	vma->vm_ops = &cube_clone_vm_ops;
	vma->vm_private_data = (clone->flags & CUBE_CLONE_F_PREFAULT) ?
			       clone : NULL;
	return 0;
}

/*
 * Drop the clone's private @page at @index, locked by the caller, under
 * @lock: the offset reads the snapshot again (never seen), the page is
 * unlocked and the clone's reference released (mapped PTEs keep theirs;
 * zapping them is the caller's).
 */
static void cube_clone_drop(struct cube_clone *clone, pgoff_t index,
			    struct page *page)
{
	xa_cmpxchg(&clone->pages, index, page, NULL, 0);
	atomic64_dec(&clone->private_pages);
	atomic64_dec(&cube_stats.private_pages);
	unlock_page(page);
	put_page(page);
}

/*
 * How many separate runs of offsets a reset zaps one by one; past that the
 * rest is zapped as one span (each zap is an MMU-notifier round trip).
 */
#define CUBE_RESET_MAX_RUNS	64

/* The offsets a reset has still to zap: [@start, @end), and runs done. */
struct cube_zap_runs {
	pgoff_t start, end;
	unsigned int runs;
};

/* Add @index, found in increasing order, to the offsets to zap. */
static void cube_clone_zap_add(struct cube_clone *clone,
			       struct cube_zap_runs *z, pgoff_t index)
{
	if (index == z->end) {
		z->end++;
		return;
	}
	if (z->end > z->start && z->runs < CUBE_RESET_MAX_RUNS) {
		cube_clone_zap(clone, z->start, z->end - z->start);
		z->runs++;
		z->start = index;
	} else if (z->end == z->start) {
		z->start = index;	/* the first */
	}
	z->end = index + 1;
}

/*
 * The offset @index, shared with the clone's group, reads the snapshot
 * again (never seen); zapping its PTEs is the caller's.  Under @lock.
 * Return: whether it was still shared.
 */
static bool cube_clone_unmerge(struct cube_clone *clone, pgoff_t index)
{
	struct page *shared = cube_clone_shared_page(clone, index,
						     CUBE_CLONE_MERGED);
	bool done;

	lock_page(shared);	/* the lock its faults map it under */
	done = xa_cmpxchg(&clone->pages, index, CUBE_CLONE_MERGED, NULL, 0) ==
	       CUBE_CLONE_MERGED;
	unlock_page(shared);
	if (done)
		atomic64_dec(&clone->shared_pages);
	return done;
}

/*
 * cube_clone_reset() - the clone reads its snapshot again: copy the
 * snapshot's contents back into the first @keep private pages (they stay
 * the clone's, mapped where they were), drop the others.  Only offsets
 * whose private page was dropped are zapped: a PTE of a shared page (the
 * snapshot's, or zeros) or of a kept page stays right, so neither the core
 * mm nor KVM has to fault a guest's working set in again.  A fault racing
 * the reset finds the offset without its private page (removed under the
 * page lock its faults map it with) and maps the snapshot's or makes a new
 * one; the zap that follows removes whatever PTE of the old page is left,
 * as it did for a fault that came before.  *@kept and *@dropped: what was
 * done with the private pages; an offset shared with the clone's merge
 * group reads the snapshot again and counts as dropped.
 */
static void cube_clone_reset(struct cube_clone *clone, u64 keep, u64 *kept,
			     u64 *dropped)
{
	struct cube_zap_runs zap = { 0 };
	unsigned long index;
	struct page *src;
	void *entry;

	*kept = *dropped = 0;
	mutex_lock(&clone->lock);
	xa_for_each(&clone->pages, index, entry) {
		struct page *page = entry;

		cond_resched();		/* up to the clone's size in entries */
		if (entry == CUBE_CLONE_MERGED) {
			if (cube_clone_unmerge(clone, index)) {
				(*dropped)++;
				cube_clone_zap_add(clone, &zap, index);
			}
			continue;
		}
		if (xa_is_value(entry))
			continue;	/* CUBE_CLONE_SEEN: still the snapshot's */
		lock_page(page);
		if (xa_load(&clone->pages, index) != page) {
			unlock_page(page);
			continue;
		}
		if (*kept < keep) {
			/* Immutable: the snapshot's page needs no lock. */
			src = cube_snapshot_page(clone->snap, index);
			if (src)
				copy_highpage(page, src);
			else
				clear_highpage(page);
			unlock_page(page);
			(*kept)++;
			continue;
		}
		cube_clone_drop(clone, index, page);
		(*dropped)++;
		cube_clone_zap_add(clone, &zap, index);
	}
	if (zap.end > zap.start)
		cube_clone_zap(clone, zap.start, zap.end - zap.start);
	atomic64_inc(&clone->resets);
	mutex_unlock(&clone->lock);
}

/*
 * %CUBE_IOC_CLONE_REWIND.  The argument is written back before anything
 * changes, so an argument that cannot take the answer fails with the
 * clone as it was.
 */
static long cube_clone_rewind_ioctl(struct cube_clone *clone,
				    void __user *argp)
{
	struct cube_clone_rewind rw;

	if (copy_from_user(&rw, argp, sizeof(rw)))
		return -EFAULT;
	if (rw.flags || rw.reserved)
		return -EINVAL;
	rw.kept = rw.dropped = 0;
	if (copy_to_user(argp, &rw, sizeof(rw)))
		return -EFAULT;
	cube_clone_reset(clone, rw.keep_pages, &rw.kept, &rw.dropped);
	return copy_to_user(argp, &rw, sizeof(rw)) ? -EFAULT : 0;
}

/* Whether @page holds what the snapshot has at its offset: @src, or zeros. */
static bool cube_clone_page_same(struct page *page, struct page *src)
{
	void *a = kmap_local_page(page), *b;
	bool same;

	if (src) {
		b = kmap_local_page(src);
		same = !memcmp(a, b, PAGE_SIZE);
		kunmap_local(b);
	} else {
		same = !memchr_inv(a, 0, PAGE_SIZE);
	}
	kunmap_local(a);
	return same;
}

/*
 * cube_clone_trim() - drop the private pages that hold the snapshot's
 * contents again.  A first comparison, unlocked, only picks candidates.
 * A candidate's page is locked (its faults wait), its PTEs zapped in every
 * mapping (so neither a process nor KVM can write it any more) and it is
 * compared again: only then is it dropped, its offset back to "never
 * seen".  A candidate written meanwhile stays, and is faulted in again at
 * its next access.
 */
static void cube_clone_trim(struct cube_clone *clone, u64 *scanned,
			    u64 *dropped)
{
	unsigned long index;
	struct page *src;
	void *entry;

	*scanned = *dropped = 0;
	mutex_lock(&clone->lock);
	xa_for_each(&clone->pages, index, entry) {
		struct page *page = entry;

		cond_resched();		/* up to the clone's size in entries */
		if (xa_is_value(entry))
			continue;
		(*scanned)++;
		src = cube_snapshot_page(clone->snap, index);
		if (!cube_clone_page_same(page, src))
			continue;
		lock_page(page);
		cube_clone_zap(clone, index, 1);
		if (xa_load(&clone->pages, index) != page ||
		    !cube_clone_page_same(page, src)) {
			unlock_page(page);
			continue;
		}
		cube_clone_drop(clone, index, page);
		(*dropped)++;
	}
	mutex_unlock(&clone->lock);
}

static long cube_clone_trim_ioctl(struct cube_clone *clone, void __user *argp)
{
	struct cube_clone_trim tr;

	if (copy_from_user(&tr, argp, sizeof(tr)))
		return -EFAULT;
	if (tr.flags || tr.reserved)
		return -EINVAL;
	tr.scanned = tr.dropped = 0;
	if (copy_to_user(argp, &tr, sizeof(tr)))
		return -EFAULT;
	cube_clone_trim(clone, &tr.scanned, &tr.dropped);
	return copy_to_user(argp, &tr, sizeof(tr)) ? -EFAULT : 0;
}

/*
 * The private @page at @index, locked, is no longer the clone's: its
 * offset maps the group's page.  @given: @page became the group's (the
 * @pages reference moves to the group), else it is freed.
 */
static void cube_clone_share(struct cube_clone *clone, pgoff_t index,
			     struct page *page, bool given)
{
	xa_cmpxchg(&clone->pages, index, page, CUBE_CLONE_MERGED, 0);
	atomic64_dec(&clone->private_pages);
	atomic64_dec(&cube_stats.private_pages);
	atomic64_inc(&clone->shared_pages);
	unlock_page(page);
	if (given)
		atomic64_inc(&cube_stats.shared_pages);
	else
		put_page(page);
}

/*
 * Free the private @page at @index if it holds the bytes of the group's
 * page @shared there; as cube_clone_trim() does with the snapshot's.
 */
static bool cube_clone_merge_into(struct cube_clone *clone, pgoff_t index,
				  struct page *page, struct page *shared)
{
	if (!cube_clone_page_same(page, shared))
		return false;
	lock_page(page);
	cube_clone_zap(clone, index, 1);
	if (xa_load(&clone->pages, index) != page ||
	    !cube_clone_page_same(page, shared)) {
		unlock_page(page);
		return false;
	}
	cube_clone_share(clone, index, page, false);
	return true;
}

/* Store @page at @index of @stable if it has none: no allocation. */
static bool cube_merge_stable_fill(struct xarray *stable, pgoff_t index,
				   struct page *page)
{
	bool ok = false;

	xa_lock(stable);
	if (!xa_load(stable, index))	/* none, or the slot reserved */
		ok = !xa_is_err(__xa_store(stable, index, page, 0));
	xa_unlock(stable);
	return ok;
}

/*
 * Give the private @page at @index, whose bytes hash to @hash as a
 * sibling's did, to the group: from now on it is never written, and the
 * clone maps it read-only like its siblings will.  The group's slot is
 * reserved first, so nothing allocates under the page lock.
 */
static bool cube_clone_promote(struct cube_clone *clone, pgoff_t index,
			       struct page *page, u32 hash)
{
	struct xarray *stable = &clone->group->stable;

	if (xa_reserve(stable, index, GFP_KERNEL_ACCOUNT))
		return false;
	lock_page(page);
	cube_clone_zap(clone, index, 1);
	if (xa_load(&clone->pages, index) != page ||
	    cube_page_hash(page) != hash ||
	    !cube_merge_stable_fill(stable, index, page)) {
		unlock_page(page);
		xa_release(stable, index);	/* unless another filled it */
		return false;
	}
	cube_clone_share(clone, index, page, true);
	return true;
}

/*
 * An offer in a group's @seen: the hash of a page's bytes and which clone
 * offered them (31 bits of its tag), in a value entry.  A clone's own
 * offer made again is no match: its page stays its own until a sibling
 * holds the same bytes.
 */
#define CUBE_OFFER_TAG_BITS	31

static u32 cube_clone_offer_tag(struct cube_clone *clone)
{
	return clone->tag & GENMASK(CUBE_OFFER_TAG_BITS - 1, 0);
}

static void *cube_clone_offer(struct cube_clone *clone, u32 hash)
{
	return xa_mk_value(((unsigned long)hash << CUBE_OFFER_TAG_BITS) |
			   cube_clone_offer_tag(clone));
}

static u32 cube_offer_hash(void *offer)
{
	return xa_to_value(offer) >> CUBE_OFFER_TAG_BITS;
}

static u32 cube_offer_tag(void *offer)
{
	return xa_to_value(offer) & GENMASK(CUBE_OFFER_TAG_BITS - 1, 0);
}

/*
 * cube_clone_merge() - share the clone's private pages with its merge
 * group (see &struct cube_clone_merge): each is freed when the group has a
 * page with its bytes at its offset, becomes the group's page there when a
 * sibling offered the same bytes (their hash) last, and is offered
 * otherwise.  The first call joins the group @id.
 */
static int cube_clone_merge(struct cube_clone *clone, u64 id,
			    struct cube_clone_merge *m)
{
	struct cube_merge_group *group;
	unsigned long index;
	struct page *shared;
	void *entry, *offer;
	int ret = 0;
	u32 hash;

	mutex_lock(&clone->lock);
	group = clone->group;
	if (group && group->id != id) {
		ret = -EBUSY;
		goto out;
	}
	if (!group) {
		group = cube_merge_group_get(clone->snap, id);
		if (!group) {
			ret = -ENOMEM;
			goto out;
		}
		/* before any CUBE_CLONE_MERGED entry refers to it */
		smp_store_release(&clone->group, group);
	}
	xa_for_each(&clone->pages, index, entry) {
		struct page *page = entry;

		cond_resched();		/* up to the clone's size in entries */
		if (xa_is_value(entry))
			continue;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		m->scanned++;
		shared = xa_load(&group->stable, index);
		if (shared) {
			m->merged += cube_clone_merge_into(clone, index, page,
							   shared);
			continue;
		}
		hash = cube_page_hash(page);
		offer = xa_load(&group->seen, index);
		if (xa_is_value(offer) &&
		    cube_offer_hash(offer) == hash &&
		    cube_offer_tag(offer) != cube_clone_offer_tag(clone)) {
			m->promoted += cube_clone_promote(clone, index, page,
							  hash);
			continue;
		}
		/* a hint only: without memory, the offset is not offered */
		xa_store(&group->seen, index, cube_clone_offer(clone, hash),
			 GFP_KERNEL_ACCOUNT);
	}
out:
	mutex_unlock(&clone->lock);
	return ret;
}

/*
 * %CUBE_IOC_CLONE_MERGE.  The argument is written back before anything
 * changes, so an argument that cannot take the answer fails with the
 * clone as it was.
 */
static long cube_clone_merge_ioctl(struct cube_clone *clone,
				   void __user *argp)
{
	struct cube_clone_merge m;
	int ret;

	if (copy_from_user(&m, argp, sizeof(m)))
		return -EFAULT;
	if (!m.group || m.flags || m.reserved)
		return -EINVAL;
	m.scanned = m.merged = m.promoted = 0;
	if (copy_to_user(argp, &m, sizeof(m)))
		return -EFAULT;
	ret = cube_clone_merge(clone, m.group, &m);
	if (copy_to_user(argp, &m, sizeof(m)))
		return -EFAULT;
	return ret;
}

static long cube_clone_counters_ioctl(struct cube_clone *clone,
				      void __user *argp)
{
	struct cube_clone_counters c = {
		.snapshot_id = clone->snap->id,
		.size = (u64)clone->nr_pages << PAGE_SHIFT,
		.private_pages = atomic64_read(&clone->private_pages),
		.shared_pages = atomic64_read(&clone->shared_pages),
		.faults = atomic64_read(&clone->faults),
		.cow_faults = atomic64_read(&clone->cow_faults),
		.prefaulted = atomic64_read(&clone->prefaulted),
		.around = atomic64_read(&clone->around),
		.resets = atomic64_read(&clone->resets),
	};

	return copy_to_user(argp, &c, sizeof(c)) ? -EFAULT : 0;
}

static long cube_clone_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct cube_clone *clone = file->private_data;
	u64 kept, dropped;

	switch (cmd) {
	case CUBE_IOC_CLONE_RESET:
		cube_clone_reset(clone, 0, &kept, &dropped);
		return 0;
	case CUBE_IOC_CLONE_REWIND:
		return cube_clone_rewind_ioctl(clone, (void __user *)arg);
	case CUBE_IOC_CLONE_TRIM:
		return cube_clone_trim_ioctl(clone, (void __user *)arg);
	case CUBE_IOC_CLONE_MERGE:
		return cube_clone_merge_ioctl(clone, (void __user *)arg);
	case CUBE_IOC_CLONE_COUNTERS:
		return cube_clone_counters_ioctl(clone, (void __user *)arg);
	}
	return -ENOTTY;
}

static int cube_clone_release(struct inode *inode, struct file *file)
{
	cube_clone_put(file->private_data);
	return 0;
}

static const struct file_operations cube_clone_fops = {
	.owner		= THIS_MODULE,
	.mmap		= cube_clone_mmap,
	.unlocked_ioctl	= cube_clone_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.release	= cube_clone_release,
	.llseek		= noop_llseek,
};

/**
 * cube_clone_fork() - snapshot the current contents of a clone
 * @fd: the clone fd
 * @out: the new, unlinked snapshot
 *
 * The new snapshot extends the clone's snapshot and holds copies of the
 * clone's private pages and of its merge group's pages it maps, only.  Pages the guest writes meanwhile may be
 * caught half written: pause the vCPUs first.
 *
 * Return: 0 or a negative errno.
 */
int cube_clone_fork(int fd, struct cube_snapshot **out)
{
	struct cube_snapshot *snap;
	struct cube_clone *clone;
	struct page *copy = NULL;
	unsigned long index;
	void *entry;
	int ret = 0;

	clone = cube_clone_fget(fd);
	if (IS_ERR(clone))
		return PTR_ERR(clone);
	if (clone->snap->depth >= CUBE_SNAPSHOT_MAX_DEPTH) {
		ret = -EMLINK;
		goto out_put;
	}
	snap = cube_snapshot_alloc(clone->nr_pages, clone->snap);
	if (!snap) {
		ret = -ENOMEM;
		goto out_put;
	}

	mutex_lock(&clone->lock);
	xa_for_each(&clone->pages, index, entry) {
		cond_resched();
		/* a group's page holds the clone's bytes too; never written */
		if (entry == CUBE_CLONE_MERGED)
			entry = cube_clone_shared_page(clone, index, entry);
		else if (xa_is_value(entry))
			continue;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (!copy) {
			copy = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT);
			if (!copy) {
				ret = -ENOMEM;
				break;
			}
		}
		copy_highpage(copy, entry);
		ret = cube_snapshot_store(snap, index, copy);
		if (ret < 0)
			break;
		if (ret)
			copy = NULL;
		ret = 0;
	}
	mutex_unlock(&clone->lock);
	if (copy)
		__free_page(copy);
	if (ret)
		cube_snapshot_put(snap);
	else
		*out = snap;
out_put:
	cube_clone_put(clone);
	return ret;
}

static struct cube_clone *cube_clone_alloc(struct cube_snapshot *snap,
					   unsigned int flags)
{
	struct cube_clone *clone;

	clone = kzalloc(sizeof(*clone), GFP_KERNEL_ACCOUNT);
	if (!clone)
		return NULL;
	clone->inode = alloc_anon_inode(cube_mem_mnt->mnt_sb);
	if (IS_ERR(clone->inode)) {
		kfree(clone);
		return NULL;
	}
	if (!CUBE_HOLES_MAP_ZERO_PFN) {
		clone->zero = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT |
					 __GFP_ZERO);
		if (!clone->zero) {
			iput(clone->inode);
			kfree(clone);
			return NULL;
		}
	}
	kref_init(&clone->ref);
	clone->snap = snap;
	clone->nr_pages = snap->nr_pages;
	clone->flags = flags;
	clone->tag = atomic_inc_return(&cube_clone_tags);
	xa_init(&clone->pages);
	mutex_init(&clone->lock);
	init_rwsem(&clone->holes);
	i_size_write(clone->inode, (loff_t)snap->nr_pages << PAGE_SHIFT);
	atomic_inc(&snap->clones);
	atomic64_inc(&cube_stats.clones);
	return clone;
}

/**
 * cube_clone_create_ioctl() - %CUBE_IOC_CLONE_CREATE
 * @argp: &struct cube_clone_create
 *
 * Return: the new clone fd or a negative errno.
 */
long cube_clone_create_ioctl(void __user *argp)
{
	struct cube_clone_create arg;
	struct cube_snapshot *snap;
	struct cube_clone *clone;
	struct file *file;
	int fd, ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~CUBE_CLONE_F_ALL) || arg.reserved)
		return -EINVAL;
	snap = cube_snapshot_get_owned(arg.snapshot_id, &ret);
	if (!snap)
		return ret;

	ret = -ENOMEM;
	clone = cube_clone_alloc(snap, arg.flags);
	if (!clone) {
		cube_snapshot_put(snap);
		return ret;
	}
	/* From here the clone owns the snapshot reference. */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_clone;
	}
	/* The file's references: __fput() drops them. */
	ret = -ENOENT;
	if (!try_module_get(THIS_MODULE))
		goto err_fd;
	ihold(clone->inode);
	file = alloc_file_pseudo(clone->inode, cube_mem_mnt, "cube-clone",
				 O_RDWR, &cube_clone_fops);
	if (IS_ERR(file)) {
		iput(clone->inode);
		module_put(THIS_MODULE);
		ret = PTR_ERR(file);
		goto err_fd;
	}
	file->private_data = clone;
	arg.fd = fd;
	if (copy_to_user(argp, &arg, sizeof(arg))) {
		/* The file owns the clone reference now. */
		fput(file);
		put_unused_fd(fd);
		return -EFAULT;
	}
	fd_install(fd, file);
	return fd;

err_fd:
	put_unused_fd(fd);
err_clone:
	cube_clone_put(clone);
	return ret;
}

static int cube_mem_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, CUBE_MEM_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: the internal mount would pin the module forever.  It lives
 * from module init to exit, and every clone file pins the module itself.
 */
static struct file_system_type cube_mem_fs_type = {
	.name		= "cube_mem",
	.init_fs_context = cube_mem_init_fs_context,
	.kill_sb	= kill_anon_super,
};

int cube_clone_fs_init(void)
{
	cube_mem_mnt = kern_mount(&cube_mem_fs_type);
	return PTR_ERR_OR_ZERO(cube_mem_mnt);
}

void cube_clone_fs_exit(void)
{
	kern_unmount(cube_mem_mnt);
}
