// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm boots Debian's cloud kernel with a tiny initramfs: serial
 * output, SMP, power off and reset end the VM cleanly, the timeout kills
 * it, bad options are refused.
 */
#include "vmm_util.h"

struct run {
	char dir[128];
	char log[192];
	char err[192];
	int status;
};

/* Boot mode MODE (cube.test=MODE) with extra options; waits for the end. */
static void boot(struct run *r, const char *mode, const char *vcpus,
		 const char *timeout, double wait_s)
{
	char append[64];
	const char *argv[24];
	int n = 0;

	mk_scratch(r->dir, sizeof(r->dir), mode);
	snprintf(r->log, sizeof(r->log), "%s/console.log", r->dir);
	snprintf(r->err, sizeof(r->err), "%s/stderr.log", r->dir);
	snprintf(append, sizeof(append), "cube.test=%s", mode);
	argv[n++] = "cube-vmm";
	argv[n++] = "--kernel";
	argv[n++] = l2_kernel();
	argv[n++] = "--initrd";
	argv[n++] = L2_INITRD;
	argv[n++] = "--append";
	argv[n++] = append;
	argv[n++] = "--mem";
	argv[n++] = "192";
	argv[n++] = "--console-log";
	argv[n++] = r->log;
	argv[n++] = "--vcpus";
	argv[n++] = vcpus;
	argv[n++] = "--timeout";
	argv[n++] = timeout;
	argv[n++] = "--stats";
	argv[n] = NULL;
	r->status = vmm_wait(vmm_spawn(argv, r->err), wait_s);
	if (!ct_exited_with(r->status, 0)) {
		dump_file("console", r->log);
		dump_file("stderr", r->err);
	}
}

TEST(boot_to_serial_and_power_off)
{
	struct run r;

	need_kvm();
	boot(&r, "boot", "1", "240", 300);
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-INIT"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-BOOT-OK"));
	EXPECT_FALSE(file_has(r.log, "CUBE-L2-MODULE-FAILED"));
	EXPECT_FALSE(file_has(r.log, "CUBE-L2-POWEROFF-FAILED"));
	ASSERT_EXIT(r.status, 0);
	EXPECT_TRUE(file_has(r.err, "stats: exits="));
	rm_tree(r.dir);
}

TEST(smp_two_vcpus)
{
	struct run r;

	need_kvm();
	boot(&r, "cpus", "2", "240", 300);
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-CPUS 2"));
	ASSERT_EXIT(r.status, 0);
	rm_tree(r.dir);
}

TEST(guest_reboot_ends_vm)
{
	struct run r;

	need_kvm();
	boot(&r, "reboot", "1", "240", 300);
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-REBOOT"));
	ASSERT_EXIT(r.status, 0);
	rm_tree(r.dir);
}

TEST(virtio_rng_gives_entropy)
{
	struct run r;

	need_kvm();
	boot(&r, "rng", "1", "240", 300);
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-RNG virtio_rng"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-RNG-READ 64"));
	ASSERT_EXIT(r.status, 0);
	rm_tree(r.dir);
}

TEST(timeout_kills_vm)
{
	struct run r;
	double t0 = now_s();

	need_kvm();
	boot(&r, "hang", "1", "20", 120);
	ASSERT_EXIT(r.status, 3);
	EXPECT_TRUE(file_has(r.err, "timeout after 20 s"));
	EXPECT_GE(now_s() - t0, 19.0);
	rm_tree(r.dir);
}

static int run_args(const char *const *argv, const char *err)
{
	return vmm_wait(vmm_spawn(argv, err), 30);
}

TEST(bad_options_refused)
{
	char dir[128], err[192], junk[192];
	const char *k;
	int st, fd;

	need_kvm();
	k = l2_kernel();
	mk_scratch(dir, sizeof(dir), "opts");
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(junk, sizeof(junk), "%s/junk", dir);
	fd = open(junk, O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(ftruncate(fd, 65536), 0);
	close(fd);

	{
		const char *a[] = { "x", "--kernel", k, "--mem", "1", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--mem"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--trim-every", "0",
				    NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--trim-every"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--merge-group", "0",
				    NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--merge-group"));
	}
	{
		/* a boot is no clone: nothing to merge */
		const char *a[] = { "x", "--kernel", k, "--merge-group", "3",
				    NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--merge-group needs --restore"));
	}
	{
		/* fds 0-2 are stdio: never a supervisor's pipe */
		const char *a[] = { "x", "--kernel", k, "--parent-fd", "2",
				    NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--parent-fd"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--parent-fd", "x",
				    NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--parent-fd"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--rollback-keep",
				    "3073", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--rollback-keep"));
	}
	{
		/* a jailed VMM opens no file by name: its checkpoints neither */
		const char *a[] = { "x", "--kernel", k, "--checkpoint-dir",
				    dir, "--jail-user", "4096:4096",
				    "--jail-root", dir, NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--checkpoint-dir: a jailed VMM"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--vcpus", "0", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
	}
	{
		const char *a[] = { "x", "--kernel", k, "--vcpus", "99", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
	}
	{
		const char *a[] = { "x", "--mem", "128", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
		EXPECT_TRUE(file_has(err, "--kernel"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--restore", dir, NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 2);
	}
	{
		const char *a[] = { "x", "--kernel", junk, "--no-cgroup", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 1);
		EXPECT_TRUE(file_has(err, "not a bzImage"));
	}
	{
		const char *a[] = { "x", "--kernel", "/nonexistent", "--no-cgroup",
				    NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 1);
		EXPECT_TRUE(file_has(err, "No such file"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--rootfs", "/nonexistent",
				    "--no-cgroup", NULL };

		st = run_args(a, err);
		EXPECT_EXIT(st, 1);
		EXPECT_TRUE(file_has(err, "--rootfs"));
	}
	{
		const char *a[] = { "x", "--kernel", k, "--initrd", junk, "--mem",
				    "64", "--no-cgroup", NULL };

		/* An initrd bigger than RAM does not fit. */
		ASSERT_EQ(truncate(junk, 80 << 20), 0);
		st = run_args(a, err);
		EXPECT_EXIT(st, 1);
		EXPECT_TRUE(file_has(err, "does not fit"));
	}
	rm_tree(dir);
}

VMM_TEST_MAIN()
