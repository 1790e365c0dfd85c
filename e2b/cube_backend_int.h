/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_backend_int.h: what the files of the cube E2B backend share:
 *   cube_backend.c          the sandboxes' records (running and paused), the
 *                           list kept in step with the module, the ops table
 *   cube_backend_sandbox.c  create, list, kill, timeouts, fork, pause, resume,
 *                           metrics, snapshots
 *   cube_backend_proc.c     processes and directory watches
 *   cube_backend_files.c    the filesystem and file transfers
 *   cube_backend_net.c      network settings and the port proxy's view
 *   cube_backend_checkpoint.c  checkpoints and rollbacks (cube's own)
 */
#ifndef CUBE_BACKEND_INT_H
#define CUBE_BACKEND_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cube_backend.h"
#include "cube_runtime.h"
#include "cube_proc.h"
#include "e2b_backend.h"

struct cube_nl;
struct cube_nl_sandbox;
struct cube_proc_table;

struct sbx {
	struct sbx *next;
	uint64_t id;
	char template_name[CUBE_NAME_MAX];
	time_t started_at;
	time_t end_at;			/* 0: no end */
	struct e2b_kvs metadata;
	struct e2b_kvs env;
	char token[E2B_TOKEN_LEN + 1];
	/* the port proxy's token ("" : ports are public) */
	char traffic[E2B_TOKEN_LEN + 1];
	/* allow_internet_access and network as E2B gave them */
	struct e2b_net net;
	unsigned int vcpus;
	unsigned int memory_mb;
	struct timespec meta_mtime;	/* of e2b.json when last read or written */
	ino_t meta_ino;			/* and its inode: each save is a new one */
	/* the E2B id: the module id, or the first one of a resumed sandbox */
	char eid[E2B_ID_MAX + 1];
	bool pausing;			/* a pause is snapshotting it */
	/* lifecycle: the end pauses it; then envd traffic resumes it */
	bool auto_pause, auto_resume;
	/*
	 * the last timeout given (create, setTimeout), in seconds: an
	 * auto-paused sandbox is kept with no end, and a resume gives it
	 * this much again
	 */
	unsigned int timeout;
	struct cube_cpu_sample {
		uint64_t cpu_ns;	/* the VMM's user + system time */
		uint64_t wall_ns;	/* CLOCK_MONOTONIC */
	} cpu;
	/* the metrics samples kept, a ring of CUBE_METRICS_KEEP at most */
	struct cube_metrics_hist {
		struct cube_sample *v;
		unsigned int cap, n, head;	/* head: the oldest */
		unsigned int cpu_count;
		uint64_t mem_total, disk_total;
	} hist;
};

/* one metrics sample, small: a sandbox keeps an hour of them */
struct cube_sample {
	uint32_t t;			/* Unix seconds */
	float cpu_pct;
	uint64_t mem_used;
	uint64_t disk_used;
};

#define CUBE_METRICS_EVERY	5	/* seconds between samples */
#define CUBE_METRICS_KEEP	720	/* one hour of them */

struct cube_backend {
	pthread_mutex_t lock;		/* the list and the netlink socket */
	struct cube_nl *nl;
	struct sbx *list;
	struct cube_proc_table *procs;
	unsigned int auto_pausing;	/* threads pausing at a timeout */
};

/* --- cube_backend.c: the records; *_locked under b->lock --- */

/* the entry of E2B id @sid, checked against the module */
int cube_be_lookup_locked(struct cube_backend *b, const char *sid,
			  struct sbx **out);
/* reconcile the list with the module's dump */
int cube_be_sync_locked(struct cube_backend *b);
/* the module id of E2B id @sid (takes b->lock) */
int cube_be_sandbox_id(struct cube_backend *b, const char *sid, uint64_t *id);
/* the entry of module sandbox @id, NULL if none */
struct sbx *cube_be_find_locked(struct cube_backend *b, uint64_t id);
/* drop the entry of module sandbox @id */
void cube_be_unlink_locked(struct cube_backend *b, uint64_t id);
/* add or refresh the entry of a module sandbox; NULL: out of memory */
struct sbx *cube_be_adopt_locked(struct cube_backend *b,
				 const struct cube_nl_sandbox *ns);
/* adopt module sandbox @id, just launched or taken from a pool */
int cube_be_adopt_started_locked(struct cube_backend *b, uint64_t id,
				 struct sbx **out);
/*
 * give @s its E2B id: its module id unless an id at or above it was ever
 * handed out (recorded in $CUBE_STATE_DIR/e2b-last-id), or a listed or
 * paused sandbox holds it; then the next number above them
 */
int cube_be_assign_eid_locked(struct cube_backend *b, struct sbx *s);
/* what the E2B server reports of an entry */
void cube_be_to_e2b(const struct sbx *s, struct e2b_sandbox *out);
/* write the entry's e2b.json */
int cube_be_meta_save(struct sbx *s);

/*
 * A paused sandbox has no VM and no module sandbox: it is the record
 * $CUBE_STATE_DIR/paused/<e2b id>.json and its snapshot directory.
 */
struct cube_be_paused {
	struct sbx s;
	char snapshot[PATH_MAX];
	struct cube_proc_saved *procs;	/* commands to take over on resume */
	size_t nprocs;
};

/* $CUBE_STATE_DIR/paused/<@eid><@suffix> into @buf */
int cube_be_paused_path(char *buf, size_t len, const char *eid,
			const char *suffix);
int cube_be_paused_save(const struct sbx *s, const char *snapshot,
			const struct cube_proc_saved *procs, size_t nprocs);
/* -ENOENT: no such paused sandbox; -EINVAL: a damaged record */
int cube_be_paused_load(const char *eid, struct cube_be_paused *p);
void cube_be_paused_free(struct cube_be_paused *p);
/* the record and the snapshot go */
int cube_be_paused_remove(const char *eid, const char *snapshot);
void cube_be_paused_to_e2b(const struct cube_be_paused *p,
			   struct e2b_sandbox *out);
/* every paused sandbox, appended to @v (@n, @cap) */
int cube_be_paused_list(struct e2b_sandbox **v, size_t *n, size_t *cap);

/* --- cube_backend_sandbox.c --- */

int cube_be_create(void *be, const struct e2b_new_sandbox *req,
		   struct e2b_sandbox *out, char *msg);
int cube_be_list(void *be, struct e2b_sandbox **out, size_t *n);
int cube_be_get(void *be, const char *id, struct e2b_sandbox *out);
int cube_be_kill(void *be, const char *sid);
int cube_be_set_timeout(void *be, const char *sid, unsigned int secs);
int cube_be_fork(void *be, const char *sid, unsigned int secs,
		 struct e2b_sandbox *out, char *msg);
int cube_be_pause(void *be, const char *sid, char *msg);
/*
 * @s reached its end and its timeout pauses it: a thread snapshots it
 * (kept paused with no end) while the caller goes on; locked.  0: started
 */
int cube_be_auto_pause_locked(struct cube_backend *b, struct sbx *s);
int cube_be_resume(void *be, const char *sid, char *msg);
int cube_be_metrics(void *be, const char *sid, struct e2b_metrics *out);
int cube_be_metrics_history(void *be, const char *sid,
			    struct e2b_metrics **out, size_t *n);
/* a sample of every running sandbox whose last is CUBE_METRICS_EVERY old */
void cube_be_sample_all_locked(struct cube_backend *b, time_t now);
int cube_be_template_exists(void *be, const char *name);
int cube_be_template_delete(void *be, const char *name, char *msg);
int cube_be_snapshot(void *be, const char *sid, const char *name,
		     struct e2b_snapshot *out, char *msg);
int cube_be_list_snapshots(void *be, struct e2b_snapshot **out, size_t *n);

/* --- cube_backend_proc.c --- */

int cube_be_proc_start(void *be, const char *sid, const struct e2b_start *req,
		       struct e2b_proc **out, char *msg);
int cube_be_proc_connect(void *be, const char *sid,
			 const struct e2b_selector *sel, struct e2b_proc **out);
void cube_be_proc_close(struct e2b_proc *p);
int cube_be_proc_list(void *be, const char *sid, struct e2b_proc_info **out,
		      size_t *n);
int cube_be_proc_signal(void *be, const char *sid,
			const struct e2b_selector *sel, int sig);
int cube_be_proc_input(void *be, const char *sid,
		       const struct e2b_selector *sel, const void *data,
		       size_t len);
int cube_be_proc_close_stdin(void *be, const char *sid,
			     const struct e2b_selector *sel);
int cube_be_proc_update(void *be, const char *sid,
			const struct e2b_selector *sel, unsigned int cols,
			unsigned int rows);
int cube_be_watch_start(void *be, const char *sid, const char *user,
			const char *path, struct e2b_watch **out, char *msg);
int cube_be_watch_start_recursive(void *be, const char *sid,
				  const char *user, const char *path,
				  struct e2b_watch **out, char *msg);

/* --- cube_backend_files.c --- */

int cube_be_fs_stat(void *be, const char *sid, const char *user,
		    const char *path, struct e2b_entry *out, char *msg);
int cube_be_fs_list(void *be, const char *sid, const char *user,
		    const char *path, unsigned int depth,
		    struct e2b_entry **out, size_t *n, char *msg);
int cube_be_fs_mkdir(void *be, const char *sid, const char *user,
		     const char *path, struct e2b_entry *out, char *msg);
int cube_be_fs_move(void *be, const char *sid, const char *user,
		    const char *from, const char *to,
		    struct e2b_entry *out, char *msg);
int cube_be_fs_remove(void *be, const char *sid, const char *user,
		      const char *path, char *msg);
int cube_be_file_read(void *be, const char *sid, const char *user,
		      const char *path, struct e2b_file **out,
		      int64_t *size, char *msg);
ssize_t cube_be_file_read_chunk(struct e2b_file *f, void *buf, size_t len);
int cube_be_file_write_meta(void *be, const char *sid, const char *user,
			    const char *path, const struct e2b_kvs *meta,
			    struct e2b_file **out, char *msg);
int cube_be_file_write(void *be, const char *sid, const char *user,
		       const char *path, struct e2b_file **out, char *msg);
int cube_be_file_write_chunk(struct e2b_file *f, const void *buf,
			     size_t len);
int cube_be_file_close(struct e2b_file *f, bool commit,
		       struct e2b_entry *entry, char *msg);

/* --- cube_backend_net.c --- */

/*
 * The policy a launch of template @t gets for @n: *@out NULL for the
 * default (or "deny" on a template without a device: nothing goes out
 * either way), else a malloc()ed policy.  -EINVAL with @msg when @t has no
 * device and @n needs one.
 */
int cube_be_net_launch_policy(const struct e2b_net *n,
			      const struct cube_template *t,
			      struct cube_net_policy **out, char *msg);
/* set @n on running sandbox @id; -ENETDOWN when it has no network */
int cube_be_net_apply(uint64_t id, const struct e2b_net *n, char *msg);
int cube_be_set_network(void *be, const char *sid, const struct e2b_net *net,
			char *msg);

/* --- cube_backend_checkpoint.c --- */

int cube_be_cp_create(void *be, const char *sid, const char *name,
		      struct e2b_checkpoint *out, char *msg);
int cube_be_cp_list(void *be, const char *sid,
		    char (**out)[E2B_CP_NAME_MAX + 1], size_t *n, char *msg);
int cube_be_cp_remove(void *be, const char *sid, const char *name,
		      char *msg);
int cube_be_rollback(void *be, const char *sid, const char *name,
		     struct e2b_rollback *out, char *msg);

#endif /* CUBE_BACKEND_INT_H */
