// SPDX-License-Identifier: GPL-2.0
/*
 * agent_client.c: connections to cube-agent, message I/O with strict
 * validation of everything the agent sends, and the small requests
 * (ping, identity, reseed).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent_client_int.h"

static void __attribute__((format(printf, 2, 0)))
vset_error(struct cube_agent *a, const char *fmt, va_list ap)
{
	vsnprintf(a->errmsg, sizeof(a->errmsg), fmt, ap);
}

int client_fail(struct cube_agent *a, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset_error(a, fmt, ap);
	va_end(ap);
	return err;
}

/* The agent broke the protocol: the connection is not used again. */
int client_broken(struct cube_agent *a, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset_error(a, fmt, ap);
	va_end(ap);
	a->broken = err;
	a->exec_active = false;
	return err;
}

const char *cube_agent_error(const struct cube_agent *a)
{
	return a->errmsg;
}

uint32_t client_new_id(struct cube_agent *a)
{
	if (++a->next_id == 0)
		a->next_id = 1;
	return a->next_id;
}

int client_check_string(struct cube_agent *a, const char *what, const char *s,
			size_t max)
{
	size_t len;

	if (!s || !s[0])
		return client_fail(a, -EINVAL, "%s is empty", what);
	len = strnlen(s, max);
	if (len >= max)
		return client_fail(a, -ENAMETOOLONG, "%s longer than %zu bytes",
				   what, max - 1);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	return left > 0 ? (int)left : 0;
}

/* Writes what the socket takes now. */
static int push(struct cube_agent *a)
{
	size_t done = 0;
	ssize_t n;
	int err = 0;

	while (done < a->out_len) {
		n = send(a->fd, a->out + done, a->out_len - done, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				err = client_broken(a, -errno, "sending to the agent: %s",
						    strerror(errno));
			break;
		}
		done += n;
	}
	memmove(a->out, a->out + done, a->out_len - done);
	a->out_len -= done;
	return err;
}

/* Queues a finished message without waiting. */
int client_queue(struct cube_agent *a, struct cube_wire_buf *b)
{
	int err = cube_wire_finish(b);
	size_t cap;
	uint8_t *p;

	if (err) {
		cube_wire_free(b);
		return client_fail(a, err == -EMSGSIZE ? -E2BIG : err,
				   "request too large for one message");
	}
	if (a->out_len + b->len > a->out_cap) {
		cap = a->out_cap ? a->out_cap : 64 * 1024;
		while (cap < a->out_len + b->len)
			cap *= 2;
		p = realloc(a->out, cap);
		if (!p) {
			cube_wire_free(b);
			return client_fail(a, -ENOMEM, "out of memory");
		}
		a->out = p;
		a->out_cap = cap;
	}
	memcpy(a->out + a->out_len, b->data, b->len);
	a->out_len += b->len;
	cube_wire_free(b);
	return push(a);
}

/* Queues a message, then waits until the queue is below its limit. */
int client_send(struct cube_agent *a, struct cube_wire_buf *b)
{
	int64_t deadline = a->timeout_ms < 0 ? -1 : now_ms() + a->timeout_ms;
	struct pollfd p = { .fd = a->fd, .events = POLLOUT };
	int err, n;

	if (a->broken) {
		cube_wire_free(b);
		return a->broken;
	}
	err = client_queue(a, b);
	while (!err && a->out_len > CLIENT_OUT_LIMIT) {
		n = poll(&p, 1, left_ms(deadline));
		if (n < 0 && errno != EINTR)
			return client_broken(a, -errno, "poll: %s", strerror(errno));
		if (n == 0)
			return client_broken(a, -ETIMEDOUT,
					     "the agent stopped reading");
		err = push(a);
	}
	return err;
}

static int check_hdr(struct cube_agent *a, struct cube_agent_hdr *hdr)
{
	int err = cube_wire_parse_hdr(a->in, hdr);

	if (err == -EMSGSIZE)
		return client_broken(a, -EMSGSIZE,
				     "agent message of %u bytes exceeds %u",
				     hdr->len, CUBE_AGENT_MAX_PAYLOAD);
	if (err)
		return client_broken(a, -EPROTO,
				     "agent message with flags 0x%x", hdr->flags);
	if (hdr->type < CUBE_MSG_OK && hdr->type != CUBE_MSG_DATA &&
	    hdr->type != CUBE_MSG_END)
		return client_broken(a, -EPROTO,
				     "agent sent a host message type 0x%x",
				     hdr->type);
	return 0;
}

/**
 * client_recv() - the next validated message from the agent
 * @a: connection
 * @m: receives the message; its attributes point into @a's buffer and stay
 *	valid until the next call
 * @timeout_ms: longest wait, -1 for the connection's timeout
 *
 * Sends queued output while waiting.
 *
 * Return: 0, -ETIMEDOUT (the connection stays usable), or another negative
 * errno (the connection is broken).
 */
int client_recv(struct cube_agent *a, struct cube_wire_msg *m, int timeout_ms)
{
	const size_t cap = CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD;
	int64_t deadline;
	struct cube_agent_hdr hdr;
	const char *why;
	struct pollfd p;
	ssize_t n;
	int err;

	if (a->broken)
		return a->broken;
	if (timeout_ms < 0)
		timeout_ms = a->timeout_ms;
	deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	memmove(a->in, a->in + a->in_used, a->in_len - a->in_used);
	a->in_len -= a->in_used;
	a->in_used = 0;
	for (;;) {
		if (a->in_len >= CUBE_AGENT_HDR_LEN) {
			err = check_hdr(a, &hdr);
			if (err)
				return err;
			if (a->in_len >= CUBE_AGENT_HDR_LEN + hdr.len)
				break;
		}
		p.fd = a->fd;
		p.events = POLLIN | (a->out_len ? POLLOUT : 0);
		p.revents = 0;
		n = poll(&p, 1, left_ms(deadline));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return client_broken(a, -errno, "poll: %s", strerror(errno));
		}
		if (n == 0)
			return client_fail(a, -ETIMEDOUT,
					   "no answer from the agent in %d ms",
					   timeout_ms);
		if (p.revents & POLLOUT) {
			err = push(a);
			if (err)
				return err;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(a->fd, a->in + a->in_len, cap - a->in_len, 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return client_broken(a, -errno, "receiving from the agent: %s",
					     strerror(errno));
		}
		if (n == 0)
			return client_broken(a, -ECONNRESET,
					     "the agent closed the connection");
		a->in_len += n;
	}
	err = cube_wire_parse(&hdr, a->in + CUBE_AGENT_HDR_LEN,
			      cube_wire_policy(hdr.type), m, &why);
	if (err)
		return client_broken(a, -EPROTO,
				     "malformed agent message 0x%x: %s",
				     hdr.type, why);
	a->in_used = CUBE_AGENT_HDR_LEN + hdr.len;
	return 0;
}

/* Turns an ERROR message into a negative errno and the error text. */
int client_agent_error(struct cube_agent *a, const struct cube_wire_msg *m)
{
	uint32_t err = cube_wire_u32(m->first[CUBE_ATTR_ERRNO]);
	const struct cube_agent_attr *t = m->first[CUBE_ATTR_MESSAGE];
	char text[CUBE_AGENT_MAX_MESSAGE];
	size_t i;

	if (err < 1 || err > 4095)
		return client_broken(a, -EPROTO, "agent error with errno %u", err);
	snprintf(text, sizeof(text), "%s", t ? (const char *)cube_wire_value(t) :
		 strerror(err));
	for (i = 0; text[i]; i++)
		if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] > 0x7e)
			text[i] = '?';
	return client_fail(a, -(int)err, "agent: %s", text);
}

/**
 * client_expect() - wait for the answer of type @type to request @id
 * @a: connection
 * @id: request id
 * @type: expected message type; an ERROR is returned as its errno
 * @m: the answer
 *
 * Return: 0, the agent's negative errno, or a connection error.
 */
int client_expect(struct cube_agent *a, uint32_t id, uint16_t type,
		  struct cube_wire_msg *m)
{
	int err = client_recv(a, m, -1);

	if (err)
		return err;
	if (m->id != id)
		return client_broken(a, -EPROTO,
				     "agent answered request %u, expected %u",
				     m->id, id);
	if (m->type == CUBE_MSG_ERROR)
		return client_agent_error(a, m);
	if (m->type != type)
		return client_broken(a, -EPROTO,
				     "agent sent message 0x%x, expected 0x%x",
				     m->type, type);
	return 0;
}

int cube_agent_from_fd(int fd, struct cube_agent **out)
{
	struct cube_agent *a;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->in = malloc(CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD);
	if (!a->in) {
		free(a);
		return -ENOMEM;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		free(a->in);
		free(a);
		return -errno;
	}
	a->fd = fd;
	a->timeout_ms = CLIENT_DEFAULT_TIMEOUT;
	*out = a;
	return 0;
}

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int cube_agent_connect_unix(const char *path, struct cube_agent **out)
{
	int fd = unix_connect(path), err;

	*out = NULL;
	if (fd < 0)
		return fd;
	err = cube_agent_from_fd(fd, out);
	if (err)
		close(fd);
	return err;
}

/* Reads the VMM's one-line answer byte by byte: nothing after it is taken. */
static int hybrid_handshake(int fd, unsigned int port)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t deadline = now_ms() + CLIENT_DEFAULT_TIMEOUT;
	char line[64];
	size_t len = 0;
	char *end;
	int n;

	n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (send(fd, line, n, MSG_NOSIGNAL) != n)
		return -errno ? -errno : -EIO;
	while (len < sizeof(line) - 1) {
		n = poll(&p, 1, left_ms(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -ETIMEDOUT;
		n = recv(fd, line + len, 1, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -ECONNREFUSED;	/* the VMM closed: nobody listens */
		if (line[len++] == '\n')
			break;
	}
	line[len] = 0;
	if (len < 5 || strncmp(line, "OK ", 3) || line[len - 1] != '\n')
		return -ECONNREFUSED;
	strtoul(line + 3, &end, 10);
	if (end == line + 3 || *end != '\n')
		return -EPROTO;
	return 0;
}

int cube_agent_connect_vsock(const char *uds_path, unsigned int port,
			     struct cube_agent **out)
{
	int fd, err;

	*out = NULL;
	fd = unix_connect(uds_path);
	if (fd < 0)
		return fd;
	err = hybrid_handshake(fd, port ? port : CUBE_AGENT_VSOCK_PORT);
	if (!err)
		err = cube_agent_from_fd(fd, out);
	if (err)
		close(fd);
	return err;
}

void cube_agent_close(struct cube_agent *a)
{
	if (!a)
		return;
	close(a->fd);
	free(a->in);
	free(a->out);
	free(a);
}

void cube_agent_set_timeout(struct cube_agent *a, int timeout_ms)
{
	a->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
}

int client_idle(struct cube_agent *a)
{
	if (a->broken)
		return a->broken;
	if (a->exec_active)
		return client_fail(a, -EBUSY, "a command is running on this connection");
	if (a->watch_active)
		return client_fail(a, -EBUSY, "a watch is running on this connection");
	return 0;
}

/* A request answered by OK or ERROR. */
int client_simple(struct cube_agent *a, struct cube_wire_buf *b, uint32_t id)
{
	struct cube_wire_msg m;
	int err = client_send(a, b);

	return err ? err : client_expect(a, id, CUBE_MSG_OK, &m);
}

int cube_agent_ping(struct cube_agent *a, struct cube_agent_info *info)
{
	struct cube_wire_buf b = { 0 };
	const struct cube_agent_attr *t;
	struct cube_wire_msg m;
	uint32_t id, ready;
	int err = client_idle(a);

	if (err)
		return err;
	id = client_new_id(a);
	cube_wire_start(&b, CUBE_MSG_PING, id);
	err = client_send(a, &b);
	if (!err)
		err = client_expect(a, id, CUBE_MSG_PONG, &m);
	if (err)
		return err;
	ready = cube_wire_u32(m.first[CUBE_ATTR_READY]);
	if (ready > 1)
		return client_broken(a, -EPROTO, "agent ready flag %u", ready);
	memset(info, 0, sizeof(*info));
	info->version = cube_wire_u32(m.first[CUBE_ATTR_VERSION]);
	info->ready = ready;
	t = m.first[CUBE_ATTR_SANDBOX_ID];
	if (t)
		snprintf(info->sandbox_id, sizeof(info->sandbox_id), "%s",
			 (const char *)cube_wire_value(t));
	t = m.first[CUBE_ATTR_HOSTNAME];
	if (t)
		snprintf(info->hostname, sizeof(info->hostname), "%s",
			 (const char *)cube_wire_value(t));
	return 0;
}

int cube_agent_set_identity(struct cube_agent *a,
			    const struct cube_agent_identity *ident)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err = client_idle(a);

	if (err)
		return err;
	if (!ident->hostname && !ident->sandbox_id && !ident->set_time)
		return client_fail(a, -EINVAL, "identity sets nothing");
	if (ident->hostname &&
	    (err = client_check_string(a, "hostname", ident->hostname, 65)))
		return err;
	if (ident->sandbox_id &&
	    (err = client_check_string(a, "sandbox id", ident->sandbox_id,
				       CUBE_AGENT_MAX_ID)))
		return err;
	id = client_new_id(a);
	cube_wire_start(&b, CUBE_MSG_IDENTITY, id);
	if (ident->hostname)
		cube_wire_put_str(&b, CUBE_ATTR_HOSTNAME, ident->hostname);
	if (ident->sandbox_id)
		cube_wire_put_str(&b, CUBE_ATTR_SANDBOX_ID, ident->sandbox_id);
	if (ident->set_time)
		cube_wire_put_u64(&b, CUBE_ATTR_TIME_NS, ident->time_ns);
	return client_simple(a, &b, id);
}

int cube_agent_disk_grow(struct cube_agent *a, uint64_t size)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err = client_idle(a);

	if (err)
		return err;
	if (!size)
		return client_fail(a, -EINVAL, "a disk of 0 bytes");
	id = client_new_id(a);
	cube_wire_start(&b, CUBE_MSG_DISK_GROW, id);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, size);
	return client_simple(a, &b, id);
}

int cube_agent_reseed(struct cube_agent *a, const void *seed, size_t len)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err = client_idle(a);

	if (err)
		return err;
	if (len < CUBE_AGENT_MIN_SEED || len > CUBE_AGENT_MAX_SEED)
		return client_fail(a, -EINVAL, "seed of %zu bytes, %u..%u allowed",
				   len, CUBE_AGENT_MIN_SEED, CUBE_AGENT_MAX_SEED);
	id = client_new_id(a);
	cube_wire_start(&b, CUBE_MSG_RESEED, id);
	cube_wire_put(&b, CUBE_ATTR_SEED, seed, len);
	return client_simple(a, &b, id);
}
