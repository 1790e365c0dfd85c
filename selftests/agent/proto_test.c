// SPDX-License-Identifier: GPL-2.0
/*
 * proto_test: the wire format, and malformed messages from both sides:
 * raw bad messages sent to a native cube-agent (it answers each with an
 * ERROR and keeps serving), and a fake hostile agent feeding bad answers
 * to the client library (every one is refused), plus the hybrid-vsock
 * handshake of the VMM's Unix socket.
 */
#include <endian.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "agent_test.h"

/* --- the wire format --- */

static void put_raw_hdr(uint8_t *p, uint32_t len, uint16_t type, uint16_t flags,
			uint32_t id)
{
	len = htole32(len);
	type = htole16(type);
	flags = htole16(flags);
	id = htole32(id);
	memcpy(p, &len, 4);
	memcpy(p + 4, &type, 2);
	memcpy(p + 6, &flags, 2);
	memcpy(p + 8, &id, 4);
}

static void put_raw_attr(uint8_t *p, uint16_t type, uint16_t len)
{
	type = htole16(type);
	len = htole16(len);
	memcpy(p, &type, 2);
	memcpy(p + 2, &len, 2);
}

/* Parses @payload of @len bytes as message @type; returns the error. */
static int parse(uint16_t type, const uint8_t *payload, uint32_t len)
{
	struct cube_agent_hdr hdr = { .len = len, .type = type };
	struct cube_wire_msg m;
	const char *why;

	return cube_wire_parse(&hdr, payload, cube_wire_policy(type), &m, &why);
}

TEST(wire_round_trip)
{
	struct cube_wire_buf b = { 0 };
	struct cube_agent_hdr hdr;
	struct cube_wire_msg m;
	const struct cube_agent_attr *a;
	const char *why;

	cube_wire_start(&b, CUBE_MSG_EXEC, 77);
	cube_wire_put_str(&b, CUBE_ATTR_ARGV, "ls");
	cube_wire_put_str(&b, CUBE_ATTR_ARGV, "-l");
	cube_wire_put_u32(&b, CUBE_ATTR_TIMEOUT_MS, 1000);
	ASSERT_EQ(cube_wire_finish(&b), 0);
	ASSERT_EQ(cube_wire_parse_hdr(b.data, &hdr), 0);
	EXPECT_EQ(hdr.id, 77);
	EXPECT_EQ(hdr.type, CUBE_MSG_EXEC);
	ASSERT_EQ(hdr.len, b.len - CUBE_AGENT_HDR_LEN);
	ASSERT_EQ(cube_wire_parse(&hdr, b.data + CUBE_AGENT_HDR_LEN,
				  cube_wire_policy(hdr.type), &m, &why), 0);
	EXPECT_EQ(m.count[CUBE_ATTR_ARGV], 2);
	a = m.first[CUBE_ATTR_ARGV];
	EXPECT_STREQ(cube_wire_value(a), "ls");
	a = cube_wire_next(&m, a);
	ASSERT_TRUE(a != NULL);
	EXPECT_STREQ(cube_wire_value(a), "-l");
	EXPECT_TRUE(cube_wire_next(&m, a) == NULL);
	EXPECT_EQ(cube_wire_u32(m.first[CUBE_ATTR_TIMEOUT_MS]), 1000);
	cube_wire_free(&b);
}

TEST(wire_builder_bounds)
{
	static uint8_t big[CUBE_AGENT_CHUNK];
	struct cube_wire_buf b = { 0 };
	int i;

	cube_wire_start(&b, CUBE_MSG_DATA, 1);
	for (i = 0; i < 5; i++)
		cube_wire_put(&b, CUBE_ATTR_DATA, big, sizeof(big));
	EXPECT_EQ(cube_wire_finish(&b), -EMSGSIZE);
	cube_wire_start(&b, CUBE_MSG_DATA, 1);
	cube_wire_put(&b, CUBE_ATTR_DATA, big, 70000);
	EXPECT_EQ(cube_wire_finish(&b), -EMSGSIZE);
	cube_wire_free(&b);
}

TEST(wire_rejects)
{
	uint8_t p[64] = { 0 }, h[CUBE_AGENT_HDR_LEN];
	struct cube_agent_hdr hdr;

	/* header: too long, flags */
	put_raw_hdr(h, CUBE_AGENT_MAX_PAYLOAD + 1, CUBE_MSG_PING, 0, 1);
	EXPECT_EQ(cube_wire_parse_hdr(h, &hdr), -EMSGSIZE);
	put_raw_hdr(h, 0, CUBE_MSG_PING, 1, 1);
	EXPECT_EQ(cube_wire_parse_hdr(h, &hdr), -EPROTO);
	/* unknown message type */
	EXPECT_EQ(parse(0x7e, p, 0), -EOPNOTSUPP);
	/* truncated attribute header */
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 2), -EPROTO);
	/* attribute longer than the payload */
	put_raw_attr(p, CUBE_ATTR_PATH, 20);
	memcpy(p + 4, "/abc", 5);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 12), -EPROTO);
	/* missing padding */
	put_raw_attr(p, CUBE_ATTR_PATH, 5);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 9), -EPROTO);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 12), 0);
	/* string without its NUL, with a NUL inside, empty */
	memcpy(p + 4, "/abcd", 5);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 12), -EINVAL);
	memcpy(p + 4, "/a\0c", 5);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 12), -EINVAL);
	put_raw_attr(p, CUBE_ATTR_PATH, 1);
	p[4] = 0;
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 8), -EINVAL);
	/* unknown attribute, attribute 0, attribute not of this message */
	put_raw_attr(p, CUBE_ATTR_MAX + 1, 0);
	EXPECT_EQ(parse(CUBE_MSG_PING, p, 4), -EINVAL);
	put_raw_attr(p, CUBE_ATTR_UNSPEC, 0);
	EXPECT_EQ(parse(CUBE_MSG_PING, p, 4), -EINVAL);
	put_raw_attr(p, CUBE_ATTR_PATH, 0);
	EXPECT_EQ(parse(CUBE_MSG_PING, p, 4), -EINVAL);
	/* u32 of the wrong size, flag with a value */
	put_raw_attr(p, CUBE_ATTR_SIGNAL, 8);
	EXPECT_EQ(parse(CUBE_MSG_SIGNAL, p, 12), -EINVAL);
	put_raw_attr(p, CUBE_ATTR_PATH, 4);
	memcpy(p + 4, "/ab", 4);
	put_raw_attr(p + 8, CUBE_ATTR_RECURSIVE, 4);
	EXPECT_EQ(parse(CUBE_MSG_REMOVE, p, 16), -EINVAL);
	/* repeated single attribute; missing required attribute */
	put_raw_attr(p + 8, CUBE_ATTR_PATH, 4);
	memcpy(p + 12, "/ab", 4);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 16), -EINVAL);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 0), -EINVAL);
	EXPECT_EQ(parse(CUBE_MSG_STAT, p, 8), 0);
}

/* --- bad messages to the agent --- */

FIXTURE(raw) {
	struct agent_proc p;
	int fd;
};

FIXTURE_SETUP(raw)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	agent_spawn(&self->p, NULL, false);
	self->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(self->fd, 0);
	strcpy(sa.sun_path, self->p.sock);
	ASSERT_EQ(connect(self->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

FIXTURE_TEARDOWN(raw)
{
	close(self->fd);
	agent_stop(&self->p);
}

static void send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		ASSERT_GT(n, 0);
		p += n;
		len -= n;
	}
}

static void recv_all(int fd, void *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		ASSERT_EQ(poll(&pfd, 1, 5000), 1);
		n = read(fd, p, len);
		ASSERT_GT(n, 0);
		p += n;
		len -= n;
	}
}

/* Reads one message; returns its type, the errno of an ERROR in *err. */
static uint16_t recv_msg(int fd, uint32_t *id, uint32_t *err)
{
	static uint8_t buf[CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD];
	struct cube_agent_hdr hdr;
	struct cube_wire_msg m;
	const char *why;

	recv_all(fd, buf, CUBE_AGENT_HDR_LEN);
	ASSERT_EQ(cube_wire_parse_hdr(buf, &hdr), 0);
	recv_all(fd, buf + CUBE_AGENT_HDR_LEN, hdr.len);
	ASSERT_EQ(cube_wire_parse(&hdr, buf + CUBE_AGENT_HDR_LEN,
				  cube_wire_policy(hdr.type), &m, &why), 0);
	*id = hdr.id;
	*err = 0;
	if (hdr.type == CUBE_MSG_ERROR) {
		*err = cube_wire_u32(m.first[CUBE_ATTR_ERRNO]);
		TH_LOG("agent: %s", m.first[CUBE_ATTR_MESSAGE] ?
		       (const char *)cube_wire_value(m.first[CUBE_ATTR_MESSAGE]) : "");
	}
	return hdr.type;
}

/* Sends @len raw bytes, expects an ERROR @want for request @id. */
static void expect_error(int fd, const void *msg, size_t len, uint32_t id,
			 uint32_t want)
{
	uint32_t got_id, err;

	send_all(fd, msg, len);
	ASSERT_EQ(recv_msg(fd, &got_id, &err), CUBE_MSG_ERROR);
	EXPECT_EQ(got_id, id);
	EXPECT_EQ(err, want);
}

static void expect_pong(int fd, uint32_t id)
{
	uint8_t h[CUBE_AGENT_HDR_LEN];
	uint32_t got_id, err;

	put_raw_hdr(h, 0, CUBE_MSG_PING, 0, id);
	send_all(fd, h, sizeof(h));
	ASSERT_EQ(recv_msg(fd, &got_id, &err), CUBE_MSG_PONG);
	EXPECT_EQ(got_id, id);
}

TEST_F(raw, bad_headers)
{
	static uint8_t junk[CUBE_AGENT_MAX_PAYLOAD + 1];
	uint8_t h[CUBE_AGENT_HDR_LEN + 8];

	expect_pong(self->fd, 1);
	put_raw_hdr(h, 0, 0x7e, 0, 2);
	expect_error(self->fd, h, CUBE_AGENT_HDR_LEN, 2, EOPNOTSUPP);
	put_raw_hdr(h, 0, CUBE_MSG_PONG, 0, 3);
	expect_error(self->fd, h, CUBE_AGENT_HDR_LEN, 3, EOPNOTSUPP);
	/* flags set: refused, its payload skipped */
	put_raw_hdr(h, 8, CUBE_MSG_PING, 0x8000, 4);
	memset(h + CUBE_AGENT_HDR_LEN, 0xff, 8);
	expect_error(self->fd, h, sizeof(h), 4, EPROTO);
	expect_pong(self->fd, 5);
	/* oversized: refused, its payload skipped, the connection goes on */
	put_raw_hdr(h, sizeof(junk), CUBE_MSG_EXEC, 0, 6);
	expect_error(self->fd, h, CUBE_AGENT_HDR_LEN, 6, EMSGSIZE);
	memset(junk, 0xa5, sizeof(junk));
	send_all(self->fd, junk, sizeof(junk));
	expect_pong(self->fd, 7);
}

TEST_F(raw, bad_payloads)
{
	uint8_t m[64] = { 0 };

	/* attribute past the payload */
	put_raw_hdr(m, 8, CUBE_MSG_STAT, 0, 10);
	put_raw_attr(m + 12, CUBE_ATTR_PATH, 200);
	expect_error(self->fd, m, 20, 10, EPROTO);
	/* string without NUL */
	put_raw_hdr(m, 8, CUBE_MSG_STAT, 0, 11);
	put_raw_attr(m + 12, CUBE_ATTR_PATH, 4);
	memcpy(m + 16, "/etc", 4);
	expect_error(self->fd, m, 20, 11, EINVAL);
	/* EXEC without argv */
	put_raw_hdr(m, 0, CUBE_MSG_EXEC, 0, 12);
	expect_error(self->fd, m, 12, 12, EINVAL);
	/* PATH twice */
	put_raw_hdr(m, 16, CUBE_MSG_STAT, 0, 13);
	put_raw_attr(m + 12, CUBE_ATTR_PATH, 2);
	memcpy(m + 16, "/\0\0\0", 4);
	put_raw_attr(m + 20, CUBE_ATTR_PATH, 2);
	memcpy(m + 24, "/\0\0\0", 4);
	expect_error(self->fd, m, 28, 13, EINVAL);
	/* stdin, signal and data with nothing running */
	put_raw_hdr(m, 0, CUBE_MSG_STDIN_CLOSE, 0, 14);
	expect_error(self->fd, m, 12, 14, ESRCH);
	put_raw_hdr(m, 8, CUBE_MSG_SIGNAL, 0, 15);
	put_raw_attr(m + 12, CUBE_ATTR_SIGNAL, 4);
	memcpy(m + 16, "\x09\0\0\0", 4);
	expect_error(self->fd, m, 20, 15, ESRCH);
	put_raw_hdr(m, 8, CUBE_MSG_DATA, 0, 16);
	put_raw_attr(m + 12, CUBE_ATTR_DATA, 3);
	expect_error(self->fd, m, 20, 16, EINVAL);
	/* relative path */
	put_raw_hdr(m, 8, CUBE_MSG_STAT, 0, 17);
	put_raw_attr(m + 12, CUBE_ATTR_PATH, 4);
	memcpy(m + 16, "etc", 4);
	expect_error(self->fd, m, 20, 17, EINVAL);
	/* a mode beyond 07777 */
	put_raw_hdr(m, 16, CUBE_MSG_MKDIR, 0, 18);
	put_raw_attr(m + 12, CUBE_ATTR_PATH, 4);
	memcpy(m + 16, "/xy", 4);
	put_raw_attr(m + 20, CUBE_ATTR_MODE, 4);
	memcpy(m + 24, "\0\0\1\0", 4);
	expect_error(self->fd, m, 28, 18, EINVAL);
	/* a terminal size without a pty; a pty of 0 rows */
	put_raw_hdr(m, 20, CUBE_MSG_EXEC, 0, 20);
	put_raw_attr(m + 12, CUBE_ATTR_ARGV, 5);
	memcpy(m + 16, "true\0\0\0", 8);
	put_raw_attr(m + 24, CUBE_ATTR_ROWS, 4);
	memcpy(m + 28, "\x10\0\0\0", 4);
	expect_error(self->fd, m, 32, 20, EINVAL);
	put_raw_hdr(m, 24, CUBE_MSG_EXEC, 0, 21);
	put_raw_attr(m + 24, CUBE_ATTR_ROWS, 4);
	memcpy(m + 28, "\0\0\0\0", 4);
	put_raw_attr(m + 32, CUBE_ATTR_PTY, 0);
	expect_error(self->fd, m, 36, 21, EINVAL);
	expect_pong(self->fd, 19);
}

TEST_F(raw, bad_control_during_exec)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id, err;

	cube_wire_start(&b, CUBE_MSG_EXEC, 30);
	cube_wire_put_str(&b, CUBE_ATTR_ARGV, "sleep");
	cube_wire_put_str(&b, CUBE_ATTR_ARGV, "100");
	ASSERT_EQ(cube_wire_finish(&b), 0);
	send_all(self->fd, b.data, b.len);
	ASSERT_EQ(recv_msg(self->fd, &id, &err), CUBE_MSG_STARTED);
	/* a signal out of range, a signal for another command */
	cube_wire_start(&b, CUBE_MSG_SIGNAL, 30);
	cube_wire_put_u32(&b, CUBE_ATTR_SIGNAL, 99);
	ASSERT_EQ(cube_wire_finish(&b), 0);
	expect_error(self->fd, b.data, b.len, 30, EINVAL);
	cube_wire_start(&b, CUBE_MSG_SIGNAL, 31);
	cube_wire_put_u32(&b, CUBE_ATTR_SIGNAL, 9);
	ASSERT_EQ(cube_wire_finish(&b), 0);
	expect_error(self->fd, b.data, b.len, 31, ESRCH);
	/* another request while it runs */
	cube_wire_start(&b, CUBE_MSG_STAT, 32);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, "/");
	ASSERT_EQ(cube_wire_finish(&b), 0);
	expect_error(self->fd, b.data, b.len, 32, EBUSY);
	/* pings are answered meanwhile */
	expect_pong(self->fd, 33);
	cube_wire_start(&b, CUBE_MSG_SIGNAL, 30);
	cube_wire_put_u32(&b, CUBE_ATTR_SIGNAL, 9);
	ASSERT_EQ(cube_wire_finish(&b), 0);
	send_all(self->fd, b.data, b.len);
	ASSERT_EQ(recv_msg(self->fd, &id, &err), CUBE_MSG_EXIT);
	EXPECT_EQ(id, 30);
	cube_wire_free(&b);
}

/* --- bad messages from the agent --- */

/*
 * A fake agent on a socketpair: reads one request, answers with @len bytes
 * of @reply, then holds the connection open until the client closes it.
 */
static bool fake_hangs_up;	/* the fake closes right after its answer */

static struct cube_agent *fake_agent(const void *reply, size_t len, pid_t *pid)
{
	struct cube_agent *a;
	uint8_t buf[4096];
	int sv[2];

	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*pid = fork();
	ASSERT_GE(*pid, 0);
	if (!*pid) {
		close(sv[0]);
		if (read(sv[1], buf, sizeof(buf)) <= 0)
			_exit(1);
		if (len && write(sv[1], reply, len) != (ssize_t)len)
			_exit(1);
		if (fake_hangs_up)
			_exit(0);
		while (read(sv[1], buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	close(sv[1]);
	ASSERT_EQ(cube_agent_from_fd(sv[0], &a), 0);
	cube_agent_set_timeout(a, 5000);
	return a;
}

static void fake_done(struct cube_agent *a, pid_t pid)
{
	cube_agent_close(a);
	waitpid(pid, NULL, 0);
}

/* A built message, whole, into @out; returns its length. */
static size_t build(struct cube_wire_buf *b, uint8_t *out)
{
	size_t len;

	ASSERT_EQ(cube_wire_finish(b), 0);
	memcpy(out, b->data, b->len);
	len = b->len;
	cube_wire_free(b);
	return len;
}

static int ping_fake(const void *reply, size_t len)
{
	struct cube_agent_info info;
	struct cube_agent *a;
	pid_t pid;
	int err, again;

	a = fake_agent(reply, len, &pid);
	err = cube_agent_ping(a, &info);
	TH_LOG("ping: %d (%s)", err, cube_agent_error(a));
	/* a broken connection stays broken */
	again = cube_agent_ping(a, &info);
	if (err && err != -ETIMEDOUT)
		EXPECT_EQ(again, err);
	fake_done(a, pid);
	return err;
}

TEST(fake_bad_answers)
{
	struct cube_wire_buf b = { 0 };
	uint8_t m[256];
	size_t n;

	/* a good answer first: the fake works */
	cube_wire_start(&b, CUBE_MSG_PONG, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 1);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), 0);
	/* oversized, flags, host type, unknown type */
	put_raw_hdr(m, CUBE_AGENT_MAX_PAYLOAD + 1, CUBE_MSG_PONG, 0, 1);
	EXPECT_EQ(ping_fake(m, CUBE_AGENT_HDR_LEN), -EMSGSIZE);
	put_raw_hdr(m, 0, CUBE_MSG_PONG, 2, 1);
	EXPECT_EQ(ping_fake(m, CUBE_AGENT_HDR_LEN), -EPROTO);
	put_raw_hdr(m, 0, CUBE_MSG_PING, 0, 1);
	EXPECT_EQ(ping_fake(m, CUBE_AGENT_HDR_LEN), -EPROTO);
	put_raw_hdr(m, 0, 0xee, 0, 1);
	EXPECT_EQ(ping_fake(m, CUBE_AGENT_HDR_LEN), -EPROTO);
	/* wrong id */
	cube_wire_start(&b, CUBE_MSG_PONG, 2);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 1);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	/* required attribute missing, value out of range */
	cube_wire_start(&b, CUBE_MSG_PONG, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	cube_wire_start(&b, CUBE_MSG_PONG, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 2);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	/* an answer of the wrong type */
	cube_wire_start(&b, CUBE_MSG_OK, 1);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	/* string without NUL */
	cube_wire_start(&b, CUBE_MSG_PONG, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 1);
	cube_wire_put(&b, CUBE_ATTR_HOSTNAME, "abcd", 4);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	/* hostname longer than any hostname */
	cube_wire_start(&b, CUBE_MSG_PONG, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 1);
	cube_wire_put_str(&b, CUBE_ATTR_HOSTNAME,
			  "0123456789012345678901234567890123456789012345678901234567890123456789");
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	/* errors: errno out of range; a good one with control characters */
	cube_wire_start(&b, CUBE_MSG_ERROR, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_ERRNO, 0);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	cube_wire_start(&b, CUBE_MSG_ERROR, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_ERRNO, 5000);
	n = build(&b, m);
	EXPECT_EQ(ping_fake(m, n), -EPROTO);
	/* truncated, then the agent goes away */
	put_raw_hdr(m, 40, CUBE_MSG_PONG, 0, 1);
	fake_hangs_up = true;
	EXPECT_EQ(ping_fake(m, CUBE_AGENT_HDR_LEN + 10), -ECONNRESET);
	fake_hangs_up = false;
}

TEST(fake_error_text_sanitised)
{
	struct cube_wire_buf b = { 0 };
	struct cube_agent_info info;
	struct cube_agent *a;
	uint8_t m[256];
	const char *e;
	pid_t pid;
	size_t n;

	cube_wire_start(&b, CUBE_MSG_ERROR, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_ERRNO, ENOENT);
	cube_wire_put_str(&b, CUBE_ATTR_MESSAGE, "evil\033[2J\ntext");
	n = build(&b, m);
	a = fake_agent(m, n, &pid);
	EXPECT_EQ(cube_agent_ping(a, &info), -ENOENT);
	e = cube_agent_error(a);
	EXPECT_STREQ(e, "agent: evil?[2J?text");
	fake_done(a, pid);
}

TEST(fake_silent_agent_times_out)
{
	struct cube_agent_info info;
	struct cube_agent *a;
	long long t0;
	pid_t pid;

	a = fake_agent(NULL, 0, &pid);
	cube_agent_set_timeout(a, 200);
	t0 = ms_now();
	EXPECT_EQ(cube_agent_ping(a, &info), -ETIMEDOUT);
	EXPECT_LT(ms_now() - t0, 2000);
	fake_done(a, pid);
}

/* Starts a command against a fake replying @reply; returns exec_next's result. */
static int exec_fake(const void *reply, size_t len, struct cube_exec_event *ev)
{
	const char *argv[] = { "true", NULL };
	struct cube_exec_spec spec = { .argv = argv };
	struct cube_agent *a;
	pid_t pid;
	int err;

	a = fake_agent(reply, len, &pid);
	err = cube_agent_exec_start(a, &spec, NULL);
	if (!err)
		err = cube_agent_exec_next(a, ev, 2000);
	TH_LOG("exec: %d (%s)", err, cube_agent_error(a));
	fake_done(a, pid);
	return err;
}

static size_t started(uint8_t *m)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_STARTED, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_PID, 42);
	return build(&b, m);
}

TEST(fake_bad_exec_events)
{
	static uint8_t big[CUBE_AGENT_CHUNK + 1];
	struct cube_wire_buf b = { 0 };
	struct cube_exec_event ev;
	static uint8_t m[2 * CUBE_AGENT_CHUNK];
	size_t n;

	/* good: exit 3 */
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_EXIT, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_EXIT_CODE, 3);
	n += build(&b, m + n);
	ASSERT_EQ(exec_fake(m, n, &ev), 0);
	EXPECT_EQ(ev.type, CUBE_EXEC_EXIT);
	EXPECT_EQ(ev.status.code, 3);
	/* both a code and a signal; neither; out of range */
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_EXIT, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_EXIT_CODE, 3);
	cube_wire_put_u32(&b, CUBE_ATTR_TERM_SIGNAL, 9);
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_EXIT, 1);
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_EXIT, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_EXIT_CODE, 256);
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_EXIT, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_TERM_SIGNAL, 0);
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
	/* output chunk above the limit */
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_STDOUT, 1);
	cube_wire_put(&b, CUBE_ATTR_DATA, big, sizeof(big));
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
	/* an event of another request; a message that is no event */
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_STDOUT, 7);
	cube_wire_put(&b, CUBE_ATTR_DATA, "x", 1);
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
	n = started(m);
	cube_wire_start(&b, CUBE_MSG_DIRENT, 1);
	n += build(&b, m + n);
	EXPECT_EQ(exec_fake(m, n, &ev), -EPROTO);
}

static int ignore_data(void *ctx, const void *buf, size_t len)
{
	return 0;
}

static int ignore_entry(void *ctx, const char *name, const struct cube_agent_stat *st)
{
	return 0;
}

static size_t dirent(uint8_t *m, const char *name, uint32_t ftype, uint32_t mode)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_DIRENT, 1);
	cube_wire_put_str(&b, CUBE_ATTR_NAME, name);
	cube_wire_put_u32(&b, CUBE_ATTR_FTYPE, ftype);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_MODE, mode);
	cube_wire_put_u64(&b, CUBE_ATTR_MTIME_NS, 1);
	return build(&b, m);
}

static int list_fake(const uint8_t *m, size_t n)
{
	struct cube_agent *a;
	pid_t pid;
	int err;

	a = fake_agent(m, n, &pid);
	err = cube_agent_list(a, "/", ignore_entry, NULL);
	TH_LOG("list: %d (%s)", err, cube_agent_error(a));
	fake_done(a, pid);
	return err;
}

/* OK to WATCH, then @m: the result of the first watch_next() */
static int watch_fake(const uint8_t *m, size_t n, struct cube_watch_event *ev)
{
	struct cube_wire_buf b = { 0 };
	static uint8_t all[2 * CUBE_AGENT_MAX_PAYLOAD];
	struct cube_agent *a;
	size_t k;
	pid_t pid;
	int err;

	cube_wire_start(&b, CUBE_MSG_OK, 1);
	k = build(&b, all);
	memcpy(all + k, m, n);
	a = fake_agent(all, k + n, &pid);
	err = cube_agent_watch(a, "/d");
	if (!err)
		err = cube_agent_watch_next(a, ev, 2000);
	TH_LOG("watch: %d (%s)", err, cube_agent_error(a));
	fake_done(a, pid);
	return err;
}

static size_t fs_event(uint8_t *m, uint32_t id, uint32_t type, const char *name)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_FS_EVENT, id);
	cube_wire_put_u32(&b, CUBE_ATTR_EVENT, type);
	if (name)
		cube_wire_put_str(&b, CUBE_ATTR_NAME, name);
	return build(&b, m);
}

TEST(fake_bad_watch_events)
{
	static char longname[CUBE_AGENT_MAX_NAME + 8];
	struct cube_wire_buf b = { 0 };
	struct cube_watch_event ev;
	static uint8_t m[4096];
	size_t n;

	n = fs_event(m, 1, CUBE_FS_WRITE, "f");
	ASSERT_EQ(watch_fake(m, n, &ev), 0);
	EXPECT_EQ(ev.type, CUBE_FS_WRITE);
	EXPECT_STREQ(ev.name, "f");
	/* type out of range, names with '/', "..", too long, missing */
	n = fs_event(m, 1, 0, "f");
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	n = fs_event(m, 1, CUBE_FS_EVENT_MAX + 1, "f");
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	n = fs_event(m, 1, CUBE_FS_CREATE, "a/b");
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	n = fs_event(m, 1, CUBE_FS_CREATE, "..");
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	memset(longname, 'x', sizeof(longname) - 1);
	n = fs_event(m, 1, CUBE_FS_CREATE, longname);
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	n = fs_event(m, 1, CUBE_FS_CREATE, NULL);
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	/* another request's event; a message that is no event */
	n = fs_event(m, 9, CUBE_FS_CREATE, "f");
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	cube_wire_start(&b, CUBE_MSG_STDOUT, 1);
	cube_wire_put(&b, CUBE_ATTR_DATA, "x", 1);
	n = build(&b, m);
	EXPECT_EQ(watch_fake(m, n, &ev), -EPROTO);
	/* an ERROR ends the watch with its errno */
	cube_wire_start(&b, CUBE_MSG_ERROR, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_ERRNO, ENOENT);
	n = build(&b, m);
	EXPECT_EQ(watch_fake(m, n, &ev), -ENOENT);
}

TEST(fake_bad_file_answers)
{
	struct cube_wire_buf b = { 0 };
	struct cube_agent_stat st;
	struct cube_agent *a;
	uint8_t m[1024];
	pid_t pid;
	size_t n;

	/* listing: good; then names with '/', "..", bad type, bad mode */
	n = dirent(m, "ok", CUBE_FTYPE_FILE, 0644);
	cube_wire_start(&b, CUBE_MSG_END, 1);
	n += build(&b, m + n);
	EXPECT_EQ(list_fake(m, n), 0);
	n = dirent(m, "a/b", CUBE_FTYPE_FILE, 0644);
	EXPECT_EQ(list_fake(m, n), -EPROTO);
	n = dirent(m, "..", CUBE_FTYPE_DIR, 0755);
	EXPECT_EQ(list_fake(m, n), -EPROTO);
	n = dirent(m, "x", CUBE_FTYPE_MAX + 1, 0644);
	EXPECT_EQ(list_fake(m, n), -EPROTO);
	n = dirent(m, "x", CUBE_FTYPE_FILE, 0170644);
	EXPECT_EQ(list_fake(m, n), -EPROTO);
	/* read: the END's size must match the data */
	cube_wire_start(&b, CUBE_MSG_DATA, 1);
	cube_wire_put(&b, CUBE_ATTR_DATA, "abc", 3);
	n = build(&b, m);
	cube_wire_start(&b, CUBE_MSG_END, 1);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, 4);
	n += build(&b, m + n);
	a = fake_agent(m, n, &pid);
	EXPECT_EQ(cube_agent_read_file(a, "/f", ignore_data, NULL, NULL), -EPROTO);
	fake_done(a, pid);
	/* stat with a wrong file type */
	cube_wire_start(&b, CUBE_MSG_STAT_REPLY, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_FTYPE, 9);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_MODE, 0644);
	cube_wire_put_u64(&b, CUBE_ATTR_MTIME_NS, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_UID, 0);
	cube_wire_put_u32(&b, CUBE_ATTR_GID, 0);
	n = build(&b, m);
	a = fake_agent(m, n, &pid);
	EXPECT_EQ(cube_agent_stat(a, "/f", &st), -EPROTO);
	fake_done(a, pid);
}

/* --- the hybrid vsock handshake --- */

/*
 * A fake VMM socket: expects "CONNECT <port>\n", answers @answer, then
 * answers one PING (when @answer starts with "OK").
 */
static pid_t fake_vmm(const char *path, const char *expect, const char *answer)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct cube_wire_buf b = { 0 };
	char line[64] = "";
	uint8_t req[64];
	size_t len = 0;
	pid_t pid;
	int lfd, fd;

	strcpy(sa.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ(listen(lfd, 1), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid) {
		close(lfd);
		return pid;
	}
	fd = accept(lfd, NULL, NULL);
	while (len < sizeof(line) - 1 && read(fd, line + len, 1) == 1)
		if (line[len++] == '\n')
			break;
	if (strcmp(line, expect))
		_exit(3);
	if (write(fd, answer, strlen(answer)) < 0)
		_exit(1);
	if (strncmp(answer, "OK", 2))
		_exit(0);
	switch (read(fd, req, CUBE_AGENT_HDR_LEN)) {
	case 0:
		_exit(0);	/* closed without a request */
	case CUBE_AGENT_HDR_LEN:
		break;
	default:
		_exit(1);
	}
	cube_wire_start(&b, CUBE_MSG_PONG, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 1);
	cube_wire_finish(&b);
	if (write(fd, b.data, b.len) != (ssize_t)b.len)
		_exit(1);
	while (read(fd, req, sizeof(req)) > 0)
		;
	_exit(0);
}

TEST(hybrid_vsock_handshake)
{
	char dir[] = "/tmp/cube-vmm-test.XXXXXX", path[64];
	struct cube_agent_info info;
	struct cube_agent *a;
	int status;
	pid_t pid;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/vsock", dir);
	pid = fake_vmm(path, "CONNECT 1024\n", "OK 1073741824\n");
	ASSERT_EQ(cube_agent_connect_vsock(path, 0, &a), 0);
	EXPECT_EQ(cube_agent_ping(a, &info), 0);
	EXPECT_TRUE(info.ready);
	cube_agent_close(a);
	waitpid(pid, &status, 0);
	EXPECT_EQ(status, 0);
	unlink(path);
	/* an explicit port */
	pid = fake_vmm(path, "CONNECT 5000\n", "OK 7\n");
	ASSERT_EQ(cube_agent_connect_vsock(path, 5000, &a), 0);
	cube_agent_close(a);
	waitpid(pid, &status, 0);
	EXPECT_EQ(status, 0);
	unlink(path);
	/* nobody listening in the guest: the VMM closes */
	pid = fake_vmm(path, "CONNECT 1024\n", "");
	EXPECT_EQ(cube_agent_connect_vsock(path, 0, &a), -ECONNREFUSED);
	EXPECT_TRUE(a == NULL);
	waitpid(pid, NULL, 0);
	unlink(path);
	/* a bad answer */
	pid = fake_vmm(path, "CONNECT 1024\n", "NO\n");
	EXPECT_EQ(cube_agent_connect_vsock(path, 0, &a), -ECONNREFUSED);
	waitpid(pid, NULL, 0);
	unlink(path);
	pid = fake_vmm(path, "CONNECT 1024\n", "OK x\n");
	EXPECT_EQ(cube_agent_connect_vsock(path, 0, &a), -EPROTO);
	waitpid(pid, NULL, 0);
	unlink(path);
	EXPECT_EQ(cube_agent_connect_vsock(path, 0, &a), -ENOENT);
	rmdir(dir);
}

TEST_MAIN()
