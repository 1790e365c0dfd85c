/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent_test.h: helpers of the agent selftests: run cube-agent natively on
 * a Unix socket in a scratch directory, connect to it, collect output.
 */
#ifndef CUBE_AGENT_TEST_H
#define CUBE_AGENT_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "cube_test.h"

#ifndef CUBE_AGENT_BIN
#define CUBE_AGENT_BIN "../../guest/agent/cube-agent"
#endif

struct agent_proc {
	pid_t pid;
	char dir[64];		/* scratch directory, removed at the end */
	char sock[128];
	char state[128];
	char log[128];
};

static inline const char *agent_bin(void)
{
	const char *env = getenv("CUBE_AGENT");

	return env && env[0] ? env : CUBE_AGENT_BIN;
}

static inline long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static inline int rm_one(const char *path, const struct stat *st, int flag,
			 struct FTW *ftw)
{
	return remove(path);
}

static inline void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Starts the agent on DIR/agent.sock; @root NULL: "/"; @park_timeout: its
 * --park-timeout, NULL: the default.  Fails the test (ASSERT) when it does
 * not come up in 5 s.
 */
static inline void agent_spawn_parking(struct agent_proc *p, const char *root,
				       bool allow_system,
				       const char *park_timeout)
{
	struct cube_agent *a;
	long long deadline;
	int fd;

	strcpy(p->dir, "/tmp/cube-agent-test.XXXXXX");
	ASSERT_TRUE(mkdtemp(p->dir) != NULL);
	snprintf(p->sock, sizeof(p->sock), "%s/agent.sock", p->dir);
	snprintf(p->state, sizeof(p->state), "%s/state", p->dir);
	snprintf(p->log, sizeof(p->log), "%s/agent.log", p->dir);
	ASSERT_EQ(mkdir(p->state, 0700), 0);
	if (access(agent_bin(), X_OK)) {
		TH_LOG("no agent binary at %s (build guest/agent or set CUBE_AGENT)",
		       agent_bin());
		ASSERT_TRUE(0);
	}
	p->pid = fork();
	ASSERT_GE(p->pid, 0);
	if (!p->pid) {
		const char *argv[12];
		char listen[160];
		int n = 0;

		snprintf(listen, sizeof(listen), "unix:%s", p->sock);
		fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		argv[n++] = agent_bin();
		argv[n++] = "--listen";
		argv[n++] = listen;
		argv[n++] = "--root";
		argv[n++] = root ? root : "/";
		argv[n++] = "--state";
		argv[n++] = p->state;
		if (park_timeout) {
			argv[n++] = "--park-timeout";
			argv[n++] = park_timeout;
		}
		if (allow_system)
			argv[n++] = "--allow-system";
		argv[n] = NULL;
		execv(agent_bin(), (char **)argv);
		_exit(127);
	}
	deadline = ms_now() + 5000;
	while (cube_agent_connect_unix(p->sock, &a)) {
		if (ms_now() > deadline) {
			TH_LOG("agent did not come up on %s", p->sock);
			ASSERT_TRUE(0);
		}
		sleep_ms(10);
	}
	cube_agent_close(a);
}

static inline void agent_spawn(struct agent_proc *p, const char *root,
			       bool allow_system)
{
	agent_spawn_parking(p, root, allow_system, NULL);
}

static inline void agent_stop(struct agent_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	if (p->dir[0])
		rm_tree(p->dir);
	p->dir[0] = 0;
}

static inline struct cube_agent *agent_connect(struct agent_proc *p)
{
	struct cube_agent *a = NULL;
	int err = cube_agent_connect_unix(p->sock, &a);

	if (err)
		TH_LOG("connect %s: %s", p->sock, strerror(-err));
	ASSERT_EQ(err, 0);
	return a;
}

/* Output of a command, as "O:" / "E:" tagged pieces and whole streams. */
struct output {
	char *out, *err, *seq;
	size_t out_len, err_len, seq_len;
};

static inline void append(char **buf, size_t *len, const void *data, size_t n)
{
	char *p = realloc(*buf, *len + n + 1);

	if (!p)
		abort();
	memcpy(p + *len, data, n);
	*len += n;
	p[*len] = 0;
	*buf = p;
}

static inline int collect_output(void *ctx, enum cube_exec_event_type stream,
				 const void *data, size_t len)
{
	struct output *o = ctx;

	if (stream == CUBE_EXEC_STDOUT) {
		append(&o->out, &o->out_len, data, len);
		append(&o->seq, &o->seq_len, "O:", 2);
	} else {
		append(&o->err, &o->err_len, data, len);
		append(&o->seq, &o->seq_len, "E:", 2);
	}
	append(&o->seq, &o->seq_len, data, len);
	return 0;
}

static inline void output_free(struct output *o)
{
	free(o->out);
	free(o->err);
	free(o->seq);
	memset(o, 0, sizeof(*o));
}

/* Runs argv (NULL-terminated) with no stdin; ASSERTs it could run. */
static inline void run(struct cube_agent *a, const char *const *argv,
		       struct output *o, struct cube_exec_status *st)
{
	struct cube_exec_spec spec = { .argv = argv };
	int err = cube_agent_exec(a, &spec, NULL, 0, collect_output, o, st);

	if (err)
		TH_LOG("exec %s: %s (%s)", argv[0], strerror(-err),
		       cube_agent_error(a));
	ASSERT_EQ(err, 0);
}

#endif /* CUBE_AGENT_TEST_H */
