/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The jail of one cube-vmm, in the order it goes on (sandbox.h has the
 * cgroup, the capabilities and the process-wide seccomp list):
 *
 *  - jail_close_fds(): at start-up, every inherited descriptor but stdio
 *    and the ones the command line names is closed, so nothing a
 *    supervisor left open (a report pipe, a socket) reaches the VMM;
 *  - jail_rlimits(): once set up, no core dumps, as many descriptors as
 *    the VMM can use and no more, files no bigger than a snapshot;
 *  - jail_vcpu_prepare() / jail_vcpu_enter(): each vCPU thread loads a
 *    filter of its own on top of the process-wide one before it first
 *    enters the guest: the few calls a vCPU makes, ioctl only KVM_RUN on
 *    its own vCPU and KVM_IRQ_LINE on the VM.
 */
#ifndef CUBE_VMM_JAIL_H
#define CUBE_VMM_JAIL_H

#include <stdint.h>
#include <sys/types.h>

struct vm;
struct vcpu;

/* Close every fd from 3 up but the @n in @keep (negative ones ignored). */
int jail_close_fds(const int *keep, int n);

/*
 * RLIMIT_CORE 0, RLIMIT_FSIZE @fsize, RLIMIT_NOFILE the fds open now plus
 * room for every vsock connection and control client (soft and hard, so
 * they cannot be raised again); SIGXFSZ ignored, so a write past the
 * size fails with EFBIG instead of killing.  0 or -errno.
 */
/* Files may be as big as guest memory plus this (a snapshot's state). */
#define JAIL_FSIZE_SLACK	(64ULL << 20)

int jail_rlimits(uint64_t fsize);

/*
 * The sandbox's own user and root: what a VMM may still reach by name
 * once set up.  @root is the sandbox's run directory.
 */
struct jail_user {
	const char *root;
	uid_t uid;
	gid_t gid;
};

/*
 * Before the VM process (cube-vmm's child) exists: its pid namespace, so
 * it is pid 1 of its own and sees no other process.  0 or -errno.
 */
int jail_pid_ns(void);

/*
 * In the main thread, before any other thread and before the capabilities
 * are dropped: new mount, IPC and network namespaces, the root changed to
 * @j->root (pivot_root; an initramfs root, which cannot be pivoted, is
 * left by moving the mount onto it and chroot), the bounding set
 * emptied, then the groups, gid and uid set to the sandbox's (which also
 * clears every capability).  On failure *@what says which step; the
 * caller must not start the VM.  0 or -errno.
 */
int jail_enter(const struct jail_user *j, const char **what);

/*
 * After jail_enter() and no_new_privs, before any thread: a Landlock
 * domain handling every filesystem right the kernel knows, granting only
 * the making, writing, reading and removing of files and directories
 * beneath @rw_dir_fd (the checkpoints; -1: none).  Files opened before
 * keep working.  0, 1 when the kernel has no Landlock (the caller says
 * so and goes on: the jail user and root bound it already), or -errno.
 */
int jail_landlock(int rw_dir_fd);

/* Build every vCPU's filter (before any filter is loaded); 0 or -errno. */
int jail_vcpu_prepare(struct vm *vm);
/*
 * In the vCPU thread, before it first enters the guest: load its filter
 * (nothing if jail_vcpu_prepare() was not called).  0 or -errno.
 */
int jail_vcpu_enter(struct vcpu *vcpu);

#ifdef CUBE_VMM_TEST_HOOKS
/*
 * Test builds only (cube-vmm-hooks): once the filters are in, the thread
 * named by CUBE_VMM_TEST_THREAD ("main" or "vcpu") makes the call named
 * by CUBE_VMM_TEST_CALL ("socket", "kvm-get-clock", "getppid"), as code
 * an attacker took over would.
 */
void jail_test_hook(const char *thread, int vm_fd);
/*
 * CUBE_VMM_TEST_CALL=escape, main thread: what a compromised VMM would try
 * once jailed and filtered: open, write, connect to and signal what
 * CUBE_VMM_TEST_TARGETS names (","-separated "read:PATH", "write:PATH",
 * "connect:PATH", "dirfds:RELPATH" through every directory fd held,
 * "kill:PID"; the filter kills the VMM at the first call it has not),
 * each result logged as "test hook: escape <target>: <errno name or OK>".
 * CUBE_VMM_TEST_CALL=escape-unfiltered makes the same tries before the
 * process-wide filter is in (@filtered false): what the jail's other
 * layers (namespaces, root, uid, Landlock) stop by themselves.
 */
void jail_test_escape(bool filtered);
#endif

#endif /* CUBE_VMM_JAIL_H */
