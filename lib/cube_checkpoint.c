// SPDX-License-Identifier: GPL-2.0
/* Releasing a killed cube-vmm's checkpoints; see cube_checkpoint.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
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

/* The record of checkpoint directory @cfd: 0, 1 when none parses, -errno. */
static int read_rec(int cfd, struct cube_ckpt_rec *rec)
{
	char buf[128];
	ssize_t n;
	int fd;

	fd = openat(cfd, CUBE_CKPT_REC_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 1 : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return cube_ckpt_rec_parse(buf, rec) ? 1 : 0;
}

/*
 * Delete the snapshot @rec names if cube.ko confirms it, with the caller's
 * credentials: 0 when it is gone or never was this caller's to delete
 * (cube.ko refuses another user's with EACCES), else -errno.
 */
static int delete_confirmed(int dev, const struct cube_ckpt_rec *rec)
{
	struct cube_snapshot_id del = { .id = rec->id };
	int ok = cube_ckpt_rec_confirmed(dev, rec);

	if (ok == -EACCES || !ok)
		return 0;
	if (ok < 0)
		return ok;
	if (ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del) &&
	    errno != ENOENT && errno != EACCES)
		return -errno;
	return 0;
}

/*
 * Clear this task's capabilities (a full change of uid from 0 already has,
 * unless securebits kept them): true when none is left, effective or
 * permitted.
 */
static bool drop_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned int i;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data))
		return false;
	if (syscall(SYS_capget, &hdr, data))
		return false;
	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (data[i].effective || data[i].permitted)
			return false;
	return true;
}

/*
 * delete_confirmed() for each of @n records, acting as @owner: when that
 * is not who we are, in a child that takes @owner's uid and gid and no
 * capability, so that cube.ko's owner check refuses every snapshot that is
 * not @owner's (a record a hostile VMM forged names another sandbox's).
 * Taking another uid needs CAP_SETUID: the caller is root (cube-shim).
 * @res[i] gets each result; returns 0, or -errno when no child could act
 * (-EPERM: it could not become @owner, -ECHILD: it died).
 */
static int delete_as(uid_t owner, int dev, const struct cube_ckpt_rec *recs,
		     int *res, size_t n)
{
	size_t i, sz = n * sizeof(*res);
	int *shared, st, ret = 0;
	pid_t pid;

	if (owner == geteuid()) {
		for (i = 0; i < n; i++)
			res[i] = delete_confirmed(dev, &recs[i]);
		return 0;
	}
	shared = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out;
	}
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(owner, owner, owner) ||
		    setresuid(owner, owner, owner) || !drop_caps())
			_exit(1);
		for (i = 0; i < n; i++)
			shared[i] = delete_confirmed(dev, &recs[i]);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			ret = -errno;
			goto out;
		}
	if (WIFSIGNALED(st))
		ret = -ECHILD;
	else if (WEXITSTATUS(st))
		ret = -EPERM;
	else
		memcpy(res, shared, sz);
out:
	munmap(shared, sz);
	return ret;
}

/* Remove checkpoint directory @dfd/@name and the files it may hold. */
static int remove_files(int dfd, const char *name, char *err, size_t errlen)
{
	static const char *const files[] = CUBE_CKPT_FILES;
	unsigned int i;
	int cfd, ret = 0;

	cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		     O_NOFOLLOW);
	if (cfd < 0)
		return errno == ENOENT ? 0 : note(&ret, err, errlen, -errno,
				"%s: %s", name, strerror(errno));
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (unlinkat(cfd, files[i], 0) && errno != ENOENT)
			note(&ret, err, errlen, -errno, "%s/%s: %s", name,
			     files[i], strerror(errno));
	close(cfd);
	if (!ret && unlinkat(dfd, name, AT_REMOVEDIR) && errno != ENOENT)
		note(&ret, err, errlen, -errno, "%s: %s", name,
		     strerror(errno));
	return ret;
}

struct ckpt_entry {
	char name[CUBE_CKPT_NAME_MAX + 1];
	struct cube_ckpt_rec rec;
	int has_rec;
};

/* The checkpoint directories under @dfd, with their records, in *@out. */
static int list_checkpoints(int dfd, struct ckpt_entry **out, size_t *n,
			    char *err, size_t errlen)
{
	struct ckpt_entry *v = NULL, *nv;
	int lfd, cfd, r, ret = 0;
	struct dirent *e;
	struct stat st;
	size_t cnt = 0;
	DIR *d;

	lfd = dup(dfd);
	d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		r = -errno;
		if (lfd >= 0)
			close(lfd);
		return note(&ret, err, errlen, r, "%s", strerror(-r));
	}
	while ((e = readdir(d))) {
		if (!cube_ckpt_name_ok(e->d_name))
			continue;	/* ".", "..", not a checkpoint */
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			note(&ret, err, errlen, -ENOMEM, "out of memory");
			break;
		}
		v = nv;
		memset(&v[cnt], 0, sizeof(v[cnt]));
		snprintf(v[cnt].name, sizeof(v[cnt].name), "%s", e->d_name);
		cfd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY |
			     O_CLOEXEC | O_NOFOLLOW);
		r = cfd < 0 ? -errno : read_rec(cfd, &v[cnt].rec);
		if (cfd >= 0)
			close(cfd);
		if (r < 0) {
			note(&ret, err, errlen, r, "%s/%s: %s", e->d_name,
			     CUBE_CKPT_REC_FILE, strerror(-r));
			continue;	/* unread: it stays */
		}
		v[cnt++].has_rec = !r;
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return ret;
}

int cube_checkpoints_release(const char *dir, uid_t owner, char *err,
			     size_t errlen)
{
	struct cube_ckpt_rec *recs = NULL;
	struct ckpt_entry *v = NULL;
	int dfd, dev, r, *res = NULL, ret = 0;
	size_t n = 0, i, nrec = 0;
	char why[256];

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
	ret = list_checkpoints(dfd, &v, &n, err, errlen);
	recs = calloc(n + 1, sizeof(*recs));
	res = calloc(n + 1, sizeof(*res));
	if (!recs || !res) {
		note(&ret, err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		if (v[i].has_rec && dev >= 0)
			recs[nrec++] = v[i].rec;
	r = nrec ? delete_as(owner, dev, recs, res, nrec) : 0;
	if (r) {
		/* nothing deleted: every record stays, the rest goes */
		note(&ret, err, errlen, r, "%s: cannot act as uid %u: %s",
		     dir, (unsigned int)owner, strerror(-r));
		for (i = 0; i < nrec; i++)
			res[i] = r;
	}
	for (i = 0, nrec = 0; i < n; i++) {
		/* a snapshot that could not be deleted keeps its record */
		if (v[i].has_rec && dev >= 0 && (r = res[nrec++])) {
			note(&ret, err, errlen, r,
			     "%s/%s: CUBE_IOC_SNAPSHOT_DELETE: %s", dir,
			     v[i].name, strerror(-r));
			continue;
		}
		r = remove_files(dfd, v[i].name, why, sizeof(why));
		if (r)
			note(&ret, err, errlen, r, "%s/%s", dir, why);
	}
	if (!ret && rmdir(dir) && errno != ENOENT)
		note(&ret, err, errlen, -errno, "%s: %s", dir, strerror(errno));
out:
	free(recs);
	free(res);
	free(v);
	if (dev >= 0)
		close(dev);
	close(dfd);
	return ret;
}

int cube_checkpoint_remove(const char *dir, const char *name, char *err,
			   size_t errlen)
{
	struct cube_ckpt_rec rec;
	int dfd, cfd, dev, r, ret = 0;

	if (!cube_ckpt_name_ok(name))
		return note(&ret, err, errlen, -EINVAL, "bad checkpoint name");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? 0 : note(&ret, err, errlen, -errno,
				"%s: %s", dir, strerror(errno));
	cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		     O_NOFOLLOW);
	if (cfd < 0) {
		if (errno != ENOENT)
			note(&ret, err, errlen, -errno, "%s/%s: %s", dir, name,
			     strerror(errno));
		goto out;
	}
	r = read_rec(cfd, &rec);
	close(cfd);
	if (r < 0) {
		note(&ret, err, errlen, r, "%s/%s/%s: %s", dir, name,
		     CUBE_CKPT_REC_FILE, strerror(-r));
		goto out;
	}
	dev = r ? -1 : open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	r = dev >= 0 ? cube_ckpt_rec_confirmed(dev, &rec) : 0;
	if (dev >= 0)
		close(dev);
	if (r < 0) {
		note(&ret, err, errlen, r, "%s/%s: cannot check its record: %s",
		     dir, name, strerror(-r));
		goto out;
	}
	if (r) {
		note(&ret, err, errlen, -EBUSY,
		     "%s/%s: its record names a live snapshot", dir, name);
		goto out;
	}
	ret = remove_files(dfd, name, err, errlen);
out:
	close(dfd);
	return ret;
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
