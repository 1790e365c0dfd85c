/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_route.h: which E2B endpoint a method and path name.
 *
 * Two servers share this table: the control plane (sandbox life cycle, the
 * SDK's E2B_API_URL) and envd (processes and files inside one sandbox, the
 * SDK's E2B_SANDBOX_URL).  Routing is pure string work, kept apart from the
 * HTTP library so it can be tested on its own.
 */
#ifndef CUBE_E2B_ROUTE_H
#define CUBE_E2B_ROUTE_H

#include <stdbool.h>

/* Sandbox ids in paths and in the E2b-Sandbox-Id header. */
#define E2B_ID_MAX	63
/* a name segment after a sandbox id (a checkpoint's) */
#define E2B_ARG_MAX	64

enum e2b_plane {
	E2B_PLANE_API,
	E2B_PLANE_ENVD,
};

enum e2b_route_id {
	E2B_R_NONE,
	/* control plane */
	E2B_R_API_HEALTH,
	E2B_R_CREATE,		/* POST /v2/sandboxes, POST /sandboxes */
	E2B_R_LIST,		/* GET /v2/sandboxes, GET /sandboxes */
	E2B_R_GET,		/* GET /sandboxes/{id} */
	E2B_R_KILL,		/* DELETE /sandboxes/{id} */
	E2B_R_TIMEOUT,		/* POST /sandboxes/{id}/timeout */
	E2B_R_CONNECT,		/* POST /v2/sandboxes/{id}/connect */
	E2B_R_RESUME,		/* POST /sandboxes/{id}/resume */
	E2B_R_PAUSE,		/* POST /sandboxes/{id}/pause */
	E2B_R_FORK,		/* POST /sandboxes/{id}/fork */
	E2B_R_SNAPSHOT,		/* POST /sandboxes/{id}/snapshots */
	E2B_R_LIST_SNAPSHOTS,	/* GET /snapshots */
	E2B_R_METRICS,		/* GET /sandboxes/{id}/metrics */
	E2B_R_NETWORK,		/* PUT /sandboxes/{id}/network */
	E2B_R_TEMPLATE_DELETE,	/* DELETE /templates/{name} */
	E2B_R_TEMPLATE_ALIAS,	/* GET /templates/aliases/{name} */
	/* cube's own: checkpoints and rollbacks of a running sandbox */
	E2B_R_CP_CREATE,	/* POST /sandboxes/{id}/checkpoints */
	E2B_R_CP_LIST,		/* GET /sandboxes/{id}/checkpoints */
	E2B_R_CP_DELETE,	/* DELETE /sandboxes/{id}/checkpoints/{name} */
	E2B_R_ROLLBACK,		/* POST /sandboxes/{id}/rollback */
	/* envd: plain HTTP */
	E2B_R_ENVD_HEALTH,	/* GET /health */
	E2B_R_FILES_GET,	/* GET /files */
	E2B_R_FILES_POST,	/* POST /files */
	/* envd: Connect RPC, all POST */
	E2B_R_PROC_START,
	E2B_R_PROC_CONNECT,
	E2B_R_PROC_LIST,
	E2B_R_PROC_SEND_INPUT,
	E2B_R_PROC_STREAM_INPUT,
	E2B_R_PROC_SEND_SIGNAL,
	E2B_R_PROC_CLOSE_STDIN,
	E2B_R_PROC_UPDATE,
	E2B_R_FS_STAT,
	E2B_R_FS_LIST_DIR,
	E2B_R_FS_MAKE_DIR,
	E2B_R_FS_MOVE,
	E2B_R_FS_REMOVE,
	E2B_R_FS_WATCH_DIR,
	E2B_R_FS_CREATE_WATCHER,
	E2B_R_FS_GET_WATCHER_EVENTS,
	E2B_R_FS_REMOVE_WATCHER,
	__E2B_R_MAX
};

/**
 * struct e2b_route - a routed request
 * @id: the endpoint
 * @sandbox: the {id} path segment, "" when the path has none; for the
 *	template routes the {name} segment as it came (checked by the
 *	handler), "" when longer than %E2B_ID_MAX
 * @arg: a name segment after the {id} one ({name} of a checkpoint) as it
 *	came, checked by the handler; "" when none or longer than
 *	%E2B_ARG_MAX
 */
struct e2b_route {
	enum e2b_route_id id;
	char sandbox[E2B_ID_MAX + 1];
	char arg[E2B_ARG_MAX + 1];
};

/**
 * e2b_route() - route one request
 * @plane: which server received it
 * @method: "GET", "POST", ...
 * @path: the URL path, without its query string
 * @r: filled on success
 *
 * Return: 0; -ENOENT when no endpoint has this path (HTTP 404); -EINVAL when
 * the path names a sandbox id that cannot exist (HTTP 404 as well, but
 * reported as an unknown sandbox); -EOPNOTSUPP when the path exists but not
 * with this method (HTTP 405).
 */
int e2b_route(enum e2b_plane plane, const char *method, const char *path,
	      struct e2b_route *r);

/** e2b_route_is_rpc() - whether the endpoint is a Connect RPC */
bool e2b_route_is_rpc(enum e2b_route_id id);

/** e2b_route_is_stream() - whether it is a server-streaming Connect RPC */
bool e2b_route_is_stream(enum e2b_route_id id);

/** e2b_route_name() - a short name for logs ("create", "process.Start") */
const char *e2b_route_name(enum e2b_route_id id);

/**
 * e2b_id_valid() - whether @s can be a sandbox id
 *
 * 1 to %E2B_ID_MAX characters of [A-Za-z0-9_-].
 */
bool e2b_id_valid(const char *s);

#endif /* CUBE_E2B_ROUTE_H */
