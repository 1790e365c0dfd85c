// SPDX-License-Identifier: GPL-2.0
/* Small helpers shared by cube-vmm's files. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int vmm_verbose;

/*
 * cube-vmm's messages go to a file on the host (the sandbox's run
 * directory), and a guest can make the VMM complain in a loop (a device
 * reset again and again): at most VMM_LOG_BURST messages at once and
 * VMM_LOG_RATE a second after that, VMM_LOG_MAX bytes in all.  What is
 * over is dropped and counted, and a line says so.
 */
static struct {
	pthread_mutex_t lock;
	unsigned int rate, burst;
	size_t max;
	double tokens, last;
	unsigned long dropped;
	size_t bytes;
	bool full;
} vmm_log_state = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.rate = VMM_LOG_RATE,
	.burst = VMM_LOG_BURST,
	.max = VMM_LOG_MAX,
	.tokens = VMM_LOG_BURST,
};

void vmm_log_set_limits(unsigned int rate, unsigned int burst, size_t max)
{
	pthread_mutex_lock(&vmm_log_state.lock);
	vmm_log_state.rate = rate;
	vmm_log_state.burst = burst;
	vmm_log_state.max = max;
	vmm_log_state.tokens = burst;
	vmm_log_state.last = 0;
	vmm_log_state.dropped = 0;
	vmm_log_state.bytes = 0;
	vmm_log_state.full = false;
	pthread_mutex_unlock(&vmm_log_state.lock);
}

static double vmm_log_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Called with the lock held. */
static void vmm_log_put(const char *line, size_t len)
{
	if (fwrite(line, 1, len, stderr) == len)
		vmm_log_state.bytes += len;
	fflush(stderr);
}

void vmm_log(const char *fmt, ...)
{
	char line[512], note[160];
	double now = vmm_log_now();
	va_list ap;
	size_t len;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;

	pthread_mutex_lock(&vmm_log_state.lock);
	if (vmm_log_state.last)
		vmm_log_state.tokens += (now - vmm_log_state.last) *
					vmm_log_state.rate;
	if (vmm_log_state.tokens > vmm_log_state.burst)
		vmm_log_state.tokens = vmm_log_state.burst;
	vmm_log_state.last = now;
	if (vmm_log_state.full || vmm_log_state.tokens < 1) {
		vmm_log_state.dropped++;
		goto out;
	}
	if (vmm_log_state.dropped) {
		n = snprintf(note, sizeof(note), "cube-vmm: %lu messages dropped "
			     "(over %u a second)\n", vmm_log_state.dropped,
			     vmm_log_state.rate);
		vmm_log_put(note, strlen(note));
		vmm_log_state.dropped = 0;
	}
	if (vmm_log_state.bytes + len > vmm_log_state.max) {
		n = snprintf(note, sizeof(note), "cube-vmm: %zu bytes of messages "
			     "logged: the rest are dropped\n", vmm_log_state.max);
		vmm_log_put(note, strlen(note));
		vmm_log_state.full = true;
		goto out;
	}
	vmm_log_state.tokens -= 1;
	vmm_log_put(line, len);
out:
	pthread_mutex_unlock(&vmm_log_state.lock);
}

int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int pread_full(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}
