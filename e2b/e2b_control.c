// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_control.c: the control plane (sandbox life cycle) of the E2B API.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2b_http.h"
#include "e2b_json.h"

/* sandboxes on one page of GET /v2/sandboxes, and the default */
#define E2B_LIST_LIMIT_MAX	100

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

/* GET /v2/sandboxes: what to list, and which page */
struct list_query {
	bool running, paused;
	const char *tmpl;		/* NULL or "": any */
	struct e2b_kvs meta;		/* every pair must match */
	time_t started_after;
	size_t limit;
	bool asc;			/* oldest first (default: newest) */
	bool has_cursor;		/* nextToken: after this one */
	time_t after_start;
	char after_id[E2B_ID_MAX + 1];
};

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
 * One level of URL decoding of @s[0..@n) into @out: %XX, and '+' as a
 * space.
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

/*
 * A key or value of the metadata filter: the SDK URL-encodes each, builds
 * "k=v&k=v" with URLSearchParams (encoding the '%'s again), and that string
 * is the query parameter (encoded a third time).  The query parameter
 * arrives decoded once; two levels are left.
 */
static int meta_decode(const char *s, size_t n, char *out, size_t cap)
{
	char once[3 * (E2B_META_VAL_MAX + 1)];

	if (url_decode(s, n, once, sizeof(once)))
		return -EINVAL;
	return url_decode(once, strlen(once), out, cap);
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
		if (meta_decode(p, eq - p, key, sizeof(key)) ||
		    meta_decode(eq + 1, n - (eq - p) - 1, val, sizeof(val)))
			return -EINVAL;
		if (out->n >= E2B_META_MAX || e2b_kvs_add(out, key, val))
			return -EINVAL;
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

/* "2006-01-02T15:04:05[.frac](Z|+hh:mm|-hh:mm)" (the SDK: toISOString()) */
static int parse_time(const char *s, time_t *out)
{
	int y, mo, d, h, mi, sec, n = 0, oh, om;
	struct tm tm = { 0 };
	long off = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
		   &n) != 6 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	s += n;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			;
	if ((*s == '+' || *s == '-') &&
	    sscanf(s + 1, "%2d:%2d%n", &oh, &om, &n) == 2 && !s[1 + n]) {
		off = (oh * 60L + om) * 60;
		if (*s == '-')
			off = -off;
	} else if (strcmp(s, "Z")) {
		return -EINVAL;
	}
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*out = timegm(&tm) - off;
	return 0;
}

static bool matches(const struct e2b_sandbox *sb, const struct list_query *q)
{
	size_t i;

	if (sb->paused ? !q->paused : !q->running)
		return false;
	if (q->tmpl && q->tmpl[0] && strcmp(q->tmpl, sb->template_id))
		return false;
	if (sb->started_at < q->started_after)
		return false;
	for (i = 0; i < q->meta.n; i++) {
		const char *v = e2b_kvs_get(&sb->metadata, q->meta.v[i].key);

		if (!v || strcmp(v, q->meta.v[i].value))
			return false;
	}
	return true;
}

/* list order: by start time, then id (decimal ids by value) */
static int cmp_start(const struct e2b_sandbox *a, time_t b_start,
		     const char *b_id)
{
	size_t la = strlen(a->id), lb = strlen(b_id);

	if (a->started_at != b_start)
		return a->started_at < b_start ? -1 : 1;
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->id, b_id);
}

static int cmp_asc(const void *x, const void *y)
{
	const struct e2b_sandbox *b = y;

	return cmp_start(x, b->started_at, b->id);
}

static int cmp_desc(const void *x, const void *y)
{
	return cmp_asc(y, x);
}

/*
 * The page cursor: "<start time>.<id>" of the last sandbox given; the
 * next page starts after it in the list's order.
 */
static int parse_token(const char *s, time_t *start, char *id)
{
	char *dot;
	long long t;

	errno = 0;
	t = strtoll(s, &dot, 10);
	if (errno || dot == s || *dot != '.' || t < 0 ||
	    !e2b_id_valid(dot + 1))
		return -EINVAL;
	*start = t;
	strcpy(id, dot + 1);
	return 0;
}

static int parse_list_query(const struct e2b_request *req,
			    struct list_query *q, char *msg)
{
	const char *limit = req->query(req->ctx, "limit");
	const char *order = req->query(req->ctx, "order");
	const char *token = req->query(req->ctx, "nextToken");
	const char *after = req->query(req->ctx, "startedAfter");

	q->tmpl = req->query(req->ctx, "template");
	q->limit = E2B_LIST_LIMIT_MAX;
	if (parse_states(req->query(req->ctx, "state"), &q->running,
			 &q->paused)) {
		snprintf(msg, E2B_MSG_MAX, "state must be running and/or paused");
		return -EINVAL;
	}
	if (parse_metadata_query(req->query(req->ctx, "metadata"), &q->meta)) {
		snprintf(msg, E2B_MSG_MAX, "malformed metadata filter");
		return -EINVAL;
	}
	if (limit && limit[0]) {
		char *end;
		long v;

		errno = 0;
		v = strtol(limit, &end, 10);
		if (errno || *end || v < 1 || v > E2B_LIST_LIMIT_MAX) {
			snprintf(msg, E2B_MSG_MAX, "limit must be 1..%d",
				 E2B_LIST_LIMIT_MAX);
			return -EINVAL;
		}
		q->limit = v;
	}
	if (order && order[0] && strcmp(order, "asc") && strcmp(order, "desc")) {
		snprintf(msg, E2B_MSG_MAX, "order must be asc or desc");
		return -EINVAL;
	}
	q->asc = order && !strcmp(order, "asc");
	if (token && token[0]) {
		if (parse_token(token, &q->after_start, q->after_id)) {
			snprintf(msg, E2B_MSG_MAX, "invalid nextToken");
			return -EINVAL;
		}
		q->has_cursor = true;
	}
	if (after && after[0] && parse_time(after, &q->started_after)) {
		snprintf(msg, E2B_MSG_MAX, "startedAfter is not an RFC 3339 time");
		return -EINVAL;
	}
	return 0;
}

static void do_list(const struct e2b_api *api, const struct e2b_request *req,
		    struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct list_query q = { 0 };
	struct e2b_sandbox *sbs = NULL;
	char msg[E2B_MSG_MAX] = "", token[E2B_ID_MAX + 32] = "";
	struct json_object *arr;
	size_t n = 0, i, k = 0, given = 0;
	int ret;

	if (parse_list_query(req, &q, msg)) {
		e2b_kvs_free(&q.meta);
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	ret = b->ops->list(b->be, &sbs, &n);
	if (ret) {
		e2b_kvs_free(&q.meta);
		backend_error(resp, ret, NULL, NULL);
		return;
	}
	/* the matching ones first, in the list's order */
	for (i = 0; i < n; i++) {
		if (matches(&sbs[i], &q)) {
			struct e2b_sandbox t = sbs[k];

			sbs[k++] = sbs[i];
			sbs[i] = t;
		}
	}
	qsort(sbs, k, sizeof(*sbs), q.asc ? cmp_asc : cmp_desc);
	arr = json_object_new_array();
	for (i = 0; arr && i < k; i++) {
		if (q.has_cursor) {
			int c = cmp_start(&sbs[i], q.after_start, q.after_id);

			if (q.asc ? c <= 0 : c >= 0)
				continue;	/* on an earlier page */
		}
		if (given == q.limit) {
			/* more follow: the cursor is the last one given */
			snprintf(token, sizeof(token), "%lld.%s",
				 (long long)sbs[i - 1].started_at, sbs[i - 1].id);
			break;
		}
		json_object_array_add(arr, e2b_json_listed(&sbs[i]));
		given++;
	}
	for (i = 0; i < n; i++)
		e2b_sandbox_free(&sbs[i]);
	free(sbs);
	e2b_kvs_free(&q.meta);
	e2b_reply_json(resp, 200, arr);
	if (token[0] && resp->status == 200) {
		resp->next_token = strdup(token);
		if (!resp->next_token)
			e2b_reply_error(resp, 500, "out of memory");
	}
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
		e2b_sandbox_free(&sb);
		/* its end as resumed (one paused at its end has a new one) */
		if (!ret)
			ret = b->ops->get(b->be, rt->sandbox, &sb);
		if (ret) {
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

/* a Unix time in seconds: 1 to 12 digits (up to the year 33658) */
static int parse_unix_time(const char *s, time_t *out)
{
	long long v = 0;
	size_t i;

	if (!s[0] || strlen(s) > 12)
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = (time_t)v;
	return 0;
}

/*
 * GET /sandboxes/{id}/metrics[?start=S][&end=E]: the samples taken from S
 * to E (Unix seconds, both included; default: since the start, until
 * now), oldest first.  A range reaching now takes a sample now.
 */
static void do_metrics(const struct e2b_api *api, const struct e2b_route *rt,
		       const struct e2b_request *req,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	const char *qs = req->query(req->ctx, "start");
	const char *qe = req->query(req->ctx, "end");
	struct e2b_sandbox sb = { 0 };
	struct e2b_metrics m = { 0 }, *hist = NULL;
	time_t start = 0, end = 0, now = time(NULL);
	struct json_object *arr;
	size_t n = 0, i;
	bool paused, have = false;
	int ret;

	if (qs && parse_unix_time(qs, &start)) {
		e2b_reply_error(resp, 400, "'start' must be a Unix time in seconds");
		return;
	}
	if (qe && parse_unix_time(qe, &end)) {
		e2b_reply_error(resp, 400, "'end' must be a Unix time in seconds");
		return;
	}
	if (!qe)
		end = now > start ? now : start;
	if (start > end) {
		e2b_reply_error(resp, 400, "'start' (%lld) is after 'end' (%lld)",
				(long long)start, (long long)end);
		return;
	}
	ret = b->ops->get(b->be, rt->sandbox, &sb);
	if (ret) {
		backend_error(resp, ret, rt->sandbox, NULL);
		return;
	}
	paused = sb.paused;
	e2b_sandbox_free(&sb);
	arr = json_object_new_array();
	/* a paused sandbox, or a backend without samples: an empty series */
	if (!paused && b->ops->metrics && end >= now) {
		ret = b->ops->metrics(b->be, rt->sandbox, &m);
		if (ret && ret != -ENOENT) {
			json_object_put(arr);
			backend_error(resp, ret, rt->sandbox, NULL);
			return;
		}
		have = !ret;
	}
	if (!paused && b->ops->metrics_history) {
		ret = b->ops->metrics_history(b->be, rt->sandbox, &hist, &n);
		if (ret == -ENOENT || ret == -EOPNOTSUPP) {
			/* gone meanwhile, or none kept: the sample alone */
			n = 0;
		} else if (ret) {
			json_object_put(arr);
			backend_error(resp, ret, rt->sandbox, NULL);
			return;
		} else {
			have = false;	/* the history holds it */
		}
	}
	for (i = 0; arr && i < n; i++)
		if (hist[i].timestamp >= start && hist[i].timestamp <= end)
			json_object_array_add(arr, metrics_json(&hist[i]));
	if (arr && have && m.timestamp >= start && m.timestamp <= end)
		json_object_array_add(arr, metrics_json(&m));
	free(hist);
	e2b_reply_json(resp, 200, arr);
}

/* a template name: 1..63 of [A-Za-z0-9._-], not starting with '.' */
static bool template_name_ok(const char *n)
{
	size_t i, l = strlen(n);

	if (!l || l > E2B_TEMPLATE_MAX || n[0] == '.')
		return false;
	for (i = 0; i < l; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') ||
		      (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '-' || n[i] == '_' || n[i] == '.'))
			return false;
	return true;
}

#define TEMPLATE_NAME_RULE \
	"1..63 characters of [A-Za-z0-9._-], not starting with '.'"

/* GET /templates/aliases/{name}: Template.exists() */
static void do_template_alias(const struct e2b_api *api,
			      const struct e2b_route *rt,
			      struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	struct json_object *o;
	int ret;

	if (!template_name_ok(rt->sandbox)) {
		e2b_reply_error(resp, 400, "a template name is " TEMPLATE_NAME_RULE);
		return;
	}
	ret = b->ops->template_exists ?
	      b->ops->template_exists(b->be, rt->sandbox) : -ENOENT;
	if (ret == -ENOENT) {
		e2b_reply_error(resp, 404, "template \"%s\" not found",
				rt->sandbox);
		return;
	}
	if (ret) {
		backend_error(resp, ret, NULL, NULL);
		return;
	}
	o = json_object_new_object();
	if (o) {
		json_object_object_add(o, "templateID",
				       json_object_new_string(rt->sandbox));
		json_object_object_add(o, "public",
				       json_object_new_boolean(false));
	}
	e2b_reply_json(resp, 200, o);
}

/* DELETE /templates/{name}: Sandbox.deleteSnapshot() */
static void do_template_delete(const struct e2b_api *api,
			       const struct e2b_route *rt,
			       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	int ret;

	if (!template_name_ok(rt->sandbox)) {
		e2b_reply_error(resp, 400, "a template name is " TEMPLATE_NAME_RULE);
		return;
	}
	if (!b->ops->template_delete) {
		e2b_reply_error(resp, 501, "deleting templates is not supported by this server");
		return;
	}
	ret = b->ops->template_delete(b->be, rt->sandbox, msg);
	if (ret == -ENOENT && !msg[0])
		e2b_reply_error(resp, 404, "template \"%s\" not found",
				rt->sandbox);
	else if (ret == -EACCES && !msg[0])
		e2b_reply_error(resp, 403, "template \"%s\" is no snapshot made through this API",
				rt->sandbox);
	else if (ret == -EBUSY && !msg[0])
		e2b_reply_error(resp, 409, "template \"%s\" is in use",
				rt->sandbox);
	else if (ret)
		backend_error(resp, ret, NULL, msg);
	else
		no_content(resp);
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

/* --- cube's own extension: checkpoints and rollbacks --- */

static bool cp_name_ok(const char *n)
{
	size_t i, l = strlen(n);

	if (!l || l > E2B_CP_NAME_MAX || n[0] == '.')
		return false;
	for (i = 0; i < l; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') ||
		      (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '-' || n[i] == '_' || n[i] == '.'))
			return false;
	return true;
}

#define CP_NAME_RULE "1..64 characters of [A-Za-z0-9._-], not starting with '.'"

/*
 * {} or {"<key>": name}: any other field, or a name that is none, is a
 * 400.  An empty body is {}.  @name is "" when not given.
 */
static int parse_cp_body(const char *body, size_t len, const char *key,
			 char *name, char *msg)
{
	struct json_object *o;
	int ret = 0;

	name[0] = '\0';
	if (!len)
		return 0;
	o = e2b_json_parse(body, len, msg);
	if (!o)
		return -EINVAL;
	json_object_object_foreach(o, k, v) {
		const char *n;

		if (strcmp(k, key)) {
			snprintf(msg, E2B_MSG_MAX, "unknown field '%.64s' (only '%s')",
				 k, key);
			ret = -EINVAL;
			break;
		}
		n = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : NULL;
		if (!n || !cp_name_ok(n)) {
			snprintf(msg, E2B_MSG_MAX, "'%s' must be " CP_NAME_RULE,
				 key);
			ret = -EINVAL;
			break;
		}
		strcpy(name, n);
	}
	json_object_put(o);
	return ret;
}

/* the backend's refusals of checkpoints and rollbacks */
static void cp_error(struct e2b_response *resp, int ret,
		     const struct e2b_route *rt, const char *name,
		     const char *msg)
{
	if (ret == -EOPNOTSUPP)
		e2b_reply_error(resp, 501, "%s", msg[0] ? msg :
				"sandbox memory that cannot be checkpointed");
	else if (ret == -EEXIST && !msg[0])
		e2b_reply_error(resp, 409, "checkpoint \"%s\" exists", name);
	else if (ret == -EBUSY && !msg[0])
		e2b_reply_error(resp, 409, "sandbox \"%s\" is busy with another rollback",
				rt->sandbox);
	else
		backend_error(resp, ret, rt->sandbox, msg);
}

static void do_cp_create(const struct e2b_api *api, const struct e2b_route *rt,
			 const struct e2b_request *req,
			 struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "", name[E2B_CP_NAME_MAX + 1];
	struct e2b_checkpoint cp = { 0 };
	struct json_object *o;
	int ret;

	if (parse_cp_body(req->body, req->body_len, "name", name, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	if (need_running(b, rt, resp, "paused: resume it to checkpoint it"))
		return;
	if (!b->ops->cp_create) {
		e2b_reply_error(resp, 501, "checkpoints are not supported by this server");
		return;
	}
	ret = b->ops->cp_create(b->be, rt->sandbox, name, &cp, msg);
	if (ret) {
		cp_error(resp, ret, rt, name, msg);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(cp.name));
	json_object_object_add(o, "ms", json_object_new_int64(cp.ms));
	json_object_object_add(o, "pages", json_object_new_int64(cp.pages));
	e2b_reply_json(resp, 201, o);
}

static void do_cp_list(const struct e2b_api *api, const struct e2b_route *rt,
		       struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char (*v)[E2B_CP_NAME_MAX + 1] = NULL, msg[E2B_MSG_MAX] = "";
	struct json_object *arr;
	size_t n = 0, i;
	int ret;

	if (need_running(b, rt, resp, "paused: resume it to list its checkpoints"))
		return;
	if (!b->ops->cp_list) {
		e2b_reply_error(resp, 501, "checkpoints are not supported by this server");
		return;
	}
	ret = b->ops->cp_list(b->be, rt->sandbox, &v, &n, msg);
	if (ret) {
		cp_error(resp, ret, rt, "", msg);
		return;
	}
	arr = json_object_new_array();
	for (i = 0; arr && i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(v[i]));
		json_object_array_add(arr, o);
	}
	free(v);
	e2b_reply_json(resp, 200, arr);
}

static void do_cp_delete(const struct e2b_api *api, const struct e2b_route *rt,
			 struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "";
	int ret;

	if (!cp_name_ok(rt->arg)) {
		e2b_reply_error(resp, 400, "a checkpoint name is " CP_NAME_RULE);
		return;
	}
	if (need_running(b, rt, resp, "paused: resume it to remove a checkpoint"))
		return;
	if (!b->ops->cp_remove) {
		e2b_reply_error(resp, 501, "checkpoints are not supported by this server");
		return;
	}
	ret = b->ops->cp_remove(b->be, rt->sandbox, rt->arg, msg);
	if (ret == -ENOENT && !msg[0])
		e2b_reply_error(resp, 404, "checkpoint \"%s\" not found", rt->arg);
	else if (ret)
		cp_error(resp, ret, rt, rt->arg, msg);
	else
		no_content(resp);
}

static void do_rollback(const struct e2b_api *api, const struct e2b_route *rt,
			const struct e2b_request *req,
			struct e2b_response *resp)
{
	const struct e2b_backend *b = &api->backend;
	char msg[E2B_MSG_MAX] = "", name[E2B_CP_NAME_MAX + 1];
	struct e2b_rollback r = { 0 };
	struct json_object *o;
	int ret;

	if (parse_cp_body(req->body, req->body_len, "checkpoint", name, msg)) {
		e2b_reply_error(resp, 400, "%s", msg);
		return;
	}
	if (need_running(b, rt, resp, "paused: resume it to roll it back"))
		return;
	if (!b->ops->rollback) {
		e2b_reply_error(resp, 501, "rollback is not supported by this server");
		return;
	}
	ret = b->ops->rollback(b->be, rt->sandbox, name, &r, msg);
	if (ret == -ENOENT && !msg[0] && name[0])
		e2b_reply_error(resp, 404, "checkpoint \"%s\" not found", name);
	else if (ret)
		cp_error(resp, ret, rt, name, msg);
	if (ret)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "target", json_object_new_string(r.target));
	json_object_object_add(o, "us", json_object_new_int64(r.us));
	json_object_object_add(o, "pages", json_object_new_int64(r.pages));
	e2b_reply_json(resp, 200, o);
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
		do_metrics(api, rt, req, resp);
		break;
	case E2B_R_TEMPLATE_ALIAS:
		do_template_alias(api, rt, resp);
		break;
	case E2B_R_TEMPLATE_DELETE:
		do_template_delete(api, rt, resp);
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
	case E2B_R_CP_CREATE:
		do_cp_create(api, rt, req, resp);
		break;
	case E2B_R_CP_LIST:
		do_cp_list(api, rt, resp);
		break;
	case E2B_R_CP_DELETE:
		do_cp_delete(api, rt, resp);
		break;
	case E2B_R_ROLLBACK:
		do_rollback(api, rt, req, resp);
		break;
	default:
		e2b_reply_error(resp, 404, "no such endpoint");
		break;
	}
}
