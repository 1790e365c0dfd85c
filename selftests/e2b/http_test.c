// SPDX-License-Identifier: GPL-2.0
/*
 * http_test: e2b_dispatch() end to end against a recording test backend:
 * authentication, routing, status codes and error bodies the SDK expects,
 * Connect envelopes on streams, and that refused requests never reach
 * the backend.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connect_frame.h"
#include "e2b_http.h"
#include "e2b_json.h"
#include "cube_test.h"

/* --- a backend that knows one sandbox, "7", and records calls --- */

static int calls, creates, kills, timeouts;
static unsigned int last_timeout, last_start_timeout;

static int t_get(void *be, const char *id, struct e2b_sandbox *out)
{
	calls++;
	if (strcmp(id, "7"))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	strcpy(out->id, "7");
	strcpy(out->template_id, "base");
	strcpy(out->envd_token, "tok7");
	out->end_at = 100;
	return 0;
}

static int t_create(void *be, const struct e2b_new_sandbox *req,
		    struct e2b_sandbox *out, char *msg)
{
	calls++;
	creates++;
	if (strcmp(req->template_id, "base"))
		return -ENOENT;
	return t_get(be, "7", out);
}

/* list_n: that many sandboxes "1".."n" (odd ones tagged), else "7" alone */
static int list_n;
#define ODD_TAG "a b/c+d@e:f"

static int t_list(void *be, struct e2b_sandbox **out, size_t *n)
{
	int i;

	calls++;
	if (!list_n) {
		*out = calloc(1, sizeof(**out));
		*n = 1;
		return t_get(be, "7", *out);
	}
	*out = calloc(list_n, sizeof(**out));
	*n = list_n;
	/* not in order: the server sorts */
	for (i = 0; i < list_n; i++) {
		struct e2b_sandbox *sb = &(*out)[(i * 3) % list_n];

		snprintf(sb->id, sizeof(sb->id), "%d", i + 1);
		strcpy(sb->template_id, "base");
		sb->started_at = 1000 + i;
		sb->end_at = 5000;
		if (i % 2 == 0)
			e2b_kvs_add(&sb->metadata, "tag", ODD_TAG);
	}
	return 0;
}

static int t_kill(void *be, const char *id)
{
	calls++;
	kills++;
	return strcmp(id, "7") ? -ENOENT : 0;
}

static int t_set_timeout(void *be, const char *id, unsigned int secs)
{
	calls++;
	timeouts++;
	last_timeout = secs;
	return strcmp(id, "7") ? -ENOENT : 0;
}

struct e2b_proc {
	int step;
};

static int t_proc_start(void *be, const char *id, const struct e2b_start *req,
			struct e2b_proc **out, char *msg)
{
	calls++;
	last_start_timeout = req->timeout_ms;
	if (strcmp(req->proc.cmd, "/bin/bash"))
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	return 0;
}

static int t_proc_next(struct e2b_proc *p, struct e2b_event *ev, int ms)
{
	memset(ev, 0, sizeof(*ev));
	switch (p->step++) {
	case 0:
		ev->type = E2B_EV_START;
		ev->pid = 42;
		return 0;
	case 1:
		ev->type = E2B_EV_STDOUT;
		ev->data = "hi\n";
		ev->len = 3;
		return 0;
	case 2:
		return -ETIMEDOUT;
	case 3:
		ev->type = E2B_EV_END;
		ev->exit_code = 1;
		return 0;
	default:
		return -EPIPE;
	}
}

static void t_proc_close(struct e2b_proc *p)
{
	free(p);
}

static int t_signal(void *be, const char *id, const struct e2b_selector *sel,
		    int sig)
{
	calls++;
	return sel->pid == 42 ? 0 : -ENOENT;
}

static int net_sets;
static enum e2b_tristate last_internet;

static int t_set_network(void *be, const char *id, const struct e2b_net *net,
			 char *msg)
{
	calls++;
	net_sets++;
	last_internet = net->internet;
	if (!strcmp(id, "7"))
		return 0;
	return -ENOENT;
}

static int t_nosys(void)
{
	return -EOPNOTSUPP;
}

static int t_cp_create(void *be, const char *id, const char *name,
		       struct e2b_checkpoint *out, char *msg)
{
	calls++;
	if (strcmp(id, "7"))
		return -ENOENT;
	snprintf(out->name, sizeof(out->name), "%s", name[0] ? name : "cp-1");
	out->ms = 3;
	out->pages = 10;
	return 0;
}

static int t_cp_remove(void *be, const char *id, const char *name, char *msg)
{
	calls++;
	return strcmp(id, "7") ? -ENOENT : 0;
}

static int t_rollback(void *be, const char *id, const char *name,
		      struct e2b_rollback *out, char *msg)
{
	calls++;
	if (strcmp(id, "7"))
		return -ENOENT;
	snprintf(out->target, sizeof(out->target), "%s",
		 name[0] ? name : "@restore");
	out->us = 500;
	out->pages = 10;
	return 0;
}

static const struct e2b_backend_ops ops = {
	.create = t_create,
	.list = t_list,
	.get = t_get,
	.kill = t_kill,
	.set_timeout = t_set_timeout,
	.set_network = t_set_network,
	.cp_create = t_cp_create,
	.cp_remove = t_cp_remove,
	.rollback = t_rollback,
	.proc_start = t_proc_start,
	.proc_next = t_proc_next,
	.proc_close = t_proc_close,
	.proc_signal = t_signal,
	.proc_connect = (void *)t_nosys,
	.proc_list = (void *)t_nosys,
	.proc_input = (void *)t_nosys,
	.proc_close_stdin = (void *)t_nosys,
	.fs_stat = (void *)t_nosys,
	.fs_list = (void *)t_nosys,
	.fs_mkdir = (void *)t_nosys,
	.fs_move = (void *)t_nosys,
	.fs_remove = (void *)t_nosys,
	.file_read = (void *)t_nosys,
	.file_write = (void *)t_nosys,
};

/* --- requests --- */

struct hdrs {
	const char *k[8], *v[8];
	int n;
};

static const char *lookup(void *ctx, const char *name)
{
	struct hdrs *h = ctx;
	int i;

	for (i = 0; i < h->n; i++)
		if (!strcasecmp(h->k[i], name))
			return h->v[i];
	return NULL;
}

static const char *no_query(void *ctx, const char *name)
{
	return NULL;
}

static struct e2b_keys keys;
static struct e2b_api api;

static void setup(void)
{
	if (!keys.n)
		ASSERT_EQ(e2b_keys_add(&keys, "e2b_key"), 0);
	api.keys = &keys;
	api.backend.ops = &ops;
	/*
	 * Nothing here writes the host's behaviour log; and a log that cannot
	 * be written never fails a request (every test below passes so).
	 */
	setenv("CUBE_AUDIT_DIR", "/proc/cube-audit-unwritable", 1);
	calls = creates = kills = timeouts = net_sets = 0;
	api.domain = NULL;
}

static unsigned int do_req(enum e2b_plane plane, const char *method,
			   const char *path, struct hdrs *h, const char *body,
			   size_t len, struct e2b_response *resp)
{
	struct e2b_request req = {
		.plane = plane, .method = method, .path = path,
		.header = lookup, .query = no_query, .ctx = h,
		.body = body, .body_len = len,
	};

	e2b_dispatch(&api, &req, resp);
	return resp->status;
}

static struct hdrs keyed = { { "X-API-Key" }, { "e2b_key" }, 1 };

static int code_of(const struct e2b_response *r)
{
	struct json_object *o = e2b_json_parse(r->body, r->len, NULL), *c;
	int code = -1;

	if (o && json_object_object_get_ex(o, "code", &c))
		code = json_object_get_int(c);
	json_object_put(o);
	return code;
}

TEST(api_key_required)
{
	struct hdrs none = { { 0 }, { 0 }, 0 };
	struct hdrs wrong = { { "X-API-Key" }, { "e2b_kez" }, 1 };
	struct hdrs bearer = { { "Authorization" }, { "Bearer e2b_key" }, 1 };
	struct e2b_response r;

	setup();
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/v2/sandboxes", &none, NULL, 0, &r), 401);
	ASSERT_EQ(code_of(&r), 401);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "DELETE", "/sandboxes/7", &wrong, NULL, 0, &r), 401);
	e2b_response_free(&r);
	ASSERT_EQ(calls, 0);
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/v2/sandboxes", &bearer, NULL, 0, &r), 200);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/v2/sandboxes", &keyed, NULL, 0, &r), 200);
	ASSERT_TRUE(strstr(r.body, "\"sandboxID\":\"7\"") != NULL);
	/* a listing never leaks envd tokens */
	ASSERT_TRUE(strstr(r.body, "tok7") == NULL);
	e2b_response_free(&r);
	/* health needs no key */
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/health", &none, NULL, 0, &r), 200);
	e2b_response_free(&r);
}

TEST(routing_errors)
{
	struct e2b_response r;

	setup();
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/nope", &keyed, NULL, 0, &r), 404);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "PATCH", "/sandboxes/7", &keyed, NULL, 0, &r), 405);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/sandboxes/a.b", &keyed, NULL, 0, &r), 404);
	ASSERT_EQ(code_of(&r), 404);
	e2b_response_free(&r);
	ASSERT_EQ(calls, 0);
}

TEST(create)
{
	static const char good[] = "{\"templateID\":\"base\",\"timeout\":60}";
	static const char unknown[] = "{\"templateID\":\"other\"}";
	struct e2b_response r;

	setup();
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed, "{", 1, &r), 400);
	ASSERT_EQ(code_of(&r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 "{\"templateID\":\"base\",\"timeout\":-1}", 34, &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(creates, 0);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 unknown, strlen(unknown), &r), 404);
	ASSERT_TRUE(strstr(r.body, "other") != NULL);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 good, strlen(good), &r), 201);
	ASSERT_STREQ(r.content_type, E2B_CT_JSON);
	ASSERT_TRUE(strstr(r.body, "\"envdAccessToken\":\"tok7\"") != NULL);
	ASSERT_TRUE(strstr(r.body, "\"envdVersion\"") != NULL);
	e2b_response_free(&r);
}

TEST(create_network)
{
	static const char bad[] = "{\"templateID\":\"base\",\"network\":"
		"{\"allowOut\":[\"example.com\"]}}";
	static const char many[] = "{\"templateID\":\"base\",\"network\":"
		"{\"denyOut\":\"1.1.1.1\"}}";
	static const char good[] = "{\"templateID\":\"base\",\"allow_internet_access\":false,"
		"\"network\":{\"allowOut\":[\"1.1.1.1\"]}}";
	struct e2b_response r;

	setup();
	/* refused before anything is made */
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 bad, strlen(bad), &r), 400);
	ASSERT_EQ(code_of(&r), 400);
	ASSERT_TRUE(strstr(r.body, "example.com") != NULL);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 many, strlen(many), &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(creates, 0);
	/* the domain of the ports, when the server has one */
	api.domain = "localhost:3001";
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 good, strlen(good), &r), 201);
	ASSERT_TRUE(strstr(r.body, "\"domain\":\"localhost:3001\"") != NULL);
	e2b_response_free(&r);
	ASSERT_EQ(creates, 1);
}

TEST(update_network)
{
	static const char good[] = "{\"allowOut\":[\"1.1.1.1\"],\"allow_internet_access\":false}";
	static const char bad[] = "{\"denyOut\":[\"10.0.0.1/8\"]}";
	struct e2b_response r;

	setup();
	ASSERT_EQ(do_req(E2B_PLANE_API, "PUT", "/sandboxes/7/network", &keyed,
			 bad, strlen(bad), &r), 400);
	ASSERT_TRUE(strstr(r.body, "host bits") != NULL);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "PUT", "/sandboxes/7/network", &keyed,
			 "{", 1, &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(net_sets, 0);
	ASSERT_EQ(do_req(E2B_PLANE_API, "PUT", "/sandboxes/8/network", &keyed,
			 good, strlen(good), &r), 404);
	e2b_response_free(&r);
	ASSERT_EQ(net_sets, 0);
	ASSERT_EQ(do_req(E2B_PLANE_API, "PUT", "/sandboxes/7/network", &keyed,
			 good, strlen(good), &r), 204);
	e2b_response_free(&r);
	ASSERT_EQ(net_sets, 1);
	ASSERT_EQ(last_internet, E2B_FALSE);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/network", &keyed,
			 good, strlen(good), &r), 405);
	e2b_response_free(&r);
}

TEST(oversized_body_changes_nothing)
{
	struct e2b_request req = {
		.plane = E2B_PLANE_API, .method = "POST", .path = "/v2/sandboxes",
		.header = lookup, .query = no_query, .ctx = &keyed,
		.body_too_large = true,
	};
	struct e2b_response r;

	setup();
	e2b_dispatch(&api, &req, &r);
	ASSERT_EQ(r.status, 413);
	e2b_response_free(&r);
	ASSERT_EQ(creates, 0);
}

TEST(kill_and_timeout)
{
	struct e2b_response r;

	setup();
	ASSERT_EQ(do_req(E2B_PLANE_API, "DELETE", "/sandboxes/8", &keyed, NULL, 0, &r), 404);
	ASSERT_EQ(code_of(&r), 404);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "DELETE", "/sandboxes/7", &keyed, NULL, 0, &r), 204);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/timeout", &keyed, NULL, 0, &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(timeouts, 0);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/timeout", &keyed,
			 "{\"timeout\":30}", 14, &r), 204);
	e2b_response_free(&r);
	ASSERT_EQ(last_timeout, 30);
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/sandboxes/7", &keyed, NULL, 0, &r), 200);
	ASSERT_TRUE(strstr(r.body, "\"state\":\"running\"") != NULL);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/pause", &keyed, NULL, 0, &r), 501);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/8/pause", &keyed, NULL, 0, &r), 404);
	e2b_response_free(&r);
	/* this backend cannot fork: a bad body is still a 400 first */
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/fork", &keyed,
			 "{\"count\":0}", 11, &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/8/fork", &keyed, NULL, 0, &r), 404);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/fork", &keyed, NULL, 0, &r), 501);
	e2b_response_free(&r);
}

/* the same status, content type and body */
static bool same_reply(const struct e2b_response *a,
		       const struct e2b_response *b)
{
	return a->status == b->status && a->len == b->len &&
	       !strcmp(a->content_type ? a->content_type : "",
		       b->content_type ? b->content_type : "") &&
	       (!a->len || !memcmp(a->body, b->body, a->len));
}

TEST(envd_routing_and_tokens)
{
	struct hdrs none = { { 0 }, { 0 }, 0 };
	struct hdrs unknown = { { "E2b-Sandbox-Id", "X-Access-Token" }, { "8", "tok7" }, 2 };
	struct hdrs badtok = { { "E2b-Sandbox-Id", "X-Access-Token" }, { "7", "tok8" }, 2 };
	struct hdrs notok = { { "E2b-Sandbox-Id" }, { "7" }, 1 };
	struct hdrs ok = { { "E2b-Sandbox-Id", "X-Access-Token" }, { "7", "tok7" }, 2 };
	struct hdrs baduser = { { "E2b-Sandbox-Id", "X-Access-Token", "Authorization" },
				{ "7", "tok7", "Basic Li4veDo=" }, 3 };
	static const char sig[] = "{\"process\":{\"pid\":42},\"signal\":\"SIGNAL_SIGKILL\"}";
	struct e2b_response r, r2;

	setup();
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/files", &none, NULL, 0, &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/files", &unknown, NULL, 0, &r), 502);
	/* a wrong or missing token: word for word an unknown sandbox */
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/files", &badtok, NULL, 0, &r2), 502);
	EXPECT_TRUE(same_reply(&r, &r2));
	e2b_response_free(&r2);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/files", &notok, NULL, 0, &r2), 502);
	EXPECT_TRUE(same_reply(&r, &r2));
	e2b_response_free(&r2);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/files", &baduser, NULL, 0, &r), 401);
	e2b_response_free(&r);
	/* a unary RPC answers with Connect error bodies, the same way */
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/SendSignal",
			 &unknown, sig, strlen(sig), &r), 503);
	ASSERT_TRUE(strstr(r.body, "\"unavailable\"") != NULL);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/SendSignal",
			 &badtok, sig, strlen(sig), &r2), 503);
	EXPECT_TRUE(same_reply(&r, &r2));
	e2b_response_free(&r2);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/SendSignal",
			 &ok, "{}", 2, &r), 400);
	ASSERT_TRUE(strstr(r.body, "\"invalid_argument\"") != NULL);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/SendSignal",
			 &ok, sig, strlen(sig), &r), 200);
	ASSERT_STREQ(r.body, "{}");
	e2b_response_free(&r);
	/* /files without a path */
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/files", &ok, NULL, 0, &r), 400);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "GET", "/health", &ok, NULL, 0, &r), 204);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/WatchDir",
			 &ok, NULL, 0, &r), 200);
	e2b_response_free(&r);
}

/* Read a whole stream; return the frames' flags and payloads joined. */
static char *drain(struct e2b_response *r, int *nframes, uint8_t *last_flags)
{
	static char out[4096];
	uint8_t buf[256], *msg, flags;
	struct cf_decoder d;
	size_t used, len, off = 0;
	ssize_t n;

	*nframes = 0;
	out[0] = '\0';
	cf_decoder_init(&d, 0);
	if (r->stream) {
		while ((n = r->stream->read(r->stream, buf, 7)) > 0) {
			size_t p = 0;

			while (p < (size_t)n) {
				int ret = cf_decode(&d, buf + p, n - p, &used);

				p += used;
				if (ret == 1) {
					msg = cf_take(&d, &flags, &len);
					off += snprintf(out + off, sizeof(out) - off,
							"%s|", (char *)msg);
					*last_flags = flags;
					(*nframes)++;
					free(msg);
				}
			}
		}
	} else {
		cf_decode(&d, r->body, r->len, &used);
		msg = cf_take(&d, &flags, &len);
		if (msg) {
			snprintf(out, sizeof(out), "%s|", (char *)msg);
			*last_flags = flags;
			*nframes = 1;
			free(msg);
		}
	}
	cf_decoder_free(&d);
	return out;
}

TEST(process_stream)
{
	struct hdrs ok = { { "E2b-Sandbox-Id", "X-Access-Token" }, { "7", "tok7" }, 2 };
	static const char start[] = "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"]}}";
	uint8_t env[256], flags = 0;
	struct e2b_response r;
	size_t len = strlen(start);
	char *s;
	int n;

	setup();
	cf_put_header(env, 0, len);
	memcpy(env + CF_HDR_LEN, start, len);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &ok,
			 (char *)env, CF_HDR_LEN + len, &r), 200);
	ASSERT_STREQ(r.content_type, E2B_CT_CONNECT_JSON);
	s = drain(&r, &n, &flags);
	e2b_response_free(&r);
	ASSERT_EQ(n, 5);
	ASSERT_STREQ(s, "{\"event\":{\"start\":{\"pid\":42}}}|"
		     "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}|"
		     "{\"event\":{\"keepalive\":{}}}|"
		     "{\"event\":{\"end\":{\"exitCode\":1,\"exited\":true,\"status\":\"exit status 1\"}}}|"
		     "{}|");
	ASSERT_EQ(flags, CF_FLAG_END_STREAM);
	ASSERT_EQ(last_start_timeout, 0);
}

/* Start's deadline (Connect-Timeout-Ms) is the command's: it reaches the backend */
TEST(start_deadline)
{
	struct hdrs h = { { "E2b-Sandbox-Id", "X-Access-Token", "Connect-Timeout-Ms" },
			  { "7", "tok7", "1500" }, 3 };
	static const char start[] = "{\"process\":{\"cmd\":\"/bin/bash\"}}";
	static const char *const bad[] = { "", "-1", "12a", "12345678901" };
	uint8_t env[256];
	struct e2b_response r;
	size_t len = strlen(start), i;

	setup();
	cf_put_header(env, 0, len);
	memcpy(env + CF_HDR_LEN, start, len);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &h,
			 (char *)env, CF_HDR_LEN + len, &r), 200);
	e2b_response_free(&r);
	ASSERT_EQ(last_start_timeout, 1500);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h.v[2] = bad[i];
		ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start",
				 &h, (char *)env, CF_HDR_LEN + len, &r), 200);
		e2b_response_free(&r);
		ASSERT_EQ(last_start_timeout, 0);
	}
}

TEST(process_stream_errors)
{
	struct hdrs ok = { { "E2b-Sandbox-Id", "X-Access-Token" }, { "7", "tok7" }, 2 };
	struct hdrs badtok = { { "E2b-Sandbox-Id", "X-Access-Token" }, { "7", "x" }, 2 };
	static const char start[] = "{\"process\":{\"cmd\":\"/bin/nope\"}}";
	uint8_t env[256], flags = 0;
	struct e2b_response r;
	size_t len = strlen(start);
	char *s;
	int n;

	setup();
	/* not enveloped */
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &ok,
			 start, len, &r), 200);
	s = drain(&r, &n, &flags);
	e2b_response_free(&r);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(flags, CF_FLAG_END_STREAM);
	ASSERT_TRUE(strstr(s, "invalid_argument") != NULL);
	/* a truncated envelope */
	cf_put_header(env, 0, len + 10);
	memcpy(env + CF_HDR_LEN, start, len);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &ok,
			 (char *)env, CF_HDR_LEN + len, &r), 200);
	s = drain(&r, &n, &flags);
	e2b_response_free(&r);
	ASSERT_TRUE(strstr(s, "invalid_argument") != NULL);
	/* the backend refuses: not_found in the end message */
	cf_put_header(env, 0, len);
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &ok,
			 (char *)env, CF_HDR_LEN + len, &r), 200);
	s = drain(&r, &n, &flags);
	e2b_response_free(&r);
	ASSERT_TRUE(strstr(s, "not_found") != NULL);
	/* a bad token: as an unknown sandbox */
	ASSERT_EQ(do_req(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &badtok,
			 (char *)env, CF_HDR_LEN + len, &r), 200);
	s = drain(&r, &n, &flags);
	e2b_response_free(&r);
	ASSERT_TRUE(strstr(s, "unavailable") != NULL);
	ASSERT_TRUE(strstr(s, "sandbox not found") != NULL);
}

/* GET /v2/sandboxes with query @q (also its headers); the ids, in order */
static unsigned int list_ids(struct hdrs *q, char *ids, size_t len,
			     char *token, size_t tlen)
{
	struct e2b_request req = {
		.plane = E2B_PLANE_API, .method = "GET", .path = "/v2/sandboxes",
		.header = lookup, .query = lookup, .ctx = q,
	};
	struct e2b_response r = { 0 };
	struct json_object *arr;
	size_t i;

	ids[0] = token[0] = '\0';
	e2b_dispatch(&api, &req, &r);
	if (r.status == 200) {
		arr = json_tokener_parse(r.body);
		for (i = 0; arr && i < json_object_array_length(arr); i++) {
			struct json_object *id;

			json_object_object_get_ex(json_object_array_get_idx(arr, i),
						  "sandboxID", &id);
			snprintf(ids + strlen(ids), len - strlen(ids), "%s%s",
				 i ? "," : "", json_object_get_string(id));
		}
		json_object_put(arr);
		if (r.next_token)
			snprintf(token, tlen, "%s", r.next_token);
	}
	e2b_response_free(&r);
	return r.status;
}

/*
 * Listing: newest first unless order=asc, limit per page with the cursor
 * in X-Next-Token until the last page; metadata filter values as the SDK
 * sends them (encoded three times; the query arrives decoded once).
 */
TEST(list_pages_and_filters)
{
	struct hdrs q = { { "X-API-Key", "limit", "nextToken", "order" },
			  { "e2b_key", "2", NULL, NULL }, 4 };
	char ids[256], tok[128], tok2[128];

	setup();
	list_n = 5;
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 200);
	ASSERT_STREQ(ids, "5,4");
	ASSERT_NE(tok[0], 0);
	q.v[2] = tok;
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok2, sizeof(tok2)), 200);
	ASSERT_STREQ(ids, "3,2");
	q.v[2] = tok2;
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 200);
	ASSERT_STREQ(ids, "1");
	ASSERT_EQ(tok[0], 0);

	q.v[2] = NULL;
	q.v[3] = "asc";
	q.v[1] = "3";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 200);
	ASSERT_STREQ(ids, "1,2,3");
	q.v[2] = tok;
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok2, sizeof(tok2)), 200);
	ASSERT_STREQ(ids, "4,5");
	ASSERT_EQ(tok2[0], 0);

	/* bad values are refused */
	q.v[1] = "0";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 400);
	q.v[1] = "101";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 400);
	q.v[1] = "2";
	q.v[2] = "garbage";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 400);
	q.v[2] = NULL;
	q.v[3] = "sideways";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 400);

	/* metadata: spaces, '/', '+', '@', ':' */
	q.k[3] = "metadata";
	q.v[3] = "tag=a%2520b%252Fc%252Bd%2540e%253Af";
	q.v[1] = "100";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 200);
	ASSERT_STREQ(ids, "5,3,1");
	q.v[3] = "tag=a%2520b";
	ASSERT_EQ(list_ids(&q, ids, sizeof(ids), tok, sizeof(tok)), 200);
	ASSERT_STREQ(ids, "");
	list_n = 0;
}

/* the whole behaviour log of @sandbox in @dir, NUL-ended ("" when none) */
static char *audit_text(const char *dir, const char *sandbox)
{
	static char buf[65536];
	char path[256];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.jsonl", dir, sandbox);
	buf[0] = 0;
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

TEST(control_plane_behaviour_log)
{
	static const char body[] = "{\"templateID\":\"base\",\"timeout\":60,"
		"\"envVars\":{\"API_TOKEN\":\"planted-env-value\"},"
		"\"metadata\":{\"owner\":\"planted-meta-value\"}}";
	char dir[] = "/tmp/cube-audit-http-XXXXXX";
	struct e2b_response r;
	char *log;

	setup();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	setenv("CUBE_AUDIT_DIR", dir, 1);
	/* a refused request writes nothing */
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed, "{", 1, &r), 400);
	e2b_response_free(&r);
	EXPECT_STREQ(audit_text(dir, "7"), "");
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/v2/sandboxes", &keyed,
			 body, strlen(body), &r), 201);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/timeout", &keyed,
			 "{\"timeout\":30}", 14, &r), 204);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/checkpoints", &keyed,
			 "{\"name\":\"before\"}", 17, &r), 201);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "POST", "/sandboxes/7/rollback", &keyed,
			 "{\"checkpoint\":\"before\"}", 23, &r), 200);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "DELETE", "/sandboxes/7/checkpoints/before",
			 &keyed, NULL, 0, &r), 204);
	e2b_response_free(&r);
	ASSERT_EQ(do_req(E2B_PLANE_API, "DELETE", "/sandboxes/7", &keyed, NULL, 0, &r), 204);
	e2b_response_free(&r);
	/* reads are not logged */
	ASSERT_EQ(do_req(E2B_PLANE_API, "GET", "/v2/sandboxes", &keyed, NULL, 0, &r), 200);
	e2b_response_free(&r);

	log = audit_text(dir, "7");
	TH_LOG("%s", log);
	EXPECT_TRUE(strstr(log, "\"event\":\"created\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"key\":\"key-1\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"template\":\"base\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"env\":[\"API_TOKEN\"]") != NULL);
	EXPECT_TRUE(strstr(log, "\"metadata\":[\"owner\"]") != NULL);
	EXPECT_TRUE(strstr(log, "\"event\":\"timeout_set\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"timeout_s\":30") != NULL);
	EXPECT_TRUE(strstr(log, "\"event\":\"checkpoint\",\"by\":\"api\",\"key\":\"key-1\",\"status\":201,\"checkpoint\":\"before\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"event\":\"rollback\",\"by\":\"api\",\"key\":\"key-1\",\"status\":200,\"checkpoint\":\"before\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"event\":\"checkpoint_rm\",\"by\":\"api\",\"key\":\"key-1\",\"status\":204,\"checkpoint\":\"before\"") != NULL);
	EXPECT_TRUE(strstr(log, "\"event\":\"killed\"") != NULL);
	EXPECT_TRUE(strstr(log, "listed") == NULL);
	/* never a value, a key or a token */
	EXPECT_TRUE(strstr(log, "planted") == NULL);
	EXPECT_TRUE(strstr(log, "e2b_key") == NULL);
	EXPECT_TRUE(strstr(log, "tok7") == NULL);
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/7.jsonl", dir);
		unlink(path);
		rmdir(dir);
	}
}

TEST_MAIN()
