/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the vmm selftests: start cube-vmm on the tiny L2 guest, watch
 * its console log, talk to its vsock and control sockets.
 */
#ifndef CUBE_VMM_TEST_UTIL_H
#define CUBE_VMM_TEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/cube.h>

#include "cube_test.h"
#include "cube_wait.h"

#define VMM_BIN		"./cube-vmm"
#define L2_INITRD	"./l2.cpio.gz"
#define BOOT_TIMEOUT	180	/* seconds; TCG-nested boots are slow */

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The L2 kernel: /boot/vmlinuz in the VM harness, else Debian's cloud one. */
static inline const char *l2_kernel(void)
{
	static char path[256];
	glob_t g;

	if (getenv("CUBE_L2_KERNEL"))
		return getenv("CUBE_L2_KERNEL");
	if (!access("/boot/vmlinuz", R_OK))
		return "/boot/vmlinuz";
	if (glob("/boot/vmlinuz-*-cloud-amd64", 0, NULL, &g) || !g.gl_pathc)
		return NULL;
	snprintf(path, sizeof(path), "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return path;
}

static inline void need_kvm(void)
{
	int fd = open("/dev/kvm", O_RDWR);

	if (fd < 0)
		SKIP("no /dev/kvm: %s", strerror(errno));
	close(fd);
	if (!l2_kernel())
		SKIP("no guest kernel");
	if (access(VMM_BIN, X_OK) || access(L2_INITRD, R_OK))
		SKIP("cube-vmm or the L2 initramfs is missing");
}

/* A scratch directory under /tmp, removed by rm_tree(). */
static inline void mk_scratch(char *dir, size_t len, const char *tag)
{
	snprintf(dir, len, "/tmp/vmm-%s-%d", tag, (int)getpid());
	mkdir(dir, 0700);
}

static inline void rm_tree(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
		/* best effort */
	}
}

/*
 * In a child the test forked off @parent: die with the test.  A test that
 * fails part-way (an ASSERT ends its process) leaves no VMM behind to hold
 * /dev/cube and cube.ko for the tests after it.
 */
static inline void die_with(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(126);
}

/*
 * Start cube-vmm with argv (NULL-terminated, argv[0] ignored); its stderr
 * goes to err_path.  Returns the pid.
 */
static inline pid_t vmm_spawn(const char *const *argv, const char *err_path)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		die_with(parent);

		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		execv(VMM_BIN, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Wait up to timeout s; returns the wait status, or -1 on timeout (killed). */
static inline int vmm_wait(pid_t pid, double timeout)
{
	double end = now_s() + timeout;
	int status;

	while (now_s() < end) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -2;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static inline char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return strdup("");
	{
		FILE *m = open_memstream(&buf, &len);
		char tmp[4096];
		size_t n;

		while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
			fwrite(tmp, 1, n, m);
		fclose(m);
	}
	fclose(f);
	return buf;
}

static inline bool file_has(const char *path, const char *needle)
{
	char *s = slurp(path);
	bool r = strstr(s, needle) != NULL;

	free(s);
	return r;
}

/* Wait until the file holds needle; false on timeout or if pid died. */
static inline bool wait_for(const char *path, const char *needle,
			    double timeout, pid_t pid)
{
	double end = now_s() + timeout;

	while (now_s() < end) {
		if (file_has(path, needle))
			return true;
		if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid)
			return file_has(path, needle);
		usleep(100000);
	}
	return false;
}

static inline void dump_file(const char *what, const char *path)
{
	char *s = slurp(path), *line, *save = NULL;
	int n = 0;

	TH_LOG("--- %s (%s) ---", what, path);
	for (line = strtok_r(s, "\n", &save); line && n < 80;
	     line = strtok_r(NULL, "\n", &save), n++)
		TH_LOG("%s", line);
	free(s);
	if (file_has(path, "signal 31")) {
		/* A seccomp kill: the kernel logged the system call. */
		FILE *p = popen("dmesg | grep 'syscall=' | tail -n 3", "r");
		char buf[512];

		while (p && fgets(buf, sizeof(buf), p))
			TH_LOG("seccomp: %s", buf);
		if (p)
			pclose(p);
	}
}

static inline int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read one line (without the newline) within timeout; -1 on EOF/timeout. */
static inline int read_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&p, 1, timeout_ms) <= 0)
			return -1;
		if (read(fd, &c, 1) != 1)
			return -1;
		if (c == '\n') {
			buf[n] = 0;
			return n;
		}
		buf[n++] = c;
	}
	return -1;
}

/* Hybrid vsock: connect to port through the UDS; fd or -1. */
static inline int vsock_open(const char *uds, unsigned int port)
{
	char line[64];
	int fd = unix_connect(uds);

	if (fd < 0)
		return -1;
	snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    read_line(fd, line, sizeof(line), 20000) < 0 ||
	    strncmp(line, "OK ", 3)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One control request; the reply line in reply; 0 or -1. */
static inline int control(const char *path, const char *req, char *reply,
			  size_t len)
{
	int fd = unix_connect(path), r;

	if (fd < 0)
		return -1;
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) ||
	    write(fd, "\n", 1) != 1) {
		close(fd);
		return -1;
	}
	r = read_line(fd, reply, len, 120000);
	close(fd);
	return r < 0 ? -1 : 0;
}

static inline int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static inline int read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, timeout_ms) <= 0)
			return -1;
		n = read(fd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* Echo round trip of len pattern bytes (seeded) on a vsock stream. */
static inline int echo_check(int fd, size_t len, unsigned int seed)
{
	char *out = malloc(len), *in = malloc(len);
	size_t i;
	int ret = -1;

	for (i = 0; i < len; i++)
		out[i] = (char)((i * 31 + seed * 7) ^ (i >> 8));
	if (!write_all(fd, out, len) && !read_all(fd, in, len, 60000))
		ret = memcmp(in, out, len) ? -2 : 0;
	free(out);
	free(in);
	return ret;
}

/* The module snapshot a restore recorded in @snap/cube-snapshot-id, or 0. */
static inline uint64_t recorded_id(const char *snap)
{
	char path[256], *s;
	uint64_t id = 0;

	snprintf(path, sizeof(path), "%s/cube-snapshot-id", snap);
	s = slurp(path);
	if (s && sscanf(s, "%" SCNu64, &id) != 1)
		id = 0;
	free(s);
	return id;
}

/*
 * Delete the module snapshot a restore recorded in @snap, if any: it
 * outlives the VMMs, and would hold its pages until cube.ko unloads.
 */
static inline void drop_recorded_snapshot(const char *snap)
{
	struct cube_snapshot_id del = { .id = recorded_id(snap) };
	int dev;

	if (!del.id)
		return;
	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return;
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del), 0);
	close(dev);
}

#define VMM_TEST_MAIN()							\
	int main(int argc, char **argv)					\
	{								\
		signal(SIGPIPE, SIG_IGN);				\
		if (!getenv("CUBE_TEST_TIMEOUT"))			\
			setenv("CUBE_TEST_TIMEOUT", "400", 1);		\
		return ct_main(argc, argv);				\
	}

#endif /* CUBE_VMM_TEST_UTIL_H */
