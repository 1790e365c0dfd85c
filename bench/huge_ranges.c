// SPDX-License-Identifier: GPL-2.0
/*
 * huge_ranges: how much of a guest memory file could be mapped huge.
 *
 * A clone maps its snapshot 4 KiB at a time: one PTE, one fault or
 * fault-around slot per page.  A 2 MiB-aligned range whose 512 pages all
 * hold data could instead be one PMD mapping of a huge page that every
 * clone shares read-only until it writes there: one fault, and no page
 * table page per clone for the range.  This counts such ranges in a
 * snapshot's memory file (pages of zeros count as holes, as cube.ko keeps
 * them), so the next step for the module can be judged by the figure.
 *
 *	huge_ranges FILE
 *
 * Prints a comment line and "bench: figure=huge_ranges ..."; fails only
 * when FILE cannot be read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE		4096UL
#define RANGE		(2UL << 20)
#define RANGE_PAGES	(RANGE / PAGE)

static int page_has_data(const unsigned char *p)
{
	static const unsigned char zero[PAGE];

	return memcmp(p, zero, PAGE) != 0;
}

/* Pages with data in the range at @off of @fd; -1 on a read error. */
static long range_data_pages(int fd, off_t off, off_t size, unsigned char *buf)
{
	off_t end = off + (off_t)RANGE < size ? off + (off_t)RANGE : size;
	off_t pos = off, data, hole;
	long n = 0;

	while (pos < end) {
		data = lseek(fd, pos, SEEK_DATA);
		if (data < 0 || data >= end)
			break;		/* ENXIO: only a hole is left */
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || hole > end)
			hole = end;
		data &= ~(off_t)(PAGE - 1);
		for (pos = data; pos < hole; pos += PAGE) {
			ssize_t r = pread(fd, buf, PAGE, pos);

			if (r < 0)
				return -1;
			if (r < (ssize_t)PAGE)
				memset(buf + r, 0, PAGE - r);
			n += page_has_data(buf);
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	long ranges = 0, with_data = 0, full = 0, pages = 0, in_full = 0, n;
	struct stat st;
	off_t off;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: huge_ranges FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "huge_ranges: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	buf = malloc(PAGE);
	if (!buf)
		return 1;
	for (off = 0; off < st.st_size; off += RANGE) {
		n = range_data_pages(fd, off, st.st_size, buf);
		if (n < 0) {
			fprintf(stderr, "huge_ranges: %s: %s\n", argv[1],
				strerror(errno));
			return 1;
		}
		ranges++;
		pages += n;
		with_data += n > 0;
		if (n == (long)RANGE_PAGES) {
			full++;
			in_full += n;
		}
	}
	printf("# huge_ranges: %ld 2 MiB ranges, %ld with data, %ld full "
	       "(%ld of %ld data pages could be mapped huge)\n",
	       ranges, with_data, full, in_full, pages);
	printf("bench: figure=huge_ranges ranges_2m=%ld with_data=%ld full=%ld "
	       "data_pages=%ld pages_in_full=%ld\n",
	       ranges, with_data, full, pages, in_full);
	free(buf);
	close(fd);
	return 0;
}
