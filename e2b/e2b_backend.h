/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_backend.h: the requests the E2B server understands, and the backend
 * interface that carries them out.
 *
 * The HTTP layers (e2b_server.c, e2b_control.c, e2b_envd.c) parse and check
 * every request into the structures below, then call one backend operation.
 * A backend returns 0 or a negative errno; the HTTP layers turn that errno
 * into the status code and error body the SDK expects:
 *   -ENOENT  unknown sandbox / process / file      404, not_found
 *   -EINVAL  a value the backend cannot honour     400, invalid_argument
 *   -EEXIST  already exists                        409, already_exists
 *   -EACCES  not allowed                           403, permission_denied
 *   -ENOSPC, -EAGAIN  out of capacity              429 / 507
 *   -EOPNOTSUPP  not implemented                   501, unimplemented
 *   anything else                                  500, internal
 * Backends never print; they may fill an optional message buffer.
 */
#ifndef CUBE_E2B_BACKEND_H
#define CUBE_E2B_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "e2b_auth.h"
#include "e2b_net.h"
#include "e2b_route.h"

#define E2B_TEMPLATE_MAX	63
#define E2B_TIMEOUT_MAX		86400	/* seconds */
#define E2B_TIMEOUT_DEFAULT	15	/* seconds, when a create omits it */
#define E2B_MSG_MAX		256

/* The envd version this server reports; the SDK gates features on it. */
#define E2B_ENVD_VERSION	"0.6.2"

struct e2b_kv {
	char *key;
	char *value;
};

struct e2b_kvs {
	struct e2b_kv *v;
	size_t n;
};

void e2b_kvs_free(struct e2b_kvs *kvs);
int e2b_kvs_add(struct e2b_kvs *kvs, const char *key, const char *value);
int e2b_kvs_copy(struct e2b_kvs *dst, const struct e2b_kvs *src);
const char *e2b_kvs_get(const struct e2b_kvs *kvs, const char *key);

/** struct e2b_new_sandbox - POST /v2/sandboxes */
struct e2b_new_sandbox {
	char template_id[E2B_TEMPLATE_MAX + 1];
	unsigned int timeout;		/* seconds */
	struct e2b_kvs metadata;
	struct e2b_kvs env;
	struct e2b_net net;		/* allow_internet_access, network */
	/* lifecycle: the timeout pauses it (autoPause) instead of killing it */
	bool auto_pause;
	/* and an envd request to it while paused resumes it (autoResume) */
	bool auto_resume;
};

/** struct e2b_sandbox - what the control plane reports about a sandbox */
struct e2b_sandbox {
	char id[E2B_ID_MAX + 1];
	char template_id[E2B_TEMPLATE_MAX + 1];
	struct e2b_kvs metadata;
	time_t started_at;
	time_t end_at;
	unsigned int vcpus;
	unsigned int memory_mb;
	unsigned int disk_mb;
	bool paused;
	bool auto_pause;		/* lifecycle.onTimeout "pause" */
	bool auto_resume;		/* lifecycle.autoResume */
	char envd_token[E2B_TOKEN_LEN + 1];
	/* "" unless network.allowPublicTraffic was false */
	char traffic_token[E2B_TOKEN_LEN + 1];
	struct e2b_net net;
	/* where its ports are served (not owned; NULL: nowhere) */
	const char *domain;
};

void e2b_sandbox_free(struct e2b_sandbox *sb);

/** struct e2b_snapshot - a snapshot made of a sandbox (a template) */
struct e2b_snapshot {
	char id[E2B_TEMPLATE_MAX + 1];	/* the template new sandboxes name */
	char sandbox[E2B_ID_MAX + 1];	/* the sandbox it was made of */
};

/* a checkpoint's name: 1..64 of [A-Za-z0-9._-], not starting with '.' */
#define E2B_CP_NAME_MAX		64

/** struct e2b_checkpoint - POST /sandboxes/{id}/checkpoints (cube's own) */
struct e2b_checkpoint {
	char name[E2B_CP_NAME_MAX + 1];
	unsigned int ms;		/* the VMM's time */
	uint64_t pages;			/* pages saved */
};

/** struct e2b_rollback - POST /sandboxes/{id}/rollback (cube's own) */
struct e2b_rollback {
	/* the checkpoint, or "@restore": the state it was started from */
	char target[E2B_CP_NAME_MAX + 1];
	uint64_t us;			/* the VMM's time */
	uint64_t pages;			/* pages put back */
};

/** struct e2b_metrics - one sample of GET /sandboxes/{id}/metrics */
struct e2b_metrics {
	time_t timestamp;
	unsigned int cpu_count;
	double cpu_used_pct;		/* 0..100, of all the sandbox's vCPUs */
	uint64_t mem_used;		/* bytes */
	uint64_t mem_total;
	uint64_t mem_cache;
	uint64_t disk_used;
	uint64_t disk_total;
};

/** struct e2b_proc_config - process.ProcessConfig */
struct e2b_proc_config {
	char *cmd;
	char **args;
	size_t nargs;
	struct e2b_kvs envs;
	char *cwd;			/* NULL: the user's home */
};

/** struct e2b_start - process.StartRequest plus the envd user */
struct e2b_start {
	struct e2b_proc_config proc;
	bool pty;
	unsigned int cols, rows;
	char *tag;
	bool stdin_open;
	char user[E2B_USER_MAX + 1];	/* "" for the default user */
	/* the command is killed in the sandbox after it; 0: never */
	unsigned int timeout_ms;
};

void e2b_start_free(struct e2b_start *s);

/** struct e2b_selector - process.ProcessSelector: one of pid, tag */
struct e2b_selector {
	uint32_t pid;
	char *tag;			/* when not NULL, select by tag */
};

enum e2b_event_type {
	E2B_EV_START,
	E2B_EV_STDOUT,
	E2B_EV_STDERR,
	E2B_EV_PTY,
	E2B_EV_END,
};

/**
 * struct e2b_event - one process event
 * @type: which
 * @pid: E2B_EV_START: the process id
 * @data, @len: output events: the bytes (valid until the next event)
 * @exit_code: E2B_EV_END: exit status, or -1 when killed by a signal
 * @signal: E2B_EV_END: the signal that killed it, 0 if none
 * @error: E2B_EV_END: an error message, "" if none
 */
struct e2b_event {
	enum e2b_event_type type;
	uint32_t pid;
	const void *data;
	size_t len;
	int exit_code;
	int signal;
	char error[E2B_MSG_MAX];
};

/** struct e2b_proc_info - process.ProcessInfo */
struct e2b_proc_info {
	uint32_t pid;
	char *tag;
	struct e2b_proc_config config;
};

void e2b_proc_info_free(struct e2b_proc_info *p, size_t n);

enum e2b_file_type {
	E2B_FT_UNSPEC,
	E2B_FT_FILE,
	E2B_FT_DIR,
	E2B_FT_SYMLINK,
};

/** struct e2b_entry - filesystem.EntryInfo */
struct e2b_entry {
	char *name;
	char *path;
	enum e2b_file_type type;
	int64_t size;
	uint32_t mode;
	char owner[E2B_USER_MAX + 1];
	char group[E2B_USER_MAX + 1];
	time_t mtime;
	char *symlink_target;		/* NULL when not a symlink */
	struct e2b_kvs metadata;	/* what files.write gave it */
};

void e2b_entry_free(struct e2b_entry *e, size_t n);

enum e2b_fs_event_type {
	E2B_FS_CREATE = 1,
	E2B_FS_WRITE,
	E2B_FS_REMOVE,
	E2B_FS_RENAME,
	E2B_FS_CHMOD,
};

/** struct e2b_fs_event - filesystem.FilesystemEvent */
struct e2b_fs_event {
	enum e2b_fs_event_type type;
	/* an entry of the directory; below it for a recursive watch */
	char name[4096];
};

struct e2b_watch;	/* a backend's directory watch */
struct e2b_proc;	/* a backend's running-process stream */
struct e2b_file;	/* a backend's open file transfer */

/**
 * struct e2b_backend_ops - what the E2B server needs from a backend
 *
 * @be is the backend's own pointer.  @id names a sandbox.  @msg, when not
 * NULL, may receive a one-line reason for an error (E2B_MSG_MAX bytes).
 *
 * @proc_next blocks up to @timeout_ms for the next event of a process
 * stream: 0 with @ev filled, -ETIMEDOUT when nothing came (the server sends
 * a keepalive), -EPIPE after the E2B_EV_END event was delivered, other
 * -errno when the stream broke.  @proc_close ends a stream (the process
 * keeps running).
 *
 * @file_read opens @path for download; @file_read_chunk fills @buf and
 * returns the byte count, 0 at the end, or -errno.  @file_write opens @path
 * for upload (creating parent directories, replacing the file);
 * @file_write_chunk appends; @file_close with @commit finishes it (then
 * @entry, when not NULL, describes the file), without @commit discards it.
 */
struct e2b_backend_ops {
	int (*create)(void *be, const struct e2b_new_sandbox *req,
		      struct e2b_sandbox *out, char *msg);
	int (*list)(void *be, struct e2b_sandbox **out, size_t *n);
	int (*get)(void *be, const char *id, struct e2b_sandbox *out);
	int (*kill)(void *be, const char *id);
	int (*set_timeout)(void *be, const char *id, unsigned int secs);
	/* a new sandbox from a running one's state; NULL: not supported */
	int (*fork)(void *be, const char *id, unsigned int secs,
		    struct e2b_sandbox *out, char *msg);
	/*
	 * snapshot a running sandbox and stop its VM (-EEXIST: already
	 * paused); resume restores it under the same id (-EEXIST: running);
	 * NULL: not supported
	 */
	int (*pause)(void *be, const char *id, char *msg);
	int (*resume)(void *be, const char *id, char *msg);
	/* a sample of a running sandbox's use; NULL: none collected */
	int (*metrics)(void *be, const char *id, struct e2b_metrics *out);
	/*
	 * the samples kept of a running sandbox, oldest first, the one
	 * @metrics just took included (malloc()ed array, possibly empty);
	 * NULL or -EOPNOTSUPP: none kept (the series is @metrics' sample)
	 */
	int (*metrics_history)(void *be, const char *id,
			       struct e2b_metrics **out, size_t *n);
	/*
	 * whether template @name exists (0, or -ENOENT); remove it, when it
	 * is a snapshot made through the API (-ENOENT unknown; -EACCES a
	 * template made otherwise; -EBUSY in use by a pool); NULL: not
	 * supported
	 */
	int (*template_exists)(void *be, const char *name);
	int (*template_delete)(void *be, const char *name, char *msg);
	/*
	 * a template of a running sandbox's current state, named @name (""
	 * picks one; -EEXIST: taken), into @out; list_snapshots: those made
	 * (malloc()ed array); NULL: not supported
	 */
	int (*snapshot)(void *be, const char *id, const char *name,
			struct e2b_snapshot *out, char *msg);
	int (*list_snapshots)(void *be, struct e2b_snapshot **out, size_t *n);
	/*
	 * replace a running sandbox's egress settings (PUT /network; the
	 * traffic token setting stays); -ENOENT unknown, -ENETDOWN the
	 * sandbox has no network; NULL: not supported
	 */
	int (*set_network)(void *be, const char *id, const struct e2b_net *net,
			   char *msg);
	/*
	 * cube's own extension: checkpoints of a running sandbox, kept in
	 * place while it lives (@name "" picks one; -EEXIST: taken), the
	 * list (malloc()ed array of names), removal (-ENOENT unknown), and
	 * a rollback to one (@name "": to the state it was started from;
	 * -EBUSY another under way; -EOPNOTSUPP its memory cannot be
	 * checkpointed); NULL: not supported
	 */
	int (*cp_create)(void *be, const char *id, const char *name,
			 struct e2b_checkpoint *out, char *msg);
	int (*cp_list)(void *be, const char *id,
		       char (**out)[E2B_CP_NAME_MAX + 1], size_t *n,
		       char *msg);
	int (*cp_remove)(void *be, const char *id, const char *name,
			 char *msg);
	int (*rollback)(void *be, const char *id, const char *name,
			struct e2b_rollback *out, char *msg);

	int (*proc_start)(void *be, const char *id, const struct e2b_start *req,
			  struct e2b_proc **out, char *msg);
	int (*proc_connect)(void *be, const char *id,
			    const struct e2b_selector *sel,
			    struct e2b_proc **out);
	int (*proc_next)(struct e2b_proc *p, struct e2b_event *ev,
			 int timeout_ms);
	void (*proc_close)(struct e2b_proc *p);
	int (*proc_list)(void *be, const char *id, struct e2b_proc_info **out,
			 size_t *n);
	int (*proc_signal)(void *be, const char *id,
			   const struct e2b_selector *sel, int sig);
	int (*proc_input)(void *be, const char *id,
			  const struct e2b_selector *sel, const void *data,
			  size_t len);
	int (*proc_close_stdin)(void *be, const char *id,
				const struct e2b_selector *sel);

	int (*fs_stat)(void *be, const char *id, const char *user,
		       const char *path, struct e2b_entry *out, char *msg);
	int (*fs_list)(void *be, const char *id, const char *user,
		       const char *path, unsigned int depth,
		       struct e2b_entry **out, size_t *n, char *msg);
	int (*fs_mkdir)(void *be, const char *id, const char *user,
			const char *path, struct e2b_entry *out, char *msg);
	int (*fs_move)(void *be, const char *id, const char *user,
		       const char *from, const char *to,
		       struct e2b_entry *out, char *msg);
	int (*fs_remove)(void *be, const char *id, const char *user,
			 const char *path, char *msg);
	/* process.Update: a new pty size; NULL: not supported */
	int (*proc_update)(void *be, const char *id,
			   const struct e2b_selector *sel, unsigned int cols,
			   unsigned int rows);
	/*
	 * Directory watches (NULL: not supported).  @watch_next has the
	 * @proc_next contract for filesystem events (-ETIMEDOUT: nothing
	 * came; other -errno: the watch ended); @watch_close ends it.
	 */
	int (*watch_start)(void *be, const char *id, const char *user,
			   const char *path, struct e2b_watch **out, char *msg);
	int (*watch_next)(struct e2b_watch *w, struct e2b_fs_event *ev,
			  int timeout_ms);
	void (*watch_close)(struct e2b_watch *w);
	/*
	 * a watch of the directory and every one below it, events naming
	 * paths relative to it; NULL: not supported
	 */
	int (*watch_start_recursive)(void *be, const char *id,
				     const char *user, const char *path,
				     struct e2b_watch **out, char *msg);

	int (*file_read)(void *be, const char *id, const char *user,
			 const char *path, struct e2b_file **out,
			 int64_t *size, char *msg);
	ssize_t (*file_read_chunk)(struct e2b_file *f, void *buf, size_t len);
	int (*file_write)(void *be, const char *id, const char *user,
			  const char *path, struct e2b_file **out, char *msg);
	int (*file_write_chunk)(struct e2b_file *f, const void *buf,
				size_t len);
	int (*file_close)(struct e2b_file *f, bool commit,
			  struct e2b_entry *entry, char *msg);
	/*
	 * @file_write with metadata (the X-Metadata-* headers) the file keeps
	 * and @fs_stat / @fs_list report; NULL: files keep none
	 */
	int (*file_write_meta)(void *be, const char *id, const char *user,
			       const char *path, const struct e2b_kvs *meta,
			       struct e2b_file **out, char *msg);
};

struct e2b_backend {
	const struct e2b_backend_ops *ops;
	void *be;
};

#endif /* CUBE_E2B_BACKEND_H */
