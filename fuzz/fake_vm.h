/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fake_vm.h: a VM as cube-vmm builds one for a restore (VM_MEM_MIN bytes of
 * memory, a serial port, the vsock, rng and virtio-net devices), over the
 * KVM stand-in of vmm_shim.c.  For the snapshot harness and its seeds.
 */
#ifndef CUBE_FUZZ_FAKE_VM_H
#define CUBE_FUZZ_FAKE_VM_H

struct vm;

/* Builds it once; exits the program when it cannot. */
struct vm *fake_vm(void);

#endif /* CUBE_FUZZ_FAKE_VM_H */
