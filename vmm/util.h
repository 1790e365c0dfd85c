/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by cube-vmm's files. */
#ifndef CUBE_VMM_UTIL_H
#define CUBE_VMM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))

#define SZ_1K		0x400ULL
#define SZ_1M		0x100000ULL
#define SZ_1G		0x40000000ULL

extern int vmm_verbose;

/*
 * A token bucket: @rate units a second, at most @burst at once.  Not
 * locked: its user holds its own lock.
 */
struct token_bucket {
	double rate, burst, tokens, last;
};

void token_bucket_init(struct token_bucket *b, double rate, double burst);
/* Whether @cost units may pass now; takes them if so. */
bool token_bucket_take(struct token_bucket *b, double cost);

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_us(void);

/* Bounds of cube-vmm's own messages (see util.c). */
#define VMM_LOG_RATE	10
#define VMM_LOG_BURST	100
#define VMM_LOG_MAX	(1 << 20)

void vmm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Other bounds than the defaults (and a fresh count): for tests. */
void vmm_log_set_limits(unsigned int rate, unsigned int burst, size_t max);
/*
 * The fd the log rotates (moves its newest half to its start: pwrite64,
 * ftruncate and fcntl F_SETFL on it), -1 when it stops at its cap.
 */
int vmm_log_rotate_fd(void);
#define pr_err(fmt, ...)	vmm_log("cube-vmm: " fmt "\n", ##__VA_ARGS__)
#define pr_info(fmt, ...)	do { if (vmm_verbose) vmm_log("cube-vmm: " fmt "\n", ##__VA_ARGS__); } while (0)

/* Write all of buf; returns 0 or -errno. */
int write_full(int fd, const void *buf, size_t len);
/* pread all of buf at off; -EIO on a short file, else 0 or -errno. */
int pread_full(int fd, void *buf, size_t len, off_t off);
/* pwrite all of buf at off; 0 or -errno. */
int pwrite_full(int fd, const void *buf, size_t len, off_t off);
/*
 * Cut the log file @fd (@size bytes, open read-write, not O_APPEND) down
 * to its newest @keep bytes or less, from the first line that starts in
 * them, moved to its start.  The new size, or -errno (then part moved).
 */
long long file_keep_newest(int fd, uint64_t size, uint64_t keep);
/*
 * Whether the @nfds descriptors passed with a request are regular files
 * open read-write, no two the same file: NULL, or what is wrong.
 */
const char *check_rw_files(const int *fds, int nfds);
/* Parse a decimal unsigned in [min, max]; 0 or -EINVAL/-ERANGE. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif /* CUBE_VMM_UTIL_H */
