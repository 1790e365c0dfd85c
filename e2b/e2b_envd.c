// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_envd.c: envd, the API inside one sandbox: processes (Connect RPC,
 * server streams), filesystem calls, file download and upload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect_frame.h"
#include "e2b_http.h"
#include "e2b_json.h"

/*
 * envd's default user, as E2B's: who a request naming no user (no
 * Authorization: Basic, no username) runs commands and writes files as.
 * root only when asked for.
 */
#define ENVD_DEFAULT_USER	"user"

static const char *envd_user(const char *user)
{
	return user && user[0] ? user : ENVD_DEFAULT_USER;
}

/* a relative path is the user's home's ("~", "~/...", "." and "./..." too) */
static char *home_path(const char *path, const char *user)
{
	char *s;

	if (path[0] == '/')
		return strdup(path);
	if ((path[0] == '~' || path[0] == '.') && (!path[1] || path[1] == '/'))
		path += path[1] ? 2 : 1;
	if (!strcmp(user, "root"))
		return asprintf(&s, "/root%s%s", path[0] ? "/" : "", path) < 0 ?
		       NULL : s;
	return asprintf(&s, "/home/%s%s%s", user, path[0] ? "/" : "", path) < 0 ?
	       NULL : s;
}

/*
 * -ESRCH from the agent: the sandbox has no such user.  envd refuses that
 * as unauthenticated (401), naming the user.
 */
static void no_user_msg(char *msg, const char *given)
{
	if (given && given[0])
		snprintf(msg, E2B_MSG_MAX,
			 "invalid username: '%s': the sandbox has no such user",
			 given);
	else
		snprintf(msg, E2B_MSG_MAX,
			 "invalid default user: '%s': the sandbox has no such user (its template's root file system has no account '%s')",
			 ENVD_DEFAULT_USER, ENVD_DEFAULT_USER);
}

/* --- answers --- */

static void rpc_ok(struct e2b_response *resp, struct json_object *o)
{
	e2b_reply_json(resp, 200, o);
}

static void rpc_fail(struct e2b_response *resp, int err, const char *msg,
		     const char *what)
{
	int code = cf_code_from_errno(err);

	if (msg && msg[0])
		e2b_reply_rpc_error(resp, code, "%s", msg);
	else
		e2b_reply_rpc_error(resp, code, "%s: %s", what,
				    strerror(err < 0 ? -err : err));
}

static unsigned int file_status(int err)
{
	switch (err < 0 ? -err : err) {
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ENAMETOOLONG:
		return 400;
	case ENOSPC:
	case EDQUOT:
		return 507;
	case ESRCH:
		return 401;		/* no such user */
	default:
		return e2b_status_from_errno(err);
	}
}

static void file_fail(struct e2b_response *resp, int err, const char *msg,
		      const char *path)
{
	if (msg && msg[0])
		e2b_reply_error(resp, file_status(err), "%s", msg);
	else if (err == -ENOENT)
		e2b_reply_error(resp, 404, "path '%s' does not exist", path);
	else if (err == -EISDIR)
		e2b_reply_error(resp, 400, "path '%s' is a directory", path);
	else
		e2b_reply_error(resp, file_status(err), "'%s': %s", path,
				strerror(err < 0 ? -err : err));
}

/* --- process streams --- */

/*
 * struct frames - what a server stream has framed and not yet sent: one
 * Connect frame at a time, @pend[@poff..@plen), then more from a callback
 * until @ended.
 */
struct frames {
	uint8_t *pend;
	size_t plen, poff;
	bool ended;
};

/* Frame JSON object @o (consumed) as the next thing to send. */
static int frames_queue(struct frames *f, uint8_t flags, struct json_object *o)
{
	const char *s;
	size_t len;

	if (!o)
		return -ENOMEM;
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	free(f->pend);
	f->pend = cf_frame(flags, s, len, &f->plen);
	f->poff = 0;
	json_object_put(o);
	return f->pend ? 0 : -ENOMEM;
}

/* Up to @max bytes of the stream; next(@arg) frames more when all is sent. */
static ssize_t frames_read(struct frames *f, void *buf, size_t max,
			   int (*next)(void *arg), void *arg)
{
	size_t n;
	int ret;

	while (f->poff >= f->plen) {
		if (f->ended)
			return 0;
		ret = next(arg);
		if (ret)
			return ret;
	}
	n = f->plen - f->poff;
	if (n > max)
		n = max;
	memcpy(buf, f->pend + f->poff, n);
	f->poff += n;
	return n;
}

struct proc_stream {
	struct e2b_stream s;
	const struct e2b_backend_ops *ops;
	struct e2b_proc *p;
	int keepalive_ms;
	struct frames f;
};

static int queue_json(struct proc_stream *ps, uint8_t flags,
		      struct json_object *o)
{
	return frames_queue(&ps->f, flags, o);
}

static int next_frame(struct proc_stream *ps)
{
	struct e2b_event ev;
	int ret;

	ret = ps->ops->proc_next(ps->p, &ev, ps->keepalive_ms);
	if (!ret)
		return queue_json(ps, 0, e2b_json_proc_event(&ev));
	if (ret == -ETIMEDOUT)
		return queue_json(ps, 0, e2b_json_keepalive());
	ps->f.ended = true;
	if (ret == -EPIPE)
		return queue_json(ps, CF_FLAG_END_STREAM,
				  e2b_json_end_stream(NULL, NULL));
	return queue_json(ps, CF_FLAG_END_STREAM,
			  e2b_json_end_stream(cf_code_name(CF_UNAVAILABLE),
					      "the process stream broke"));
}

static int proc_next_frame(void *arg)
{
	return next_frame(arg);
}

static ssize_t proc_stream_read(struct e2b_stream *s, void *buf, size_t max)
{
	struct proc_stream *ps = (struct proc_stream *)s;

	return frames_read(&ps->f, buf, max, proc_next_frame, ps);
}

static void proc_stream_free(struct e2b_stream *s)
{
	struct proc_stream *ps = (struct proc_stream *)s;

	ps->ops->proc_close(ps->p);
	free(ps->f.pend);
	free(ps);
}

static void reply_proc_stream(const struct e2b_api *api,
			      const struct e2b_envd_ctx *ec,
			      struct e2b_proc *p, struct e2b_response *resp)
{
	struct proc_stream *ps = calloc(1, sizeof(*ps));

	if (!ps) {
		api->backend.ops->proc_close(p);
		e2b_reply_stream_error(resp, CF_RESOURCE_EXHAUSTED,
				       "out of memory");
		return;
	}
	ps->s.read = proc_stream_read;
	ps->s.free = proc_stream_free;
	ps->ops = api->backend.ops;
	ps->p = p;
	ps->keepalive_ms = ec->keepalive_ms;
	e2b_response_free(resp);
	resp->status = 200;
	resp->content_type = E2B_CT_CONNECT_JSON;
	resp->stream = &ps->s;
}

static void do_start(const struct e2b_api *api, const struct e2b_envd_ctx *ec,
		     struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_start st;
	struct e2b_proc *p;
	int ret;

	if (e2b_parse_start(ec->payload, ec->payload_len, &st, msg)) {
		e2b_reply_stream_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	snprintf(st.user, sizeof(st.user), "%s", envd_user(ec->user));
	if (st.proc.cwd && st.proc.cwd[0] != '/') {
		char *abs = home_path(st.proc.cwd, st.user);

		if (!abs) {
			e2b_start_free(&st);
			e2b_reply_stream_error(resp, CF_RESOURCE_EXHAUSTED,
					       "out of memory");
			return;
		}
		free(st.proc.cwd);
		st.proc.cwd = abs;
	}
	/* as envd: the call's deadline ends the command too */
	st.timeout_ms = ec->timeout_ms;
	ret = b->ops->proc_start(b->be, ec->sandbox, &st, &p, msg);
	e2b_start_free(&st);
	if (ret == -ESRCH) {
		no_user_msg(msg, ec->user);
		e2b_reply_stream_error(resp, CF_UNAUTHENTICATED, "%s", msg);
		return;
	}
	if (ret) {
		e2b_reply_stream_error(resp, cf_code_from_errno(ret), "%s",
				       msg[0] ? msg : strerror(-ret));
		return;
	}
	reply_proc_stream(api, ec, p, resp);
}

static void do_connect(const struct e2b_api *api,
		       const struct e2b_envd_ctx *ec,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_selector sel;
	struct e2b_proc *p;
	int ret;

	if (e2b_parse_selector_req(ec->payload, ec->payload_len, &sel, msg)) {
		e2b_reply_stream_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	ret = b->ops->proc_connect(b->be, ec->sandbox, &sel, &p);
	e2b_selector_free(&sel);
	if (ret) {
		e2b_reply_stream_error(resp, cf_code_from_errno(ret),
				       ret == -ENOENT ? "process not found" :
				       "cannot connect to the process");
		return;
	}
	reply_proc_stream(api, ec, p, resp);
}

static void do_proc_list(const struct e2b_api *api,
			 const struct e2b_envd_ctx *ec,
			 struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_proc_info *pi = NULL;
	struct json_object *o;
	size_t n = 0;
	int ret;

	/* ListRequest has no fields, but the body must still be JSON */
	o = e2b_json_parse(ec->payload, ec->payload_len, NULL);
	if (!o) {
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT,
				    "malformed ListRequest");
		return;
	}
	json_object_put(o);
	ret = b->ops->proc_list(b->be, ec->sandbox, &pi, &n);
	if (ret) {
		rpc_fail(resp, ret, NULL, "list");
		return;
	}
	rpc_ok(resp, e2b_json_proc_list(pi, n));
	e2b_proc_info_free(pi, n);
}

static void do_signal(const struct e2b_api *api, const struct e2b_envd_ctx *ec,
		      struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_selector sel;
	int sig, ret;

	if (e2b_parse_signal(ec->payload, ec->payload_len, &sel, &sig, msg)) {
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	ret = b->ops->proc_signal(b->be, ec->sandbox, &sel, sig);
	e2b_selector_free(&sel);
	if (ret)
		rpc_fail(resp, ret, ret == -ENOENT ? "process not found" : NULL,
			 "signal");
	else
		rpc_ok(resp, json_object_new_object());
}

static void do_input(const struct e2b_api *api, const struct e2b_envd_ctx *ec,
		     struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_selector sel;
	unsigned char *data;
	size_t len;
	bool pty;
	int ret;

	if (e2b_parse_input(ec->payload, ec->payload_len, &sel, &data, &len,
			    &pty, msg)) {
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	ret = b->ops->proc_input(b->be, ec->sandbox, &sel, data, len);
	e2b_selector_free(&sel);
	free(data);
	if (ret)
		rpc_fail(resp, ret, ret == -ENOENT ? "process not found" : NULL,
			 "input");
	else
		rpc_ok(resp, json_object_new_object());
}

static void do_close_stdin(const struct e2b_api *api,
			   const struct e2b_envd_ctx *ec,
			   struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_selector sel;
	int ret;

	if (e2b_parse_selector_req(ec->payload, ec->payload_len, &sel, msg)) {
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	ret = b->ops->proc_close_stdin(b->be, ec->sandbox, &sel);
	e2b_selector_free(&sel);
	if (ret)
		rpc_fail(resp, ret, ret == -ENOENT ? "process not found" : NULL,
			 "close stdin");
	else
		rpc_ok(resp, json_object_new_object());
}

/* UpdateRequest: {"process": selector, "pty": {"size": {cols, rows}}} */
static int parse_update(const struct e2b_envd_ctx *ec, unsigned int *cols,
			unsigned int *rows, char *msg)
{
	struct json_object *o, *pty, *size, *v;
	const char *names[2] = { "cols", "rows" };
	unsigned int *dst[2] = { cols, rows };
	int64_t x;
	int i, ret = 0;

	o = e2b_json_parse(ec->payload, ec->payload_len, msg);
	if (!o)
		return -EINVAL;
	if (!json_object_object_get_ex(o, "pty", &pty) ||
	    !json_object_is_type(pty, json_type_object) ||
	    !json_object_object_get_ex(pty, "size", &size) ||
	    !json_object_is_type(size, json_type_object)) {
		snprintf(msg, E2B_MSG_MAX, "'pty.size' is required");
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < 2; i++) {
		if (!json_object_object_get_ex(size, names[i], &v) ||
		    !json_object_is_type(v, json_type_int)) {
			snprintf(msg, E2B_MSG_MAX,
				 "'pty.size.%s' must be an integer", names[i]);
			ret = -EINVAL;
			goto out;
		}
		x = json_object_get_int64(v);
		if (x < 1 || x > 4096) {
			snprintf(msg, E2B_MSG_MAX,
				 "'pty.size.%s' must be 1..4096", names[i]);
			ret = -EINVAL;
			goto out;
		}
		*dst[i] = x;
	}
out:
	json_object_put(o);
	return ret;
}

static void do_update(const struct e2b_api *api, const struct e2b_envd_ctx *ec,
		      struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_selector sel;
	unsigned int cols = 0, rows = 0;
	int ret;

	if (e2b_parse_selector_req(ec->payload, ec->payload_len, &sel, msg)) {
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	if (parse_update(ec, &cols, &rows, msg)) {
		e2b_selector_free(&sel);
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	ret = b->ops->proc_update ?
	      b->ops->proc_update(b->be, ec->sandbox, &sel, cols, rows) :
	      -EOPNOTSUPP;
	e2b_selector_free(&sel);
	if (ret == -EINVAL)
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT,
				    "the process has no pty");
	else if (ret)
		rpc_fail(resp, ret, ret == -ENOENT ? "process not found" : NULL,
			 "update");
	else
		rpc_ok(resp, json_object_new_object());
}

/* --- filesystem.Filesystem --- */

/* EntryInfo.metadata, when the entry has any (and upload answers') */
static void add_metadata(struct json_object *o, const struct e2b_kvs *meta)
{
	struct json_object *m;
	size_t i;

	if (!o || !meta->n)
		return;
	m = json_object_new_object();
	for (i = 0; m && i < meta->n; i++)
		json_object_object_add(m, meta->v[i].key,
				       json_object_new_string(meta->v[i].value));
	json_object_object_add(o, "metadata", m);
}

static struct json_object *entry_resp_meta(const struct e2b_entry *e)
{
	struct json_object *o = e2b_json_entry_resp(e), *inner;

	if (o && json_object_object_get_ex(o, "entry", &inner))
		add_metadata(inner, &e->metadata);
	return o;
}

static struct json_object *entries_meta(const struct e2b_entry *e, size_t n)
{
	struct json_object *o = e2b_json_entries(e, n), *arr;
	size_t i;

	if (o && json_object_object_get_ex(o, "entries", &arr))
		for (i = 0; i < n; i++)
			add_metadata(json_object_array_get_idx(arr, i),
				     &e[i].metadata);
	return o;
}

static void do_fs(const struct e2b_api *api, const struct e2b_route *rt,
		  const struct e2b_envd_ctx *ec, struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	const char *user = envd_user(ec->user);
	char msg[E2B_MSG_MAX] = "", *path = NULL, *to = NULL;
	struct e2b_entry e = { 0 }, *list = NULL;
	unsigned int depth = 1;
	size_t n = 0;
	int ret;

	switch (rt->id) {
	case E2B_R_FS_LIST_DIR:
		ret = e2b_parse_list_dir(ec->payload, ec->payload_len, &path,
					 &depth, msg);
		break;
	case E2B_R_FS_MOVE:
		ret = e2b_parse_move(ec->payload, ec->payload_len, &path, &to,
				     msg);
		break;
	default:
		ret = e2b_parse_path(ec->payload, ec->payload_len, &path, msg);
		break;
	}
	if (ret) {
		e2b_reply_rpc_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	switch (rt->id) {
	case E2B_R_FS_STAT:
		ret = b->ops->fs_stat(b->be, ec->sandbox, user, path, &e, msg);
		if (!ret)
			rpc_ok(resp, entry_resp_meta(&e));
		break;
	case E2B_R_FS_LIST_DIR:
		ret = b->ops->fs_list(b->be, ec->sandbox, user, path, depth,
				      &list, &n, msg);
		if (!ret)
			rpc_ok(resp, entries_meta(list, n));
		break;
	case E2B_R_FS_MAKE_DIR:
		ret = b->ops->fs_mkdir(b->be, ec->sandbox, user, path, &e,
				       msg);
		if (!ret)
			rpc_ok(resp, entry_resp_meta(&e));
		break;
	case E2B_R_FS_MOVE:
		ret = b->ops->fs_move(b->be, ec->sandbox, user, path, to, &e,
				      msg);
		if (!ret)
			rpc_ok(resp, entry_resp_meta(&e));
		break;
	case E2B_R_FS_REMOVE:
		ret = b->ops->fs_remove(b->be, ec->sandbox, user, path, msg);
		if (!ret)
			rpc_ok(resp, json_object_new_object());
		break;
	default:
		ret = -EOPNOTSUPP;
		break;
	}
	if (ret == -ESRCH) {
		no_user_msg(msg, ec->user);
		e2b_reply_rpc_error(resp, CF_UNAUTHENTICATED, "%s", msg);
	} else if (ret) {
		if (ret == -EEXIST && !msg[0])
			e2b_reply_rpc_error(resp, CF_ALREADY_EXISTS,
					    "'%s' already exists", path);
		else if (ret == -ENOENT && !msg[0])
			e2b_reply_rpc_error(resp, CF_NOT_FOUND,
					    "'%s' does not exist", path);
		else
			rpc_fail(resp, ret, msg, path);
	}
	e2b_entry_free(&e, 1);
	e2b_entry_free(list, n);
	free(list);
	free(path);
	free(to);
}

/* --- filesystem.WatchDir --- */

struct watch_stream {
	struct e2b_stream s;
	const struct e2b_backend_ops *ops;
	struct e2b_watch *w;
	int keepalive_ms;
	bool started;
	struct frames f;
};

static const char *const fs_event_names[] = {
	[E2B_FS_CREATE] = "EVENT_TYPE_CREATE",
	[E2B_FS_WRITE] = "EVENT_TYPE_WRITE",
	[E2B_FS_REMOVE] = "EVENT_TYPE_REMOVE",
	[E2B_FS_RENAME] = "EVENT_TYPE_RENAME",
	[E2B_FS_CHMOD] = "EVENT_TYPE_CHMOD",
};

/* {"<key>": {}} or {"filesystem": {"name", "type"}} */
static struct json_object *watch_msg(const char *key,
				     const struct e2b_fs_event *ev)
{
	struct json_object *top = json_object_new_object();
	struct json_object *inner = json_object_new_object();

	if (!top || !inner) {
		json_object_put(top);
		json_object_put(inner);
		return NULL;
	}
	if (ev) {
		json_object_object_add(inner, "name",
				       json_object_new_string(ev->name));
		json_object_object_add(inner, "type",
				       json_object_new_string(fs_event_names[ev->type]));
	}
	json_object_object_add(top, key, inner);
	return top;
}

static int watch_queue(struct watch_stream *ws, uint8_t flags,
		       struct json_object *o)
{
	return frames_queue(&ws->f, flags, o);
}

static int watch_next_frame(struct watch_stream *ws)
{
	struct e2b_fs_event ev;
	int ret;

	if (!ws->started) {
		ws->started = true;
		return watch_queue(ws, 0, watch_msg("start", NULL));
	}
	ret = ws->ops->watch_next(ws->w, &ev, ws->keepalive_ms);
	if (!ret && ev.type >= E2B_FS_CREATE && ev.type <= E2B_FS_CHMOD)
		return watch_queue(ws, 0, watch_msg("filesystem", &ev));
	if (!ret || ret == -ETIMEDOUT)
		return watch_queue(ws, 0, watch_msg("keepalive", NULL));
	ws->f.ended = true;
	return watch_queue(ws, CF_FLAG_END_STREAM,
			   e2b_json_end_stream(cf_code_name(ret == -ENOENT ?
							    CF_NOT_FOUND :
							    CF_UNAVAILABLE),
					       ret == -ENOENT ?
					       "the watched directory is gone" :
					       "the watch broke"));
}

static int watch_frame_cb(void *arg)
{
	return watch_next_frame(arg);
}

static ssize_t watch_stream_read(struct e2b_stream *s, void *buf, size_t max)
{
	struct watch_stream *ws = (struct watch_stream *)s;

	return frames_read(&ws->f, buf, max, watch_frame_cb, ws);
}

static void watch_stream_free(struct e2b_stream *s)
{
	struct watch_stream *ws = (struct watch_stream *)s;

	ws->ops->watch_close(ws->w);
	free(ws->f.pend);
	free(ws);
}

static void do_watch_dir(const struct e2b_api *api,
			 const struct e2b_envd_ctx *ec,
			 struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "", *path = NULL, *abs;
	struct watch_stream *ws;
	struct e2b_watch *w;
	bool recursive;
	int ret;

	if (!b->ops->watch_start) {
		e2b_reply_stream_error(resp, CF_UNIMPLEMENTED,
				       "directory watching is not supported");
		return;
	}
	if (e2b_parse_watch(ec->payload, ec->payload_len, &path, &recursive,
			    msg)) {
		e2b_reply_stream_error(resp, CF_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	abs = home_path(path, envd_user(ec->user));
	if (!abs) {
		free(path);
		e2b_reply_stream_error(resp, CF_RESOURCE_EXHAUSTED,
				       "out of memory");
		return;
	}
	if (recursive && !b->ops->watch_start_recursive) {
		snprintf(msg, sizeof(msg), "recursive watching is not supported");
		ret = -EOPNOTSUPP;
	}
	else if (recursive)
		ret = b->ops->watch_start_recursive(b->be, ec->sandbox,
						    envd_user(ec->user), abs,
						    &w, msg);
	else
		ret = b->ops->watch_start(b->be, ec->sandbox,
					  envd_user(ec->user), abs, &w, msg);
	if (ret) {
		if (ret == -ENOENT && !msg[0])
			snprintf(msg, sizeof(msg), "'%s' does not exist", path);
		e2b_reply_stream_error(resp, cf_code_from_errno(ret), "%s",
				       msg[0] ? msg : strerror(-ret));
		goto out;
	}
	ws = calloc(1, sizeof(*ws));
	if (!ws) {
		b->ops->watch_close(w);
		e2b_reply_stream_error(resp, CF_RESOURCE_EXHAUSTED,
				       "out of memory");
		goto out;
	}
	ws->s.read = watch_stream_read;
	ws->s.free = watch_stream_free;
	ws->ops = b->ops;
	ws->w = w;
	ws->keepalive_ms = ec->keepalive_ms;
	e2b_response_free(resp);
	resp->status = 200;
	resp->content_type = E2B_CT_CONNECT_JSON;
	resp->stream = &ws->s;
out:
	free(path);
	free(abs);
}

/* --- GET /files --- */

struct file_stream {
	struct e2b_stream s;
	const struct e2b_backend_ops *ops;
	struct e2b_file *f;
};

static ssize_t file_stream_read(struct e2b_stream *s, void *buf, size_t max)
{
	struct file_stream *fs = (struct file_stream *)s;

	return fs->ops->file_read_chunk(fs->f, buf, max);
}

static void file_stream_free(struct e2b_stream *s)
{
	struct file_stream *fs = (struct file_stream *)s;

	fs->ops->file_close(fs->f, false, NULL, NULL);
	free(fs);
}

/* the username of the query, else the Authorization's; "" for none */
static const char *file_user(const struct e2b_request *req,
			     const struct e2b_envd_ctx *ec)
{
	const char *u = req->query(req->ctx, "username");

	return u && u[0] ? u : ec->user;
}

static void do_download(const struct e2b_api *api,
			const struct e2b_envd_ctx *ec,
			const struct e2b_request *req,
			struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	const char *path = req->query(req->ctx, "path");
	const char *user = file_user(req, ec);
	char msg[E2B_MSG_MAX] = "";
	struct file_stream *fs;
	struct e2b_file *f;
	int64_t size = -1;
	int ret;

	if (!e2b_path_valid(path)) {
		e2b_reply_error(resp, 400, "a valid 'path' is required");
		return;
	}
	if (user[0] && !e2b_user_valid(user)) {
		e2b_reply_error(resp, 401, "invalid user");
		return;
	}
	ret = b->ops->file_read(b->be, ec->sandbox, envd_user(user), path, &f,
				&size, msg);
	if (ret) {
		file_fail(resp, ret, msg, path);
		return;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		b->ops->file_close(f, false, NULL, NULL);
		e2b_reply_error(resp, 500, "out of memory");
		return;
	}
	fs->s.read = file_stream_read;
	fs->s.free = file_stream_free;
	fs->ops = b->ops;
	fs->f = f;
	e2b_response_free(resp);
	resp->status = 200;
	resp->content_type = E2B_CT_OCTET;
	resp->stream = &fs->s;
	resp->len = size >= 0 ? (size_t)size : (size_t)-1;
}

/* --- POST /files --- */

struct e2b_upload {
	const struct e2b_api *api;
	struct e2b_envd_ctx ec;
	struct e2b_kvs meta;		/* every file's metadata */
	struct e2b_file *cur;
	char *cur_path;
	struct e2b_entry *entries;
	size_t n;
};

struct e2b_upload *e2b_upload_begin(const struct e2b_api *api,
				    const struct e2b_envd_ctx *ec)
{
	struct e2b_upload *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->api = api;
	u->ec = *ec;
	u->ec.payload = NULL;
	u->ec.payload_len = 0;
	return u;
}

int e2b_upload_open(struct e2b_upload *u, const char *path,
		    struct e2b_response *resp)
{
	const struct e2b_backend *b = &u->api->backend;
	char msg[E2B_MSG_MAX] = "";
	int ret;

	if (u->cur)
		return -EBUSY;
	if (!e2b_path_valid(path)) {
		e2b_reply_error(resp, 400, "a valid file path is required");
		return -EINVAL;
	}
	u->cur_path = strdup(path);
	if (!u->cur_path) {
		e2b_reply_error(resp, 500, "out of memory");
		return -ENOMEM;
	}
	if (u->meta.n)
		ret = b->ops->file_write_meta(b->be, u->ec.sandbox,
					      envd_user(u->ec.user), path,
					      &u->meta, &u->cur, msg);
	else
		ret = b->ops->file_write(b->be, u->ec.sandbox,
					 envd_user(u->ec.user), path, &u->cur,
					 msg);
	if (ret) {
		file_fail(resp, ret, msg, path);
		free(u->cur_path);
		u->cur_path = NULL;
		u->cur = NULL;
	}
	return ret;
}

int e2b_upload_write(struct e2b_upload *u, const void *data, size_t len,
		     struct e2b_response *resp)
{
	const struct e2b_backend *b = &u->api->backend;
	int ret;

	if (!u->cur)
		return -EBADF;
	ret = b->ops->file_write_chunk(u->cur, data, len);
	if (ret)
		file_fail(resp, ret, NULL, u->cur_path);
	return ret;
}

int e2b_upload_close(struct e2b_upload *u, bool commit,
		     struct e2b_response *resp)
{
	const struct e2b_backend *b = &u->api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_entry e = { 0 }, *ne;
	int ret;

	if (!u->cur)
		return commit ? -EBADF : 0;
	ret = b->ops->file_close(u->cur, commit, &e, msg);
	u->cur = NULL;
	if (ret == -ESRCH)
		snprintf(msg, sizeof(msg),
			 "error looking up user '%s': the sandbox has no such user",
			 envd_user(u->ec.user));
	if (commit && !ret) {
		ne = realloc(u->entries, (u->n + 1) * sizeof(*ne));
		if (!ne) {
			e2b_entry_free(&e, 1);
			ret = -ENOMEM;
		} else {
			u->entries = ne;
			u->entries[u->n++] = e;
		}
	}
	if (ret && commit && resp)
		file_fail(resp, ret, msg, u->cur_path);
	free(u->cur_path);
	u->cur_path = NULL;
	return ret;
}

int e2b_upload_set_meta(struct e2b_upload *u, const struct e2b_kvs *meta,
			struct e2b_response *resp)
{
	if (!meta->n)
		return 0;
	if (!u->api->backend.ops->file_write_meta) {
		e2b_reply_error(resp, 501, "file metadata is not supported here");
		return -EOPNOTSUPP;
	}
	if (e2b_kvs_copy(&u->meta, meta)) {
		e2b_reply_error(resp, 500, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void e2b_upload_reply(struct e2b_upload *u, struct e2b_response *resp)
{
	struct json_object *arr;
	size_t i;

	if (!u->n) {
		e2b_reply_error(resp, 400, "no file in the request");
		return;
	}
	arr = e2b_json_upload(u->entries, u->n);
	for (i = 0; arr && i < u->n; i++)
		add_metadata(json_object_array_get_idx(arr, i),
			     &u->entries[i].metadata);
	e2b_reply_json(resp, 200, arr);
}

void e2b_upload_free(struct e2b_upload *u)
{
	if (!u)
		return;
	e2b_upload_close(u, false, NULL);
	e2b_kvs_free(&u->meta);
	e2b_entry_free(u->entries, u->n);
	free(u->entries);
	free(u);
}

/* --- signed file URLs (uploadUrl, downloadUrl) --- */

static int sig_error(struct e2b_response *resp, unsigned int status,
		     int err, const char *msg)
{
	e2b_reply_error(resp, status, "%s", msg);
	return err;
}

/* whether @sig is what @token makes of the request */
static bool sig_matches(const char *sig, const char *path, const char *op,
			const char *user, const char *token,
			const char *expiration)
{
	char want[E2B_SIG_LEN];
	bool ok;

	if (!token[0] ||
	    e2b_file_signature(path, op, user, token, expiration, want))
		return false;
	ok = e2b_secret_equal(want, sig);
	explicit_bzero(want, sizeof(want));
	return ok;
}

int e2b_envd_prepare_signed(const struct e2b_api *api,
			    const struct e2b_request *req,
			    struct e2b_envd_ctx *ec, struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	const char *sig = req->query(req->ctx, "signature");
	const char *exp = req->query(req->ctx, "signature_expiration");
	const char *path = req->query(req->ctx, "path");
	const char *user = req->query(req->ctx, "username");
	const char *id = req->header(req->ctx, "E2b-Sandbox-Id");
	const char *op = !strcmp(req->method, "GET") ? "read" :
			 !strcmp(req->method, "POST") ? "write" : NULL;
	struct e2b_sandbox *v = NULL, one = { 0 };
	char found[E2B_ID_MAX + 1] = "";
	size_t n = 0, i;
	long long t = 0;
	int ret;

	memset(ec, 0, sizeof(*ec));
	path = path ? path : "";
	user = user ? user : "";
	if (!op)
		return sig_error(resp, 405, -EINVAL,
				 "a signature is for GET or POST /files");
	if (!sig || strncmp(sig, "v1_", 3) || strlen(sig) != E2B_SIG_LEN - 1)
		return sig_error(resp, 401, -EACCES, "invalid signature");
	if (exp) {
		size_t k;

		for (k = 0; exp[k] && k < 13; k++) {
			if (exp[k] < '0' || exp[k] > '9')
				break;
			t = t * 10 + (exp[k] - '0');
		}
		if (!k || exp[k])
			return sig_error(resp, 400, -EINVAL,
					 "signature_expiration must be a Unix time in seconds");
	}
	if (user[0] && !e2b_user_valid(user))
		return sig_error(resp, 401, -EACCES, "invalid user");
	if (id) {
		/* the sandbox is named: its token alone */
		if (!e2b_id_valid(id) || b->ops->get(b->be, id, &one))
			return sig_error(resp, 502, -ENOENT, "sandbox not found");
		if (sig_matches(sig, path, op, user, one.envd_token, exp))
			snprintf(found, sizeof(found), "%s", one.id);
		e2b_sandbox_free(&one);
		/* as an unknown sandbox: no telling which ids are live */
		if (!found[0])
			return sig_error(resp, 502, -ENOENT,
					 "sandbox not found");
	} else {
		ret = b->ops->list(b->be, &v, &n);
		if (ret)
			return sig_error(resp, 500, ret, "sandbox lookup failed");
		for (i = 0; i < n; i++) {
			if (!found[0] && !v[i].paused &&
			    sig_matches(sig, path, op, user, v[i].envd_token, exp))
				snprintf(found, sizeof(found), "%s", v[i].id);
			e2b_sandbox_free(&v[i]);
		}
		free(v);
	}
	if (!found[0])
		return sig_error(resp, 401, -EACCES, "invalid signature");
	/* checked after the signature: it is signed with it */
	if (exp && t < (long long)time(NULL))
		return sig_error(resp, 401, -EACCES, "the signature expired");
	strcpy(ec->sandbox, found);
	strcpy(ec->user, user);
	ec->keepalive_ms = 30000;
	return 0;
}

/* --- dispatch --- */

void e2b_envd_handle(const struct e2b_api *api, const struct e2b_route *rt,
		     const struct e2b_envd_ctx *ec,
		     const struct e2b_request *req, struct e2b_response *resp)
{
	switch (rt->id) {
	case E2B_R_ENVD_HEALTH:
		e2b_response_free(resp);
		resp->status = 204;
		break;
	case E2B_R_FILES_GET:
		do_download(api, ec, req, resp);
		break;
	case E2B_R_FILES_POST:
		/* bodies are streamed by e2b_server.c, never buffered here */
		e2b_reply_error(resp, 400, "unsupported upload encoding");
		break;
	case E2B_R_PROC_START:
		do_start(api, ec, resp);
		break;
	case E2B_R_PROC_CONNECT:
		do_connect(api, ec, resp);
		break;
	case E2B_R_PROC_LIST:
		do_proc_list(api, ec, resp);
		break;
	case E2B_R_PROC_SEND_SIGNAL:
		do_signal(api, ec, resp);
		break;
	case E2B_R_PROC_SEND_INPUT:
		do_input(api, ec, resp);
		break;
	case E2B_R_PROC_CLOSE_STDIN:
		do_close_stdin(api, ec, resp);
		break;
	case E2B_R_PROC_UPDATE:
		do_update(api, ec, resp);
		break;
	case E2B_R_FS_STAT:
	case E2B_R_FS_LIST_DIR:
	case E2B_R_FS_MAKE_DIR:
	case E2B_R_FS_MOVE:
	case E2B_R_FS_REMOVE:
		do_fs(api, rt, ec, resp);
		break;
	case E2B_R_FS_WATCH_DIR:
		do_watch_dir(api, ec, resp);
		break;
	default:
		e2b_reply_rpc_error(resp, CF_UNIMPLEMENTED, "%s is not supported",
				    e2b_route_name(rt->id));
		break;
	}
}
