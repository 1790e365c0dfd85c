// SPDX-License-Identifier: GPL-2.0
/*
 * proxy_test: the port proxy.  Natively: the Host header and request head
 * parsers (malformed, oversized, E2B's sandbox headers, the traffic
 * token); then, as root, the proxy itself against a "guest" that is a
 * small HTTP server on 169.254.0.21 inside a network namespace of its own:
 * relaying with keep-alive, 502 for a closed port and an unknown sandbox,
 * 403 without the token, 400 and 431 for bad heads, connections closed
 * when their sandbox ends (e2b_proxy_drop() and the liveness watch), and
 * the per-client limit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cube_net_addr.h"
#include "e2b_backend.h"
#include "e2b_proxy.h"
#include "cube_test.h"

#define P(s)	s, strlen(s)

TEST(host_header)
{
	char id[E2B_ID_MAX + 1];
	unsigned int port;

	ASSERT_EQ(e2b_proxy_parse_host(P("8000-12.localhost:3001"), &port, id), 0);
	ASSERT_EQ(port, 8000);
	ASSERT_STREQ(id, "12");
	ASSERT_EQ(e2b_proxy_parse_host(P("3000-abc_D-9.sb.example.com"), &port, id), 0);
	ASSERT_EQ(port, 3000);
	ASSERT_STREQ(id, "abc_D-9");
	ASSERT_EQ(e2b_proxy_parse_host(P("65535-1:80"), &port, id), 0);
	ASSERT_EQ(port, 65535);
	ASSERT_EQ(e2b_proxy_parse_host(P("1-1"), &port, id), 0);
	ASSERT_EQ(e2b_proxy_parse_host(P("localhost:3001"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("65536-1.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("0-1.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("08000-1.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("8000-.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("-1.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("80a0-1.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("8000-a/b.x"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("[::1]:3001"), &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host(P("8000-1234567890123456789012345678901234567890123456789012345678901234.x"),
				       &port, id), -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_host("", 0, &port, id), -EINVAL);
}

static int head(const char *s, struct e2b_proxy_head *h, char *err)
{
	return e2b_proxy_parse_head(s, strlen(s), h, err);
}

TEST(request_head)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: 8000-7.localhost:3001\r\n"
		"e2b-traffic-access-token: tok\r\n\r\nBODY";
	char err[E2B_MSG_MAX], big[E2B_PROXY_HEAD_MAX + 64];
	struct e2b_proxy_head h;

	ASSERT_EQ(head(req, &h, err), (int)strlen(req) - 4);
	ASSERT_EQ(h.port, 8000);
	ASSERT_STREQ(h.sandbox, "7");
	ASSERT_TRUE(h.has_token);
	ASSERT_STREQ(h.token, "tok");
	/* not complete yet */
	ASSERT_EQ(head("GET / HTTP/1.1\r\nHost: 8000-7.x\r\n", &h, err), -EAGAIN);
	ASSERT_EQ(head("", &h, err), -EAGAIN);
	/* bare LFs, case and spaces in names' values */
	ASSERT_EQ(head("GET /x HTTP/1.0\nhOsT:   80-x.y  \n\n", &h, err), 34);
	ASSERT_EQ(h.port, 80);
	ASSERT_STREQ(h.sandbox, "x");
	ASSERT_FALSE(h.has_token);
	/* E2B's headers when the host is an address */
	ASSERT_GT(head("GET / HTTP/1.1\r\nHost: 127.0.0.1:3001\r\nE2b-Sandbox-Id: 9\r\n"
		       "E2b-Sandbox-Port: 5000\r\n\r\n", &h, err), 0);
	ASSERT_EQ(h.port, 5000);
	ASSERT_STREQ(h.sandbox, "9");
	/* refusals */
	ASSERT_EQ(head("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", &h, err), -EINVAL);
	ASSERT_TRUE(strstr(err, "names no sandbox") != NULL);
	ASSERT_EQ(head("GET / HTTP/1.1\r\n\r\n", &h, err), -EINVAL);
	ASSERT_EQ(head("GET / HTTP/1.1\r\nHost: 1-1.a\r\nHost: 1-2.a\r\n\r\n", &h, err),
		  -EINVAL);
	ASSERT_TRUE(strstr(err, "more than one Host") != NULL);
	ASSERT_EQ(head("GET / HTTP/2\r\nHost: 1-1.a\r\n\r\n", &h, err), -EINVAL);
	ASSERT_EQ(head("GET /\r\nHost: 1-1.a\r\n\r\n", &h, err), -EINVAL);
	ASSERT_EQ(head("GET  HTTP/1.1\r\nHost: 1-1.a\r\n\r\n", &h, err), -EINVAL);
	ASSERT_EQ(head("GET / HTTP/1.1\r\nHost 1-1.a\r\n\r\n", &h, err), -EINVAL);
	ASSERT_EQ(head("GET / HTTP/1.1\r\n folded: x\r\nHost: 1-1.a\r\n\r\n", &h, err),
		  -EINVAL);
	ASSERT_EQ(e2b_proxy_parse_head("GET / HTTP/1.1\r\nHost: 1-1.a\0\r\n\r\n", 32, &h,
				       err), -EINVAL);
	ASSERT_TRUE(strstr(err, "NUL") != NULL);
	/* too large, complete or not */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	ASSERT_EQ(e2b_proxy_parse_head(big, E2B_PROXY_HEAD_MAX, &h, err), -E2BIG);
	memcpy(big + sizeof(big) - 4, "\r\n\r\n", 4);
	ASSERT_EQ(e2b_proxy_parse_head(big, sizeof(big), &h, err), -E2BIG);
	/* an overlong token is kept as none that matches */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nHost: 1-1.a\r\ne2b-traffic-access-token: ", 55);
	memcpy(big + 200, "\r\n\r\n", 5);
	ASSERT_EQ(head(big, &h, err), 204);
	ASSERT_TRUE(h.has_token);
	ASSERT_STREQ(h.token, "");
}

/* --- the proxy against a guest in a namespace --- */

/* the guest: answers each request on a connection with "hello <path>" */
static void guest_conn(int fd)
{
	char buf[4096];
	size_t len = 0;

	for (;;) {
		char *end;
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n <= 0)
			break;
		len += n;
		buf[len] = '\0';
		while ((end = strstr(buf, "\r\n\r\n"))) {
			char path[64] = "", out[256];
			size_t used = end + 4 - buf;
			int m;

			sscanf(buf, "%*s %63s", path);
			m = snprintf(out, sizeof(out),
				     "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\nhello %s",
				     strlen(path) + 6, path);
			if (write(fd, out, m) != m)
				_exit(1);
			memmove(buf, buf + used, len - used + 1);
			len -= used;
		}
	}
	_exit(0);
}

static pid_t guest_pid;
static int guest_ns = -1;

/* 0, or -1 when namespaces cannot be made here (not root) */
static int guest_start(void)
{
	int pfd[2];
	char c, path[64];
	pid_t pid;

	if (guest_pid)
		return 0;
	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(8000) };
		int one = 1, l;

		close(pfd[0]);
		setpgid(0, 0);
		if (unshare(CLONE_NEWNET) ||
		    system("ip link set lo up && ip addr add " CUBE_NET_GUEST_IP
			   "/32 dev lo"))
			_exit(1);
		inet_pton(AF_INET, CUBE_NET_GUEST_IP, &sa.sin_addr);
		l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 64))
			_exit(1);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		signal(SIGCHLD, SIG_IGN);
		for (;;) {
			int fd = accept(l, NULL, NULL);

			if (fd < 0)
				continue;
			if (!fork())
				guest_conn(fd);
			close(fd);
		}
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1) {
		close(pfd[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(pfd[0]);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	guest_ns = open(path, O_RDONLY | O_CLOEXEC);
	guest_pid = pid;
	return guest_ns < 0 ? -1 : 0;
}

static void guest_stop(void)
{
	if (guest_pid) {
		/* the guest and its connections: one process group */
		kill(-guest_pid, SIGKILL);
		waitpid(guest_pid, NULL, 0);
		guest_pid = 0;
	}
}

static volatile bool sandbox7_dead;

/* "7" and "8" run (8 wants a token), "6" has no network */
static int t_resolve(void *ctx, const char *sandbox,
		     struct e2b_proxy_target *t)
{
	memset(t, 0, sizeof(*t));
	if (!strcmp(sandbox, "6"))
		return -ENETDOWN;
	if (strcmp(sandbox, "7") && strcmp(sandbox, "8"))
		return -ENOENT;
	if (!strcmp(sandbox, "7") && sandbox7_dead)
		return -ENOENT;
	t->key = sandbox[0] - '0';
	if (t->key == 8)
		strcpy(t->token, "0123456789abcdef0123456789abcdef");
	t->netns_fd = dup(guest_ns);
	return t->netns_fd < 0 ? -errno : 0;
}

static bool t_alive(void *ctx, uint64_t key)
{
	return !(key == 7 && sandbox7_dead);
}

static const struct e2b_proxy_ops t_ops = {
	.resolve = t_resolve,
	.alive = t_alive,
};

static struct e2b_proxy *proxy_up(void)
{
	struct e2b_proxy_config cfg = {
		.addr = "127.0.0.1", .ops = &t_ops, .max_per_client = 4,
	};
	struct e2b_proxy *p = NULL;

	if (geteuid() || guest_start())
		return NULL;
	if (e2b_proxy_start(&cfg, &p))
		return NULL;
	return p;
}

static int dial(struct e2b_proxy *p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(e2b_proxy_port(p)) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	return fd;
}

/*
 * read what comes, each piece within @ms, up to @len - 1 bytes, until the
 * end or the guest's "hello ..." answer; NUL-terminated
 */
static ssize_t read_for(int fd, char *buf, size_t len, int ms)
{
	size_t got = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, ms) <= 0)
			break;
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			break;
		got += n;
		buf[got] = '\0';
		/* the guest's answer is whole when its body came */
		if (strstr(buf, "hello "))
			break;
	}
	buf[got] = '\0';
	return got;
}

static int say(int fd, const char *s)
{
	return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

/* one request on a new connection, the whole answer (closed after) */
static void ask(struct e2b_proxy *p, const char *req, char *out, size_t len)
{
	int fd = dial(p);

	out[0] = '\0';
	if (fd < 0 || say(fd, req)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	read_for(fd, out, len, 7000);
	close(fd);
}

TEST(proxy_relays)
{
	struct e2b_proxy *p = proxy_up();
	char buf[4096];
	int fd;

	if (!p)
		SKIP("needs root and network namespaces");
	fd = dial(p);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(say(fd, "GET /a HTTP/1.1\r\nHost: 8000-7.localhost:1\r\n\r\n"), 0);
	read_for(fd, buf, sizeof(buf), 5000);
	ASSERT_TRUE(strstr(buf, "200 OK") != NULL);
	ASSERT_TRUE(strstr(buf, "hello /a") != NULL);
	/* keep-alive: the next request on the same connection */
	ASSERT_EQ(say(fd, "GET /b HTTP/1.1\r\nHost: 8000-7.localhost:1\r\n\r\n"), 0);
	read_for(fd, buf, sizeof(buf), 5000);
	ASSERT_TRUE(strstr(buf, "hello /b") != NULL);
	close(fd);
	e2b_proxy_stop(p);
}

TEST(proxy_refusals)
{
	struct e2b_proxy *p = proxy_up();
	char buf[4096], big[E2B_PROXY_HEAD_MAX + 64];

	if (!p)
		SKIP("needs root and network namespaces");
	ask(p, "GET / HTTP/1.1\r\nHost: 8001-7.localhost\r\n\r\n", buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 502 Bad Gateway") != NULL);
	ASSERT_TRUE(strstr(buf, "nothing listens on port 8001") != NULL);
	ask(p, "GET / HTTP/1.1\r\nHost: 8000-9.localhost\r\n\r\n", buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "502") != NULL);
	ASSERT_TRUE(strstr(buf, "sandbox 9 is not running") != NULL);
	ask(p, "GET / HTTP/1.1\r\nHost: 8000-6.localhost\r\n\r\n", buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "has no network") != NULL);
	ask(p, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 400") != NULL);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	big[sizeof(big) - 1] = '\0';
	ask(p, big, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 431") != NULL);
	/* the token of sandbox 8 */
	ask(p, "GET / HTTP/1.1\r\nHost: 8000-8.localhost\r\n\r\n", buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 403 Forbidden") != NULL);
	ask(p, "GET / HTTP/1.1\r\nHost: 8000-8.localhost\r\n"
	    "e2b-traffic-access-token: 0123456789abcdef0123456789abcdee\r\n\r\n",
	    buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "HTTP/1.1 403 Forbidden") != NULL);
	ask(p, "GET /t HTTP/1.1\r\nHost: 8000-8.localhost\r\nConnection: close\r\n"
	    "E2B-Traffic-Access-Token: 0123456789abcdef0123456789abcdef\r\n\r\n",
	    buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "hello /t") != NULL);
	e2b_proxy_stop(p);
}

/*
 * The proxy counts @want connections within 5 s (polled every 10 ms): a
 * connection's thread unlinks it as it ends, after the close a client sees.
 */
static bool count_reaches(struct e2b_proxy *p, unsigned int want)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int i;

	for (i = 0; i < 500; i++) {
		if (e2b_proxy_count(p) == want)
			return true;
		nanosleep(&ts, NULL);
	}
	return e2b_proxy_count(p) == want;
}

/* the connection @fd is closed by the proxy within @ms */
static bool closed_within(int fd, int ms)
{
	char buf[256];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) <= 0)
		return false;
	return read(fd, buf, sizeof(buf)) <= 0;
}

TEST(proxy_closes_with_the_sandbox)
{
	struct e2b_proxy *p = proxy_up();
	char buf[4096];
	int fd;

	if (!p)
		SKIP("needs root and network namespaces");
	/* an exit event: at once */
	fd = dial(p);
	ASSERT_EQ(say(fd, "GET /a HTTP/1.1\r\nHost: 8000-7.x\r\n\r\n"), 0);
	read_for(fd, buf, sizeof(buf), 5000);
	ASSERT_TRUE(strstr(buf, "hello /a") != NULL);
	ASSERT_EQ(e2b_proxy_count(p), 1);
	e2b_proxy_drop(p, 8);
	ASSERT_FALSE(closed_within(fd, 300));
	e2b_proxy_drop(p, 7);
	ASSERT_TRUE(closed_within(fd, 1000));
	close(fd);
	/* the liveness watch: within a round or two */
	fd = dial(p);
	ASSERT_EQ(say(fd, "GET /b HTTP/1.1\r\nHost: 8000-7.x\r\n\r\n"), 0);
	read_for(fd, buf, sizeof(buf), 5000);
	ASSERT_TRUE(strstr(buf, "hello /b") != NULL);
	sandbox7_dead = true;
	ASSERT_TRUE(closed_within(fd, 3 * E2B_PROXY_WATCH_MS));
	close(fd);
	ask(p, "GET / HTTP/1.1\r\nHost: 8000-7.x\r\n\r\n", buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "502") != NULL);
	sandbox7_dead = false;
	/* every connection's thread is gone */
	if (!count_reaches(p, 0))
		TH_LOG("%u connections left", e2b_proxy_count(p));
	ASSERT_EQ(e2b_proxy_count(p), 0);
	e2b_proxy_stop(p);
}

TEST(proxy_limits_clients)
{
	struct e2b_proxy *p = proxy_up();
	char buf[512];
	int fd[5], i;

	if (!p)
		SKIP("needs root and network namespaces");
	/* 4 from one address; the fifth is turned away */
	for (i = 0; i < 4; i++) {
		fd[i] = dial(p);
		ASSERT_GE(fd[i], 0);
	}
	/* the proxy has accepted all four before the fifth comes */
	if (!count_reaches(p, 4))
		TH_LOG("%u connections accepted, not 4", e2b_proxy_count(p));
	ASSERT_EQ(e2b_proxy_count(p), 4);
	fd[4] = dial(p);
	ASSERT_GE(fd[4], 0);
	read_for(fd[4], buf, sizeof(buf), 3000);
	ASSERT_TRUE(strstr(buf, "503") != NULL);
	close(fd[4]);
	/* a stop ends connections still reading their head */
	e2b_proxy_stop(p);
	for (i = 0; i < 4; i++) {
		ASSERT_TRUE(closed_within(fd[i], 1000));
		close(fd[i]);
	}
}

static void __attribute__((destructor)) cleanup(void)
{
	guest_stop();
}

TEST_MAIN()
