/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_backend_int.h: what the files of the cube E2B backend share
 * (cube_backend.c: the sandboxes and their records; cube_backend_net.c:
 * their network settings and the port proxy's view of them).
 */
#ifndef CUBE_BACKEND_INT_H
#define CUBE_BACKEND_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cube_backend.h"
#include "cube_runtime.h"
#include "e2b_backend.h"

struct cube_nl;
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
	/* the E2B id: the module id, or the first one of a resumed sandbox */
	char eid[E2B_ID_MAX + 1];
	bool pausing;			/* a pause is snapshotting it */
	struct cube_cpu_sample {
		uint64_t cpu_ns;	/* the VMM's user + system time */
		uint64_t wall_ns;	/* CLOCK_MONOTONIC */
	} cpu;
};

struct cube_backend {
	pthread_mutex_t lock;		/* the list and the netlink socket */
	struct cube_nl *nl;
	struct sbx *list;
	struct cube_proc_table *procs;
};

/* the entry of E2B id @sid, checked against the module; under b->lock */
int cube_be_lookup_locked(struct cube_backend *b, const char *sid,
			  struct sbx **out);
/* write the entry's e2b.json */
int cube_be_meta_save(struct sbx *s);

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

#endif /* CUBE_BACKEND_INT_H */
