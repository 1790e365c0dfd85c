// SPDX-License-Identifier: GPL-2.0
/*
 * Direct kernel boot of an x86-64 bzImage through the 64-bit boot protocol
 * (Documentation/arch/x86/boot.rst in Linux): the setup header is copied
 * from the image into a zeroed boot_params, the protected-mode part is
 * loaded at 1 MiB and the boot vCPU starts in long mode at its 64-bit
 * entry (load address + 0x200) with %rsi pointing at boot_params.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include <asm/bootparam.h>

#include "boot.h"
#include "util.h"

#define HDRS_MAGIC		0x53726448	/* "HdrS" */
#define BOOT_MIN_VERSION	0x020c		/* 2.12: xloadflags */
#define E820_RAM		1
#define E820_RESERVED		2

/* Page table entry bits. */
#define PTE_P			(1ULL << 0)
#define PTE_RW			(1ULL << 1)
#define PTE_PS			(1ULL << 7)

static void e820_add(struct boot_params *bp, uint64_t addr, uint64_t size,
		     uint32_t type)
{
	struct boot_e820_entry *e = &bp->e820_table[bp->e820_entries++];

	e->addr = addr;
	e->size = size;
	e->type = type;
}

int boot_load_linux(struct guest_mem *gm, const struct boot_image *img,
		    uint64_t *entry, const char **err)
{
	const struct setup_header *ih;
	struct boot_params *bp;
	size_t setup_size, pm_size, hdr_end, cmdlen;
	uint64_t initrd_addr = 0, *pml4, *pdpt, *pd, limit;
	uint64_t *gdt;
	unsigned int i;

	*err = NULL;
	if (img->kernel_size < 0x1000) {
		*err = "kernel image too small to be a bzImage";
		return -EINVAL;
	}
	ih = (const struct setup_header *)(img->kernel + 0x1f1);
	if (ih->header != HDRS_MAGIC || ih->boot_flag != 0xaa55) {
		*err = "kernel image is not a bzImage (no HdrS signature)";
		return -EINVAL;
	}
	if (ih->version < BOOT_MIN_VERSION) {
		*err = "kernel boot protocol older than 2.12";
		return -EINVAL;
	}
	if (!(ih->xloadflags & XLF_KERNEL_64)) {
		*err = "kernel has no 64-bit entry point";
		return -EINVAL;
	}
	if (!(ih->loadflags & LOADED_HIGH)) {
		*err = "kernel is not loaded high (zImage)";
		return -EINVAL;
	}
	setup_size = ((ih->setup_sects ? ih->setup_sects : 4) + 1) * 512;
	if (setup_size >= img->kernel_size) {
		*err = "kernel image truncated (setup larger than image)";
		return -EINVAL;
	}
	pm_size = img->kernel_size - setup_size;
	limit = BOOT_KERNEL_ADDR + MAX((uint64_t)pm_size, (uint64_t)ih->init_size);
	if (limit > gm->size) {
		*err = "guest memory too small for the kernel";
		return -ENOMEM;
	}
	memcpy(gm_ptr(gm, BOOT_KERNEL_ADDR, pm_size), img->kernel + setup_size,
	       pm_size);

	bp = gm_ptr(gm, BOOT_PARAMS_ADDR, sizeof(*bp));
	memset(bp, 0, sizeof(*bp));
	/* The setup header ends at 0x202 + the byte at 0x201. */
	hdr_end = 0x202 + img->kernel[0x201];
	if (hdr_end > 0x1f1 + sizeof(bp->hdr))
		hdr_end = 0x1f1 + sizeof(bp->hdr);
	memcpy(&bp->hdr, ih, hdr_end - 0x1f1);

	bp->hdr.type_of_loader = 0xff;
	bp->hdr.loadflags |= CAN_USE_HEAP;
	bp->hdr.loadflags &= ~(1 << 5);		/* keep early messages */
	bp->hdr.heap_end_ptr = 0xfe00;
	bp->hdr.vid_mode = 0xffff;
	bp->hdr.code32_start = BOOT_KERNEL_ADDR;

	cmdlen = strlen(img->cmdline);
	if (cmdlen >= BOOT_CMDLINE_MAX ||
	    (ih->cmdline_size && cmdlen > ih->cmdline_size)) {
		*err = "kernel command line too long";
		return -E2BIG;
	}
	memcpy(gm_ptr(gm, BOOT_CMDLINE_ADDR, cmdlen + 1), img->cmdline,
	       cmdlen + 1);
	bp->hdr.cmd_line_ptr = BOOT_CMDLINE_ADDR;

	if (img->initrd && img->initrd_size) {
		uint64_t top = MIN(gm->size, (uint64_t)ih->initrd_addr_max + 1);

		if (img->initrd_size > top)
			goto initrd_big;
		initrd_addr = (top - img->initrd_size) & ~0xfffULL;
		if (initrd_addr < ALIGN_UP(limit, 0x1000ULL))
			goto initrd_big;
		memcpy(gm_ptr(gm, initrd_addr, img->initrd_size), img->initrd,
		       img->initrd_size);
		bp->hdr.ramdisk_image = initrd_addr;
		bp->hdr.ramdisk_size = img->initrd_size;
	}
	bp->acpi_rsdp_addr = BOOT_ACPI_ADDR;

	e820_add(bp, 0, 0x9fc00, E820_RAM);
	e820_add(bp, 0x9fc00, 0x400, E820_RESERVED);
	e820_add(bp, BOOT_ACPI_ADDR, 0x100000 - BOOT_ACPI_ADDR, E820_RESERVED);
	e820_add(bp, 0x100000, gm->size - 0x100000, E820_RAM);

	/* Identity map of the low 4 GiB with 2 MiB pages. */
	pml4 = gm_ptr(gm, BOOT_PML4_ADDR, 0x1000);
	pdpt = gm_ptr(gm, BOOT_PDPT_ADDR, 0x1000);
	pd = gm_ptr(gm, BOOT_PD_ADDR, 4 * 0x1000);
	memset(pml4, 0, 0x1000);
	memset(pdpt, 0, 0x1000);
	pml4[0] = BOOT_PDPT_ADDR | PTE_P | PTE_RW;
	for (i = 0; i < 4; i++)
		pdpt[i] = (BOOT_PD_ADDR + i * 0x1000) | PTE_P | PTE_RW;
	for (i = 0; i < 4 * 512; i++)
		pd[i] = ((uint64_t)i << 21) | PTE_P | PTE_RW | PTE_PS;

	/* GDT: null, null, 64-bit code (0x10), data (0x18), as boot.rst asks. */
	gdt = gm_ptr(gm, BOOT_GDT_ADDR, 4 * 8);
	gdt[0] = 0;
	gdt[1] = 0;
	gdt[2] = 0x00af9b000000ffffULL;
	gdt[3] = 0x00cf93000000ffffULL;

	*entry = BOOT_KERNEL_ADDR + 0x200;
	return 0;

initrd_big:
	*err = "initrd does not fit in guest memory";
	return -ENOMEM;
}

static void seg(struct kvm_segment *s, uint16_t sel, uint8_t type, int l,
		int db)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->dpl = 0;
	s->db = db;
	s->s = 1;
	s->l = l;
	s->g = 1;
}

/* LINT0 as ExtINT (the PIC's virtual wire), LINT1 as NMI. */
static int boot_setup_lapic(struct vcpu *vcpu)
{
	struct kvm_lapic_state lapic;
	uint32_t *lint0, *lint1;

	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic))
		return -errno;
	lint0 = (uint32_t *)&lapic.regs[0x350];
	lint1 = (uint32_t *)&lapic.regs[0x360];
	*lint0 = (*lint0 & ~0x700U) | (7 << 8);
	*lint1 = (*lint1 & ~0x700U) | (4 << 8);
	if (ioctl(vcpu->fd, KVM_SET_LAPIC, &lapic))
		return -errno;
	return 0;
}

int boot_setup_vcpu(struct vcpu *vcpu, uint64_t entry)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu;
	int ret;

	ret = boot_setup_lapic(vcpu);
	if (ret)
		return ret;
	/* Application processors wait for INIT/SIPI in the in-kernel APIC. */
	if (vcpu->id)
		return 0;
	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs))
		return -errno;
	seg(&sregs.cs, 0x10, 0xb, 1, 0);
	seg(&sregs.ds, 0x18, 0x3, 0, 1);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.gdt.base = BOOT_GDT_ADDR;
	sregs.gdt.limit = 4 * 8 - 1;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	sregs.cr3 = BOOT_PML4_ADDR;
	sregs.cr4 = 1 << 5;			/* PAE */
	sregs.cr0 = (1 << 0) | (1 << 4) | (1U << 31);	/* PE, ET, PG */
	sregs.efer = (1 << 8) | (1 << 10);	/* LME, LMA */
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs))
		return -errno;

	memset(&regs, 0, sizeof(regs));
	regs.rflags = 2;
	regs.rip = entry;
	regs.rsi = BOOT_PARAMS_ADDR;
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs))
		return -errno;

	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	if (ioctl(vcpu->fd, KVM_SET_FPU, &fpu))
		return -errno;
	return 0;
}
