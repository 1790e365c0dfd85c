// SPDX-License-Identifier: GPL-2.0
/*
 * agent_shim.c: what the agent session harness links instead of fork().
 * The agent's exec.c is compiled with fork() renamed to fuzz_fork(), which
 * fails as in a guest out of processes: a command is parsed, checked, its
 * user looked up and its stdio made, then refused with an error; no
 * process ever runs in the fuzzer.
 */
#include <errno.h>
#include <unistd.h>

pid_t fuzz_fork(void);

pid_t fuzz_fork(void)
{
	errno = EAGAIN;
	return -1;
}
