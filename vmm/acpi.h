/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal ACPI tables: RSDP, XSDT, FADT (hardware-reduced, with sleep
 * control/status and reset registers on I/O ports), MADT (local APICs and
 * the IOAPIC) and a DSDT naming \_S5, the UART (PNP0501) and one LNRO0005
 * (virtio-mmio) device per virtio transport.  The guest kernel's
 * CONFIG_X86_MPPARSE is off, so ACPI is how it finds its CPUs, and
 * CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES is off, so ACPI is how virtio_mmio
 * finds its devices.
 */
#ifndef CUBE_VMM_ACPI_H
#define CUBE_VMM_ACPI_H

#include <stdint.h>

#include "mem.h"

/* I/O ports of the ACPI registers (pio.c). */
#define ACPI_SLEEP_CTL_PORT	0x600
#define ACPI_SLEEP_STS_PORT	0x601
#define ACPI_RESET_PORT		0x602
#define ACPI_RESET_VALUE	0x1
#define ACPI_SLP_EN		(1 << 5)

struct acpi_mmio_dev {
	uint64_t base;
	uint32_t size;
	uint32_t irq;
};

/* Write the tables at addr (BOOT_ACPI_ADDR); 0 or -ENOSPC. */
int acpi_build(struct guest_mem *gm, uint64_t addr, uint64_t limit,
	       int nr_vcpus, const struct acpi_mmio_dev *devs, int nr_devs);

#endif /* CUBE_VMM_ACPI_H */
