// SPDX-License-Identifier: GPL-2.0
/*
 * run_dir_test: a sandbox's run directory (lib/cube_sandbox_dir.c),
 * natively, without cube.ko.  A new directory holds its shim's life lock,
 * which no one else can take while the shim lives, and its removal leaves
 * nothing; a directory of the new sandbox's own id that nobody holds (a dead
 * shim's from an earlier load of cube.ko) is replaced, and the behaviour log
 * says so; one that a live process holds is refused and left as it was; a
 * sweep never removes anything without cube.ko's list of sandboxes, nor
 * anything that is not a run directory; and sweeps running all the while
 * never fail the making of a new directory.  rollback_test.sh covers the sweep
 * of a SIGKILLed shim against a real cube.ko.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "cube_runtime.h"
#include "cube_sandbox_dir.h"
#include "cube_test.h"

FIXTURE(run) {
	char dir[64];
	char sandboxes[128];
};

FIXTURE_SETUP(run)
{
	strcpy(self->dir, "/tmp/run_dir_test.XXXXXX");
	ASSERT_TRUE(mkdtemp(self->dir) != NULL);
	setenv("CUBE_RUN_DIR", self->dir, 1);
	setenv("CUBE_STATE_DIR", self->dir, 1);
	unsetenv("CUBE_AUDIT_DIR");
	snprintf(self->sandboxes, sizeof(self->sandboxes), "%s/sandboxes",
		 self->dir);
}

FIXTURE_TEARDOWN(run)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	EXPECT_EQ(system(cmd), 0);
}

static bool exists(const char *base, const char *name)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", base, name);
	return !access(p, F_OK);
}

static void touch(const char *base, const char *name)
{
	char p[PATH_MAX + 64];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", base, name);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
}

/* Whether another open file description can take @dir's life lock. */
static bool lock_free(const char *dir)
{
	char p[PATH_MAX + 64];
	bool free_;
	int fd;

	snprintf(p, sizeof(p), "%s/" CUBE_SHIM_LOCK_FILE, dir);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return true;
	free_ = !flock(fd, LOCK_EX | LOCK_NB);
	close(fd);
	return free_;
}

TEST_F(run, a_new_directory_is_locked_and_its_removal_leaves_nothing)
{
	char dir[PATH_MAX], err[CUBE_ERR_MAX] = "";
	int fd;

	fd = cube_sandbox_dir_make(7, dir, sizeof(dir), err);
	ASSERT_GE(fd, 0);
	EXPECT_TRUE(exists(self->sandboxes, "7/" CUBE_SHIM_LOCK_FILE));
	EXPECT_TRUE(exists(self->sandboxes, "7/" CUBE_CP_LOCK_FILE));
	EXPECT_FALSE(lock_free(dir));
	touch(dir, "console.log");
	touch(dir, "vmm.log");
	EXPECT_EQ(cube_sandbox_dir_remove(dir, 7, geteuid(), err, sizeof(err)),
		  0);
	EXPECT_FALSE(exists(self->sandboxes, "7"));
	close(fd);
	/* and the id can be made again */
	fd = cube_sandbox_dir_make(7, dir, sizeof(dir), err);
	ASSERT_GE(fd, 0);
	close(fd);
}

TEST_F(run, an_unheld_directory_of_the_new_id_is_replaced)
{
	char dir[PATH_MAX], err[CUBE_ERR_MAX] = "", p[256], line[512] = "";
	FILE *f;
	int fd;

	/* what a shim SIGKILLed under an earlier load of cube.ko left */
	ASSERT_EQ(mkdir(self->sandboxes, 0700), 0);
	snprintf(p, sizeof(p), "%s/9", self->sandboxes);
	ASSERT_EQ(mkdir(p, 0700), 0);
	touch(p, "console.log");
	touch(p, CUBE_SHIM_LOCK_FILE);
	snprintf(line, sizeof(line), "%s/checkpoints", p);
	ASSERT_EQ(mkdir(line, 0700), 0);

	fd = cube_sandbox_dir_make(9, dir, sizeof(dir), err);
	ASSERT_GE(fd, 0);
	EXPECT_STREQ(dir, p);
	EXPECT_FALSE(exists(p, "console.log"));
	EXPECT_FALSE(exists(p, "checkpoints"));
	EXPECT_FALSE(lock_free(dir));
	close(fd);
	snprintf(p, sizeof(p), "%s/audit/9.jsonl", self->dir);
	f = fopen(p, "r");
	ASSERT_TRUE(f != NULL);
	line[0] = 0;
	EXPECT_TRUE(fgets(line, sizeof(line), f) != NULL);
	fclose(f);
	EXPECT_TRUE(strstr(line, "\"event\":\"run_dir_swept\"") != NULL);
}

TEST_F(run, a_held_directory_of_the_new_id_is_refused_and_kept)
{
	char dir[PATH_MAX], err[CUBE_ERR_MAX] = "";
	int fd, ret;

	fd = cube_sandbox_dir_make(11, dir, sizeof(dir), err);
	ASSERT_GE(fd, 0);
	touch(dir, "console.log");
	/* the live shim holds fd; a second make of 11 must not take it */
	ret = cube_sandbox_dir_make(11, dir, sizeof(dir), err);
	EXPECT_EQ(ret, -EEXIST);
	EXPECT_TRUE(strstr(err, "held") != NULL);
	EXPECT_TRUE(exists(dir, "console.log"));
	EXPECT_FALSE(lock_free(dir));
	close(fd);
	EXPECT_TRUE(lock_free(dir));
}

TEST_F(run, a_sweep_removes_nothing_without_cube_ko_or_not_a_run_dir)
{
	char dir[PATH_MAX], err[CUBE_ERR_MAX] = "", p[256];
	int fd;

	if (!access("/dev/" CUBE_DEVICE_NAME, F_OK))
		SKIP("cube.ko is loaded here: a sweep would ask it");
	fd = cube_sandbox_dir_make(3, dir, sizeof(dir), err);
	ASSERT_GE(fd, 0);
	/* not ours: names that are not ids as written, a file */
	snprintf(p, sizeof(p), "%s/007", self->sandboxes);
	ASSERT_EQ(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/x1", self->sandboxes);
	ASSERT_EQ(mkdir(p, 0700), 0);
	touch(self->sandboxes, "15");
	/* only held directories and strangers: cube.ko is not asked */
	EXPECT_EQ(cube_sandbox_dirs_sweep("test"), 0);
	/* an unheld one needs cube.ko's word, which this host cannot give */
	snprintf(p, sizeof(p), "%s/13", self->sandboxes);
	ASSERT_EQ(mkdir(p, 0700), 0);
	EXPECT_LT(cube_sandbox_dirs_sweep("test"), 0);
	EXPECT_TRUE(exists(self->sandboxes, "13"));
	EXPECT_TRUE(exists(self->sandboxes, "007"));
	EXPECT_TRUE(exists(self->sandboxes, "x1"));
	EXPECT_TRUE(exists(self->sandboxes, "15"));
	EXPECT_TRUE(exists(self->sandboxes, "3/" CUBE_SHIM_LOCK_FILE));
	close(fd);
}

/*
 * Sweeps in other processes (other shims starting) take a new directory's
 * life lock for a moment to see whether it is free; the new directory's
 * own shim must wait out that moment, not fail its create.  Seen as
 * "cannot lock ...: Resource temporarily unavailable" from 50 creates at
 * once.
 */
TEST_F(run, a_sweep_racing_a_new_directory_never_fails_its_making)
{
	char dir[PATH_MAX], err[CUBE_ERR_MAX] = "";
	int i, fd, failed = 0, status;
	pid_t sweeper;

	if (!access("/dev/" CUBE_DEVICE_NAME, F_OK))
		SKIP("cube.ko is loaded here: a sweep would ask it");
	sweeper = fork();
	ASSERT_GE(sweeper, 0);
	if (!sweeper) {
		/* until killed: without cube.ko it only ever looks */
		for (;;)
			cube_sandbox_dirs_sweep("test");
	}
	for (i = 0; i < 5000; i++) {
		fd = cube_sandbox_dir_make(100 + i, dir, sizeof(dir), err);
		if (fd < 0) {
			if (!failed++)
				TH_LOG("making %d: %s", 100 + i, err);
			continue;
		}
		EXPECT_EQ(cube_sandbox_dir_remove(dir, 100 + i, geteuid(), err,
						  sizeof(err)), 0);
		close(fd);
	}
	kill(sweeper, SIGKILL);
	ASSERT_EQ(waitpid(sweeper, &status, 0), sweeper);
	EXPECT_EQ(failed, 0);
}

TEST_MAIN()
