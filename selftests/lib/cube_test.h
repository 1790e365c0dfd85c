/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_test.h: a small test harness printing KTAP.
 *
 *	TEST(name) { ASSERT_EQ(1, 1); }
 *
 *	FIXTURE(dev) { int fd; };
 *	FIXTURE_SETUP(dev) { self->fd = open(...); ASSERT_GE(self->fd, 0); }
 *	FIXTURE_TEARDOWN(dev) { close(self->fd); }
 *	TEST_F(dev, version) { ... self->fd ... }
 *
 *	TEST_MAIN()
 *
 * Each test runs in its own child process with a timeout, so a crash or a
 * hang fails that test only.  ASSERT_* ends the test at the first failure,
 * EXPECT_* records it and goes on, SKIP() ends it as skipped, unless a check
 * already failed: then the test fails.  A check that fails in a fixture's
 * teardown fails the test too.  The program prints a KTAP report (a skip's
 * reason on its result line) and exits 0 when nothing failed, 1 otherwise
 * (4 when everything was skipped, as kselftest does).
 *
 * Command line: -t NAME runs only the tests whose name (or fixture.name)
 * equals NAME or starts with "NAME."; -l lists the tests; -T SECONDS sets the
 * per-test timeout (default 60, or $CUBE_TEST_TIMEOUT).
 */
#ifndef CUBE_TEST_H
#define CUBE_TEST_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CT_EXIT_PASS	0
#define CT_EXIT_FAIL	1
#define CT_EXIT_SKIP	4

struct ct_test {
	const char *fixture;		/* NULL for plain TEST() */
	const char *name;
	void (*fn)(void);
	struct ct_test *next;
};

static struct ct_test *ct_head, **ct_tail = &ct_head;
static int ct_failed __attribute__((unused));	/* in the child: an EXPECT failed */
static char ct_skip_reason[256] __attribute__((unused));
/* shared with the test's child: the parent prints the reason it skipped */
static char *ct_skip_shared;

static inline void ct_register(struct ct_test *t)
{
	*ct_tail = t;
	ct_tail = &t->next;
}

static inline void ct_diag(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void ct_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

#define TH_LOG(fmt, ...)	ct_diag(fmt, ##__VA_ARGS__)

#define CT_REGISTER(fix, nm, func)					\
	static struct ct_test ct_t_##func = { fix, #nm, func, NULL };	\
	static void __attribute__((constructor)) ct_reg_##func(void)	\
	{ ct_register(&ct_t_##func); }

#define TEST(nm)							\
	static void ct_fn_##nm(void);					\
	CT_REGISTER(NULL, nm, ct_fn_##nm)				\
	static void ct_fn_##nm(void)

#define FIXTURE(fx)		struct ct_fx_##fx
#define FIXTURE_SETUP(fx)						\
	static void ct_setup_##fx(struct ct_fx_##fx *self)
#define FIXTURE_TEARDOWN(fx)						\
	static void ct_teardown_##fx(struct ct_fx_##fx *self)

/*
 * The teardown runs from an atexit-like path: the test body and setup run
 * under ct_fx_self so an ASSERT failure in the body still tears down.
 */
#define TEST_F(fx, nm)							\
	static void ct_body_##fx##_##nm(struct ct_fx_##fx *self);	\
	static struct ct_fx_##fx *ct_self_##fx##_##nm;			\
	static void ct_td_##fx##_##nm(void)				\
	{								\
		int ct_before = ct_failed;				\
									\
		if (!ct_self_##fx##_##nm)				\
			return;						\
		ct_teardown_##fx(ct_self_##fx##_##nm);			\
		ct_self_##fx##_##nm = NULL;				\
		if (ct_failed && !ct_before) {				\
			fflush(stdout);					\
			_exit(CT_EXIT_FAIL);				\
		}							\
	}								\
	static void ct_fn_##fx##_##nm(void)				\
	{								\
		static struct ct_fx_##fx self;				\
		memset(&self, 0, sizeof(self));				\
		ct_setup_##fx(&self);					\
		ct_self_##fx##_##nm = &self;				\
		atexit(ct_td_##fx##_##nm);				\
		ct_body_##fx##_##nm(&self);				\
	}								\
	CT_REGISTER(#fx, nm, ct_fn_##fx##_##nm)				\
	static void ct_body_##fx##_##nm(struct ct_fx_##fx *self)

/* A skip after a failed EXPECT_* is that failure, not a skip. */
#define SKIP(fmt, ...) do {						\
	snprintf(ct_skip_reason, sizeof(ct_skip_reason), fmt, ##__VA_ARGS__); \
	if (ct_failed) {						\
		ct_diag("SKIP after a failed check is a failure: %s",	\
			ct_skip_reason);				\
		exit(CT_EXIT_FAIL);					\
	}								\
	ct_diag("SKIP: %s", ct_skip_reason);				\
	if (ct_skip_shared)						\
		memcpy(ct_skip_shared, ct_skip_reason,			\
		       sizeof(ct_skip_reason));				\
	exit(CT_EXIT_SKIP);						\
} while (0)

#define CT_FAIL_AT(fatal, fmt, ...) do {				\
	ct_diag("%s:%d: " fmt, __FILE__, __LINE__, ##__VA_ARGS__);	\
	ct_failed = 1;							\
	if (fatal)							\
		exit(CT_EXIT_FAIL);					\
} while (0)

/* Compared as C compares them; a signedness mix is the test's own choice. */
#define CT_CMP(fatal, a, op, b) do {					\
	__typeof__(a) ct_a = (a);					\
	__typeof__(b) ct_b = (b);					\
	_Pragma("GCC diagnostic push")					\
	_Pragma("GCC diagnostic ignored \"-Wsign-compare\"")		\
	if (!(ct_a op ct_b))						\
		CT_FAIL_AT(fatal, "expected %s %s %s (%lld vs %lld)",	\
			   #a, #op, #b, (long long)ct_a, (long long)ct_b); \
	_Pragma("GCC diagnostic pop")					\
} while (0)

#define ASSERT_EQ(a, b)		CT_CMP(1, a, ==, b)
#define ASSERT_NE(a, b)		CT_CMP(1, a, !=, b)
#define ASSERT_LT(a, b)		CT_CMP(1, a, <, b)
#define ASSERT_LE(a, b)		CT_CMP(1, a, <=, b)
#define ASSERT_GT(a, b)		CT_CMP(1, a, >, b)
#define ASSERT_GE(a, b)		CT_CMP(1, a, >=, b)
#define EXPECT_EQ(a, b)		CT_CMP(0, a, ==, b)
#define EXPECT_NE(a, b)		CT_CMP(0, a, !=, b)
#define EXPECT_LT(a, b)		CT_CMP(0, a, <, b)
#define EXPECT_LE(a, b)		CT_CMP(0, a, <=, b)
#define EXPECT_GT(a, b)		CT_CMP(0, a, >, b)
#define EXPECT_GE(a, b)		CT_CMP(0, a, >=, b)

#define ASSERT_TRUE(c) do {						\
	if (!(c))							\
		CT_FAIL_AT(1, "expected %s", #c);			\
} while (0)
#define ASSERT_FALSE(c)		ASSERT_TRUE(!(c))
#define EXPECT_TRUE(c) do {						\
	if (!(c))							\
		CT_FAIL_AT(0, "expected %s", #c);			\
} while (0)
#define EXPECT_FALSE(c)		EXPECT_TRUE(!(c))

#define CT_STREQ(fatal, a, b) do {					\
	const char *ct_sa = (a), *ct_sb = (b);				\
	if (!ct_sa || !ct_sb || strcmp(ct_sa, ct_sb))			\
		CT_FAIL_AT(fatal, "expected %s == %s (\"%s\" vs \"%s\")", \
			   #a, #b, ct_sa ? ct_sa : "(null)",		\
			   ct_sb ? ct_sb : "(null)");			\
} while (0)
#define ASSERT_STREQ(a, b)	CT_STREQ(1, a, b)
#define EXPECT_STREQ(a, b)	CT_STREQ(0, a, b)

/*
 * ASSERT_ERRNO(expr, err): expr must return -1 with errno == err.
 * Also accepts kernel-style returns (-err) of wrappers that return -errno.
 */
#define CT_ERRNO(fatal, expr, err) do {					\
	long ct_r;							\
	errno = 0;							\
	ct_r = (long)(expr);						\
	if (!((ct_r == -1 && errno == (err)) || ct_r == -(long)(err)))	\
		CT_FAIL_AT(fatal, "%s: expected errno %s, got ret %ld errno %d (%s)", \
			   #expr, #err, ct_r, errno, strerror(errno));	\
} while (0)
#define ASSERT_ERRNO(expr, err)	CT_ERRNO(1, expr, err)
#define EXPECT_ERRNO(expr, err)	CT_ERRNO(0, expr, err)

/* ASSERT_OK(expr): expr returns >= 0; prints errno otherwise. */
#define ASSERT_OK(expr) do {						\
	long ct_r;							\
	errno = 0;							\
	ct_r = (long)(expr);						\
	if (ct_r < 0)							\
		CT_FAIL_AT(1, "%s failed: ret %ld errno %d (%s)", #expr, \
			   ct_r, errno, strerror(errno));		\
} while (0)

static inline int ct_selected(const struct ct_test *t, const char *filter)
{
	char full[256];
	size_t n;

	if (!filter)
		return 1;
	snprintf(full, sizeof(full), "%s%s%s", t->fixture ? t->fixture : "",
		 t->fixture ? "." : "", t->name);
	if (!strcmp(filter, t->name) || !strcmp(filter, full))
		return 1;
	n = strlen(filter);
	return t->fixture && !strncmp(full, filter, n) && full[n] == '.';
}

static inline int ct_run_one(const struct ct_test *t, int timeout)
{
	pid_t pid;
	int status;

	fflush(stdout);
	if (ct_skip_shared)
		ct_skip_shared[0] = '\0';
	pid = fork();
	if (pid < 0) {
		ct_diag("fork: %s", strerror(errno));
		return CT_EXIT_FAIL;
	}
	if (pid == 0) {
		setpgid(0, 0);
		alarm(timeout);
		t->fn();
		exit(ct_failed ? CT_EXIT_FAIL : CT_EXIT_PASS);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			ct_diag("waitpid: %s", strerror(errno));
			return CT_EXIT_FAIL;
		}
	}
	kill(-pid, SIGKILL);	/* whatever the test left running */
	if (WIFSIGNALED(status)) {
		if (WTERMSIG(status) == SIGALRM)
			ct_diag("timed out after %d s", timeout);
		else
			ct_diag("killed by signal %d (%s)", WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		return CT_EXIT_FAIL;
	}
	return WEXITSTATUS(status);
}

static inline int ct_main(int argc, char **argv)
{
	const char *filter = NULL, *env;
	int timeout = 60, list = 0, opt;
	int pass = 0, fail = 0, skip = 0, total = 0, i = 0;
	struct ct_test *t;

	env = getenv("CUBE_TEST_TIMEOUT");
	if (env && atoi(env) > 0)
		timeout = atoi(env);
	while ((opt = getopt(argc, argv, "t:lT:")) != -1) {
		switch (opt) {
		case 't':
			filter = optarg;
			break;
		case 'l':
			list = 1;
			break;
		case 'T':
			timeout = atoi(optarg);
			if (timeout <= 0) {
				fprintf(stderr, "%s: bad timeout '%s'\n",
					argv[0], optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-l] [-t NAME] [-T SECONDS]\n",
				argv[0]);
			return 2;
		}
	}
	for (t = ct_head; t; t = t->next) {
		if (!ct_selected(t, filter))
			continue;
		if (list)
			printf("%s%s%s\n", t->fixture ? t->fixture : "",
			       t->fixture ? "." : "", t->name);
		total++;
	}
	if (list)
		return 0;
	if (filter && !total) {
		fprintf(stderr, "%s: no test named '%s'\n", argv[0], filter);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ct_skip_shared = mmap(NULL, sizeof(ct_skip_reason),
			      PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ct_skip_shared == MAP_FAILED)
		ct_skip_shared = NULL;
	printf("KTAP version 1\n1..%d\n", total);
	for (t = ct_head; t; t = t->next) {
		const char *sep = t->fixture ? "." : "";
		const char *fx = t->fixture ? t->fixture : "";
		int r;

		if (!ct_selected(t, filter))
			continue;
		i++;
		r = ct_run_one(t, timeout);
		if (r == CT_EXIT_PASS) {
			pass++;
			printf("ok %d %s%s%s\n", i, fx, sep, t->name);
		} else if (r == CT_EXIT_SKIP) {
			skip++;
			printf("ok %d %s%s%s # SKIP %.*s\n", i, fx, sep,
			       t->name, (int)sizeof(ct_skip_reason),
			       ct_skip_shared && ct_skip_shared[0] ?
			       ct_skip_shared : "(no reason given)");
		} else {
			fail++;
			printf("not ok %d %s%s%s\n", i, fx, sep, t->name);
		}
	}
	printf("# totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n",
	       pass, fail, skip);
	if (fail)
		return CT_EXIT_FAIL;
	return (skip && !pass) ? CT_EXIT_SKIP : CT_EXIT_PASS;
}

#define TEST_MAIN()							\
	int main(int argc, char **argv) { return ct_main(argc, argv); }

#endif /* CUBE_TEST_H */
