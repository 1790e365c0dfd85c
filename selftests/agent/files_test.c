// SPDX-License-Identifier: GPL-2.0
/*
 * files_test: file requests through a native cube-agent: binary round
 * trips, a 50 MiB streamed transfer, listings, mkdir/remove/rename, the
 * errors of missing and wrong paths, writes that fail half way, paths that
 * try to leave the root, and identity/reseed outside a guest.
 */
#include <dirent.h>
#include <pwd.h>

#include "agent_test.h"

FIXTURE(files) {
	struct agent_proc p;
	struct cube_agent *a;
	char path[256];
};

FIXTURE_SETUP(files)
{
	agent_spawn(&self->p, NULL, false);
	self->a = agent_connect(&self->p);
}

FIXTURE_TEARDOWN(files)
{
	cube_agent_close(self->a);
	agent_stop(&self->p);
}

/* DIR/name of the scratch directory. */
static const char *in_dir(struct agent_proc *p, char *buf, size_t len,
			  const char *name)
{
	snprintf(buf, len, "%s/%s", p->dir, name);
	return buf;
}

struct membuf {
	uint8_t *data;
	size_t len;
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;
	uint8_t *p = realloc(m->data, m->len + len + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p + m->len, buf, len);
	m->data = p;
	m->len += len;
	return 0;
}

static ssize_t one_chunk(void *ctx, void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (len > m->len)
		len = m->len;
	memcpy(buf, m->data, len);
	m->data += len;
	m->len -= len;
	return len;
}

TEST_F(files, binary_round_trip)
{
	char path[256];
	struct membuf got = { 0 };
	struct cube_agent_stat st;
	uint8_t data[70000];
	uint64_t size = 0;
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ (i >> 8));
	in_dir(&self->p, path, sizeof(path), "bin");
	ASSERT_EQ(cube_agent_write_buf(self->a, path, 0600, data, sizeof(data)), 0);
	ASSERT_EQ(cube_agent_read_file(self->a, path, mem_sink, &got, &size), 0);
	ASSERT_EQ(size, sizeof(data));
	ASSERT_EQ(got.len, sizeof(data));
	EXPECT_EQ(memcmp(got.data, data, sizeof(data)), 0);
	free(got.data);
	ASSERT_EQ(cube_agent_stat(self->a, path, &st), 0);
	EXPECT_EQ(st.type, CUBE_FTYPE_FILE);
	EXPECT_EQ(st.size, sizeof(data));
	EXPECT_EQ(st.mode, 0600);
	EXPECT_EQ(st.uid, geteuid());
	EXPECT_GT(st.mtime_ns, 0);
	/* overwrite with empty, default mode */
	ASSERT_EQ(cube_agent_write_buf(self->a, path, 0, "", 0), 0);
	ASSERT_EQ(cube_agent_stat(self->a, path, &st), 0);
	EXPECT_EQ(st.size, 0);
	/* append twice */
	ASSERT_EQ(cube_agent_write_buf(self->a, path, 0, "abc", 3), 0);
	ASSERT_EQ(cube_agent_write_file(self->a, path, 0, CUBE_WRITE_APPEND,
					one_chunk, &(struct membuf){ (uint8_t *)"def", 3 }), 0);
	got.data = NULL;
	got.len = 0;
	ASSERT_EQ(cube_agent_read_file(self->a, path, mem_sink, &got, NULL), 0);
	ASSERT_EQ(got.len, 6);
	EXPECT_EQ(memcmp(got.data, "abcdef", 6), 0);
	free(got.data);
	EXPECT_EQ(cube_agent_write_file(self->a, path, 0, 0x2, one_chunk, NULL), -EINVAL);
}

/* A deterministic 50 MiB stream, generated and checked on the fly. */
struct gen {
	uint64_t pos, len;
	uint32_t x;
	bool bad;
};

static uint8_t gen_byte(uint64_t i)
{
	uint64_t v = i * 0x9e3779b97f4a7c15ULL;

	return (uint8_t)(v >> 56) ^ (uint8_t)i;
}

static ssize_t gen_read(void *ctx, void *buf, size_t len)
{
	struct gen *g = ctx;
	uint8_t *p = buf;
	size_t i;

	if (len > g->len - g->pos)
		len = g->len - g->pos;
	for (i = 0; i < len; i++)
		p[i] = gen_byte(g->pos + i);
	g->pos += len;
	return len;
}

static int gen_check(void *ctx, const void *buf, size_t len)
{
	struct gen *g = ctx;
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != gen_byte(g->pos + i))
			g->bad = true;
	g->pos += len;
	return 0;
}

TEST_F(files, stream_50mib)
{
	struct gen w = { .len = 50ULL << 20 }, r = { 0 };
	struct cube_agent_stat st;
	uint64_t size = 0;
	char path[256];
	long long t0 = ms_now();

	in_dir(&self->p, path, sizeof(path), "big");
	ASSERT_EQ(cube_agent_write_file(self->a, path, 0, 0, gen_read, &w), 0);
	ASSERT_EQ(cube_agent_stat(self->a, path, &st), 0);
	EXPECT_EQ(st.size, 50ULL << 20);
	ASSERT_EQ(cube_agent_read_file(self->a, path, gen_check, &r, &size), 0);
	EXPECT_EQ(size, 50ULL << 20);
	EXPECT_EQ(r.pos, 50ULL << 20);
	EXPECT_FALSE(r.bad);
	TH_LOG("50 MiB written and read back in %lld ms", ms_now() - t0);
}

static int ignore(void *ctx, const void *buf, size_t len)
{
	return 0;
}

TEST_F(files, missing_and_wrong_paths)
{
	struct cube_agent_stat st;
	char path[256], dir[256];

	EXPECT_EQ(cube_agent_read_file(self->a, "/nonexistent/file", ignore, NULL, NULL), -ENOENT);
	EXPECT_TRUE(strstr(cube_agent_error(self->a), "/nonexistent/file") != NULL);
	EXPECT_EQ(cube_agent_stat(self->a, "/nonexistent", &st), -ENOENT);
	EXPECT_EQ(cube_agent_write_buf(self->a, "/nonexistent/dir/file", 0, "x", 1), -ENOENT);
	EXPECT_EQ(cube_agent_list(self->a, "/nonexistent", NULL, NULL), -ENOENT);
	EXPECT_EQ(cube_agent_remove(self->a, "/nonexistent", false), -ENOENT);
	EXPECT_EQ(cube_agent_rename(self->a, "/nonexistent", "/nonexistent2"), -ENOENT);
	EXPECT_EQ(cube_agent_mkdir(self->a, "/nonexistent/a", 0, false), -ENOENT);
	/* wrong kinds */
	in_dir(&self->p, dir, sizeof(dir), "");
	EXPECT_EQ(cube_agent_read_file(self->a, dir, ignore, NULL, NULL), -EISDIR);
	EXPECT_EQ(cube_agent_write_buf(self->a, dir, 0, "x", 1), -EISDIR);
	in_dir(&self->p, path, sizeof(path), "state");
	EXPECT_EQ(cube_agent_write_buf(self->a, path, 0, "x", 1), -EISDIR);
	EXPECT_EQ(cube_agent_list(self->a, "/etc/passwd", NULL, NULL), -ENOTDIR);
	EXPECT_EQ(cube_agent_read_file(self->a, "/dev/null", ignore, NULL, NULL), -EINVAL);
	/* bad paths are refused before anything is sent */
	EXPECT_EQ(cube_agent_stat(self->a, "relative", &st), -EINVAL);
	EXPECT_EQ(cube_agent_stat(self->a, "", &st), -EINVAL);
	EXPECT_EQ(cube_agent_mkdir(self->a, "/", 0, false), -EINVAL);
	EXPECT_EQ(cube_agent_remove(self->a, "/", true), -EINVAL);
	EXPECT_EQ(cube_agent_write_buf(self->a, "/tmp/x", 010000, "x", 1), -EINVAL);
	/* the root itself can be stat'ed */
	ASSERT_EQ(cube_agent_stat(self->a, "/", &st), 0);
	EXPECT_EQ(st.type, CUBE_FTYPE_DIR);
	/* still serving */
	EXPECT_EQ(cube_agent_ping(self->a, &(struct cube_agent_info){ 0 }), 0);
}

struct names {
	char list[512];
	int n;
	bool bad;
};

static int add_name(void *ctx, const char *name, const struct cube_agent_stat *st)
{
	struct names *n = ctx;
	size_t len = strlen(n->list);

	snprintf(n->list + len, sizeof(n->list) - len, "%s%s:%d:%llu:%o", n->n ? " " : "",
		 name, st->type, (unsigned long long)st->size, st->mode);
	n->n++;
	return 0;
}

static int cmp_words(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries sorted, for a stable comparison. */
static void sort_names(struct names *n)
{
	char *words[16], out[512] = "", *save = NULL, *w;
	int i = 0, k;

	for (w = strtok_r(n->list, " ", &save); w && i < 16; w = strtok_r(NULL, " ", &save))
		words[i++] = w;
	qsort(words, i, sizeof(words[0]), cmp_words);
	for (k = 0; k < i; k++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", k ? " " : "", words[k]);
	strcpy(n->list, out);
}

/* USER of writes and mkdirs: what they create is that user's */
TEST_F(files, owner)
{
	char d[256], f[300], deep[300], old[300];
	struct cube_agent_stat st;
	struct passwd *pw = getpwnam("nobody");

	if (geteuid() != 0 || !pw)
		SKIP("giving files away needs root and a user nobody");
	in_dir(&self->p, d, sizeof(d), "owned");
	ASSERT_EQ(mkdir(d, 0755), 0);
	snprintf(old, sizeof(old), "%s/old", d);
	ASSERT_EQ(cube_agent_write_buf(self->a, old, 0, "r", 1), 0);
	ASSERT_EQ(cube_agent_set_owner(self->a, "nobody"), 0);
	snprintf(deep, sizeof(deep), "%s/a/b", d);
	ASSERT_EQ(cube_agent_mkdir(self->a, deep, 0, true), 0);
	ASSERT_EQ(cube_agent_stat(self->a, deep, &st), 0);
	EXPECT_EQ(st.uid, pw->pw_uid);
	EXPECT_EQ(st.gid, pw->pw_gid);
	/* a directory that was there keeps its owner */
	ASSERT_EQ(cube_agent_stat(self->a, d, &st), 0);
	EXPECT_EQ(st.uid, 0);
	snprintf(f, sizeof(f), "%s/a/b/f", d);
	ASSERT_EQ(cube_agent_write_buf(self->a, f, 0, "x", 1), 0);
	ASSERT_EQ(cube_agent_stat(self->a, f, &st), 0);
	EXPECT_EQ(st.uid, pw->pw_uid);
	/* a file written again becomes the writer's */
	ASSERT_EQ(cube_agent_write_buf(self->a, old, 0, "n", 1), 0);
	ASSERT_EQ(cube_agent_stat(self->a, old, &st), 0);
	EXPECT_EQ(st.uid, pw->pw_uid);
	/* an unknown user: refused, nothing made */
	ASSERT_EQ(cube_agent_set_owner(self->a, "no-such-user"), 0);
	snprintf(f, sizeof(f), "%s/ghost", d);
	EXPECT_EQ(cube_agent_write_buf(self->a, f, 0, "x", 1), -ESRCH);
	EXPECT_TRUE(strstr(cube_agent_error(self->a), "no-such-user") != NULL);
	EXPECT_EQ(cube_agent_mkdir(self->a, f, 0, false), -ESRCH);
	EXPECT_EQ(cube_agent_stat(self->a, f, &st), -ENOENT);
	/* root again */
	ASSERT_EQ(cube_agent_set_owner(self->a, NULL), 0);
	ASSERT_EQ(cube_agent_write_buf(self->a, f, 0, "x", 1), 0);
	ASSERT_EQ(cube_agent_stat(self->a, f, &st), 0);
	EXPECT_EQ(st.uid, 0);
}

TEST_F(files, directories)
{
	char d[256], p1[300], p2[300], deep[300];
	struct names names = { 0 };
	struct cube_agent_stat st;

	in_dir(&self->p, d, sizeof(d), "tree");
	ASSERT_EQ(cube_agent_mkdir(self->a, d, 0750, false), 0);
	EXPECT_EQ(cube_agent_mkdir(self->a, d, 0, false), -EEXIST);
	EXPECT_EQ(cube_agent_mkdir(self->a, d, 0, true), 0);
	ASSERT_EQ(cube_agent_stat(self->a, d, &st), 0);
	EXPECT_EQ(st.type, CUBE_FTYPE_DIR);
	EXPECT_EQ(st.mode, 0750);
	snprintf(deep, sizeof(deep), "%s/a/b/c", d);
	EXPECT_EQ(cube_agent_mkdir(self->a, deep, 0, false), -ENOENT);
	ASSERT_EQ(cube_agent_mkdir(self->a, deep, 0, true), 0);
	snprintf(p1, sizeof(p1), "%s/one", d);
	ASSERT_EQ(cube_agent_write_buf(self->a, p1, 0640, "1", 1), 0);
	snprintf(p2, sizeof(p2), "%s/link", d);
	ASSERT_EQ(symlink("one", p2), 0);
	ASSERT_EQ(cube_agent_list(self->a, d, add_name, &names), 0);
	sort_names(&names);
	EXPECT_STREQ(names.list, "a:2:4096:755 link:3:3:777 one:1:1:640");
	/* rename, then the old name is gone */
	snprintf(p2, sizeof(p2), "%s/two", d);
	ASSERT_EQ(cube_agent_rename(self->a, p1, p2), 0);
	EXPECT_EQ(cube_agent_stat(self->a, p1, &st), -ENOENT);
	ASSERT_EQ(cube_agent_stat(self->a, p2, &st), 0);
	/* removal: files, non-empty directories only with recursive */
	snprintf(p1, sizeof(p1), "%s/a", d);
	EXPECT_EQ(cube_agent_remove(self->a, p1, false), -ENOTEMPTY);
	ASSERT_EQ(cube_agent_remove(self->a, p1, true), 0);
	EXPECT_EQ(cube_agent_stat(self->a, p1, &st), -ENOENT);
	ASSERT_EQ(cube_agent_remove(self->a, p2, false), 0);
	ASSERT_EQ(cube_agent_remove(self->a, d, true), 0);
	EXPECT_EQ(cube_agent_stat(self->a, d, &st), -ENOENT);
}

static int stop_listing(void *ctx, const char *name, const struct cube_agent_stat *st)
{
	return -ECANCELED;
}

TEST_F(files, list_stopped_by_caller)
{
	EXPECT_EQ(cube_agent_list(self->a, "/etc", stop_listing, NULL), -ECANCELED);
	/* the rest of the listing was skipped: the connection goes on */
	EXPECT_EQ(cube_agent_ping(self->a, &(struct cube_agent_info){ 0 }), 0);
}

struct failing {
	int calls;
};

static ssize_t fail_later(void *ctx, void *buf, size_t len)
{
	struct failing *f = ctx;

	if (f->calls++ == 3)
		return -EIO;
	memset(buf, 'n', len);
	return len;
}

static int count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, ".."));
	closedir(d);
	return n;
}

TEST_F(files, failed_write_changes_nothing)
{
	struct membuf got = { 0 };
	struct failing f = { 0 };
	char path[256];
	int before;

	in_dir(&self->p, path, sizeof(path), "keep");
	ASSERT_EQ(cube_agent_write_buf(self->a, path, 0, "old", 3), 0);
	before = count_entries(self->p.dir);
	EXPECT_EQ(cube_agent_write_file(self->a, path, 0, 0, fail_later, &f), -EIO);
	ASSERT_EQ(cube_agent_read_file(self->a, path, mem_sink, &got, NULL), 0);
	ASSERT_EQ(got.len, 3);
	EXPECT_EQ(memcmp(got.data, "old", 3), 0);
	free(got.data);
	/* no temporary file left behind */
	EXPECT_EQ(count_entries(self->p.dir), before);
}

/* 1 MiB, then stalls: the writer is killed in the middle of its transfer */
static ssize_t gen_stall(void *ctx, void *buf, size_t len)
{
	struct gen *g = ctx;

	if (g->pos >= (1 << 20))
		pause();
	return gen_read(ctx, buf, len);
}

TEST_F(files, interrupted_write_changes_nothing)
{
	struct cube_agent *b;
	struct gen w = { .len = 8ULL << 20 };
	char path[256];
	pid_t pid;
	int before, status, i;

	in_dir(&self->p, path, sizeof(path), "never");
	before = count_entries(self->p.dir);
	/* a writer that dies in the middle of its transfer */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		b = agent_connect(&self->p);
		alarm(5);
		cube_agent_write_file(b, path, 0, 0, gen_stall, &w);
		_exit(0);
	}
	/* wait until the partial file is there */
	for (i = 0; i < 500 && count_entries(self->p.dir) == before; i++)
		sleep_ms(10);
	EXPECT_EQ(count_entries(self->p.dir), before + 1);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	for (i = 0; i < 200 && count_entries(self->p.dir) != before; i++)
		sleep_ms(10);
	EXPECT_EQ(count_entries(self->p.dir), before);
	EXPECT_ERRNO(access(path, F_OK), ENOENT);
}

/* the next event of a watch, within 5 s */
#define next_change(a, t, n) do {					\
	struct cube_watch_event ev_;					\
									\
	ASSERT_EQ(cube_agent_watch_next((a), &ev_, 5000), 0);		\
	EXPECT_EQ(ev_.type, (t));					\
	EXPECT_STREQ(ev_.name, (n));					\
} while (0)

TEST_F(files, watch)
{
	char dir[128], f[200], g[160], sub[160];
	struct cube_watch_event ev;
	struct cube_agent *b;
	struct cube_agent_stat st;
	int fd;

	in_dir(&self->p, dir, sizeof(dir), "w");
	ASSERT_EQ(mkdir(dir, 0755), 0);
	snprintf(f, sizeof(f), "%s/f", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	/* not a directory, not there, not absolute */
	ASSERT_EQ(cube_agent_write_buf(self->a, f, 0, "x", 1), 0);
	EXPECT_EQ(cube_agent_watch(self->a, f), -ENOTDIR);
	EXPECT_EQ(cube_agent_watch(self->a, "/no/such/dir"), -ENOENT);
	EXPECT_EQ(cube_agent_watch(self->a, "rel"), -EINVAL);
	ASSERT_EQ(unlink(f), 0);

	ASSERT_EQ(cube_agent_watch(self->a, dir), 0);
	/* the connection serves only the watch */
	EXPECT_EQ(cube_agent_stat(self->a, dir, &st), -EBUSY);
	EXPECT_EQ(cube_agent_watch_next(self->a, &ev, 200), -ETIMEDOUT);
	fd = open(f, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	next_change(self->a, CUBE_FS_CREATE, "f");
	ASSERT_EQ(write(fd, "abc", 3), 3);
	close(fd);
	next_change(self->a, CUBE_FS_WRITE, "f");
	ASSERT_EQ(chmod(f, 0600), 0);
	next_change(self->a, CUBE_FS_CHMOD, "f");
	ASSERT_EQ(rename(f, g), 0);
	next_change(self->a, CUBE_FS_RENAME, "f");
	next_change(self->a, CUBE_FS_CREATE, "g");
	ASSERT_EQ(unlink(g), 0);
	next_change(self->a, CUBE_FS_REMOVE, "g");
	/* subdirectories are not watched, their own entry is */
	ASSERT_EQ(mkdir(sub, 0755), 0);
	next_change(self->a, CUBE_FS_CREATE, "sub");
	snprintf(f, sizeof(f), "%s/inner", sub);
	fd = open(f, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	close(fd);
	EXPECT_EQ(cube_agent_watch_next(self->a, &ev, 300), -ETIMEDOUT);
	ASSERT_EQ(unlink(f), 0);
	ASSERT_EQ(rmdir(sub), 0);
	next_change(self->a, CUBE_FS_REMOVE, "sub");

	/* a second connection watches too; removing the directory ends both */
	b = agent_connect(&self->p);
	ASSERT_EQ(cube_agent_watch(b, dir), 0);
	ASSERT_EQ(rmdir(dir), 0);
	EXPECT_EQ(cube_agent_watch_next(self->a, &ev, 5000), -ENOENT);
	EXPECT_EQ(cube_agent_watch_next(b, &ev, 5000), -ENOENT);
	cube_agent_close(b);
}

/*
 * A recursive watch: the directories below, those made later too, each
 * entry named by its path under the watched one.
 */
TEST_F(files, watch_recursive)
{
	char dir[128], path[300];
	struct cube_watch_event ev;
	int fd;

	in_dir(&self->p, dir, sizeof(dir), "wr");
	ASSERT_EQ(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/a", dir);
	ASSERT_EQ(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/a/b", dir);
	ASSERT_EQ(mkdir(path, 0755), 0);
	ASSERT_EQ(cube_agent_watch_recursive(self->a, dir), 0);
	snprintf(path, sizeof(path), "%s/a/b/f", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	next_change(self->a, CUBE_FS_CREATE, "a/b/f");
	ASSERT_EQ(write(fd, "x", 1), 1);
	close(fd);
	next_change(self->a, CUBE_FS_WRITE, "a/b/f");
	snprintf(path, sizeof(path), "%s/top", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	close(fd);
	next_change(self->a, CUBE_FS_CREATE, "top");
	/* made after the watch began: watched from then on */
	snprintf(path, sizeof(path), "%s/a/new", dir);
	ASSERT_EQ(mkdir(path, 0755), 0);
	next_change(self->a, CUBE_FS_CREATE, "a/new");
	snprintf(path, sizeof(path), "%s/a/new/g", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	close(fd);
	next_change(self->a, CUBE_FS_CREATE, "a/new/g");
	ASSERT_EQ(unlink(path), 0);
	next_change(self->a, CUBE_FS_REMOVE, "a/new/g");
	/* a directory below going away ends nothing */
	snprintf(path, sizeof(path), "%s/a/new", dir);
	ASSERT_EQ(rmdir(path), 0);
	next_change(self->a, CUBE_FS_REMOVE, "a/new");
	EXPECT_EQ(cube_agent_watch_next(self->a, &ev, 300), -ETIMEDOUT);
	snprintf(path, sizeof(path), "%s/a/b/f", dir);
	ASSERT_EQ(unlink(path), 0);
	next_change(self->a, CUBE_FS_REMOVE, "a/b/f");
	/* the watched one going away does */
	snprintf(path, sizeof(path), "%s/top", dir);
	ASSERT_EQ(unlink(path), 0);
	next_change(self->a, CUBE_FS_REMOVE, "top");
	snprintf(path, sizeof(path), "rm -r %s", dir);
	ASSERT_EQ(system(path), 0);
	for (;;) {
		int ret = cube_agent_watch_next(self->a, &ev, 5000);

		if (ret) {
			EXPECT_EQ(ret, -ENOENT);
			break;
		}
	}
}

struct meta_seen {
	char name[64];
	char meta[256];
};

static int meta_of_entry(void *ctx, const char *name,
			 const struct cube_agent_stat *st)
{
	struct meta_seen *m = ctx;

	if (!strcmp(name, m->name))
		snprintf(m->meta, sizeof(m->meta), "%s", st->meta ? st->meta : "-");
	return 0;
}

/* a file's metadata: kept with it, reported by stat and list, gone with it */
TEST_F(files, metadata)
{
	struct meta_seen seen = { .name = "f" };
	struct cube_agent_stat st;
	char dir[128], f[200], big[CUBE_AGENT_MAX_STRING + 8];

	in_dir(&self->p, dir, sizeof(dir), "meta");
	ASSERT_EQ(mkdir(dir, 0755), 0);
	snprintf(f, sizeof(f), "%s/f", dir);
	ASSERT_EQ(cube_agent_write_buf_meta(self->a, f, 0, "a=1\nb=x y\n", "data", 4), 0);
	ASSERT_EQ(cube_agent_stat(self->a, f, &st), 0);
	ASSERT_TRUE(st.meta != NULL);
	EXPECT_STREQ(st.meta, "a=1\nb=x y\n");
	EXPECT_EQ(st.size, 4);
	ASSERT_EQ(cube_agent_list(self->a, dir, meta_of_entry, &seen), 0);
	EXPECT_STREQ(seen.meta, "a=1\nb=x y\n");
	/* written again without: the new file has none */
	ASSERT_EQ(cube_agent_write_buf(self->a, f, 0, "d2", 2), 0);
	ASSERT_EQ(cube_agent_stat(self->a, f, &st), 0);
	EXPECT_TRUE(st.meta == NULL);
	ASSERT_EQ(cube_agent_list(self->a, dir, meta_of_entry, &seen), 0);
	EXPECT_STREQ(seen.meta, "-");
	/* too large or empty: refused before anything is sent */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	EXPECT_EQ(cube_agent_write_buf_meta(self->a, f, 0, big, "z", 1), -EINVAL);
	EXPECT_EQ(cube_agent_write_buf_meta(self->a, f, 0, "", "z", 1), -EINVAL);
	ASSERT_EQ(cube_agent_stat(self->a, f, &st), 0);
	EXPECT_EQ(st.size, 2);
	/* the connection still serves */
	ASSERT_EQ(cube_agent_write_buf_meta(self->a, f, 0, "c=3\n", "e", 1), 0);
	ASSERT_EQ(cube_agent_stat(self->a, f, &st), 0);
	EXPECT_STREQ(st.meta, "c=3\n");
	ASSERT_EQ(unlink(f), 0);
	ASSERT_EQ(rmdir(dir), 0);
}

FIXTURE(rooted) {
	struct agent_proc p;
	struct cube_agent *a;
	char root[128];
};

FIXTURE_SETUP(rooted)
{
	char path[200];
	int fd;

	snprintf(self->root, sizeof(self->root), "/tmp/cube-agent-root.XXXXXX");
	ASSERT_TRUE(mkdtemp(self->root) != NULL);
	snprintf(path, sizeof(path), "%s/inside", self->root);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "in", 2), 2);
	close(fd);
	snprintf(path, sizeof(path), "%s/escape", self->root);
	ASSERT_EQ(symlink("/etc", path), 0);
	snprintf(path, sizeof(path), "%s/up", self->root);
	ASSERT_EQ(symlink("../../../../..", path), 0);
	agent_spawn(&self->p, self->root, false);
	self->a = agent_connect(&self->p);
}

FIXTURE_TEARDOWN(rooted)
{
	cube_agent_close(self->a);
	agent_stop(&self->p);
	rm_tree(self->root);
}

TEST_F(rooted, paths_stay_inside)
{
	struct membuf got = { 0 };
	struct cube_agent_stat st;

	ASSERT_EQ(cube_agent_read_file(self->a, "/inside", mem_sink, &got, NULL), 0);
	ASSERT_EQ(got.len, 2);
	free(got.data);
	/* /etc/passwd of the host is not reachable whatever the path */
	EXPECT_EQ(cube_agent_stat(self->a, "/etc/passwd", &st), -ENOENT);
	EXPECT_EQ(cube_agent_stat(self->a, "/../../etc/passwd", &st), -ENOENT);
	EXPECT_EQ(cube_agent_stat(self->a, "/escape/passwd", &st), -ENOENT);
	EXPECT_EQ(cube_agent_read_file(self->a, "/up/etc/passwd", ignore, NULL, NULL), -ENOENT);
	EXPECT_EQ(cube_agent_write_buf(self->a, "/escape/cube-test", 0, "x", 1), -ENOENT);
	EXPECT_ERRNO(access("/etc/cube-test", F_OK), ENOENT);
	/* /inside of the root is "/inside" */
	ASSERT_EQ(cube_agent_stat(self->a, "/up/inside", &st), 0);
	EXPECT_EQ(st.size, 2);
}

TEST_F(files, identity_outside_a_guest)
{
	struct cube_agent_identity id = { .sandbox_id = "sbx-1234_a.b" };
	struct cube_agent_info info;
	uint8_t seed[64] = { 1, 2, 3 };

	ASSERT_EQ(cube_agent_set_identity(self->a, &id), 0);
	ASSERT_EQ(cube_agent_ping(self->a, &info), 0);
	EXPECT_STREQ(info.sandbox_id, "sbx-1234_a.b");
	/* seen from other connections too */
	cube_agent_close(self->a);
	self->a = agent_connect(&self->p);
	ASSERT_EQ(cube_agent_ping(self->a, &info), 0);
	EXPECT_STREQ(info.sandbox_id, "sbx-1234_a.b");
	/* bad ids change nothing */
	id.sandbox_id = "bad/id";
	EXPECT_EQ(cube_agent_set_identity(self->a, &id), -EINVAL);
	id.sandbox_id = NULL;
	EXPECT_EQ(cube_agent_set_identity(self->a, &id), -EINVAL);
	/* hostname, clock and RNG are the host's here: refused */
	id.hostname = "cube-test";
	EXPECT_EQ(cube_agent_set_identity(self->a, &id), -EPERM);
	id.hostname = "bad host";
	EXPECT_EQ(cube_agent_set_identity(self->a, &id), -EINVAL);
	id.hostname = NULL;
	id.set_time = true;
	id.time_ns = 1;
	EXPECT_EQ(cube_agent_set_identity(self->a, &id), -EPERM);
	EXPECT_EQ(cube_agent_reseed(self->a, seed, sizeof(seed)), -EPERM);
	EXPECT_EQ(cube_agent_reseed(self->a, seed, CUBE_AGENT_MIN_SEED - 1), -EINVAL);
	EXPECT_EQ(cube_agent_reseed(self->a, seed, CUBE_AGENT_MAX_SEED + 1), -EINVAL);
	/* so is the writable disk (a guest's own: disk.c) */
	EXPECT_EQ(cube_agent_disk_grow(self->a, 64 << 20), -EPERM);
	EXPECT_EQ(cube_agent_disk_grow(self->a, 0), -EINVAL);
	ASSERT_EQ(cube_agent_ping(self->a, &info), 0);
	EXPECT_STREQ(info.sandbox_id, "sbx-1234_a.b");
}

TEST_MAIN()
