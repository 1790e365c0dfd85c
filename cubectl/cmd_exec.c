// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_exec.c: cubectl exec (a command in a sandbox, streamed) and cp.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "agent_client.h"
#include "cube_audit.h"
#include "cube_runtime.h"
#include "cubectl.h"
#include "nl_client.h"

#define MAX_ENV		256

/* Check the id with the module first: it tells an unknown id apart. */
static int open_agent(const char *arg, uint64_t *id, struct cube_agent **a,
		      int fail_code)
{
	struct cube_nl_sandbox sb;
	struct cube_nl *nl;
	char what[64];
	int ret;

	if (cc_parse_id(arg, id))
		return EX_USAGE;
	snprintf(what, sizeof(what), "sandbox %s", arg);
	ret = cc_nl_open(&nl);
	if (ret)
		return fail_code == EX_EXEC_FAIL ? EX_EXEC_FAIL : ret;
	ret = cube_nl_sandbox_get(nl, *id, &sb);
	cube_nl_close(nl);
	if (ret) {
		cc_errno(ret, what);
		return fail_code ? fail_code : cc_code(ret);
	}
	if (sb.state != CUBE_SANDBOX_RUNNING) {
		cc_err(EX_CONFLICT, "%s is %s, not running", what,
		       cube_nl_state_name(sb.state));
		return fail_code ? fail_code : EX_CONFLICT;
	}
	ret = cube_sandbox_agent(*id, a);
	if (ret) {
		cc_err(EX_FAIL, "%s: cannot reach its agent: %s", what,
		       strerror(-ret));
		return fail_code ? fail_code : EX_FAIL;
	}
	return EX_OK;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static bool env_valid(const char *s)
{
	const char *eq = strchr(s, '=');
	const char *p;

	if (!eq || eq == s)
		return false;
	for (p = s; p < eq; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9' && p != s) || *p == '_'))
			return false;
	return true;
}

/* The host terminal's size, from stdin or stdout; false: neither is one. */
static bool host_winsize(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws;

	if ((ioctl(0, TIOCGWINSZ, &ws) && ioctl(1, TIOCGWINSZ, &ws)) ||
	    !ws.ws_row || !ws.ws_col)
		return false;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return true;
}

/* How long past --timeout exec waits for a guest that does not answer. */
#define EXEC_GRACE_S	30

static double exec_elapsed_s(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * The behaviour log's "command" line: what ran, where, as whom, how it
 * ended and how much it wrote; the environment by names only.
 */
static void audit_command(uint64_t id, const struct cube_exec_spec *spec,
			  int nenv, int status, bool started, double seconds,
			  uint64_t out_bytes, uint64_t err_bytes)
{
	struct json_object *f = json_object_new_object();
	size_t argc = 0;

	if (!f)
		return;
	while (spec->argv[argc])
		argc++;
	json_object_object_add(f, "argv", cube_audit_strv(spec->argv, argc));
	json_object_object_add(f, "cwd", cube_audit_str(spec->cwd));
	json_object_object_add(f, "user", cube_audit_str(spec->user ?
							 spec->user : "root"));
	json_object_object_add(f, "env", cube_audit_env_names(spec->envp, nenv));
	json_object_object_add(f, "started", json_object_new_boolean(started));
	json_object_object_add(f, "exit", json_object_new_int(status));
	json_object_object_add(f, "duration_ms",
			       json_object_new_int64((int64_t)(seconds * 1000)));
	json_object_object_add(f, "stdout_bytes", json_object_new_int64(out_bytes));
	json_object_object_add(f, "stderr_bytes", json_object_new_int64(err_bytes));
	cube_audit_id(id, "command", "cubectl", f);
}

int cmd_exec(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "env", required_argument, NULL, 'e' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *envp[MAX_ENV + 3];
	struct cube_exec_spec spec = { 0 };
	struct cube_exec_event ev;
	struct cube_agent *a;
	bool interactive = false, tty = false, raw = false, stdin_open;
	bool ran = false;
	uint64_t out_bytes = 0, err_bytes = 0;
	struct termios saved;
	unsigned long timeout = 0;
	struct timespec started;
	char inbuf[32768];
	size_t in_len = 0, in_off = 0;
	int nenv = 0, i, opt, ret, sfd, status = EX_EXEC_FAIL;
	sigset_t mask, old;
	uint64_t id;

	envp[nenv++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while ((opt = getopt_long(argc, argv, "+ite:w:u:", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			interactive = true;
			break;
		case 't':
			tty = true;
			break;
		case 'e':
			if (!env_valid(optarg))
				return cc_err(EX_USAGE, "invalid --env '%s' (want NAME=VALUE)", optarg);
			if (nenv >= MAX_ENV)
				return cc_err(EX_USAGE, "at most %d --env", MAX_ENV);
			envp[nenv++] = optarg;
			break;
		case 'w':
			if (optarg[0] != '/')
				return cc_err(EX_USAGE, "invalid --cwd '%s' (an absolute path)", optarg);
			spec.cwd = optarg;
			break;
		case 'u':
			if (!optarg[0] || strlen(optarg) > 32 || strchr(optarg, '/'))
				return cc_err(EX_USAGE, "invalid --user '%s'", optarg);
			spec.user = optarg;
			break;
		case 'T':
			if (cc_parse_uint("--timeout", optarg, 1, 7 * 86400, &timeout))
				return EX_USAGE;
			break;
		default:
			return cc_err(EX_USAGE, "usage: %s exec [-i] [-t] [--env K=V]... [--cwd D] [--user U] [--timeout S] ID -- CMD [ARG]...",
				      cc_prog);
		}
	}
	if (optind + 1 >= argc)
		return cc_err(EX_USAGE, "usage: %s exec [options] ID -- CMD [ARG]...", cc_prog);
	if (!strcmp(argv[optind + 1], "--") && optind + 2 >= argc)
		return cc_err(EX_USAGE, "exec: no command given after --");
	envp[nenv] = NULL;
	ret = open_agent(argv[optind], &id, &a, EX_EXEC_FAIL);
	if (ret)
		return ret == EX_USAGE ? EX_USAGE : EX_EXEC_FAIL;
	spec.argv = (const char *const *)(argv + optind +
		    (strcmp(argv[optind + 1], "--") ? 1 : 2));
	spec.envp = envp;
	spec.timeout_ms = timeout * 1000;
	if (tty) {
		spec.pty = true;
		if (!host_winsize(&spec.rows, &spec.cols)) {
			spec.rows = 24;
			spec.cols = 80;
		}
		for (i = 1; i < nenv && strncmp(envp[i], "TERM=", 5); i++)
			;
		if (i == nenv)	/* an --env TERM= wins */
			envp[nenv++] = "TERM=xterm-256color";
	}
	/* HOME for the user; the agent's default applies without --env */
	if (!spec.user || !strcmp(spec.user, "root"))
		envp[nenv++] = "HOME=/root";
	envp[nenv] = NULL;

	/* Ctrl-C and friends go to the command, not to us */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	if (tty)
		sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, &old);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);

	ret = cube_agent_exec_start(a, &spec, NULL);
	if (ret) {
		cc_err(EX_EXEC_FAIL, "cannot run '%s': %s", spec.argv[0],
		       cube_agent_error(a));
		goto out;
	}
	cube_agent_set_timeout(a, -1);
	clock_gettime(CLOCK_MONOTONIC, &started);
	ran = true;
	/* keystrokes go to the guest's terminal as they are typed */
	if (tty && interactive && isatty(0) && !tcgetattr(0, &saved)) {
		struct termios t = saved;

		cfmakeraw(&t);
		raw = !tcsetattr(0, TCSANOW, &t);
	}
	stdin_open = interactive;
	if (!interactive)
		cube_agent_exec_close_stdin(a);
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = stdin_open && in_off == in_len ? 0 : -1,
			  .events = POLLIN },
		};

		if (poll(p, 2, 0) > 0) {
			if (p[0].revents & POLLIN) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					si.ssi_signo = 0;
				if (si.ssi_signo == SIGWINCH) {
					if (host_winsize(&spec.rows, &spec.cols))
						cube_agent_exec_resize(a, spec.rows,
								       spec.cols);
				} else if (si.ssi_signo) {
					cube_agent_exec_signal(a, si.ssi_signo);
				}
			}
			if (p[1].revents & (POLLIN | POLLHUP)) {
				ssize_t n = read(0, inbuf, sizeof(inbuf));

				if (n <= 0) {
					stdin_open = false;
					cube_agent_exec_close_stdin(a);
				} else {
					in_len = n;
					in_off = 0;
				}
			}
		}
		if (in_off < in_len) {
			ssize_t n = cube_agent_exec_stdin(a, inbuf + in_off,
							  in_len - in_off);

			if (n > 0)
				in_off += n;
			else if (n != -EAGAIN)
				in_off = in_len;	/* stdin went away */
		}
		ret = cube_agent_exec_next(a, &ev, 50);
		/*
		 * The guest ends the command at --timeout; a guest too busy
		 * to (a fork bomb starves its agent) is given up on a little
		 * later, so that --timeout bounds this wait too.
		 */
		if (ret == -ETIMEDOUT && timeout &&
		    exec_elapsed_s(&started) > timeout + EXEC_GRACE_S) {
			cc_err(EX_EXEC_FAIL, "the sandbox did not end the command "
			       "within --timeout and %d s more: given up",
			       EXEC_GRACE_S);
			break;
		}
		if (ret == -ETIMEDOUT)
			continue;
		if (ret) {
			cc_err(EX_EXEC_FAIL, "lost the command: %s",
			       cube_agent_error(a));
			break;
		}
		if (ev.type == CUBE_EXEC_STDOUT) {
			write_all(1, ev.data, ev.len);
			out_bytes += ev.len;
		} else if (ev.type == CUBE_EXEC_STDERR) {
			write_all(2, ev.data, ev.len);
			err_bytes += ev.len;
		} else if (ev.type == CUBE_EXEC_EXIT) {
			if (ev.status.exited)
				status = ev.status.code;
			else
				status = 128 + ev.status.signal;
			if (raw) {
				tcsetattr(0, TCSANOW, &saved);
				raw = false;
			}
			if (ev.status.timed_out)
				fprintf(stderr, "%s: the command ran past --timeout and was killed\n",
					cc_prog);
			break;
		}
	}
out:
	if (raw)
		tcsetattr(0, TCSANOW, &saved);
	audit_command(id, &spec, nenv, status, ran,
		      ran ? exec_elapsed_s(&started) : 0, out_bytes, err_bytes);
	cube_agent_close(a);
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	(void)c;
	return status;
}

/* --- cp --- */

/* "ID:PATH" -> id and the path; 0 when @s is no sandbox path */
static int split_remote(const char *s, uint64_t *id, const char **path)
{
	char num[24];
	const char *colon = strchr(s, ':');
	size_t n;

	if (!colon)
		return 0;
	n = colon - s;
	if (!n || n >= sizeof(num))
		return 0;
	memcpy(num, s, n);
	num[n] = '\0';
	if (cube_parse_id(num, id))
		return 0;
	*path = colon + 1;
	return 1;
}

/* a local end of a copy, and the bytes that went through it */
struct cp_end {
	int fd;
	uint64_t bytes;
};

static ssize_t read_fd(void *ctx, void *buf, size_t len)
{
	struct cp_end *e = ctx;
	ssize_t n;

	do {
		n = read(e->fd, buf, len);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		e->bytes += n;
	return n < 0 ? -errno : n;
}

static int write_fd(void *ctx, const void *buf, size_t len)
{
	struct cp_end *e = ctx;
	int ret = write_all(e->fd, buf, len);

	if (!ret)
		e->bytes += len;
	return ret;
}

/* "file_write" / "file_read": the path and the size, never the contents */
static void audit_copy(uint64_t id, bool upload, const char *path,
		       uint64_t bytes, int ret)
{
	struct json_object *f = json_object_new_object();

	if (!f)
		return;
	json_object_object_add(f, "path", cube_audit_str(path));
	json_object_object_add(f, "bytes", json_object_new_int64(bytes));
	json_object_object_add(f, "ok", json_object_new_boolean(!ret));
	cube_audit_id(id, upload ? "file_write" : "file_read", "cubectl", f);
}

int cmd_cp(struct cctx *c, int argc, char **argv)
{
	const char *rpath, *local;
	struct cp_end end = { .fd = -1 };
	struct cube_agent *a;
	char idarg[24];
	bool upload;
	uint64_t id;
	int fd, ret;

	if (argc != 3)
		return cc_err(EX_USAGE, "usage: %s cp ID:PATH LOCAL | LOCAL ID:PATH", cc_prog);
	if (split_remote(argv[1], &id, &rpath)) {
		upload = false;
		local = argv[2];
	} else if (split_remote(argv[2], &id, &rpath)) {
		upload = true;
		local = argv[1];
	} else {
		return cc_err(EX_USAGE, "cp: one side must be ID:PATH");
	}
	if (rpath[0] != '/')
		return cc_err(EX_USAGE, "cp: the sandbox path '%s' must be absolute", rpath);
	snprintf(idarg, sizeof(idarg), "%llu", (unsigned long long)id);
	ret = open_agent(idarg, &id, &a, 0);
	if (ret)
		return ret;
	cube_agent_set_timeout(a, 60000);
	if (upload) {
		struct stat st;

		fd = strcmp(local, "-") ? open(local, O_RDONLY | O_CLOEXEC) : 0;
		if (fd < 0) {
			ret = cc_err(errno == ENOENT ? EX_NOTFOUND : EX_FAIL,
				     "cp: %s: %s", local, strerror(errno));
			goto out;
		}
		if (fd && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
			close(fd);
			ret = cc_err(EX_USAGE, "cp: %s is not a regular file", local);
			goto out;
		}
		end.fd = fd;
		ret = cube_agent_write_file(a, rpath, fd ? st.st_mode & 0777 : 0,
					    0, read_fd, &end);
		if (fd)
			close(fd);
		audit_copy(id, true, rpath, end.bytes, ret);
	} else {
		fd = strcmp(local, "-") ? open(local, O_WRONLY | O_CREAT |
					       O_TRUNC | O_CLOEXEC, 0644) : 1;
		if (fd < 0) {
			ret = cc_err(EX_FAIL, "cp: %s: %s", local, strerror(errno));
			goto out;
		}
		end.fd = fd;
		ret = cube_agent_read_file(a, rpath, write_fd, &end, NULL);
		if (fd != 1 && close(fd) && !ret)
			ret = -errno;
		audit_copy(id, false, rpath, end.bytes, ret);
		if (ret && fd != 1)
			unlink(local);	/* no partial copy stays behind */
	}
	if (ret)
		ret = cc_err(cc_code(ret), "cp: %s:%s: %s", idarg, rpath,
			     cube_agent_error(a)[0] ? cube_agent_error(a) :
			     strerror(-ret));
out:
	cube_agent_close(a);
	(void)c;
	return ret;
}
