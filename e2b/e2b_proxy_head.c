// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_proxy_head.c: what the port proxy reads of a request head: the
 * sandbox and port it names, and the traffic access token.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "e2b_backend.h"
#include "e2b_json.h"
#include "e2b_proxy.h"

/* "1".."65535" in @s[0..@n) */
static int parse_port(const char *s, size_t n, unsigned int *port)
{
	unsigned int v = 0;
	size_t i;

	if (!n || n > 5 || s[0] == '0')
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

int e2b_proxy_parse_host(const char *host, size_t len, unsigned int *port,
			 char sandbox[E2B_ID_MAX + 1])
{
	size_t n = 0, dash;
	char id[E2B_ID_MAX + 1];

	/* the first label: up to a '.', or the ':' of the host's port */
	while (n < len && host[n] != '.' && host[n] != ':')
		n++;
	for (dash = 0; dash < n && host[dash] != '-'; dash++)
		;
	if (dash == n || n - dash - 1 > E2B_ID_MAX)
		return -EINVAL;
	if (parse_port(host, dash, port))
		return -EINVAL;
	memcpy(id, host + dash + 1, n - dash - 1);
	id[n - dash - 1] = '\0';
	if (!e2b_id_valid(id))
		return -EINVAL;
	strcpy(sandbox, id);
	return 0;
}

/* the end of the head (past its empty line), 0 when not there yet */
static size_t head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c);
}

/* the request line: METHOD SP TARGET SP HTTP/1.x */
static bool request_line_ok(const char *l, size_t n)
{
	size_t m = 0, sp;

	while (m < n && token_char(l[m]))
		m++;
	if (!m || m == n || l[m] != ' ')
		return false;
	for (sp = m + 1; sp < n && l[sp] != ' '; sp++)
		if ((unsigned char)l[sp] <= ' ' || l[sp] == 0x7f)
			return false;
	if (sp == m + 1 || sp == n)
		return false;
	return n - sp - 1 == 8 && (!memcmp(l + sp + 1, "HTTP/1.1", 8) ||
				   !memcmp(l + sp + 1, "HTTP/1.0", 8));
}

int e2b_proxy_parse_head(const char *buf, size_t len,
			 struct e2b_proxy_head *h, char *err)
{
	const char *host = NULL, *hdr_id = NULL, *hdr_port = NULL;
	size_t host_len = 0, id_len = 0, port_len = 0;
	size_t end = head_end(buf, len), pos, n;
	bool first = true;

	memset(h, 0, sizeof(*h));
	if (!end)
		return len >= E2B_PROXY_HEAD_MAX ? -E2BIG : -EAGAIN;
	if (end > E2B_PROXY_HEAD_MAX)
		return -E2BIG;
	if (memchr(buf, '\0', end))
		return e2b_fail(err, "the request head holds a NUL byte");
	for (pos = 0; pos < end; pos += n + 1) {
		const char *l = buf + pos, *colon, *v;
		size_t vlen;

		n = (const char *)memchr(l, '\n', end - pos) - l;
		if (n && l[n - 1] == '\r')
			n--;
		if (first) {
			if (!request_line_ok(l, n))
				return e2b_fail(err, "malformed request line");
			first = false;
			if (l[n] == '\r')
				pos++;
			continue;
		}
		if (!n)
			break;
		colon = memchr(l, ':', n);
		if (!colon || colon == l)
			return e2b_fail(err, "malformed header line");
		for (v = l; v < colon; v++)
			if (!token_char(*v))
				return e2b_fail(err, "malformed header name");
		v = colon + 1;
		vlen = n - (v - l);
		while (vlen && (*v == ' ' || *v == '\t'))
			v++, vlen--;
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
#define IS(name) ((size_t)(colon - l) == sizeof(name) - 1 && \
		  !strncasecmp(l, name, sizeof(name) - 1))
		if (IS("host")) {
			if (host)
				return e2b_fail(err, "more than one Host header");
			host = v;
			host_len = vlen;
		} else if (IS(E2B_TRAFFIC_TOKEN_HEADER)) {
			h->has_token = true;
			/* an overlong one stays "" and matches nothing */
			if (vlen < sizeof(h->token)) {
				memcpy(h->token, v, vlen);
				h->token[vlen] = '\0';
			}
		} else if (IS("e2b-sandbox-id")) {
			hdr_id = v;
			id_len = vlen;
		} else if (IS("e2b-sandbox-port")) {
			hdr_port = v;
			port_len = vlen;
		}
#undef IS
		if (l[n] == '\r')
			pos++;
	}
	if (host && !e2b_proxy_parse_host(host, host_len, &h->port,
					  h->sandbox))
		return end;
	/* E2B's headers, for hosts that are addresses */
	if (hdr_id && hdr_port && id_len <= E2B_ID_MAX &&
	    !parse_port(hdr_port, port_len, &h->port)) {
		memcpy(h->sandbox, hdr_id, id_len);
		h->sandbox[id_len] = '\0';
		if (e2b_id_valid(h->sandbox))
			return end;
	}
	memset(h, 0, sizeof(*h));
	return e2b_fail(err, "the request names no sandbox: want Host: <port>-<sandboxID>.<domain>");
}
