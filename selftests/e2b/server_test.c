// SPDX-License-Identifier: GPL-2.0
/*
 * server_test: the libmicrohttpd glue over real loopback sockets, with a
 * recording backend: body limits, both planes on their own ports,
 * multipart and octet-stream uploads streamed to the backend, downloads,
 * a chunked Connect stream, pause / resume / metrics, the lifecycle
 * (autoPause, autoResume) as the control and envd planes see it, and the
 * per-client connection limit and idle timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "connect_frame.h"
#include "e2b_auth.h"
#include "e2b_server.h"
#include "cube_test.h"

/* --- backend: sandbox "7" (token "tok"), files in memory --- */

static char stored[4][64];
static char stored_data[4][256];
static size_t stored_len[4];
static int nstored, creates, pauses, resumes;
static bool paused7;
/* "7"'s lifecycle: what the last create asked */
static bool autopause7, autoresume7;

static int t_get(void *be, const char *id, struct e2b_sandbox *out)
{
	if (strcmp(id, "7"))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	strcpy(out->id, "7");
	strcpy(out->template_id, "base");
	strcpy(out->envd_token, "tok");
	out->end_at = time(NULL) + 600;
	out->paused = paused7;
	out->auto_pause = autopause7;
	out->auto_resume = autoresume7;
	return 0;
}

/* "7", and "9", paused, with the token "tok9" */
static int t_list(void *be, struct e2b_sandbox **out, size_t *n)
{
	*out = calloc(2, sizeof(**out));
	*n = 2;
	t_get(be, "7", &(*out)[0]);
	strcpy((*out)[1].id, "9");
	strcpy((*out)[1].envd_token, "tok9");
	(*out)[1].paused = true;
	return 0;
}

static int t_pause(void *be, const char *id, char *msg)
{
	if (strcmp(id, "7"))
		return -ENOENT;
	if (paused7)
		return -EEXIST;
	pauses++;
	paused7 = true;
	return 0;
}

static int t_resume(void *be, const char *id, char *msg)
{
	if (strcmp(id, "7"))
		return -ENOENT;
	if (!paused7)
		return -EEXIST;
	resumes++;
	paused7 = false;
	return 0;
}

static char snap_name[E2B_TEMPLATE_MAX + 1];

static int t_snapshot(void *be, const char *id, const char *name,
		      struct e2b_snapshot *out, char *msg)
{
	if (strcmp(id, "7"))
		return -ENOENT;
	if (snap_name[0] && !strcmp(name, snap_name))
		return -EEXIST;
	snprintf(snap_name, sizeof(snap_name), "%s", name[0] ? name : "gen");
	memset(out, 0, sizeof(*out));
	strcpy(out->id, snap_name);
	strcpy(out->sandbox, "7");
	return 0;
}

static int t_list_snapshots(void *be, struct e2b_snapshot **out, size_t *n)
{
	*out = calloc(1, sizeof(**out));
	*n = snap_name[0] ? 1 : 0;
	strcpy((*out)->id, snap_name);
	strcpy((*out)->sandbox, "7");
	return 0;
}

/* hist_n > 0: the history holds that many samples, 10 s apart from 1000 */
static int hist_n, samples_taken;

static int t_metrics(void *be, const char *id, struct e2b_metrics *out)
{
	samples_taken++;
	memset(out, 0, sizeof(*out));
	out->timestamp = 1700000000;
	out->cpu_count = 2;
	out->cpu_used_pct = 12.5;
	out->mem_used = 3 << 20;
	out->mem_total = 256 << 20;
	out->disk_used = 1000;
	out->disk_total = 4096;
	return 0;
}

static int t_metrics_history(void *be, const char *id,
			     struct e2b_metrics **out, size_t *n)
{
	int i;

	*n = 0;
	*out = NULL;
	if (strcmp(id, "7"))
		return -ENOENT;
	if (!hist_n)
		return -EOPNOTSUPP;
	*out = calloc(hist_n, sizeof(**out));
	for (i = 0; i < hist_n; i++) {
		(*out)[i].timestamp = 1000 + 10 * i;
		(*out)[i].cpu_count = 2;
		(*out)[i].mem_used = i;
	}
	*n = hist_n;
	return 0;
}

/* templates: "base" (built by hand), "snap" (a snapshot), "busy" */
static int tmpl_deletes;

static int t_template_exists(void *be, const char *name)
{
	return !strcmp(name, "base") || !strcmp(name, "snap") ||
	       !strcmp(name, "busy") ? 0 : -ENOENT;
}

static int t_template_delete(void *be, const char *name, char *msg)
{
	if (!strcmp(name, "base"))
		return -EACCES;
	if (!strcmp(name, "busy"))
		return -EBUSY;
	if (strcmp(name, "snap") || tmpl_deletes)
		return -ENOENT;
	tmpl_deletes++;
	return 0;
}

static int t_create(void *be, const struct e2b_new_sandbox *r,
		    struct e2b_sandbox *out, char *msg)
{
	creates++;
	autopause7 = r->auto_pause;
	autoresume7 = r->auto_resume;
	return t_get(be, "7", out);
}

struct e2b_file {
	int slot;
	size_t off;
	bool reading;
	bool meta;
};

static int t_file_write(void *be, const char *id, const char *user,
			const char *path, struct e2b_file **out, char *msg)
{
	if (nstored >= 4)
		return -ENOSPC;
	*out = calloc(1, sizeof(**out));
	(*out)->slot = nstored;
	snprintf(stored[nstored], sizeof(stored[0]), "%s", path);
	stored_len[nstored] = 0;
	return 0;
}

/* sink_bytes: files take any size, counted here, not kept */
static bool sink;
static uint64_t sink_bytes;

/* the metadata of the last file_write_meta, "k=v;" each */
static char last_meta[512];
static int meta_writes;

static int t_file_write_meta(void *be, const char *id, const char *user,
			     const char *path, const struct e2b_kvs *meta,
			     struct e2b_file **out, char *msg)
{
	size_t i;
	int ret = t_file_write(be, id, user, path, out, msg);

	if (ret)
		return ret;
	meta_writes++;
	last_meta[0] = '\0';
	for (i = 0; i < meta->n; i++)
		snprintf(last_meta + strlen(last_meta),
			 sizeof(last_meta) - strlen(last_meta), "%s=%s;",
			 meta->v[i].key, meta->v[i].value);
	(*out)->meta = true;
	return 0;
}

static int t_file_write_chunk(struct e2b_file *f, const void *buf, size_t len)
{
	if (sink) {
		sink_bytes += len;
		return 0;
	}
	if (stored_len[f->slot] + len > sizeof(stored_data[0]))
		return -EFBIG;
	memcpy(stored_data[f->slot] + stored_len[f->slot], buf, len);
	stored_len[f->slot] += len;
	return 0;
}

static int t_file_close(struct e2b_file *f, bool commit,
			struct e2b_entry *e, char *msg)
{
	if (!f->reading && commit) {
		nstored++;
		if (e) {
			memset(e, 0, sizeof(*e));
			e->path = strdup(stored[f->slot]);
			e->name = strdup("x");
			e->type = E2B_FT_FILE;
			if (f->meta)
				e2b_kvs_add(&e->metadata, "k", "as stored");
		}
	}
	free(f);
	return 0;
}

static int t_file_read(void *be, const char *id, const char *user,
		       const char *path, struct e2b_file **out, int64_t *size,
		       char *msg)
{
	int i;

	for (i = 0; i < nstored; i++) {
		if (!strcmp(stored[i], path)) {
			*out = calloc(1, sizeof(**out));
			(*out)->slot = i;
			(*out)->reading = true;
			*size = stored_len[i];
			return 0;
		}
	}
	return -ENOENT;
}

static ssize_t t_file_read_chunk(struct e2b_file *f, void *buf, size_t len)
{
	size_t n = stored_len[f->slot] - f->off;

	if (n > len)
		n = len;
	memcpy(buf, stored_data[f->slot] + f->off, n);
	f->off += n;
	return n;
}

struct e2b_proc {
	int step;
	bool forever;	/* "forever": a line every 20 ms, never an end */
};

static int t_proc_start(void *be, const char *id, const struct e2b_start *req,
			struct e2b_proc **out, char *msg)
{
	*out = calloc(1, sizeof(**out));
	if (*out && req->proc.cmd && !strcmp(req->proc.cmd, "forever"))
		(*out)->forever = true;
	return 0;
}

static int t_proc_next(struct e2b_proc *p, struct e2b_event *ev, int ms)
{
	memset(ev, 0, sizeof(*ev));
	if (p->forever && p->step) {
		usleep(20 * 1000);
		ev->type = E2B_EV_STDOUT;
		ev->data = "tick\n";
		ev->len = 5;
		p->step++;
		return 0;
	}
	switch (p->step++) {
	case 0:
		ev->type = E2B_EV_START;
		ev->pid = 9;
		return 0;
	case 1:
		ev->type = E2B_EV_END;
		return 0;
	default:
		return -EPIPE;
	}
}

static void t_proc_close(struct e2b_proc *p)
{
	free(p);
}

static const struct e2b_backend_ops ops = {
	.get = t_get,
	.list = t_list,
	.create = t_create,
	.pause = t_pause,
	.resume = t_resume,
	.metrics = t_metrics,
	.metrics_history = t_metrics_history,
	.template_exists = t_template_exists,
	.template_delete = t_template_delete,
	.snapshot = t_snapshot,
	.list_snapshots = t_list_snapshots,
	.file_write = t_file_write,
	.file_write_chunk = t_file_write_chunk,
	.file_close = t_file_close,
	.file_write_meta = t_file_write_meta,
	.file_read = t_file_read,
	.file_read_chunk = t_file_read_chunk,
	.proc_start = t_proc_start,
	.proc_next = t_proc_next,
	.proc_close = t_proc_close,
};

/* --- a tiny HTTP/1.1 client --- */

static struct e2b_server *srv;
static struct e2b_keys keys;
static struct e2b_api api;

static void start(void)
{
	struct e2b_server_config cfg = { .addr = "127.0.0.1", .api = &api };

	ASSERT_EQ(e2b_keys_add(&keys, "k"), 0);
	api.keys = &keys;
	api.backend.ops = &ops;
	ASSERT_EQ(e2b_server_start(&cfg, &srv), 0);
	ASSERT_NE(e2b_server_port(srv, E2B_PLANE_API), 0);
	ASSERT_NE(e2b_server_port(srv, E2B_PLANE_ENVD),
		  e2b_server_port(srv, E2B_PLANE_API));
}

/* send @req (+ @body), return the whole response in a static buffer */
static char *http(enum e2b_plane plane, const char *req, const void *body,
		  size_t blen, size_t *rlen)
{
	static char resp[1 << 16];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	size_t got = 0;
	ssize_t n;
	int fd;

	sa.sin_port = htons(e2b_server_port(srv, plane));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (blen) {
		n = write(fd, body, blen);
		if (n <= 0)
			break;	/* the server may answer early and close */
		body = (const char *)body + n;
		blen -= n;
	}
	while (got < sizeof(resp) - 1 &&
	       (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += n;
	close(fd);
	resp[got] = '\0';
	if (rlen)
		*rlen = got;
	return resp;
}

/* like http(), the body written @step bytes at a time, as a client may */
static char *http_pieces(enum e2b_plane plane, const char *req,
			 const void *body, size_t blen, size_t step)
{
	static char resp[1 << 16];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	size_t got = 0;
	ssize_t n;
	int fd;

	sa.sin_port = htons(e2b_server_port(srv, plane));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (blen) {
		n = write(fd, body, blen < step ? blen : step);
		if (n <= 0)
			break;
		body = (const char *)body + n;
		blen -= n;
		usleep(2000);	/* each piece is read on its own */
	}
	while (got < sizeof(resp) - 1 &&
	       (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += n;
	close(fd);
	resp[got] = '\0';
	return resp;
}

static int status_of(const char *resp)
{
	int st = 0;

	sscanf(resp, "HTTP/1.1 %d", &st);
	return st;
}

TEST(planes_and_auth)
{
	char *r;

	start();
	r = http(E2B_PLANE_API, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 200);
	r = http(E2B_PLANE_API, "GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	ASSERT_TRUE(strstr(r, "{\"code\":401") != NULL);
	/* envd paths do not exist on the control plane, and the reverse */
	r = http(E2B_PLANE_API, "GET /files HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 404);
	r = http(E2B_PLANE_ENVD, "GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 404);
	e2b_server_stop(srv);
}

TEST(json_body_limit)
{
	static const char hdr[] = "POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\n"
		"X-API-Key: k\r\nContent-Type: application/json\r\n"
		"Content-Length: %zu\r\nConnection: close\r\n\r\n";
	size_t len = E2B_BODY_MAX + 10;
	char req[512], *body, *r;

	start();
	body = malloc(len);
	memset(body, ' ', len);
	body[0] = '{';
	body[len - 1] = '}';
	snprintf(req, sizeof(req), hdr, len);
	r = http(E2B_PLANE_API, req, body, len, NULL);
	ASSERT_EQ(status_of(r), 413);
	ASSERT_EQ(creates, 0);
	snprintf(req, sizeof(req), hdr, (size_t)27);
	r = http(E2B_PLANE_API, req, "{\"templateID\":\"base\"}      ", 27, NULL);
	ASSERT_EQ(status_of(r), 201);
	ASSERT_EQ(creates, 1);
	free(body);
	e2b_server_stop(srv);
}

#define ENVD_HDRS "Host: x\r\nE2b-Sandbox-Id: 7\r\nX-Access-Token: tok\r\nConnection: close\r\n"

TEST(uploads_and_downloads)
{
	static const char mp[] =
		"--XyZ\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/a/one.txt\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"first\nfile\r\n"
		"--XyZ\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/b/two.bin\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"\001\002\003\r\n"
		"--XyZ--\r\n";
	char req[512], *r;
	size_t rlen;

	start();
	nstored = 0;
	snprintf(req, sizeof(req), "POST /files HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: multipart/form-data; boundary=XyZ\r\n"
		 "Content-Length: %zu\r\n\r\n", sizeof(mp) - 1);
	r = http(E2B_PLANE_ENVD, req, mp, sizeof(mp) - 1, NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\"path\":\"\\/a\\/one.txt\"") != NULL ||
		    strstr(r, "\"path\":\"/a/one.txt\"") != NULL);
	ASSERT_EQ(nstored, 2);
	ASSERT_STREQ(stored[0], "/a/one.txt");
	ASSERT_EQ(stored_len[0], 10);
	ASSERT_EQ(memcmp(stored_data[0], "first\nfile", 10), 0);
	ASSERT_STREQ(stored[1], "/b/two.bin");
	ASSERT_EQ(stored_len[1], 3);

	snprintf(req, sizeof(req), "POST /files?path=/c/raw HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\n");
	r = http(E2B_PLANE_ENVD, req, "raw!", 4, NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(nstored, 3);
	ASSERT_EQ(memcmp(stored_data[2], "raw!", 4), 0);

	/* an unknown encoding writes nothing */
	snprintf(req, sizeof(req), "POST /files?path=/d HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: text/plain\r\nContent-Length: 4\r\n\r\n");
	r = http(E2B_PLANE_ENVD, req, "nope", 4, NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_EQ(nstored, 3);

	/* a wrong token writes nothing either */
	snprintf(req, sizeof(req), "POST /files?path=/e HTTP/1.1\r\nHost: x\r\n"
		 "E2b-Sandbox-Id: 7\r\nX-Access-Token: bad\r\nConnection: close\r\n"
		 "Content-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\n");
	r = http(E2B_PLANE_ENVD, req, "nope", 4, NULL);
	ASSERT_EQ(status_of(r), 502);
	ASSERT_TRUE(strstr(r, "sandbox not found") != NULL);
	ASSERT_EQ(nstored, 3);

	r = http(E2B_PLANE_ENVD, "GET /files?path=/c/raw HTTP/1.1\r\n" ENVD_HDRS "\r\n",
		 NULL, 0, &rlen);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "Content-Length: 4") != NULL);
	ASSERT_EQ(memcmp(r + rlen - 4, "raw!", 4), 0);
	r = http(E2B_PLANE_ENVD, "GET /files?path=/none HTTP/1.1\r\n" ENVD_HDRS "\r\n",
		 NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 404);
	e2b_server_stop(srv);
}

/*
 * Files of 1 to 4 bytes in one multipart body (as the SDK's files.write
 * sends several), the body arriving whole or in pieces: one file written
 * per part, once, with its bytes, and one entry each in the answer.
 */
TEST(small_parts_in_pieces)
{
	static const char mp[] =
		"--b0\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/s/1\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"A\r\n"
		"--b0\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/s/2\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"BC\r\n"
		"--b0\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/s/3\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"DEF\r\n"
		"--b0\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/s/4\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"GHIJ\r\n"
		"--b0--\r\n";
	static const size_t steps[] = { sizeof(mp), 1, 3, 7, 29, 64 };
	char req[512], *r, *p;
	size_t i;
	int k, entries;

	start();
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		nstored = 0;
		snprintf(req, sizeof(req), "POST /files HTTP/1.1\r\n" ENVD_HDRS
			 "Content-Type: multipart/form-data; boundary=b0\r\n"
			 "Content-Length: %zu\r\n\r\n", sizeof(mp) - 1);
		r = http_pieces(E2B_PLANE_ENVD, req, mp, sizeof(mp) - 1,
				steps[i]);
		ASSERT_EQ(status_of(r), 200);
		ASSERT_EQ(nstored, 4);
		for (k = 0; k < 4; k++) {
			char want[8];

			snprintf(want, sizeof(want), "/s/%d", k + 1);
			ASSERT_STREQ(stored[k], want);
			ASSERT_EQ(stored_len[k], (size_t)k + 1);
			ASSERT_EQ(memcmp(stored_data[k], &"ABCDEFGHIJ"[k * (k + 1) / 2],
					 k + 1), 0);
		}
		for (entries = 0, p = r; (p = strstr(p, "\"path\"")); p++)
			entries++;
		ASSERT_EQ(entries, 4);
	}
	e2b_server_stop(srv);
}

TEST(connect_stream)
{
	static const char msg[] = "{\"process\":{\"cmd\":\"true\"}}";
	uint8_t body[64];
	char req[512], *r, *p;
	size_t rlen;
	static const char start_ev[] = "{\"event\":{\"start\":{\"pid\":9}}}";

	start();
	cf_put_header(body, 0, sizeof(msg) - 1);
	memcpy(body + CF_HDR_LEN, msg, sizeof(msg) - 1);
	snprintf(req, sizeof(req), "POST /process.Process/Start HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: application/connect+json\r\nContent-Length: %zu\r\n\r\n",
		 CF_HDR_LEN + sizeof(msg) - 1);
	r = http(E2B_PLANE_ENVD, req, body, CF_HDR_LEN + sizeof(msg) - 1, &rlen);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "application/connect+json") != NULL);
	ASSERT_TRUE(strstr(r, "Transfer-Encoding: chunked") != NULL);
	/* the body holds binary envelope headers: search it as bytes */
	p = memmem(r, rlen, start_ev, sizeof(start_ev) - 1);
	ASSERT_TRUE(p != NULL);
	/* the start event's envelope: flags 0, big-endian length */
	ASSERT_EQ((uint8_t)p[-5], 0);
	ASSERT_EQ((uint8_t)p[-1], sizeof(start_ev) - 1);
	ASSERT_TRUE(memmem(p, rlen - (p - r), "\"end\"", 5) != NULL);
	/* the end-of-stream message: flag 0x02, "{}" */
	ASSERT_TRUE(memmem(p, rlen - (p - r), "\x02\0\0\0\x02{}", 7) != NULL);
	e2b_server_stop(srv);
}

#define API_HDRS "Host: x\r\nX-API-Key: k\r\nConnection: close\r\n"

static char *api_req(const char *method, const char *path, const char *body)
{
	char req[512];

	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\n" API_HDRS
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		 method, path, body ? strlen(body) : 0);
	return http(E2B_PLANE_API, req, body, body ? strlen(body) : 0, NULL);
}

TEST(pause_and_resume)
{
	char *r;

	start();
	paused7 = false;
	pauses = resumes = 0;
	/* a pause that would drop the memory is refused, and changes nothing */
	r = api_req("POST", "/sandboxes/7/pause", "{\"memory\":false}");
	ASSERT_EQ(status_of(r), 400);
	r = api_req("POST", "/sandboxes/7/pause", "{\"memory\":1}");
	ASSERT_EQ(status_of(r), 400);
	ASSERT_EQ(pauses, 0);
	r = api_req("POST", "/sandboxes/8/pause", NULL);
	ASSERT_EQ(status_of(r), 404);
	r = api_req("POST", "/sandboxes/7/pause", "{}");
	ASSERT_EQ(status_of(r), 204);
	ASSERT_EQ(pauses, 1);
	/* the SDK reads 409 as "already paused" */
	r = api_req("POST", "/sandboxes/7/pause", NULL);
	ASSERT_EQ(status_of(r), 409);
	ASSERT_EQ(pauses, 1);
	r = api_req("GET", "/sandboxes/7", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\"state\":\"paused\"") != NULL);
	/* a paused sandbox has no samples */
	r = api_req("GET", "/sandboxes/7/metrics", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\r\n\r\n[]") != NULL ||
		    strstr(r, "\r\n\r\n[ ]") != NULL);
	/* connect resumes it */
	r = api_req("POST", "/v2/sandboxes/7/connect", "{\"timeout\":30}");
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(resumes, 1);
	ASSERT_FALSE(paused7);
	ASSERT_TRUE(strstr(r, "\"sandboxID\":\"7\"") != NULL);
	/* connecting to a running one resumes nothing; resume says 409 */
	r = api_req("POST", "/v2/sandboxes/7/connect", "{}");
	ASSERT_EQ(status_of(r), 200);
	r = api_req("POST", "/sandboxes/7/resume", "{}");
	ASSERT_EQ(status_of(r), 409);
	ASSERT_EQ(resumes, 1);
	r = api_req("POST", "/sandboxes/8/resume", "{}");
	ASSERT_EQ(status_of(r), 404);
	r = api_req("POST", "/sandboxes/7/pause", NULL);
	ASSERT_EQ(status_of(r), 204);
	r = api_req("POST", "/sandboxes/7/resume", "{}");
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(resumes, 2);
	e2b_server_stop(srv);
}

static char *envd_get(const char *path)
{
	char req[512];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n" ENVD_HDRS "\r\n", path);
	return http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
}

TEST(lifecycle)
{
	static const char *bad[] = {
		/* what the SDK refuses to send, and malformed values */
		"{\"templateID\":\"base\",\"autoResume\":{\"enabled\":true}}",
		"{\"templateID\":\"base\",\"autoPause\":false,\"autoResume\":{\"enabled\":true}}",
		"{\"templateID\":\"base\",\"autoPause\":true,\"autoResume\":true}",
		"{\"templateID\":\"base\",\"autoPause\":true,\"autoResume\":{}}",
		"{\"templateID\":\"base\",\"autoPause\":true,\"autoResume\":{\"enabled\":1}}",
		"{\"templateID\":\"base\",\"autoPause\":\"yes\"}",
		/* a pause always keeps the memory */
		"{\"templateID\":\"base\",\"autoPause\":true,\"autoPauseMemory\":false}",
	};
	unsigned int i;
	char *r;

	start();
	paused7 = false;
	creates = resumes = 0;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = api_req("POST", "/v2/sandboxes", bad[i]);
		ASSERT_EQ(status_of(r), 400);
	}
	ASSERT_EQ(creates, 0);

	/* the SDK's lifecycle {onTimeout: 'pause'}: paused, envd says 502 */
	r = api_req("POST", "/v2/sandboxes",
		    "{\"templateID\":\"base\",\"autoPause\":true,\"autoPauseMemory\":true}");
	ASSERT_EQ(status_of(r), 201);
	ASSERT_TRUE(autopause7);
	ASSERT_FALSE(autoresume7);
	r = api_req("GET", "/sandboxes/7", NULL);
	ASSERT_TRUE(strstr(r, "\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":false}") != NULL);
	r = envd_get("/health");
	ASSERT_EQ(status_of(r), 204);
	paused7 = true;
	/* isRunning() is false on 502; every other request is refused too */
	r = envd_get("/health");
	ASSERT_EQ(status_of(r), 502);
	ASSERT_TRUE(strstr(r, "sandbox is paused") != NULL);
	r = envd_get("/files?path=/a");
	ASSERT_EQ(status_of(r), 502);
	ASSERT_TRUE(paused7);
	ASSERT_EQ(resumes, 0);
	/* a wrong token learns nothing (not even the pause), resumes nothing */
	r = http(E2B_PLANE_ENVD, "GET /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: 7\r\n"
		 "X-Access-Token: bad\r\nConnection: close\r\n\r\n", NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 502);
	ASSERT_TRUE(strstr(r, "sandbox not found") != NULL);
	ASSERT_EQ(resumes, 0);

	/* ... with autoResume: the next envd request resumes it */
	r = api_req("POST", "/v2/sandboxes",
		    "{\"templateID\":\"base\",\"autoPause\":true,\"autoResume\":{\"enabled\":true}}");
	ASSERT_EQ(status_of(r), 201);
	ASSERT_TRUE(autoresume7);
	r = api_req("GET", "/sandboxes/7", NULL);
	ASSERT_TRUE(strstr(r, "\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true}") != NULL);
	paused7 = true;
	r = envd_get("/health");
	ASSERT_EQ(status_of(r), 204);
	ASSERT_EQ(resumes, 1);
	ASSERT_FALSE(paused7);
	r = envd_get("/health");
	ASSERT_EQ(status_of(r), 204);
	ASSERT_EQ(resumes, 1);

	/* no lifecycle: the timeout kills it */
	r = api_req("POST", "/v2/sandboxes", "{\"templateID\":\"base\"}");
	ASSERT_EQ(status_of(r), 201);
	ASSERT_FALSE(autopause7);
	r = api_req("GET", "/sandboxes/7", NULL);
	ASSERT_TRUE(strstr(r, "\"lifecycle\":{\"onTimeout\":\"kill\",\"autoResume\":false}") != NULL);
	autopause7 = autoresume7 = false;
	e2b_server_stop(srv);
}

TEST(metrics)
{
	char *r;

	start();
	paused7 = false;
	r = api_req("GET", "/sandboxes/7/metrics", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\"cpuCount\":2") != NULL);
	ASSERT_TRUE(strstr(r, "\"cpuUsedPct\":12.5") != NULL);
	ASSERT_TRUE(strstr(r, "\"memUsed\":3145728") != NULL);
	ASSERT_TRUE(strstr(r, "\"memTotal\":268435456") != NULL);
	ASSERT_TRUE(strstr(r, "\"diskTotal\":4096") != NULL);
	ASSERT_TRUE(strstr(r, "\"timestamp\":\"2023-11-14T22:13:20Z\"") != NULL);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1700000000") != NULL);
	r = api_req("GET", "/sandboxes/8/metrics", NULL);
	ASSERT_EQ(status_of(r), 404);
	e2b_server_stop(srv);
}

/* the metrics series: a range of the kept samples, and one taken now */
TEST(metrics_range)
{
	char *r;

	start();
	paused7 = false;
	hist_n = 5;		/* 1000, 1010, ..., 1040 */
	samples_taken = 0;
	r = api_req("GET", "/sandboxes/7/metrics?start=1010&end=1030", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1000") == NULL);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1010") != NULL);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1020") != NULL);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1030") != NULL);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1040") == NULL);
	/* a range in the past takes no sample now */
	ASSERT_EQ(samples_taken, 0);
	r = api_req("GET", "/sandboxes/7/metrics?start=1041&end=1050", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\r\n\r\n[]") != NULL ||
		    strstr(r, "\r\n\r\n[ ]") != NULL);
	/* up to now (no end): the whole history, after a sample is taken */
	r = api_req("GET", "/sandboxes/7/metrics?start=1035", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(samples_taken, 1);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1030") == NULL);
	ASSERT_TRUE(strstr(r, "\"timestampUnix\":1040") != NULL);
	/* bad values change nothing and take no sample */
	samples_taken = 0;
	r = api_req("GET", "/sandboxes/7/metrics?start=20&end=10", NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "after") != NULL);
	r = api_req("GET", "/sandboxes/7/metrics?start=-5", NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "'start'") != NULL);
	r = api_req("GET", "/sandboxes/7/metrics?end=1e9", NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "'end'") != NULL);
	r = api_req("GET", "/sandboxes/7/metrics?start=", NULL);
	ASSERT_EQ(status_of(r), 400);
	r = api_req("GET", "/sandboxes/7/metrics?start=1234567890123", NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_EQ(samples_taken, 0);
	r = api_req("GET", "/sandboxes/8/metrics?start=1", NULL);
	ASSERT_EQ(status_of(r), 404);
	hist_n = 0;
	e2b_server_stop(srv);
}

/* Template.exists() and Sandbox.deleteSnapshot() */
TEST(templates)
{
	char *r;

	start();
	tmpl_deletes = 0;
	r = api_req("GET", "/templates/aliases/base", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\"templateID\":\"base\"") != NULL);
	r = api_req("GET", "/templates/aliases/nothing", NULL);
	ASSERT_EQ(status_of(r), 404);
	r = api_req("GET", "/templates/aliases/a%3Ab", NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "template name") != NULL);
	r = api_req("GET", "/templates/aliases/.hidden", NULL);
	ASSERT_EQ(status_of(r), 400);
	/* without a key: nothing */
	r = http(E2B_PLANE_API, "DELETE /templates/snap HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	ASSERT_EQ(tmpl_deletes, 0);
	r = api_req("DELETE", "/templates/base", NULL);
	ASSERT_EQ(status_of(r), 403);
	r = api_req("DELETE", "/templates/busy", NULL);
	ASSERT_EQ(status_of(r), 409);
	r = api_req("DELETE", "/templates/bad%20name", NULL);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_EQ(tmpl_deletes, 0);
	r = api_req("DELETE", "/templates/snap", NULL);
	ASSERT_EQ(status_of(r), 204);
	ASSERT_EQ(tmpl_deletes, 1);
	/* the SDK reads 404 as "there was none" */
	r = api_req("DELETE", "/templates/snap", NULL);
	ASSERT_EQ(status_of(r), 404);
	e2b_server_stop(srv);
}

/* gzip @len bytes of @data (repeated @times) into a malloc()ed buffer */
static unsigned char *gzip_of(const void *data, size_t len, unsigned int times,
			      size_t *out_len)
{
	size_t cap = len * times / 100 + 4096;
	unsigned char *out = malloc(cap);
	z_stream z = { 0 };
	unsigned int i;

	ASSERT_TRUE(out != NULL);
	ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9,
			       Z_DEFAULT_STRATEGY), Z_OK);
	z.next_out = out;
	z.avail_out = cap;
	for (i = 0; i < times; i++) {
		z.next_in = (unsigned char *)data;
		z.avail_in = len;
		while (z.avail_in)
			ASSERT_EQ(deflate(&z, Z_NO_FLUSH), Z_OK);
	}
	ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static char *gz_upload(const char *path, const char *enc, const void *body,
		       size_t len)
{
	char req[512];

	snprintf(req, sizeof(req), "POST /files?path=%s HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: application/octet-stream\r\n"
		 "Content-Encoding: %s\r\nContent-Length: %zu\r\n\r\n",
		 path, enc, len);
	return http(E2B_PLANE_ENVD, req, body, len, NULL);
}

TEST(gzip_uploads)
{
	static const char text[] = "hello, gzip\n";
	unsigned char *gz, *two, *zeros;
	size_t glen, zlen;
	char *r;

	start();
	nstored = 0;
	gz = gzip_of(text, sizeof(text) - 1, 1, &glen);
	r = gz_upload("/g/one", "gzip", gz, glen);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(nstored, 1);
	ASSERT_EQ(stored_len[0], sizeof(text) - 1);
	ASSERT_EQ(memcmp(stored_data[0], text, sizeof(text) - 1), 0);
	/* the body in pieces of a few bytes, and two members one after another */
	two = malloc(2 * glen);
	memcpy(two, gz, glen);
	memcpy(two + glen, gz, glen);
	{
		char req[512];

		snprintf(req, sizeof(req), "POST /files?path=/g/two HTTP/1.1\r\n" ENVD_HDRS
			 "Content-Type: application/octet-stream\r\n"
			 "Content-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n",
			 2 * glen);
		r = http_pieces(E2B_PLANE_ENVD, req, two, 2 * glen, 5);
	}
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(nstored, 2);
	ASSERT_EQ(stored_len[1], 2 * (sizeof(text) - 1));
	ASSERT_EQ(memcmp(stored_data[1] + sizeof(text) - 1, text,
			 sizeof(text) - 1), 0);
	/* damaged, cut short, empty, or an unknown encoding: nothing written */
	two[glen / 2] ^= 0x55;
	two[glen / 2 + 1] ^= 0x55;
	r = gz_upload("/g/bad", "gzip", two, glen);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "gzip") != NULL);
	r = gz_upload("/g/short", "gzip", gz, glen - 6);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "ends early") != NULL);
	r = gz_upload("/g/empty", "gzip", "", 0);
	ASSERT_EQ(status_of(r), 400);
	r = gz_upload("/g/br", "br", gz, glen);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_TRUE(strstr(r, "Content-Encoding") != NULL);
	r = gz_upload("/g/plain", "gzip", text, sizeof(text) - 1);
	ASSERT_EQ(status_of(r), 400);
	ASSERT_EQ(nstored, 2);
	/* identity is no encoding */
	r = gz_upload("/g/id", "identity", text, sizeof(text) - 1);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(nstored, 3);
	/* a bomb: 300 MiB of zeros in a few hundred KiB, refused at the bound */
	zeros = calloc(1, 1 << 20);
	free(gz);
	gz = gzip_of(zeros, 1 << 20, 300, &zlen);
	ASSERT_LT(zlen, (size_t)1 << 20);
	sink = true;
	sink_bytes = 0;
	r = gz_upload("/g/bomb", "gzip", gz, zlen);
	sink = false;
	ASSERT_EQ(status_of(r), 413);
	ASSERT_TRUE(strstr(r, "inflates") != NULL);
	ASSERT_LE(sink_bytes, E2B_INFLATE_MAX);
	ASSERT_EQ(nstored, 3);
	free(zeros);
	free(two);
	free(gz);
	e2b_server_stop(srv);
}

/* X-Metadata-* headers: kept with every file, checked before anything */
TEST(upload_metadata)
{
	char req[1024], *r;
	int i;

	start();
	nstored = 0;
	meta_writes = 0;
	snprintf(req, sizeof(req), "POST /files?path=/m/one HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: application/octet-stream\r\n"
		 "x-metadata-owner: team a/b+c@d:e\r\nX-Metadata-Rev.2: \r\n"
		 "Content-Length: 3\r\n\r\n");
	r = http(E2B_PLANE_ENVD, req, "abc", 3, NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(nstored, 1);
	ASSERT_EQ(meta_writes, 1);
	ASSERT_STREQ(last_meta, "owner=team a/b+c@d:e;Rev.2=;");
	ASSERT_TRUE(strstr(r, "\"metadata\":{\"k\":\"as stored\"}") != NULL);
	/* none: the plain write */
	snprintf(req, sizeof(req), "POST /files?path=/m/two HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\n");
	r = http(E2B_PLANE_ENVD, req, "abc", 3, NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(meta_writes, 1);
	ASSERT_TRUE(strstr(r, "metadata") == NULL);
	/* bad keys and values, too many: 400, nothing written */
	{
		static const char *bad[] = {
			"X-Metadata-: v\r\n",
			"X-Metadata-a(b): v\r\n",
			"X-Metadata-k: caf\xc3\xa9\r\n",
			"X-Metadata-k: a\tb\r\n",
			"X-Metadata-k: 1\r\nx-metadata-k: 2\r\n",
		};

		for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
			snprintf(req, sizeof(req), "POST /files?path=/m/bad HTTP/1.1\r\n"
				 ENVD_HDRS "Content-Type: application/octet-stream\r\n"
				 "%sContent-Length: 3\r\n\r\n", bad[i]);
			r = http(E2B_PLANE_ENVD, req, "abc", 3, NULL);
			ASSERT_EQ(status_of(r), 400);
			ASSERT_TRUE(strstr(r, "metadata") != NULL);
		}
	}
	{
		char many[33 * 24] = "";

		for (i = 0; i < 33; i++)
			snprintf(many + strlen(many), sizeof(many) - strlen(many),
				 "X-Metadata-k%d: v\r\n", i);
		snprintf(req, sizeof(req), "POST /files?path=/m/bad HTTP/1.1\r\n"
			 ENVD_HDRS "Content-Type: application/octet-stream\r\n"
			 "%sContent-Length: 3\r\n\r\n", many);
		r = http(E2B_PLANE_ENVD, req, "abc", 3, NULL);
		ASSERT_EQ(status_of(r), 400);
		ASSERT_TRUE(strstr(r, "at most 32") != NULL);
	}
	ASSERT_EQ(nstored, 2);
	ASSERT_EQ(meta_writes, 1);
	e2b_server_stop(srv);
}

/* a signed URL's query: path, username, signature, expiration */
static void signed_query(char *q, size_t len, const char *path,
			 const char *op, const char *user, const char *token,
			 const char *exp)
{
	char sig[E2B_SIG_LEN], enc[3 * E2B_SIG_LEN];
	size_t i, k = 0;

	ASSERT_EQ(e2b_file_signature(path, op, user, token, exp, sig), 0);
	/* as URLSearchParams encodes it */
	for (i = 0; sig[i]; i++) {
		if (sig[i] == '+' || sig[i] == '/' || sig[i] == '=')
			k += sprintf(enc + k, "%%%02X", (unsigned char)sig[i]);
		else
			enc[k++] = sig[i];
	}
	enc[k] = '\0';
	snprintf(q, len, "path=%s%s%s&signature=%s%s%s", path,
		 user[0] ? "&username=" : "", user, enc,
		 exp ? "&signature_expiration=" : "", exp ? exp : "");
}

/*
 * uploadUrl() / downloadUrl(): no token, no sandbox header; the sandbox
 * is the one whose token signed the request.
 */
TEST(signed_urls)
{
	char q[512], req[1024], later[24], *r;
	size_t rlen;

	start();
	paused7 = false;
	nstored = 0;
	snprintf(later, sizeof(later), "%lld", (long long)time(NULL) + 600);
	signed_query(q, sizeof(q), "/s/up", "write", "", "tok", NULL);
	snprintf(req, sizeof(req), "POST /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\nContent-Type: application/octet-stream\r\n"
		 "Content-Length: 6\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, "signed", 6, NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(nstored, 1);
	ASSERT_STREQ(stored[0], "/s/up");
	signed_query(q, sizeof(q), "/s/up", "read", "", "tok", later);
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, &rlen);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_EQ(memcmp(r + rlen - 6, "signed", 6), 0);
	/* with the sandbox named too */
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "E2b-Sandbox-Id: 7\r\nConnection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 200);
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "E2b-Sandbox-Id: 8\r\nConnection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 502);
	ASSERT_TRUE(strstr(r, "sandbox not found") != NULL);
	/* another token's signature, the sandbox named: as an unknown one */
	signed_query(q, sizeof(q), "/s/up", "read", "", "tok9", later);
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "E2b-Sandbox-Id: 7\r\nConnection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 502);
	ASSERT_TRUE(strstr(r, "sandbox not found") != NULL);
	/* a read signature does not write; nothing is written */
	signed_query(q, sizeof(q), "/s/other", "read", "", "tok", NULL);
	snprintf(req, sizeof(req), "POST /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\nContent-Type: application/octet-stream\r\n"
		 "Content-Length: 4\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, "nope", 4, NULL);
	ASSERT_EQ(status_of(r), 401);
	ASSERT_TRUE(strstr(r, "invalid signature") != NULL);
	/* another path, user or token than signed; a paused sandbox's */
	signed_query(q, sizeof(q), "/s/up", "read", "", "tok", NULL);
	q[6] = 'x';	/* path=/s/up -> path=/x/up */
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	signed_query(q, sizeof(q), "/s/up", "read", "user", "tok", NULL);
	{
		char *u = strstr(q, "username=user");

		ASSERT_TRUE(u != NULL);
		memcpy(u + 9, "root", 4);
	}
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	signed_query(q, sizeof(q), "/s/up", "read", "", "tok9", NULL);
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	/* expired, or an expiration that is no time */
	signed_query(q, sizeof(q), "/s/up", "read", "", "tok", "1000");
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	ASSERT_TRUE(strstr(r, "expired") != NULL);
	signed_query(q, sizeof(q), "/s/up", "read", "", "tok", "12ab");
	snprintf(req, sizeof(req), "GET /files?%s HTTP/1.1\r\nHost: x\r\n"
		 "Connection: close\r\n\r\n", q);
	r = http(E2B_PLANE_ENVD, req, NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 400);
	/* a signature that is no signature */
	r = http(E2B_PLANE_ENVD, "GET /files?path=/s/up&signature=v1_x HTTP/1.1\r\n"
		 "Host: x\r\nConnection: close\r\n\r\n", NULL, 0, NULL);
	ASSERT_EQ(status_of(r), 401);
	ASSERT_EQ(nstored, 1);
	e2b_server_stop(srv);
}

TEST(snapshots)
{
	char *r;

	start();
	paused7 = false;
	snap_name[0] = '\0';
	r = api_req("POST", "/sandboxes/7/snapshots", "{\"name\":\"bad name\"}");
	ASSERT_EQ(status_of(r), 400);
	r = api_req("POST", "/sandboxes/7/snapshots", "{\"name\":\".hidden\"}");
	ASSERT_EQ(status_of(r), 400);
	ASSERT_STREQ(snap_name, "");
	r = api_req("POST", "/sandboxes/8/snapshots", "{}");
	ASSERT_EQ(status_of(r), 404);
	r = api_req("POST", "/sandboxes/7/snapshots", "{\"name\":\"s1\"}");
	ASSERT_EQ(status_of(r), 201);
	ASSERT_TRUE(strstr(r, "\"snapshotID\":\"s1\"") != NULL);
	ASSERT_TRUE(strstr(r, "\"names\":[\"s1\"]") != NULL ||
		    strstr(r, "\"names\":[ \"s1\" ]") != NULL);
	r = api_req("POST", "/sandboxes/7/snapshots", "{\"name\":\"s1\"}");
	ASSERT_EQ(status_of(r), 409);
	r = api_req("GET", "/snapshots?sandboxID=7", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "\"snapshotID\":\"s1\"") != NULL);
	r = api_req("GET", "/snapshots?sandboxID=8", NULL);
	ASSERT_EQ(status_of(r), 200);
	ASSERT_TRUE(strstr(r, "s1") == NULL);
	/* a paused sandbox is not snapshotted */
	paused7 = true;
	r = api_req("POST", "/sandboxes/7/snapshots", "{\"name\":\"s2\"}");
	ASSERT_EQ(status_of(r), 409);
	ASSERT_STREQ(snap_name, "s1");
	paused7 = false;
	e2b_server_stop(srv);
}

/* a connected socket to @plane's port */
static int dial(enum e2b_plane plane)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd;

	sa.sin_port = htons(e2b_server_port(srv, plane));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* what @fd answers before the server closes it, within @ms; -1: no close */
static ssize_t answer_then_close(int fd, char *buf, size_t cap, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	for (;;) {
		if (poll(&p, 1, ms) <= 0)
			return -1;
		n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			break;	/* EOF, or reset */
		got += n;
		if (got == cap - 1)
			break;
	}
	buf[got] = '\0';
	return got;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * One client address holds at most max_per_client connections of a port:
 * the next is closed unanswered; a connection silent for idle_secs is
 * closed, and its slot serves the next client again.
 */
TEST(per_client_limit_and_idle_timeout)
{
	struct e2b_server_config cfg = {
		.addr = "127.0.0.1", .api = &api,
		.max_conns = 4, .max_per_client = 2, .idle_secs = 1,
	};
	static const char get[] = "GET /sandboxes HTTP/1.1\r\nHost: x\r\n"
				  "X-API-Key: k\r\nConnection: close\r\n\r\n";
	char buf[512];
	int a, b, c, d;
	ssize_t n;
	double t0;

	ASSERT_EQ(e2b_keys_add(&keys, "k"), 0);
	api.keys = &keys;
	api.backend.ops = &ops;
	ASSERT_EQ(e2b_server_start(&cfg, &srv), 0);
	t0 = mono_s();
	a = dial(E2B_PLANE_API);
	b = dial(E2B_PLANE_API);
	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	/* the third of this address: closed before it is read */
	c = dial(E2B_PLANE_API);
	ASSERT_GE(c, 0);
	(void)!write(c, get, strlen(get));
	EXPECT_EQ(answer_then_close(c, buf, sizeof(buf), 5000), 0);
	close(c);
	/* the two silent ones are closed once idle, not before */
	EXPECT_EQ(answer_then_close(a, buf, sizeof(buf), 10000), 0);
	EXPECT_EQ(answer_then_close(b, buf, sizeof(buf), 10000), 0);
	EXPECT_GE(mono_s() - t0, 0.9);
	close(a);
	close(b);
	/*
	 * Their slots serve again, once the server has let go of them (its
	 * count of the address drops when a connection's thread ends, which
	 * may be after the client saw the close): refused until then.
	 */
	t0 = mono_s();
	do {
		d = dial(E2B_PLANE_API);
		ASSERT_GE(d, 0);
		ASSERT_EQ(write(d, get, strlen(get)), (ssize_t)strlen(get));
		n = answer_then_close(d, buf, sizeof(buf), 10000);
		close(d);
		if (n <= 0)
			usleep(20000);
	} while (n <= 0 && mono_s() - t0 < 10);
	EXPECT_GT(n, 0);
	EXPECT_EQ(strncmp(buf, "HTTP/1.1 200", 12), 0);
	e2b_server_stop(srv);
}

/*
 * Send @head and @len bytes of a body (of a larger Content-Length, so the
 * request stays open) on a new connection; the connection, or -1.
 */
static int half_body(enum e2b_plane plane, const char *head, size_t len)
{
	static char junk[64 << 10];
	int fd = dial(plane);
	size_t n;

	if (fd < 0)
		return -1;
	memset(junk, ' ', sizeof(junk));
	if (write(fd, head, strlen(head)) != (ssize_t)strlen(head)) {
		close(fd);
		return -1;
	}
	for (; len; len -= n) {
		n = len < sizeof(junk) ? len : sizeof(junk);
		if (write(fd, junk, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* poll the server's body counters until @done says so, up to 10 s */
static bool bodies_until(bool (*done)(size_t held, uint64_t dropped),
			 size_t *held, uint64_t *dropped)
{
	int i;

	for (i = 0; i < 1000; i++) {
		e2b_server_bodies(srv, held, dropped);
		if (done(*held, *dropped))
			return true;
		usleep(10000);
	}
	return false;
}

#define PART	(512u << 10)

static bool dropped_two_parts(size_t held, uint64_t dropped)
{
	return dropped >= 2 * PART;
}

static bool holds_a_part(size_t held, uint64_t dropped)
{
	return held >= PART;
}

/*
 * Long streams do not hold short requests up: with eight process streams
 * of one client open and flowing, twenty short API requests are each
 * answered at once, and every stream still flows after them.
 */
TEST(long_streams_do_not_starve_short_requests)
{
	struct e2b_server_config cfg = {
		.addr = "127.0.0.1", .api = &api,
		.max_conns = 16, .max_per_client = 12,
	};
	static const char msg[] = "{\"process\":{\"cmd\":\"forever\"}}";
	uint8_t body[64];
	char req[512], buf[4096], *r;
	int streams[8], i;
	double t0, worst = 0;
	ssize_t n;

	ASSERT_EQ(e2b_keys_add(&keys, "k"), 0);
	api.keys = &keys;
	api.backend.ops = &ops;
	ASSERT_EQ(e2b_server_start(&cfg, &srv), 0);
	cf_put_header(body, 0, sizeof(msg) - 1);
	memcpy(body + CF_HDR_LEN, msg, sizeof(msg) - 1);
	snprintf(req, sizeof(req), "POST /process.Process/Start HTTP/1.1\r\n" ENVD_HDRS
		 "Content-Type: application/connect+json\r\nContent-Length: %zu\r\n\r\n",
		 CF_HDR_LEN + sizeof(msg) - 1);
	for (i = 0; i < 8; i++) {
		streams[i] = dial(E2B_PLANE_ENVD);
		ASSERT_GE(streams[i], 0);
		ASSERT_EQ(write(streams[i], req, strlen(req)), (ssize_t)strlen(req));
		ASSERT_EQ(write(streams[i], body, CF_HDR_LEN + sizeof(msg) - 1),
			  (ssize_t)(CF_HDR_LEN + sizeof(msg) - 1));
	}
	/* every stream under way: its first lines arrive */
	for (i = 0; i < 8; i++) {
		struct pollfd p = { .fd = streams[i], .events = POLLIN };

		ASSERT_EQ(poll(&p, 1, 5000), 1);
		ASSERT_GT(read(streams[i], buf, sizeof(buf)), 0);
	}
	for (i = 0; i < 20; i++) {
		t0 = mono_s();
		r = http(E2B_PLANE_API, "GET /sandboxes HTTP/1.1\r\nHost: x\r\n"
			 "X-API-Key: k\r\nConnection: close\r\n\r\n", NULL, 0, NULL);
		EXPECT_EQ(status_of(r), 200);
		if (mono_s() - t0 > worst)
			worst = mono_s() - t0;
	}
	EXPECT_LT(worst, 1.0);
	/* and the streams flow on: each has new lines */
	for (i = 0; i < 8; i++) {
		struct pollfd p = { .fd = streams[i], .events = POLLIN };

		while (poll(&p, 1, 0) == 1 &&
		       read(streams[i], buf, sizeof(buf)) > 0)
			;
		EXPECT_EQ(poll(&p, 1, 2000), 1);
		n = read(streams[i], buf, sizeof(buf) - 1);
		EXPECT_GT(n, 0);
		buf[n > 0 ? n : 0] = '\0';
		EXPECT_TRUE(n > 0 && memmem(buf, n, "tick", 4) == NULL ?
			    memmem(buf, n, "dGljaw", 6) != NULL : true);
		close(streams[i]);
	}
	e2b_server_stop(srv);
}

/*
 * A request refused whatever its body (no API key, another envd token)
 * has its body read and dropped, never held; a keyed one's is held until
 * it is answered.
 */
TEST(bodies_are_held_only_for_good_keys_and_tokens)
{
	char head[512];
	uint64_t dropped;
	size_t held;
	int a, b, c;

	start();
	snprintf(head, sizeof(head), "POST /sandboxes HTTP/1.1\r\nHost: x\r\n"
		 "X-API-Key: wrong\r\nContent-Type: application/json\r\n"
		 "Content-Length: %u\r\n\r\n", 2 * PART);
	a = half_body(E2B_PLANE_API, head, PART);
	ASSERT_GE(a, 0);
	snprintf(head, sizeof(head), "POST /process.Process/SendSignal HTTP/1.1\r\n"
		 "Host: x\r\nE2b-Sandbox-Id: 7\r\nX-Access-Token: bad\r\n"
		 "Content-Type: application/json\r\nContent-Length: %u\r\n\r\n",
		 2 * PART);
	b = half_body(E2B_PLANE_ENVD, head, PART);
	ASSERT_GE(b, 0);
	/* both bodies read so far: none of it is held */
	EXPECT_TRUE(bodies_until(dropped_two_parts, &held, &dropped));
	EXPECT_EQ(held, 0);
	/* the same with the key is held (the counter counts) */
	snprintf(head, sizeof(head), "POST /sandboxes HTTP/1.1\r\nHost: x\r\n"
		 "X-API-Key: k\r\nContent-Type: application/json\r\n"
		 "Content-Length: %u\r\n\r\n", 2 * PART);
	c = half_body(E2B_PLANE_API, head, PART);
	ASSERT_GE(c, 0);
	EXPECT_TRUE(bodies_until(holds_a_part, &held, &dropped));
	close(a);
	close(b);
	close(c);
	e2b_server_stop(srv);
}

TEST_MAIN()
