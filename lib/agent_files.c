// SPDX-License-Identifier: GPL-2.0
/*
 * agent_files.c: file requests through cube-agent.  Transfers are
 * streamed in CUBE_AGENT_CHUNK pieces; nothing is held whole in memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_client_int.h"

static int check_path(struct cube_agent *a, const char *path)
{
	int err = client_check_string(a, "path", path, CUBE_AGENT_MAX_STRING);

	if (err)
		return err;
	if (path[0] != '/')
		return client_fail(a, -EINVAL, "path '%.256s' is not absolute", path);
	return 0;
}

static int start(struct cube_agent *a, const char *path, uint32_t *id)
{
	int err = client_idle(a);

	if (!err)
		err = check_path(a, path);
	if (!err)
		*id = client_new_id(a);
	return err;
}

int cube_agent_write_file(struct cube_agent *a, const char *path,
			  uint32_t mode, unsigned int flags, cube_read_fn src,
			  void *ctx)
{
	return cube_agent_write_file_meta(a, path, mode, flags, NULL, src, ctx);
}

int cube_agent_write_file_meta(struct cube_agent *a, const char *path,
			       uint32_t mode, unsigned int flags,
			       const char *meta, cube_read_fn src, void *ctx)
{
	struct cube_wire_buf b = { 0 };
	struct cube_wire_msg m;
	uint64_t total = 0;
	uint8_t *chunk;
	ssize_t n = 0;
	uint32_t id;
	int err;

	err = start(a, path, &id);
	if (err)
		return err;
	if (mode & ~07777U)
		return client_fail(a, -EINVAL, "mode %#o has bits beyond 07777", mode);
	if (flags & ~CUBE_WRITE_APPEND)
		return client_fail(a, -EINVAL, "unknown write flags %#x", flags);
	if (meta && (!meta[0] || strlen(meta) >= CUBE_AGENT_MAX_STRING))
		return client_fail(a, -EINVAL, "metadata of %zu bytes", strlen(meta));
	chunk = malloc(CUBE_AGENT_CHUNK);
	if (!chunk)
		return client_fail(a, -ENOMEM, "out of memory");
	cube_wire_start(&b, CUBE_MSG_FILE_WRITE, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	if (mode)
		cube_wire_put_u32(&b, CUBE_ATTR_MODE, mode);
	if (flags & CUBE_WRITE_APPEND)
		cube_wire_put_flag(&b, CUBE_ATTR_APPEND);
	if (meta)
		cube_wire_put_str(&b, CUBE_ATTR_META, meta);
	if (a->owner[0])
		cube_wire_put_str(&b, CUBE_ATTR_USER, a->owner);
	err = client_send(a, &b);
	if (!err)
		err = client_expect(a, id, CUBE_MSG_OK, &m);
	while (!err) {
		n = src(ctx, chunk, CUBE_AGENT_CHUNK);
		if (n <= 0)
			break;
		if (n > CUBE_AGENT_CHUNK) {
			n = -EINVAL;
			break;
		}
		total += n;
		cube_wire_start(&b, CUBE_MSG_DATA, id);
		cube_wire_put(&b, CUBE_ATTR_DATA, chunk, n);
		err = client_send(a, &b);
	}
	free(chunk);
	if (err)
		return err;
	/* a source error is sent as a wrong size: the agent drops the file */
	cube_wire_start(&b, CUBE_MSG_END, id);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, n < 0 ? total + 1 : total);
	err = client_send(a, &b);
	if (!err)
		err = client_expect(a, id, CUBE_MSG_OK, &m);
	if (n < 0 && (!err || err == -EIO))
		return client_fail(a, n, "reading the data to write: %s",
				   strerror((int)-n));
	return err;
}

struct mem_src {
	const uint8_t *p;
	size_t left;
};

static ssize_t mem_read(void *ctx, void *buf, size_t len)
{
	struct mem_src *s = ctx;

	if (len > s->left)
		len = s->left;
	memcpy(buf, s->p, len);
	s->p += len;
	s->left -= len;
	return len;
}

int cube_agent_write_buf(struct cube_agent *a, const char *path, uint32_t mode,
			 const void *buf, size_t len)
{
	struct mem_src s = { buf, len };

	return cube_agent_write_file(a, path, mode, 0, mem_read, &s);
}

int cube_agent_write_buf_meta(struct cube_agent *a, const char *path,
			      uint32_t mode, const char *meta,
			      const void *buf, size_t len)
{
	struct mem_src s = { buf, len };

	return cube_agent_write_file_meta(a, path, mode, 0, meta, mem_read, &s);
}

/* Skips the rest of a DATA or DIRENT stream after the caller stopped it. */
static int drain(struct cube_agent *a, uint32_t id, uint16_t item)
{
	struct cube_wire_msg m;
	int err;

	for (;;) {
		err = client_recv(a, &m, -1);
		if (err)
			return err;
		if (m.id != id || (m.type != item && m.type != CUBE_MSG_END &&
				   m.type != CUBE_MSG_ERROR))
			return client_broken(a, -EPROTO,
					     "agent sent message 0x%x for request %u in a stream",
					     m.type, m.id);
		if (m.type != item)
			return 0;
	}
}

/*
 * The next message of a stream of @item messages: 1 for an item, 0 at
 * END, or a negative errno (the agent's, from an ERROR, or the connection's).
 */
static int stream_next(struct cube_agent *a, uint32_t id, uint16_t item,
		       struct cube_wire_msg *m)
{
	int err = client_recv(a, m, -1);

	if (err)
		return err;
	if (m->id != id)
		return client_broken(a, -EPROTO,
				     "agent answered request %u, expected %u",
				     m->id, id);
	if (m->type == item)
		return 1;
	if (m->type == CUBE_MSG_END)
		return 0;
	if (m->type == CUBE_MSG_ERROR)
		return client_agent_error(a, m);
	return client_broken(a, -EPROTO, "agent sent message 0x%x in a stream",
			     m->type);
}

int cube_agent_read_file(struct cube_agent *a, const char *path,
			 cube_write_fn sink, void *ctx, uint64_t *size)
{
	struct cube_wire_buf b = { 0 };
	const struct cube_agent_attr *t;
	struct cube_wire_msg m;
	uint64_t total = 0;
	uint32_t id;
	int err, r;

	err = start(a, path, &id);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_FILE_READ, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	err = client_send(a, &b);
	if (err)
		return err;
	while ((r = stream_next(a, id, CUBE_MSG_DATA, &m)) == 1) {
		t = m.first[CUBE_ATTR_DATA];
		total += cube_wire_len(t);
		err = sink(ctx, cube_wire_value(t), cube_wire_len(t));
		if (err) {
			r = drain(a, id, CUBE_MSG_DATA);
			if (r)
				return r;
			return client_fail(a, err < 0 ? err : -ECANCELED,
					   "the reader stopped the transfer");
		}
	}
	if (r < 0)
		return r;
	t = m.first[CUBE_ATTR_SIZE];
	if (!t || cube_wire_u64(t) != total)
		return client_broken(a, -EPROTO,
				     "agent announced a size other than the data it sent");
	if (size)
		*size = total;
	return 0;
}

static int fill_stat(struct cube_agent *a, const struct cube_wire_msg *m,
		     struct cube_agent_stat *st)
{
	uint32_t type = cube_wire_u32(m->first[CUBE_ATTR_FTYPE]);
	uint32_t mode = cube_wire_u32(m->first[CUBE_ATTR_MODE]);

	if (type > CUBE_FTYPE_MAX)
		return client_broken(a, -EPROTO, "agent file type %u", type);
	if (mode & ~07777U)
		return client_broken(a, -EPROTO, "agent file mode %#o", mode);
	memset(st, 0, sizeof(*st));
	st->type = type;
	st->mode = mode;
	st->size = cube_wire_u64(m->first[CUBE_ATTR_SIZE]);
	st->mtime_ns = cube_wire_u64(m->first[CUBE_ATTR_MTIME_NS]);
	if (m->first[CUBE_ATTR_UID])
		st->uid = cube_wire_u32(m->first[CUBE_ATTR_UID]);
	if (m->first[CUBE_ATTR_GID])
		st->gid = cube_wire_u32(m->first[CUBE_ATTR_GID]);
	if (m->first[CUBE_ATTR_META])
		st->meta = cube_wire_value(m->first[CUBE_ATTR_META]);
	return 0;
}

int cube_agent_stat(struct cube_agent *a, const char *path,
		    struct cube_agent_stat *st)
{
	struct cube_wire_buf b = { 0 };
	struct cube_wire_msg m;
	uint32_t id;
	int err;

	err = start(a, path, &id);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_STAT, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	err = client_send(a, &b);
	if (!err)
		err = client_expect(a, id, CUBE_MSG_STAT_REPLY, &m);
	return err ? err : fill_stat(a, &m, st);
}

int cube_agent_list(struct cube_agent *a, const char *path, cube_dirent_fn fn,
		    void *ctx)
{
	struct cube_wire_buf b = { 0 };
	struct cube_agent_stat st;
	struct cube_wire_msg m;
	const char *name;
	uint32_t id;
	int err, r;

	err = start(a, path, &id);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_LIST, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	err = client_send(a, &b);
	if (err)
		return err;
	while ((r = stream_next(a, id, CUBE_MSG_DIRENT, &m)) == 1) {
		name = cube_wire_value(m.first[CUBE_ATTR_NAME]);
		if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
			return client_broken(a, -EPROTO,
					     "agent directory entry '%.64s'", name);
		err = fill_stat(a, &m, &st);
		if (err)
			return err;
		err = fn(ctx, name, &st);
		if (err) {
			r = drain(a, id, CUBE_MSG_DIRENT);
			if (r)
				return r;
			return client_fail(a, err < 0 ? err : -ECANCELED,
					   "the caller stopped the listing");
		}
	}
	if (r < 0)
		return r;
	if (m.first[CUBE_ATTR_SIZE])
		return client_broken(a, -EPROTO, "agent listing end with a size");
	return 0;
}

int cube_agent_set_owner(struct cube_agent *a, const char *user)
{
	int err;

	if (!user) {
		a->owner[0] = '\0';
		return 0;
	}
	err = client_check_string(a, "user", user, CUBE_AGENT_MAX_NAME);
	if (err)
		return err;
	snprintf(a->owner, sizeof(a->owner), "%s", user);
	return 0;
}

int cube_agent_mkdir(struct cube_agent *a, const char *path, uint32_t mode,
		     bool parents)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err;

	err = start(a, path, &id);
	if (err)
		return err;
	if (mode & ~07777U)
		return client_fail(a, -EINVAL, "mode %#o has bits beyond 07777", mode);
	cube_wire_start(&b, CUBE_MSG_MKDIR, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	if (mode)
		cube_wire_put_u32(&b, CUBE_ATTR_MODE, mode);
	if (parents)
		cube_wire_put_flag(&b, CUBE_ATTR_PARENTS);
	if (a->owner[0])
		cube_wire_put_str(&b, CUBE_ATTR_USER, a->owner);
	return client_simple(a, &b, id);
}

int cube_agent_remove(struct cube_agent *a, const char *path, bool recursive)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err;

	err = start(a, path, &id);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_REMOVE, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	if (recursive)
		cube_wire_put_flag(&b, CUBE_ATTR_RECURSIVE);
	return client_simple(a, &b, id);
}

int cube_agent_rename(struct cube_agent *a, const char *from, const char *to)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err;

	err = start(a, from, &id);
	if (!err)
		err = check_path(a, to);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_RENAME, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, from);
	cube_wire_put_str(&b, CUBE_ATTR_NEWPATH, to);
	return client_simple(a, &b, id);
}

static int watch(struct cube_agent *a, const char *path, bool recursive)
{
	struct cube_wire_buf b = { 0 };
	uint32_t id;
	int err;

	err = start(a, path, &id);
	if (err)
		return err;
	cube_wire_start(&b, CUBE_MSG_WATCH, id);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, path);
	if (recursive)
		cube_wire_put_flag(&b, CUBE_ATTR_RECURSIVE);
	err = client_simple(a, &b, id);
	if (err)
		return err;
	a->watch_active = true;
	a->watch_recursive = recursive;
	a->watch_id = id;
	return 0;
}

int cube_agent_watch(struct cube_agent *a, const char *path)
{
	return watch(a, path, false);
}

int cube_agent_watch_recursive(struct cube_agent *a, const char *path)
{
	return watch(a, path, true);
}

/* a path below a watched directory: relative, no "", "." or ".." part */
static bool rel_path_ok(const char *p)
{
	const char *c = p;

	if (!p[0] || p[0] == '/')
		return false;
	while (*c) {
		size_t n = strcspn(c, "/");

		if (!n || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/' && !*++c)
			return false;	/* a trailing '/' */
	}
	return true;
}

int cube_agent_watch_next(struct cube_agent *a, struct cube_watch_event *ev,
			  int timeout_ms)
{
	const struct cube_agent_attr *name;
	struct cube_wire_msg m;
	const char *n;
	uint32_t type;
	int err;

	memset(ev, 0, sizeof(*ev));
	if (a->broken)
		return a->broken;
	if (!a->watch_active)
		return client_fail(a, -ESRCH, "no watch is running");
	err = client_recv(a, &m, timeout_ms);
	if (err)
		return err;
	if (m.id != a->watch_id)
		return client_broken(a, -EPROTO,
				     "agent event for request %u, expected %u",
				     m.id, a->watch_id);
	if (m.type == CUBE_MSG_ERROR) {
		a->watch_active = false;
		return client_agent_error(a, &m);
	}
	if (m.type != CUBE_MSG_FS_EVENT)
		return client_broken(a, -EPROTO,
				     "agent sent message 0x%x during a watch",
				     m.type);
	type = cube_wire_u32(m.first[CUBE_ATTR_EVENT]);
	name = m.first[CUBE_ATTR_NAME];
	n = cube_wire_value(name);
	if (type < 1 || type > CUBE_FS_EVENT_MAX)
		return client_broken(a, -EPROTO, "agent watch event type %u",
				     type);
	if (strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, ".."))
		return client_broken(a, -EPROTO, "agent watch event name '%.64s'",
				     n);
	ev->type = type;
	memcpy(ev->name, n, cube_wire_len(name));
	if (m.first[CUBE_ATTR_PATH]) {
		const struct cube_agent_attr *pa = m.first[CUBE_ATTR_PATH];
		const char *p = cube_wire_value(pa);

		if (!a->watch_recursive || !rel_path_ok(p))
			return client_broken(a, -EPROTO,
					     "agent watch event path '%.64s'", p);
		memcpy(ev->name, p, cube_wire_len(pa));
	}
	return 0;
}
