// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend_files.c: the E2B backend's files: stat, list, mkdir,
 * move, remove, downloads and uploads, through the guest agent.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_client.h"
#include "cube_audit.h"
#include "cube_backend_int.h"
#include "cube_runtime.h"

#define FILE_MAX	(256u << 20)	/* bytes of one download or upload */
/* entries of one listing (every level of a deep one together) */
#define LIST_MAX	10000

/* --- files --- */

static int agent_for_id(uint64_t id, struct cube_agent **a)
{
	int ret = cube_sandbox_agent(id, a);

	if (ret)
		return ret == -ENOENT ? -ECONNREFUSED : ret;
	cube_agent_set_timeout(*a, 30000);
	return 0;
}

static int agent_for(struct cube_backend *b, const char *sid,
		     struct cube_agent **a)
{
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?: agent_for_id(id, a);
}

/*
 * A path relative to the user's home becomes absolute; "~", "~/...", "."
 * and "./..." name the home too, as in envd.  envd always names the user
 * ("" only from another caller: root).
 */
static int resolve(const char *user, const char *path, char *out, size_t len)
{
	char home[E2B_USER_MAX + 8];
	int n;

	if (path[0] == '/') {
		n = snprintf(out, len, "%s", path);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	if (!user[0] || !strcmp(user, "root"))
		snprintf(home, sizeof(home), "/root");
	else
		snprintf(home, sizeof(home), "/home/%s", user);
	if ((path[0] == '~' || path[0] == '.') && (!path[1] || path[1] == '/'))
		path += path[1] ? 2 : 1;
	n = snprintf(out, len, "%s%s%s", home, path[0] ? "/" : "", path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* what @a creates from now on is @user's (root's for "") */
/*
 * The behaviour log's line of a file operation through the API: the path
 * (and where it went, for a move), the size, whether it worked; never the
 * contents.
 */
static void audit_file(const char *sid, const char *event, const char *user,
		       const char *path, const char *to, int64_t bytes,
		       int ret)
{
	struct json_object *f = json_object_new_object();

	if (!f)
		return;
	json_object_object_add(f, "path", cube_audit_str(path));
	if (to)
		json_object_object_add(f, "to", cube_audit_str(to));
	if (bytes >= 0)
		json_object_object_add(f, "bytes", json_object_new_int64(bytes));
	json_object_object_add(f, "user", cube_audit_str(user));
	json_object_object_add(f, "ok", json_object_new_boolean(!ret));
	if (ret)
		json_object_object_add(f, "error",
				       json_object_new_string(strerror(-ret)));
	cube_audit(sid, event, "api", f);
}

static int own_as(struct cube_agent *a, const char *user)
{
	return cube_agent_set_owner(a, user[0] ? user : NULL);
}

static void owner_name(uint32_t uid, char *buf, size_t len)
{
	if (uid == 0)
		snprintf(buf, len, "root");
	else
		snprintf(buf, len, "%u", uid);
}

/* "key=value\n" lines (what the agent keeps) to pairs; bad lines skipped */
static int meta_parse(const char *text, struct e2b_kvs *kvs)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n'), *eq;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *k;
		int ret;

		eq = memchr(line, '=', len);
		if (eq && eq != line) {
			k = strndup(line, len);
			if (!k)
				return -ENOMEM;
			k[eq - line] = '\0';
			ret = e2b_kvs_add(kvs, k, k + (eq - line) + 1);
			free(k);
			if (ret)
				return ret;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* pairs to "key=value\n" lines; NULL for none (or no memory: -ENOMEM) */
static int meta_text(const struct e2b_kvs *kvs, char **out)
{
	size_t i, len = 1;
	char *s, *p;

	*out = NULL;
	if (!kvs || !kvs->n)
		return 0;
	for (i = 0; i < kvs->n; i++)
		len += strlen(kvs->v[i].key) + strlen(kvs->v[i].value) + 2;
	s = p = malloc(len);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < kvs->n; i++)
		p += sprintf(p, "%s=%s\n", kvs->v[i].key, kvs->v[i].value);
	*out = s;
	return 0;
}

static int fill_entry(struct e2b_entry *e, const char *path, const char *name,
		      const struct cube_agent_stat *st)
{
	memset(e, 0, sizeof(*e));
	if (st->meta && meta_parse(st->meta, &e->metadata)) {
		e2b_kvs_free(&e->metadata);
		return -ENOMEM;
	}
	e->path = strdup(path);
	e->name = strdup(name);
	if (!e->path || !e->name) {
		e2b_entry_free(e, 1);
		return -ENOMEM;
	}
	e->type = st->type == CUBE_FTYPE_FILE ? E2B_FT_FILE :
		  st->type == CUBE_FTYPE_DIR ? E2B_FT_DIR :
		  st->type == CUBE_FTYPE_SYMLINK ? E2B_FT_SYMLINK : E2B_FT_UNSPEC;
	e->size = st->size;
	e->mode = st->mode;
	e->mtime = st->mtime_ns / 1000000000ULL;
	owner_name(st->uid, e->owner, sizeof(e->owner));
	owner_name(st->gid, e->group, sizeof(e->group));
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : p;
}

static int stat_entry(struct cube_agent *a, const char *path,
		      struct e2b_entry *out)
{
	struct cube_agent_stat st;
	int ret = cube_agent_stat(a, path, &st);

	return ret ? ret : fill_entry(out, path, base_name(path), &st);
}

static void agent_msg(struct cube_agent *a, int ret, char *msg)
{
	if (ret && msg && ret != -ENOENT && ret != -EEXIST)
		snprintf(msg, E2B_MSG_MAX, "%s", cube_agent_error(a));
}

int cube_be_fs_stat(void *be, const char *sid, const char *user,
		    const char *path, struct e2b_entry *out, char *msg)
{
	struct cube_agent *a;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &a);
	if (ret)
		return ret;
	ret = stat_entry(a, p, out);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

struct list_ctx {
	struct cube_agent *a;
	const char *dir;
	struct e2b_entry *v;
	size_t n, cap;
	int err;
	char **subdirs;			/* of the directory being listed */
	size_t nsub;
};

static int list_one(void *arg, const char *name,
		    const struct cube_agent_stat *st)
{
	struct list_ctx *c = arg;
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s%s%s", c->dir,
		     strcmp(c->dir, "/") ? "/" : "", name) >= (int)sizeof(path))
		return 0;
	/* a guest's directory of a million files costs the host nothing */
	if (c->n >= LIST_MAX)
		return c->err = -ENOSPC;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 32;
		void *nv = realloc(c->v, cap * sizeof(*c->v));

		if (!nv)
			return c->err = -ENOMEM;
		c->v = nv;
		c->cap = cap;
	}
	if (fill_entry(&c->v[c->n], path, name, st))
		return c->err = -ENOMEM;
	c->n++;
	if (st->type == CUBE_FTYPE_DIR && c->subdirs) {
		char **ns = realloc(c->subdirs, (c->nsub + 1) * sizeof(*ns));

		if (!ns)
			return c->err = -ENOMEM;
		c->subdirs = ns;
		ns[c->nsub] = strdup(path);
		if (!ns[c->nsub])
			return c->err = -ENOMEM;
		c->nsub++;
	}
	return 0;
}

static int list_dir(struct list_ctx *c, const char *dir, unsigned int depth)
{
	size_t nsub, i;
	char **subs;
	int ret;

	c->dir = dir;
	c->subdirs = depth > 1 ? calloc(1, sizeof(*c->subdirs)) : NULL;
	c->nsub = 0;
	ret = cube_agent_list(c->a, dir, list_one, c);
	subs = c->subdirs;
	nsub = c->nsub;
	c->subdirs = NULL;
	if (c->err)
		ret = c->err;
	for (i = 0; !ret && i < nsub; i++)
		ret = list_dir(c, subs[i], depth - 1);
	for (i = 0; i < nsub; i++)
		free(subs[i]);
	free(subs);
	return ret;
}

int cube_be_fs_list(void *be, const char *sid, const char *user,
		    const char *path, unsigned int depth,
		    struct e2b_entry **out, size_t *n, char *msg)
{
	struct list_ctx c = { 0 };
	struct cube_agent_stat st;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &c.a);
	if (ret)
		return ret;
	ret = cube_agent_stat(c.a, p, &st);
	if (!ret && st.type != CUBE_FTYPE_DIR)
		ret = -ENOTDIR;
	if (!ret)
		ret = list_dir(&c, p, depth);
	if (ret == -ENOSPC && c.n >= LIST_MAX)
		snprintf(msg, E2B_MSG_MAX,
			 "more than %d entries: list a narrower path or less deep",
			 LIST_MAX);
	else
		agent_msg(c.a, ret, msg);
	cube_agent_close(c.a);
	if (ret) {
		e2b_entry_free(c.v, c.n);
		free(c.v);
		return ret;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

int cube_be_fs_mkdir(void *be, const char *sid, const char *user,
		     const char *path, struct e2b_entry *out, char *msg)
{
	struct cube_agent_stat st;
	struct cube_agent *a;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &a);
	if (ret)
		return ret;
	ret = own_as(a, user) ?: cube_agent_stat(a, p, &st);
	if (!ret)
		ret = -EEXIST;
	else if (ret == -ENOENT)
		ret = cube_agent_mkdir(a, p, 0755, true);
	audit_file(sid, "dir_make", user, p, NULL, -1, ret);
	if (!ret)
		ret = stat_entry(a, p, out);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

int cube_be_fs_move(void *be, const char *sid, const char *user,
		    const char *from, const char *to, struct e2b_entry *out,
		    char *msg)
{
	char pf[PATH_MAX], pt[PATH_MAX];
	struct cube_agent *a;
	int ret;

	ret = resolve(user, from, pf, sizeof(pf)) ?:
	      resolve(user, to, pt, sizeof(pt)) ?: agent_for(be, sid, &a);
	if (ret)
		return ret;
	ret = cube_agent_rename(a, pf, pt);
	audit_file(sid, "file_move", user, pf, pt, -1, ret);
	if (!ret)
		ret = stat_entry(a, pt, out);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

int cube_be_fs_remove(void *be, const char *sid, const char *user,
		      const char *path, char *msg)
{
	struct cube_agent *a;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &a);
	if (ret)
		return ret;
	ret = cube_agent_remove(a, p, true);
	audit_file(sid, "file_remove", user, p, NULL, -1, ret);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

/*
 * A transfer streams through a ring of XFER_BUF bytes between the HTTP
 * connection's thread and a thread of its own that talks to the agent, so
 * cubed holds that much of a file whatever its size; the side that is
 * ahead waits for the other.  A download's thread reads the file into the
 * ring; an upload's writes the ring to the file, which the agent replaces
 * whole at the end only (an upload given up midway leaves nothing).
 */
#define XFER_BUF	(256u << 10)

struct e2b_file {
	uint64_t id;			/* the module sandbox */
	char sid[E2B_ID_MAX + 1];	/* the sandbox as the API named it */
	char path[PATH_MAX];
	char user[E2B_USER_MAX + 1];	/* whose the file becomes */
	char *meta;			/* "key=value\n" lines, or NULL */
	bool write;
	struct cube_agent *a;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned char *ring;
	size_t head, fill;		/* where the bytes held start, how many */
	bool eof;			/* upload: the client sent everything */
	bool cancel;			/* the HTTP side gave up */
	bool done;			/* the agent side ended, with @ret */
	int ret;
	uint64_t bytes;			/* through the ring so far */
};

static struct e2b_file *file_new(void)
{
	struct e2b_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->ring = malloc(XFER_BUF);
	if (!f->ring) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	return f;
}

static void file_free(struct e2b_file *f)
{
	if (f->a)
		cube_agent_close(f->a);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f->ring);
	free(f->meta);
	free(f);
}

/* Copy up to @len bytes into the ring; how many.  Locked. */
static size_t ring_put(struct e2b_file *f, const unsigned char *src, size_t len)
{
	size_t done = 0;

	while (done < len && f->fill < XFER_BUF) {
		size_t tail = (f->head + f->fill) % XFER_BUF;
		/* the free run after the tail: up to the end, or to the head */
		size_t n = tail >= f->head ? XFER_BUF - tail : f->head - tail;

		if (n > len - done)
			n = len - done;
		memcpy(f->ring + tail, src + done, n);
		f->fill += n;
		done += n;
	}
	return done;
}

/* Take up to @len bytes out of the ring; how many.  Locked. */
static size_t ring_get(struct e2b_file *f, unsigned char *dst, size_t len)
{
	size_t done = 0;

	while (done < len && f->fill) {
		size_t n = XFER_BUF - f->head;

		if (n > f->fill)
			n = f->fill;
		if (n > len - done)
			n = len - done;
		memcpy(dst + done, f->ring + f->head, n);
		f->head = (f->head + n) % XFER_BUF;
		f->fill -= n;
		done += n;
	}
	return done;
}

/* --- downloads --- */

/* the agent's bytes into the ring, waiting while it is full */
static int download_sink(void *ctx, const void *buf, size_t len)
{
	struct e2b_file *f = ctx;
	const unsigned char *p = buf;

	pthread_mutex_lock(&f->lock);
	while (len) {
		size_t n;

		while (f->fill == XFER_BUF && !f->cancel)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->cancel) {
			pthread_mutex_unlock(&f->lock);
			return -ECANCELED;
		}
		n = ring_put(f, p, len);
		p += n;
		len -= n;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static void *download_thread(void *arg)
{
	struct e2b_file *f = arg;
	int ret = cube_agent_read_file(f->a, f->path, download_sink, f, NULL);

	pthread_mutex_lock(&f->lock);
	f->ret = ret;
	f->done = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int cube_be_file_read(void *be, const char *sid, const char *user,
		      const char *path, struct e2b_file **out, int64_t *size,
		      char *msg)
{
	struct cube_agent_stat st;
	struct e2b_file *f;
	int ret;

	f = file_new();
	if (!f)
		return -ENOMEM;
	snprintf(f->sid, sizeof(f->sid), "%s", sid);
	snprintf(f->user, sizeof(f->user), "%s", user);
	ret = resolve(user, path, f->path, sizeof(f->path)) ?:
	      agent_for(be, sid, &f->a);
	if (ret) {
		file_free(f);
		return ret;
	}
	ret = cube_agent_stat(f->a, f->path, &st);
	if (!ret && st.type == CUBE_FTYPE_DIR)
		ret = -EISDIR;
	if (!ret && st.size > FILE_MAX)
		ret = -EFBIG;
	if (!ret) {
		ret = -pthread_create(&f->thread, NULL, download_thread, f);
		f->started = !ret;
	}
	if (!ret) {
		/*
		 * Until the first bytes: a file that cannot be read is
		 * answered with its error, not a broken 200.
		 */
		pthread_mutex_lock(&f->lock);
		while (!f->fill && !f->done)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->done && !f->fill)
			ret = f->ret;
		pthread_mutex_unlock(&f->lock);
	}
	if (ret == -EFBIG)
		snprintf(msg, E2B_MSG_MAX, "the file is larger than %u MiB",
			 FILE_MAX >> 20);
	else
		agent_msg(f->a, ret, msg);
	if (ret) {
		audit_file(sid, "file_read", user, f->path, NULL, 0, ret);
		if (f->started)
			pthread_join(f->thread, NULL);
		file_free(f);
		return ret;
	}
	*size = st.size;
	*out = f;
	return 0;
}

ssize_t cube_be_file_read_chunk(struct e2b_file *f, void *buf, size_t len)
{
	ssize_t n;

	pthread_mutex_lock(&f->lock);
	while (!f->fill && !f->done)
		pthread_cond_wait(&f->cond, &f->lock);
	if (f->fill) {
		n = ring_get(f, buf, len);
		f->bytes += n;
		pthread_cond_broadcast(&f->cond);
	} else {
		n = f->ret;	/* 0 at the end */
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* --- uploads --- */

/* the ring's bytes to the agent, waiting while it is empty */
static ssize_t upload_source(void *ctx, void *buf, size_t len)
{
	struct e2b_file *f = ctx;
	ssize_t n;

	pthread_mutex_lock(&f->lock);
	while (!f->fill && !f->eof && !f->cancel)
		pthread_cond_wait(&f->cond, &f->lock);
	if (f->cancel)
		n = -ECANCELED;
	else
		n = ring_get(f, buf, len);	/* 0: the end */
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return n;
}

static void *upload_thread(void *arg)
{
	struct e2b_file *f = arg;
	int ret = cube_agent_write_file_meta(f->a, f->path, 0644, 0, f->meta,
					     upload_source, f);

	pthread_mutex_lock(&f->lock);
	f->ret = ret;
	f->done = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int cube_be_file_write(void *be, const char *sid, const char *user,
		       const char *path, struct e2b_file **out, char *msg)
{
	return cube_be_file_write_meta(be, sid, user, path, NULL, out, msg);
}

int cube_be_file_write_meta(void *be, const char *sid, const char *user,
			    const char *path, const struct e2b_kvs *meta,
			    struct e2b_file **out, char *msg)
{
	struct e2b_file *f = file_new();
	char dir[PATH_MAX], *slash;
	int ret;

	if (!f)
		return -ENOMEM;
	ret = cube_be_sandbox_id(be, sid, &f->id) ?:
	      resolve(user, path, f->path, sizeof(f->path)) ?:
	      meta_text(meta, &f->meta);
	if (!ret && f->meta && strlen(f->meta) >= CUBE_AGENT_MAX_STRING) {
		snprintf(msg, E2B_MSG_MAX,
			 "the file's metadata takes more than %d bytes",
			 CUBE_AGENT_MAX_STRING - 1);
		ret = -E2BIG;
	}
	if (ret) {
		file_free(f);
		return ret;
	}
	f->write = true;
	snprintf(f->user, sizeof(f->user), "%s", user);
	snprintf(f->sid, sizeof(f->sid), "%s", sid);
	/* the user's, in a directory made for it, written as it comes */
	ret = agent_for_id(f->id, &f->a) ?: own_as(f->a, f->user);
	snprintf(dir, sizeof(dir), "%s", f->path);
	slash = strrchr(dir, '/');
	if (!ret && slash && slash != dir) {
		*slash = '\0';
		ret = cube_agent_mkdir(f->a, dir, 0755, true);
	}
	if (!ret) {
		ret = -pthread_create(&f->thread, NULL, upload_thread, f);
		f->started = !ret;
	}
	if (ret) {
		if (f->a)
			agent_msg(f->a, ret, msg);
		audit_file(sid, "file_write", user, f->path, NULL, 0, ret);
		file_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int cube_be_file_write_chunk(struct e2b_file *f, const void *buf,
			     size_t len)
{
	const unsigned char *p = buf;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (f->bytes + len > FILE_MAX)
		ret = -EFBIG;
	while (!ret && len) {
		size_t n;

		while (f->fill == XFER_BUF && !f->done)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->done) {
			/* the agent refused it early (a full disk, say) */
			ret = f->ret ? f->ret : -EIO;
			break;
		}
		n = ring_put(f, p, len);
		p += n;
		len -= n;
		f->bytes += n;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int cube_be_file_close(struct e2b_file *f, bool commit,
		       struct e2b_entry *entry, char *msg)
{
	int ret = 0;

	if (f->started) {
		pthread_mutex_lock(&f->lock);
		if (f->write && commit)
			f->eof = true;
		else
			f->cancel = true;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->thread, NULL);
	}
	if (f->write && commit) {
		ret = f->ret;
		audit_file(f->sid, "file_write", f->user, f->path, NULL,
			   f->bytes, ret);
		if (!ret && entry)
			ret = stat_entry(f->a, f->path, entry);
		agent_msg(f->a, ret, msg);
	} else if (!f->write) {
		audit_file(f->sid, "file_read", f->user, f->path, NULL,
			   f->bytes, f->ret);
	}
	file_free(f);
	return ret;
}
