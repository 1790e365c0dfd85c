// SPDX-License-Identifier: GPL-2.0
/*
 * vmm_shim.c: what the snapshot harness and the seed writer link instead
 * of KVM.  The VMM's snapshot.c is compiled with ioctl() renamed to
 * fuzz_ioctl().  Every call succeeds: a read-only one (_IOR) fills its
 * argument with zeros; KVM lists three MSRs and reads each; KVM_SET_MSRS
 * takes half the MSRs it is given, as KVM does when it refuses one, so the
 * loader's skip-and-go-on path runs too.  Interrupt lines go nowhere.
 */
#include <stdarg.h>
#include <string.h>
#include <linux/kvm.h>

#include "vm.h"

int fuzz_ioctl(int fd, unsigned long req, ...);

int fuzz_ioctl(int fd, unsigned long req, ...)
{
	static const uint32_t msrs[] = { 0x10, 0x174, 0xc0000080 };
	struct kvm_msr_list *list;
	struct kvm_msrs *m;
	void *arg;
	va_list ap;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	switch (req) {
	case KVM_GET_MSR_INDEX_LIST:
		list = arg;
		if (list->nmsrs < 3)
			return -1;
		list->nmsrs = 3;
		memcpy(list->indices, msrs, sizeof(msrs));
		return 0;
	case KVM_GET_MSRS:
		m = arg;
		for (uint32_t i = 0; i < m->nmsrs; i++)
			m->entries[i].data = 0;
		return m->nmsrs;
	case KVM_SET_MSRS:
		m = arg;
		return m->nmsrs > 1 ? (int)(m->nmsrs / 2) : (int)m->nmsrs;
	}
	if (_IOC_DIR(req) == _IOC_READ)
		memset(arg, 0, _IOC_SIZE(req));
	return 0;
}

int vm_irq_line(struct vm *vm, uint32_t irq, int level)
{
	return 0;
}
