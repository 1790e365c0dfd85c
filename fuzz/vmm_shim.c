// SPDX-License-Identifier: GPL-2.0
/*
 * vmm_shim.c: what the snapshot harness links instead of KVM.  The VMM's
 * snapshot.c is compiled with ioctl() renamed to fuzz_ioctl(): every KVM
 * call succeeds and sets nothing, except that KVM_SET_MSRS takes half the
 * MSRs it is given, as KVM does when it refuses one, so the loader's
 * skip-and-go-on path runs too.  Interrupt lines go nowhere.
 */
#include <stdarg.h>
#include <linux/kvm.h>

#include "vm.h"

int fuzz_ioctl(int fd, unsigned long req, ...);

int fuzz_ioctl(int fd, unsigned long req, ...)
{
	struct kvm_msrs *msrs;
	va_list ap;

	if (req != KVM_SET_MSRS)
		return 0;
	va_start(ap, req);
	msrs = va_arg(ap, struct kvm_msrs *);
	va_end(ap);
	return msrs->nmsrs > 1 ? (int)(msrs->nmsrs / 2) : (int)msrs->nmsrs;
}

int vm_irq_line(struct vm *vm, uint32_t irq, int level)
{
	return 0;
}
