// SPDX-License-Identifier: GPL-2.0
/*
 * cube_runtime.c: sandbox and template files on the host; starting a
 * sandbox through cube-shim.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "cube_checkpoint.h"
#include "cube_checkpoint_rec.h"
#include "cube_runtime.h"
#include "cube_sandbox_disk.h"
#include "nl_client.h"

void cube_set_err(char *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, CUBE_ERR_MAX, fmt, ap);
	va_end(ap);
}

const char *cube_run_dir(void)
{
	const char *d = getenv("CUBE_RUN_DIR");

	return d && d[0] == '/' ? d : "/run/cube";
}

const char *cube_state_dir(void)
{
	const char *d = getenv("CUBE_STATE_DIR");

	return d && d[0] == '/' ? d : "/var/lib/cube";
}

int cube_sandbox_path(char *buf, size_t len, uint64_t id, const char *file)
{
	int n = snprintf(buf, len, "%s/sandboxes/%llu%s%s", cube_run_dir(),
			 (unsigned long long)id, file ? "/" : "",
			 file ? file : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int cube_sandbox_cgroup(char *buf, size_t len, uint64_t id)
{
	int n = snprintf(buf, len, CUBE_VMM_CGROUP_PARENT "/cube-%llu",
			 (unsigned long long)id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int cube_parse_id(const char *s, uint64_t *id)
{
	unsigned long long v;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9' || strlen(s) > 20)
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno || !v)
		return -EINVAL;
	*id = v;
	return 0;
}

static bool executable(const char *p)
{
	return !access(p, X_OK);
}

int cube_find_helper(const char *name, const char *env, char *buf,
		     size_t len)
{
	char self[PATH_MAX], *slash, *path, *tok, *save;
	const char *e = env ? getenv(env) : NULL;
	ssize_t n;

	if (e && e[0]) {
		if (!executable(e))
			return -ENOENT;
		snprintf(buf, len, "%s", e);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, len, "%s/%s", self, name);
			if (executable(buf))
				return 0;
			snprintf(buf, len, "%s/../vmm/%s", self, name);
			if (executable(buf))
				return 0;
		}
	}
	e = getenv("PATH");
	path = strdup(e ? e : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin");
	if (!path)
		return -ENOMEM;
	for (tok = strtok_r(path, ":", &save); tok;
	     tok = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", tok, name);
		if (executable(buf)) {
			free(path);
			return 0;
		}
	}
	free(path);
	return -ENOENT;
}

/* --- templates --- */

bool cube_name_valid(const char *s)
{
	size_t i;

	if (!s || !s[0] || s[0] == '.' || strlen(s) >= CUBE_NAME_MAX)
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

static int template_dir(const char *name, char *buf, size_t len)
{
	int n;

	if (!cube_name_valid(name))
		return -EINVAL;
	n = snprintf(buf, len, "%s/templates/%s", cube_state_dir(), name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int parse_uint(const char *s, unsigned int max, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || !v || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int cube_parse_disk_size(const char *s, uint64_t *bytes)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'T': case 't': shift += 10; /* fall through */
	case 'G': case 'g': shift += 10; /* fall through */
	case 'M': case 'm': shift += 10; /* fall through */
	case 'K': case 'k': shift += 10; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B' && shift)
		end++;
	if (*end || v > (CUBE_SANDBOX_DISK_MAX >> shift))
		return -EINVAL;
	v <<= shift;
	if (v < CUBE_SANDBOX_DISK_MIN || v > CUBE_SANDBOX_DISK_MAX || v % (1ULL << 20))
		return -EINVAL;
	*bytes = v;
	return 0;
}

int cube_template_load(const char *name, struct cube_template *t, char *err)
{
	char path[PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0, lineno = 0;
	FILE *f;

	memset(t, 0, sizeof(*t));
	ret = template_dir(name, t->dir, sizeof(t->dir));
	if (ret) {
		cube_set_err(err, "'%s' is not a valid template name", name);
		return ret;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (snprintf(t->snapshot, sizeof(t->snapshot), "%s/snapshot",
		     t->dir) >= (int)sizeof(t->snapshot))
		return -ENAMETOOLONG;
	t->vcpus = CUBE_VCPUS_DEFAULT;
	t->memory_mb = CUBE_MEMORY_DEFAULT;
	snprintf(path, sizeof(path), "%s/template.conf", t->dir);
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		cube_set_err(err, ret == -ENOENT ? "unknown template '%s'" :
			"cannot read template '%s'", name);
		return ret;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *eq, *val;

		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(line, "kernel"))
			snprintf(t->kernel, sizeof(t->kernel), "%s", val);
		else if (!strcmp(line, "initrd"))
			snprintf(t->initrd, sizeof(t->initrd), "%s", val);
		else if (!strcmp(line, "rootfs"))
			snprintf(t->rootfs, sizeof(t->rootfs), "%s", val);
		else if (!strcmp(line, "append"))
			snprintf(t->append, sizeof(t->append), "%s", val);
		else if (!strcmp(line, "vcpus"))
			ret = parse_uint(val, 16, &t->vcpus);
		else if (!strcmp(line, "memory"))
			ret = parse_uint(val, 3072, &t->memory_mb);
		else if (!strcmp(line, "net")) {
			unsigned int v;

			ret = parse_uint(val, 1, &v);
			t->net = v;
		} else if (!strcmp(line, "disk")) {
			char *end;

			errno = 0;
			t->disk_bytes = strtoull(val, &end, 10);
			if (errno || *end || t->disk_bytes < CUBE_SANDBOX_DISK_MIN ||
			    t->disk_bytes > CUBE_SANDBOX_DISK_MAX)
				ret = -EINVAL;
		}
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	if (ret)
		cube_set_err(err, "template '%s': bad line %d in template.conf",
			name, lineno);
	return ret;
}

int cube_template_save(const struct cube_template *t)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	FILE *f;

	snprintf(path, sizeof(path), "%s/templates", cube_state_dir());
	mkdir(cube_state_dir(), 0755);
	mkdir(path, 0755);
	if (mkdir(t->dir, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/template.conf", t->dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "# cube template %s\nkernel=%s\n", t->name, t->kernel);
	if (t->initrd[0])
		fprintf(f, "initrd=%s\n", t->initrd);
	if (t->rootfs[0])
		fprintf(f, "rootfs=%s\n", t->rootfs);
	if (t->append[0])
		fprintf(f, "append=%s\n", t->append);
	fprintf(f, "vcpus=%u\nmemory=%u\n", t->vcpus, t->memory_mb);
	if (t->net)
		fprintf(f, "net=1\n");
	if (t->disk_bytes)
		fprintf(f, "disk=%llu\n", (unsigned long long)t->disk_bytes);
	if (fclose(f) || rename(tmp, path)) {
		int ret = -errno;

		unlink(tmp);
		return ret;
	}
	return 0;
}

int cube_template_list(char (**out)[CUBE_NAME_MAX], size_t *n)
{
	char path[PATH_MAX], (*v)[CUBE_NAME_MAX] = NULL;
	size_t cnt = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/templates", cube_state_dir());
	d = opendir(path);
	if (!d) {
		*out = NULL;
		*n = 0;
		return errno == ENOENT ? 0 : -errno;
	}
	while ((de = readdir(d))) {
		char conf[PATH_MAX + 300];
		void *nv;

		if (!cube_name_valid(de->d_name))
			continue;
		snprintf(conf, sizeof(conf), "%s/%s/template.conf", path,
			 de->d_name);
		if (access(conf, R_OK))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		memcpy(v[cnt++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return 0;
}

/*
 * cube-vmm records the cube.ko snapshot it made of a snapshot directory's
 * memory in DIR/cube-snapshot-id ("<id> <inode> <mtime ns> <size>", see
 * vmm/cube_clone.c): removing that file deletes the module snapshot too
 * (clones still running keep its pages until they end).  The record may
 * outlive the module; only a snapshot the module confirms is the record's
 * (the id, which carries the load's generation, is linked, and names a
 * snapshot of memory of the recorded size) is deleted.  An unknown (stale)
 * id or no module is fine.
 */
static void release_module_snapshot(const char *id_file)
{
	unsigned long long id, ino, mtime, size;
	struct cube_nl_snapshot *v = NULL;
	struct cube_nl *nl;
	char buf[128];
	size_t n_snaps = 0, i;
	ssize_t n;
	int fd;

	fd = open(id_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu %llu %llu", &id, &ino, &mtime, &size) != 4 ||
	    !id)
		return;
	if (cube_nl_open(&nl))
		return;
	if (cube_nl_snapshot_dump(nl, &v, &n_snaps))
		goto out;
	for (i = 0; i < n_snaps; i++) {
		if (v[i].id != id)
			continue;
		if (v[i].depth == 1 && !v[i].parent_id && v[i].size == size)
			cube_nl_snapshot_del(nl, id);
		break;
	}
	free(v);
out:
	cube_nl_close(nl);
}

int cube_remove_tree(const char *path)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int ret = 0;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		const char *base = strrchr(path, '/');

		if (S_ISREG(st.st_mode) &&
		    !strcmp(base ? base + 1 : path, "cube-snapshot-id"))
			release_module_snapshot(path);
		return unlink(path) ? -errno : 0;
	}
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >=
		    (int)sizeof(sub)) {
			ret = -ENAMETOOLONG;
			break;
		}
		ret = cube_remove_tree(sub);
		if (ret)
			break;
	}
	closedir(d);
	if (!ret && rmdir(path))
		ret = -errno;
	return ret;
}

int cube_template_remove(const char *name)
{
	char dir[PATH_MAX], conf[PATH_MAX + 16];
	int ret = template_dir(name, dir, sizeof(dir));

	if (ret)
		return ret;
	snprintf(conf, sizeof(conf), "%s/template.conf", dir);
	if (access(conf, F_OK))
		return -ENOENT;
	return cube_remove_tree(dir);
}

/* --- sandboxes --- */

int cube_sandbox_agent(uint64_t id, struct cube_agent **out)
{
	char path[PATH_MAX];
	int ret = cube_sandbox_path(path, sizeof(path), id, "vsock");

	if (ret)
		return ret;
	return cube_agent_connect_vsock(path, 0, out);
}

/*
 * The shim reports on @fd: "OK <id>\n" once the sandbox is ready, or
 * "ERR <errno> <message>\n".
 */
static int read_report(int fd, int timeout_s, uint64_t *id, char *err)
{
	char buf[CUBE_ERR_MAX + 32];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t len = 0;
	time_t end = time(NULL) + timeout_s;

	for (;;) {
		int left = (int)(end - time(NULL));
		ssize_t n;

		if (left <= 0) {
			cube_set_err(err, "the sandbox did not start within %d s",
				timeout_s);
			return -ETIMEDOUT;
		}
		n = poll(&pfd, 1, left * 1000);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/*
		 * nothing yet: never read then, the VMM holds the pipe open
		 * and the read would wait for as long as the shim is stuck
		 */
		if (n == 0)
			continue;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += n;
		if (memchr(buf, '\n', len) || len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	if (!strncmp(buf, "OK ", 3)) {
		char *nl = strchr(buf, '\n');

		if (nl)
			*nl = '\0';
		if (!cube_parse_id(buf + 3, id))
			return 0;
	}
	if (!strncmp(buf, "ERR ", 4)) {
		char *msg;
		long e = strtol(buf + 4, &msg, 10);
		char *nl = strchr(msg, '\n');

		if (nl)
			*nl = '\0';
		while (*msg == ' ')
			msg++;
		cube_set_err(err, "%s", msg);
		return e > 0 && e < 4096 ? -e : -EIO;
	}
	cube_set_err(err, "the sandbox supervisor died while starting");
	return -EIO;
}

/* the longest encoded policy: every rule as long as a rule can be */
#define NET_POLICY_ARG_MAX	(CUBE_NET_RULES_MAX * 72 + 64)

int cube_sandbox_launch(const struct cube_launch *l, uint64_t *id, char *err)
{
	char *policy = NULL;
	char shim[PATH_MAX], vmm[PATH_MAX], num[5][32];
	const char *argv[64 + 2 * CUBE_LABELS_MAX];
	char labels[CUBE_LABELS_MAX][CUBE_NAME_MAX + CUBE_LABEL_VALUE_MAX + 2];
	unsigned int timeout = l->boot_timeout ? l->boot_timeout :
			       CUBE_BOOT_TIMEOUT;
	int pfd[2], status, ret, argc = 0;
	unsigned int i;
	pid_t pid;

	if (l->nlabels > CUBE_LABELS_MAX)
		return -E2BIG;
	if (!l->tmpl->net && l->net && l->net->mode != CUBE_NET_NONE) {
		cube_set_err(err, "template '%s' has no network device (built with --net none)",
			l->tmpl->name);
		return -EINVAL;
	}
	if (l->disk_bytes && !l->tmpl->disk_bytes) {
		cube_set_err(err, "template '%s' has no writable disk (built without --disk)",
			l->tmpl->name);
		return -EINVAL;
	}
	if (l->disk_bytes && l->disk_bytes < l->tmpl->disk_bytes) {
		cube_set_err(err, "template '%s' has a disk of %llu MiB: a sandbox's is at least that",
			l->tmpl->name,
			(unsigned long long)(l->tmpl->disk_bytes >> 20));
		return -EINVAL;
	}
	if (cube_find_helper("cube-shim", "CUBE_SHIM", shim, sizeof(shim))) {
		cube_set_err(err, "cube-shim not found (set CUBE_SHIM)");
		return -ENOENT;
	}
	if (cube_find_helper("cube-vmm", "CUBE_VMM", vmm, sizeof(vmm))) {
		cube_set_err(err, "cube-vmm not found (set CUBE_VMM)");
		return -ENOENT;
	}
	snprintf(num[0], sizeof(num[0]), "%u",
		 l->vcpus ? l->vcpus : l->tmpl->vcpus);
	snprintf(num[1], sizeof(num[1]), "%u",
		 l->memory_mb ? l->memory_mb : l->tmpl->memory_mb);
	snprintf(num[2], sizeof(num[2]), "%u", timeout);
	argv[argc++] = shim;
	argv[argc++] = "--template";
	argv[argc++] = l->tmpl->name;
	argv[argc++] = "--vcpus";
	argv[argc++] = num[0];
	argv[argc++] = "--memory";
	argv[argc++] = num[1];
	argv[argc++] = "--boot-timeout";
	argv[argc++] = num[2];
	argv[argc++] = "--report-fd";
	argv[argc++] = "3";
	if (l->pool) {
		argv[argc++] = "--pool";
		argv[argc++] = l->pool;
	}
	if (l->end_after) {
		snprintf(num[3], sizeof(num[3]), "%u", l->end_after);
		argv[argc++] = "--end-after";
		argv[argc++] = num[3];
	}
	if (l->disk_bytes) {
		snprintf(num[4], sizeof(num[4]), "%llu",
			 (unsigned long long)l->disk_bytes);
		argv[argc++] = "--disk";
		argv[argc++] = num[4];
	}
	if (l->own_snapshot) {
		argv[argc++] = "--own-snapshot";
		argv[argc++] = l->tmpl->snapshot;
	}
	if (l->no_merge)
		argv[argc++] = "--no-merge";
	if (l->tmpl->net) {
		struct cube_net_policy internet = { .mode = CUBE_NET_INTERNET };
		int n;

		policy = malloc(NET_POLICY_ARG_MAX);
		if (!policy)
			return -ENOMEM;
		n = cube_net_policy_encode(l->net ? l->net : &internet, policy,
					   NET_POLICY_ARG_MAX);
		if (n < 0) {
			free(policy);
			cube_set_err(err, "cannot pass the network policy: %s",
				strerror(-n));
			return n;
		}
		argv[argc++] = "--net-policy";
		argv[argc++] = policy;
	}
	for (i = 0; i < l->nlabels; i++) {
		snprintf(labels[i], sizeof(labels[i]), "%s=%s",
			 l->labels[i].key, l->labels[i].value);
		argv[argc++] = "--label";
		argv[argc++] = labels[i];
	}
	argv[argc++] = "--";
	argv[argc++] = vmm;
	argv[argc++] = "--restore";
	argv[argc++] = l->tmpl->snapshot;
	/*
	 * The disk is the template's, as its template.conf names it: never
	 * what a snapshot's state file says (a paused sandbox's or a fork's
	 * snapshot is written by the sandbox's own VMM).
	 */
	if (l->tmpl->rootfs[0]) {
		argv[argc++] = "--rootfs";
		argv[argc++] = l->tmpl->rootfs;
	}
	argv[argc] = NULL;

	if (pipe2(pfd, O_CLOEXEC)) {
		free(policy);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		free(policy);
		return ret;
	}
	if (pid == 0) {
		/* detach: the shim must outlive whoever asked for it */
		int devnull = open("/dev/null", O_RDWR);

		setsid();
		if (fork())
			_exit(0);
		if (dup2(pfd[1], 3) < 0)
			_exit(127);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		/*
		 * Nothing else of the caller's: a descriptor it left open
		 * without O_CLOEXEC (a copy of the pipe it reads our output
		 * from) would keep its reader waiting while the sandbox lives.
		 */
		close_range(4, ~0U, 0);
		signal(SIGPIPE, SIG_DFL);
		execv(shim, (char **)argv);
		_exit(127);
	}
	close(pfd[1]);
	free(policy);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	ret = read_report(pfd[0], timeout + 10, id, err);
	close(pfd[0]);
	return ret;
}

int cube_sandbox_netns(uint64_t id)
{
	struct cube_sandbox_ref ref = { .id = id };
	int dev, fd;

	dev = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = ioctl(dev, CUBE_IOC_SANDBOX_NETNS_OPEN, &ref);
	if (fd < 0)
		fd = -errno;
	close(dev);
	return fd;
}

int cube_control_fds(const char *path, const char *req, const int *fds,
		     int nfds, char *reply, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[PATH_MAX + 64];
	size_t got = 0, rl = strlen(req);
	ssize_t n;
	int fd, ret;

	reply[0] = '\0';
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* a request is one line: the VMM answers nothing before its end */
	if (rl + 2 > sizeof(line))
		return -ENAMETOOLONG;
	memcpy(line, req, rl);
	if (!rl || req[rl - 1] != '\n')
		line[rl++] = '\n';
	if (nfds < 0 || nfds > CUBE_SEND_FDS_MAX)
		return -EINVAL;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno :
	      cube_send_fds(fd, line, rl, fds, nfds);
	if (ret) {
		close(fd);
		return ret;
	}
	while (got + 1 < len && (n = read(fd, reply + got, len - 1 - got)) > 0) {
		got += n;
		if (memchr(reply, '\n', got))
			break;
	}
	close(fd);
	reply[got] = '\0';
	if (got && reply[got - 1] == '\n')
		reply[got - 1] = '\0';
	return strncmp(reply, "OK", 2) ? -EIO : 0;
}

int cube_control(const char *path, const char *req, char *reply, size_t len)
{
	return cube_control_fds(path, req, NULL, 0, reply, len);
}

int cube_control_snapshot(const char *ctl, const char *dir, char *reply,
			  size_t len)
{
	static const char *const names[] = { "state.tmp", "memory",
					      CUBE_DISK_FILE };
	int dfd, fds[3] = { -1, -1, -1 }, i, ret = 0;
	struct stat st;

	reply[0] = '\0';
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* made here, root's: the VMM writes through them, naming nothing */
	for (i = 0; i < 3 && !ret; i++) {
		fds[i] = openat(dfd, names[i], O_RDWR | O_CREAT | O_TRUNC |
				O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fds[i] < 0)
			ret = -errno;
	}
	if (!ret)
		ret = cube_control_fds(ctl, "snapshot\n", fds, 3, reply, len);
	/* a VM without a disk left its copy empty: there is none */
	if (!ret && !fstat(fds[2], &st) && !st.st_size &&
	    unlinkat(dfd, CUBE_DISK_FILE, 0))
		ret = -errno;
	/* the state, written last, commits the snapshot */
	if (!ret && (renameat(dfd, "state.tmp", dfd, "state") || fsync(dfd)))
		ret = -errno;
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(dfd);
	return ret;
}

int cube_sandbox_checkpoint(uint64_t id, const char *dir, char *err)
{
	char ctl[PATH_MAX], reply[512];
	int ret;

	ret = cube_sandbox_path(ctl, sizeof(ctl), id, "control");
	if (ret)
		return ret;
	/* the VM stays paused after the snapshot: nothing it does is lost */
	ret = cube_control(ctl, "pause\n", reply, sizeof(reply));
	if (!ret)
		ret = cube_control_snapshot(ctl, dir, reply, sizeof(reply));
	if (ret) {
		cube_control(ctl, "resume\n", reply + 256, sizeof(reply) - 256);
		cube_remove_tree(dir);
		cube_set_err(err, "cannot snapshot sandbox %llu: %s",
			(unsigned long long)id, reply[0] ? reply : strerror(-ret));
		return ret == -ECONNREFUSED ? -ENOENT : ret;
	}
	return 0;
}

int cube_sandbox_resume_vm(uint64_t id)
{
	char ctl[PATH_MAX], reply[128];
	int ret = cube_sandbox_path(ctl, sizeof(ctl), id, "control");

	return ret ? ret : cube_control(ctl, "resume\n", reply, sizeof(reply));
}

/* --- checkpoints and rollbacks --- */

bool cube_cp_name_valid(const char *s)
{
	return s && cube_ckpt_name_ok(s);
}

static uint64_t mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/*
 * One checkpoint request to sandbox @id's VMM.  A VMM's "ERR" answer is
 * turned into an -errno by what it says, and into @err.
 */
static int cp_request(uint64_t id, const char *req, const int *fds, int nfds,
		      char *reply, size_t len, char *err)
{
	char ctl[PATH_MAX];
	const char *msg;
	int ret;

	ret = cube_sandbox_path(ctl, sizeof(ctl), id, "control");
	if (ret)
		return ret;
	ret = cube_control_fds(ctl, req, fds, nfds, reply, len);
	if (ret == -ENOENT || ret == -ECONNREFUSED) {
		cube_set_err(err, "no sandbox %llu", (unsigned long long)id);
		return -ENOENT;
	}
	if (ret != -EIO || strncmp(reply, "ERR", 3)) {
		if (ret)
			cube_set_err(err, "sandbox %llu: %s", (unsigned long long)id,
				reply[0] ? reply : strerror(-ret));
		return ret;
	}
	msg = reply[3] == ' ' ? reply + 4 : reply + 3;
	cube_set_err(err, "sandbox %llu: %s", (unsigned long long)id, msg);
	if (!strncmp(msg, "no checkpoint ", 14))
		return -ENOENT;
	if (!strncmp(msg, "bad checkpoint name", 19))
		return -EINVAL;
	if (strstr(msg, " exists"))
		return -EEXIST;
	if (!strncmp(msg, "too many checkpoints", 20))
		return -ENOSPC;
	if (strstr(msg, "cube.ko clone") || !strncmp(msg, "no --checkpoint-dir", 19))
		return -EOPNOTSUPP;
	return -EIO;
}

/* How long making or removing a checkpoint waits for the lock. */
#define CP_LOCK_WAIT_US		(10 * 1000000ULL)

int cube_sandbox_cp_lock(uint64_t id, bool wait, char *err)
{
	uint64_t end = mono_us() + (wait ? CP_LOCK_WAIT_US : 0);
	char path[PATH_MAX];
	struct stat st;
	int fd, ret;

	ret = cube_sandbox_path(path, sizeof(path), id, CUBE_CP_LOCK_FILE);
	if (ret)
		return ret;
	/*
	 * The lock lives in the run directory, made with it by cube-shim and
	 * removed, under the lock, at its end: none, no sandbox.
	 */
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			cube_set_err(err, "no sandbox %llu", (unsigned long long)id);
		else
			cube_set_err(err, "sandbox %llu: %s: %s",
				(unsigned long long)id, path, strerror(-ret));
		return ret;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK && mono_us() < end) {
			usleep(20000);
			continue;
		}
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		cube_set_err(err, "sandbox %llu: %s", (unsigned long long)id,
			ret == -EBUSY ? "busy: another rollback or checkpoint is under way" :
			strerror(-ret));
		close(fd);
		return ret;
	}
	/* taken after the sandbox's end removed it */
	if (fstat(fd, &st) || !st.st_nlink) {
		cube_set_err(err, "no sandbox %llu", (unsigned long long)id);
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* Whether sandbox @id's VMM has checkpoint @name: 1, 0 or -errno. */
static int cp_known(uint64_t id, const char *name, char *err)
{
	char (*v)[CUBE_CP_NAME_MAX] = NULL;
	size_t n = 0, i;
	int ret;

	ret = cube_sandbox_cp_list(id, &v, &n, err);
	if (ret)
		return ret;
	for (i = 0; i < n && strcmp(v[i], name); i++)
		;
	free(v);
	return i < n;
}

/*
 * What making or removing checkpoint @name starts with: the name checked,
 * @dir (PATH_MAX) the sandbox's checkpoint directory, its lock taken.  The
 * lock's fd, or -errno with @err set.
 */
static int cp_begin(uint64_t id, const char *name, char *dir, char *err)
{
	int ret;

	if (!cube_cp_name_valid(name)) {
		cube_set_err(err, "bad checkpoint name (1-64 of A-Z a-z 0-9 . _ -, not starting with .)");
		return -EINVAL;
	}
	ret = cube_sandbox_path(dir, PATH_MAX, id, CUBE_CP_DIR);
	if (ret)
		return ret;
	return cube_sandbox_cp_lock(id, true, err);
}

int cube_sandbox_cp_create(uint64_t id, const char *name, unsigned int *ms,
			   uint64_t *pages, char *err)
{
	char req[128], reply[512], got[CUBE_CP_NAME_MAX];
	char dir[PATH_MAX], path[PATH_MAX + 96];
	unsigned long long p;
	int ret, lock, i, fds[3];
	struct stat st;
	unsigned int m;

	lock = cp_begin(id, name, dir, err);
	if (lock < 0)
		return lock;
	/*
	 * The VMM opens no file: its files are made here and passed.  A
	 * directory of the name that the VMM does not know was left by a
	 * caller that died before it could clean up: it goes.
	 */
	ret = cube_checkpoint_files(dir, name, fds);
	if (ret == -EEXIST) {
		ret = cp_known(id, name, err);
		if (ret < 0)
			goto out;
		if (ret > 0) {
			cube_set_err(err, "sandbox %llu: checkpoint %s exists",
				(unsigned long long)id, name);
			ret = -EEXIST;
			goto out;
		}
		ret = cube_checkpoint_remove(dir, name, reply, sizeof(reply));
		if (ret == -EBUSY) {
			/* a record the VMM does not own up to: its own doing */
			cube_set_err(err, "sandbox %llu: checkpoint %s exists: %s",
				(unsigned long long)id, name, reply);
			ret = -EEXIST;
			goto out;
		}
		if (!ret)
			ret = cube_checkpoint_files(dir, name, fds);
	}
	if (ret == -ENOENT) {
		cube_set_err(err, "no sandbox %llu", (unsigned long long)id);
		goto out;
	}
	if (ret) {
		cube_set_err(err, "sandbox %llu: the files of checkpoint %s: %s",
			(unsigned long long)id, name, strerror(-ret));
		goto out;
	}
	snprintf(req, sizeof(req), "checkpoint %s\n", name);
	ret = cp_request(id, req, fds, 3, reply, sizeof(reply), err);
	if (!ret && sscanf(reply, "OK checkpoint %64s %u ms pages=%llu", got,
			   &m, &p) != 3) {
		cube_set_err(err, "sandbox %llu: unexpected answer: %s",
			(unsigned long long)id, reply);
		ret = -EPROTO;
	}
	for (i = 0; i < 3; i++)
		close(fds[i]);
	if (ret) {
		/*
		 * The files go unless their record names a live snapshot: a
		 * checkpoint the VMM made though its answer was lost stays, as
		 * its name does in the VMM's list.
		 */
		cube_checkpoint_remove(dir, name, reply, sizeof(reply));
		goto out;
	}
	/* a VM without a disk left its copy empty */
	snprintf(path, sizeof(path), "%s/%s/" CUBE_CKPT_DISK_FILE, dir, name);
	if (!stat(path, &st) && !st.st_size)
		unlink(path);
	if (ms)
		*ms = m;
	if (pages)
		*pages = p;
out:
	close(lock);
	return ret;
}

int cube_sandbox_cp_list(uint64_t id, char (**out)[CUBE_CP_NAME_MAX],
			 size_t *n, char *err)
{
	char reply[CUBE_CP_NAME_MAX * 64 + 64], *tok, *save = NULL;
	char (*v)[CUBE_CP_NAME_MAX] = NULL;
	size_t cnt = 0;
	int ret;

	ret = cp_request(id, "checkpoints\n", NULL, 0, reply, sizeof(reply),
			 err);
	if (ret)
		return ret;
	for (tok = strtok_r(reply + 2, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		void *nv;

		if (!cube_cp_name_valid(tok))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		snprintf(v[cnt++], CUBE_CP_NAME_MAX, "%s", tok);
	}
	*out = v;
	*n = cnt;
	return 0;
}

int cube_sandbox_cp_remove(uint64_t id, const char *name, char *err)
{
	char req[128], reply[256], dir[PATH_MAX];
	int ret, lock;

	lock = cp_begin(id, name, dir, err);
	if (lock < 0)
		return lock;
	snprintf(req, sizeof(req), "checkpoint-rm %s\n", name);
	ret = cp_request(id, req, NULL, 0, reply, sizeof(reply), err);
	/*
	 * Its files, which the VMM did not make, or a dead caller's; only
	 * files: the VMM deleted its snapshot, and a record naming one that
	 * is still alive stays for the sandbox's end (cube-shim releases it
	 * as the VMM's uid).
	 */
	if (!ret || ret == -ENOENT)
		cube_checkpoint_remove(dir, name, reply, sizeof(reply));
	close(lock);
	return ret;
}

/*
 * After a rollback: wait for the guest's agent, then give the guest what
 * a restore gives it (its identity, the time, fresh entropy: the state
 * rolled back to had the entropy it had then).
 */
static int rollback_setup_guest(uint64_t id, char *err)
{
	char idstr[32], host[64];
	struct cube_agent_info info;
	struct cube_agent *a = NULL;
	unsigned char seed[64];
	struct timespec now;
	uint64_t end = mono_us() + (uint64_t)CUBE_BOOT_TIMEOUT * 1000000;
	int ret = -ETIMEDOUT;

	while (mono_us() < end) {
		ret = cube_sandbox_agent(id, &a);
		if (!ret) {
			cube_agent_set_timeout(a, 5000);
			if (!cube_agent_ping(a, &info) && info.ready)
				break;
			cube_agent_close(a);
			a = NULL;
		} else if (ret == -ENOENT || ret == -ECONNREFUSED) {
			/* the guest may not listen yet; the VMM must answer */
			char ctl[PATH_MAX], reply[256];
			int r = cube_sandbox_path(ctl, sizeof(ctl), id, "control");

			if (!r)
				r = cube_control(ctl, "status\n", reply,
						 sizeof(reply));
			if (r == -ENOENT || r == -ECONNREFUSED) {
				cube_set_err(err, "sandbox %llu ended during the rollback",
					(unsigned long long)id);
				return -ENOENT;
			}
		}
		ret = -ETIMEDOUT;
		usleep(10 * 1000);
	}
	if (!a) {
		cube_set_err(err, "sandbox %llu: the guest agent did not answer after the rollback",
			(unsigned long long)id);
		return ret;
	}
	snprintf(idstr, sizeof(idstr), "%llu", (unsigned long long)id);
	snprintf(host, sizeof(host), "cube-%s", idstr);
	clock_gettime(CLOCK_REALTIME, &now);
	{
		struct cube_agent_identity ident = {
			.hostname = host, .sandbox_id = idstr, .set_time = true,
			.time_ns = (uint64_t)now.tv_sec * 1000000000ULL +
				   now.tv_nsec,
		};

		ret = cube_agent_set_identity(a, &ident);
	}
	if (!ret) {
		if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
			ret = -EIO;
		else
			ret = cube_agent_reseed(a, seed, sizeof(seed));
	}
	explicit_bzero(seed, sizeof(seed));
	/*
	 * Back at the template's memory, the file system is the template's
	 * size again while the disk kept the sandbox's: it grows back.
	 */
	if (!ret && cube_sandbox_disk_size(id))
		ret = cube_agent_disk_grow(a, cube_sandbox_disk_size(id));
	if (!ret)
		ret = cube_agent_ping(a, &info);
	if (ret)
		cube_set_err(err, "sandbox %llu: cannot set up the guest after the rollback: %s",
			(unsigned long long)id, cube_agent_error(a));
	cube_agent_close(a);
	return ret;
}

int cube_sandbox_rollback(uint64_t id, const char *name,
			  struct cube_rollback *r, char *err)
{
	char req[128], reply[512];
	unsigned long long us, pages;
	uint64_t t0 = mono_us();
	int fd, ret;

	if (name && !cube_cp_name_valid(name)) {
		cube_set_err(err, "bad checkpoint name (1-64 of A-Z a-z 0-9 . _ -, not starting with .)");
		return -EINVAL;
	}
	fd = cube_sandbox_cp_lock(id, false, err);
	if (fd < 0)
		return fd;
	snprintf(req, sizeof(req), name ? "rollback %s\n" : "rollback\n",
		 name);
	ret = cp_request(id, req, NULL, 0, reply, sizeof(reply), err);
	if (ret)
		goto out;
	memset(r, 0, sizeof(*r));
	if (sscanf(reply, "OK rollback %64s %llu us pages=%llu", r->target,
		   &us, &pages) != 3) {
		cube_set_err(err, "sandbox %llu: unexpected answer: %s",
			(unsigned long long)id, reply);
		ret = -EPROTO;
		goto out;
	}
	r->vmm_us = us;
	r->pages = pages;
	ret = rollback_setup_guest(id, err);
	r->total_us = mono_us() - t0;
out:
	close(fd);	/* drops the lock */
	return ret;
}
