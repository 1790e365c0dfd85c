// SPDX-License-Identifier: GPL-2.0
/*
 * server_test: the libmicrohttpd glue over real loopback sockets, with a
 * recording backend: body limits, both planes on their own ports,
 * multipart and octet-stream uploads streamed to the backend, downloads,
 * a chunked Connect stream, and pause / resume / metrics.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connect_frame.h"
#include "e2b_server.h"
#include "cube_test.h"

/* --- backend: sandbox "7" (token "tok"), files in memory --- */

static char stored[4][64];
static char stored_data[4][256];
static size_t stored_len[4];
static int nstored, creates, pauses, resumes;
static bool paused7;

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

static int t_metrics(void *be, const char *id, struct e2b_metrics *out)
{
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

static int t_create(void *be, const struct e2b_new_sandbox *r,
		    struct e2b_sandbox *out, char *msg)
{
	creates++;
	return t_get(be, "7", out);
}

struct e2b_file {
	int slot;
	size_t off;
	bool reading;
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

static int t_file_write_chunk(struct e2b_file *f, const void *buf, size_t len)
{
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
};

static int t_proc_start(void *be, const char *id, const struct e2b_start *req,
			struct e2b_proc **out, char *msg)
{
	*out = calloc(1, sizeof(**out));
	return 0;
}

static int t_proc_next(struct e2b_proc *p, struct e2b_event *ev, int ms)
{
	memset(ev, 0, sizeof(*ev));
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
	.create = t_create,
	.pause = t_pause,
	.resume = t_resume,
	.metrics = t_metrics,
	.snapshot = t_snapshot,
	.list_snapshots = t_list_snapshots,
	.file_write = t_file_write,
	.file_write_chunk = t_file_write_chunk,
	.file_close = t_file_close,
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
	ASSERT_EQ(status_of(r), 401);
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

TEST_MAIN()
