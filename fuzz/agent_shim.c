// SPDX-License-Identifier: GPL-2.0
/*
 * agent_shim.c: what the agent session harness links instead of exec.c.
 * Commands would fork processes in the fuzzer: EXEC is answered with an
 * error, as an agent that cannot spawn answers, and no command ever runs,
 * so the session's requests for a running one take their "none" paths.
 */
#include <errno.h>

#include "agent.h"

int exec_start(struct session *s, const struct cube_wire_msg *m)
{
	return session_send_error(s, m->id, ENOSYS, "commands are not run here");
}

void exec_poll_fds(struct session *s, struct pollfd *pfd, int *n, int *timeout)
{
}

int exec_handle(struct session *s, const struct pollfd *pfd, int n)
{
	return 0;
}

int exec_request(struct session *s, const struct cube_wire_msg *m)
{
	return session_send_error(s, m->id, ESRCH, "no command is running");
}

bool exec_blocks_input(const struct session *s)
{
	return false;
}

void exec_kill(struct session *s)
{
}
