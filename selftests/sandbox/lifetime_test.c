// SPDX-License-Identifier: GPL-2.0
/*
 * lifetime_test: a sandbox goes away completely with its owner, at any
 * step: while being created, while pooled, with a netns and eBPF links
 * attached, after a kill request (cooperative or not).  Afterwards the
 * module's counters are back to zero, the netns is gone and the links are
 * detached.
 */
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "cube_nl.h"
#include "sb_util.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static void expect_no_sandboxes(struct cnl *nl)
{
	struct cnl_stats s;

	ASSERT_EQ(cnl_wait_sandboxes(nl, 0), 0);
	ASSERT_EQ(cnl_stats(nl, &s), 0);
	EXPECT_EQ(s.v[CUBE_STATS_A_SANDBOXES], 0ull);
	EXPECT_EQ(s.v[CUBE_STATS_A_POOLED], 0ull);
}

/* Fork a child running @fn(@arg, @wfd); the parent reads what it reports. */
static pid_t spawn(void (*fn)(void *, int), void *arg, int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		fn(arg, p[1]);
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = read(fd, (char *)buf + done, len - done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static int kill_and_reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return ct_killed_by(status, SIGKILL) ? 0 : -1;
}

/* A VMM that readies a sandbox, pools it, reports its id and waits. */
static void pooled_vmm(void *arg, int wfd)
{
	int dev = sb_open_dev();
	uint64_t id = 0;
	int fd = sb_create_ready(dev, "life", &id);

	if (fd < 0 || sb_pool_enter(fd, arg))
		id = 0;
	if (write(wfd, &id, sizeof(id)) != sizeof(id))
		_exit(1);
	pause();
}

TEST(owner_dies_while_pooled)
{
	struct cnl_pool p;
	struct cnl nl;
	uint64_t id;
	pid_t pid;
	int rfd;

	ASSERT_EQ(cnl_open(&nl), 0);
	cnl_pool_del(&nl, "life");
	ASSERT_EQ(cnl_pool_new(&nl, "life", "life", 2, 1), 0);
	pid = spawn(pooled_vmm, "life", &rfd);
	ASSERT_GT(pid, 0);
	ASSERT_OK(read_full(rfd, &id, sizeof(id)));
	ASSERT_NE(id, 0ull);
	ASSERT_EQ(cnl_pool_get(&nl, "life", &p), 0);
	EXPECT_EQ(p.size, 1u);
	ASSERT_OK(kill_and_reap(pid));
	ASSERT_EQ(cnl_pool_get(&nl, "life", &p), 0);
	EXPECT_EQ(p.size, 0u);
	EXPECT_EQ(p.taken, 0ull);
	EXPECT_ERRNO(cnl_pool_take(&nl, "life", &p), EAGAIN);
	expect_no_sandboxes(&nl);
	EXPECT_EQ(cnl_pool_del(&nl, "life"), 0);
	close(rfd);
	cnl_close(&nl);
}

struct netns_report {
	uint64_t id;
	uint32_t link_id[2];
};

/*
 * A VMM that attaches the netns @ns and two eBPF links on it to its sandbox
 * and keeps no fd of any of them: the sandbox holds the only references.
 */
static void netns_vmm(int ns, int prog, int wfd)
{
	struct netns_report r = { 0 };
	struct bpf_link_info info;
	int dev = sb_open_dev(), fd, link, i;

	fd = sb_create(dev, &r.id);
	if (fd < 0)
		goto out;
	for (i = 0; i < 2; i++) {
		link = sb_netns_link(prog, ns);
		if (link < 0 || sb_link_info(link, &info) ||
		    sb_fd_ioctl(fd, CUBE_IOC_SANDBOX_ADD_BPF_LINK, link))
			goto out;
		r.link_id[i] = info.id;
		close(link);
	}
	if (sb_fd_ioctl(fd, CUBE_IOC_SANDBOX_SET_NETNS, ns))
		goto out;
	close(prog);
	close(ns);
	close(dev);
	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	pause();
out:
	r.id = 0;
	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	pause();
}

/*
 * Drop a fresh network namespace and wait (up to 30 s) until the kernel
 * has torn it down, as a link of @prog on it shows.  The kernel tears
 * namespaces down in batches, one after the other: after two such calls,
 * every namespace that lost its last reference before the first is gone.
 */
static int netns_cleanup_barrier(int prog)
{
	int ns = sb_new_netns(), link, i;

	if (ns < 0)
		return -1;
	link = sb_netns_link(prog, ns);
	close(ns);
	if (link < 0)
		return -1;
	for (i = 0; i < 3000 && sb_link_netns_ino(link); i++)
		usleep(10000);
	i = sb_link_netns_ino(link) ? -1 : 0;
	close(link);
	return i;
}

TEST(owner_dies_with_netns_and_links)
{
	struct netns_report r;
	struct cnl_sandbox s;
	struct cnl nl;
	int p[2], watch, prog, ns, i;
	uint64_t cookie;
	pid_t pid;

	ASSERT_EQ(cnl_open(&nl), 0);
	ns = sb_new_netns();
	ASSERT_GE(ns, 0);
	cookie = sb_netns_cookie(ns);
	ASSERT_NE(cookie, 0ull);
	prog = sb_sk_lookup_prog();
	if (prog < 0)
		SKIP("cannot load an sk_lookup program: %s", strerror(errno));
	/* the parent watches the netns through a link of its own */
	watch = sb_netns_link(prog, ns);
	ASSERT_GE(watch, 0);
	ASSERT_NE(sb_link_netns_ino(watch), 0u);
	ASSERT_OK(pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		netns_vmm(ns, prog, p[1]);
		_exit(0);
	}
	close(p[1]);
	close(ns);
	ASSERT_OK(read_full(p[0], &r, sizeof(r)));
	ASSERT_NE(r.id, 0ull);
	ASSERT_TRUE(sb_link_exists(r.link_id[0]));
	ASSERT_TRUE(sb_link_exists(r.link_id[1]));
	ASSERT_EQ(cnl_sandbox_get(&nl, r.id, &s), 0);
	EXPECT_EQ(s.netns_cookie, cookie);
	EXPECT_EQ(s.bpf_links, 2u);
	EXPECT_EQ(s.flags, (uint32_t)CUBE_SANDBOX_F_NETNS);
	/*
	 * Only the sandbox keeps the netns alive now: once namespaces dropped
	 * after ours are torn down, ours would be too, were it not held.
	 */
	ASSERT_OK(netns_cleanup_barrier(prog));
	ASSERT_OK(netns_cleanup_barrier(prog));
	close(prog);
	EXPECT_NE(sb_link_netns_ino(watch), 0u);

	ASSERT_OK(kill_and_reap(pid));
	expect_no_sandboxes(&nl);
	EXPECT_FALSE(sb_link_exists(r.link_id[0]));
	EXPECT_FALSE(sb_link_exists(r.link_id[1]));
	/* netns teardown runs from a workqueue: give it time */
	for (i = 0; i < 3000 && sb_link_netns_ino(watch); i++)
		usleep(10000);
	EXPECT_EQ(sb_link_netns_ino(watch), 0u);
	close(watch);
	close(p[0]);
	cnl_close(&nl);
}

/* A VMM whose sandbox holds a clone of snapshot *@arg, and nothing else does. */
static void clone_vmm(void *arg, int wfd)
{
	struct cube_clone_create cc = { .snapshot_id = *(uint64_t *)arg };
	int dev = sb_open_dev(), fd, clone;
	uint64_t id = 0;

	fd = sb_create(dev, &id);
	clone = ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc);
	if (fd < 0 || clone < 0 ||
	    sb_fd_ioctl(fd, CUBE_IOC_SANDBOX_SET_CLONE, clone))
		id = 0;
	close(clone);
	if (write(wfd, &id, sizeof(id)) != sizeof(id))
		_exit(1);
	pause();
}

TEST(owner_dies_with_clone)
{
	struct cube_snapshot_create sc = { .source = CUBE_SNAPSHOT_SRC_MEMFD };
	struct cube_snapshot_id del = { 0 };
	struct cnl_stats s;
	struct cnl nl;
	uint64_t id;
	int dev, memfd, rfd;
	pid_t pid;

	ASSERT_EQ(cnl_open(&nl), 0);
	dev = sb_open_dev();
	ASSERT_GE(dev, 0);
	memfd = memfd_create("cube-life", MFD_CLOEXEC);
	ASSERT_GE(memfd, 0);
	ASSERT_OK(ftruncate(memfd, 8 * 4096));
	ASSERT_EQ(pwrite(memfd, "x", 1, 0), 1);
	sc.fd = memfd;
	sc.length = 8 * 4096;
	ASSERT_OK(ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &sc));
	close(memfd);

	pid = spawn(clone_vmm, &sc.id, &rfd);
	ASSERT_GT(pid, 0);
	ASSERT_OK(read_full(rfd, &id, sizeof(id)));
	ASSERT_NE(id, 0ull);
	ASSERT_EQ(cnl_stats(&nl, &s), 0);
	EXPECT_EQ(s.v[CUBE_STATS_A_CLONES], 1ull);
	ASSERT_OK(kill_and_reap(pid));
	expect_no_sandboxes(&nl);
	ASSERT_EQ(cnl_stats(&nl, &s), 0);
	EXPECT_EQ(s.v[CUBE_STATS_A_CLONES], 0ull);
	del.id = sc.id;
	ASSERT_OK(ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del));
	ASSERT_EQ(cnl_stats(&nl, &s), 0);
	EXPECT_EQ(s.v[CUBE_STATS_A_SNAPSHOTS], 0ull);
	EXPECT_EQ(s.v[CUBE_STATS_A_SHARED_PAGES], 0ull);
	close(rfd);
	close(dev);
	cnl_close(&nl);
}

/* Create and drop sandboxes forever, each in a different half-done step. */
static void churn_vmm(void *arg, int wfd)
{
	int dev = sb_open_dev(), ns = sb_new_netns(), vm = sb_kvm_vm();
	unsigned int n = 0;

	if (write(wfd, "r", 1) != 1)
		_exit(1);
	for (;;) {
		int fd = sb_create(dev, NULL);

		if (fd < 0)
			continue;
		switch (n++ % 4) {
		case 0:
			sb_fd_ioctl(fd, CUBE_IOC_SANDBOX_SET_NETNS, ns);
			break;
		case 1:
			if (vm >= 0)
				sb_fd_ioctl(fd, CUBE_IOC_SANDBOX_BIND_VM, vm);
			break;
		case 2:
			sb_set_label(fd, "k", "v", 0);
			sb_set_limits(fd, "life", 1, 4096);
			sb_set_state(fd, CUBE_SANDBOX_READY, 0);
			sb_pool_enter(fd, "churn");
			break;
		default:
			break;
		}
		if (n % 3)
			close(fd);
	}
}

TEST(owner_dies_mid_create)
{
	struct cnl nl;
	int round, rfd;
	char c;
	pid_t pid;

	ASSERT_EQ(cnl_open(&nl), 0);
	cnl_pool_del(&nl, "churn");
	ASSERT_EQ(cnl_pool_new(&nl, "churn", "life", 64, 0), 0);
	for (round = 0; round < 8; round++) {
		pid = spawn(churn_vmm, NULL, &rfd);
		ASSERT_GT(pid, 0);
		ASSERT_EQ(read(rfd, &c, 1), 1);
		usleep(20000 + round * 37000);
		ASSERT_OK(kill_and_reap(pid));
		close(rfd);
		expect_no_sandboxes(&nl);
	}
	EXPECT_EQ(cnl_pool_del(&nl, "churn"), 0);
	cnl_close(&nl);
}

/* A VMM that stops when its sandbox fd reports a kill request. */
static void polite_vmm(void *arg, int wfd)
{
	int dev = sb_open_dev();
	struct pollfd p = { .events = POLLPRI };
	uint64_t id = 0;

	p.fd = sb_create(dev, &id);
	if (write(wfd, &id, sizeof(id)) != sizeof(id))
		_exit(1);
	if (poll(&p, 1, 30000) == 1 && (p.revents & POLLPRI)) {
		sb_set_state(p.fd, CUBE_SANDBOX_EXITED, CUBE_EXIT_KILLED);
		_exit(42);
	}
	_exit(1);
}

TEST(kill_polite_owner)
{
	struct cnl nl;
	uint64_t id;
	int rfd, status;
	pid_t pid;

	ASSERT_EQ(cnl_open(&nl), 0);
	pid = spawn(polite_vmm, NULL, &rfd);
	ASSERT_GT(pid, 0);
	ASSERT_OK(read_full(rfd, &id, sizeof(id)));
	ASSERT_NE(id, 0ull);
	ASSERT_EQ(cnl_kill(&nl, id, CUBE_KILL_GRACE_MS_MAX), 0);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_EXIT(status, 42);
	expect_no_sandboxes(&nl);
	EXPECT_EQ(cnl_kill(&nl, id, 0), -ENOENT);
	close(rfd);
	cnl_close(&nl);
}

/* A VMM that ignores kill requests (and SIGTERM). */
static void stubborn_vmm(void *arg, int wfd)
{
	int dev = sb_open_dev();
	uint64_t id = 0;

	signal(SIGTERM, SIG_IGN);
	if (sb_create(dev, &id) < 0)
		id = 0;
	if (write(wfd, &id, sizeof(id)) != sizeof(id))
		_exit(1);
	for (;;)
		pause();
}

TEST(kill_stubborn_owner_after_grace)
{
	struct cnl nl;
	uint64_t id, t0, dt;
	int rfd, status;
	pid_t pid;

	ASSERT_EQ(cnl_open(&nl), 0);
	pid = spawn(stubborn_vmm, NULL, &rfd);
	ASSERT_GT(pid, 0);
	ASSERT_OK(read_full(rfd, &id, sizeof(id)));
	ASSERT_NE(id, 0ull);
	t0 = now_ms();
	ASSERT_EQ(cnl_kill(&nl, id, 500), 0);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	dt = now_ms() - t0;
	EXPECT_KILLED(status, SIGKILL);
	EXPECT_GE(dt, 450ull);
	expect_no_sandboxes(&nl);

	/* default grace period */
	pid = spawn(stubborn_vmm, NULL, &rfd);
	ASSERT_GT(pid, 0);
	ASSERT_OK(read_full(rfd, &id, sizeof(id)));
	t0 = now_ms();
	ASSERT_EQ(cnl_kill(&nl, id, -1), 0);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	dt = now_ms() - t0;
	EXPECT_KILLED(status, SIGKILL);
	EXPECT_GE(dt, CUBE_KILL_GRACE_MS_DEFAULT - 50ull);
	expect_no_sandboxes(&nl);
	close(rfd);
	cnl_close(&nl);
}

TEST_MAIN()
