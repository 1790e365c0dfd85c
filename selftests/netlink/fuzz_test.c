// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: random ioctl numbers and argument bytes on /dev/cube and on
 * sandbox fds, and random "cube" genl messages (some well formed, most
 * not), for a bounded time ($CUBE_FUZZ_SECONDS, default 20).  Afterwards,
 * with the pools and snapshots the fuzzer made deleted, every module
 * counter must be back to zero; the harness then checks the kernel log and
 * that the module unloads without a leak.
 */
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "cube_test.h"
#include "cube_nl.h"
#include "sb_util.h"

#define NR_FDS	8

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dull;
}

static void rnd_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len--)
		*p++ = rnd();
}

struct fuzz {
	int dev;
	int fds[NR_FDS];	/* sandbox (or other) fds the fuzzer got */
	uint64_t ids[NR_FDS];
	struct cnl nl;
	int report;		/* pipe to the parent */
	unsigned char buf[512];
};

/* Whether @fd is a new descriptor, not one the fuzzer itself needs. */
static int is_new_fd(struct fuzz *f, int fd)
{
	return fd > 2 && fd != f->dev && fd != f->report &&
	       fd != nl_socket_get_fd(f->nl.sk) && fcntl(fd, F_GETFD) >= 0;
}

static int any_fd(struct fuzz *f)
{
	switch (rnd() % 4) {
	case 0:
		return f->dev;
	case 1:
		return (int)(rnd() % 64) - 2;
	default:
		return f->fds[rnd() % NR_FDS];
	}
}

static void keep_fd(struct fuzz *f, int fd, uint64_t id)
{
	int slot = rnd() % NR_FDS;

	if (f->fds[slot] >= 0)
		close(f->fds[slot]);
	f->fds[slot] = fd;
	f->ids[slot] = id;
}

static const char *const names[] = { "f0", "f1", "tpl", "" };

/* Fill the argument with mostly plausible values. */
static void plausible_arg(struct fuzz *f, unsigned long cmd)
{
	memset(f->buf, 0, sizeof(f->buf));
	switch (cmd) {
	case CUBE_IOC_SANDBOX_BIND_VM:
	case CUBE_IOC_SANDBOX_SET_NETNS:
	case CUBE_IOC_SANDBOX_ADD_BPF_LINK:
	case CUBE_IOC_SANDBOX_SET_CLONE:
		((struct cube_fd_arg *)f->buf)->fd = any_fd(f);
		break;
	case CUBE_IOC_SANDBOX_SET_STATE:
		((struct cube_sandbox_state_arg *)f->buf)->state = rnd() % 6;
		((struct cube_sandbox_state_arg *)f->buf)->exit_reason =
			rnd() % 7;
		break;
	case CUBE_IOC_SANDBOX_SET_LIMITS: {
		struct cube_sandbox_limits *l = (void *)f->buf;

		l->vcpus = rnd() % 4;
		l->memory_bytes = (rnd() % 4) << 12;
		strcpy(l->template_name, names[rnd() % 4]);
		break;
	}
	case CUBE_IOC_SANDBOX_SET_LABEL: {
		struct cube_sandbox_label *l = (void *)f->buf;

		l->flags = rnd() % 3;
		snprintf(l->key, sizeof(l->key), "k%u",
			 (unsigned int)(rnd() % 20));
		break;
	}
	case CUBE_IOC_SANDBOX_POOL_ENTER:
	case CUBE_IOC_POOL_TAKE:
		strcpy(((struct cube_pool_arg *)f->buf)->name,
		       names[rnd() % 4]);
		break;
	default:
		break;
	}
	/* now and then, a few flipped bits */
	if (!(rnd() % 4))
		f->buf[rnd() % 64] ^= 1 << (rnd() % 8);
}

static const unsigned long sandbox_cmds[] = {
	CUBE_IOC_SANDBOX_BIND_VM, CUBE_IOC_SANDBOX_SET_NETNS,
	CUBE_IOC_SANDBOX_ADD_BPF_LINK, CUBE_IOC_SANDBOX_SET_CLONE,
	CUBE_IOC_SANDBOX_SET_STATE, CUBE_IOC_SANDBOX_SET_LIMITS,
	CUBE_IOC_SANDBOX_SET_LABEL, CUBE_IOC_SANDBOX_GET_INFO,
	CUBE_IOC_SANDBOX_POOL_ENTER, CUBE_IOC_SANDBOX_POOL_LEAVE,
};

static void fuzz_ioctl(struct fuzz *f)
{
	unsigned long cmd;
	void *arg = f->buf;
	int fd, ret;

	if (rnd() % 2) {
		cmd = sandbox_cmds[rnd() % 10];
		fd = f->fds[rnd() % NR_FDS];
		if (fd < 0 || !(rnd() % 8))
			fd = f->dev;
		plausible_arg(f, cmd);
	} else {
		/* any number of the cube range, any size and direction */
		cmd = _IOC(rnd() % 4, CUBE_IOCTL_MAGIC, rnd() % 0x50,
			   rnd() % 2 ? rnd() % 300 : 0);
		if (!(rnd() % 4))
			cmd = sandbox_cmds[rnd() % 10];
		fd = rnd() % 2 ? f->dev : f->fds[rnd() % NR_FDS];
		rnd_bytes(f->buf, sizeof(f->buf));
		if (!(rnd() % 8))
			memset(f->buf, 0, sizeof(f->buf));
	}
	if (!(rnd() % 16))
		arg = rnd() % 2 ? NULL : (void *)(uintptr_t)rnd();
	if (fd < 0)
		return;
	if (cmd == CUBE_IOC_SANDBOX_CREATE && arg == f->buf)
		memset(f->buf, 0, sizeof(struct cube_sandbox_create));
	ret = ioctl(fd, cmd, arg);
	if (is_new_fd(f, ret))
		keep_fd(f, ret, cmd == CUBE_IOC_SANDBOX_CREATE ?
			((struct cube_sandbox_create *)f->buf)->id : 0);
}

static void put_random_attrs(struct nl_msg *msg, int depth)
{
	int n = rnd() % 5, i;

	for (i = 0; i < n; i++) {
		int type = rnd() % 24;

		if (depth < 2 && rnd() % 2) {
			struct nlattr *nest = nla_nest_start(msg, type);

			put_random_attrs(msg, depth + 1);
			nla_nest_end(msg, nest);
			continue;
		}
		switch (rnd() % 5) {
		case 0:
			nla_put_u32(msg, type, rnd() % 8);
			break;
		case 1:
			nla_put_u64(msg, type, rnd() % 64);
			break;
		case 2:
			nla_put_string(msg, type, names[rnd() % 4]);
			break;
		case 3: {
			unsigned char b[80];
			int len = rnd() % sizeof(b);

			rnd_bytes(b, len);
			nla_put(msg, type, len, b);
			break;
		}
		default:
			nla_put_flag(msg, type);
			break;
		}
	}
}

/* A well-formed request of a random command with random values. */
static void put_plausible(struct fuzz *f, struct nl_msg *msg)
{
	struct nlattr *n;

	if (rnd() % 2) {
		n = nla_nest_start(msg, CUBE_A_SANDBOX);
		nla_put_u64(msg, CUBE_SANDBOX_A_ID, rnd() % 2 ?
			    f->ids[rnd() % NR_FDS] : rnd() % 100);
		/* no kill of ourselves without some grace */
		nla_put_u32(msg, CUBE_SANDBOX_A_GRACE_MS, 500 + rnd() % 3000);
		nla_nest_end(msg, n);
	} else {
		n = nla_nest_start(msg, CUBE_A_POOL);
		nla_put_string(msg, CUBE_POOL_A_NAME, names[rnd() % 4]);
		if (rnd() % 2)
			nla_put_string(msg, CUBE_POOL_A_TEMPLATE,
				       names[rnd() % 4]);
		if (rnd() % 2)
			nla_put_u32(msg, CUBE_POOL_A_TARGET, rnd() % 6);
		if (rnd() % 2)
			nla_put_u32(msg, CUBE_POOL_A_LOW, rnd() % 6);
		nla_nest_end(msg, n);
	}
}

static void fuzz_genl(struct fuzz *f)
{
	int flags = rnd() % 4 ? 0 : NLM_F_DUMP;
	struct nl_msg *msg = cnl_msg(&f->nl, rnd() % (CUBE_CMD_MAX + 3), flags);

	if (!msg)
		return;
	if (rnd() % 2)
		put_plausible(f, msg);
	else
		put_random_attrs(msg, 0);
	if (!(rnd() % 8)) {
		struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));

		g->reserved = rnd();
		g->version = rnd();
	}
	cnl_exchange(&f->nl, msg, NULL, NULL);
}

static void fuzz_worker(uint64_t seed, time_t end, int report)
{
	unsigned long ops = 0;
	struct fuzz f;
	int i;

	rnd_state = seed | 1;
	memset(&f, 0, sizeof(f));
	for (i = 0; i < NR_FDS; i++)
		f.fds[i] = -1;
	f.report = report;
	f.dev = sb_open_dev();
	if (f.dev < 0 || cnl_open(&f.nl))
		_exit(1);
	while (time(NULL) < end) {
		ops++;
		switch (rnd() % 8) {
		case 0:
			keep_fd(&f, sb_create(f.dev, &f.ids[0]), f.ids[0]);
			break;
		case 1:
			i = rnd() % NR_FDS;
			if (f.fds[i] >= 0)
				close(f.fds[i]);
			f.fds[i] = -1;
			break;
		case 2:
		case 3:
		case 4:
			fuzz_ioctl(&f);
			break;
		default:
			fuzz_genl(&f);
			break;
		}
		if (!(ops % 64) &&
		    write(report, &ops, sizeof(ops)) != sizeof(ops))
			_exit(1);
	}
	_exit(0);
}

struct name_list {
	char names[256][CUBE_NAME_MAX];
	uint64_t ids[256];
	unsigned int n;
};

static int pool_names_cb(struct nlattr **tb, void *arg)
{
	struct name_list *l = arg;
	struct cnl_pool p;

	if (!tb[CUBE_A_POOL] || l->n == 256)
		return 0;
	cnl_parse_pool(tb[CUBE_A_POOL], &p);
	memcpy(l->names[l->n++], p.name, CUBE_NAME_MAX);
	return 0;
}

static int snapshot_ids_cb(struct nlattr **tb, void *arg)
{
	struct nlattr *st[CUBE_SNAPSHOT_A_MAX + 1];
	struct name_list *l = arg;

	if (!tb[CUBE_A_SNAPSHOT] || l->n == 256 ||
	    nla_parse_nested(st, CUBE_SNAPSHOT_A_MAX, tb[CUBE_A_SNAPSHOT],
			     NULL) || !st[CUBE_SNAPSHOT_A_ID])
		return 0;
	l->ids[l->n++] = nla_get_u64(st[CUBE_SNAPSHOT_A_ID]);
	return 0;
}

/* Delete every pool and snapshot, as a fuzzer can make both. */
static void cleanup(struct cnl *nl)
{
	static struct name_list l;
	struct nl_msg *msg;
	struct nlattr *n;
	unsigned int i;

	l.n = 0;
	cnl_exchange(nl, cnl_msg(nl, CUBE_CMD_GET_POOL, NLM_F_DUMP),
		     pool_names_cb, &l);
	for (i = 0; i < l.n; i++)
		cnl_pool_del(nl, l.names[i]);
	l.n = 0;
	cnl_exchange(nl, cnl_msg(nl, CUBE_CMD_GET_SNAPSHOT, NLM_F_DUMP),
		     snapshot_ids_cb, &l);
	for (i = 0; i < l.n; i++) {
		msg = cnl_msg(nl, CUBE_CMD_DEL_SNAPSHOT, 0);
		n = nla_nest_start(msg, CUBE_A_SNAPSHOT);
		nla_put_u64(msg, CUBE_SNAPSHOT_A_ID, l.ids[i]);
		nla_nest_end(msg, n);
		cnl_exchange(nl, msg, NULL, NULL);
	}
}

TEST(fuzz)
{
	const char *env = getenv("CUBE_FUZZ_SECONDS");
	int seconds = env && atoi(env) > 0 ? atoi(env) : 20;
	time_t end = time(NULL) + seconds;
	uint64_t seed = time(NULL) ^ ((uint64_t)getpid() << 32);
	unsigned int spawned = 0, killed = 0;
	unsigned long ops = 0, n;
	int report[2];
	struct cnl_stats s;
	struct cnl nl;
	int status, i, zero = 0;
	pid_t pid;

	TH_LOG("seed %#llx, %d s", (unsigned long long)seed, seconds);
	ASSERT_EQ(cnl_open(&nl), 0);
	/* a worker that gets killed (it may kill itself) is replaced */
	while (time(NULL) < end) {
		ASSERT_OK(pipe(report));
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			close(report[0]);
			fuzz_worker(seed + spawned, end, report[1]);
		}
		close(report[1]);
		spawned++;
		n = 0;
		while (read(report[0], &n, sizeof(n)) == sizeof(n))
			;
		ops += n;
		close(report[0]);
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		if (WIFSIGNALED(status)) {
			ASSERT_EQ(WTERMSIG(status), SIGKILL);
			killed++;
		} else {
			ASSERT_EQ(WEXITSTATUS(status), 0);
		}
	}
	TH_LOG("%u workers, %u killed by a kill request, about %lu operations",
	       spawned, killed, ops);
	EXPECT_GT(ops, 0ul);
	for (i = 0; i < 500 && !zero; i++) {
		cleanup(&nl);
		ASSERT_EQ(cnl_stats(&nl, &s), 0);
		zero = !s.v[CUBE_STATS_A_SANDBOXES] && !s.v[CUBE_STATS_A_POOLS] &&
		       !s.v[CUBE_STATS_A_SNAPSHOTS] && !s.v[CUBE_STATS_A_CLONES] &&
		       !s.v[CUBE_STATS_A_SHARED_PAGES] &&
		       !s.v[CUBE_STATS_A_PRIVATE_PAGES] &&
		       !s.v[CUBE_STATS_A_POOLED];
		if (!zero)
			usleep(10000);
	}
	for (i = CUBE_STATS_A_SANDBOXES; i <= CUBE_STATS_A_MAX; i++)
		EXPECT_EQ(s.v[i], 0ull);
	cnl_close(&nl);
}

TEST_MAIN()
