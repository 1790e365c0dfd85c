/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_proxy.h: the port proxy, E2B's getHost(port).
 *
 * A client connects to the proxy's port and sends an HTTP request whose
 * Host header is "<port>-<sandboxID>.<domain>" (or, for any Host, the
 * headers E2b-Sandbox-Id and E2b-Sandbox-Port).  The proxy reads the
 * request head (at most E2B_PROXY_HEAD_MAX bytes within
 * E2B_PROXY_HEAD_MS), checks the sandbox's traffic access token when it
 * has one (header e2b-traffic-access-token), makes a TCP socket inside the
 * sandbox's network namespace, connects it to the guest's port, sends the
 * head as it came, and from then on relays bytes both ways until either
 * side closes or both are idle for the idle time: keep-alive requests and
 * WebSocket upgrades pass alike.
 *
 * Answers of the proxy itself (then the connection closes): 400 a head
 * that names no sandbox or is malformed, 431 a head too large, 408 a head
 * too slow, 403 a missing or wrong token, 502 a sandbox that is not
 * running or has no network, or a port that refuses or does not answer,
 * 503 too many connections.
 *
 * A socket keeps its network namespace alive, so the proxy watches the
 * sandboxes it relays for (ops->alive, every E2B_PROXY_WATCH_MS, and
 * e2b_proxy_drop() on an exit event) and closes their connections when
 * they end.
 */
#ifndef CUBE_E2B_PROXY_H
#define CUBE_E2B_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2b_auth.h"
#include "e2b_route.h"

#define E2B_PROXY_HEAD_MAX	(16 * 1024)	/* bytes of a request head */
#define E2B_PROXY_HEAD_MS	10000		/* to send it */
#define E2B_PROXY_CONNECT_MS	5000		/* for the guest to accept */
#define E2B_PROXY_WATCH_MS	1000		/* liveness checks */
#define E2B_PROXY_IDLE_DEFAULT	600		/* seconds without a byte */
#define E2B_PROXY_CONNS_DEFAULT	1024		/* connections in all */
#define E2B_PROXY_PER_CLIENT_DEFAULT 64		/* from one address */

#define E2B_TRAFFIC_TOKEN_HEADER "e2b-traffic-access-token"

/**
 * struct e2b_proxy_head - what the proxy needs of a request head
 * @port: the sandbox's port
 * @sandbox: its E2B id
 * @token: the e2b-traffic-access-token header ("" when absent)
 * @has_token: it was there
 */
struct e2b_proxy_head {
	unsigned int port;
	char sandbox[E2B_ID_MAX + 1];
	char token[E2B_TOKEN_LEN * 2 + 1];
	bool has_token;
};

/**
 * e2b_proxy_parse_host() - "<port>-<sandboxID>[.<domain>][:<port>]"
 *
 * Only the first label counts: the domain is whatever the client used.
 * Return: 0, or -EINVAL when the host names no sandbox port.
 */
int e2b_proxy_parse_host(const char *host, size_t len, unsigned int *port,
			 char sandbox[E2B_ID_MAX + 1]);

/**
 * e2b_proxy_parse_head() - the request head in @buf (@len bytes so far)
 *
 * Return: the head's length (through the empty line) and @h filled;
 * -EAGAIN when the head is not complete yet; -E2BIG when it is longer
 * than E2B_PROXY_HEAD_MAX; -EINVAL (with @err, E2B_MSG_MAX bytes) when it
 * is malformed or names no sandbox.
 */
int e2b_proxy_parse_head(const char *buf, size_t len,
			 struct e2b_proxy_head *h, char *err);

/**
 * struct e2b_proxy_target - a sandbox the proxy may reach
 * @netns_fd: its network namespace (the proxy closes it)
 * @key: identifies this sandbox for @alive and e2b_proxy_drop()
 * @token: its traffic access token, "" when its ports are public
 */
struct e2b_proxy_target {
	int netns_fd;
	uint64_t key;
	char token[E2B_TOKEN_LEN + 1];
};

/**
 * struct e2b_proxy_ops - the sandboxes, as the proxy sees them
 * @resolve: the target of E2B id @sandbox: 0, -ENOENT when no such sandbox
 *	runs, -ENETDOWN when it has no network, other -errno
 * @alive: whether sandbox @key still runs
 */
struct e2b_proxy_ops {
	int (*resolve)(void *ctx, const char *sandbox,
		       struct e2b_proxy_target *t);
	bool (*alive)(void *ctx, uint64_t key);
};

/**
 * struct e2b_proxy_config - where and how
 * @addr: IPv4 address to listen on
 * @port: the port (0: any free port)
 * @ops, @ctx: the sandboxes
 * @max_conns: connections at once, in all (0: default)
 * @max_per_client: from one client address (0: default)
 * @idle_secs: a connection with no byte either way for this long is
 *	closed (0: default)
 */
struct e2b_proxy_config {
	const char *addr;
	uint16_t port;
	const struct e2b_proxy_ops *ops;
	void *ctx;
	unsigned int max_conns;
	unsigned int max_per_client;
	unsigned int idle_secs;
};

struct e2b_proxy;

/**
 * e2b_proxy_dial() - a TCP connection to port @port of the guest, made
 * inside the network namespace @netns_fd (which the caller still closes)
 *
 * The calling thread is back in its own namespace on return.
 * Return: the connected socket (non-blocking), or -ECONNREFUSED,
 * -ETIMEDOUT (E2B_PROXY_CONNECT_MS) and other -errno.
 */
int e2b_proxy_dial(int netns_fd, unsigned int port);

/* Return: 0, -EINVAL for a bad address, -EADDRINUSE and other -errno */
int e2b_proxy_start(const struct e2b_proxy_config *cfg,
		    struct e2b_proxy **out);
uint16_t e2b_proxy_port(const struct e2b_proxy *p);
/* close every connection to sandbox @key now (it ended) */
void e2b_proxy_drop(struct e2b_proxy *p, uint64_t key);
/* connections open now */
unsigned int e2b_proxy_count(struct e2b_proxy *p);
/* stop listening, close every connection, free */
void e2b_proxy_stop(struct e2b_proxy *p);

#endif /* CUBE_E2B_PROXY_H */
