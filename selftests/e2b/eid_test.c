// SPDX-License-Identifier: GPL-2.0
/*
 * eid_test: the E2B ids cubed hands out are never handed out again, also
 * when module ids start again at 1 (cube.ko loaded anew) and when cubed
 * restarts: an id at or below the largest given, or one a listed or paused
 * sandbox holds, gives way to the next number above them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cube_backend_int.h"
#include "cube_test.h"

static char dir[] = "/tmp/eid_test.XXXXXX";

static const char *eid_for(struct cube_backend *b, uint64_t id)
{
	static struct sbx s;

	memset(&s, 0, sizeof(s));
	s.id = id;
	ASSERT_EQ(cube_be_assign_eid_locked(b, &s), 0);
	return s.eid;
}

static void touch(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/paused/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
}

TEST(ids_are_never_reused)
{
	struct cube_backend b = { 0 }, again = { 0 };
	struct sbx listed = { .id = 40 };
	char path[256];

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	setenv("CUBE_STATE_DIR", dir, 1);
	snprintf(path, sizeof(path), "%s/paused", dir);
	ASSERT_EQ(mkdir(path, 0700), 0);

	/* the module's ids while they are new */
	ASSERT_STREQ(eid_for(&b, 5), "5");
	ASSERT_STREQ(eid_for(&b, 9), "9");
	/* the module loaded again: its ids start at 1 */
	ASSERT_STREQ(eid_for(&b, 1), "10");
	ASSERT_STREQ(eid_for(&b, 2), "11");
	/* ids a paused sandbox (or one being resumed) holds are skipped */
	touch("12.json");
	touch("13.resuming");
	ASSERT_STREQ(eid_for(&b, 3), "14");
	touch("20.json");
	ASSERT_STREQ(eid_for(&b, 20), "21");
	/* and ids a listed sandbox holds (a resumed one keeps its id) */
	strcpy(listed.eid, "22");
	b.list = &listed;
	ASSERT_STREQ(eid_for(&b, 22), "23");
	b.list = NULL;
	/* cubed restarted: what was handed out is still known */
	ASSERT_STREQ(eid_for(&again, 4), "24");
	ASSERT_STREQ(eid_for(&again, 100), "100");
	ASSERT_STREQ(eid_for(&again, 6), "101");

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	ASSERT_EQ(system(path), 0);
}

TEST_MAIN()
