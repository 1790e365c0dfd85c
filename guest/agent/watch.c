// SPDX-License-Identifier: GPL-2.0
/*
 * watch.c: WATCH, the changes in one directory (inotify) reported as
 * FS_EVENT messages until the host closes the connection; with RECURSIVE,
 * the changes in every directory below it too (one inotify watch each,
 * those made later added as they appear), each event naming its entry by
 * the path relative to the watched directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

#define WATCH_MASK	(IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_DELETE | \
			 IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF | \
			 IN_MOVE_SELF | IN_ONLYDIR)
/* a recursive watch: directories watched at most, and how deep */
#define WATCH_MAX_DIRS	4096
#define WATCH_MAX_DEPTH	64

struct watch_dir {
	int wd;
	char *rel;			/* below the watched one; "" for it */
};

struct watch_state {
	uint32_t id;
	int ifd;
	int idx;
	bool recursive;
	int root_wd;
	char *root;			/* the watched directory's path */
	const struct agent_config *cfg;
	struct watch_dir *dirs;		/* recursive: every one watched */
	size_t n, cap;
};

static struct watch_dir *find_dir(struct watch_state *w, int wd)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (w->dirs[i].wd == wd)
			return &w->dirs[i];
	return NULL;
}

/* watch the directory open as @fd, known as @rel; its wd, or -errno */
static int add_dir(struct watch_state *w, int fd, const char *rel)
{
	struct watch_dir *d;
	char proc[64];
	char *r;
	int wd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(w->ifd, proc, WATCH_MASK);
	if (wd < 0)
		return -errno;
	r = strdup(rel);
	if (!r)
		return -ENOMEM;
	d = find_dir(w, wd);
	if (d) {
		/* the same directory again (moved): its new name */
		free(d->rel);
		d->rel = r;
		return wd;
	}
	if (w->n >= WATCH_MAX_DIRS) {
		inotify_rm_watch(w->ifd, wd);
		free(r);
		return -ENOSPC;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct watch_dir *v = realloc(w->dirs, cap * sizeof(*v));

		if (!v) {
			free(r);
			return -ENOMEM;
		}
		w->dirs = v;
		w->cap = cap;
	}
	w->dirs[w->n++] = (struct watch_dir){ .wd = wd, .rel = r };
	return wd;
}

/* @rel + "/" + @name, or @name when @rel is "" (NULL: too long, no memory) */
static char *join(const char *rel, const char *name)
{
	char *p;

	if (strlen(rel) + strlen(name) + 2 > CUBE_AGENT_MAX_STRING)
		return NULL;
	if (!rel[0])
		return strdup(name);
	return asprintf(&p, "%s/%s", rel, name) < 0 ? NULL : p;
}

/* watch every directory below @fd (an open directory known as @rel) */
static int add_tree(struct watch_state *w, int fd, const char *rel, int depth)
{
	struct dirent *de;
	DIR *d;
	int dfd, err = 0;

	if (depth >= WATCH_MAX_DEPTH)
		return 0;
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		char *sub;
		int cfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		cfd = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;	/* not a directory, or gone meanwhile */
		sub = join(rel, de->d_name);
		if (!sub) {
			close(cfd);
			continue;	/* a path too long to report */
		}
		err = add_dir(w, cfd, sub);
		if (err >= 0)
			err = add_tree(w, cfd, sub, depth + 1);
		free(sub);
		close(cfd);
	}
	closedir(d);
	return err < 0 ? err : 0;
}

static void watch_state_free(struct watch_state *w)
{
	size_t i;

	if (w->ifd >= 0)
		close(w->ifd);
	for (i = 0; i < w->n; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	free(w->root);
	free(w);
}

/**
 * watch_start() - WATCH: report the changes in a directory
 * @s: idle session
 * @m: the validated request
 *
 * Return: 0 or a negative errno when the connection broke.
 */
int watch_start(struct session *s, const struct cube_wire_msg *m)
{
	const char *path = cube_wire_value(m->first[CUBE_ATTR_PATH]);
	struct watch_state *w;
	struct stat st;
	int dfd, err;

	if (path[0] != '/')
		return session_send_error(s, m->id, EINVAL,
					  "path '%.512s' is not absolute", path);
	dfd = root_open(s->cfg, path, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return session_send_error(s, m->id, -dfd, "watch '%.512s': %s",
					  path, strerror(-dfd));
	if (fstat(dfd, &st) || !S_ISDIR(st.st_mode)) {
		close(dfd);
		return session_send_error(s, m->id, ENOTDIR,
					  "'%.512s' is not a directory", path);
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(dfd);
		return session_send_error(s, m->id, ENOMEM, "out of memory");
	}
	w->id = m->id;
	w->cfg = s->cfg;
	w->recursive = m->first[CUBE_ATTR_RECURSIVE] != NULL;
	w->root = strdup(path);
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (!w->root || w->ifd < 0) {
		err = w->root ? errno : ENOMEM;
		goto fail;
	}
	w->root_wd = add_dir(w, dfd, "");
	if (w->root_wd < 0) {
		err = -w->root_wd;
		goto fail;
	}
	if (w->recursive) {
		err = -add_tree(w, dfd, "", 0);
		if (err == ENOSPC) {
			close(dfd);
			watch_state_free(w);
			return session_send_error(s, m->id, ENOSPC,
						  "watch '%.512s': more than %d directories below it",
						  path, WATCH_MAX_DIRS);
		}
		if (err)
			goto fail;
	}
	close(dfd);
	s->watch = w;
	return session_send_ok(s, m->id);
fail:
	close(dfd);
	watch_state_free(w);
	return session_send_error(s, m->id, err, "watch '%.512s': %s",
				  path, strerror(err));
}

void watch_poll_fds(struct session *s, struct pollfd *pfd, int *n)
{
	struct watch_state *w = s->watch;

	if (!w)
		return;
	w->idx = -1;
	if (s->out_len >= AGENT_OUTQ_LIMIT)
		return;	/* the host reads slowly: inotify queues meanwhile */
	w->idx = *n;
	pfd[(*n)++] = (struct pollfd){ .fd = w->ifd, .events = POLLIN };
}

/* @rel: the entry's path below the watched directory, NULL when in it */
static int send_event(struct session *s, uint32_t type, const char *name,
		      const char *rel)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_FS_EVENT, s->watch->id);
	cube_wire_put_u32(&b, CUBE_ATTR_EVENT, type);
	cube_wire_put_str(&b, CUBE_ATTR_NAME, name);
	if (rel)
		cube_wire_put_str(&b, CUBE_ATTR_PATH, rel);
	return session_send(s, &b);
}

static void watch_free(struct session *s)
{
	watch_state_free(s->watch);
	s->watch = NULL;
}

/* a directory made in (or moved into) the tree: watch it and below */
static void add_new_dir(struct watch_state *w, const char *rel)
{
	const char *c;
	int fd, depth = 1;
	char *abs;

	for (c = rel; *c; c++)
		depth += *c == '/';
	if (depth > WATCH_MAX_DEPTH ||
	    asprintf(&abs, "%s/%s", w->root, rel) < 0)
		return;
	fd = root_open(w->cfg, abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	free(abs);
	if (fd < 0)
		return;		/* gone already */
	if (add_dir(w, fd, rel) >= 0)
		add_tree(w, fd, rel, depth);
	close(fd);
}

int watch_handle(struct session *s, const struct pollfd *pfd, int n)
{
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	struct watch_state *w = s->watch;
	const struct inotify_event *ev;
	const struct watch_dir *d;
	uint32_t id, type;
	ssize_t len;
	char *p, *rel;
	int err = 0;

	if (!w || w->idx < 0 || w->idx >= n || !pfd[w->idx].revents)
		return 0;
	len = read(w->ifd, buf, sizeof(buf));
	if (len < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (p = buf; !err && p < buf + len;
	     p += sizeof(*ev) + ev->len) {
		ev = (const struct inotify_event *)p;
		if ((ev->mask & IN_Q_OVERFLOW) ||
		    ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) &&
		     ev->wd == w->root_wd)) {
			id = w->id;
			watch_free(s);
			if (ev->mask & IN_Q_OVERFLOW)
				return session_send_error(s, id, EOVERFLOW,
							  "too many changes: events were lost");
			return session_send_error(s, id, ENOENT,
						  "the watched directory is gone");
		}
		d = find_dir(w, ev->wd);
		if (ev->mask & IN_IGNORED) {
			/* a directory below went: forget it */
			if (d) {
				size_t i = d - w->dirs;

				free(w->dirs[i].rel);
				w->dirs[i] = w->dirs[--w->n];
			}
			continue;
		}
		if (!d || !ev->len || !ev->name[0])
			continue;
		if (ev->mask & (IN_CREATE | IN_MOVED_TO))
			type = CUBE_FS_CREATE;
		else if (ev->mask & IN_MODIFY)
			type = CUBE_FS_WRITE;
		else if (ev->mask & IN_DELETE)
			type = CUBE_FS_REMOVE;
		else if (ev->mask & IN_MOVED_FROM)
			type = CUBE_FS_RENAME;
		else if (ev->mask & IN_ATTRIB)
			type = CUBE_FS_CHMOD;
		else
			continue;
		if (!d->rel[0]) {
			rel = NULL;
		} else {
			rel = join(d->rel, ev->name);
			if (!rel)
				continue;	/* too long to report */
		}
		if (w->recursive && type == CUBE_FS_CREATE &&
		    (ev->mask & IN_ISDIR)) {
			char *sub = rel ? strdup(rel) : strdup(ev->name);

			if (sub) {
				add_new_dir(w, sub);
				free(sub);
			}
			d = NULL;	/* add_new_dir() may move the table */
		}
		err = send_event(s, type, ev->name, rel);
		free(rel);
	}
	return err;
}

void watch_stop(struct session *s)
{
	if (s->watch)
		watch_free(s);
}
