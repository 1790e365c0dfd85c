/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_proc.h: commands running in sandboxes, shared by several readers.
 *
 * Each command has its own agent connection and one pump thread, the only
 * user of that connection: it reads the command's events into a queue and
 * passes on stdin, signals and stdin-close requests queued by other
 * threads.  Readers (streams) each keep a cursor into the queue; events
 * every reader has seen are dropped, and so is output nobody reads.  A
 * reader attached later (Connect) sees events from then on.
 */
#ifndef CUBE_PROC_H
#define CUBE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "e2b_backend.h"

struct cube_proc;
struct cube_proc_table;

/*
 * Commands one sandbox may run through the API at once (its agent serves
 * no more sessions); output queued for slow readers is bounded per command
 * and per sandbox in real bytes (cube_proc.c), with back-pressure to the
 * guest beyond.
 */
#define CUBE_PROC_MAX	64

int cube_proc_table_new(struct cube_proc_table **out);
/* kills nothing: the commands die with their sandboxes */
void cube_proc_table_free(struct cube_proc_table *t);

/**
 * cube_proc_start() - start a command and attach a first reader
 * @t: table
 * @sandbox: sandbox id
 * @req: what to run
 * @env_extra: sandbox-wide variables, before @req's own (may be NULL)
 * @out: the reader (cube_proc_reader_close() it)
 * @msg: reason on failure
 *
 * Return: 0, -EAGAIN with CUBE_PROC_MAX commands of @sandbox running, or
 * the agent's error.
 */
int cube_proc_start(struct cube_proc_table *t, uint64_t sandbox,
		    const struct e2b_start *req,
		    const struct e2b_kvs *env_extra,
		    struct e2b_proc **out, char *msg);
/* attach a reader to a running command */
int cube_proc_connect(struct cube_proc_table *t, uint64_t sandbox,
		      const struct e2b_selector *sel, struct e2b_proc **out);
/* the e2b_backend_ops.proc_next contract */
int cube_proc_next(struct e2b_proc *r, struct e2b_event *ev, int timeout_ms);
void cube_proc_reader_close(struct e2b_proc *r);

int cube_proc_list(struct cube_proc_table *t, uint64_t sandbox,
		   struct e2b_proc_info **out, size_t *n);
int cube_proc_signal(struct cube_proc_table *t, uint64_t sandbox,
		     const struct e2b_selector *sel, int sig);
int cube_proc_input(struct cube_proc_table *t, uint64_t sandbox,
		    const struct e2b_selector *sel, const void *data,
		    size_t len);
int cube_proc_close_stdin(struct cube_proc_table *t, uint64_t sandbox,
			  const struct e2b_selector *sel);
/* a new size for a command's pty: -EINVAL when it has none */
int cube_proc_resize(struct cube_proc_table *t, uint64_t sandbox,
		     const struct e2b_selector *sel, unsigned int cols,
		     unsigned int rows);
/* Directory watches, each on its own agent connection. */
#define CUBE_WATCH_MAX	CUBE_AGENT_MAX_WATCHES	/* per sandbox */
/* -EAGAIN with CUBE_WATCH_MAX watches of @sandbox open */
int cube_watch_start(struct cube_proc_table *t, uint64_t sandbox,
		     const char *path, bool recursive, struct e2b_watch **out,
		     char *msg);
/* the e2b_backend_ops.watch_next contract */
int cube_watch_next(struct e2b_watch *w, struct e2b_fs_event *ev,
		    int timeout_ms);
void cube_watch_close(struct e2b_watch *w);
/*
 * Commands outliving a pause: they are started with the agent's KEEP, so
 * the restored guest keeps them when their connections break.  Before the
 * snapshot, cube_proc_save() notes what runs; after the resume,
 * cube_proc_adopt() takes each over again (the agent's ATTACH) under the
 * sandbox's new id.
 */
struct cube_proc_saved {
	uint32_t pid;
	char *tag;			/* NULL: none */
	struct e2b_proc_config cfg;	/* its environment is not kept */
	bool pty;
};

/* the KEEP commands of @sandbox still running, *@out (free it) */
int cube_proc_save(struct cube_proc_table *t, uint64_t sandbox,
		   struct cube_proc_saved **out, size_t *n);
void cube_proc_saved_free(struct cube_proc_saved *v, size_t n);
/* what one of them holds, not itself */
void cube_proc_saved_free_one(struct cube_proc_saved *sp);
/*
 * Takes the @n commands of @v over in the resumed @sandbox; one that
 * cannot be (it ended before the snapshot, ...) is left out, and logged.
 * Return: how many were adopted.
 */
size_t cube_proc_adopt(struct cube_proc_table *t, uint64_t sandbox,
		       const struct cube_proc_saved *v, size_t n);

/* forget a sandbox's commands (it is gone): their readers see an end */
void cube_proc_drop_sandbox(struct cube_proc_table *t, uint64_t sandbox);

#endif /* CUBE_PROC_H */
