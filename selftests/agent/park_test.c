// SPDX-License-Identifier: GPL-2.0
/*
 * park_test: commands started with KEEP outlive their connection.  The
 * agent parks them (keeps them running, keeps their output up to a bound),
 * a new connection takes one over with ATTACH (output in order, then its
 * exit), one nobody attaches is killed after --park-timeout, and commands
 * without KEEP still die with their connection.
 */
#include <endian.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "agent_test.h"

FIXTURE(park) {
	struct agent_proc p;
	char go[160];		/* the scripts wait for this file */
};

FIXTURE_SETUP(park)
{
	agent_spawn_parking(&self->p, NULL, false, "1500");
	snprintf(self->go, sizeof(self->go), "%s/go", self->p.dir);
}

FIXTURE_TEARDOWN(park)
{
	agent_stop(&self->p);
}

/* Starts sh -c @script on a new connection; returns the connection. */
static struct cube_agent *start(struct agent_proc *p, const char *script,
				bool keep, uint32_t *pid)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	struct cube_exec_spec spec = { .argv = argv, .keep = keep };
	struct cube_agent *a = agent_connect(p);
	int err = cube_agent_exec_start(a, &spec, pid);

	if (err)
		TH_LOG("exec: %s (%s)", strerror(-err), cube_agent_error(a));
	EXPECT_EQ(err, 0);
	return a;
}

/* Waits up to @ms for process @pid to be gone (reaped). */
static bool gone_within(pid_t pid, int ms)
{
	long long deadline = ms_now() + ms;

	while (kill(pid, 0) == 0 || errno != ESRCH) {
		if (ms_now() > deadline)
			return false;
		sleep_ms(10);
	}
	return true;
}

/*
 * ATTACH @pid once its session noticed the broken connection and parked
 * it (until then the agent answers -EBUSY); returns the last answer.
 */
static int attach(struct cube_agent *a, uint32_t pid)
{
	long long deadline = ms_now() + 10000;
	int err;

	while ((err = cube_agent_exec_attach(a, pid)) == -EBUSY &&
	       ms_now() < deadline)
		sleep_ms(10);
	return err;
}

/* Next event, ASSERTing it came. */
static void next(struct cube_agent *a, struct cube_exec_event *ev)
{
	int err = cube_agent_exec_next(a, ev, 10000);

	if (err)
		TH_LOG("exec_next: %s (%s)", strerror(-err), cube_agent_error(a));
	ASSERT_EQ(err, 0);
}

/* Collects output into @o until the exit; returns its status. */
static struct cube_exec_status drain(struct cube_agent *a, struct output *o)
{
	struct cube_exec_event ev;

	for (;;) {
		next(a, &ev);
		if (ev.type == CUBE_EXEC_EXIT)
			return ev.status;
		if (ev.type == CUBE_EXEC_STDOUT || ev.type == CUBE_EXEC_STDERR)
			collect_output(o, ev.type, ev.data, ev.len);
	}
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0600);

	if (fd >= 0)
		close(fd);
}

TEST_F(park, output_while_parked_is_replayed_with_the_exit)
{
	struct cube_agent_info info;
	struct cube_exec_status st;
	struct cube_exec_event ev;
	struct output o = { 0 };
	struct cube_agent *a;
	char script[512];
	uint32_t pid;

	snprintf(script, sizeof(script),
		 "echo before; while [ ! -e %s ]; do sleep 0.01; done; "
		 "echo one; echo two >&2; echo three; exit 7", self->go);
	a = start(&self->p, script, true, &pid);
	next(a, &ev);
	ASSERT_EQ(ev.type, CUBE_EXEC_STDOUT);
	ASSERT_EQ(ev.len, 7);
	/* the connection breaks; the command writes and ends meanwhile */
	cube_agent_close(a);
	touch(self->go);
	ASSERT_TRUE(gone_within(pid, 10000));
	a = agent_connect(&self->p);
	/* the ATTACH gets another request id than the EXEC had */
	ASSERT_EQ(cube_agent_ping(a, &info), 0);
	ASSERT_EQ(attach(a, pid), 0);
	st = drain(a, &o);
	EXPECT_STREQ(o.out, "one\nthree\n");
	EXPECT_STREQ(o.err, "two\n");
	EXPECT_TRUE(st.exited);
	EXPECT_EQ(st.code, 7);
	output_free(&o);
	/* the connection serves the next request */
	{
		const char *argv[] = { "echo", "next", NULL };
		struct cube_exec_status st2;

		run(a, argv, &o, &st2);
		EXPECT_STREQ(o.out, "next\n");
		output_free(&o);
	}
	/* taken over once: gone now */
	cube_agent_close(a);
	a = agent_connect(&self->p);
	EXPECT_EQ(cube_agent_exec_attach(a, pid), -ESRCH);
	cube_agent_close(a);
}

TEST_F(park, attached_command_streams_takes_stdin_and_signals)
{
	struct cube_exec_status st;
	struct cube_exec_event ev;
	struct output o = { 0 };
	struct cube_agent *a;
	uint32_t pid;
	int i;

	/* a counter, then its stdin echoed */
	a = start(&self->p,
		  "i=0; while [ $i -lt 3 ]; do echo tick$i; i=$((i+1)); sleep 0.1; done; exec cat",
		  true, &pid);
	next(a, &ev);
	ASSERT_EQ(ev.type, CUBE_EXEC_STDOUT);
	cube_agent_close(a);
	a = agent_connect(&self->p);
	ASSERT_EQ(attach(a, pid), 0);
	/* every tick after the first, in order, whether parked or live */
	for (i = 0; !o.out || !strstr(o.out, "tick2\n"); i++) {
		ASSERT_LT(i, 100);
		next(a, &ev);
		ASSERT_EQ(ev.type, CUBE_EXEC_STDOUT);
		collect_output(&o, ev.type, ev.data, ev.len);
	}
	EXPECT_STREQ(o.out, "tick1\ntick2\n");
	output_free(&o);
	/* stdin reaches it under the id of the ATTACH */
	ASSERT_EQ(cube_agent_exec_stdin(a, "hello\n", 6), 6);
	next(a, &ev);
	ASSERT_EQ(ev.type, CUBE_EXEC_STDOUT);
	ASSERT_EQ(ev.len, 6);
	EXPECT_EQ(memcmp(ev.data, "hello\n", 6), 0);
	ASSERT_EQ(cube_agent_exec_signal(a, SIGKILL), 0);
	st = drain(a, &o);
	EXPECT_FALSE(st.exited);
	EXPECT_EQ(st.signal, SIGKILL);
	output_free(&o);
	cube_agent_close(a);
	EXPECT_TRUE(gone_within(pid, 5000));
}

TEST_F(park, attach_errors)
{
	struct cube_agent *a, *b, *c;
	struct cube_agent_info info;
	struct cube_exec_event ev;
	uint32_t pid;

	/* nothing with that pid */
	b = agent_connect(&self->p);
	EXPECT_EQ(cube_agent_exec_attach(b, INT32_MAX), -ESRCH);
	/* a KEEP command whose connection is alive is not parked */
	a = start(&self->p, "echo up; exec sleep 100", true, &pid);
	next(a, &ev);
	EXPECT_EQ(cube_agent_exec_attach(b, pid), -EBUSY);
	/* the refused connection serves on */
	ASSERT_EQ(cube_agent_ping(b, &info), 0);
	cube_agent_close(a);
	/* parked: once, and only once */
	ASSERT_EQ(attach(b, pid), 0);
	c = agent_connect(&self->p);
	EXPECT_EQ(cube_agent_exec_attach(c, pid), -EBUSY);
	/* its own pid is not something to attach to */
	EXPECT_EQ(cube_agent_exec_attach(c, getpid()), -ESRCH);
	ASSERT_EQ(cube_agent_exec_signal(b, SIGKILL), 0);
	next(b, &ev);
	EXPECT_EQ(ev.type, CUBE_EXEC_EXIT);
	cube_agent_close(b);
	cube_agent_close(c);
	EXPECT_TRUE(gone_within(pid, 5000));
}

/* Sends @len raw bytes on a new connection; returns the type answered. */
static uint16_t raw_request(struct agent_proc *p, const void *msg, size_t len,
			    uint32_t *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t buf[CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_MESSAGE + 64];
	struct pollfd pfd;
	struct cube_agent_hdr hdr;
	struct cube_wire_msg m;
	const char *why;
	size_t got = 0;
	ssize_t n;
	int fd;

	*err = 0;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	strcpy(sa.sun_path, p->sock);
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ(write(fd, msg, len), (ssize_t)len);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (got < CUBE_AGENT_HDR_LEN ||
	       got < CUBE_AGENT_HDR_LEN + le32toh(*(uint32_t *)buf)) {
		ASSERT_EQ(poll(&pfd, 1, 5000), 1);
		n = read(fd, buf + got, sizeof(buf) - got);
		ASSERT_GT(n, 0);
		got += n;
	}
	close(fd);
	ASSERT_EQ(cube_wire_parse_hdr(buf, &hdr), 0);
	ASSERT_EQ(cube_wire_parse(&hdr, buf + CUBE_AGENT_HDR_LEN,
				  cube_wire_policy(hdr.type), &m, &why), 0);
	if (hdr.type == CUBE_MSG_ERROR)
		*err = cube_wire_u32(m.first[CUBE_ATTR_ERRNO]);
	return hdr.type;
}

TEST_F(park, attach_garbage)
{
	/* ATTACH: 12-byte header, then attribute PID */
	uint8_t msg[CUBE_AGENT_HDR_LEN + 16] = { 0 };
	struct cube_agent_info info;
	struct cube_agent *a;
	uint32_t err, v;
	uint16_t t;

	/* no PID */
	msg[4] = CUBE_MSG_ATTACH;
	EXPECT_EQ(raw_request(&self->p, msg, CUBE_AGENT_HDR_LEN, &err),
		  CUBE_MSG_ERROR);
	EXPECT_EQ(err, EINVAL);
	/* a PID of two bytes */
	msg[0] = 8;
	t = htole16(CUBE_ATTR_PID);
	memcpy(msg + 12, &t, 2);
	msg[14] = 2;
	EXPECT_EQ(raw_request(&self->p, msg, CUBE_AGENT_HDR_LEN + 8,
			      &err), CUBE_MSG_ERROR);
	EXPECT_EQ(err, EINVAL);
	/* pid 0 and the largest */
	msg[14] = 4;
	v = 0;
	memcpy(msg + 16, &v, 4);
	EXPECT_EQ(raw_request(&self->p, msg, CUBE_AGENT_HDR_LEN + 8,
			      &err), CUBE_MSG_ERROR);
	EXPECT_EQ(err, ESRCH);
	v = 0xffffffff;
	memcpy(msg + 16, &v, 4);
	EXPECT_EQ(raw_request(&self->p, msg, CUBE_AGENT_HDR_LEN + 8,
			      &err), CUBE_MSG_ERROR);
	EXPECT_EQ(err, ESRCH);
	/* the agent is fine */
	a = agent_connect(&self->p);
	EXPECT_EQ(cube_agent_ping(a, &info), 0);
	cube_agent_close(a);
}

/* The default park timeout (10 minutes): nothing ends by it here. */
FIXTURE(plain) {
	struct agent_proc p;
};

FIXTURE_SETUP(plain)
{
	agent_spawn(&self->p, NULL, false);
}

FIXTURE_TEARDOWN(plain)
{
	agent_stop(&self->p);
}

TEST_F(plain, without_keep_the_command_dies_with_the_connection)
{
	struct cube_exec_event ev;
	struct cube_agent *a;
	uint32_t pid;

	a = start(&self->p, "echo up; exec sleep 100", false, &pid);
	next(a, &ev);
	cube_agent_close(a);
	EXPECT_TRUE(gone_within(pid, 5000));
	a = agent_connect(&self->p);
	EXPECT_EQ(cube_agent_exec_attach(a, pid), -ESRCH);
	cube_agent_close(a);
}

TEST_F(park, unattached_command_is_killed_after_the_park_timeout)
{
	struct cube_exec_event ev;
	struct cube_agent *a;
	char script[256], pidfile[160];
	long long t0;
	uint32_t pid;
	pid_t child = 0;
	FILE *f;

	/* its process group goes too: a background child of the command */
	snprintf(pidfile, sizeof(pidfile), "%s/child", self->p.dir);
	snprintf(script, sizeof(script),
		 "sleep 100 & echo $! > %s; echo up; wait", pidfile);
	a = start(&self->p, script, true, &pid);
	next(a, &ev);
	f = fopen(pidfile, "r");
	ASSERT_TRUE(f != NULL);
	ASSERT_EQ(fscanf(f, "%d", &child), 1);
	fclose(f);
	t0 = ms_now();
	cube_agent_close(a);
	/* --park-timeout 1500: alive well within it, gone after it */
	sleep_ms(500);
	EXPECT_EQ(kill(pid, 0), 0);
	EXPECT_TRUE(gone_within(pid, 10000));
	EXPECT_GE(ms_now() - t0, 1400);
	EXPECT_TRUE(gone_within(child, 5000));
	a = agent_connect(&self->p);
	EXPECT_EQ(cube_agent_exec_attach(a, pid), -ESRCH);
	cube_agent_close(a);
}

/* Bytes process @pid wrote so far (/proc/PID/io wchar), -1: none. */
static long long wchar(pid_t pid)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "wchar: %lld", &v) == 1)
			break;
	}
	fclose(f);
	return v;
}

/* The largest VmRSS (KiB) among the agent's session processes. */
static long max_session_rss(pid_t agent)
{
	char path[96], line[128];
	long rss, max = 0;
	int child;
	FILE *f, *s;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", agent, agent);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%d", &child) == 1) {
		snprintf(path, sizeof(path), "/proc/%d/status", child);
		s = fopen(path, "r");
		if (!s)
			continue;
		while (fgets(line, sizeof(line), s)) {
			if (sscanf(line, "VmRSS: %ld", &rss) == 1 && rss > max)
				max = rss;
		}
		fclose(s);
	}
	fclose(f);
	return max;
}

TEST_F(park, parked_output_is_bounded)
{
	const long long total = 10 * 1024 * 1024;
	struct cube_exec_status st;
	struct cube_exec_event ev;
	long long w, last = -1, total_read = 0;
	long long stable_since = 0;
	struct cube_agent *a;
	char script[256];
	uint32_t pid;
	long rss;

	snprintf(script, sizeof(script),
		 "echo up; while [ ! -e %s ]; do sleep 0.01; done; exec head -c %lld /dev/zero",
		 self->go, total);
	a = start(&self->p, script, true, &pid);
	next(a, &ev);
	cube_agent_close(a);
	touch(self->go);
	/* it writes until the agent stops reading, then blocks */
	for (;;) {
		w = wchar(pid);
		ASSERT_GE(w, 0);
		ASSERT_LT(w, total);
		if (w != last) {
			last = w;
			stable_since = ms_now();
		} else if (w > 1024 * 1024 && ms_now() - stable_since > 1000) {
			break;
		}
		sleep_ms(20);
	}
	TH_LOG("parked at %lld bytes written", w);
	EXPECT_LT(w, 3 * 1024 * 1024);
	rss = max_session_rss(self->p.pid);
	TH_LOG("largest session RSS %ld KiB", rss);
	EXPECT_GT(rss, 0);
	EXPECT_LT(rss, 8 * 1024);
	/* everything arrives after ATTACH, then the exit */
	a = agent_connect(&self->p);
	ASSERT_EQ(attach(a, pid), 0);
	for (;;) {
		next(a, &ev);
		if (ev.type == CUBE_EXEC_EXIT)
			break;
		ASSERT_EQ(ev.type, CUBE_EXEC_STDOUT);
		total_read += ev.len;
	}
	st = ev.status;
	EXPECT_EQ(total_read, total);
	EXPECT_TRUE(st.exited);
	EXPECT_EQ(st.code, 0);
	cube_agent_close(a);
}

TEST_MAIN()
