// SPDX-License-Identifier: GPL-2.0
/* virtio-vsock with a hybrid Unix-socket host side; see vsock.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_ids.h>
#include <linux/virtio_vsock.h>

#include "cube_vsock_broker.h"
#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"
#include "vsock.h"

#define VQ_RX			0
#define VQ_TX			1
#define HDR_LEN			sizeof(struct virtio_vsock_hdr)
#define MAX_PKT_PAYLOAD		(64 * 1024)
#define LINE_MAX_LEN		32
#define RST_RING		64
#define FIRST_LOCAL_PORT	(1U << 30)

enum conn_state {
	CONN_FREE,
	CONN_HOST_LINE,		/* host connected, waiting for CONNECT line */
	CONN_REQ_SENT,		/* REQUEST on its way to the guest */
	CONN_OPEN,
	CONN_CLOSING,		/* RST pending, then freed */
};

#define PEND_REQUEST		(1 << 0)
#define PEND_RESPONSE		(1 << 1)
#define PEND_CREDIT		(1 << 2)
#define PEND_SHUT_SEND		(1 << 3)
#define PEND_RST		(1 << 4)

struct conn {
	enum conn_state state;
	int fd;
	uint32_t local_port;	/* host side port */
	uint32_t peer_port;	/* guest side port */
	uint32_t pending;
	uint32_t events;	/* epoll interest now registered */
	bool registered;	/* fd is in the epoll set */
	char line[LINE_MAX_LEN];
	unsigned int line_len;
	bool readable;
	bool host_eof;		/* host sent its last byte */
	bool guest_shut_send;	/* guest will send no more */
	bool guest_shut_rcv;	/* guest wants no more */
	/* Guest's receive window. */
	uint32_t peer_buf_alloc;
	uint32_t peer_fwd_cnt;
	uint32_t tx_cnt;	/* bytes we sent to the guest */
	/* Our receive window. */
	uint32_t rx_cnt;	/* bytes the guest sent us */
	uint32_t fwd_cnt;	/* of those, bytes written to the host */
	uint32_t fwd_cnt_sent;	/* fwd_cnt last told to the guest */
	/* Guest-to-host bytes the host socket has not taken yet. */
	uint8_t *buf;
	uint32_t buf_head;
	uint32_t buf_len;
};

struct rst_ent {
	uint32_t src_port;	/* host side */
	uint32_t dst_port;	/* guest side */
};

struct vsock {
	struct virtio_mmio t;
	uint64_t guest_cid;
	char *uds_path;
	bool keep_path;		/* jailed: the socket file is its root's */
	int broker_fd;		/* connect broker, -1: none */
	uint32_t broker_seq;	/* of its last request */
	void (*activity)(void *);	/* on each new connection, or NULL */
	void *activity_arg;
	int listen_fd;
	int epoll_fd;
	int kick_fd;
	int stop_fd;
	pthread_t thread;
	bool thread_started;
	bool thread_running;	/* past glibc's thread start-up */
	pthread_cond_t running;
	uint32_t next_port;
	struct rst_ent rst[RST_RING];
	unsigned int rst_head, rst_len;
	unsigned int rr;	/* round-robin start for data */
	struct conn conns[VSOCK_MAX_CONNS];
	struct virtq_chain chain;
	uint8_t pkt[MAX_PKT_PAYLOAD];
};

#define EP_KICK		((uint64_t)-1)
#define EP_STOP		((uint64_t)-2)
#define EP_LISTEN	((uint64_t)-3)

static void conn_close_fd(struct vsock *v, struct conn *c)
{
	if (c->fd >= 0) {
		if (c->registered)
			epoll_ctl(v->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	c->registered = false;
	free(c->buf);
	c->buf = NULL;
	c->buf_len = 0;
}

static void conn_free(struct vsock *v, struct conn *c)
{
	conn_close_fd(v, c);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->state = CONN_FREE;
}

/* Close the host stream now; tell the guest, free once the RST is out. */
static void conn_reset(struct vsock *v, struct conn *c)
{
	conn_close_fd(v, c);
	if (c->state == CONN_HOST_LINE) {
		conn_free(v, c);	/* the guest never heard of it */
		return;
	}
	c->state = CONN_CLOSING;
	c->pending = PEND_RST;
}

static struct conn *conn_find(struct vsock *v, uint32_t local, uint32_t peer)
{
	unsigned int i;

	for (i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct conn *c = &v->conns[i];

		if (c->state != CONN_FREE && c->state != CONN_HOST_LINE &&
		    c->local_port == local && c->peer_port == peer)
			return c;
	}
	return NULL;
}

static struct conn *conn_alloc(struct vsock *v)
{
	unsigned int i;

	for (i = 0; i < VSOCK_MAX_CONNS; i++)
		if (v->conns[i].state == CONN_FREE) {
			memset(&v->conns[i], 0, sizeof(v->conns[i]));
			v->conns[i].fd = -1;
			return &v->conns[i];
		}
	return NULL;
}

static bool port_in_use(struct vsock *v, uint32_t port)
{
	unsigned int i;

	for (i = 0; i < VSOCK_MAX_CONNS; i++)
		if (v->conns[i].state != CONN_FREE &&
		    v->conns[i].local_port == port)
			return true;
	return false;
}

static uint32_t alloc_port(struct vsock *v)
{
	uint32_t p;

	do {
		p = v->next_port++;
		if (v->next_port < FIRST_LOCAL_PORT)
			v->next_port = FIRST_LOCAL_PORT;
	} while (port_in_use(v, p));
	return p;
}

static void queue_rst(struct vsock *v, uint32_t src_port, uint32_t dst_port)
{
	struct rst_ent *e;

	if (v->rst_len == RST_RING)
		return;		/* the guest times out on its own */
	e = &v->rst[(v->rst_head + v->rst_len++) % RST_RING];
	e->src_port = src_port;
	e->dst_port = dst_port;
}

/* Credit the guest may still use towards us. */
static uint32_t our_free(const struct conn *c)
{
	return VSOCK_BUF_ALLOC - (c->rx_cnt - c->fwd_cnt);
}

/* Credit we may still use towards the guest. */
static uint32_t peer_credit(const struct conn *c)
{
	uint32_t inflight = c->tx_cnt - c->peer_fwd_cnt;

	if (inflight > c->peer_buf_alloc)
		return 0;
	return c->peer_buf_alloc - inflight;
}

static void maybe_credit_update(struct conn *c)
{
	uint32_t freed = c->fwd_cnt - c->fwd_cnt_sent;
	uint32_t seen = VSOCK_BUF_ALLOC - (c->rx_cnt - c->fwd_cnt_sent);

	if (freed && (freed >= VSOCK_BUF_ALLOC / 4 || seen < VSOCK_BUF_ALLOC / 2))
		c->pending |= PEND_CREDIT;
}

/* Push buffered guest bytes into the host socket. */
static int conn_flush(struct conn *c)
{
	while (c->buf_len) {
		uint32_t chunk = MIN(c->buf_len, VSOCK_BUF_ALLOC - c->buf_head);
		ssize_t n = send(c->fd, c->buf + c->buf_head, chunk,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -errno;
		}
		c->buf_head = (c->buf_head + n) % VSOCK_BUF_ALLOC;
		c->buf_len -= n;
		c->fwd_cnt += n;
	}
	c->buf_head = 0;
	return 0;
}

static int conn_write(struct conn *c, const struct iovec *iov, unsigned int n,
		      size_t skip, uint32_t len)
{
	uint32_t done = 0;
	unsigned int i;

	if (len > our_free(c))
		return -ENOBUFS;	/* the guest ignored our credit */
	c->rx_cnt += len;
	for (i = 0; i < n && done < len; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		p += skip;
		l = MIN(l - skip, (size_t)(len - done));
		skip = 0;
		done += l;
		if (!c->buf_len) {
			ssize_t w = send(c->fd, p, l, MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w < 0 && errno != EAGAIN && errno != EINTR)
				return -errno;
			if (w > 0) {
				c->fwd_cnt += w;
				p += w;
				l -= w;
			}
		}
		while (l) {
			uint32_t tail, room;

			if (!c->buf) {
				c->buf = malloc(VSOCK_BUF_ALLOC);
				if (!c->buf)
					return -ENOMEM;
			}
			tail = (c->buf_head + c->buf_len) % VSOCK_BUF_ALLOC;
			room = MIN((uint32_t)(VSOCK_BUF_ALLOC - tail),
				   VSOCK_BUF_ALLOC - c->buf_len);
			room = MIN(room, (uint32_t)l);
			memcpy(c->buf + tail, p, room);
			c->buf_len += room;
			p += room;
			l -= room;
		}
	}
	return 0;
}

static uint64_t mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* The broker's stream to host port @port, or -errno. */
static int connect_broker(struct vsock *v, uint32_t port)
{
	struct cube_vsock_broker_msg q = { .port = port, .seq = ++v->broker_seq }, a;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = &a, .iov_len = sizeof(a) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	uint64_t end = mono_us() + VSOCK_BROKER_WAIT_MS * 1000ULL;
	struct cmsghdr *cm;
	int fd;
	ssize_t n;

	/* never blocks: a broker that stopped reading is a refusal */
	if (send(v->broker_fd, &q, sizeof(q), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    sizeof(q))
		return -errno;
	/* each wait is bounded by the socket's SO_RCVTIMEO */
	while (mono_us() < end) {
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		n = recvmsg(v->broker_fd, &msg, MSG_CMSG_CLOEXEC);
		if (n == 0)
			return -ECONNRESET;	/* the broker is gone */
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n < 0)
			continue;
		fd = -1;
		cm = CMSG_FIRSTHDR(&msg);
		if (cm && cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		if (n != sizeof(a) || (msg.msg_flags & MSG_CTRUNC) ||
		    a.port != port || a.seq != q.seq ||
		    (a.result == 0) != (fd >= 0)) {
			if (fd >= 0)
				close(fd);
			continue;	/* a late answer, or garbage */
		}
		if (a.result)
			return a.result < 0 && a.result > -4096 ? a.result :
			       -ECONNREFUSED;
		if (fcntl(fd, F_SETFL, O_NONBLOCK)) {
			close(fd);
			return -EBADF;
		}
		return fd;
	}
	return -ETIMEDOUT;
}

static int connect_host(struct vsock *v, uint32_t port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (v->broker_fd >= 0)
		return connect_broker(v, port);
	if (v->keep_path)
		return -EACCES;		/* jailed: nothing by path */
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", v->uds_path,
		     port) >= (int)sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static void conn_register(struct vsock *v, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = c - v->conns };

	c->events = EPOLLIN;
	if (epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, c->fd, &ev)) {
		conn_reset(v, c);
		return;
	}
	c->registered = true;
	if (v->activity)
		v->activity(v->activity_arg);
}

/* One packet the guest sent. */
static void handle_tx_pkt(struct vsock *v, const struct virtio_vsock_hdr *h,
			  const struct virtq_chain *ch)
{
	uint32_t len = h->len, src_port = h->src_port, dst_port = h->dst_port;
	struct conn *c;

	if (h->src_cid != v->guest_cid || h->dst_cid != VSOCK_HOST_CID ||
	    h->type != VIRTIO_VSOCK_TYPE_STREAM || len > MAX_PKT_PAYLOAD ||
	    len > ch->out_len - HDR_LEN) {
		if (h->op != VIRTIO_VSOCK_OP_RST)
			queue_rst(v, dst_port, src_port);
		return;
	}
	c = conn_find(v, dst_port, src_port);
	if (!c) {
		int fd;

		if (h->op == VIRTIO_VSOCK_OP_RST)
			return;
		if (h->op != VIRTIO_VSOCK_OP_REQUEST || !v->uds_path ||
		    port_in_use(v, dst_port)) {
			queue_rst(v, dst_port, src_port);
			return;
		}
		c = conn_alloc(v);
		fd = c ? connect_host(v, dst_port) : -ENOSPC;
		if (fd < 0) {
			if (c)
				conn_free(v, c);
			queue_rst(v, dst_port, src_port);
			return;
		}
		c->fd = fd;
		c->local_port = dst_port;
		c->peer_port = src_port;
		c->state = CONN_OPEN;
		c->pending = PEND_RESPONSE;
		c->peer_buf_alloc = h->buf_alloc;
		c->peer_fwd_cnt = h->fwd_cnt;
		conn_register(v, c);
		return;
	}
	if (c->state == CONN_CLOSING)
		return;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;

	switch (h->op) {
	case VIRTIO_VSOCK_OP_RESPONSE: {
		char line[32];
		int n;

		if (c->state != CONN_REQ_SENT) {
			conn_reset(v, c);
			break;
		}
		c->state = CONN_OPEN;
		n = snprintf(line, sizeof(line), "OK %u\n", c->local_port);
		if (send(c->fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL) != n)
			conn_reset(v, c);
		break;
	}
	case VIRTIO_VSOCK_OP_RW:
		if (c->state != CONN_OPEN || c->guest_shut_send ||
		    conn_write(c, ch->iov, ch->nr_out, HDR_LEN, len))
			conn_reset(v, c);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		c->pending |= PEND_CREDIT;
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		if (h->flags & VIRTIO_VSOCK_SHUTDOWN_RCV)
			c->guest_shut_rcv = true;
		if (h->flags & VIRTIO_VSOCK_SHUTDOWN_SEND)
			c->guest_shut_send = true;
		break;
	case VIRTIO_VSOCK_OP_RST:
		conn_free(v, c);
		break;
	default:
		conn_reset(v, c);
		break;
	}
}

static void process_tx(struct vsock *v)
{
	struct virtio_mmio *t = &v->t;
	struct virtq *vq = &t->vq[VQ_TX];
	bool done = false;
	int r;

	while ((r = virtq_pop(vq, &t->vm->mem, &v->chain)) > 0) {
		struct virtio_vsock_hdr h;

		if (iov_to_buf(v->chain.iov, v->chain.nr_out, 0, &h,
			       HDR_LEN) == HDR_LEN)
			handle_tx_pkt(v, &h, &v->chain);
		virtq_push(vq, v->chain.head, 0);
		done = true;
	}
	if (r < 0)
		virtio_mmio_fail(t, "virtio-vsock: bad tx descriptor chain");
	if (done)
		virtio_mmio_signal(t);
}

static void fill_hdr(struct vsock *v, struct conn *c,
		     struct virtio_vsock_hdr *h, uint16_t op)
{
	memset(h, 0, sizeof(*h));
	h->src_cid = VSOCK_HOST_CID;
	h->dst_cid = v->guest_cid;
	h->type = VIRTIO_VSOCK_TYPE_STREAM;
	h->op = op;
	if (c) {
		h->src_port = c->local_port;
		h->dst_port = c->peer_port;
		h->buf_alloc = VSOCK_BUF_ALLOC;
		h->fwd_cnt = c->fwd_cnt;
		c->fwd_cnt_sent = c->fwd_cnt;
	}
}

/* Give one packet to the guest; false when no rx buffer (or a bad one). */
static bool rx_put(struct vsock *v, const struct virtio_vsock_hdr *h)
{
	struct virtio_mmio *t = &v->t;
	struct virtq *vq = &t->vq[VQ_RX];
	int r = virtq_pop(vq, &t->vm->mem, &v->chain);

	if (r <= 0)
		return false;
	if (v->chain.in_len < HDR_LEN || v->chain.nr_out) {
		virtio_mmio_fail(t, "virtio-vsock: bad rx buffer");
		return false;
	}
	buf_to_iov(v->chain.iov, v->chain.nr_in, 0, h, HDR_LEN);
	virtq_push(vq, v->chain.head, HDR_LEN);
	return true;
}

static bool rx_control(struct vsock *v, struct conn *c)
{
	struct virtio_vsock_hdr h;
	uint32_t bit;
	uint16_t op;

	if (c->pending & PEND_RST) {
		bit = PEND_RST;
		op = VIRTIO_VSOCK_OP_RST;
	} else if (c->pending & PEND_REQUEST) {
		bit = PEND_REQUEST;
		op = VIRTIO_VSOCK_OP_REQUEST;
	} else if (c->pending & PEND_RESPONSE) {
		bit = PEND_RESPONSE;
		op = VIRTIO_VSOCK_OP_RESPONSE;
	} else if (c->pending & PEND_SHUT_SEND) {
		bit = PEND_SHUT_SEND;
		op = VIRTIO_VSOCK_OP_SHUTDOWN;
	} else {
		bit = PEND_CREDIT;
		op = VIRTIO_VSOCK_OP_CREDIT_UPDATE;
	}
	fill_hdr(v, c, &h, op);
	if (op == VIRTIO_VSOCK_OP_SHUTDOWN)
		h.flags = VIRTIO_VSOCK_SHUTDOWN_SEND;
	if (!rx_put(v, &h))
		return false;
	c->pending &= ~bit;
	if (op == VIRTIO_VSOCK_OP_RST)
		conn_free(v, c);
	return true;
}

/* Host bytes to the guest, as much as credit and one rx buffer allow. */
static int rx_data(struct vsock *v, struct conn *c)
{
	struct virtio_mmio *t = &v->t;
	struct virtq *vq = &t->vq[VQ_RX];
	struct virtio_vsock_hdr h;
	uint32_t room;
	ssize_t n;
	int r;

	r = virtq_pop(vq, &t->vm->mem, &v->chain);
	if (r <= 0)
		return -EAGAIN;
	if (v->chain.in_len < HDR_LEN || v->chain.nr_out) {
		virtio_mmio_fail(t, "virtio-vsock: bad rx buffer");
		return -EAGAIN;
	}
	room = MIN(v->chain.in_len - HDR_LEN, (uint64_t)MAX_PKT_PAYLOAD);
	room = MIN(room, peer_credit(c));
	n = recv(c->fd, v->pkt, room, MSG_DONTWAIT);
	if (n <= 0) {
		virtq_unpop(vq);
		c->readable = false;
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			if (n == 0) {
				c->host_eof = true;
				c->pending |= PEND_SHUT_SEND;
			} else {
				conn_reset(v, c);
			}
		}
		return 0;
	}
	fill_hdr(v, c, &h, VIRTIO_VSOCK_OP_RW);
	h.len = n;
	buf_to_iov(v->chain.iov, v->chain.nr_in, 0, &h, HDR_LEN);
	buf_to_iov(v->chain.iov, v->chain.nr_in, HDR_LEN, v->pkt, n);
	virtq_push(vq, v->chain.head, HDR_LEN + n);
	c->tx_cnt += n;
	return 1;
}

static bool want_data(const struct conn *c)
{
	return c->state == CONN_OPEN && c->readable && !c->host_eof &&
	       !c->guest_shut_rcv && peer_credit(c) > 0;
}

static void process_rx(struct vsock *v)
{
	struct virtio_mmio *t = &v->t;
	bool sent = false, progress = true;
	unsigned int i;

	while (v->rst_len) {
		struct rst_ent *e = &v->rst[v->rst_head];
		struct virtio_vsock_hdr h;

		fill_hdr(v, NULL, &h, VIRTIO_VSOCK_OP_RST);
		h.src_port = e->src_port;
		h.dst_port = e->dst_port;
		if (!rx_put(v, &h))
			goto out;
		v->rst_head = (v->rst_head + 1) % RST_RING;
		v->rst_len--;
		sent = true;
	}
	for (i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct conn *c = &v->conns[i];

		while (c->state != CONN_FREE && c->state != CONN_HOST_LINE &&
		       c->pending) {
			if (!rx_control(v, c))
				goto out;
			sent = true;
		}
	}
	while (progress) {
		progress = false;
		for (i = 0; i < VSOCK_MAX_CONNS; i++) {
			struct conn *c = &v->conns[(v->rr + i) % VSOCK_MAX_CONNS];
			int r;

			if (!want_data(c))
				continue;
			r = rx_data(v, c);
			if (r == -EAGAIN)
				goto out;
			if (r > 0) {
				sent = progress = true;
				if (!rx_control(v, c) && c->pending)
					goto out;
			} else if (c->pending && !rx_control(v, c)) {
				goto out;
			}
		}
		v->rr++;
	}
out:
	if (sent)
		virtio_mmio_signal(t);
}

/*
 * The host wrote on a connection still waiting for its CONNECT line.  The
 * line is read a byte at a time: what follows it belongs to the stream.
 */
static void host_line(struct vsock *v, struct conn *c)
{
	unsigned long port;
	char *end;

	for (;;) {
		char ch;
		ssize_t n = recv(c->fd, &ch, 1, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			goto drop;
		if (ch == '\n')
			break;
		if (c->line_len == LINE_MAX_LEN - 1)
			goto drop;
		c->line[c->line_len++] = ch;
	}
	c->line[c->line_len] = 0;
	if (strncmp(c->line, "CONNECT ", 8) || !c->line[8] ||
	    c->line[8] < '0' || c->line[8] > '9')
		goto drop;
	errno = 0;
	port = strtoul(c->line + 8, &end, 10);
	if (errno || *end || port > UINT32_MAX)
		goto drop;
	c->peer_port = port;
	c->local_port = alloc_port(v);
	c->state = CONN_REQ_SENT;
	c->pending = PEND_REQUEST;
	c->readable = false;
	return;
drop:
	conn_free(v, c);
}

static void host_accept(struct vsock *v)
{
	for (;;) {
		int fd = accept4(v->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0)
			return;
		c = conn_alloc(v);
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->state = CONN_HOST_LINE;
		conn_register(v, c);
	}
}

static void conn_update_events(struct vsock *v, struct conn *c)
{
	struct epoll_event ev = { .data.u64 = c - v->conns };
	uint32_t want = 0;

	if (c->state == CONN_HOST_LINE || (c->state == CONN_OPEN &&
	    !c->readable && !c->host_eof && !c->guest_shut_rcv))
		want |= EPOLLIN;
	if (c->state == CONN_OPEN && c->buf_len)
		want |= EPOLLOUT;
	if (c->registered && want == c->events)
		return;
	/* Nothing wanted: leave the set, or a hung-up peer would spin us. */
	if (!want) {
		if (c->registered)
			epoll_ctl(v->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
		c->registered = false;
		c->events = 0;
		return;
	}
	ev.events = want;
	if (epoll_ctl(v->epoll_fd, c->registered ? EPOLL_CTL_MOD :
		      EPOLL_CTL_ADD, c->fd, &ev)) {
		conn_reset(v, c);
		return;
	}
	c->registered = true;
	c->events = want;
}

static void process_conns(struct vsock *v)
{
	unsigned int i;

	for (i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct conn *c = &v->conns[i];

		if (c->state == CONN_OPEN) {
			if (c->buf_len && conn_flush(c)) {
				conn_reset(v, c);
				continue;
			}
			maybe_credit_update(c);
			/* Guest closed both ways and the host has it all. */
			if (c->guest_shut_send && c->guest_shut_rcv &&
			    !c->buf_len) {
				conn_reset(v, c);
				continue;
			}
			if (c->guest_shut_send && !c->buf_len)
				shutdown(c->fd, SHUT_WR);
		}
		if (c->state != CONN_FREE && c->state != CONN_CLOSING &&
		    c->fd >= 0)
			conn_update_events(v, c);
	}
}

/*
 * One round of the I/O thread's work: wait up to @timeout_ms for events,
 * handle them, then the queues and the connections.  False when the
 * thread is told to stop or cannot wait.
 */
static bool vsock_round(struct vsock *v, int timeout_ms)
{
	struct virtio_mmio *t = &v->t;
	struct epoll_event evs[64];
	int n = epoll_wait(v->epoll_fd, evs, ARRAY_SIZE(evs), timeout_ms);
	int i;

	if (n < 0) {
		if (errno != EINTR)
			return false;
		n = 0;
	}
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64, cnt;
		struct conn *c;

		if (tag == EP_STOP) {
			pthread_mutex_unlock(&t->lock);
			return false;
		}
		if (tag == EP_KICK) {
			if (read(v->kick_fd, &cnt, sizeof(cnt)) < 0) {
				/* nothing to read */
			}
			continue;
		}
		if (tag == EP_LISTEN) {
			host_accept(v);
			continue;
		}
		if (tag >= VSOCK_MAX_CONNS)
			continue;
		c = &v->conns[tag];
		if (c->state == CONN_FREE)
			continue;
		if (c->state == CONN_HOST_LINE) {
			host_line(v, c);
			continue;
		}
		if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			c->readable = true;
	}
	if (virtio_mmio_live(t)) {
		process_tx(v);
		process_conns(v);
		process_rx(v);
		process_conns(v);
	} else {
		for (i = 0; i < VSOCK_MAX_CONNS; i++)
			if (v->conns[i].state != CONN_FREE &&
			    v->conns[i].state != CONN_HOST_LINE)
				conn_free(v, &v->conns[i]);
		v->rst_len = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return true;
}

static void *vsock_thread(void *arg)
{
	struct vsock *v = arg;
	struct virtio_mmio *t = &v->t;

	pthread_mutex_lock(&t->lock);
	v->thread_running = true;
	pthread_cond_broadcast(&v->running);
	pthread_mutex_unlock(&t->lock);
	while (vsock_round(v, -1))
		;
	return NULL;
}

void vsock_poll(struct virtio_mmio *t)
{
	vsock_round(t->priv, 0);
}

static void vsock_kick(struct vsock *v)
{
	uint64_t one = 1;

	if (write(v->kick_fd, &one, sizeof(one)) < 0) {
		/* counter full: the thread is awake anyway */
	}
}

static void vsock_notify(struct virtio_mmio *t, unsigned int q)
{
	vsock_kick(t->priv);
}

static void vsock_reset(struct virtio_mmio *t)
{
	/* The I/O thread drops the connections when it sees the reset. */
	vsock_kick(t->priv);
}

static const struct virtio_dev_ops vsock_ops = {
	.name = "virtio-vsock",
	.device_id = VIRTIO_ID_VSOCK,
	.nr_queues = 3,
	.notify = vsock_notify,
	.reset = vsock_reset,
	.driver_ok = vsock_reset,
};

static int vsock_listen(struct vsock *v, const char **err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(v->uds_path) >= sizeof(sa.sun_path) - 12) {
		*err = "vsock socket path too long";
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, v->uds_path);
	v->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
			      SOCK_CLOEXEC, 0);
	if (v->listen_fd < 0) {
		*err = strerror(errno);
		return -errno;
	}
	unlink(sa.sun_path);
	if (bind(v->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(v->listen_fd, 128)) {
		*err = strerror(errno);
		return -errno;
	}
	return 0;
}

struct virtio_mmio *vsock_create(struct vm *vm, uint64_t base, uint32_t irq,
				 uint64_t guest_cid, const char *uds_path,
				 const char **err)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct vsock *v;
	unsigned int i;

	v = calloc(1, sizeof(*v));
	if (!v) {
		*err = "out of memory";
		return NULL;
	}
	v->listen_fd = v->epoll_fd = v->kick_fd = v->stop_fd = -1;
	v->broker_fd = -1;
	for (i = 0; i < VSOCK_MAX_CONNS; i++)
		v->conns[i].fd = -1;
	v->guest_cid = guest_cid;
	v->next_port = FIRST_LOCAL_PORT;
	pthread_cond_init(&v->running, NULL);
	virtio_mmio_init(&v->t, vm, &vsock_ops, v, base, irq);
	v->t.config_len = sizeof(uint64_t);
	memcpy(v->t.config, &guest_cid, sizeof(uint64_t));

	v->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	v->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->epoll_fd < 0 || v->kick_fd < 0 || v->stop_fd < 0) {
		*err = strerror(errno);
		goto fail;
	}
	ev.data.u64 = EP_KICK;
	epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->kick_fd, &ev);
	ev.data.u64 = EP_STOP;
	epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->stop_fd, &ev);
	if (uds_path) {
		v->uds_path = strdup(uds_path);
		if (!v->uds_path || vsock_listen(v, err))
			goto fail;
		ev.data.u64 = EP_LISTEN;
		epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->listen_fd, &ev);
	}
	return &v->t;
fail:
	vsock_destroy(&v->t);
	return NULL;
}

void vsock_set_broker(struct virtio_mmio *t, int fd)
{
	struct vsock *v = t->priv;

	struct timeval tv = { .tv_usec = 100000 };

	if (v->broker_fd >= 0)
		close(v->broker_fd);
	v->broker_fd = fd;
	/* the I/O thread waits for an answer in slices, not forever */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void vsock_set_activity(struct virtio_mmio *t, void (*fn)(void *), void *arg)
{
	struct vsock *v = t ? t->priv : NULL;

	if (!v)
		return;
	v->activity = fn;
	v->activity_arg = arg;
}

void vsock_rebase(struct virtio_mmio *t, size_t root_len)
{
	struct vsock *v = t ? t->priv : NULL;

	if (v && v->uds_path && strlen(v->uds_path) > root_len)
		memmove(v->uds_path, v->uds_path + root_len,
			strlen(v->uds_path + root_len) + 1);
	/* the jail's user removes nothing; whoever made the root does */
	if (v)
		v->keep_path = true;
}

int vsock_start(struct virtio_mmio *t)
{
	struct vsock *v = t->priv;
	int ret;

	ret = pthread_create(&v->thread, NULL, vsock_thread, v);
	if (ret)
		return -ret;
	v->thread_started = true;
	/* As for the vCPUs: running before the seccomp filter goes in. */
	pthread_mutex_lock(&t->lock);
	while (!v->thread_running)
		pthread_cond_wait(&v->running, &t->lock);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void vsock_destroy(struct virtio_mmio *t)
{
	struct vsock *v;
	unsigned int i;

	if (!t)
		return;
	v = t->priv;
	if (v->thread_started) {
		uint64_t one = 1;

		if (write(v->stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(v->thread, NULL);
	}
	for (i = 0; i < VSOCK_MAX_CONNS; i++)
		if (v->conns[i].state != CONN_FREE)
			conn_free(v, &v->conns[i]);
	if (v->listen_fd >= 0) {
		close(v->listen_fd);
		if (!v->keep_path)
			unlink(v->uds_path);
	}
	if (v->broker_fd >= 0)
		close(v->broker_fd);
	if (v->epoll_fd >= 0)
		close(v->epoll_fd);
	if (v->kick_fd >= 0)
		close(v->kick_fd);
	if (v->stop_fd >= 0)
		close(v->stop_fd);
	free(v->uds_path);
	free(v);
}

void vsock_save(struct virtio_mmio *t, struct vsock_state *s)
{
	struct vsock *v = t->priv;
	unsigned int i;

	memset(s, 0, sizeof(*s));
	s->guest_cid = v->guest_cid;
	s->next_port = v->next_port;
	for (i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct conn *c = &v->conns[i];

		if (c->state == CONN_FREE || c->state == CONN_HOST_LINE)
			continue;
		s->conns[s->nr_conns].local_port = c->local_port;
		s->conns[s->nr_conns].peer_port = c->peer_port;
		s->nr_conns++;
	}
}

void vsock_drop_all(struct virtio_mmio *t)
{
	struct vsock *v = t->priv;
	unsigned int i;

	for (i = 0; i < VSOCK_MAX_CONNS; i++)
		if (v->conns[i].state != CONN_FREE)
			conn_free(v, &v->conns[i]);
	v->rst_len = 0;
	v->rst_head = 0;
}

int vsock_load(struct virtio_mmio *t, const struct vsock_state *s)
{
	struct vsock *v = t->priv;
	unsigned int i;

	if (s->nr_conns > VSOCK_MAX_CONNS)
		return -EINVAL;
	v->next_port = MAX(s->next_port, FIRST_LOCAL_PORT);
	/*
	 * One RST per saved connection, queued ahead of anything a new host
	 * connection sends.  No TRANSPORT_RESET event: the guest handles it
	 * asynchronously and would also reset connections made after it.
	 */
	for (i = 0; i < s->nr_conns; i++)
		queue_rst(v, s->conns[i].local_port, s->conns[i].peer_port);
	vsock_kick(v);
	return 0;
}
