// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_forward.c: envd-plane requests that name another sandbox port
 * (E2b-Sandbox-Port), passed to that port in the sandbox; see
 * e2b_forward.h.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "e2b_forward.h"
#include "e2b_proxy.h"

#define WATCH_MS 1000		/* the sandbox's liveness, the client's close */

int e2b_forward_port(const char *header)
{
	unsigned long v;
	char *end;

	if (!header)
		return 0;
	if (!isdigit((unsigned char)header[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(header, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return -EINVAL;
	return v == E2B_ENVD_PORT ? 0 : (int)v;
}

static bool hop_by_hop(const char *name)
{
	static const char *const hop[] = {
		"Connection", "Keep-Alive", "Transfer-Encoding", "TE",
		"Trailer", "Upgrade", "Proxy-Connection", "Content-Length",
		"Expect",
	};
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (!strcasecmp(name, hop[i]))
			return true;
	return false;
}

/* a token (method, header name): visible ASCII but separators */
static bool token_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 127 || strchr("()<>@,;:\\\"/[]?={}", *s))
			return false;
	return true;
}

/* a path, query or header value: no control characters (tab in values) */
static bool text_ok(const char *s, bool space)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == 127 || (c < ' ' && !(space && c == '\t')) ||
		    (c == ' ' && !space))
			return false;
	}
	return true;
}

char *e2b_forward_head(const char *method, const char *path,
		       const char *query, const struct e2b_forward_hdr *hdrs,
		       size_t n, size_t body_len, size_t *len)
{
	char *buf = NULL;
	size_t size = 0, i;
	FILE *f;

	if (!token_ok(method) || path[0] != '/' || !text_ok(path, false) ||
	    (query && !text_ok(query, false))) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (!token_ok(hdrs[i].name) || !text_ok(hdrs[i].value, true)) {
			errno = EINVAL;
			return NULL;
		}
	}
	f = open_memstream(&buf, &size);
	if (!f)
		return NULL;
	fprintf(f, "%s %s%s%s HTTP/1.0\r\n", method, path,
		query && *query ? "?" : "", query && *query ? query : "");
	for (i = 0; i < n; i++)
		if (!hop_by_hop(hdrs[i].name))
			fprintf(f, "%s: %s\r\n", hdrs[i].name, hdrs[i].value);
	fprintf(f, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
	if (fclose(f)) {
		free(buf);
		errno = ENOMEM;
		return NULL;
	}
	*len = size;
	return buf;
}

/* the value of header line @line (@llen bytes) when it is @name */
static const char *header_value(const char *line, size_t llen,
				const char *name, size_t *vlen)
{
	size_t nl = strlen(name);
	const char *v, *end = line + llen;

	if (llen <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return NULL;
	v = line + nl + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*vlen = end - v;
	return v;
}

int e2b_forward_parse_reply(const char *buf, size_t len,
			    struct e2b_forward_reply *r)
{
	const char *end = NULL, *p, *eol, *v;
	size_t i, vlen, hlen;
	unsigned int st;

	for (i = 0; i + 3 < len && i + 4 <= E2B_FORWARD_HEAD_MAX; i++) {
		if (!memcmp(buf + i, "\r\n\r\n", 4)) {
			end = buf + i + 2;	/* the last line's end */
			break;
		}
	}
	if (!end)
		return len >= E2B_FORWARD_HEAD_MAX ? -E2BIG : -EAGAIN;
	hlen = end - buf + 2;
	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	/* "HTTP/1.x NNN reason" */
	if (hlen < 14 || memcmp(buf, "HTTP/1.", 7) || !isdigit((unsigned char)buf[7]) ||
	    buf[8] != ' ' || !isdigit((unsigned char)buf[9]) ||
	    !isdigit((unsigned char)buf[10]) || !isdigit((unsigned char)buf[11]) ||
	    (buf[12] != ' ' && buf[12] != '\r'))
		return -EINVAL;
	st = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (st < 100 || st > 599)
		return -EINVAL;
	r->status = st;
	p = memchr(buf, '\n', hlen);
	if (p[-1] != '\r')
		return -EINVAL;
	p++;
	while (p < end) {
		eol = memchr(p, '\n', end - p);
		if (!eol || eol == p || eol[-1] != '\r')
			return -EINVAL;
		if ((v = header_value(p, eol - 1 - p, "Content-Type", &vlen))) {
			if (vlen >= sizeof(r->content_type))
				return -EINVAL;
			memcpy(r->content_type, v, vlen);
			r->content_type[vlen] = '\0';
			if (!text_ok(r->content_type, true))
				return -EINVAL;
		} else if ((v = header_value(p, eol - 1 - p, "Content-Length", &vlen))) {
			long long cl = 0;

			if (!vlen || vlen > 15)
				return -EINVAL;
			for (i = 0; i < vlen; i++) {
				if (!isdigit((unsigned char)v[i]))
					return -EINVAL;
				cl = cl * 10 + (v[i] - '0');
			}
			if (r->content_length >= 0 && r->content_length != cl)
				return -EINVAL;
			r->content_length = cl;
		} else if ((v = header_value(p, eol - 1 - p, "Transfer-Encoding", &vlen))) {
			if (vlen != 8 || strncasecmp(v, "identity", 8))
				r->chunked = true;
		}
		p = eol + 1;
	}
	return (int)hlen;
}

/* --- the connection --- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * struct fwd - one forwarded request, its answer's body read as it is sent
 */
struct fwd {
	struct e2b_stream s;
	int fd;			/* to the sandbox's port */
	int client_fd;		/* < 1: unknown */
	const struct e2b_proxy_ops *ops;
	void *ctx;
	uint64_t key;
	char *buf;		/* what came after the head */
	size_t len, off;
	long long left;		/* of Content-Length, -1 until the close */
	struct e2b_forward_reply reply;
};

/*
 * Wait for @f->fd to be readable: 1; 0 on the client's close, the
 * sandbox's end or the idle time; -errno.
 */
static int wait_port(struct fwd *f)
{
	struct pollfd p[2] = {
		{ .fd = f->fd, .events = POLLIN },
		{ .fd = f->client_fd > 0 ? f->client_fd : -1, .events = POLLRDHUP },
	};
	int64_t idle = now_ms() + E2B_FORWARD_IDLE_MS;

	for (;;) {
		int n = poll(p, 2, WATCH_MS);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents)
			return 0;
		if (p[0].revents)
			return 1;
		if (now_ms() >= idle)
			return 0;
		if (f->ops->alive && !f->ops->alive(f->ctx, f->key))
			return 0;
	}
}

static int send_all(struct fwd *f, const char *p, size_t len)
{
	struct pollfd pf = { .fd = f->fd, .events = POLLOUT };

	while (len) {
		ssize_t n = write(f->fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			if (poll(&pf, 1, E2B_FORWARD_IDLE_MS) <= 0)
				return -ETIMEDOUT;
			continue;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static void fwd_free(struct fwd *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f);
}

static void stream_free(struct e2b_stream *s)
{
	fwd_free((struct fwd *)s);
}

static ssize_t stream_read(struct e2b_stream *s, void *out, size_t max)
{
	struct fwd *f = (struct fwd *)s;
	ssize_t n;
	int ret;

	if (f->left == 0)
		return 0;
	if (f->left > 0 && (long long)max > f->left)
		max = f->left;
	if (f->off < f->len) {
		n = f->len - f->off < max ? f->len - f->off : max;
		memcpy(out, f->buf + f->off, n);
		f->off += n;
	} else {
		for (;;) {
			ret = wait_port(f);
			if (ret < 0)
				return ret;
			if (!ret)	/* the client or the sandbox went away */
				return f->left < 0 ? 0 : -ECONNRESET;
			n = read(f->fd, out, max);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n < 0)
				return -errno;
			break;
		}
		if (n == 0)
			return f->left < 0 ? 0 : -ECONNRESET;
	}
	if (f->left > 0)
		f->left -= n;
	return n;
}

struct collect {
	struct e2b_forward_hdr *h;
	size_t n, cap;
	bool failed;
};

static void add_header(void *arg, const char *name, const char *value)
{
	struct collect *c = arg;

	if (c->failed)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct e2b_forward_hdr *h = realloc(c->h, cap * sizeof(*h));

		if (!h || cap > 1024) {
			free(h == c->h ? NULL : h);
			c->failed = true;
			return;
		}
		c->h = h;
		c->cap = cap;
	}
	c->h[c->n].name = name;
	c->h[c->n].value = value ? value : "";
	c->n++;
}

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = *s;

		if (isalnum(ch) || strchr("-._~", ch))
			fputc(ch, f);
		else
			fprintf(f, "%%%02X", ch);
	}
}

struct query {
	FILE *f;
	bool first;
};

static void add_query(void *arg, const char *name, const char *value)
{
	struct query *q = arg;

	if (!q->first)
		fputc('&', q->f);
	q->first = false;
	put_escaped(q->f, name);
	if (value) {
		fputc('=', q->f);
		put_escaped(q->f, value);
	}
}

/* the request's query string, re-encoded; NULL when out of memory */
static char *query_string(const struct e2b_request *req)
{
	struct query q = { .first = true };
	char *buf = NULL;
	size_t size = 0;

	q.f = open_memstream(&buf, &size);
	if (!q.f)
		return NULL;
	if (req->each_query)
		req->each_query(req->ctx, add_query, &q);
	if (fclose(q.f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* the answer's head, and what came after it into f->buf */
static int read_reply(struct fwd *f)
{
	size_t cap = E2B_FORWARD_HEAD_MAX;
	int ret;

	f->buf = malloc(cap);
	if (!f->buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		ret = wait_port(f);
		if (ret <= 0)
			return ret < 0 ? ret : -ECONNRESET;
		n = read(f->fd, f->buf + f->len, cap - f->len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		f->len += n;
		ret = e2b_forward_parse_reply(f->buf, f->len, &f->reply);
		if (ret == -EAGAIN)
			continue;
		if (ret < 0)
			return ret;
		f->off = ret;
		return 0;
	}
}

/* a body of known length, up to E2B_BODY_MAX, into @resp's buffer */
static int read_whole(struct fwd *f, struct e2b_response *resp)
{
	size_t want = f->reply.content_length, have = f->len - f->off;
	char *b = malloc(want + 1);

	if (!b)
		return -ENOMEM;
	if (have > want)
		have = want;
	memcpy(b, f->buf + f->off, have);
	while (have < want) {
		ssize_t n;
		int ret = wait_port(f);

		if (ret <= 0) {
			free(b);
			return ret < 0 ? ret : -ECONNRESET;
		}
		n = read(f->fd, b + have, want - have);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			free(b);
			return n ? -errno : -EPIPE;
		}
		have += n;
	}
	b[want] = '\0';
	resp->body = b;
	resp->len = want;
	return 0;
}

void e2b_forward(const struct e2b_api *api, const struct e2b_request *req,
		 int port, struct e2b_response *resp)
{
	const char *id = req->header(req->ctx, "E2b-Sandbox-Id");
	const char *token = req->header(req->ctx, E2B_TRAFFIC_TOKEN_HEADER);
	struct e2b_proxy_target t = { .netns_fd = -1 };
	struct collect hc = { 0 };
	char *head = NULL, *query = NULL;
	size_t hlen;
	struct fwd *f;
	int ret;

	memset(resp, 0, sizeof(*resp));
	if (!id || !e2b_id_valid(id)) {
		e2b_reply_error(resp, id ? 502 : 400, id ? "sandbox not found" :
				"missing E2b-Sandbox-Id header");
		return;
	}
	if (!api->ports) {
		e2b_reply_error(resp, 502, "sandbox ports are not served here");
		return;
	}
	if (req->body_too_large) {
		e2b_reply_error(resp, 413, "request body too large");
		return;
	}
	ret = api->ports->resolve(api->ports_ctx, id, &t);
	if (ret) {
		e2b_reply_error(resp, 502, "%s", ret == -ENOENT ? "sandbox not found" :
				ret == -ENETDOWN ? "the sandbox has no network" :
				"the sandbox cannot be reached");
		return;
	}
	if (t.token[0] && (!token || !e2b_secret_equal(t.token, token))) {
		close(t.netns_fd);
		e2b_reply_error(resp, 403, "%s", token ? "wrong " E2B_TRAFFIC_TOKEN_HEADER " header" :
				"the sandbox needs the " E2B_TRAFFIC_TOKEN_HEADER " header");
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(t.netns_fd);
		e2b_reply_error(resp, 500, "out of memory");
		return;
	}
	f->s.read = stream_read;
	f->s.free = stream_free;
	f->client_fd = req->client_fd;
	f->ops = api->ports;
	f->ctx = api->ports_ctx;
	f->key = t.key;
	f->left = -1;
	f->fd = e2b_proxy_dial(t.netns_fd, port);
	close(t.netns_fd);
	if (f->fd < 0) {
		ret = f->fd;
		e2b_reply_error(resp, 502, ret == -ECONNREFUSED ?
				"nothing listens on port %d of sandbox %s" :
				ret == -ETIMEDOUT ? "port %d of sandbox %s does not answer" :
				"cannot connect to port %d of sandbox %s", port, id);
		goto fail;
	}
	if (req->each_header)
		req->each_header(req->ctx, add_header, &hc);
	query = query_string(req);
	head = hc.failed || !query ? NULL :
	       e2b_forward_head(req->method, req->path, query, hc.h, hc.n,
				req->body_len, &hlen);
	free(hc.h);
	free(query);
	if (!head) {
		e2b_reply_error(resp, 400, "the request cannot be passed on");
		goto fail;
	}
	ret = send_all(f, head, hlen);
	free(head);
	if (!ret && req->body_len)
		ret = send_all(f, req->body, req->body_len);
	if (!ret)
		ret = read_reply(f);
	if (ret || f->reply.chunked) {
		e2b_reply_error(resp, 502, "port %d of sandbox %s %s", port, id,
				ret == -EINVAL || f->reply.chunked ?
				"answered with what is not HTTP/1.0" :
				"closed the connection without an answer");
		goto fail;
	}
	resp->status = f->reply.status;
	if (f->reply.content_type[0]) {
		resp->content_type_owned = strdup(f->reply.content_type);
		resp->content_type = resp->content_type_owned;
	}
	if (f->reply.content_length >= 0 &&
	    f->reply.content_length <= E2B_BODY_MAX) {
		ret = read_whole(f, resp);
		if (ret) {
			e2b_reply_error(resp, 502, "port %d of sandbox %s closed the connection early",
					port, id);
			goto fail;
		}
		fwd_free(f);
		return;
	}
	f->left = f->reply.content_length;
	resp->stream = &f->s;
	resp->len = (size_t)-1;
	return;
fail:
	fwd_free(f);
}
