// SPDX-License-Identifier: GPL-2.0
/*
 * wait_unit: the checks of cube_wait.h, on real children.  A child killed
 * by SIGSEGV or SIGSYS has a wait status whose WEXITSTATUS() reads 0; the
 * vmm selftests once took that for a clean exit.  EXPECT_EXIT(st, 0) must
 * report it as a failure, and pass a real exit(0) only.  Native.
 */
#include <fcntl.h>
#include <sys/resource.h>

#include "cube_test.h"
#include "cube_wait.h"

/* A child that ends with exit(@code), or by signal -@code. */
static int child_status(int code)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		if (code < 0) {
			signal(-code, SIG_DFL);
			raise(-code);
		}
		_exit(code);
	}
	if (pid < 0)
		return -2;
	return ct_reap(pid);
}

enum check { EXIT_CHECK, ASSERT_EXIT_CHECK, KILL_CHECK };

/*
 * Run one check of @st against @want in a child of its own (its report
 * goes nowhere): 1 when the check reported a failure, 0 when it passed.
 */
static int check_fails(enum check c, int st, int want)
{
	pid_t pid = fork();
	int r;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		ct_failed = 0;
		switch (c) {
		case EXIT_CHECK:
			EXPECT_EXIT(st, want);
			break;
		case ASSERT_EXIT_CHECK:
			ASSERT_EXIT(st, want);
			break;
		case KILL_CHECK:
			EXPECT_KILLED(st, want);
			break;
		}
		_exit(ct_failed ? 1 : 0);
	}
	r = ct_reap(pid);
	/* anything but exit 0 or 1 is the checker's own crash */
	if (!ct_exited_with(r, 0) && !ct_exited_with(r, 1))
		return -1;
	return WEXITSTATUS(r);
}

TEST(segv_is_no_clean_exit)
{
	int st = child_status(-SIGSEGV);

	ASSERT_TRUE(st >= 0 && WIFSIGNALED(st));
	/* what a bare WEXITSTATUS() check saw */
	EXPECT_EQ(WEXITSTATUS(st), 0);
	EXPECT_FALSE(ct_exited_with(st, 0));
	EXPECT_EQ(ct_exit_code(st), -1);
	EXPECT_EQ(check_fails(EXIT_CHECK, st, 0), 1);
	EXPECT_EQ(check_fails(ASSERT_EXIT_CHECK, st, 0), 1);
	EXPECT_EQ(check_fails(KILL_CHECK, st, SIGSEGV), 0);
	EXPECT_EQ(check_fails(KILL_CHECK, st, SIGKILL), 1);
}

TEST(seccomp_sigsys_is_no_clean_exit)
{
	int st = child_status(-SIGSYS);

	ASSERT_TRUE(st >= 0 && WIFSIGNALED(st));
	EXPECT_EQ(WEXITSTATUS(st), 0);
	EXPECT_EQ(check_fails(EXIT_CHECK, st, 0), 1);
	EXPECT_EQ(check_fails(KILL_CHECK, st, SIGSYS), 0);
}

TEST(exit_codes_compared)
{
	int ok = child_status(0), one = child_status(1), two = child_status(2);

	EXPECT_EQ(check_fails(EXIT_CHECK, ok, 0), 0);
	EXPECT_EQ(check_fails(ASSERT_EXIT_CHECK, ok, 0), 0);
	EXPECT_EQ(check_fails(EXIT_CHECK, one, 0), 1);
	EXPECT_EQ(check_fails(EXIT_CHECK, two, 2), 0);
	EXPECT_EQ(check_fails(EXIT_CHECK, two, 1), 1);
	/* an exit is no death by signal, whatever its code */
	EXPECT_EQ(check_fails(KILL_CHECK, ok, SIGKILL), 1);
	EXPECT_EQ(check_fails(KILL_CHECK, child_status(SIGKILL), SIGKILL), 1);
	EXPECT_EQ(check_fails(KILL_CHECK, child_status(-SIGKILL), SIGKILL), 0);
	EXPECT_EQ(ct_exit_code(two), 2);
}

TEST(no_status_fails_every_check)
{
	/* vmm_wait(): -1 after a timeout (it killed the VMM), -2 on error */
	EXPECT_EQ(check_fails(EXIT_CHECK, -1, 0), 1);
	EXPECT_EQ(check_fails(EXIT_CHECK, -2, 0), 1);
	EXPECT_EQ(check_fails(KILL_CHECK, -1, SIGKILL), 1);
	/* -1 is 0xffffffff: WIFSIGNALED() and WEXITSTATUS() read garbage */
	EXPECT_EQ(ct_exit_code(-1), -1);
}

TEST(assert_exit_ends_the_test)
{
	int st = child_status(-SIGSEGV);
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		ASSERT_EXIT(st, 0);
		_exit(0);	/* not reached */
	}
	EXPECT_EXIT(ct_reap(pid), CT_EXIT_FAIL);
}

TEST(status_text)
{
	char buf[96];

	EXPECT_STREQ(ct_status_str(child_status(3), buf, sizeof(buf)),
		     "exit 3");
	ct_status_str(child_status(-SIGSEGV), buf, sizeof(buf));
	EXPECT_EQ(strncmp(buf, "killed by signal 11 ", 20), 0);
	ct_status_str(-1, buf, sizeof(buf));
	EXPECT_EQ(strncmp(buf, "no status (-1", 13), 0);
}

TEST_MAIN()
