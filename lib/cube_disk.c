// SPDX-License-Identifier: GPL-2.0
/* Sparse and reflink copies of a sandbox's disk; see cube_disk.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include "cube_disk.h"

#define COPY_BUF	(1U << 20)
#define ZERO_BLOCK	4096U

static bool all_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * [off, off + len) of src to the same place in dst with pread/pwrite;
 * blocks of zeroes are not written, so they stay holes in dst.
 */
static int copy_rw(int src_fd, int dst_fd, uint64_t off, uint64_t len,
		   uint8_t **buf)
{
	if (!*buf) {
		*buf = malloc(COPY_BUF);
		if (!*buf)
			return -ENOMEM;
	}
	while (len) {
		size_t want = len < COPY_BUF ? len : COPY_BUF, done, b;
		ssize_t r = pread(src_fd, *buf, want, off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!r)
			return 0;	/* src ends early: the rest reads zero */
		for (done = 0; done < (size_t)r; done += b) {
			b = (size_t)r - done < ZERO_BLOCK ? (size_t)r - done :
			    ZERO_BLOCK;
			if (all_zero(*buf + done, b))
				continue;
			if (pwrite(dst_fd, *buf + done, b, off + done) !=
			    (ssize_t)b)
				return errno ? -errno : -EIO;
		}
		off += r;
		len -= r;
	}
	return 0;
}

/* One data range; *rw set once copy_file_range() cannot do it. */
static int copy_range(int src_fd, int dst_fd, uint64_t off, uint64_t len,
		      bool *rw, uint8_t **buf)
{
	while (len && !*rw) {
		loff_t in = off, out = off;
		ssize_t r = copy_file_range(src_fd, &in, dst_fd, &out, len, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EXDEV && errno != EINVAL &&
			    errno != ENOSYS && errno != EOPNOTSUPP &&
			    errno != EBADF)
				return -errno;
			/* EBADF: an O_APPEND dst; the rest by hand */
			*rw = true;
			break;
		}
		if (!r)
			return 0;
		off += r;
		len -= r;
	}
	return len ? copy_rw(src_fd, dst_fd, off, len, buf) : 0;
}

/**
 * cube_disk_copy() - make @dst_fd a copy of the first @size bytes of @src_fd
 * @src_fd: the file copied, open for reading
 * @dst_fd: the copy, a regular file open for writing; what it held is
 *	    dropped (it is truncated first)
 * @size: bytes to copy, and the size @dst_fd has in the end; bytes past
 *	  the end of @src_fd are zeroes (holes)
 *
 * A reflink (ioctl FICLONE) first, where the file system shares extents
 * (XFS, btrfs); else only the data ranges of @src_fd (lseek SEEK_DATA /
 * SEEK_HOLE) are copied, with copy_file_range() and, where that cannot,
 * read and write (blocks of zeroes skipped), and the copy is truncated to
 * @size: a copy costs what the guest wrote, not the disk's size.  Neither
 * fd's file offset matters, both may be moved.  Nothing is synced.
 *
 * Return: 0, or -errno (-EBADF for an fd that is not open, -EINVAL for one
 * that is not a regular file); @dst_fd then holds an unfinished copy.
 */
int cube_disk_copy(int src_fd, int dst_fd, uint64_t size)
{
	struct stat ss, ds;
	uint8_t *buf = NULL;
	uint64_t off = 0;
	bool rw = false;
	int ret = 0;

	if (fstat(src_fd, &ss) || fstat(dst_fd, &ds))
		return -errno;
	if (!S_ISREG(ss.st_mode) || !S_ISREG(ds.st_mode) ||
	    size > (uint64_t)INT64_MAX)
		return -EINVAL;
	if (ftruncate(dst_fd, 0))
		return -errno;
	if ((uint64_t)ss.st_size <= size &&
	    !ioctl(dst_fd, FICLONE, src_fd))
		return ftruncate(dst_fd, size) ? -errno : 0;
	while (off < size) {
		off_t data = lseek(src_fd, off, SEEK_DATA), hole;

		if (data < 0) {
			if (errno == ENXIO)
				break;		/* no data from off on */
			ret = -errno;
			goto out;
		}
		if ((uint64_t)data >= size)
			break;
		hole = lseek(src_fd, data, SEEK_HOLE);
		if (hole < 0) {
			ret = -errno;
			goto out;
		}
		if ((uint64_t)hole > size)
			hole = size;
		ret = copy_range(src_fd, dst_fd, data, hole - data, &rw, &buf);
		if (ret)
			goto out;
		off = hole;
	}
	if (ftruncate(dst_fd, size))
		ret = -errno;
out:
	free(buf);
	return ret;
}
