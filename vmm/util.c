// SPDX-License-Identifier: GPL-2.0
/* Small helpers shared by cube-vmm's files. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int vmm_verbose;

/*
 * cube-vmm's messages go to a file on the host (the sandbox's run
 * directory), and a guest can make the VMM complain in a loop (a device
 * reset again and again): at most VMM_LOG_BURST messages at once and
 * VMM_LOG_RATE a second after that, VMM_LOG_MAX bytes in all, counting
 * what an earlier VMM of the sandbox left in the file.  What is over is
 * dropped and counted, and a line says so.  A log file open read-write
 * (cube-shim opens vmm.log so) is not stopped at the cap: its newest half
 * moves to its start, so it still ends with the messages that tell why a
 * VMM failed.  It stays O_APPEND but for the rotation itself, so whatever
 * else writes to the same file (stdout) appends too.
 */
static double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

void token_bucket_init(struct token_bucket *b, double rate, double burst)
{
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->last = monotonic_s();
}

bool token_bucket_take(struct token_bucket *b, double cost)
{
	double now = monotonic_s();

	b->tokens += (now - b->last) * b->rate;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	b->last = now;
	if (b->tokens < cost)
		return false;
	b->tokens -= cost;
	return true;
}

static struct {
	pthread_mutex_t lock;
	struct token_bucket rate;
	size_t max;
	unsigned long dropped;
	unsigned long long dropped_old;	/* bytes the rotations cut */
	size_t bytes;
	int flags;			/* stderr's file status flags */
	bool full, started, rotate;
} vmm_log_state = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.max = VMM_LOG_MAX,
};

#define VMM_LOG_NOTE_MAX	160

/* Called with the lock held: what stderr is, how much it holds. */
static void vmm_log_probe(void)
{
	struct stat st;
	int fl;

	vmm_log_state.bytes = 0;
	vmm_log_state.rotate = false;
	if (fstat(STDERR_FILENO, &st) || !S_ISREG(st.st_mode))
		return;
	vmm_log_state.bytes = st.st_size;
	fl = fcntl(STDERR_FILENO, F_GETFL);
	vmm_log_state.flags = fl;
	vmm_log_state.rotate = fl >= 0 && (fl & O_ACCMODE) == O_RDWR;
}

/* Called with the lock held: the default bounds, unless set already. */
static void vmm_log_start(void)
{
	if (vmm_log_state.started)
		return;
	token_bucket_init(&vmm_log_state.rate, VMM_LOG_RATE, VMM_LOG_BURST);
	vmm_log_probe();
	vmm_log_state.started = true;
}

void vmm_log_set_limits(unsigned int rate, unsigned int burst, size_t max)
{
	pthread_mutex_lock(&vmm_log_state.lock);
	token_bucket_init(&vmm_log_state.rate, rate, burst);
	vmm_log_state.max = max;
	vmm_log_state.dropped = 0;
	vmm_log_state.dropped_old = 0;
	vmm_log_probe();
	vmm_log_state.full = false;
	vmm_log_state.started = true;
	pthread_mutex_unlock(&vmm_log_state.lock);
}

int vmm_log_rotate_fd(void)
{
	int fd;

	pthread_mutex_lock(&vmm_log_state.lock);
	vmm_log_start();
	fd = vmm_log_state.rotate ? STDERR_FILENO : -1;
	pthread_mutex_unlock(&vmm_log_state.lock);
	return fd;
}

/* Called with the lock held. */
static void vmm_log_put(const char *line, size_t len)
{
	if (fwrite(line, 1, len, stderr) == len)
		vmm_log_state.bytes += len;
	fflush(stderr);
}

/*
 * Called with the lock held: the newest half of the log to its start, with
 * O_APPEND off meanwhile (an O_APPEND pwrite() appends).  False where that
 * fails; the log then stops at the cap.
 */
static bool vmm_log_rotate(void)
{
	struct stat st;
	long long to;

	if (fstat(STDERR_FILENO, &st))
		return false;
	if (fcntl(STDERR_FILENO, F_SETFL, vmm_log_state.flags & ~O_APPEND))
		return false;
	to = file_keep_newest(STDERR_FILENO, st.st_size, vmm_log_state.max / 2);
	fcntl(STDERR_FILENO, F_SETFL, vmm_log_state.flags);
	if (to < 0)
		return false;
	vmm_log_state.dropped_old += st.st_size - to;
	vmm_log_state.bytes = to;
	return true;
}

void vmm_log(const char *fmt, ...)
{
	char line[512], note[VMM_LOG_NOTE_MAX];
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
	vmm_log_start();
	if (vmm_log_state.full ||
	    !token_bucket_take(&vmm_log_state.rate, 1)) {
		vmm_log_state.dropped++;
		goto out;
	}
	if (vmm_log_state.dropped) {
		snprintf(note, sizeof(note), "cube-vmm: %lu messages dropped "
			 "(over %.0f a second)\n", vmm_log_state.dropped,
			 vmm_log_state.rate.rate);
		vmm_log_put(note, strlen(note));
		vmm_log_state.dropped = 0;
	}
	if (vmm_log_state.bytes + len + 2 * VMM_LOG_NOTE_MAX >
	    vmm_log_state.max && vmm_log_state.rotate && vmm_log_rotate()) {
		snprintf(note, sizeof(note), "cube-vmm: older messages dropped "
			 "(%llu bytes so far): the log keeps its newest\n",
			 vmm_log_state.dropped_old);
		vmm_log_put(note, strlen(note));
	}
	if (vmm_log_state.bytes + len > vmm_log_state.max) {
		snprintf(note, sizeof(note), "cube-vmm: %zu bytes of messages "
			 "logged: the rest are dropped\n", vmm_log_state.max);
		vmm_log_put(note, strlen(note));
		vmm_log_state.full = true;
		goto out;
	}
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

int pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

long long file_keep_newest(int fd, uint64_t size, uint64_t keep)
{
	char chunk[4096];
	uint64_t from = size > keep ? size - keep : 0, to = 0;
	ssize_t n, i;

	if (!from)
		return size;
	/* the first whole line of the newest part */
	n = pread(fd, chunk, sizeof(chunk), from);
	for (i = 0; i < n && chunk[i] != '\n'; i++)
		;
	if (i < n)
		from += i + 1;
	/* forward, chunk by chunk: the source is always past the destination */
	while (from < size) {
		size_t want = size - from < sizeof(chunk) ?
			      size - from : sizeof(chunk);
		int ret;

		ret = pread_full(fd, chunk, want, from);
		if (!ret)
			ret = pwrite_full(fd, chunk, want, to);
		if (ret)
			return ret;
		from += want;
		to += want;
	}
	if (ftruncate(fd, to))
		return -errno;
	return to;
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

const char *check_rw_files(const int *fds, int nfds)
{
	struct stat st[8];
	int i, j, mode;

	if (nfds < 0 || nfds > 8)
		return "too many descriptors passed";
	for (i = 0; i < nfds; i++) {
		mode = fcntl(fds[i], F_GETFL);
		if (fstat(fds[i], &st[i]) || !S_ISREG(st[i].st_mode) ||
		    mode < 0 || (mode & O_ACCMODE) != O_RDWR)
			return "a descriptor passed is not a regular file open read-write";
		for (j = 0; j < i; j++)
			if (st[i].st_dev == st[j].st_dev &&
			    st[i].st_ino == st[j].st_ino)
				return "the files passed are not different files";
	}
	return NULL;
}
