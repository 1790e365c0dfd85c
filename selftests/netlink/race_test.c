// SPDX-License-Identifier: GPL-2.0
/*
 * race_test: 32 concurrent takers on a pool of 16 sandboxes get each
 * sandbox exactly once; netlink dumps stay consistent while sandboxes come
 * and go.
 */
#include <time.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "cube_nl.h"
#include "sb_util.h"

#define NR_SANDBOXES	16
#define NR_TAKERS	32

struct take_result {
	int err;
	uint64_t id;
	uint32_t pid;
};

/* Wait for the start signal, take once (netlink or ioctl), report. */
static void taker(int start, int ready, int out, int via_ioctl)
{
	struct take_result r = { 0 };
	struct cnl_pool p;
	struct cnl nl;
	char c;
	int dev;

	if (cnl_open(&nl))
		_exit(1);
	dev = sb_open_dev();
	if (dev < 0)
		_exit(1);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	if (read(start, &c, 1) != 0)	/* EOF: go */
		_exit(1);
	if (via_ioctl) {
		r.err = sb_pool_take(dev, "race", &r.id, &r.pid) ? -errno : 0;
	} else {
		r.err = cnl_pool_take(&nl, "race", &p);
		r.id = p.sandbox_id;
		r.pid = p.owner_pid;
	}
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	_exit(0);
}

TEST(takers_32_on_16)
{
	uint64_t ids[NR_SANDBOXES];
	int fds[NR_SANDBOXES], seen[NR_SANDBOXES] = { 0 };
	int dev, start[2], ready[2], out[2], i, j, ok = 0, again = 0, status;
	char c;
	struct take_result r;
	struct cnl_pool p;
	struct cnl nl;
	pid_t pids[NR_TAKERS];

	ASSERT_EQ(cnl_open(&nl), 0);
	dev = sb_open_dev();
	ASSERT_GE(dev, 0);
	cnl_pool_del(&nl, "race");
	ASSERT_EQ(cnl_pool_new(&nl, "race", "tpl", NR_SANDBOXES, 4), 0);
	for (i = 0; i < NR_SANDBOXES; i++) {
		fds[i] = sb_create_ready(dev, "tpl", &ids[i]);
		ASSERT_GE(fds[i], 0);
		ASSERT_OK(sb_pool_enter(fds[i], "race"));
	}
	ASSERT_OK(pipe(start));
	ASSERT_OK(pipe(ready));
	ASSERT_OK(pipe(out));
	for (i = 0; i < NR_TAKERS; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (pids[i] == 0) {
			close(start[1]);
			close(ready[0]);
			close(out[0]);
			taker(start[0], ready[1], out[1], i & 1);
		}
	}
	close(start[0]);
	close(ready[1]);
	close(out[1]);
	/* every taker has its sockets and waits at the start line */
	for (i = 0; i < NR_TAKERS; i++)
		ASSERT_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(start[1]);	/* all go */

	for (i = 0; i < NR_TAKERS; i++) {
		ASSERT_EQ(read(out[0], &r, sizeof(r)), (ssize_t)sizeof(r));
		if (r.err == -EAGAIN) {
			again++;
			continue;
		}
		ASSERT_EQ(r.err, 0);
		EXPECT_EQ(r.pid, (uint32_t)getpid());
		for (j = 0; j < NR_SANDBOXES; j++)
			if (ids[j] == r.id)
				break;
		ASSERT_LT(j, NR_SANDBOXES);
		seen[j]++;
		ok++;
	}
	for (i = 0; i < NR_TAKERS; i++) {
		ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
		EXPECT_EXIT(status, 0);
	}
	EXPECT_EQ(ok, NR_SANDBOXES);
	EXPECT_EQ(again, NR_TAKERS - NR_SANDBOXES);
	for (j = 0; j < NR_SANDBOXES; j++)
		EXPECT_EQ(seen[j], 1);
	ASSERT_EQ(cnl_pool_get(&nl, "race", &p), 0);
	EXPECT_EQ(p.size, 0u);
	EXPECT_EQ(p.taken, (uint64_t)NR_SANDBOXES);
	for (i = 0; i < NR_SANDBOXES; i++) {
		struct cube_sandbox_info info;

		ASSERT_OK(sb_info(fds[i], &info));
		EXPECT_EQ(info.flags, (uint32_t)CUBE_SANDBOX_F_TAKEN);
		close(fds[i]);
	}
	EXPECT_EQ(cnl_pool_del(&nl, "race"), 0);
	EXPECT_EQ(cnl_wait_sandboxes(&nl, 0), 0);
	close(dev);
	cnl_close(&nl);
}

/* Create sandboxes with labels and drop them, as fast as possible. */
static void churner(int seed)
{
	int dev = sb_open_dev(), fds[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
	unsigned int n = seed;

	if (dev < 0)
		_exit(1);
	for (;;) {
		int slot = n++ % 8;

		if (fds[slot] >= 0)
			close(fds[slot]);
		fds[slot] = sb_create(dev, NULL);
		if (fds[slot] >= 0 && (n & 1))
			sb_set_label(fds[slot], "churn", "yes", 0);
	}
}

struct dump_check {
	uint64_t last;
	unsigned int n;
	bool ordered;
};

static int check_cb(struct nlattr **tb, void *arg)
{
	struct dump_check *d = arg;
	struct cnl_sandbox s;

	if (!tb[CUBE_A_SANDBOX])
		return 0;
	cnl_parse_sandbox(tb[CUBE_A_SANDBOX], &s);
	if (!s.id || s.id <= d->last)
		d->ordered = false;
	d->last = s.id;
	d->n++;
	return 0;
}

TEST(dumps_while_sandboxes_come_and_go)
{
	struct cnl nl;
	pid_t pids[2];
	time_t end;
	int i, dumps = 0, status;

	ASSERT_EQ(cnl_open(&nl), 0);
	for (i = 0; i < 2; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (pids[i] == 0)
			churner(i);
	}
	end = time(NULL) + 4;
	while (time(NULL) < end) {
		struct dump_check d = { .ordered = true };
		struct cnl_sandbox s;

		ASSERT_EQ(cnl_exchange(&nl, cnl_msg(&nl, CUBE_CMD_GET_SANDBOX,
						    NLM_F_DUMP),
				       check_cb, &d), 0);
		EXPECT_TRUE(d.ordered);
		if (d.last) {
			int ret = cnl_sandbox_get(&nl, d.last, &s);

			EXPECT_TRUE(ret == 0 || ret == -ENOENT);
		}
		dumps++;
	}
	TH_LOG("%d dumps", dumps);
	EXPECT_GT(dumps, 0);
	for (i = 0; i < 2; i++) {
		kill(pids[i], SIGKILL);
		ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
	}
	EXPECT_EQ(cnl_wait_sandboxes(&nl, 0), 0);
	cnl_close(&nl);
}

TEST_MAIN()
