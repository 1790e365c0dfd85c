// SPDX-License-Identifier: GPL-2.0
/* A sandbox's run directory; see cube_sandbox_dir.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "agent_proto.h"
#include "cube_audit.h"
#include "cube_checkpoint.h"
#include "cube_runtime.h"
#include "cube_sandbox_dir.h"
#include "nl_client.h"

/* What a run directory may hold: cube-shim's, cube-vmm's, cubed's. */
static const char * const run_files[] = {
	"vsock", "control", "console.log", "vmm.log", "e2b.json",
	"e2b.json.tmp",
};

/* A behaviour-log event @what of sandbox @id with its "error", if any. */
static void audit_error(uint64_t id, const char *what, const char *by,
			const char *err)
{
	struct json_object *f = json_object_new_object();

	if (f && err[0])
		json_object_object_add(f, "error",
				       json_object_new_string(err));
	cube_audit_id(id, what, by, f);
}

static int remove_as(const char *dir, uint64_t id, uid_t vmm_uid,
		     const char *by, char *err, size_t errlen)
{
	char p[PATH_MAX + 16], why[CUBE_ERR_MAX];
	int lock, ret;
	size_t i;

	why[0] = 0;
	lock = cube_sandbox_cp_lock(id, true, why);
	if (lock == -EBUSY && by)
		audit_error(id, "checkpoint_lock_not_taken", by, why);
	snprintf(p, sizeof(p), "%s/" CUBE_CP_LOCK_FILE, dir);
	unlink(p);
	/*
	 * The VMM deletes its checkpoints' module snapshots when it exits;
	 * a killed one left them recorded there, with their files.  Their
	 * records are the VMM's writing: deleted as its uid, a record naming
	 * another's snapshot deletes nothing.
	 */
	snprintf(p, sizeof(p), "%s/" CUBE_CP_DIR, dir);
	ret = cube_checkpoints_release(p, vmm_uid, err, errlen);
	if (ret && by)
		audit_error(id, "checkpoints_left", by, err);
	if (lock >= 0)
		close(lock);
	for (i = 0; i < sizeof(run_files) / sizeof(run_files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, run_files[i]);
		unlink(p);
	}
	/* the vsock socket may have port suffixes ("vsock_1024") */
	snprintf(p, sizeof(p), "%s/vsock_%u", dir, CUBE_AGENT_VSOCK_PORT);
	unlink(p);
	/* the life lock last, still held by whoever removes */
	snprintf(p, sizeof(p), "%s/" CUBE_SHIM_LOCK_FILE, dir);
	unlink(p);
	if (rmdir(dir) && errno != ENOENT && !ret) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
	}
	return ret;
}

int cube_sandbox_dir_remove(const char *dir, uint64_t id, uid_t vmm_uid,
			    char *err, size_t errlen)
{
	return remove_as(dir, id, vmm_uid, "cube-shim", err, errlen);
}

/*
 * The uid a dead shim's VMM ran as: a jailed VMM makes its run directory
 * root's and its own group's (vmm/main.c), the same number as its uid; an
 * unjailed one (CUBE_NO_JAIL=1) ran as its shim, whose group the
 * directory kept.  Only root and that VMM's start, before it drops its
 * privileges, can set the group: nothing in the guest's reach.
 */
static uid_t dead_vmm_uid(const struct stat *st)
{
	return st->st_gid == getegid() ? geteuid() : (uid_t)st->st_gid;
}

/*
 * Whether directory @name of @pfd is a live shim's: its life lock is
 * held.  A directory without the lock file is a shim's between its mkdir
 * and its lock, or at the very end of its removal, or a dead one's.
 * @lfd: set to the lock file's fd, holding the lock (-1: no file).
 */
static bool held(int pfd, const char *name, int *lfd)
{
	char p[64];

	snprintf(p, sizeof(p), "%s/" CUBE_SHIM_LOCK_FILE, name);
	*lfd = openat(pfd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*lfd < 0)
		return errno != ENOENT;
	if (flock(*lfd, LOCK_EX | LOCK_NB)) {
		close(*lfd);
		*lfd = -1;
		return true;
	}
	return false;
}

/*
 * Removes directory @name of @pfd if its life lock is free and (@nl)
 * cube.ko has no sandbox of its id: 1 removed, 0 not, or -errno.  *@nl is
 * opened at the first directory that needs cube.ko's answer; a NULL @nl
 * asks nothing (the id is the caller's own).
 */
static int sweep_one(int pfd, const char *name, uint64_t id,
		     struct cube_nl **nl, const char *by)
{
	char path[PATH_MAX], err[CUBE_ERR_MAX];
	struct cube_nl_sandbox sb;
	struct stat st;
	int lfd, ret;

	if (held(pfd, name, &lfd))
		return 0;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISDIR(st.st_mode)) {
		ret = 0;
		goto out;
	}
	if (nl) {
		ret = *nl ? 0 : cube_nl_open(nl);
		if (ret) {
			*nl = NULL;
			goto out;
		}
		ret = cube_nl_sandbox_get(*nl, id, &sb);
		if (ret != -ENOENT) {
			ret = ret < 0 ? ret : 0;
			goto out;
		}
	}
	/*
	 * The cgroup the VMM joined, which its shim removes after reaping
	 * it (or the VMM's own supervisor, when it has one).  Still
	 * populated: a process of it is still exiting, and all waits for
	 * the next sweep.
	 */
	cube_sandbox_cgroup(path, sizeof(path), id);
	if (rmdir(path) && errno != ENOENT) {
		ret = 0;
		goto out;
	}
	ret = cube_sandbox_path(path, sizeof(path), id, NULL);
	if (!ret) {
		err[0] = 0;
		ret = remove_as(path, id, dead_vmm_uid(&st), by, err,
				sizeof(err));
		/* the directory's removal is the sweep's event, with what stays */
		audit_error(id, "run_dir_swept", by, ret ? err : "");
		ret = 1;
	}
out:
	if (lfd >= 0)
		close(lfd);
	return ret;
}

static int open_parent(void)
{
	char parent[PATH_MAX];
	int fd;

	if (snprintf(parent, sizeof(parent), "%s/sandboxes", cube_run_dir()) >=
	    (int)sizeof(parent))
		return -ENAMETOOLONG;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cube_sandbox_dirs_sweep(const char *by)
{
	struct cube_nl *nl = NULL;
	int pfd, fd, ret, n = 0;
	struct dirent *de;
	DIR *d;

	pfd = open_parent();
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	fd = dup(pfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		close(pfd);
		return ret;
	}
	while ((de = readdir(d))) {
		char canon[24];
		uint64_t id;

		/* ids as cube_sandbox_path() writes them, nothing else */
		if (cube_parse_id(de->d_name, &id))
			continue;
		snprintf(canon, sizeof(canon), "%llu", (unsigned long long)id);
		if (strcmp(canon, de->d_name))
			continue;
		ret = sweep_one(pfd, de->d_name, id, &nl, by);
		if (ret > 0)
			n++;
		/* without cube.ko's answer, nothing more can go */
		if (ret < 0 && !nl) {
			n = ret;
			break;
		}
	}
	closedir(d);
	close(pfd);
	if (nl)
		cube_nl_close(nl);
	return n;
}

#define LOCK_WAIT_MS	5000

/* flock(LOCK_EX) on @fd, giving up after LOCK_WAIT_MS: 0 or -1 (errno) */
static int lock_wait(int fd)
{
	struct timespec step = { 0, 5 * 1000 * 1000 };
	int waited;

	for (waited = 0; flock(fd, LOCK_EX | LOCK_NB); waited += 5) {
		if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
			return -1;
		nanosleep(&step, NULL);
	}
	return 0;
}

int cube_sandbox_dir_make(uint64_t id, char *dir, size_t len, char *err)
{
	char name[24], lock[48], cp[48];
	int pfd, fd, cfd, ret, tries;

	mkdir(cube_run_dir(), 0755);
	pfd = open_parent();
	if (pfd == -ENOENT) {
		char parent[PATH_MAX];

		snprintf(parent, sizeof(parent), "%s/sandboxes", cube_run_dir());
		if (mkdir(parent, 0700) && errno != EEXIST) {
			ret = -errno;
			cube_set_err(err, "cannot create %s: %s", parent,
				     strerror(-ret));
			return ret;
		}
		pfd = open_parent();
	}
	if (pfd < 0) {
		cube_set_err(err, "cannot open %s/sandboxes: %s", cube_run_dir(),
			     strerror(-pfd));
		return pfd;
	}
	cube_sandbox_dirs_sweep("cube-shim");
	ret = cube_sandbox_path(dir, len, id, NULL);
	if (ret) {
		cube_set_err(err, "the run directory's path is too long");
		goto out;
	}
	snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
	for (tries = 0; tries < 2; tries++) {
		if (!mkdirat(pfd, name, 0700))
			break;
		ret = -errno;
		/*
		 * Ours by cube.ko's word, so no live sandbox's: a dead shim's
		 * of an earlier load of cube.ko, unless someone holds it.
		 */
		if (ret != -EEXIST || tries || sweep_one(pfd, name, id, NULL,
							 "cube-shim") != 1) {
			cube_set_err(err, "cannot create %s: %s", dir,
				     ret == -EEXIST ? "it exists and is held" :
				     strerror(-ret));
			goto out;
		}
	}
	snprintf(lock, sizeof(lock), "%s/" CUBE_SHIM_LOCK_FILE, name);
	fd = openat(pfd, lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	/*
	 * Made here, so only a sweep can hold it: another shim's, looking
	 * for a moment at whether it is free, which finds our id in cube.ko
	 * and lets go.  Wait for that (a sweeper that is stopped or frozen
	 * would hold it for good: up to LOCK_WAIT_MS), do not fail on it.
	 */
	if (fd < 0 || lock_wait(fd)) {
		ret = -errno;
		cube_set_err(err, "cannot lock %s: %s", dir, strerror(-ret));
		goto fail;
	}
	/* the checkpoint lock: made here only, see remove_as() */
	snprintf(cp, sizeof(cp), "%s/" CUBE_CP_LOCK_FILE, name);
	cfd = openat(pfd, cp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		     O_CLOEXEC, 0600);
	if (cfd < 0) {
		ret = -errno;
		cube_set_err(err, "cannot create %s/" CUBE_CP_LOCK_FILE ": %s",
			     dir, strerror(-ret));
		goto fail;
	}
	close(cfd);
	ret = fd;
	goto out;
fail:
	if (fd >= 0) {
		close(fd);
		unlinkat(pfd, lock, 0);
	}
	unlinkat(pfd, name, AT_REMOVEDIR);
out:
	close(pfd);
	return ret;
}
