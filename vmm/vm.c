// SPDX-License-Identifier: GPL-2.0
/* The KVM VM, its memory and its vCPU threads. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jail.h"
#include "util.h"
#include "vm.h"

#define VCPU_KICK_SIGNAL	(SIGRTMIN + 1)
#define KVM_TSS_ADDR		0xfffbd000ULL
#define KVM_IDMAP_ADDR		0xfffbc000ULL

static __thread struct kvm_run *vcpu_cur_run;

static void vcpu_kick_handler(int sig)
{
	if (vcpu_cur_run)
		vcpu_cur_run->immediate_exit = 1;
}

static int vm_get_cpuid(struct vm *vm)
{
	int n = 128;

	for (;;) {
		struct kvm_cpuid2 *c;

		c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		if (!c)
			return -ENOMEM;
		c->nent = n;
		if (!ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c)) {
			vm->cpuid = c;
			return 0;
		}
		free(c);
		if (errno != E2BIG || n >= 4096)
			return -errno;
		n *= 2;
	}
}

int vcpu_set_cpuid(struct vm *vm, struct vcpu *vcpu)
{
	struct kvm_cpuid2 *c;
	size_t sz = sizeof(*c) + vm->cpuid->nent * sizeof(c->entries[0]);
	uint32_t i;
	int ret = 0;

	c = malloc(sz);
	if (!c)
		return -ENOMEM;
	memcpy(c, vm->cpuid, sz);
	for (i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		switch (e->function) {
		case 1:
			/* Initial APIC id; we are a hypervisor. */
			e->ebx = (e->ebx & 0x00ffffff) | ((uint32_t)vcpu->id << 24);
			e->ecx |= 1U << 31;
			break;
		case 0xb:
		case 0x1f:
			e->edx = vcpu->id;
			break;
		case 6:
			/* No performance/thermal power management. */
			e->ecx &= ~(1U << 3);
			break;
		}
	}
	if (ioctl(vcpu->fd, KVM_SET_CPUID2, c))
		ret = -errno;
	free(c);
	return ret;
}

static int vcpu_create(struct vm *vm, int id)
{
	struct vcpu *vcpu = &vm->vcpus[id];
	int ret;

	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, id);
	if (vcpu->fd < 0)
		return -errno;
	vcpu->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		vcpu->run = NULL;
		return -errno;
	}
	ret = vcpu_set_cpuid(vm, vcpu);
	return ret;
}

int vm_create(struct vm *vm, uint64_t mem_size, int nr_vcpus, int mem_fd,
	      bool mem_shared)
{
	struct kvm_userspace_memory_region region;
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	int ret, i;

	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = vm->vm_fd = vm->event_fd = -1;
	for (i = 0; i < VM_MAX_VCPUS; i++)
		vm->vcpus[i].fd = -1;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);
	vm->nr_vcpus = nr_vcpus;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		ret = -errno;
		pr_err("cannot open /dev/kvm: %s", strerror(errno));
		return ret;
	}
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		pr_err("unsupported KVM API version");
		return -EINVAL;
	}
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		ret = -errno;
		pr_err("KVM_CREATE_VM: %s", strerror(errno));
		return ret;
	}
	ret = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (ret <= 0) {
		pr_err("KVM_GET_VCPU_MMAP_SIZE failed");
		return -EINVAL;
	}
	vm->run_size = ret;
	vm->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->event_fd < 0)
		return -errno;

	if (mem_fd >= 0 && mem_shared) {
		/* A cube.ko clone: copy-on-write in the module. */
		vm->mem.host = mmap(NULL, mem_size, PROT_READ | PROT_WRITE,
				    MAP_SHARED, mem_fd, 0);
	} else if (mem_fd >= 0) {
		vm->mem.host = mmap(NULL, mem_size, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_NORESERVE, mem_fd, 0);
		vm->mem_private = true;
	} else {
		vm->mem.host = mmap(NULL, mem_size, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				    -1, 0);
	}
	if (vm->mem.host == MAP_FAILED) {
		ret = -errno;
		vm->mem.host = NULL;
		pr_err("cannot map %llu MiB of guest memory: %s",
		       (unsigned long long)(mem_size >> 20), strerror(-ret));
		return ret;
	}
	vm->mem.size = mem_size;
	madvise(vm->mem.host, mem_size, MADV_DONTDUMP);

	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR) < 0) {
		ret = -errno;
		pr_err("KVM_SET_TSS_ADDR: %s", strerror(errno));
		return ret;
	}
	{
		uint64_t idmap = KVM_IDMAP_ADDR;

		ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap);
	}
	region = (struct kvm_userspace_memory_region) {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = mem_size,
		.userspace_addr = (uintptr_t)vm->mem.host,
	};
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		ret = -errno;
		pr_err("KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
		return ret;
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		ret = -errno;
		pr_err("KVM_CREATE_IRQCHIP: %s", strerror(errno));
		return ret;
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		ret = -errno;
		pr_err("KVM_CREATE_PIT2: %s", strerror(errno));
		return ret;
	}
	ret = vm_get_cpuid(vm);
	if (ret) {
		pr_err("KVM_GET_SUPPORTED_CPUID: %s", strerror(-ret));
		return ret;
	}
	for (i = 0; i < nr_vcpus; i++) {
		ret = vcpu_create(vm, i);
		if (ret) {
			pr_err("vCPU %d: %s", i, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

void vm_destroy(struct vm *vm)
{
	int i;

	for (i = 0; i < VM_MAX_VCPUS; i++) {
		if (vm->vcpus[i].run)
			munmap(vm->vcpus[i].run, vm->run_size);
		if (vm->vcpus[i].fd >= 0)
			close(vm->vcpus[i].fd);
	}
	if (vm->mem.host)
		munmap(vm->mem.host, vm->mem.size);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->event_fd >= 0)
		close(vm->event_fd);
	free(vm->cpuid);
	vm->cpuid = NULL;
}

int vm_irq_line(struct vm *vm, uint32_t irq, int level)
{
	struct kvm_irq_level l = { .irq = irq, .level = level };

	return ioctl(vm->vm_fd, KVM_IRQ_LINE, &l) ? -errno : 0;
}

static void vm_notify(struct vm *vm)
{
	uint64_t one = 1;

	if (write(vm->event_fd, &one, sizeof(one)) < 0) {
		/* The counter is full: the main loop will look anyway. */
	}
}

static void vm_kick_all(struct vm *vm)
{
	int i;

	for (i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].started)
			pthread_kill(vm->vcpus[i].thread, VCPU_KICK_SIGNAL);
}

void vm_request_exit(struct vm *vm, enum vm_exit why, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&vm->lock);
	if (vm->exit == VM_RUNNING) {
		vm->exit = why;
		va_start(ap, fmt);
		vsnprintf(vm->exit_msg, sizeof(vm->exit_msg), fmt, ap);
		va_end(ap);
	}
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	vm_kick_all(vm);
	vm_notify(vm);
}

static const char *exit_reason_name(uint32_t r)
{
	switch (r) {
	case KVM_EXIT_FAIL_ENTRY: return "entry failure";
	case KVM_EXIT_INTERNAL_ERROR: return "internal error";
	case KVM_EXIT_EXCEPTION: return "exception";
	case KVM_EXIT_DEBUG: return "debug";
	default: return "unexpected exit";
	}
}

/* Called with vm->lock held: park while a pause is requested. */
static void vcpu_park(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;

	/*
	 * Re-enter once with immediate_exit so KVM completes the last MMIO or
	 * PIO instruction: the saved state is then consistent.
	 */
	pthread_mutex_unlock(&vm->lock);
	vcpu->run->immediate_exit = 1;
	ioctl(vcpu->fd, KVM_RUN, 0);
	vcpu->run->immediate_exit = 0;
	pthread_mutex_lock(&vm->lock);

	vm->nr_paused++;
	pthread_cond_broadcast(&vm->cond);
	while (vm->pause_req && vm->exit == VM_RUNNING)
		pthread_cond_wait(&vm->cond, &vm->lock);
	vm->nr_paused--;
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;
	struct kvm_run *run = vcpu->run;
	sigset_t set;
	int err;

	vcpu_cur_run = run;
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	pthread_mutex_lock(&vm->lock);
	vm->nr_started++;
	pthread_cond_broadcast(&vm->cond);
	while (!vm->go && vm->exit == VM_RUNNING)
		pthread_cond_wait(&vm->cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
	/* this vCPU's own seccomp filter, before the guest first runs here */
	err = jail_vcpu_enter(vcpu);
	if (err)
		vm_request_exit(vm, VM_EXIT_ERROR, "vCPU %d: seccomp: %s",
				vcpu->id, strerror(-err));

	for (;;) {
		if (__atomic_load_n(&vm->pause_req, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&vm->exit, __ATOMIC_ACQUIRE)) {
			pthread_mutex_lock(&vm->lock);
			if (vm->pause_req && vm->exit == VM_RUNNING)
				vcpu_park(vcpu);
			if (vm->exit != VM_RUNNING) {
				vm->nr_exited++;
				pthread_cond_broadcast(&vm->cond);
				pthread_mutex_unlock(&vm->lock);
				break;
			}
			pthread_mutex_unlock(&vm->lock);
		}
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				run->immediate_exit = 0;
				continue;
			}
			vm_request_exit(vm, VM_EXIT_ERROR, "vCPU %d: KVM_RUN: %s",
					vcpu->id, strerror(errno));
			continue;
		}
		vcpu->exits++;
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			vm_handle_pio(vm, run);
			break;
		case KVM_EXIT_MMIO:
			vm_handle_mmio(vm, run);
			break;
		case KVM_EXIT_INTR:
		case KVM_EXIT_HLT:
			break;
		case KVM_EXIT_SHUTDOWN:
			vm_request_exit(vm, VM_EXIT_SHUTDOWN,
					"vCPU %d: triple fault", vcpu->id);
			break;
		case KVM_EXIT_SYSTEM_EVENT:
			vm_request_exit(vm, VM_EXIT_SHUTDOWN,
					"vCPU %d: system event %u", vcpu->id,
					run->system_event.type);
			break;
		case KVM_EXIT_INTERNAL_ERROR:
			vm_request_exit(vm, VM_EXIT_ERROR,
					"vCPU %d: KVM internal error, suberror %u",
					vcpu->id, run->internal.suberror);
			break;
		default:
			vm_request_exit(vm, VM_EXIT_ERROR, "vCPU %d: %s (%u)",
					vcpu->id,
					exit_reason_name(run->exit_reason),
					run->exit_reason);
			break;
		}
	}
	return NULL;
}

int vm_start_vcpus(struct vm *vm)
{
	struct sigaction sa = { .sa_handler = vcpu_kick_handler };
	sigset_t set, old;
	int i, ret;

	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL))
		return -errno;
	/* Threads start with the kick blocked and unblock it themselves. */
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	for (i = 0; i < vm->nr_vcpus; i++) {
		ret = pthread_create(&vm->vcpus[i].thread, NULL, vcpu_thread,
				     &vm->vcpus[i]);
		if (ret) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			return -ret;
		}
		vm->vcpus[i].started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/*
	 * Wait until every thread runs its own code: glibc's thread start-up
	 * makes system calls the seccomp filter, loaded next, does not allow.
	 */
	pthread_mutex_lock(&vm->lock);
	while (vm->nr_started < vm->nr_vcpus)
		pthread_cond_wait(&vm->cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

void vm_go(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	vm->go = true;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

void vm_pause(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	__atomic_store_n(&vm->pause_req, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&vm->lock);
	vm_kick_all(vm);
	pthread_mutex_lock(&vm->lock);
	while (vm->go && vm->exit == VM_RUNNING &&
	       vm->nr_paused < vm->nr_vcpus - vm->nr_exited)
		pthread_cond_wait(&vm->cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
}

void vm_resume(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	__atomic_store_n(&vm->pause_req, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

void vm_join_vcpus(struct vm *vm)
{
	int i;

	pthread_mutex_lock(&vm->lock);
	if (vm->exit == VM_RUNNING)
		vm->exit = VM_EXIT_STOP;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	vm_kick_all(vm);
	for (i = 0; i < vm->nr_vcpus; i++) {
		if (!vm->vcpus[i].started)
			continue;
		pthread_join(vm->vcpus[i].thread, NULL);
		vm->vcpus[i].started = false;
	}
}

unsigned long vm_total_exits(struct vm *vm)
{
	unsigned long n = 0;
	int i;

	for (i = 0; i < vm->nr_vcpus; i++)
		n += __atomic_load_n(&vm->vcpus[i].exits, __ATOMIC_RELAXED);
	return n;
}
