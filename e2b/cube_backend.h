/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_backend.h: the E2B backend on top of cube.ko (netlink), cube-shim /
 * cube-vmm (lib/cube_runtime.c) and the guest agent (lib/agent_client.c).
 *
 * It keeps what E2B knows and the module does not: each sandbox's end
 * time, metadata, environment and envd access token.  These are saved in
 * the sandbox's run directory ("e2b.json", mode 0600) so that a restarted
 * daemon rebuilds its view from the module's sandbox dump plus these
 * files.  Sandboxes started by cubectl appear too (their file, when
 * cubectl wrote one, gives their end time).
 */
#ifndef CUBE_BACKEND_H
#define CUBE_BACKEND_H

#include <stdint.h>
#include <time.h>

#include "e2b_backend.h"

struct cube_backend;

/* -ENOPKG when cube.ko is not loaded */
int cube_backend_new(struct cube_backend **out);
void cube_backend_free(struct cube_backend *b);
/* the e2b_backend for the server */
struct e2b_backend cube_backend_e2b(struct cube_backend *b);

/* reconcile with the module's dump (on start and after lost events) */
int cube_backend_sync(struct cube_backend *b);
/*
 * kill every sandbox whose end time is past, or pause it in the background
 * when its timeout pauses it (lifecycle.onTimeout "pause"); returns how
 * many
 */
int cube_backend_expire(struct cube_backend *b, time_t now);
/* a sandbox is gone (exit event): forget it */
void cube_backend_forget(struct cube_backend *b, uint64_t id);

/*
 * The port proxy's view of the sandboxes (e2b/e2b_proxy.h), with the
 * backend as its ctx: a sandbox's namespace from cube.ko
 * (CUBE_IOC_SANDBOX_NETNS_OPEN: root), its traffic token, its liveness.
 */
struct e2b_proxy_ops;
extern const struct e2b_proxy_ops cube_backend_proxy_ops;

/*
 * Record the end time of sandbox @id (cubectl create --timeout of a
 * sandbox taken from a pool; a freshly started one has it written by
 * cube-shim --end-after before it is marked running), holding the run
 * directory's lock against cubed adopting the sandbox meanwhile.
 * -ENOENT: the sandbox's run directory is gone.
 */
int cube_meta_write_end(uint64_t id, time_t end_at);

#endif /* CUBE_BACKEND_H */
