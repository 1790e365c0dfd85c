/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nl_client.h: client of cube.ko's generic-netlink family "cube" (libnl-3).
 *
 * Every function returns 0 or a negative errno.  The errno is the one the
 * module answered with (-ENOENT for an unknown sandbox or pool, -EPERM /
 * -EACCES without the rights, -EINVAL, -EEXIST, ...); cube_nl_open()
 * returns -ENOPKG when the family is not registered (cube.ko not loaded).
 */
#ifndef CUBE_NL_CLIENT_H
#define CUBE_NL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/cube.h>

struct cube_nl;

struct cube_nl_label {
	char key[CUBE_NAME_MAX];
	char value[CUBE_LABEL_VALUE_MAX];
};

/** struct cube_nl_sandbox - one %CUBE_A_SANDBOX nest; absent fields are 0 */
struct cube_nl_sandbox {
	uint64_t id;
	uint32_t state;			/* enum cube_sandbox_state */
	uint32_t exit_reason;		/* enum cube_exit_reason */
	uint32_t flags;			/* CUBE_SANDBOX_F_* */
	uint32_t owner_pid;
	uint32_t owner_uid;
	uint32_t vcpus;
	uint32_t vm_vcpus;
	uint32_t bpf_links;
	uint64_t memory;
	uint64_t private_pages;
	uint64_t shared_pages;
	uint64_t netns_cookie;
	uint64_t created_ns;
	char template_name[CUBE_NAME_MAX];
	char pool[CUBE_NAME_MAX];
	unsigned int nlabels;
	struct cube_nl_label labels[CUBE_LABELS_MAX];
};

struct cube_nl_pool {
	char name[CUBE_NAME_MAX];
	char template_name[CUBE_NAME_MAX];
	uint32_t target;
	uint32_t low;
	uint32_t size;
	uint64_t taken;
};

struct cube_nl_stats {
	uint64_t sandboxes;
	uint64_t pools;
	uint64_t snapshots;
	uint64_t clones;
	uint64_t shared_pages;
	uint64_t private_pages;
	uint64_t pooled;
};

struct cube_nl_snapshot {
	uint64_t id;
	uint64_t size;
	uint64_t pages;
	uint64_t parent_id;
	uint32_t depth;
	uint32_t clones;
	uint32_t children;
	uint64_t ws_pages;
};

/**
 * struct cube_nl_event - one message of the "events" multicast group
 * @cmd: CUBE_CMD_EVENT_*
 * @has_sandbox: @sandbox was filled
 * @has_pool: @pool was filled
 */
struct cube_nl_event {
	uint8_t cmd;
	bool has_sandbox;
	bool has_pool;
	struct cube_nl_sandbox sandbox;
	struct cube_nl_pool pool;
};

int cube_nl_open(struct cube_nl **out);
void cube_nl_close(struct cube_nl *nl);

int cube_nl_stats(struct cube_nl *nl, struct cube_nl_stats *st);

int cube_nl_sandbox_get(struct cube_nl *nl, uint64_t id,
			struct cube_nl_sandbox *out);
/* @out: malloc()ed array (free() it), @n entries */
int cube_nl_sandbox_dump(struct cube_nl *nl, struct cube_nl_sandbox **out,
			 size_t *n);
/* @grace_ms: 0 for the module's default */
int cube_nl_sandbox_kill(struct cube_nl *nl, uint64_t id, uint32_t grace_ms);

int cube_nl_pool_new(struct cube_nl *nl, const char *name,
		     const char *template, uint32_t target, uint32_t low);
int cube_nl_pool_set(struct cube_nl *nl, const char *name, uint32_t target,
		     uint32_t low);
int cube_nl_pool_del(struct cube_nl *nl, const char *name);
int cube_nl_pool_get(struct cube_nl *nl, const char *name,
		     struct cube_nl_pool *out);
int cube_nl_pool_dump(struct cube_nl *nl, struct cube_nl_pool **out,
		      size_t *n);
/* claim a ready sandbox: -ENOENT unknown pool, -EAGAIN pool empty */
int cube_nl_pool_take(struct cube_nl *nl, const char *name, uint64_t *id,
		      uint32_t *owner_pid);

int cube_nl_snapshot_dump(struct cube_nl *nl, struct cube_nl_snapshot **out,
			  size_t *n);
int cube_nl_snapshot_del(struct cube_nl *nl, uint64_t id);

/* Events: a separate socket joined to the "events" group. */
int cube_nl_events_open(struct cube_nl **out);
/* the socket's fd, to poll() for POLLIN */
int cube_nl_fd(struct cube_nl *nl);
/*
 * cube_nl_event_next() - read the next event
 *
 * Blocks unless the socket was made non-blocking.  Returns 0 with @ev
 * filled, -EAGAIN when nothing is queued on a non-blocking socket,
 * -ENOBUFS when events were lost (the socket overran; resynchronise from
 * a dump), other -errno.
 */
int cube_nl_event_next(struct cube_nl *nl, struct cube_nl_event *ev);
int cube_nl_set_nonblocking(struct cube_nl *nl);

/* names for output */
const char *cube_nl_state_name(uint32_t state);
const char *cube_nl_exit_name(uint32_t reason);
const char *cube_nl_event_name(uint8_t cmd);

#endif /* CUBE_NL_CLIENT_H */
