// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_template.c: cubectl template build / ls / rm.
 *
 * A build boots cube-vmm on the given kernel (and initrd / rootfs), waits
 * for the guest agent, runs each --run command in the guest (stopping at
 * the first that fails), then snapshots the VM into the template's
 * directory.  A failed build leaves nothing behind.
 *
 * With a network (--net POLICY, default internet) the VM gets a virtio-net
 * device on a tap in a network namespace of the build's own (lib/cube_net),
 * which the guest agent configures; the snapshot keeps the device, so every
 * sandbox of the template has one (template.conf net=1).  --net none
 * builds a template without a device.  The namespace goes with cubectl.
 *
 * With --disk SIZE the VM gets a writable disk: a sparse file of SIZE bytes
 * in the template's directory, formatted here with mke2fs (ext4 without a
 * journal: the disk lives exactly as long as its sandbox), that the guest
 * agent uses as the root's writable layer (guest/agent/disk.c).  The VMM
 * copies it into snapshot/disk.img with the snapshot; every sandbox starts
 * from a copy of that (lib/cube_sandbox_disk.h).  Without --disk the
 * writable layer is a tmpfs in guest memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_client.h"
#include "cube_runtime.h"
#include "cubectl.h"
#include "nl_client.h"

#define MAX_RUN		64

static bool regular_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode);
}

static int out_fn(void *ctx, enum cube_exec_event_type stream,
		  const void *data, size_t len)
{
	fwrite(data, 1, len, stream == CUBE_EXEC_STDERR ? stderr : stdout);
	return 0;
}

/*
 * Before the snapshot, one command through the path every sandbox's first
 * command takes: the agent is static, so until something is executed the
 * guest has read neither the shell nor the loader nor libc from its disk.
 * Read now, they are in the snapshot's page cache, shared by every
 * sandbox; read after the restore, each sandbox holds its own copy of
 * them (about 640 pages, 2.5 MiB, for the python3 template's first
 * command).  bash too where there is one, as E2B's commands run in it.
 * Best effort: a root file system without a shell still builds.
 */
static void warm_exec_path(struct cube_agent *a)
{
	const char *av[] = { "/bin/sh", "-c",
			     "true; [ ! -x /bin/bash ] || /bin/bash -lc true",
			     NULL };
	struct cube_exec_spec spec = { .argv = av };
	struct cube_exec_status st;

	if (cube_agent_exec(a, &spec, NULL, 0, NULL, NULL, &st) ||
	    !st.exited || st.code)
		fprintf(stderr, "%s: the warm-up command failed (the template's first commands will read the shell from disk)\n",
			cc_prog);
}

struct build {
	struct cube_template t;
	char dir[PATH_MAX];
	char vsock[PATH_MAX + 8], control[PATH_MAX + 8], console[PATH_MAX + 16];
	pid_t vmm;
	unsigned int boot_timeout;
	struct cube_net net;
	char disk[PATH_MAX + 16];	/* the build's disk, "" for none */
};

#define BUILD_DISK	"build-disk.img"

/* An empty ext4 file system on a new sparse file of @size bytes at @path. */
static int make_disk(const char *path, uint64_t size)
{
	static const char *const mke2fs[] = {
		"/usr/sbin/mke2fs", "/sbin/mke2fs", NULL,
	};
	const char *prog = NULL;
	int fd, st, i;
	pid_t pid;

	for (i = 0; mke2fs[i] && !prog; i++)
		if (!access(mke2fs[i], X_OK))
			prog = mke2fs[i];
	if (!prog)
		return cc_err(EX_FAIL, "--disk needs mke2fs (install e2fsprogs)");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return cc_err(EX_FAIL, "cannot create %s: %s", path,
			      strerror(errno));
	if (ftruncate(fd, size)) {
		close(fd);
		return cc_err(EX_FAIL, "cannot size %s: %s", path,
			      strerror(errno));
	}
	close(fd);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
			dup2(devnull, 1);
		/*
		 * No journal, no reserved blocks; inode tables left unwritten
		 * (holes, which the guest never zeroes: noinit_itable) and the
		 * file left sparse.
		 */
		execl(prog, prog, "-q", "-F", "-t", "ext4", "-b", "4096",
		      "-m", "0", "-L", "cube-disk", "-O", "^has_journal",
		      "-E", "lazy_itable_init=1,nodiscard", path, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return cc_err(EX_FAIL, "%s could not make the disk's file system",
			      prog);
	return EX_OK;
}

static pid_t spawn_vmm(struct build *b)
{
	char vmm[PATH_MAX], mem[16], cpus[16], tapfd[16];
	char append[sizeof(b->t.append) + 16];
	const char *argv[34];
	int n = 0;
	pid_t pid;

	if (cube_find_helper("cube-vmm", "CUBE_VMM", vmm, sizeof(vmm))) {
		cc_err(EX_FAIL, "cube-vmm not found (set CUBE_VMM)");
		return -1;
	}
	snprintf(mem, sizeof(mem), "%u", b->t.memory_mb);
	snprintf(cpus, sizeof(cpus), "%u", b->t.vcpus);
	argv[n++] = vmm;
	argv[n++] = "--kernel";
	argv[n++] = b->t.kernel;
	if (b->t.initrd[0]) {
		argv[n++] = "--initrd";
		argv[n++] = b->t.initrd;
	}
	if (b->t.rootfs[0]) {
		argv[n++] = "--rootfs";
		argv[n++] = b->t.rootfs;
	}
	/* the agent waits for the disk and makes it the writable layer */
	snprintf(append, sizeof(append), "%s%s%s", b->t.append,
		 b->t.append[0] && b->disk[0] ? " " : "",
		 b->disk[0] ? "cube.disk=1" : "");
	if (append[0]) {
		argv[n++] = "--append";
		argv[n++] = append;
	}
	if (b->disk[0]) {
		argv[n++] = "--disk";
		argv[n++] = b->disk;
	}
	argv[n++] = "--mem";
	argv[n++] = mem;
	argv[n++] = "--vcpus";
	argv[n++] = cpus;
	argv[n++] = "--vsock-uds";
	argv[n++] = b->vsock;
	argv[n++] = "--control";
	argv[n++] = b->control;
	argv[n++] = "--console-log";
	argv[n++] = b->console;
	if (b->net.tap_fd >= 0) {
		snprintf(tapfd, sizeof(tapfd), "%d", b->net.tap_fd);
		argv[n++] = "--net-tap-fd";
		argv[n++] = tapfd;
	}
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		/* the tap is the one fd the VMM inherits */
		if (b->net.tap_fd >= 0 && fcntl(b->net.tap_fd, F_SETFD, 0))
			_exit(127);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(vmm, (char **)argv);
		_exit(127);
	}
	if (pid < 0)
		cc_err(EX_FAIL, "fork: %s", strerror(errno));
	return pid;
}

static int wait_agent(struct build *b, struct cube_agent **out)
{
	time_t end = time(NULL) + b->boot_timeout;
	struct cube_agent_info info;
	struct cube_agent *a;
	int st;

	while (time(NULL) < end) {
		if (waitpid(b->vmm, &st, WNOHANG) == b->vmm) {
			b->vmm = 0;
			return cc_err(EX_FAIL, "cube-vmm exited while booting");
		}
		if (!cube_agent_connect_vsock(b->vsock, 0, &a)) {
			cube_agent_set_timeout(a, 5000);
			if (!cube_agent_ping(a, &info) && info.ready) {
				*out = a;
				return EX_OK;
			}
			cube_agent_close(a);
		}
		usleep(200 * 1000);
	}
	return cc_err(EX_TIMEOUT, "the guest agent did not answer within %u s",
		      b->boot_timeout);
}

/* the guest console's last lines, to tell why a build failed */
static void show_tail(const char *path)
{
	char lines[20][256];
	int n = 0, i;
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(lines[n % 20], sizeof(lines[0]), f))
		n++;
	fclose(f);
	if (n)
		fprintf(stderr, "%s: the guest console ended with:\n", cc_prog);
	for (i = n > 20 ? n - 20 : 0; i < n; i++)
		fprintf(stderr, "  %s", lines[i % 20]);
}

static void cleanup_build(struct build *b, bool failed)
{
	char reply[256];

	if (b->vmm > 0) {
		if (cube_control(b->control, "stop\n", reply, sizeof(reply)))
			kill(b->vmm, SIGKILL);
		waitpid(b->vmm, NULL, 0);
	}
	/* template.conf is written first, so this removes it all */
	if (failed)
		cube_template_remove(b->t.name);
	if (failed)
		show_tail(b->console);
	cube_net_close(&b->net);
	unlink(b->vsock);
	unlink(b->control);
	unlink(b->console);
	rmdir(b->dir);
	/* the snapshot has its copy (snapshot/disk.img) */
	if (b->disk[0])
		unlink(b->disk);
}

static int template_build(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kernel", required_argument, NULL, 'k' },
		{ "initrd", required_argument, NULL, 'i' },
		{ "rootfs", required_argument, NULL, 'r' },
		{ "append", required_argument, NULL, 'a' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "memory", required_argument, NULL, 'm' },
		{ "run", required_argument, NULL, 'R' },
		{ "boot-timeout", required_argument, NULL, 'b' },
		{ "net", required_argument, NULL, 'n' },
		{ "disk", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	static struct cube_net_policy policy = { .mode = CUBE_NET_INTERNET };
	struct build b = { .boot_timeout = CUBE_BOOT_TIMEOUT,
			   .net = { .netns_fd = -1, .tap_fd = -1,
				    .link_fds = { -1 } } };
	char nerr[CUBE_NET_ERR_MAX];
	const char *runs[MAX_RUN], *kernel = getenv("CUBE_KERNEL");
	const char *initrd = getenv("CUBE_INITRD"), *rootfs = NULL;
	unsigned long vcpus = CUBE_VCPUS_DEFAULT, mem = CUBE_MEMORY_DEFAULT, v;
	uint64_t disk = 0;
	struct cube_template old;
	struct cube_agent *a = NULL;
	char req[PATH_MAX + 64], reply[512], err[CUBE_ERR_MAX];
	int nrun = 0, opt, ret, i;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			kernel = optarg;
			break;
		case 'i':
			initrd = optarg;
			break;
		case 'r':
			rootfs = optarg;
			break;
		case 'a':
			if (strlen(optarg) >= sizeof(b.t.append))
				return cc_err(EX_USAGE, "--append is too long");
			snprintf(b.t.append, sizeof(b.t.append), "%s", optarg);
			break;
		case 'c':
			if (cc_parse_uint("--vcpus", optarg, 1, 16, &vcpus))
				return EX_USAGE;
			break;
		case 'm':
			if (cc_parse_uint("--memory", optarg, 32, 3072, &mem))
				return EX_USAGE;
			break;
		case 'b':
			if (cc_parse_uint("--boot-timeout", optarg, 1, 3600, &v))
				return EX_USAGE;
			b.boot_timeout = v;
			break;
		case 'D':
			if (!strcmp(optarg, "none"))
				disk = 0;
			else if (cube_parse_disk_size(optarg, &disk))
				return cc_err(EX_USAGE, "--disk %s: a size from 16M to 16T in whole MiB (e.g. 2G), or none",
					      optarg);
			break;
		case 'n':
			if (cube_net_policy_parse_arg(optarg, &policy, nerr))
				return cc_err(EX_USAGE, "--net: %s", nerr);
			break;
		case 'R':
			if (nrun >= MAX_RUN)
				return cc_err(EX_USAGE, "at most %d --run", MAX_RUN);
			if (!optarg[0])
				return cc_err(EX_USAGE, "--run needs a command");
			runs[nrun++] = optarg;
			break;
		default:
			return cc_err(EX_USAGE, "usage: %s template build NAME --kernel K [--initrd I] [--rootfs IMG] [--append ARGS] [--vcpus N] [--memory MIB] [--net none|deny|internet|FILE] [--disk SIZE|none] [--run CMD]...",
				      cc_prog);
		}
	}
	if (optind + 1 != argc)
		return cc_err(EX_USAGE, "usage: %s template build NAME --kernel K [options]", cc_prog);
	if (!cube_name_valid(argv[optind]))
		return cc_err(EX_USAGE, "invalid template name '%s' ([A-Za-z0-9._-], at most %d bytes)",
			      argv[optind], CUBE_NAME_MAX - 1);
	if (!kernel)
		return cc_err(EX_USAGE, "template build needs --kernel (or $CUBE_KERNEL)");
	if (!regular_file(kernel))
		return cc_err(EX_NOTFOUND, "--kernel %s: no such file", kernel);
	if (initrd && !regular_file(initrd))
		return cc_err(EX_NOTFOUND, "--initrd %s: no such file", initrd);
	if (rootfs && !regular_file(rootfs))
		return cc_err(EX_NOTFOUND, "--rootfs %s: no such file", rootfs);
	if (!cube_template_load(argv[optind], &old, err))
		return cc_err(EX_CONFLICT, "template '%s' exists (template rm it first)",
			      argv[optind]);
	if (old.dir[0] && !access(old.dir, F_OK))
		return cc_err(EX_CONFLICT, "%s exists but is no template; remove it first",
			      old.dir);

	snprintf(b.t.name, sizeof(b.t.name), "%s", argv[optind]);
	if (!realpath(kernel, b.t.kernel) ||
	    (initrd && !realpath(initrd, b.t.initrd)) ||
	    (rootfs && !realpath(rootfs, b.t.rootfs)))
		return cc_err(EX_FAIL, "cannot resolve the image paths: %s", strerror(errno));
	b.t.vcpus = vcpus;
	b.t.memory_mb = mem;
	b.t.net = policy.mode != CUBE_NET_NONE;
	b.t.disk_bytes = disk;
	snprintf(b.t.dir, sizeof(b.t.dir), "%s", old.dir);
	snprintf(b.t.snapshot, sizeof(b.t.snapshot), "%s/snapshot", b.t.dir);
	snprintf(b.dir, sizeof(b.dir), "%s/build-%s-%d", cube_run_dir(),
		 b.t.name, (int)getpid());
	mkdir(cube_run_dir(), 0755);
	if (mkdir(b.dir, 0700))
		return cc_err(EX_FAIL, "cannot create %s: %s", b.dir, strerror(errno));
	snprintf(b.vsock, sizeof(b.vsock), "%s/vsock", b.dir);
	snprintf(b.control, sizeof(b.control), "%s/control", b.dir);
	snprintf(b.console, sizeof(b.console), "%s/console.log", b.dir);

	ret = cube_template_save(&b.t);
	if (ret) {
		cc_err(EX_FAIL, "cannot write the template: %s", strerror(-ret));
		goto fail;
	}
	if (disk) {
		snprintf(b.disk, sizeof(b.disk), "%s/" BUILD_DISK, b.t.dir);
		ret = make_disk(b.disk, disk);
		if (ret) {
			b.disk[0] = 0;	/* make_disk() left it: the dir goes */
			goto fail;
		}
	}
	if (b.t.net) {
		/* an id no module sandbox has: builds are not sandboxes */
		struct cube_net_config cfg = {
			.sandbox_id = (UINT64_C(1) << 62) | (uint64_t)getpid(),
			.policy = &policy,
		};

		ret = cube_net_create(&cfg, &b.net, nerr);
		if (ret) {
			ret = cc_err(EX_FAIL, "cannot set up the build's network: %s (--net none builds a template without one)",
				     nerr);
			goto fail;
		}
	}
	b.vmm = spawn_vmm(&b);
	if (b.vmm < 0) {
		ret = EX_FAIL;
		goto fail;
	}
	ret = wait_agent(&b, &a);
	if (ret)
		goto fail;
	cube_agent_set_timeout(a, -1);
	for (i = 0; i < nrun; i++) {
		const char *av[] = { "/bin/sh", "-c", runs[i], NULL };
		struct cube_exec_spec spec = { .argv = av };
		struct cube_exec_status st;

		fprintf(stderr, "%s: --run %s\n", cc_prog, runs[i]);
		ret = cube_agent_exec(a, &spec, NULL, 0, out_fn, NULL, &st);
		if (ret) {
			cc_err(EX_FAIL, "--run '%s': %s", runs[i], cube_agent_error(a));
			ret = EX_FAIL;
			goto fail;
		}
		if (!st.exited || st.code) {
			ret = cc_err(EX_FAIL, "--run '%s' failed (%s %d)", runs[i],
				     st.exited ? "exit status" : "signal",
				     st.exited ? st.code : st.signal);
			goto fail;
		}
	}
	warm_exec_path(a);
	cube_agent_close(a);
	a = NULL;
	snprintf(req, sizeof(req), "snapshot %s\n", b.t.snapshot);
	ret = cube_control(b.control, req, reply, sizeof(reply));
	if (ret) {
		ret = cc_err(EX_FAIL, "snapshot failed: %s", reply[0] ? reply : strerror(-ret));
		goto fail;
	}
	cleanup_build(&b, false);
	printf("%s\n", b.t.name);
	return EX_OK;
fail:
	if (a)
		cube_agent_close(a);
	cleanup_build(&b, true);
	return ret ? ret : EX_FAIL;
}

static int template_ls(struct cctx *c)
{
	char (*names)[CUBE_NAME_MAX];
	struct json_object *arr = NULL;
	char err[CUBE_ERR_MAX];
	size_t n, i;
	int ret;

	ret = cube_template_list(&names, &n);
	if (ret)
		return cc_errno(ret, "templates");
	if (c->json)
		arr = json_object_new_array();
	else
		printf("%-20s %5s %7s %s\n", "NAME", "VCPUS", "MEMORY", "KERNEL");
	for (i = 0; i < n; i++) {
		struct cube_template t;

		if (cube_template_load(names[i], &t, err))
			continue;
		if (c->json) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "name", json_object_new_string(t.name));
			json_object_object_add(o, "vcpus", json_object_new_int64(t.vcpus));
			json_object_object_add(o, "memory_mb", json_object_new_int64(t.memory_mb));
			json_object_object_add(o, "kernel", json_object_new_string(t.kernel));
			json_object_object_add(o, "initrd", json_object_new_string(t.initrd));
			json_object_object_add(o, "rootfs", json_object_new_string(t.rootfs));
			json_object_object_add(o, "disk_mb", json_object_new_int64(t.disk_bytes >> 20));
			json_object_array_add(arr, o);
		} else {
			printf("%-20s %5u %6uM %s\n", t.name, t.vcpus, t.memory_mb,
			       t.kernel);
		}
	}
	free(names);
	if (c->json)
		cc_json_print(arr);
	return EX_OK;
}

static int template_rm(int argc, char **argv)
{
	struct cube_nl_pool p;
	struct cube_nl *nl;
	int ret;

	if (argc != 2)
		return cc_err(EX_USAGE, "usage: %s template rm NAME", cc_prog);
	if (!cube_name_valid(argv[1]))
		return cc_err(EX_USAGE, "invalid template name '%s'", argv[1]);
	/* a pool that refills from it keeps it */
	if (!cube_nl_open(&nl)) {
		ret = cube_nl_pool_get(nl, argv[1], &p);
		cube_nl_close(nl);
		if (!ret)
			return cc_err(EX_CONFLICT, "template '%s' has a pool (pool set %s --size 0 first)",
				      argv[1], argv[1]);
	}
	ret = cube_template_remove(argv[1]);
	if (ret == -ENOENT)
		return cc_err(EX_NOTFOUND, "unknown template '%s'", argv[1]);
	if (ret)
		return cc_errno(ret, argv[1]);
	return EX_OK;
}

int cmd_template(struct cctx *c, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && !strcmp(argv[i], "--json"); i++)
		c->json = true;
	if (i >= argc)
		return cc_err(EX_USAGE, "usage: %s template build|ls|rm ...", cc_prog);
	optind = 0;	/* reinitialise getopt for the subcommand */
	if (!strcmp(argv[i], "build"))
		return template_build(argc - i, argv + i);
	if (!strcmp(argv[i], "ls")) {
		if (i + 1 < argc && !strcmp(argv[i + 1], "--json")) {
			c->json = true;
			i++;
		}
		if (i + 1 != argc)
			return cc_err(EX_USAGE, "usage: %s template ls [--json]", cc_prog);
		return template_ls(c);
	}
	if (!strcmp(argv[i], "rm"))
		return template_rm(argc - i, argv + i);
	return cc_err(EX_USAGE, "unknown template command '%s' (build, ls, rm)", argv[i]);
}
