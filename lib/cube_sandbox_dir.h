/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_sandbox_dir.h: a sandbox's run directory, $CUBE_RUN_DIR/sandboxes/<id>/
 * (see cube_runtime.h for what it holds), from its making to its removal,
 * and the removal of those whose cube-shim died without removing its own.
 *
 * cube-shim holds an exclusive flock(2) on the directory's
 * CUBE_SHIM_LOCK_FILE for its whole life, made and locked the moment it
 * makes the directory (the directory's own flock is e2b.json's:
 * e2b/cube_backend.c).  A shim killed by SIGKILL (or the OOM killer) drops
 * the lock with its descriptors and leaves the directory, its checkpoints'
 * files and their cube.ko snapshots behind, and the cgroup its VMM joined
 * (cube-vmm --parent-fd: the shim removes it after the VMM).  The next shim to make a directory removes
 * each one whose lock nobody holds and whose sandbox cube.ko no longer has:
 * the first alone could be a shim between its mkdir and its lock, the second
 * alone a shim removing its own after its sandbox fd closed.
 */
#ifndef CUBE_SANDBOX_DIR_H
#define CUBE_SANDBOX_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CUBE_SHIM_LOCK_FILE	"shim.lock"

/**
 * cube_sandbox_dir_make() - make sandbox @id's run directory and lock it
 * @id: the sandbox, as cube.ko numbered it
 * @dir: set to the directory's path
 * @len: size of @dir
 * @err: a one-line reason on failure (CUBE_ERR_MAX bytes)
 *
 * First removes what dead shims left (cube_sandbox_dirs_sweep()).  A
 * directory of @id that is already there is a dead shim's from before
 * cube.ko was loaded again (ids restart then): it goes if unlocked.
 *
 * It holds CUBE_CP_LOCK_FILE too, made here only (cube_sandbox_cp_lock()
 * finds no sandbox without it).
 *
 * Return: the descriptor of its CUBE_SHIM_LOCK_FILE, holding the lock
 * (close-on-exec; keep it open as long as the sandbox lives), or -errno.
 */
int cube_sandbox_dir_make(uint64_t id, char *dir, size_t len, char *err);

/**
 * cube_sandbox_dir_remove() - remove sandbox @id's run directory @dir
 * @vmm_uid: the uid its VMM ran as, which owns its checkpoints' snapshots
 * @err: what stays behind, if anything (@errlen bytes)
 *
 * Under the checkpoint lock (CUBE_CP_LOCK_FILE), which goes first: a
 * checkpoint under way ends before, none starts after.  Deletes the
 * module snapshots of the checkpoints a killed VMM left, then the files.
 *
 * Return: 0, or -errno with @err set when something stays (the directory
 * is removed as far as it can be all the same).
 */
int cube_sandbox_dir_remove(const char *dir, uint64_t id, uid_t vmm_uid,
			    char *err, size_t errlen);

/**
 * cube_sandbox_dirs_sweep() - remove the run directories dead shims left
 * @by: who sweeps, for the behaviour log's "run_dir_swept" events
 *
 * Return: how many were removed, or -errno (nothing is removed without
 * cube.ko's list of sandboxes to check against).
 */
int cube_sandbox_dirs_sweep(const char *by);

#endif /* CUBE_SANDBOX_DIR_H */
