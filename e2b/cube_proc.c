// SPDX-License-Identifier: GPL-2.0
/*
 * cube_proc.c: commands running in sandboxes, each pumped by one thread,
 * read by any number of streams.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_client.h"
#include "cube_audit.h"
#include "cube_proc.h"
#include "cube_runtime.h"
#include "proc_queue.h"

/*
 * Output queued for slow readers, in real bytes (proc_queue.h), before a
 * command's pump stops reading it: the agent's flow control then holds the
 * command.  Per command, and per sandbox across all its commands.
 */
#define QUEUE_MAX		(4u << 20)
#define SANDBOX_QUEUE_MAX	(32u << 20)
#define PUMP_POLL_MS	50
/*
 * After a resume, how long an ATTACH may be refused because the restored
 * agent has not yet seen the old connection break.
 */
#define ADOPT_WAIT_MS	30000

/* what the commands of one sandbox have queued */
struct proc_usage {
	struct proc_usage *next;
	uint64_t sandbox;
	size_t bytes;
	unsigned int procs;
};

struct cube_proc {
	struct cube_proc_table *t;
	struct cube_proc *next;
	uint64_t sandbox;
	uint32_t pid;
	char *tag;
	struct e2b_proc_config cfg;
	/* for the behaviour log */
	char user[E2B_USER_MAX + 1];
	struct timespec started;
	uint64_t out_bytes, err_bytes;
	bool exited;		/* its EXIT came: @status is real */
	struct cube_exec_status status;
	const char *lost;	/* else why it ended without one */
	struct cube_agent *a;
	pthread_t thread;
	/* the queue */
	struct pq q;
	struct proc_usage *use;	/* its sandbox's */
	struct e2b_proc *readers;
	bool ended;		/* END queued */
	bool dead;		/* pump gone */
	/* requests for the pump */
	unsigned char *in;
	size_t in_len;
	bool close_stdin;
	int sig;
	bool pty;
	bool keep;		/* started with KEEP: outlives a pause */
	uint16_t rows, cols;	/* a resize to pass on, 0: none */
};

/* a reader */
struct e2b_proc {
	struct cube_proc *p;
	struct e2b_proc *next;
	struct pq_reader pr;
	bool start_sent;
	bool end_sent;
	unsigned char *buf;
};

struct cube_proc_table {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cube_proc *procs;
	struct proc_usage *usage;
	struct e2b_watch *watches;
	bool quit;
};

/* a directory watch: its own agent connection, read by one stream */
struct e2b_watch {
	struct cube_proc_table *t;
	struct e2b_watch *next;
	uint64_t sandbox;
	struct cube_agent *a;
};

int cube_proc_table_new(struct cube_proc_table **out)
{
	struct cube_proc_table *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = t;
	return 0;
}

/* @p counts against its sandbox's usage; locked */
static int usage_get_locked(struct cube_proc *p)
{
	struct cube_proc_table *t = p->t;
	struct proc_usage *u;

	for (u = t->usage; u; u = u->next)
		if (u->sandbox == p->sandbox)
			break;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->sandbox = p->sandbox;
		u->next = t->usage;
		t->usage = u;
	}
	u->procs++;
	p->use = u;
	return 0;
}

/* the queue of @p grew or shrank by @delta bytes; locked */
static void account_locked(struct cube_proc *p, long delta)
{
	if (p->use)
		p->use->bytes += (size_t)delta;	/* modulo 2^N: a shrink too */
}

static void usage_put_locked(struct cube_proc *p)
{
	struct proc_usage **up, *u = p->use;

	if (!u)
		return;
	p->use = NULL;
	if (--u->procs)
		return;
	for (up = &p->t->usage; *up; up = &(*up)->next) {
		if (*up == u) {
			*up = u->next;
			break;
		}
	}
	free(u);
}

/* frees @p; locked when it was counted (p->use set) */
static void proc_free(struct cube_proc *p)
{
	size_t i;

	account_locked(p, -(long)p->q.bytes);
	usage_put_locked(p);
	pq_free(&p->q);
	free(p->tag);
	free(p->cfg.cmd);
	for (i = 0; i < p->cfg.nargs; i++)
		free(p->cfg.args[i]);
	free(p->cfg.args);
	e2b_kvs_free(&p->cfg.envs);
	free(p->cfg.cwd);
	free(p->in);
	free(p);
}

/* Unlink and free @p if its pump is gone and nobody reads it; locked. */
static void proc_reap_locked(struct cube_proc *p)
{
	struct cube_proc **pp;

	if (!p->dead || p->readers)
		return;
	for (pp = &p->t->procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	pthread_join(p->thread, NULL);
	proc_free(p);
}

void cube_proc_table_free(struct cube_proc_table *t)
{
	struct cube_proc *p;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->quit = true;
	pthread_cond_broadcast(&t->cond);
	while ((p = t->procs)) {
		while (!p->dead)
			pthread_cond_wait(&t->cond, &t->lock);
		t->procs = p->next;
		pthread_mutex_unlock(&t->lock);
		pthread_join(p->thread, NULL);
		pthread_mutex_lock(&t->lock);
		proc_free(p);
	}
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	free(t);
}

/* --- the queue --- */

static void push_data_locked(struct cube_proc *p, enum e2b_event_type type,
			     const void *data, size_t len)
{
	const unsigned char *d = data;

	while (len) {
		size_t n = len < PQ_CHUNK_MAX ? len : PQ_CHUNK_MAX;
		long delta = pq_push_data(&p->q, type, d, n);

		if (delta < 0)
			break;	/* out of memory: this output is lost */
		account_locked(p, delta);
		d += n;
		len -= n;
	}
	pthread_cond_broadcast(&p->t->cond);
}

static void push_end_locked(struct cube_proc *p, int code, int sig,
			    const char *error)
{
	long delta = pq_push_end(&p->q, code, sig, error);

	p->ended = true;
	if (delta >= 0)
		account_locked(p, delta);
	pthread_cond_broadcast(&p->t->cond);
}

/* the pump waits while its command or its sandbox has this much queued */
static bool queue_full_locked(const struct cube_proc *p)
{
	return p->q.bytes > QUEUE_MAX ||
	       (p->use && p->use->bytes > SANDBOX_QUEUE_MAX);
}

/* --- the pump --- */

static void pass_requests_locked(struct cube_proc *p)
{
	struct cube_proc_table *t = p->t;

	if (p->sig) {
		int sig = p->sig;

		p->sig = 0;
		pthread_mutex_unlock(&t->lock);
		cube_agent_exec_signal(p->a, sig);
		pthread_mutex_lock(&t->lock);
	}
	if (p->in_len) {
		unsigned char *buf = p->in, *nb;
		size_t len = p->in_len;
		ssize_t n;

		/* take the buffer; writers start a new one meanwhile */
		p->in = NULL;
		p->in_len = 0;
		pthread_mutex_unlock(&t->lock);
		n = cube_agent_exec_stdin(p->a, buf, len);
		pthread_mutex_lock(&t->lock);
		if (n == -EAGAIN)
			n = 0;
		if (n < 0) {
			free(buf);	/* stdin is closed or gone */
		} else if ((size_t)n < len) {
			/* put the rest back in front of what came since */
			nb = realloc(buf, len - n + p->in_len);
			if (nb) {
				memmove(nb, nb + n, len - n);
				if (p->in_len)
					memcpy(nb + len - n, p->in, p->in_len);
				free(p->in);
				p->in = nb;
				p->in_len += len - n;
			} else {
				free(buf);
			}
		} else {
			free(buf);
		}
	}
	if (p->rows) {
		uint16_t rows = p->rows, cols = p->cols;

		p->rows = p->cols = 0;
		pthread_mutex_unlock(&t->lock);
		cube_agent_exec_resize(p->a, rows, cols);
		pthread_mutex_lock(&t->lock);
	}
	if (p->close_stdin && !p->in_len) {
		p->close_stdin = false;
		pthread_mutex_unlock(&t->lock);
		cube_agent_exec_close_stdin(p->a);
		pthread_mutex_lock(&t->lock);
	}
}

/*
 * The fields of the behaviour log's "command" line, once a command ended
 * or its connection was lost: what ran (argv, cwd, user, the environment's
 * names only), how it ended, how long it took and how much it wrote.
 * Locked; the line is written after the lock is dropped.
 */
static struct json_object *audit_command(const struct cube_proc *p)
{
	struct json_object *f = json_object_new_object();
	struct json_object *env = json_object_new_array();
	struct timespec now;
	const char **argv;
	size_t i;

	argv = calloc(p->cfg.nargs + 1, sizeof(*argv));
	if (!f || !env || !argv) {
		json_object_put(f);
		json_object_put(env);
		free(argv);
		return NULL;
	}
	argv[0] = p->cfg.cmd;
	for (i = 0; i < p->cfg.nargs; i++)
		argv[i + 1] = p->cfg.args[i];
	json_object_object_add(f, "argv", cube_audit_strv(argv,
							  p->cfg.nargs + 1));
	free(argv);
	json_object_object_add(f, "cwd", cube_audit_str(p->cfg.cwd));
	json_object_object_add(f, "user", cube_audit_str(p->user[0] ?
							 p->user : "user"));
	for (i = 0; i < p->cfg.envs.n && i < CUBE_AUDIT_LIST_MAX; i++)
		json_object_array_add(env, cube_audit_str(p->cfg.envs.v[i].key));
	json_object_object_add(f, "env", env);
	json_object_object_add(f, "pid", json_object_new_int64(p->pid));
	if (p->exited && p->status.exited)
		json_object_object_add(f, "exit",
				       json_object_new_int(p->status.code));
	else if (p->exited)
		json_object_object_add(f, "signal",
				       json_object_new_int(p->status.signal));
	else
		json_object_object_add(f, "ended", cube_audit_str(p->lost));
	/* a kept one runs on in the guest, to be taken over after a resume */
	if (!p->exited && p->keep)
		json_object_object_add(f, "kept", json_object_new_boolean(true));
	if (p->exited && p->status.timed_out)
		json_object_object_add(f, "timed_out",
				       json_object_new_boolean(true));
	clock_gettime(CLOCK_MONOTONIC, &now);
	json_object_object_add(f, "duration_ms", json_object_new_int64(
		(now.tv_sec - p->started.tv_sec) * 1000 +
		(now.tv_nsec - p->started.tv_nsec) / 1000000));
	json_object_object_add(f, "stdout_bytes",
			       json_object_new_int64(p->out_bytes));
	json_object_object_add(f, "stderr_bytes",
			       json_object_new_int64(p->err_bytes));
	return f;
}

static void *pump(void *arg)
{
	struct cube_proc *p = arg;
	struct cube_proc_table *t = p->t;
	struct json_object *audit;
	struct cube_exec_event ev;
	uint64_t sandbox;
	int ret;

	pthread_mutex_lock(&t->lock);
	while (!p->ended) {
		if (t->quit) {
			p->lost = "the server is shutting down";
			push_end_locked(p, -1, 0, p->lost);
			break;
		}
		pass_requests_locked(p);
		if (queue_full_locked(p)) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += PUMP_POLL_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&t->cond, &t->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&t->lock);
		ret = cube_agent_exec_next(p->a, &ev, PUMP_POLL_MS);
		pthread_mutex_lock(&t->lock);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret) {
			p->lost = "lost the connection to the sandbox";
			push_end_locked(p, -1, 0, p->lost);
			break;
		}
		if (ev.type == CUBE_EXEC_STDOUT || ev.type == CUBE_EXEC_STDERR) {
			if (ev.type == CUBE_EXEC_STDOUT)
				p->out_bytes += ev.len;
			else
				p->err_bytes += ev.len;
			if (!p->readers || !ev.len)
				continue;	/* nobody listens */
			push_data_locked(p, p->pty ? E2B_EV_PTY :
					 ev.type == CUBE_EXEC_STDOUT ?
					 E2B_EV_STDOUT : E2B_EV_STDERR,
					 ev.data, ev.len);
		} else if (ev.type == CUBE_EXEC_EXIT) {
			const struct cube_exec_status *st = &ev.status;

			p->exited = true;
			p->status = *st;
			push_end_locked(p, st->exited ? st->code : -1,
					st->exited ? 0 : st->signal,
					st->timed_out ? "timed out" : NULL);
		}
	}
	p->dead = true;
	pthread_cond_broadcast(&t->cond);
	audit = audit_command(p);
	sandbox = p->sandbox;
	if (!p->readers && !t->quit) {
		struct cube_proc **pp;

		/* nobody reads it (a background command): free it here */
		for (pp = &t->procs; *pp; pp = &(*pp)->next) {
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		}
		pthread_detach(pthread_self());
		/* what it queued no longer counts against its sandbox */
		account_locked(p, -(long)p->q.bytes);
		usage_put_locked(p);
		pthread_mutex_unlock(&t->lock);
		cube_audit_id(sandbox, "command", "api", audit);
		cube_agent_close(p->a);
		proc_free(p);
		return NULL;
	}
	pthread_mutex_unlock(&t->lock);
	cube_audit_id(sandbox, "command", "api", audit);
	cube_agent_close(p->a);
	p->a = NULL;
	return NULL;
}

/* --- starting --- */

static int copy_config(struct e2b_proc_config *dst,
		       const struct e2b_proc_config *src)
{
	size_t i;

	memset(dst, 0, sizeof(*dst));
	dst->cmd = strdup(src->cmd);
	dst->args = calloc(src->nargs + 1, sizeof(*dst->args));
	if (!dst->cmd || !dst->args)
		return -ENOMEM;
	for (i = 0; i < src->nargs; i++) {
		dst->args[i] = strdup(src->args[i]);
		if (!dst->args[i])
			return -ENOMEM;
		dst->nargs++;
	}
	if (src->cwd && !(dst->cwd = strdup(src->cwd)))
		return -ENOMEM;
	return e2b_kvs_copy(&dst->envs, &src->envs);
}

static char *env_entry(const char *k, const char *v)
{
	char *s;

	if (asprintf(&s, "%s=%s", k, v) < 0)
		return NULL;
	return s;
}

static void free_strv(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* PATH and HOME, then the sandbox's variables, then the command's. */
static char **build_env(const struct e2b_start *req,
			const struct e2b_kvs *extra)
{
	size_t n = 2 + (extra ? extra->n : 0) + req->proc.envs.n, i, k = 0;
	const char *user = req->user[0] ? req->user : "root";
	char **v = calloc(n + 1, sizeof(*v));
	char home[64];

	if (!v)
		return NULL;
	if (!strcmp(user, "root"))
		snprintf(home, sizeof(home), "/root");
	else
		snprintf(home, sizeof(home), "/home/%s", user);
	v[k++] = env_entry("PATH",
			   "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	v[k++] = env_entry("HOME", home);
	for (i = 0; extra && i < extra->n; i++)
		v[k++] = env_entry(extra->v[i].key, extra->v[i].value);
	for (i = 0; i < req->proc.envs.n; i++)
		v[k++] = env_entry(req->proc.envs.v[i].key,
				   req->proc.envs.v[i].value);
	for (i = 0; i < k; i++) {
		if (!v[i]) {
			free_strv(v);
			return NULL;
		}
	}
	return v;
}

static struct e2b_proc *attach_locked(struct cube_proc *p)
{
	struct e2b_proc *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->p = p;
	pq_attach(&p->q, &r->pr);
	r->next = p->readers;
	p->readers = r;
	return r;
}

int cube_proc_start(struct cube_proc_table *t, uint64_t sandbox,
		    const struct e2b_start *req,
		    const struct e2b_kvs *env_extra,
		    struct e2b_proc **out, char *msg)
{
	struct cube_exec_spec spec = { 0 };
	struct cube_agent_info info;
	struct cube_proc *p;
	char **argv = NULL, **envp = NULL;
	size_t i;
	int ret;

	if (req->pty && (!req->cols || req->cols > UINT16_MAX || !req->rows ||
			 req->rows > UINT16_MAX)) {
		snprintf(msg, E2B_MSG_MAX, "invalid pty size %ux%u", req->cols,
			 req->rows);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->t = t;
	p->sandbox = sandbox;
	pq_init(&p->q);
	/* claim the sandbox's slot first: starting takes time */
	pthread_mutex_lock(&t->lock);
	ret = usage_get_locked(p);
	if (!ret && p->use->procs > CUBE_PROC_MAX) {
		usage_put_locked(p);
		snprintf(msg, E2B_MSG_MAX,
			 "the sandbox runs %u commands, the most it may",
			 CUBE_PROC_MAX);
		ret = -EAGAIN;
	}
	pthread_mutex_unlock(&t->lock);
	if (ret) {
		free(p);
		return ret;
	}
	ret = copy_config(&p->cfg, &req->proc);
	if (!ret && req->tag && !(p->tag = strdup(req->tag)))
		ret = -ENOMEM;
	snprintf(p->user, sizeof(p->user), "%s", req->user);
	clock_gettime(CLOCK_MONOTONIC, &p->started);
	argv = calloc(req->proc.nargs + 2, sizeof(*argv));
	envp = build_env(req, env_extra);
	if (!ret && (!argv || !envp))
		ret = -ENOMEM;
	if (ret)
		goto err;
	argv[0] = req->proc.cmd;
	for (i = 0; i < req->proc.nargs; i++)
		argv[i + 1] = req->proc.args[i];
	spec.argv = (const char *const *)argv;
	spec.envp = (const char *const *)envp;
	spec.cwd = req->proc.cwd;
	spec.user = req->user[0] ? req->user : NULL;
	spec.pty = req->pty;
	/* a deadline past what the agent takes is none */
	if (req->timeout_ms <= CUBE_AGENT_MAX_TIMEOUT_MS)
		spec.timeout_ms = req->timeout_ms;
	spec.rows = req->rows;
	spec.cols = req->cols;
	p->pty = req->pty;

	ret = cube_sandbox_agent(sandbox, &p->a);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot reach the sandbox's agent");
		ret = ret == -ENOENT || ret == -ECONNREFUSED ? -ECONNREFUSED : ret;
		goto err;
	}
	cube_agent_set_timeout(p->a, 10000);
	/* an agent that can park commands keeps this one over a pause */
	if (!cube_agent_ping(p->a, &info) && info.version >= 4)
		spec.keep = p->keep = true;
	ret = cube_agent_exec_start(p->a, &spec, &p->pid);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "%s", cube_agent_error(p->a));
		goto err;
	}
	cube_agent_set_timeout(p->a, -1);
	/* a pty's stdin stays open: closing it would type ^D */
	if (!req->stdin_open && !req->pty)
		p->close_stdin = true;

	pthread_mutex_lock(&t->lock);
	*out = attach_locked(p);
	if (!*out) {
		pthread_mutex_unlock(&t->lock);
		cube_agent_exec_signal(p->a, 9);
		ret = -ENOMEM;
		goto err;
	}
	p->next = t->procs;
	t->procs = p;
	ret = pthread_create(&p->thread, NULL, pump, p);
	if (ret) {
		t->procs = p->next;
		pq_detach(&p->q, &(*out)->pr);
		free(*out);
		pthread_mutex_unlock(&t->lock);
		cube_agent_exec_signal(p->a, 9);
		ret = -ret;
		goto err;
	}
	pthread_mutex_unlock(&t->lock);
	free(argv);
	free_strv(envp);
	return 0;
err:
	if (p->a)
		cube_agent_close(p->a);
	pthread_mutex_lock(&t->lock);
	usage_put_locked(p);
	pthread_mutex_unlock(&t->lock);
	proc_free(p);
	free(argv);
	free_strv(envp);
	return ret;
}

int cube_proc_save(struct cube_proc_table *t, uint64_t sandbox,
		   struct cube_proc_saved **out, size_t *n)
{
	struct cube_proc_saved *v;
	struct cube_proc *p;
	size_t cnt = 0;
	int ret = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&t->lock);
	for (p = t->procs; p; p = p->next)
		cnt += p->sandbox == sandbox && !p->ended && p->keep;
	v = cnt ? calloc(cnt, sizeof(*v)) : NULL;
	if (cnt && !v)
		ret = -ENOMEM;
	for (p = t->procs; !ret && p; p = p->next) {
		struct cube_proc_saved *sp = &v[*n];

		if (p->sandbox != sandbox || p->ended || !p->keep)
			continue;
		(*n)++;
		sp->pid = p->pid;
		sp->pty = p->pty;
		ret = copy_config(&sp->cfg, &p->cfg);
		e2b_kvs_free(&sp->cfg.envs);
		if (!ret && p->tag && !(sp->tag = strdup(p->tag)))
			ret = -ENOMEM;
	}
	pthread_mutex_unlock(&t->lock);
	if (ret) {
		cube_proc_saved_free(v, *n);
		*n = 0;
		return ret;
	}
	*out = v;
	return 0;
}

void cube_proc_saved_free_one(struct cube_proc_saved *sp)
{
	size_t j;

	free(sp->tag);
	free(sp->cfg.cmd);
	for (j = 0; j < sp->cfg.nargs; j++)
		free(sp->cfg.args[j]);
	free(sp->cfg.args);
	e2b_kvs_free(&sp->cfg.envs);
	free(sp->cfg.cwd);
	memset(sp, 0, sizeof(*sp));
}

void cube_proc_saved_free(struct cube_proc_saved *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		cube_proc_saved_free_one(&v[i]);
	free(v);
}

/* Takes command @sp over in @sandbox; @why says why not. */
static int adopt_one(struct cube_proc_table *t, uint64_t sandbox,
		     const struct cube_proc_saved *sp, char *why, size_t len)
{
	struct timespec now, end;
	struct cube_proc *p;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->t = t;
	p->sandbox = sandbox;
	p->pid = sp->pid;
	p->pty = sp->pty;
	p->keep = true;
	/* its behaviour-log line counts from the take-over */
	clock_gettime(CLOCK_MONOTONIC, &p->started);
	pq_init(&p->q);
	pthread_mutex_lock(&t->lock);
	ret = usage_get_locked(p);
	if (!ret && p->use->procs > CUBE_PROC_MAX) {
		usage_put_locked(p);
		snprintf(why, len, "the sandbox runs %u commands already",
			 CUBE_PROC_MAX);
		ret = -EAGAIN;
	}
	pthread_mutex_unlock(&t->lock);
	if (ret) {
		free(p);
		return ret;
	}
	ret = copy_config(&p->cfg, &sp->cfg);
	if (!ret && sp->tag && !(p->tag = strdup(sp->tag)))
		ret = -ENOMEM;
	if (ret) {
		snprintf(why, len, "out of memory");
		goto err;
	}
	ret = cube_sandbox_agent(sandbox, &p->a);
	if (ret) {
		snprintf(why, len, "cannot reach the sandbox's agent: %s",
			 strerror(-ret));
		goto err;
	}
	cube_agent_set_timeout(p->a, 10000);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ADOPT_WAIT_MS / 1000;
	/* until the agent noticed the connection the snapshot had is gone */
	while ((ret = cube_agent_exec_attach(p->a, sp->pid)) == -EBUSY) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000L }, NULL);
	}
	if (ret) {
		snprintf(why, len, "%s", cube_agent_error(p->a));
		goto err;
	}
	cube_agent_set_timeout(p->a, -1);
	pthread_mutex_lock(&t->lock);
	p->next = t->procs;
	t->procs = p;
	ret = -pthread_create(&p->thread, NULL, pump, p);
	if (ret) {
		t->procs = p->next;
		pthread_mutex_unlock(&t->lock);
		snprintf(why, len, "cannot start its thread");
		goto err;
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
err:
	if (p->a)
		cube_agent_close(p->a);
	pthread_mutex_lock(&t->lock);
	usage_put_locked(p);
	pthread_mutex_unlock(&t->lock);
	proc_free(p);
	return ret;
}

size_t cube_proc_adopt(struct cube_proc_table *t, uint64_t sandbox,
		       const struct cube_proc_saved *v, size_t n)
{
	char why[CUBE_AGENT_MAX_MESSAGE + 64];
	size_t i, done = 0;

	for (i = 0; i < n; i++) {
		why[0] = 0;
		if (adopt_one(t, sandbox, &v[i], why, sizeof(why)))
			fprintf(stderr,
				"cubed: sandbox %llu: command %u (%s) is not taken over after the resume: %s\n",
				(unsigned long long)sandbox, v[i].pid,
				v[i].cfg.cmd, why);
		else
			done++;
	}
	return done;
}

static struct cube_proc *find_locked(struct cube_proc_table *t,
				     uint64_t sandbox,
				     const struct e2b_selector *sel)
{
	struct cube_proc *p;

	for (p = t->procs; p; p = p->next) {
		if (p->sandbox != sandbox || p->ended)
			continue;
		if (sel->tag ? (p->tag && !strcmp(p->tag, sel->tag)) :
		    p->pid == sel->pid)
			return p;
	}
	return NULL;
}

int cube_proc_connect(struct cube_proc_table *t, uint64_t sandbox,
		      const struct e2b_selector *sel, struct e2b_proc **out)
{
	struct cube_proc *p;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	p = find_locked(t, sandbox, sel);
	if (!p)
		ret = -ENOENT;
	else if (!(*out = attach_locked(p)))
		ret = -ENOMEM;
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int cube_proc_next(struct e2b_proc *r, struct e2b_event *ev, int timeout_ms)
{
	struct cube_proc *p = r->p;
	struct cube_proc_table *t = p->t;
	struct timespec ts;
	struct pq_event *e;
	int ret = 0;

	memset(ev, 0, sizeof(*ev));
	if (!r->start_sent) {
		r->start_sent = true;
		ev->type = E2B_EV_START;
		ev->pid = p->pid;
		return 0;
	}
	if (r->end_sent)
		return -EPIPE;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->lock);
	for (;;) {
		e = pq_peek(&r->pr);
		if (e)
			break;
		if (p->dead) {
			ret = -EIO;
			goto out;
		}
		if (pthread_cond_timedwait(&t->cond, &t->lock, &ts) == ETIMEDOUT) {
			ret = -ETIMEDOUT;
			goto out;
		}
	}
	free(r->buf);
	r->buf = NULL;
	if (e->len) {
		r->buf = malloc(e->len);
		if (!r->buf) {
			ret = -ENOMEM;
			goto out;
		}
		memcpy(r->buf, e->data, e->len);
	}
	ev->type = e->type;
	ev->data = r->buf;
	ev->len = e->len;
	ev->exit_code = e->exit_code;
	ev->signal = e->signal;
	if (e->type == E2B_EV_END) {
		snprintf(ev->error, sizeof(ev->error), "%s",
			 (const char *)e->data);
		r->end_sent = true;
	}
	account_locked(p, pq_advance(&p->q, &r->pr));
	pthread_cond_broadcast(&t->cond);
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void cube_proc_reader_close(struct e2b_proc *r)
{
	struct cube_proc *p;
	struct cube_proc_table *t;
	struct e2b_proc **rp;

	if (!r)
		return;
	p = r->p;
	t = p->t;
	pthread_mutex_lock(&t->lock);
	for (rp = &p->readers; *rp; rp = &(*rp)->next) {
		if (*rp == r) {
			*rp = r->next;
			break;
		}
	}
	account_locked(p, pq_detach(&p->q, &r->pr));
	proc_reap_locked(p);
	pthread_mutex_unlock(&t->lock);
	free(r->buf);
	free(r);
}

int cube_proc_list(struct cube_proc_table *t, uint64_t sandbox,
		   struct e2b_proc_info **out, size_t *n)
{
	struct e2b_proc_info *v = NULL;
	struct cube_proc *p;
	size_t cnt = 0;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (p = t->procs; p; p = p->next)
		if (p->sandbox == sandbox && !p->ended)
			cnt++;
	v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	cnt = 0;
	for (p = t->procs; p && !ret; p = p->next) {
		if (p->sandbox != sandbox || p->ended)
			continue;
		v[cnt].pid = p->pid;
		if (p->tag && !(v[cnt].tag = strdup(p->tag)))
			ret = -ENOMEM;
		if (!ret)
			ret = copy_config(&v[cnt].config, &p->cfg);
		cnt++;
	}
	pthread_mutex_unlock(&t->lock);
	if (ret) {
		e2b_proc_info_free(v, cnt);
		return ret;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int cube_proc_signal(struct cube_proc_table *t, uint64_t sandbox,
		     const struct e2b_selector *sel, int sig)
{
	struct cube_proc *p;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	p = find_locked(t, sandbox, sel);
	if (p)
		p->sig = sig;
	else
		ret = -ENOENT;
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int cube_proc_input(struct cube_proc_table *t, uint64_t sandbox,
		    const struct e2b_selector *sel, const void *data,
		    size_t len)
{
	struct cube_proc *p;
	unsigned char *nb;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	p = find_locked(t, sandbox, sel);
	if (!p) {
		ret = -ENOENT;
	} else if (p->in_len + len > QUEUE_MAX) {
		ret = -EAGAIN;
	} else if (len) {
		nb = realloc(p->in, p->in_len + len);
		if (!nb) {
			ret = -ENOMEM;
		} else {
			memcpy(nb + p->in_len, data, len);
			p->in = nb;
			p->in_len += len;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int cube_proc_close_stdin(struct cube_proc_table *t, uint64_t sandbox,
			  const struct e2b_selector *sel)
{
	struct cube_proc *p;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	p = find_locked(t, sandbox, sel);
	if (p)
		p->close_stdin = true;
	else
		ret = -ENOENT;
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int cube_proc_resize(struct cube_proc_table *t, uint64_t sandbox,
		     const struct e2b_selector *sel, unsigned int cols,
		     unsigned int rows)
{
	struct cube_proc *p;
	int ret = 0;

	if (!cols || cols > UINT16_MAX || !rows || rows > UINT16_MAX)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	p = find_locked(t, sandbox, sel);
	if (!p) {
		ret = -ENOENT;
	} else if (!p->pty) {
		ret = -EINVAL;
	} else {
		p->rows = rows;
		p->cols = cols;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void cube_proc_drop_sandbox(struct cube_proc_table *t, uint64_t sandbox)
{
	struct cube_proc *p;

	pthread_mutex_lock(&t->lock);
	for (p = t->procs; p; p = p->next)
		if (p->sandbox == sandbox && !p->ended)
			p->sig = 9;
	pthread_mutex_unlock(&t->lock);
}

/* --- directory watches --- */

int cube_watch_start(struct cube_proc_table *t, uint64_t sandbox,
		     const char *path, bool recursive, struct e2b_watch **out,
		     char *msg)
{
	struct e2b_watch *w, *x;
	unsigned int n = 0;
	int ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->t = t;
	w->sandbox = sandbox;
	/* count and claim a slot first: the agent connection takes time */
	pthread_mutex_lock(&t->lock);
	for (x = t->watches; x; x = x->next)
		n += x->sandbox == sandbox;
	if (n >= CUBE_WATCH_MAX) {
		pthread_mutex_unlock(&t->lock);
		free(w);
		snprintf(msg, E2B_MSG_MAX,
			 "at most %d directory watches per sandbox",
			 CUBE_WATCH_MAX);
		return -EAGAIN;
	}
	w->next = t->watches;
	t->watches = w;
	pthread_mutex_unlock(&t->lock);

	ret = cube_sandbox_agent(sandbox, &w->a);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot reach the sandbox's agent");
		ret = ret == -ENOENT || ret == -ECONNREFUSED ? -ECONNREFUSED : ret;
		goto err;
	}
	cube_agent_set_timeout(w->a, 10000);
	ret = recursive ? cube_agent_watch_recursive(w->a, path) :
			  cube_agent_watch(w->a, path);
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "%s", cube_agent_error(w->a));
		goto err;
	}
	*out = w;
	return 0;
err:
	cube_watch_close(w);
	return ret;
}

int cube_watch_next(struct e2b_watch *w, struct e2b_fs_event *ev,
		    int timeout_ms)
{
	struct cube_watch_event we;
	int ret;

	memset(ev, 0, sizeof(*ev));
	ret = cube_agent_watch_next(w->a, &we, timeout_ms);
	if (ret)
		return ret;
	ev->type = (enum e2b_fs_event_type)we.type;
	snprintf(ev->name, sizeof(ev->name), "%s", we.name);
	return 0;
}

void cube_watch_close(struct e2b_watch *w)
{
	struct e2b_watch **pp;

	if (!w)
		return;
	pthread_mutex_lock(&w->t->lock);
	for (pp = &w->t->watches; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&w->t->lock);
	if (w->a)
		cube_agent_close(w->a);
	free(w);
}
