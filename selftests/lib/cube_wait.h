/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_wait.h: how a child process ended, checked whole.
 *
 * A wait status holds either an exit code or the signal that ended the
 * process.  WEXITSTATUS() alone reads 0 for a process killed by SIGSEGV or
 * by seccomp's SIGSYS, so a crashed VMM would pass for a clean exit.  These
 * checks pass only when the process exited, with that code:
 *
 *	EXPECT_EXIT(status, 0);		exited, with code 0
 *	ASSERT_EXIT(status, 2);		the same, ending the test otherwise
 *	EXPECT_KILLED(status, SIGKILL);	ended by that signal
 *
 * A negative status is no wait status at all (a helper's timeout or error,
 * e.g. vmm_wait()'s -1 and -2): it fails every check.  Include after
 * cube_test.h.
 */
#ifndef CUBE_WAIT_H
#define CUBE_WAIT_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "cube_test.h"

static inline bool ct_exited_with(int status, int code)
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static inline bool ct_killed_by(int status, int sig)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* The exit code, or -1 when the process did not exit (signal, no status). */
static inline int ct_exit_code(int status)
{
	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* "exit 3", "killed by signal 11 (Segmentation fault)", "no status (-1)" */
static inline const char *ct_status_str(int status, char *buf, size_t len)
{
	if (status < 0)
		snprintf(buf, len, "no status (%d: timed out or not reaped)",
			 status);
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, len, "wait status %#x", status);
	return buf;
}

/* waitpid() for @pid, again after EINTR; the status, or -2 on error. */
static inline int ct_reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -2;
	return status;
}

#define CT_EXIT_CHECK(fatal, st, code) do {				\
	int ct_st = (st), ct_code = (code);				\
	char ct_buf[96];						\
	if (!ct_exited_with(ct_st, ct_code))				\
		CT_FAIL_AT(fatal, "expected %s to be exit %d, got %s",	\
			   #st, ct_code,				\
			   ct_status_str(ct_st, ct_buf, sizeof(ct_buf))); \
} while (0)

#define CT_KILL_CHECK(fatal, st, sig) do {				\
	int ct_st = (st), ct_sig = (sig);				\
	char ct_buf[96];						\
	if (!ct_killed_by(ct_st, ct_sig))				\
		CT_FAIL_AT(fatal, "expected %s to be signal %d (%s), got %s", \
			   #st, ct_sig, strsignal(ct_sig),		\
			   ct_status_str(ct_st, ct_buf, sizeof(ct_buf))); \
} while (0)

#define ASSERT_EXIT(st, code)	CT_EXIT_CHECK(1, st, code)
#define EXPECT_EXIT(st, code)	CT_EXIT_CHECK(0, st, code)
#define ASSERT_KILLED(st, sig)	CT_KILL_CHECK(1, st, sig)
#define EXPECT_KILLED(st, sig)	CT_KILL_CHECK(0, st, sig)

#endif /* CUBE_WAIT_H */
