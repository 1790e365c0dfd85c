// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_clone_test: a real KVM guest whose memory is a clone mapping.
 *
 * The snapshot holds a real-mode program at 0x1000 and data at 0x2000 and
 * 0x3000.  The guest reads the snapshot's value, writes its own, reads a
 * page the host then writes (the host's copy-on-write must reach the
 * guest through the MMU notifiers), writes a page it never read, and
 * reports each value with port I/O.
 * After a reset of the clone, while the VM still exists, the same guest
 * reads the snapshot's data again.
 */
#include <linux/kvm.h>

#include "cube_test.h"
#include "mem_util.h"

#define GUEST_MEM	(16 * PAGE)
#define CODE_GPA	0x1000
#define DATA_GPA	0x2000
#define PEEK_GPA	0x3000

static const unsigned char guest_code[] = {
	0xa0, 0x00, 0x20,		/* mov 0x2000, %al */
	0xe6, 0x10,			/* out %al, $0x10 */
	0xc6, 0x06, 0x00, 0x20, 0x77,	/* movb $0x77, 0x2000 */
	0xa0, 0x00, 0x20,		/* mov 0x2000, %al */
	0xe6, 0x11,			/* out %al, $0x11 */
	0xa0, 0x00, 0x30,		/* mov 0x3000, %al */
	0xe6, 0x12,			/* out %al, $0x12 */
	0xa0, 0x00, 0x30,		/* mov 0x3000, %al */
	0xe6, 0x13,			/* out %al, $0x13 */
	0xc6, 0x06, 0x00, 0x40, 0x88,	/* movb $0x88, 0x4000 */
	0xa0, 0x00, 0x40,		/* mov 0x4000, %al */
	0xe6, 0x14,			/* out %al, $0x14 */
	0xf4,				/* hlt */
};

FIXTURE(vm) {
	int dev, kvm, vm, vcpu, clone;
	uint64_t snap, first_id;
	unsigned char *mem;
	struct kvm_run *run;
	size_t run_size;
	struct cube_mem_stats base;
};

static void start_at_code(int vcpu)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	ASSERT_OK(ioctl(vcpu, KVM_GET_SREGS, &sregs));
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = 0;
	sregs.ds.selector = 0;
	ASSERT_OK(ioctl(vcpu, KVM_SET_SREGS, &sregs));
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;
	ASSERT_OK(ioctl(vcpu, KVM_SET_REGS, &regs));
}

FIXTURE_SETUP(vm)
{
	struct kvm_userspace_memory_region region;
	unsigned char *img;
	int size;

	self->dev = mem_open_dev();
	if (self->dev < 0)
		SKIP("no /dev/cube: %s", strerror(errno));
	self->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (self->kvm < 0)
		SKIP("no /dev/kvm: %s", strerror(errno));
	ASSERT_OK(mem_stats(self->dev, &self->base));
	self->first_id = mem_probe_id(self->dev);
	ASSERT_NE(self->first_id, 0);

	img = mem_region(GUEST_MEM);
	ASSERT_NE(img, MAP_FAILED);
	memcpy(img + CODE_GPA, guest_code, sizeof(guest_code));
	img[DATA_GPA] = 0x5a;
	img[PEEK_GPA] = 0x33;
	ASSERT_OK(mem_snapshot_user(self->dev, img, GUEST_MEM, &self->snap));
	munmap(img, GUEST_MEM);
	self->clone = mem_clone(self->dev, self->snap, 0);
	ASSERT_GE(self->clone, 0);
	self->mem = mem_map(self->clone, GUEST_MEM);
	ASSERT_NE(self->mem, MAP_FAILED);

	self->vm = ioctl(self->kvm, KVM_CREATE_VM, 0);
	ASSERT_GE(self->vm, 0);
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
	start_at_code(self->vcpu);
}

FIXTURE_TEARDOWN(vm)
{
	struct cube_mem_stats st;

	if (self->run)
		munmap(self->run, self->run_size);
	if (self->vcpu > 0)
		close(self->vcpu);
	if (self->vm > 0)
		close(self->vm);
	if (self->mem)
		munmap(self->mem, GUEST_MEM);
	if (self->clone > 0)
		close(self->clone);
	if (self->dev > 0)
		mem_delete_since(self->dev, self->first_id);
	/* the VM and the clone are gone: nothing of them is left */
	if (self->dev > 0 && !mem_stats(self->dev, &st) &&
	    (st.clones != self->base.clones ||
	     st.private_pages != self->base.private_pages ||
	     st.snapshots != self->base.snapshots)) {
		TH_LOG("counters not back: clones %llu private %llu",
		       (unsigned long long)st.clones,
		       (unsigned long long)st.private_pages);
		_exit(CT_EXIT_FAIL);
	}
}

/* Run to the next exit: port I/O on @port with one byte, returned. */
static int run_to_out(int vcpu, struct kvm_run *run, int port)
{
	if (ioctl(vcpu, KVM_RUN, 0))
		return -1;
	if (run->exit_reason != KVM_EXIT_IO ||
	    run->io.direction != KVM_EXIT_IO_OUT || run->io.port != port ||
	    run->io.size != 1) {
		TH_LOG("exit %u port 0x%x, wanted out to 0x%x",
		       run->exit_reason, run->io.port, port);
		return -1;
	}
	return *((unsigned char *)run + run->io.data_offset);
}

TEST_F(vm, guest_reads_writes_and_resets)
{
	struct cube_clone_counters cnt;
	unsigned char *other;
	int c2;

	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x11), 0x77);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x12), 0x33);
	/* the guest maps 0x3000 shared; the host's write must reach it */
	self->mem[PEEK_GPA] = 0x99;
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x13), 0x99);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x14), 0x88);
	ASSERT_OK(ioctl(self->vcpu, KVM_RUN, 0));
	ASSERT_EQ(self->run->exit_reason, KVM_EXIT_HLT);

	/* the guest's writes are in the clone, not in the snapshot */
	EXPECT_EQ(self->mem[DATA_GPA], 0x77);
	EXPECT_EQ(self->mem[0x4000], 0x88);
	ASSERT_OK(mem_counters(self->clone, &cnt));
	EXPECT_EQ(cnt.private_pages, 3u);
	c2 = mem_clone(self->dev, self->snap, 0);
	ASSERT_GE(c2, 0);
	other = mem_map(c2, GUEST_MEM);
	ASSERT_NE(other, MAP_FAILED);
	EXPECT_EQ(other[DATA_GPA], 0x5a);
	EXPECT_EQ(other[PEEK_GPA], 0x33);
	EXPECT_EQ(other[0x4000], 0);
	munmap(other, GUEST_MEM);
	close(c2);

	/* reset with the VM alive: the guest sees the snapshot again */
	ASSERT_OK(ioctl(self->clone, CUBE_IOC_CLONE_RESET, 0));
	ASSERT_OK(mem_counters(self->clone, &cnt));
	EXPECT_EQ(cnt.private_pages, 0u);
	start_at_code(self->vcpu);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x11), 0x77);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x12), 0x33);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x13), 0x33);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x14), 0x88);
	ASSERT_OK(ioctl(self->vcpu, KVM_RUN, 0));
	ASSERT_EQ(self->run->exit_reason, KVM_EXIT_HLT);
	EXPECT_EQ(self->mem[DATA_GPA], 0x77);
	EXPECT_EQ(self->mem[PEEK_GPA], 0x33);
}

TEST_F(vm, reset_between_guest_reads)
{
	/* the guest's writable SPTE on its private page must go at reset */
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x11), 0x77);
	ASSERT_OK(ioctl(self->clone, CUBE_IOC_CLONE_RESET, 0));
	EXPECT_EQ(self->mem[DATA_GPA], 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x12), 0x33);
	/* a host write to a page the guest never wrote, after the reset */
	self->mem[PEEK_GPA] = 0x44;
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x13), 0x44);
	start_at_code(self->vcpu);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
}

/*
 * A rewind copies the snapshot into the page the guest wrote and keeps it
 * mapped: the guest reads the snapshot through the same SPTE, and its
 * next write makes no copy.
 */
TEST_F(vm, rewind_between_guest_runs)
{
	struct cube_clone_counters before, after;
	struct cube_clone_rewind rw = { .keep_pages = UINT64_MAX };

	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x11), 0x77);
	ASSERT_OK(ioctl(self->clone, CUBE_IOC_CLONE_REWIND, &rw));
	EXPECT_GE(rw.kept, 1u);
	EXPECT_EQ(rw.dropped, 0u);
	EXPECT_EQ(self->mem[DATA_GPA], 0x5a);
	ASSERT_OK(mem_counters(self->clone, &before));
	EXPECT_EQ(before.private_pages, rw.kept);
	start_at_code(self->vcpu);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x11), 0x77);
	ASSERT_OK(mem_counters(self->clone, &after));
	EXPECT_EQ(after.cow_faults, before.cow_faults);
	EXPECT_EQ(after.private_pages, before.private_pages);
	EXPECT_EQ(self->mem[DATA_GPA], 0x77);
}

TEST_F(vm, fork_a_running_guest)
{
	struct kvm_userspace_memory_region region;
	struct cube_snapshot_info info;
	unsigned char *fm;
	uint64_t fork_id = 0;
	int fc, vm2;

	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x10), 0x5a);
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x11), 0x77);
	/* snapshot the live guest: its one written page */
	ASSERT_OK(mem_snapshot_clone(self->dev, self->clone, &fork_id));
	ASSERT_OK(mem_snapshot_info(self->dev, fork_id, &info));
	EXPECT_EQ(info.pages, 1u);
	EXPECT_EQ(info.parent_id, self->snap);
	fc = mem_clone(self->dev, fork_id, CUBE_CLONE_F_PREFAULT);
	ASSERT_GE(fc, 0);
	fm = mem_map(fc, GUEST_MEM);
	ASSERT_NE(fm, MAP_FAILED);
	EXPECT_EQ(fm[DATA_GPA], 0x77);
	/* the fork is guest memory as well */
	vm2 = ioctl(self->kvm, KVM_CREATE_VM, 0);
	ASSERT_GE(vm2, 0);
	region = (struct kvm_userspace_memory_region) {
		.slot = 0, .memory_size = GUEST_MEM,
		.userspace_addr = (unsigned long)fm,
	};
	ASSERT_OK(ioctl(vm2, KVM_SET_USER_MEMORY_REGION, &region));
	close(vm2);
	/* the original goes on untouched by the fork */
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x12), 0x33);
	fm[PEEK_GPA] = 0x55;
	ASSERT_EQ(run_to_out(self->vcpu, self->run, 0x13), 0x33);
	munmap(fm, GUEST_MEM);
	close(fc);
	ASSERT_OK(mem_snapshot_delete(self->dev, fork_id));
}

TEST_MAIN()
