// SPDX-License-Identifier: GPL-2.0
/* peer.c: a scripted far end of a socket; see peer.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer.h"

static void *peer_run(void *arg)
{
	struct peer *p = arg;
	size_t sent = 0;
	char sink[4096];
	bool open_out = true;

	if (!p->len) {
		shutdown(p->fd, SHUT_WR);
		open_out = false;
	}
	for (;;) {
		struct pollfd pfd = {
			.fd = p->fd,
			.events = POLLIN | (open_out ? POLLOUT : 0),
		};
		ssize_t n;

		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (open_out && (pfd.revents & (POLLOUT | POLLERR))) {
			n = send(p->fd, p->data + sent, p->len - sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				sent += n;
			if ((n < 0 && errno != EAGAIN) || sent == p->len) {
				shutdown(p->fd, SHUT_WR);
				open_out = false;
			}
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				break;
			if (n > 0)
				p->received += n;
		}
	}
	return NULL;
}

int peer_start(struct peer *p, const uint8_t *data, size_t len)
{
	pthread_attr_t attr;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		perror("peer: socketpair");
		exit(1);
	}
	p->fd = sv[1];
	p->data = data;
	p->len = len;
	p->received = 0;
	/* a small stack: each input starts a thread, ASan maps its stack */
	if (pthread_attr_init(&attr) ||
	    pthread_attr_setstacksize(&attr, 128 * 1024) ||
	    pthread_create(&p->thread, &attr, peer_run, p)) {
		perror("peer: pthread_create");
		exit(1);
	}
	pthread_attr_destroy(&attr);
	return sv[0];
}

void peer_stop(struct peer *p)
{
	pthread_join(p->thread, NULL);
	close(p->fd);
}
