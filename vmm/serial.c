// SPDX-License-Identifier: GPL-2.0
/* 16550A UART, transmit side only; see serial.h. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serial.h"
#include "util.h"
#include "vm.h"

#define UART_LCR_DLAB	0x80
#define UART_IER_THRI	0x02
#define UART_IIR_NONE	0x01
#define UART_IIR_THRI	0x02
#define UART_FCR_ENABLE	0x01
#define UART_LSR_IDLE	0x60	/* THRE | TEMT */
#define UART_MCR_LOOP	0x10
#define UART_MSR_IDLE	0xb0	/* DCD | DSR | CTS */

void serial_init(struct serial *s, struct vm *vm, int out_fd)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->vm = vm;
	s->out_fd = out_fd;
	/*
	 * A log an earlier VMM of the sandbox wrote counts.  A file is
	 * written at explicit offsets (an O_APPEND pwrite() would append), so
	 * that at the cap its newest half can move to its start (which
	 * reads it: a file open for writing only stops at the cap).
	 */
	if (out_fd >= 0 && !fstat(out_fd, &st) && S_ISREG(st.st_mode)) {
		int fl = fcntl(out_fd, F_GETFL);

		s->written = st.st_size;
		s->rotate = fl >= 0 && (fl & O_ACCMODE) == O_RDWR &&
			    !fcntl(out_fd, F_SETFL, fl & ~O_APPEND);
	}
	serial_set_limits(s, SERIAL_DEFAULT_MAX, SERIAL_DEFAULT_RATE);
}

/* @len bytes to the log: at the end of a file, or down a pipe. */
static void serial_put_locked(struct serial *s, const char *b, size_t len)
{
	if (!s->rotate) {
		write_full(s->out_fd, b, len);
		s->written += len;
	} else if (!pwrite_full(s->out_fd, b, len, s->written)) {
		s->written += len;
	}
}

/*
 * The log at its cap: its newest half, from a line's start, moves to the
 * file's start and the rest is cut off.  False where that fails (the log
 * then stops as a pipe's does).
 */
static bool serial_rotate_locked(struct serial *s)
{
	long long to = file_keep_newest(s->out_fd, s->written, s->max / 2);

	if (to < 0)
		return false;
	s->dropped_old += s->written - to;
	s->written = to;
	return true;
}

void serial_set_limits(struct serial *s, uint64_t max, uint64_t rate)
{
	pthread_mutex_lock(&s->lock);
	s->max = max;
	token_bucket_init(&s->rate, rate, 4.0 * rate);
	pthread_mutex_unlock(&s->lock);
}

/* A line of the VMM's own in the log; not counted against the rate. */
static void __attribute__((format(printf, 2, 3)))
serial_note_locked(struct serial *s, const char *fmt, ...)
{
	char line[SERIAL_NOTE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		serial_put_locked(s, line, (size_t)n < sizeof(line) ?
				  (size_t)n : sizeof(line) - 1);
}

/* How much output the rate dropped, if any is not yet said. */
static void serial_say_dropped_locked(struct serial *s)
{
	if (!s->dropped)
		return;
	serial_note_locked(s, "\n[cube-vmm: %llu bytes of the guest's output "
			   "dropped: over %.0f bytes a second]\n",
			   (unsigned long long)s->dropped, s->rate.rate);
	s->dropped = 0;
}

static void serial_flush_locked(struct serial *s)
{
	size_t len = s->buf_len;

	s->buf_len = 0;
	if (!len || s->out_fd < 0 || s->full)
		return;
	if (s->written + len + SERIAL_NOTE_MAX > s->max && s->rotate &&
	    serial_rotate_locked(s)) {
		serial_note_locked(s, "[cube-vmm: older output dropped "
				   "(%llu bytes so far): the console log keeps "
				   "its newest]\n",
				   (unsigned long long)s->dropped_old);
	}
	if (s->written + len > s->max) {
		s->full = true;
		serial_note_locked(s, "\n[cube-vmm: the console log holds its "
				   "%llu bytes: the rest of the guest's output "
				   "is dropped]\n",
				   (unsigned long long)s->max);
		return;
	}
	if (!token_bucket_take(&s->rate, len)) {
		s->dropped += len;
		return;
	}
	serial_say_dropped_locked(s);
	serial_put_locked(s, s->buf, len);
}

/* At the end: what is buffered, and how much was dropped if not yet said. */
void serial_flush(struct serial *s)
{
	pthread_mutex_lock(&s->lock);
	serial_flush_locked(s);
	if (s->out_fd >= 0 && !s->full)
		serial_say_dropped_locked(s);
	pthread_mutex_unlock(&s->lock);
}

static void serial_update_irq(struct serial *s)
{
	int level = (s->r.ier & UART_IER_THRI) && s->r.thri_pending;

	if (level != s->irq_level) {
		s->irq_level = level;
		vm_irq_line(s->vm, SERIAL_IRQ, level);
	}
}

static void serial_tx(struct serial *s, uint8_t c)
{
	s->buf[s->buf_len++] = c;
	if (c == '\n' || s->buf_len == sizeof(s->buf))
		serial_flush_locked(s);
}

static uint8_t serial_msr(const struct serial *s)
{
	uint8_t m = s->r.mcr, v = 0;

	if (!(m & UART_MCR_LOOP))
		return UART_MSR_IDLE;
	/* Loopback: DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD. */
	if (m & 0x01)
		v |= 0x20;
	if (m & 0x02)
		v |= 0x10;
	if (m & 0x04)
		v |= 0x40;
	if (m & 0x08)
		v |= 0x80;
	return v;
}

void serial_io(struct serial *s, uint16_t off, bool write, uint8_t *val)
{
	bool dlab;

	pthread_mutex_lock(&s->lock);
	dlab = s->r.lcr & UART_LCR_DLAB;
	if (write) {
		uint8_t v = *val;

		switch (off) {
		case 0:
			if (dlab) {
				s->r.dll = v;
			} else {
				if (!(s->r.mcr & UART_MCR_LOOP))
					serial_tx(s, v);
				s->r.thri_pending = 1;
			}
			break;
		case 1:
			if (dlab) {
				s->r.dlm = v;
			} else {
				if (!(s->r.ier & UART_IER_THRI) &&
				    (v & UART_IER_THRI))
					s->r.thri_pending = 1;
				s->r.ier = v & 0x0f;
			}
			break;
		case 2:
			s->r.fcr = v;
			break;
		case 3:
			s->r.lcr = v;
			break;
		case 4:
			s->r.mcr = v & 0x1f;
			break;
		case 7:
			s->r.scr = v;
			break;
		}
	} else {
		uint8_t v = 0;

		switch (off) {
		case 0:
			v = dlab ? s->r.dll : 0;
			break;
		case 1:
			v = dlab ? s->r.dlm : s->r.ier;
			break;
		case 2:
			if ((s->r.ier & UART_IER_THRI) && s->r.thri_pending) {
				v = UART_IIR_THRI;
				s->r.thri_pending = 0;
			} else {
				v = UART_IIR_NONE;
			}
			if (s->r.fcr & UART_FCR_ENABLE)
				v |= 0xc0;
			break;
		case 3:
			v = s->r.lcr;
			break;
		case 4:
			v = s->r.mcr;
			break;
		case 5:
			v = UART_LSR_IDLE;
			break;
		case 6:
			v = serial_msr(s);
			break;
		case 7:
			v = s->r.scr;
			break;
		}
		*val = v;
	}
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

void serial_get_regs(struct serial *s, struct serial_regs *r)
{
	pthread_mutex_lock(&s->lock);
	*r = s->r;
	serial_flush_locked(s);
	pthread_mutex_unlock(&s->lock);
}

void serial_set_regs(struct serial *s, const struct serial_regs *r)
{
	pthread_mutex_lock(&s->lock);
	s->r = *r;
	s->r.ier &= 0x0f;
	s->r.mcr &= 0x1f;
	s->r.thri_pending = !!s->r.thri_pending;
	s->irq_level = -1;
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}
