// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm's devices seen from a real guest: virtio-blk reads a known
 * image read-only, hybrid vsock carries many concurrent echo streams and
 * refuses bad CONNECT lines, and a guest writing hostile virtqueues
 * through /dev/mem gets DEVICE_NEEDS_RESET, never a hung or dead VMM.
 */
#include <pthread.h>

#include "vmm_util.h"

#define ECHO_PORT	1234
#define NR_STREAMS	16
#define STREAM_BYTES	(96 * 1024)

struct vm_run {
	char dir[128];
	char log[192];
	char err[192];
	char uds[192];
	char ctl[192];
	char img[192];
	pid_t pid;
};

static void start_with(struct vm_run *r, const char *mode, bool with_img,
		       const char *const *extra, const char *more_append)
{
	const char *argv[40];
	char append[128];
	int n = 0;

	mk_scratch(r->dir, sizeof(r->dir), mode);
	snprintf(r->log, sizeof(r->log), "%s/console.log", r->dir);
	snprintf(r->err, sizeof(r->err), "%s/stderr.log", r->dir);
	snprintf(r->uds, sizeof(r->uds), "%s/vsock", r->dir);
	snprintf(r->ctl, sizeof(r->ctl), "%s/control", r->dir);
	snprintf(r->img, sizeof(r->img), "%s/disk.img", r->dir);
	snprintf(append, sizeof(append), "cube.test=%s %s", mode,
		 more_append ? more_append : "");
	if (with_img) {
		FILE *f = fopen(r->img, "w");
		unsigned int i;

		ASSERT_TRUE(f != NULL);
		/* 3 MiB of a known pattern, plus a tail short of a sector. */
		for (i = 0; i < (3 << 20) / 4 + 100; i++)
			fwrite(&i, 4, 1, f);
		fclose(f);
	}
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
	argv[n++] = "--vsock-uds";
	argv[n++] = r->uds;
	argv[n++] = "--control";
	argv[n++] = r->ctl;
	argv[n++] = "--timeout";
	argv[n++] = "300";
	if (with_img) {
		argv[n++] = "--rootfs";
		argv[n++] = r->img;
	}
	while (extra && *extra && n < 38)
		argv[n++] = *extra++;
	argv[n] = NULL;
	r->pid = vmm_spawn(argv, r->err);
	ASSERT_GT(r->pid, 0);
}

static void start(struct vm_run *r, const char *mode, bool with_img)
{
	start_with(r, mode, with_img, NULL, NULL);
}

static int finish(struct vm_run *r, double wait_s)
{
	int st = vmm_wait(r->pid, wait_s);

	if (!ct_exited_with(st, 0)) {
		dump_file("console", r->log);
		dump_file("stderr", r->err);
	}
	return st;
}

TEST(blk_reads_known_image_read_only)
{
	char cmd[256], want[64] = "", line[128];
	struct vm_run r;
	FILE *p;
	int st;

	need_kvm();
	start(&r, "blk", true);
	/* The device shows whole sectors only: hash those. */
	snprintf(cmd, sizeof(cmd), "head -c %d '%s' | md5sum", 3 << 20, r.img);
	p = popen(cmd, "r");
	ASSERT_TRUE(p != NULL);
	ASSERT_TRUE(fgets(want, sizeof(want), p) != NULL);
	pclose(p);
	want[32] = 0;
	st = finish(&r, 300);
	ASSERT_EXIT(st, 0);
	snprintf(line, sizeof(line), "CUBE-L2-BLK-SUM %s", want);
	EXPECT_TRUE(file_has(r.log, line));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-BLK-SIZE 6144"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-BLK-RO 1"));
	rm_tree(r.dir);
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long)st.st_size;
}

/* Lines of @path that hold @needle, or -1. */
static int count_lines(const char *path, const char *needle)
{
	char line[512];
	FILE *f = fopen(path, "re");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, needle);
	fclose(f);
	return n;
}

/*
 * A guest cannot make its console log hold more than --console-max: at the
 * cap the log keeps its newest half, so it still ends with what the guest
 * wrote last.  Under emulation every byte on the UART is a VM exit that
 * costs a millisecond or so: the floods are small, the bounds smaller.
 */
TEST(console_log_is_capped_and_keeps_its_newest)
{
	static const char *const extra[] = { "--console-max", "4096", NULL };
	struct vm_run r;
	long size;
	int lines;

	need_kvm();
	/* 80 lines of about 80 bytes after the boot's few: two rotations */
	start_with(&r, "flood", false, extra, "cube.flood=80");
	ASSERT_EXIT(finish(&r, 300), 0);
	size = file_size(r.log);
	lines = count_lines(r.log, "CUBE-L2-FLOOD-0123");
	TH_LOG("console log: %ld bytes, %d of the 80 flood lines", size, lines);
	EXPECT_LE(size, 4096);
	EXPECT_GT(size, 2048);
	EXPECT_TRUE(file_has(r.log, "older output dropped"));
	EXPECT_TRUE(file_has(r.log, "the console log keeps its newest"));
	/* the newest is there, the oldest gone */
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-FLOOD-DONE"));
	EXPECT_GT(lines, 10);
	EXPECT_LT(lines, 60);
	rm_tree(r.dir);
}

/*
 * Nor write it faster than --console-rate after its burst (four seconds'
 * worth): what is over is dropped, and a line says how much.
 */
TEST(console_log_is_rate_limited)
{
	static const char *const extra[] = { "--console-rate", "32", NULL };
	struct vm_run r;
	long size;

	need_kvm();
	/* 40 lines of about 80 bytes: 3 KiB, far more than 128 bytes and 32 a second */
	start_with(&r, "flood", false, extra, "cube.flood=40");
	ASSERT_EXIT(finish(&r, 300), 0);
	size = file_size(r.log);
	EXPECT_TRUE(file_has(r.log, "bytes of the guest's output dropped: over 32 bytes a second"));
	/* less than the flood alone */
	EXPECT_LT(size, 40 * 64);
	rm_tree(r.dir);
}

struct stream {
	const char *uds;
	unsigned int seed;
	int result;
};

static void *stream_fn(void *arg)
{
	struct stream *s = arg;
	int fd = vsock_open(s->uds, ECHO_PORT);

	if (fd < 0) {
		s->result = -10;
		return NULL;
	}
	s->result = echo_check(fd, STREAM_BYTES, s->seed);
	close(fd);
	return NULL;
}

TEST(vsock_many_concurrent_streams)
{
	struct stream s[NR_STREAMS];
	pthread_t th[NR_STREAMS];
	char reply[256];
	struct vm_run r;
	int i, fd, st;

	need_kvm();
	start(&r, "vsock", false);
	ASSERT_TRUE(wait_for(r.log, "CUBE-L2-VSOCK-READY", BOOT_TIMEOUT, r.pid));

	for (i = 0; i < NR_STREAMS; i++) {
		s[i].uds = r.uds;
		s[i].seed = i + 1;
		s[i].result = -99;
		ASSERT_EQ(pthread_create(&th[i], NULL, stream_fn, &s[i]), 0);
	}
	for (i = 0; i < NR_STREAMS; i++) {
		pthread_join(th[i], NULL);
		if (s[i].result)
			TH_LOG("stream %d: %d", i, s[i].result);
		EXPECT_EQ(s[i].result, 0);
	}

	/* A port nobody listens on: the guest resets, we see EOF, no OK. */
	fd = vsock_open(r.uds, 4321);
	EXPECT_LT(fd, 0);
	/* Malformed CONNECT lines: closed without a reply. */
	fd = unix_connect(r.uds);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "CONNECT banana\n", 15), 15);
	EXPECT_LT(read_line(fd, reply, sizeof(reply), 10000), 0);
	close(fd);
	fd = unix_connect(r.uds);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "HELLO 1234 and a lot more than a line can hold\n", 47), 47);
	EXPECT_LT(read_line(fd, reply, sizeof(reply), 10000), 0);
	close(fd);
	/* Still serving after all that. */
	fd = vsock_open(r.uds, ECHO_PORT);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(echo_check(fd, 1000, 77), 0);
	close(fd);

	/* Control socket: status, pause, resume, stop. */
	ASSERT_EQ(control(r.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK running", 10), 0);
	ASSERT_EQ(control(r.ctl, "pause", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK paused");
	ASSERT_EQ(control(r.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK paused", 9), 0);
	ASSERT_EQ(control(r.ctl, "resume", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK running");
	ASSERT_EQ(control(r.ctl, "bogus", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "ERR ", 4), 0);
	ASSERT_EQ(control(r.ctl, "stop", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK stopping");
	st = finish(&r, 60);
	ASSERT_EXIT(st, 0);
	/* The sockets go away with the VMM. */
	EXPECT_NE(access(r.uds, F_OK), 0);
	EXPECT_NE(access(r.ctl, F_OK), 0);
	rm_tree(r.dir);
}

TEST(hostile_virtqueues_never_hang)
{
	struct vm_run r;
	int st;

	need_kvm();
	start(&r, "evil", true);
	st = finish(&r, 300);
	ASSERT_NE(st, -1);		/* killed after the wait: a hang */
	ASSERT_EXIT(st, 0);
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL valid-first ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL loop ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL huge-len ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL outside ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL ring-outside ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL fuzz ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL valid-after ok"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-EVIL-DONE failures=0"));
	EXPECT_FALSE(file_has(r.log, " FAIL "));
	EXPECT_TRUE(file_has(r.err, "guest driver error"));
	rm_tree(r.dir);
}

VMM_TEST_MAIN()
