// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm snapshots: a booted guest is saved, three clones restored from
 * it run independently at once with the agent channel (vsock) usable
 * right away, both over the memory file (--no-cube) and over /dev/cube
 * clones sharing one module snapshot; corrupt or truncated snapshots are
 * refused with a clear error and no VM; a snapshot restored before cube.ko
 * is reloaded restores onto its own memory after it.
 */
#include <inttypes.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/cube.h>

#include "vmm_util.h"
#include "cube_module.h"

#define ECHO_PORT	1234
#define NR_CLONES	3

static pid_t spawn_boot(const char *dir, const char *log, const char *err)
{
	char uds[192], ctl[192];
	const char *argv[32];
	int n = 0;

	snprintf(uds, sizeof(uds), "%s/vsock", dir);
	snprintf(ctl, sizeof(ctl), "%s/control", dir);
	argv[n++] = "cube-vmm";
	argv[n++] = "--kernel";
	argv[n++] = l2_kernel();
	argv[n++] = "--initrd";
	argv[n++] = L2_INITRD;
	argv[n++] = "--append";
	argv[n++] = "cube.test=vsock";
	argv[n++] = "--mem";
	argv[n++] = "160";
	argv[n++] = "--vcpus";
	argv[n++] = "2";
	argv[n++] = "--console-log";
	argv[n++] = log;
	argv[n++] = "--vsock-uds";
	argv[n++] = uds;
	argv[n++] = "--control";
	argv[n++] = ctl;
	argv[n++] = "--timeout";
	argv[n++] = "300";
	argv[n] = NULL;
	return vmm_spawn(argv, err);
}

/* Boot, check the echo service, snapshot into dir/snap, stop. */
static void make_snapshot(const char *dir)
{
	char log[192], err[192], uds[192], ctl[192], req[256], reply[256];
	pid_t pid;
	int fd, st;

	snprintf(log, sizeof(log), "%s/boot.log", dir);
	snprintf(err, sizeof(err), "%s/boot.err", dir);
	snprintf(uds, sizeof(uds), "%s/vsock", dir);
	snprintf(ctl, sizeof(ctl), "%s/control", dir);
	pid = spawn_boot(dir, log, err);
	ASSERT_GT(pid, 0);
	if (!wait_for(log, "CUBE-L2-VSOCK-READY", BOOT_TIMEOUT, pid)) {
		dump_file("console", log);
		dump_file("stderr", err);
		kill(pid, SIGKILL);
		ASSERT_TRUE(0);
	}
	fd = vsock_open(uds, ECHO_PORT);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(echo_check(fd, 4096, 1), 0);
	/* Left open: the snapshot has a live connection to reset. */
	snprintf(req, sizeof(req), "snapshot %s/snap", dir);
	ASSERT_EQ(control(ctl, req, reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK snapshot", 11), 0);
	/* The original keeps running after the snapshot. */
	ASSERT_EQ(echo_check(fd, 4096, 2), 0);
	close(fd);
	ASSERT_EQ(control(ctl, "stop", reply, sizeof(reply)), 0);
	st = vmm_wait(pid, 60);
	ASSERT_EXIT(st, 0);
}

static pid_t spawn_restore(const char *snap, const char *dir, int i,
			   const char *extra)
{
	char uds[192], ctl[192], log[192], err[192];
	const char *argv[24];
	int n = 0;

	snprintf(uds, sizeof(uds), "%s/vsock%d", dir, i);
	snprintf(ctl, sizeof(ctl), "%s/control%d", dir, i);
	snprintf(log, sizeof(log), "%s/clone%d.log", dir, i);
	snprintf(err, sizeof(err), "%s/clone%d.err", dir, i);
	argv[n++] = "cube-vmm";
	argv[n++] = "--restore";
	argv[n++] = snap;
	argv[n++] = "--vsock-uds";
	argv[n++] = uds;
	argv[n++] = "--control";
	argv[n++] = ctl;
	argv[n++] = "--console-log";
	argv[n++] = log;
	argv[n++] = "--timeout";
	argv[n++] = "300";
	if (extra)
		argv[n++] = extra;
	argv[n] = NULL;
	return vmm_spawn(argv, err);
}

/* Connect to a clone's echo port, retrying while it comes up. */
static int clone_connect(const char *uds, double timeout)
{
	double end = now_s() + timeout;

	while (now_s() < end) {
		int fd = vsock_open(uds, ECHO_PORT);

		if (fd >= 0)
			return fd;
		usleep(100000);
	}
	return -1;
}

/* @key's value in a control reply, -1 when absent */
static long long reply_field(const char *reply, const char *key)
{
	const char *p = strstr(reply, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/*
 * Stop clone 0 through its control socket, then check that each other clone
 * still echoes (with pattern seed + i) and runs before ending it; closes
 * every clone's vsock.  A clone on cube.ko (@on_cube) reports its clone's
 * counters in "status": it has handled faults and holds private pages (the
 * guest wrote since the restore); one over the memory file reports none.
 */
static void stop_first_then_rest(const char *dir, const pid_t *pid,
				 const int *fd, int seed, bool on_cube)
{
	char path[256], reply[256];
	int i, st;

	snprintf(path, sizeof(path), "%s/control0", dir);
	ASSERT_EQ(control(path, "stop", reply, sizeof(reply)), 0);
	st = vmm_wait(pid[0], 60);
	EXPECT_EXIT(st, 0);
	close(fd[0]);
	for (i = 1; i < NR_CLONES; i++) {
		EXPECT_EQ(echo_check(fd[i], 4096, seed + i), 0);
		close(fd[i]);
		snprintf(path, sizeof(path), "%s/control%d", dir, i);
		ASSERT_EQ(control(path, "status", reply, sizeof(reply)), 0);
		EXPECT_EQ(strncmp(reply, "OK running vcpus=2 mem=160", 26), 0);
		if (on_cube) {
			EXPECT_GT(reply_field(reply, " clone_faults="), 0);
			EXPECT_GT(reply_field(reply, " clone_private_pages="), 0);
			EXPECT_GE(reply_field(reply, " clone_cow_faults="), 0);
		} else {
			EXPECT_EQ(strstr(reply, "clone_"), NULL);
		}
		kill(pid[i], SIGTERM);
		st = vmm_wait(pid[i], 60);
		EXPECT_EXIT(st, 0);
	}
}

TEST(snapshot_then_three_clones)
{
	char dir[128], snap[160], path[256];
	pid_t pid[NR_CLONES];
	int fd[NR_CLONES], i;
	double t0;

	need_kvm();
	mk_scratch(dir, sizeof(dir), "snap");
	make_snapshot(dir);
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(path, sizeof(path), "%s/state", snap);
	ASSERT_EQ(access(path, R_OK), 0);

	t0 = now_s();
	for (i = 0; i < NR_CLONES; i++) {
		pid[i] = spawn_restore(snap, dir, i, "--no-cube");
		ASSERT_GT(pid[i], 0);
	}
	for (i = 0; i < NR_CLONES; i++) {
		snprintf(path, sizeof(path), "%s/vsock%d", dir, i);
		fd[i] = clone_connect(path, 60);
		if (fd[i] < 0) {
			snprintf(path, sizeof(path), "%s/clone%d.err", dir, i);
			dump_file("clone stderr", path);
		}
		ASSERT_GE(fd[i], 0);
	}
	TH_LOG("three clones answering after %.1f s", now_s() - t0);
	/* Each clone echoes its own data, interleaved. */
	for (i = 0; i < NR_CLONES; i++) {
		int r = echo_check(fd[i], 32768, 10 + i);

		if (r) {
			TH_LOG("clone %d: echo %d", i, r);
			snprintf(path, sizeof(path), "%s/clone%d.log", dir, i);
			dump_file("clone console", path);
			snprintf(path, sizeof(path), "%s/clone%d.err", dir, i);
			dump_file("clone stderr", path);
		}
		EXPECT_EQ(r, 0);
	}
	for (i = NR_CLONES - 1; i >= 0; i--)
		EXPECT_EQ(echo_check(fd[i], 8192, 20 + i), 0);

	/* Stopping one leaves the others running. */
	stop_first_then_rest(dir, pid, fd, 30, false);
	/* The file path made no module snapshot. */
	snprintf(path, sizeof(path), "%s/cube-snapshot-id", snap);
	EXPECT_NE(access(path, F_OK), 0);
	rm_tree(dir);
}

static void mem_stats(int dev, struct cube_mem_stats *ms)
{
	memset(ms, 0, sizeof(*ms));
	ASSERT_EQ(ioctl(dev, CUBE_IOC_MEM_STATS, ms), 0);
}

TEST(snapshot_then_three_cube_clones)
{
	char dir[128], snap[160], path[256], reply[256];
	struct cube_mem_stats before, during, after;
	struct cube_snapshot_info info = { 0 };
	struct cube_snapshot_id del = { 0 };
	uint64_t guest_pages = (160ULL << 20) / 4096, priv, shared;
	pid_t pid[NR_CLONES];
	int fd[NR_CLONES], i, st, dev;

	need_kvm();
	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	ASSERT_GE(dev, 0);
	mk_scratch(dir, sizeof(dir), "cubesnap");
	make_snapshot(dir);
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	mem_stats(dev, &before);

	/* All three at once: their first restores race for the snapshot. */
	for (i = 0; i < NR_CLONES; i++) {
		pid[i] = spawn_restore(snap, dir, i, "--verify-memory");
		ASSERT_GT(pid[i], 0);
	}
	for (i = 0; i < NR_CLONES; i++) {
		snprintf(path, sizeof(path), "%s/vsock%d", dir, i);
		fd[i] = clone_connect(path, 60);
		if (fd[i] < 0) {
			snprintf(path, sizeof(path), "%s/clone%d.err", dir, i);
			dump_file("clone stderr", path);
		}
		ASSERT_GE(fd[i], 0);
	}
	for (i = 0; i < NR_CLONES; i++)
		EXPECT_EQ(echo_check(fd[i], 32768, 40 + i), 0);
	for (i = NR_CLONES - 1; i >= 0; i--)
		EXPECT_EQ(echo_check(fd[i], 8192, 50 + i), 0);

	/* One module snapshot for the directory, three live clones of it. */
	mem_stats(dev, &during);
	EXPECT_EQ(during.snapshots, before.snapshots + 1);
	EXPECT_EQ(during.clones, before.clones + NR_CLONES);
	info.id = recorded_id(snap);
	ASSERT_NE(info.id, 0);
	ASSERT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), 0);
	EXPECT_EQ(info.clones, NR_CLONES);
	EXPECT_EQ(info.size, 160ULL << 20);
	EXPECT_EQ(info.depth, 1);
	priv = (during.private_pages - before.private_pages) / NR_CLONES;
	shared = during.shared_pages - before.shared_pages;
	TH_LOG("guest %" PRIu64 " pages: snapshot holds %" PRIu64
	       " shared, each clone ~%" PRIu64 " private", guest_pages, shared,
	       priv);
	EXPECT_EQ(shared, info.pages);
	EXPECT_GT(shared, 0);
	EXPECT_GT(priv, 0);
	EXPECT_LT(priv, guest_pages / 8);

	/* Stopping one leaves the others running, on their own memory. */
	stop_first_then_rest(dir, pid, fd, 60, true);

	/* The clones are gone; the snapshot stays until deleted. */
	mem_stats(dev, &after);
	EXPECT_EQ(after.clones, before.clones);
	EXPECT_EQ(after.private_pages, before.private_pages);
	EXPECT_EQ(after.snapshots, before.snapshots + 1);
	del.id = info.id;
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del), 0);
	mem_stats(dev, &after);
	EXPECT_EQ(after.snapshots, before.snapshots);
	EXPECT_EQ(after.shared_pages, before.shared_pages);

	/* A stale id (deleted, or cube.ko reloaded) is replaced. */
	pid[0] = spawn_restore(snap, dir, 0, NULL);
	ASSERT_GT(pid[0], 0);
	snprintf(path, sizeof(path), "%s/vsock0", dir);
	fd[0] = clone_connect(path, 60);
	ASSERT_GE(fd[0], 0);
	EXPECT_EQ(echo_check(fd[0], 4096, 70), 0);
	close(fd[0]);
	EXPECT_NE(recorded_id(snap), 0);
	EXPECT_NE(recorded_id(snap), info.id);
	snprintf(path, sizeof(path), "%s/control0", dir);
	ASSERT_EQ(control(path, "stop", reply, sizeof(reply)), 0);
	st = vmm_wait(pid[0], 60);
	EXPECT_EXIT(st, 0);
	del.id = recorded_id(snap);
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del), 0);
	mem_stats(dev, &after);
	EXPECT_EQ(after.snapshots, before.snapshots);
	EXPECT_EQ(after.clones, before.clones);
	close(dev);
	rm_tree(dir);
}

static void copy_snap(const char *from, const char *to)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -a '%s' '%s'", to, from, to);
	ASSERT_EQ(system(cmd), 0);
}

static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	ASSERT_EQ(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/*
 * Restore must fail fast with status 1 and msg on stderr, and leave nothing
 * behind: no record in @snap, and (@dev open) the module's snapshot and
 * clone counts at @base, counted before anything is swept.
 */
static void expect_refused(const char *snap, const char *dir, const char *msg,
			   const char *extra, int dev,
			   const struct cube_mem_stats *base)
{
	struct cube_mem_stats now;
	char err[192];
	int st;

	st = vmm_wait(spawn_restore(snap, dir, 9, extra), 60);
	snprintf(err, sizeof(err), "%s/clone9.err", dir);
	if (!ct_exited_with(st, 1) || !file_has(err, msg)) {
		TH_LOG("expected '%s'", msg);
		dump_file("stderr", err);
	}
	ASSERT_EXIT(st, 1);
	EXPECT_TRUE(file_has(err, msg));
	EXPECT_EQ(recorded_id(snap), 0);
	if (dev >= 0) {
		mem_stats(dev, &now);
		EXPECT_EQ(now.snapshots, base->snapshots);
		EXPECT_EQ(now.shared_pages, base->shared_pages);
		EXPECT_EQ(now.clones, base->clones);
	}
}

/*
 * @bad's file @name moved to @dir and replaced by a symlink to it: the
 * restore is refused ("cannot open NAME"); then the file is put back.
 */
static void symlink_refused(const char *bad, const char *dir,
			    const char *name, int dev,
			    const struct cube_mem_stats *ref)
{
	char path[256], real[256], msg[64];

	snprintf(path, sizeof(path), "%s/%s", bad, name);
	snprintf(real, sizeof(real), "%s/%s.real", dir, name);
	snprintf(msg, sizeof(msg), "cannot open %s", name);
	ASSERT_EQ(rename(path, real), 0);
	ASSERT_EQ(symlink(real, path), 0);
	expect_refused(bad, dir, msg, NULL, dev, ref);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(rename(real, path), 0);
}

TEST(corrupt_snapshots_refused)
{
	char dir[128], snap[160], bad[160], path[256];
	struct cube_mem_stats before, ref, after;
	struct stat stt;
	int dev;

	need_kvm();
	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	if (dev >= 0)
		mem_stats(dev, &before);
	mk_scratch(dir, sizeof(dir), "corrupt");
	make_snapshot(dir);
	/* What every refused restore below must leave as it is. */
	if (dev >= 0)
		mem_stats(dev, &ref);
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(bad, sizeof(bad), "%s/bad", dir);

	/* A flipped byte in the middle of the state file. */
	copy_snap(snap, bad);
	snprintf(path, sizeof(path), "%s/state", bad);
	ASSERT_EQ(stat(path, &stt), 0);
	flip_byte(path, stt.st_size / 2);
	expect_refused(bad, dir, "checksum mismatch", NULL, dev, &ref);

	/* The state file cut in half. */
	copy_snap(snap, bad);
	ASSERT_EQ(truncate(path, stt.st_size / 2), 0);
	expect_refused(bad, dir, "truncated", NULL, dev, &ref);

	/* Not a snapshot at all. */
	copy_snap(snap, bad);
	flip_byte(path, 0);
	expect_refused(bad, dir, "bad magic", NULL, dev, &ref);

	/* The memory file cut short. */
	copy_snap(snap, bad);
	snprintf(path, sizeof(path), "%s/memory", bad);
	ASSERT_EQ(truncate(path, 1 << 20), 0);
	expect_refused(bad, dir, "memory file has", NULL, dev, &ref);

	/* A flipped byte in memory: caught when asked to verify. */
	copy_snap(snap, bad);
	flip_byte(path, 5 << 20);
	expect_refused(bad, dir, "memory checksum mismatch", "--verify-memory",
		       dev, &ref);

	/*
	 * Snapshot files are never followed through a symlink: a memory file
	 * or a state file that is one (to an intact copy) is refused.
	 */
	copy_snap(snap, bad);
	symlink_refused(bad, dir, "memory", dev, &ref);
	symlink_refused(bad, dir, "state", dev, &ref);

	/* No snapshot there. */
	snprintf(path, sizeof(path), "%s/nothing", dir);
	expect_refused(path, dir, "cannot open", NULL, dev, &ref);
	snprintf(path, sizeof(path), "%s/state", bad);
	ASSERT_EQ(unlink(path), 0);
	expect_refused(bad, dir, "cannot open state", NULL, dev, &ref);

	/* The intact one still restores with verification. */
	{
		char uds[192], reply[64];
		pid_t pid = spawn_restore(snap, dir, 5, "--verify-memory");
		int fd, st;

		snprintf(uds, sizeof(uds), "%s/vsock5", dir);
		fd = clone_connect(uds, 60);
		EXPECT_GE(fd, 0);
		if (fd >= 0) {
			EXPECT_EQ(echo_check(fd, 1024, 5), 0);
			close(fd);
		}
		snprintf(uds, sizeof(uds), "%s/control5", dir);
		EXPECT_EQ(control(uds, "stop", reply, sizeof(reply)), 0);
		st = vmm_wait(pid, 60);
		EXPECT_EXIT(st, 0);
	}
	/*
	 * The one restore that ran cached a module snapshot for its folder
	 * (and only for it): count it, then drop it.
	 */
	EXPECT_EQ(recorded_id(bad), 0);
	if (dev >= 0) {
		mem_stats(dev, &after);
		EXPECT_NE(recorded_id(snap), 0);
		EXPECT_EQ(after.snapshots, ref.snapshots + 1);
		EXPECT_EQ(after.clones, ref.clones);
	}
	drop_recorded_snapshot(snap);
	if (dev >= 0) {
		mem_stats(dev, &after);
		EXPECT_EQ(after.snapshots, before.snapshots);
		EXPECT_EQ(after.shared_pages, before.shared_pages);
		close(dev);
	}
	rm_tree(dir);
}

/* Restore @snap onto a cube clone, echo through it, stop it. */
static void restore_and_echo(const char *snap, const char *dir, int seed)
{
	char path[256], reply[256];
	pid_t pid;
	int fd, st;

	pid = spawn_restore(snap, dir, 0, NULL);
	ASSERT_GT(pid, 0);
	snprintf(path, sizeof(path), "%s/vsock0", dir);
	fd = clone_connect(path, 30);
	if (fd >= 0) {
		EXPECT_EQ(echo_check(fd, 4096, seed), 0);
		close(fd);
	} else {
		snprintf(path, sizeof(path), "%s/clone0.err", dir);
		dump_file("clone stderr", path);
		kill(pid, SIGKILL);
		vmm_wait(pid, 60);
		ASSERT_GE(fd, 0);
	}
	snprintf(path, sizeof(path), "%s/control0", dir);
	ASSERT_EQ(control(path, "stop", reply, sizeof(reply)), 0);
	st = vmm_wait(pid, 60);
	EXPECT_EXIT(st, 0);
}

/*
 * The record a restore leaves in the snapshot folder outlives cube.ko.
 * After a reload, a snapshot of the same size made first in the new load
 * (here: all zeros) must not be taken for the folder's: the guest restored
 * onto it would have no kernel, and answer nothing.
 */
TEST(restore_after_module_reload)
{
	char dir[128], snap[160];
	struct cube_snapshot_id del = { 0 };
	uint64_t size = 160ULL << 20, before, decoy;
	struct cube_snapshot_create sc = {
		.source = CUBE_SNAPSHOT_SRC_USER,
		.fd = -1,
		.length = size,
	};
	void *zeros;
	int dev;

	need_kvm();
	mk_scratch(dir, sizeof(dir), "reload");
	make_snapshot(dir);
	snprintf(snap, sizeof(snap), "%s/snap", dir);

	/* Restored in one load: the folder's record names its snapshot. */
	ct_reload_module();
	restore_and_echo(snap, dir, 80);
	before = recorded_id(snap);
	ASSERT_NE(before, 0);

	/* The next load's first snapshot: the same size, all zeros. */
	ct_reload_module();
	zeros = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		     0);
	ASSERT_NE(zeros, MAP_FAILED);
	sc.addr = (uintptr_t)zeros;
	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	ASSERT_GE(dev, 0);
	ASSERT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &sc), 0);
	munmap(zeros, size);
	decoy = sc.id;
	close(dev);
	TH_LOG("record of the first load %#" PRIx64 ", new snapshot %#" PRIx64,
	       before, decoy);
	EXPECT_NE(decoy, before);

	/* The record is stale: the restore maps the folder's memory. */
	restore_and_echo(snap, dir, 81);
	EXPECT_NE(recorded_id(snap), before);
	EXPECT_NE(recorded_id(snap), decoy);

	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	ASSERT_GE(dev, 0);
	del.id = decoy;
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del), 0);
	close(dev);
	drop_recorded_snapshot(snap);
	rm_tree(dir);
}

VMM_TEST_MAIN()
