// SPDX-License-Identifier: GPL-2.0
/*
 * session.c: one host connection.  Each connection is served by its own
 * process; it runs one request at a time (a command, a file transfer, ...)
 * and answers PING at any time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

static int out_reserve(struct session *s, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (s->out_len + more <= s->out_cap)
		return 0;
	cap = s->out_cap ? s->out_cap : 64 * 1024;
	while (cap < s->out_len + more)
		cap *= 2;
	p = realloc(s->out, cap);
	if (!p)
		return -ENOMEM;
	s->out = p;
	s->out_cap = cap;
	return 0;
}

/* Writes what the socket takes now. */
static void out_push(struct session *s)
{
	size_t done = 0;
	ssize_t n;

	while (done < s->out_len && !s->out_err) {
		n = write(s->fd, s->out + done, s->out_len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				s->out_err = -errno;
			break;
		}
		done += n;
	}
	if (!done)
		return;		/* s->out may still be NULL */
	memmove(s->out, s->out + done, s->out_len - done);
	s->out_len -= done;
}

/**
 * session_flush() - block until at most @below bytes are queued
 * @s: session
 * @below: queue length to reach
 *
 * Return: 0, or a negative errno when the connection broke.
 */
int session_flush(struct session *s, size_t below)
{
	struct pollfd p = { .fd = s->fd, .events = POLLOUT };

	out_push(s);
	while (s->out_len > below && !s->out_err) {
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return -errno;
		out_push(s);
	}
	return s->out_err;
}

int session_send(struct session *s, struct cube_wire_buf *b)
{
	int err = cube_wire_finish(b);

	if (!err)
		err = out_reserve(s, b->len);
	if (err) {
		cube_wire_free(b);
		return err;
	}
	memcpy(s->out + s->out_len, b->data, b->len);
	s->out_len += b->len;
	cube_wire_free(b);
	out_push(s);
	return s->out_err;
}

int session_send_error(struct session *s, uint32_t id, int err,
		       const char *fmt, ...)
{
	struct cube_wire_buf b = { 0 };
	char msg[CUBE_AGENT_MAX_MESSAGE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!msg[0])
		snprintf(msg, sizeof(msg), "%s", strerror(err));
	cube_wire_start(&b, CUBE_MSG_ERROR, id);
	cube_wire_put_u32(&b, CUBE_ATTR_ERRNO, err);
	cube_wire_put_str(&b, CUBE_ATTR_MESSAGE, msg);
	return session_send(s, &b);
}

int session_send_ok(struct session *s, uint32_t id)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_OK, id);
	return session_send(s, &b);
}

static int dispatch(struct session *s, const struct cube_agent_hdr *hdr,
		    const uint8_t *payload)
{
	const struct cube_wire_policy *pol = cube_wire_policy(hdr->type);
	struct cube_wire_msg m;
	const char *why;
	int err;

	if (!pol || hdr->type >= CUBE_MSG_OK)
		return session_send_error(s, hdr->id, EOPNOTSUPP,
					  "unknown message type 0x%x", hdr->type);
	err = cube_wire_parse(hdr, payload, pol, &m, &why);
	if (err)
		return session_send_error(s, hdr->id, -err,
					  "malformed message 0x%x: %s",
					  hdr->type, why);
	if (m.type == CUBE_MSG_PING)
		return system_pong(s, m.id);
	if (s->wr) {
		if (m.type == CUBE_MSG_DATA || m.type == CUBE_MSG_END)
			return files_write_data(s, &m);
		return session_send_error(s, m.id, EBUSY,
					  "a file write is in progress on this connection");
	}
	if (s->watch)
		return session_send_error(s, m.id, EBUSY,
					  "a watch is running on this connection");
	if (s->exec) {
		if (m.type == CUBE_MSG_STDIN || m.type == CUBE_MSG_STDIN_CLOSE ||
		    m.type == CUBE_MSG_SIGNAL || m.type == CUBE_MSG_RESIZE)
			return exec_request(s, &m);
		return session_send_error(s, m.id, EBUSY,
					  "a command is running on this connection");
	}
	switch (m.type) {
	case CUBE_MSG_EXEC:
		return exec_start(s, &m);
	case CUBE_MSG_STDIN:
	case CUBE_MSG_STDIN_CLOSE:
	case CUBE_MSG_SIGNAL:
	case CUBE_MSG_RESIZE:
		/* sent before the host saw the command end: nothing to do */
		if (s->last_exec && m.id == s->last_exec)
			return 0;
		return session_send_error(s, m.id, ESRCH,
					  "no command is running");
	case CUBE_MSG_DATA:
	case CUBE_MSG_END:
		return session_send_error(s, m.id, EINVAL,
					  "no file write is in progress");
	case CUBE_MSG_RESEED:
	case CUBE_MSG_IDENTITY:
		return system_request(s, &m);
	case CUBE_MSG_WATCH:
		return watch_start(s, &m);
	default:
		return files_request(s, &m);
	}
}

/* Handles every whole message in the input buffer. */
static int process_input(struct session *s)
{
	struct cube_agent_hdr hdr;
	size_t used = 0, n;
	int err = 0;

	while (!err) {
		if (s->discard) {
			n = s->in_len - used;
			if (n > s->discard)
				n = s->discard;
			used += n;
			s->discard -= n;
			if (s->discard)
				break;
		}
		if (s->in_len - used < CUBE_AGENT_HDR_LEN)
			break;
		err = cube_wire_parse_hdr(s->in + used, &hdr);
		if (err == -EMSGSIZE) {
			err = session_send_error(s, hdr.id, EMSGSIZE,
						 "message of %u bytes exceeds the limit of %u",
						 hdr.len, CUBE_AGENT_MAX_PAYLOAD);
			used += CUBE_AGENT_HDR_LEN;
			s->discard = hdr.len;
			continue;
		}
		if (err) {
			err = session_send_error(s, hdr.id, EPROTO,
						 "message header with flags 0x%x",
						 hdr.flags);
			used += CUBE_AGENT_HDR_LEN;
			s->discard = hdr.len;
			continue;
		}
		if (s->in_len - used < CUBE_AGENT_HDR_LEN + hdr.len)
			break;
		err = dispatch(s, &hdr, s->in + used + CUBE_AGENT_HDR_LEN);
		used += CUBE_AGENT_HDR_LEN + hdr.len;
	}
	memmove(s->in, s->in + used, s->in_len - used);
	s->in_len -= used;
	return err;
}

static int read_input(struct session *s)
{
	const size_t cap = CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD;
	ssize_t n;

	n = read(s->fd, s->in + s->in_len, cap - s->in_len);
	if (n < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
	if (n == 0) {
		s->in_eof = true;
		return 0;
	}
	s->in_len += n;
	return process_input(s);
}

/**
 * session_run() - serve one host connection until it closes
 * @fd: the connected socket (owned)
 * @cfg: agent configuration
 *
 * Return: 0 when the host closed the connection, a negative errno when it
 * broke.  A running command is killed, a partial file write removed.
 */
int session_run(int fd, const struct agent_config *cfg)
{
	struct session s = { .fd = fd, .cfg = cfg };
	int err = 0;

	s.in = malloc(CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD);
	if (!s.in) {
		close(fd);
		return -ENOMEM;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (!err && !s.in_eof && !s.out_err) {
		struct pollfd pfd[8];
		int n = 1, timeout = -1;

		pfd[0].fd = fd;
		pfd[0].events = 0;
		pfd[0].revents = 0;
		if (!exec_blocks_input(&s) &&
		    s.in_len < CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD)
			pfd[0].events |= POLLIN;
		if (s.out_len)
			pfd[0].events |= POLLOUT;
		exec_poll_fds(&s, pfd, &n, &timeout);
		watch_poll_fds(&s, pfd, &n);
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (pfd[0].revents & POLLOUT)
			out_push(&s);
		if (pfd[0].revents & POLLIN)
			err = read_input(&s);
		else if (pfd[0].revents & (POLLHUP | POLLERR))
			s.in_eof = true;	/* the host is gone */
		if (!err)
			err = exec_handle(&s, pfd, n);
		if (!err)
			err = watch_handle(&s, pfd, n);
	}
	if (s.in_eof && !err && !s.out_err)
		session_flush(&s, 0);
	exec_kill(&s);
	files_abort(&s);
	watch_stop(&s);
	free(s.in);
	free(s.out);
	close(fd);
	return err ? err : s.out_err;
}
