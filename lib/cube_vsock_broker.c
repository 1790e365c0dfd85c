// SPDX-License-Identifier: GPL-2.0
/* The connect broker of a jailed cube-vmm; see cube_vsock_broker.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cube_send_fds.h"
#include "cube_vsock_broker.h"

/* A stream connected to "@base_@port", or -errno. */
static int broker_connect(const char *base, uint32_t port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", base, port) >=
	    (int)sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* non-blocking: a listener with a full backlog is a refusal */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static int broker_answer(int sock, const struct cube_vsock_broker_msg *q,
			 int fd)
{
	struct cube_vsock_broker_msg a = {
		.port = q->port, .seq = q->seq, .result = fd < 0 ? fd : 0,
	};

	return cube_send_fds(sock, &a, sizeof(a), &fd, fd >= 0);
}

static void *broker_thread(void *arg)
{
	struct cube_vsock_broker *b = arg;
	struct cube_vsock_broker_msg q;
	ssize_t n;
	int fd;

	for (;;) {
		/* no descriptor is taken from the VMM: no MSG_CMSG, no fds */
		n = recv(b->fd, &q, sizeof(q), 0);
		if (n == 0)
			break;		/* the VMM's end is closed */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n != sizeof(q))
			continue;	/* not a request: no answer */
		fd = broker_connect(b->base, q.port);
		if (broker_answer(b->fd, &q, fd) && errno != EINTR &&
		    errno != ENOBUFS) {
			if (fd >= 0)
				close(fd);
			break;
		}
		if (fd >= 0) {
			b->served++;
			close(fd);
		}
	}
	/* the VMM's next request fails at once rather than waiting */
	shutdown(b->fd, SHUT_RDWR);
	return NULL;
}

int cube_vsock_broker_start(struct cube_vsock_broker *b, const char *base,
			    int *vmm_fd)
{
	int sv[2], ret;

	b->fd = -1;
	b->served = 0;
	b->base = strdup(base);
	if (!b->base)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		ret = -errno;
		goto fail;
	}
	b->fd = sv[0];
	ret = -pthread_create(&b->thread, NULL, broker_thread, b);
	if (ret) {
		close(sv[0]);
		close(sv[1]);
		b->fd = -1;
		goto fail;
	}
	*vmm_fd = sv[1];
	return 0;
fail:
	free(b->base);
	b->base = NULL;
	return ret;
}

void cube_vsock_broker_stop(struct cube_vsock_broker *b)
{
	if (b->fd < 0)
		return;
	/* the thread's recv() returns 0 even while a VMM end lingers */
	shutdown(b->fd, SHUT_RDWR);
	pthread_join(b->thread, NULL);
	close(b->fd);
	b->fd = -1;
	free(b->base);
	b->base = NULL;
}
