// SPDX-License-Identifier: GPL-2.0
/* Releasing a killed cube-vmm's checkpoints; see cube_checkpoint.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/cube.h>

#include "cube_checkpoint.h"
#include "cube_checkpoint_rec.h"

/* Keep the first error: the rest is released anyway. */
static int note(int *ret, char *err, size_t errlen, int e, const char *fmt,
		...) __attribute__((format(printf, 5, 6)));
static int note(int *ret, char *err, size_t errlen, int e, const char *fmt,
		...)
{
	va_list ap;

	if (*ret)
		return *ret;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	*ret = e;
	return e;
}

/* The snapshot DIR/name records, deleted if cube.ko confirms it. */
static int release_snapshot(int dev, int cfd, const char *name, char *err,
			    size_t errlen)
{
	struct cube_snapshot_id del = { 0 };
	struct cube_ckpt_rec rec;
	char buf[128];
	ssize_t n;
	int fd, ok, ret = 0;

	fd = openat(cfd, CUBE_CKPT_REC_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : note(&ret, err, errlen, -errno,
				"%s/%s: %s", name, CUBE_CKPT_REC_FILE,
				strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return note(&ret, err, errlen, -errno, "%s/%s: %s", name,
			    CUBE_CKPT_REC_FILE, strerror(errno));
	buf[n] = 0;
	if (cube_ckpt_rec_parse(buf, &rec) || dev < 0)
		return 0;	/* nothing a module snapshot can be named by */
	ok = cube_ckpt_rec_confirmed(dev, &rec);
	if (ok < 0)
		return note(&ret, err, errlen, ok, "CUBE_IOC_SNAPSHOT_INFO: %s",
			    strerror(-ok));
	if (!ok)
		return 0;
	del.id = rec.id;
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del) && errno != ENOENT)
		return note(&ret, err, errlen, -errno,
			    "CUBE_IOC_SNAPSHOT_DELETE: %s", strerror(errno));
	return 0;
}

static int release_one(int dev, int dfd, const char *name, char *err,
		       size_t errlen)
{
	static const char *const files[] = CUBE_CKPT_FILES;
	unsigned int i;
	int cfd, ret;

	cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		     O_NOFOLLOW);
	if (cfd < 0)
		return -errno;
	ret = release_snapshot(dev, cfd, name, err, errlen);
	/* A snapshot that could not be deleted keeps its record. */
	if (!ret)
		for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			if (unlinkat(cfd, files[i], 0) && errno != ENOENT)
				note(&ret, err, errlen, -errno, "%s/%s: %s",
				     name, files[i], strerror(errno));
	close(cfd);
	if (!ret && unlinkat(dfd, name, AT_REMOVEDIR))
		note(&ret, err, errlen, -errno, "%s: %s", name,
		     strerror(errno));
	return ret;
}

int cube_checkpoints_release(const char *dir, char *err, size_t errlen)
{
	struct dirent *e;
	struct stat st;
	int dfd, lfd, dev, ret = 0;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return note(&ret, err, errlen, -errno, "%s: %s", dir,
			    strerror(errno));
	}
	/* No cube.ko: no snapshot can be alive; the files still go. */
	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (dev < 0 && errno != ENOENT && errno != ENODEV && errno != ENXIO) {
		note(&ret, err, errlen, -errno, "/dev/%s: %s",
		     CUBE_DEVICE_NAME, strerror(errno));
		close(dfd);
		return ret;
	}
	lfd = dup(dfd);
	d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		note(&ret, err, errlen, -errno, "%s: %s", dir, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		goto out;
	}
	while ((e = readdir(d))) {
		int r;

		if (!cube_ckpt_name_ok(e->d_name))
			continue;	/* ".", "..", not a checkpoint */
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode))
			continue;
		r = release_one(dev, dfd, e->d_name, err, errlen);
		if (r)
			note(&ret, err, errlen, r, "%s/%s: %s", dir, e->d_name,
			     strerror(-r));
	}
	closedir(d);
	if (!ret && rmdir(dir) && errno != ENOENT)
		note(&ret, err, errlen, -errno, "%s: %s", dir, strerror(errno));
out:
	if (dev >= 0)
		close(dev);
	close(dfd);
	return ret;
}

int cube_checkpoint_release(const char *dir, const char *name, char *err,
			    size_t errlen)
{
	int dfd, dev, ret;

	if (!cube_ckpt_name_ok(name))
		return -EINVAL;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	ret = release_one(dev, dfd, name, err, errlen);
	if (dev >= 0)
		close(dev);
	close(dfd);
	return ret == -ENOENT ? 0 : ret;
}

int cube_checkpoint_files(const char *dir, const char *name, int fds[3])
{
	static const char *const files[3] = {
		CUBE_CKPT_REC_FILE, CUBE_CKPT_STATE_FILE, CUBE_CKPT_DISK_FILE,
	};
	int dfd, cfd = -1, ret = 0, i;

	fds[0] = fds[1] = fds[2] = -1;
	if (!cube_ckpt_name_ok(name))
		return -EINVAL;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	if (mkdirat(dfd, name, 0700)) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		     O_NOFOLLOW);
	if (cfd < 0)
		ret = -errno;
	for (i = 0; !ret && i < 3; i++) {
		fds[i] = openat(cfd, files[i], O_RDWR | O_CREAT | O_EXCL |
				O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fds[i] < 0)
			ret = -errno;
	}
	if (ret) {
		for (i = 0; i < 3; i++) {
			if (fds[i] >= 0) {
				close(fds[i]);
				unlinkat(cfd, files[i], 0);
			}
			fds[i] = -1;
		}
		unlinkat(dfd, name, AT_REMOVEDIR);
	}
	if (cfd >= 0)
		close(cfd);
	close(dfd);
	return ret;
}
