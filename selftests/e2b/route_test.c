// SPDX-License-Identifier: GPL-2.0
/*
 * route_test: method and path to endpoint, for both servers, with unknown
 * paths, wrong methods and impossible sandbox ids.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "e2b_route.h"
#include "cube_test.h"

static int rt(enum e2b_plane p, const char *m, const char *path,
	      struct e2b_route *r)
{
	return e2b_route(p, m, path, r);
}

TEST(control_plane)
{
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/v2/sandboxes", &r), 0);
	ASSERT_EQ(r.id, E2B_R_CREATE);
	ASSERT_STREQ(r.sandbox, "");
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/v2/sandboxes", &r), 0);
	ASSERT_EQ(r.id, E2B_R_LIST);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/42", &r), 0);
	ASSERT_EQ(r.id, E2B_R_GET);
	ASSERT_STREQ(r.sandbox, "42");
	ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", "/sandboxes/abc_D-9", &r), 0);
	ASSERT_EQ(r.id, E2B_R_KILL);
	ASSERT_STREQ(r.sandbox, "abc_D-9");
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/sandboxes/7/timeout", &r), 0);
	ASSERT_EQ(r.id, E2B_R_TIMEOUT);
	ASSERT_STREQ(r.sandbox, "7");
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/v2/sandboxes/7/connect", &r), 0);
	ASSERT_EQ(r.id, E2B_R_CONNECT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/7/metrics", &r), 0);
	ASSERT_EQ(r.id, E2B_R_METRICS);
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/sandboxes/7/pause", &r), 0);
	ASSERT_EQ(r.id, E2B_R_PAUSE);
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/sandboxes/7/fork", &r), 0);
	ASSERT_EQ(r.id, E2B_R_FORK);
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/sandboxes/7/snapshots", &r), 0);
	ASSERT_EQ(r.id, E2B_R_SNAPSHOT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/snapshots", &r), 0);
	ASSERT_EQ(r.id, E2B_R_LIST_SNAPSHOTS);
	/* one trailing slash is fine */
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/7/", &r), 0);
	ASSERT_EQ(r.id, E2B_R_GET);
}

/* template names are any one segment, checked by their handlers */
TEST(template_routes)
{
	char longname[128];
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", "/templates/snap.1-a_b", &r), 0);
	ASSERT_EQ(r.id, E2B_R_TEMPLATE_DELETE);
	ASSERT_STREQ(r.sandbox, "snap.1-a_b");
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/templates/aliases/base", &r), 0);
	ASSERT_EQ(r.id, E2B_R_TEMPLATE_ALIAS);
	ASSERT_STREQ(r.sandbox, "base");
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/templates/aliases/a:b c", &r), 0);
	ASSERT_EQ(r.id, E2B_R_TEMPLATE_ALIAS);
	ASSERT_STREQ(r.sandbox, "a:b c");
	/* too long for any name: routed, with no name */
	memset(longname, 'x', 100);
	strcpy(longname + 100, "");
	{
		char path[160];

		snprintf(path, sizeof(path), "/templates/%s", longname);
		ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", path, &r), 0);
		ASSERT_EQ(r.id, E2B_R_TEMPLATE_DELETE);
		ASSERT_STREQ(r.sandbox, "");
	}
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/templates/base", &r), -EOPNOTSUPP);
	ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", "/templates/aliases/base", &r), -EOPNOTSUPP);
	ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", "/templates/", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", "/templates/a/b", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "DELETE", "/templates/base", &r), -ENOENT);
}

TEST(envd_plane)
{
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_ENVD, "GET", "/health", &r), 0);
	ASSERT_EQ(r.id, E2B_R_ENVD_HEALTH);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "GET", "/files", &r), 0);
	ASSERT_EQ(r.id, E2B_R_FILES_GET);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/files", &r), 0);
	ASSERT_EQ(r.id, E2B_R_FILES_POST);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/process.Process/Start", &r), 0);
	ASSERT_EQ(r.id, E2B_R_PROC_START);
	ASSERT_TRUE(e2b_route_is_rpc(r.id));
	ASSERT_TRUE(e2b_route_is_stream(r.id));
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/process.Process/SendSignal", &r), 0);
	ASSERT_EQ(r.id, E2B_R_PROC_SEND_SIGNAL);
	ASSERT_TRUE(e2b_route_is_rpc(r.id));
	ASSERT_FALSE(e2b_route_is_stream(r.id));
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/ListDir", &r), 0);
	ASSERT_EQ(r.id, E2B_R_FS_LIST_DIR);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/filesystem.Filesystem/WatchDir", &r), 0);
	ASSERT_TRUE(e2b_route_is_stream(r.id));
	ASSERT_FALSE(e2b_route_is_rpc(E2B_R_FILES_GET));
}

TEST(planes_are_separate)
{
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/v2/sandboxes", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/process.Process/Start", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/files", &r), -ENOENT);
}

TEST(unknown_paths)
{
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "sandboxes", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/1/nope", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes//timeout", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/v2/sandboxesX", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/1//", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/process.Process/Nope", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "POST", "/process.Process/Start/x", &r), -ENOENT);
	ASSERT_EQ(r.id, E2B_R_NONE);
	ASSERT_EQ(rt(E2B_PLANE_API, NULL, "/health", &r), -ENOENT);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", NULL, &r), -ENOENT);
}

TEST(wrong_method)
{
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_API, "PATCH", "/v2/sandboxes", &r), -EOPNOTSUPP);
	ASSERT_EQ(rt(E2B_PLANE_API, "PUT", "/sandboxes/1", &r), -EOPNOTSUPP);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/1/timeout", &r), -EOPNOTSUPP);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "GET", "/process.Process/Start", &r), -EOPNOTSUPP);
	ASSERT_EQ(rt(E2B_PLANE_ENVD, "DELETE", "/files", &r), -EOPNOTSUPP);
	/* methods are case-sensitive, as HTTP says */
	ASSERT_EQ(rt(E2B_PLANE_API, "get", "/sandboxes/1", &r), -EOPNOTSUPP);
}

TEST(bad_sandbox_ids)
{
	char longid[200];
	struct e2b_route r;

	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/a.b", &r), -EINVAL);
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", "/sandboxes/a%2Fb", &r), -EINVAL);
	ASSERT_EQ(rt(E2B_PLANE_API, "DELETE", "/sandboxes/..", &r), -EINVAL);
	ASSERT_EQ(rt(E2B_PLANE_API, "POST", "/sandboxes/a b/timeout", &r), -EINVAL);
	memset(longid, 'a', sizeof(longid));
	strcpy(longid, "/sandboxes/");
	memset(longid + 11, 'a', 100);
	longid[111] = '\0';
	ASSERT_EQ(rt(E2B_PLANE_API, "GET", longid, &r), -EINVAL);
	ASSERT_STREQ(r.sandbox, "");
}

TEST(id_valid)
{
	char s[E2B_ID_MAX + 2];

	ASSERT_TRUE(e2b_id_valid("1"));
	ASSERT_TRUE(e2b_id_valid("a-Z_0"));
	ASSERT_FALSE(e2b_id_valid(""));
	ASSERT_FALSE(e2b_id_valid("a/b"));
	ASSERT_FALSE(e2b_id_valid("\xc3\xa9"));
	memset(s, 'x', E2B_ID_MAX);
	s[E2B_ID_MAX] = '\0';
	ASSERT_TRUE(e2b_id_valid(s));
	s[E2B_ID_MAX] = 'x';
	s[E2B_ID_MAX + 1] = '\0';
	ASSERT_FALSE(e2b_id_valid(s));
}

TEST(names)
{
	ASSERT_STREQ(e2b_route_name(E2B_R_CREATE), "create");
	ASSERT_STREQ(e2b_route_name(E2B_R_PROC_START), "process.Start");
	ASSERT_STREQ(e2b_route_name(E2B_R_NONE), "none");
}

TEST_MAIN()
