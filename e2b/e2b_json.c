// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_json.c: JSON request bodies to request structures and back (json-c).
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <resolv.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_json.h"

int e2b_fail(char *err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err, E2B_MSG_MAX, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/*
 * json-c accepts a few things JSON does not: single-quoted strings and
 * NaN / Infinity.  Refuse a quote outside a double-quoted string here, and
 * non-finite numbers after parsing.
 */
static bool has_single_quote(const char *s, size_t len)
{
	bool in_str = false;
	size_t i;

	for (i = 0; i < len; i++) {
		if (in_str) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_str = false;
		} else if (s[i] == '"') {
			in_str = true;
		} else if (s[i] == '\'') {
			return true;
		}
	}
	return false;
}

static bool all_finite(struct json_object *o, int depth)
{
	size_t i, n;

	if (depth > JSON_TOKENER_DEFAULT_DEPTH)
		return false;
	switch (json_object_get_type(o)) {
	case json_type_double:
		return isfinite(json_object_get_double(o));
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			(void)k;
			if (v && !all_finite(v, depth + 1))
				return false;
		}
		return true;
	}
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++) {
			struct json_object *v = json_object_array_get_idx(o, i);

			if (v && !all_finite(v, depth + 1))
				return false;
		}
		return true;
	default:
		return true;
	}
}

struct json_object *e2b_json_parse(const char *body, size_t len, char *err)
{
	struct json_tokener *tok;
	struct json_object *o;
	size_t end;

	if (!body || !len) {
		e2b_fail(err, "request body is empty");
		return NULL;
	}
	if (memchr(body, '\0', len)) {
		e2b_fail(err, "request body holds a NUL byte");
		return NULL;
	}
	if (has_single_quote(body, len)) {
		e2b_fail(err, "malformed JSON: single-quoted string");
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		e2b_fail(err, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
			       JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, body, len);
	if (!o) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		e2b_fail(err, "malformed JSON: %s",
		     je == json_tokener_continue ? "unexpected end of body" :
		     json_tokener_error_desc(je));
		json_tokener_free(tok);
		return NULL;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && (body[end] == ' ' || body[end] == '\n' ||
			     body[end] == '\r' || body[end] == '\t'))
		end++;
	if (end != len) {
		e2b_fail(err, "malformed JSON: data after the object");
		json_object_put(o);
		return NULL;
	}
	if (!all_finite(o, 0)) {
		e2b_fail(err, "malformed JSON: number out of range");
		json_object_put(o);
		return NULL;
	}
	if (!json_object_is_type(o, json_type_object)) {
		e2b_fail(err, "request body must be a JSON object");
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* --- typed field access --- */

/* The field, or NULL when absent or JSON null. */
static struct json_object *field(struct json_object *o, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, name, &v))
		return NULL;
	if (json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

static int get_str(struct json_object *v, const char *name, size_t max,
		   const char **out, char *err)
{
	size_t n;

	if (!json_object_is_type(v, json_type_string))
		return e2b_fail(err, "'%s' must be a string", name);
	n = json_object_get_string_len(v);
	*out = json_object_get_string(v);
	if (strlen(*out) != n)
		return e2b_fail(err, "'%s' holds a NUL character", name);
	if (n > max)
		return e2b_fail(err, "'%s' is longer than %zu bytes", name, max);
	return 0;
}

static int dup_str(struct json_object *v, const char *name, size_t max,
		   char **out, char *err)
{
	const char *s;
	int ret = get_str(v, name, max, &s, err);

	if (ret)
		return ret;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int get_int(struct json_object *v, const char *name, int64_t min,
		   int64_t max, int64_t *out, char *err)
{
	int64_t x;

	if (json_object_is_type(v, json_type_int)) {
		errno = 0;
		x = json_object_get_int64(v);
		if (errno)
			return e2b_fail(err, "'%s' is out of range", name);
	} else {
		return e2b_fail(err, "'%s' must be an integer", name);
	}
	if (x < min || x > max)
		return e2b_fail(err, "'%s' must be between %lld and %lld", name,
			    (long long)min, (long long)max);
	*out = x;
	return 0;
}

static int get_bool(struct json_object *v, const char *name, bool *out,
		    char *err)
{
	if (!json_object_is_type(v, json_type_boolean))
		return e2b_fail(err, "'%s' must be true or false", name);
	*out = json_object_get_boolean(v);
	return 0;
}

static int get_map(struct json_object *v, const char *name,
		   struct e2b_kvs *out, char *err)
{
	struct e2b_kvs kvs = { 0 };
	int ret = 0;

	if (!json_object_is_type(v, json_type_object))
		return e2b_fail(err, "'%s' must be an object of strings", name);
	if (json_object_object_length(v) > E2B_META_MAX)
		return e2b_fail(err, "'%s' has more than %d entries", name,
			    E2B_META_MAX);
	json_object_object_foreach(v, key, val) {
		const char *s;

		if (!key[0] || strlen(key) > E2B_META_KEY_MAX) {
			ret = e2b_fail(err, "'%s' has an empty or overlong key",
				   name);
			break;
		}
		ret = get_str(val, key, E2B_META_VAL_MAX, &s, err);
		if (!ret)
			ret = e2b_kvs_add(&kvs, key, s);
		if (ret)
			break;
	}
	if (ret) {
		e2b_kvs_free(&kvs);
		return ret;
	}
	*out = kvs;
	return 0;
}

static bool template_valid(const char *s)
{
	size_t i;

	if (!s[0] || strlen(s) > E2B_TEMPLATE_MAX)
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return false;
	}
	return true;
}

/* --- control plane --- */

int e2b_parse_new_sandbox(const char *body, size_t len,
			  struct e2b_new_sandbox *out, char *err)
{
	struct e2b_new_sandbox r = { .timeout = E2B_TIMEOUT_DEFAULT };
	struct json_object *o, *v;
	const char *s;
	int64_t t;
	int ret;

	memset(out, 0, sizeof(*out));
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	v = field(o, "templateID");
	if (!v) {
		ret = e2b_fail(err, "'templateID' is required");
		goto out;
	}
	ret = get_str(v, "templateID", E2B_TEMPLATE_MAX, &s, err);
	if (ret)
		goto out;
	if (!template_valid(s)) {
		ret = e2b_fail(err, "'templateID' is not a valid template name");
		goto out;
	}
	strcpy(r.template_id, s);
	v = field(o, "timeout");
	if (v) {
		ret = get_int(v, "timeout", 0, E2B_TIMEOUT_MAX, &t, err);
		if (ret)
			goto out;
		r.timeout = t;
	}
	ret = e2b_net_parse(o, false, &r.net, err);
	if (ret)
		goto out;
	v = field(o, "autoPause");
	if (v) {
		ret = get_bool(v, "autoPause", &r.auto_pause, err);
		if (ret)
			goto out;
	}
	v = field(o, "autoPauseMemory");
	if (v) {
		bool mem = true;

		ret = get_bool(v, "autoPauseMemory", &mem, err);
		if (ret)
			goto out;
		/* a pause always keeps the memory: no filesystem-only one */
		if (!mem) {
			ret = e2b_fail(err, "'autoPauseMemory' false (a filesystem-only pause) is not supported");
			goto out;
		}
	}
	v = field(o, "autoResume");
	if (v) {
		struct json_object *en;

		if (!json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, "enabled", &en)) {
			ret = e2b_fail(err, "'autoResume' must be {\"enabled\": true|false}");
			goto out;
		}
		ret = get_bool(en, "autoResume.enabled", &r.auto_resume, err);
		if (ret)
			goto out;
		if (r.auto_resume && !r.auto_pause) {
			ret = e2b_fail(err, "'autoResume' needs 'autoPause' (lifecycle.onTimeout 'pause')");
			goto out;
		}
	}
	v = field(o, "metadata");
	if (v) {
		ret = get_map(v, "metadata", &r.metadata, err);
		if (ret)
			goto out;
	}
	v = field(o, "envVars");
	if (v) {
		ret = get_map(v, "envVars", &r.env, err);
		if (ret)
			goto out;
	}
	*out = r;
	memset(&r, 0, sizeof(r));
out:
	e2b_kvs_free(&r.metadata);
	e2b_kvs_free(&r.env);
	e2b_net_free(&r.net);
	json_object_put(o);
	return ret;
}

void e2b_new_sandbox_free(struct e2b_new_sandbox *r)
{
	e2b_kvs_free(&r->metadata);
	e2b_kvs_free(&r->env);
	e2b_net_free(&r->net);
}

int e2b_parse_network_update(const char *body, size_t len,
			     struct e2b_net *out, char *err)
{
	struct json_object *o;
	int ret;

	e2b_net_init(out);
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	ret = e2b_net_parse(o, true, out, err);
	json_object_put(o);
	return ret;
}

int e2b_parse_timeout(const char *body, size_t len, bool required,
		      unsigned int *secs, bool *given, char *err)
{
	struct json_object *o, *v;
	int64_t t;
	int ret = 0;

	*given = false;
	if (!len && !required)
		return 0;
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	v = field(o, "timeout");
	if (!v) {
		if (required)
			ret = e2b_fail(err, "'timeout' is required");
	} else {
		ret = get_int(v, "timeout", 0, E2B_TIMEOUT_MAX, &t, err);
		if (!ret) {
			*secs = t;
			*given = true;
		}
	}
	json_object_put(o);
	return ret;
}

int e2b_parse_fork(const char *body, size_t len, unsigned int *secs,
		   unsigned int *count, char *err)
{
	struct json_object *o, *v;
	int64_t x;
	int ret = 0;

	*secs = E2B_TIMEOUT_DEFAULT;
	*count = 1;
	if (!len)
		return 0;
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	v = field(o, "timeout");
	if (v) {
		ret = get_int(v, "timeout", 0, E2B_TIMEOUT_MAX, &x, err);
		if (!ret)
			*secs = x;
	}
	v = ret ? NULL : field(o, "count");
	if (v) {
		ret = get_int(v, "count", 1, E2B_FORK_MAX, &x, err);
		if (!ret)
			*count = x;
	}
	json_object_put(o);
	return ret;
}

void e2b_time_str(time_t t, char buf[32])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static void add_time(struct json_object *o, const char *k, time_t t)
{
	char buf[32];

	e2b_time_str(t, buf);
	add_str(o, k, buf);
}

static struct json_object *kvs_obj(const struct e2b_kvs *kvs)
{
	struct json_object *o = json_object_new_object();
	size_t i;

	for (i = 0; o && i < kvs->n; i++)
		add_str(o, kvs->v[i].key, kvs->v[i].value);
	return o;
}

/* where the sandbox's ports are, and the token they need */
static void add_ports(struct json_object *o, const struct e2b_sandbox *sb)
{
	json_object_object_add(o, "domain", sb->domain ?
			       json_object_new_string(sb->domain) : NULL);
	json_object_object_add(o, "trafficAccessToken", sb->traffic_token[0] ?
			       json_object_new_string(sb->traffic_token) :
			       NULL);
}

struct json_object *e2b_json_sandbox(const struct e2b_sandbox *sb,
				     bool with_token)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	add_str(o, "sandboxID", sb->id);
	add_str(o, "templateID", sb->template_id);
	add_str(o, "clientID", "cube");
	add_str(o, "envdVersion", E2B_ENVD_VERSION);
	if (with_token)
		add_str(o, "envdAccessToken", sb->envd_token);
	add_ports(o, sb);
	return o;
}

static void add_common(struct json_object *o, const struct e2b_sandbox *sb)
{
	add_str(o, "sandboxID", sb->id);
	add_str(o, "templateID", sb->template_id);
	add_str(o, "clientID", "cube");
	add_time(o, "startedAt", sb->started_at);
	add_time(o, "endAt", sb->end_at);
	json_object_object_add(o, "cpuCount", json_object_new_int(sb->vcpus));
	json_object_object_add(o, "memoryMB",
			       json_object_new_int(sb->memory_mb));
	json_object_object_add(o, "diskSizeMB",
			       json_object_new_int(sb->disk_mb));
	add_str(o, "envdVersion", E2B_ENVD_VERSION);
	add_str(o, "state", sb->paused ? "paused" : "running");
	json_object_object_add(o, "metadata", kvs_obj(&sb->metadata));
}

/* lifecycle {onTimeout, autoResume}: what the timeout does to it */
static void add_lifecycle(struct json_object *o, const struct e2b_sandbox *sb)
{
	struct json_object *l = json_object_new_object();

	if (!l)
		return;
	add_str(l, "onTimeout", sb->auto_pause ? "pause" : "kill");
	json_object_object_add(l, "autoResume",
			       json_object_new_boolean(sb->auto_resume));
	json_object_object_add(o, "lifecycle", l);
}

struct json_object *e2b_json_sandbox_detail(const struct e2b_sandbox *sb)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	add_common(o, sb);
	add_str(o, "envdAccessToken", sb->envd_token);
	add_ports(o, sb);
	json_object_object_add(o, "allowInternetAccess",
			       sb->net.internet == E2B_UNSET ? NULL :
			       json_object_new_boolean(sb->net.internet ==
						       E2B_TRUE));
	json_object_object_add(o, "network", e2b_net_json(&sb->net));
	add_lifecycle(o, sb);
	return o;
}

struct json_object *e2b_json_listed(const struct e2b_sandbox *sb)
{
	struct json_object *o = json_object_new_object();

	if (o)
		add_common(o, sb);
	return o;
}

struct json_object *e2b_json_error(unsigned int status, const char *msg)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "code", json_object_new_int(status));
	add_str(o, "message", msg);
	return o;
}

/* --- process.Process --- */

static int parse_config(struct json_object *v, struct e2b_proc_config *c,
			char *err)
{
	struct json_object *f;
	size_t i, n;
	int ret;

	if (!json_object_is_type(v, json_type_object))
		return e2b_fail(err, "'process' must be an object");
	f = field(v, "cmd");
	if (!f)
		return e2b_fail(err, "'process.cmd' is required");
	ret = dup_str(f, "process.cmd", E2B_PATH_MAX, &c->cmd, err);
	if (ret)
		return ret;
	if (!c->cmd[0])
		return e2b_fail(err, "'process.cmd' is empty");
	f = field(v, "args");
	if (f) {
		if (!json_object_is_type(f, json_type_array))
			return e2b_fail(err, "'process.args' must be an array");
		n = json_object_array_length(f);
		if (n > E2B_ARGS_MAX)
			return e2b_fail(err, "'process.args' has more than %d items",
				    E2B_ARGS_MAX);
		c->args = calloc(n ? n : 1, sizeof(*c->args));
		if (!c->args)
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			ret = dup_str(json_object_array_get_idx(f, i),
				      "process.args[]", E2B_ARG_LEN_MAX,
				      &c->args[i], err);
			if (ret)
				return ret;
			c->nargs++;
		}
	}
	f = field(v, "envs");
	if (f) {
		ret = get_map(f, "process.envs", &c->envs, err);
		if (ret)
			return ret;
		for (i = 0; i < c->envs.n; i++)
			if (strchr(c->envs.v[i].key, '='))
				return e2b_fail(err, "'process.envs' key '%s' holds '='",
					    c->envs.v[i].key);
	}
	f = field(v, "cwd");
	if (f) {
		ret = dup_str(f, "process.cwd", E2B_PATH_MAX, &c->cwd, err);
		if (ret)
			return ret;
		if (!c->cwd[0]) {
			free(c->cwd);
			c->cwd = NULL;
		}
	}
	return 0;
}

int e2b_parse_start(const char *body, size_t len, struct e2b_start *out,
		    char *err)
{
	struct e2b_start r = { 0 };
	struct json_object *o, *v, *sz, *f;
	int64_t x;
	int ret;

	memset(out, 0, sizeof(*out));
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	v = field(o, "process");
	if (!v) {
		ret = e2b_fail(err, "'process' is required");
		goto out;
	}
	ret = parse_config(v, &r.proc, err);
	if (ret)
		goto out;
	v = field(o, "pty");
	if (v) {
		if (!json_object_is_type(v, json_type_object)) {
			ret = e2b_fail(err, "'pty' must be an object");
			goto out;
		}
		r.pty = true;
		r.cols = 80;
		r.rows = 24;
		sz = field(v, "size");
		if (sz) {
			f = json_object_is_type(sz, json_type_object) ?
			    field(sz, "cols") : NULL;
			if (f) {
				ret = get_int(f, "pty.size.cols", 1, 4096, &x, err);
				if (ret)
					goto out;
				r.cols = x;
			}
			f = json_object_is_type(sz, json_type_object) ?
			    field(sz, "rows") : NULL;
			if (f) {
				ret = get_int(f, "pty.size.rows", 1, 4096, &x, err);
				if (ret)
					goto out;
				r.rows = x;
			}
		}
	}
	v = field(o, "tag");
	if (v) {
		ret = dup_str(v, "tag", E2B_META_VAL_MAX, &r.tag, err);
		if (ret)
			goto out;
	}
	v = field(o, "stdin");
	if (v) {
		ret = get_bool(v, "stdin", &r.stdin_open, err);
		if (ret)
			goto out;
	}
	*out = r;
	memset(&r, 0, sizeof(r));
out:
	e2b_start_free(&r);
	json_object_put(o);
	return ret;
}

static int parse_selector(struct json_object *o, struct e2b_selector *sel,
			  char *err)
{
	struct json_object *v, *f;
	int64_t pid;
	int ret;

	memset(sel, 0, sizeof(*sel));
	v = field(o, "process");
	if (!v || !json_object_is_type(v, json_type_object))
		return e2b_fail(err, "'process' selector is required");
	f = field(v, "pid");
	if (f) {
		ret = get_int(f, "process.pid", 1, UINT32_MAX, &pid, err);
		if (ret)
			return ret;
		sel->pid = pid;
		return 0;
	}
	f = field(v, "tag");
	if (f) {
		ret = dup_str(f, "process.tag", E2B_META_VAL_MAX, &sel->tag,
			      err);
		if (ret)
			return ret;
		return 0;
	}
	return e2b_fail(err, "'process' needs a 'pid' or a 'tag'");
}

void e2b_selector_free(struct e2b_selector *sel)
{
	free(sel->tag);
	sel->tag = NULL;
}

int e2b_parse_selector_req(const char *body, size_t len,
			   struct e2b_selector *out, char *err)
{
	struct json_object *o;
	int ret;

	memset(out, 0, sizeof(*out));
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	ret = parse_selector(o, out, err);
	if (ret)
		e2b_selector_free(out);
	json_object_put(o);
	return ret;
}

int e2b_parse_signal(const char *body, size_t len, struct e2b_selector *sel,
		     int *sig, char *err)
{
	struct json_object *o, *v;
	int ret;

	o = e2b_json_parse(body, len, err);
	if (!o) {
		memset(sel, 0, sizeof(*sel));
		return -EINVAL;
	}
	ret = parse_selector(o, sel, err);
	if (ret)
		goto out;
	v = field(o, "signal");
	ret = e2b_fail(err, "'signal' must be SIGNAL_SIGTERM or SIGNAL_SIGKILL");
	if (!v)
		goto out;
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);

		if (!strcmp(s, "SIGNAL_SIGTERM"))
			*sig = SIGTERM;
		else if (!strcmp(s, "SIGNAL_SIGKILL"))
			*sig = SIGKILL;
		else
			goto out;
		ret = 0;
	} else if (json_object_is_type(v, json_type_int)) {
		int64_t n = json_object_get_int64(v);

		if (n == SIGTERM || n == SIGKILL) {
			*sig = n;
			ret = 0;
		}
	}
out:
	if (ret)
		e2b_selector_free(sel);
	json_object_put(o);
	return ret;
}

/* base64 (standard alphabet, padding optional) to a new buffer */
static int b64_decode(const char *s, size_t slen, unsigned char **out,
		      size_t *olen, char *err)
{
	unsigned char *buf;
	char *pad = NULL;
	int n;

	if (slen > (E2B_INPUT_MAX / 3 + 1) * 4)
		return e2b_fail(err, "input is larger than %d bytes", E2B_INPUT_MAX);
	if (slen % 4) {
		/* protobuf JSON writers may drop the padding */
		pad = malloc(slen + 4);
		if (!pad)
			return -ENOMEM;
		memcpy(pad, s, slen);
		while (slen % 4)
			pad[slen++] = '=';
		pad[slen] = '\0';
		s = pad;
	}
	buf = malloc(slen / 4 * 3 + 1);
	if (!buf) {
		free(pad);
		return -ENOMEM;
	}
	n = b64_pton(s, buf, slen / 4 * 3 + 1);
	free(pad);
	if (n < 0) {
		free(buf);
		return e2b_fail(err, "input is not valid base64");
	}
	*out = buf;
	*olen = n;
	return 0;
}

int e2b_parse_input(const char *body, size_t len, struct e2b_selector *sel,
		    unsigned char **data, size_t *dlen, bool *pty, char *err)
{
	struct json_object *o, *in, *v;
	const char *s;
	int ret;

	*data = NULL;
	*dlen = 0;
	o = e2b_json_parse(body, len, err);
	if (!o) {
		memset(sel, 0, sizeof(*sel));
		return -EINVAL;
	}
	ret = parse_selector(o, sel, err);
	if (ret)
		goto out;
	in = field(o, "input");
	if (!in || !json_object_is_type(in, json_type_object)) {
		ret = e2b_fail(err, "'input' is required");
		goto out;
	}
	*pty = false;
	v = field(in, "stdin");
	if (!v) {
		v = field(in, "pty");
		*pty = true;
	}
	if (!v) {
		ret = e2b_fail(err, "'input' needs 'stdin' or 'pty'");
		goto out;
	}
	ret = get_str(v, "input", (E2B_INPUT_MAX / 3 + 1) * 4, &s, err);
	if (ret)
		goto out;
	ret = b64_decode(s, strlen(s), data, dlen, err);
out:
	if (ret)
		e2b_selector_free(sel);
	json_object_put(o);
	return ret;
}

static struct json_object *b64_str(const void *data, size_t len)
{
	struct json_object *s;
	size_t cap = (len + 2) / 3 * 4 + 1;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	if (b64_ntop(data, len, buf, cap) < 0) {
		free(buf);
		return NULL;
	}
	s = json_object_new_string(buf);
	free(buf);
	return s;
}

struct json_object *e2b_json_proc_event(const struct e2b_event *ev)
{
	struct json_object *top, *event, *inner;
	char status[64];

	top = json_object_new_object();
	event = json_object_new_object();
	inner = json_object_new_object();
	if (!top || !event || !inner)
		goto nomem;
	switch (ev->type) {
	case E2B_EV_START:
		json_object_object_add(inner, "pid",
				       json_object_new_int64(ev->pid));
		json_object_object_add(event, "start", inner);
		break;
	case E2B_EV_STDOUT:
	case E2B_EV_STDERR:
	case E2B_EV_PTY:
		json_object_object_add(inner,
				       ev->type == E2B_EV_STDOUT ? "stdout" :
				       ev->type == E2B_EV_STDERR ? "stderr" :
				       "pty", b64_str(ev->data, ev->len));
		json_object_object_add(event, "data", inner);
		break;
	case E2B_EV_END:
		if (ev->signal) {
			snprintf(status, sizeof(status), "signal: %s",
				 sigabbrev_np(ev->signal) ?
				 sigabbrev_np(ev->signal) : "unknown");
			json_object_object_add(inner, "exitCode",
					       json_object_new_int(-1));
		} else {
			snprintf(status, sizeof(status), "exit status %d",
				 ev->exit_code);
			json_object_object_add(inner, "exitCode",
					       json_object_new_int(ev->exit_code));
		}
		json_object_object_add(inner, "exited",
				       json_object_new_boolean(!ev->signal));
		add_str(inner, "status", status);
		if (ev->error[0])
			add_str(inner, "error", ev->error);
		json_object_object_add(event, "end", inner);
		break;
	default:
		goto nomem;
	}
	json_object_object_add(top, "event", event);
	return top;
nomem:
	json_object_put(inner);
	json_object_put(event);
	json_object_put(top);
	return NULL;
}

struct json_object *e2b_json_keepalive(void)
{
	struct json_object *top = json_object_new_object();
	struct json_object *event = json_object_new_object();

	if (!top || !event) {
		json_object_put(top);
		json_object_put(event);
		return NULL;
	}
	json_object_object_add(event, "keepalive", json_object_new_object());
	json_object_object_add(top, "event", event);
	return top;
}

static struct json_object *config_obj(const struct e2b_proc_config *c)
{
	struct json_object *o = json_object_new_object();
	struct json_object *args = json_object_new_array();
	size_t i;

	if (!o || !args) {
		json_object_put(o);
		json_object_put(args);
		return NULL;
	}
	add_str(o, "cmd", c->cmd ? c->cmd : "");
	for (i = 0; i < c->nargs; i++)
		json_object_array_add(args, json_object_new_string(c->args[i]));
	json_object_object_add(o, "args", args);
	json_object_object_add(o, "envs", kvs_obj(&c->envs));
	if (c->cwd)
		add_str(o, "cwd", c->cwd);
	return o;
}

struct json_object *e2b_json_proc_list(const struct e2b_proc_info *p,
				       size_t n)
{
	struct json_object *top = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	size_t i;

	if (!top || !arr) {
		json_object_put(top);
		json_object_put(arr);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		struct json_object *pi = json_object_new_object();

		if (!pi)
			continue;
		json_object_object_add(pi, "config", config_obj(&p[i].config));
		json_object_object_add(pi, "pid", json_object_new_int64(p[i].pid));
		if (p[i].tag)
			add_str(pi, "tag", p[i].tag);
		json_object_array_add(arr, pi);
	}
	json_object_object_add(top, "processes", arr);
	return top;
}

/* --- filesystem.Filesystem --- */

bool e2b_path_valid(const char *p)
{
	return p && p[0] && strlen(p) <= E2B_PATH_MAX;
}

static int parse_path_field(struct json_object *o, const char *name,
			    char **out, char *err)
{
	struct json_object *v = field(o, name);
	int ret;

	if (!v)
		return e2b_fail(err, "'%s' is required", name);
	ret = dup_str(v, name, E2B_PATH_MAX, out, err);
	if (ret)
		return ret;
	if (!(*out)[0]) {
		free(*out);
		*out = NULL;
		return e2b_fail(err, "'%s' is empty", name);
	}
	return 0;
}

int e2b_parse_path(const char *body, size_t len, char **path, char *err)
{
	struct json_object *o;
	int ret;

	*path = NULL;
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	ret = parse_path_field(o, "path", path, err);
	json_object_put(o);
	return ret;
}

int e2b_parse_list_dir(const char *body, size_t len, char **path,
		       unsigned int *depth, char *err)
{
	struct json_object *o, *v;
	int64_t d = 1;
	int ret;

	*path = NULL;
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	ret = parse_path_field(o, "path", path, err);
	v = ret ? NULL : field(o, "depth");
	if (v) {
		ret = get_int(v, "depth", 0, 64, &d, err);
		if (!ret && d == 0)
			d = 1;	/* protobuf default: omitted means 0 */
	}
	if (ret) {
		free(*path);
		*path = NULL;
	} else {
		*depth = d;
	}
	json_object_put(o);
	return ret;
}

int e2b_parse_move(const char *body, size_t len, char **from, char **to,
		   char *err)
{
	struct json_object *o;
	int ret;

	*from = *to = NULL;
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	ret = parse_path_field(o, "source", from, err);
	if (!ret)
		ret = parse_path_field(o, "destination", to, err);
	if (ret) {
		free(*from);
		free(*to);
		*from = *to = NULL;
	}
	json_object_put(o);
	return ret;
}

int e2b_parse_watch(const char *body, size_t len, char **path,
		    bool *recursive, char *err)
{
	struct json_object *o, *v;
	int ret;

	*path = NULL;
	*recursive = false;
	o = e2b_json_parse(body, len, err);
	if (!o)
		return -EINVAL;
	ret = parse_path_field(o, "path", path, err);
	v = ret ? NULL : field(o, "recursive");
	if (v)
		ret = get_bool(v, "recursive", recursive, err);
	if (ret) {
		free(*path);
		*path = NULL;
	}
	json_object_put(o);
	return ret;
}

static const char *file_type_name(enum e2b_file_type t)
{
	switch (t) {
	case E2B_FT_FILE:
		return "FILE_TYPE_FILE";
	case E2B_FT_DIR:
		return "FILE_TYPE_DIRECTORY";
	case E2B_FT_SYMLINK:
		return "FILE_TYPE_SYMLINK";
	default:
		return "FILE_TYPE_UNSPECIFIED";
	}
}

static void mode_string(uint32_t mode, enum e2b_file_type t, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	out[0] = t == E2B_FT_DIR ? 'd' : t == E2B_FT_SYMLINK ? 'L' : '-';
	for (i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400 >> i)) ? rwx[i] : '-';
	out[10] = '\0';
}

struct json_object *e2b_json_entry(const struct e2b_entry *e)
{
	struct json_object *o = json_object_new_object();
	char perm[11], ts[32];

	if (!o)
		return NULL;
	add_str(o, "name", e->name ? e->name : "");
	add_str(o, "type", file_type_name(e->type));
	add_str(o, "path", e->path ? e->path : "");
	json_object_object_add(o, "size", json_object_new_int64(e->size));
	json_object_object_add(o, "mode", json_object_new_int64(e->mode & 07777));
	mode_string(e->mode, e->type, perm);
	add_str(o, "permissions", perm);
	add_str(o, "owner", e->owner);
	add_str(o, "group", e->group);
	e2b_time_str(e->mtime, ts);
	add_str(o, "modifiedTime", ts);
	if (e->symlink_target)
		add_str(o, "symlinkTarget", e->symlink_target);
	return o;
}

struct json_object *e2b_json_entry_resp(const struct e2b_entry *e)
{
	struct json_object *o = json_object_new_object();

	if (o)
		json_object_object_add(o, "entry", e2b_json_entry(e));
	return o;
}

struct json_object *e2b_json_entries(const struct e2b_entry *e, size_t n)
{
	struct json_object *o = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	size_t i;

	if (!o || !arr) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(arr, e2b_json_entry(&e[i]));
	json_object_object_add(o, "entries", arr);
	return o;
}

struct json_object *e2b_json_upload(const struct e2b_entry *e, size_t n)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; arr && i < n; i++) {
		struct json_object *o = json_object_new_object();

		if (!o)
			continue;
		add_str(o, "name", e[i].name ? e[i].name : "");
		add_str(o, "path", e[i].path ? e[i].path : "");
		add_str(o, "type", e[i].type == E2B_FT_DIR ? "dir" : "file");
		json_object_array_add(arr, o);
	}
	return arr;
}

struct json_object *e2b_json_connect_error(const char *code, const char *msg)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	add_str(o, "code", code);
	add_str(o, "message", msg);
	return o;
}

struct json_object *e2b_json_end_stream(const char *code, const char *msg)
{
	struct json_object *o = json_object_new_object();

	if (o && code)
		json_object_object_add(o, "error",
				       e2b_json_connect_error(code, msg));
	return o;
}
