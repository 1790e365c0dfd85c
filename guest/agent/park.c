// SPDX-License-Identifier: GPL-2.0
/*
 * The control channel between cube-agent's main process and its session
 * processes: one fixed-size struct park_msg per datagram, optionally with a
 * file descriptor (the connection an ATTACH hands over).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

/**
 * park_send() - send a control message, with a file descriptor or not
 * @ctl: control socket
 * @pm: the message
 * @fd: descriptor to pass along, -1: none
 *
 * Return: 0 or a negative errno.
 */
int park_send(int ctl, const struct park_msg *pm, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)pm, .iov_len = sizeof(*pm) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (fd >= 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do {
		n = sendmsg(ctl, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == sizeof(*pm) ? 0 : -EPROTO;
}

/**
 * park_recv() - receive a control message (blocking)
 * @ctl: control socket
 * @pm: the message
 * @fd: receives a passed descriptor (-1: none); NULL: none is expected,
 *	one that comes anyway is closed
 *
 * Return: 0, -ECONNRESET when the peer is gone, another negative errno.
 */
int park_recv(int ctl, struct park_msg *pm, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = pm, .iov_len = sizeof(*pm) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int got = -1;
	ssize_t n;

	if (fd)
		*fd = -1;
	do {
		n = recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)) && got < 0)
			memcpy(&got, CMSG_DATA(c), sizeof(int));
	}
	if (n != sizeof(*pm) || (mh.msg_flags & MSG_CTRUNC) || !fd) {
		if (got >= 0)
			close(got);
		got = -1;
	}
	if (fd)
		*fd = got;
	if (!n)
		return -ECONNRESET;
	return n == sizeof(*pm) ? 0 : -EPROTO;
}
