/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cube: disposable KVM microVM sandboxes.
 *
 * This is the one header shared by the cube kernel module (cube.ko), the
 * VMM, cubectl and cubed.  It defines the /dev/cube ioctl interface and the
 * "cube" generic-netlink family.  See Documentation/userspace-api/cube.rst.
 */
#ifndef _UAPI_LINUX_CUBE_H
#define _UAPI_LINUX_CUBE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/**
 * DOC: versioning
 *
 * CUBE_API_VERSION is bumped whenever the ioctl or netlink interface gains
 * something a client may want to test for.  Existing ioctl numbers, structure
 * layouts and netlink attribute numbers never change meaning; structures only
 * grow at their end and carry their own size.
 */
#define CUBE_API_VERSION	1

/** define CUBE_DEVICE_NAME - name of the misc device node under /dev */
#define CUBE_DEVICE_NAME	"cube"

/** define CUBE_IOCTL_MAGIC - ioctl type byte of every /dev/cube ioctl */
#define CUBE_IOCTL_MAGIC	0xCB

/**
 * struct cube_version - answer of %CUBE_IOC_VERSION
 * @api_version: the module's %CUBE_API_VERSION
 * @genl_version: the module's %CUBE_GENL_VERSION
 * @reserved: zero
 */
struct cube_version {
	__u32 api_version;
	__u32 genl_version;
	__u64 reserved;
};

/*
 * ioctls on /dev/cube.  Numbers 0x00-0x0f: the device itself;
 * 0x10-0x2f: sandboxes and pools; 0x30-0x4f: snapshots and clones.
 */
#define CUBE_IOC_VERSION	_IOR(CUBE_IOCTL_MAGIC, 0x00, struct cube_version)

/* --- sandboxes and pools (0x10-0x2f) --- */

/**
 * DOC: sandboxes
 *
 * %CUBE_IOC_SANDBOX_CREATE on /dev/cube returns a new sandbox fd (an anon
 * inode, close-on-exec).  The process that created it is the sandbox's
 * owner (the VMM).  Closing the last reference to the fd, which happens at
 * the latest when the owner dies, tears the sandbox down: it leaves its
 * pool, drops its KVM VM file, network namespace, eBPF links and clone, and
 * disappears from netlink dumps.  Every other ioctl below is issued on the
 * sandbox fd.  Configuration (VM, netns, eBPF links, clone, limits, labels)
 * is only accepted in %CUBE_SANDBOX_CREATING.
 *
 * poll() on the sandbox fd reports %EPOLLIN | %EPOLLPRI once the sandbox has
 * been asked to stop (%CUBE_CMD_KILL_SANDBOX) and %EPOLLRDBAND once it has
 * been taken out of a pool by a taker.
 */

/** define CUBE_NAME_MAX - size of template, pool and label key buffers */
#define CUBE_NAME_MAX		64
/** define CUBE_LABEL_VALUE_MAX - size of a label value buffer */
#define CUBE_LABEL_VALUE_MAX	128
/** define CUBE_LABELS_MAX - maximum number of labels per sandbox */
#define CUBE_LABELS_MAX		16
/** define CUBE_BPF_LINKS_MAX - maximum number of eBPF links per sandbox */
#define CUBE_BPF_LINKS_MAX	8
/** define CUBE_VCPUS_MAX - maximum vCPU count a sandbox may declare */
#define CUBE_VCPUS_MAX		1024

/**
 * enum cube_sandbox_state - life cycle of a sandbox
 * @CUBE_SANDBOX_CREATING: just created, being configured
 * @CUBE_SANDBOX_READY: configured and booted, waiting for work (may be pooled)
 * @CUBE_SANDBOX_RUNNING: running a workload
 * @CUBE_SANDBOX_PAUSED: vCPUs stopped
 * @CUBE_SANDBOX_EXITED: finished, with an exit reason; final
 * @__CUBE_SANDBOX_STATE_MAX: number of states
 *
 * Allowed transitions: CREATING -> READY, READY -> RUNNING,
 * RUNNING <-> PAUSED, and any state but EXITED -> EXITED.
 */
enum cube_sandbox_state {
	CUBE_SANDBOX_CREATING,
	CUBE_SANDBOX_READY,
	CUBE_SANDBOX_RUNNING,
	CUBE_SANDBOX_PAUSED,
	CUBE_SANDBOX_EXITED,
	__CUBE_SANDBOX_STATE_MAX
};

/**
 * enum cube_exit_reason - why a sandbox exited
 * @CUBE_EXIT_NONE: not exited
 * @CUBE_EXIT_SHUTDOWN: the guest shut down
 * @CUBE_EXIT_CRASH: the guest or the VMM crashed
 * @CUBE_EXIT_KILLED: stopped on request (%CUBE_CMD_KILL_SANDBOX)
 * @CUBE_EXIT_ERROR: the VMM gave up on an error
 * @CUBE_EXIT_CLOSED: the sandbox fd was closed without an exit state
 * @__CUBE_EXIT_MAX: number of reasons
 */
enum cube_exit_reason {
	CUBE_EXIT_NONE,
	CUBE_EXIT_SHUTDOWN,
	CUBE_EXIT_CRASH,
	CUBE_EXIT_KILLED,
	CUBE_EXIT_ERROR,
	CUBE_EXIT_CLOSED,
	__CUBE_EXIT_MAX
};

/* Bits of &struct cube_sandbox_info.flags and %CUBE_SANDBOX_A_FLAGS */
#define CUBE_SANDBOX_F_KILL_REQUESTED	(1U << 0)	/* asked to stop */
#define CUBE_SANDBOX_F_POOLED		(1U << 1)	/* waiting in a pool */
#define CUBE_SANDBOX_F_TAKEN		(1U << 2)	/* claimed from a pool */
#define CUBE_SANDBOX_F_VM		(1U << 3)	/* a KVM VM is bound */
#define CUBE_SANDBOX_F_NETNS		(1U << 4)	/* a netns is attached */
#define CUBE_SANDBOX_F_CLONE		(1U << 5)	/* a clone is attached */

/**
 * struct cube_sandbox_create - argument of %CUBE_IOC_SANDBOX_CREATE
 * @flags: zero
 * @reserved: zero
 * @id: out: the sandbox's id, unique and never reused while cube.ko is loaded
 *
 * The ioctl returns the new sandbox fd.
 */
struct cube_sandbox_create {
	__u32 flags;
	__u32 reserved;
	__u64 id;
};

/**
 * struct cube_fd_arg - an fd handed to a sandbox
 * @fd: the file descriptor
 * @flags: zero
 */
struct cube_fd_arg {
	__s32 fd;
	__u32 flags;
};

/**
 * struct cube_sandbox_state_arg - argument of %CUBE_IOC_SANDBOX_SET_STATE
 * @state: the new &enum cube_sandbox_state
 * @exit_reason: &enum cube_exit_reason, non-zero exactly when @state is
 *	%CUBE_SANDBOX_EXITED (and not %CUBE_EXIT_CLOSED, which only the
 *	module sets)
 * @reserved: zero
 */
struct cube_sandbox_state_arg {
	__u32 state;
	__u32 exit_reason;
	__u64 reserved;
};

/**
 * struct cube_sandbox_limits - argument of %CUBE_IOC_SANDBOX_SET_LIMITS
 * @flags: zero
 * @vcpus: declared vCPU count, 1..%CUBE_VCPUS_MAX
 * @memory_bytes: declared guest memory, non-zero multiple of 4096
 * @owner_uid: uid of the user the sandbox runs work for
 * @reserved: zero
 * @template_name: NUL-terminated template name, 1..%CUBE_NAME_MAX - 1
 *	bytes of [A-Za-z0-9._-]; the rest of the buffer zero
 */
struct cube_sandbox_limits {
	__u32 flags;
	__u32 vcpus;
	__u64 memory_bytes;
	__u32 owner_uid;
	__u32 reserved;
	char template_name[CUBE_NAME_MAX];
};

/* &struct cube_sandbox_label.flags */
#define CUBE_LABEL_F_DELETE	(1U << 0)	/* remove @key; @value empty */

/**
 * struct cube_sandbox_label - argument of %CUBE_IOC_SANDBOX_SET_LABEL
 * @flags: 0 to add or replace @key, %CUBE_LABEL_F_DELETE to remove it
 * @reserved: zero
 * @key: NUL-terminated, 1..%CUBE_NAME_MAX - 1 bytes of [A-Za-z0-9._/-]
 * @value: NUL-terminated, 0..%CUBE_LABEL_VALUE_MAX - 1 printable bytes
 *
 * The bytes after each string's NUL must be zero.  A sandbox holds at most
 * %CUBE_LABELS_MAX labels.
 */
struct cube_sandbox_label {
	__u32 flags;
	__u32 reserved;
	char key[CUBE_NAME_MAX];
	char value[CUBE_LABEL_VALUE_MAX];
};

/**
 * struct cube_sandbox_info - answer of %CUBE_IOC_SANDBOX_GET_INFO
 * @id: the sandbox's id
 * @state: &enum cube_sandbox_state
 * @exit_reason: &enum cube_exit_reason
 * @flags: %CUBE_SANDBOX_F_* bits
 * @vcpus: declared vCPU count (0: not declared)
 * @vm_vcpus: vCPUs created in the bound KVM VM
 * @nr_bpf_links: number of attached eBPF links
 * @memory_bytes: declared guest memory
 * @netns_cookie: cookie of the attached network namespace, 0 when none
 * @private_pages: pages the attached clone holds privately
 * @shared_pages: snapshot pages the attached clone maps
 * @vm_memory_bytes: guest memory registered in the bound KVM VM
 *	(KVM_SET_USER_MEMORY_REGION slots of address space 0)
 */
struct cube_sandbox_info {
	__u64 id;
	__u32 state;
	__u32 exit_reason;
	__u32 flags;
	__u32 vcpus;
	__u32 vm_vcpus;
	__u32 nr_bpf_links;
	__u64 memory_bytes;
	__u64 netns_cookie;
	__u64 private_pages;
	__u64 shared_pages;
	__u64 vm_memory_bytes;
};

/**
 * struct cube_pool_arg - a pool, by name
 * @flags: zero
 * @reserved: zero
 * @name: NUL-terminated pool name, as for &struct cube_sandbox_limits.template_name
 * @id: out (%CUBE_IOC_POOL_TAKE): id of the sandbox taken
 * @owner_pid: out (%CUBE_IOC_POOL_TAKE): pid of its owner, in the caller's
 *	pid namespace (0 when not visible there)
 * @reserved2: zero
 */
struct cube_pool_arg {
	__u32 flags;
	__u32 reserved;
	char name[CUBE_NAME_MAX];
	__u64 id;
	__u32 owner_pid;
	__u32 reserved2;
};

/**
 * struct cube_sandbox_ref - a sandbox, by id
 * @id: the sandbox's id
 * @flags: zero
 * @reserved: zero
 *
 * %CUBE_IOC_SANDBOX_NETNS_OPEN returns a new close-on-exec fd of the
 * sandbox's network namespace (as set with %CUBE_IOC_SANDBOX_SET_NETNS),
 * for setns() or a socket made in it: how a host service (cubed's port
 * proxy) reaches a sandbox's guest.  It needs %CAP_NET_ADMIN (%EPERM);
 * %ENOENT when no live sandbox has @id or it has no namespace.
 */
struct cube_sandbox_ref {
	__u64 id;
	__u32 flags;
	__u32 reserved;
};

/* on /dev/cube */
#define CUBE_IOC_SANDBOX_CREATE	_IOWR(CUBE_IOCTL_MAGIC, 0x10, struct cube_sandbox_create)
#define CUBE_IOC_POOL_TAKE	_IOWR(CUBE_IOCTL_MAGIC, 0x11, struct cube_pool_arg)
#define CUBE_IOC_SANDBOX_NETNS_OPEN	_IOW(CUBE_IOCTL_MAGIC, 0x12, struct cube_sandbox_ref)
/* on a sandbox fd */
#define CUBE_IOC_SANDBOX_BIND_VM	_IOW(CUBE_IOCTL_MAGIC, 0x18, struct cube_fd_arg)
#define CUBE_IOC_SANDBOX_SET_NETNS	_IOW(CUBE_IOCTL_MAGIC, 0x19, struct cube_fd_arg)
#define CUBE_IOC_SANDBOX_ADD_BPF_LINK	_IOW(CUBE_IOCTL_MAGIC, 0x1a, struct cube_fd_arg)
#define CUBE_IOC_SANDBOX_SET_CLONE	_IOW(CUBE_IOCTL_MAGIC, 0x1b, struct cube_fd_arg)
#define CUBE_IOC_SANDBOX_SET_STATE	_IOW(CUBE_IOCTL_MAGIC, 0x1c, struct cube_sandbox_state_arg)
#define CUBE_IOC_SANDBOX_SET_LIMITS	_IOW(CUBE_IOCTL_MAGIC, 0x1d, struct cube_sandbox_limits)
#define CUBE_IOC_SANDBOX_SET_LABEL	_IOW(CUBE_IOCTL_MAGIC, 0x1e, struct cube_sandbox_label)
#define CUBE_IOC_SANDBOX_GET_INFO	_IOR(CUBE_IOCTL_MAGIC, 0x1f, struct cube_sandbox_info)
#define CUBE_IOC_SANDBOX_POOL_ENTER	_IOW(CUBE_IOCTL_MAGIC, 0x20, struct cube_pool_arg)
#define CUBE_IOC_SANDBOX_POOL_LEAVE	_IO(CUBE_IOCTL_MAGIC, 0x21)

/* --- snapshots and clones (0x30-0x4f) --- */

/**
 * DOC: snapshots and clones
 *
 * A snapshot is an immutable copy of guest memory with a 64-bit id: the
 * load's generation (bits 63-32, random and never zero, drawn each time
 * cube.ko loads) over a sequence number (bits 31-0, never reused while
 * cube.ko is loaded).  An id kept from an earlier load (in a file, say)
 * therefore names no snapshot (%ENOENT), rather than one made since.
 * Within a load ids grow.  %CUBE_IOC_SNAPSHOT_CREATE takes it from a
 * memfd range, from a range of the caller's memory, or from a clone (to fork
 * a live sandbox).  All-zero pages take no memory.  A snapshot lives until it
 * is deleted; deleting one that clones or child snapshots still use unlinks
 * its id at once and frees its pages when the last user goes.
 *
 * %CUBE_IOC_CLONE_CREATE returns a clone fd of a snapshot.  A %MAP_SHARED
 * mapping of the clone fd is copy-on-write guest memory: reads see the
 * snapshot, the first write to a page gives the clone a private copy.  Every
 * mapping of one clone fd sees the same memory; no clone sees another's
 * writes.  The ioctls on a clone fd are %CUBE_IOC_CLONE_RESET (drop the
 * clone's private pages), %CUBE_IOC_CLONE_REWIND (copy the snapshot back
 * into them, keeping them), %CUBE_IOC_CLONE_TRIM (drop those that hold
 * the snapshot's contents again) and %CUBE_IOC_CLONE_COUNTERS.
 */

/** define CUBE_SNAPSHOT_MAX_SIZE - largest snapshot, in bytes (1 TiB) */
#define CUBE_SNAPSHOT_MAX_SIZE		(1ULL << 40)
/** define CUBE_SNAPSHOT_MAX_DEPTH - longest chain of snapshots of clones */
#define CUBE_SNAPSHOT_MAX_DEPTH		16

/**
 * enum cube_snapshot_source - where %CUBE_IOC_SNAPSHOT_CREATE reads memory
 * @CUBE_SNAPSHOT_SRC_MEMFD: @length bytes at @offset of the memfd @fd
 * @CUBE_SNAPSHOT_SRC_USER: @length bytes at @addr in the caller's memory
 * @CUBE_SNAPSHOT_SRC_CLONE: the current contents of the clone fd @fd; the
 *	new snapshot shares the clone's snapshot's pages and holds copies of
 *	the clone's private pages only
 */
enum cube_snapshot_source {
	CUBE_SNAPSHOT_SRC_MEMFD = 1,
	CUBE_SNAPSHOT_SRC_USER = 2,
	CUBE_SNAPSHOT_SRC_CLONE = 3,
};

/**
 * struct cube_snapshot_create - argument of %CUBE_IOC_SNAPSHOT_CREATE
 * @source: &enum cube_snapshot_source
 * @fd: the memfd (%CUBE_SNAPSHOT_SRC_MEMFD) or clone fd
 *	(%CUBE_SNAPSHOT_SRC_CLONE); otherwise -1
 * @flags: zero
 * @reserved: zero
 * @offset: %CUBE_SNAPSHOT_SRC_MEMFD: page-aligned offset in the memfd;
 *	otherwise zero
 * @addr: %CUBE_SNAPSHOT_SRC_USER: page-aligned address; otherwise zero
 * @length: page-aligned, not zero, at most %CUBE_SNAPSHOT_MAX_SIZE; zero
 *	for %CUBE_SNAPSHOT_SRC_CLONE (the clone's size is used)
 * @id: out: the new snapshot's id
 *
 * Errors: %EINVAL for a bad @source, @flags, @reserved, a field that must
 * be zero, a zero or unaligned @length, @offset or @addr, or an fd of the
 * wrong type (not a shmem memfd, not a clone fd); %EBADF for an @fd that is
 * not open (or a memfd not open for reading); %EOVERFLOW when @offset +
 * @length or @addr + @length overflows; %EFBIG when @length is larger than
 * %CUBE_SNAPSHOT_MAX_SIZE; %ERANGE when the range ends past the memfd's
 * size; %EFAULT for an unreadable user range; %EMLINK when the clone's
 * snapshot is already %CUBE_SNAPSHOT_MAX_DEPTH deep; %EINTR when a fatal
 * signal arrived; %ENOSPC when this load has given out 2^32 - 1 ids;
 * %ENOMEM.  On error nothing is created.
 */
struct cube_snapshot_create {
	__u32 source;
	__s32 fd;
	__u32 flags;
	__u32 reserved;
	__u64 offset;
	__u64 addr;
	__u64 length;
	__u64 id;
};

/**
 * struct cube_snapshot_id - argument of %CUBE_IOC_SNAPSHOT_DELETE
 * @id: the snapshot
 * @flags: zero
 * @reserved: zero
 *
 * Errors: %EINVAL for non-zero @flags or @reserved, %ENOENT for an unknown
 * (or already deleted) id.
 */
struct cube_snapshot_id {
	__u64 id;
	__u32 flags;
	__u32 reserved;
};

/**
 * struct cube_snapshot_info - argument of %CUBE_IOC_SNAPSHOT_INFO
 * @id: in: the snapshot
 * @flags: in: zero
 * @depth: out: 1 for a snapshot of memory, parent's depth + 1 for a
 *	snapshot of a clone
 * @size: out: size in bytes
 * @pages: out: pages this snapshot holds itself (not its parent's)
 * @parent_id: out: the snapshot this one extends (0: none)
 * @clones: out: live clones of this snapshot
 * @children: out: live snapshots taken of its clones
 * @ws_pages: out: pages in its recorded working set
 *
 * Errors: %EINVAL for non-zero @flags, %ENOENT for an unknown id.
 */
struct cube_snapshot_info {
	__u64 id;
	__u32 flags;
	__u32 depth;
	__u64 size;
	__u64 pages;
	__u64 parent_id;
	__u64 clones;
	__u64 children;
	__u64 ws_pages;
};

/** define CUBE_CLONE_F_PREFAULT - map the working set (or every snapshot
 *	page when none is recorded) at mmap() time, so the guest takes few
 *	faults */
#define CUBE_CLONE_F_PREFAULT	(1U << 0)
/** define CUBE_CLONE_F_RECORD - add the pages this clone touches to its
 *	snapshot's working set (with %CUBE_CLONE_F_PREFAULT: the pages it
 *	touches beyond what was prefaulted) */
#define CUBE_CLONE_F_RECORD	(1U << 1)
#define CUBE_CLONE_F_ALL	(CUBE_CLONE_F_PREFAULT | CUBE_CLONE_F_RECORD)

/**
 * struct cube_clone_create - argument of %CUBE_IOC_CLONE_CREATE
 * @snapshot_id: the snapshot to clone
 * @flags: %CUBE_CLONE_F_* bits
 * @fd: out: the clone fd (close-on-exec), also the ioctl's return value
 * @reserved: zero
 *
 * Errors: %EINVAL for unknown @flags or non-zero @reserved, %ENOENT for an
 * unknown snapshot, %EMFILE, %ENOMEM.
 */
struct cube_clone_create {
	__u64 snapshot_id;
	__u32 flags;
	__s32 fd;
	__u64 reserved;
};

/**
 * struct cube_clone_counters - answer of %CUBE_IOC_CLONE_COUNTERS
 * @snapshot_id: the clone's snapshot
 * @size: size of the clone in bytes
 * @private_pages: pages the clone holds privately (it wrote to them, or
 *	%CUBE_IOC_CLONE_REWIND kept them)
 * @shared_pages: distinct snapshot pages (zero pages included) the clone
 *	has mapped since it was created (a reset keeps them mapped)
 * @faults: page faults the clone handled (fault and write-notify calls)
 * @cow_faults: private copies made
 * @prefaulted: pages mapped by %CUBE_CLONE_F_PREFAULT
 * @around: pages mapped by fault-around: a read fault of a clone that does
 *	not record also maps the neighbours that hold data
 * @resets: %CUBE_IOC_CLONE_RESET calls
 */
struct cube_clone_counters {
	__u64 snapshot_id;
	__u64 size;
	__u64 private_pages;
	__u64 shared_pages;
	__u64 faults;
	__u64 cow_faults;
	__u64 prefaulted;
	__u64 around;
	__u64 resets;
};

/**
 * struct cube_clone_rewind - argument of %CUBE_IOC_CLONE_REWIND
 * @keep_pages: in: how many of the clone's private pages may stay its
 *	own, their contents copied back from the snapshot, rather than be
 *	dropped; the lowest offsets are kept first.  0 makes the call a
 *	%CUBE_IOC_CLONE_RESET
 * @flags: in: zero
 * @reserved: in: zero
 * @kept: out: private pages whose contents were copied back in place
 * @dropped: out: private pages dropped
 *
 * Like %CUBE_IOC_CLONE_RESET, the clone reads its snapshot again
 * afterwards, but a kept page stays mapped where it was mapped (writable,
 * by every process and by KVM): the next write to it costs no fault and no
 * allocation.  Kept pages stay charged to the clone (@private_pages of
 * its counters).  Pages written while the call runs may be caught half
 * copied: pause whatever writes the clone first.
 *
 * Errors: %EINVAL for non-zero @flags or @reserved, %EFAULT for an
 * argument that cannot be read and written back; either leaves the clone
 * as it was.
 */
struct cube_clone_rewind {
	__u64 keep_pages;
	__u32 flags;
	__u32 reserved;
	__u64 kept;
	__u64 dropped;
};

/**
 * struct cube_clone_trim - argument of %CUBE_IOC_CLONE_TRIM
 * @flags: in: zero
 * @reserved: in: zero
 * @scanned: out: private pages compared with the snapshot
 * @dropped: out: private pages dropped, being the same as the snapshot's
 *	(or, where the snapshot has none, all zeros)
 *
 * A clone gives back the private pages whose contents are the snapshot's
 * again: a guest that wrote a page back as it was, or zeroed a page it
 * freed where the snapshot holds a hole.  The clone reads the same
 * afterwards; the next write to a dropped page makes a private copy again.
 * Safe while the clone is mapped and written: a page is dropped only after
 * its mappings are zapped and its contents compared again, under the lock
 * its faults take.
 *
 * Errors: %EINVAL for non-zero @flags or @reserved, %EFAULT for an
 * argument that cannot be read and written back; either leaves the clone
 * as it was.
 */
struct cube_clone_trim {
	__u32 flags;
	__u32 reserved;
	__u64 scanned;
	__u64 dropped;
};

/**
 * struct cube_mem_stats - answer of %CUBE_IOC_MEM_STATS
 * @snapshots: live snapshots (deleted ones still in use included)
 * @clones: live clones
 * @shared_pages: pages held by snapshots
 * @private_pages: pages held privately by clones
 */
struct cube_mem_stats {
	__u64 snapshots;
	__u64 clones;
	__u64 shared_pages;
	__u64 private_pages;
};

/**
 * struct cube_clone_merge - argument of %CUBE_IOC_CLONE_MERGE
 * @group: in: non-zero; the trust domain the clone's pages may be shared
 *	in.  Fixed by the clone's first call: a later call naming another
 *	group fails
 * @flags: in: zero
 * @reserved: in: zero
 * @scanned: out: private pages looked at
 * @merged: out: private pages freed, their offsets now mapping the group's
 *	page with the same bytes read-only
 * @promoted: out: private pages that became the group's page of their
 *	offset (no longer the clone's, still mapped by it read-only)
 *
 * Clones of one snapshot that ran the same program often hold pages with
 * the same bytes at the same offset.  A clone's merge shares them: the
 * first time a page's bytes are seen at an offset in the group, their
 * hash is remembered; a clone that then holds the same hash there gives
 * its page to the group, and every later merge of the group frees a page
 * that holds those bytes at that offset and maps the group's page instead.
 * Nothing reads differently; the next write to a shared offset makes a
 * private copy again.  Pages are compared byte for byte under the lock
 * their faults take, after their mappings were zapped.
 *
 * Sharing is only among clones of one snapshot that name the same group,
 * because a write to a shared page takes longer than a write to a private
 * one: a clone can learn whether another of its group holds given bytes
 * at an offset.  Name one group per tenant.  The group's pages live until
 * the last clone that named it is gone; they count in the module's
 * @shared_pages (&struct cube_mem_stats) and a clone's offsets that map
 * them in its @shared_pages (&struct cube_clone_counters).
 *
 * Errors: %EINVAL for a zero @group or non-zero @flags or @reserved,
 * %EBUSY when the clone named another group before, %ENOMEM, %EFAULT for
 * an argument that cannot be read and written back; each leaves the clone
 * as it was.  %EINTR on a fatal signal: what was shared stays shared.
 */
struct cube_clone_merge {
	__u64 group;
	__u32 flags;
	__u32 reserved;
	__u64 scanned;
	__u64 merged;
	__u64 promoted;
};

/* on /dev/cube */
#define CUBE_IOC_SNAPSHOT_CREATE _IOWR(CUBE_IOCTL_MAGIC, 0x30, struct cube_snapshot_create)
#define CUBE_IOC_SNAPSHOT_DELETE _IOW(CUBE_IOCTL_MAGIC, 0x31, struct cube_snapshot_id)
#define CUBE_IOC_SNAPSHOT_INFO	_IOWR(CUBE_IOCTL_MAGIC, 0x32, struct cube_snapshot_info)
#define CUBE_IOC_CLONE_CREATE	_IOWR(CUBE_IOCTL_MAGIC, 0x33, struct cube_clone_create)
#define CUBE_IOC_MEM_STATS	_IOR(CUBE_IOCTL_MAGIC, 0x34, struct cube_mem_stats)
/* on a clone fd */
#define CUBE_IOC_CLONE_RESET	_IO(CUBE_IOCTL_MAGIC, 0x40)
#define CUBE_IOC_CLONE_COUNTERS	_IOR(CUBE_IOCTL_MAGIC, 0x41, struct cube_clone_counters)
#define CUBE_IOC_CLONE_REWIND	_IOWR(CUBE_IOCTL_MAGIC, 0x42, struct cube_clone_rewind)
#define CUBE_IOC_CLONE_TRIM	_IOWR(CUBE_IOCTL_MAGIC, 0x43, struct cube_clone_trim)
#define CUBE_IOC_CLONE_MERGE	_IOWR(CUBE_IOCTL_MAGIC, 0x44, struct cube_clone_merge)

/**
 * DOC: generic netlink
 *
 * The family is named %CUBE_GENL_NAME; resolve its id with the nlctrl
 * CTRL_CMD_GETFAMILY request.  Its multicast group %CUBE_GENL_MCGRP_EVENTS
 * carries sandbox and pool events.
 */
#define CUBE_GENL_NAME		"cube"
#define CUBE_GENL_VERSION	1
#define CUBE_GENL_MCGRP_EVENTS	"events"

/**
 * enum cube_cmd - generic-netlink commands of the "cube" family
 * @CUBE_CMD_UNSPEC: unused
 * @CUBE_CMD_GET_STATS: module-wide counters, in a %CUBE_A_STATS nest
 * @CUBE_CMD_GET_SANDBOX: one sandbox (doit) or all of them (dumpit)
 * @CUBE_CMD_KILL_SANDBOX: ask a sandbox's owner to stop, then force it
 * @CUBE_CMD_GET_SNAPSHOT: one snapshot (doit) or all of them (dumpit)
 * @CUBE_CMD_DEL_SNAPSHOT: delete a snapshot
 * @CUBE_CMD_NEW_POOL: create a pool
 * @CUBE_CMD_GET_POOL: one pool (doit) or all of them (dumpit)
 * @CUBE_CMD_TAKE_POOL: claim one ready sandbox from a pool
 * @CUBE_CMD_SET_POOL: change a pool's watermarks
 * @CUBE_CMD_DEL_POOL: destroy a pool; its warm sandboxes are asked to stop
 * @CUBE_CMD_EVENT_SANDBOX_NEW: event: a sandbox was created
 * @CUBE_CMD_EVENT_SANDBOX_STATE: event: a sandbox changed state
 * @CUBE_CMD_EVENT_SANDBOX_EXIT: event: a sandbox exited (with its reason)
 * @CUBE_CMD_EVENT_POOL_LOW: event: a pool fell below its low watermark
 * @__CUBE_CMD_MAX: one past the last command
 */
enum cube_cmd {
	CUBE_CMD_UNSPEC,
	CUBE_CMD_GET_STATS,
	CUBE_CMD_GET_SANDBOX,
	CUBE_CMD_KILL_SANDBOX,
	CUBE_CMD_GET_SNAPSHOT,
	CUBE_CMD_DEL_SNAPSHOT,
	CUBE_CMD_NEW_POOL,
	CUBE_CMD_GET_POOL,
	CUBE_CMD_TAKE_POOL,
	CUBE_CMD_SET_POOL,
	CUBE_CMD_DEL_POOL,
	CUBE_CMD_EVENT_SANDBOX_NEW,
	CUBE_CMD_EVENT_SANDBOX_STATE,
	CUBE_CMD_EVENT_SANDBOX_EXIT,
	CUBE_CMD_EVENT_POOL_LOW,
	__CUBE_CMD_MAX
};
#define CUBE_CMD_MAX (__CUBE_CMD_MAX - 1)

/**
 * enum cube_attr - top-level attributes; each object travels in its own nest
 * @CUBE_A_UNSPEC: unused
 * @CUBE_A_STATS: nest of &enum cube_stats_attr
 * @CUBE_A_SANDBOX: nest of &enum cube_sandbox_attr
 * @CUBE_A_SNAPSHOT: nest of &enum cube_snapshot_attr
 * @CUBE_A_POOL: nest of &enum cube_pool_attr
 * @__CUBE_A_MAX: one past the last attribute
 */
enum cube_attr {
	CUBE_A_UNSPEC,
	CUBE_A_STATS,
	CUBE_A_SANDBOX,
	CUBE_A_SNAPSHOT,
	CUBE_A_POOL,
	__CUBE_A_MAX
};
#define CUBE_A_MAX (__CUBE_A_MAX - 1)

/* --- sandbox, pool and stats attributes --- */

/**
 * enum cube_stats_attr - attributes of the %CUBE_A_STATS nest (all u64)
 * @CUBE_STATS_A_UNSPEC: unused
 * @CUBE_STATS_A_PAD: padding
 * @CUBE_STATS_A_SANDBOXES: live sandboxes
 * @CUBE_STATS_A_POOLS: pools
 * @CUBE_STATS_A_SNAPSHOTS: snapshots
 * @CUBE_STATS_A_CLONES: clones
 * @CUBE_STATS_A_SHARED_PAGES: pages held by snapshots
 * @CUBE_STATS_A_PRIVATE_PAGES: pages held privately by clones
 * @CUBE_STATS_A_POOLED: sandboxes waiting in pools
 * @__CUBE_STATS_A_MAX: one past the last attribute
 *
 * The first six are the module's leak counters: once every object is gone
 * they are zero, and cube.ko reports any that is not at unload.
 */
enum cube_stats_attr {
	CUBE_STATS_A_UNSPEC,
	CUBE_STATS_A_PAD,
	CUBE_STATS_A_SANDBOXES,
	CUBE_STATS_A_POOLS,
	CUBE_STATS_A_SNAPSHOTS,
	CUBE_STATS_A_CLONES,
	CUBE_STATS_A_SHARED_PAGES,
	CUBE_STATS_A_PRIVATE_PAGES,
	CUBE_STATS_A_POOLED,
	__CUBE_STATS_A_MAX
};
#define CUBE_STATS_A_MAX (__CUBE_STATS_A_MAX - 1)

/**
 * enum cube_sandbox_attr - attributes of the %CUBE_A_SANDBOX nest
 * @CUBE_SANDBOX_A_UNSPEC: unused
 * @CUBE_SANDBOX_A_PAD: padding
 * @CUBE_SANDBOX_A_ID: u64, the sandbox's id (the key in requests)
 * @CUBE_SANDBOX_A_STATE: u32, &enum cube_sandbox_state
 * @CUBE_SANDBOX_A_EXIT_REASON: u32, &enum cube_exit_reason
 * @CUBE_SANDBOX_A_FLAGS: u32, %CUBE_SANDBOX_F_* bits
 * @CUBE_SANDBOX_A_OWNER_PID: u32, owner's pid in the requester's pid namespace
 * @CUBE_SANDBOX_A_OWNER_UID: u32, declared owner uid
 * @CUBE_SANDBOX_A_TEMPLATE: string, template name (absent when not set)
 * @CUBE_SANDBOX_A_VCPUS: u32, declared vCPUs
 * @CUBE_SANDBOX_A_VM_VCPUS: u32, vCPUs created in the bound KVM VM
 * @CUBE_SANDBOX_A_MEMORY: u64, declared guest memory in bytes
 * @CUBE_SANDBOX_A_PRIVATE_PAGES: u64, pages private to the sandbox's clone
 * @CUBE_SANDBOX_A_SHARED_PAGES: u64, snapshot pages the clone maps
 * @CUBE_SANDBOX_A_NETNS_COOKIE: u64, cookie of the attached netns (0: none)
 * @CUBE_SANDBOX_A_BPF_LINKS: u32, number of attached eBPF links
 * @CUBE_SANDBOX_A_CREATED_NS: u64, creation time, CLOCK_REALTIME nanoseconds
 * @CUBE_SANDBOX_A_LABELS: nest of %CUBE_LABELS_A_LABEL nests
 * @CUBE_SANDBOX_A_POOL: string, the pool the sandbox waits in
 * @CUBE_SANDBOX_A_GRACE_MS: u32, %CUBE_CMD_KILL_SANDBOX only: how long the
 *	owner has to stop before SIGKILL (default 2000, at most 60000)
 * @CUBE_SANDBOX_A_VM_MEMORY: u64, guest memory registered in the bound KVM VM
 * @__CUBE_SANDBOX_A_MAX: one past the last attribute
 */
enum cube_sandbox_attr {
	CUBE_SANDBOX_A_UNSPEC,
	CUBE_SANDBOX_A_PAD,
	CUBE_SANDBOX_A_ID,
	CUBE_SANDBOX_A_STATE,
	CUBE_SANDBOX_A_EXIT_REASON,
	CUBE_SANDBOX_A_FLAGS,
	CUBE_SANDBOX_A_OWNER_PID,
	CUBE_SANDBOX_A_OWNER_UID,
	CUBE_SANDBOX_A_TEMPLATE,
	CUBE_SANDBOX_A_VCPUS,
	CUBE_SANDBOX_A_VM_VCPUS,
	CUBE_SANDBOX_A_MEMORY,
	CUBE_SANDBOX_A_PRIVATE_PAGES,
	CUBE_SANDBOX_A_SHARED_PAGES,
	CUBE_SANDBOX_A_NETNS_COOKIE,
	CUBE_SANDBOX_A_BPF_LINKS,
	CUBE_SANDBOX_A_CREATED_NS,
	CUBE_SANDBOX_A_LABELS,
	CUBE_SANDBOX_A_POOL,
	CUBE_SANDBOX_A_GRACE_MS,
	CUBE_SANDBOX_A_VM_MEMORY,
	__CUBE_SANDBOX_A_MAX
};
#define CUBE_SANDBOX_A_MAX (__CUBE_SANDBOX_A_MAX - 1)

/** define CUBE_KILL_GRACE_MS_DEFAULT - default %CUBE_SANDBOX_A_GRACE_MS */
#define CUBE_KILL_GRACE_MS_DEFAULT	2000
/** define CUBE_KILL_GRACE_MS_MAX - largest %CUBE_SANDBOX_A_GRACE_MS */
#define CUBE_KILL_GRACE_MS_MAX		60000

/**
 * enum cube_labels_attr - attributes of the %CUBE_SANDBOX_A_LABELS nest
 * @CUBE_LABELS_A_UNSPEC: unused
 * @CUBE_LABELS_A_LABEL: nest of &enum cube_label_attr, one per label
 * @__CUBE_LABELS_A_MAX: one past the last attribute
 */
enum cube_labels_attr {
	CUBE_LABELS_A_UNSPEC,
	CUBE_LABELS_A_LABEL,
	__CUBE_LABELS_A_MAX
};
#define CUBE_LABELS_A_MAX (__CUBE_LABELS_A_MAX - 1)

/**
 * enum cube_label_attr - attributes of one %CUBE_LABELS_A_LABEL nest
 * @CUBE_LABEL_A_UNSPEC: unused
 * @CUBE_LABEL_A_KEY: string
 * @CUBE_LABEL_A_VALUE: string
 * @__CUBE_LABEL_A_MAX: one past the last attribute
 */
enum cube_label_attr {
	CUBE_LABEL_A_UNSPEC,
	CUBE_LABEL_A_KEY,
	CUBE_LABEL_A_VALUE,
	__CUBE_LABEL_A_MAX
};
#define CUBE_LABEL_A_MAX (__CUBE_LABEL_A_MAX - 1)

/** define CUBE_POOLS_MAX - maximum number of pools */
#define CUBE_POOLS_MAX		64
/** define CUBE_POOL_TARGET_MAX - largest pool target size */
#define CUBE_POOL_TARGET_MAX	4096

/**
 * enum cube_pool_attr - attributes of the %CUBE_A_POOL nest
 * @CUBE_POOL_A_UNSPEC: unused
 * @CUBE_POOL_A_PAD: padding
 * @CUBE_POOL_A_NAME: string, the pool's name (the key in requests)
 * @CUBE_POOL_A_TEMPLATE: string, template every member must have
 * @CUBE_POOL_A_TARGET: u32, how many ready sandboxes the pool should hold;
 *	also its capacity (1..%CUBE_POOL_TARGET_MAX)
 * @CUBE_POOL_A_LOW: u32, low watermark (at most the target): a
 *	%CUBE_CMD_EVENT_POOL_LOW event goes out whenever the pool shrinks
 *	below it
 * @CUBE_POOL_A_SIZE: u32, sandboxes waiting in the pool now
 * @CUBE_POOL_A_TAKEN: u64, sandboxes taken from the pool so far
 * @CUBE_POOL_A_SANDBOX_ID: u64, %CUBE_CMD_TAKE_POOL reply: the sandbox taken
 * @CUBE_POOL_A_OWNER_PID: u32, %CUBE_CMD_TAKE_POOL reply: its owner's pid
 * @__CUBE_POOL_A_MAX: one past the last attribute
 */
enum cube_pool_attr {
	CUBE_POOL_A_UNSPEC,
	CUBE_POOL_A_PAD,
	CUBE_POOL_A_NAME,
	CUBE_POOL_A_TEMPLATE,
	CUBE_POOL_A_TARGET,
	CUBE_POOL_A_LOW,
	CUBE_POOL_A_SIZE,
	CUBE_POOL_A_TAKEN,
	CUBE_POOL_A_SANDBOX_ID,
	CUBE_POOL_A_OWNER_PID,
	__CUBE_POOL_A_MAX
};
#define CUBE_POOL_A_MAX (__CUBE_POOL_A_MAX - 1)

/* --- snapshot attributes --- */

/**
 * enum cube_snapshot_attr - attributes of the %CUBE_A_SNAPSHOT nest
 * @CUBE_SNAPSHOT_A_UNSPEC: unused
 * @CUBE_SNAPSHOT_A_PAD: padding
 * @CUBE_SNAPSHOT_A_ID: u64, the snapshot's id (the key in requests)
 * @CUBE_SNAPSHOT_A_SIZE: u64, size in bytes
 * @CUBE_SNAPSHOT_A_PAGES: u64, pages the snapshot holds itself
 * @CUBE_SNAPSHOT_A_PARENT_ID: u64, the snapshot it extends (absent: none)
 * @CUBE_SNAPSHOT_A_DEPTH: u32, length of its chain of parents, itself included
 * @CUBE_SNAPSHOT_A_CLONES: u32, live clones
 * @CUBE_SNAPSHOT_A_CHILDREN: u32, live snapshots of its clones
 * @CUBE_SNAPSHOT_A_WS_PAGES: u64, pages in its recorded working set
 * @__CUBE_SNAPSHOT_A_MAX: one past the last attribute
 */
enum cube_snapshot_attr {
	CUBE_SNAPSHOT_A_UNSPEC,
	CUBE_SNAPSHOT_A_PAD,
	CUBE_SNAPSHOT_A_ID,
	CUBE_SNAPSHOT_A_SIZE,
	CUBE_SNAPSHOT_A_PAGES,
	CUBE_SNAPSHOT_A_PARENT_ID,
	CUBE_SNAPSHOT_A_DEPTH,
	CUBE_SNAPSHOT_A_CLONES,
	CUBE_SNAPSHOT_A_CHILDREN,
	CUBE_SNAPSHOT_A_WS_PAGES,
	__CUBE_SNAPSHOT_A_MAX
};
#define CUBE_SNAPSHOT_A_MAX (__CUBE_SNAPSHOT_A_MAX - 1)

#endif /* _UAPI_LINUX_CUBE_H */
