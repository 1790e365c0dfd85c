// SPDX-License-Identifier: GPL-2.0
/*
 * cube-agent: the guest's PID 1 and the host's way into the sandbox.
 *
 *   cube-agent                     as PID 1 in the guest: set the guest up,
 *                                  then serve AF_VSOCK port 1024
 *   cube-agent --listen unix:PATH [--root DIR] [--state DIR] [--allow-system]
 *              [--park-timeout MS]
 *   cube-agent --listen vsock:PORT ...
 *                                  natively, for tests
 *
 * Every connection is served by its own process (session.c), which keeps a
 * control socket to this one: through it a session whose connection broke
 * parks its KEEP command, and a new connection asking for that command
 * (ATTACH) is handed over to it.
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

/**
 * struct slot - one session process
 * @pid: the process
 * @ctl: our end of its control socket, -1 once it closed it
 * @keep: its KEEP command, 0: none
 * @parked: @keep is parked, waiting for an ATTACH
 */
struct slot {
	pid_t pid;
	int ctl;
	pid_t keep;
	bool parked;
};

static struct slot sessions[AGENT_MAX_SESSIONS + CUBE_AGENT_MAX_PARKED];
static int nsessions;

static int count_parked(void)
{
	int i, n = 0;

	for (i = 0; i < nsessions; i++)
		n += sessions[i].parked;
	return n;
}

static void reply(struct slot *sl, int result)
{
	struct park_msg pm = { .op = PARK_REPLY, .result = result };

	park_send(sl->ctl, &pm, -1);
}

/* ATTACH from session @sl for the command pm->pid, bringing @fd. */
static void attach(struct slot *sl, const struct park_msg *pm, int fd)
{
	struct park_msg fw = { .op = PARK_ATTACH, .pid = pm->pid, .id = pm->id };
	struct slot *to = NULL;
	int i, err;

	for (i = 0; i < nsessions; i++) {
		struct slot *t = &sessions[i];

		if (t == sl || !t->keep || t->keep != pm->pid || t->ctl < 0)
			continue;
		if (!to || t->parked)
			to = t;
	}
	if (!to) {
		reply(sl, -ESRCH);
		return;
	}
	if (!to->parked) {
		reply(sl, -EBUSY);
		return;
	}
	err = park_send(to->ctl, &fw, fd);
	if (!err)
		to->parked = false;
	reply(sl, err);
}

/* A message on the control socket of session @sl. */
static void control(struct slot *sl)
{
	struct park_msg pm;
	int fd, err;

	err = park_recv(sl->ctl, &pm, &fd);
	if (err == -EAGAIN)
		return;
	if (err) {
		/* the session is ending: reap() forgets it */
		close(sl->ctl);
		sl->ctl = -1;
		sl->parked = false;
		return;
	}
	switch (pm.op) {
	case PARK_KEEP:
		sl->keep = pm.pid > 0 ? pm.pid : 0;
		sl->parked = false;
		break;
	case PARK_PARK:
		if (!sl->keep || pm.pid != sl->keep)
			reply(sl, -EINVAL);
		else if (count_parked() >= CUBE_AGENT_MAX_PARKED)
			reply(sl, -ENOSPC);
		else {
			sl->parked = true;
			reply(sl, 0);
		}
		break;
	case PARK_ATTACH:
		if (fd < 0)
			reply(sl, -EINVAL);
		else
			attach(sl, &pm, fd);
		break;
	default:
		reply(sl, -EINVAL);
	}
	if (fd >= 0)
		close(fd);
}

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
			if (sessions[i].pid == pid) {
				if (sessions[i].ctl >= 0)
					close(sessions[i].ctl);
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
	int ctl[2], i;
	pid_t pid;

	if (nsessions - count_parked() >= AGENT_MAX_SESSIONS ||
	    nsessions >= (int)(sizeof(sessions) / sizeof(sessions[0]))) {
		close(cfd);
		agent_log("refusing a connection: %d sessions open", nsessions);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
		agent_log("socketpair: %s", strerror(errno));
		close(cfd);
		return;
	}
	pid = fork();
	if (pid < 0) {
		agent_log("fork: %s", strerror(errno));
		close(cfd);
		close(ctl[0]);
		close(ctl[1]);
		return;
	}
	if (pid) {
		fcntl(ctl[0], F_SETFL, O_NONBLOCK);
		sessions[nsessions++] = (struct slot){ .pid = pid, .ctl = ctl[0] };
		close(ctl[1]);
		close(cfd);
		return;
	}
	close(lfd);
	close(sfd);
	close(ctl[0]);
	for (i = 0; i < nsessions; i++) {
		if (sessions[i].ctl >= 0)
			close(sessions[i].ctl);
	}
	if (!cfg->pid1)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	_exit(session_run(cfd, ctl[1], cfg) ? 1 : 0);
}

static int serve(const struct agent_config *cfg)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2 + sizeof(sessions) / sizeof(sessions[0])];
	struct slot *sl;
	sigset_t mask;
	int lfd, sfd, cfd, i, n;

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
		for (i = 0; i < nsessions; i++)
			pfd[2 + i] = (struct pollfd){ .fd = sessions[i].ctl,
						      .events = POLLIN };
		n = 2 + nsessions;
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			agent_log("poll: %s", strerror(errno));
			break;
		}
		/* before reap() reorders the slots */
		for (i = 0; i < n - 2 && i < nsessions; i++) {
			sl = &sessions[i];
			if (pfd[2 + i].revents && sl->ctl == pfd[2 + i].fd)
				control(sl);
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
		"usage: %s [--listen unix:PATH|vsock:PORT] [--root DIR] [--state DIR] [--allow-system] [--park-timeout MS]\n",
		prog);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "root", required_argument, NULL, 'r' },
		{ "state", required_argument, NULL, 's' },
		{ "allow-system", no_argument, NULL, 'a' },
		{ "park-timeout", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char vsock_default[32];
	struct agent_config cfg = {
		.root = "/", .rootfd = -1, .ready = true,
		.park_timeout_ms = CUBE_AGENT_PARK_TIMEOUT_MS,
		.disk_fd = -1,
	};
	unsigned long v;
	char *end;
	int opt, err;

	cfg.pid1 = getpid() == 1;
	while ((opt = getopt_long(argc, argv, "l:r:s:ap:h", opts, NULL)) != -1) {
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
		case 'p':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !optarg[0] || !v ||
			    v > CUBE_AGENT_MAX_TIMEOUT_MS) {
				fprintf(stderr, "%s: bad --park-timeout %s\n",
					argv[0], optarg);
				if (!cfg.pid1)
					return 2;
				break;
			}
			cfg.park_timeout_ms = v;
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
