// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend.c: the E2B backend on cube.ko, cube-shim/cube-vmm and the
 * guest agent: what E2B knows of each sandbox (its record, running or
 * paused), the list kept in step with the module, and the operations
 * table (the operations themselves: cube_backend_sandbox.c,
 * cube_backend_proc.c, cube_backend_files.c, cube_backend_net.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cube_audit.h"
#include "cube_backend_int.h"
#include "cube_proc.h"
#include "cube_runtime.h"
#include "cube_sandbox_disk.h"
#include "nl_client.h"

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

/*
 * The mtime and inode of a sandbox's e2b.json: a save is a rename of a new
 * file, so the inode tells a change the clock's granularity may hide.
 */
static void meta_stat(uint64_t id, struct timespec *out, ino_t *ino)
{
	char path[PATH_MAX];
	struct stat st;

	memset(out, 0, sizeof(*out));
	*ino = 0;
	if (!cube_sandbox_path(path, sizeof(path), id, "e2b.json") &&
	    !stat(path, &st)) {
		*out = st.st_mtim;
		*ino = st.st_ino;
	}
}

/*
 * cubectl (cube_meta_write_end()) and cubed (adopting a sandbox) are two
 * processes writing the same e2b.json: each reads, changes and saves it
 * holding this lock on the run directory, so neither loses what the
 * other wrote, nor renames away the other's e2b.json.tmp.  Returns the
 * locked directory's fd, or -errno (no run directory: the sandbox is gone).
 */
static int meta_lock(uint64_t id)
{
	char path[PATH_MAX];
	int fd;

	if (cube_sandbox_path(path, sizeof(path), id, NULL))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			int ret = -errno;

			close(fd);
			return ret;
		}
	}
	return fd;
}

static void meta_unlock(int fd)
{
	if (fd >= 0)
		close(fd);	/* drops the lock */
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
	if (s->auto_pause)
		json_object_object_add(o, "auto_pause",
				       json_object_new_boolean(true));
	if (s->auto_resume)
		json_object_object_add(o, "auto_resume",
				       json_object_new_boolean(true));
	if (s->timeout)
		json_object_object_add(o, "timeout",
				       json_object_new_int64(s->timeout));
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

int cube_be_meta_save(struct sbx *s)
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
		meta_stat(s->id, &s->meta_mtime, &s->meta_ino);
	return ret;
}

static void meta_load(struct sbx *s);

int cube_meta_write_end(uint64_t id, time_t end_at)
{
	struct sbx s = { .id = id };
	int lock, ret = 0;

	lock = meta_lock(id);
	if (lock < 0)
		return lock;
	/* keep what is there (a token cubed gave out), change the end */
	meta_load(&s);
	s.end_at = end_at;
	if (!s.token[0])
		ret = e2b_token_new(s.token);
	if (!ret)
		ret = cube_be_meta_save(&s);
	meta_unlock(lock);
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
	s->auto_pause = json_object_object_get_ex(o, "auto_pause", &v) &&
			json_object_is_type(v, json_type_boolean) &&
			json_object_get_boolean(v);
	/* only with auto_pause, as the API takes it */
	s->auto_resume = s->auto_pause &&
			 json_object_object_get_ex(o, "auto_resume", &v) &&
			 json_object_is_type(v, json_type_boolean) &&
			 json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "timeout", &v) &&
	    json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 0 &&
	    json_object_get_int64(v) <= E2B_TIMEOUT_MAX)
		s->timeout = json_object_get_int64(v);
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
	meta_stat(s->id, &s->meta_mtime, &s->meta_ino);
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
	free(s->hist.v);
	explicit_bzero(s->token, sizeof(s->token));
	explicit_bzero(s->traffic, sizeof(s->traffic));
	free(s);
}

struct sbx *cube_be_find_locked(struct cube_backend *b, uint64_t id)
{
	struct sbx *s;

	for (s = b->list; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

void cube_be_unlink_locked(struct cube_backend *b, uint64_t id)
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

/* --- E2B ids --- */

static struct sbx *find_eid_locked(struct cube_backend *b, const char *sid)
{
	struct sbx *s;

	for (s = b->list; s; s = s->next)
		if (!strcmp(s->eid, sid))
			return s;
	return NULL;
}

/*
 * A sandbox's E2B id is its module id, unless that id was handed out
 * before: module ids start again at 1 each time cube.ko loads, while
 * paused sandboxes, clients and their logs keep the ids they were given.
 * The largest E2B id handed out is kept in $CUBE_STATE_DIR/e2b-last-id; a
 * module id at or below it, or one that a listed or paused sandbox holds,
 * gives way to the next number above it.
 */
static int last_id_path(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/e2b-last-id", cube_state_dir());

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* 0 when none was handed out (or the file is unreadable) */
static uint64_t last_id_load(void)
{
	unsigned long long v = 0;
	char path[PATH_MAX];
	FILE *f;

	if (last_id_path(path, sizeof(path)))
		return 0;
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int last_id_save(uint64_t v)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int fd, n, ret = 0;
	char line[32];

	if (last_id_path(path, sizeof(path)))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	mkdir(cube_state_dir(), 0755);
	n = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)v);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, line, n) != n)
		ret = -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

static bool eid_taken_locked(struct cube_backend *b, const char *eid)
{
	char path[PATH_MAX];

	if (find_eid_locked(b, eid))
		return true;
	/* a paused sandbox, or one being resumed */
	return (!cube_be_paused_path(path, sizeof(path), eid, ".json") &&
		!access(path, F_OK)) ||
	       (!cube_be_paused_path(path, sizeof(path), eid, ".resuming") &&
		!access(path, F_OK));
}

int cube_be_assign_eid_locked(struct cube_backend *b, struct sbx *s)
{
	uint64_t last = last_id_load(), stored = last, v = s->id;
	char eid[E2B_ID_MAX + 1];
	int ret;

	for (;;) {
		if (v <= last)
			v = last + 1;
		snprintf(eid, sizeof(eid), "%llu", (unsigned long long)v);
		if (!eid_taken_locked(b, eid))
			break;
		last = v;
	}
	/* recorded before anyone is told */
	if (v > stored) {
		ret = last_id_save(v);
		if (ret)
			return ret;
	}
	strcpy(s->eid, eid);
	return 0;
}

/* Add or refresh the entry of a module sandbox; locked. */
struct sbx *cube_be_adopt_locked(struct cube_backend *b,
				 const struct cube_nl_sandbox *ns)
{
	struct sbx *s = cube_be_find_locked(b, ns->id);

	if (!s) {
		bool fresh = false;
		int lock, ret = 0;

		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->id = ns->id;
		s->started_at = ns->created_ns ?
				(time_t)(ns->created_ns / 1000000000ULL) :
				time(NULL);
		/* cubectl may be writing its end time: read and save locked */
		lock = meta_lock(s->id);
		meta_load(s);
		if (!s->eid[0]) {
			ret = cube_be_assign_eid_locked(b, s);
			fresh = true;
		}
		if (!ret && !s->token[0]) {
			ret = e2b_token_new(s->token);
			fresh = true;
		}
		if (!ret && fresh)
			ret = cube_be_meta_save(s);
		meta_unlock(lock);
		if (ret) {
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
int cube_be_adopt_started_locked(struct cube_backend *b, uint64_t id,
				 struct sbx **out)
{
	struct cube_nl_sandbox ns;
	int ret;

	ret = cube_nl_sandbox_get(b->nl, id, &ns);
	if (ret)
		return ret;
	if (ns.state == CUBE_SANDBOX_READY)
		ns.state = CUBE_SANDBOX_RUNNING;
	*out = cube_be_adopt_locked(b, &ns);
	return *out ? 0 : -ENOMEM;
}

int cube_be_sync_locked(struct cube_backend *b)
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
			cube_be_adopt_locked(b, &v[i]);
	for (pp = &b->list; (s = *pp);) {
		bool live = false;

		for (i = 0; i < n; i++)
			if (v[i].id == s->id && usable(&v[i]))
				live = true;
		if (live) {
			struct timespec mt;
			ino_t ino;

			/* cubectl may have written its end time meanwhile */
			meta_stat(s->id, &mt, &ino);
			if (mt.tv_sec != s->meta_mtime.tv_sec ||
			    mt.tv_nsec != s->meta_mtime.tv_nsec ||
			    ino != s->meta_ino) {
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

/* The entry of E2B id @sid, checked against the module; locked. */
int cube_be_lookup_locked(struct cube_backend *b, const char *sid,
			  struct sbx **out)
{
	struct cube_nl_sandbox ns;
	struct sbx *s;
	uint64_t id;
	int ret;

	s = find_eid_locked(b, sid);
	if (!s) {
		/* one started by someone else, or before cubed restarted */
		ret = cube_be_sync_locked(b);
		if (ret)
			return ret;
		s = find_eid_locked(b, sid);
	}
	if (!s)
		return -ENOENT;
	id = s->id;
	ret = cube_nl_sandbox_get(b->nl, id, &ns);
	if (ret == -ENOENT || (!ret && !usable(&ns))) {
		cube_be_unlink_locked(b, id);
		return -ENOENT;
	}
	if (ret)
		return ret;
	*out = cube_be_adopt_locked(b, &ns);
	return *out ? 0 : -ENOMEM;
}

void cube_be_to_e2b(const struct sbx *s, struct e2b_sandbox *out)
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
	/* its writable disk, when its template has one (0: memory only) */
	out->disk_mb = cube_sandbox_disk_size(s->id) >> 20;
	out->auto_pause = s->auto_pause;
	out->auto_resume = s->auto_resume;
	strcpy(out->envd_token, s->token);
	strcpy(out->traffic_token, s->traffic);
	e2b_net_copy(&out->net, &s->net);
}

/* --- paused sandboxes --- */

/*
 * A paused sandbox has no VM and no module sandbox: it is the record
 * $CUBE_STATE_DIR/paused/<e2b id>.json (what the E2B sandbox was, and where
 * its snapshot is) and that snapshot, $CUBE_STATE_DIR/paused/<e2b id>-<n>/.
 * Resuming hands the snapshot to the new sandbox (removed when it ends).
 */
int cube_be_paused_path(char *buf, size_t len, const char *eid,
			const char *suffix)
{
	int n = snprintf(buf, len, "%s/paused/%s%s", cube_state_dir(), eid,
			 suffix);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The record's format: 2 adds "processes", the commands running at the
 * pause (pid, tag, cmd, args, cwd, pty; not their environment).  A record
 * without it (format 1) has none.
 */
#define PAUSED_FORMAT	2

static struct json_object *procs_json(const struct cube_proc_saved *v,
				      size_t n)
{
	struct json_object *a = json_object_new_array(), *o, *args;
	size_t i, j;

	for (i = 0; a && i < n; i++) {
		o = json_object_new_object();
		args = json_object_new_array();
		if (!o || !args) {
			json_object_put(o);
			json_object_put(args);
			json_object_put(a);
			return NULL;
		}
		json_object_object_add(o, "pid", json_object_new_int64(v[i].pid));
		if (v[i].tag)
			json_object_object_add(o, "tag",
					       json_object_new_string(v[i].tag));
		json_object_object_add(o, "cmd",
				       json_object_new_string(v[i].cfg.cmd));
		for (j = 0; j < v[i].cfg.nargs; j++)
			json_object_array_add(args,
					      json_object_new_string(v[i].cfg.args[j]));
		json_object_object_add(o, "args", args);
		if (v[i].cfg.cwd)
			json_object_object_add(o, "cwd",
					       json_object_new_string(v[i].cfg.cwd));
		json_object_object_add(o, "pty", json_object_new_boolean(v[i].pty));
		json_object_array_add(a, o);
	}
	return a;
}

static char *json_strdup(struct json_object *o, const char *key, bool *bad)
{
	struct json_object *v;
	char *s;

	if (!json_object_object_get_ex(o, key, &v))
		return NULL;
	if (!json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) >= CUBE_AGENT_MAX_STRING) {
		*bad = true;
		return NULL;
	}
	s = strdup(json_object_get_string(v));
	if (!s)
		*bad = true;
	return s;
}

/* One command of "processes"; false when it is not one. */
static bool proc_from_json(struct json_object *o, struct cube_proc_saved *sp)
{
	struct json_object *v, *args;
	bool bad = false;
	int64_t pid;
	size_t i, n;

	memset(sp, 0, sizeof(*sp));
	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "pid", &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    !json_object_object_get_ex(o, "args", &args) ||
	    !json_object_is_type(args, json_type_array))
		return false;
	pid = json_object_get_int64(v);
	if (pid < 1 || pid > INT32_MAX)
		return false;
	sp->pid = pid;
	sp->tag = json_strdup(o, "tag", &bad);
	sp->cfg.cmd = json_strdup(o, "cmd", &bad);
	sp->cfg.cwd = json_strdup(o, "cwd", &bad);
	if (json_object_object_get_ex(o, "pty", &v))
		sp->pty = json_object_get_boolean(v);
	n = json_object_array_length(args);
	if (n >= CUBE_AGENT_MAX_ARGS)
		bad = true;
	sp->cfg.args = bad ? NULL : calloc(n + 1, sizeof(char *));
	for (i = 0; sp->cfg.args && i < n && !bad; i++) {
		v = json_object_array_get_idx(args, i);
		if (!json_object_is_type(v, json_type_string) ||
		    !(sp->cfg.args[i] = strdup(json_object_get_string(v))))
			bad = true;
		else
			sp->cfg.nargs++;
	}
	if (bad || !sp->cfg.cmd || !sp->cfg.cmd[0] || !sp->cfg.args) {
		cube_proc_saved_free_one(sp);
		return false;
	}
	return true;
}

/* "processes" of a record, at most CUBE_PROC_MAX; bad entries left out */
static void procs_from_json(struct json_object *o, struct cube_be_paused *p)
{
	struct json_object *a;
	size_t i, n;

	if (!json_object_object_get_ex(o, "processes", &a) ||
	    !json_object_is_type(a, json_type_array))
		return;
	n = json_object_array_length(a);
	if (n > CUBE_PROC_MAX)
		n = CUBE_PROC_MAX;
	p->procs = n ? calloc(n, sizeof(*p->procs)) : NULL;
	for (i = 0; p->procs && i < n; i++) {
		if (proc_from_json(json_object_array_get_idx(a, i),
				   &p->procs[p->nprocs]))
			p->nprocs++;
	}
}

void cube_be_paused_free(struct cube_be_paused *p)
{
	cube_proc_saved_free(p->procs, p->nprocs);
	p->procs = NULL;
	p->nprocs = 0;
	e2b_kvs_free(&p->s.metadata);
	e2b_kvs_free(&p->s.env);
	e2b_net_free(&p->s.net);
	explicit_bzero(p->s.token, sizeof(p->s.token));
	explicit_bzero(p->s.traffic, sizeof(p->s.traffic));
}

int cube_be_paused_save(const struct sbx *s, const char *snapshot,
			const struct cube_proc_saved *procs, size_t nprocs)
{
	struct json_object *o = sbx_json(s), *a = procs_json(procs, nprocs);
	char path[PATH_MAX];

	if (!o || !a) {
		json_object_put(o);
		json_object_put(a);
		return -ENOMEM;
	}
	json_object_object_add(o, "format", json_object_new_int(PAUSED_FORMAT));
	json_object_object_add(o, "processes", a);
	json_object_object_add(o, "template",
			       json_object_new_string(s->template_name));
	json_object_object_add(o, "vcpus", json_object_new_int(s->vcpus));
	json_object_object_add(o, "memory_mb",
			       json_object_new_int(s->memory_mb));
	json_object_object_add(o, "snapshot", json_object_new_string(snapshot));
	if (cube_be_paused_path(path, sizeof(path), s->eid, ".json")) {
		json_object_put(o);
		return -ENAMETOOLONG;
	}
	return json_save(path, o);
}

/* -ENOENT: no such paused sandbox; -EINVAL: a damaged record */
static int paused_load_file(const char *path, struct cube_be_paused *p)
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
	if (!ret)
		procs_from_json(o, p);
	json_object_put(o);
	if (ret)
		cube_be_paused_free(p);
	return ret;
}

int cube_be_paused_load(const char *eid, struct cube_be_paused *p)
{
	char path[PATH_MAX];
	int ret;

	if (!e2b_id_valid(eid))
		return -ENOENT;
	ret = cube_be_paused_path(path, sizeof(path), eid, ".json");
	if (!ret)
		ret = paused_load_file(path, p);
	if (!ret && strcmp(p->s.eid, eid)) {
		cube_be_paused_free(p);
		ret = -EINVAL;
	}
	return ret;
}

/* the record and the snapshot go */
int cube_be_paused_remove(const char *eid, const char *snapshot)
{
	char path[PATH_MAX];
	int ret;

	ret = cube_be_paused_path(path, sizeof(path), eid, ".json");
	if (ret)
		return ret;
	if (unlink(path))
		return -errno;
	if (snapshot[0])
		cube_remove_tree(snapshot);
	return 0;
}

void cube_be_paused_to_e2b(const struct cube_be_paused *p, struct e2b_sandbox *out)
{
	cube_be_to_e2b(&p->s, out);
	out->paused = true;
}

/* every paused sandbox, appended to @v (@n, @cap) */
int cube_be_paused_list(struct e2b_sandbox **v, size_t *n, size_t *cap)
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
		struct cube_be_paused p;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (paused_load_file(path, &p))
			continue;
		/* one that names another sandbox could not be got or resumed */
		if (strlen(p.s.eid) != len - 5 ||
		    strncmp(p.s.eid, de->d_name, len - 5)) {
			cube_be_paused_free(&p);
			continue;
		}
		if (*n == *cap) {
			size_t nc = *cap ? 2 * *cap : 8;
			void *nv = realloc(*v, nc * sizeof(**v));

			if (!nv) {
				cube_be_paused_free(&p);
				closedir(d);
				return -ENOMEM;
			}
			*v = nv;
			*cap = nc;
		}
		cube_be_paused_to_e2b(&p, &(*v)[(*n)++]);
		cube_be_paused_free(&p);
	}
	closedir(d);
	return 0;
}

/* the module id of E2B id @sid */
int cube_be_sandbox_id(struct cube_backend *b, const char *sid, uint64_t *id)
{
	struct sbx *s;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret)
		*id = s->id;
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static const struct e2b_backend_ops cube_ops = {
	.create = cube_be_create,
	.list = cube_be_list,
	.get = cube_be_get,
	.kill = cube_be_kill,
	.set_timeout = cube_be_set_timeout,
	.fork = cube_be_fork,
	.pause = cube_be_pause,
	.resume = cube_be_resume,
	.metrics = cube_be_metrics,
	.metrics_history = cube_be_metrics_history,
	.template_exists = cube_be_template_exists,
	.template_delete = cube_be_template_delete,
	.snapshot = cube_be_snapshot,
	.list_snapshots = cube_be_list_snapshots,
	.set_network = cube_be_set_network,
	.cp_create = cube_be_cp_create,
	.cp_list = cube_be_cp_list,
	.cp_remove = cube_be_cp_remove,
	.rollback = cube_be_rollback,
	.proc_start = cube_be_proc_start,
	.proc_connect = cube_be_proc_connect,
	.proc_next = cube_proc_next,
	.proc_close = cube_be_proc_close,
	.proc_list = cube_be_proc_list,
	.proc_signal = cube_be_proc_signal,
	.proc_input = cube_be_proc_input,
	.proc_close_stdin = cube_be_proc_close_stdin,
	.fs_stat = cube_be_fs_stat,
	.fs_list = cube_be_fs_list,
	.fs_mkdir = cube_be_fs_mkdir,
	.fs_move = cube_be_fs_move,
	.fs_remove = cube_be_fs_remove,
	.proc_update = cube_be_proc_update,
	.watch_start = cube_be_watch_start,
	.watch_next = cube_watch_next,
	.watch_close = cube_watch_close,
	.watch_start_recursive = cube_be_watch_start_recursive,
	.file_read = cube_be_file_read,
	.file_read_chunk = cube_be_file_read_chunk,
	.file_write = cube_be_file_write,
	.file_write_chunk = cube_be_file_write_chunk,
	.file_close = cube_be_file_close,
	.file_write_meta = cube_be_file_write_meta,
};

/* --- the daemon's side --- */

/*
 * What cubed skips of its state directory, said once when it starts: a
 * paused sandbox record that does not load (it is never listed, resumed or
 * expired), a template whose template.conf does not parse (creating from
 * it fails), an unreadable E2B id counter (ids start again above the live
 * and paused ones).  Nothing is changed or removed.
 */
static void report_damaged_state(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], err[CUBE_ERR_MAX];
	unsigned long long v;
	struct dirent *de;
	DIR *d;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/paused", cube_state_dir());
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct cube_be_paused p;
		int ret;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ret = paused_load_file(path, &p);
		if (!ret) {
			/* one that names another sandbox is damaged too */
			if (strlen(p.s.eid) != len - 5 ||
			    strncmp(p.s.eid, de->d_name, len - 5))
				ret = -EINVAL;
			cube_be_paused_free(&p);
		}
		if (ret == -EINVAL)
			fprintf(stderr, "cubed: ignoring the damaged paused sandbox record %s\n",
				path);
	}
	if (d)
		closedir(d);
	snprintf(dir, sizeof(dir), "%s/templates", cube_state_dir());
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		struct cube_template t;

		if (!cube_name_valid(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/template.conf", dir,
			 de->d_name);
		if (access(path, F_OK))
			continue;
		err[0] = '\0';
		if (cube_template_load(de->d_name, &t, err))
			fprintf(stderr, "cubed: ignoring the damaged template %s: %s\n",
				de->d_name, err[0] ? err : "cannot be read");
	}
	if (d)
		closedir(d);
	if (last_id_path(path, sizeof(path)))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%llu", &v) != 1)
		fprintf(stderr, "cubed: %s is damaged: E2B ids go on above the live and paused sandboxes'\n",
			path);
	fclose(f);
}

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
	report_damaged_state();
	*out = b;
	return 0;
}

void cube_backend_free(struct cube_backend *b)
{
	struct sbx *s;

	if (!b)
		return;
	/* the pauses at a timeout under way use the list and the socket */
	pthread_mutex_lock(&b->lock);
	while (b->auto_pausing) {
		pthread_mutex_unlock(&b->lock);
		usleep(20000);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
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
	ret = cube_be_sync_locked(b);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/*
 * The behaviour log's line of a sandbox that reached its end time: @event
 * "expired" (killed, or, @paused, its paused record removed) or "paused"
 * (its lifecycle pauses it at the end).
 */
static void audit_end(const char *eid, const char *event, time_t end_at,
		      bool paused)
{
	struct json_object *f = json_object_new_object();

	if (f) {
		json_object_object_add(f, "end_at", json_object_new_int64(end_at));
		if (paused)
			json_object_object_add(f, "was_paused",
					       json_object_new_boolean(true));
	}
	cube_audit(eid, event, "cubed", f);
}

/*
 * Paused sandboxes past their end are removed like running ones, unless
 * their timeout pauses them (lifecycle.onTimeout "pause"): those are kept
 * paused until killed or resumed.
 */
static int expire_paused(time_t now)
{
	struct e2b_sandbox *v = NULL;
	size_t n = 0, cap = 0, i;
	int gone = 0;

	if (cube_be_paused_list(&v, &n, &cap))
		return 0;
	for (i = 0; i < n; i++) {
		struct cube_be_paused p;

		if (!v[i].auto_pause && v[i].end_at <= now &&
		    !cube_be_paused_load(v[i].id, &p)) {
			if (p.s.end_at && p.s.end_at <= now &&
			    !cube_be_paused_remove(p.s.eid, p.snapshot)) {
				audit_end(p.s.eid, "expired", p.s.end_at, true);
				gone++;
			}
			cube_be_paused_free(&p);
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
	cube_be_sync_locked(b);
	for (s = b->list; s; s = next) {
		int ret;

		next = s->next;
		if (!s->end_at || s->end_at > now || s->pausing)
			continue;
		if (s->auto_pause) {
			/* lifecycle.onTimeout "pause": snapshotted, not killed */
			if (!cube_be_auto_pause_locked(b, s)) {
				audit_end(s->eid, "paused", s->end_at, false);
				n++;
			}
			continue;
		}
		ret = cube_nl_sandbox_kill(b->nl, s->id, 0);
		if (ret && ret != -ENOENT)
			continue;	/* tried again on the next tick */
		audit_end(s->eid, "expired", s->end_at, false);
		cube_proc_drop_sandbox(b->procs, s->id);
		cube_be_unlink_locked(b, s->id);
		n++;
	}
	n += expire_paused(now);
	cube_be_sample_all_locked(b, now);
	pthread_mutex_unlock(&b->lock);
	return n;
}

void cube_backend_forget(struct cube_backend *b, uint64_t id)
{
	pthread_mutex_lock(&b->lock);
	cube_proc_drop_sandbox(b->procs, id);
	cube_be_unlink_locked(b, id);
	pthread_mutex_unlock(&b->lock);
}
