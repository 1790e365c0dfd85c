// SPDX-License-Identifier: GPL-2.0
/*
 * control_unit: cube-vmm's control socket (vmm/control.c) and the
 * descriptors a request may carry (SCM_RIGHTS, up to CONTROL_MAX_FDS): a
 * jailed VMM's snapshot files come that way.  The handler gets those of
 * its own request only, every one is closed once the request is answered,
 * and a client that sends too many, sends them twice for one line, or goes
 * away before its line ends, leaks nothing.  Native.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "control.h"
#include "cube_test.h"

/* what the handler saw, per request */
static struct {
	char req[64];
	int fd, nfds;
	struct stat st;		/* the first passed fd's, while the handler ran */
} seen[8];
static int nseen;

static void handler(void *arg, char *req, const int *fds, int nfds,
		    char *reply, size_t len)
{
	if (nseen < 8) {
		snprintf(seen[nseen].req, sizeof(seen[nseen].req), "%s", req);
		seen[nseen].nfds = nfds;
		seen[nseen].fd = nfds ? fds[0] : -1;
		if (nfds)
			fstat(fds[0], &seen[nseen].st);
		nseen++;
	}
	snprintf(reply, len, "OK %s fds=%d", req, nfds);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

FIXTURE(ctl) {
	struct control c;
	char path[64];
	int client;
	int served;	/* the server side of client */
};

FIXTURE_SETUP(ctl)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int i;

	nseen = 0;
	snprintf(self->path, sizeof(self->path), "/tmp/control_unit.%d",
		 getpid());
	ASSERT_EQ(control_open(&self->c, self->path), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", self->path);
	self->client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(self->client, 0);
	ASSERT_EQ(connect(self->client, (struct sockaddr *)&sa, sizeof(sa)), 0);
	control_event(&self->c, self->c.listen_fd, handler, NULL);
	self->served = -1;
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (self->c.clients[i].fd >= 0)
			self->served = self->c.clients[i].fd;
	ASSERT_GE(self->served, 0);
}

FIXTURE_TEARDOWN(ctl)
{
	close(self->client);
	control_close(&self->c);
}

/* @len bytes of @msg with @nfds descriptors from @fds, in one sendmsg */
static ssize_t send_fds(int sock, const char *msg, size_t len, const int *fds,
			int nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} u;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL);
}

static void serve(struct ct_fx_ctl *self)
{
	control_event(&self->c, self->served, handler, NULL);
}

static int reply_line(int sock, char *buf, size_t len)
{
	ssize_t n = read(sock, buf, len - 1);

	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

TEST_F(ctl, a_request_without_a_descriptor_gets_none)
{
	char buf[128];

	ASSERT_EQ(write(self->client, "status\n", 7), 7);
	serve(self);
	ASSERT_EQ(nseen, 1);
	EXPECT_STREQ(seen[0].req, "status");
	EXPECT_EQ(seen[0].fd, -1);
	ASSERT_GT(reply_line(self->client, buf, sizeof(buf)), 0);
	EXPECT_STREQ(buf, "OK status fds=0\n");
}

TEST_F(ctl, the_passed_files_reach_their_request_then_are_closed)
{
	struct stat want;
	int fds[3], before, i;
	char buf[128];

	fds[0] = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_GE(fds[0], 0);
	ASSERT_EQ(pipe2(fds + 1, O_CLOEXEC), 0);
	ASSERT_EQ(fstat(fds[0], &want), 0);
	before = open_fds();
	/* two requests in one message: the fds are the first's */
	ASSERT_EQ(send_fds(self->client, "snapshot\nstatus\n", 16, fds, 3), 16);
	serve(self);
	ASSERT_EQ(nseen, 2);
	EXPECT_STREQ(seen[0].req, "snapshot");
	EXPECT_EQ(seen[0].nfds, 3);
	ASSERT_GE(seen[0].fd, 0);
	EXPECT_EQ(seen[0].st.st_ino, want.st_ino);
	EXPECT_EQ(seen[0].st.st_dev, want.st_dev);
	EXPECT_EQ(seen[1].nfds, 0);
	/* answered: the VMM holds them no more */
	EXPECT_ERRNO(fcntl(seen[0].fd, F_GETFD), EBADF);
	EXPECT_EQ(open_fds(), before);
	ASSERT_GT(reply_line(self->client, buf, sizeof(buf)), 0);
	EXPECT_TRUE(strstr(buf, "OK snapshot fds=3\n") == buf);
	for (i = 0; i < 3; i++)
		close(fds[i]);
}

TEST_F(ctl, a_descriptor_waits_for_the_end_of_its_line)
{
	int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ASSERT_GE(dir, 0);
	ASSERT_EQ(send_fds(self->client, "snap", 4, &dir, 1), 4);
	serve(self);
	EXPECT_EQ(nseen, 0);
	ASSERT_EQ(write(self->client, "shot\n", 5), 5);
	serve(self);
	ASSERT_EQ(nseen, 1);
	EXPECT_STREQ(seen[0].req, "snapshot");
	EXPECT_GE(seen[0].fd, 0);
	close(dir);
}

/* @nfds copies of a pipe's ends in one message, or @nfds in each of two */
static void refused(struct ct_fx_ctl *self, int nfds, bool twice)
{
	int p[2], fds[8], before, i;
	char buf[128];

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	for (i = 0; i < nfds; i++)
		fds[i] = p[i % 2];
	before = open_fds();
	if (twice)
		ASSERT_EQ(send_fds(self->client, "snap", 4, fds, nfds), 4);
	if (twice)
		serve(self);
	ASSERT_EQ(send_fds(self->client, "shot\n", 5, fds, nfds), 5);
	serve(self);
	EXPECT_EQ(nseen, 0);
	ASSERT_GT(reply_line(self->client, buf, sizeof(buf)), 0);
	EXPECT_STREQ(buf, "ERR at most 3 descriptors, with one request\n");
	/* dropped: its end of the socket and every fd passed closed */
	EXPECT_EQ(reply_line(self->client, buf, sizeof(buf)), 0);
	EXPECT_EQ(open_fds(), before - 1);
	close(p[0]);
	close(p[1]);
}

TEST_F(ctl, four_descriptors_are_refused_and_none_is_kept)
{
	refused(self, 4, false);
}

TEST_F(ctl, descriptors_twice_for_one_line_are_refused_and_none_is_kept)
{
	refused(self, 2, true);
}

TEST_F(ctl, a_client_gone_before_its_line_ends_leaks_nothing)
{
	int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int before;

	ASSERT_GE(dir, 0);
	before = open_fds();
	ASSERT_EQ(send_fds(self->client, "snapsh", 6, &dir, 1), 6);
	serve(self);
	close(self->client);
	self->client = open("/dev/null", O_RDONLY | O_CLOEXEC);
	serve(self);
	EXPECT_EQ(nseen, 0);
	/* the server's end and the passed fd gone; /dev/null in the client's place */
	EXPECT_EQ(open_fds(), before - 1);
	close(dir);
}

TEST_MAIN()
