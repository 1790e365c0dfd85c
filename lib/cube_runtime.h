/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_runtime.h: where sandboxes and templates live on the host, and how
 * a sandbox is started.
 *
 * A sandbox is one cube-shim process (the owner of its /dev/cube sandbox
 * fd) supervising one cube-vmm.  Its files are in the run directory
 * $CUBE_RUN_DIR/sandboxes/<id>/ (default /run/cube): "vsock" (the VMM's
 * hybrid vsock socket, where the guest agent answers), "control" (the
 * VMM's control socket) and "console.log".  When the sandbox ends, the
 * shim removes the directory; when the shim was killed, the next sandbox's
 * shim does (lib/cube_sandbox_dir.h).
 *
 * A template is a directory $CUBE_STATE_DIR/templates/<name>/ (default
 * /var/lib/cube) holding "template.conf" (key=value lines: kernel, initrd,
 * rootfs, vcpus, memory, net) and "snapshot/", the VMM snapshot new
 * sandboxes are restored from.  "net=1": the template was built with a
 * network device, so each of its sandboxes gets a network namespace and a
 * tap (lib/cube_net.h) and an egress policy (default "internet").
 * "disk=BYTES": the template was built with a writable disk of that size
 * (snapshot/disk.img); each of its sandboxes gets a copy of it, at least
 * that large (lib/cube_sandbox_disk.h).  Without it, what a sandbox writes
 * lives in guest memory.
 */
#ifndef CUBE_RUNTIME_H
#define CUBE_RUNTIME_H

#include "cube_send_fds.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/cube.h>

#include "cube_net.h"

#define CUBE_ERR_MAX		256
#define CUBE_VCPUS_DEFAULT	1
#define CUBE_MEMORY_DEFAULT	256	/* MiB */
#define CUBE_BOOT_TIMEOUT	120	/* seconds a sandbox may take to answer */
#define CUBE_SANDBOX_DISK_MIN	(16ULL << 20)	/* bytes of a writable disk */
#define CUBE_SANDBOX_DISK_MAX	(16ULL << 40)

/*
 * cube_parse_size() - "N", "NK", "NM", "NG" or "NT" (powers of 1024) in
 * bytes: -EINVAL unless a whole number of MiB from CUBE_SANDBOX_DISK_MIN to
 * CUBE_SANDBOX_DISK_MAX.
 */
int cube_parse_disk_size(const char *s, uint64_t *bytes);

/* a one-line reason into @err (CUBE_ERR_MAX bytes; NULL: none) */
void cube_set_err(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

const char *cube_run_dir(void);
const char *cube_state_dir(void);
/* "<run dir>/sandboxes/<id>/<file>" into @buf */
int cube_sandbox_path(char *buf, size_t len, uint64_t id, const char *file);

/* Helper programs: $CUBE_VMM / $CUBE_SHIM, else beside the running
 * program, else ../vmm/cube-vmm from it, else in $PATH. */
int cube_find_helper(const char *name, const char *env, char *buf,
		     size_t len);

/* --- templates --- */

/* 1..CUBE_NAME_MAX-1 bytes of [A-Za-z0-9._-], not starting with '.' */
bool cube_name_valid(const char *s);

struct cube_template {
	char name[CUBE_NAME_MAX];
	char kernel[PATH_MAX];
	char initrd[PATH_MAX];		/* "" when none */
	char rootfs[PATH_MAX];		/* "" when none */
	char append[512];		/* kernel command line additions */
	unsigned int vcpus;
	unsigned int memory_mb;
	bool net;			/* built with a network device */
	uint64_t disk_bytes;		/* its writable disk, 0: none */
	char dir[PATH_MAX];		/* the template's directory */
	char snapshot[PATH_MAX + 16];	/* its snapshot directory */
};

/* -ENOENT: no such template; -EINVAL: a damaged template.conf */
int cube_template_load(const char *name, struct cube_template *t,
		       char *err);
/* @out: malloc()ed array of names (CUBE_NAME_MAX each), free() it */
int cube_template_list(char (**out)[CUBE_NAME_MAX], size_t *n);
int cube_template_remove(const char *name);
/* rm -r, without following symlinks */
int cube_remove_tree(const char *path);
/* write template.conf into t->dir (created) */
int cube_template_save(const struct cube_template *t);

/* --- sandboxes --- */

struct cube_label_kv {
	char key[CUBE_NAME_MAX];
	char value[CUBE_LABEL_VALUE_MAX];
};

/**
 * struct cube_launch - how to start one sandbox
 * @tmpl: the template (its snapshot is restored)
 * @vcpus, @memory_mb: declared to the module (0: the template's)
 * @labels, @nlabels: module labels
 * @pool: when not NULL, the sandbox waits in this pool instead of running
 * @boot_timeout: seconds to wait for the guest agent (0: default)
 * @own_snapshot: the snapshot is this sandbox's alone (a fork's): removed
 *	when the sandbox ends
 */
struct cube_launch {
	const struct cube_template *tmpl;
	unsigned int vcpus;
	unsigned int memory_mb;
	const struct cube_label_kv *labels;
	unsigned int nlabels;
	const char *pool;
	unsigned int boot_timeout;
	bool own_snapshot;
	/*
	 * seconds from when it is ready until cubed ends it (0: no end),
	 * recorded before the sandbox is marked running; not with @pool
	 */
	unsigned int end_after;
	/* egress policy; NULL: "internet" where the template has a device */
	const struct cube_net_policy *net;
	/* the writable disk's size; 0: the snapshot's (the template's) */
	uint64_t disk_bytes;
	/*
	 * share no page with the caller's other sandboxes of the template
	 * (cube-shim --no-merge)
	 */
	bool no_merge;
};

/**
 * cube_sandbox_launch() - start a sandbox and wait until its agent answers
 * @l: what to start
 * @id: set to the module's sandbox id
 * @err: a one-line reason on failure (CUBE_ERR_MAX bytes)
 *
 * The shim runs detached from the caller.  On failure nothing is left:
 * no process, no run directory, no module sandbox.
 *
 * Return: 0, -ENOPKG when cube.ko is not loaded, -EACCES without the
 * rights to /dev/cube, -ETIMEDOUT when the guest never answered, other
 * -errno.
 */
int cube_sandbox_launch(const struct cube_launch *l, uint64_t *id, char *err);

struct cube_agent;
/* a new connection to the sandbox's guest agent */
int cube_sandbox_agent(uint64_t id, struct cube_agent **out);

/*
 * Every sandbox's VMM runs as a uid and gid of its own (cube-shim's
 * take_jail_id()): by default these, CUBE_JAIL_IDS=BASE:COUNT elsewhere.
 */
#define CUBE_JAIL_ID_BASE	1073741824U	/* 0x40000000 */
#define CUBE_JAIL_ID_COUNT	65536U
/*
 * A sandbox's cube-vmm runs in the cgroup CUBE_VMM_CGROUP_PARENT/cube-<id>
 * (cube-vmm --id cube-<id>; vmm/sandbox.c), which it makes and joins and
 * its cube-shim removes after it (cube-vmm --parent-fd).
 */
#define CUBE_VMM_CGROUP_PARENT	"/sys/fs/cgroup/cube"
/* "CUBE_VMM_CGROUP_PARENT/cube-<id>" into @buf */
int cube_sandbox_cgroup(char *buf, size_t len, uint64_t id);

/* one request (a line; the newline is added when @req lacks it) on a VMM
 * control socket; -EIO when it answers ERR */
int cube_control(const char *path, const char *req, char *reply, size_t len);
/* The same, passing the @nfds (at most CUBE_SEND_FDS_MAX) descriptors @fds
 * with it. */
int cube_control_fds(const char *path, const char *req, const int *fds,
		     int nfds, char *reply, size_t len);
/*
 * "snapshot" into @dir (made if missing): the state, memory and disk files
 * are made and opened here and passed to the VMM, which names and opens
 * nothing (a jailed VMM cannot); the state is committed (state.tmp renamed
 * to state) once it answers, a disk copy it left empty removed.  0, -EIO
 * with the VMM's "ERR" in @reply, or -errno; on failure the caller
 * removes @dir.
 */
int cube_control_snapshot(const char *ctl, const char *dir, char *reply,
			  size_t len);

/*
 * cube_sandbox_netns() - a new fd of sandbox @id's network namespace
 * (CUBE_IOC_SANDBOX_NETNS_OPEN; CAP_NET_ADMIN): -ENOENT when it is gone or
 * has none, other -errno.
 */
int cube_sandbox_netns(uint64_t id);

/**
 * cube_sandbox_fork() - a new sandbox from a running one's current state
 * @id: the running sandbox (its VMM snapshots it in place and goes on)
 * @template_name: its template (the fork declares the same)
 * @nid: set to the new sandbox's id
 * @err: reason on failure
 *
 * The snapshot is kept in $CUBE_STATE_DIR/forks/ for as long as the fork
 * lives; nothing stays behind when the fork fails.  The fork starts with
 * the parent's egress policy as it is at the time of the fork.
 */
int cube_sandbox_fork(uint64_t id, const char *template_name, uint64_t *nid,
		      char *err);

/**
 * cube_sandbox_checkpoint() - pause a running sandbox's VM and snapshot it
 * @id: the sandbox
 * @dir: the snapshot directory to write (state, memory)
 * @err: reason on failure
 *
 * The VM stays paused on success (stop it, or cube_sandbox_resume_vm());
 * on failure it runs on and @dir is removed.
 */
int cube_sandbox_checkpoint(uint64_t id, const char *dir, char *err);
/* let a VM paused by cube_sandbox_checkpoint() run again */
int cube_sandbox_resume_vm(uint64_t id);

/* --- checkpoints and rollbacks (the VMM's, of a running sandbox) --- */

/*
 * A sandbox's memory is a cube.ko clone, so its VMM can save the running
 * guest in place ("checkpoint NAME", a module snapshot of the clone) and
 * put it back later ("rollback [NAME]"); the checkpoints are kept in the
 * run directory's "checkpoints/" and end with the sandbox.  Not to be
 * confused with cube_sandbox_checkpoint(), which writes a pause snapshot
 * to disk.
 */
#define CUBE_CP_NAME_MAX	65	/* 1..64 bytes and the NUL */
/*
 * in the run directory, made with it by cube-shim: held by the one
 * checkpoint or rollback under way, and by cube-shim as it removes the
 * directory (it unlinks the lock first)
 */
#define CUBE_CP_LOCK_FILE	"rollback.lock"
/* in the run directory: the VMM's --checkpoint-dir */
#define CUBE_CP_DIR		"checkpoints"
#define CUBE_CP_BASE		"@restore"	/* the target of a nameless rollback */

/* 1..64 bytes of [A-Za-z0-9._-], not starting with '.' */
bool cube_cp_name_valid(const char *s);

/*
 * Sandbox @id's checkpoint lock, held while a checkpoint is made, removed
 * or rolled back to, and by cube-shim while it removes the run directory
 * (flock, dropped with the fd): with @wait it waits up to 10 s for the
 * holder, else -EBUSY at once.  The fd, or -errno with @err set (-ENOENT:
 * no such sandbox, or it ended).
 */
int cube_sandbox_cp_lock(uint64_t id, bool wait, char *err);

/**
 * cube_sandbox_cp_create() - checkpoint a running sandbox in place
 * @id: the sandbox
 * @name: the checkpoint's name (cube_cp_name_valid())
 * @ms, @pages: set to the VMM's time and the pages it saved
 * @err: reason on failure
 *
 * Return: 0; -EINVAL bad name; -ENOENT no such sandbox; -EEXIST the name
 * is taken; -ENOSPC too many checkpoints; -EOPNOTSUPP the sandbox's memory
 * is not a cube.ko clone; other -errno.
 */
int cube_sandbox_cp_create(uint64_t id, const char *name, unsigned int *ms,
			   uint64_t *pages, char *err);
/* @out: malloc()ed names (CUBE_CP_NAME_MAX each, in the VMM's order) */
int cube_sandbox_cp_list(uint64_t id, char (**out)[CUBE_CP_NAME_MAX],
			 size_t *n, char *err);
/* -ENOENT: no such sandbox or checkpoint (@err tells which) */
int cube_sandbox_cp_remove(uint64_t id, const char *name, char *err);

/**
 * struct cube_rollback - what a rollback did
 * @target: the checkpoint's name, or CUBE_CP_BASE
 * @vmm_us: the VMM's time to put the guest back
 * @pages: pages the VMM reported
 * @total_us: the whole call: the rollback, the guest's new entropy and
 *	identity, until its agent answered
 */
struct cube_rollback {
	char target[CUBE_CP_NAME_MAX];
	uint64_t vmm_us;
	uint64_t pages;
	uint64_t total_us;
};

/**
 * cube_sandbox_rollback() - put a running sandbox back to a checkpoint
 * @id: the sandbox
 * @name: the checkpoint, or NULL for the snapshot it was restored from
 * @r: set on success
 * @err: reason on failure
 *
 * The guest runs on from the target state; every host connection to it
 * of before (agent commands, streams) is reset.  Then, as after a restore,
 * the guest gets fresh entropy, its identity and the time, and the call
 * returns once its agent answers.  One rollback of a sandbox at a time.
 *
 * Return: 0; -EINVAL bad name; -ENOENT no such sandbox or checkpoint;
 * -EBUSY another rollback of it is under way; -EOPNOTSUPP its memory is
 * not a cube.ko clone; -ETIMEDOUT the agent did not answer after it;
 * other -errno.
 */
int cube_sandbox_rollback(uint64_t id, const char *name,
			  struct cube_rollback *r, char *err);

/* parse a decimal sandbox id; -EINVAL when it is none */
int cube_parse_id(const char *s, uint64_t *id);

#endif /* CUBE_RUNTIME_H */
