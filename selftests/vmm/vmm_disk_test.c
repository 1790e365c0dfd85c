// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm's writable disk (--disk, --disk-fd): an L2 guest in
 * cube.test=sh mode (vsock-sh runs shell lines sent over vsock) finds it
 * by its serial "cube-disk" beside a read-only rootfs and writes to it
 * with dd; the host file holds exactly what it wrote; a write past the
 * end fails in the guest and leaves the file's size alone; blkdiscard
 * punches holes in the file; "snapshot DIR" leaves DIR/disk.img equal to
 * the disk at that instant, whatever the guest writes after; a restore
 * onto a larger copy makes the guest see the new capacity (a config
 * change) and write past the old end; "checkpoint" then writes, then
 * "rollback NAME" give back exactly the checkpoint's disk, "rollback" the
 * snapshot's; bad --disk inputs and mismatched restores are refused.
 */
#include <sys/stat.h>

#include "vmm_util.h"

#define SH_PORT		1236
#define MIB		(1ULL << 20)
#define DISK_SIZE	(8 * MIB)
#define BIG_SIZE	(16 * MIB)
#define ROOTFS_SIZE	MIB

/* Shared by the tests of one run (each runs in a child of the runner). */
static void shared_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/vmm-disk-%d", (int)getppid());
}

/*
 * One shell line in the guest: its output in out (NUL-ended, cut to
 * len), its exit status returned; -1 when the guest did not answer.
 */
static int gsh(const char *uds, const char *cmd, char *out, size_t len,
	       double timeout)
{
	double end = now_s() + timeout;
	size_t n = 0;
	char *ex, buf[4096];
	int fd = -1, st = -1;

	while (fd < 0 && now_s() < end) {
		fd = vsock_open(uds, SH_PORT);
		if (fd < 0)
			usleep(100000);
	}
	if (fd < 0)
		return -1;
	if (write_all(fd, cmd, strlen(cmd)) || write_all(fd, "\n", 1))
		goto out;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, (int)((end - now_s()) * 1000)) <= 0)
			goto out;
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0)
			break;
		n += r;
		if (n == sizeof(buf) - 1)
			break;
	}
	buf[n] = 0;
	ex = NULL;
	for (char *p = strstr(buf, "EXIT "); p; p = strstr(p + 1, "EXIT "))
		ex = p;
	if (ex) {
		st = atoi(ex + 5);
		*ex = 0;
	}
	if (out && len) {
		n = strlen(buf);
		if (n >= len)
			n = len - 1;
		memcpy(out, buf, n);
		out[n] = 0;
		while (n && out[n - 1] == '\n')
			out[--n] = 0;
	}
out:
	close(fd);
	return st;
}

/* The bytes "yes TAG | head -c len" prints, from byte 0 of that stream. */
static void pattern(uint8_t *b, size_t len, const char *tag)
{
	size_t tl = strlen(tag), i;

	for (i = 0; i < len; i++) {
		size_t k = i % (tl + 1);

		b[i] = k < tl ? tag[k] : '\n';
	}
}

/* The guest writes len pattern bytes of tag at byte off of /dev/DEV. */
static int guest_write(const char *uds, const char *dev, const char *tag,
		       uint64_t off, uint64_t len)
{
	char cmd[256], out[512];
	int st;

	snprintf(cmd, sizeof(cmd),
		 "yes %s | head -c %llu | dd of=/dev/%s bs=4096 seek=%llu conv=fsync 2>&1 && sync",
		 tag, (unsigned long long)len, dev,
		 (unsigned long long)(off / 4096));
	st = gsh(uds, cmd, out, sizeof(out), 120);
	if (st)
		ct_diag("guest write %s: %d: %s", tag, st, out);
	return st;
}

static int read_at(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = pread(fd, buf, len, off) == (ssize_t)len ? 0 : -1;
	close(fd);
	return ret;
}

/* Does path hold pattern tag at [off, off + len)? */
static bool has_pattern(const char *path, uint64_t off, size_t len,
			const char *tag, size_t skip)
{
	uint8_t *want = malloc(skip + len), *got = malloc(len);
	bool ok;

	pattern(want, skip + len, tag);
	ok = want && got && !read_at(path, off, got, len) &&
	     !memcmp(want + skip, got, len);
	free(want);
	free(got);
	return ok;
}

static bool is_zero(const char *path, uint64_t off, size_t len)
{
	uint8_t *b = malloc(len);
	bool z = b && !read_at(path, off, b, len);
	size_t i;

	for (i = 0; z && i < len; i++)
		z = !b[i];
	free(b);
	return z;
}

/* The whole file, in a buffer of its size (*len). */
static uint8_t *file_bytes(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;

	if (stat(path, &st))
		return NULL;
	b = malloc(st.st_size ? st.st_size : 1);
	if (b && read_at(path, 0, b, st.st_size)) {
		free(b);
		return NULL;
	}
	*len = st.st_size;
	return b;
}

static bool same_file(const char *a, const char *b)
{
	size_t la = 0, lb = 0;
	uint8_t *ba = file_bytes(a, &la), *bb = file_bytes(b, &lb);
	bool same = ba && bb && la == lb && !memcmp(ba, bb, la);

	free(ba);
	free(bb);
	return same;
}

static int make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ret;

	if (fd < 0)
		return -1;
	ret = ftruncate(fd, size);
	close(fd);
	return ret;
}

/* dst: a sparse copy of src's data, then grown to size */
static int copy_file(const char *src, const char *dst, uint64_t size)
{
	size_t len = 0, off;
	uint8_t *b = file_bytes(src, &len);
	int fd, ret = 0;

	if (!b)
		return -1;
	fd = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(b);
		return -1;
	}
	for (off = 0; off < len && !ret; off += 4096) {
		size_t n = len - off < 4096 ? len - off : 4096, i;

		for (i = 0; i < n && !b[off + i]; i++)
			;
		if (i < n && pwrite(fd, b + off, n, off) != (ssize_t)n)
			ret = -1;
	}
	if (!ret && ftruncate(fd, size))
		ret = -1;
	close(fd);
	free(b);
	return ret;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_size;
}

static long long file_blocks(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_blocks;
}

struct gvm {
	pid_t pid;
	char uds[192], ctl[192], log[192], err[192];
	char dev[16];			/* the disk's name in the guest */
};

static void gvm_paths(struct gvm *v, const char *dir, const char *tag)
{
	snprintf(v->uds, sizeof(v->uds), "%s/vsock-%s", dir, tag);
	snprintf(v->ctl, sizeof(v->ctl), "%s/control-%s", dir, tag);
	snprintf(v->log, sizeof(v->log), "%s/%s.log", dir, tag);
	snprintf(v->err, sizeof(v->err), "%s/%s.err", dir, tag);
}

/* The disk's block device, found by its serial (GET_ID). */
static int find_disk(struct gvm *v)
{
	char out[256];

	if (gsh(v->uds,
		"for d in /sys/block/vd*; do [ \"$(cat $d/serial)\" = cube-disk ] && echo ${d##*/}; done; true",
		out, sizeof(out), 60) || !out[0] || strchr(out, '\n') ||
	    strlen(out) >= sizeof(v->dev)) {
		ct_diag("no single cube-disk device: '%s'", out);
		return -1;
	}
	memcpy(v->dev, out, strlen(out) + 1);
	return 0;
}

/* Boot with argv (NULL-ended, without --kernel ...) and find the disk. */
static int gvm_start(struct gvm *v, const char *const *extra, bool boot)
{
	const char *argv[40];
	int n = 0, i;

	argv[n++] = "cube-vmm";
	if (boot) {
		argv[n++] = "--kernel";
		argv[n++] = l2_kernel();
		argv[n++] = "--initrd";
		argv[n++] = L2_INITRD;
		argv[n++] = "--append";
		argv[n++] = "cube.test=sh";
		argv[n++] = "--mem";
		argv[n++] = "160";
	}
	argv[n++] = "--console-log";
	argv[n++] = v->log;
	argv[n++] = "--vsock-uds";
	argv[n++] = v->uds;
	argv[n++] = "--control";
	argv[n++] = v->ctl;
	argv[n++] = "--timeout";
	argv[n++] = "900";
	for (i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	v->pid = vmm_spawn(argv, v->err);
	if (v->pid < 0)
		return -1;
	if (boot && !wait_for(v->log, "CUBE-L2-SH-READY", BOOT_TIMEOUT, v->pid))
		goto fail;
	if (find_disk(v))
		goto fail;
	return 0;
fail:
	dump_file("console", v->log);
	dump_file("stderr", v->err);
	kill(v->pid, SIGKILL);
	vmm_wait(v->pid, 10);
	v->pid = -1;
	return -1;
}

static int gvm_stop(struct gvm *v)
{
	char reply[64];
	int st;

	if (v->pid <= 0)
		return -1;
	control(v->ctl, "stop", reply, sizeof(reply));
	st = vmm_wait(v->pid, 60);
	v->pid = -1;
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		dump_file("stderr", v->err);
		return -1;
	}
	return 0;
}

/* The guest's idea of the disk's size, in 512-byte sectors. */
static long long guest_sectors(struct gvm *v)
{
	char cmd[96], out[64];

	snprintf(cmd, sizeof(cmd), "cat /sys/block/%s/size", v->dev);
	return gsh(v->uds, cmd, out, sizeof(out), 30) ? -1 : atoll(out);
}

/* Wait until the guest sees want sectors (a config change reaches it). */
static long long wait_sectors(struct gvm *v, long long want, double timeout)
{
	double end = now_s() + timeout;
	long long s = -1;

	while (now_s() < end) {
		s = guest_sectors(v);
		if (s == want)
			break;
		usleep(500000);
	}
	return s;
}

/*
 * cube-vmm with args (NULL-ended) must exit non-zero before a VM exists
 * and say want on standard error.
 */
static void expect_refused(const char *dir, const char *const *args,
			   const char *want)
{
	char err[192];
	const char *argv[24];
	int n = 0, i, st;
	pid_t pid;

	snprintf(err, sizeof(err), "%s/refused.err", dir);
	argv[n++] = "cube-vmm";
	for (i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = "--timeout";
	argv[n++] = "60";
	argv[n] = NULL;
	pid = vmm_spawn(argv, err);
	st = vmm_wait(pid, 60);
	EXPECT_TRUE(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
	if (!file_has(err, want)) {
		ct_diag("expected '%s' from %s %s", want, args[0], args[1]);
		dump_file("stderr", err);
		EXPECT_TRUE(0);
	}
	EXPECT_FALSE(file_has(err, "set up in"));
}

TEST(bad_disk_options_are_refused)
{
	char dir[128], ok[192], odd[192], small[192], link[192], sub[192];
	const char *k;

	need_kvm();
	k = l2_kernel();
	mk_scratch(dir, sizeof(dir), "diskopt");
	snprintf(ok, sizeof(ok), "%s/ok", dir);
	snprintf(odd, sizeof(odd), "%s/odd", dir);
	snprintf(small, sizeof(small), "%s/small", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ASSERT_EQ(make_file(ok, DISK_SIZE), 0);
	ASSERT_EQ(make_file(odd, DISK_SIZE + 512), 0);
	ASSERT_EQ(make_file(small, 512 * 1024), 0);
	ASSERT_EQ(symlink(ok, link), 0);
	ASSERT_EQ(mkdir(sub, 0700), 0);
	{
		const char *a[] = { "--kernel", k, "--disk", "/nonexistent/disk",
				    NULL };

		expect_refused(dir, a, "--disk /nonexistent/disk: No such file");
	}
	{
		const char *a[] = { "--kernel", k, "--disk", link, NULL };

		expect_refused(dir, a, "is a symbolic link");
	}
	{
		const char *a[] = { "--kernel", k, "--disk", sub, NULL };

		expect_refused(dir, a, "Is a directory");
	}
	{
		const char *a[] = { "--kernel", k, "--disk", odd, NULL };

		expect_refused(dir, a, "not a multiple of 4096");
	}
	{
		const char *a[] = { "--kernel", k, "--disk", small, NULL };

		expect_refused(dir, a, "not between 1 MiB and 16 TiB");
	}
	{
		const char *a[] = { "--kernel", k, "--disk", ok, "--disk-fd",
				    "0", NULL };

		expect_refused(dir, a, "give one of --disk and --disk-fd");
	}
	{
		const char *a[] = { "--kernel", k, "--disk-fd", "77", NULL };

		expect_refused(dir, a, "--disk-fd 77: not an open file descriptor");
	}
	/* the size stayed; nothing was written */
	EXPECT_EQ(file_size(ok), (long long)DISK_SIZE);
	EXPECT_EQ(file_blocks(ok), 0);
	rm_tree(dir);
}

TEST(guest_writes_discards_and_a_snapshot)
{
	char dir[128], disk[192], rootfs[192], snap[192], img[256], req[320];
	char reply[256], out[256];
	uint8_t *at_snap = NULL;
	size_t snap_len = 0;
	long long before;
	struct gvm v;
	struct stat st;

	need_kvm();
	shared_dir(dir, sizeof(dir));
	mkdir(dir, 0700);
	snprintf(disk, sizeof(disk), "%s/disk", dir);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	ASSERT_EQ(make_file(disk, DISK_SIZE), 0);
	ASSERT_EQ(make_file(rootfs, ROOTFS_SIZE), 0);
	gvm_paths(&v, dir, "boot");
	{
		const char *extra[] = { "--rootfs", rootfs, "--disk", disk, NULL };

		ASSERT_EQ(gvm_start(&v, extra, true), 0);
	}
	TH_LOG("the disk is /dev/%s", v.dev);
	/* writable, its size, discard offered; the rootfs stays read-only */
	snprintf(req, sizeof(req),
		 "cat /sys/block/%s/ro /sys/block/%s/size /sys/block/%s/queue/discard_max_bytes; for d in /sys/block/vd*; do [ \"$(cat $d/serial)\" = cube-rootfs ] && cat $d/ro; done; true",
		 v.dev, v.dev, v.dev);
	EXPECT_EQ(gsh(v.uds, req, out, sizeof(out), 30), 0);
	TH_LOG("ro, size, discard_max_bytes, rootfs ro: %s", out);
	{
		long long ro = -1, size = -1, dmax = -1, rro = -1;

		sscanf(out, "%lld %lld %lld %lld", &ro, &size, &dmax, &rro);
		EXPECT_EQ(ro, 0);
		EXPECT_EQ(size, (long long)(DISK_SIZE / 512));
		EXPECT_GT(dmax, 0);
		EXPECT_EQ(rro, 1);
	}

	/* The guest writes 1 MiB at 1 MiB: the file holds exactly it. */
	ASSERT_EQ(guest_write(v.uds, v.dev, "CUBE-DISK-A", MIB, MIB), 0);
	EXPECT_TRUE(has_pattern(disk, MIB, MIB, "CUBE-DISK-A", 0));
	EXPECT_TRUE(is_zero(disk, 0, MIB));
	EXPECT_TRUE(is_zero(disk, 2 * MIB, DISK_SIZE - 2 * MIB));
	EXPECT_EQ(file_size(disk), (long long)DISK_SIZE);

	/* Past the end: an error in the guest, the file's size unchanged. */
	snprintf(req, sizeof(req),
		 "dd if=/dev/zero of=/dev/%s bs=4096 seek=%llu count=1 conv=fsync 2>&1",
		 v.dev, (unsigned long long)(DISK_SIZE / 4096));
	EXPECT_NE(gsh(v.uds, req, out, sizeof(out), 60), 0);
	TH_LOG("write past the end: %s", out);
	EXPECT_EQ(file_size(disk), (long long)DISK_SIZE);

	/* Discard: the first half of the data becomes a hole on the host. */
	if (gsh(v.uds, "command -v blkdiscard", out, sizeof(out), 30)) {
		TH_LOG("no blkdiscard in the guest: discard not tried");
	} else {
		before = file_blocks(disk);
		snprintf(req, sizeof(req), "blkdiscard -o %llu -l %llu /dev/%s 2>&1",
			 (unsigned long long)MIB, (unsigned long long)MIB / 2,
			 v.dev);
		EXPECT_EQ(gsh(v.uds, req, out, sizeof(out), 60), 0);
		TH_LOG("blocks before %lld, after %lld", before,
		       file_blocks(disk));
		EXPECT_LE(file_blocks(disk), before - (long long)(MIB / 2 / 512));
		EXPECT_TRUE(is_zero(disk, MIB, MIB / 2));
		EXPECT_TRUE(has_pattern(disk, MIB + MIB / 2, MIB / 2,
					"CUBE-DISK-A", MIB / 2));
	}

	/* A snapshot: disk.img is the disk at that instant. */
	snprintf(req, sizeof(req), "snapshot %s", snap);
	ASSERT_EQ(control(v.ctl, req, reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK snapshot", 11), 0);
	snprintf(img, sizeof(img), "%s/disk.img", snap);
	ASSERT_EQ(lstat(img, &st), 0);
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(st.st_mode & 0777, 0600);
	EXPECT_TRUE(same_file(img, disk));
	/* it costs what the disk holds, not its size */
	EXPECT_LE(st.st_blocks, file_blocks(disk) + 64);
	at_snap = file_bytes(img, &snap_len);
	ASSERT_TRUE(at_snap != NULL);

	/* Later writes go to the disk, never to the snapshot's copy. */
	ASSERT_EQ(guest_write(v.uds, v.dev, "CUBE-DISK-B", 3 * MIB, MIB), 0);
	EXPECT_TRUE(has_pattern(disk, 3 * MIB, MIB, "CUBE-DISK-B", 0));
	{
		size_t len = 0;
		uint8_t *now = file_bytes(img, &len);

		EXPECT_TRUE(now && len == snap_len && !memcmp(now, at_snap, len));
		free(now);
	}
	free(at_snap);
	EXPECT_EQ(gvm_stop(&v), 0);
}

TEST(mismatched_restores_are_refused)
{
	char dir[128], snap[192], nodisk[192], rootfs[192], small[192];
	char big[192], req[256], reply[128];
	struct gvm v;

	need_kvm();
	shared_dir(dir, sizeof(dir));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(req, sizeof(req), "%s/state", snap);
	ASSERT_EQ(access(req, R_OK), 0);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(small, sizeof(small), "%s/small", dir);
	snprintf(big, sizeof(big), "%s/big-refused", dir);
	ASSERT_EQ(make_file(small, DISK_SIZE / 2), 0);
	ASSERT_EQ(make_file(big, BIG_SIZE), 0);
	{
		const char *a[] = { "--restore", snap, "--rootfs", rootfs, NULL };

		expect_refused(dir, a, "the snapshot has a writable disk: give --disk");
	}
	{
		const char *a[] = { "--restore", snap, "--rootfs", rootfs,
				    "--disk", small, NULL };

		expect_refused(dir, a, "smaller than the snapshot's");
	}
	{
		const char *a[] = { "--restore", snap, "--rootfs", rootfs,
				    "--disk", big, "--disk-fd", "0", NULL };

		expect_refused(dir, a, "give one of --disk and --disk-fd");
	}
	/* A snapshot without a disk: taken as soon as the VMM answers. */
	snprintf(nodisk, sizeof(nodisk), "%s/nodisk", dir);
	gvm_paths(&v, dir, "nodisk");
	{
		const char *argv[] = { "cube-vmm", "--kernel", l2_kernel(),
				       "--initrd", L2_INITRD, "--append",
				       "cube.test=hang", "--mem", "160",
				       "--console-log", v.log, "--control",
				       v.ctl, "--timeout", "300", NULL };
		double end = now_s() + 60;

		v.pid = vmm_spawn(argv, v.err);
		ASSERT_GT(v.pid, 0);
		snprintf(req, sizeof(req), "snapshot %s", nodisk);
		while (now_s() < end &&
		       control(v.ctl, req, reply, sizeof(reply)))
			usleep(100000);
		EXPECT_EQ(strncmp(reply, "OK snapshot", 11), 0);
		EXPECT_EQ(gvm_stop(&v), 0);
	}
	{
		const char *a[] = { "--restore", nodisk, "--disk", big, NULL };

		expect_refused(dir, a, "the snapshot has no writable disk");
	}
	/* refusals write nothing */
	EXPECT_EQ(file_blocks(big), 0);
	EXPECT_EQ(file_blocks(small), 0);
}

TEST(restore_onto_a_larger_disk)
{
	char dir[128], snap[192], rootfs[192], big[192], img[256];
	char fdarg[16];
	struct gvm v;
	int fd;

	need_kvm();
	shared_dir(dir, sizeof(dir));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(img, sizeof(img), "%s/disk.img", snap);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(big, sizeof(big), "%s/big", dir);
	ASSERT_EQ(access(img, R_OK), 0);
	/* the caller's copy of disk.img, made larger (and passed as an fd) */
	ASSERT_EQ(copy_file(img, big, BIG_SIZE), 0);
	fd = open(big, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_GE(dup2(fd, 9), 0);	/* inherited: no O_CLOEXEC on 9 */
	close(fd);
	snprintf(fdarg, sizeof(fdarg), "%d", 9);
	gvm_paths(&v, dir, "big");
	{
		const char *extra[] = { "--restore", snap, "--rootfs", rootfs,
					"--disk-fd", fdarg, NULL };

		ASSERT_EQ(gvm_start(&v, extra, false), 0);
	}
	close(9);
	/* the configuration change: the guest reads the capacity again */
	EXPECT_EQ(wait_sectors(&v, BIG_SIZE / 512, 60),
		  (long long)(BIG_SIZE / 512));
	/* what it had written is there, and it writes past the old end */
	{
		char req[320], out[128];

		snprintf(req, sizeof(req),
			 "[ \"$(dd if=/dev/%s bs=4096 skip=384 count=128 2>/dev/null | md5sum)\" = \"$(yes CUBE-DISK-A | head -c 1048576 | tail -c 524288 | md5sum)\" ]",
			 v.dev);
		EXPECT_EQ(gsh(v.uds, req, out, sizeof(out), 60), 0);
	}
	EXPECT_EQ(guest_write(v.uds, v.dev, "CUBE-DISK-C", 12 * MIB, MIB), 0);
	EXPECT_TRUE(has_pattern(big, 12 * MIB, MIB, "CUBE-DISK-C", 0));
	EXPECT_TRUE(has_pattern(big, MIB + MIB / 2, MIB / 2, "CUBE-DISK-A",
				MIB / 2));
	EXPECT_EQ(file_size(big), (long long)BIG_SIZE);
	EXPECT_EQ(gvm_stop(&v), 0);
}

TEST(checkpoint_and_rollback_put_the_disk_back)
{
	char dir[128], snap[192], rootfs[192], big[192], ck[192], img[256];
	char ckimg[256], reply[256];
	uint8_t *at_ck, *at_snap, *now;
	size_t ck_len = 0, snap_len = 0, len = 0;
	struct gvm v;

	need_kvm();
	if (access("/dev/cube", R_OK | W_OK))
		SKIP("no /dev/cube: checkpoints need a cube.ko clone");
	shared_dir(dir, sizeof(dir));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(img, sizeof(img), "%s/disk.img", snap);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(big, sizeof(big), "%s/big2", dir);
	snprintf(ck, sizeof(ck), "%s/ck", dir);
	ASSERT_EQ(access(img, R_OK), 0);
	ASSERT_EQ(copy_file(img, big, BIG_SIZE), 0);
	mkdir(ck, 0700);
	gvm_paths(&v, dir, "ck");
	{
		const char *extra[] = { "--restore", snap, "--rootfs", rootfs,
					"--disk", big, "--checkpoint-dir", ck,
					NULL };

		ASSERT_EQ(gvm_start(&v, extra, false), 0);
	}
	EXPECT_EQ(wait_sectors(&v, BIG_SIZE / 512, 60),
		  (long long)(BIG_SIZE / 512));
	ASSERT_EQ(guest_write(v.uds, v.dev, "CUBE-DISK-C", 12 * MIB, MIB), 0);

	ASSERT_EQ(control(v.ctl, "checkpoint c1", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK checkpoint c1 ", 17), 0);
	snprintf(ckimg, sizeof(ckimg), "%s/c1/disk.img", ck);
	EXPECT_TRUE(same_file(ckimg, big));
	at_ck = file_bytes(big, &ck_len);
	ASSERT_TRUE(at_ck != NULL);

	/* More writes and a discard, then back to the checkpoint. */
	ASSERT_EQ(guest_write(v.uds, v.dev, "CUBE-DISK-D", 2 * MIB, 2 * MIB), 0);
	{
		char req[128], out[128];

		snprintf(req, sizeof(req), "blkdiscard -o %llu -l %llu /dev/%s 2>&1",
			 (unsigned long long)(12 * MIB),
			 (unsigned long long)MIB, v.dev);
		gsh(v.uds, req, out, sizeof(out), 60);
	}
	EXPECT_TRUE(has_pattern(big, 2 * MIB, 2 * MIB, "CUBE-DISK-D", 0));
	ASSERT_EQ(control(v.ctl, "rollback c1", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK rollback c1 ", 15), 0);
	now = file_bytes(big, &len);
	EXPECT_TRUE(now && len == ck_len && !memcmp(now, at_ck, len));
	free(now);
	EXPECT_EQ(guest_sectors(&v), (long long)(BIG_SIZE / 512));

	/* To the restore snapshot: its disk.img, then zeroes to the end. */
	ASSERT_EQ(guest_write(v.uds, v.dev, "CUBE-DISK-E", 5 * MIB, MIB), 0);
	ASSERT_EQ(control(v.ctl, "rollback", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK rollback @restore ", 21), 0);
	at_snap = file_bytes(img, &snap_len);
	now = file_bytes(big, &len);
	ASSERT_TRUE(at_snap && now);
	EXPECT_EQ(len, (size_t)BIG_SIZE);
	EXPECT_TRUE(len >= snap_len && !memcmp(now, at_snap, snap_len));
	EXPECT_TRUE(is_zero(big, snap_len, BIG_SIZE - snap_len));
	free(now);
	free(at_snap);
	/* the guest of the snapshot knew 8 MiB: told again */
	EXPECT_EQ(wait_sectors(&v, BIG_SIZE / 512, 60),
		  (long long)(BIG_SIZE / 512));
	/* and back to the checkpoint from there */
	ASSERT_EQ(control(v.ctl, "rollback c1", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback c1 ", 15), 0);
	now = file_bytes(big, &len);
	EXPECT_TRUE(now && len == ck_len && !memcmp(now, at_ck, len));
	free(now);
	free(at_ck);
	EXPECT_EQ(control(v.ctl, "checkpoint-rm c1", reply, sizeof(reply)), 0);
	EXPECT_EQ(access(ckimg, F_OK), -1);
	EXPECT_EQ(gvm_stop(&v), 0);
}

/* Last: the module snapshots its restores made, and the directory. */
TEST(zz_cleanup)
{
	static const char *const snaps[] = { "snap", "nodisk" };
	char dir[128], snap[192];
	size_t i;

	shared_dir(dir, sizeof(dir));
	for (i = 0; i < sizeof(snaps) / sizeof(snaps[0]); i++) {
		snprintf(snap, sizeof(snap), "%s/%s", dir, snaps[i]);
		drop_recorded_snapshot(snap);
	}
	rm_tree(dir);
}

VMM_TEST_MAIN()
