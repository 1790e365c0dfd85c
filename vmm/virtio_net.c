// SPDX-License-Identifier: GPL-2.0
/* virtio-net over a tap file descriptor; see virtio_net.h. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/virtio_ids.h>

#include "util.h"
#include "virtio_mmio.h"
#include "virtio_net.h"
#include "vm.h"

#define VQ_RX			0
#define VQ_TX			1
/* Catches whatever a frame holds beyond the guest's buffer. */
#define RX_OVERFLOW		(64 * 1024)

#define EP_FD			1
#define EP_KICK			2
#define EP_STOP			3

struct virtio_net {
	struct virtio_mmio t;
	int fd;
	uint8_t mac[6];
	int epoll_fd;
	int kick_fd;
	int stop_fd;
	pthread_t thread;
	bool thread_started;
	bool thread_running;	/* past glibc's thread start-up */
	pthread_cond_t running;
	uint32_t fd_events;	/* epoll interest in fd now, 0: not in the set */
	bool fd_dead;		/* the tap failed or went away: no more I/O */
	bool tx_blocked;	/* the tap said EAGAIN: wait for EPOLLOUT */
	bool tx_retry;		/* EPOLLOUT came: try the blocked frame again */
	struct virtio_net_stats st;
	struct virtq_chain chain;
	struct iovec iov[VIRTQ_MAX_SIZE + 1];
	uint8_t overflow[RX_OVERFLOW];
};

static void net_kick(struct virtio_net *n)
{
	uint64_t one = 1;

	if (n->kick_fd >= 0 && write(n->kick_fd, &one, sizeof(one)) < 0) {
		/* counter full: the thread is awake anyway */
	}
}

static void net_fd_dead(struct virtio_net *n, int err)
{
	if (n->fd_dead)
		return;
	pr_err("virtio-net: the tap failed (%s); the guest's network is down",
	       err ? strerror(err) : "closed");
	n->fd_dead = true;
}

/* Give one frame of the tap to the guest; false when RX should stop. */
static bool rx_one(struct virtio_net *n)
{
	struct virtio_mmio *t = &n->t;
	struct virtq *vq = &t->vq[VQ_RX];
	struct virtq_chain *c = &n->chain;
	struct virtio_net_hdr_v1 hdr;
	ssize_t len;
	int r;

	r = virtq_pop(vq, &t->vm->mem, c);
	if (r < 0)
		virtio_mmio_fail(t, "bad rx descriptor chain");
	if (r <= 0)
		return false;
	if (c->nr_out || c->in_len < NET_HDR_LEN) {
		virtio_mmio_fail(t, "rx buffer not writable or shorter than the header");
		return false;
	}
	/* Straight into the guest's buffers; what does not fit, into overflow. */
	memcpy(n->iov, c->iov, c->nr_in * sizeof(c->iov[0]));
	n->iov[c->nr_in].iov_base = n->overflow;
	n->iov[c->nr_in].iov_len = sizeof(n->overflow);
	len = readv(n->fd, n->iov, c->nr_in + 1);
	if (len <= 0) {
		virtq_unpop(vq);
		if (len < 0 && (errno == EAGAIN || errno == EINTR))
			return false;
		net_fd_dead(n, len < 0 ? errno : 0);
		return false;
	}
	if ((uint64_t)len > c->in_len || (size_t)len > NET_HDR_LEN + NET_MAX_FRAME ||
	    (size_t)len < NET_HDR_LEN + NET_ETH_HLEN) {
		/* Bigger than the buffer or the MTU, or no frame: dropped. */
		virtq_unpop(vq);
		n->st.rx_dropped++;
		return true;
	}
	/* Our own header: no offloads were negotiated, one buffer per frame. */
	memset(&hdr, 0, sizeof(hdr));
	hdr.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	hdr.num_buffers = 1;
	buf_to_iov(c->iov, c->nr_in, 0, &hdr, NET_HDR_LEN);
	virtq_push(vq, c->head, len);
	n->st.rx_packets++;
	return true;
}

static void net_rx(struct virtio_net *n)
{
	unsigned int budget = NET_RX_BUDGET;
	uint64_t before = n->st.rx_packets;

	while (budget-- && !n->fd_dead && rx_one(n))
		;
	/* No interrupt while the driver polls (NAPI); it looks again after. */
	if (n->st.rx_packets != before &&
	    virtq_want_interrupt(&n->t.vq[VQ_RX]))
		virtio_mmio_signal(&n->t);
}

/* Send one chain of the TX queue; false when TX should stop. */
static bool tx_one(struct virtio_net *n, bool *done)
{
	static const struct virtio_net_hdr_v1 zero_hdr = {
		.gso_type = VIRTIO_NET_HDR_GSO_NONE,
	};
	struct virtio_mmio *t = &n->t;
	struct virtq *vq = &t->vq[VQ_TX];
	struct virtq_chain *c = &n->chain;
	uint64_t frame;
	unsigned int cnt;
	ssize_t w;
	int r;

	r = virtq_pop(vq, &t->vm->mem, c);
	if (r < 0)
		virtio_mmio_fail(t, "bad tx descriptor chain");
	if (r <= 0)
		return false;
	if (c->nr_in || c->out_len < NET_HDR_LEN) {
		virtio_mmio_fail(t, "tx buffer writable or shorter than the header");
		return false;
	}
	frame = c->out_len - NET_HDR_LEN;
	if (frame < NET_ETH_HLEN || frame > NET_MAX_FRAME || n->fd_dead) {
		n->st.tx_dropped++;
		goto used;
	}
	/*
	 * The guest's header is not passed on: no offload was negotiated, so
	 * the tap gets a zero header and the frame, never guest GSO fields.
	 */
	n->iov[0].iov_base = (void *)&zero_hdr;
	n->iov[0].iov_len = NET_HDR_LEN;
	cnt = iov_skip(c->iov, c->nr_out, NET_HDR_LEN, n->iov + 1);
	w = writev(n->fd, n->iov, cnt + 1);
	if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
		virtq_unpop(vq);
		n->tx_blocked = true;
		net_kick(n);
		return false;
	}
	if (w < 0) {
		if (errno == EBADFD || errno == EBADF)
			net_fd_dead(n, errno);
		n->st.tx_dropped++;
	} else {
		n->st.tx_packets++;
	}
used:
	virtq_push(vq, c->head, 0);
	*done = true;
	return true;
}

static void net_tx(struct virtio_net *n)
{
	bool done = false;

	while (!n->tx_blocked && tx_one(n, &done))
		;
	if (done && virtq_want_interrupt(&n->t.vq[VQ_TX]))
		virtio_mmio_signal(&n->t);
}

/*
 * Are there RX buffers?  While there are, the tap is watched and the
 * driver need not kick for more (VRING_USED_F_NO_NOTIFY); once they run
 * out, kicks are asked for again, and a buffer added meanwhile is seen.
 */
static bool rx_buffers(struct virtio_net *n)
{
	struct virtq *vq = &n->t.vq[VQ_RX];

	if (virtq_has_avail(vq)) {
		virtq_set_notify(vq, false);
		return true;
	}
	virtq_set_notify(vq, true);
	if (!virtq_has_avail(vq))
		return false;
	virtq_set_notify(vq, false);
	return true;
}

/* Wait for fd only while there is something to do with it. */
static void net_update_watch(struct virtio_net *n)
{
	struct epoll_event ev = { .data.u64 = EP_FD };
	uint32_t want = 0;

	if (!n->fd_dead && virtio_mmio_live(&n->t)) {
		if (rx_buffers(n))
			want |= EPOLLIN;
		if (n->tx_blocked)
			want |= EPOLLOUT;
	}
	if (want == n->fd_events || n->epoll_fd < 0)
		return;
	/*
	 * Nothing wanted: out of the set, or EPOLLERR/EPOLLHUP, which epoll
	 * reports whatever the interest, would wake us in a loop.
	 */
	if (!want) {
		epoll_ctl(n->epoll_fd, EPOLL_CTL_DEL, n->fd, NULL);
		n->fd_events = 0;
		return;
	}
	ev.events = want;
	if (epoll_ctl(n->epoll_fd, n->fd_events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
		      n->fd, &ev)) {
		net_fd_dead(n, errno);
		epoll_ctl(n->epoll_fd, EPOLL_CTL_DEL, n->fd, NULL);
		n->fd_events = 0;
		return;
	}
	n->fd_events = want;
}

void virtio_net_poll(struct virtio_mmio *t)
{
	struct virtio_net *n = t->priv;

	if (virtio_mmio_live(t) && !n->fd_dead) {
		if (n->tx_blocked && n->tx_retry) {
			n->tx_blocked = n->tx_retry = false;
			net_tx(n);
		}
		net_rx(n);
	}
	net_update_watch(n);
}

bool virtio_net_reading(struct virtio_mmio *t)
{
	struct virtio_net *n = t->priv;

	return n->fd_events & EPOLLIN;
}

static void *net_thread(void *arg)
{
	struct virtio_net *n = arg;
	struct virtio_mmio *t = &n->t;
	struct epoll_event evs[4];

	pthread_mutex_lock(&t->lock);
	n->thread_running = true;
	pthread_cond_broadcast(&n->running);
	pthread_mutex_unlock(&t->lock);
	for (;;) {
		int nr = epoll_wait(n->epoll_fd, evs, ARRAY_SIZE(evs), -1);
		uint64_t cnt;
		int i;

		if (nr < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&t->lock);
		for (i = 0; i < nr; i++) {
			switch (evs[i].data.u64) {
			case EP_STOP:
				pthread_mutex_unlock(&t->lock);
				return NULL;
			case EP_KICK:
				if (read(n->kick_fd, &cnt, sizeof(cnt)) < 0) {
					/* nothing to read */
				}
				break;
			case EP_FD:
				/* Only a detached tap reports these: gone for good. */
				if (evs[i].events & (EPOLLERR | EPOLLHUP))
					net_fd_dead(n, 0);
				if (evs[i].events & EPOLLOUT)
					n->tx_retry = true;
				break;
			}
		}
		virtio_net_poll(t);
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

static void net_notify(struct virtio_mmio *t, unsigned int q)
{
	struct virtio_net *n = t->priv;

	if (q == VQ_TX)
		net_tx(n);
	else
		net_kick(n);	/* new RX buffers: read the tap again */
}

static void net_reset(struct virtio_mmio *t)
{
	struct virtio_net *n = t->priv;

	n->tx_blocked = n->tx_retry = false;
	net_kick(n);		/* the thread stops watching the tap */
}

static const struct virtio_dev_ops net_ops = {
	.name = "virtio-net",
	.device_id = VIRTIO_ID_NET,
	.features = (1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_MTU),
	.nr_queues = 2,
	.notify = net_notify,
	.reset = net_reset,
	.driver_ok = net_reset,
};

struct virtio_mmio *virtio_net_create(struct vm *vm, uint64_t base,
				      uint32_t irq, int fd,
				      const uint8_t mac[6], const char **err)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct virtio_net_config cfg;
	struct virtio_net *n;

	n = calloc(1, sizeof(*n));
	if (!n) {
		*err = "out of memory";
		close(fd);
		return NULL;
	}
	n->fd = fd;
	n->epoll_fd = n->kick_fd = n->stop_fd = -1;
	memcpy(n->mac, mac, sizeof(n->mac));
	pthread_cond_init(&n->running, NULL);
	virtio_mmio_init(&n->t, vm, &net_ops, n, base, irq);
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.mac, mac, sizeof(cfg.mac));
	cfg.mtu = NET_MTU;
	n->t.config_len = offsetof(struct virtio_net_config, mtu) +
			  sizeof(cfg.mtu);
	memcpy(n->t.config, &cfg, n->t.config_len);

	n->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	n->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	n->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->epoll_fd < 0 || n->kick_fd < 0 || n->stop_fd < 0) {
		*err = strerror(errno);
		virtio_net_destroy(&n->t);
		return NULL;
	}
	ev.data.u64 = EP_KICK;
	epoll_ctl(n->epoll_fd, EPOLL_CTL_ADD, n->kick_fd, &ev);
	ev.data.u64 = EP_STOP;
	epoll_ctl(n->epoll_fd, EPOLL_CTL_ADD, n->stop_fd, &ev);
	return &n->t;
}

int virtio_net_start(struct virtio_mmio *t)
{
	struct virtio_net *n = t->priv;
	int ret;

	ret = pthread_create(&n->thread, NULL, net_thread, n);
	if (ret)
		return -ret;
	n->thread_started = true;
	/* As for the vCPUs: running before the seccomp filter goes in. */
	pthread_mutex_lock(&t->lock);
	while (!n->thread_running)
		pthread_cond_wait(&n->running, &t->lock);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void virtio_net_destroy(struct virtio_mmio *t)
{
	struct virtio_net *n;

	if (!t)
		return;
	n = t->priv;
	if (n->thread_started) {
		uint64_t one = 1;

		if (write(n->stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(n->thread, NULL);
	}
	if (n->epoll_fd >= 0)
		close(n->epoll_fd);
	if (n->kick_fd >= 0)
		close(n->kick_fd);
	if (n->stop_fd >= 0)
		close(n->stop_fd);
	if (n->fd >= 0)
		close(n->fd);
	free(n);
}

void virtio_net_get_stats(struct virtio_mmio *t, struct virtio_net_stats *s)
{
	struct virtio_net *n = t->priv;

	pthread_mutex_lock(&t->lock);
	*s = n->st;
	pthread_mutex_unlock(&t->lock);
}

void virtio_net_save(struct virtio_mmio *t, struct virtio_net_state *s)
{
	struct virtio_net *n = t->priv;

	memset(s, 0, sizeof(*s));
	memcpy(s->mac, n->mac, sizeof(s->mac));
	s->mtu = NET_MTU;
}

int virtio_net_load(struct virtio_mmio *t, const struct virtio_net_state *s)
{
	struct virtio_net *n = t->priv;

	if (memcmp(s->mac, n->mac, sizeof(n->mac)) || s->mtu != NET_MTU ||
	    s->reserved[0] || s->reserved[1] || s->reserved[2])
		return -EINVAL;
	/*
	 * The rings are back: the I/O thread looks at the new tap, and sends
	 * what the guest queued for TX before the snapshot (a frame the old
	 * tap refused with EAGAIN would otherwise wait for the next kick).
	 */
	n->tx_blocked = n->tx_retry = true;
	net_kick(n);
	return 0;
}
