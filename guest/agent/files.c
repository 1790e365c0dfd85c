// SPDX-License-Identifier: GPL-2.0
/*
 * files.c: file requests.  Paths are absolute paths of the sandbox,
 * resolved inside the agent's root (path.c).  Writes go to a temporary
 * file renamed over the target at the end, so a failed or interrupted
 * write leaves the target as it was; reads and listings are streamed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent.h"

struct write_state {
	uint32_t id;
	int dirfd;
	int fd;
	int err;		/* first error; the rest of the data is dropped */
	bool append;
	uint64_t size;
	char name[NAME_MAX + 1];
	char tmp[64];
	char path[CUBE_AGENT_MAX_STRING];
	char *meta;		/* META: set on the file before it is in place */
	bool chown;		/* USER: the file becomes @uid:@gid's */
	uid_t uid;
	gid_t gid;
};

/*
 * A file's metadata (CUBE_AGENT_META_XATTR) into @buf (CUBE_AGENT_MAX_STRING
 * bytes): its length, 0 when it has none or cannot have any.
 */
static size_t read_meta(int dfd, const char *name, char *buf)
{
	char path[64 + NAME_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	n = lgetxattr(path, CUBE_AGENT_META_XATTR, buf,
		      CUBE_AGENT_MAX_STRING - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strlen(buf) == (size_t)n ? (size_t)n : 0;
}

static int path_error(struct session *s, uint32_t id, int err, const char *op,
		      const char *path)
{
	if (err == EINVAL)
		return session_send_error(s, id, err, "%s '%.512s': invalid path",
					  op, path);
	return session_send_error(s, id, err, "%s '%.512s': %s", op, path,
				  strerror(err));
}

static uint32_t ftype_of(mode_t m)
{
	if (S_ISREG(m))
		return CUBE_FTYPE_FILE;
	if (S_ISDIR(m))
		return CUBE_FTYPE_DIR;
	if (S_ISLNK(m))
		return CUBE_FTYPE_SYMLINK;
	return CUBE_FTYPE_OTHER;
}

static uint64_t mtime_ns(const struct stat *st)
{
	if (st->st_mtim.tv_sec < 0)
		return 0;
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + st->st_mtim.tv_nsec;
}

static int get_mode(const struct cube_wire_msg *m, uint32_t def, uint32_t *mode)
{
	const struct cube_agent_attr *a = m->first[CUBE_ATTR_MODE];

	*mode = a ? cube_wire_u32(a) : def;
	return (*mode & ~07777U) ? -EINVAL : 0;
}

/*
 * USER of a FILE_WRITE or MKDIR: who what it creates belongs to.  0 with
 * *@u filled (or @u NULL: no USER), else the ERROR already sent (ESRCH for
 * a user the sandbox does not have) with 1 or the connection's error.
 */
static int get_owner(struct session *s, const struct cube_wire_msg *m,
		     struct agent_user **u, struct agent_user *buf, int *ret)
{
	const struct cube_agent_attr *a = m->first[CUBE_ATTR_USER];

	*u = NULL;
	if (!a)
		return 0;
	if (user_lookup(s->cfg, cube_wire_value(a), buf)) {
		*ret = session_send_error(s, m->id, ESRCH,
					  "no user '%s' in the sandbox",
					  (const char *)cube_wire_value(a));
		return 1;
	}
	*u = buf;
	return 0;
}

static int write_open(struct session *s, const struct cube_wire_msg *m,
		      const char *path)
{
	struct agent_user ubuf, *u;
	struct write_state *w;
	struct stat st;
	uint32_t mode;
	int err;

	if (get_mode(m, 0644, &mode))
		return session_send_error(s, m->id, EINVAL,
					  "mode %#o has bits beyond 07777", mode);
	if (get_owner(s, m, &u, &ubuf, &err))
		return err;
	w = calloc(1, sizeof(*w));
	if (!w)
		return session_send_error(s, m->id, ENOMEM, "out of memory");
	w->id = m->id;
	if (u) {
		w->chown = true;
		w->uid = u->uid;
		w->gid = u->gid;
	}
	w->fd = -1;
	w->append = m->first[CUBE_ATTR_APPEND];
	if (m->first[CUBE_ATTR_META]) {
		w->meta = strdup(cube_wire_value(m->first[CUBE_ATTR_META]));
		if (!w->meta) {
			free(w);
			return session_send_error(s, m->id, ENOMEM, "out of memory");
		}
	}
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->dirfd = root_parent(s->cfg, path, w->name);
	if (w->dirfd < 0) {
		err = -w->dirfd;
		goto fail;
	}
	if (!fstatat(w->dirfd, w->name, &st, 0) && S_ISDIR(st.st_mode)) {
		err = EISDIR;
		goto fail;
	}
	if (w->append) {
		w->fd = root_open(s->cfg, path, O_WRONLY | O_APPEND | O_CREAT, mode);
	} else {
		snprintf(w->tmp, sizeof(w->tmp), ".cube-write.%d.%u", getpid(),
			 ++s->tmp_seq);
		w->fd = openat(w->dirfd, w->tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (w->fd < 0)
			w->fd = -errno;
	}
	if (w->fd < 0) {
		err = -w->fd;
		w->fd = -1;
		w->tmp[0] = 0;
		goto fail;
	}
	s->wr = w;
	return session_send_ok(s, m->id);
fail:
	if (w->dirfd >= 0)
		close(w->dirfd);
	free(w->meta);
	free(w);
	return path_error(s, m->id, err, "write", path);
}

static void write_drop(struct session *s)
{
	struct write_state *w = s->wr;

	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->tmp[0])
		unlinkat(w->dirfd, w->tmp, 0);
	w->tmp[0] = 0;
}

static void write_free(struct session *s)
{
	close(s->wr->dirfd);
	free(s->wr->meta);
	free(s->wr);
	s->wr = NULL;
}

static int write_end(struct session *s, const struct cube_wire_msg *m)
{
	struct write_state *w = s->wr;
	const struct cube_agent_attr *a = m->first[CUBE_ATTR_SIZE];
	int err = w->err, ret;

	if (!err && a && cube_wire_u64(a) != w->size)
		err = EIO;
	if (!err && w->chown && fchown(w->fd, w->uid, w->gid) < 0)
		err = errno;
	/* the metadata: set before the file replaces the old one, or not at all */
	if (!err && w->meta &&
	    fsetxattr(w->fd, CUBE_AGENT_META_XATTR, w->meta, strlen(w->meta), 0) < 0)
		err = errno;
	if (!err && close(w->fd) < 0)
		err = errno;
	w->fd = -1;
	if (!err && w->tmp[0] && renameat(w->dirfd, w->tmp, w->dirfd, w->name) < 0)
		err = errno;
	if (!err)
		w->tmp[0] = 0;
	write_drop(s);
	if (err == EIO && a)
		ret = session_send_error(s, m->id, EIO,
					 "write '%.512s': %llu bytes announced, %llu received",
					 w->path, (unsigned long long)cube_wire_u64(a),
					 (unsigned long long)w->size);
	else if (err == ENOTSUP && w->meta)
		ret = session_send_error(s, m->id, ENOTSUP,
					 "write '%.512s': this filesystem keeps no metadata",
					 w->path);
	else if (err)
		ret = path_error(s, m->id, err, "write", w->path);
	else
		ret = session_send_ok(s, m->id);
	write_free(s);
	return ret;
}

/**
 * files_write_data() - DATA or END of the file write in progress
 * @s: session with a write in progress
 * @m: the validated message
 *
 * Return: 0 or a negative errno when the connection broke.
 */
int files_write_data(struct session *s, const struct cube_wire_msg *m)
{
	struct write_state *w = s->wr;
	const struct cube_agent_attr *a;
	const uint8_t *p;
	size_t left;
	ssize_t n;

	if (m->id != w->id)
		return session_send_error(s, m->id, EINVAL,
					  "no file write with request id %u", m->id);
	if (m->type == CUBE_MSG_END)
		return write_end(s, m);
	a = m->first[CUBE_ATTR_DATA];
	p = cube_wire_value(a);
	left = cube_wire_len(a);
	while (left && !w->err) {
		n = write(w->fd, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			write_drop(s);
			break;
		}
		p += n;
		left -= n;
		w->size += n;
	}
	return 0;
}

/* Drops a write the connection did not finish. */
void files_abort(struct session *s)
{
	if (!s->wr)
		return;
	write_drop(s);
	write_free(s);
}

static int file_read(struct session *s, uint32_t id, const char *path)
{
	static uint8_t buf[CUBE_AGENT_CHUNK];
	struct cube_wire_buf b = { 0 };
	uint64_t total = 0;
	struct stat st;
	int fd, err;
	ssize_t n;

	fd = root_open(s->cfg, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return path_error(s, id, -fd, "read", path);
	if (fstat(fd, &st) < 0)
		st.st_mode = 0;
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		if (err == EINVAL)
			return session_send_error(s, id, EINVAL,
						  "read '%.512s': not a regular file", path);
		return path_error(s, id, err, "read", path);
	}
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += n;
		cube_wire_start(&b, CUBE_MSG_DATA, id);
		cube_wire_put(&b, CUBE_ATTR_DATA, buf, n);
		err = session_send(s, &b);
		if (!err)
			err = session_flush(s, AGENT_OUTQ_LIMIT);
		if (err) {
			close(fd);
			return err;
		}
	}
	err = n < 0 ? errno : 0;
	close(fd);
	if (err)
		return path_error(s, id, err, "read", path);
	cube_wire_start(&b, CUBE_MSG_END, id);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, total);
	return session_send(s, &b);
}

static int list_dir(struct session *s, uint32_t id, const char *path)
{
	static char meta[CUBE_AGENT_MAX_STRING];
	struct cube_wire_buf b = { 0 };
	struct dirent *de;
	struct stat st;
	int fd, err = 0;
	DIR *d;

	fd = root_open(s->cfg, path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return path_error(s, id, -fd, "list", path);
	d = fdopendir(fd);
	if (!d) {
		err = errno;
		close(fd);
		return path_error(s, id, err, "list", path);
	}
	while (!err && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* removed meanwhile */
		cube_wire_start(&b, CUBE_MSG_DIRENT, id);
		cube_wire_put_str(&b, CUBE_ATTR_NAME, de->d_name);
		cube_wire_put_u32(&b, CUBE_ATTR_FTYPE, ftype_of(st.st_mode));
		cube_wire_put_u64(&b, CUBE_ATTR_SIZE, st.st_size);
		cube_wire_put_u32(&b, CUBE_ATTR_MODE, st.st_mode & 07777);
		cube_wire_put_u64(&b, CUBE_ATTR_MTIME_NS, mtime_ns(&st));
		if ((S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) &&
		    read_meta(dirfd(d), de->d_name, meta))
			cube_wire_put_str(&b, CUBE_ATTR_META, meta);
		err = session_send(s, &b);
		if (!err)
			err = session_flush(s, AGENT_OUTQ_LIMIT);
	}
	closedir(d);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_END, id);
	return session_send(s, &b);
}

static int stat_path(struct session *s, uint32_t id, const char *path)
{
	static char meta[CUBE_AGENT_MAX_STRING];
	struct cube_wire_buf b = { 0 };
	char name[NAME_MAX + 1];
	size_t mlen = 0;
	struct stat st;
	int dfd, r;

	if (!path[strspn(path, "/")] && path[0] == '/') {
		r = fstat(s->cfg->rootfd, &st) < 0 ? -errno : 0;
	} else {
		dfd = root_parent(s->cfg, path, name);
		if (dfd < 0)
			return path_error(s, id, -dfd, "stat", path);
		r = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
		if (!r && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			mlen = read_meta(dfd, name, meta);
		close(dfd);
	}
	if (r)
		return path_error(s, id, -r, "stat", path);
	cube_wire_start(&b, CUBE_MSG_STAT_REPLY, id);
	cube_wire_put_u32(&b, CUBE_ATTR_FTYPE, ftype_of(st.st_mode));
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, st.st_size);
	cube_wire_put_u32(&b, CUBE_ATTR_MODE, st.st_mode & 07777);
	cube_wire_put_u64(&b, CUBE_ATTR_MTIME_NS, mtime_ns(&st));
	cube_wire_put_u32(&b, CUBE_ATTR_UID, st.st_uid);
	cube_wire_put_u32(&b, CUBE_ATTR_GID, st.st_gid);
	if (mlen)
		cube_wire_put_str(&b, CUBE_ATTR_META, meta);
	return session_send(s, &b);
}

/* a directory made here (not one that already exists) is @owner's */
static int mkdir_one(const struct agent_config *cfg, const char *path,
		     mode_t mode, bool exist_ok, const struct agent_user *owner)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int dfd, r = 0;

	dfd = root_parent(cfg, path, name);
	if (dfd < 0)
		return dfd;
	if (mkdirat(dfd, name, mode) < 0) {
		r = -errno;
		if (r == -EEXIST && exist_ok && !fstatat(dfd, name, &st, 0) &&
		    S_ISDIR(st.st_mode))
			r = 0;
	} else if (owner && fchownat(dfd, name, owner->uid, owner->gid,
				     AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
	}
	close(dfd);
	return r;
}

static int make_dir(struct session *s, const struct cube_wire_msg *m,
		    const char *path)
{
	bool parents = m->first[CUBE_ATTR_PARENTS];
	char buf[CUBE_AGENT_MAX_STRING];
	struct agent_user ubuf, *u;
	uint32_t mode;
	char *p;
	int r;

	if (get_mode(m, 0755, &mode))
		return session_send_error(s, m->id, EINVAL,
					  "mode %#o has bits beyond 07777", mode);
	if (get_owner(s, m, &u, &ubuf, &r))
		return r;
	if (parents) {
		snprintf(buf, sizeof(buf), "%s", path);
		for (p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
			if (p[-1] == '/')
				continue;
			*p = 0;
			r = mkdir_one(s->cfg, buf, 0755, true, u);
			*p = '/';
			if (r)
				return path_error(s, m->id, -r, "mkdir", buf);
		}
	}
	r = mkdir_one(s->cfg, path, mode, parents, u);
	if (r)
		return path_error(s, m->id, -r, "mkdir", path);
	return session_send_ok(s, m->id);
}

static int rm_tree(int dfd, const char *name, int depth)
{
	struct dirent *de;
	int fd, r = 0;
	DIR *d;

	if (depth > 256)
		return -ELOOP;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while (!r && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!unlinkat(fd, de->d_name, 0))
			continue;
		if (errno == EISDIR || errno == EPERM)
			r = rm_tree(fd, de->d_name, depth + 1);
		else if (errno != ENOENT)
			r = -errno;
	}
	closedir(d);
	if (!r && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

static int remove_path(struct session *s, const struct cube_wire_msg *m,
		       const char *path)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int dfd, r = 0;

	dfd = root_parent(s->cfg, path, name);
	if (dfd < 0)
		return path_error(s, m->id, -dfd, "remove", path);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	else if (!S_ISDIR(st.st_mode))
		r = unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	else if (m->first[CUBE_ATTR_RECURSIVE])
		r = rm_tree(dfd, name, 0);
	else
		r = unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	close(dfd);
	if (r)
		return path_error(s, m->id, -r, "remove", path);
	return session_send_ok(s, m->id);
}

static int rename_path(struct session *s, const struct cube_wire_msg *m,
		       const char *path)
{
	const char *to = cube_wire_value(m->first[CUBE_ATTR_NEWPATH]);
	char from_name[NAME_MAX + 1], to_name[NAME_MAX + 1];
	int from_dfd, to_dfd, r = 0;

	from_dfd = root_parent(s->cfg, path, from_name);
	if (from_dfd < 0)
		return path_error(s, m->id, -from_dfd, "rename", path);
	to_dfd = root_parent(s->cfg, to, to_name);
	if (to_dfd < 0) {
		close(from_dfd);
		return path_error(s, m->id, -to_dfd, "rename to", to);
	}
	if (renameat(from_dfd, from_name, to_dfd, to_name) < 0)
		r = errno;
	close(from_dfd);
	close(to_dfd);
	if (r)
		return session_send_error(s, m->id, r, "rename '%.400s' to '%.400s': %s",
					  path, to, strerror(r));
	return session_send_ok(s, m->id);
}

/**
 * files_request() - FILE_WRITE, FILE_READ, LIST, STAT, MKDIR, REMOVE, RENAME
 * @s: idle session
 * @m: the validated request
 *
 * Return: 0 or a negative errno when the connection broke.
 */
int files_request(struct session *s, const struct cube_wire_msg *m)
{
	const char *path = cube_wire_value(m->first[CUBE_ATTR_PATH]);

	if (path[0] != '/')
		return session_send_error(s, m->id, EINVAL,
					  "path '%.512s' is not absolute", path);
	switch (m->type) {
	case CUBE_MSG_FILE_WRITE:
		return write_open(s, m, path);
	case CUBE_MSG_FILE_READ:
		return file_read(s, m->id, path);
	case CUBE_MSG_LIST:
		return list_dir(s, m->id, path);
	case CUBE_MSG_STAT:
		return stat_path(s, m->id, path);
	case CUBE_MSG_MKDIR:
		return make_dir(s, m, path);
	case CUBE_MSG_REMOVE:
		return remove_path(s, m, path);
	default:
		return rename_path(s, m, path);
	}
}
