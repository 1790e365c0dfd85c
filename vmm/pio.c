// SPDX-License-Identifier: GPL-2.0
/*
 * Port I/O exits: the UART, the i8042's reset line and the ACPI sleep and
 * reset registers.  The PIC, PIT and speaker port live in KVM.  Reads of
 * any other port see 0xff (nothing there), writes are dropped.
 */
#include <string.h>

#include "acpi.h"
#include "serial.h"
#include "vm.h"

#define I8042_DATA_PORT		0x60
#define I8042_CMD_PORT		0x64
#define I8042_CMD_RESET		0xfe

static void pio_one(struct vm *vm, uint16_t port, bool write, uint8_t *data,
		    unsigned int size)
{
	if (port >= SERIAL_PORT && port < SERIAL_PORT + 8 && size == 1) {
		serial_io(vm->serial, port - SERIAL_PORT, write, data);
		return;
	}
	if (!write) {
		memset(data, port == I8042_CMD_PORT || port == I8042_DATA_PORT ?
		       0 : 0xff, size);
		if (port == ACPI_SLEEP_STS_PORT)
			data[0] = 0;
		return;
	}
	switch (port) {
	case I8042_CMD_PORT:
		if (data[0] == I8042_CMD_RESET)
			vm_request_exit(vm, VM_EXIT_SHUTDOWN, "i8042 reset");
		break;
	case ACPI_SLEEP_CTL_PORT:
		if (data[0] & ACPI_SLP_EN)
			vm_request_exit(vm, VM_EXIT_SHUTDOWN,
					"ACPI power off (S%u)",
					(data[0] >> 2) & 7);
		break;
	case ACPI_RESET_PORT:
		if (data[0] == ACPI_RESET_VALUE)
			vm_request_exit(vm, VM_EXIT_SHUTDOWN, "ACPI reset");
		break;
	}
}

void vm_handle_pio(struct vm *vm, struct kvm_run *run)
{
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	unsigned int i, size = run->io.size;

	/* KVM bounds data_offset + size * count by the run page. */
	for (i = 0; i < run->io.count; i++, data += size)
		pio_one(vm, run->io.port, run->io.direction == KVM_EXIT_IO_OUT,
			data, size);
}
