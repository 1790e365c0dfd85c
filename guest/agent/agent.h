/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent.h: cube-agent internals shared between its files.
 */
#ifndef CUBE_AGENT_H
#define CUBE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>

#include "agent_proto.h"

/* Output queued for the host beyond which the agent stops reading output. */
#define AGENT_OUTQ_LIMIT	(1024 * 1024)
/* Input for a command's stdin beyond which the agent stops reading. */
#define AGENT_INQ_LIMIT		(1024 * 1024)
#define AGENT_MAX_SESSIONS	64

/*
 * What a session and the main agent process tell each other over the
 * SOCK_SEQPACKET pair every session gets (main.c):
 *   KEEP pid        session -> main: its command @pid is a KEEP one (0: none)
 *   PARK pid        session -> main: the connection broke, @pid is parked;
 *                   answered by REPLY (0, or -ENOSPC: too many parked)
 *   ATTACH pid id   session -> main, with the connection's fd: hand it to
 *                   the session that parked @pid; answered by REPLY (0,
 *                   -ESRCH: no such command, -EBUSY: not parked)
 *   ATTACH pid id   main -> parked session, with the fd: serve it, the
 *                   ATTACH request was @id
 */
enum park_op {
	PARK_KEEP = 1,
	PARK_PARK,
	PARK_ATTACH,
	PARK_REPLY,
};

struct park_msg {
	uint32_t op;
	int32_t pid;
	uint32_t id;
	int32_t result;
};

struct agent_config {
	const char *listen;	/* "unix:PATH" or "vsock:PORT" */
	const char *root;	/* commands and paths live under this root */
	const char *state;	/* state directory (sandbox id), NULL: none */
	int rootfd;		/* O_PATH of root */
	bool pid1;		/* running as the guest's init */
	bool allow_system;	/* hostname, clock and RNG may be changed */
	bool ready;		/* the sandbox root is in place */
	uint32_t park_timeout_ms;	/* a parked command's life unattached */
	int disk_fd;		/* the writable disk's file system, -1: none */
	char disk_dev[64];	/* its block device ("vdb") */
};

struct exec_state;
struct write_state;
struct watch_state;

struct session {
	int fd;			/* the connection, -1 while parked */
	int ctl;		/* to the main process (struct park_msg) */
	const struct agent_config *cfg;
	uint8_t *in;		/* CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD */
	size_t in_len;
	size_t discard;		/* payload bytes of a refused message to skip */
	bool in_eof;
	uint8_t *out;		/* queued output: whole messages */
	size_t out_len, out_cap;
	size_t out_off;		/* bytes of the first one already written */
	int out_err;		/* the connection broke while writing */
	struct exec_state *exec;
	struct write_state *wr;
	struct watch_state *watch;	/* WATCH: the connection serves only it */
	uint32_t tmp_seq;
	uint32_t last_exec;	/* id of the last command, 0: none yet */
	pid_t keep_pid;		/* the last command, when started with KEEP */
	uint64_t park_deadline;	/* CLOCK_MONOTONIC ms: parked until then */
	bool handed_off;	/* the connection went to a parked session */
};

/* session.c */
int session_run(int fd, int ctl, const struct agent_config *cfg);
int session_send(struct session *s, struct cube_wire_buf *b);
int session_send_error(struct session *s, uint32_t id, int err,
		       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int session_send_ok(struct session *s, uint32_t id);
int session_flush(struct session *s, size_t below);

/* exec.c */
int exec_start(struct session *s, const struct cube_wire_msg *m);
void exec_poll_fds(struct session *s, struct pollfd *pfd, int *n, int *timeout);
int exec_handle(struct session *s, const struct pollfd *pfd, int n);
int exec_request(struct session *s, const struct cube_wire_msg *m);
bool exec_blocks_input(const struct session *s);
void exec_kill(struct session *s);
void exec_attached(struct session *s, uint32_t id);
uint64_t exec_now_ms(void);

/* park.c: the control socket between a session and the main process */
int park_send(int ctl, const struct park_msg *pm, int fd);
int park_recv(int ctl, struct park_msg *pm, int *fd);

/* disk.c */
int disk_mount(struct agent_config *cfg, const char *dir);
int disk_request(struct session *s, const struct cube_wire_msg *m);

/* files.c */
int files_request(struct session *s, const struct cube_wire_msg *m);
int files_write_data(struct session *s, const struct cube_wire_msg *m);
void files_abort(struct session *s);

/* watch.c */
int watch_start(struct session *s, const struct cube_wire_msg *m);
void watch_poll_fds(struct session *s, struct pollfd *pfd, int *n);
int watch_handle(struct session *s, const struct pollfd *pfd, int n);
void watch_stop(struct session *s);

/* system.c */
int system_request(struct session *s, const struct cube_wire_msg *m);
int system_pong(struct session *s, uint32_t id);

/* path.c: paths inside the agent's root, never escaping it */
int root_open(const struct agent_config *cfg, const char *path, int flags,
	      mode_t mode);
int root_parent(const struct agent_config *cfg, const char *path, char *name);

/* user.c */
struct agent_user {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[64];
	char home[256];
};
int user_lookup(const struct agent_config *cfg, const char *name,
		struct agent_user *u);

/* init.c: PID 1 setup in the guest */
int init_guest(struct agent_config *cfg);

/* net.c: the sandbox network (lib/cube_net_addr.h) */
int net_find_nic(char *name);
int net_setup(char *ifname, const char **what);
int net_write_resolv(const char *root);
int net_write_hosts(const char *root);

/* modules.c */
int modules_load(const char *cmdline);
int modules_order(char *text, const char **order, size_t max);
void modules_params(const char *cmdline, const char *name, char *out,
		    size_t len);

/* log.c */
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* CUBE_AGENT_H */
