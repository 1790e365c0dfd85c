/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A 16550A UART at 0x3f8, IRQ 4: output only.  What the guest transmits
 * goes to a file descriptor (the console log); reads see an idle line.
 */
#ifndef CUBE_VMM_SERIAL_H
#define CUBE_VMM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SERIAL_PORT	0x3f8
#define SERIAL_IRQ	4

struct vm;

/* Register state: also the snapshot section of the device. */
struct serial_regs {
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
	uint8_t thri_pending;
};

struct serial {
	pthread_mutex_t lock;
	struct vm *vm;
	int out_fd;
	struct serial_regs r;
	int irq_level;
	char buf[256];
	unsigned int buf_len;
};

void serial_init(struct serial *s, struct vm *vm, int out_fd);
void serial_io(struct serial *s, uint16_t off, bool write, uint8_t *val);
void serial_flush(struct serial *s);
void serial_get_regs(struct serial *s, struct serial_regs *r);
void serial_set_regs(struct serial *s, const struct serial_regs *r);

#endif /* CUBE_VMM_SERIAL_H */
