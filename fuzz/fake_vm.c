// SPDX-License-Identifier: GPL-2.0
/* fake_vm.c: a VM with the VMM's devices and no KVM; see fake_vm.h. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "devices.h"
#include "fake_vm.h"
#include "serial.h"
#include "virtio_mmio.h"
#include "virtio_net.h"
#include "vm.h"
#include "vsock.h"

static struct vm vm;
static struct serial serial;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "fake_vm: %s: %s\n", what, why);
	exit(1);
}

struct vm *fake_vm(void)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 1 };
	const char *err = "?";
	int sv[2], i;

	if (vm.mem.host)
		return &vm;
	vm.mem.size = VM_MEM_MIN;
	vm.mem.host = mmap(NULL, VM_MEM_MIN, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (vm.mem.host == MAP_FAILED)
		die("guest memory", "mmap failed");
	vm.kvm_fd = vm.vm_fd = -1;
	vm.nr_vcpus = 1;
	for (i = 0; i < VM_MAX_VCPUS; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
		vm.vcpus[i].fd = -1;
	}
	/* the CPUID KVM would list: two entries */
	vm.cpuid = calloc(1, sizeof(*vm.cpuid) + 2 * sizeof(vm.cpuid->entries[0]));
	if (!vm.cpuid)
		die("cpuid", "out of memory");
	vm.cpuid->nent = 2;
	serial_init(&serial, &vm, -1);
	vm.serial = &serial;
	vm.devs[VM_DEV_VSOCK] = vsock_create(&vm, VM_MMIO_BASE, 5, 3, NULL, &err);
	if (!vm.devs[VM_DEV_VSOCK])
		die("vsock", err);
	vm.devs[VM_DEV_RNG] = virtio_rng_create(&vm, VM_MMIO_BASE + VM_MMIO_STRIDE, 6);
	if (!vm.devs[VM_DEV_RNG])
		die("rng", "cannot create");
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		die("virtio-net", "socketpair failed");
	vm.devs[VM_DEV_NET] = virtio_net_create(&vm, VM_MMIO_BASE +
						3 * VM_MMIO_STRIDE, 8, sv[0],
						mac, &err);
	if (!vm.devs[VM_DEV_NET])
		die("virtio-net", err);
	/* the writable disk: 1 MiB, sparse, gone once closed */
	{
		char disk[] = "/tmp/cube-fake-disk.XXXXXX";
		uint64_t size = 0;
		int fd = mkstemp(disk);

		if (fd < 0)
			die("disk", "mkstemp failed");
		unlink(disk);
		if (ftruncate(fd, 1 << 20) ||
		    virtio_blk_disk_check(fd, &size, &err))
			die("disk", "cannot size it");
		vm.devs[VM_DEV_DISK] = virtio_blk_create_disk(&vm,
				VM_MMIO_BASE + VM_DEV_DISK * VM_MMIO_STRIDE,
				VM_VIRTIO_IRQ_BASE + VM_DEV_DISK, fd, size);
		if (!vm.devs[VM_DEV_DISK])
			die("disk", "out of memory");
	}
	return &vm;
}
