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
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent_client.h"
#include "cube_backend_int.h"
#include "cube_proc.h"
#include "cube_runtime.h"
#include "nl_client.h"

#define FILE_MAX	(256u << 20)	/* bytes of one download or upload */

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

static struct json_object *sbx_json(const struct sbx *s)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "end_at", json_object_new_int64(s->end_at));
	json_object_object_add(o, "token", json_object_new_string(s->token));
	if (s->eid[0])
		json_object_object_add(o, "e2b_id",
				       json_object_new_string(s->eid));
	if (s->started_at)
		json_object_object_add(o, "started_at",
				       json_object_new_int64(s->started_at));
	if (s->traffic[0])
		json_object_object_add(o, "traffic_token",
				       json_object_new_string(s->traffic));
	if (s->net.internet != E2B_UNSET)
		json_object_object_add(o, "allow_internet_access",
				       json_object_new_boolean(s->net.internet ==
							       E2B_TRUE));
	json_object_object_add(o, "network", e2b_net_json(&s->net));
	kvs_to_json(o, "metadata", &s->metadata);
	kvs_to_json(o, "env", &s->env);
	return o;
}

/* write @o to @path atomically; consumes @o */
static int json_save(const char *path, struct json_object *o)
{
	char tmp[PATH_MAX + 8];
	const char *str;
	int fd, ret = 0;
	size_t len;

	str = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
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
	return ret;
}

static int meta_save(struct sbx *s)
{
	struct json_object *o;
	char path[PATH_MAX];
	int ret;

	if (cube_sandbox_path(path, sizeof(path), s->id, "e2b.json"))
		return -ENAMETOOLONG;
	o = sbx_json(s);
	if (!o)
		return -ENOMEM;
	ret = json_save(path, o);
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
	e2b_net_free(&s.net);
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

static void sbx_from_json(struct sbx *s, struct json_object *o)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, "e2b_id", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    e2b_id_valid(json_object_get_string(v)))
		strcpy(s->eid, json_object_get_string(v));
	if (json_object_object_get_ex(o, "started_at", &v) &&
	    json_object_is_type(v, json_type_int))
		s->started_at = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "end_at", &v) &&
	    json_object_is_type(v, json_type_int))
		s->end_at = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "token", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) == E2B_TOKEN_LEN)
		strcpy(s->token, json_object_get_string(v));
	s->traffic[0] = '\0';
	if (json_object_object_get_ex(o, "traffic_token", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) == E2B_TOKEN_LEN)
		strcpy(s->traffic, json_object_get_string(v));
	e2b_net_from_json(json_object_object_get_ex(o, "network", &v) ? v : NULL,
			  json_object_object_get_ex(o, "allow_internet_access",
						    &v) ? v : NULL,
			  &s->net);
	kvs_from_json(o, "metadata", &s->metadata);
	kvs_from_json(o, "env", &s->env);
}

/* Fill what the file says; a missing or damaged file changes nothing. */
static void meta_load(struct sbx *s)
{
	struct json_object *o;
	char path[PATH_MAX];

	if (cube_sandbox_path(path, sizeof(path), s->id, "e2b.json"))
		return;
	meta_stat(s->id, &s->meta_mtime);
	o = json_object_from_file(path);
	if (!o)
		return;
	sbx_from_json(s, o);
	json_object_put(o);
}

/* --- the list --- */

static void sbx_free(struct sbx *s)
{
	e2b_kvs_free(&s->metadata);
	e2b_kvs_free(&s->env);
	e2b_net_free(&s->net);
	explicit_bzero(s->token, sizeof(s->token));
	explicit_bzero(s->traffic, sizeof(s->traffic));
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
		if (!s->eid[0])
			snprintf(s->eid, sizeof(s->eid), "%llu",
				 (unsigned long long)s->id);
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

/*
 * Adopt module sandbox @id, just taken from a pool or launched: the shim
 * marks it running only once it is in use, so a ready one counts as
 * running here.
 */
static int adopt_started_locked(struct cube_backend *b, uint64_t id,
				struct sbx **out)
{
	struct cube_nl_sandbox ns;
	int ret;

	ret = cube_nl_sandbox_get(b->nl, id, &ns);
	if (ret)
		return ret;
	if (ns.state == CUBE_SANDBOX_READY)
		ns.state = CUBE_SANDBOX_RUNNING;
	*out = adopt_locked(b, &ns);
	return *out ? 0 : -ENOMEM;
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

static struct sbx *find_eid_locked(struct cube_backend *b, const char *sid)
{
	struct sbx *s;

	for (s = b->list; s; s = s->next)
		if (!strcmp(s->eid, sid))
			return s;
	return NULL;
}

/* The entry of E2B id @sid, checked against the module; locked. */
static int lookup_locked(struct cube_backend *b, const char *sid,
			 struct sbx **out)
{
	struct cube_nl_sandbox ns;
	struct sbx *s;
	uint64_t id;
	int ret;

	s = find_eid_locked(b, sid);
	if (!s) {
		/* one started by someone else, or before cubed restarted */
		ret = sync_locked(b);
		if (ret)
			return ret;
		s = find_eid_locked(b, sid);
	}
	if (!s)
		return -ENOENT;
	id = s->id;
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
	snprintf(out->id, sizeof(out->id), "%s", s->eid);
	snprintf(out->template_id, sizeof(out->template_id), "%s",
		 s->template_name);
	e2b_kvs_copy(&out->metadata, &s->metadata);
	out->started_at = s->started_at;
	/* E2B always reports an end; "none" shows as the longest allowed */
	out->end_at = s->end_at ? s->end_at : s->started_at + E2B_TIMEOUT_MAX;
	out->vcpus = s->vcpus;
	out->memory_mb = s->memory_mb;
	strcpy(out->envd_token, s->token);
	strcpy(out->traffic_token, s->traffic);
	e2b_net_copy(&out->net, &s->net);
}

int cube_be_lookup_locked(struct cube_backend *b, const char *sid,
			  struct sbx **out)
{
	return lookup_locked(b, sid, out);
}

int cube_be_meta_save(struct sbx *s)
{
	return meta_save(s);
}

/* --- paused sandboxes --- */

/*
 * A paused sandbox has no VM and no module sandbox: it is the record
 * $CUBE_STATE_DIR/paused/<e2b id>.json (what the E2B sandbox was, and where
 * its snapshot is) and that snapshot, $CUBE_STATE_DIR/paused/<e2b id>-<n>/.
 * Resuming hands the snapshot to the new sandbox (removed when it ends).
 */
static int paused_path(char *buf, size_t len, const char *eid,
		       const char *suffix)
{
	int n = snprintf(buf, len, "%s/paused/%s%s", cube_state_dir(), eid,
			 suffix);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

struct paused {
	struct sbx s;
	char snapshot[PATH_MAX];
};

static void paused_free(struct paused *p)
{
	e2b_kvs_free(&p->s.metadata);
	e2b_kvs_free(&p->s.env);
	e2b_net_free(&p->s.net);
	explicit_bzero(p->s.token, sizeof(p->s.token));
	explicit_bzero(p->s.traffic, sizeof(p->s.traffic));
}

static int paused_save(const struct sbx *s, const char *snapshot)
{
	struct json_object *o = sbx_json(s);
	char path[PATH_MAX];

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "template",
			       json_object_new_string(s->template_name));
	json_object_object_add(o, "vcpus", json_object_new_int(s->vcpus));
	json_object_object_add(o, "memory_mb",
			       json_object_new_int(s->memory_mb));
	json_object_object_add(o, "snapshot", json_object_new_string(snapshot));
	if (paused_path(path, sizeof(path), s->eid, ".json")) {
		json_object_put(o);
		return -ENAMETOOLONG;
	}
	return json_save(path, o);
}

/* -ENOENT: no such paused sandbox; -EINVAL: a damaged record */
static int paused_load_file(const char *path, struct paused *p)
{
	struct json_object *o, *v;
	int ret = -EINVAL;

	memset(p, 0, sizeof(*p));
	o = json_object_from_file(path);
	if (!o)
		return access(path, F_OK) ? -ENOENT : -EINVAL;
	sbx_from_json(&p->s, o);
	if (json_object_object_get_ex(o, "template", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(p->s.template_name, sizeof(p->s.template_name), "%s",
			 json_object_get_string(v));
	if (json_object_object_get_ex(o, "vcpus", &v))
		p->s.vcpus = json_object_get_int(v);
	if (json_object_object_get_ex(o, "memory_mb", &v))
		p->s.memory_mb = json_object_get_int(v);
	if (json_object_object_get_ex(o, "snapshot", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(p->snapshot, sizeof(p->snapshot), "%s",
			 json_object_get_string(v));
	if (p->s.eid[0] && p->s.token[0] && p->snapshot[0] &&
	    cube_name_valid(p->s.template_name))
		ret = 0;
	json_object_put(o);
	if (ret)
		paused_free(p);
	return ret;
}

static int paused_load(const char *eid, struct paused *p)
{
	char path[PATH_MAX];
	int ret;

	if (!e2b_id_valid(eid))
		return -ENOENT;
	ret = paused_path(path, sizeof(path), eid, ".json");
	if (!ret)
		ret = paused_load_file(path, p);
	if (!ret && strcmp(p->s.eid, eid)) {
		paused_free(p);
		ret = -EINVAL;
	}
	return ret;
}

/* the record and the snapshot go */
static int paused_remove(const char *eid, const char *snapshot)
{
	char path[PATH_MAX];
	int ret;

	ret = paused_path(path, sizeof(path), eid, ".json");
	if (ret)
		return ret;
	if (unlink(path))
		return -errno;
	if (snapshot[0])
		cube_remove_tree(snapshot);
	return 0;
}

static void paused_to_e2b(const struct paused *p, struct e2b_sandbox *out)
{
	to_e2b(&p->s, out);
	out->paused = true;
}

/* every paused sandbox, appended to @v (@n, @cap) */
static int paused_list(struct e2b_sandbox **v, size_t *n, size_t *cap)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/paused", cube_state_dir());
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct paused p;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (paused_load_file(path, &p))
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? 2 * *cap : 8;
			void *nv = realloc(*v, nc * sizeof(**v));

			if (!nv) {
				paused_free(&p);
				closedir(d);
				return -ENOMEM;
			}
			*v = nv;
			*cap = nc;
		}
		paused_to_e2b(&p, &(*v)[(*n)++]);
		paused_free(&p);
	}
	closedir(d);
	return 0;
}

/* --- life cycle --- */

static int be_create(void *be, const struct e2b_new_sandbox *req,
		     struct e2b_sandbox *out, char *msg)
{
	struct cube_backend *b = be;
	struct cube_template t;
	struct cube_launch l = { .tmpl = &t };
	char err[CUBE_ERR_MAX] = "", traffic[E2B_TOKEN_LEN + 1] = "";
	struct cube_net_policy *policy = NULL;
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
	ret = cube_be_net_launch_policy(&req->net, &t, &policy, msg);
	if (!ret && req->net.private_ports)
		ret = e2b_token_new(traffic);
	if (ret)
		return ret;
	l.net = policy;
	/*
	 * a warm sandbox from the template's pool, if one waits: pooled
	 * sandboxes have the default policy, so only for the default
	 */
	pthread_mutex_lock(&b->lock);
	ret = policy ? -ENOENT : cube_nl_pool_take(b->nl, t.name, &id, NULL);
	pthread_mutex_unlock(&b->lock);
	if (ret) {
		ret = cube_sandbox_launch(&l, &id, err);
		free(policy);
		if (ret) {
			snprintf(msg, E2B_MSG_MAX, "cannot start a sandbox: %s",
				 err);
			return ret == -ENOENT ? -EIO : ret;
		}
	}
	pthread_mutex_lock(&b->lock);
	ret = adopt_started_locked(b, id, &s);
	if (!ret) {
		s->end_at = time(NULL) + req->timeout;
		e2b_kvs_free(&s->metadata);
		e2b_kvs_free(&s->env);
		e2b_net_free(&s->net);
		strcpy(s->traffic, traffic);
		ret = e2b_kvs_copy(&s->metadata, &req->metadata);
		if (!ret)
			ret = e2b_kvs_copy(&s->env, &req->env);
		if (!ret)
			ret = e2b_net_copy(&s->net, &req->net);
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
	size_t cnt = 0, cap;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = sync_locked(b);
	if (ret) {
		pthread_mutex_unlock(&b->lock);
		return ret;
	}
	for (s = b->list; s; s = s->next)
		cnt++;
	cap = cnt ? cnt : 1;
	v = calloc(cap, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&b->lock);
		return -ENOMEM;
	}
	cnt = 0;
	for (s = b->list; s; s = s->next)
		to_e2b(s, &v[cnt++]);
	ret = paused_list(&v, &cnt, &cap);
	pthread_mutex_unlock(&b->lock);
	if (ret) {
		while (cnt)
			e2b_sandbox_free(&v[--cnt]);
		free(v);
		return ret;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static int be_get(void *be, const char *id, struct e2b_sandbox *out)
{
	struct cube_backend *b = be;
	struct sbx *s;
	int ret;

	struct paused p;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, id, &s);
	if (!ret)
		to_e2b(s, out);
	if (ret == -ENOENT && !paused_load(id, &p)) {
		paused_to_e2b(&p, out);
		paused_free(&p);
		ret = 0;
	}
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
	} else if (ret == -ENOENT) {
		struct paused p;

		/* a paused one: its record and its snapshot go */
		ret = paused_load(sid, &p);
		if (!ret) {
			ret = paused_remove(sid, p.snapshot);
			paused_free(&p);
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
	} else if (ret == -ENOENT) {
		struct paused p;

		/* a paused sandbox keeps its end, and may be given another */
		ret = paused_load(sid, &p);
		if (!ret) {
			p.s.end_at = time(NULL) + secs;
			ret = paused_save(&p.s, p.snapshot);
			paused_free(&p);
		}
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
	char traffic[E2B_TOKEN_LEN + 1] = "";
	struct e2b_net net = { 0 };
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
		if (!ret)
			ret = e2b_net_copy(&net, &s->net);
	}
	pthread_mutex_unlock(&b->lock);
	if (!ret && net.private_ports)
		ret = e2b_token_new(traffic);
	if (ret)
		goto out;
	ret = cube_sandbox_fork(id, tmpl, &nid, err);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot fork: %s", err);
		goto out;
	}
	/*
	 * the fork starts with the default policy: its parent's is set at
	 * once (a fork cannot be launched with one yet)
	 */
	if (!e2b_net_is_default(&net)) {
		ret = cube_be_net_apply(nid, &net, msg);
		if (ret == -ENETDOWN)
			ret = 0;	/* no device: nothing goes out */
		if (ret) {
			pthread_mutex_lock(&b->lock);
			cube_nl_sandbox_kill(b->nl, nid, 0);
			pthread_mutex_unlock(&b->lock);
			goto out;
		}
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
		e2b_net_free(&s->net);
		s->net = net;
		memset(&net, 0, sizeof(net));
		strcpy(s->traffic, traffic);
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
	e2b_net_free(&net);
	return ret;
}

static int be_pause(void *be, const char *sid, char *msg)
{
	struct cube_backend *b = be;
	char err[CUBE_ERR_MAX] = "", snap[PATH_MAX], dir[PATH_MAX];
	static unsigned int seq;
	struct timespec now;
	struct paused p;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (ret == -ENOENT && !paused_load(sid, &p)) {
		paused_free(&p);
		ret = -EEXIST;
	}
	if (!ret && s->pausing)
		ret = -EEXIST;
	if (!ret) {
		s->pausing = true;
		id = s->id;
	}
	pthread_mutex_unlock(&b->lock);
	if (ret)
		return ret;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(dir, sizeof(dir), "%s/paused", cube_state_dir());
	mkdir(cube_state_dir(), 0755);
	mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "-%lld-%u", (long long)now.tv_sec,
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	ret = paused_path(snap, sizeof(snap), sid, dir);
	if (!ret)
		ret = cube_sandbox_checkpoint(id, snap, err);
	if (ret && err[0])
		snprintf(msg, E2B_MSG_MAX, "cannot pause: %s", err);

	pthread_mutex_lock(&b->lock);
	s = find_locked(b, id);
	if (!ret && !s) {
		/* killed while it was snapshotted */
		cube_remove_tree(snap);
		ret = -ENOENT;
	}
	if (!ret) {
		ret = paused_save(s, snap);
		if (ret) {
			cube_remove_tree(snap);
			cube_sandbox_resume_vm(id);
			snprintf(msg, E2B_MSG_MAX, "cannot record the pause: %s",
				 strerror(-ret));
		}
	}
	if (!ret) {
		/* the VM ends; its memory is in the snapshot now */
		cube_nl_sandbox_kill(b->nl, id, 0);
		cube_proc_drop_sandbox(b->procs, id);
		unlink_locked(b, id);
	} else if (s) {
		s->pausing = false;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int be_resume(void *be, const char *sid, char *msg)
{
	struct cube_backend *b = be;
	char err[CUBE_ERR_MAX] = "", rec[PATH_MAX], claim[PATH_MAX];
	struct cube_template t;
	struct cube_launch l = { .tmpl = &t, .own_snapshot = true };
	struct paused p;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	pthread_mutex_unlock(&b->lock);
	if (!ret)
		return -EEXIST;
	if (ret != -ENOENT)
		return ret;
	ret = paused_load(sid, &p);
	if (ret)
		return ret == -EINVAL ? -EIO : ret;
	/* claim the record: one resume at a time */
	if (paused_path(rec, sizeof(rec), sid, ".json") ||
	    paused_path(claim, sizeof(claim), sid, ".resuming")) {
		paused_free(&p);
		return -ENAMETOOLONG;
	}
	if (rename(rec, claim)) {
		paused_free(&p);
		return errno == ENOENT ? -EEXIST : -errno;
	}
	ret = cube_template_load(p.s.template_name, &t, err);
	if (!ret) {
		struct cube_net_policy *policy = NULL;

		snprintf(t.snapshot, sizeof(t.snapshot), "%s", p.snapshot);
		l.vcpus = p.s.vcpus;
		l.memory_mb = p.s.memory_mb;
		/* the policy it had when it was paused */
		ret = cube_be_net_launch_policy(&p.s.net, &t, &policy, err);
		l.net = policy;
		if (!ret)
			ret = cube_sandbox_launch(&l, &id, err);
		free(policy);
	}
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot resume: %s", err);
		rename(claim, rec);
		paused_free(&p);
		return ret == -ENOENT ? -EIO : ret;
	}
	pthread_mutex_lock(&b->lock);
	/* the E2B id is set before the new entry is first read */
	ret = adopt_started_locked(b, id, &s);
	if (!ret) {
		snprintf(s->eid, sizeof(s->eid), "%s", p.s.eid);
		strcpy(s->token, p.s.token);
		strcpy(s->traffic, p.s.traffic);
		e2b_net_free(&s->net);
		s->net = p.s.net;
		memset(&p.s.net, 0, sizeof(p.s.net));
		s->started_at = p.s.started_at;
		s->end_at = p.s.end_at;
		e2b_kvs_free(&s->metadata);
		e2b_kvs_free(&s->env);
		s->metadata = p.s.metadata;
		s->env = p.s.env;
		memset(&p.s.metadata, 0, sizeof(p.s.metadata));
		memset(&p.s.env, 0, sizeof(p.s.env));
		ret = meta_save(s);
	}
	if (ret) {
		/* the snapshot went with the failed sandbox */
		unlink_locked(b, id);
		cube_nl_sandbox_kill(b->nl, id, 0);
		snprintf(msg, E2B_MSG_MAX, "cannot register the sandbox: %s",
			 strerror(-ret));
	}
	unlink(claim);
	pthread_mutex_unlock(&b->lock);
	paused_free(&p);
	return ret;
}

/* --- metrics --- */

/* the VMM: the one child of the shim that owns the module sandbox */
static pid_t vmm_pid(pid_t shim)
{
	char path[64], buf[64];
	pid_t pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", shim, shim);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		pid = atoi(buf);
	fclose(f);
	return pid;
}

/* user + system time of @pid and its threads, in ns */
static int proc_cpu_ns(pid_t pid, uint64_t *out)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* fields after the command name, which may hold spaces */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -EIO;
	*out = (ut + st) * (1000000000ULL / sysconf(_SC_CLK_TCK));
	return 0;
}

/* resident bytes of @pid (VmRSS) */
static uint64_t proc_rss(pid_t pid)
{
	unsigned long long kb = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

static int be_metrics(void *be, const char *sid, struct e2b_metrics *out)
{
	struct cube_backend *b = be;
	struct cube_nl_sandbox ns;
	struct cube_template t;
	struct timespec mono;
	struct stat st;
	uint64_t cpu = 0, wall, used;
	struct sbx *s;
	pid_t vmm;
	int ret;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret)
		ret = cube_nl_sandbox_get(b->nl, s->id, &ns);
	if (ret)
		goto out;
	out->timestamp = time(NULL);
	out->cpu_count = ns.vcpus;
	out->mem_total = ns.memory;
	/* what the guest touched: its own pages and the snapshot's it maps */
	used = (ns.private_pages + ns.shared_pages) * (uint64_t)sysconf(_SC_PAGESIZE);
	vmm = vmm_pid(ns.owner_pid);
	/* no clone counters (memory mapped from the file): what the VMM holds */
	if (!used && vmm > 0)
		used = proc_rss(vmm);
	out->mem_used = used < ns.memory ? used : ns.memory;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	wall = mono.tv_sec * 1000000000ULL + mono.tv_nsec;
	if (vmm > 0 && !proc_cpu_ns(vmm, &cpu) && ns.vcpus) {
		uint64_t dc, dw;

		if (s->cpu.wall_ns && cpu >= s->cpu.cpu_ns) {
			/* since the last sample */
			dc = cpu - s->cpu.cpu_ns;
			dw = wall - s->cpu.wall_ns;
		} else {
			/* since the sandbox started */
			dc = cpu;
			dw = (uint64_t)(time(NULL) - s->started_at) * 1000000000ULL;
		}
		if (dw)
			out->cpu_used_pct = 100.0 * dc / dw / ns.vcpus;
		if (out->cpu_used_pct > 100.0)
			out->cpu_used_pct = 100.0;
		s->cpu.cpu_ns = cpu;
		s->cpu.wall_ns = wall;
	}
	/* the root image: its size and the blocks it holds */
	if (!cube_template_load(s->template_name, &t, NULL) && t.rootfs[0] &&
	    !stat(t.rootfs, &st)) {
		out->disk_total = st.st_size;
		out->disk_used = (uint64_t)st.st_blocks * 512;
		if (out->disk_used > out->disk_total)
			out->disk_used = out->disk_total;
	}
out:
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/* --- snapshots --- */

/*
 * A snapshot of a sandbox is a template of its own: the source template's
 * kernel, rootfs and size, the sandbox's VM state as "snapshot/", and
 * "e2b-snapshot" naming the sandbox it was made of.
 */
static int be_snapshot(void *be, const char *sid, const char *name,
		       struct e2b_snapshot *out, char *msg)
{
	struct cube_backend *b = be;
	char tmpl[CUBE_NAME_MAX], eid[E2B_ID_MAX + 1], err[CUBE_ERR_MAX] = "";
	char path[PATH_MAX + 32], gen[128];
	static unsigned int seq;
	struct cube_template t, old;
	struct sbx *s;
	uint64_t id;
	FILE *f;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret) {
		id = s->id;
		snprintf(tmpl, sizeof(tmpl), "%s", s->template_name);
		snprintf(eid, sizeof(eid), "%s", s->eid);
	}
	pthread_mutex_unlock(&b->lock);
	if (ret)
		return ret;
	if (!name[0]) {
		snprintf(gen, sizeof(gen), "snapshot-%s-%lld-%u", eid,
			 (long long)time(NULL),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		name = gen;
	}
	if (!cube_name_valid(name) || strlen(name) > E2B_TEMPLATE_MAX)
		return -EINVAL;
	ret = cube_template_load(tmpl, &t, err);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot snapshot: %s", err);
		return -EIO;
	}
	if (cube_template_load(name, &old, NULL) != -ENOENT)
		return -EEXIST;
	snprintf(t.name, sizeof(t.name), "%s", name);
	if (snprintf(t.dir, sizeof(t.dir), "%s/templates/%s", cube_state_dir(),
		     name) >= (int)sizeof(t.dir))
		return -ENAMETOOLONG;
	snprintf(t.snapshot, sizeof(t.snapshot), "%s/snapshot", t.dir);
	/* the directory is ours alone: a racing snapshot of that name loses */
	snprintf(path, sizeof(path), "%s/templates", cube_state_dir());
	mkdir(cube_state_dir(), 0755);
	mkdir(path, 0755);
	if (mkdir(t.dir, 0755))
		return errno == EEXIST ? -EEXIST : -errno;
	ret = cube_sandbox_checkpoint(id, t.snapshot, err);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot snapshot: %s", err);
		rmdir(t.dir);
		return ret;
	}
	cube_sandbox_resume_vm(id);
	snprintf(path, sizeof(path), "%s/e2b-snapshot", t.dir);
	f = fopen(path, "we");
	if (!f || fprintf(f, "%s\n", eid) < 0) {
		ret = -EIO;
	}
	if (f && fclose(f) && !ret)
		ret = -errno;
	/* template.conf last: only a whole template is ever listed */
	if (!ret)
		ret = cube_template_save(&t);
	if (ret) {
		cube_remove_tree(t.dir);
		snprintf(msg, E2B_MSG_MAX, "cannot record the snapshot: %s",
			 strerror(-ret));
		return ret;
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", name);
	snprintf(out->sandbox, sizeof(out->sandbox), "%s", eid);
	return 0;
}

static int be_list_snapshots(void *be, struct e2b_snapshot **out, size_t *n)
{
	char (*names)[CUBE_NAME_MAX] = NULL, path[PATH_MAX + 2 * CUBE_NAME_MAX];
	struct e2b_snapshot *v;
	size_t cnt, i, k = 0;
	int ret;

	ret = cube_template_list(&names, &cnt);
	if (ret)
		return ret;
	v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		free(names);
		return -ENOMEM;
	}
	for (i = 0; i < cnt; i++) {
		char line[E2B_ID_MAX + 4] = "";
		FILE *f;

		snprintf(path, sizeof(path), "%s/templates/%s/e2b-snapshot",
			 cube_state_dir(), names[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (e2b_id_valid(line) &&
			    strlen(names[i]) <= E2B_TEMPLATE_MAX) {
				strcpy(v[k].id, names[i]);
				strcpy(v[k].sandbox, line);
				k++;
			}
		}
		fclose(f);
	}
	free(names);
	*out = v;
	*n = k;
	return 0;
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

/* the module id of E2B id @sid */
static int sandbox_id(struct cube_backend *b, const char *sid, uint64_t *id)
{
	struct sbx *s;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = lookup_locked(b, sid, &s);
	if (!ret)
		*id = s->id;
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int be_proc_connect(void *be, const char *sid,
			   const struct e2b_selector *sel, struct e2b_proc **out)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?: cube_proc_connect(b->procs, id, sel, out);
}

static int be_proc_list(void *be, const char *sid, struct e2b_proc_info **out,
			size_t *n)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?: cube_proc_list(b->procs, id, out, n);
}

static int be_proc_signal(void *be, const char *sid,
			  const struct e2b_selector *sel, int sig)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?: cube_proc_signal(b->procs, id, sel, sig);
}

static int be_proc_input(void *be, const char *sid,
			 const struct e2b_selector *sel, const void *data,
			 size_t len)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?:
	       cube_proc_input(b->procs, id, sel, data, len);
}

static int be_proc_close_stdin(void *be, const char *sid,
			       const struct e2b_selector *sel)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?: cube_proc_close_stdin(b->procs, id, sel);
}

static int be_proc_update(void *be, const char *sid,
			  const struct e2b_selector *sel, unsigned int cols,
			  unsigned int rows)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?:
	       cube_proc_resize(b->procs, id, sel, cols, rows);
}

static int be_watch_start(void *be, const char *sid, const char *user,
			  const char *path, struct e2b_watch **out, char *msg)
{
	struct cube_backend *b = be;
	uint64_t id;

	return sandbox_id(b, sid, &id) ?:
	       cube_watch_start(b->procs, id, path, out, msg);
}

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

	return sandbox_id(b, sid, &id) ?: agent_for_id(id, a);
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

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &c.a);
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

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &a);
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
	      resolve(user, to, pt, sizeof(pt)) ?: agent_for(be, sid, &a);
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

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &a);
	if (ret)
		return ret;
	ret = cube_agent_remove(a, p, true);
	agent_msg(a, ret, msg);
	cube_agent_close(a);
	return ret;
}

/* Transfers go through memory, bounded by FILE_MAX. */
struct e2b_file {
	uint64_t id;			/* the module sandbox */
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

	ret = resolve(user, path, p, sizeof(p)) ?: agent_for(be, sid, &a);
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
	ret = sandbox_id(be, sid, &id) ?:
	      resolve(user, path, f->path, sizeof(f->path));
	if (ret) {
		free(f);
		return ret;
	}
	f->id = id;
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
		ret = agent_for_id(f->id, &a);
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
	.pause = be_pause,
	.resume = be_resume,
	.metrics = be_metrics,
	.snapshot = be_snapshot,
	.list_snapshots = be_list_snapshots,
	.set_network = cube_be_set_network,
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

/* paused sandboxes past their end are removed like running ones */
static int expire_paused(time_t now)
{
	struct e2b_sandbox *v = NULL;
	size_t n = 0, cap = 0, i;
	int gone = 0;

	if (paused_list(&v, &n, &cap))
		return 0;
	for (i = 0; i < n; i++) {
		struct paused p;

		if (v[i].end_at <= now && !paused_load(v[i].id, &p)) {
			if (!paused_remove(p.s.eid, p.snapshot))
				gone++;
			paused_free(&p);
		}
		e2b_sandbox_free(&v[i]);
	}
	free(v);
	return gone;
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
	n += expire_paused(now);
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
