// SPDX-License-Identifier: GPL-2.0
/*
 * session.c: one host connection.  Each connection is served by its own
 * process; it runs one request at a time (a command, a file transfer, ...)
 * and answers PING at any time.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* Length of the whole message at @p of the output queue. */
static size_t msg_len(const uint8_t *p)
{
	struct cube_agent_hdr hdr;

	cube_wire_parse_hdr(p, &hdr);	/* our own: always whole */
	return CUBE_AGENT_HDR_LEN + hdr.len;
}

/*
 * Writes what the socket takes now.  Only messages written whole leave the
 * queue: a parked session sends the one cut by a broken connection again.
 */
static void out_push(struct session *s)
{
	size_t done = s->out_off, pos = 0;
	ssize_t n;

	if (s->fd < 0)
		return;
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
	while (pos < done && msg_len(s->out + pos) <= done - pos)
		pos += msg_len(s->out + pos);
	s->out_off = done - pos;
	if (!pos)
		return;		/* s->out may still be NULL */
	memmove(s->out, s->out + pos, s->out_len - pos);
	s->out_len -= pos;
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
	while (s->out_len > below && !s->out_err && s->fd >= 0) {
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

/* ATTACH: hands the connection to the session that parked the command. */
static int attach_request(struct session *s, const struct cube_wire_msg *m)
{
	struct park_msg pm = { .op = PARK_ATTACH, .id = m->id };
	uint32_t pid = cube_wire_u32(m->first[CUBE_ATTR_PID]);
	int err;

	if (!pid || pid > INT32_MAX)
		return session_send_error(s, m->id, ESRCH,
					  "no parked command with pid %u", pid);
	if (s->ctl < 0)
		return session_send_error(s, m->id, EOPNOTSUPP,
					  "this agent cannot park commands");
	/* what this connection still owes the host goes first */
	err = session_flush(s, 0);
	if (err)
		return err;
	pm.pid = pid;
	err = park_send(s->ctl, &pm, s->fd);
	if (!err)
		err = park_recv(s->ctl, &pm, NULL);
	if (!err && pm.op != PARK_REPLY)
		err = -EPROTO;
	if (!err)
		err = pm.result;
	switch (err) {
	case 0:
		s->handed_off = true;
		return 0;
	case -ESRCH:
		return session_send_error(s, m->id, ESRCH,
					  "no parked command with pid %u", pid);
	case -EBUSY:
		return session_send_error(s, m->id, EBUSY,
					  "command %u is attached to another connection",
					  pid);
	default:
		return session_send_error(s, m->id, -err,
					  "cannot attach to command %u: %s", pid,
					  strerror(-err));
	}
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
	case CUBE_MSG_ATTACH:
		return attach_request(s, &m);
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
	case CUBE_MSG_DISK_GROW:
		return disk_request(s, &m);
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

	while (!err && !s->handed_off) {
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

/* Drops what the host cannot use any more, the parked command's events aside. */
static void out_keep_command(struct session *s)
{
	size_t pos = 0, len;
	uint32_t id;

	s->out_off = 0;
	while (pos < s->out_len) {
		len = msg_len(s->out + pos);
		memcpy(&id, s->out + pos + 8, sizeof(id));
		if (le32toh(id) == s->last_exec) {
			pos += len;
			continue;
		}
		memmove(s->out + pos, s->out + pos + len, s->out_len - pos - len);
		s->out_len -= len;
	}
}

/*
 * The connection broke: keep the KEEP command (or its undelivered exit)
 * for a later ATTACH.  False when there is nothing to keep, or the main
 * process refuses (too many parked).
 */
static bool park(struct session *s)
{
	struct park_msg pm = { .op = PARK_PARK, .pid = s->keep_pid };
	int err;

	if (!s->keep_pid || s->ctl < 0 || (!s->exec && !s->out_len))
		return false;
	err = park_send(s->ctl, &pm, -1);
	if (!err)
		err = park_recv(s->ctl, &pm, NULL);
	if (!err && pm.op != PARK_REPLY)
		err = -EPROTO;
	if (!err)
		err = pm.result;
	if (err) {
		agent_log("cannot park command %d: %s", s->keep_pid,
			  strerror(-err));
		return false;
	}
	files_abort(s);
	watch_stop(s);
	close(s->fd);
	s->fd = -1;
	s->in_len = 0;
	s->discard = 0;
	s->in_eof = false;
	s->out_err = 0;
	out_keep_command(s);
	s->park_deadline = exec_now_ms() + s->cfg->park_timeout_ms;
	return true;
}

/* The main process hands over a connection that asked for the command. */
static int unpark(struct session *s)
{
	struct cube_wire_buf b = { 0 };
	struct park_msg pm;
	size_t pos, len;
	uint32_t id;
	int fd = -1, err;

	err = park_recv(s->ctl, &pm, &fd);
	if (err)
		return err;
	if (pm.op != PARK_ATTACH || fd < 0 || pm.pid != s->keep_pid) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	/* the events so far now carry the id of the ATTACH request */
	id = htole32(pm.id);
	for (pos = 0; pos < s->out_len; pos += len) {
		len = msg_len(s->out + pos);
		memcpy(s->out + pos + 8, &id, sizeof(id));
	}
	exec_attached(s, pm.id);
	cube_wire_start(&b, CUBE_MSG_STARTED, pm.id);
	cube_wire_put_u32(&b, CUBE_ATTR_PID, s->keep_pid);
	err = cube_wire_finish(&b);
	if (!err)
		err = out_reserve(s, b.len);
	if (err) {
		cube_wire_free(&b);
		close(fd);
		return err;
	}
	memmove(s->out + b.len, s->out, s->out_len);
	memcpy(s->out, b.data, b.len);
	s->out_len += b.len;
	cube_wire_free(&b);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	s->fd = fd;
	s->park_deadline = 0;
	out_push(s);
	return 0;
}

/**
 * session_run() - serve one host connection until it closes
 * @fd: the connected socket (owned)
 * @ctl: the control socket to the main process (owned), -1: none
 * @cfg: agent configuration
 *
 * A running command is killed when the connection ends, a partial file
 * write removed; but a command started with KEEP is parked: it runs on,
 * its output is kept (up to %AGENT_OUTQ_LIMIT) for a later ATTACH, which
 * brings a new connection, and it is killed when none comes within
 * cfg->park_timeout_ms.
 *
 * Return: 0 when the host closed the connection, a negative errno when it
 * broke.
 */
int session_run(int fd, int ctl, const struct agent_config *cfg)
{
	struct session s = { .fd = fd, .ctl = ctl, .cfg = cfg };
	int err = 0;

	s.in = malloc(CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD);
	if (!s.in) {
		close(fd);
		if (ctl >= 0)
			close(ctl);
		return -ENOMEM;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd pfd[8];
		int n = 1, timeout = -1;
		uint64_t now;

		if (s.handed_off || (s.fd < 0 && err))
			break;
		if (s.fd >= 0 && (err || s.in_eof || s.out_err)) {
			if (s.in_eof && !err && !s.out_err)
				session_flush(&s, 0);
			if (!park(&s))
				break;
			err = 0;
		}
		if (s.fd < 0) {
			now = exec_now_ms();
			if (now >= s.park_deadline) {
				agent_log("parked command %d not attached in %u ms: killed",
					  s.keep_pid, cfg->park_timeout_ms);
				break;
			}
			timeout = s.park_deadline - now > INT32_MAX ? INT32_MAX :
				  (int)(s.park_deadline - now);
		}
		pfd[0].fd = s.fd;
		pfd[0].events = 0;
		pfd[0].revents = 0;
		if (!exec_blocks_input(&s) &&
		    s.in_len < CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD)
			pfd[0].events |= POLLIN;
		if (s.out_len)
			pfd[0].events |= POLLOUT;
		if (s.fd < 0)
			pfd[n++] = (struct pollfd){ .fd = ctl, .events = POLLIN };
		exec_poll_fds(&s, pfd, &n, &timeout);
		watch_poll_fds(&s, pfd, &n);
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (s.fd < 0 && pfd[1].revents) {
			err = unpark(&s);
			if (err)
				break;	/* the main process is gone */
			continue;
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
	exec_kill(&s);
	files_abort(&s);
	watch_stop(&s);
	free(s.in);
	free(s.out);
	if (s.fd >= 0)
		close(s.fd);
	if (ctl >= 0)
		close(ctl);
	return err ? err : s.out_err;
}
