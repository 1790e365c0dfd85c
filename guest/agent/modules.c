// SPDX-License-Identifier: GPL-2.0
/*
 * modules.c: load every kernel module of /lib/modules/<release>/modules.dep
 * in the initramfs (the build puts there just what the guest needs),
 * dependencies first.  Parameters
 * are taken from the kernel command line ("<module>.<param>=<value>"), as
 * finit_module() does not apply them by itself.  A kernel without a
 * modules.dep (everything built in) needs nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent.h"

#define MAX_DEPTH	16

struct moddep {
	char *path;		/* relative to the modules directory */
	char *deps;		/* space-separated paths */
	char name[64];		/* normalised: '-' as '_' */
	bool loaded;		/* placed in the order */
};

struct modtab {
	struct moddep *mods;
	size_t n;
};

static void normalise(char *dst, size_t len, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; base[i] && base[i] != '.' && i + 1 < len; i++)
		dst[i] = base[i] == '-' ? '_' : base[i];
	dst[i] = 0;
}

static int parse_dep(struct modtab *t, char *text)
{
	char *line, *save = NULL, *colon;
	size_t cap = 0;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct moddep *m;

		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		if (t->n == cap) {
			cap = cap ? cap * 2 : 256;
			m = realloc(t->mods, cap * sizeof(*m));
			if (!m)
				return -ENOMEM;
			t->mods = m;
		}
		m = &t->mods[t->n++];
		m->path = line;
		m->deps = colon + 1;
		m->loaded = false;
		normalise(m->name, sizeof(m->name), line);
	}
	return 0;
}

static struct moddep *find(struct modtab *t, const char *name)
{
	char norm[64];
	size_t i;

	normalise(norm, sizeof(norm), name);
	for (i = 0; i < t->n; i++)
		if (!strcmp(t->mods[i].name, norm))
			return &t->mods[i];
	return NULL;
}

/**
 * modules_params() - a module's parameters from the kernel command line
 * @cmdline: the command line
 * @name: the module, '-' written as '_'
 * @out: receives "param=value ..." of its "<name>.<param>=<value>" words
 *	(with '-' or '_' in the name), in order
 * @len: size of @out; words that do not fit are left out
 */
void modules_params(const char *cmdline, const char *name, char *out,
		    size_t len)
{
	size_t nlen = strlen(name), o = 0;
	const char *p = cmdline;

	out[0] = 0;
	while (p && *p) {
		const char *end;
		size_t wlen, i;
		bool match = true;

		while (*p == ' ' || *p == '\n')
			p++;
		end = p + strcspn(p, " \n");
		wlen = end - p;
		if (wlen > nlen + 1 && p[nlen] == '.') {
			for (i = 0; i < nlen && match; i++) {
				char c = p[i] == '-' ? '_' : p[i];

				match = c == name[i];
			}
			if (match && o + wlen - nlen + 1 < len) {
				if (o)
					out[o++] = ' ';
				memcpy(out + o, p + nlen + 1, wlen - nlen - 1);
				o += wlen - nlen - 1;
				out[o] = 0;
			}
		}
		p = end;
	}
}

/* Depth first: dependencies before the module; each module once. */
static int visit(struct modtab *t, struct moddep *m, const char **order,
		 size_t max, size_t *n, int depth)
{
	char *deps, *dep, *save = NULL;
	int err = 0;

	if (m->loaded)
		return 0;
	if (depth > MAX_DEPTH)
		return -ELOOP;
	deps = strdup(m->deps);
	if (!deps)
		return -ENOMEM;
	for (dep = strtok_r(deps, " ", &save); dep && !err;
	     dep = strtok_r(NULL, " ", &save)) {
		struct moddep *d = find(t, dep);

		if (!d) {
			agent_log("module %s: dependency %s not in modules.dep",
				  m->name, dep);
			err = -ENOENT;
			break;
		}
		err = visit(t, d, order, max, n, depth + 1);
	}
	free(deps);
	if (err)
		return err;
	if (m->loaded)		/* a dependency cycle came back here */
		return 0;
	if (*n >= max)
		return -E2BIG;
	m->loaded = true;
	order[(*n)++] = m->path;
	return 0;
}

/**
 * modules_order() - the load order of every module of a modules.dep
 * @text: the file's text; modified, and @order points into it
 * @order: receives module paths, dependencies first
 * @max: room in @order
 *
 * Return: the number of modules, or a negative errno (-ENOENT for a
 * dependency that is not listed, -ELOOP for too deep a chain).
 */
int modules_order(char *text, const char **order, size_t max)
{
	struct modtab t = { 0 };
	size_t i, n = 0;
	int err;

	err = parse_dep(&t, text);
	for (i = 0; !err && i < t.n; i++)
		err = visit(&t, &t.mods[i], order, max, &n, 0);
	free(t.mods);
	return err ? err : (int)n;
}

static int load_one(const char *dir, const char *path, const char *cmdline)
{
	char file[PATH_MAX * 2], name[64], params[1024];
	int fd, err = 0;

	normalise(name, sizeof(name), path);
	snprintf(file, sizeof(file), "%s/%s", dir, path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		agent_log("module %s: %s: %s", name, file, strerror(errno));
		return err;
	}
	modules_params(cmdline, name, params, sizeof(params));
	if (syscall(SYS_finit_module, fd, params, 0) < 0 && errno != EEXIST) {
		err = -errno;
		agent_log("module %s: finit_module: %s", name, strerror(errno));
	}
	close(fd);
	return err;
}

static char *slurp(const char *path)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *p;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			p = realloc(buf, cap + 1);
			if (!p)
				break;
			buf = p;
		}
		n = read(fd, buf + len, cap - len);
		if (n <= 0) {
			close(fd);
			if (n < 0) {
				free(buf);
				return NULL;
			}
			buf[len] = 0;
			return buf;
		}
		len += n;
	}
	close(fd);
	free(buf);
	return NULL;
}

/**
 * modules_load() - load every module of modules.dep, dependencies first
 * @cmdline: the kernel command line, for module parameters
 *
 * Return: 0, or the first negative errno (the others are still tried).
 */
int modules_load(const char *cmdline)
{
	const char *order[256];
	char dir[PATH_MAX], dep[PATH_MAX + 16], *text;
	struct utsname u;
	int n, i, err = 0, r;

	if (uname(&u) < 0)
		return -errno;
	snprintf(dir, sizeof(dir), "/lib/modules/%s", u.release);
	snprintf(dep, sizeof(dep), "%s/modules.dep", dir);
	text = slurp(dep);
	if (!text)
		return 0;
	n = modules_order(text, order, sizeof(order) / sizeof(order[0]));
	if (n < 0)
		err = n;
	for (i = 0; i < n; i++) {
		r = load_one(dir, order[i], cmdline);
		if (r && !err)
			err = r;
	}
	free(text);
	return err;
}
