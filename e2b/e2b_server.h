/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_server.h: the E2B-compatible API served over HTTP/1.1 with
 * libmicrohttpd: the control plane on one port, envd on another.
 */
#ifndef CUBE_E2B_SERVER_H
#define CUBE_E2B_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "e2b_http.h"

/* Largest file accepted by POST /files. */
#define E2B_UPLOAD_MAX		(1024ULL * 1024 * 1024)
/* What a gzip-encoded upload may inflate to (the largest file). */
#define E2B_INFLATE_MAX		(256ULL * 1024 * 1024)

/**
 * struct e2b_server_config - where and what to serve
 * @addr: IPv4 address to listen on (loopback unless told otherwise)
 * @api_port: control-plane port (0: any free port)
 * @envd_port: envd port (0: any free port)
 * @api: keys and backend; must outlive the server
 * @max_conns: connection limit per port (0: %E2B_SERVER_CONNS_DEFAULT)
 * @max_per_client: connections one client address may hold per port (0:
 *	three quarters of @max_conns, so one client never takes them all)
 * @idle_secs: a connection silent this long is closed (0:
 *	%E2B_SERVER_IDLE_DEFAULT); streams send a keepalive every 30 s.  The
 *	count also runs while a handler works (libmicrohttpd sees no traffic
 *	then), so it must exceed the longest one: a create waits up to
 *	CUBE_BOOT_TIMEOUT (120 s) for its guest
 */
struct e2b_server_config {
	const char *addr;
	uint16_t api_port;
	uint16_t envd_port;
	const struct e2b_api *api;
	unsigned int max_conns;
	unsigned int max_per_client;
	unsigned int idle_secs;
};

#define E2B_SERVER_CONNS_DEFAULT	256
#define E2B_SERVER_IDLE_DEFAULT		300

struct e2b_server;

/**
 * e2b_server_start() - listen and serve from internal threads
 *
 * Return: 0, -EINVAL for a bad address, -EADDRINUSE (or another -errno)
 * when a port cannot be bound, -ENOMEM.
 */
int e2b_server_start(const struct e2b_server_config *cfg,
		     struct e2b_server **out);
/* the ports actually bound */
uint16_t e2b_server_port(const struct e2b_server *s, enum e2b_plane plane);
/*
 * Request bodies: the bytes the server holds now (uploads stream, they are
 * not counted) and those it has read and dropped since it started, of
 * requests refused whatever their body (e2b_body_wanted())
 */
void e2b_server_bodies(const struct e2b_server *s, size_t *held,
		       uint64_t *dropped);
/* stop listening, end every connection, free */
void e2b_server_stop(struct e2b_server *s);

#endif /* CUBE_E2B_SERVER_H */
