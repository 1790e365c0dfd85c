// SPDX-License-Identifier: GPL-2.0
/*
 * guest_test: a real guest.  cube-vmm boots the L2 kernel with the guest
 * initramfs (cube-agent as PID 1) and the Debian rootfs image; the host
 * side talks to the agent through the VMM's hybrid vsock socket: the agent
 * becomes ready, runs echo and python3, sets the identity and clock,
 * reseeds the RNG, and files land in the writable overlay.  The same with
 * the minimal kernel of guest/kernel.config when it was built.
 *
 * Runs in the VM harness (needs /dev/kvm, ../vmm/cube-vmm, ./initramfs.cpio.gz
 * and the rootfs image, a TEST_DISKS entry: /dev/disk/cube/rootfs-*.ext4,
 * or $CUBE_ROOTFS).
 */
#include <glob.h>
#include <sys/sendfile.h>

#include "agent_test.h"
#include "cube_wait.h"

#define VMM		"../vmm/cube-vmm"	/* installed by the vmm group */
#define INITRD		"./initramfs.cpio.gz"
#define BOOT_TIMEOUT_S	180	/* nested TCG boots are slow */

static const char *l2_kernel(void)
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

static const char *rootfs_source(void)
{
	static char path[256];
	glob_t g;

	if (getenv("CUBE_ROOTFS"))
		return getenv("CUBE_ROOTFS");
	if (glob("/dev/disk/cube/rootfs-*.ext4", 0, NULL, &g) || !g.gl_pathc)
		return NULL;
	snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
	globfree(&g);
	return path;
}

/* cube-vmm wants a regular file: copy the disk into the scratch directory. */
static int copy_image(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), out, err = 0;
	char buf[1 << 16];
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, n) != n) {
			err = -EIO;
			break;
		}
	}
	if (n < 0)
		err = -errno;
	close(in);
	close(out);
	return err;
}

static void dump_tail(const char *what, const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	long size;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size > 6000 ? size - 6000 : 0, SEEK_SET);
	TH_LOG("--- %s (tail) ---", what);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		TH_LOG("%s", line);
	}
	fclose(f);
}

struct vm {
	char dir[64];
	char uds[128], log[128], err[128], img[128];
	pid_t vmm;
	struct cube_agent *a;
	bool ok;
};

/* Boots @kernel with the guest initramfs and rootfs; connects to the agent. */
static void vm_boot(struct vm *vm, const char *kernel, const char *append)
{
	const char *src = rootfs_source();
	long long t0, deadline;
	int fd, r;

	fd = open("/dev/kvm", O_RDWR);
	if (fd < 0)
		SKIP("no /dev/kvm: %s", strerror(errno));
	close(fd);
	ASSERT_TRUE(kernel != NULL);
	if (!src) {
		TH_LOG("no rootfs image (TEST_DISKS or $CUBE_ROOTFS)");
		ASSERT_TRUE(0);
	}
	ASSERT_EQ(access(VMM, X_OK), 0);
	ASSERT_EQ(access(INITRD, R_OK), 0);
	strcpy(vm->dir, "/tmp/cube-guest-test.XXXXXX");
	ASSERT_TRUE(mkdtemp(vm->dir) != NULL);
	snprintf(vm->uds, sizeof(vm->uds), "%s/vsock", vm->dir);
	snprintf(vm->log, sizeof(vm->log), "%s/console.log", vm->dir);
	snprintf(vm->err, sizeof(vm->err), "%s/vmm.log", vm->dir);
	snprintf(vm->img, sizeof(vm->img), "%s/rootfs.ext4", vm->dir);
	t0 = ms_now();
	ASSERT_EQ(copy_image(src, vm->img), 0);
	TH_LOG("rootfs copied in %lld ms", ms_now() - t0);
	vm->vmm = fork();
	ASSERT_GE(vm->vmm, 0);
	if (!vm->vmm) {
		fd = open(vm->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(VMM, VMM, "--kernel", kernel, "--initrd", INITRD,
		      "--rootfs", vm->img, "--vsock-uds", vm->uds,
		      "--mem", "256", "--console-log", vm->log,
		      "--timeout", "900", "--append", append, (char *)NULL);
		_exit(127);
	}
	/* the VMM refuses connections until the agent listens */
	t0 = ms_now();
	deadline = t0 + BOOT_TIMEOUT_S * 1000LL;
	while ((r = cube_agent_connect_vsock(vm->uds, 0, &vm->a))) {
		if (waitpid(vm->vmm, NULL, WNOHANG) == vm->vmm) {
			vm->vmm = 0;
			dump_tail("vmm", vm->err);
			dump_tail("console", vm->log);
			ASSERT_TRUE(0);
		}
		if (ms_now() > deadline) {
			dump_tail("console", vm->log);
			ASSERT_TRUE(0);
		}
		sleep_ms(200);
	}
	cube_agent_set_timeout(vm->a, 120000);
	TH_LOG("agent reachable %lld ms after the VMM started", ms_now() - t0);
}

/*
 * The VMM's wait status within @ms (polled every 50 ms), or -1 after it
 * was killed for running past them (as vmm_wait() of the vmm group).
 */
static int vmm_wait_ms(pid_t pid, int ms)
{
	long long deadline = ms_now() + ms;
	int status;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0)
			return -2;
		if (ms_now() > deadline)
			break;
		sleep_ms(50);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* A stop request (SIGTERM) ends cube-vmm with status 0, within 30 s. */
static void vm_stop(struct vm *vm)
{
	int st;

	cube_agent_close(vm->a);
	if (vm->vmm > 0) {
		kill(vm->vmm, SIGTERM);
		st = vmm_wait_ms(vm->vmm, 30000);
		vm->vmm = 0;
		EXPECT_EXIT(st, 0);
		if (!ct_exited_with(st, 0)) {
			dump_tail("vmm", vm->err);
			vm->ok = false;
		}
	}
	if (!vm->ok && vm->dir[0])
		dump_tail("console", vm->log);
	if (vm->dir[0])
		rm_tree(vm->dir);
}

FIXTURE(guest) {
	struct vm vm;
};

FIXTURE_SETUP(guest)
{
	vm_boot(&self->vm, l2_kernel(), "cube.rootfstype=ext4");
}

FIXTURE_TEARDOWN(guest)
{
	vm_stop(&self->vm);
}

/* Runs argv in the guest; returns its stdout (malloc'ed), exit code in *code. */
static char *guest_run(struct cube_agent *a, const char *const *argv, int *code)
{
	struct cube_exec_spec spec = { .argv = argv, .timeout_ms = 120000 };
	struct cube_exec_status st;
	struct output o = { 0 };
	int err;

	err = cube_agent_exec(a, &spec, NULL, 0, collect_output, &o, &st);
	if (err)
		TH_LOG("exec %s: %s (%s)", argv[0], strerror(-err), cube_agent_error(a));
	ASSERT_EQ(err, 0);
	if (o.err_len)
		TH_LOG("%s: stderr: %s", argv[0], o.err);
	*code = st.exited ? st.code : 128 + st.signal;
	free(o.err);
	free(o.seq);
	return o.out ? o.out : strdup("");
}

static void echo_python(struct vm *vm)
{
	const char *echo[] = { "echo", "hello", "from", "the", "guest", NULL };
	const char *py[] = { "python3", "-c", "print(2+2)", NULL };
	const char *mounts[] = { "sh", "-c", "grep -c ' / overlay ' /proc/mounts; test -w /usr && echo rw", NULL };
	struct cube_agent_info info;
	char *out;
	int code;

	ASSERT_EQ(cube_agent_ping(vm->a, &info), 0);
	EXPECT_EQ(info.version, CUBE_AGENT_PROTO_VERSION);
	ASSERT_TRUE(info.ready);
	out = guest_run(vm->a, echo, &code);
	EXPECT_STREQ(out, "hello from the guest\n");
	EXPECT_EQ(code, 0);
	free(out);
	out = guest_run(vm->a, py, &code);
	EXPECT_STREQ(out, "4\n");
	EXPECT_EQ(code, 0);
	free(out);
	/* the root is the overlay, writable over the read-only image */
	out = guest_run(vm->a, mounts, &code);
	EXPECT_STREQ(out, "1\nrw\n");
	free(out);
	vm->ok = !ct_failed;
}

TEST_F(guest, boot_echo_python)
{
	echo_python(&self->vm);
}

TEST_F(guest, identity_clock_rng_files)
{
	const char *host[] = { "hostname", NULL };
	const char *date[] = { "date", "+%Y", NULL };
	const char *cat[] = { "cat", "/usr/local/cube-test", NULL };
	struct cube_agent_identity id = {
		.hostname = "cube-l2",
		.sandbox_id = "sbx-l2-test",
		.set_time = true,
		.time_ns = 2000000000ULL * 1000000000ULL,	/* 2033-05-18 */
	};
	struct cube_agent_info info;
	uint8_t seed[64];
	char *out;
	int code;
	size_t i;

	ASSERT_EQ(cube_agent_set_identity(self->vm.a, &id), 0);
	ASSERT_EQ(cube_agent_ping(self->vm.a, &info), 0);
	EXPECT_STREQ(info.hostname, "cube-l2");
	EXPECT_STREQ(info.sandbox_id, "sbx-l2-test");
	out = guest_run(self->vm.a, host, &code);
	EXPECT_STREQ(out, "cube-l2\n");
	free(out);
	out = guest_run(self->vm.a, date, &code);
	EXPECT_STREQ(out, "2033\n");
	free(out);
	for (i = 0; i < sizeof(seed); i++)
		seed[i] = (uint8_t)(i * 37 + 11);
	EXPECT_EQ(cube_agent_reseed(self->vm.a, seed, sizeof(seed)), 0);
	EXPECT_EQ(cube_agent_reseed(self->vm.a, seed, 8), -EINVAL);
	ASSERT_EQ(cube_agent_write_buf(self->vm.a, "/usr/local/cube-test", 0644,
				       "written from the host\n", 22), 0);
	out = guest_run(self->vm.a, cat, &code);
	EXPECT_STREQ(out, "written from the host\n");
	free(out);
	EXPECT_EQ(cube_agent_stat(self->vm.a, "/nonexistent", &(struct cube_agent_stat){ 0 }),
		  -ENOENT);
	self->vm.ok = !ct_failed;
}

/* The minimal kernel of guest/kernel.config, when it was built. */
FIXTURE(cube_kernel) {
	struct vm vm;
};

FIXTURE_SETUP(cube_kernel)
{
	if (access("./bzImage-cube", R_OK))
		SKIP("no bzImage-cube (make -C guest kernel)");
	/*
	 * Without ACPI, with the devices on the command line: cube-vmm's
	 * vsock (device 0, IRQ 5) and blk (device 2, IRQ 7) windows.
	 */
	vm_boot(&self->vm, "./bzImage-cube",
		"cube.rootfstype=ext4 acpi=off "
		"virtio_mmio.device=512@0xd0000000:5 "
		"virtio_mmio.device=512@0xd0002000:7");
}

FIXTURE_TEARDOWN(cube_kernel)
{
	vm_stop(&self->vm);
}

TEST_F(cube_kernel, boot_echo_python)
{
	echo_python(&self->vm);
}

/* Boots take longer than the default 60 s per test under TCG. */
int main(int argc, char **argv)
{
	if (!getenv("CUBE_TEST_TIMEOUT"))
		setenv("CUBE_TEST_TIMEOUT", "400", 1);
	return ct_main(argc, argv);
}
