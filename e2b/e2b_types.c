// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_types.c: constructors and destructors of the E2B request structures.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_backend.h"

void e2b_kvs_free(struct e2b_kvs *kvs)
{
	size_t i;

	for (i = 0; i < kvs->n; i++) {
		free(kvs->v[i].key);
		free(kvs->v[i].value);
	}
	free(kvs->v);
	kvs->v = NULL;
	kvs->n = 0;
}

int e2b_kvs_add(struct e2b_kvs *kvs, const char *key, const char *value)
{
	struct e2b_kv *nv;
	char *k, *v;

	k = strdup(key);
	v = strdup(value);
	nv = (k && v) ? realloc(kvs->v, (kvs->n + 1) * sizeof(*nv)) : NULL;
	if (!nv) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	nv[kvs->n].key = k;
	nv[kvs->n].value = v;
	kvs->v = nv;
	kvs->n++;
	return 0;
}

int e2b_kvs_copy(struct e2b_kvs *dst, const struct e2b_kvs *src)
{
	struct e2b_kvs n = { 0 };
	size_t i;

	for (i = 0; i < src->n; i++) {
		if (e2b_kvs_add(&n, src->v[i].key, src->v[i].value)) {
			e2b_kvs_free(&n);
			return -ENOMEM;
		}
	}
	*dst = n;
	return 0;
}

const char *e2b_kvs_get(const struct e2b_kvs *kvs, const char *key)
{
	size_t i;

	for (i = 0; i < kvs->n; i++)
		if (!strcmp(kvs->v[i].key, key))
			return kvs->v[i].value;
	return NULL;
}

void e2b_sandbox_free(struct e2b_sandbox *sb)
{
	e2b_kvs_free(&sb->metadata);
	e2b_net_free(&sb->net);
	explicit_bzero(sb->envd_token, sizeof(sb->envd_token));
	explicit_bzero(sb->traffic_token, sizeof(sb->traffic_token));
}

static void proc_config_free(struct e2b_proc_config *c)
{
	size_t i;

	free(c->cmd);
	for (i = 0; i < c->nargs; i++)
		free(c->args[i]);
	free(c->args);
	e2b_kvs_free(&c->envs);
	free(c->cwd);
	memset(c, 0, sizeof(*c));
}

void e2b_start_free(struct e2b_start *s)
{
	proc_config_free(&s->proc);
	free(s->tag);
	s->tag = NULL;
}

void e2b_proc_info_free(struct e2b_proc_info *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		proc_config_free(&p[i].config);
		free(p[i].tag);
	}
	free(p);
}

void e2b_entry_free(struct e2b_entry *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(e[i].name);
		free(e[i].path);
		free(e[i].symlink_target);
		e2b_kvs_free(&e[i].metadata);
	}
}
