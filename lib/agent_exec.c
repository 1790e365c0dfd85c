// SPDX-License-Identifier: GPL-2.0
/*
 * agent_exec.c: running commands through cube-agent.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "agent_client_int.h"

static int check_spec(struct cube_agent *a, const struct cube_exec_spec *spec)
{
	size_t i;
	int err;

	if (!spec->argv || !spec->argv[0])
		return client_fail(a, -EINVAL, "no command given");
	for (i = 0; spec->argv[i]; i++) {
		if (i >= CUBE_AGENT_MAX_ARGS)
			return client_fail(a, -E2BIG, "more than %u arguments",
					   CUBE_AGENT_MAX_ARGS);
		if (strnlen(spec->argv[i], CUBE_AGENT_MAX_STRING) >= CUBE_AGENT_MAX_STRING)
			return client_fail(a, -E2BIG, "argument %zu too long", i);
		if (!spec->argv[i][0] && !i)
			return client_fail(a, -EINVAL, "empty command name");
	}
	for (i = 0; spec->envp && spec->envp[i]; i++) {
		const char *e = spec->envp[i];

		if (i >= CUBE_AGENT_MAX_ENV)
			return client_fail(a, -E2BIG, "more than %u environment entries",
					   CUBE_AGENT_MAX_ENV);
		if (strnlen(e, CUBE_AGENT_MAX_STRING) >= CUBE_AGENT_MAX_STRING)
			return client_fail(a, -E2BIG, "environment entry %zu too long", i);
		if (e[0] == '=' || !strchr(e, '='))
			return client_fail(a, -EINVAL,
					   "environment entry %zu is not NAME=VALUE", i);
	}
	if (spec->cwd) {
		err = client_check_string(a, "working directory", spec->cwd,
					  CUBE_AGENT_MAX_STRING);
		if (err)
			return err;
		if (spec->cwd[0] != '/')
			return client_fail(a, -EINVAL, "working directory must be absolute");
	}
	if (spec->user) {
		err = client_check_string(a, "user", spec->user, CUBE_AGENT_MAX_NAME);
		if (err)
			return err;
	}
	if (!spec->pty && (spec->rows || spec->cols))
		return client_fail(a, -EINVAL, "a terminal size needs a pty");
	if (spec->timeout_ms > CUBE_AGENT_MAX_TIMEOUT_MS)
		return client_fail(a, -EINVAL, "timeout above %u ms",
				   CUBE_AGENT_MAX_TIMEOUT_MS);
	return 0;
}

int cube_agent_exec_start(struct cube_agent *a,
			  const struct cube_exec_spec *spec, uint32_t *pid)
{
	struct cube_wire_buf b = { 0 };
	struct cube_wire_msg m;
	uint32_t id;
	size_t i;
	int err = client_idle(a);

	if (!err)
		err = check_spec(a, spec);
	if (err)
		return err;
	id = client_new_id(a);
	cube_wire_start(&b, CUBE_MSG_EXEC, id);
	for (i = 0; spec->argv[i]; i++)
		cube_wire_put_str(&b, CUBE_ATTR_ARGV, spec->argv[i]);
	for (i = 0; spec->envp && spec->envp[i]; i++)
		cube_wire_put_str(&b, CUBE_ATTR_ENV, spec->envp[i]);
	if (spec->cwd)
		cube_wire_put_str(&b, CUBE_ATTR_CWD, spec->cwd);
	if (spec->user)
		cube_wire_put_str(&b, CUBE_ATTR_USER, spec->user);
	if (spec->timeout_ms)
		cube_wire_put_u32(&b, CUBE_ATTR_TIMEOUT_MS, spec->timeout_ms);
	if (spec->pty) {
		cube_wire_put_flag(&b, CUBE_ATTR_PTY);
		cube_wire_put_u32(&b, CUBE_ATTR_ROWS, spec->rows ? spec->rows : 24);
		cube_wire_put_u32(&b, CUBE_ATTR_COLS, spec->cols ? spec->cols : 80);
	}
	if (spec->keep)
		cube_wire_put_flag(&b, CUBE_ATTR_KEEP);
	err = client_send(a, &b);
	if (!err)
		err = client_expect(a, id, CUBE_MSG_STARTED, &m);
	if (err)
		return err;
	if (pid)
		*pid = cube_wire_u32(m.first[CUBE_ATTR_PID]);
	a->exec_active = true;
	a->stdin_closed = false;
	a->exec_id = id;
	return 0;
}

int cube_agent_exec_attach(struct cube_agent *a, uint32_t pid)
{
	struct cube_wire_buf b = { 0 };
	struct cube_wire_msg m;
	uint32_t id, got;
	int err = client_idle(a);

	if (err)
		return err;
	if (!pid || pid > INT32_MAX)
		return client_fail(a, -EINVAL, "pid %u out of range", pid);
	id = client_new_id(a);
	cube_wire_start(&b, CUBE_MSG_ATTACH, id);
	cube_wire_put_u32(&b, CUBE_ATTR_PID, pid);
	err = client_send(a, &b);
	if (!err)
		err = client_expect(a, id, CUBE_MSG_STARTED, &m);
	if (err)
		return err;
	got = cube_wire_u32(m.first[CUBE_ATTR_PID]);
	if (got != pid)
		return client_broken(a, -EPROTO,
				     "agent attached command %u, asked for %u",
				     got, pid);
	a->exec_active = true;
	a->stdin_closed = false;
	a->exec_id = id;
	return 0;
}

static int exit_event(struct cube_agent *a, const struct cube_wire_msg *m,
		      struct cube_exec_event *ev)
{
	const struct cube_agent_attr *code = m->first[CUBE_ATTR_EXIT_CODE];
	const struct cube_agent_attr *sig = m->first[CUBE_ATTR_TERM_SIGNAL];
	uint32_t v;

	if (!code == !sig)
		return client_broken(a, -EPROTO,
				     "agent exit report needs exactly one of code and signal");
	if (code) {
		v = cube_wire_u32(code);
		if (v > 255)
			return client_broken(a, -EPROTO, "agent exit code %u", v);
		ev->status.exited = true;
		ev->status.code = v;
	} else {
		v = cube_wire_u32(sig);
		if (v < 1 || v > 64)
			return client_broken(a, -EPROTO, "agent exit signal %u", v);
		ev->status.signal = v;
	}
	ev->status.timed_out = m->first[CUBE_ATTR_TIMED_OUT];
	ev->type = CUBE_EXEC_EXIT;
	a->exec_active = false;
	return 0;
}

int cube_agent_exec_next(struct cube_agent *a, struct cube_exec_event *ev,
			 int timeout_ms)
{
	const struct cube_agent_attr *d;
	struct cube_wire_msg m;
	int err;

	memset(ev, 0, sizeof(*ev));
	if (a->broken)
		return a->broken;
	if (!a->exec_active)
		return client_fail(a, -ESRCH, "no command is running");
	err = client_recv(a, &m, timeout_ms);
	if (err)
		return err;
	if (m.id != a->exec_id)
		return client_broken(a, -EPROTO,
				     "agent event for request %u, expected %u",
				     m.id, a->exec_id);
	switch (m.type) {
	case CUBE_MSG_STDOUT:
	case CUBE_MSG_STDERR:
		d = m.first[CUBE_ATTR_DATA];
		ev->type = m.type == CUBE_MSG_STDOUT ? CUBE_EXEC_STDOUT :
						       CUBE_EXEC_STDERR;
		ev->data = cube_wire_value(d);
		ev->len = cube_wire_len(d);
		return 0;
	case CUBE_MSG_EXIT:
		return exit_event(a, &m, ev);
	case CUBE_MSG_ERROR:
		ev->type = CUBE_EXEC_ERROR;
		ev->err = client_agent_error(a, &m);
		return a->broken;
	default:
		return client_broken(a, -EPROTO,
				     "agent sent message 0x%x during a command",
				     m.type);
	}
}

static int running(struct cube_agent *a)
{
	if (a->broken)
		return a->broken;
	if (!a->exec_active)
		return client_fail(a, -ESRCH, "no command is running");
	return 0;
}

ssize_t cube_agent_exec_stdin(struct cube_agent *a, const void *buf,
			      size_t len)
{
	struct cube_wire_buf b = { 0 };
	const uint8_t *p = buf;
	size_t done = 0, n;
	int err = running(a);

	if (err)
		return err;
	if (a->stdin_closed)
		return client_fail(a, -EPIPE, "stdin is closed");
	while (done < len && a->out_len < CLIENT_OUT_LIMIT) {
		n = len - done;
		if (n > CUBE_AGENT_CHUNK)
			n = CUBE_AGENT_CHUNK;
		cube_wire_start(&b, CUBE_MSG_STDIN, a->exec_id);
		cube_wire_put(&b, CUBE_ATTR_DATA, p + done, n);
		err = client_queue(a, &b);
		if (err)
			return err;
		done += n;
	}
	if (!done && len)
		return -EAGAIN;
	return done;
}

int cube_agent_exec_close_stdin(struct cube_agent *a)
{
	struct cube_wire_buf b = { 0 };
	int err = running(a);

	if (err)
		return err;
	if (a->stdin_closed)
		return 0;
	a->stdin_closed = true;
	cube_wire_start(&b, CUBE_MSG_STDIN_CLOSE, a->exec_id);
	return client_queue(a, &b);
}

int cube_agent_exec_signal(struct cube_agent *a, int sig)
{
	struct cube_wire_buf b = { 0 };
	int err = running(a);

	if (err)
		return err;
	if (sig < 1 || sig > 64)
		return client_fail(a, -EINVAL, "signal %d out of range 1..64", sig);
	cube_wire_start(&b, CUBE_MSG_SIGNAL, a->exec_id);
	cube_wire_put_u32(&b, CUBE_ATTR_SIGNAL, sig);
	return client_queue(a, &b);
}

int cube_agent_exec_resize(struct cube_agent *a, uint16_t rows, uint16_t cols)
{
	struct cube_wire_buf b = { 0 };
	int err = running(a);

	if (err)
		return err;
	if (!rows || !cols)
		return client_fail(a, -EINVAL, "terminal size %ux%u", rows, cols);
	cube_wire_start(&b, CUBE_MSG_RESIZE, a->exec_id);
	cube_wire_put_u32(&b, CUBE_ATTR_ROWS, rows);
	cube_wire_put_u32(&b, CUBE_ATTR_COLS, cols);
	return client_queue(a, &b);
}

int cube_agent_exec(struct cube_agent *a, const struct cube_exec_spec *spec,
		    const void *stdin_data, size_t stdin_len,
		    cube_exec_output_fn out, void *ctx,
		    struct cube_exec_status *status)
{
	const uint8_t *in = stdin_data;
	struct cube_exec_event ev;
	size_t fed = 0;
	ssize_t n;
	int err, stop = 0, wait = -1;

	/* between two events: the connection's timeout, plus the command's */
	if (a->timeout_ms >= 0 && spec->timeout_ms)
		wait = a->timeout_ms + (int)(spec->timeout_ms > INT32_MAX / 2 ?
					     INT32_MAX / 2 : spec->timeout_ms);
	err = cube_agent_exec_start(a, spec, NULL);
	if (err)
		return err;
	for (;;) {
		if (!a->stdin_closed && !stop) {
			if (fed < stdin_len) {
				n = cube_agent_exec_stdin(a, in + fed, stdin_len - fed);
				if (n < 0 && n != -EAGAIN)
					return n;
				if (n > 0)
					fed += n;
			}
			if (fed == stdin_len) {
				err = cube_agent_exec_close_stdin(a);
				if (err)
					return err;
			}
		}
		err = cube_agent_exec_next(a, &ev, wait);
		if (err)
			return err;
		if (ev.type == CUBE_EXEC_EXIT)
			break;
		if (ev.type == CUBE_EXEC_ERROR) {
			/* stdin refused: the command goes on without it */
			a->stdin_closed = true;
			continue;
		}
		if (out && !stop) {
			stop = out(ctx, ev.type, ev.data, ev.len);
			if (stop) {
				err = cube_agent_exec_signal(a, SIGKILL);
				if (err)
					return err;
			}
		}
	}
	if (status)
		*status = ev.status;
	if (stop)
		return client_fail(a, stop < 0 ? stop : -ECANCELED,
				   "output handler stopped the command");
	return 0;
}
