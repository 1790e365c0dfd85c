// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend.c: the E2B backend on cube.ko, cube-shim/cube-vmm and the
 * guest agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent_client.h"
#include "cube_backend.h"
#include "cube_proc.h"
#include "cube_runtime.h"
#include "nl_client.h"

#define FILE_MAX	(256u << 20)	/* bytes of one download or upload */

struct sbx {
	struct sbx *next;
	uint64_t id;
	char template_name[CUBE_NAME_MAX];
	time_t started_at;
	time_t end_at;			/* 0: no end */
	struct e2b_kvs metadata;
	struct e2b_kvs env;
	char token[E2B_TOKEN_LEN + 1];
	unsigned int vcpus;
	unsigned int memory_mb;
	struct timespec meta_mtime;	/* of e2b.json when last read or written */
};

struct cube_backend {
	pthread_mutex_t lock;		/* the list and the netlink socket */
	struct cube_nl *nl;
	struct sbx *list;
	struct cube_proc_table *procs;
};

/* --- the metadata file --- */

static void kvs_to_json(struct json_object *o, const char *k,
			const struct e2b_kvs *kvs)
{
	struct json_object *m = json_object_new_object();
	size_t i;

	for (i = 0; m && i < kvs->n; i++)
		json_object_object_add(m, kvs->v[i].key,
				       json_object_new_string(kvs->v[i].value));
	json_object_object_add(o, k, m);
}

static void meta_stat(uint64_t id, struct timespec *out)
{
	char path[PATH_MAX];
	struct stat st;

	memset(out, 0, sizeof(*out));
	if (!cube_sandbox_path(path, sizeof(path), id, "e2b.json") &&
	    !stat(path, &st))
		*out = st.st_mtim;
}

static int meta_save(struct sbx *s)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	struct json_object *o = json_object_new_object();
	const char *str;
	int fd, ret = 0;
	size_t len;

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "end_at", json_object_new_int64(s->end_at));
	json_object_object_add(o, "token", json_object_new_string(s->token));
	kvs_to_json(o, "metadata", &s->metadata);
	kvs_to_json(o, "env", &s->env);
	str = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	if (cube_sandbox_path(path, sizeof(path), s->id, "e2b.json")) {
		json_object_put(o);
		return -ENAMETOOLONG;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
	} else {
		if (write(fd, str, len) != (ssize_t)len)
			ret = -EIO;
		if (close(fd) && !ret)
			ret = -errno;
		if (!ret && rename(tmp, path))
			ret = -errno;
		if (ret)
			unlink(tmp);
	}
	json_object_put(o);
	if (!ret)
		meta_stat(s->id, &s->meta_mtime);
	return ret;
}

static void meta_load(struct sbx *s);

int cube_meta_write_end(uint64_t id, time_t end_at)
{
	struct sbx s = { .id = id };
	int ret = 0;

	/* keep what is there (a token cubed gave out), change the end */
	meta_load(&s);
	s.end_at = end_at;
	if (!s.token[0])
		ret = e2b_token_new(s.token);
	if (!ret)
		ret = meta_save(&s);
	e2b_kvs_free(&s.metadata);
	e2b_kvs_free(&s.env);
	return ret;
}

static void kvs_from_json(struct json_object *o, const char *k,
			  struct e2b_kvs *kvs)
{
	struct json_object *m;

	if (!json_object_object_get_ex(o, k, &m) ||
	    !json_object_is_type(m, json_type_object))
		return;
	json_object_object_foreach(m, key, val) {
		if (json_object_is_type(val, json_type_string))
			e2b_kvs_add(kvs, key, json_object_get_string(val));
	}
}

/* Fill what the file says; a missing or damaged file changes nothing. */
static void meta_load(struct sbx *s)
{
	struct json_object *o, *v;
	char path[PATH_MAX];

	if (cube_sandbox_path(path, sizeof(path), s->id, "e2b.json"))
		return;
	meta_stat(s->id, &s->meta_mtime);
	o = json_object_from_file(path);
	if (!o)
		return;
	if (json_object_object_get_ex(o, "end_at", &v) &&
	    json_object_is_type(v, json_type_int))
		s->end_at = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "token", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) == E2B_TOKEN_LEN)
		strcpy(s->token, json_object_get_string(v));
	kvs_from_json(o, "metadata", &s->metadata);
	kvs_from_json(o, "env", &s->env);
	json_object_put(o);
}

/* --- the list --- */

static void sbx_free(struct sbx *s)
{
	e2b_kvs_free(&s->metadata);
	e2b_kvs_free(&s->env);
	explicit_bzero(s->token, sizeof(s->token));
	free(s);
}

static struct sbx *find_locked(struct cube_backend *b, uint64_t id)
{
	struct sbx *s;

	for (s = b->list; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static void unlink_locked(struct cube_backend *b, uint64_t id)
{
	struct sbx **pp, *s;

	for (pp = &b->list; (s = *pp); pp = &s->next) {
		if (s->id == id) {
			*pp = s->next;
			sbx_free(s);
			return;
		}
	}
}

/*
 * A sandbox E2B may use: running (not waiting in a pool), and not asked to
 * stop: a killed sandbox is gone for E2B at once, while its VMM winds down.
 */
static bool usable(const struct cube_nl_sandbox *ns)
{
	if (ns->flags & CUBE_SANDBOX_F_KILL_REQUESTED)
		return false;
	return ns->state == CUBE_SANDBOX_RUNNING ||
	       ns->state == CUBE_SANDBOX_PAUSED;
}

/* Add or refresh the entry of a module sandbox; locked. */
static struct sbx *adopt_locked(struct cube_backend *b,
				const struct cube_nl_sandbox *ns)
{
	struct sbx *s = find_locked(b, ns->id);

	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->id = ns->id;
		s->started_at = ns->created_ns ?
				(time_t)(ns->created_ns / 1000000000ULL) :
				time(NULL);
		meta_load(s);
		if (!s->token[0] && (e2b_token_new(s->token) || meta_save(s))) {
			sbx_free(s);
			return NULL;
		}
		s->next = b->list;
		b->list = s;
	}
	snprintf(s->template_name, sizeof(s->template_name), "%s",
		 ns->template_name[0] ? ns->template_name : "unknown");
	s->vcpus = ns->vcpus;
	s->memory_mb = ns->memory >> 20;
	return s;
}

static int sync_locked(struct cube_backend *b)
{
	struct cube_nl_sandbox *v;
	struct sbx **pp, *s;
	size_t n, i;
	int ret;

	ret = cube_nl_sandbox_dump(b->nl, &v, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		if (usable(&v[i]))
			adopt_locked(b, &v[i]);
	for (pp = &b->list; (s = *pp);) {
		bool live = false;

		for (i = 0; i < n; i++)
			if (v[i].id == s->id && usable(&v[i]))
				live = true;
		if (live) {
			struct timespec mt;

			/* cubectl may have written its end time meanwhile */
			meta_stat(s->id, &mt);
			if (mt.tv_sec != s->meta_mtime.tv_sec ||
			    mt.tv_nsec != s->meta_mtime.tv_nsec) {
				e2b_kvs_free(&s->metadata);
				e2b_kvs_free(&s->env);
				meta_load(s);
			}
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		cube_proc_drop_sandbox(b->procs, s->id);
		sbx_free(s);
	}
	free(v);
	return 0;
}

/* The entry of @sid, checked against the module; locked. */
static int lookup_locked(struct cube_backend *b, const char *sid,
			 struct sbx **out)
{
	struct cube_nl_sandbox ns;
	uint64_t id;
	int ret;

	if (cube_parse_id(sid, &id))
		return -ENOENT;
	ret = cube_nl_sandbox_get(b->nl, id, &ns);
	if (ret == -ENOENT || (!ret && !usable(&ns))) {
		unlink_locked(b, id);
		return -ENOENT;
	}
	if (ret)
		return ret;
	*out = adopt_locked(b, &ns);
	return *out ? 0 : -ENOMEM;
}

static void to_e2b(const struct sbx *s, struct e2b_sandbox *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%llu", (unsigned long long)s->id);
	snprintf(out->template_id, sizeof(out->template_id), "%s",
		 s->template_name);
	e2b_kvs_copy(&out->metadata, &s->metadata);
	out->started_at = s->started_at;
	/* E2B always reports an end; "none" shows as the longest allowed */
	out->end_at = s->end_at ? s->end_at : s->started_at + E2B_TIMEOUT_MAX;
	out->vcpus = s->vcpus;
	out->memory_mb = s->memory_mb;
	strcpy(out->envd_token, s->token);
}

/* --- life cycle --- */

static int be_create(void *be, const struct e2b_new_sandbox *req,
		     struct e2b_sandbox *out, char *msg)
{
	struct cube_backend *b = be;
	struct cube_template t;
	struct cube_nl_sandbox ns;
	struct cube_launch l = { .tmpl = &t };
	char err[CUBE_ERR_MAX] = "";
	struct sbx *s;
	uint64_t id = 0;
	int ret;

	ret = cube_template_load(req->template_id, &t, err);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, ret == -ENOENT ?
			 "template '%s' not found" : "template '%s' is damaged",
			 req->template_id);
		return ret == -ENOENT ? -ENOENT : -EIO;
	}
	/* a warm sandbox from the template's pool, if one waits */
	pthread_mutex_lock(&b->lock);
	ret = cube_nl_pool_take(b->nl, t.name, &id, NULL);
	pthread_mutex_unlock(&b->lock);
	if (ret) {
		ret = cube_sandbox_launch(&l, &id, err);
		if (ret) {
			snprintf(msg, E2B_MSG_MAX, "cannot start a sandbox: %s",
				 err);
			return ret == -ENOENT ? -EIO : ret;
		}
	}
	pthread_mutex_lock(&b->lock);
	ret = cube_nl_sandbox_get(b->nl, id, &ns);
	if (!ret) {
		/* the shim marks a taken sandbox running; be lenient */
		if (ns.state == CUBE_SANDBOX_READY)
			ns.state = CUBE_SANDBOX_RUNNING;
		s = adopt_locked(b, &ns);
		ret = s ? 0 : -ENOMEM;
	}
	if (!ret) {
		s->end_at = time(NULL) + req->timeout;
		e2b_kvs_free(&s->metadata);
		e2b_kvs_free(&s->env);
		ret = e2b_kvs_copy(&s->metadata, &req->metadata);
		if (!ret)
			ret = e2b_kvs_copy(&s->env, &req->env);
		if (!ret)
			ret = meta_save(s);
		if (!ret)
			to_e2b(s, out);
	}
	if (ret) {
		/* no half-made sandbox stays behind */
		unlink_locked(b, id);
		cube_nl_sandbox_kill(b->nl, id, 0);
		snprintf(msg, E2B_MSG_MAX, "cannot register the sandbox: %s",
			 strerror(-ret));
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int be_list(void *be, struct e2b_sandbox **out, size_t *n)
{
	struct cube_backend *b = be;
	struct e2b_sandbox *v;
	struct sbx *s;
	size_t cnt = 0;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = sync_locked(b);
	if (ret) {
		pthread_mutex_unlock(&b->lock);
		return ret;
	}
	for (s = b->list; s; s = s->next)
		cnt++;
	v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&b->lock);
		return -ENOMEM;
	}
	cnt = 0;
	for (s = b->list; s; s = s->next)
		to_e2b(s, &v[cnt++]);
	pthread_mutex_unlock(&b->lock);
	*out = v;
	*n = cnt;
	return 0;
}

static int be_get(void *be, const char *id, struct e2b_sandbox *out)
{
	struct cube_backend *b = be;
	struct sbx *s;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, id, &s);
	if (!ret)
		to_e2b(s, out);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int be_kill(void *be, const char *sid)
{
	struct cube_backend *b = be;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret) {
		id = s->id;
		ret = cube_nl_sandbox_kill(b->nl, id, 0);
		if (!ret || ret == -ENOENT) {
			cube_proc_drop_sandbox(b->procs, id);
			unlink_locked(b, id);
		}
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int be_set_timeout(void *be, const char *sid, unsigned int secs)
{
	struct cube_backend *b = be;
	struct sbx *s;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret) {
		s->end_at = time(NULL) + secs;
		ret = meta_save(s);
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int be_fork(void *be, const char *sid, unsigned int secs,
		   struct e2b_sandbox *out, char *msg)
{
	struct cube_backend *b = be;
	char tmpl[CUBE_NAME_MAX], err[CUBE_ERR_MAX] = "";
	struct e2b_kvs meta = { 0 }, env = { 0 };
	struct cube_nl_sandbox ns;
	struct sbx *s;
	uint64_t id, nid;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret) {
		id = s->id;
		snprintf(tmpl, sizeof(tmpl), "%s", s->template_name);
		ret = e2b_kvs_copy(&meta, &s->metadata);
		if (!ret)
			ret = e2b_kvs_copy(&env, &s->env);
	}
	pthread_mutex_unlock(&b->lock);
	if (ret)
		goto out;
	ret = cube_sandbox_fork(id, tmpl, &nid, err);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot fork: %s", err);
		goto out;
	}
	pthread_mutex_lock(&b->lock);
	ret = cube_nl_sandbox_get(b->nl, nid, &ns);
	s = ret ? NULL : adopt_locked(b, &ns);
	if (!ret && !s)
		ret = -ENOMEM;
	if (!ret) {
		/* the fork inherits its parent's metadata and environment */
		s->end_at = time(NULL) + secs;
		e2b_kvs_free(&s->metadata);
		e2b_kvs_free(&s->env);
		s->metadata = meta;
		s->env = env;
		memset(&meta, 0, sizeof(meta));
		memset(&env, 0, sizeof(env));
		ret = meta_save(s);
		if (!ret)
			to_e2b(s, out);
	}
	if (ret) {
		unlink_locked(b, nid);
		cube_nl_sandbox_kill(b->nl, nid, 0);
	}
	pthread_mutex_unlock(&b->lock);
out:
	e2b_kvs_free(&meta);
	e2b_kvs_free(&env);
	return ret;
}

/* --- processes --- */

static int be_proc_start(void *be, const char *sid, const struct e2b_start *req,
			 struct e2b_proc **out, char *msg)
{
	struct cube_backend *b = be;
	struct e2b_kvs env = { 0 };
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret) {
		id = s->id;
		ret = e2b_kvs_copy(&env, &s->env);
	}
	pthread_mutex_unlock(&b->lock);
	if (ret)
		return ret;
	ret = cube_proc_start(b->procs, id, req, &env, out, msg);
	e2b_kvs_free(&env);
	return ret;
}

static int sandbox_id(const char *sid, uint64_t *id)
{
	return cube_parse_id(sid, id) ? -ENOENT : 0;
}

static int be_proc_connect(void *be, const char *sid,
			   const struct e2b_selector *sel, struct e2b_proc **out)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?: cube_proc_connect(b->procs, id, sel, out);
}

static int be_proc_list(void *be, const char *sid, struct e2b_proc_info **out,
			size_t *n)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?: cube_proc_list(b->procs, id, out, n);
}

static int be_proc_signal(void *be, const char *sid,
			  const struct e2b_selector *sel, int sig)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?: cube_proc_signal(b->procs, id, sel, sig);
}

static int be_proc_input(void *be, const char *sid,
			 const struct e2b_selector *sel, const void *data,
			 size_t len)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?:
	       cube_proc_input(b->procs, id, sel, data, len);
}

static int be_proc_close_stdin(void *be, const char *sid,
			       const struct e2b_selector *sel)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?: cube_proc_close_stdin(b->procs, id, sel);
}

static int be_proc_update(void *be, const char *sid,
			  const struct e2b_selector *sel, unsigned int cols,
			  unsigned int rows)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?:
	       cube_proc_resize(b->procs, id, sel, cols, rows);
}

static int be_watch_start(void *be, const char *sid, const char *user,
			  const char *path, struct e2b_watch **out, char *msg)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(sid, &id) ?:
	       cube_watch_start(b->procs, id, path, out, msg);
}

/* --- files --- */

static int agent_for(const char *sid, struct cube_agent **a)
{
	uint64_t id;
	int ret;

	if (cube_parse_id(sid, &id))
		return -ENOENT;
	ret = cube_sandbox_agent(id, a);
	if (ret)
		return ret == -ENOENT ? -ECONNREFUSED : ret;
	cube_agent_set_timeout(*a, 30000);
	return 0;
}

/* A path relative to the user's home becomes absolute. */
static int resolve(const char *user, const char *path, char *out, size_t len)
{
	int n;

	if (path[0] == '/')
		n = snprintf(out, len, "%s", path);
	else if (!user[0] || !strcmp(user, "root"))
		n = snprintf(out, len, "/root/%s", path);
	else
		n = snprintf(out, len, "/home/%s/%s", user, path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void owner_name(uint32_t uid, char *buf, size_t len)
{
	if (uid == 0)
		snprintf(buf, len, "root");
	else
		snprintf(buf, len, "%u", uid);
}

static int fill_entry(struct e2b_entry *e, const char *path, const char *name,
		      const struct cube_agent_stat *st)
{
	memset(e, 0, sizeof(*e));
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

static int be_fs_stat(void *be, const char *sid, const char *user,
		      const char *path, struct e2b_entry *out, char *msg)
{
	struct cube_agent *a;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(sid, &a);
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
	char (*subdirs)[PATH_MAX];
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
		void *ns = realloc(c->subdirs, (c->nsub + 1) * sizeof(*c->subdirs));

		if (!ns)
			return c->err = -ENOMEM;
		c->subdirs = ns;
		snprintf(c->subdirs[c->nsub++], PATH_MAX, "%s", path);
	}
	return 0;
}

static int list_dir(struct list_ctx *c, const char *dir, unsigned int depth)
{
	char (*subs)[PATH_MAX];
	size_t nsub, i;
	int ret;

	c->dir = dir;
	c->subdirs = depth > 1 ? calloc(1, sizeof(*c->subdirs)) : NULL;
	c->nsub = 0;
	ret = cube_agent_list(c->a, dir, list_one, c);
	subs = c->subdirs;
	nsub = c->nsub;
	c->subdirs = NULL;
	if (!ret && c->err)
		ret = c->err;
	for (i = 0; !ret && i < nsub; i++)
		ret = list_dir(c, subs[i], depth - 1);
	free(subs);
	return ret;
}

static int be_fs_list(void *be, const char *sid, const char *user,
		      const char *path, unsigned int depth,
		      struct e2b_entry **out, size_t *n, char *msg)
{
	struct list_ctx c = { 0 };
	struct cube_agent_stat st;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(sid, &c.a);
	if (ret)
		return ret;
	ret = cube_agent_stat(c.a, p, &st);
	if (!ret && st.type != CUBE_FTYPE_DIR)
		ret = -ENOTDIR;
	if (!ret)
		ret = list_dir(&c, p, depth);
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

static int be_fs_mkdir(void *be, const char *sid, const char *user,
		       const char *path, struct e2b_entry *out, char *msg)
{
	struct cube_agent_stat st;
	struct cube_agent *a;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(sid, &a);
	if (ret)
		return ret;
	ret = cube_agent_stat(a, p, &st);
	if (!ret)
		ret = -EEXIST;
	else if (ret == -ENOENT)
		ret = cube_agent_mkdir(a, p, 0755, true);
	if (!ret)
		ret = stat_entry(a, p, out);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

static int be_fs_move(void *be, const char *sid, const char *user,
		      const char *from, const char *to, struct e2b_entry *out,
		      char *msg)
{
	char pf[PATH_MAX], pt[PATH_MAX];
	struct cube_agent *a;
	int ret;

	ret = resolve(user, from, pf, sizeof(pf)) ?:
	      resolve(user, to, pt, sizeof(pt)) ?: agent_for(sid, &a);
	if (ret)
		return ret;
	ret = cube_agent_rename(a, pf, pt);
	if (!ret)
		ret = stat_entry(a, pt, out);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

static int be_fs_remove(void *be, const char *sid, const char *user,
			const char *path, char *msg)
{
	struct cube_agent *a;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(sid, &a);
	if (ret)
		return ret;
	ret = cube_agent_remove(a, p, true);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

/* Transfers go through memory, bounded by FILE_MAX. */
struct e2b_file {
	char sid[E2B_ID_MAX + 1];
	char path[PATH_MAX];
	unsigned char *buf;
	size_t len, cap, off;
	bool write;
};

static int sink(void *ctx, const void *buf, size_t len)
{
	struct e2b_file *f = ctx;

	if (f->len + len > FILE_MAX)
		return -EFBIG;
	if (f->len + len > f->cap) {
		size_t cap = f->cap ? f->cap : 65536;
		void *nb;

		while (cap < f->len + len)
			cap *= 2;
		nb = realloc(f->buf, cap);
		if (!nb)
			return -ENOMEM;
		f->buf = nb;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, buf, len);
	f->len += len;
	return 0;
}

static int be_file_read(void *be, const char *sid, const char *user,
			const char *path, struct e2b_file **out, int64_t *size,
			char *msg)
{
	struct cube_agent_stat st;
	struct cube_agent *a;
	struct e2b_file *f;
	char p[PATH_MAX];
	int ret;

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(sid, &a);
	if (ret)
		return ret;
	f = calloc(1, sizeof(*f));
	if (!f) {
		cube_agent_close(a);
		return -ENOMEM;
	}
	ret = cube_agent_stat(a, p, &st);
	if (!ret && st.type == CUBE_FTYPE_DIR)
		ret = -EISDIR;
	if (!ret)
		ret = cube_agent_read_file(a, p, sink, f, NULL);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	if (ret) {
		free(f->buf);
		free(f);
		return ret;
	}
	*size = f->len;
	*out = f;
	return 0;
}

static ssize_t be_file_read_chunk(struct e2b_file *f, void *buf, size_t len)
{
	size_t n = f->len - f->off;

	if (n > len)
		n = len;
	memcpy(buf, f->buf + f->off, n);
	f->off += n;
	return n;
}

static int be_file_write(void *be, const char *sid, const char *user,
			 const char *path, struct e2b_file **out, char *msg)
{
	struct e2b_file *f = calloc(1, sizeof(*f));
	uint64_t id;
	int ret;

	if (!f)
		return -ENOMEM;
	ret = cube_parse_id(sid, &id) ? -ENOENT :
	      resolve(user, path, f->path, sizeof(f->path));
	if (ret) {
		free(f);
		return ret;
	}
	snprintf(f->sid, sizeof(f->sid), "%s", sid);
	f->write = true;
	*out = f;
	return 0;
}

static int be_file_write_chunk(struct e2b_file *f, const void *buf,
			       size_t len)
{
	return sink(f, buf, len);
}

static int be_file_close(struct e2b_file *f, bool commit,
			 struct e2b_entry *entry, char *msg)
{
	struct cube_agent *a;
	char dir[PATH_MAX], *slash;
	int ret = 0;

	if (f->write && commit) {
		ret = agent_for(f->sid, &a);
		if (!ret) {
			snprintf(dir, sizeof(dir), "%s", f->path);
			slash = strrchr(dir, '/');
			if (slash && slash != dir) {
				*slash = '\0';
				ret = cube_agent_mkdir(a, dir, 0755, true);
			}
			if (!ret)
				ret = cube_agent_write_buf(a, f->path, 0644,
							   f->buf, f->len);
			if (!ret && entry)
				ret = stat_entry(a, f->path, entry);
			agent_msg(a, ret, msg);
			cube_agent_close(a);
		}
	}
	free(f->buf);
	free(f);
	return ret;
}

static void be_proc_close(struct e2b_proc *p)
{
	cube_proc_reader_close(p);
}

static const struct e2b_backend_ops cube_ops = {
	.create = be_create,
	.list = be_list,
	.get = be_get,
	.kill = be_kill,
	.set_timeout = be_set_timeout,
	.fork = be_fork,
	.proc_start = be_proc_start,
	.proc_connect = be_proc_connect,
	.proc_next = cube_proc_next,
	.proc_close = be_proc_close,
	.proc_list = be_proc_list,
	.proc_signal = be_proc_signal,
	.proc_input = be_proc_input,
	.proc_close_stdin = be_proc_close_stdin,
	.fs_stat = be_fs_stat,
	.fs_list = be_fs_list,
	.fs_mkdir = be_fs_mkdir,
	.fs_move = be_fs_move,
	.fs_remove = be_fs_remove,
	.proc_update = be_proc_update,
	.watch_start = be_watch_start,
	.watch_next = cube_watch_next,
	.watch_close = cube_watch_close,
	.file_read = be_file_read,
	.file_read_chunk = be_file_read_chunk,
	.file_write = be_file_write,
	.file_write_chunk = be_file_write_chunk,
	.file_close = be_file_close,
};

/* --- the daemon's side --- */

int cube_backend_new(struct cube_backend **out)
{
	struct cube_backend *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	ret = cube_nl_open(&b->nl);
	if (!ret)
		ret = cube_proc_table_new(&b->procs);
	if (ret) {
		cube_nl_close(b->nl);
		free(b);
		return ret;
	}
	*out = b;
	return 0;
}

void cube_backend_free(struct cube_backend *b)
{
	struct sbx *s;

	if (!b)
		return;
	cube_proc_table_free(b->procs);
	while ((s = b->list)) {
		b->list = s->next;
		sbx_free(s);
	}
	cube_nl_close(b->nl);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

struct e2b_backend cube_backend_e2b(struct cube_backend *b)
{
	return (struct e2b_backend){ .ops = &cube_ops, .be = b };
}

int cube_backend_sync(struct cube_backend *b)
{
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = sync_locked(b);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int cube_backend_expire(struct cube_backend *b, time_t now)
{
	struct sbx *s, *next;
	int n = 0;

	pthread_mutex_lock(&b->lock);
	sync_locked(b);
	for (s = b->list; s; s = next) {
		int ret;

		next = s->next;
		if (!s->end_at || s->end_at > now)
			continue;
		ret = cube_nl_sandbox_kill(b->nl, s->id, 0);
		if (ret && ret != -ENOENT)
			continue;	/* tried again on the next tick */
		cube_proc_drop_sandbox(b->procs, s->id);
		unlink_locked(b, s->id);
		n++;
	}
	pthread_mutex_unlock(&b->lock);
	return n;
}

void cube_backend_forget(struct cube_backend *b, uint64_t id)
{
	pthread_mutex_lock(&b->lock);
	cube_proc_drop_sandbox(b->procs, id);
	unlink_locked(b, id);
	pthread_mutex_unlock(&b->lock);
}
