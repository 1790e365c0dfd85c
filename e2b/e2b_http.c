// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_http.c: routing and authentication of E2B requests, and the error
 * answers both planes share.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect_frame.h"
#include "e2b_audit.h"
#include "e2b_forward.h"
#include "e2b_http.h"
#include "e2b_json.h"

void e2b_response_free(struct e2b_response *r)
{
	free(r->body);
	r->body = NULL;
	if (r->content_type_owned && r->content_type == r->content_type_owned)
		r->content_type = NULL;
	free(r->content_type_owned);
	r->content_type_owned = NULL;
	free(r->next_token);
	r->next_token = NULL;
	if (r->stream)
		r->stream->free(r->stream);
	r->stream = NULL;
}

static void set_body(struct e2b_response *resp, unsigned int status,
		     const char *ct, const char *s, size_t len)
{
	e2b_response_free(resp);
	resp->status = status;
	resp->content_type = ct;
	resp->body = malloc(len + 1);
	if (!resp->body) {
		resp->status = 500;
		resp->content_type = NULL;
		resp->len = 0;
		return;
	}
	memcpy(resp->body, s, len);
	resp->body[len] = '\0';
	resp->len = len;
}

void e2b_reply_json(struct e2b_response *resp, unsigned int status,
		    struct json_object *o)
{
	const char *s;
	size_t len;

	if (!o) {
		set_body(resp, 500, E2B_CT_JSON,
			 "{\"code\":500,\"message\":\"out of memory\"}", 39);
		return;
	}
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	set_body(resp, status, E2B_CT_JSON, s, len);
	json_object_put(o);
}

void e2b_reply_error(struct e2b_response *resp, unsigned int status,
		     const char *fmt, ...)
{
	char msg[E2B_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e2b_reply_json(resp, status, e2b_json_error(status, msg));
}

unsigned int e2b_status_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case ENOENT:
	case ESRCH:
		return 404;
	case EINVAL:
	case ERANGE:
	case E2BIG:
	case ENAMETOOLONG:
		return 400;
	case EEXIST:
	case EBUSY:
		return 409;
	case EACCES:
	case EPERM:
		return 403;
	case EAGAIN:
	case ENOSPC:
	case EMFILE:
	case ENFILE:
		return 429;
	case EOPNOTSUPP:
	case ENOSYS:
		return 501;
	case ENOPKG:
	case ECONNREFUSED:
		return 503;
	case ETIMEDOUT:
		return 504;
	default:
		return 500;
	}
}

static void rpc_error(struct e2b_response *resp, int code, const char *msg)
{
	e2b_reply_json(resp, cf_code_http(code),
		       e2b_json_connect_error(cf_code_name(code), msg));
}

void e2b_reply_rpc_error(struct e2b_response *resp, int code,
			 const char *fmt, ...)
{
	char msg[E2B_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rpc_error(resp, code, msg);
}

void e2b_reply_stream_error(struct e2b_response *resp, int code,
			    const char *fmt, ...)
{
	struct json_object *o;
	char msg[E2B_MSG_MAX];
	const char *s;
	uint8_t *f;
	size_t len, flen;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = e2b_json_end_stream(cf_code_name(code), msg);
	if (!o) {
		rpc_error(resp, CF_INTERNAL, "out of memory");
		return;
	}
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	f = cf_frame(CF_FLAG_END_STREAM, s, len, &flen);
	json_object_put(o);
	if (!f) {
		rpc_error(resp, CF_INTERNAL, "out of memory");
		return;
	}
	e2b_response_free(resp);
	resp->status = 200;
	resp->content_type = E2B_CT_CONNECT_JSON;
	resp->body = (char *)f;
	resp->len = flen;
}

/* --- authentication --- */

/* the name of the API key a request came with, NULL when none is good */
static const char *api_key_name(const struct e2b_api *api,
				const struct e2b_request *req)
{
	const char *key = req->header(req->ctx, "X-API-Key");

	if (key)
		return e2b_keys_find(api->keys, key);
	return e2b_keys_find(api->keys,
			     e2b_bearer(req->header(req->ctx, "Authorization")));
}

static void envd_error(struct e2b_response *resp, bool rpc, unsigned int status,
		       int code, const char *msg)
{
	if (rpc)
		rpc_error(resp, code, msg);
	else
		e2b_reply_error(resp, status, "%s", msg);
}

/*
 * The sandbox @req names, when it carries that sandbox's access token: 0
 * with *@sb filled (e2b_sandbox_free() it), else -errno with the refusal
 * in @resp.  A wrong or missing token answers as an unknown sandbox does:
 * a client without the token cannot tell which ids are live.
 */
static int envd_sandbox(const struct e2b_api *api,
			const struct e2b_request *req, struct e2b_sandbox *sb,
			struct e2b_response *resp, bool rpc)
{
	const struct e2b_backend *b = &api->backend;
	const char *id, *port, *token;
	bool ok;
	int ret;

	memset(sb, 0, sizeof(*sb));
	id = req->header(req->ctx, "E2b-Sandbox-Id");
	if (!id) {
		envd_error(resp, rpc, 400, CF_INVALID_ARGUMENT,
			   "missing E2b-Sandbox-Id header");
		return -EINVAL;
	}
	port = req->header(req->ctx, "E2b-Sandbox-Port");
	if (port && strcmp(port, "49983")) {
		envd_error(resp, rpc, 502, CF_UNAVAILABLE,
			   "nothing listens on that sandbox port");
		return -ECONNREFUSED;
	}
	if (!e2b_id_valid(id)) {
		envd_error(resp, rpc, 502, CF_UNAVAILABLE, "sandbox not found");
		return -ENOENT;
	}
	ret = b->ops->get(b->be, id, sb);
	if (ret) {
		if (ret == -ENOENT)
			envd_error(resp, rpc, 502, CF_UNAVAILABLE,
				   "sandbox not found");
		else
			envd_error(resp, rpc, 500, CF_INTERNAL,
				   "sandbox lookup failed");
		return ret;
	}
	token = req->header(req->ctx, "X-Access-Token");
	ok = !sb->envd_token[0] || e2b_secret_equal(sb->envd_token, token);
	if (!ok) {
		e2b_sandbox_free(sb);
		envd_error(resp, rpc, 502, CF_UNAVAILABLE, "sandbox not found");
		return -ENOENT;
	}
	return 0;
}

int e2b_envd_prepare(const struct e2b_api *api, const struct e2b_request *req,
		     struct e2b_envd_ctx *ec, struct e2b_response *resp,
		     bool rpc)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_sandbox sb;
	bool paused, auto_resume;
	const char *id;
	int ret;

	memset(ec, 0, sizeof(*ec));
	/* a signed URL of a file (uploadUrl, downloadUrl) */
	if (!rpc && !strcmp(req->path, "/files") &&
	    req->query(req->ctx, "signature"))
		return e2b_envd_prepare_signed(api, req, ec, resp);
	ret = envd_sandbox(api, req, &sb, resp, rpc);
	if (ret)
		return ret;
	id = req->header(req->ctx, "E2b-Sandbox-Id");
	paused = sb.paused;
	auto_resume = sb.auto_resume;
	e2b_sandbox_free(&sb);
	/*
	 * A paused sandbox answers 502 as E2B's proxy does (the SDK's
	 * isRunning() is false), unless it resumes on traffic (autoResume)
	 */
	if (paused) {
		char msg[E2B_MSG_MAX] = "";

		ret = auto_resume && b->ops->resume ?
		      b->ops->resume(b->be, id, msg) : -EHOSTDOWN;
		if (ret && ret != -EEXIST) {	/* -EEXIST: resumed meanwhile */
			envd_error(resp, rpc, 502, CF_UNAVAILABLE,
				   ret == -EHOSTDOWN ? "sandbox is paused" :
				   msg[0] ? msg : "sandbox cannot be resumed");
			return ret;
		}
	}
	if (e2b_basic_user(req->header(req->ctx, "Authorization"), ec->user)) {
		envd_error(resp, rpc, 401, CF_UNAUTHENTICATED,
			   "invalid user in the Authorization header");
		return -EACCES;
	}
	strcpy(ec->sandbox, id);
	ec->keepalive_ms = 30000;
	ec->timeout_ms = 0;
	return 0;
}

bool e2b_body_wanted(const struct e2b_api *api, const struct e2b_request *req)
{
	struct e2b_response refusal = { 0 };
	struct e2b_sandbox sb;
	struct e2b_route rt;
	int port;

	if (req->plane == E2B_PLANE_API) {
		if (e2b_route(req->plane, req->method, req->path, &rt))
			return false;	/* 404 or 405, whatever the body */
		return rt.id == E2B_R_API_HEALTH || api_key_name(api, req);
	}
	port = e2b_forward_port(req->header(req->ctx, "E2b-Sandbox-Port"));
	if (port)
		return port > 0;	/* another port's: e2b_forward() checks */
	if (e2b_route(req->plane, req->method, req->path, &rt))
		return false;
	/* a signed URL: a GET has no body, a POST is an upload */
	if (rt.id == E2B_R_ENVD_HEALTH || req->query(req->ctx, "signature"))
		return true;
	if (envd_sandbox(api, req, &sb, &refusal, false)) {
		e2b_response_free(&refusal);
		return false;
	}
	e2b_sandbox_free(&sb);
	return true;
}

/* Streams carry their request in one envelope; unary calls as is. */
static int unwrap(const struct e2b_request *req, struct e2b_envd_ctx *ec,
		  char **owned, struct e2b_response *resp)
{
	struct cf_decoder d;
	uint8_t *msg, flags;
	size_t used, len;
	int ret;

	*owned = NULL;
	cf_decoder_init(&d, E2B_BODY_MAX);
	ret = cf_decode(&d, req->body ? req->body : "", req->body_len, &used);
	if (ret != 1 || used != req->body_len) {
		cf_decoder_free(&d);
		e2b_reply_stream_error(resp, CF_INVALID_ARGUMENT,
				       "malformed request envelope");
		return -EINVAL;
	}
	msg = cf_take(&d, &flags, &len);
	cf_decoder_free(&d);
	if (flags) {
		free(msg);
		e2b_reply_stream_error(resp, CF_INVALID_ARGUMENT,
				       "unexpected envelope flags");
		return -EINVAL;
	}
	*owned = (char *)msg;
	ec->payload = (char *)msg;
	ec->payload_len = len;
	return 0;
}

static int keepalive_ms(const struct e2b_request *req)
{
	const char *s = req->header(req->ctx, "Keepalive-Ping-Interval");
	char *end;
	long v;

	if (!s)
		return 30000;
	v = strtol(s, &end, 10);
	if (*end || v < 1 || v > 3600)
		return 30000;
	return v * 1000;
}

/*
 * Connect-Timeout-Ms: at most 10 digits (the Connect protocol); anything
 * else, or 0, is no deadline.
 */
static unsigned int timeout_ms(const struct e2b_request *req)
{
	const char *s = req->header(req->ctx, "Connect-Timeout-Ms");
	unsigned long long v = 0;
	size_t i;

	if (!s || !s[0] || strlen(s) > 10)
		return 0;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v > UINT_MAX ? UINT_MAX : (unsigned int)v;
}

static void dispatch_envd(const struct e2b_api *api, const struct e2b_route *rt,
			  const struct e2b_request *req,
			  struct e2b_response *resp)
{
	bool rpc = e2b_route_is_rpc(rt->id);
	bool stream = e2b_route_is_stream(rt->id);
	struct e2b_envd_ctx ec;
	char *owned = NULL;

	if (rt->id == E2B_R_ENVD_HEALTH && !req->header(req->ctx, "E2b-Sandbox-Id")) {
		set_body(resp, 204, NULL, "", 0);
		return;
	}
	if (e2b_envd_prepare(api, req, &ec, resp, rpc && !stream)) {
		if (stream) {
			/* streams report errors in their end message */
			int code = resp->status == 401 ? CF_UNAUTHENTICATED :
				   resp->status == 400 ? CF_INVALID_ARGUMENT :
				   CF_UNAVAILABLE;

			e2b_reply_stream_error(resp, code, "%s",
					       code == CF_UNAUTHENTICATED ?
					       "invalid user in the Authorization header" :
					       code == CF_INVALID_ARGUMENT ?
					       "missing E2b-Sandbox-Id header" :
					       "sandbox not found");
		}
		return;
	}
	if (req->body_too_large) {
		if (stream)
			e2b_reply_stream_error(resp, CF_RESOURCE_EXHAUSTED,
					       "request body too large");
		else if (rpc)
			rpc_error(resp, CF_RESOURCE_EXHAUSTED,
				  "request body too large");
		else
			e2b_reply_error(resp, 413, "request body too large");
		return;
	}
	ec.keepalive_ms = keepalive_ms(req);
	ec.timeout_ms = timeout_ms(req);
	if (stream) {
		if (unwrap(req, &ec, &owned, resp))
			return;
	} else {
		ec.payload = req->body;
		ec.payload_len = req->body_len;
	}
	e2b_envd_handle(api, rt, &ec, req, resp);
	free(owned);
}

void e2b_dispatch(const struct e2b_api *api, const struct e2b_request *req,
		  struct e2b_response *resp)
{
	const char *key_name;
	struct e2b_route rt;
	int ret;

	memset(resp, 0, sizeof(*resp));
	if (req->plane == E2B_PLANE_ENVD) {
		int port = e2b_forward_port(req->header(req->ctx, "E2b-Sandbox-Port"));

		if (port < 0) {
			e2b_reply_error(resp, 400, "bad E2b-Sandbox-Port header");
			return;
		}
		if (port) {
			e2b_forward(api, req, port, resp);
			return;
		}
	}
	ret = e2b_route(req->plane, req->method, req->path, &rt);
	if (ret == -EOPNOTSUPP) {
		e2b_reply_error(resp, 405, "method %s not allowed here",
				req->method);
		return;
	}
	if (ret == -EINVAL && req->plane == E2B_PLANE_API) {
		e2b_reply_error(resp, 404, "sandbox not found");
		return;
	}
	if (ret) {
		e2b_reply_error(resp, 404, "no such endpoint");
		return;
	}
	if (req->plane == E2B_PLANE_ENVD) {
		dispatch_envd(api, &rt, req, resp);
		return;
	}
	if (rt.id == E2B_R_API_HEALTH) {
		e2b_control_handle(api, &rt, req, resp);
		return;
	}
	key_name = api_key_name(api, req);
	if (!key_name) {
		e2b_reply_error(resp, 401, "Invalid API key");
		return;
	}
	if (req->body_too_large) {
		e2b_reply_error(resp, 413, "request body too large");
		return;
	}
	e2b_control_handle(api, &rt, req, resp);
	e2b_audit_control(&rt, req, resp, key_name);
}
