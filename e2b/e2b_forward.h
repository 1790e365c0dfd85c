/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_forward.h: envd-plane requests for another sandbox port.
 *
 * With E2B_SANDBOX_URL set the SDKs send every sandbox request to cubed's
 * envd listener and name the port in the E2b-Sandbox-Port header:
 * @e2b/code-interpreter's runCode and contexts go to port 49999 that way.
 * Such a request (any port but envd's 49983) is passed to that port of
 * the sandbox: a TCP connection made in the sandbox's network namespace
 * (e2b_proxy_dial()), the request sent as HTTP/1.0 with its headers (less
 * the hop-by-hop ones) and its body, and the answer's status,
 * Content-Type and body sent back, the body streamed as it comes.
 *
 * Checks as the port proxy makes them: the sandbox must run (502 else, as
 * E2B answers for a sandbox that is gone) and have a network device (502),
 * its traffic access token must come in e2b-traffic-access-token when it
 * has one (403); a port that refuses or does not answer is 502.  The envd
 * access token is not asked for: E2B's ports are reached without it.
 */
#ifndef CUBE_E2B_FORWARD_H
#define CUBE_E2B_FORWARD_H

#include <stdbool.h>
#include <stddef.h>

#include "e2b_http.h"

#define E2B_ENVD_PORT		49983
#define E2B_FORWARD_HEAD_MAX	(16 * 1024)	/* the answer's head */
#define E2B_FORWARD_IDLE_MS	(600 * 1000)	/* no byte from the port */

/**
 * e2b_forward_port() - the port a request names
 *
 * Return: the E2b-Sandbox-Port value (1..65535), 0 when the header is
 * absent or names envd's port (the request is envd's own), -EINVAL when it
 * is not a port number.
 */
int e2b_forward_port(const char *header);

/**
 * struct e2b_forward_hdr - one request header to pass on
 */
struct e2b_forward_hdr {
	const char *name;
	const char *value;
};

/**
 * e2b_forward_head() - the request head sent to the sandbox's port
 * @method, @path: the request's ("/execute")
 * @query: the encoded query string without '?', NULL or "" for none
 * @hdrs, @n: the request's headers; hop-by-hop ones (Connection,
 *	Keep-Alive, Transfer-Encoding, TE, Trailer, Upgrade,
 *	Proxy-Connection, Content-Length, Expect) are left out
 * @body_len: the body's length, sent as Content-Length
 * @len: set to the head's length
 *
 * Return: the malloc()ed head, ending with its empty line; NULL with
 * errno EINVAL when the method, path or a header could not be sent as
 * given (a control character, a space in the path), ENOMEM.
 */
char *e2b_forward_head(const char *method, const char *path,
		       const char *query, const struct e2b_forward_hdr *hdrs,
		       size_t n, size_t body_len, size_t *len);

/**
 * struct e2b_forward_reply - what passes on of the answer's head
 * @status: its status code (100..599)
 * @content_type: its Content-Type, "" when it had none
 * @content_length: its Content-Length, -1 when it had none (the body
 *	lasts until the connection closes)
 * @chunked: Transfer-Encoding: chunked (not expected from HTTP/1.0)
 */
struct e2b_forward_reply {
	unsigned int status;
	char content_type[256];
	long long content_length;
	bool chunked;
};

/**
 * e2b_forward_parse_reply() - the answer's head in @buf (@len bytes so far)
 *
 * Return: the head's length (through its empty line) with @r filled;
 * -EAGAIN when the head is not complete yet; -E2BIG when it is longer than
 * E2B_FORWARD_HEAD_MAX; -EINVAL when it is not an HTTP/1.x answer.
 */
int e2b_forward_parse_reply(const char *buf, size_t len,
			    struct e2b_forward_reply *r);

/**
 * e2b_forward() - pass @req to port @port of its sandbox, fill @resp
 *
 * Blocks until the answer's head came (or the client went away); the body
 * is then read by @resp's stream while it is sent.
 */
void e2b_forward(const struct e2b_api *api, const struct e2b_request *req,
		 int port, struct e2b_response *resp);

#endif /* CUBE_E2B_FORWARD_H */
