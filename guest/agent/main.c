// SPDX-License-Identifier: GPL-2.0
/*
 * cube-agent: the guest's PID 1 and the host's way into the sandbox.
 *
 *   cube-agent                     as PID 1 in the guest: set the guest up,
 *                                  then serve AF_VSOCK port 1024
 *   cube-agent --listen unix:PATH [--root DIR] [--state DIR] [--allow-system]
 *   cube-agent --listen vsock:PORT ...
 *                                  natively, for tests
 *
 * Every connection is served by its own process (session.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

static pid_t sessions[AGENT_MAX_SESSIONS];
static int nsessions;

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int listen_vsock(const char *port)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
	};
	char *end;
	unsigned long p;
	int fd;

	errno = 0;
	p = strtoul(port, &end, 10);
	if (errno || *end || !port[0] || p > 0xffffffffUL)
		return -EINVAL;
	sa.svm_port = p;
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int open_listener(const char *spec)
{
	if (!strncmp(spec, "unix:", 5))
		return listen_unix(spec + 5);
	if (!strncmp(spec, "vsock:", 6))
		return listen_vsock(spec + 6);
	return -EINVAL;
}

static void reap(void)
{
	pid_t pid;
	int i;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
		for (i = 0; i < nsessions; i++) {
			if (sessions[i] == pid) {
				sessions[i] = sessions[--nsessions];
				break;
			}
		}
	}
}

static void start_session(int lfd, int sfd, int cfd,
			  const struct agent_config *cfg)
{
	sigset_t none;
	pid_t pid;

	if (nsessions >= AGENT_MAX_SESSIONS) {
		close(cfd);
		agent_log("refusing a connection: %d sessions open", nsessions);
		return;
	}
	pid = fork();
	if (pid < 0) {
		agent_log("fork: %s", strerror(errno));
		close(cfd);
		return;
	}
	if (pid) {
		sessions[nsessions++] = pid;
		close(cfd);
		return;
	}
	close(lfd);
	close(sfd);
	if (!cfg->pid1)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	_exit(session_run(cfd, cfg) ? 1 : 0);
}

static int serve(const struct agent_config *cfg)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	sigset_t mask;
	int lfd, sfd, cfd;

	lfd = open_listener(cfg->listen);
	if (lfd < 0) {
		agent_log("cannot listen on %s: %s", cfg->listen, strerror(-lfd));
		return lfd;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	if (!cfg->pid1) {
		sigaddset(&mask, SIGTERM);
		sigaddset(&mask, SIGINT);
	}
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		agent_log("signalfd: %s", strerror(errno));
		close(lfd);
		return -errno;
	}
	agent_log("ready on %s", cfg->listen);
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			agent_log("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents) {
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGCHLD)
					goto out;
			}
			reap();
		}
		if (pfd[0].revents) {
			cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (cfd >= 0)
				start_session(lfd, sfd, cfd, cfg);
		}
	}
out:
	close(lfd);
	close(sfd);
	if (!strncmp(cfg->listen, "unix:", 5))
		unlink(cfg->listen + 5);
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--listen unix:PATH|vsock:PORT] [--root DIR] [--state DIR] [--allow-system]\n",
		prog);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "root", required_argument, NULL, 'r' },
		{ "state", required_argument, NULL, 's' },
		{ "allow-system", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char vsock_default[32];
	struct agent_config cfg = { .root = "/", .rootfd = -1, .ready = true };
	int opt, err;

	cfg.pid1 = getpid() == 1;
	while ((opt = getopt_long(argc, argv, "l:r:s:ah", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			cfg.listen = optarg;
			break;
		case 'r':
			cfg.root = optarg;
			break;
		case 's':
			cfg.state = optarg;
			break;
		case 'a':
			cfg.allow_system = true;
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			if (!cfg.pid1) {
				usage(argv[0]);
				return 2;
			}
		}
	}
	signal(SIGPIPE, SIG_IGN);
	umask(0);
	if (cfg.pid1) {
		cfg.allow_system = true;
		err = init_guest(&cfg);
		if (err)
			cfg.ready = false;
	}
	if (!cfg.listen) {
		snprintf(vsock_default, sizeof(vsock_default), "vsock:%u",
			 CUBE_AGENT_VSOCK_PORT);
		cfg.listen = vsock_default;
	}
	cfg.rootfd = open(cfg.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cfg.rootfd < 0) {
		agent_log("root %s: %s", cfg.root, strerror(errno));
		err = -errno;
	} else {
		err = serve(&cfg);
	}
	if (cfg.pid1) {
		agent_log("stopping the guest");
		sync();
		reboot(RB_POWER_OFF);
	}
	return err ? 1 : 0;
}
