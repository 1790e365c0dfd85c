// SPDX-License-Identifier: GPL-2.0
/* e2b_fake_backend.c: a small, always-consistent backend; see its header. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_fake_backend.h"

int fake_fail;

struct e2b_proc {
	int step;
};

struct e2b_watch {
	int step;
};

struct e2b_file {
	bool writing;
	size_t left;		/* bytes still to read */
	size_t written;
};

#define FAIL_IF_SET() do { if (fake_fail) return -fake_fail; } while (0)

static bool known(const char *id)
{
	return !strcmp(id, FAKE_SANDBOX);
}

static void fill_sandbox(struct e2b_sandbox *out, const char *id)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id);
	strcpy(out->template_id, "base");
	strcpy(out->envd_token, FAKE_TOKEN);
	out->started_at = 1700000000;
	out->end_at = 1700000300;
	out->vcpus = 1;
	out->memory_mb = 512;
	out->disk_mb = 1024;
	e2b_net_init(&out->net);
	e2b_kvs_add(&out->metadata, "owner", "fuzz");
}

static int f_create(void *be, const struct e2b_new_sandbox *req,
		    struct e2b_sandbox *out, char *msg)
{
	FAIL_IF_SET();
	fill_sandbox(out, FAKE_SANDBOX);
	return 0;
}

static int f_list(void *be, struct e2b_sandbox **out, size_t *n)
{
	FAIL_IF_SET();
	*out = calloc(2, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	fill_sandbox(&(*out)[0], FAKE_SANDBOX);
	fill_sandbox(&(*out)[1], "isb2");
	(*out)[1].paused = true;
	*n = 2;
	return 0;
}

static int f_get(void *be, const char *id, struct e2b_sandbox *out)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	fill_sandbox(out, id);
	return 0;
}

static int f_id(void *be, const char *id)
{
	FAIL_IF_SET();
	return known(id) ? 0 : -ENOENT;
}

static int f_id_msg(void *be, const char *id, char *msg)
{
	return f_id(be, id);
}

static int f_set_timeout(void *be, const char *id, unsigned int secs)
{
	return f_id(be, id);
}

static int f_fork(void *be, const char *id, unsigned int secs,
		  struct e2b_sandbox *out, char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	fill_sandbox(out, "isb3");
	return 0;
}

static int f_metrics(void *be, const char *id, struct e2b_metrics *out)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->timestamp = 1700000100;
	out->cpu_count = 1;
	out->cpu_used_pct = 12.5;
	out->mem_used = 1 << 20;
	out->mem_total = 512 << 20;
	return 0;
}

static int f_metrics_history(void *be, const char *id,
			     struct e2b_metrics **out, size_t *n)
{
	int ret, i;

	*out = calloc(3, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < 3; i++) {
		ret = f_metrics(be, id, &(*out)[i]);
		if (ret) {
			free(*out);
			*out = NULL;
			return ret;
		}
		(*out)[i].timestamp += 5 * i;
	}
	*n = 3;
	return 0;
}

/* Templates: "base" exists and cannot go, "snap1" was made by the API. */
static int f_template_exists(void *be, const char *name)
{
	FAIL_IF_SET();
	return !strcmp(name, "base") || !strcmp(name, "snap1") ? 0 : -ENOENT;
}

static int f_template_delete(void *be, const char *name, char *msg)
{
	FAIL_IF_SET();
	if (!strcmp(name, "base"))
		return -EACCES;
	return !strcmp(name, "snap1") ? 0 : -ENOENT;
}

static int f_snapshot(void *be, const char *id, const char *name,
		      struct e2b_snapshot *out, char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", name[0] ? name : "snap1");
	strcpy(out->sandbox, id);
	return 0;
}

static int f_list_snapshots(void *be, struct e2b_snapshot **out, size_t *n)
{
	FAIL_IF_SET();
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	strcpy((*out)[0].id, "snap1");
	strcpy((*out)[0].sandbox, FAKE_SANDBOX);
	*n = 1;
	return 0;
}

static int f_set_network(void *be, const char *id, const struct e2b_net *net,
			 char *msg)
{
	return f_id(be, id);
}

static int new_proc(const char *id, struct e2b_proc **out)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static int f_proc_start(void *be, const char *id, const struct e2b_start *req,
			struct e2b_proc **out, char *msg)
{
	return new_proc(id, out);
}

static int f_proc_connect(void *be, const char *id,
			  const struct e2b_selector *sel, struct e2b_proc **out)
{
	return new_proc(id, out);
}

/* START, STDOUT, STDERR, a timeout (a keepalive), PTY, END, then over. */
static int f_proc_next(struct e2b_proc *p, struct e2b_event *ev, int timeout_ms)
{
	memset(ev, 0, sizeof(*ev));
	ev->pid = 42;
	switch (p->step++) {
	case 0:
		ev->type = E2B_EV_START;
		return 0;
	case 1:
		ev->type = E2B_EV_STDOUT;
		ev->data = "out\n";
		ev->len = 4;
		return 0;
	case 2:
		ev->type = E2B_EV_STDERR;
		ev->data = "err\n";
		ev->len = 4;
		return 0;
	case 3:
		return -ETIMEDOUT;
	case 4:
		ev->type = E2B_EV_PTY;
		ev->data = "\x1b[0m";
		ev->len = 4;
		return 0;
	case 5:
		ev->type = E2B_EV_END;
		ev->exit_code = 1;
		strcpy(ev->error, "exit status 1");
		return 0;
	default:
		return -EPIPE;
	}
}

static void f_proc_close(struct e2b_proc *p)
{
	free(p);
}

static int f_proc_list(void *be, const char *id, struct e2b_proc_info **out,
		       size_t *n)
{
	struct e2b_proc_info *p;

	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = 42;
	p->tag = strdup("t1");
	p->config.cmd = strdup("/bin/sh");
	p->config.args = calloc(1, sizeof(char *));
	if (p->config.args) {
		p->config.args[0] = strdup("-c");
		p->config.nargs = 1;
	}
	p->config.cwd = strdup("/home/user");
	e2b_kvs_add(&p->config.envs, "A", "1");
	*out = p;
	*n = 1;
	return 0;
}

static int f_proc_sel(void *be, const char *id, const struct e2b_selector *sel)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	return sel->tag || sel->pid == 42 ? 0 : -ESRCH;
}

static int f_proc_signal(void *be, const char *id,
			 const struct e2b_selector *sel, int sig)
{
	return f_proc_sel(be, id, sel);
}

static int f_proc_input(void *be, const char *id,
			const struct e2b_selector *sel, const void *data,
			size_t len)
{
	return f_proc_sel(be, id, sel);
}

static int f_proc_update(void *be, const char *id,
			 const struct e2b_selector *sel, unsigned int cols,
			 unsigned int rows)
{
	return f_proc_sel(be, id, sel);
}

static int fill_entry(struct e2b_entry *e, const char *path, bool dir)
{
	const char *slash = strrchr(path, '/');

	memset(e, 0, sizeof(*e));
	e->name = strdup(slash && slash[1] ? slash + 1 : path);
	e->path = strdup(path);
	if (!e->name || !e->path) {
		free(e->name);
		free(e->path);
		return -ENOMEM;
	}
	e->type = dir ? E2B_FT_DIR : E2B_FT_FILE;
	e->size = dir ? 4096 : 11;
	e->mode = dir ? 0755 : 0644;
	strcpy(e->owner, "user");
	strcpy(e->group, "user");
	e->mtime = 1700000000;
	return 0;
}

static int f_fs_stat(void *be, const char *id, const char *user,
		     const char *path, struct e2b_entry *out, char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	return fill_entry(out, path, false);
}

static int f_fs_list(void *be, const char *id, const char *user,
		     const char *path, unsigned int depth,
		     struct e2b_entry **out, size_t *n, char *msg)
{
	struct e2b_entry *e;

	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	e = calloc(2, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (fill_entry(&e[0], "/home/user/a", true) ||
	    fill_entry(&e[1], "/home/user/a/b.txt", false)) {
		e2b_entry_free(e, 2);
		return -ENOMEM;
	}
	e[1].type = E2B_FT_SYMLINK;
	e[1].symlink_target = strdup("/etc/hostname");
	*out = e;
	*n = 2;
	return 0;
}

static int f_fs_mkdir(void *be, const char *id, const char *user,
		      const char *path, struct e2b_entry *out, char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	return fill_entry(out, path, true);
}

static int f_fs_move(void *be, const char *id, const char *user,
		     const char *from, const char *to, struct e2b_entry *out,
		     char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	return fill_entry(out, to, false);
}

static int f_fs_remove(void *be, const char *id, const char *user,
		       const char *path, char *msg)
{
	return f_id(be, id);
}

static int f_watch_start(void *be, const char *id, const char *user,
			 const char *path, struct e2b_watch **out, char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static int f_watch_start_recursive(void *be, const char *id,
				   const char *user, const char *path,
				   struct e2b_watch **out, char *msg)
{
	return f_watch_start(be, id, user, path, out, msg);
}

static int f_watch_next(struct e2b_watch *w, struct e2b_fs_event *ev,
			int timeout_ms)
{
	memset(ev, 0, sizeof(*ev));
	switch (w->step++) {
	case 0:
		ev->type = E2B_FS_CREATE;
		strcpy(ev->name, "new.txt");
		return 0;
	case 1:
		return -ETIMEDOUT;
	case 2:
		ev->type = E2B_FS_RENAME;
		strcpy(ev->name, "moved");
		return 0;
	default:
		return -ENOENT;
	}
}

static void f_watch_close(struct e2b_watch *w)
{
	free(w);
}

static int f_file_read(void *be, const char *id, const char *user,
		       const char *path, struct e2b_file **out, int64_t *size,
		       char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->left = 11;
	*size = 11;
	return 0;
}

static ssize_t f_file_read_chunk(struct e2b_file *f, void *buf, size_t len)
{
	size_t n = len < f->left ? len : f->left;

	memset(buf, 'x', n);
	f->left -= n;
	return n;
}

static int f_file_write(void *be, const char *id, const char *user,
			const char *path, struct e2b_file **out, char *msg)
{
	FAIL_IF_SET();
	if (!known(id))
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->writing = true;
	return 0;
}

static int f_file_write_meta(void *be, const char *id, const char *user,
			     const char *path, const struct e2b_kvs *meta,
			     struct e2b_file **out, char *msg)
{
	return f_file_write(be, id, user, path, out, msg);
}

static int f_file_write_chunk(struct e2b_file *f, const void *buf, size_t len)
{
	if (!f->writing)
		return -EBADF;
	f->written += len;
	return 0;
}

static int f_file_close(struct e2b_file *f, bool commit,
			struct e2b_entry *entry, char *msg)
{
	int ret = 0;

	if (commit && entry)
		ret = fill_entry(entry, "/home/user/up.txt", false);
	free(f);
	return ret;
}

const struct e2b_backend_ops fake_ops = {
	.create = f_create,
	.list = f_list,
	.get = f_get,
	.kill = f_id,
	.set_timeout = f_set_timeout,
	.fork = f_fork,
	.pause = f_id_msg,
	.resume = f_id_msg,
	.metrics = f_metrics,
	.metrics_history = f_metrics_history,
	.template_exists = f_template_exists,
	.template_delete = f_template_delete,
	.snapshot = f_snapshot,
	.list_snapshots = f_list_snapshots,
	.set_network = f_set_network,
	.proc_start = f_proc_start,
	.proc_connect = f_proc_connect,
	.proc_next = f_proc_next,
	.proc_close = f_proc_close,
	.proc_list = f_proc_list,
	.proc_signal = f_proc_signal,
	.proc_input = f_proc_input,
	.proc_close_stdin = f_proc_sel,
	.fs_stat = f_fs_stat,
	.fs_list = f_fs_list,
	.fs_mkdir = f_fs_mkdir,
	.fs_move = f_fs_move,
	.fs_remove = f_fs_remove,
	.proc_update = f_proc_update,
	.watch_start = f_watch_start,
	.watch_next = f_watch_next,
	.watch_close = f_watch_close,
	.watch_start_recursive = f_watch_start_recursive,
	.file_read = f_file_read,
	.file_read_chunk = f_file_read_chunk,
	.file_write = f_file_write,
	.file_write_chunk = f_file_write_chunk,
	.file_close = f_file_close,
	.file_write_meta = f_file_write_meta,
};
