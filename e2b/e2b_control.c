// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_control.c: the control plane (sandbox life cycle) of the E2B API.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_http.h"
#include "e2b_json.h"

static void backend_error(struct e2b_response *resp, int err, const char *id,
			  const char *msg)
{
	unsigned int st = e2b_status_from_errno(err);

	if (msg && msg[0])
		e2b_reply_error(resp, st, "%s", msg);
	else if (st == 404 && id)
		e2b_reply_error(resp, 404, "sandbox \"%s\" not found", id);
	else if (st == 503)
		e2b_reply_error(resp, 503, "the sandbox service is unavailable");
	else
		e2b_reply_error(resp, st, "%s", strerror(err < 0 ? -err : err));
}

static void do_create(const struct e2b_api *api, const struct e2b_request *req,
		      struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_new_sandbox nr;
	struct e2b_sandbox sb = { 0 };
	char msg[E2B_MSG_MAX] = "";
	int ret;

	if (e2b_parse_new_sandbox(req->body, req->body_len, &nr, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	ret = b->ops->create(b->be, &nr, &sb, msg);
	if (ret) {
		if (ret == -ENOENT && !msg[0])
			e2b_reply_error(resp, 404, "template \"%s\" not found",
					nr.template_id);
		else
			backend_error(resp, ret, NULL, msg);
	} else {
		sb.domain = api->domain;
		e2b_reply_json(resp, 201, e2b_json_sandbox(&sb, true));
	}
	e2b_sandbox_free(&sb);
	e2b_new_sandbox_free(&nr);
}

/* "running,paused" (the SDK's form style, explode=false) */
static int parse_states(const char *s, bool *running, bool *paused)
{
	char buf[64], *tok, *save;

	*running = *paused = true;
	if (!s || !s[0])
		return 0;
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	*running = *paused = false;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "running"))
			*running = true;
		else if (!strcmp(tok, "paused"))
			*paused = true;
		else
			return -EINVAL;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * metadata=k1%3Dv1%26k2%3Dv2 arrives decoded once as "k1=v1&k2=v2", each
 * key and value itself URL-encoded (the SDK encodes twice).
 */
static int url_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (o + 1 >= cap)
			return -EINVAL;
		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -EINVAL;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (!hi && !lo))
				return -EINVAL;
			out[o++] = hi << 4 | lo;
			i += 2;
		} else {
			out[o++] = c == '+' ? ' ' : c;
		}
	}
	out[o] = '\0';
	return 0;
}

static int parse_metadata_query(const char *s, struct e2b_kvs *out)
{
	char key[E2B_META_KEY_MAX + 1], val[E2B_META_VAL_MAX + 1];
	const char *p = s;

	while (p && *p) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', n);

		if (!eq || eq == p)
			return -EINVAL;
		if (url_decode(p, eq - p, key, sizeof(key)) ||
		    url_decode(eq + 1, n - (eq - p) - 1, val, sizeof(val)))
			return -EINVAL;
		if (out->n >= E2B_META_MAX || e2b_kvs_add(out, key, val))
			return -EINVAL;
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

static bool matches(const struct e2b_sandbox *sb, bool running, bool paused,
		    const char *tmpl, const struct e2b_kvs *meta)
{
	size_t i;

	if (sb->paused ? !paused : !running)
		return false;
	if (tmpl && tmpl[0] && strcmp(tmpl, sb->template_id))
		return false;
	for (i = 0; i < meta->n; i++) {
		const char *v = e2b_kvs_get(&sb->metadata, meta->v[i].key);

		if (!v || strcmp(v, meta->v[i].value))
			return false;
	}
	return true;
}

static void do_list(const struct e2b_api *api, const struct e2b_request *req,
		    struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_kvs meta = { 0 };
	struct e2b_sandbox *sbs = NULL;
	struct json_object *arr;
	bool running, paused;
	size_t n = 0, i;
	int ret;

	if (parse_states(req->query(req->ctx, "state"), &running, &paused)) {
		e2b_reply_error(resp, 400, "state must be running and/or paused");
		return;
	}
	if (parse_metadata_query(req->query(req->ctx, "metadata"), &meta)) {
		e2b_kvs_free(&meta);
		e2b_reply_error(resp, 400, "malformed metadata filter");
		return;
	}
	ret = b->ops->list(b->be, &sbs, &n);
	if (ret) {
		e2b_kvs_free(&meta);
		backend_error(resp, ret, NULL, NULL);
		return;
	}
	arr = json_object_new_array();
	for (i = 0; arr && i < n; i++)
		if (matches(&sbs[i], running, paused,
			    req->query(req->ctx, "template"), &meta))
			json_object_array_add(arr, e2b_json_listed(&sbs[i]));
	for (i = 0; i < n; i++)
		e2b_sandbox_free(&sbs[i]);
	free(sbs);
	e2b_kvs_free(&meta);
	e2b_reply_json(resp, 200, arr);
}

static void do_get(const struct e2b_api *api, const struct e2b_route *rt,
		   struct e2b_response *resp, bool connect)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_sandbox sb = { 0 };
	int ret;

	ret = b->ops->get(b->be, rt->sandbox, &sb);
	if (ret) {
		backend_error(resp, ret, rt->sandbox, NULL);
		return;
	}
	sb.domain = api->domain;
	if (connect)
		e2b_reply_json(resp, 200, e2b_json_sandbox(&sb, true));
	else
		e2b_reply_json(resp, 200, e2b_json_sandbox_detail(&sb));
	e2b_sandbox_free(&sb);
}

static void no_content(struct e2b_response *resp)
{
	e2b_response_free(resp);
	resp->status = 204;
	resp->content_type = NULL;
	resp->len = 0;
}

static void do_kill(const struct e2b_api *api, const struct e2b_route *rt,
		    struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	int ret = b->ops->kill(b->be, rt->sandbox);

	if (ret)
		backend_error(resp, ret, rt->sandbox, NULL);
	else
		no_content(resp);
}

static void do_timeout(const struct e2b_api *api, const struct e2b_route *rt,
		       const struct e2b_request *req,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	unsigned int secs = 0;
	bool given;
	int ret;

	if (e2b_parse_timeout(req->body, req->body_len, true, &secs, &given,
			      msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	ret = b->ops->set_timeout(b->be, rt->sandbox, secs);
	if (ret)
		backend_error(resp, ret, rt->sandbox, NULL);
	else
		no_content(resp);
}

static void do_connect(const struct e2b_api *api, const struct e2b_route *rt,
		       const struct e2b_request *req,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_sandbox sb = { 0 };
	char msg[E2B_MSG_MAX] = "";
	unsigned int secs = 0;
	bool given;
	int ret;

	if (e2b_parse_timeout(req->body, req->body_len, false, &secs, &given,
			      msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	ret = b->ops->get(b->be, rt->sandbox, &sb);
	if (ret) {
		backend_error(resp, ret, rt->sandbox, NULL);
		return;
	}
	if (!sb.paused && rt->id == E2B_R_RESUME) {
		e2b_sandbox_free(&sb);
		e2b_reply_error(resp, 409, "sandbox \"%s\" is already running",
				rt->sandbox);
		return;
	}
	if (sb.paused) {
		ret = b->ops->resume ? b->ops->resume(b->be, rt->sandbox, msg) :
				       -EOPNOTSUPP;
		/* a concurrent resume won: the sandbox runs, as asked */
		if (ret == -EEXIST && rt->id == E2B_R_CONNECT)
			ret = 0;
		if (ret) {
			e2b_sandbox_free(&sb);
			backend_error(resp, ret, rt->sandbox, msg);
			return;
		}
	}
	/* connecting never shortens a sandbox's life */
	if (given && sb.end_at < time(NULL) + (time_t)secs) {
		ret = b->ops->set_timeout(b->be, rt->sandbox, secs);
		if (ret) {
			e2b_sandbox_free(&sb);
			backend_error(resp, ret, rt->sandbox, NULL);
			return;
		}
	}
	e2b_sandbox_free(&sb);
	do_get(api, rt, resp, true);
}

static struct json_object *metrics_json(const struct e2b_metrics *m)
{
	struct json_object *o = json_object_new_object();
	char ts[32];

	if (!o)
		return NULL;
	e2b_time_str(m->timestamp, ts);
	json_object_object_add(o, "timestamp", json_object_new_string(ts));
	json_object_object_add(o, "timestampUnix",
			       json_object_new_int64(m->timestamp));
	json_object_object_add(o, "cpuCount", json_object_new_int(m->cpu_count));
	json_object_object_add(o, "cpuUsedPct",
			       json_object_new_double(m->cpu_used_pct));
	json_object_object_add(o, "memUsed", json_object_new_int64(m->mem_used));
	json_object_object_add(o, "memTotal",
			       json_object_new_int64(m->mem_total));
	json_object_object_add(o, "memCache",
			       json_object_new_int64(m->mem_cache));
	json_object_object_add(o, "diskUsed",
			       json_object_new_int64(m->disk_used));
	json_object_object_add(o, "diskTotal",
			       json_object_new_int64(m->disk_total));
	return o;
}

static void do_metrics(const struct e2b_api *api, const struct e2b_route *rt,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_sandbox sb = { 0 };
	struct e2b_metrics m = { 0 };
	struct json_object *arr;
	bool paused;
	int ret;

	ret = b->ops->get(b->be, rt->sandbox, &sb);
	if (ret) {
		backend_error(resp, ret, rt->sandbox, NULL);
		return;
	}
	paused = sb.paused;
	e2b_sandbox_free(&sb);
	arr = json_object_new_array();
	/* a paused sandbox, or a backend without samples: an empty series */
	if (!paused && b->ops->metrics) {
		ret = b->ops->metrics(b->be, rt->sandbox, &m);
		if (ret && ret != -ENOENT) {
			json_object_put(arr);
			backend_error(resp, ret, rt->sandbox, NULL);
			return;
		}
		if (!ret && arr)
			json_object_array_add(arr, metrics_json(&m));
	}
	e2b_reply_json(resp, 200, arr);
}

/* {"memory"?: bool}: only a pause that keeps the memory is offered */
static int parse_pause(const char *body, size_t len, char *msg)
{
	struct json_object *o, *v;
	int ret = 0;

	if (!len)
		return 0;
	o = e2b_json_parse(body, len, msg);
	if (!o)
		return -EINVAL;
	if (json_object_object_get_ex(o, "memory", &v) && v) {
		if (!json_object_is_type(v, json_type_boolean)) {
			snprintf(msg, E2B_MSG_MAX, "'memory' must be a boolean");
			ret = -EINVAL;
		} else if (!json_object_get_boolean(v)) {
			snprintf(msg, E2B_MSG_MAX,
				 "a pause without memory is not supported: a sandbox's files live in its memory");
			ret = -EINVAL;
		}
	}
	json_object_put(o);
	return ret;
}

/*
 * The sandbox rt names must exist and run: else the reply is made (404, or
 * 409 "sandbox ... <paused_what>") and -1 returned.
 */
static int need_running(const struct e2b_backend *b,
			const struct e2b_route *rt, struct e2b_response *resp,
			const char *paused_what)
{
	struct e2b_sandbox sb = { 0 };
	bool paused;
	int ret;

	ret = b->ops->get(b->be, rt->sandbox, &sb);
	if (ret) {
		backend_error(resp, ret, rt->sandbox, NULL);
		return -1;
	}
	paused = sb.paused;
	e2b_sandbox_free(&sb);
	if (paused) {
		e2b_reply_error(resp, 409, "sandbox \"%s\" is %s", rt->sandbox,
				paused_what);
		return -1;
	}
	return 0;
}

static void do_pause(const struct e2b_api *api, const struct e2b_route *rt,
		     const struct e2b_request *req, struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	int ret;

	if (parse_pause(req->body, req->body_len, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	if (need_running(b, rt, resp, "already paused"))
		return;
	if (!b->ops->pause) {
		e2b_reply_error(resp, 501, "pause is not supported by this server");
		return;
	}
	ret = b->ops->pause(b->be, rt->sandbox, msg);
	if (ret == -EEXIST)
		e2b_reply_error(resp, 409, "sandbox \"%s\" is already paused",
				rt->sandbox);
	else if (ret)
		backend_error(resp, ret, rt->sandbox, msg);
	else
		no_content(resp);
}

static void do_fork(const struct e2b_api *api, const struct e2b_route *rt,
		    const struct e2b_request *req, struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct e2b_sandbox sb = { 0 };
	char msg[E2B_MSG_MAX] = "";
	struct json_object *arr;
	unsigned int secs, count, i;
	int ret;

	if (e2b_parse_fork(req->body, req->body_len, &secs, &count, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	ret = b->ops->get(b->be, rt->sandbox, &sb);
	if (ret) {
		backend_error(resp, ret, rt->sandbox, NULL);
		return;
	}
	e2b_sandbox_free(&sb);
	if (!b->ops->fork) {
		e2b_reply_error(resp, 501, "fork is not supported by this server");
		return;
	}
	/* each fork succeeds or fails on its own */
	arr = json_object_new_array();
	for (i = 0; arr && i < count; i++) {
		struct json_object *r = json_object_new_object();
		struct e2b_sandbox child = { 0 };

		msg[0] = '\0';
		ret = b->ops->fork(b->be, rt->sandbox, secs, &child, msg);
		child.domain = api->domain;
		if (!ret) {
			json_object_object_add(r, "sandbox",
					       e2b_json_sandbox(&child, true));
		} else {
			unsigned int st = e2b_status_from_errno(ret);

			json_object_object_add(r, "error",
					       e2b_json_error(st, msg[0] ? msg :
							      strerror(-ret)));
		}
		e2b_sandbox_free(&child);
		json_object_array_add(arr, r);
	}
	e2b_reply_json(resp, 201, arr);
}

static struct json_object *snapshot_json(const struct e2b_snapshot *sn)
{
	struct json_object *o = json_object_new_object(), *names;

	if (!o)
		return NULL;
	names = json_object_new_array();
	if (names)
		json_object_array_add(names, json_object_new_string(sn->id));
	json_object_object_add(o, "snapshotID", json_object_new_string(sn->id));
	json_object_object_add(o, "names", names);
	return o;
}

/* {"name"?: template name} */
static int parse_snapshot(const char *body, size_t len, char *name,
			  char *msg)
{
	struct json_object *o, *v;
	int ret = 0;

	name[0] = '\0';
	if (!len)
		return 0;
	o = e2b_json_parse(body, len, msg);
	if (!o)
		return -EINVAL;
	if (json_object_object_get_ex(o, "name", &v) && v) {
		const char *n = json_object_get_string(v);
		size_t i, l = n ? strlen(n) : 0;

		if (!json_object_is_type(v, json_type_string) || !l ||
		    l > E2B_TEMPLATE_MAX || n[0] == '.')
			ret = -EINVAL;
		for (i = 0; !ret && i < l; i++)
			if (!((n[i] >= 'a' && n[i] <= 'z') ||
			      (n[i] >= 'A' && n[i] <= 'Z') ||
			      (n[i] >= '0' && n[i] <= '9') ||
			      n[i] == '-' || n[i] == '_' || n[i] == '.'))
				ret = -EINVAL;
		if (ret)
			snprintf(msg, E2B_MSG_MAX,
				 "'name' must be 1..%d characters of [A-Za-z0-9._-], not starting with '.'",
				 E2B_TEMPLATE_MAX);
		else
			strcpy(name, n);
	}
	json_object_put(o);
	return ret;
}

static void do_snapshot(const struct e2b_api *api, const struct e2b_route *rt,
			const struct e2b_request *req,
			struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "", name[E2B_TEMPLATE_MAX + 1];
	struct e2b_snapshot sn = { 0 };
	int ret;

	if (parse_snapshot(req->body, req->body_len, name, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	if (need_running(b, rt, resp, "paused"))
		return;
	if (!b->ops->snapshot) {
		e2b_reply_error(resp, 501, "snapshot is not supported by this server");
		return;
	}
	ret = b->ops->snapshot(b->be, rt->sandbox, name, &sn, msg);
	if (ret == -EEXIST && !msg[0])
		e2b_reply_error(resp, 409, "a template \"%s\" exists", name);
	else if (ret)
		backend_error(resp, ret, rt->sandbox, msg);
	else
		e2b_reply_json(resp, 201, snapshot_json(&sn));
}

static void do_list_snapshots(const struct e2b_api *api,
			      const struct e2b_request *req,
			      struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	const char *sid = req->query(req->ctx, "sandboxID");
	const char *name = req->query(req->ctx, "name");
	struct e2b_snapshot *v = NULL;
	struct json_object *arr;
	size_t n = 0, i;
	int ret;

	arr = json_object_new_array();
	if (b->ops->list_snapshots) {
		ret = b->ops->list_snapshots(b->be, &v, &n);
		if (ret) {
			json_object_put(arr);
			backend_error(resp, ret, NULL, NULL);
			return;
		}
	}
	for (i = 0; arr && i < n; i++) {
		if (sid && sid[0] && strcmp(sid, v[i].sandbox))
			continue;
		if (name && name[0] && strcmp(name, v[i].id))
			continue;
		json_object_array_add(arr, snapshot_json(&v[i]));
	}
	free(v);
	e2b_reply_json(resp, 200, arr);
}

static void do_network(const struct e2b_api *api, const struct e2b_route *rt,
		       const struct e2b_request *req,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	struct e2b_net net;
	int ret;

	if (e2b_parse_network_update(req->body, req->body_len, &net, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	if (need_running(b, rt, resp, "paused: resume it to change its network")) {
		e2b_net_free(&net);
		return;
	}
	if (!b->ops->set_network) {
		e2b_net_free(&net);
		e2b_reply_error(resp, 501, "network update is not supported by this server");
		return;
	}
	ret = b->ops->set_network(b->be, rt->sandbox, &net, msg);
	e2b_net_free(&net);
	if (ret == -ENETDOWN)
		e2b_reply_error(resp, 409, "%s", msg[0] ? msg :
				"the sandbox has no network device");
	else if (ret)
		backend_error(resp, ret, rt->sandbox, msg);
	else
		no_content(resp);
}

void e2b_control_handle(const struct e2b_api *api, const struct e2b_route *rt,
			const struct e2b_request *req,
			struct e2b_response *resp)
{
	switch (rt->id) {
	case E2B_R_API_HEALTH:
		e2b_reply_json(resp, 200, json_object_new_object());
		break;
	case E2B_R_CREATE:
		do_create(api, req, resp);
		break;
	case E2B_R_LIST:
		do_list(api, req, resp);
		break;
	case E2B_R_GET:
		do_get(api, rt, resp, false);
		break;
	case E2B_R_KILL:
		do_kill(api, rt, resp);
		break;
	case E2B_R_TIMEOUT:
		do_timeout(api, rt, req, resp);
		break;
	case E2B_R_CONNECT:
	case E2B_R_RESUME:
		do_connect(api, rt, req, resp);
		break;
	case E2B_R_METRICS:
		do_metrics(api, rt, resp);
		break;
	case E2B_R_LIST_SNAPSHOTS:
		do_list_snapshots(api, req, resp);
		break;
	case E2B_R_PAUSE:
		do_pause(api, rt, req, resp);
		break;
	case E2B_R_FORK:
		do_fork(api, rt, req, resp);
		break;
	case E2B_R_SNAPSHOT:
		do_snapshot(api, rt, req, resp);
		break;
	case E2B_R_NETWORK:
		do_network(api, rt, req, resp);
		break;
	default:
		e2b_reply_error(resp, 404, "no such endpoint");
		break;
	}
}
