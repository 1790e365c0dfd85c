/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent_client.h: libcube's host-side client of cube-agent.
 *
 * One struct cube_agent is one connection to the agent; it runs one
 * request at a time, so concurrent commands use one connection each.
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure; cube_agent_error() then describes the failure (the agent's own
 * message for errors the agent reported).  Nothing is printed.
 *
 * The agent runs inside the sandbox and is not trusted: every message it
 * sends is bounded and validated.  A message that breaks the protocol
 * fails the call with -EPROTO (or -EMSGSIZE) and leaves the connection
 * unusable (every later call fails with the same error); close it.
 */
#ifndef CUBE_AGENT_CLIENT_H
#define CUBE_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_proto.h"

struct cube_agent;

/* --- connections --- */

/* A Unix socket the agent listens on itself (cube-agent --listen unix:). */
int cube_agent_connect_unix(const char *path, struct cube_agent **out);
/*
 * A VMM's hybrid vsock Unix socket: "CONNECT <port>\n", "OK <n>\n", then
 * the guest's AF_VSOCK port.  @port 0 means CUBE_AGENT_VSOCK_PORT.
 */
int cube_agent_connect_vsock(const char *uds_path, unsigned int port,
			     struct cube_agent **out);
/* An already connected stream socket; the connection owns @fd. */
int cube_agent_from_fd(int fd, struct cube_agent **out);
void cube_agent_close(struct cube_agent *a);
/* Milliseconds any one wait for the agent may last; -1: forever. */
void cube_agent_set_timeout(struct cube_agent *a, int timeout_ms);
const char *cube_agent_error(const struct cube_agent *a);

/* --- health and identity --- */

struct cube_agent_info {
	uint32_t version;		/* CUBE_AGENT_PROTO_VERSION of the agent */
	bool ready;			/* the sandbox root is in place */
	char sandbox_id[CUBE_AGENT_MAX_ID];	/* "" when unset */
	char hostname[65];
};
int cube_agent_ping(struct cube_agent *a, struct cube_agent_info *info);

/* Any of the three may be left out (NULL / set_time false). */
struct cube_agent_identity {
	const char *hostname;
	const char *sandbox_id;
	bool set_time;
	uint64_t time_ns;		/* CLOCK_REALTIME, ns since the epoch */
};
int cube_agent_set_identity(struct cube_agent *a,
			    const struct cube_agent_identity *id);
/* Mixes @len (CUBE_AGENT_MIN_SEED..MAX_SEED) bytes into the guest's RNG. */
int cube_agent_reseed(struct cube_agent *a, const void *seed, size_t len);
/*
 * Grows the file system of the guest's writable disk to @size bytes, once
 * its device has that capacity (the agent waits a few seconds for it).
 */
int cube_agent_disk_grow(struct cube_agent *a, uint64_t size);

/* --- commands --- */

struct cube_exec_spec {
	const char *const *argv;	/* argv[0] is looked up in PATH */
	const char *const *envp;	/* "NAME=VALUE"; NULL: PATH and HOME */
	const char *cwd;		/* NULL: the user's home, or "/" */
	const char *user;		/* name or uid; NULL: the agent's user */
	uint32_t timeout_ms;		/* 0: none; then SIGKILL */
	bool pty;			/* one pseudo-terminal for stdin/out/err */
	uint16_t rows, cols;		/* its size; 0: 24x80 */
	/*
	 * when the connection breaks, the agent parks the command instead of
	 * killing it (cube_agent_exec_attach()); the agent must speak version 4
	 */
	bool keep;
};

struct cube_exec_status {
	bool exited;			/* true: @code, false: @signal */
	int code;
	int signal;
	bool timed_out;			/* killed for running past timeout_ms */
};

enum cube_exec_event_type {
	CUBE_EXEC_STDOUT = 1,
	CUBE_EXEC_STDERR,
	CUBE_EXEC_EXIT,
	CUBE_EXEC_ERROR,		/* a stdin/signal request was refused */
};

struct cube_exec_event {
	enum cube_exec_event_type type;
	const void *data;		/* STDOUT/STDERR: valid until the next call */
	size_t len;
	struct cube_exec_status status;	/* EXIT */
	int err;			/* ERROR: negative errno */
};

/* Starts a command; @pid (may be NULL) receives its pid in the guest. */
int cube_agent_exec_start(struct cube_agent *a,
			  const struct cube_exec_spec *spec, uint32_t *pid);
/*
 * Takes over the parked command @pid (started with spec.keep, its
 * connection broken): its output since then, then its later events, come
 * as after cube_agent_exec_start().  -ESRCH: no such parked command,
 * -EBUSY: another connection serves it.  The agent must speak version 4.
 */
int cube_agent_exec_attach(struct cube_agent *a, uint32_t pid);
/*
 * Waits up to @timeout_ms (-1: the connection's timeout) for the next
 * event of the running command, sending queued stdin meanwhile.
 * Returns 0 with @ev filled, -ETIMEDOUT, or another negative errno.
 */
int cube_agent_exec_next(struct cube_agent *a, struct cube_exec_event *ev,
			 int timeout_ms);
/*
 * Queues stdin; never blocks.  Returns the bytes taken (less than @len
 * when the queue is full: call cube_agent_exec_next() and retry), -EAGAIN
 * when none, -ESRCH with no command running, -EPIPE after close_stdin.
 */
ssize_t cube_agent_exec_stdin(struct cube_agent *a, const void *buf,
			      size_t len);
int cube_agent_exec_close_stdin(struct cube_agent *a);
/* Sends @sig (1..64) to the command's process group. */
int cube_agent_exec_signal(struct cube_agent *a, int sig);
/*
 * Resizes the command's pty (spec.pty); an agent refusal comes back as a
 * CUBE_EXEC_ERROR event.  With a pty all output is CUBE_EXEC_STDOUT, and
 * closing stdin sends end-of-file (^D).
 */
int cube_agent_exec_resize(struct cube_agent *a, uint16_t rows, uint16_t cols);

/* Output callback of cube_agent_exec(); non-zero stops (the command is killed). */
typedef int (*cube_exec_output_fn)(void *ctx, enum cube_exec_event_type stream,
				   const void *data, size_t len);
/*
 * Runs a command to its end: feeds @stdin_len bytes of @stdin_data, then
 * closes its stdin; hands output to @out (may be NULL); fills @status.
 * Waits between two events at most the connection's timeout plus the
 * command's timeout_ms.
 */
int cube_agent_exec(struct cube_agent *a, const struct cube_exec_spec *spec,
		    const void *stdin_data, size_t stdin_len,
		    cube_exec_output_fn out, void *ctx,
		    struct cube_exec_status *status);

/* --- files (absolute paths of the sandbox) --- */

#define CUBE_WRITE_APPEND	0x1

/* Data source of a write: bytes put in @buf, 0 at the end, -errno. */
typedef ssize_t (*cube_read_fn)(void *ctx, void *buf, size_t len);
/* Data sink of a read: 0, or non-zero (a negative errno) to stop. */
typedef int (*cube_write_fn)(void *ctx, const void *buf, size_t len);

/*
 * Writes a file from @src, streamed in chunks.  @mode 0: 0644.  Without
 * CUBE_WRITE_APPEND the file is replaced at the end only, whole.
 */
int cube_agent_write_file(struct cube_agent *a, const char *path,
			  uint32_t mode, unsigned int flags, cube_read_fn src,
			  void *ctx);
int cube_agent_write_buf(struct cube_agent *a, const char *path, uint32_t mode,
			 const void *buf, size_t len);
/*
 * The same, the file given @meta: its metadata, "key=value\n" lines (keys
 * without '=', neither with a newline; at most CUBE_AGENT_MAX_STRING - 1
 * bytes), kept with the file (in the guest, the extended attribute
 * CUBE_AGENT_META_XATTR) and reported by stat and list.  NULL: none.
 */
int cube_agent_write_file_meta(struct cube_agent *a, const char *path,
			       uint32_t mode, unsigned int flags,
			       const char *meta, cube_read_fn src, void *ctx);
int cube_agent_write_buf_meta(struct cube_agent *a, const char *path,
			      uint32_t mode, const char *meta,
			      const void *buf, size_t len);
/* Reads a regular file into @sink; @size (may be NULL) gets its length. */
int cube_agent_read_file(struct cube_agent *a, const char *path,
			 cube_write_fn sink, void *ctx, uint64_t *size);

struct cube_agent_stat {
	enum cube_agent_ftype type;
	uint64_t size;
	uint32_t mode;			/* permission bits */
	uint64_t mtime_ns;
	uint32_t uid, gid;		/* cube_agent_stat() only */
	/*
	 * its metadata ("key=value\n" lines), NULL when it has none; valid
	 * until the next call on the connection (a listing's: in the callback)
	 */
	const char *meta;
};

/* Does not follow a final symlink. */
int cube_agent_stat(struct cube_agent *a, const char *path,
		    struct cube_agent_stat *st);
/* Called per entry (not "." and ".."), in the directory's order. */
typedef int (*cube_dirent_fn)(void *ctx, const char *name,
			      const struct cube_agent_stat *st);
int cube_agent_list(struct cube_agent *a, const char *path, cube_dirent_fn fn,
		    void *ctx);
/*
 * Files and directories that later writes and mkdirs of @a create belong
 * to @user (a name of the sandbox's /etc/passwd, or a uid), not to root
 * (NULL again: root).  Those requests then fail with -ESRCH when the
 * sandbox has no such user.  The agent must speak version 3.
 */
int cube_agent_set_owner(struct cube_agent *a, const char *user);
/* @mode 0: 0755.  @parents: like mkdir -p (an existing directory is fine). */
int cube_agent_mkdir(struct cube_agent *a, const char *path, uint32_t mode,
		     bool parents);
/* A file, a symlink, an empty directory, or with @recursive a whole tree. */
int cube_agent_remove(struct cube_agent *a, const char *path, bool recursive);
int cube_agent_rename(struct cube_agent *a, const char *from, const char *to);

/* --- directory watches --- */

struct cube_watch_event {
	enum cube_agent_fs_event type;
	/* an entry of the directory; for a recursive watch, its path below */
	char name[CUBE_AGENT_MAX_STRING];
};

/*
 * Watches the directory @path (not its subdirectories); the connection then
 * serves only the watch, which ends when it is closed.
 */
int cube_agent_watch(struct cube_agent *a, const char *path);
/*
 * The same for the directory and every directory below it, those made
 * later included; events name entries by their path relative to @path
 * ("sub/file").
 */
int cube_agent_watch_recursive(struct cube_agent *a, const char *path);
/*
 * Waits up to @timeout_ms (-1: the connection's timeout) for the next
 * change.  Returns 0 with @ev filled, -ETIMEDOUT, or another negative errno
 * (the agent's when the watch ended, e.g. -ENOENT: the directory is gone).
 */
int cube_agent_watch_next(struct cube_agent *a, struct cube_watch_event *ev,
			  int timeout_ms);

#endif /* CUBE_AGENT_CLIENT_H */
