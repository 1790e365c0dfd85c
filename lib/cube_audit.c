// SPDX-License-Identifier: GPL-2.0
/* The behaviour log; see cube_audit.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cube_audit.h"
#include "cube_runtime.h"

const char *cube_audit_dir(void)
{
	static __thread char buf[PATH_MAX];
	const char *d = getenv("CUBE_AUDIT_DIR");

	if (d && d[0] == '/')
		return d;
	snprintf(buf, sizeof(buf), "%s/audit", cube_state_dir());
	return buf;
}

int cube_audit_key_valid(const char *key)
{
	size_t i, n = key ? strlen(key) : 0;

	if (!n || n >= CUBE_AUDIT_KEY_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static uint64_t dir_limit(void)
{
	const char *s = getenv("CUBE_AUDIT_MAX_BYTES");
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return CUBE_AUDIT_DIR_MAX;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < 2 * CUBE_AUDIT_FILE_MAX)
		return CUBE_AUDIT_DIR_MAX;
	return v;
}

struct json_object *cube_audit_str(const char *s)
{
	size_t n;

	if (!s)
		return NULL;	/* JSON null */
	n = strnlen(s, CUBE_AUDIT_STR_MAX + 1);
	if (n <= CUBE_AUDIT_STR_MAX)
		return json_object_new_string(s);
	/* cut at a character boundary, and say so */
	n = CUBE_AUDIT_STR_MAX;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	{
		char cut[CUBE_AUDIT_STR_MAX + 8];

		memcpy(cut, s, n);
		memcpy(cut + n, "...", 4);
		return json_object_new_string(cut);
	}
}

struct json_object *cube_audit_strv(const char *const *v, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	if (!a)
		return NULL;
	for (i = 0; i < n && i < CUBE_AUDIT_LIST_MAX; i++) {
		struct json_object *s = cube_audit_str(v[i] ? v[i] : "");

		if (!s || json_object_array_add(a, s)) {
			json_object_put(s);
			json_object_put(a);
			return NULL;
		}
	}
	if (n > CUBE_AUDIT_LIST_MAX)
		json_object_array_add(a, json_object_new_string("..."));
	return a;
}

struct json_object *cube_audit_env_names(const char *const *env, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	if (!a)
		return NULL;
	for (i = 0; i < n && i < CUBE_AUDIT_LIST_MAX; i++) {
		const char *e = env[i] ? env[i] : "";
		size_t len = strcspn(e, "=");
		struct json_object *s;

		if (len > CUBE_AUDIT_STR_MAX)
			len = CUBE_AUDIT_STR_MAX;
		s = json_object_new_string_len(e, len);
		if (!s || json_object_array_add(a, s)) {
			json_object_put(s);
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

static int log_path(char *buf, size_t len, const char *sandbox, bool rotated)
{
	int n = snprintf(buf, len, "%s/%s.jsonl%s", cube_audit_dir(), sandbox,
			 rotated ? ".1" : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* "2026-12-04T18:20:01.123Z" */
static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* an event's own fields: when, which sandbox, what */
static struct json_object *event_object(const char *ts, const char *sandbox,
					const char *event)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "ts", json_object_new_string(ts));
	json_object_object_add(o, "sandbox", json_object_new_string(sandbox));
	json_object_object_add(o, "event", json_object_new_string(event));
	return o;
}

/* The line of an event, newline included; NULL when out of memory. */
static char *make_line(const char *sandbox, const char *event, const char *by,
		       struct json_object *fields, size_t *len)
{
	struct json_object *o;
	const char *s;
	char ts[40];
	char *line = NULL;

	timestamp(ts, sizeof(ts));
	o = event_object(ts, sandbox, event);
	if (!o)
		return NULL;
	if (by)
		json_object_object_add(o, "by", cube_audit_str(by));
	if (fields && json_object_is_type(fields, json_type_object)) {
		json_object_object_foreach(fields, k, v) {
			if (!strcmp(k, "ts") || !strcmp(k, "sandbox") ||
			    !strcmp(k, "event") || !strcmp(k, "by"))
				continue;
			json_object_object_add(o, k, json_object_get(v));
		}
	}
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s && strlen(s) + 1 > CUBE_AUDIT_LINE_MAX) {
		/* too long: the event without its fields, marked */
		json_object_put(o);
		o = event_object(ts, sandbox, event);
		if (!o)
			return NULL;
		json_object_object_add(o, "truncated",
				       json_object_new_boolean(1));
		s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	}
	if (s && asprintf(&line, "%s\n", s) < 0)
		line = NULL;
	if (line)
		*len = strlen(line);
	json_object_put(o);
	return line;
}

static bool older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * Remove the oldest logs (by modification time) until the directory holds
 * at most three quarters of its limit.  Best effort: racing writers and
 * removals are fine, a file removed under a writer only loses that file.
 */
static void trim_dir(void)
{
	struct ent { char name[CUBE_AUDIT_KEY_MAX + 16]; struct timespec mtime; off_t size; };
	uint64_t limit = dir_limit(), total = 0;
	struct ent *v = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;

	d = opendir(cube_audit_dir());
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' || !strstr(de->d_name, ".jsonl") ||
		    strlen(de->d_name) >= sizeof(v->name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct ent *nv = realloc(v, (cap ? cap * 2 : 64) *
						 sizeof(*v));

			if (!nv)
				goto out;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		strcpy(v[n].name, de->d_name);
		v[n].mtime = st.st_mtim;
		v[n].size = st.st_size;
		total += st.st_size;
		n++;
	}
	if (total <= limit)
		goto out;
	while (total > limit / 4 * 3) {
		size_t old = n;

		for (i = 0; i < n; i++)
			if (v[i].size >= 0 &&
			    (old == n || older(&v[i].mtime, &v[old].mtime)))
				old = i;
		if (old == n)
			break;
		unlinkat(dirfd(d), v[old].name, 0);
		total -= v[old].size;
		v[old].size = -1;
	}
out:
	free(v);
	closedir(d);
}

/* The log of @sandbox opened for appending, locked, and the current file. */
static int open_locked(const char *path)
{
	int tries;

	for (tries = 0; tries < 4; tries++) {
		struct stat a, b;
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
			      O_NOFOLLOW | O_NOCTTY, 0600);

		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX)) {
			int ret = -errno;

			close(fd);
			return ret;
		}
		/* a rotation may have renamed it while we waited */
		if (!fstat(fd, &a) && !stat(path, &b) && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev && S_ISREG(a.st_mode))
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

int cube_audit(const char *sandbox, const char *event, const char *by,
	       struct json_object *fields)
{
	char path[PATH_MAX], old[PATH_MAX];
	size_t len = 0, off = 0;
	bool rotated = false;
	struct stat st;
	char *line;
	int fd, ret;

	if (!cube_audit_key_valid(sandbox) || !cube_audit_key_valid(event)) {
		ret = -EINVAL;
		goto out;
	}
	ret = log_path(path, sizeof(path), sandbox, false);
	if (ret)
		goto out;
	line = make_line(sandbox, event, by, fields, &len);
	if (!line) {
		ret = -ENOMEM;
		goto out;
	}
	if (mkdir(cube_audit_dir(), 0700) && errno != EEXIST) {
		ret = -errno;
		goto out_line;
	}
	fd = open_locked(path);
	if (fd < 0) {
		ret = fd;
		goto out_line;
	}
	while (off < len) {
		ssize_t w = write(fd, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			break;
		}
		off += w;
	}
	if (!fstat(fd, &st) && st.st_size > CUBE_AUDIT_FILE_MAX &&
	    !log_path(old, sizeof(old), sandbox, true) && !rename(path, old))
		rotated = true;
	close(fd);
	if (rotated || !strcmp(event, "created"))
		trim_dir();
out_line:
	free(line);
out:
	json_object_put(fields);
	return ret;
}

int cube_audit_id(uint64_t id, const char *event, const char *by,
		  struct json_object *fields)
{
	char key[24];

	snprintf(key, sizeof(key), "%llu", (unsigned long long)id);
	return cube_audit(key, event, by, fields);
}

int cube_audit_open(const char *sandbox, int rotated)
{
	char path[PATH_MAX];
	int fd, ret;

	if (!cube_audit_key_valid(sandbox))
		return -EINVAL;
	ret = log_path(path, sizeof(path), sandbox, rotated);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}
