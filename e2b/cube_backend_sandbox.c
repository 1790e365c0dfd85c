// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend_sandbox.c: the E2B backend's sandboxes: create, list,
 * get, kill, timeouts, fork, pause and resume, metrics, snapshots.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cube_backend_int.h"
#include "cube_proc.h"
#include "cube_runtime.h"
#include "cube_sandbox_disk.h"
#include "nl_client.h"

/* --- life cycle --- */

int cube_be_create(void *be, const struct e2b_new_sandbox *req,
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
	ret = cube_be_adopt_started_locked(b, id, &s);
	if (!ret) {
		s->end_at = time(NULL) + req->timeout;
		s->timeout = req->timeout;
		s->auto_pause = req->auto_pause;
		s->auto_resume = req->auto_pause && req->auto_resume;
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
			ret = cube_be_meta_save(s);
		if (!ret)
			cube_be_to_e2b(s, out);
	}
	if (ret) {
		/* no half-made sandbox stays behind */
		cube_be_unlink_locked(b, id);
		cube_nl_sandbox_kill(b->nl, id, 0);
		snprintf(msg, E2B_MSG_MAX, "cannot register the sandbox: %s",
			 strerror(-ret));
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int cube_be_list(void *be, struct e2b_sandbox **out, size_t *n)
{
	struct cube_backend *b = be;
	struct e2b_sandbox *v;
	struct sbx *s;
	size_t cnt = 0, cap;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_sync_locked(b);
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
		cube_be_to_e2b(s, &v[cnt++]);
	ret = cube_be_paused_list(&v, &cnt, &cap);
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

int cube_be_get(void *be, const char *id, struct e2b_sandbox *out)
{
	struct cube_backend *b = be;
	struct sbx *s;
	int ret;

	struct cube_be_paused p;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, id, &s);
	if (!ret)
		cube_be_to_e2b(s, out);
	if (ret == -ENOENT && !cube_be_paused_load(id, &p)) {
		cube_be_paused_to_e2b(&p, out);
		cube_be_paused_free(&p);
		ret = 0;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int cube_be_kill(void *be, const char *sid)
{
	struct cube_backend *b = be;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret) {
		id = s->id;
		ret = cube_nl_sandbox_kill(b->nl, id, 0);
		if (!ret || ret == -ENOENT) {
			cube_proc_drop_sandbox(b->procs, id);
			cube_be_unlink_locked(b, id);
		}
	} else if (ret == -ENOENT) {
		struct cube_be_paused p;

		/* a paused one: its record and its snapshot go */
		ret = cube_be_paused_load(sid, &p);
		if (!ret) {
			ret = cube_be_paused_remove(sid, p.snapshot);
			cube_be_paused_free(&p);
		}
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int cube_be_set_timeout(void *be, const char *sid, unsigned int secs)
{
	struct cube_backend *b = be;
	struct sbx *s;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret) {
		s->end_at = time(NULL) + secs;
		s->timeout = secs;
		ret = cube_be_meta_save(s);
	} else if (ret == -ENOENT) {
		struct cube_be_paused p;

		/* a paused sandbox keeps its end, and may be given another */
		ret = cube_be_paused_load(sid, &p);
		if (!ret) {
			p.s.end_at = time(NULL) + secs;
			p.s.timeout = secs;
			ret = cube_be_paused_save(&p.s, p.snapshot, p.procs,
						  p.nprocs);
			cube_be_paused_free(&p);
		}
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int cube_be_fork(void *be, const char *sid, unsigned int secs,
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
	ret = cube_be_lookup_locked(b, sid, &s);
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
	s = ret ? NULL : cube_be_adopt_locked(b, &ns);
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
		ret = cube_be_meta_save(s);
		if (!ret)
			cube_be_to_e2b(s, out);
	}
	if (ret) {
		cube_be_unlink_locked(b, nid);
		cube_nl_sandbox_kill(b->nl, nid, 0);
	}
	pthread_mutex_unlock(&b->lock);
out:
	e2b_kvs_free(&meta);
	e2b_kvs_free(&env);
	e2b_net_free(&net);
	return ret;
}

/*
 * Snapshot running sandbox @sid and stop its VM.  @at_end: its timeout
 * pauses it, and cube_be_auto_pause_locked() marked it pausing already;
 * it is kept paused with no end, unless it was given a new end meanwhile
 * (-EAGAIN: it runs on).
 */
static int pause_sandbox(struct cube_backend *b, const char *sid, bool at_end,
			 char *msg)
{
	char err[CUBE_ERR_MAX] = "", snap[PATH_MAX], dir[PATH_MAX];
	static unsigned int seq;
	struct cube_proc_saved *procs = NULL;
	size_t nprocs = 0;
	struct timespec now;
	struct cube_be_paused p;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (ret == -ENOENT && !cube_be_paused_load(sid, &p)) {
		cube_be_paused_free(&p);
		ret = -EEXIST;
	}
	if (!ret && s->pausing && !at_end)
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
	ret = cube_be_paused_path(snap, sizeof(snap), sid, dir);
	/* what runs now is taken over again on resume */
	if (!ret)
		ret = cube_proc_save(b->procs, id, &procs, &nprocs);
	if (!ret)
		ret = cube_sandbox_checkpoint(id, snap, err);
	if (ret && err[0])
		snprintf(msg, E2B_MSG_MAX, "cannot pause: %s", err);

	pthread_mutex_lock(&b->lock);
	s = cube_be_find_locked(b, id);
	if (!ret && !s) {
		/* killed while it was snapshotted */
		cube_remove_tree(snap);
		ret = -ENOENT;
	}
	if (!ret && at_end && s->end_at > time(NULL)) {
		/* given more time while it was snapshotted: it runs on */
		cube_remove_tree(snap);
		cube_sandbox_resume_vm(id);
		ret = -EAGAIN;
	}
	if (!ret) {
		time_t end = s->end_at;

		/* paused at its end, it is kept until killed or resumed */
		if (at_end)
			s->end_at = 0;
		ret = cube_be_paused_save(s, snap, procs, nprocs);
		s->end_at = end;
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
		cube_be_unlink_locked(b, id);
	} else if (s) {
		s->pausing = false;
	}
	pthread_mutex_unlock(&b->lock);
	cube_proc_saved_free(procs, nprocs);
	return ret;
}

int cube_be_pause(void *be, const char *sid, char *msg)
{
	return pause_sandbox(be, sid, false, msg);
}

/* seconds before a pause at the end that failed is tried again */
#define CUBE_AUTO_PAUSE_RETRY	30

struct auto_pause {
	struct cube_backend *b;
	char eid[E2B_ID_MAX + 1];
};

static void *auto_pause_thread(void *arg)
{
	struct auto_pause *ap = arg;
	struct cube_backend *b = ap->b;
	char msg[E2B_MSG_MAX] = "";
	struct sbx *s;
	int ret;

	ret = pause_sandbox(b, ap->eid, true, msg);
	pthread_mutex_lock(&b->lock);
	if (ret && ret != -ENOENT && ret != -EEXIST && ret != -EAGAIN)
		/* its state is kept: not killed, tried again later */
		fprintf(stderr, "cubed: cannot pause sandbox %s at its end: %s\n",
			ap->eid, msg[0] ? msg : strerror(-ret));
	for (s = b->list; ret && s; s = s->next) {
		if (strcmp(s->eid, ap->eid))
			continue;
		/* marked by cube_be_auto_pause_locked(), and not paused */
		s->pausing = false;
		if (ret != -EAGAIN && s->end_at <= time(NULL))
			s->end_at = time(NULL) + CUBE_AUTO_PAUSE_RETRY;
	}
	b->auto_pausing--;
	pthread_mutex_unlock(&b->lock);
	free(ap);
	return NULL;
}

int cube_be_auto_pause_locked(struct cube_backend *b, struct sbx *s)
{
	struct auto_pause *ap = malloc(sizeof(*ap));
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	if (!ap)
		return -ENOMEM;		/* the next tick */
	ap->b = b;
	strcpy(ap->eid, s->eid);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* no second pause starts while this one snapshots it */
	s->pausing = true;
	b->auto_pausing++;
	ret = -pthread_create(&t, &attr, auto_pause_thread, ap);
	pthread_attr_destroy(&attr);
	if (ret) {
		s->pausing = false;
		b->auto_pausing--;
		free(ap);
	}
	return ret;
}

int cube_be_resume(void *be, const char *sid, char *msg)
{
	struct cube_backend *b = be;
	char err[CUBE_ERR_MAX] = "", rec[PATH_MAX], claim[PATH_MAX];
	struct cube_template t;
	struct cube_launch l = { .tmpl = &t, .own_snapshot = true };
	struct cube_be_paused p;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	pthread_mutex_unlock(&b->lock);
	if (!ret)
		return -EEXIST;
	if (ret != -ENOENT)
		return ret;
	ret = cube_be_paused_load(sid, &p);
	if (ret)
		return ret == -EINVAL ? -EIO : ret;
	/* claim the record: one resume at a time */
	if (cube_be_paused_path(rec, sizeof(rec), sid, ".json") ||
	    cube_be_paused_path(claim, sizeof(claim), sid, ".resuming")) {
		cube_be_paused_free(&p);
		return -ENAMETOOLONG;
	}
	if (rename(rec, claim)) {
		cube_be_paused_free(&p);
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
		cube_be_paused_free(&p);
		return ret == -ENOENT ? -EIO : ret;
	}
	pthread_mutex_lock(&b->lock);
	/* the E2B id is set before the new entry is first read */
	ret = cube_be_adopt_started_locked(b, id, &s);
	if (!ret) {
		snprintf(s->eid, sizeof(s->eid), "%s", p.s.eid);
		strcpy(s->token, p.s.token);
		strcpy(s->traffic, p.s.traffic);
		e2b_net_free(&s->net);
		s->net = p.s.net;
		memset(&p.s.net, 0, sizeof(p.s.net));
		s->started_at = p.s.started_at;
		s->end_at = p.s.end_at;
		s->timeout = p.s.timeout;
		s->auto_pause = p.s.auto_pause;
		s->auto_resume = p.s.auto_resume;
		/* paused at its end: its timeout runs again from now */
		if (s->end_at <= time(NULL))
			s->end_at = time(NULL) + (s->timeout ? s->timeout :
						  E2B_TIMEOUT_DEFAULT);
		e2b_kvs_free(&s->metadata);
		e2b_kvs_free(&s->env);
		s->metadata = p.s.metadata;
		s->env = p.s.env;
		memset(&p.s.metadata, 0, sizeof(p.s.metadata));
		memset(&p.s.env, 0, sizeof(p.s.env));
		ret = cube_be_meta_save(s);
	}
	if (ret) {
		/* the snapshot went with the failed sandbox */
		cube_be_unlink_locked(b, id);
		cube_nl_sandbox_kill(b->nl, id, 0);
		snprintf(msg, E2B_MSG_MAX, "cannot register the sandbox: %s",
			 strerror(-ret));
	}
	unlink(claim);
	pthread_mutex_unlock(&b->lock);
	/* the commands that ran at the pause, when they still run */
	if (!ret)
		cube_proc_adopt(b->procs, id, p.procs, p.nprocs);
	cube_be_paused_free(&p);
	return ret;
}

/* --- metrics --- */

/* the first child of @pid's main thread, 0 if none */
static pid_t first_child(pid_t pid)
{
	char path[64], buf[64];
	pid_t child = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		child = atoi(buf);
	fclose(f);
	return child;
}

/*
 * The VMM running the guest, below the shim that owns the module sandbox.
 * The shim's child is cube-vmm, but where it makes a cgroup that process
 * only waits: it forks the VMM proper into the cgroup (vmm/sandbox.c),
 * which forks nothing.  So the deepest process of the chain.
 */
static pid_t vmm_pid(pid_t shim)
{
	pid_t pid = first_child(shim), child;
	int depth;

	for (depth = 0; pid > 0 && depth < 4; depth++) {
		child = first_child(pid);
		if (child <= 0)
			break;
		pid = child;
	}
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

/* a sample of @s now, under b->lock */
static int sample_locked(struct cube_backend *b, struct sbx *s,
			 struct e2b_metrics *out)
{
	struct cube_nl_sandbox ns;
	struct cube_template t;
	struct timespec mono;
	struct stat st;
	uint64_t cpu = 0, wall, used;
	pid_t vmm;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = cube_nl_sandbox_get(b->nl, s->id, &ns);
	if (ret)
		return ret;
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
	/*
	 * Its writable disk (Documentation/disks.rst): the size, and what the
	 * host holds for it, which the guest's discards keep near what it
	 * uses; else the root image, its size and the blocks it holds.
	 */
	if (!cube_sandbox_disk_stat(s->id, &st)) {
		out->disk_total = st.st_size;
		out->disk_used = (uint64_t)st.st_blocks * 512;
		if (out->disk_used > out->disk_total)
			out->disk_used = out->disk_total;
	} else if (!cube_template_load(s->template_name, &t, NULL) && t.rootfs[0] &&
	    !stat(t.rootfs, &st)) {
		out->disk_total = st.st_size;
		out->disk_used = (uint64_t)st.st_blocks * 512;
		if (out->disk_used > out->disk_total)
			out->disk_used = out->disk_total;
	}
	return 0;
}

/*
 * Keep @m in @s's ring: a second sample within the same second replaces
 * the first; past CUBE_METRICS_KEEP the oldest goes.
 */
static void keep_sample(struct sbx *s, const struct e2b_metrics *m)
{
	struct cube_metrics_hist *h = &s->hist;
	struct cube_sample *last;

	if (h->n) {
		last = &h->v[(h->head + h->n - 1) % h->cap];
		if (last->t == (uint32_t)m->timestamp) {
			h->n--;		/* replaced below */
		} else if (h->n == h->cap && h->cap < CUBE_METRICS_KEEP) {
			/* grow; the ring is in order from 0 while it grows */
			unsigned int cap = h->cap * 2 > CUBE_METRICS_KEEP ?
					   CUBE_METRICS_KEEP : h->cap * 2;
			struct cube_sample *v = realloc(h->v, cap * sizeof(*v));

			if (!v)
				return;
			h->v = v;
			h->cap = cap;
		}
	}
	if (!h->cap) {
		h->v = calloc(16, sizeof(*h->v));
		if (!h->v)
			return;
		h->cap = 16;
	}
	if (h->n == h->cap) {
		/* full at CUBE_METRICS_KEEP: the oldest goes */
		h->head = (h->head + 1) % h->cap;
		h->n--;
	}
	h->v[(h->head + h->n) % h->cap] = (struct cube_sample){
		.t = (uint32_t)m->timestamp, .cpu_pct = (float)m->cpu_used_pct,
		.mem_used = m->mem_used, .disk_used = m->disk_used,
	};
	h->n++;
	h->cpu_count = m->cpu_count;
	h->mem_total = m->mem_total;
	h->disk_total = m->disk_total;
}

int cube_be_metrics(void *be, const char *sid, struct e2b_metrics *out)
{
	struct cube_backend *b = be;
	struct sbx *s;
	int ret;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret)
		ret = sample_locked(b, s, out);
	if (!ret)
		keep_sample(s, out);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int cube_be_metrics_history(void *be, const char *sid,
			    struct e2b_metrics **out, size_t *n)
{
	struct cube_backend *b = be;
	struct cube_metrics_hist *h;
	struct e2b_metrics *v;
	struct sbx *s;
	unsigned int i;
	int ret;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (ret)
		goto out;
	h = &s->hist;
	v = calloc(h->n ? h->n : 1, sizeof(*v));
	if (!v) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < h->n; i++) {
		const struct cube_sample *c = &h->v[(h->head + i) % h->cap];

		v[i].timestamp = c->t;
		v[i].cpu_count = h->cpu_count;
		v[i].cpu_used_pct = c->cpu_pct;
		v[i].mem_used = c->mem_used;
		v[i].mem_total = h->mem_total;
		v[i].disk_used = c->disk_used;
		v[i].disk_total = h->disk_total;
	}
	*out = v;
	*n = h->n;
out:
	pthread_mutex_unlock(&b->lock);
	return ret;
}

void cube_be_sample_all_locked(struct cube_backend *b, time_t now)
{
	struct e2b_metrics m;
	struct sbx *s;

	for (s = b->list; s; s = s->next) {
		const struct cube_metrics_hist *h = &s->hist;

		if (h->n && (time_t)h->v[(h->head + h->n - 1) % h->cap].t +
			    CUBE_METRICS_EVERY > now)
			continue;
		if (s->pausing)
			continue;
		if (!sample_locked(b, s, &m))
			keep_sample(s, &m);
	}
}

/* --- snapshots --- */

/*
 * A snapshot of a sandbox is a template of its own: the source template's
 * kernel, rootfs and size, the sandbox's VM state as "snapshot/", and
 * "e2b-snapshot" naming the sandbox it was made of.
 */
int cube_be_snapshot(void *be, const char *sid, const char *name,
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
	ret = cube_be_lookup_locked(b, sid, &s);
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

int cube_be_list_snapshots(void *be, struct e2b_snapshot **out, size_t *n)
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

/* --- templates --- */

int cube_be_template_exists(void *be, const char *name)
{
	struct cube_template t;
	int ret;

	if (!cube_name_valid(name))
		return -ENOENT;
	ret = cube_template_load(name, &t, NULL);
	/* a damaged one exists too: creating from it says so */
	return ret == -EINVAL ? 0 : ret;
}

/*
 * Only a snapshot made through the API ("e2b-snapshot" in its directory)
 * is removed, and not while a pool refills from it or a sandbox made from
 * it runs or is paused (pause, resume and fork read its template).
 */
int cube_be_template_delete(void *be, const char *name, char *msg)
{
	struct cube_backend *b = be;
	char path[PATH_MAX + 64];
	struct e2b_sandbox *v = NULL;
	struct cube_nl_pool pool;
	struct cube_template t;
	size_t n = 0, i;
	bool used = false;
	int ret;

	if (!cube_name_valid(name))
		return -ENOENT;
	ret = cube_template_load(name, &t, NULL);
	if (ret == -ENOENT)
		return ret;
	snprintf(path, sizeof(path), "%s/templates/%s/e2b-snapshot",
		 cube_state_dir(), name);
	if (access(path, F_OK))
		return -EACCES;
	pthread_mutex_lock(&b->lock);
	ret = cube_nl_pool_get(b->nl, name, &pool);
	pthread_mutex_unlock(&b->lock);
	if (!ret) {
		snprintf(msg, E2B_MSG_MAX, "template \"%s\" has a warm pool",
			 name);
		return -EBUSY;
	}
	ret = cube_be_list(be, &v, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (!used && !strcmp(v[i].template_id, name)) {
			snprintf(msg, E2B_MSG_MAX,
				 "sandbox \"%s\" was made from snapshot \"%s\" and is %s: kill it first",
				 v[i].id, name, v[i].paused ? "paused" : "running");
			used = true;
		}
		e2b_sandbox_free(&v[i]);
	}
	free(v);
	if (used)
		return -EBUSY;
	return cube_template_remove(name);
}
