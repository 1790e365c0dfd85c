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
#endif

#endif /* CUBE_VMM_JAIL_H */
