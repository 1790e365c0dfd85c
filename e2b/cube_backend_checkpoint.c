// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend_checkpoint.c: cube's own extension of the E2B API on the
 * cube backend: checkpoints of a running sandbox and rollbacks to them
 * (lib/cube_runtime.h does the work, through the sandbox's VMM).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cube_backend_int.h"

/*
 * The module id of running sandbox @sid; -EBUSY while a pause is
 * snapshotting it (it is about to have no VM).
 */
static int running_id(struct cube_backend *b, const char *sid, uint64_t *id,
		      char *msg)
{
	struct sbx *s;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret && s->pausing) {
		snprintf(msg, E2B_MSG_MAX, "sandbox \"%s\" is being paused",
			 sid);
		ret = -EBUSY;
	}
	if (!ret)
		*id = s->id;
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/*
 * The runtime's reason without its "sandbox <module id>: " prefix: the
 * client knows the sandbox by its E2B id.
 */
static void copy_reason(char *msg, const char *err)
{
	const char *p = err;

	if (!strncmp(p, "sandbox ", 8)) {
		const char *c = strstr(p, ": ");

		if (c)
			p = c + 2;
	}
	snprintf(msg, E2B_MSG_MAX, "%s", p);
}

/* "cp-<n>": the first n none of sandbox @id's checkpoints is named */
static int pick_name(uint64_t id, char *name, size_t len, char *err)
{
	char (*v)[CUBE_CP_NAME_MAX] = NULL;
	size_t cnt = 0, i;
	unsigned int n;
	int ret;

	ret = cube_sandbox_cp_list(id, &v, &cnt, err);
	if (ret)
		return ret;
	for (n = 1;; n++) {
		snprintf(name, len, "cp-%u", n);
		for (i = 0; i < cnt && strcmp(v[i], name); i++)
			;
		if (i == cnt)
			break;
	}
	free(v);
	return 0;
}

int cube_be_cp_create(void *be, const char *sid, const char *name,
		      struct e2b_checkpoint *out, char *msg)
{
	char err[CUBE_ERR_MAX] = "", gen[CUBE_CP_NAME_MAX];
	unsigned int tries;
	uint64_t id;
	int ret;

	ret = running_id(be, sid, &id, msg);
	if (ret)
		return ret;
	if (name[0]) {
		snprintf(out->name, sizeof(out->name), "%s", name);
		ret = cube_sandbox_cp_create(id, name, &out->ms, &out->pages,
					     err);
	} else {
		/* a racing request may take the same name first */
		for (tries = 0; tries < 8; tries++) {
			ret = pick_name(id, gen, sizeof(gen), err);
			if (!ret)
				ret = cube_sandbox_cp_create(id, gen, &out->ms,
							     &out->pages, err);
			if (ret != -EEXIST)
				break;
		}
		snprintf(out->name, sizeof(out->name), "%s", gen);
	}
	if (ret)
		copy_reason(msg, err);
	return ret;
}

int cube_be_cp_list(void *be, const char *sid,
		    char (**out)[E2B_CP_NAME_MAX + 1], size_t *n, char *msg)
{
	char err[CUBE_ERR_MAX] = "";
	uint64_t id;
	int ret;

	_Static_assert(CUBE_CP_NAME_MAX == E2B_CP_NAME_MAX + 1,
		       "a checkpoint name is as long in both");
	ret = running_id(be, sid, &id, msg);
	if (ret)
		return ret;
	ret = cube_sandbox_cp_list(id, out, n, err);
	if (ret)
		copy_reason(msg, err);
	return ret;
}

int cube_be_cp_remove(void *be, const char *sid, const char *name, char *msg)
{
	char err[CUBE_ERR_MAX] = "";
	uint64_t id;
	int ret;

	ret = running_id(be, sid, &id, msg);
	if (ret)
		return ret;
	ret = cube_sandbox_cp_remove(id, name, err);
	if (ret)
		copy_reason(msg, err);
	return ret;
}

int cube_be_rollback(void *be, const char *sid, const char *name,
		     struct e2b_rollback *out, char *msg)
{
	char err[CUBE_ERR_MAX] = "";
	struct cube_rollback r;
	uint64_t id;
	int ret;

	ret = running_id(be, sid, &id, msg);
	if (ret)
		return ret;
	ret = cube_sandbox_rollback(id, name[0] ? name : NULL, &r, err);
	if (ret) {
		copy_reason(msg, err);
		return ret;
	}
	snprintf(out->target, sizeof(out->target), "%s", r.target);
	out->us = r.vmm_us;
	out->pages = r.pages;
	return 0;
}
