// SPDX-License-Identifier: GPL-2.0
/*
 * exec.c: run one command for a session.  The command gets pipes for
 * stdin, stdout and stderr (or one pseudo-terminal), its own session and process group, the
 * sandbox root, and the user, directory and environment the host asked
 * for.  Its output is forwarded in the order the agent reads it; its exit
 * is reported after everything it wrote before exiting.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct exec_state {
	uint32_t id;
	pid_t pid;
	int pidfd;
	int fd_in, fd_out, fd_err;
	uint8_t *inq;
	size_t inq_len, inq_cap;
	bool close_in;		/* close stdin once inq is written */
	bool pty;		/* fd_out is the pty master, fd_in a dup of it */
	bool out_eof;		/* pty: the terminal is closed, the master kept */
	bool timed_out;
	uint64_t deadline;	/* CLOCK_MONOTONIC ms, 0: none */
	int idx_out, idx_err, idx_in, idx_pid;
};

/* What the child reports through its error pipe when it cannot exec. */
struct exec_failure {
	int stage;
	int err;
};

enum { STAGE_ROOT, STAGE_CWD, STAGE_USER, STAGE_EXEC };
static const char *const stage_names[] = {
	"entering the sandbox root", "changing to the working directory",
	"switching user", "executing",
};

uint64_t exec_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void exec_free(struct session *s)
{
	struct exec_state *e = s->exec;

	close_fd(&e->fd_in);
	close_fd(&e->fd_out);
	close_fd(&e->fd_err);
	close_fd(&e->pidfd);
	free(e->inq);
	free(e);
	s->exec = NULL;
}

struct spawn {
	char **argv;
	char **envp;
	const char *cwd;
	bool cwd_given;		/* else the home, or "/" when it is missing */
	const struct agent_user *user;
	const struct agent_config *cfg;
	bool pty;
	struct winsize ws;
	int cfd[3];		/* the command's stdin, stdout, stderr */
	int pfd[3];		/* our ends: to its stdin, from stdout, stderr */
	int slave;		/* pty: the terminal, cfd[*] are all this */
	int errpipe[2];
};

static void __attribute__((noreturn)) child_fail(int fd, int stage)
{
	struct exec_failure f = { stage, errno };

	if (write(fd, &f, sizeof(f)) < 0)
		_exit(126);
	_exit(127);
}

static void __attribute__((noreturn)) child(const struct spawn *sp)
{
	int efd = sp->errpipe[1];
	sigset_t all;
	int sig;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	setsid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(sp->cfd[0], 0) < 0 || dup2(sp->cfd[1], 1) < 0 ||
	    dup2(sp->cfd[2], 2) < 0)
		child_fail(efd, STAGE_EXEC);
	if (sp->pty && ioctl(0, TIOCSCTTY, 0) < 0)
		child_fail(efd, STAGE_EXEC);
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	if (strcmp(sp->cfg->root, "/")) {
		if (fchdir(sp->cfg->rootfd) < 0 || chroot(".") < 0)
			child_fail(efd, STAGE_ROOT);
	}
	if (chdir(sp->cwd) < 0 && (sp->cwd_given || chdir("/") < 0))
		child_fail(efd, STAGE_CWD);
	if (sp->user) {
		if (setgroups(sp->user->ngroups, sp->user->groups) < 0 ||
		    setgid(sp->user->gid) < 0 || setuid(sp->user->uid) < 0)
			child_fail(efd, STAGE_USER);
	}
	umask(022);
	environ = sp->envp;
	execvp(sp->argv[0], sp->argv);
	child_fail(efd, STAGE_EXEC);
}

/* Collects the argv and environment; replies itself on bad input. */
static int collect(struct session *s, const struct cube_wire_msg *m,
		   struct spawn *sp, const struct agent_user *u, bool *replied)
{
	const struct cube_agent_attr *a;
	uint32_t argc = m->count[CUBE_ATTR_ARGV];
	uint32_t envc = m->count[CUBE_ATTR_ENV];
	bool has_path = false, has_home = false;
	uint32_t i;

	*replied = true;
	if (argc > CUBE_AGENT_MAX_ARGS)
		return session_send_error(s, m->id, E2BIG, "more than %u arguments",
					  CUBE_AGENT_MAX_ARGS);
	if (envc > CUBE_AGENT_MAX_ENV)
		return session_send_error(s, m->id, E2BIG,
					  "more than %u environment entries",
					  CUBE_AGENT_MAX_ENV);
	sp->argv = calloc(argc + 1, sizeof(char *));
	sp->envp = calloc(envc + 3, sizeof(char *));
	if (!sp->argv || !sp->envp)
		return session_send_error(s, m->id, ENOMEM, "out of memory");
	for (i = 0, a = m->first[CUBE_ATTR_ARGV]; a; a = cube_wire_next(m, a))
		sp->argv[i++] = (char *)cube_wire_value(a);
	for (i = 0, a = m->first[CUBE_ATTR_ENV]; a; a = cube_wire_next(m, a)) {
		char *e = (char *)cube_wire_value(a);

		if (e[0] == '=' || !strchr(e, '='))
			return session_send_error(s, m->id, EINVAL,
						  "environment entry '%.64s' is not NAME=VALUE", e);
		has_path |= !strncmp(e, "PATH=", 5);
		has_home |= !strncmp(e, "HOME=", 5);
		sp->envp[i++] = e;
	}
	if (!has_path)
		sp->envp[i++] = DEFAULT_PATH;
	if (!has_home) {
		static char home[sizeof(u->home) + 5];

		snprintf(home, sizeof(home), "HOME=%s", u ? u->home : "/root");
		sp->envp[i++] = home;
	}
	*replied = false;
	return 0;
}

static int report_failure(struct session *s, uint32_t id,
			  const struct exec_failure *f, const char *argv0,
			  const char *cwd)
{
	const char *stage = stage_names[f->stage];

	if (f->stage == STAGE_EXEC)
		return session_send_error(s, id, f->err, "%s '%.256s': %s",
					  stage, argv0, strerror(f->err));
	if (f->stage == STAGE_CWD)
		return session_send_error(s, id, f->err, "%s '%.256s': %s",
					  stage, cwd, strerror(f->err));
	return session_send_error(s, id, f->err, "%s: %s", stage,
				  strerror(f->err));
}

static void close_spawn_fds(struct spawn *sp)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (sp->cfd[i] != sp->slave)
			close_fd(&sp->cfd[i]);
		sp->cfd[i] = -1;
		close_fd(&sp->pfd[i]);
	}
	close_fd(&sp->slave);
	close_fd(&sp->errpipe[0]);
	close_fd(&sp->errpipe[1]);
}

/* The command's stdio: three pipes, or one pty. */
static int make_stdio(struct spawn *sp)
{
	int p[2], i, master;

	if (sp->pty) {
		if (openpty(&master, &sp->slave, NULL, NULL, &sp->ws) < 0)
			return -errno;
		fcntl(master, F_SETFD, FD_CLOEXEC);
		fcntl(sp->slave, F_SETFD, FD_CLOEXEC);
		sp->pfd[1] = master;
		sp->pfd[0] = fcntl(master, F_DUPFD_CLOEXEC, 0);
		if (sp->pfd[0] < 0)
			return -errno;
		for (i = 0; i < 3; i++)
			sp->cfd[i] = sp->slave;
		return 0;
	}
	for (i = 0; i < 3; i++) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		sp->cfd[i] = i ? p[1] : p[0];
		sp->pfd[i] = i ? p[0] : p[1];
	}
	return 0;
}

static int spawn(struct session *s, const struct cube_wire_msg *m,
		 struct spawn *sp, uint64_t timeout)
{
	struct exec_failure f;
	struct exec_state *e;
	struct cube_wire_buf b = { 0 };
	pid_t pid;
	ssize_t n;
	int i, err;

	for (i = 0; i < 3; i++)
		sp->cfd[i] = sp->pfd[i] = -1;
	sp->slave = -1;
	sp->errpipe[0] = sp->errpipe[1] = -1;
	err = make_stdio(sp);
	if (err) {
		errno = -err;
		goto fail_errno;
	}
	if (pipe2(sp->errpipe, O_CLOEXEC) < 0)
		goto fail_errno;
	pid = fork();
	if (pid < 0)
		goto fail_errno;
	if (pid == 0)
		child(sp);
	for (i = 0; i < 3; i++) {
		if (sp->cfd[i] != sp->slave)
			close_fd(&sp->cfd[i]);
		sp->cfd[i] = -1;
	}
	close_fd(&sp->slave);
	close_fd(&sp->errpipe[1]);
	do {
		n = read(sp->errpipe[0], &f, sizeof(f));
	} while (n < 0 && errno == EINTR);
	close_fd(&sp->errpipe[0]);
	if (n == sizeof(f) && f.stage >= 0 && f.stage <= STAGE_EXEC) {
		waitpid(pid, NULL, 0);
		err = report_failure(s, m->id, &f, sp->argv[0], sp->cwd);
		goto out_close;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		err = session_send_error(s, m->id, ENOMEM, "out of memory");
		goto out_close;
	}
	e->id = m->id;
	s->last_exec = m->id;
	e->pid = pid;
	e->pty = sp->pty;
	e->pidfd = syscall(SYS_pidfd_open, pid, 0);
	e->fd_in = sp->pfd[0];
	e->fd_out = sp->pfd[1];
	e->fd_err = sp->pfd[2];
	for (i = 0; i < 3; i++) {
		if (sp->pfd[i] >= 0)
			fcntl(sp->pfd[i], F_SETFL, O_NONBLOCK);
		sp->pfd[i] = -1;
	}
	if (timeout)
		e->deadline = exec_now_ms() + timeout;
	s->exec = e;
	if (m->first[CUBE_ATTR_KEEP] || s->keep_pid) {
		struct park_msg pm = { .op = PARK_KEEP };

		s->keep_pid = m->first[CUBE_ATTR_KEEP] ? pid : 0;
		pm.pid = s->keep_pid;
		if (s->ctl >= 0 && park_send(s->ctl, &pm, -1) < 0)
			s->keep_pid = 0;	/* cannot be parked */
	}
	if (e->pidfd < 0) {
		err = -errno;
		exec_kill(s);
		return session_send_error(s, m->id, -err, "pidfd_open: %s",
					  strerror(-err));
	}
	cube_wire_start(&b, CUBE_MSG_STARTED, m->id);
	cube_wire_put_u32(&b, CUBE_ATTR_PID, pid);
	return session_send(s, &b);

fail_errno:
	err = session_send_error(s, m->id, errno, "cannot start the command: %s",
				 strerror(errno));
out_close:
	close_spawn_fds(sp);
	return err;
}

/* ROWS and COLS of @m (default 24x80); false when out of range. */
static bool get_winsize(const struct cube_wire_msg *m, struct winsize *ws)
{
	const struct cube_agent_attr *r = m->first[CUBE_ATTR_ROWS];
	const struct cube_agent_attr *c = m->first[CUBE_ATTR_COLS];
	uint32_t rows = r ? cube_wire_u32(r) : 24, cols = c ? cube_wire_u32(c) : 80;

	if (rows < 1 || rows > 65535 || cols < 1 || cols > 65535)
		return false;
	memset(ws, 0, sizeof(*ws));
	ws->ws_row = rows;
	ws->ws_col = cols;
	return true;
}

/**
 * exec_start() - handle an EXEC request
 * @s: session with no command running
 * @m: the validated request
 *
 * Return: 0 or a negative errno when the connection broke; a command that
 * cannot start is answered with an ERROR.
 */
int exec_start(struct session *s, const struct cube_wire_msg *m)
{
	const struct cube_agent_attr *a;
	struct agent_user user;
	struct spawn sp = { .cfg = s->cfg };
	uint32_t timeout = 0;
	bool replied;
	int err;

	a = m->first[CUBE_ATTR_TIMEOUT_MS];
	if (a) {
		timeout = cube_wire_u32(a);
		if (timeout > CUBE_AGENT_MAX_TIMEOUT_MS)
			return session_send_error(s, m->id, EINVAL,
						  "timeout %u ms exceeds %u ms",
						  timeout, CUBE_AGENT_MAX_TIMEOUT_MS);
	}
	a = m->first[CUBE_ATTR_CWD];
	if (a && ((const char *)cube_wire_value(a))[0] != '/')
		return session_send_error(s, m->id, EINVAL,
					  "working directory must be absolute");
	sp.pty = m->first[CUBE_ATTR_PTY];
	if (!sp.pty && (m->first[CUBE_ATTR_ROWS] || m->first[CUBE_ATTR_COLS]))
		return session_send_error(s, m->id, EINVAL,
					  "a terminal size needs a pty");
	if (sp.pty && !get_winsize(m, &sp.ws))
		return session_send_error(s, m->id, EINVAL,
					  "terminal size out of range 1..65535");
	a = m->first[CUBE_ATTR_USER];
	if (a) {
		err = user_lookup(s->cfg, cube_wire_value(a), &user);
		if (err)
			return session_send_error(s, m->id, -err,
						  "no user '%s' in the sandbox",
						  (const char *)cube_wire_value(a));
		sp.user = &user;
	}
	err = collect(s, m, &sp, sp.user, &replied);
	if (!replied) {
		sp.cwd_given = m->first[CUBE_ATTR_CWD];
		if (sp.cwd_given)
			sp.cwd = cube_wire_value(m->first[CUBE_ATTR_CWD]);
		else
			sp.cwd = sp.user ? user.home : "/";
		err = spawn(s, m, &sp, timeout);
	}
	free(sp.argv);
	free(sp.envp);
	return err;
}

void exec_poll_fds(struct session *s, struct pollfd *pfd, int *n, int *timeout)
{
	struct exec_state *e = s->exec;
	uint64_t now;

	if (!e)
		return;
	e->idx_out = e->idx_err = e->idx_in = e->idx_pid = -1;
	if (s->out_len < AGENT_OUTQ_LIMIT) {
		if (e->fd_out >= 0 && !e->out_eof) {
			e->idx_out = *n;
			pfd[(*n)++] = (struct pollfd){ .fd = e->fd_out, .events = POLLIN };
		}
		if (e->fd_err >= 0) {
			e->idx_err = *n;
			pfd[(*n)++] = (struct pollfd){ .fd = e->fd_err, .events = POLLIN };
		}
	}
	if (e->fd_in >= 0 && e->inq_len) {
		e->idx_in = *n;
		pfd[(*n)++] = (struct pollfd){ .fd = e->fd_in, .events = POLLOUT };
	}
	e->idx_pid = *n;
	pfd[(*n)++] = (struct pollfd){ .fd = e->pidfd, .events = POLLIN };
	if (e->deadline) {
		now = exec_now_ms();
		*timeout = e->deadline > now ? (int)(e->deadline - now) : 0;
	}
}

/* Forwards one read of a pipe; returns bytes read, 0 at EOF, -EAGAIN. */
static int forward(struct session *s, int *fd, uint16_t type)
{
	static uint8_t buf[CUBE_AGENT_CHUNK];
	struct cube_wire_buf b = { 0 };
	ssize_t n;
	int err;

	do {
		n = read(*fd, buf, sizeof(buf));
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	if (n <= 0) {
		/*
		 * Closing the master hangs up the terminal: a command still
		 * exiting would die of SIGHUP.  Keep it open until it is gone.
		 */
		if (s->exec->pty && fd == &s->exec->fd_out)
			s->exec->out_eof = true;
		else
			close_fd(fd);
		return 0;
	}
	cube_wire_start(&b, type, s->exec->id);
	cube_wire_put(&b, CUBE_ATTR_DATA, buf, n);
	err = session_send(s, &b);
	return err ? err : (int)n;
}

static void write_stdin(struct exec_state *e)
{
	ssize_t n;

	while (e->inq_len && e->fd_in >= 0) {
		n = write(e->fd_in, e->inq, e->inq_len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			/* the command closed its stdin: drop the rest */
			e->inq_len = 0;
			close_fd(&e->fd_in);
			return;
		}
		memmove(e->inq, e->inq + n, e->inq_len - n);
		e->inq_len -= n;
	}
	if (!e->inq_len && e->close_in)
		close_fd(&e->fd_in);
}

static int report_exit(struct session *s, int status)
{
	struct exec_state *e = s->exec;
	struct cube_wire_buf b = { 0 };
	size_t budget;
	int r = 0;

	/* everything written before the exit is in the pipes: take it */
	for (budget = 0; e->fd_out >= 0 && !e->out_eof &&
	     budget < 4 * 1024 * 1024; budget += r) {
		r = forward(s, &e->fd_out, CUBE_MSG_STDOUT);
		if (r <= 0)
			break;
	}
	for (budget = 0; e->fd_err >= 0 && budget < 4 * 1024 * 1024; budget += r) {
		r = forward(s, &e->fd_err, CUBE_MSG_STDERR);
		if (r <= 0)
			break;
	}
	cube_wire_start(&b, CUBE_MSG_EXIT, e->id);
	if (WIFSIGNALED(status))
		cube_wire_put_u32(&b, CUBE_ATTR_TERM_SIGNAL, WTERMSIG(status));
	else
		cube_wire_put_u32(&b, CUBE_ATTR_EXIT_CODE, WEXITSTATUS(status));
	if (e->timed_out)
		cube_wire_put_flag(&b, CUBE_ATTR_TIMED_OUT);
	exec_free(s);
	return session_send(s, &b);
}

int exec_handle(struct session *s, const struct pollfd *pfd, int n)
{
	struct exec_state *e = s->exec;
	int status, err;

	if (!e)
		return 0;
	if (e->idx_out >= 0 && pfd[e->idx_out].revents) {
		err = forward(s, &e->fd_out, CUBE_MSG_STDOUT);
		if (err < 0 && err != -EAGAIN)
			return err;
	}
	if (e->idx_err >= 0 && pfd[e->idx_err].revents) {
		err = forward(s, &e->fd_err, CUBE_MSG_STDERR);
		if (err < 0 && err != -EAGAIN)
			return err;
	}
	if (e->idx_in >= 0 && pfd[e->idx_in].revents)
		write_stdin(e);
	if (e->deadline && exec_now_ms() >= e->deadline) {
		kill(-e->pid, SIGKILL);
		e->timed_out = true;
		e->deadline = 0;
	}
	if (pfd[e->idx_pid].revents && waitpid(e->pid, &status, WNOHANG) == e->pid)
		return report_exit(s, status);
	return 0;
}

static int queue_stdin(struct exec_state *e, const void *data, size_t len)
{
	size_t cap;
	uint8_t *p;

	if (e->inq_len + len > e->inq_cap) {
		cap = e->inq_cap ? e->inq_cap : 64 * 1024;
		while (cap < e->inq_len + len)
			cap *= 2;
		p = realloc(e->inq, cap);
		if (!p)
			return -ENOMEM;
		e->inq = p;
		e->inq_cap = cap;
	}
	memcpy(e->inq + e->inq_len, data, len);
	e->inq_len += len;
	return 0;
}

/**
 * exec_request() - STDIN, STDIN_CLOSE, SIGNAL or RESIZE for the running command
 * @s: session with a command running
 * @m: the validated message, carrying the id of the EXEC request
 *
 * Errors are answered with an ERROR of that id; the command goes on.
 */
int exec_request(struct session *s, const struct cube_wire_msg *m)
{
	struct exec_state *e = s->exec;
	const struct cube_agent_attr *a;
	uint32_t sig;

	if (m->id != e->id)
		return session_send_error(s, m->id, ESRCH,
					  "no command with request id %u", m->id);
	switch (m->type) {
	case CUBE_MSG_STDIN:
		if (e->close_in || e->fd_in < 0) {
			if (e->close_in)
				return session_send_error(s, m->id, EPIPE,
							  "stdin is already closed");
			return 0;	/* the command closed it: data dropped */
		}
		a = m->first[CUBE_ATTR_DATA];
		if (queue_stdin(e, cube_wire_value(a), cube_wire_len(a)) < 0)
			return session_send_error(s, m->id, ENOMEM,
						  "out of memory for stdin");
		write_stdin(e);
		return 0;
	case CUBE_MSG_STDIN_CLOSE:
		if (e->pty && !e->close_in && e->fd_in >= 0 &&
		    queue_stdin(e, "\004", 1) < 0)	/* end of file: ^D */
			return session_send_error(s, m->id, ENOMEM,
						  "out of memory for stdin");
		e->close_in = true;
		write_stdin(e);
		return 0;
	case CUBE_MSG_RESIZE: {
		struct winsize ws;

		if (!e->pty)
			return session_send_error(s, m->id, ENOTTY,
						  "the command has no pty");
		if (!get_winsize(m, &ws))
			return session_send_error(s, m->id, EINVAL,
						  "terminal size out of range 1..65535");
		if (ioctl(e->fd_out, TIOCSWINSZ, &ws) < 0)
			return session_send_error(s, m->id, errno, "TIOCSWINSZ: %s",
						  strerror(errno));
		return 0;
	}
	default:
		sig = cube_wire_u32(m->first[CUBE_ATTR_SIGNAL]);
		if (sig < 1 || sig > 64)
			return session_send_error(s, m->id, EINVAL,
						  "signal %u out of range 1..64", sig);
		if (kill(-e->pid, sig) < 0 && kill(e->pid, sig) < 0)
			return session_send_error(s, m->id, errno, "kill: %s",
						  strerror(errno));
		return 0;
	}
}

bool exec_blocks_input(const struct session *s)
{
	return s->exec && s->exec->inq_len >= AGENT_INQ_LIMIT;
}

/**
 * exec_attached() - the parked command is served by a new connection
 * @s: session
 * @id: the ATTACH request, whose id its events carry from now on
 */
void exec_attached(struct session *s, uint32_t id)
{
	if (s->exec)
		s->exec->id = id;
	s->last_exec = id;
}

/* Kills and reaps the running command, if any, without reporting it. */
void exec_kill(struct session *s)
{
	struct exec_state *e = s->exec;

	if (!e)
		return;
	kill(-e->pid, SIGKILL);
	kill(e->pid, SIGKILL);
	waitpid(e->pid, NULL, 0);
	exec_free(s);
}
