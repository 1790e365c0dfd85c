// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend_proc.c: the E2B backend's processes and directory
 * watches: a sandbox's E2B id to its module id, then the process table
 * (cube_proc.c).
 */
#include <pthread.h>
#include <stdint.h>

#include "cube_backend_int.h"
#include "cube_proc.h"

/* --- processes --- */

int cube_be_proc_start(void *be, const char *sid, const struct e2b_start *req,
		       struct e2b_proc **out, char *msg)
{
	struct cube_backend *b = be;
	struct e2b_kvs env = { 0 };
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
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
int cube_be_proc_connect(void *be, const char *sid,
			 const struct e2b_selector *sel, struct e2b_proc **out)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?: cube_proc_connect(b->procs, id, sel, out);
}

int cube_be_proc_list(void *be, const char *sid, struct e2b_proc_info **out,
		      size_t *n)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?: cube_proc_list(b->procs, id, out, n);
}

int cube_be_proc_signal(void *be, const char *sid,
			const struct e2b_selector *sel, int sig)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?: cube_proc_signal(b->procs, id, sel, sig);
}

int cube_be_proc_input(void *be, const char *sid,
		       const struct e2b_selector *sel, const void *data,
		       size_t len)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?:
	       cube_proc_input(b->procs, id, sel, data, len);
}

int cube_be_proc_close_stdin(void *be, const char *sid,
			     const struct e2b_selector *sel)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?: cube_proc_close_stdin(b->procs, id, sel);
}

int cube_be_proc_update(void *be, const char *sid,
			const struct e2b_selector *sel, unsigned int cols,
			unsigned int rows)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?:
	       cube_proc_resize(b->procs, id, sel, cols, rows);
}

int cube_be_watch_start(void *be, const char *sid, const char *user,
			const char *path, struct e2b_watch **out, char *msg)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?:
	       cube_watch_start(b->procs, id, path, false, out, msg);
}

int cube_be_watch_start_recursive(void *be, const char *sid,
				  const char *user, const char *path,
				  struct e2b_watch **out, char *msg)
{
	struct cube_backend *b = be;
	uint64_t id;

	return cube_be_sandbox_id(b, sid, &id) ?:
	       cube_watch_start(b->procs, id, path, true, out, msg);
}

void cube_be_proc_close(struct e2b_proc *p)
{
	cube_proc_reader_close(p);
}
