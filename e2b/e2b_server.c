// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_server.c: libmicrohttpd glue of the E2B API.  Turns each request into
 * a struct e2b_request (reading JSON bodies up to E2B_BODY_MAX, streaming
 * uploads to the backend as they arrive), and each struct e2b_response into
 * an MHD response.  Every connection has its own thread, so streamed
 * responses may block while they wait for a process's output.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>
#include <zlib.h>

#include "e2b_forward.h"
#include "e2b_server.h"

struct e2b_server {
	const struct e2b_api *api;
	struct MHD_Daemon *d[2];	/* indexed by enum e2b_plane */
	uint16_t port[2];
	size_t body_bytes;		/* request bodies held (atomic) */
	uint64_t body_dropped;		/* bytes of refused ones read (atomic) */
};

struct plane_cls {
	struct e2b_server *srv;
	enum e2b_plane plane;
};

/* per-request state */
struct conn {
	struct e2b_server *srv;
	enum e2b_plane plane;
	char *body;
	size_t len, cap;		/* cap: counted in srv->body_bytes */
	bool too_large;
	bool drop_body;			/* refused whatever it says: not kept */
	/* uploads */
	bool upload;
	bool failed;
	uint64_t upload_bytes;
	struct e2b_upload *up;
	struct MHD_PostProcessor *pp;
	char *query_path;		/* POST /files?path= */
	bool part_open;			/* multipart: a file is open */
	uint64_t part_bytes;		/* of the open part so far */
	char *part_name;		/* its file name (NULL: none) */
	struct e2b_response err;	/* the answer once an upload failed */
	struct e2b_envd_ctx ec;
	/* Content-Encoding: gzip */
	z_stream *gz;
	bool gz_end;			/* a member ended, nothing after it yet */
	uint64_t gz_in;			/* compressed bytes so far */
	uint64_t gz_out;		/* and what they inflated to */
};

static const char *hdr_lookup(void *ctx, const char *name)
{
	return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, name);
}

static const char *query_lookup(void *ctx, const char *name)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

struct each {
	void (*fn)(void *arg, const char *name, const char *value);
	void *arg;
};

static enum MHD_Result each_value(void *cls, enum MHD_ValueKind kind,
				  const char *key, const char *value)
{
	struct each *e = cls;

	e->fn(e->arg, key, value);
	return MHD_YES;
}

static void each_of(void *ctx, enum MHD_ValueKind kind,
		    void (*fn)(void *, const char *, const char *), void *arg)
{
	struct each e = { fn, arg };

	MHD_get_connection_values(ctx, kind, each_value, &e);
}

static void each_header(void *ctx,
			void (*fn)(void *, const char *, const char *),
			void *arg)
{
	each_of(ctx, MHD_HEADER_KIND, fn, arg);
}

static void each_query(void *ctx,
		       void (*fn)(void *, const char *, const char *),
		       void *arg)
{
	each_of(ctx, MHD_GET_ARGUMENT_KIND, fn, arg);
}

static int client_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci ? ci->connect_fd : -1;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct e2b_stream *s = cls;
	ssize_t n = s->read(s, buf, max);

	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

static void stream_free(void *cls)
{
	struct e2b_stream *s = cls;

	s->free(s);
}

static enum MHD_Result queue(struct MHD_Connection *c, struct e2b_response *r)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;

	if (r->stream) {
		uint64_t size = r->len == (size_t)-1 || !r->len ?
				MHD_SIZE_UNKNOWN : r->len;

		mr = MHD_create_response_from_callback(size, 32 * 1024,
						       stream_reader, r->stream,
						       stream_free);
		if (!mr) {
			e2b_response_free(r);
			return MHD_NO;
		}
		r->stream = NULL;	/* MHD owns it now */
	} else {
		mr = MHD_create_response_from_buffer(r->len, r->body,
						     MHD_RESPMEM_MUST_FREE);
		if (!mr) {
			e2b_response_free(r);
			return MHD_NO;
		}
		r->body = NULL;
	}
	if (r->content_type)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
					r->content_type);
	if (r->next_token)
		MHD_add_response_header(mr, "X-Next-Token", r->next_token);
	ret = MHD_queue_response(c, r->status ? r->status : 500, mr);
	MHD_destroy_response(mr);
	e2b_response_free(r);
	return ret;
}

static void fail_upload(struct conn *cn, struct e2b_response *resp)
{
	if (!cn->failed) {
		cn->err = *resp;
		memset(resp, 0, sizeof(*resp));
	} else {
		e2b_response_free(resp);
	}
	cn->failed = true;
}

/*
 * Whether a call at offset 0 goes on with the open part.  libmicrohttpd
 * calls with offset 0 and no data when a part's head has come but its
 * first bytes have not (a body arriving in pieces; a part of a few bytes
 * waits for the boundary after it): the data then comes at offset 0 too.
 * Only a part that has had no data yet, under the same file name, goes on.
 */
static bool same_part(const struct conn *cn, const char *filename)
{
	if (!cn->part_open || cn->part_bytes)
		return false;
	if (!filename || !cn->part_name)
		return !filename && !cn->part_name;
	return !strcmp(filename, cn->part_name);
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind,
				 const char *key, const char *filename,
				 const char *content_type,
				 const char *transfer_encoding,
				 const char *data, uint64_t off, size_t size)
{
	struct conn *cn = cls;
	struct e2b_response r = { 0 };

	if (cn->failed)
		return MHD_NO;
	if (!key || strcmp(key, "file"))
		return MHD_YES;		/* other form fields are ignored */
	if (off == 0 && !same_part(cn, filename)) {
		/* a new part: finish the previous file, open the next */
		if (cn->part_open && e2b_upload_close(cn->up, true, &r)) {
			fail_upload(cn, &r);
			return MHD_NO;
		}
		cn->part_open = false;
		free(cn->part_name);
		cn->part_name = filename ? strdup(filename) : NULL;
		cn->part_bytes = 0;
		if (filename && !cn->part_name) {
			e2b_reply_error(&r, 500, "out of memory");
			fail_upload(cn, &r);
			return MHD_NO;
		}
		/* the query's path wins; the part's file name otherwise */
		if (e2b_upload_open(cn->up, cn->query_path ? cn->query_path :
				    filename, &r)) {
			fail_upload(cn, &r);
			return MHD_NO;
		}
		cn->part_open = true;
	}
	if (size) {
		cn->part_bytes += size;
		cn->upload_bytes += size;
		if (cn->upload_bytes > E2B_UPLOAD_MAX) {
			e2b_reply_error(&r, 413, "upload too large");
			fail_upload(cn, &r);
			return MHD_NO;
		}
		if (e2b_upload_write(cn->up, data, size, &r)) {
			fail_upload(cn, &r);
			return MHD_NO;
		}
	}
	return MHD_YES;
}

/* the body held so far goes, and out of the server's count */
static void drop_body(struct conn *cn)
{
	__atomic_sub_fetch(&cn->srv->body_bytes, cn->cap, __ATOMIC_RELAXED);
	free(cn->body);
	cn->body = NULL;
	cn->len = cn->cap = 0;
}

static void free_conn(struct conn *cn)
{
	if (!cn)
		return;
	if (cn->pp)
		MHD_destroy_post_processor(cn->pp);
	if (cn->gz) {
		inflateEnd(cn->gz);
		free(cn->gz);
	}
	e2b_upload_free(cn->up);
	free(cn->query_path);
	free(cn->part_name);
	e2b_response_free(&cn->err);
	drop_body(cn);
	free(cn);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	free_conn(*con_cls);
	*con_cls = NULL;
}

/* what one upload's X-Metadata-* headers may hold */
#define META_MAX_KEYS	32
#define META_MAX_KEY	128
#define META_MAX_VALUE	1024
#define META_PREFIX	"X-Metadata-"

struct meta_scan {
	struct e2b_kvs kvs;
	char err[E2B_MSG_MAX];
};

/* an HTTP token character (RFC 9110), what the SDK allows in a key */
static bool token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static enum MHD_Result meta_header(void *cls, enum MHD_ValueKind kind,
				   const char *name, const char *value)
{
	struct meta_scan *ms = cls;
	const char *key;
	size_t i;

	if (ms->err[0] || strncasecmp(name, META_PREFIX, strlen(META_PREFIX)))
		return MHD_YES;
	key = name + strlen(META_PREFIX);
	for (i = 0; key[i]; i++)
		if (!token_char(key[i]))
			break;
	if (!key[0] || key[i] || i > META_MAX_KEY) {
		snprintf(ms->err, sizeof(ms->err),
			 "metadata key '%.64s': 1..%d HTTP token characters",
			 key, META_MAX_KEY);
		return MHD_NO;
	}
	for (i = 0; value[i]; i++)
		if (value[i] < 0x20 || value[i] > 0x7e)
			break;
	if (value[i] || i > META_MAX_VALUE) {
		snprintf(ms->err, sizeof(ms->err),
			 "metadata value of '%.64s': at most %d printable ASCII characters",
			 key, META_MAX_VALUE);
		return MHD_NO;
	}
	if (e2b_kvs_get(&ms->kvs, key)) {
		snprintf(ms->err, sizeof(ms->err),
			 "metadata key '%.64s' given twice", key);
		return MHD_NO;
	}
	if (ms->kvs.n >= META_MAX_KEYS) {
		snprintf(ms->err, sizeof(ms->err),
			 "at most %d metadata keys", META_MAX_KEYS);
		return MHD_NO;
	}
	if (e2b_kvs_add(&ms->kvs, key, value)) {
		snprintf(ms->err, sizeof(ms->err), "out of memory");
		return MHD_NO;
	}
	return MHD_YES;
}

/* X-Metadata-<key>: <value>: what every file of the upload keeps */
static int upload_metadata(struct conn *cn, struct MHD_Connection *c,
			   struct e2b_response *resp)
{
	struct meta_scan ms = { 0 };
	int ret;

	MHD_get_connection_values(c, MHD_HEADER_KIND, meta_header, &ms);
	if (ms.err[0]) {
		e2b_kvs_free(&ms.kvs);
		e2b_reply_error(resp, 400, "%s", ms.err);
		return -EINVAL;
	}
	ret = e2b_upload_set_meta(cn->up, &ms.kvs, resp);
	e2b_kvs_free(&ms.kvs);
	return ret;
}

/*
 * Content-Encoding of an upload: none or "identity", or "gzip" (the SDK's
 * files.write(..., {gzip: true})), inflated as it arrives.
 */
static int upload_encoding(struct conn *cn, struct MHD_Connection *c,
			   struct e2b_response *resp)
{
	const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					MHD_HTTP_HEADER_CONTENT_ENCODING);

	if (!ce || !ce[0] || !strcasecmp(ce, "identity"))
		return 0;
	if (strcasecmp(ce, "gzip") && strcasecmp(ce, "x-gzip")) {
		e2b_reply_error(resp, 400,
				"unsupported Content-Encoding '%.64s' (gzip or identity)",
				ce);
		return -EINVAL;
	}
	cn->gz = calloc(1, sizeof(*cn->gz));
	/* 16 + window bits: a gzip header and trailer, not zlib's */
	if (!cn->gz || inflateInit2(cn->gz, 16 + MAX_WBITS) != Z_OK) {
		free(cn->gz);
		cn->gz = NULL;
		e2b_reply_error(resp, 500, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/*
 * POST /files.  The SDK sends multipart/form-data with one "file" part per
 * file (the part's file name is the path when the query has none), or, for
 * streams, the raw bytes as application/octet-stream with ?path=.
 */
static int upload_start(struct conn *cn, struct MHD_Connection *c,
			const struct e2b_api *api, struct e2b_request *req,
			struct e2b_response *resp)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *user = query_lookup(c, "username");
	const char *path = query_lookup(c, "path");

	if (e2b_envd_prepare(api, req, &cn->ec, resp, false))
		return -EACCES;
	if (user && user[0]) {
		if (!e2b_user_valid(user)) {
			e2b_reply_error(resp, 401, "invalid user");
			return -EINVAL;
		}
		strcpy(cn->ec.user, user);
	}
	if (path && path[0]) {
		cn->query_path = strdup(path);
		if (!cn->query_path) {
			e2b_reply_error(resp, 500, "out of memory");
			return -ENOMEM;
		}
	}
	cn->up = e2b_upload_begin(api, &cn->ec);
	if (!cn->up) {
		e2b_reply_error(resp, 500, "out of memory");
		return -ENOMEM;
	}
	if (upload_metadata(cn, c, resp) || upload_encoding(cn, c, resp))
		return -EINVAL;
	if (ct && !strncasecmp(ct, "multipart/form-data", 19)) {
		cn->pp = MHD_create_post_processor(c, 64 * 1024, post_iter, cn);
		if (!cn->pp) {
			e2b_reply_error(resp, 400, "malformed multipart body");
			return -EINVAL;
		}
		return 0;
	}
	if (ct && !strncasecmp(ct, E2B_CT_OCTET, strlen(E2B_CT_OCTET)))
		return e2b_upload_open(cn->up, cn->query_path, resp);
	e2b_reply_error(resp, 400, "unsupported upload content type");
	return -EINVAL;
}

/* the upload's (inflated) bytes */
static void upload_feed(struct conn *cn, const char *data, size_t size)
{
	struct e2b_response r = { 0 };

	if (cn->failed)
		return;
	if (cn->pp) {
		if (MHD_post_process(cn->pp, data, size) != MHD_YES &&
		    !cn->failed) {
			e2b_reply_error(&r, 400, "malformed multipart body");
			fail_upload(cn, &r);
		}
		return;
	}
	cn->upload_bytes += size;
	if (cn->upload_bytes > E2B_UPLOAD_MAX) {
		e2b_reply_error(&r, 413, "upload too large");
		fail_upload(cn, &r);
	} else if (e2b_upload_write(cn->up, data, size, &r)) {
		fail_upload(cn, &r);
	}
}

/*
 * Inflate a gzip body as it comes, members one after another (as gzip
 * itself reads them).  What it inflates to is bounded by E2B_INFLATE_MAX:
 * a body that would inflate beyond it is refused (413) and nothing of it
 * is written.
 */
static void upload_inflate(struct conn *cn, const char *data, size_t size)
{
	struct e2b_response r = { 0 };
	unsigned char out[64 * 1024];
	z_stream *z = cn->gz;
	int zr;

	cn->gz_in += size;
	if (cn->gz_in > E2B_UPLOAD_MAX) {
		e2b_reply_error(&r, 413, "upload too large");
		fail_upload(cn, &r);
		return;
	}
	z->next_in = (unsigned char *)data;
	z->avail_in = size;
	while (!cn->failed && z->avail_in) {
		if (cn->gz_end) {
			/* another member follows */
			inflateReset(z);
			cn->gz_end = false;
		}
		z->next_out = out;
		z->avail_out = sizeof(out);
		zr = inflate(z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END &&
		    !(zr == Z_BUF_ERROR && z->avail_out)) {
			e2b_reply_error(&r, 400, "malformed gzip body: %s",
					z->msg ? z->msg : "inflate failed");
			fail_upload(cn, &r);
			return;
		}
		cn->gz_out += sizeof(out) - z->avail_out;
		if (cn->gz_out > E2B_INFLATE_MAX) {
			e2b_reply_error(&r, 413,
					"the gzip body inflates to more than %llu bytes",
					(unsigned long long)E2B_INFLATE_MAX);
			fail_upload(cn, &r);
			return;
		}
		if (sizeof(out) - z->avail_out)
			upload_feed(cn, (char *)out, sizeof(out) - z->avail_out);
		if (zr == Z_STREAM_END)
			cn->gz_end = true;
		else if (zr == Z_BUF_ERROR)
			break;
	}
}

static enum MHD_Result upload_data(struct conn *cn, struct MHD_Connection *c,
				   const char *data, size_t size)
{
	if (cn->failed)
		return MHD_YES;		/* drain; answer at the end */
	if (cn->gz)
		upload_inflate(cn, data, size);
	else
		upload_feed(cn, data, size);
	return MHD_YES;
}

static enum MHD_Result upload_finish(struct conn *cn, struct MHD_Connection *c)
{
	struct e2b_response r = { 0 };

	/* a gzip body that stops before its end (or holds nothing) */
	if (!cn->failed && cn->gz && !cn->gz_end) {
		e2b_reply_error(&r, 400, "malformed gzip body: it ends early");
		fail_upload(cn, &r);
	}
	if (!cn->failed && cn->pp) {
		MHD_destroy_post_processor(cn->pp);
		cn->pp = NULL;
	}
	if (!cn->failed && e2b_upload_close(cn->up, true, &r) &&
	    r.status)
		fail_upload(cn, &r);
	if (cn->failed) {
		e2b_upload_free(cn->up);	/* discards the open file */
		cn->up = NULL;
		return queue(c, &cn->err);
	}
	e2b_upload_reply(cn->up, &r);
	return queue(c, &r);
}

/* whether a request carries a body at all (RFC 9112: a length or chunks) */
static bool has_body(struct MHD_Connection *c)
{
	const char *len = hdr_lookup(c, "Content-Length");

	return hdr_lookup(c, "Transfer-Encoding") || (len && strcmp(len, "0"));
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *data,
			       size_t *size, void **con_cls)
{
	struct plane_cls *pc = cls;
	struct conn *cn = *con_cls;
	struct e2b_request req = {
		.plane = pc->plane, .method = method, .path = url,
		.header = hdr_lookup, .query = query_lookup, .ctx = c,
		.each_header = each_header, .each_query = each_query,
		.client_fd = client_fd(c),
	};
	struct e2b_response resp = { 0 };

	if (!cn) {
		struct e2b_route rt;

		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return MHD_NO;
		cn->srv = pc->srv;
		cn->plane = pc->plane;
		*con_cls = cn;
		/* not for requests passed on to another port (e2b_forward.h) */
		if (pc->plane == E2B_PLANE_ENVD &&
		    !e2b_forward_port(hdr_lookup(c, "E2b-Sandbox-Port")) &&
		    !e2b_route(pc->plane, method, url, &rt) &&
		    rt.id == E2B_R_FILES_POST) {
			cn->upload = true;
			if (upload_start(cn, c, pc->srv->api, &req, &resp))
				fail_upload(cn, &resp);
		} else if (has_body(c)) {
			/* no key or token: the body is read, never kept */
			cn->drop_body = !e2b_body_wanted(pc->srv->api, &req);
		}
		return MHD_YES;
	}
	if (*size) {
		if (cn->upload) {
			enum MHD_Result r = upload_data(cn, c, data, *size);

			*size = 0;
			return r;
		}
		if (cn->drop_body) {
			__atomic_add_fetch(&cn->srv->body_dropped, *size,
					   __ATOMIC_RELAXED);
			*size = 0;
			return MHD_YES;
		}
		if (!cn->too_large && cn->len + *size > E2B_BODY_MAX) {
			cn->too_large = true;
			drop_body(cn);
		}
		if (!cn->too_large) {
			if (cn->len + *size > cn->cap) {
				size_t cap = cn->len + *size + 4096;
				char *nb = realloc(cn->body, cap);

				if (!nb)
					return MHD_NO;
				__atomic_add_fetch(&cn->srv->body_bytes,
						   cap - cn->cap,
						   __ATOMIC_RELAXED);
				cn->body = nb;
				cn->cap = cap;
			}
			memcpy(cn->body + cn->len, data, *size);
			cn->len += *size;
		}
		*size = 0;
		return MHD_YES;
	}
	if (cn->upload)
		return upload_finish(cn, c);
	req.body = cn->body;
	req.body_len = cn->len;
	req.body_too_large = cn->too_large;
	e2b_dispatch(pc->srv->api, &req, &resp);
	return queue(c, &resp);
}

static int start_one(struct e2b_server *s, const struct e2b_server_config *cfg,
		     enum e2b_plane plane, uint16_t port,
		     struct plane_cls *pc)
{
	const union MHD_DaemonInfo *info;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned int conns = cfg->max_conns ?: E2B_SERVER_CONNS_DEFAULT;
	unsigned int per_client = cfg->max_per_client ?: (conns * 3 + 3) / 4;
	unsigned int idle = cfg->idle_secs ?: E2B_SERVER_IDLE_DEFAULT;

	if (inet_pton(AF_INET, cfg->addr ? cfg->addr : "127.0.0.1",
		      &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons(port);
	pc->srv = s;
	pc->plane = plane;
	errno = 0;
	s->d[plane] = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
		port, NULL, NULL, handler, pc,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_CONNECTION_LIMIT, conns,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		per_client < conns ? per_client : conns,
		MHD_OPTION_CONNECTION_TIMEOUT, idle,
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
		MHD_OPTION_END);
	if (!s->d[plane])
		return errno ? -errno : -EADDRINUSE;
	info = MHD_get_daemon_info(s->d[plane], MHD_DAEMON_INFO_BIND_PORT);
	s->port[plane] = info ? info->port : port;
	return 0;
}

int e2b_server_start(const struct e2b_server_config *cfg,
		     struct e2b_server **out)
{
	struct e2b_server *s;
	struct plane_cls *pcs;
	int ret;

	s = calloc(1, sizeof(*s) + 2 * sizeof(*pcs));
	if (!s)
		return -ENOMEM;
	pcs = (struct plane_cls *)(s + 1);
	s->api = cfg->api;
	ret = start_one(s, cfg, E2B_PLANE_API, cfg->api_port, &pcs[0]);
	if (!ret)
		ret = start_one(s, cfg, E2B_PLANE_ENVD, cfg->envd_port, &pcs[1]);
	if (ret) {
		e2b_server_stop(s);
		return ret;
	}
	*out = s;
	return 0;
}

void e2b_server_bodies(const struct e2b_server *s, size_t *held,
		       uint64_t *dropped)
{
	*held = __atomic_load_n(&s->body_bytes, __ATOMIC_RELAXED);
	*dropped = __atomic_load_n(&s->body_dropped, __ATOMIC_RELAXED);
}

uint16_t e2b_server_port(const struct e2b_server *s, enum e2b_plane plane)
{
	return s->port[plane];
}

void e2b_server_stop(struct e2b_server *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < 2; i++)
		if (s->d[i])
			MHD_stop_daemon(s->d[i]);
	free(s);
}
