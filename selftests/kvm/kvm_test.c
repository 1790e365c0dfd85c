// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_test: the machine's /dev/kvm runs a real guest.
 *
 * A 4 KiB real-mode guest at guest physical 0x1000 does
 *	mov $0x42, %al; out %al, $0x10; mov %al, (0x2000); hlt
 * and the test sees KVM_EXIT_IO on port 0x10 with 0x42, then KVM_EXIT_HLT,
 * and the byte the guest stored in its memory.
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "cube_test.h"

#define GUEST_MEM	0x10000
#define CODE_GPA	0x1000
#define DATA_GPA	0x2000

static const unsigned char guest_code[] = {
	0xb0, 0x42,		/* mov $0x42, %al */
	0xe6, 0x10,		/* out %al, $0x10 */
	0xa2, 0x00, 0x20,	/* mov %al, 0x2000 */
	0xf4,			/* hlt */
};

FIXTURE(kvm) {
	int kvm, vm, vcpu;
	unsigned char *mem;
	struct kvm_run *run;
	size_t run_size;
};

FIXTURE_SETUP(kvm)
{
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int size;

	self->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (self->kvm < 0)
		SKIP("no /dev/kvm: %s", strerror(errno));
	ASSERT_EQ(ioctl(self->kvm, KVM_GET_API_VERSION, 0), KVM_API_VERSION);
	self->vm = ioctl(self->kvm, KVM_CREATE_VM, 0);
	ASSERT_GE(self->vm, 0);

	self->mem = mmap(NULL, GUEST_MEM, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(self->mem, MAP_FAILED);
	memcpy(self->mem + CODE_GPA, guest_code, sizeof(guest_code));
	region = (struct kvm_userspace_memory_region) {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = GUEST_MEM,
		.userspace_addr = (unsigned long)self->mem,
	};
	ASSERT_OK(ioctl(self->vm, KVM_SET_USER_MEMORY_REGION, &region));

	self->vcpu = ioctl(self->vm, KVM_CREATE_VCPU, 0);
	ASSERT_GE(self->vcpu, 0);
	size = ioctl(self->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	ASSERT_GE(size, (int)sizeof(struct kvm_run));
	self->run_size = size;
	self->run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->vcpu, 0);
	ASSERT_NE(self->run, MAP_FAILED);

	ASSERT_OK(ioctl(self->vcpu, KVM_GET_SREGS, &sregs));
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = 0;
	sregs.ds.selector = 0;
	ASSERT_OK(ioctl(self->vcpu, KVM_SET_SREGS, &sregs));
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;
	ASSERT_OK(ioctl(self->vcpu, KVM_SET_REGS, &regs));
}

FIXTURE_TEARDOWN(kvm)
{
	if (self->run)
		munmap(self->run, self->run_size);
	if (self->mem)
		munmap(self->mem, GUEST_MEM);
	close(self->vcpu);
	close(self->vm);
	close(self->kvm);
}

TEST_F(kvm, io_then_hlt)
{
	struct kvm_run *run = self->run;

	ASSERT_OK(ioctl(self->vcpu, KVM_RUN, 0));
	ASSERT_EQ(run->exit_reason, KVM_EXIT_IO);
	ASSERT_EQ(run->io.direction, KVM_EXIT_IO_OUT);
	ASSERT_EQ(run->io.port, 0x10);
	ASSERT_EQ(run->io.size, 1);
	ASSERT_EQ(run->io.count, 1u);
	ASSERT_EQ(*((unsigned char *)run + run->io.data_offset), 0x42);

	ASSERT_OK(ioctl(self->vcpu, KVM_RUN, 0));
	ASSERT_EQ(run->exit_reason, KVM_EXIT_HLT);
	EXPECT_EQ(self->mem[DATA_GPA], 0x42);
}

TEST_F(kvm, regs_after_hlt)
{
	struct kvm_regs regs;

	ASSERT_OK(ioctl(self->vcpu, KVM_RUN, 0));
	ASSERT_EQ(self->run->exit_reason, KVM_EXIT_IO);
	ASSERT_OK(ioctl(self->vcpu, KVM_RUN, 0));
	ASSERT_EQ(self->run->exit_reason, KVM_EXIT_HLT);
	ASSERT_OK(ioctl(self->vcpu, KVM_GET_REGS, &regs));
	/* hlt retired: rip is past the last instruction */
	EXPECT_EQ(regs.rip, CODE_GPA + sizeof(guest_code));
	EXPECT_EQ(regs.rax & 0xff, 0x42u);
}

TEST_MAIN()
