// SPDX-License-Identifier: GPL-2.0
/* The control socket; see control.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "util.h"

static control_watch_fn watch_fn;
static void *watch_arg;

void control_set_watch(control_watch_fn fn, void *arg)
{
	watch_fn = fn;
	watch_arg = arg;
}

int control_open(struct control *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		c->clients[i].fd = -1;
		c->clients[i].nfds = 0;
	}
	c->listen_fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
			      SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0)
		return -errno;
	unlink(path);
	if (bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(c->listen_fd, 8)) {
		int ret = -errno;

		close(c->listen_fd);
		c->listen_fd = -1;
		return ret;
	}
	c->path = strdup(path);
	if (watch_fn)
		watch_fn(watch_arg, c->listen_fd, true);
	return 0;
}

static void drop_fds(struct control_client *cl)
{
	while (cl->nfds)
		close(cl->fds[--cl->nfds]);
}

static void client_close(struct control_client *cl)
{
	if (watch_fn)
		watch_fn(watch_arg, cl->fd, false);
	close(cl->fd);
	cl->fd = -1;
	cl->len = 0;
	drop_fds(cl);
}

/*
 * Read what the client sent, and the descriptors that may come with it.
 * More than CONTROL_MAX_FDS, more than one message of them, or some while
 * others wait for their request: every one is closed and the client is
 * dropped (-EPROTO).
 */
static ssize_t client_recv(struct control_client *cl)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} u;
	struct iovec iov = {
		.iov_base = cl->buf + cl->len,
		.iov_len = sizeof(cl->buf) - 1 - cl->len,
	};
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm;
	bool bad = false;
	ssize_t n;

	n = recvmsg(cl->fd, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		int nr, i, fds[8];

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nr = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nr > 8)
			nr = 8;
		memcpy(fds, CMSG_DATA(cm), nr * sizeof(int));
		if (cl->nfds || nr > CONTROL_MAX_FDS)
			bad = true;
		for (i = 0; i < nr; i++) {
			if (bad)
				close(fds[i]);
			else
				cl->fds[cl->nfds++] = fds[i];
		}
	}
	if (bad || (msg.msg_flags & MSG_CTRUNC)) {
		drop_fds(cl);
		return -EPROTO;
	}
	return n;
}

void control_close(struct control *c)
{
	int i;

	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0)
			client_close(&c->clients[i]);
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		if (!c->keep_path)
			unlink(c->path);
	}
	c->listen_fd = -1;
	free(c->path);
	c->path = NULL;
}

bool control_owns(const struct control *c, int fd)
{
	int i;

	if (fd < 0)
		return false;
	if (fd == c->listen_fd)
		return true;
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd == fd)
			return true;
	return false;
}

static void client_read(struct control_client *cl, control_fn fn, void *arg)
{
	char reply[CONTROL_LINE_MAX + 8];
	ssize_t n;
	char *nl;

	n = client_recv(cl);
	if (n == -EAGAIN || n == -EINTR)
		return;
	if (n == -EPROTO)
		write_full(cl->fd, "ERR at most 3 descriptors, with one request\n", 44);
	if (n <= 0) {
		client_close(cl);
		return;
	}
	cl->len += n;
	cl->buf[cl->len] = 0;
	while ((nl = strchr(cl->buf, '\n'))) {
		size_t used = nl - cl->buf + 1;

		*nl = 0;
		if (nl > cl->buf && nl[-1] == '\r')
			nl[-1] = 0;
		fn(arg, cl->buf, cl->fds, cl->nfds, reply, sizeof(reply) - 1);
		drop_fds(cl);
		strcat(reply, "\n");
		if (write_full(cl->fd, reply, strlen(reply))) {
			client_close(cl);
			return;
		}
		memmove(cl->buf, cl->buf + used, cl->len - used + 1);
		cl->len -= used;
	}
	if (cl->len == sizeof(cl->buf) - 1) {
		write_full(cl->fd, "ERR request too long\n", 21);
		client_close(cl);
	}
}

void control_event(struct control *c, int fd, control_fn fn, void *arg)
{
	int i;

	if (fd == c->listen_fd) {
		int nfd = accept4(c->listen_fd, NULL, NULL,
				  SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (nfd < 0)
			return;
		for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
			if (c->clients[i].fd < 0)
				break;
		if (i == CONTROL_MAX_CLIENTS) {
			write_full(nfd, "ERR too many clients\n", 21);
			close(nfd);
			return;
		}
		c->clients[i].fd = nfd;
		c->clients[i].len = 0;
		c->clients[i].nfds = 0;
		if (watch_fn)
			watch_fn(watch_arg, nfd, true);
		return;
	}
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd == fd) {
			client_read(&c->clients[i], fn, arg);
			return;
		}
}
