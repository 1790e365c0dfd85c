// SPDX-License-Identifier: GPL-2.0
/*
 * audit_test: the behaviour log (lib/cube_audit.c).  Every line is one
 * JSON object with the event's time, sandbox, kind and the caller's
 * fields; environment variables appear as names only; strings, lists and
 * lines are bounded; a sandbox's file rotates and the directory is trimmed
 * to its limit; bad sandbox names write nothing anywhere; writers in many
 * processes never mix their lines; a log that cannot be written is an
 * error returned, not a crash.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cube_audit.h"
#include "cube_test.h"

static char top[64], dir[64];

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* each test runs in a process of its own, which removes its directory */
static void remove_top(void)
{
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fresh_dir(void)
{
	snprintf(top, sizeof(top), "/tmp/audit-test.XXXXXX");
	if (!mkdtemp(top))
		abort();
	atexit(remove_top);
	snprintf(dir, sizeof(dir), "%s", top);
	/* the log makes its own directory */
	strcat(dir, "/audit");
	setenv("CUBE_AUDIT_DIR", dir, 1);
}

/* @sandbox's log (or its rotated one) read whole into a NUL-ended buffer */
static char *slurp(const char *sandbox, int rotated, size_t *len)
{
	static char buf[4 << 20];
	int fd = cube_audit_open(sandbox, rotated);
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		return NULL;
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* every line of @text parses as a JSON object; how many there are */
static int count_objects(char *text)
{
	char *save = NULL, *line;
	int n = 0;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct json_object *o = json_tokener_parse(line);

		if (!o || !json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			return -1;
		}
		json_object_put(o);
		n++;
	}
	return n;
}

static long long dir_bytes(const char *path, int *files)
{
	long long total = 0;
	struct dirent *de;
	DIR *d = opendir(path);

	*files = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' ||
		    fstatat(dirfd(d), de->d_name, &st, 0))
			continue;
		total += st.st_size;
		(*files)++;
	}
	closedir(d);
	return total;
}

TEST(event_line_has_its_fields)
{
	struct json_object *f = json_object_new_object(), *o, *v;
	const char *argv[] = { "python3", "-c", "print(1)" };
	char *text;

	fresh_dir();
	json_object_object_add(f, "argv", cube_audit_strv(argv, 3));
	json_object_object_add(f, "exit", json_object_new_int(3));
	/* a caller's field cannot replace the event's own */
	json_object_object_add(f, "event", json_object_new_string("forged"));
	ASSERT_EQ(cube_audit("sbx-1", "command", "api", f), 0);

	text = slurp("sbx-1", 0, NULL);
	ASSERT_TRUE(text != NULL);
	ASSERT_EQ(text[strlen(text) - 1], '\n');
	o = json_tokener_parse(text);
	ASSERT_TRUE(o != NULL);
	ASSERT_TRUE(json_object_object_get_ex(o, "event", &v));
	EXPECT_STREQ(json_object_get_string(v), "command");
	ASSERT_TRUE(json_object_object_get_ex(o, "sandbox", &v));
	EXPECT_STREQ(json_object_get_string(v), "sbx-1");
	ASSERT_TRUE(json_object_object_get_ex(o, "by", &v));
	EXPECT_STREQ(json_object_get_string(v), "api");
	ASSERT_TRUE(json_object_object_get_ex(o, "ts", &v));
	/* 2026-12-04T18:20:01.123Z */
	EXPECT_EQ(strlen(json_object_get_string(v)), 24u);
	EXPECT_EQ(json_object_get_string(v)[23], 'Z');
	ASSERT_TRUE(json_object_object_get_ex(o, "exit", &v));
	EXPECT_EQ(json_object_get_int(v), 3);
	ASSERT_TRUE(json_object_object_get_ex(o, "argv", &v));
	ASSERT_EQ(json_object_array_length(v), 3u);
	EXPECT_STREQ(json_object_get_string(json_object_array_get_idx(v, 2)),
		     "print(1)");
	json_object_put(o);
}

TEST(environment_values_never_reach_the_log)
{
	const char *env[] = { "SECRET_TOKEN=hunter2-planted", "PATH=/bin",
			      "EMPTY=", "NOVALUE" };
	struct json_object *f = json_object_new_object(), *o, *v;
	char *text;

	fresh_dir();
	json_object_object_add(f, "env", cube_audit_env_names(env, 4));
	ASSERT_EQ(cube_audit("sbx-2", "command", "api", f), 0);
	text = slurp("sbx-2", 0, NULL);
	ASSERT_TRUE(text != NULL);
	EXPECT_TRUE(strstr(text, "hunter2") == NULL);
	EXPECT_TRUE(strstr(text, "/bin") == NULL);
	o = json_tokener_parse(text);
	ASSERT_TRUE(json_object_object_get_ex(o, "env", &v));
	ASSERT_EQ(json_object_array_length(v), 4u);
	EXPECT_STREQ(json_object_get_string(json_object_array_get_idx(v, 0)),
		     "SECRET_TOKEN");
	EXPECT_STREQ(json_object_get_string(json_object_array_get_idx(v, 2)),
		     "EMPTY");
	EXPECT_STREQ(json_object_get_string(json_object_array_get_idx(v, 3)),
		     "NOVALUE");
	json_object_put(o);
}

TEST(bad_names_write_nothing)
{
	const char *bad[] = { "", "../x", "a/b", ".hidden", "a b", "x\n",
			      "0123456789012345678901234567890123456789"
			      "0123456789012345678901234" };
	struct stat st;
	size_t i;

	fresh_dir();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(cube_audit(bad[i], "created", "cubectl",
				     json_object_new_object()), -EINVAL);
	EXPECT_EQ(cube_audit("ok", "bad event", "cubectl", NULL), -EINVAL);
	EXPECT_EQ(cube_audit("ok", "", "cubectl", NULL), -EINVAL);
	EXPECT_EQ(cube_audit(NULL, "created", "cubectl", NULL), -EINVAL);
	EXPECT_EQ(cube_audit_open("../x", 0), -EINVAL);
	/* not even the directory was made */
	EXPECT_ERRNO(stat(dir, &st), ENOENT);
}

TEST(strings_lists_and_lines_are_bounded)
{
	static char big[CUBE_AUDIT_LINE_MAX * 2];
	const char *many[CUBE_AUDIT_LIST_MAX + 10];
	struct json_object *f, *o, *v;
	char *text;
	size_t i, len;

	fresh_dir();
	memset(big, 'a', sizeof(big) - 1);
	for (i = 0; i < CUBE_AUDIT_LIST_MAX + 10; i++)
		many[i] = "x";
	f = json_object_new_object();
	json_object_object_add(f, "cwd", cube_audit_str(big));
	json_object_object_add(f, "argv",
			       cube_audit_strv(many, CUBE_AUDIT_LIST_MAX + 10));
	ASSERT_EQ(cube_audit("sbx-3", "command", "api", f), 0);
	text = slurp("sbx-3", 0, &len);
	o = json_tokener_parse(text);
	ASSERT_TRUE(o != NULL);
	ASSERT_TRUE(json_object_object_get_ex(o, "cwd", &v));
	EXPECT_EQ(strlen(json_object_get_string(v)), CUBE_AUDIT_STR_MAX + 3u);
	ASSERT_TRUE(json_object_object_get_ex(o, "argv", &v));
	EXPECT_EQ(json_object_array_length(v), CUBE_AUDIT_LIST_MAX + 1u);
	json_object_put(o);

	/* a field that is not cut by the helpers: the line is, and says so */
	f = json_object_new_object();
	json_object_object_add(f, "raw", json_object_new_string(big));
	ASSERT_EQ(cube_audit("sbx-4", "command", "api", f), 0);
	text = slurp("sbx-4", 0, &len);
	EXPECT_LT(len, (size_t)CUBE_AUDIT_LINE_MAX);
	o = json_tokener_parse(text);
	ASSERT_TRUE(o != NULL);
	EXPECT_TRUE(json_object_object_get_ex(o, "truncated", &v));
	EXPECT_FALSE(json_object_object_get_ex(o, "raw", &v));
	json_object_put(o);
}

TEST(a_sandbox_log_rotates)
{
	struct stat cur, old;
	char path[256];
	int i, n = 0, files;
	char *text;

	fresh_dir();
	for (i = 0; i < 3000; i++) {
		struct json_object *f = json_object_new_object();

		json_object_object_add(f, "i", json_object_new_int(i));
		json_object_object_add(f, "pad", json_object_new_string(
			"................................................"
			"................................................"));
		ASSERT_EQ(cube_audit("busy", "command", "api", f), 0);
	}
	snprintf(path, sizeof(path), "%s/busy.jsonl", dir);
	ASSERT_OK(stat(path, &cur));
	strcat(path, ".1");
	ASSERT_OK(stat(path, &old));
	EXPECT_LE(cur.st_size, CUBE_AUDIT_FILE_MAX + 512);
	EXPECT_LE(old.st_size, CUBE_AUDIT_FILE_MAX + 512);
	EXPECT_GT(old.st_size, CUBE_AUDIT_FILE_MAX);
	/* both generations are whole lines, and the newest line is last */
	text = slurp("busy", 1, NULL);
	n = count_objects(text);
	EXPECT_GT(n, 0);
	text = slurp("busy", 0, NULL);
	EXPECT_TRUE(strstr(text, "\"i\":2999,") != NULL);
	EXPECT_GT(count_objects(text), 0);
	EXPECT_LE(dir_bytes(dir, &files), 2LL * CUBE_AUDIT_FILE_MAX + 1024);
	EXPECT_EQ(files, 2);
}

TEST(the_directory_is_trimmed_to_its_limit)
{
	long long limit = 2LL * CUBE_AUDIT_FILE_MAX, bytes;
	char name[32], lim[32];
	int i, j, files;

	fresh_dir();
	snprintf(lim, sizeof(lim), "%lld", limit);
	setenv("CUBE_AUDIT_MAX_BYTES", lim, 1);
	/* 40 sandboxes of ~20 KiB each: 800 KiB, over the 512 KiB limit */
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ASSERT_EQ(cube_audit(name, "created", "cubectl", NULL), 0);
		for (j = 0; j < 150; j++) {
			struct json_object *f = json_object_new_object();

			json_object_object_add(f, "pad", json_object_new_string(
				"........................................"
				"........................................"));
			ASSERT_EQ(cube_audit(name, "command", "api", f), 0);
		}
	}
	ASSERT_EQ(cube_audit("last", "created", "cubectl", NULL), 0);
	bytes = dir_bytes(dir, &files);
	EXPECT_LE(bytes, limit);
	EXPECT_LT(files, 41);
	/* the newest log is kept, the oldest went */
	EXPECT_TRUE(slurp("last", 0, NULL) != NULL);
	EXPECT_TRUE(slurp("s0", 0, NULL) == NULL);
}

TEST(writers_in_many_processes_never_mix_lines)
{
	int p, i, status, n;
	pid_t pids[4];
	char *text;

	fresh_dir();
	for (p = 0; p < 4; p++) {
		pids[p] = fork();
		ASSERT_GE(pids[p], 0);
		if (!pids[p]) {
			for (i = 0; i < 300; i++) {
				struct json_object *f = json_object_new_object();

				json_object_object_add(f, "p",
						       json_object_new_int(p));
				json_object_object_add(f, "i",
						       json_object_new_int(i));
				if (cube_audit("shared", "command", "api", f))
					_exit(1);
			}
			_exit(0);
		}
	}
	for (p = 0; p < 4; p++) {
		ASSERT_EQ(waitpid(pids[p], &status, 0), pids[p]);
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	}
	text = slurp("shared", 0, NULL);
	ASSERT_TRUE(text != NULL);
	n = count_objects(text);
	EXPECT_EQ(n, 1200);
}

TEST(an_unwritable_log_is_an_error_not_a_crash)
{
	char path[96];
	int fd;

	fresh_dir();
	/* the directory's place is taken by a file */
	fd = open(dir, O_WRONLY | O_CREAT, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	EXPECT_LT(cube_audit("x", "created", "cubectl",
			     json_object_new_object()), 0);
	unlink(dir);
	/* a symlink in the log's place is not followed */
	ASSERT_OK(mkdir(dir, 0700));
	snprintf(path, sizeof(path), "%s/y.jsonl", dir);
	ASSERT_OK(symlink("/tmp/audit-test-target", path));
	EXPECT_EQ(cube_audit("y", "created", "cubectl", NULL), -ELOOP);
	EXPECT_ERRNO(access("/tmp/audit-test-target", F_OK), ENOENT);
}

TEST_MAIN()
