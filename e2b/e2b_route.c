// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_route.c: which E2B endpoint a method and path name.
 */
#include <errno.h>
#include <string.h>

#include "e2b_route.h"

struct route_ent {
	enum e2b_plane plane;
	const char *method;
	/*
	 * "*" in a pattern matches one sandbox-id segment, "+" any one
	 * segment (a template name, or after a "*" a checkpoint name,
	 * checked by its handler)
	 */
	const char *pattern;
	enum e2b_route_id id;
	const char *name;
};

static const struct route_ent routes[] = {
	{ E2B_PLANE_API, "GET",    "/health",			E2B_R_API_HEALTH, "health" },
	{ E2B_PLANE_API, "POST",   "/v2/sandboxes",		E2B_R_CREATE, "create" },
	{ E2B_PLANE_API, "POST",   "/sandboxes",		E2B_R_CREATE, "create" },
	{ E2B_PLANE_API, "GET",    "/v2/sandboxes",		E2B_R_LIST, "list" },
	{ E2B_PLANE_API, "GET",    "/sandboxes",		E2B_R_LIST, "list" },
	{ E2B_PLANE_API, "GET",    "/sandboxes/*",		E2B_R_GET, "get" },
	{ E2B_PLANE_API, "DELETE", "/sandboxes/*",		E2B_R_KILL, "kill" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/timeout",	E2B_R_TIMEOUT, "timeout" },
	{ E2B_PLANE_API, "POST",   "/v2/sandboxes/*/connect",	E2B_R_CONNECT, "connect" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/connect",	E2B_R_CONNECT, "connect" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/resume",	E2B_R_RESUME, "resume" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/pause",	E2B_R_PAUSE, "pause" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/fork",		E2B_R_FORK, "fork" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/snapshots",	E2B_R_SNAPSHOT, "snapshot" },
	{ E2B_PLANE_API, "GET",    "/snapshots",		E2B_R_LIST_SNAPSHOTS, "snapshots" },
	{ E2B_PLANE_API, "GET",    "/sandboxes/*/metrics",	E2B_R_METRICS, "metrics" },
	{ E2B_PLANE_API, "PUT",    "/sandboxes/*/network",	E2B_R_NETWORK, "network" },
	{ E2B_PLANE_API, "DELETE", "/templates/+",		E2B_R_TEMPLATE_DELETE, "template.delete" },
	{ E2B_PLANE_API, "GET",    "/templates/aliases/+",	E2B_R_TEMPLATE_ALIAS, "template.alias" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/checkpoints",	E2B_R_CP_CREATE, "checkpoint" },
	{ E2B_PLANE_API, "GET",    "/sandboxes/*/checkpoints",	E2B_R_CP_LIST, "checkpoints" },
	{ E2B_PLANE_API, "DELETE", "/sandboxes/*/checkpoints/+", E2B_R_CP_DELETE, "checkpoint.delete" },
	{ E2B_PLANE_API, "POST",   "/sandboxes/*/rollback",	E2B_R_ROLLBACK, "rollback" },

	{ E2B_PLANE_ENVD, "GET",  "/health",			E2B_R_ENVD_HEALTH, "envd.health" },
	{ E2B_PLANE_ENVD, "GET",  "/files",			E2B_R_FILES_GET, "files.get" },
	{ E2B_PLANE_ENVD, "POST", "/files",			E2B_R_FILES_POST, "files.post" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/Start",	E2B_R_PROC_START, "process.Start" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/Connect",	E2B_R_PROC_CONNECT, "process.Connect" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/List",	E2B_R_PROC_LIST, "process.List" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/SendInput",	E2B_R_PROC_SEND_INPUT, "process.SendInput" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/StreamInput", E2B_R_PROC_STREAM_INPUT, "process.StreamInput" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/SendSignal", E2B_R_PROC_SEND_SIGNAL, "process.SendSignal" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/CloseStdin", E2B_R_PROC_CLOSE_STDIN, "process.CloseStdin" },
	{ E2B_PLANE_ENVD, "POST", "/process.Process/Update",	E2B_R_PROC_UPDATE, "process.Update" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/Stat", E2B_R_FS_STAT, "filesystem.Stat" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/ListDir", E2B_R_FS_LIST_DIR, "filesystem.ListDir" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/MakeDir", E2B_R_FS_MAKE_DIR, "filesystem.MakeDir" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/Move", E2B_R_FS_MOVE, "filesystem.Move" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/Remove", E2B_R_FS_REMOVE, "filesystem.Remove" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/WatchDir", E2B_R_FS_WATCH_DIR, "filesystem.WatchDir" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/CreateWatcher", E2B_R_FS_CREATE_WATCHER, "filesystem.CreateWatcher" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/GetWatcherEvents", E2B_R_FS_GET_WATCHER_EVENTS, "filesystem.GetWatcherEvents" },
	{ E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/RemoveWatcher", E2B_R_FS_REMOVE_WATCHER, "filesystem.RemoveWatcher" },
};

#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

static bool id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool e2b_id_valid(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++)
		if (n >= E2B_ID_MAX || !id_char(s[n]))
			return false;
	return n > 0;
}

/*
 * Match @path against @pattern.  Returns 1 on a match (with the "*" segment
 * copied to @seg, a "+" one to @seg or, after a "*", to @arg), 0 when they
 * differ, -EINVAL when they match in shape but the "*" segment is no valid
 * id.
 */
static int match(const char *pattern, const char *path, char *seg, char *arg)
{
	const char *p = pattern, *s = path;
	bool bad = false, have_id = false;

	*seg = '\0';
	*arg = '\0';
	while (*p && *s) {
		if (*p == '+') {
			size_t n = strcspn(s, "/");
			size_t max = have_id ? E2B_ARG_MAX : E2B_ID_MAX;
			char *to = have_id ? arg : seg;

			if (!n)
				return 0;
			/* too long for any name: "" tells the handler */
			if (n <= max) {
				memcpy(to, s, n);
				to[n] = '\0';
			}
			s += n;
			p++;
			continue;
		}
		if (*p == '*') {
			size_t n = strcspn(s, "/");

			if (!n)
				return 0;
			have_id = true;
			if (n > E2B_ID_MAX) {
				bad = true;
			} else {
				memcpy(seg, s, n);
				seg[n] = '\0';
				if (!e2b_id_valid(seg))
					bad = true;
			}
			s += n;
			p++;
			continue;
		}
		if (*p != *s)
			return 0;
		p++;
		s++;
	}
	/* one trailing slash is tolerated */
	if (!*p && s[0] == '/' && !s[1])
		s++;
	if (*p || *s)
		return 0;
	if (bad) {
		*seg = '\0';
		return -EINVAL;
	}
	return 1;
}

int e2b_route(enum e2b_plane plane, const char *method, const char *path,
	      struct e2b_route *r)
{
	bool path_known = false, bad_id = false;
	char seg[E2B_ID_MAX + 1], arg[E2B_ARG_MAX + 1];
	size_t i;

	r->id = E2B_R_NONE;
	r->sandbox[0] = '\0';
	r->arg[0] = '\0';
	if (!method || !path || path[0] != '/')
		return -ENOENT;
	for (i = 0; i < N_ROUTES; i++) {
		int m;

		if (routes[i].plane != plane)
			continue;
		m = match(routes[i].pattern, path, seg, arg);
		if (!m)
			continue;
		if (m < 0) {
			bad_id = true;
			continue;
		}
		path_known = true;
		if (strcmp(routes[i].method, method))
			continue;
		r->id = routes[i].id;
		strcpy(r->sandbox, seg);
		strcpy(r->arg, arg);
		return 0;
	}
	if (path_known)
		return -EOPNOTSUPP;
	if (bad_id)
		return -EINVAL;
	return -ENOENT;
}

bool e2b_route_is_rpc(enum e2b_route_id id)
{
	return id >= E2B_R_PROC_START && id < __E2B_R_MAX;
}

bool e2b_route_is_stream(enum e2b_route_id id)
{
	return id == E2B_R_PROC_START || id == E2B_R_PROC_CONNECT ||
	       id == E2B_R_FS_WATCH_DIR;
}

const char *e2b_route_name(enum e2b_route_id id)
{
	size_t i;

	for (i = 0; i < N_ROUTES; i++)
		if (routes[i].id == id)
			return routes[i].name;
	return "none";
}
