/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Direct kernel boot through the Linux x86 64-bit boot protocol.
 *
 * Low memory layout:
 *   0x00500  GDT              0x07000  boot_params (zero page)
 *   0x09000  PML4             0x0a000  PDPT       0x0b000-0x0efff  4 PDs
 *   0x20000  command line     0xe0000  ACPI tables (RSDP first)
 *   0x100000 protected-mode kernel     initrd: top of RAM
 */
#ifndef CUBE_VMM_BOOT_H
#define CUBE_VMM_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

#define BOOT_GDT_ADDR		0x500ULL
#define BOOT_PARAMS_ADDR	0x7000ULL
#define BOOT_PML4_ADDR		0x9000ULL
#define BOOT_PDPT_ADDR		0xa000ULL
#define BOOT_PD_ADDR		0xb000ULL
#define BOOT_CMDLINE_ADDR	0x20000ULL
#define BOOT_CMDLINE_MAX	0x10000ULL
#define BOOT_ACPI_ADDR		0xe0000ULL
#define BOOT_KERNEL_ADDR	0x100000ULL

struct boot_image {
	const uint8_t *kernel;		/* whole bzImage */
	size_t kernel_size;
	const uint8_t *initrd;		/* may be NULL */
	size_t initrd_size;
	const char *cmdline;
};

/*
 * Check the bzImage, place kernel, initrd, command line, boot_params,
 * e820 map and page tables in guest memory.  On error *err says why.
 * Returns 0 and the 64-bit entry point in *entry, or -errno.
 */
int boot_load_linux(struct guest_mem *gm, const struct boot_image *img,
		    uint64_t *entry, const char **err);
/* Registers of the boot vCPU for the 64-bit entry. */
int boot_setup_vcpu(struct vcpu *vcpu, uint64_t entry);

#endif /* CUBE_VMM_BOOT_H */
