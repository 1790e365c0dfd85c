/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_http.h: one HTTP request in, one response out, independent of the
 * HTTP library.
 *
 * e2b_dispatch() routes a request, checks its credentials (API key on the
 * control plane; sandbox id header and envd access token on envd), then
 * hands it to the endpoint's handler (e2b_control.c, e2b_envd.c), which
 * parses the body (e2b_json.c) and calls the backend.  e2b_server.c feeds
 * it from libmicrohttpd.
 */
#ifndef CUBE_E2B_HTTP_H
#define CUBE_E2B_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "e2b_auth.h"
#include "e2b_backend.h"
#include "e2b_route.h"

struct json_object;
struct e2b_proxy_ops;

/* Largest request body read into memory (JSON requests). */
#define E2B_BODY_MAX		(1024 * 1024)

#define E2B_CT_JSON		"application/json"
#define E2B_CT_CONNECT_JSON	"application/connect+json"
#define E2B_CT_OCTET		"application/octet-stream"

/**
 * struct e2b_request - what a handler sees of a request
 * @plane: which server received it
 * @method: "GET", "POST", ...
 * @path: URL path without the query string
 * @header: look up a request header (case-insensitive), NULL if absent
 * @query: look up a query-string argument (decoded), NULL if absent
 * @ctx: argument of @header and @query
 * @body: the body (not NUL-terminated), NULL when empty
 * @body_len: its length
 * @body_too_large: the body was longer than %E2B_BODY_MAX and was dropped
 * @each_header: call @fn for every request header, in order (NULL: not
 *	available); used to pass requests on (e2b_forward.h)
 * @each_query: the same for the query-string arguments (@value NULL for
 *	an argument without '=')
 * @client_fd: the client's socket, watched for its close while an answer
 *	is awaited; -1 when unknown
 */
struct e2b_request {
	enum e2b_plane plane;
	const char *method;
	const char *path;
	const char *(*header)(void *ctx, const char *name);
	const char *(*query)(void *ctx, const char *name);
	void *ctx;
	const char *body;
	size_t body_len;
	bool body_too_large;
	void (*each_header)(void *ctx, void (*fn)(void *arg, const char *name,
						   const char *value),
			    void *arg);
	void (*each_query)(void *ctx, void (*fn)(void *arg, const char *name,
						  const char *value),
			   void *arg);
	int client_fd;
};

/**
 * struct e2b_stream - a response body produced while it is sent
 * @read: fill up to @max bytes; return the count, 0 at the end, -errno to
 *	abort the connection.  May block (each connection has its thread).
 * @free: release it; called once, whether or not it was read to the end
 */
struct e2b_stream {
	ssize_t (*read)(struct e2b_stream *s, void *buf, size_t max);
	void (*free)(struct e2b_stream *s);
};

/**
 * struct e2b_response - a handler's answer
 * @status: HTTP status
 * @content_type: static string, NULL for no body
 * @body: malloc()ed body (freed by e2b_response_free())
 * @len: its length
 * @stream: when not NULL, the body is streamed from it instead
 * @content_type_owned: a malloc()ed content type (@content_type points to
 *	it; freed by e2b_response_free()), for answers passed on from a
 *	sandbox's port
 */
struct e2b_response {
	unsigned int status;
	const char *content_type;
	char *body;
	size_t len;
	struct e2b_stream *stream;
	char *content_type_owned;
	char *next_token;		/* X-Next-Token of a paged list, or NULL */
};

void e2b_response_free(struct e2b_response *r);

/**
 * struct e2b_api - everything the handlers need
 * @keys: accepted API keys (control plane)
 * @backend: the backend
 * @domain: where sandboxes' ports are served, "<port>-<id>.<domain>"
 *	(the port proxy, e2b_proxy.h); NULL: reported as null
 * @ports, @ports_ctx: the sandboxes' network namespaces, for envd-plane
 *	requests naming another port (e2b_forward.h); NULL: such requests
 *	are answered 502
 */
struct e2b_api {
	const struct e2b_keys *keys;
	struct e2b_backend backend;
	const char *domain;
	const struct e2b_proxy_ops *ports;
	void *ports_ctx;
};

/**
 * e2b_dispatch() - answer one request
 *
 * Always fills @resp (errors included) and never changes anything when the
 * request is refused.
 */
void e2b_dispatch(const struct e2b_api *api, const struct e2b_request *req,
		  struct e2b_response *resp);

/* --- helpers for the handlers --- */

/* @resp = status + JSON of @o (consumed); 500 when @o is NULL */
void e2b_reply_json(struct e2b_response *resp, unsigned int status,
		    struct json_object *o);
/* control-plane / envd HTTP error: {"code": status, "message": msg} */
void e2b_reply_error(struct e2b_response *resp, unsigned int status,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the HTTP status for a backend errno, on the control plane */
unsigned int e2b_status_from_errno(int err);

/* Connect unary error: HTTP status of @code, {"code","message"} */
void e2b_reply_rpc_error(struct e2b_response *resp, int code,
			 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Connect stream answered by only its end-of-stream message */
void e2b_reply_stream_error(struct e2b_response *resp, int code,
			    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* handlers, by plane */
void e2b_control_handle(const struct e2b_api *api,
			const struct e2b_route *rt,
			const struct e2b_request *req,
			struct e2b_response *resp);

/**
 * struct e2b_envd_ctx - a routed envd request
 * @sandbox: the target sandbox (E2b-Sandbox-Id)
 * @user: the Linux user (Authorization: Basic), "" for the default
 * @payload: the request message (unwrapped from its envelope for streams)
 * @payload_len: its length
 * @keepalive_ms: interval of keepalive messages on server streams
 * @timeout_ms: the call's deadline (Connect-Timeout-Ms), 0: none
 */
struct e2b_envd_ctx {
	char sandbox[E2B_ID_MAX + 1];
	char user[E2B_USER_MAX + 1];
	const char *payload;
	size_t payload_len;
	int keepalive_ms;
	unsigned int timeout_ms;
};

void e2b_envd_handle(const struct e2b_api *api, const struct e2b_route *rt,
		     const struct e2b_envd_ctx *ec,
		     const struct e2b_request *req, struct e2b_response *resp);

/*
 * Uploads (POST /files) arrive in pieces; e2b_server.c parses multipart
 * bodies and feeds each file through these.
 */
struct e2b_upload;
/* NULL when out of memory */
struct e2b_upload *e2b_upload_begin(const struct e2b_api *api,
				    const struct e2b_envd_ctx *ec);
/*
 * One file: open it at @path, write its bytes, close it (@commit false
 * discards it).  On error each returns -errno and fills @resp with the
 * answer to send; the caller then stops.
 */
int e2b_upload_open(struct e2b_upload *u, const char *path,
		    struct e2b_response *resp);
int e2b_upload_write(struct e2b_upload *u, const void *data, size_t len,
		     struct e2b_response *resp);
int e2b_upload_close(struct e2b_upload *u, bool commit,
		     struct e2b_response *resp);
/*
 * The metadata every file of the upload keeps (the X-Metadata-* headers,
 * checked by the caller): 0, -ENOMEM, or -EOPNOTSUPP when the backend
 * keeps none (@resp filled).
 */
int e2b_upload_set_meta(struct e2b_upload *u, const struct e2b_kvs *meta,
			struct e2b_response *resp);
/* the success answer: every file written (400 when there was none) */
void e2b_upload_reply(struct e2b_upload *u, struct e2b_response *resp);
/* discards a file still open */
void e2b_upload_free(struct e2b_upload *u);

/**
 * e2b_body_wanted() - whether a request's body is worth reading
 *
 * Called once its head has arrived.  False when e2b_dispatch() will refuse
 * it whatever its body says: no good API key, an envd request without the
 * named sandbox's token, no such endpoint.  The server then reads the body
 * and drops it, so a client without a key or token cannot make it hold
 * bodies, and dispatches the request without one for the refusal.
 */
bool e2b_body_wanted(const struct e2b_api *api, const struct e2b_request *req);

/* resolve the envd part of a request: sandbox header, token, user */
int e2b_envd_prepare(const struct e2b_api *api, const struct e2b_request *req,
		     struct e2b_envd_ctx *ec, struct e2b_response *resp,
		     bool rpc);

/*
 * e2b_envd_prepare() for a request to /files carrying a `signature`
 * argument (e2b_auth.h) instead of an access token: the signature (and
 * its expiration) is checked against the sandbox E2b-Sandbox-Id names, or,
 * without one (a signed URL made with E2B_SANDBOX_URL names no sandbox),
 * against every running sandbox's token; the user is the `username`
 * argument.  401 for a signature that does not match or expired, 400 for a
 * malformed expiration.
 */
int e2b_envd_prepare_signed(const struct e2b_api *api,
			    const struct e2b_request *req,
			    struct e2b_envd_ctx *ec, struct e2b_response *resp);

#endif /* CUBE_E2B_HTTP_H */
