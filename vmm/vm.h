/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One virtual machine: the KVM VM, its memory, vCPU threads and devices.
 *
 * Guest physical layout (see Documentation/vmm.rst):
 *   0x00000000 - mem_size    RAM (mem_size <= VM_MEM_MAX)
 *   0xd0000000 + n * 0x1000  virtio-mmio device n, IRQ VM_VIRTIO_IRQ_BASE + n
 *   0xfec00000               IOAPIC, 0xfee00000 local APICs (in KVM)
 */
#ifndef CUBE_VMM_VM_H
#define CUBE_VMM_VM_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "mem.h"

#define VM_MEM_MIN		(32ULL << 20)
#define VM_MEM_MAX		(3072ULL << 20)
#define VM_MAX_VCPUS		16
#define VM_MMIO_BASE		0xd0000000ULL
#define VM_MMIO_STRIDE		0x1000ULL
#define VM_MMIO_SIZE		0x200ULL
#define VM_VIRTIO_IRQ_BASE	5
#define VM_MAX_DEVS		5

/* Device slots: fixed so a snapshot's devices match after restore. */
enum vm_dev_slot {
	VM_DEV_VSOCK,
	VM_DEV_RNG,
	VM_DEV_BLK,
	VM_DEV_NET,
	VM_DEV_DISK,		/* the sandbox's writable disk (--disk) */
};

/* Why the VM stopped (also the process exit status, see main.c). */
enum vm_exit {
	VM_RUNNING = 0,
	VM_EXIT_SHUTDOWN,	/* guest power off, reset or triple fault */
	VM_EXIT_STOP,		/* control request or signal */
	VM_EXIT_ERROR,		/* internal error, the reason is logged */
	VM_EXIT_TIMEOUT,
};

struct vm;
struct virtio_mmio;
struct serial;

struct vcpu {
	struct vm *vm;
	int id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	unsigned long exits;
};

struct vm {
	int kvm_fd;
	int vm_fd;
	struct guest_mem mem;
	bool mem_private;		/* MAP_PRIVATE of a snapshot file */
	int nr_vcpus;
	struct vcpu vcpus[VM_MAX_VCPUS];
	size_t run_size;
	struct kvm_cpuid2 *cpuid;	/* supported CPUID, per-vCPU fixups apply */

	struct serial *serial;
	struct virtio_mmio *devs[VM_MAX_DEVS];

	/* Run control: protected by lock, waited on with cond. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;			/* vCPU threads may enter the guest */
	bool pause_req;
	int nr_paused;
	int nr_started;			/* threads past their start-up */
	int nr_exited;
	enum vm_exit exit;
	char exit_msg[128];
	int event_fd;			/* eventfd: tells the main loop to look */
};

int vm_create(struct vm *vm, uint64_t mem_size, int nr_vcpus, int mem_fd,
	      bool mem_shared);
void vm_destroy(struct vm *vm);
/* Start the vCPU threads; they wait for vm_go(). */
int vm_start_vcpus(struct vm *vm);
void vm_go(struct vm *vm);
/* Stop every vCPU outside KVM_RUN and wait for it; vm_resume() undoes. */
void vm_pause(struct vm *vm);
void vm_resume(struct vm *vm);
/* Ask the VM to end (first reason wins) and wake everyone. */
void vm_request_exit(struct vm *vm, enum vm_exit why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Kick the vCPUs out and join them. */
void vm_join_vcpus(struct vm *vm);
/* Set or clear a GSI's level. */
int vm_irq_line(struct vm *vm, uint32_t irq, int level);
/* Per-vCPU CPUID (APIC id fixups) for vCPU id. */
int vcpu_set_cpuid(struct vm *vm, struct vcpu *vcpu);
/* Total KVM_RUN exits over every vCPU. */
unsigned long vm_total_exits(struct vm *vm);

/* Exit handlers (pio.c, mmio in virtio_mmio.c). */
void vm_handle_pio(struct vm *vm, struct kvm_run *run);
void vm_handle_mmio(struct vm *vm, struct kvm_run *run);

#endif /* CUBE_VMM_VM_H */
