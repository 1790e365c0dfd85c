// SPDX-License-Identifier: GPL-2.0
/*
 * Restores onto cube.ko clones.  The first restore of a snapshot directory
 * turns its memory file into a module snapshot and records the id, with the
 * memory file's identity, in DIR/cube-snapshot-id; later restores clone that
 * snapshot, so all of them share its pages.  An flock on DIR makes
 * concurrent first restores create one snapshot; the file is replaced by
 * rename so a reader never sees half of it.  The record outlives cube.ko;
 * only what the module confirms of it is trusted (see rec_confirmed()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/cube.h>

#include "cube_clone.h"
#include "util.h"

#define ID_TMP_FILE	CUBE_CLONE_ID_FILE ".tmp"

/* What the id file says: the snapshot and the memory file it was made of. */
struct id_rec {
	uint64_t id;
	uint64_t ino;
	uint64_t mtime_ns;
	uint64_t size;
};

static int cerr(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

static void mem_rec(const struct stat *st, struct id_rec *rec)
{
	rec->ino = st->st_ino;
	rec->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL +
			st->st_mtim.tv_nsec;
	rec->size = st->st_size;
}

/* 0 and *rec filled, -ENOENT when there is no usable record. */
static int read_rec(int dfd, struct id_rec *rec)
{
	char buf[128];
	ssize_t n;
	int fd;

	fd = openat(dfd, CUBE_CLONE_ID_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		   &rec->id, &rec->ino, &rec->mtime_ns, &rec->size) != 4 ||
	    !rec->id)
		return -ENOENT;	/* garbage: made anew */
	return 0;
}

static int write_rec(int dfd, const struct id_rec *rec)
{
	char buf[128];
	int fd, len, ret = 0;

	len = snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64 " %" PRIu64
		       " %" PRIu64 "\n", rec->id, rec->ino, rec->mtime_ns,
		       rec->size);
	fd = openat(dfd, ID_TMP_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	ret = write_full(fd, buf, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && renameat(dfd, ID_TMP_FILE, dfd, CUBE_CLONE_ID_FILE))
		ret = -errno;
	if (ret)
		unlinkat(dfd, ID_TMP_FILE, 0);
	return ret;
}

static int make_snapshot(int dev, int mem_fd, uint64_t size, uint64_t *id,
			 char *err, size_t errlen)
{
	struct cube_snapshot_create sc = {
		.source = CUBE_SNAPSHOT_SRC_USER,
		.fd = -1,
		.length = size,
	};
	void *m;
	int ret = 0;

	m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, mem_fd, 0);
	if (m == MAP_FAILED)
		return cerr(err, errlen, -errno, "mapping memory: %s",
			    strerror(errno));
	sc.addr = (uintptr_t)m;
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &sc) < 0)
		ret = cerr(err, errlen, -errno, "CUBE_IOC_SNAPSHOT_CREATE: %s",
			   strerror(errno));
	munmap(m, size);
	*id = sc.id;
	return ret;
}

/*
 * Whether cube.ko confirms that @rec's id names a snapshot that can be the
 * record's: one of memory (depth 1, no parent) of the recorded size.  Ids
 * carry the module load's random generation, so an id kept from an earlier
 * load names nothing now (ENOENT) rather than a snapshot made since.
 * Returns 1 (confirmed), 0 (no such snapshot, or another kind) or -errno.
 */
static int rec_confirmed(int dev, const struct id_rec *rec)
{
	struct cube_snapshot_info info = { .id = rec->id };

	if (ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info))
		return errno == ENOENT ? 0 : -errno;
	return info.id == rec->id && info.depth == 1 && !info.parent_id &&
	       info.size == rec->size;
}

/* Under the directory lock: the id of a snapshot of the memory file. */
static int get_snapshot(int dev, int dfd, int mem_fd, uint64_t size,
			uint64_t *id, char *err, size_t errlen)
{
	struct cube_snapshot_id del = { 0 };
	struct id_rec rec, cur = { 0 };
	struct stat st;
	int ret;

	if (fstat(mem_fd, &st))
		return cerr(err, errlen, -errno, "memory: %s", strerror(errno));
	mem_rec(&st, &cur);
	ret = read_rec(dfd, &rec);
	if (ret && ret != -ENOENT)
		return cerr(err, errlen, ret, "reading %s: %s",
			    CUBE_CLONE_ID_FILE, strerror(-ret));
	if (!ret) {
		ret = rec_confirmed(dev, &rec);
		if (ret < 0)
			return cerr(err, errlen, ret,
				    "CUBE_IOC_SNAPSHOT_INFO: %s",
				    strerror(-ret));
		if (ret && rec.ino == cur.ino && rec.mtime_ns == cur.mtime_ns &&
		    rec.size == cur.size && rec.size == size) {
			*id = rec.id;
			return 0;
		}
		/* The memory file changed: its old snapshot goes. */
		if (ret) {
			del.id = rec.id;
			ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del);
		}
		/* Not confirmed: stale (cube.ko reloaded, or deleted). */
	}
	ret = make_snapshot(dev, mem_fd, size, &cur.id, err, errlen);
	if (ret)
		return ret;
	ret = write_rec(dfd, &cur);
	if (ret) {
		del.id = cur.id;
		ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del);
		return cerr(err, errlen, ret, "writing %s: %s",
			    CUBE_CLONE_ID_FILE, strerror(-ret));
	}
	*id = cur.id;
	return 0;
}

int cube_clone_open(const char *dir, int mem_fd, uint64_t size, char *err,
		    size_t errlen)
{
	struct cube_clone_create cc = { 0 };
	int dev, dfd, ret;
	uint64_t id;

	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
			return -ENODEV;
		return cerr(err, errlen, -errno, "cannot open /dev/%s: %s",
			    CUBE_DEVICE_NAME, strerror(errno));
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = cerr(err, errlen, -errno, "%s: %s", dir, strerror(errno));
		goto out_dev;
	}
	if (flock(dfd, LOCK_EX)) {
		ret = cerr(err, errlen, -errno, "locking %s: %s", dir,
			   strerror(errno));
		goto out_dir;
	}
	ret = get_snapshot(dev, dfd, mem_fd, size, &id, err, errlen);
	if (ret)
		goto out_dir;
	/* Cloned under the lock, so no one deletes it in between. */
	cc.snapshot_id = id;
	ret = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	if (ret < 0)
		ret = cerr(err, errlen, -errno, "CUBE_IOC_CLONE_CREATE: %s",
			   strerror(errno));
	else
		ret = cc.fd;
out_dir:
	close(dfd);	/* drops the lock */
out_dev:
	close(dev);
	return ret;
}
