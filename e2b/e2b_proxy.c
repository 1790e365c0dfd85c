// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_proxy.c: the port proxy: a thread per connection, which reads the
 * request head, makes its socket inside the sandbox's network namespace
 * (setns() of that thread alone, and back), connects to the guest and
 * relays; one thread accepts, one watches the sandboxes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cube_net_addr.h"
#include "e2b_backend.h"
#include "e2b_proxy.h"

#define RELAY_BUF	(64 * 1024)	/* per direction; holds a whole head */
#define THREAD_STACK	(256 * 1024)

struct conn {
	struct conn *next;
	struct e2b_proxy *p;
	int cfd;			/* the client */
	int ufd;			/* the guest, -1 until connected */
	struct in_addr peer;
	uint64_t key;			/* the sandbox, once resolved */
	bool relaying;
	bool dropped;			/* its sandbox ended */
};

struct e2b_proxy {
	struct e2b_proxy_config cfg;
	int lfd;
	int self_ns;			/* the proxy's own network namespace */
	int wake[2];			/* stops the acceptor and the watcher */
	uint16_t port;
	pthread_t acceptor, watcher;
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* the last connection ended */
	struct conn *conns;
	unsigned int nconns;
	bool quit;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* best effort: the client may be gone, or not reading */
static void reply(int fd, unsigned int status, const char *reason,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void reply(int fd, unsigned int status, const char *reason,
		  const char *fmt, ...)
{
	char body[E2B_MSG_MAX + 2], out[E2B_MSG_MAX + 256];
	va_list ap;
	int n, m;

	va_start(ap, fmt);
	n = vsnprintf(body, sizeof(body) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(body) - 2)
		n = sizeof(body) - 2;
	body[n++] = '\n';
	body[n] = '\0';
	m = snprintf(out, sizeof(out),
		     "HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
		     status, reason, n, body);
	if (m > 0 && send(fd, out, m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;
}

/* --- the connection list --- */

static void conn_unlink(struct e2b_proxy *p, struct conn *c)
{
	struct conn **pp;

	pthread_mutex_lock(&p->lock);
	for (pp = &p->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (!--p->nconns)
		pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
}

/* wakes the connection's thread: its poll sees the hang-up */
static void conn_shut_locked(struct conn *c)
{
	c->dropped = true;
	shutdown(c->cfd, SHUT_RDWR);
	if (c->ufd >= 0)
		shutdown(c->ufd, SHUT_RDWR);
}

void e2b_proxy_drop(struct e2b_proxy *p, uint64_t key)
{
	struct conn *c;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (c = p->conns; c; c = c->next)
		if (c->relaying && c->key == key)
			conn_shut_locked(c);
	pthread_mutex_unlock(&p->lock);
}

unsigned int e2b_proxy_count(struct e2b_proxy *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->lock);
	n = p->nconns;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* --- one connection --- */

/*
 * The head, into @buf: its length, or 0 when the connection ends here
 * (answered, or gone).  Whatever came after the head stays in @buf
 * (*@len in all).
 */
static int read_head(struct conn *c, char *buf, size_t *len,
		     struct e2b_proxy_head *h)
{
	int64_t deadline = now_ms() + E2B_PROXY_HEAD_MS;
	char err[E2B_MSG_MAX];
	int ret;

	*len = 0;
	for (;;) {
		struct pollfd pfd = { .fd = c->cfd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t n;

		ret = e2b_proxy_parse_head(buf, *len, h, err);
		if (ret > 0)
			return ret;
		if (ret == -E2BIG) {
			reply(c->cfd, 431, "Request Header Fields Too Large",
			      "the request head is longer than %d bytes",
			      E2B_PROXY_HEAD_MAX);
			return 0;
		}
		if (ret == -EINVAL) {
			reply(c->cfd, 400, "Bad Request", "%s", err);
			return 0;
		}
		if (left <= 0) {
			reply(c->cfd, 408, "Request Timeout",
			      "the request head did not come in time");
			return 0;
		}
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return 0;
		n = recv(c->cfd, buf + *len, E2B_PROXY_HEAD_MAX + 1 - *len,
			 MSG_DONTWAIT);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return 0;
		}
		*len += n;
	}
}

/* a socket in namespace @ns; the calling thread's namespace is restored */
static int socket_in(int self_ns, int ns)
{
	int fd, err;

	if (setns(ns, CLONE_NEWNET))
		return -errno;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	err = fd < 0 ? -errno : 0;
	if (setns(self_ns, CLONE_NEWNET)) {
		/*
		 * This thread stays in the sandbox's namespace: it makes no
		 * other socket, and its end releases the namespace.
		 */
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	return fd < 0 ? err : fd;
}

static int connect_guest(int fd, unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int64_t deadline = now_ms() + E2B_PROXY_CONNECT_MS;
	socklen_t sl = sizeof(int);
	int one = 1, err = 0;

	inet_pton(AF_INET, CUBE_NET_GUEST_IP, &sa.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	for (;;) {
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl))
		return -errno;
	return -err;
}

int e2b_proxy_dial(int netns_fd, unsigned int port)
{
	int self, fd, ret;

	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	fd = socket_in(self, netns_fd);
	close(self);
	if (fd < 0)
		return fd;
	ret = connect_guest(fd, port);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

struct dir {
	int from, to;
	char *buf;
	size_t len, off;
	bool eof, done;
};

/* move what can be moved without blocking; -1 when the relay must end */
static int pump(struct dir *d, short rev_from, short rev_to)
{
	ssize_t n;

	if (d->done)
		return 0;
	if (d->off < d->len && (rev_to & (POLLOUT | POLLERR | POLLHUP))) {
		n = send(d->to, d->buf + d->off, d->len - d->off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0)
			d->off += n;
		if (d->off == d->len)
			d->off = d->len = 0;
	}
	if (!d->eof && d->len == 0 && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
		n = recv(d->from, d->buf, RELAY_BUF, MSG_DONTWAIT);
		if (n == 0) {
			d->eof = true;
		} else if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -1;
		} else {
			d->len = n;
			d->off = 0;
			n = send(d->to, d->buf, d->len, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return -1;
			if (n > 0)
				d->off = n;
			if (d->off == d->len)
				d->off = d->len = 0;
		}
	}
	if (d->eof && d->len == 0) {
		shutdown(d->to, SHUT_WR);
		d->done = true;
	}
	return 0;
}

/* both ways until both ends are done, one fails, or nothing moves */
static void relay(struct conn *c, struct dir *up, struct dir *down)
{
	int idle_ms = (int)c->p->cfg.idle_secs * 1000;

	while (!(up->done && down->done)) {
		struct pollfd pfd[2] = { { .fd = c->cfd }, { .fd = c->ufd } };
		int n;

		/* read a side only when its bytes have somewhere to go */
		if (!up->done && (up->len ? 0 : !up->eof))
			pfd[0].events |= POLLIN;
		if (up->len)
			pfd[1].events |= POLLOUT;
		if (!down->done && (down->len ? 0 : !down->eof))
			pfd[1].events |= POLLIN;
		if (down->len)
			pfd[0].events |= POLLOUT;
		n = poll(pfd, 2, idle_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;	/* idle, or poll failed */
		if (c->dropped)
			return;
		if (pump(up, pfd[0].revents, pfd[1].revents) ||
		    pump(down, pfd[1].revents, pfd[0].revents))
			return;
		/* a side that hung up and has nothing more to give */
		if ((pfd[0].revents & POLLERR) || (pfd[1].revents & POLLERR))
			return;
	}
}

static void serve(struct conn *c)
{
	struct e2b_proxy *p = c->p;
	struct e2b_proxy_target t = { .netns_fd = -1 };
	struct e2b_proxy_head h;
	struct dir up = { 0 }, down = { 0 };
	size_t len;
	int ret, fd;

	up.buf = malloc(RELAY_BUF);
	down.buf = malloc(RELAY_BUF);
	if (!up.buf || !down.buf) {
		reply(c->cfd, 503, "Service Unavailable", "out of memory");
		goto out;
	}
	if (!read_head(c, up.buf, &len, &h))
		goto out;
	ret = p->cfg.ops->resolve(p->cfg.ctx, h.sandbox, &t);
	if (ret == -ENOENT || ret == -ENETDOWN) {
		reply(c->cfd, 502, "Bad Gateway",
		      ret == -ENOENT ? "sandbox %s is not running" :
		      "sandbox %s has no network", h.sandbox);
		goto out;
	}
	if (ret) {
		reply(c->cfd, 502, "Bad Gateway", "sandbox %s: %s", h.sandbox,
		      strerror(-ret));
		goto out;
	}
	if (t.token[0] && (!h.has_token || !e2b_secret_equal(t.token, h.token))) {
		reply(c->cfd, 403, "Forbidden",
		      h.has_token ? "wrong %s header" :
		      "sandbox %s needs the %s header", h.has_token ?
		      E2B_TRAFFIC_TOKEN_HEADER : h.sandbox,
		      E2B_TRAFFIC_TOKEN_HEADER);
		goto out;
	}
	fd = socket_in(p->self_ns, t.netns_fd);
	close(t.netns_fd);
	if (fd < 0) {
		reply(c->cfd, 502, "Bad Gateway",
		      "cannot reach sandbox %s: %s", h.sandbox, strerror(-fd));
		goto out;
	}
	pthread_mutex_lock(&p->lock);
	c->ufd = fd;
	c->key = t.key;
	c->relaying = true;
	/* it may have ended since it was resolved */
	if (c->dropped)
		conn_shut_locked(c);
	pthread_mutex_unlock(&p->lock);
	ret = connect_guest(fd, h.port);
	if (ret) {
		reply(c->cfd, 502, "Bad Gateway",
		      ret == -ECONNREFUSED ? "nothing listens on port %u of sandbox %s" :
		      ret == -ETIMEDOUT ? "port %u of sandbox %s does not answer" :
		      "cannot connect to port %u of sandbox %s", h.port, h.sandbox);
		goto out;
	}
	/* the head and whatever followed it go first */
	up.from = c->cfd;
	up.to = fd;
	up.len = len;
	down.from = fd;
	down.to = c->cfd;
	relay(c, &up, &down);
out:
	free(up.buf);
	free(down.buf);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct e2b_proxy *p = c->p;

	serve(c);
	conn_unlink(p, c);
	close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	free(c);
	return NULL;
}

/* --- accepting and watching --- */

static unsigned int from_peer_locked(struct e2b_proxy *p, struct in_addr a)
{
	unsigned int n = 0;
	struct conn *c;

	for (c = p->conns; c; c = c->next)
		if (c->peer.s_addr == a.s_addr)
			n++;
	return n;
}

static void accept_one(struct e2b_proxy *p)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	pthread_attr_t attr;
	struct conn *c;
	pthread_t th;
	int fd, ret;

	fd = accept4(p->lfd, (struct sockaddr *)&sa, &sl,
		     SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->p = p;
	c->cfd = fd;
	c->ufd = -1;
	c->peer = sa.sin_addr;
	pthread_mutex_lock(&p->lock);
	if (p->nconns >= p->cfg.max_conns ||
	    from_peer_locked(p, c->peer) >= p->cfg.max_per_client) {
		pthread_mutex_unlock(&p->lock);
		reply(fd, 503, "Service Unavailable", "too many connections");
		close(fd);
		free(c);
		return;
	}
	c->next = p->conns;
	p->conns = c;
	p->nconns++;
	pthread_mutex_unlock(&p->lock);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &attr, conn_main, c);
	pthread_attr_destroy(&attr);
	if (ret) {
		reply(fd, 503, "Service Unavailable", "out of threads");
		conn_unlink(p, c);
		close(fd);
		free(c);
	}
}

static void *acceptor_main(void *arg)
{
	struct e2b_proxy *p = arg;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = p->lfd, .events = POLLIN },
					 { .fd = p->wake[0], .events = POLLIN } };

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (pfd[1].revents)
			return NULL;
		if (pfd[0].revents & POLLIN)
			accept_one(p);
	}
}

#define WATCH_BATCH	64

/* every sandbox with connections, asked whether it still runs */
static void watch_once(struct e2b_proxy *p)
{
	uint64_t keys[WATCH_BATCH], dead[WATCH_BATCH];
	unsigned int nk = 0, nd = 0, i;
	bool more = false;
	struct conn *c;

	pthread_mutex_lock(&p->lock);
	for (c = p->conns; c; c = c->next) {
		if (!c->relaying || c->dropped)
			continue;
		for (i = 0; i < nk && keys[i] != c->key; i++)
			;
		if (i < nk)
			continue;
		if (nk == WATCH_BATCH) {
			more = true;
			break;
		}
		keys[nk++] = c->key;
	}
	pthread_mutex_unlock(&p->lock);
	(void)more;	/* the rest wait for the next round */
	for (i = 0; i < nk; i++)
		if (!p->cfg.ops->alive(p->cfg.ctx, keys[i]))
			dead[nd++] = keys[i];
	for (i = 0; i < nd; i++)
		e2b_proxy_drop(p, dead[i]);
}

static void *watcher_main(void *arg)
{
	struct e2b_proxy *p = arg;

	for (;;) {
		struct pollfd pfd = { .fd = p->wake[0], .events = POLLIN };

		if (poll(&pfd, 1, E2B_PROXY_WATCH_MS) > 0)
			return NULL;
		watch_once(p);
	}
}

int e2b_proxy_start(const struct e2b_proxy_config *cfg,
		    struct e2b_proxy **out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(cfg->port) };
	socklen_t sl = sizeof(sa);
	struct e2b_proxy *p;
	int one = 1, ret;

	if (inet_pton(AF_INET, cfg->addr, &sa.sin_addr) != 1)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	if (!p->cfg.max_conns)
		p->cfg.max_conns = E2B_PROXY_CONNS_DEFAULT;
	if (!p->cfg.max_per_client)
		p->cfg.max_per_client = E2B_PROXY_PER_CLIENT_DEFAULT;
	if (!p->cfg.idle_secs)
		p->cfg.idle_secs = E2B_PROXY_IDLE_DEFAULT;
	p->lfd = p->self_ns = p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (p->self_ns < 0 || pipe2(p->wake, O_CLOEXEC)) {
		ret = -errno;
		goto fail;
	}
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->lfd < 0) {
		ret = -errno;
		goto fail;
	}
	setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(p->lfd, 128) ||
	    getsockname(p->lfd, (struct sockaddr *)&sa, &sl)) {
		ret = -errno;
		goto fail;
	}
	p->port = ntohs(sa.sin_port);
	ret = -pthread_create(&p->watcher, NULL, watcher_main, p);
	if (ret)
		goto fail;
	ret = -pthread_create(&p->acceptor, NULL, acceptor_main, p);
	if (ret) {
		if (write(p->wake[1], "x", 1) < 0)
			abort();	/* an empty pipe takes a byte */
		pthread_join(p->watcher, NULL);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	if (p->lfd >= 0)
		close(p->lfd);
	if (p->self_ns >= 0)
		close(p->self_ns);
	if (p->wake[0] >= 0) {
		close(p->wake[0]);
		close(p->wake[1]);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->idle);
	free(p);
	return ret;
}

uint16_t e2b_proxy_port(const struct e2b_proxy *p)
{
	return p->port;
}

void e2b_proxy_stop(struct e2b_proxy *p)
{
	struct conn *c;

	if (!p)
		return;
	if (write(p->wake[1], "x", 1) < 0)
		return;	/* cannot happen: a pipe with room */
	pthread_join(p->acceptor, NULL);
	pthread_join(p->watcher, NULL);
	close(p->lfd);
	pthread_mutex_lock(&p->lock);
	p->quit = true;
	for (c = p->conns; c; c = c->next)
		conn_shut_locked(c);
	while (p->nconns)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
	close(p->self_ns);
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->idle);
	free(p);
}
