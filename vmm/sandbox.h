/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Confinement of one cube-vmm: a cgroup v2 of its own with cpu.max,
 * memory.max and pids.max (when /sys/fs/cgroup is a writable cgroup2
 * mount), then, once the VM is set up, no capabilities and a seccomp
 * allow list.
 */
#ifndef CUBE_VMM_SANDBOX_H
#define CUBE_VMM_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

struct cgroup_limits {
	const char *parent;		/* default /sys/fs/cgroup/cube */
	const char *name;		/* the sandbox id */
	uint64_t cpu_quota_us;		/* per 100 ms period; 0: no limit */
	uint64_t memory_max;		/* bytes; 0: no limit */
	uint64_t pids_max;		/* 0: no limit */
	const int *parent_close;	/* fds the parent closes (-1: none) */
	int nr_parent_close;
};

/*
 * If cgroup v2 is usable, fork: the child returns 0 and goes on, inside
 * the new cgroup; the parent waits for it, forwards SIGTERM/SIGINT,
 * removes the cgroup and exits with the child's status.  Returns 1 (no
 * cgroup, nothing done), 0 in the child, or -errno.
 */
int sandbox_cgroup_enter(const struct cgroup_limits *lim, const char **err);
/*
 * Started by a supervisor that removes the cgroup once this process is
 * gone (cube-shim, cube-vmm --parent-fd): make it and move this process
 * in, no fork.  Returns 1 (no cgroup, nothing done), 0, or -errno.
 */
int sandbox_cgroup_join(const struct cgroup_limits *lim, const char **err);
/*
 * @fd: this process's end of a pipe whose other end its supervisor holds
 * as long as it lives (cube-vmm --parent-fd), for sandbox_watch_parent().
 */
void sandbox_set_parent(int fd);
/*
 * In the VM process: (again) die with the cgroup supervisor.  A change of
 * uid or gid clears the parent-death signal, so the jail calls this after
 * it; -ESRCH if the supervisor is gone already, 0 without one.
 */
int sandbox_watch_parent(void);
/* Before any thread: the pipe that told the supervisor's end is closed. */
void sandbox_release_parent(void);

/* Drop every capability and set no_new_privs; 0 or -errno. */
int sandbox_drop_caps(void);
/*
 * Load the seccomp allow list for all threads; with rollback, also the
 * requests of checkpoints and rollbacks; with disk, what the writable
 * disk needs (holes punched, copies by reflink or copy_file_range);
 * with paths, opening, making, renaming and removing files by name (an
 * unjailed VMM's snapshot and checkpoint directories) and new Unix
 * sockets connected by name (guest-initiated vsock).  0 or -errno.
 */
int sandbox_seccomp(bool rollback, bool disk, bool paths);

#endif /* CUBE_VMM_SANDBOX_H */
