/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A 16550A UART at 0x3f8, IRQ 4: output only.  What the guest transmits
 * goes to a file descriptor (the console log); reads see an idle line.
 *
 * The console log lives on the host (a sandbox's run directory, a tmpfs),
 * so what a guest can make it hold is bounded: at most @max bytes in the
 * file, counting what was there when the VMM opened it (an earlier VMM of
 * the same sandbox), and at most @rate bytes a second after a burst of
 * four seconds' worth.  Output over the rate is dropped and counted, and a
 * line says how much once output flows again (or the VMM ends).
 *
 * At the cap a file rotates in place: its newest half (from a line's
 * start) moves to its start, the rest is cut off and a line says how much
 * older output is gone, so the log always ends with what the guest wrote
 * last.  Only the fd is needed, so a jailed VMM rotates too.  Output that
 * is not a file open for reading and writing (--console-log opens it so;
 * standard output to a pipe or a terminal is not) stops at the cap
 * instead, and one line says the rest is dropped.
 */
#ifndef CUBE_VMM_SERIAL_H
#define CUBE_VMM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util.h"

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
	uint64_t max;			/* bytes the file may hold */
	uint64_t written;		/* bytes in the file */
	struct token_bucket rate;	/* bytes a second, 4 s of burst */
	uint64_t dropped;		/* over the rate, not yet said */
	bool full;			/* at @max: the rest is dropped */
	bool rotate;			/* a file: rotates at @max */
	uint64_t dropped_old;		/* bytes rotated out */
};

/* room kept for one of the VMM's own lines */
#define SERIAL_NOTE_MAX		160

#define SERIAL_DEFAULT_MAX	(1ULL << 20)
#define SERIAL_DEFAULT_RATE	(64ULL << 10)

void serial_init(struct serial *s, struct vm *vm, int out_fd);
void serial_set_limits(struct serial *s, uint64_t max, uint64_t rate);
void serial_io(struct serial *s, uint16_t off, bool write, uint8_t *val);
void serial_flush(struct serial *s);

/* The fd a rotation writes and truncates (vCPU threads' filter), or -1. */
static inline int serial_rotate_fd(const struct serial *s)
{
	return s->rotate ? s->out_fd : -1;
}
void serial_get_regs(struct serial *s, struct serial_regs *r);
void serial_set_regs(struct serial *s, const struct serial_regs *r);

#endif /* CUBE_VMM_SERIAL_H */
