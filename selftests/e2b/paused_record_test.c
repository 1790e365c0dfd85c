// SPDX-License-Identifier: GPL-2.0
/*
 * paused_record_test: the record of a paused sandbox keeps the commands
 * that ran at the pause (format 2), a record without them (format 1)
 * still loads, and damaged entries are left out, not trusted.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cube_backend_int.h"
#include "cube_test.h"

static char dir[] = "/tmp/paused_record_test.XXXXXX";

static void setup(void)
{
	char path[256];

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	setenv("CUBE_STATE_DIR", dir, 1);
	snprintf(path, sizeof(path), "%s/paused", dir);
	ASSERT_EQ(mkdir(path, 0700), 0);
}

static void cleanup(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}

static void sandbox(struct sbx *s)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->eid, "7");
	strcpy(s->template_name, "base");
	memset(s->token, 'a', E2B_TOKEN_LEN);
	s->vcpus = 1;
	s->memory_mb = 256;
}

static void write_record(const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/paused/7.json", dir);
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs(text, f);
	fclose(f);
}

TEST(processes_are_kept)
{
	char *args0[] = { "-l", "-c", "sleep 100", NULL };
	struct cube_proc_saved v[2] = {
		{ .pid = 42, .tag = "counter", .pty = false,
		  .cfg = { .cmd = "/bin/bash", .args = args0, .nargs = 3,
			   .cwd = "/tmp" } },
		{ .pid = 43, .pty = true,
		  .cfg = { .cmd = "/bin/sh", .args = args0, .nargs = 0 } },
	};
	struct cube_be_paused p;
	struct sbx s;

	setup();
	sandbox(&s);
	ASSERT_EQ(cube_be_paused_save(&s, "/snap", v, 2), 0);
	ASSERT_EQ(cube_be_paused_load("7", &p), 0);
	ASSERT_EQ(p.nprocs, 2);
	EXPECT_EQ(p.procs[0].pid, 42);
	EXPECT_STREQ(p.procs[0].tag, "counter");
	EXPECT_STREQ(p.procs[0].cfg.cmd, "/bin/bash");
	ASSERT_EQ(p.procs[0].cfg.nargs, 3);
	EXPECT_STREQ(p.procs[0].cfg.args[2], "sleep 100");
	EXPECT_STREQ(p.procs[0].cfg.cwd, "/tmp");
	EXPECT_FALSE(p.procs[0].pty);
	EXPECT_EQ(p.procs[1].pid, 43);
	EXPECT_TRUE(p.procs[1].tag == NULL);
	EXPECT_EQ(p.procs[1].cfg.nargs, 0);
	EXPECT_TRUE(p.procs[1].cfg.cwd == NULL);
	EXPECT_TRUE(p.procs[1].pty);
	/* saved again (a new timeout), they stay */
	ASSERT_EQ(cube_be_paused_save(&p.s, p.snapshot, p.procs, p.nprocs), 0);
	cube_be_paused_free(&p);
	ASSERT_EQ(cube_be_paused_load("7", &p), 0);
	EXPECT_EQ(p.nprocs, 2);
	cube_be_paused_free(&p);
	cleanup();
}

TEST(a_record_without_processes_loads)
{
	struct cube_be_paused p;

	setup();
	write_record("{ \"e2b_id\": \"7\", \"token\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
		     " \"template\": \"base\", \"snapshot\": \"/snap\" }");
	ASSERT_EQ(cube_be_paused_load("7", &p), 0);
	EXPECT_EQ(p.nprocs, 0);
	EXPECT_TRUE(p.procs == NULL);
	cube_be_paused_free(&p);
	cleanup();
}

TEST(damaged_processes_are_left_out)
{
	struct json_object *o;
	struct cube_be_paused p;
	char path[256];
	struct sbx s;

	setup();
	/* a good record, then processes of every bad kind */
	sandbox(&s);
	ASSERT_EQ(cube_be_paused_save(&s, "/snap", NULL, 0), 0);
	snprintf(path, sizeof(path), "%s/paused/7.json", dir);
	o = json_object_from_file(path);
	ASSERT_TRUE(o != NULL);
	json_object_object_add(o, "processes", json_tokener_parse(
		"[ 5, { \"pid\": 0, \"cmd\": \"a\", \"args\": [] },"
		" { \"pid\": 4294967296, \"cmd\": \"a\", \"args\": [] },"
		" { \"pid\": 9, \"args\": [] },"
		" { \"pid\": 9, \"cmd\": \"\", \"args\": [] },"
		" { \"pid\": 9, \"cmd\": 3, \"args\": [] },"
		" { \"pid\": 9, \"cmd\": \"a\" },"
		" { \"pid\": 9, \"cmd\": \"a\", \"args\": [ 1 ] },"
		" { \"pid\": \"9\", \"cmd\": \"a\", \"args\": [] },"
		" { \"pid\": 9, \"cmd\": \"a\", \"args\": [], \"tag\": 1 },"
		" { \"pid\": 11, \"cmd\": \"good\", \"args\": [ \"x\" ] } ]"));
	ASSERT_EQ(json_object_to_file(path, o), 0);
	json_object_put(o);
	ASSERT_EQ(cube_be_paused_load("7", &p), 0);
	ASSERT_EQ(p.nprocs, 1);
	EXPECT_EQ(p.procs[0].pid, 11);
	EXPECT_STREQ(p.procs[0].cfg.cmd, "good");
	ASSERT_EQ(p.procs[0].cfg.nargs, 1);
	EXPECT_STREQ(p.procs[0].cfg.args[0], "x");
	cube_be_paused_free(&p);
	cleanup();
}

TEST_MAIN()
