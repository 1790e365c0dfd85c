// SPDX-License-Identifier: GPL-2.0
/*
 * cube-shim: the supervisor of one sandbox.  Started by cubectl and cubed
 * (lib/cube_runtime.c), never by hand.
 *
 * It registers the sandbox with cube.ko (and so owns its sandbox fd), runs
 * cube-vmm as its child, waits until the guest agent answers, gives the
 * guest its identity and fresh entropy, then reports the id on the report
 * fd.  From then on it watches the sandbox fd and the VMM: a kill request
 * stops the VMM; the VMM's exit is recorded as the sandbox's exit reason;
 * then the run directory goes and the shim exits, which closes the fd and
 * frees the module's sandbox.  If the shim itself is killed, the VMM dies
 * with it (PR_SET_PDEATHSIG), so nothing outlives it.
 *
 * Networking (--net-policy, for templates with a network device): before
 * the VMM starts, cube-shim-net (a program of its own, so that the shim
 * maps neither libbpf nor libnftables for its sandbox's life) makes the
 * sandbox's network namespace, tap and egress policy (lib/cube_net.c) and
 * hands the namespace and the BPF links to the module, which from then on
 * owns their lifetime; the tap's fd comes back to the shim, and goes to
 * cube-vmm (--net-tap-fd).  The VMM itself gets no network capability.
 * Policy "none" on such a template gives the device a tap alone in an empty
 * namespace, made here: frames the guest sends go nowhere and nothing
 * arrives.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <linux/if_tun.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/cube.h>

#include "agent_client.h"
#include "cube_audit.h"
#include "cube_checkpoint.h"
#include "cube_net.h"
#include "cube_runtime.h"
#include "cube_sandbox_dir.h"
#include "cube_sandbox_disk.h"
#include "cube_vsock_broker.h"
#include "nl_client.h"

/* the VMM's inherited fds, after stdio (start_vmm()) */
#define VMM_SANDBOX_FD	3
#define VMM_TAP_FD	4
#define VMM_DISK_FD	5
#define VMM_BROKER_FD	6	/* guest-initiated vsock streams */
#define VMM_PARENT_FD	7	/* our life, seen from the VMM (--parent-fd) */

struct shim {
	char template_name[CUBE_NAME_MAX];
	unsigned int vcpus, memory_mb, boot_timeout;
	const char *pool;
	const char *own_snapshot;
	unsigned int end_after;		/* --end-after: seconds, 0 for none */
	struct cube_sandbox_label labels[CUBE_LABELS_MAX];
	unsigned int nlabels;
	int report_fd;
	bool has_net;			/* --net-policy given */
	const char *policy_arg;		/* as given, for cube-shim-net */
	bool no_merge;			/* --no-merge: share no page */
	struct cube_net_policy policy;
	struct cube_net net;
	char **vmm_argv;
	int vmm_argc;
	uint64_t disk_want;		/* --disk: bytes, 0 for the snapshot's */
	uint64_t disk_size;		/* the disk it got, 0: none */
	uint64_t disk_snap_size;	/* the snapshot's disk */
	int disk_fd;

	int sbfd;
	int sfd;			/* signalfd: TERM, INT, HUP, CHLD */
	uint64_t id;
	char dir[PATH_MAX];
	int jail_lock_fd;		/* holds the jail user's slot */
	int life_lock_fd;		/* the run directory's shim.lock, held */
	int parent_pipe;		/* held for the VMM to see us die, -1 */
	bool vmm_cgroup;		/* its cgroup is ours to remove */
	unsigned int jail_id;		/* the VMM's uid and gid */
	pid_t vmm;
	bool kill_requested;
	struct cube_vsock_broker broker;	/* connects for the VMM */
};

static void report(struct shim *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void report(struct shim *s, int err, const char *fmt, ...)
{
	char msg[CUBE_ERR_MAX], line[CUBE_ERR_MAX + 32];
	va_list ap;
	int n;

	if (s->report_fd < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err)
		n = snprintf(line, sizeof(line), "ERR %d %s\n", err, msg);
	else
		n = snprintf(line, sizeof(line), "OK %s\n", msg);
	if (write(s->report_fd, line, n) != n)
		s->kill_requested = true;	/* nobody is waiting for us */
	close(s->report_fd);
	s->report_fd = -1;
}

static int set_state(struct shim *s, uint32_t state, uint32_t reason)
{
	struct cube_sandbox_state_arg a = {
		.state = state, .exit_reason = reason,
	};

	return ioctl(s->sbfd, CUBE_IOC_SANDBOX_SET_STATE, &a) ? -errno : 0;
}

static int parse_args(struct shim *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "template", required_argument, NULL, 't' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "memory", required_argument, NULL, 'm' },
		{ "boot-timeout", required_argument, NULL, 'b' },
		{ "pool", required_argument, NULL, 'p' },
		{ "own-snapshot", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'l' },
		{ "report-fd", required_argument, NULL, 'r' },
		{ "net-policy", required_argument, NULL, 'n' },
		{ "end-after", required_argument, NULL, 'e' },
		{ "disk", required_argument, NULL, 'd' },
		{ "no-merge", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	char *end, *eq;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!cube_name_valid(optarg))
				return -EINVAL;
			snprintf(s->template_name, sizeof(s->template_name),
				 "%s", optarg);
			break;
		case 'c':
			s->vcpus = strtoul(optarg, &end, 10);
			if (*end || !s->vcpus || s->vcpus > CUBE_VCPUS_MAX)
				return -EINVAL;
			break;
		case 'm':
			s->memory_mb = strtoul(optarg, &end, 10);
			if (*end || !s->memory_mb || s->memory_mb > 1 << 20)
				return -EINVAL;
			break;
		case 'b':
			s->boot_timeout = strtoul(optarg, &end, 10);
			if (*end || !s->boot_timeout)
				return -EINVAL;
			break;
		case 'p':
			if (!cube_name_valid(optarg))
				return -EINVAL;
			s->pool = optarg;
			break;
		case 'o':
			if (optarg[0] != '/')
				return -EINVAL;
			s->own_snapshot = optarg;
			break;
		case 'l':
			eq = strchr(optarg, '=');
			if (!eq || s->nlabels >= CUBE_LABELS_MAX ||
			    eq - optarg >= CUBE_NAME_MAX ||
			    strlen(eq + 1) >= CUBE_LABEL_VALUE_MAX)
				return -EINVAL;
			memcpy(s->labels[s->nlabels].key, optarg, eq - optarg);
			strcpy(s->labels[s->nlabels].value, eq + 1);
			s->nlabels++;
			break;
		case 'r':
			s->report_fd = strtol(optarg, &end, 10);
			if (*end || s->report_fd < 0)
				return -EINVAL;
			break;
		case 'n': {
			char err[CUBE_NET_ERR_MAX];

			if (cube_net_policy_decode(optarg, &s->policy, err))
				return -EINVAL;
			s->policy_arg = optarg;
			s->has_net = true;
			break;
		}
		case 'd':
			errno = 0;
			s->disk_want = strtoull(optarg, &end, 10);
			if (*end || errno || s->disk_want < CUBE_SANDBOX_DISK_MIN ||
			    s->disk_want > CUBE_SANDBOX_DISK_MAX ||
			    s->disk_want % 4096)
				return -EINVAL;
			break;
		case 'M':
			s->no_merge = true;
			break;
		case 'e':
			s->end_after = strtoul(optarg, &end, 10);
			if (*end || !s->end_after || s->end_after > 86400)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	if (!s->template_name[0] || optind >= argc)
		return -EINVAL;
	/* a warm sandbox's end is set by whoever takes it */
	if (s->end_after && s->pool)
		return -EINVAL;
	s->vmm_argv = argv + optind;
	s->vmm_argc = argc - optind;
	return 0;
}

static int register_sandbox(struct shim *s)
{
	struct cube_sandbox_create c = { 0 };
	struct cube_sandbox_limits lim = { 0 };
	unsigned int i;
	int dev;

	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		int e = errno;

		report(s, e == ENOENT ? ENOPKG : e, "%s",
		       e == ENOENT ? "cube.ko is not loaded (no /dev/cube)" :
		       e == EACCES || e == EPERM ? "permission denied on /dev/cube" :
		       strerror(e));
		return -e;
	}
	s->sbfd = ioctl(dev, CUBE_IOC_SANDBOX_CREATE, &c);
	close(dev);
	if (s->sbfd < 0) {
		report(s, errno, "cannot create a sandbox: %s", strerror(errno));
		return -errno;
	}
	s->id = c.id;
	lim.vcpus = s->vcpus;
	lim.memory_bytes = (uint64_t)s->memory_mb << 20;
	lim.owner_uid = getuid();
	snprintf(lim.template_name, sizeof(lim.template_name), "%s",
		 s->template_name);
	if (ioctl(s->sbfd, CUBE_IOC_SANDBOX_SET_LIMITS, &lim)) {
		report(s, errno, "cannot set the sandbox's limits: %s",
		       strerror(errno));
		return -errno;
	}
	for (i = 0; i < s->nlabels; i++) {
		if (ioctl(s->sbfd, CUBE_IOC_SANDBOX_SET_LABEL, &s->labels[i])) {
			report(s, errno, "bad label '%s': %s", s->labels[i].key,
			       strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/*
 * Policy "none" on a template with a device: tap0 alone, down, in a new
 * namespace of its own.  Made in a thread so the shim's namespace never
 * changes.
 */
struct bare_tap {
	int netns_fd, tap_fd, err;
};

static void *bare_tap_thread(void *arg)
{
	struct bare_tap *b = arg;
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };

	if (unshare(CLONE_NEWNET)) {
		b->err = -errno;
		return NULL;
	}
	b->netns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	b->tap_fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "tap0");
	if (b->netns_fd < 0 || b->tap_fd < 0 ||
	    ioctl(b->tap_fd, TUNSETIFF, &ifr))
		b->err = -errno;
	return NULL;
}

static int bare_tap(struct cube_net *n, char *err)
{
	struct bare_tap b = { .netns_fd = -1, .tap_fd = -1 };
	pthread_t t;

	if (pthread_create(&t, NULL, bare_tap_thread, &b))
		return -EAGAIN;
	pthread_join(t, NULL);
	if (b.err) {
		snprintf(err, CUBE_NET_ERR_MAX, "cannot make a tap: %s",
			 strerror(-b.err));
		if (b.netns_fd >= 0)
			close(b.netns_fd);
		if (b.tap_fd >= 0)
			close(b.tap_fd);
		return b.err;
	}
	n->netns_fd = b.netns_fd;
	n->tap_fd = b.tap_fd;
	return 0;
}

/*
 * Runs cube-shim-net (its file says why a program of its own) with
 * @argv, the sandbox fd as its fd 3 and, when @sock >= 0, @sock as its fd
 * 4.  It dies with us.  Return: its pid, or -errno.
 */
static pid_t spawn_net_helper(struct shim *s, char **argv, int sock)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	char path[PATH_MAX];
	pid_t pid, self;
	sigset_t none;

	if (cube_find_helper("cube-shim-net", "CUBE_SHIM_NET", path,
			     sizeof(path)))
		return -ENOENT;
	argv[0] = path;
	sigemptyset(&none);
	self = getpid();
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		/* between fork and exec: async-signal-safe calls only */
		int sb, so = -1;

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != self)
			_exit(127);
		/*
		 * Above 4 first: either may be 3 or 4 already, where dup2()
		 * would overwrite the other or keep its close-on-exec.
		 */
		sb = fcntl(s->sbfd, F_DUPFD_CLOEXEC, 5);
		if (sock >= 0)
			so = fcntl(sock, F_DUPFD_CLOEXEC, 5);
		if (sb < 0 || dup2(sb, 3) < 0 ||
		    (sock >= 0 && (so < 0 || dup2(so, 4) < 0)))
			_exit(127);
		close_range(sock >= 0 ? 5 : 4, ~0U, 0);
		/* what the shim ignores or blocks, the helper gets as usual */
		sigaction(SIGPIPE, &dfl, NULL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

/* Waits for cube-shim-net @pid; its exit status, or -1 when killed. */
static int wait_net_helper(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * cube-shim-net create: the network is built, and its namespace and BPF
 * links handed to cube.ko, in a process of its own; the tap comes back.
 */
static int net_from_helper(struct shim *s, char *err)
{
	char idstr[24], msg[CUBE_NET_ERR_MAX + 32], *end;
	char *argv[] = { NULL, "create", idstr, (char *)s->policy_arg, NULL };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) - 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	int sv[2], tap = -1, nfds = 0, st;
	struct cmsghdr *c;
	long code;
	ssize_t n;
	pid_t pid;

	snprintf(idstr, sizeof(idstr), "%llu", (unsigned long long)s->id);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = spawn_net_helper(s, argv, sv[1]);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		snprintf(err, CUBE_NET_ERR_MAX, "cannot run cube-shim-net: %s",
			 strerror(-pid));
		return pid;
	}
	do
		n = recvmsg(sv[0], &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	close(sv[0]);
	st = wait_net_helper(pid);
	/* every fd that came is ours to close, whatever else came with it */
	for (c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
		size_t i, k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (!nfds++)
				tap = fd;
			else
				close(fd);
		}
	}
	msg[n > 0 ? n : 0] = '\0';
	if (!st && nfds == 1 && !strcmp(msg, "OK") &&
	    !(m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
		s->net.tap_fd = tap;
		return 0;
	}
	if (tap >= 0)
		close(tap);
	if (!strncmp(msg, "ERR ", 4)) {
		errno = 0;
		code = strtol(msg + 4, &end, 10);
		if (!errno && code > 0 && code < 4096 && (*end == ' ' || !*end)) {
			snprintf(err, CUBE_NET_ERR_MAX, "%s",
				 *end ? end + 1 : strerror(code));
			return -code;
		}
	}
	if (st == 127)
		snprintf(err, CUBE_NET_ERR_MAX, "cube-shim-net could not start");
	else if (st < 0)
		snprintf(err, CUBE_NET_ERR_MAX,
			 "cube-shim-net was killed without an answer");
	else
		snprintf(err, CUBE_NET_ERR_MAX,
			 "cube-shim-net ended without an answer (status %d)", st);
	return -EIO;
}

/* The sandbox's network, handed to the module (which owns it from then). */
static int setup_net(struct shim *s)
{
	char err[CUBE_NET_ERR_MAX] = "";
	struct cube_fd_arg a = { 0 };
	int ret;

	if (!s->has_net)
		return 0;
	/* cube-shim-net hands its namespace and links to cube.ko itself */
	if (s->policy.mode != CUBE_NET_NONE)
		ret = net_from_helper(s, err);
	else
		ret = bare_tap(&s->net, err);
	if (ret) {
		report(s, -ret, "cannot set up the sandbox's network: %s",
		       err[0] ? err : strerror(-ret));
		return ret;
	}
	if (s->net.netns_fd < 0)
		return 0;
	a.fd = s->net.netns_fd;
	if (ioctl(s->sbfd, CUBE_IOC_SANDBOX_SET_NETNS, &a)) {
		ret = -errno;
		report(s, -ret, "cannot hand the sandbox's network to cube.ko: %s",
		       strerror(-ret));
		return ret;
	}
	/* the module holds the namespace now; the VMM gets the tap */
	close(s->net.netns_fd);
	s->net.netns_fd = -1;
	return 0;
}

/*
 * The run directory with its checkpoint lock, held locked for the shim's
 * life (lib/cube_sandbox_dir.h); what dead shims left goes first.
 */
static int make_dir(struct shim *s)
{
	char dir[sizeof(s->dir)], err[CUBE_ERR_MAX];
	int fd;

	fd = cube_sandbox_dir_make(s->id, dir, sizeof(dir), err);
	if (fd < 0) {
		report(s, -fd, "cannot create the run directory: %s", err);
		return fd;
	}
	s->life_lock_fd = fd;
	/* s->dir only once it is ours: remove_dir() removes what it names */
	memcpy(s->dir, dir, sizeof(dir));
	return 0;
}

/*
 * The behaviour log's "network" line at a sandbox's end: what its egress
 * program passed and dropped, by reason (cube-shim-net audit).  A sandbox
 * without a program (none, or policy "none") has no line.
 */
static void audit_network(struct shim *s)
{
	char idstr[24];
	char *argv[] = { NULL, "audit", idstr, NULL };
	pid_t pid;

	if (!s->has_net || s->policy.mode == CUBE_NET_NONE)
		return;
	snprintf(idstr, sizeof(idstr), "%llu", (unsigned long long)s->id);
	pid = spawn_net_helper(s, argv, -1);
	if (pid > 0)
		wait_net_helper(pid);
}

/*
 * The uid the VMM runs as: its jail's, but ours under CUBE_NO_JAIL=1,
 * which makes cube-vmm ignore --jail-user (see vmm/main.c).
 */
static uid_t vmm_uid(const struct shim *s)
{
	const char *nj = getenv("CUBE_NO_JAIL");

	if ((nj && !strcmp(nj, "1")) || !s->jail_id)
		return geteuid();
	return s->jail_id;
}

static void remove_dir(struct shim *s)
{
	char err[CUBE_ERR_MAX];

	if (s->dir[0])
		cube_sandbox_dir_remove(s->dir, s->id, vmm_uid(s), err,
					sizeof(err));
	/* the directory's lock, last: a sweep would remove it no sooner */
	if (s->life_lock_fd >= 0)
		close(s->life_lock_fd);
}

/*
 * The end time (--end-after), in the run directory's e2b.json (see
 * e2b/cube_backend.h), written before the sandbox is marked running:
 * cubed's expiry, which only looks at running sandboxes, never sees this
 * one without its end, and nobody else writes the file before then.
 */
static int write_end(struct shim *s)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16], buf[64];
	int fd, n, ret = 0;

	if (!s->end_after)
		return 0;
	snprintf(path, sizeof(path), "%s/e2b.json", s->dir);
	snprintf(tmp, sizeof(tmp), "%s/e2b.json.tmp", s->dir);
	n = snprintf(buf, sizeof(buf), "{\"end_at\":%lld}",
		     (long long)time(NULL) + s->end_after);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
	} else {
		if (write(fd, buf, n) != n)
			ret = -EIO;
		if (close(fd) && !ret)
			ret = -errno;
		if (!ret && rename(tmp, path))
			ret = -errno;
		if (ret)
			unlink(tmp);
	}
	if (ret)
		report(s, -ret, "cannot record the sandbox's end time: %s",
		       strerror(-ret));
	return ret;
}

/* The directory the VMM restores from: its --restore argument. */
static const char *restore_dir(struct shim *s)
{
	int i;

	for (i = 0; i + 1 < s->vmm_argc; i++)
		if (!strcmp(s->vmm_argv[i], "--restore"))
			return s->vmm_argv[i + 1];
	return NULL;
}

/*
 * A snapshot with a disk (template, fork or paused sandbox) gives the
 * sandbox a copy of it (lib/cube_sandbox_disk.h), which the VMM gets as an
 * inherited descriptor and nobody else opens.
 */
static int setup_disk(struct shim *s)
{
	const char *snap = restore_dir(s);
	char path[PATH_MAX + 16], err[CUBE_ERR_MAX] = "";
	struct stat st;
	int fd;

	if (!snap) {
		report(s, EINVAL, "no snapshot to restore");
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/" CUBE_DISK_FILE, snap);
	if (lstat(path, &st)) {
		if (!s->disk_want)
			return 0;	/* memory-only: the template has no disk */
		report(s, EINVAL, "the template has no writable disk");
		return -EINVAL;
	}
	s->disk_snap_size = st.st_size;
	fd = cube_sandbox_disk_create(s->id, snap, s->disk_want, &s->disk_size,
				      err);
	if (fd < 0) {
		report(s, -fd, "%s", err[0] ? err : strerror(-fd));
		return fd;
	}
	s->disk_fd = fd;
	return 0;
}

/*
 * The VMM's own uid and gid, the same number, one of the range
 * CUBE_JAIL_IDS ("BASE:COUNT", default CUBE_JAIL_ID_BASE and
 * CUBE_JAIL_ID_COUNT): slot N is taken by an open-file-description lock
 * on byte N of the run directory's jail-ids.lock, held by this shim as
 * long as it lives, so no two live sandboxes share one, and a shim that
 * dies gives its slot back with it.  The first slot tried is the
 * sandbox id's.
 */
static int take_jail_id(struct shim *s)
{
	unsigned long long base = CUBE_JAIL_ID_BASE, count = CUBE_JAIL_ID_COUNT;
	const char *env = getenv("CUBE_JAIL_IDS");
	char path[PATH_MAX], end;
	unsigned long long i;
	int fd, e = EAGAIN;

	if (env && (sscanf(env, "%llu:%llu%c", &base, &count, &end) != 2 ||
		    !base || !count || base + count > UINT32_MAX)) {
		report(s, EINVAL, "CUBE_JAIL_IDS=%s: want BASE:COUNT, ids from 1 to 2^32 - 2",
		       env);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/jail-ids.lock", cube_run_dir());
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		e = errno;
		report(s, e, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	for (i = 0; i < count; i++) {
		struct flock fl = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET,
			.l_start = (s->id + i) % count, .l_len = 1,
		};

		if (!fcntl(fd, F_OFD_SETLK, &fl)) {
			s->jail_lock_fd = fd;
			s->jail_id = base + fl.l_start;
			return 0;
		}
		if (errno != EAGAIN && errno != EACCES) {
			e = errno;
			break;
		}
	}
	report(s, e, "no free jail uid in %llu..%llu (CUBE_JAIL_IDS): %s",
	       base, base + count - 1, strerror(e));
	close(fd);
	return -e;
}

/* the arguments start_vmm() adds to the template's: thirteen pairs */
#define SHIM_VMM_ARGS	26

/*
 * A sandbox gives back the private pages that hold its snapshot's contents
 * again (pages made ahead for writes that did not come, words written
 * back as they were) once it settles: this many seconds after its restore
 * or its last vsock connection that it stopped growing.  A template's own
 * --trim-every wins.
 */
#define SHIM_TRIM_EVERY	"10"

/*
 * Each trim also shares the pages the sandbox holds with the same bytes
 * as other sandboxes of its template started by the same user (cube.ko's
 * merge group: the user's uid + 1), unless it was started with --no-merge
 * or the template's own arguments name a group.  A group is one trust
 * domain: a sandbox can tell by timing whether another of its group holds
 * given bytes at an offset.
 */
static void merge_group_arg(char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long)getuid() + 1);
}

static bool has_arg(char **argv, int argc, const char *name)
{
	size_t len = strlen(name);
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], name, len) &&
		    (argv[i][len] == '\0' || argv[i][len] == '='))
			return true;
	return false;
}

static int start_vmm(struct shim *s)
{
	char vsock[PATH_MAX + 8], control[PATH_MAX + 8], console[PATH_MAX + 16];
	char name[32], tapfd[16], sbfd[16], diskfd[16], cpdir[PATH_MAX + 16];
	char jail_user[32], brokerfd[16], group[24], parentfd[16];
	int i, n = 0, broker = -1, pp[2] = { -1, -1 }, ret;
	bool jailed = vmm_uid(s) != geteuid();
	char **argv;

	snprintf(vsock, sizeof(vsock), "%s/vsock", s->dir);
	snprintf(control, sizeof(control), "%s/control", s->dir);
	snprintf(console, sizeof(console), "%s/console.log", s->dir);
	snprintf(name, sizeof(name), "cube-%llu", (unsigned long long)s->id);
	/*
	 * The memory is a clone of the module's: checkpoints can be taken.
	 * Their files are made in root's directory by whoever asks for one
	 * and passed with the request; the jailed VMM opens no file.
	 */
	snprintf(cpdir, sizeof(cpdir), "%s/" CUBE_CP_DIR, s->dir);
	if (mkdir(cpdir, 0700) && errno != EEXIST) {
		int e = errno;

		report(s, e, "cannot create %s: %s", cpdir, strerror(e));
		return -e;
	}
	/* the template's argv, at most SHIM_VMM_ARGS of ours, the NULL */
	argv = calloc(s->vmm_argc + SHIM_VMM_ARGS + 1, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	for (i = 0; i < s->vmm_argc; i++)
		argv[n++] = s->vmm_argv[i];
	argv[n++] = "--vsock-uds";
	argv[n++] = vsock;
	argv[n++] = "--control";
	argv[n++] = control;
	argv[n++] = "--console-log";
	argv[n++] = console;
	argv[n++] = "--id";
	argv[n++] = name;
	/* its own uid and gid, its run directory as its root */
	snprintf(jail_user, sizeof(jail_user), "%u:%u", s->jail_id, s->jail_id);
	argv[n++] = "--jail-user";
	argv[n++] = jail_user;
	argv[n++] = "--jail-root";
	argv[n++] = s->dir;
	if (!has_arg(s->vmm_argv, s->vmm_argc, "--trim-every")) {
		argv[n++] = "--trim-every";
		argv[n++] = SHIM_TRIM_EVERY;
	}
	if (!s->no_merge && !has_arg(s->vmm_argv, s->vmm_argc, "--merge-group")) {
		merge_group_arg(group, sizeof(group));
		argv[n++] = "--merge-group";
		argv[n++] = group;
	}
	/*
	 * the VMM attaches its restore's clone: the sandbox's memory
	 * counters; both fds are moved to fixed numbers in the child
	 */
	snprintf(sbfd, sizeof(sbfd), "%d", VMM_SANDBOX_FD);
	argv[n++] = "--cube-sandbox-fd";
	argv[n++] = sbfd;
	if (s->net.tap_fd >= 0) {
		snprintf(tapfd, sizeof(tapfd), "%d", VMM_TAP_FD);
		argv[n++] = "--net-tap-fd";
		argv[n++] = tapfd;
	}
	if (s->disk_fd >= 0) {
		snprintf(diskfd, sizeof(diskfd), "%d", VMM_DISK_FD);
		argv[n++] = "--disk-fd";
		argv[n++] = diskfd;
	}
	assert(n <= s->vmm_argc + SHIM_VMM_ARGS);
	/*
	 * A guest's connect to host port P reaches "<run dir>/vsock_P"
	 * through us: the jailed VMM may neither make nor connect a socket.
	 */
	ret = cube_vsock_broker_start(&s->broker, vsock, &broker);
	if (ret) {
		free(argv);
		report(s, -ret, "cannot start the vsock broker: %s",
		       strerror(-ret));
		return ret;
	}
	snprintf(brokerfd, sizeof(brokerfd), "%d", VMM_BROKER_FD);
	argv[n++] = "--vsock-connect-fd";
	argv[n++] = brokerfd;
	/*
	 * Jailed, the VMM is pid 1 of a pid namespace of its own: made so
	 * here, with the clone that starts it, rather than by a supervisor
	 * process of its own that would wait as long as it runs (a copy of
	 * the VMM, some 150 KiB of its memory and its page tables per
	 * sandbox).  It joins its cgroup itself, and we remove the cgroup
	 * once it is gone.  The pipe tells it when we are.
	 */
	if (jailed) {
		if (pipe2(pp, O_CLOEXEC)) {
			ret = -errno;
			free(argv);
			close(broker);
			report(s, -ret, "pipe: %s", strerror(-ret));
			return ret;
		}
		snprintf(parentfd, sizeof(parentfd), "%d", VMM_PARENT_FD);
		argv[n++] = "--parent-fd";
		argv[n++] = parentfd;
	}
	assert(n <= s->vmm_argc + SHIM_VMM_ARGS);
	argv[n] = NULL;

	/*
	 * The raw clone is a fork (no stack of its own) into a new pid
	 * namespace: the child calls only system calls until its execv().
	 */
	s->vmm = jailed ? syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL,
				  NULL, 0) : fork();
	if (s->vmm < 0) {
		ret = -errno;
		free(argv);
		close(broker);
		if (pp[0] >= 0) {
			close(pp[0]);
			close(pp[1]);
		}
		report(s, -ret, "cannot fork: %s", strerror(-ret));
		return ret;
	}
	s->vmm_cgroup = jailed;
	if (s->vmm == 0) {
		char logp[PATH_MAX + 16];
		sigset_t none;
		int log, sb, tap = -1, disk = -1, bk, par = -1;

		/*
		 * The VMM's own messages, to tell why it failed: read-write,
		 * so that at its cap the VMM keeps the newest half.
		 */
		snprintf(logp, sizeof(logp), "%s/vmm.log", s->dir);
		log = open(logp, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (log < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/*
		 * The fds the VMM inherits besides stdio (stdin is the
		 * shim's /dev/null): the sandbox's (it closes it once its
		 * memory is set up) and the tap, at fixed numbers, and nothing
		 * else.  Above all not the report pipe: a VMM holding it could
		 * report the sandbox ready itself, or keep the reader waiting
		 * after the shim is gone.
		 */
		/* all above the fixed numbers before any dup2() onto one */
		sb = fcntl(s->sbfd, F_DUPFD_CLOEXEC, 16);
		bk = fcntl(broker, F_DUPFD_CLOEXEC, 16);
		if (jailed)
			par = fcntl(pp[0], F_DUPFD_CLOEXEC, 16);
		if (s->net.tap_fd >= 0)
			tap = fcntl(s->net.tap_fd, F_DUPFD_CLOEXEC, 16);
		if (s->disk_fd >= 0)
			disk = fcntl(s->disk_fd, F_DUPFD_CLOEXEC, 16);
		if (sb < 0 || dup2(sb, VMM_SANDBOX_FD) < 0)
			_exit(127);
		if (s->net.tap_fd >= 0 &&
		    (tap < 0 || dup2(tap, VMM_TAP_FD) < 0))
			_exit(127);
		if (s->disk_fd >= 0 &&
		    (disk < 0 || dup2(disk, VMM_DISK_FD) < 0))
			_exit(127);
		if (bk < 0 || dup2(bk, VMM_BROKER_FD) < 0)
			_exit(127);
		if (jailed && (par < 0 || dup2(par, VMM_PARENT_FD) < 0))
			_exit(127);
		/* our end of the pipe goes too: only we may hold it */
		if (close_range((jailed ? VMM_PARENT_FD : VMM_BROKER_FD) + 1,
				~0U, 0))
			_exit(127);
		if (s->net.tap_fd < 0)
			close(VMM_TAP_FD);
		if (s->disk_fd < 0)
			close(VMM_DISK_FD);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* gone before the signal was armed (pid 0: in its own ns) */
		if (jailed) {
			struct pollfd pf = { .fd = VMM_PARENT_FD };

			if (poll(&pf, 1, 0))
				_exit(127);
		} else if (getppid() == 1) {
			_exit(127);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	free(argv);
	close(broker);			/* the VMM's end */
	if (jailed) {
		close(pp[0]);
		s->parent_pipe = pp[1];	/* closed by our exit alone */
	}
	if (s->net.tap_fd >= 0) {
		close(s->net.tap_fd);	/* the VMM's now */
		s->net.tap_fd = -1;
	}
	return 0;
}

/* the last line of a file of the run directory, "" if none */
static void last_line(struct shim *s, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX + 16], line[256];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", s->dir, file);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(buf, len, "%s", line);
	}
	fclose(f);
}

/*
 * While the guest starts: has anyone given up on this sandbox?  A signal
 * (other than SIGCHLD), a kill request on the sandbox fd, or the caller
 * gone from the report pipe (cubectl create killed, a benchmark ended by
 * its time limit) ends the wait at once instead of at the boot timeout,
 * so nothing of a start nobody waits for outlives it.  Waits up to @ms.
 */
static bool start_abandoned(struct shim *s, int ms)
{
	struct pollfd p[3] = {
		{ .fd = s->sfd, .events = POLLIN },
		{ .fd = s->sbfd, .events = POLLIN | POLLPRI },
		{ .fd = s->report_fd, .events = 0 },
	};
	struct signalfd_siginfo si;

	if (poll(p, 3, ms) <= 0)
		return false;
	if ((p[0].revents & POLLIN) &&
	    read(s->sfd, &si, sizeof(si)) == sizeof(si) &&
	    si.ssi_signo != SIGCHLD)
		return true;
	if (p[1].revents & (POLLIN | POLLPRI | POLLERR | POLLHUP))
		return true;
	/* a pipe's write end reports POLLERR once its reader has gone */
	return p[2].revents & (POLLERR | POLLHUP);
}

/* Wait for the agent; give the guest its identity and entropy. */
static int wait_agent(struct shim *s)
{
	char vsock[PATH_MAX + 8], host[64], idstr[32];
	struct cube_agent_info info;
	struct cube_agent *a = NULL;
	time_t end = time(NULL) + s->boot_timeout;
	unsigned char seed[64];
	struct timespec now;
	int ret = -ETIMEDOUT, st;

	snprintf(vsock, sizeof(vsock), "%s/vsock", s->dir);
	while (time(NULL) < end) {
		if (waitpid(s->vmm, &st, WNOHANG) == s->vmm) {
			char why[256], how[64];

			s->vmm = 0;
			last_line(s, "vmm.log", why, sizeof(why));
			if (!why[0])
				last_line(s, "console.log", why, sizeof(why));
			if (WIFEXITED(st))
				snprintf(how, sizeof(how), "exit status %d",
					 WEXITSTATUS(st));
			else
				snprintf(how, sizeof(how), "killed by signal %d, %s",
					 WTERMSIG(st), strsignal(WTERMSIG(st)));
			report(s, EIO, "cube-vmm exited while starting (%s): %s",
			       how, why[0] ? why : "no message");
			return -EIO;
		}
		if (!cube_agent_connect_vsock(vsock, 0, &a)) {
			cube_agent_set_timeout(a, 5000);
			if (!cube_agent_ping(a, &info) && info.ready)
				break;
			cube_agent_close(a);
			a = NULL;
		}
		if (start_abandoned(s, 100)) {
			s->kill_requested = true;
			report(s, ECANCELED, "the start was abandoned");
			return -ECANCELED;
		}
	}
	if (!a) {
		report(s, ETIMEDOUT, "the guest agent did not answer within %u s",
		       s->boot_timeout);
		return ret;
	}
	snprintf(idstr, sizeof(idstr), "%llu", (unsigned long long)s->id);
	snprintf(host, sizeof(host), "cube-%s", idstr);
	clock_gettime(CLOCK_REALTIME, &now);
	{
		struct cube_agent_identity ident = {
			.hostname = host, .sandbox_id = idstr, .set_time = true,
			.time_ns = (uint64_t)now.tv_sec * 1000000000ULL + now.tv_nsec,
		};

		ret = cube_agent_set_identity(a, &ident);
	}
	if (!ret && getrandom(seed, sizeof(seed), 0) == sizeof(seed))
		ret = cube_agent_reseed(a, seed, sizeof(seed));
	explicit_bzero(seed, sizeof(seed));
	/* a disk larger than the snapshot's: its file system grows to fill it */
	if (!ret && s->disk_size > s->disk_snap_size)
		ret = cube_agent_disk_grow(a, s->disk_size);
	if (ret)
		report(s, -ret, "cannot set up the guest: %s",
		       cube_agent_error(a));
	cube_agent_close(a);
	return ret;
}

static void stop_vmm(struct shim *s)
{
	char path[PATH_MAX + 8];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, i, st;

	if (s->vmm <= 0)
		return;
	snprintf(path, sizeof(path), "%s/control", s->dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && strlen(path) < sizeof(sa.sun_path)) {
		strcpy(sa.sun_path, path);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			if (write(fd, "stop\n", 5) != 5)
				kill(s->vmm, SIGKILL);
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < 20; i++) {
		if (waitpid(s->vmm, &st, WNOHANG) == s->vmm) {
			s->vmm = 0;
			return;
		}
		usleep(50 * 1000);
	}
	kill(s->vmm, SIGKILL);
}

static uint32_t exit_reason(struct shim *s, int st)
{
	if (s->kill_requested)
		return CUBE_EXIT_KILLED;
	if (WIFSIGNALED(st))
		return CUBE_EXIT_CRASH;
	return WEXITSTATUS(st) == 0 ? CUBE_EXIT_SHUTDOWN : CUBE_EXIT_ERROR;
}

/* Supervise until the VMM is gone; returns the exit reason. */
static uint32_t supervise(struct shim *s, int sfd, bool pooled)
{
	struct pollfd p[2] = {
		{ .fd = s->sbfd, .events = POLLIN | POLLPRI | POLLRDBAND },
		{ .fd = sfd, .events = POLLIN },
	};
	int st;

	for (;;) {
		if (s->kill_requested && s->vmm > 0)
			stop_vmm(s);
		if (s->vmm > 0 && waitpid(s->vmm, &st, WNOHANG) == s->vmm) {
			s->vmm = 0;	/* reaped: its pid may be another's now */
			return exit_reason(s, st);
		}
		if (s->vmm <= 0)
			return s->kill_requested ? CUBE_EXIT_KILLED :
			       CUBE_EXIT_ERROR;
		/* no timeout: the VMM's exit is a SIGCHLD on @sfd */
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return CUBE_EXIT_ERROR;
		if (p[0].revents & (POLLIN | POLLPRI | POLLERR | POLLHUP)) {
			s->kill_requested = true;
			p[0].events = POLLRDBAND;
		}
		if (pooled && (p[0].revents & POLLRDBAND)) {
			/* taken out of the pool: it works for someone now */
			pooled = false;
			set_state(s, CUBE_SANDBOX_RUNNING, 0);
			p[0].events &= ~POLLRDBAND;
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo != SIGCHLD)
				s->kill_requested = true;
		}
	}
}

/*
 * The cgroup the VMM joined (cube-vmm --parent-fd), once it is reaped: it
 * empties with the reap, but the kernel may need a moment to see it so.
 * One a SIGKILL of ours leaves is the next sandbox's sweep's
 * (lib/cube_sandbox_dir.h).
 */
static void remove_vmm_cgroup(struct shim *s)
{
	char path[64];
	int i;

	if (!s->vmm_cgroup || cube_sandbox_cgroup(path, sizeof(path), s->id))
		return;
	for (i = 0; i < 1000 && rmdir(path) && errno == EBUSY; i++)
		usleep(1000);
	s->vmm_cgroup = false;
}

int main(int argc, char **argv)
{
	struct shim s = { .report_fd = -1, .sbfd = -1, .sfd = -1, .disk_fd = -1,
			  .jail_lock_fd = -1, .life_lock_fd = -1, .parent_pipe = -1,
			  .broker = { .fd = -1 },
			  .net = { .netns_fd = -1, .tap_fd = -1 },
			  .vcpus = CUBE_VCPUS_DEFAULT,
			  .memory_mb = CUBE_MEMORY_DEFAULT,
			  .boot_timeout = CUBE_BOOT_TIMEOUT };
	uint32_t reason = CUBE_EXIT_ERROR;
	sigset_t mask;
	int sfd, ret;

	if (parse_args(&s, argc, argv)) {
		fprintf(stderr, "cube-shim: internal helper of cubectl and cubed; bad arguments\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* one per sandbox: no huge pages for its few KiB (cube-vmm's main()) */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	/*
	 * And what the set-up freed goes back: one arena (the vsock broker's
	 * thread would make its own, never trimmed by malloc_trim()) and
	 * fixed thresholds.  (The network, whose libbpf frees once raised
	 * glibc's trim threshold and kept ~850 KiB, is built in cube-shim-net.)
	 */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	mallopt(M_TRIM_THRESHOLD, 128 << 10);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		report(&s, errno, "signalfd: %s", strerror(errno));
		return 1;
	}
	s.sfd = sfd;
	if (register_sandbox(&s) || make_dir(&s) || take_jail_id(&s) ||
	    setup_disk(&s) || setup_net(&s))
		goto out;
	if (start_vmm(&s))
		goto out;
	if (wait_agent(&s))
		goto out;
	ret = set_state(&s, CUBE_SANDBOX_READY, 0);
	if (!ret && s.pool) {
		struct cube_pool_arg pa = { 0 };

		snprintf(pa.name, sizeof(pa.name), "%s", s.pool);
		if (ioctl(s.sbfd, CUBE_IOC_SANDBOX_POOL_ENTER, &pa))
			ret = -errno;
	} else if (!ret) {
		ret = write_end(&s);
		if (ret)
			goto out;
		ret = set_state(&s, CUBE_SANDBOX_RUNNING, 0);
	}
	if (ret) {
		report(&s, -ret, "cannot make the sandbox %s: %s",
		       s.pool ? "enter its pool" : "ready", strerror(-ret));
		goto out;
	}
	{
		char idstr[32];

		snprintf(idstr, sizeof(idstr), "%llu", (unsigned long long)s.id);
		/* the set-up's frees, below the trim threshold */
		malloc_trim(0);
		report(&s, 0, "%s", idstr);
	}
	reason = supervise(&s, sfd, s.pool != NULL);
out:
	if (s.vmm > 0) {
		s.kill_requested = true;
		stop_vmm(&s);
		if (s.vmm > 0)
			waitpid(s.vmm, NULL, 0);
	}
	remove_vmm_cgroup(&s);
	if (s.sbfd >= 0) {
		struct json_object *f = json_object_new_object();

		/* while its sandbox fd holds the egress program */
		audit_network(&s);
		set_state(&s, CUBE_SANDBOX_EXITED, reason);
		close(s.sbfd);
		if (f)
			json_object_object_add(f, "reason", json_object_new_string(
				cube_nl_exit_name(reason)));
		cube_audit_id(s.id, "exited", "cube-shim", f);
	}
	cube_vsock_broker_stop(&s.broker);
	if (s.net.netns_fd >= 0)
		close(s.net.netns_fd);
	if (s.net.tap_fd >= 0)
		close(s.net.tap_fd);
	if (s.disk_fd >= 0)
		cube_sandbox_disk_remove(s.id, s.disk_fd);
	remove_dir(&s);
	/* a fork's snapshot lives as long as the fork */
	if (s.own_snapshot)
		cube_remove_tree(s.own_snapshot);
	return reason == CUBE_EXIT_SHUTDOWN || reason == CUBE_EXIT_KILLED ? 0 : 1;
}
