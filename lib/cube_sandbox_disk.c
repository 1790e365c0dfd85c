// SPDX-License-Identifier: GPL-2.0
/* The writable disks of running sandboxes; see cube_sandbox_disk.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cube_runtime.h"
#include "cube_sandbox_disk.h"

static int disks_dir(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/" CUBE_DISKS_DIR, cube_state_dir());

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int disk_path(uint64_t id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/" CUBE_DISKS_DIR "/%llu.img",
			 cube_state_dir(), (unsigned long long)id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Is this name one of ours: "<digits>.img"? */
static bool disk_name(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n && n <= 20 && !strcmp(s + n, ".img");
}

/*
 * With the directory's lock held: removes the disks nobody holds and sums
 * what the live ones may grow to (@sizes) and already hold (@used).
 */
static int sweep(int dfd, uint64_t *sizes, uint64_t *used)
{
	struct dirent *de;
	int ret = 0, fd;
	DIR *d;

	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	*sizes = *used = 0;
	while ((de = readdir(d))) {
		struct stat st;

		if (!disk_name(de->d_name))
			continue;
		fd = openat(dfd, de->d_name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			/* nobody holds it: its sandbox died without removing it */
			unlinkat(dfd, de->d_name, 0);
		} else {
			*sizes += st.st_size;
			*used += (uint64_t)st.st_blocks * 512;
		}
		close(fd);
	}
	closedir(d);
	return ret;
}

static int host_limit(int dfd, uint64_t used, uint64_t *limit, char *err)
{
	const char *env = getenv("CUBE_DISK_LIMIT");
	struct statvfs sv;

	if (env && env[0]) {
		if (cube_parse_disk_size(env, limit)) {
			cube_set_err(err, "CUBE_DISK_LIMIT=%s is not a size", env);
			return -EINVAL;
		}
		return 0;
	}
	if (fstatvfs(dfd, &sv))
		return -errno;
	*limit = (uint64_t)sv.f_bavail * sv.f_frsize + used;
	return 0;
}

int cube_sandbox_disk_create(uint64_t id, const char *snapshot, uint64_t size,
			     uint64_t *size_out, char *err)
{
	char dir[PATH_MAX], src_path[PATH_MAX + 16], name[32];
	uint64_t sizes = 0, used = 0, limit = 0;
	int dfd = -1, lock = -1, src = -1, fd = -1, ret;
	struct stat st;

	if (snprintf(src_path, sizeof(src_path), "%s/" CUBE_DISK_FILE,
		     snapshot) >= (int)sizeof(src_path))
		return -ENAMETOOLONG;
	src = open(src_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0) {
		ret = -errno;
		cube_set_err(err, "the snapshot has no disk: %s", strerror(-ret));
		return ret;
	}
	if (fstat(src, &st) || !S_ISREG(st.st_mode) || st.st_size % 4096 ||
	    (uint64_t)st.st_size < CUBE_SANDBOX_DISK_MIN) {
		cube_set_err(err, "the snapshot's %s is not a disk image",
			CUBE_DISK_FILE);
		ret = -EINVAL;
		goto out;
	}
	if (!size)
		size = st.st_size;
	if (size < (uint64_t)st.st_size) {
		cube_set_err(err, "the template's disk is %llu MiB: a sandbox's is at least that",
			(unsigned long long)(st.st_size >> 20));
		ret = -EINVAL;
		goto out;
	}
	ret = disks_dir(dir, sizeof(dir));
	if (ret)
		goto out;
	mkdir(cube_state_dir(), 0755);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		ret = -errno;
		cube_set_err(err, "cannot create %s: %s", dir, strerror(-ret));
		goto out;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	lock = dfd < 0 ? -1 : openat(dfd, ".lock",
				      O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
				      0600);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		ret = -errno;
		cube_set_err(err, "cannot lock %s: %s", dir, strerror(-ret));
		goto out;
	}
	/* admission: every live disk may fill up; so may this one */
	ret = sweep(dfd, &sizes, &used);
	if (!ret)
		ret = host_limit(dfd, used, &limit, err);
	if (ret)
		goto out;
	if (sizes + size > limit) {
		cube_set_err(err, "no room for a disk of %llu MiB: live disks may grow to %llu MiB of the host's %llu MiB (CUBE_DISK_LIMIT)",
			(unsigned long long)(size >> 20),
			(unsigned long long)(sizes >> 20),
			(unsigned long long)(limit >> 20));
		ret = -ENOSPC;
		goto out;
	}
	snprintf(name, sizeof(name), "%llu.img", (unsigned long long)id);
	/* a file of this id is a dead sandbox's (sweep() left it: locked?) */
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		cube_set_err(err, "cannot create the disk %s/%s: %s", dir, name,
			strerror(-ret));
		goto out;
	}
	if (flock(fd, LOCK_SH)) {
		ret = -errno;
		goto fail;
	}
	ret = cube_disk_copy(src, fd, st.st_size);
	if (!ret && ftruncate(fd, size))
		ret = -errno;
	if (ret) {
		cube_set_err(err, "cannot copy the snapshot's disk: %s",
			strerror(-ret));
		goto fail;
	}
	*size_out = size;
	ret = fd;
	fd = -1;
	goto out;
fail:
	unlinkat(dfd, name, 0);
	close(fd);
out:
	if (lock >= 0)
		close(lock);	/* drops the directory's lock */
	if (dfd >= 0)
		close(dfd);
	close(src);
	return ret;
}

void cube_sandbox_disk_remove(uint64_t id, int fd)
{
	char path[PATH_MAX];

	if (!disk_path(id, path, sizeof(path)))
		unlink(path);
	if (fd >= 0)
		close(fd);
}

int cube_sandbox_disk_stat(uint64_t id, struct stat *st)
{
	char path[PATH_MAX];

	if (disk_path(id, path, sizeof(path)))
		return -ENAMETOOLONG;
	if (lstat(path, st))
		return -errno;
	return S_ISREG(st->st_mode) ? 0 : -ENOENT;
}

uint64_t cube_sandbox_disk_size(uint64_t id)
{
	struct stat st;

	return cube_sandbox_disk_stat(id, &st) ? 0 : st.st_size;
}
