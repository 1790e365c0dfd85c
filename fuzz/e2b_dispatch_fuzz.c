// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_dispatch_fuzz: one HTTP request through e2b_dispatch(), as cubed's
 * server hands it over: routing, API-key and envd-token checks, every
 * control-plane and envd handler with its JSON body parsing, Connect
 * envelopes of streams, and requests forwarded to another sandbox port
 * (whose answer, too, is the fuzzer's).  The backend is a fake
 * (e2b_fake_backend.c) that may be told to fail.
 *
 * The input:
 *   byte 0       bit 0: envd plane (else the control plane); bit 1: the
 *                body was too large; bits 2-4: the errno the backend fails
 *                with (0: none)
 *   METHOD\n PATH\n
 *   "Name: value\n" headers and "?name=value\n" query parameters, up to
 *   an empty line
 *   the body, up to "\n--port--\n"; after it, what the sandbox port answers
 *
 * The response must be whole: a status of 100..599, a body that is there
 * when it has a length (ASan checks all of it is), or a stream that ends
 * and frees cleanly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "e2b_fake_backend.h"
#include "e2b_http.h"
#include "e2b_proxy.h"
#include "e2b_shim.h"
#include "fuzz.h"
#include "peer.h"

#define MAX_FIELDS	16
#define FIELD_MAX	512

struct fields {
	char name[MAX_FIELDS][FIELD_MAX];
	char value[MAX_FIELDS][FIELD_MAX];
	int n;
};

struct req_ctx {
	struct fields hdr, query;
};

static const char *get(const struct fields *f, const char *name)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (!strcasecmp(f->name[i], name))
			return f->value[i];
	return NULL;
}

static const char *header(void *ctx, const char *name)
{
	return get(&((struct req_ctx *)ctx)->hdr, name);
}

static const char *query(void *ctx, const char *name)
{
	return get(&((struct req_ctx *)ctx)->query, name);
}

static void each(const struct fields *f,
		 void (*fn)(void *arg, const char *name, const char *value),
		 void *arg)
{
	int i;

	for (i = 0; i < f->n; i++)
		fn(arg, f->name[i], f->value[i]);
}

static void each_header(void *ctx, void (*fn)(void *arg, const char *name,
					      const char *value), void *arg)
{
	each(&((struct req_ctx *)ctx)->hdr, fn, arg);
}

static void each_query(void *ctx, void (*fn)(void *arg, const char *name,
					     const char *value), void *arg)
{
	each(&((struct req_ctx *)ctx)->query, fn, arg);
}

static void add(struct fields *f, const char *name, const char *value)
{
	if (f->n == MAX_FIELDS)
		return;
	snprintf(f->name[f->n], FIELD_MAX, "%s", name);
	snprintf(f->value[f->n], FIELD_MAX, "%s", value);
	f->n++;
}

/* Sandbox ports: FAKE_SANDBOX has a network; its traffic needs no token. */
static int resolve(void *ctx, const char *sandbox, struct e2b_proxy_target *t)
{
	if (strcmp(sandbox, FAKE_SANDBOX))
		return -ENOENT;
	memset(t, 0, sizeof(*t));
	t->netns_fd = -1;
	t->key = 1;
	return 0;
}

static bool alive(void *ctx, uint64_t key)
{
	return true;
}

static const struct e2b_proxy_ops ports = { .resolve = resolve, .alive = alive };

static struct e2b_keys keys;
static struct e2b_api api;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (e2b_keys_add(&keys, "e2b_fuzzkey"))
		abort();
	api.keys = &keys;
	api.backend.ops = &fake_ops;
	api.domain = "cube.test";
	api.ports = &ports;
	return 0;
}

static const int fail_with[8] = {
	0, ENOENT, EIO, EEXIST, ENOSYS, ETIMEDOUT, EACCES, EINVAL,
};

static void drain(struct e2b_response *resp)
{
	char buf[4096];
	int i;

	for (i = 0; i < 256; i++) {
		ssize_t n = resp->stream->read(resp->stream, buf, sizeof(buf));

		if (n <= 0)
			return;
		if ((size_t)n > sizeof(buf))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char marker[] = "\n--port--\n";
	static struct req_ctx ctx;
	struct fuzz_in in = fuzz_in(data, size);
	char method[32], path[FIELD_MAX * 2], line[FIELD_MAX * 2];
	struct e2b_request req = { 0 };
	struct e2b_response resp;
	const uint8_t *split;
	struct peer port;
	bool port_used = false;
	char *body = NULL;
	uint8_t flags;

	flags = fuzz_u8(&in);
	if (!fuzz_line(&in, method, sizeof(method)) ||
	    !fuzz_line(&in, path, sizeof(path)))
		return 0;
	ctx.hdr.n = ctx.query.n = 0;
	while (fuzz_line(&in, line, sizeof(line)) && line[0]) {
		char *colon;

		if (line[0] == '?') {
			char *eq = strchr(line + 1, '=');

			if (eq)
				*eq++ = 0;
			add(&ctx.query, line + 1, eq ? eq : "");
		} else if ((colon = strchr(line, ':'))) {
			*colon++ = 0;
			while (*colon == ' ')
				colon++;
			add(&ctx.hdr, line, colon);
		}
	}
	split = memmem(in.p, in.left, marker, sizeof(marker) - 1);
	if (split) {
		const uint8_t *answer = split + sizeof(marker) - 1;

		fuzz_port_fd = peer_start(&port, answer, in.p + in.left - answer);
		port_used = true;
		in.left = split - in.p;
	}
	if (in.left) {
		/* exactly the body's bytes: reads past them are caught */
		body = malloc(in.left);
		if (!body)
			abort();
		memcpy(body, in.p, in.left);
	}

	fake_fail = fail_with[(flags >> 2) & 7];
	req.plane = flags & 1 ? E2B_PLANE_ENVD : E2B_PLANE_API;
	req.method = method;
	req.path = path;
	req.header = header;
	req.query = query;
	req.each_header = each_header;
	req.each_query = each_query;
	req.ctx = &ctx;
	req.body = body;
	req.body_len = in.left;
	req.body_too_large = flags & 2;
	req.client_fd = -1;
	e2b_dispatch(&api, &req, &resp);

	if (resp.status < 100 || resp.status > 599)
		abort();
	if (resp.stream) {
		/* @len: the size announced, (size_t)-1 when unknown */
		drain(&resp);
	} else if (resp.len) {
		if (!resp.body)
			abort();
		for (size_t i = 0; i < resp.len; i++)
			(void)((volatile char *)resp.body)[i];
	}
	e2b_response_free(&resp);
	free(body);
	if (port_used) {
		/* the harness's end when e2b_forward() never dialled */
		if (fuzz_port_fd >= 0)
			close(fuzz_port_fd);
		fuzz_port_fd = -1;
		peer_stop(&port);
	}
	return 0;
}
