// SPDX-License-Identifier: GPL-2.0
/*
 * json_test: request bodies to structures (with every kind of malformed
 * or out-of-range input), structures to response bodies.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_json.h"
#include "cube_test.h"

#define P(s)	s, strlen(s)

static const char *str_of(struct json_object *o, const char *path1,
			  const char *path2)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, path1, &v))
		return NULL;
	if (path2 && !json_object_object_get_ex(v, path2, &v))
		return NULL;
	return json_object_get_string(v);
}

TEST(parse_rejects_non_objects)
{
	char err[E2B_MSG_MAX];

	ASSERT_TRUE(e2b_json_parse(P("[]"), err) == NULL);
	ASSERT_TRUE(strstr(err, "object") != NULL);
	ASSERT_TRUE(e2b_json_parse(P("\"x\""), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{"), err) == NULL);
	ASSERT_TRUE(strstr(err, "malformed") != NULL);
	ASSERT_TRUE(e2b_json_parse(P("{} {}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{'a':1}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{\"a\":1,}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{\"a\":NaN}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{\"a\":[1e999]}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{\"a\":\"\xff\"}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse(P("{\"a\":01}"), err) == NULL);
	ASSERT_TRUE(e2b_json_parse("{\"a\":\0}", 7, err) == NULL);
	ASSERT_TRUE(strstr(err, "NUL") != NULL);
	ASSERT_TRUE(e2b_json_parse("", 0, err) == NULL);
	ASSERT_TRUE(e2b_json_parse(NULL, 0, err) == NULL);
}

TEST(parse_accepts_whitespace)
{
	struct json_object *o = e2b_json_parse(P(" {\"a\": 1}\r\n"), NULL);

	ASSERT_TRUE(o != NULL);
	json_object_put(o);
	/* a quote inside a string is fine, so is an escaped double quote */
	o = e2b_json_parse(P("{\"a\":\"it's \\\"x\\\"\",\"b\":1.5}"), NULL);
	ASSERT_TRUE(o != NULL);
	json_object_put(o);
}

TEST(new_sandbox_full)
{
	struct e2b_new_sandbox r;
	char err[E2B_MSG_MAX];

	ASSERT_EQ(e2b_parse_new_sandbox(P("{\"templateID\":\"base\",\"timeout\":300,"
		"\"metadata\":{\"k\":\"v\"},\"envVars\":{\"A\":\"1\",\"B\":\"2\"},"
		"\"allow_internet_access\":false,\"autoPause\":true,"
		"\"unknown\":[1,2]}"), &r, err), 0);
	ASSERT_STREQ(r.template_id, "base");
	ASSERT_EQ(r.timeout, 300);
	ASSERT_EQ(r.metadata.n, 1);
	ASSERT_STREQ(e2b_kvs_get(&r.metadata, "k"), "v");
	ASSERT_EQ(r.env.n, 2);
	ASSERT_STREQ(e2b_kvs_get(&r.env, "B"), "2");
	ASSERT_EQ(r.net.internet, E2B_FALSE);
	ASSERT_TRUE(r.auto_pause);
	e2b_new_sandbox_free(&r);
}

TEST(new_sandbox_defaults)
{
	struct e2b_new_sandbox r;

	ASSERT_EQ(e2b_parse_new_sandbox(P("{\"templateID\":\"a.b-c_1\",\"metadata\":null}"),
					&r, NULL), 0);
	ASSERT_EQ(r.timeout, E2B_TIMEOUT_DEFAULT);
	ASSERT_EQ(r.net.internet, E2B_UNSET);
	ASSERT_TRUE(e2b_net_is_default(&r.net));
	ASSERT_EQ(r.metadata.n, 0);
}

static void expect_bad_new(const char *body, const char *needle)
{
	struct e2b_new_sandbox r;
	char err[E2B_MSG_MAX] = "";

	EXPECT_EQ(e2b_parse_new_sandbox(body, strlen(body), &r, err), -EINVAL);
	if (!strstr(err, needle))
		TH_LOG("body %s: error '%s' lacks '%s'", body, err, needle);
	EXPECT_TRUE(strstr(err, needle) != NULL);
	/* nothing is left behind in a failed parse */
	EXPECT_EQ(r.metadata.n, 0);
	EXPECT_EQ(r.env.n, 0);
	EXPECT_STREQ(r.template_id, "");
}

TEST(new_sandbox_rejects)
{
	expect_bad_new("{}", "templateID");
	expect_bad_new("{\"templateID\":5}", "templateID");
	expect_bad_new("{\"templateID\":\"\"}", "templateID");
	expect_bad_new("{\"templateID\":\"../etc\"}", "template");
	expect_bad_new("{\"templateID\":\"a b\"}", "template");
	expect_bad_new("{\"templateID\":\"a\\u0000b\"}", "NUL");
	expect_bad_new("{\"templateID\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
		       "longer");
	expect_bad_new("{\"templateID\":\"b\",\"timeout\":-1}", "timeout");
	expect_bad_new("{\"templateID\":\"b\",\"timeout\":86401}", "timeout");
	expect_bad_new("{\"templateID\":\"b\",\"timeout\":1.5}", "timeout");
	expect_bad_new("{\"templateID\":\"b\",\"timeout\":\"10\"}", "timeout");
	expect_bad_new("{\"templateID\":\"b\",\"timeout\":99999999999999999999}", "timeout");
	expect_bad_new("{\"templateID\":\"b\",\"metadata\":[]}", "metadata");
	expect_bad_new("{\"templateID\":\"b\",\"metadata\":{\"a\":1}}", "'a'");
	expect_bad_new("{\"templateID\":\"b\",\"metadata\":{\"\":\"x\"}}", "key");
	expect_bad_new("{\"templateID\":\"b\",\"envVars\":{\"A\":\"1\",\"B\":true}}", "'B'");
	expect_bad_new("{\"templateID\":\"b\",\"autoPause\":1}", "autoPause");
	expect_bad_new("{\"templateID\":\"b\",\"allow_internet_access\":\"no\"}",
		       "allow_internet_access");
	expect_bad_new("not json", "malformed");
}

TEST(new_sandbox_too_many_entries)
{
	char body[8192];
	size_t off;
	int i;

	off = sprintf(body, "{\"templateID\":\"b\",\"metadata\":{");
	for (i = 0; i <= E2B_META_MAX; i++)
		off += sprintf(body + off, "%s\"k%d\":\"v\"", i ? "," : "", i);
	sprintf(body + off, "}}");
	expect_bad_new(body, "entries");
}

TEST(timeout_body)
{
	unsigned int s = 0;
	bool given;
	char err[E2B_MSG_MAX];

	ASSERT_EQ(e2b_parse_timeout(P("{\"timeout\":60}"), true, &s, &given, err), 0);
	ASSERT_EQ(s, 60);
	ASSERT_TRUE(given);
	ASSERT_EQ(e2b_parse_timeout(P("{}"), true, &s, &given, err), -EINVAL);
	ASSERT_FALSE(given);
	ASSERT_EQ(e2b_parse_timeout(P("{}"), false, &s, &given, err), 0);
	ASSERT_FALSE(given);
	ASSERT_EQ(e2b_parse_timeout("", 0, false, &s, &given, err), 0);
	ASSERT_EQ(e2b_parse_timeout("", 0, true, &s, &given, err), -EINVAL);
	ASSERT_EQ(e2b_parse_timeout(P("{\"timeout\":true}"), true, &s, &given, err), -EINVAL);
	ASSERT_EQ(e2b_parse_timeout(P("{\"timeout\":-5}"), true, &s, &given, err), -EINVAL);
	ASSERT_EQ(s, 60);
}

TEST(fork_body)
{
	unsigned int secs, count;
	char err[E2B_MSG_MAX];

	ASSERT_EQ(e2b_parse_fork("", 0, &secs, &count, err), 0);
	ASSERT_EQ(secs, E2B_TIMEOUT_DEFAULT);
	ASSERT_EQ(count, 1);
	ASSERT_EQ(e2b_parse_fork(P("{\"timeout\":60,\"count\":3}"), &secs, &count, err), 0);
	ASSERT_EQ(secs, 60);
	ASSERT_EQ(count, 3);
	ASSERT_EQ(e2b_parse_fork(P("{\"count\":0}"), &secs, &count, err), -EINVAL);
	ASSERT_EQ(e2b_parse_fork(P("{\"count\":17}"), &secs, &count, err), -EINVAL);
	ASSERT_EQ(e2b_parse_fork(P("{\"timeout\":\"x\"}"), &secs, &count, err), -EINVAL);
	ASSERT_EQ(e2b_parse_fork(P("[1]"), &secs, &count, err), -EINVAL);
}

TEST(start_request)
{
	struct e2b_start r;
	char err[E2B_MSG_MAX];

	ASSERT_EQ(e2b_parse_start(P("{\"process\":{\"cmd\":\"/bin/bash\","
		"\"args\":[\"-l\",\"-c\",\"echo hi\"],\"envs\":{\"X\":\"1\"},"
		"\"cwd\":\"/tmp\"},\"stdin\":true,\"tag\":\"t\"}"), &r, err), 0);
	ASSERT_STREQ(r.proc.cmd, "/bin/bash");
	ASSERT_EQ(r.proc.nargs, 3);
	ASSERT_STREQ(r.proc.args[2], "echo hi");
	ASSERT_STREQ(e2b_kvs_get(&r.proc.envs, "X"), "1");
	ASSERT_STREQ(r.proc.cwd, "/tmp");
	ASSERT_TRUE(r.stdin_open);
	ASSERT_STREQ(r.tag, "t");
	ASSERT_FALSE(r.pty);
	e2b_start_free(&r);

	ASSERT_EQ(e2b_parse_start(P("{\"process\":{\"cmd\":\"sh\"},"
		"\"pty\":{\"size\":{\"cols\":100,\"rows\":30}}}"), &r, err), 0);
	ASSERT_TRUE(r.pty);
	ASSERT_EQ(r.cols, 100);
	ASSERT_EQ(r.rows, 30);
	ASSERT_EQ(r.proc.nargs, 0);
	ASSERT_TRUE(r.proc.cwd == NULL);
	e2b_start_free(&r);
}

static void expect_bad_start(const char *body)
{
	struct e2b_start r;
	char err[E2B_MSG_MAX] = "";

	EXPECT_EQ(e2b_parse_start(body, strlen(body), &r, err), -EINVAL);
	EXPECT_TRUE(err[0] != '\0');
	EXPECT_TRUE(r.proc.cmd == NULL);
	EXPECT_TRUE(r.proc.args == NULL);
}

TEST(start_rejects)
{
	expect_bad_start("{}");
	expect_bad_start("{\"process\":[]}");
	expect_bad_start("{\"process\":{}}");
	expect_bad_start("{\"process\":{\"cmd\":\"\"}}");
	expect_bad_start("{\"process\":{\"cmd\":1}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\",\"args\":\"-c\"}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\",\"args\":[\"ok\",2]}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\",\"envs\":{\"A=B\":\"x\"}}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\",\"envs\":{\"A\":null}}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\"},\"stdin\":\"yes\"}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\"},\"pty\":{\"size\":{\"cols\":0}}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\"},\"pty\":{\"size\":{\"rows\":99999}}}");
	expect_bad_start("{\"process\":{\"cmd\":\"sh\"},\"pty\":true}");
}

TEST(selectors_and_signals)
{
	struct e2b_selector s;
	char err[E2B_MSG_MAX];
	int sig = 0;

	ASSERT_EQ(e2b_parse_selector_req(P("{\"process\":{\"pid\":12}}"), &s, err), 0);
	ASSERT_EQ(s.pid, 12);
	ASSERT_TRUE(s.tag == NULL);
	ASSERT_EQ(e2b_parse_selector_req(P("{\"process\":{\"tag\":\"x\"}}"), &s, err), 0);
	ASSERT_STREQ(s.tag, "x");
	e2b_selector_free(&s);
	ASSERT_EQ(e2b_parse_selector_req(P("{\"process\":{}}"), &s, err), -EINVAL);
	ASSERT_EQ(e2b_parse_selector_req(P("{\"process\":{\"pid\":0}}"), &s, err), -EINVAL);
	ASSERT_EQ(e2b_parse_selector_req(P("{\"process\":{\"pid\":-3}}"), &s, err), -EINVAL);
	ASSERT_EQ(e2b_parse_selector_req(P("{\"process\":{\"pid\":4294967296}}"), &s, err), -EINVAL);
	ASSERT_EQ(e2b_parse_selector_req(P("{}"), &s, err), -EINVAL);

	ASSERT_EQ(e2b_parse_signal(P("{\"process\":{\"pid\":3},\"signal\":\"SIGNAL_SIGKILL\"}"),
				   &s, &sig, err), 0);
	ASSERT_EQ(sig, SIGKILL);
	ASSERT_EQ(e2b_parse_signal(P("{\"process\":{\"pid\":3},\"signal\":15}"),
				   &s, &sig, err), 0);
	ASSERT_EQ(sig, SIGTERM);
	ASSERT_EQ(e2b_parse_signal(P("{\"process\":{\"pid\":3},\"signal\":\"SIGNAL_SIGHUP\"}"),
				   &s, &sig, err), -EINVAL);
	ASSERT_EQ(e2b_parse_signal(P("{\"process\":{\"pid\":3},\"signal\":1}"),
				   &s, &sig, err), -EINVAL);
	ASSERT_EQ(e2b_parse_signal(P("{\"process\":{\"pid\":3}}"), &s, &sig, err), -EINVAL);
	ASSERT_EQ(e2b_parse_signal(P("{\"process\":{\"tag\":\"t\"},\"signal\":[]}"),
				   &s, &sig, err), -EINVAL);
	ASSERT_TRUE(s.tag == NULL);
}

TEST(send_input)
{
	struct e2b_selector s;
	unsigned char *d;
	size_t n;
	bool pty;
	char err[E2B_MSG_MAX];

	ASSERT_EQ(e2b_parse_input(P("{\"process\":{\"pid\":3},\"input\":{\"stdin\":\"aGVsbG8K\"}}"),
				  &s, &d, &n, &pty, err), 0);
	ASSERT_EQ(n, 6);
	ASSERT_EQ(memcmp(d, "hello\n", 6), 0);
	ASSERT_FALSE(pty);
	free(d);
	/* unpadded base64, as some writers send */
	ASSERT_EQ(e2b_parse_input(P("{\"process\":{\"pid\":3},\"input\":{\"pty\":\"aGk\"}}"),
				  &s, &d, &n, &pty, err), 0);
	ASSERT_EQ(n, 2);
	ASSERT_TRUE(pty);
	free(d);
	ASSERT_EQ(e2b_parse_input(P("{\"process\":{\"pid\":3},\"input\":{\"stdin\":\"***\"}}"),
				  &s, &d, &n, &pty, err), -EINVAL);
	ASSERT_TRUE(d == NULL);
	ASSERT_EQ(e2b_parse_input(P("{\"process\":{\"pid\":3},\"input\":{}}"),
				  &s, &d, &n, &pty, err), -EINVAL);
	ASSERT_EQ(e2b_parse_input(P("{\"process\":{\"pid\":3}}"),
				  &s, &d, &n, &pty, err), -EINVAL);
}

TEST(fs_requests)
{
	char *p, *q, err[E2B_MSG_MAX];
	unsigned int depth;
	bool rec;

	ASSERT_EQ(e2b_parse_path(P("{\"path\":\"/home/user\"}"), &p, err), 0);
	ASSERT_STREQ(p, "/home/user");
	free(p);
	ASSERT_EQ(e2b_parse_path(P("{\"path\":\"\"}"), &p, err), -EINVAL);
	ASSERT_TRUE(p == NULL);
	ASSERT_EQ(e2b_parse_path(P("{\"path\":7}"), &p, err), -EINVAL);
	ASSERT_EQ(e2b_parse_path(P("{}"), &p, err), -EINVAL);

	ASSERT_EQ(e2b_parse_list_dir(P("{\"path\":\"/\",\"depth\":2}"), &p, &depth, err), 0);
	ASSERT_EQ(depth, 2);
	free(p);
	ASSERT_EQ(e2b_parse_list_dir(P("{\"path\":\"/\"}"), &p, &depth, err), 0);
	ASSERT_EQ(depth, 1);
	free(p);
	ASSERT_EQ(e2b_parse_list_dir(P("{\"path\":\"/\",\"depth\":-1}"), &p, &depth, err), -EINVAL);
	ASSERT_TRUE(p == NULL);
	ASSERT_EQ(e2b_parse_list_dir(P("{\"path\":\"/\",\"depth\":1000}"), &p, &depth, err), -EINVAL);

	ASSERT_EQ(e2b_parse_move(P("{\"source\":\"/a\",\"destination\":\"/b\"}"), &p, &q, err), 0);
	ASSERT_STREQ(p, "/a");
	ASSERT_STREQ(q, "/b");
	free(p);
	free(q);
	ASSERT_EQ(e2b_parse_move(P("{\"source\":\"/a\"}"), &p, &q, err), -EINVAL);
	ASSERT_TRUE(p == NULL && q == NULL);

	ASSERT_EQ(e2b_parse_watch(P("{\"path\":\"/a\",\"recursive\":true}"), &p, &rec, err), 0);
	ASSERT_TRUE(rec);
	free(p);
	ASSERT_EQ(e2b_parse_watch(P("{\"path\":\"/a\",\"recursive\":1}"), &p, &rec, err), -EINVAL);
	ASSERT_TRUE(p == NULL);
}

TEST(sandbox_json)
{
	struct e2b_sandbox sb = {
		.id = "17", .template_id = "base", .started_at = 0,
		.end_at = 60, .vcpus = 2, .memory_mb = 512,
		.envd_token = "tok",
	};
	struct json_object *o;

	ASSERT_EQ(e2b_kvs_add(&sb.metadata, "k", "v"), 0);
	o = e2b_json_sandbox(&sb, true);
	ASSERT_STREQ(str_of(o, "sandboxID", NULL), "17");
	ASSERT_STREQ(str_of(o, "templateID", NULL), "base");
	ASSERT_STREQ(str_of(o, "envdVersion", NULL), E2B_ENVD_VERSION);
	ASSERT_STREQ(str_of(o, "envdAccessToken", NULL), "tok");
	ASSERT_TRUE(str_of(o, "clientID", NULL) != NULL);
	json_object_put(o);
	o = e2b_json_sandbox(&sb, false);
	ASSERT_TRUE(str_of(o, "envdAccessToken", NULL) == NULL);
	json_object_put(o);
	o = e2b_json_listed(&sb);
	ASSERT_STREQ(str_of(o, "startedAt", NULL), "1970-01-01T00:00:00Z");
	ASSERT_STREQ(str_of(o, "endAt", NULL), "1970-01-01T00:01:00Z");
	ASSERT_STREQ(str_of(o, "state", NULL), "running");
	ASSERT_STREQ(str_of(o, "metadata", "k"), "v");
	ASSERT_STREQ(str_of(o, "cpuCount", NULL), "2");
	ASSERT_TRUE(str_of(o, "envdAccessToken", NULL) == NULL);
	json_object_put(o);
	e2b_sandbox_free(&sb);
}

TEST(error_json)
{
	struct json_object *o = e2b_json_error(404, "sandbox \"x\" not found");

	ASSERT_STREQ(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		     "{\"code\":404,\"message\":\"sandbox \\\"x\\\" not found\"}");
	json_object_put(o);
	o = e2b_json_end_stream(NULL, NULL);
	ASSERT_STREQ(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{}");
	json_object_put(o);
	o = e2b_json_end_stream("not_found", "no such process");
	ASSERT_STREQ(str_of(o, "error", "code"), "not_found");
	json_object_put(o);
}

TEST(proc_events)
{
	struct e2b_event ev = { .type = E2B_EV_START, .pid = 5 };
	struct json_object *o, *v;

	o = e2b_json_proc_event(&ev);
	ASSERT_TRUE(json_object_object_get_ex(o, "event", &v));
	ASSERT_TRUE(json_object_object_get_ex(v, "start", &v));
	ASSERT_TRUE(json_object_object_get_ex(v, "pid", &v));
	ASSERT_EQ(json_object_get_int(v), 5);
	json_object_put(o);

	ev.type = E2B_EV_STDERR;
	ev.data = "hi\n";
	ev.len = 3;
	o = e2b_json_proc_event(&ev);
	ASSERT_TRUE(json_object_object_get_ex(o, "event", &v));
	ASSERT_STREQ(str_of(v, "data", "stderr"), "aGkK");
	json_object_put(o);

	ev.type = E2B_EV_END;
	ev.exit_code = 3;
	o = e2b_json_proc_event(&ev);
	ASSERT_TRUE(json_object_object_get_ex(o, "event", &v));
	ASSERT_STREQ(str_of(v, "end", "exitCode"), "3");
	ASSERT_STREQ(str_of(v, "end", "exited"), "true");
	ASSERT_STREQ(str_of(v, "end", "status"), "exit status 3");
	json_object_put(o);

	ev.signal = SIGKILL;
	strcpy(ev.error, "killed");
	o = e2b_json_proc_event(&ev);
	ASSERT_TRUE(json_object_object_get_ex(o, "event", &v));
	ASSERT_STREQ(str_of(v, "end", "status"), "signal: KILL");
	ASSERT_STREQ(str_of(v, "end", "exited"), "false");
	ASSERT_STREQ(str_of(v, "end", "error"), "killed");
	json_object_put(o);

	o = e2b_json_keepalive();
	ASSERT_STREQ(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		     "{\"event\":{\"keepalive\":{}}}");
	json_object_put(o);
}

TEST(entry_json)
{
	struct e2b_entry e = {
		.name = "f.txt", .path = "/home/user/f.txt",
		.type = E2B_FT_FILE, .size = 12, .mode = 0100644,
		.owner = "user", .group = "user", .mtime = 0,
	};
	struct json_object *o = e2b_json_entry(&e), *arr;

	ASSERT_STREQ(str_of(o, "type", NULL), "FILE_TYPE_FILE");
	ASSERT_STREQ(str_of(o, "permissions", NULL), "-rw-r--r--");
	ASSERT_STREQ(str_of(o, "mode", NULL), "420");
	ASSERT_STREQ(str_of(o, "modifiedTime", NULL), "1970-01-01T00:00:00Z");
	ASSERT_TRUE(str_of(o, "symlinkTarget", NULL) == NULL);
	json_object_put(o);
	arr = e2b_json_upload(&e, 1);
	ASSERT_EQ(json_object_array_length(arr), 1);
	ASSERT_STREQ(str_of(json_object_array_get_idx(arr, 0), "type", NULL), "file");
	json_object_put(arr);
}

TEST_MAIN()
