// SPDX-License-Identifier: GPL-2.0
/*
 * watch.c: WATCH, the changes in one directory (inotify) reported as
 * FS_EVENT messages until the host closes the connection.
 */
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

struct watch_state {
	uint32_t id;
	int ifd;
	int idx;
};

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
	char proc[64];
	struct stat st;
	int dfd, err;

	if (path[0] != '/')
		return session_send_error(s, m->id, EINVAL,
					  "path '%.512s' is not absolute", path);
	dfd = root_open(s->cfg, path, O_PATH | O_DIRECTORY, 0);
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
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dfd);
	if (w->ifd < 0 || inotify_add_watch(w->ifd, proc, WATCH_MASK) < 0) {
		err = errno;
		close(dfd);
		if (w->ifd >= 0)
			close(w->ifd);
		free(w);
		return session_send_error(s, m->id, err, "watch '%.512s': %s",
					  path, strerror(err));
	}
	close(dfd);
	s->watch = w;
	return session_send_ok(s, m->id);
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

static int send_event(struct session *s, uint32_t type, const char *name)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_FS_EVENT, s->watch->id);
	cube_wire_put_u32(&b, CUBE_ATTR_EVENT, type);
	cube_wire_put_str(&b, CUBE_ATTR_NAME, name);
	return session_send(s, &b);
}

static void watch_free(struct session *s)
{
	close(s->watch->ifd);
	free(s->watch);
	s->watch = NULL;
}

int watch_handle(struct session *s, const struct pollfd *pfd, int n)
{
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	struct watch_state *w = s->watch;
	const struct inotify_event *ev;
	uint32_t id, type;
	ssize_t len;
	char *p;
	int err = 0;

	if (!w || w->idx < 0 || w->idx >= n || !pfd[w->idx].revents)
		return 0;
	len = read(w->ifd, buf, sizeof(buf));
	if (len < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (p = buf; !err && p < buf + len;
	     p += sizeof(*ev) + ev->len) {
		ev = (const struct inotify_event *)p;
		if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED |
				IN_Q_OVERFLOW)) {
			id = w->id;
			watch_free(s);
			if (ev->mask & IN_Q_OVERFLOW)
				return session_send_error(s, id, EOVERFLOW,
							  "too many changes: events were lost");
			return session_send_error(s, id, ENOENT,
						  "the watched directory is gone");
		}
		if (!ev->len || !ev->name[0])
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
		err = send_event(s, type, ev->name);
	}
	return err;
}

void watch_stop(struct session *s)
{
	if (s->watch)
		watch_free(s);
}
