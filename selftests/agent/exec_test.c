// SPDX-License-Identifier: GPL-2.0
/*
 * exec_test: commands through a native cube-agent: output, exit codes,
 * signals, ordering, large output, stdin, timeouts, concurrency, users,
 * and the errors of commands that cannot run.
 */
#include <poll.h>

#include "agent_test.h"

FIXTURE(agent) {
	struct agent_proc p;
	struct cube_agent *a;
};

FIXTURE_SETUP(agent)
{
	agent_spawn(&self->p, NULL, false);
	self->a = agent_connect(&self->p);
}

FIXTURE_TEARDOWN(agent)
{
	cube_agent_close(self->a);
	agent_stop(&self->p);
}

TEST_F(agent, ping)
{
	struct cube_agent_info info;

	ASSERT_EQ(cube_agent_ping(self->a, &info), 0);
	EXPECT_EQ(info.version, CUBE_AGENT_PROTO_VERSION);
	EXPECT_TRUE(info.ready);
	EXPECT_STREQ(info.sandbox_id, "");
	EXPECT_GT(strlen(info.hostname), 0);
}

TEST_F(agent, echo)
{
	const char *argv[] = { "echo", "hello", "world", NULL };
	struct cube_exec_status st;
	struct output o = { 0 };

	run(self->a, argv, &o, &st);
	ASSERT_STREQ(o.out, "hello world\n");
	EXPECT_EQ(o.err_len, 0);
	EXPECT_TRUE(st.exited);
	EXPECT_EQ(st.code, 0);
	EXPECT_FALSE(st.timed_out);
	output_free(&o);
	/* the connection serves the next request */
	run(self->a, argv, &o, &st);
	ASSERT_STREQ(o.out, "hello world\n");
	output_free(&o);
}

TEST_F(agent, exit_codes)
{
	static const char *const codes[] = { "0", "1", "3", "127", "255" };
	struct cube_exec_status st;
	struct output o = { 0 };
	char script[32];
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *argv[] = { "sh", "-c", script, NULL };

		snprintf(script, sizeof(script), "exit %s", codes[i]);
		run(self->a, argv, &o, &st);
		EXPECT_TRUE(st.exited);
		EXPECT_EQ(st.code, atoi(codes[i]));
		output_free(&o);
	}
}

TEST_F(agent, killed_by_signal)
{
	const char *argv[] = { "sh", "-c", "kill -TERM $$; sleep 5", NULL };
	struct cube_exec_status st;
	struct output o = { 0 };

	run(self->a, argv, &o, &st);
	EXPECT_FALSE(st.exited);
	EXPECT_EQ(st.signal, SIGTERM);
	output_free(&o);
}

struct acked_output {
	struct output o;
	const char *dir;
};

/*
 * Collects the output, then tells the command how many lines the test has
 * received: it creates DIR/seen.N, N counting the lines of both streams.
 */
static int collect_and_ack(void *ctx, enum cube_exec_event_type stream,
			   const void *data, size_t len)
{
	struct acked_output *c = ctx;
	char path[256];
	size_t i, n = 0;
	int fd;

	collect_output(&c->o, stream, data, len);
	for (i = 0; i < c->o.seq_len; i++)
		n += c->o.seq[i] == '\n';
	snprintf(path, sizeof(path), "%s/seen.%zu", c->dir, n);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	return 0;
}

/*
 * Each line is written only once the test has received the one before
 * (the command waits for DIR/seen.N, 5 s at most, else exits 9): the order
 * is the command's, not that of two streams racing.  An agent that held
 * back or merged a stream would leave the command waiting.
 */
TEST_F(agent, stdout_stderr_order)
{
	char script[512];
	const char *argv[] = { "sh", "-c", script, NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct acked_output c = { .dir = self->p.dir };
	struct cube_exec_status st;

	snprintf(script, sizeof(script),
		 "w() { i=0; while [ ! -e %s/seen.$1 ]; do "
		 "[ $i -lt 500 ] || exit 9; sleep 0.01; i=$((i + 1)); done; }; "
		 "echo o1; w 1; echo e1 >&2; w 2; echo o2; w 3; echo e2 >&2",
		 self->p.dir);
	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, collect_and_ack,
				  &c, &st), 0);
	EXPECT_STREQ(c.o.seq, "O:o1\nE:e1\nO:o2\nE:e2\n");
	EXPECT_STREQ(c.o.out, "o1\no2\n");
	EXPECT_STREQ(c.o.err, "e1\ne2\n");
	EXPECT_TRUE(st.exited);
	EXPECT_EQ(st.code, 0);
	output_free(&c.o);
}

struct pattern_check {
	size_t len;
	bool bad;
};

static int check_pattern(void *ctx, enum cube_exec_event_type stream,
			 const void *data, size_t len)
{
	struct pattern_check *c = ctx;
	const char *p = data;
	size_t i;

	if (stream != CUBE_EXEC_STDOUT)
		c->bad = true;
	/* "yes abcdefg" repeats 8 bytes */
	for (i = 0; i < len; i++)
		if (p[i] != "abcdefg\n"[(c->len + i) % 8])
			c->bad = true;
	c->len += len;
	return 0;
}

TEST_F(agent, output_10mib)
{
	const char *argv[] = { "sh", "-c", "yes abcdefg | head -c 10485760", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct pattern_check c = { 0 };
	struct cube_exec_status st;

	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, check_pattern, &c, &st), 0);
	EXPECT_EQ(c.len, 10485760);
	EXPECT_FALSE(c.bad);
	EXPECT_EQ(st.code, 0);
}

TEST_F(agent, stdin_3mib)
{
	const char *argv[] = { "cat", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	size_t len = 3 * 1024 * 1024 + 17, i;
	struct cube_exec_status st;
	struct output o = { 0 };
	char *in = malloc(len);

	ASSERT_TRUE(in != NULL);
	for (i = 0; i < len; i++)
		in[i] = (char)(i * 7 + (i >> 13));
	ASSERT_EQ(cube_agent_exec(self->a, &spec, in, len, collect_output, &o, &st), 0);
	ASSERT_EQ(o.out_len, len);
	EXPECT_EQ(memcmp(o.out, in, len), 0);
	EXPECT_EQ(st.code, 0);
	free(in);
	output_free(&o);
}

/* Waits for the next event, which must be of @type. */
static void next_event(struct cube_agent *a, struct cube_exec_event *ev,
		       enum cube_exec_event_type type)
{
	int err = cube_agent_exec_next(a, ev, 10000);

	if (err)
		TH_LOG("exec_next: %s (%s)", strerror(-err), cube_agent_error(a));
	ASSERT_EQ(err, 0);
	ASSERT_EQ(ev->type, type);
}

TEST_F(agent, stdin_interactive)
{
	const char *argv[] = { "cat", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct cube_exec_event ev;
	uint32_t pid = 0;

	ASSERT_EQ(cube_agent_exec_start(self->a, &spec, &pid), 0);
	EXPECT_GT(pid, 1);
	/* one request at a time on a connection */
	EXPECT_EQ(cube_agent_ping(self->a, &(struct cube_agent_info){ 0 }), -EBUSY);
	ASSERT_EQ(cube_agent_exec_stdin(self->a, "ping\n", 5), 5);
	next_event(self->a, &ev, CUBE_EXEC_STDOUT);
	ASSERT_EQ(ev.len, 5);
	EXPECT_EQ(memcmp(ev.data, "ping\n", 5), 0);
	ASSERT_EQ(cube_agent_exec_close_stdin(self->a), 0);
	EXPECT_EQ(cube_agent_exec_stdin(self->a, "x", 1), -EPIPE);
	next_event(self->a, &ev, CUBE_EXEC_EXIT);
	EXPECT_TRUE(ev.status.exited);
	EXPECT_EQ(ev.status.code, 0);
	EXPECT_EQ(cube_agent_exec_next(self->a, &ev, 100), -ESRCH);
	EXPECT_EQ(cube_agent_exec_stdin(self->a, "x", 1), -ESRCH);
	EXPECT_EQ(cube_agent_exec_signal(self->a, SIGTERM), -ESRCH);
}

TEST_F(agent, signal_running)
{
	const char *argv[] = { "sleep", "100", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct cube_exec_event ev;
	long long t0 = ms_now();

	ASSERT_EQ(cube_agent_exec_start(self->a, &spec, NULL), 0);
	EXPECT_EQ(cube_agent_exec_signal(self->a, 0), -EINVAL);
	EXPECT_EQ(cube_agent_exec_signal(self->a, 65), -EINVAL);
	ASSERT_EQ(cube_agent_exec_signal(self->a, SIGINT), 0);
	next_event(self->a, &ev, CUBE_EXEC_EXIT);
	EXPECT_FALSE(ev.status.exited);
	EXPECT_EQ(ev.status.signal, SIGINT);
	EXPECT_LT(ms_now() - t0, 5000);
}

TEST_F(agent, timeout)
{
	const char *argv[] = { "sh", "-c", "echo started; exec sleep 100", NULL };
	struct cube_exec_spec spec = { .argv = argv, .timeout_ms = 300 };
	struct cube_exec_status st;
	struct output o = { 0 };
	long long t0 = ms_now();

	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, collect_output, &o, &st), 0);
	EXPECT_STREQ(o.out, "started\n");
	EXPECT_TRUE(st.timed_out);
	EXPECT_FALSE(st.exited);
	EXPECT_EQ(st.signal, SIGKILL);
	EXPECT_GE(ms_now() - t0, 300);
	EXPECT_LT(ms_now() - t0, 5000);
	output_free(&o);
	spec.timeout_ms = CUBE_AGENT_MAX_TIMEOUT_MS + 1;
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -EINVAL);
}

/*
 * Each command marks that it started, then waits (up to 30 s) until all
 * have: run at the same time they all see each other, run one after the
 * other the first waits alone and says so.  No bound on the time taken,
 * which an emulated or busy host could overrun.
 */
TEST_F(agent, concurrent)
{
	enum { N = 4 };
	struct cube_agent *c[N];
	char script[N][512], want[16];
	struct output o[N];
	struct cube_exec_event ev;
	long long t0 = ms_now();
	const char *d = self->p.dir;
	int i, done = 0;

	memset(o, 0, sizeof(o));
	for (i = 0; i < N; i++) {
		const char *argv[] = { "sh", "-c", script[i], NULL };
		struct cube_exec_spec spec = { .argv = argv };

		snprintf(script[i], sizeof(script[i]),
			 "all() { test -e %s/go0 -a -e %s/go1 -a -e %s/go2 -a -e %s/go3; }; "
			 ": > %s/go%d; n=0; "
			 "while ! all && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done; "
			 "if all; then echo cmd%d; else echo alone%d; fi",
			 d, d, d, d, d, i, i, i);
		c[i] = agent_connect(&self->p);
		ASSERT_EQ(cube_agent_exec_start(c[i], &spec, NULL), 0);
	}
	while (done < N) {
		for (i = 0; i < N; i++) {
			if (cube_agent_exec_next(c[i], &ev, 10) != 0)
				continue;
			if (ev.type == CUBE_EXEC_STDOUT)
				collect_output(&o[i], ev.type, ev.data, ev.len);
			if (ev.type == CUBE_EXEC_EXIT)
				done++;
		}
		ASSERT_LT(ms_now() - t0, 45000);
	}
	TH_LOG("%d commands met in %lld ms", N, ms_now() - t0);
	for (i = 0; i < N; i++) {
		snprintf(want, sizeof(want), "cmd%d\n", i);
		EXPECT_STREQ(o[i].out, want);
		output_free(&o[i]);
		cube_agent_close(c[i]);
	}
}

TEST_F(agent, cwd_and_env)
{
	const char *argv[] = { "sh", "-c", "pwd; echo \"$FOO|$PATH|$HOME\"", NULL };
	const char *envp[] = { "FOO=bar baz", NULL };
	struct cube_exec_spec spec = { .argv = argv, .envp = envp, .cwd = "/tmp" };
	struct cube_exec_status st;
	struct output o = { 0 };

	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, collect_output, &o, &st), 0);
	EXPECT_STREQ(o.out,
		     "/tmp\nbar baz|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|/root\n");
	output_free(&o);
}

TEST_F(agent, user)
{
	const char *argv[] = { "sh", "-c", "id -u; id -g; pwd", NULL };
	struct cube_exec_spec spec = { .argv = argv, .user = "nobody" };
	struct cube_exec_status st;
	struct output o = { 0 };

	if (geteuid())
		SKIP("switching users needs root");
	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, collect_output, &o, &st), 0);
	/* nobody's home, /nonexistent, does not exist: "/" instead */
	EXPECT_STREQ(o.out, "65534\n65534\n/\n");
	output_free(&o);
	spec.user = "1234";
	spec.cwd = "/";
	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, collect_output, &o, &st), 0);
	EXPECT_STREQ(o.out, "1234\n1234\n/\n");
	output_free(&o);
	spec.user = "no-such-user";
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -ESRCH);
	EXPECT_TRUE(strstr(cube_agent_error(self->a), "no-such-user") != NULL);
}

TEST_F(agent, start_errors)
{
	const char *missing[] = { "/nonexistent/command", NULL };
	const char *notexec[] = { "/etc/passwd", NULL };
	const char *sh[] = { "true", NULL };
	const char *badenv[] = { "NOEQUALS", NULL };
	struct cube_exec_spec spec = { .argv = missing };
	struct cube_exec_status st;

	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -ENOENT);
	EXPECT_TRUE(strstr(cube_agent_error(self->a), "/nonexistent/command") != NULL);
	spec.argv = notexec;
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -EACCES);
	spec.argv = sh;
	spec.cwd = "/nonexistent-dir";
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -ENOENT);
	EXPECT_TRUE(strstr(cube_agent_error(self->a), "/nonexistent-dir") != NULL);
	spec.cwd = "relative";
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -EINVAL);
	spec.cwd = NULL;
	spec.envp = badenv;
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -EINVAL);
	spec.envp = NULL;
	spec.argv = NULL;
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -EINVAL);
	/* after all that, commands still run */
	spec.argv = sh;
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), 0);
	EXPECT_EQ(st.code, 0);
}

TEST_F(agent, disconnect_kills_command)
{
	const char *argv[] = { "sleep", "100", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	uint32_t pid;
	int i;

	ASSERT_EQ(cube_agent_exec_start(self->a, &spec, &pid), 0);
	ASSERT_EQ(kill(pid, 0), 0);
	cube_agent_close(self->a);
	self->a = NULL;
	for (i = 0; i < 500 && !kill(pid, 0); i++)
		sleep_ms(10);
	EXPECT_ERRNO(kill(pid, 0), ESRCH);
}

static int stop_at_once(void *ctx, enum cube_exec_event_type s,
			const void *d, size_t l)
{
	return -EINTR;
}

TEST_F(agent, stop_from_output_handler)
{
	const char *argv[] = { "sh", "-c", "while :; do echo spam; done", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct cube_exec_status st;

	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, stop_at_once, NULL, &st), -EINTR);
	EXPECT_FALSE(st.exited);
	EXPECT_EQ(st.signal, SIGKILL);
	/* the connection is still good */
	EXPECT_EQ(cube_agent_ping(self->a, &(struct cube_agent_info){ 0 }), 0);
}

TEST_F(agent, pty)
{
	const char *argv[] = { "sh", "-c",
		"test -t 0 && test -t 1 && test -t 2 && echo tty; stty size; echo err >&2", NULL };
	struct cube_exec_spec spec = { .argv = argv, .pty = true, .rows = 30, .cols = 100 };
	struct cube_exec_status st;
	struct output o = { 0 };

	ASSERT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, collect_output, &o, &st), 0);
	/* one terminal: stderr comes as stdout, newlines as the tty makes them */
	EXPECT_STREQ(o.out, "tty\r\n30 100\r\nerr\r\n");
	EXPECT_EQ(o.err_len, 0);
	EXPECT_EQ(st.code, 0);
	output_free(&o);
	spec.pty = false;
	EXPECT_EQ(cube_agent_exec(self->a, &spec, NULL, 0, NULL, NULL, &st), -EINVAL);
}

TEST_F(agent, pty_resize_and_input)
{
	const char *argv[] = { "sh", "-c", "read x; stty size; echo \"got $x\"; cat", NULL };
	struct cube_exec_spec spec = { .argv = argv, .pty = true };
	struct cube_exec_event ev;
	struct output o = { 0 };
	long long t0 = ms_now();

	ASSERT_EQ(cube_agent_exec_start(self->a, &spec, NULL), 0);
	ASSERT_EQ(cube_agent_exec_resize(self->a, 40, 120), 0);
	ASSERT_EQ(cube_agent_exec_stdin(self->a, "hi\n", 3), 3);
	/* stdin closed on a pty: end of file, cat ends */
	ASSERT_EQ(cube_agent_exec_close_stdin(self->a), 0);
	for (;;) {
		ASSERT_EQ(cube_agent_exec_next(self->a, &ev, 10000), 0);
		if (ev.type == CUBE_EXEC_EXIT)
			break;
		ASSERT_EQ(ev.type, CUBE_EXEC_STDOUT);
		collect_output(&o, ev.type, ev.data, ev.len);
	}
	EXPECT_EQ(ev.status.code, 0);
	EXPECT_TRUE(strstr(o.out, "40 120\r\ngot hi\r\n") != NULL);
	EXPECT_LT(ms_now() - t0, 5000);
	output_free(&o);
}

/* a command that owns the terminal and ends at end-of-file is not hung up */
TEST_F(agent, pty_leader_ends_cleanly)
{
	const char *argv[] = { "cat", NULL };
	struct cube_exec_spec spec = { .argv = argv, .pty = true };
	struct cube_exec_event ev;
	int i;

	for (i = 0; i < 20; i++) {
		ASSERT_EQ(cube_agent_exec_start(self->a, &spec, NULL), 0);
		ASSERT_EQ(cube_agent_exec_close_stdin(self->a), 0);
		do {
			ASSERT_EQ(cube_agent_exec_next(self->a, &ev, 10000), 0);
		} while (ev.type != CUBE_EXEC_EXIT);
		ASSERT_TRUE(ev.status.exited);
		EXPECT_EQ(ev.status.code, 0);
	}
}

TEST_F(agent, resize_without_pty)
{
	const char *argv[] = { "cat", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct cube_exec_event ev;

	ASSERT_EQ(cube_agent_exec_start(self->a, &spec, NULL), 0);
	EXPECT_EQ(cube_agent_exec_resize(self->a, 0, 80), -EINVAL);
	ASSERT_EQ(cube_agent_exec_resize(self->a, 40, 120), 0);
	next_event(self->a, &ev, CUBE_EXEC_ERROR);
	EXPECT_EQ(ev.err, -ENOTTY);
	/* the command goes on */
	ASSERT_EQ(cube_agent_exec_close_stdin(self->a), 0);
	next_event(self->a, &ev, CUBE_EXEC_EXIT);
	EXPECT_EQ(ev.status.code, 0);
}

TEST_MAIN()
