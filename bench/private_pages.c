// SPDX-License-Identifier: GPL-2.0
/*
 * private_pages: which guest pages a running sandbox holds as its own.
 *
 * The module counts a clone's private pages but does not say which they
 * are.  This finds them from outside: a page of the VMM's guest mapping is
 * the clone's own when the host page behind it is not the one every clone
 * of the snapshot shares.  The shared ones are read through a clone of the
 * snapshot made here (read faults map the snapshot's pages, never copy
 * them), and both mappings' host frames come from /proc/PID/pagemap.
 *
 *	private_pages PID SNAPSHOT_ID [PID2]
 *
 * PID is the process that maps the guest's memory (its "cube-clone"
 * mapping), SNAPSHOT_ID the module snapshot the clone was made of.  Prints
 * the private pages' guest frame numbers as ranges, "FIRST-LAST" or
 * "FRAME" separated by commas, on one line (the guest's memory starts at
 * physical address 0, so a page's offset in the mapping is its guest
 * physical address), and "# N private of M pages" on standard error,
 * then a line "contents private=N zero=Z as_snapshot=S": how many of them
 * hold only zeros, and how many the same bytes as the snapshot (both could
 * go back to the module without the guest seeing a difference).  With
 * PID2, another VMM of the same snapshot, it adds private_in_both=B
 * same_in_both=C: the pages both hold as their own, and how many of those
 * hold the same bytes in both (what sharing among clones could save).
 * Needs root (frame numbers in pagemap) and /dev/cube.  A measurement aid
 * of the benchmarks, not a test.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/cube.h>

#define PAGE		4096UL
#define PM_PRESENT	(1ULL << 63)
#define PM_PFN_MASK	((1ULL << 55) - 1)

/* The "cube-clone" mapping of @pid: its start and length. */
static int find_mapping(pid_t pid, uint64_t *start, uint64_t *len)
{
	char path[64], line[512];
	uint64_t a, b;
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "cube-clone") ||
		    sscanf(line, "%" SCNx64 "-%" SCNx64, &a, &b) != 2)
			continue;
		/* the largest, should a spare ever be mapped too */
		if (ret || b - a > *len) {
			*start = a;
			*len = b - a;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The frame most pages of @pfn map, if more than one does: the frame of
 * zeros a clone maps its snapshot's holes to (one per clone on some
 * kernels), never a page of the guest's own.
 */
static uint64_t zero_frame(const uint64_t *pfn, size_t n)
{
	uint64_t *s = malloc(n * sizeof(*s)), best = 0;
	size_t i, run = 0, best_run = 1;

	if (!s)
		return 0;
	memcpy(s, pfn, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	for (i = 0; i < n; i++) {
		run = i && s[i] == s[i - 1] ? run + 1 : 1;
		if (s[i] && run > best_run) {
			best_run = run;
			best = s[i];
		}
	}
	free(s);
	return best;
}

/* The host frames behind @n pages at @addr in @pid (0: not present). */
static int frames(pid_t pid, uint64_t addr, size_t n, uint64_t *pfn)
{
	char path[64];
	size_t i;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = pread(fd, pfn, n * sizeof(*pfn), (addr / PAGE) * sizeof(*pfn));
	close(fd);
	if (r != (ssize_t)(n * sizeof(*pfn)))
		return r < 0 ? -errno : -EIO;
	for (i = 0; i < n; i++)
		pfn[i] = (pfn[i] & PM_PRESENT) ? pfn[i] & PM_PFN_MASK : 0;
	return 0;
}

/* Whether each of @n pages of @pid's mapping at @start is its own. */
static int private_map(pid_t pid, uint64_t start, size_t n,
		       const uint64_t *snap, bool *priv)
{
	uint64_t *f = calloc(n, sizeof(*f)), zero;
	size_t i;
	int ret;

	if (!f)
		return -ENOMEM;
	ret = frames(pid, start, n, f);
	/*
	 * Mapped onto another frame than the snapshot's, and not the frame of
	 * zeros the snapshot's holes read as.
	 */
	zero = ret ? 0 : zero_frame(f, n);
	for (i = 0; !ret && i < n; i++)
		priv[i] = f[i] && f[i] != snap[i] && f[i] != zero;
	free(f);
	return ret;
}

/* Page @i of @pid's mapping at @start into @buf. */
static int read_page(int mem_fd, uint64_t start, size_t i, unsigned char *buf)
{
	return pread(mem_fd, buf, PAGE, start + i * PAGE) == (ssize_t)PAGE ?
	       0 : -EIO;
}

static int open_mem(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int main(int argc, char **argv)
{
	static const unsigned char zeros[PAGE];
	static unsigned char a[PAGE], b[PAGE];
	struct cube_clone_create cc = { 0 };
	uint64_t start = 0, len = 0, start2 = 0, len2 = 0, *snap;
	size_t n, i, nr = 0, first = 0, nzero = 0, nsnap = 0, both = 0, same = 0;
	volatile unsigned char sink = 0;
	bool *priv, *priv2 = NULL;
	int dev, ret, mem, mem2 = -1;
	unsigned char *m;
	pid_t pid, pid2 = 0;

	if (argc < 3 || argc > 4 || (pid = atoi(argv[1])) <= 0 ||
	    !(cc.snapshot_id = strtoull(argv[2], NULL, 10)) ||
	    (argc == 4 && (pid2 = atoi(argv[3])) <= 0)) {
		fprintf(stderr, "usage: private_pages PID SNAPSHOT_ID [PID2]\n");
		return 2;
	}
	ret = find_mapping(pid, &start, &len);
	if (!ret && pid2) {
		ret = find_mapping(pid2, &start2, &len2);
		if (!ret && len2 != len)
			ret = -EINVAL;
	}
	if (ret) {
		fprintf(stderr, "private_pages: no cube-clone mapping of the same size in %d%s%s: %s\n",
			(int)pid, pid2 ? " and " : "", pid2 ? argv[3] : "",
			strerror(-ret));
		return 1;
	}
	n = len / PAGE;
	snap = calloc(n, sizeof(*snap));
	priv = calloc(n, sizeof(*priv));
	priv2 = calloc(n, sizeof(*priv2));
	mem = open_mem(pid);
	if (pid2)
		mem2 = open_mem(pid2);
	if (!snap || !priv || !priv2 || mem < 0 || (pid2 && mem2 < 0)) {
		fprintf(stderr, "private_pages: %s\n", strerror(errno ?: ENOMEM));
		return 1;
	}
	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (dev < 0 || ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc) < 0) {
		fprintf(stderr, "private_pages: a clone of snapshot %" PRIu64 ": %s\n",
			(uint64_t)cc.snapshot_id, strerror(errno));
		return 1;
	}
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, cc.fd, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "private_pages: mmap: %s\n", strerror(errno));
		return 1;
	}
	/* read faults map the snapshot's own pages: their frames */
	for (i = 0; i < n; i++)
		sink += m[i * PAGE];
	ret = frames(getpid(), (uintptr_t)m, n, snap) ?:
	      private_map(pid, start, n, snap, priv);
	if (!ret && pid2)
		ret = private_map(pid2, start2, n, snap, priv2);
	if (ret) {
		fprintf(stderr, "private_pages: pagemap: %s\n", strerror(-ret));
		return 1;
	}
	/* The guests run on meanwhile: a moment's picture, not an exact one. */
	for (i = 0; i <= n; i++) {
		bool p = i < n && priv[i];

		if (p && !read_page(mem, start, i, a)) {
			if (!memcmp(a, zeros, PAGE))
				nzero++;
			else if (!memcmp(a, m + i * PAGE, PAGE))
				nsnap++;
			if (priv2[i] && !read_page(mem2, start2, i, b)) {
				both++;
				same += !memcmp(a, b, PAGE);
			}
		}
		if (p && !first) {
			first = i + 1;
		} else if (!p && first) {
			printf("%s%zu", nr ? "," : "", first - 1);
			if (i - 1 > first - 1)
				printf("-%zu", i - 1);
			nr += i - (first - 1);
			first = 0;
		}
	}
	printf("\n");
	fprintf(stderr, "# %zu private of %zu pages\n", nr, n);
	fprintf(stderr, "contents private=%zu zero=%zu as_snapshot=%zu", nr,
		nzero, nsnap);
	if (pid2)
		fprintf(stderr, " private_in_both=%zu same_in_both=%zu", both,
			same);
	fprintf(stderr, "\n");
	munmap(m, len);
	close(cc.fd);
	close(dev);
	return 0;
}
