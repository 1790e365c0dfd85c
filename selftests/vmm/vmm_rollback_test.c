// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm checkpoints and in-place rollbacks: a guest restored onto a
 * cube.ko clone is checkpointed and rolled back (to a checkpoint, or to
 * the snapshot it was restored from) in the same process and KVM VM.  The
 * guest's own memory (vsock-kv's value) says which state it is in; it
 * answers over vsock after every rollback; bad requests change nothing;
 * many rollbacks leak nothing; a killed VMM's checkpoints are released by
 * cube_checkpoints_release().
 */
#include <dirent.h>
#include <inttypes.h>
#include <sys/ioctl.h>

#include <linux/cube.h>

#include "cube_checkpoint.h"
#include "cube_vsock_broker.h"
#include "vmm_util.h"

#define KV_PORT		1235
#define MEM_MIB		160

/* The template: booted once per run of this program, shared by its tests. */
static void tpl_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/vmm-rbtpl-%d", (int)getppid());
}

static int kv_req(const char *uds, const char *req, char *out, size_t len,
		  double timeout)
{
	double end = now_s() + timeout;
	int fd = -1, r;

	while (fd < 0 && now_s() < end) {
		fd = vsock_open(uds, KV_PORT);
		if (fd < 0)
			usleep(50000);
	}
	if (fd < 0)
		return -1;
	r = write_all(fd, req, strlen(req)) || write_all(fd, "\n", 1) ||
	    read_line(fd, out, len, (int)(timeout * 1000)) < 0 ? -1 : 0;
	close(fd);
	return r;
}

/* Boot the kv guest, snapshot it into DIR/snap, stop (once per run). */
static int make_template(char *snap, size_t len)
{
	char dir[128], log[192], err[192], uds[192], ctl[192], req[256];
	char reply[256];
	const char *argv[32];
	pid_t pid;
	int n = 0, st;

	tpl_dir(dir, sizeof(dir));
	snprintf(snap, len, "%s/snap", dir);
	snprintf(req, sizeof(req), "%s/state", snap);
	if (!access(req, R_OK))
		return 0;
	mkdir(dir, 0700);
	snprintf(log, sizeof(log), "%s/boot.log", dir);
	snprintf(err, sizeof(err), "%s/boot.err", dir);
	snprintf(uds, sizeof(uds), "%s/vsock", dir);
	snprintf(ctl, sizeof(ctl), "%s/control", dir);
	argv[n++] = "cube-vmm";
	argv[n++] = "--kernel";
	argv[n++] = l2_kernel();
	argv[n++] = "--initrd";
	argv[n++] = L2_INITRD;
	argv[n++] = "--append";
	argv[n++] = "cube.test=kv";
	argv[n++] = "--mem";
	argv[n++] = "160";
	argv[n++] = "--console-log";
	argv[n++] = log;
	argv[n++] = "--vsock-uds";
	argv[n++] = uds;
	argv[n++] = "--control";
	argv[n++] = ctl;
	argv[n++] = "--timeout";
	argv[n++] = "600";
	argv[n] = NULL;
	pid = vmm_spawn(argv, err);
	if (pid < 0)
		return -1;
	if (!wait_for(log, "CUBE-L2-KV-READY", BOOT_TIMEOUT, pid) ||
	    kv_req(uds, "PING", reply, sizeof(reply), 30) ||
	    strcmp(reply, "PONG")) {
		dump_file("console", log);
		dump_file("stderr", err);
		kill(pid, SIGKILL);
		vmm_wait(pid, 10);
		return -1;
	}
	snprintf(req, sizeof(req), "snapshot %s", snap);
	if (control(ctl, req, reply, sizeof(reply)) ||
	    strncmp(reply, "OK snapshot", 11)) {
		ct_diag("snapshot: %s", reply);
		kill(pid, SIGKILL);
		vmm_wait(pid, 10);
		return -1;
	}
	control(ctl, "stop", reply, sizeof(reply));
	st = vmm_wait(pid, 60);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

struct rvm {
	pid_t pid;
	char uds[192], ctl[192], log[192], err[192], ckdir[192];
};

/* Restore the template; extra options (NULL-ended); waits for its PONG. */
static int rvm_start(struct rvm *v, const char *dir, int i, const char *snap,
		     bool ckdir, const char *extra)
{
	const char *argv[24];
	char reply[64];
	int n = 0;

	snprintf(v->uds, sizeof(v->uds), "%s/vsock%d", dir, i);
	snprintf(v->ctl, sizeof(v->ctl), "%s/control%d", dir, i);
	snprintf(v->log, sizeof(v->log), "%s/vm%d.log", dir, i);
	snprintf(v->err, sizeof(v->err), "%s/vm%d.err", dir, i);
	snprintf(v->ckdir, sizeof(v->ckdir), "%s/ck%d", dir, i);
	mkdir(v->ckdir, 0700);
	argv[n++] = "cube-vmm";
	argv[n++] = "--restore";
	argv[n++] = snap;
	argv[n++] = "--vsock-uds";
	argv[n++] = v->uds;
	argv[n++] = "--control";
	argv[n++] = v->ctl;
	argv[n++] = "--console-log";
	argv[n++] = v->log;
	argv[n++] = "--timeout";
	argv[n++] = "600";
	if (ckdir) {
		argv[n++] = "--checkpoint-dir";
		argv[n++] = v->ckdir;
	}
	if (extra)
		argv[n++] = extra;
	argv[n] = NULL;
	v->pid = vmm_spawn(argv, v->err);
	if (v->pid < 0)
		return -1;
	if (kv_req(v->uds, "PING", reply, sizeof(reply), 60) ||
	    strcmp(reply, "PONG")) {
		dump_file("stderr", v->err);
		return -1;
	}
	return 0;
}

static int rvm_stop(struct rvm *v)
{
	char reply[64];
	int st;

	control(v->ctl, "stop", reply, sizeof(reply));
	st = vmm_wait(v->pid, 60);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		dump_file("stderr", v->err);
		return -1;
	}
	return 0;
}

/* @key's value in a reply, -1 when absent */
static long long field(const char *reply, const char *key)
{
	const char *p = strstr(reply, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void get_value(struct rvm *v, char *out, size_t len)
{
	char reply[64];

	out[0] = 0;
	if (!kv_req(v->uds, "GET", reply, sizeof(reply), 60) &&
	    !strncmp(reply, "VAL ", 4))
		snprintf(out, len, "%s", reply + 4);
}

static int set_value(struct rvm *v, const char *val)
{
	char req[96], reply[64];

	snprintf(req, sizeof(req), "SET %s", val);
	return kv_req(v->uds, req, reply, sizeof(reply), 60) ||
	       strcmp(reply, "OK") ? -1 : 0;
}

static int dirty(struct rvm *v, unsigned int mib, unsigned int seed)
{
	char req[96], reply[64];

	snprintf(req, sizeof(req), "DIRTY %u %u", mib, seed);
	return kv_req(v->uds, req, reply, sizeof(reply), 120) ||
	       strcmp(reply, "OK") ? -1 : 0;
}

/* Entries of a directory, "." and ".." aside; -1 when it is missing. */
static int dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void scratch(char *dir, size_t len, char *snap, size_t slen,
		    const char *tag)
{
	need_kvm();
	if (access("/dev/cube", R_OK | W_OK))
		SKIP("no /dev/cube");
	if (make_template(snap, slen))
		ASSERT_TRUE(0);
	mk_scratch(dir, len, tag);
}

TEST(checkpoint_then_rollbacks)
{
	char dir[128], snap[160], reply[256], val[80], path[320];
	struct rvm v;
	int held;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb1");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, NULL), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	ASSERT_EQ(set_value(&v, "at-c1"), 0);

	ASSERT_EQ(control(v.ctl, "checkpoint c1", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK checkpoint c1 ", 17), 0);
	EXPECT_GT(field(reply, " pages="), 0);
	snprintf(path, sizeof(path), "%s/c1/state", v.ckdir);
	EXPECT_EQ(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s/c1/cube-snapshot-id", v.ckdir);
	EXPECT_EQ(access(path, R_OK), 0);
	/* The guest runs on after a checkpoint, from the same memory. */
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "at-c1");

	ASSERT_EQ(set_value(&v, "after-c1"), 0);
	ASSERT_EQ(dirty(&v, 8, 3), 0);
	/* A stream of the state left behind ends for the host. */
	held = vsock_open(v.uds, KV_PORT);
	ASSERT_GE(held, 0);
	ASSERT_EQ(control(v.ctl, "rollback c1", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK rollback c1 ", 15), 0);
	EXPECT_EQ(read_line(held, val, sizeof(val), 20000), -1);
	{
		struct pollfd pf = { .fd = held, .events = POLLIN };

		EXPECT_EQ(poll(&pf, 1, 0), 1);
		EXPECT_EQ(read(held, val, sizeof(val)), 0);
	}
	close(held);
	/* at least the 8 MiB the guest wrote since */
	EXPECT_GE(field(reply, " pages="), 8 << 8);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "at-c1");

	/*
	 * Again: a rollback of a rollback, onto the clone's own snapshot, so
	 * every page the guest wrote is kept with c1's contents copied back.
	 */
	ASSERT_EQ(set_value(&v, "again"), 0);
	ASSERT_EQ(control(v.ctl, "rollback c1", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_EQ(strncmp(reply, "OK rollback c1 ", 15), 0);
	EXPECT_GT(field(reply, " pages="), 0);
	EXPECT_EQ(field(reply, " kept="), field(reply, " pages="));
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "at-c1");

	/* To the template: the value it never had. */
	ASSERT_EQ(control(v.ctl, "rollback", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_EQ(strncmp(reply, "OK rollback @restore ", 21), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	/* and back to the checkpoint from there */
	ASSERT_EQ(control(v.ctl, "rollback c1", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback c1 ", 15), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "at-c1");

	ASSERT_EQ(control(v.ctl, "checkpoint c0", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK checkpoint c0 ", 17), 0);
	ASSERT_EQ(control(v.ctl, "checkpoints", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK c0 c1");
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_EQ(field(reply, " checkpoints="), 2);
	EXPECT_EQ(field(reply, " rollbacks="), 4);
	ASSERT_EQ(control(v.ctl, "checkpoint-rm c1", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK removed c1");
	snprintf(path, sizeof(path), "%s/c1", v.ckdir);
	EXPECT_EQ(dir_entries(path), -1);
	ASSERT_EQ(control(v.ctl, "checkpoints", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK c0");
	/* The guest still runs on the removed checkpoint's clone. */
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "at-c1");

	/* A clean exit takes its checkpoints with it. */
	EXPECT_EQ(rvm_stop(&v), 0);
	EXPECT_EQ(dir_entries(v.ckdir), 0);
	rm_tree(dir);
}

TEST(rollback_of_a_paused_vm)
{
	char dir[128], snap[160], reply[256], val[80];
	struct rvm v;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb2");
	/* of the 4 MiB written, a rollback keeps 1 */
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, "--rollback-keep=1"), 0);
	ASSERT_EQ(set_value(&v, "x"), 0);
	ASSERT_EQ(dirty(&v, 4, 1), 0);
	ASSERT_EQ(control(v.ctl, "pause", reply, sizeof(reply)), 0);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_GE(field(reply, " clone_private_pages="), 4 << 8);
	ASSERT_EQ(control(v.ctl, "rollback", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_EQ(strncmp(reply, "OK rollback @restore ", 21), 0);
	EXPECT_GE(field(reply, " pages="), 4 << 8);
	EXPECT_EQ(field(reply, " kept="), 1 << 8);
	/*
	 * Still paused, and the clone holds nothing of its own but the MiB
	 * kept and what the vsock device wrote since: the RSTs of the
	 * restored state's connections, in the rx ring (a buffer page and
	 * the used ring).
	 */
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_EQ(strncmp(reply, "OK paused ", 10), 0);
	EXPECT_GE(field(reply, " clone_private_pages="), 1 << 8);
	EXPECT_LE(field(reply, " clone_private_pages="), (1 << 8) + 4);
	EXPECT_EQ(field(reply, " rollbacks="), 1);
	/* A checkpoint of a paused VM leaves it paused too. */
	ASSERT_EQ(control(v.ctl, "checkpoint p", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK checkpoint p ", 16), 0);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK paused ", 10), 0);
	ASSERT_EQ(control(v.ctl, "resume", reply, sizeof(reply)), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	EXPECT_EQ(rvm_stop(&v), 0);
	rm_tree(dir);
}

/*
 * "trim" while the guest runs: the pages it zeroed again (fresh memory in
 * the snapshot, so holes there) go back to the module, the others stay,
 * and the guest runs on with what it wrote.
 */
TEST(trim_gives_back_what_the_guest_zeroed)
{
	char dir[128], snap[160], reply[256], val[80], req[32];
	long long before, after, dropped;
	struct rvm v;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb8");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, NULL), 0);
	ASSERT_EQ(set_value(&v, "trimmed"), 0);
	ASSERT_EQ(dirty(&v, 8, 7), 0);
	snprintf(req, sizeof(req), "ZERO 4");
	ASSERT_EQ(kv_req(v.uds, req, val, sizeof(val), 60), 0);
	ASSERT_STREQ(val, "OK");
	ASSERT_EQ(control(v.ctl, "pause", reply, sizeof(reply)), 0);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	before = field(reply, " clone_private_pages=");
	EXPECT_GE(before, 8 << 8);
	ASSERT_EQ(control(v.ctl, "trim", reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK trim ", 8), 0);
	dropped = field(reply, " dropped=");
	EXPECT_EQ(field(reply, " scanned="), before);
	/*
	 * Of the 4 MiB zeroed, the pages that were free and never written in
	 * the template (holes there: the guest's allocator hands out freed
	 * boot memory first, so not all); none of the 4 MiB still written.
	 */
	EXPECT_GE(dropped, 16);
	EXPECT_LE(dropped, before - (4 << 8));
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	after = field(reply, " clone_private_pages=");
	EXPECT_EQ(after, before - dropped);
	ASSERT_EQ(control(v.ctl, "resume", reply, sizeof(reply)), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "trimmed");
	/* what was dropped is copy-on-write again */
	ASSERT_EQ(dirty(&v, 8, 9), 0);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_GE(field(reply, " clone_private_pages="), 8 << 8);
	EXPECT_EQ(rvm_stop(&v), 0);
	rm_tree(dir);
}

/*
 * A VM restored with --trim-every=1 whose guest dirtied 8 MiB and zeroed
 * them again; waits up to 60 s for its first trim.  Returns 0 with its
 * status in @reply (the caller checks trims=), or -1.
 */
static int rvm_start_trimmed(struct rvm *v, const char *dir, const char *snap,
			     char *reply, size_t len)
{
	char val[80];
	int i;

	if (rvm_start(v, dir, 0, snap, true, "--trim-every=1") ||
	    dirty(v, 8, 5) || kv_req(v->uds, "ZERO 8", val, sizeof(val), 60) ||
	    strcmp(val, "OK"))
		return -1;
	for (i = 0; i < 60; i++) {
		if (control(v->ctl, "status", reply, len))
			return -1;
		if (field(reply, " trims=") > 0)
			break;
		sleep(1);
	}
	return 0;
}

/*
 * --trim-every: the VMM trims by itself once the guest settles, having
 * made 64 KiB or more its own since the last trim.
 */
TEST(trim_every_trims_by_itself)
{
	char dir[128], snap[160], reply[256], val[80];
	long long trims;
	struct rvm v;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb9");
	ASSERT_EQ(rvm_start_trimmed(&v, dir, snap, reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_GE(field(reply, " trims="), 1);
	EXPECT_GT(field(reply, " trimmed="), 0);
	/* and once settled, no more: the guest made nothing its own since */
	trims = field(reply, " trims=");
	sleep(3);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_LE(field(reply, " trims="), trims + 1);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	EXPECT_EQ(rvm_stop(&v), 0);
	rm_tree(dir);
}

/*
 * --merge-group: two VMs of one snapshot in one group, whose guests did
 * the same, share the pages they hold with the same bytes.  The first
 * trim offers, the second VM's gives its pages to the group, the first's
 * next one frees its copies; both guests read what they had, and a
 * rollback of one leaves the other as it was.
 */
TEST(merge_group_shares_what_two_guests_hold)
{
	char dir[128], snap[160], reply[256], val[80];
	long long before[2], dropped[2], promoted, merged;
	struct rvm v[2];
	int i;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb10");
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(rvm_start(&v[i], dir, i, snap, true,
				    "--merge-group=9"), 0);
		ASSERT_EQ(set_value(&v[i], "same"), 0);
		ASSERT_EQ(dirty(&v[i], 4, 3), 0);
	}
	/*
	 * Paused, so that what the guests' kernels write meanwhile (timers,
	 * the agent) does not blur the counts.
	 */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(control(v[i].ctl, "pause", reply, sizeof(reply)), 0);
		ASSERT_EQ(control(v[i].ctl, "status", reply, sizeof(reply)), 0);
		before[i] = field(reply, " clone_private_pages=");
	}
	ASSERT_EQ(control(v[0].ctl, "trim", reply, sizeof(reply)), 0);
	TH_LOG("first: %s", reply);
	EXPECT_EQ(field(reply, " merged="), 0);
	EXPECT_EQ(field(reply, " promoted="), 0);
	dropped[0] = field(reply, " dropped=");
	ASSERT_EQ(control(v[1].ctl, "trim", reply, sizeof(reply)), 0);
	TH_LOG("second: %s", reply);
	promoted = field(reply, " promoted=");
	dropped[1] = field(reply, " dropped=");
	/* most of the 4 MiB the guests wrote alike, at least */
	EXPECT_GE(promoted, 512);
	ASSERT_EQ(control(v[0].ctl, "trim", reply, sizeof(reply)), 0);
	TH_LOG("first again: %s", reply);
	merged = field(reply, " merged=");
	dropped[0] += field(reply, " dropped=");
	EXPECT_GE(merged, 512);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(control(v[i].ctl, "status", reply, sizeof(reply)), 0);
		TH_LOG("%d: %lld private pages before, %s", i, before[i], reply);
		EXPECT_LE(field(reply, " clone_private_pages="),
			  before[i] - dropped[i] - (i ? promoted : merged));
		ASSERT_EQ(control(v[i].ctl, "resume", reply, sizeof(reply)), 0);
		get_value(&v[i], val, sizeof(val));
		EXPECT_STREQ(val, "same");
	}
	/* written again: copies of their own, the same bytes for both */
	ASSERT_EQ(dirty(&v[1], 4, 5), 0);
	ASSERT_EQ(control(v[1].ctl, "rollback", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback @restore ", 21), 0);
	get_value(&v[1], val, sizeof(val));
	EXPECT_STREQ(val, "-");
	get_value(&v[0], val, sizeof(val));
	EXPECT_STREQ(val, "same");
	ASSERT_EQ(dirty(&v[0], 4, 3), 0);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(rvm_stop(&v[i]), 0);
	rm_tree(dir);
}

/*
 * How often the main thread of the VM process (the VMM's child in its
 * cgroup, else the VMM) went to sleep and was woken: its
 * voluntary_ctxt_switches; -1 when unreadable.
 */
static long long main_thread_wakeups(pid_t vmm)
{
	char path[96], line[128];
	long long n = -1;
	int child = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", vmm, vmm);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &child) != 1)
			child = 0;
		fclose(f);
	}
	if (child <= 0)
		child = vmm;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", child, child);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %lld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * --trim-every, once the guest settled and was trimmed, wakes the VMM no
 * more until a vsock connection comes, which starts one more period.
 */
TEST(trim_every_sleeps_once_settled)
{
	char dir[128], snap[160], reply[256], val[80];
	long long w0, w1, w2, w3, trims;
	struct rvm v;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rbs");
	ASSERT_EQ(rvm_start_trimmed(&v, dir, snap, reply, sizeof(reply)), 0);
	ASSERT_GE(field(reply, " trims="), 1);
	sleep(3);	/* a tick the last connection started, if any */
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	trims = field(reply, " trims=");
	w0 = main_thread_wakeups(v.pid);
	sleep(5);
	w1 = main_thread_wakeups(v.pid);
	/* a connection: a period, then a tick that finds the guest settled */
	ASSERT_EQ(kv_req(v.uds, "PING", val, sizeof(val), 60), 0);
	ASSERT_STREQ(val, "PONG");
	w2 = main_thread_wakeups(v.pid);
	sleep(4);
	w3 = main_thread_wakeups(v.pid);
	TH_LOG("main thread woken %lld times in 5 s idle, %lld in 4 s after a connection",
	       w1 - w0, w3 - w2);
	ASSERT_GE(w0, 0);
	EXPECT_LE(w1 - w0, 1);
	EXPECT_GE(w3 - w2, 1);
	/* at most one trim for what that connection made private */
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_LE(field(reply, " trims="), trims + 1);
	EXPECT_EQ(rvm_stop(&v), 0);
	rm_tree(dir);
}

static void expect_err(struct rvm *v, const char *req, const char *want)
{
	char reply[256];

	ASSERT_EQ(control(v->ctl, req, reply, sizeof(reply)), 0);
	if (strcmp(reply, want))
		TH_LOG("'%s': '%s', expected '%s'", req, reply, want);
	EXPECT_STREQ(reply, want);
}

TEST(bad_requests_change_nothing)
{
	char dir[128], snap[160], reply[256], before[256], val[80];
	char longname[80];
	struct rvm v, w;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb3");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, NULL), 0);
	ASSERT_EQ(set_value(&v, "kept"), 0);
	ASSERT_EQ(control(v.ctl, "checkpoint good", reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK checkpoint good ", 19), 0);
	ASSERT_EQ(control(v.ctl, "checkpoints", before, sizeof(before)), 0);

	expect_err(&v, "rollback nosuch", "ERR no checkpoint nosuch");
	expect_err(&v, "trim now", "ERR unknown request 'trim'");
	expect_err(&v, "checkpoint-rm nosuch", "ERR no checkpoint nosuch");
	expect_err(&v, "checkpoint good", "ERR checkpoint good exists");
	expect_err(&v, "checkpoint", "ERR bad checkpoint name");
	expect_err(&v, "checkpoint .hidden", "ERR bad checkpoint name");
	expect_err(&v, "checkpoint ..", "ERR bad checkpoint name");
	expect_err(&v, "checkpoint a/b", "ERR bad checkpoint name");
	expect_err(&v, "checkpoint a b", "ERR bad checkpoint name");
	expect_err(&v, "rollback a b", "ERR bad checkpoint name");
	expect_err(&v, "rollback ../x", "ERR bad checkpoint name");
	expect_err(&v, "checkpoint-rm ../ck0", "ERR bad checkpoint name");
	memset(longname, 'a', 65);
	longname[65] = 0;
	snprintf(reply, sizeof(reply), "checkpoint %s", longname);
	expect_err(&v, reply, "ERR bad checkpoint name");
	longname[64] = 0;	/* 64 is fine */
	snprintf(reply, sizeof(reply), "checkpoint %s", longname);
	ASSERT_EQ(control(v.ctl, reply, reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK checkpoint aaaa", 18), 0);
	snprintf(reply, sizeof(reply), "checkpoint-rm %s", longname);
	ASSERT_EQ(control(v.ctl, reply, reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK removed aaaa", 15), 0);
	/* a directory someone else made is not taken over */
	snprintf(reply, sizeof(reply), "%s/taken", v.ckdir);
	ASSERT_EQ(mkdir(reply, 0700), 0);
	expect_err(&v, "checkpoint taken", "ERR checkpoint taken exists");
	rmdir(reply);

	ASSERT_EQ(control(v.ctl, "checkpoints", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, before);
	EXPECT_EQ(dir_entries(v.ckdir), 1);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_EQ(field(reply, " rollbacks="), 0);
	EXPECT_EQ(strncmp(reply, "OK running ", 11), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "kept");
	EXPECT_EQ(rvm_stop(&v), 0);

	/* No --checkpoint-dir; memory not on a clone. */
	ASSERT_EQ(rvm_start(&w, dir, 1, snap, false, NULL), 0);
	expect_err(&w, "checkpoint c",
		   "ERR no --checkpoint-dir (or pass the record, state and disk files)");
	EXPECT_EQ(rvm_stop(&w), 0);
	ASSERT_EQ(rvm_start(&w, dir, 2, snap, true, "--no-cube"), 0);
	expect_err(&w, "checkpoint c",
		   "ERR checkpoints need guest memory on a cube.ko clone");
	expect_err(&w, "rollback",
		   "ERR rollback needs guest memory on a cube.ko clone");
	EXPECT_EQ(dir_entries(w.ckdir), 0);
	get_value(&w, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	EXPECT_EQ(rvm_stop(&w), 0);
	rm_tree(dir);
}

/* A control request passing @nfds descriptors; its reply line. */
static int control_fds(const char *path, const char *req, const int *fds,
		       int nfds, char *reply, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} u = { 0 };
	struct iovec iov = { .iov_base = (void *)req, .iov_len = strlen(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fd, r;

	m.msg_control = u.buf;
	m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), fds, sizeof(int) * nfds);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    sendmsg(fd, &m, 0) != (ssize_t)iov.iov_len ||
	    write_all(fd, "\n", 1) ||
	    read_line(fd, reply, len, 60000) < 0 ? -1 : 0;
	close(fd);
	return r;
}

static long long file_size(const char *dir, const char *name)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) ? -1 : st.st_size;
}

static void mem_stats(struct cube_mem_stats *ms);

/*
 * A checkpoint into files passed with the request (as a jailed VMM, which
 * opens no file, gets them; made by cube_checkpoint_files()): the VMM
 * writes them and names nothing.  Bad descriptors are refused and change
 * nothing; a removal leaves the files to their maker, whose release then
 * finds no snapshot to delete.
 */
TEST(checkpoint_into_passed_files)
{
	char dir[128], snap[160], reply[256], val[80], cdir[256];
	struct cube_mem_stats before, after;
	struct rvm v;
	int fds[3], bad[3], ro;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb9");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, false, NULL), 0);
	ASSERT_EQ(set_value(&v, "in-files"), 0);
	mem_stats(&before);
	ASSERT_EQ(cube_checkpoint_files(v.ckdir, "f1", fds), 0);
	EXPECT_EQ(cube_checkpoint_files(v.ckdir, "f1", bad), -EEXIST);
	snprintf(cdir, sizeof(cdir), "%s/f1", v.ckdir);

	ASSERT_EQ(control_fds(v.ctl, "checkpoint f1", fds, 2, reply,
			      sizeof(reply)), 0);
	EXPECT_STREQ(reply, "ERR pass the record, state and disk files, three descriptors");
	snprintf(val, sizeof(val), "/proc/self/fd/%d", fds[1]);
	ro = open(val, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(ro, 0);
	bad[0] = fds[0], bad[1] = ro, bad[2] = fds[2];
	ASSERT_EQ(control_fds(v.ctl, "checkpoint f1", bad, 3, reply,
			      sizeof(reply)), 0);
	EXPECT_STREQ(reply, "ERR a descriptor passed is not a regular file open read-write");
	close(ro);
	bad[0] = fds[0], bad[1] = fds[0], bad[2] = fds[2];
	ASSERT_EQ(control_fds(v.ctl, "checkpoint f1", bad, 3, reply,
			      sizeof(reply)), 0);
	EXPECT_STREQ(reply, "ERR the files passed are not different files");
	ASSERT_EQ(control_fds(v.ctl, "checkpoint ../f1", fds, 3, reply,
			      sizeof(reply)), 0);
	EXPECT_STREQ(reply, "ERR bad checkpoint name");
	ASSERT_EQ(control(v.ctl, "checkpoints", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK");
	EXPECT_EQ(file_size(cdir, "cube-snapshot-id"), 0);
	EXPECT_EQ(file_size(cdir, "state"), 0);

	ASSERT_EQ(control_fds(v.ctl, "checkpoint f1", fds, 3, reply,
			      sizeof(reply)), 0);
	TH_LOG("%s", reply);
	EXPECT_EQ(strncmp(reply, "OK checkpoint f1 ", 17), 0);
	close(fds[0]);
	close(fds[1]);
	close(fds[2]);
	EXPECT_GT(file_size(cdir, "cube-snapshot-id"), 0);
	EXPECT_GT(file_size(cdir, "state"), 0);
	EXPECT_EQ(file_size(cdir, "disk.img"), 0);	/* no disk */
	ASSERT_EQ(set_value(&v, "later"), 0);
	ASSERT_EQ(control(v.ctl, "rollback f1", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback f1 ", 15), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "in-files");
	/* off f1's clone, so that its removal frees its snapshot */
	ASSERT_EQ(control(v.ctl, "rollback", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback @restore ", 21), 0);

	ASSERT_EQ(control(v.ctl, "checkpoint-rm f1", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "OK removed f1");
	EXPECT_EQ(dir_entries(cdir), 3);	/* its maker's to remove */
	EXPECT_EQ(cube_checkpoint_remove(v.ckdir, "f1", reply,
					 sizeof(reply)), 0);
	EXPECT_EQ(dir_entries(cdir), -1);
	EXPECT_EQ(cube_checkpoint_remove(v.ckdir, "f1", reply,
					 sizeof(reply)), 0);
	mem_stats(&after);
	EXPECT_EQ(after.snapshots, before.snapshots);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	EXPECT_EQ(rvm_stop(&v), 0);
	rm_tree(dir);
}

/* A host listener on a Unix socket path that answers one stream once. */
struct host_peer {
	int fd;
	const char *answer;
	char got[64];
	pthread_t t;
};

static void *host_peer_run(void *arg)
{
	struct host_peer *h = arg;
	struct pollfd p = { .fd = h->fd, .events = POLLIN };
	int c;

	if (poll(&p, 1, 60000) != 1)
		return NULL;
	c = accept(h->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	if (read_line(c, h->got, sizeof(h->got), 20000) >= 0)
		write_all(c, h->answer, strlen(h->answer));
	close(c);
	return NULL;
}

static int host_peer_start(struct host_peer *h, const char *path,
			   const char *answer)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(h, 0, sizeof(*h));
	h->answer = answer;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || bind(h->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(h->fd, 4))
		return -1;
	return pthread_create(&h->t, NULL, host_peer_run, h) ? -1 : 0;
}

static void host_peer_stop(struct host_peer *h)
{
	pthread_join(h->t, NULL);
	close(h->fd);
}

static void dial(struct rvm *v, unsigned int port, char *out, size_t len)
{
	char req[32];

	snprintf(req, sizeof(req), "DIAL %u", port);
	if (kv_req(v->uds, req, out, len, 60))
		snprintf(out, len, "(no answer)");
}

/*
 * A guest's connect to a host port reaches "<vsock-uds>_<port>": by path
 * from an unjailed VMM, or through a connect broker on the descriptor
 * --vsock-connect-fd names (a jailed VMM's only way), which here serves a
 * path of another name, so the VMM cannot have connected by itself.
 * Nothing listening, and a broker gone, reset the guest's stream; the VM
 * runs on.
 */
TEST(guest_connects_by_path_or_through_a_broker)
{
	char dir[128], snap[160], path[256], out[96], opt[48];
	struct cube_vsock_broker b;
	struct host_peer h;
	struct rvm v, w;
	int vmm_end, fd;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb10");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, false, NULL), 0);
	snprintf(path, sizeof(path), "%s_5000", v.uds);
	ASSERT_EQ(host_peer_start(&h, path, "HI-PATH\n"), 0);
	dial(&v, 5000, out, sizeof(out));
	host_peer_stop(&h);
	EXPECT_STREQ(out, "GOT HI-PATH");
	EXPECT_STREQ(h.got, "HELLO");
	dial(&v, 5001, out, sizeof(out));
	EXPECT_EQ(strncmp(out, "ERR ", 4), 0);
	EXPECT_EQ(rvm_stop(&v), 0);

	snprintf(path, sizeof(path), "%s/brokered", dir);
	ASSERT_EQ(cube_vsock_broker_start(&b, path, &vmm_end), 0);
	fd = dup(vmm_end);	/* without close-on-exec: the VMM's */
	close(vmm_end);
	ASSERT_GE(fd, 0);
	snprintf(opt, sizeof(opt), "--vsock-connect-fd=%d", fd);
	ASSERT_EQ(rvm_start(&w, dir, 1, snap, false, opt), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/brokered_5000", dir);
	ASSERT_EQ(host_peer_start(&h, path, "HI-BROKER\n"), 0);
	dial(&w, 5000, out, sizeof(out));
	host_peer_stop(&h);
	EXPECT_STREQ(out, "GOT HI-BROKER");
	EXPECT_STREQ(h.got, "HELLO");
	/* its own path is not tried */
	snprintf(path, sizeof(path), "%s_5000", w.uds);
	ASSERT_EQ(host_peer_start(&h, path, "HI-PATH\n"), 0);
	dial(&w, 5000, out, sizeof(out));
	EXPECT_EQ(strncmp(out, "ERR ", 4), 0);
	/* the broker gone: a reset, and the VM runs on */
	cube_vsock_broker_stop(&b);
	EXPECT_EQ(b.served, 1);
	dial(&w, 5000, out, sizeof(out));
	EXPECT_EQ(strncmp(out, "ERR ", 4), 0);
	/* unblock the listener nobody reached */
	fd = unix_connect(path);
	if (fd >= 0) {
		write_all(fd, "x\n", 2);
		close(fd);
	}
	host_peer_stop(&h);
	EXPECT_STREQ(h.got, "x");
	get_value(&w, out, sizeof(out));
	EXPECT_STREQ(out, "-");
	EXPECT_EQ(rvm_stop(&w), 0);
	rm_tree(dir);
}

static void mem_stats(struct cube_mem_stats *ms)
{
	int dev = open("/dev/cube", O_RDWR | O_CLOEXEC);

	memset(ms, 0, sizeof(*ms));
	ASSERT_GE(dev, 0);
	ASSERT_EQ(ioctl(dev, CUBE_IOC_MEM_STATS, ms), 0);
	close(dev);
}

/*
 * A checkpoint of a VM rolled back to a checkpoint is one snapshot deeper:
 * past cube.ko's depth the checkpoint is refused, and the refusal leaves
 * no directory and no module snapshot.  Then the limit of 16 checkpoints.
 */
TEST(refused_checkpoints_leave_nothing)
{
	char dir[128], snap[160], reply[256], req[64], val[80];
	struct cube_mem_stats before, after;
	struct rvm v;
	int i, made;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb7");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, NULL), 0);
	for (i = 0, made = 0; i < CUBE_SNAPSHOT_MAX_DEPTH + 1; i++) {
		snprintf(req, sizeof(req), "checkpoint d%02d", i);
		ASSERT_EQ(control(v.ctl, req, reply, sizeof(reply)), 0);
		if (strncmp(reply, "OK checkpoint", 13))
			break;
		made++;
		snprintf(req, sizeof(req), "rollback d%02d", i);
		ASSERT_EQ(control(v.ctl, req, reply, sizeof(reply)), 0);
		ASSERT_EQ(strncmp(reply, "OK rollback", 11), 0);
	}
	TH_LOG("%d checkpoints deep, then: %s", made, reply);
	/* the template is depth 1: 15 snapshots of clones fit above it */
	EXPECT_EQ(made, CUBE_SNAPSHOT_MAX_DEPTH - 1);
	EXPECT_EQ(strncmp(reply, "ERR checkpoint d15: ", 20), 0);
	mem_stats(&before);
	ASSERT_EQ(control(v.ctl, "checkpoint deep", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "ERR checkpoint deep: ", 21), 0);
	mem_stats(&after);
	EXPECT_EQ(after.snapshots, before.snapshots);
	EXPECT_EQ(dir_entries(v.ckdir), made);
	/* from the template again, one more fits; then the count is full */
	ASSERT_EQ(control(v.ctl, "rollback", reply, sizeof(reply)), 0);
	ASSERT_EQ(control(v.ctl, "checkpoint last", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK checkpoint last ", 19), 0);
	ASSERT_EQ(control(v.ctl, "checkpoint over", reply, sizeof(reply)), 0);
	EXPECT_STREQ(reply, "ERR too many checkpoints (at most 16): remove one with checkpoint-rm");
	EXPECT_EQ(dir_entries(v.ckdir), made + 1);
	/* every one of them still rolls back */
	ASSERT_EQ(control(v.ctl, "rollback d00", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback d00 ", 16), 0);
	get_value(&v, val, sizeof(val));
	EXPECT_STREQ(val, "-");
	EXPECT_EQ(rvm_stop(&v), 0);
	EXPECT_EQ(dir_entries(v.ckdir), 0);
	rm_tree(dir);
}

TEST(two_vmms_roll_back_independently)
{
	char dir[128], snap[160], reply[256], val[80];
	struct rvm v[2];
	int i;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb4");
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(rvm_start(&v[i], dir, i, snap, true, NULL), 0);
		snprintf(val, sizeof(val), "a%d", i);
		ASSERT_EQ(set_value(&v[i], val), 0);
		/* the same name in each: each has its own directory */
		ASSERT_EQ(control(v[i].ctl, "checkpoint c", reply,
				  sizeof(reply)), 0);
		ASSERT_EQ(strncmp(reply, "OK checkpoint c ", 16), 0);
		snprintf(val, sizeof(val), "b%d", i);
		ASSERT_EQ(set_value(&v[i], val), 0);
	}
	ASSERT_EQ(control(v[0].ctl, "rollback c", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback c ", 14), 0);
	get_value(&v[0], val, sizeof(val));
	EXPECT_STREQ(val, "a0");
	get_value(&v[1], val, sizeof(val));
	EXPECT_STREQ(val, "b1");
	ASSERT_EQ(control(v[1].ctl, "rollback", reply, sizeof(reply)), 0);
	EXPECT_EQ(strncmp(reply, "OK rollback @restore ", 21), 0);
	get_value(&v[1], val, sizeof(val));
	EXPECT_STREQ(val, "-");
	get_value(&v[0], val, sizeof(val));
	EXPECT_STREQ(val, "a0");
	ASSERT_EQ(control(v[1].ctl, "rollback c", reply, sizeof(reply)), 0);
	get_value(&v[1], val, sizeof(val));
	EXPECT_STREQ(val, "a1");
	for (i = 0; i < 2; i++)
		EXPECT_EQ(rvm_stop(&v[i]), 0);
	rm_tree(dir);
}


/* The VMM itself: the child of the pid spawned when it made a cgroup. */
static pid_t vmm_pid(pid_t pid)
{
	char path[96], *s;
	long child = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	s = slurp(path);
	if (s && sscanf(s, "%ld", &child) == 1 && child > 0)
		pid = child;
	free(s);
	return pid;
}

static long fd_count(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	return dir_entries(path);
}

/* A /proc/PID/status field, in kB; -1 when absent. */
static long status_kb(pid_t pid, const char *key)
{
	char path[64], *s, *p;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	s = slurp(path);
	p = s ? strstr(s, key) : NULL;
	if (p)
		v = strtol(p + strlen(key), NULL, 10);
	free(s);
	return v;
}

#define NR_ROLLBACKS	1000

/* Where a VMM's anonymous memory sits: mappings of 128 kB or more, huge pages. */
static void log_anon_mappings(pid_t pid)
{
	char path[64], *s, *line, *save = NULL, head[160] = "";
	long kb;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	s = slurp(path);
	for (line = s ? strtok_r(s, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		/* a mapping's head starts "start-end perms" */
		if (strchr(line, ' ') && strchr(line, '-') &&
		    strchr(line, '-') < strchr(line, ' '))
			snprintf(head, sizeof(head), "%s", line);
		else if (!strncmp(line, "Anonymous:", 10)) {
			kb = strtol(line + 10, NULL, 10);
			if (kb >= 128)
				TH_LOG("  %ld kB anon in %s", kb, head);
		} else if (!strncmp(line, "AnonHugePages:", 14)) {
			kb = strtol(line + 14, NULL, 10);
			if (kb)
				TH_LOG("  %ld kB of huge pages in %s", kb, head);
		}
	}
	free(s);
}

/*
 * Paused, reset to the template: the point where the module's counters
 * and the VMM's own are compared.
 */
static void settle(struct rvm *v, struct cube_mem_stats *ms)
{
	char reply[256];

	ASSERT_EQ(control(v->ctl, "pause", reply, sizeof(reply)), 0);
	ASSERT_EQ(control(v->ctl, "rollback", reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK rollback", 11), 0);
	mem_stats(ms);
	ASSERT_EQ(control(v->ctl, "resume", reply, sizeof(reply)), 0);
}

TEST(many_rollbacks_leak_nothing)
{
	char dir[128], snap[160], reply[256], val[80];
	struct cube_mem_stats before, after;
	long fds0, fds1, anon0, anon1, rss0, rss1;
	double t0, took;
	struct rvm v;
	pid_t pid;
	int i;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb5");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, NULL), 0);
	pid = vmm_pid(v.pid);
	ASSERT_EQ(set_value(&v, "c"), 0);
	ASSERT_EQ(control(v.ctl, "checkpoint c", reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK checkpoint c ", 16), 0);
	/* warm up: every path has run once */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(control(v.ctl, i & 1 ? "rollback" : "rollback c",
				  reply, sizeof(reply)), 0);
		ASSERT_EQ(strncmp(reply, "OK rollback", 11), 0);
	}
	/*
	 * A reset leaves the snapshot's pages mapped: the guest's working set
	 * is in VmRSS at both counts (a read of the value maps it, as the
	 * loop's last one does), so only a leak makes the two differ.
	 */
	get_value(&v, val, sizeof(val));
	settle(&v, &before);
	fds0 = fd_count(pid);
	anon0 = status_kb(pid, "RssAnon:");
	rss0 = status_kb(pid, "VmRSS:");

	t0 = now_s();
	for (i = 0; i < NR_ROLLBACKS; i++) {
		ASSERT_EQ(control(v.ctl, i & 1 ? "rollback" : "rollback c",
				  reply, sizeof(reply)), 0);
		if (strncmp(reply, "OK rollback", 11))
			TH_LOG("rollback %d: %s", i, reply);
		ASSERT_EQ(strncmp(reply, "OK rollback", 11), 0);
		if (i % 100 == 99) {
			get_value(&v, val, sizeof(val));
			EXPECT_STREQ(val, i & 1 ? "-" : "c");
			if (i % 200 == 199)
				TH_LOG("after %d: RssAnon %ld kB", i + 1,
				       status_kb(pid, "RssAnon:"));
		}
	}
	took = now_s() - t0;
	TH_LOG("%d rollbacks in %.1f s (%.1f ms each, with the control round trip)",
	       NR_ROLLBACKS, took, took * 1000 / NR_ROLLBACKS);

	settle(&v, &after);
	fds1 = fd_count(pid);
	anon1 = status_kb(pid, "RssAnon:");
	rss1 = status_kb(pid, "VmRSS:");
	TH_LOG("module: snapshots %llu->%llu clones %llu->%llu private %llu->%llu; VMM: fds %ld->%ld RssAnon %ld->%ld kB VmRSS %ld->%ld kB",
	       (unsigned long long)before.snapshots,
	       (unsigned long long)after.snapshots,
	       (unsigned long long)before.clones,
	       (unsigned long long)after.clones,
	       (unsigned long long)before.private_pages,
	       (unsigned long long)after.private_pages, fds0, fds1, anon0,
	       anon1, rss0, rss1);
	EXPECT_EQ(after.snapshots, before.snapshots);
	EXPECT_EQ(after.clones, before.clones);
	/* what the guest and vsock wrote between reset and the count */
	EXPECT_LE(after.private_pages, before.private_pages + 16);
	EXPECT_EQ(fds1, fds0);
	EXPECT_GT(fds0, 0);
	/* khugepaged would make a stack's page 2 MiB (a "leak" seen once) */
	EXPECT_EQ(status_kb(pid, "THP_enabled:"), 0);
	EXPECT_LE(anon1, anon0 + 1024);
	if (anon1 > anon0 + 1024)
		log_anon_mappings(pid);
	EXPECT_LE(rss1, rss0 + 8192);
	ASSERT_EQ(control(v.ctl, "status", reply, sizeof(reply)), 0);
	EXPECT_EQ(field(reply, " rollbacks="), NR_ROLLBACKS + 6);
	EXPECT_EQ(rvm_stop(&v), 0);
	rm_tree(dir);
}

TEST(sigkill_then_release)
{
	char dir[128], snap[160], reply[256], path[320], err[256];
	struct cube_mem_stats before, killed, after;
	struct cube_snapshot_info info = { 0 };
	unsigned long long tid;
	struct rvm v;
	FILE *f;
	int st;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb6");
	ASSERT_EQ(rvm_start(&v, dir, 0, snap, true, NULL), 0);
	mem_stats(&before);
	ASSERT_EQ(control(v.ctl, "checkpoint k1", reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK checkpoint k1 ", 17), 0);
	ASSERT_EQ(control(v.ctl, "rollback k1", reply, sizeof(reply)), 0);
	ASSERT_EQ(control(v.ctl, "checkpoint k2", reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK checkpoint k2 ", 17), 0);
	kill(v.pid, SIGKILL);
	st = vmm_wait(v.pid, 60);
	EXPECT_TRUE(WIFSIGNALED(st));
	/* its cgroup child dies with it (PR_SET_PDEATHSIG) */
	for (st = 0; st < 100; st++) {
		mem_stats(&killed);
		if (killed.clones < before.clones)
			break;
		usleep(50000);
	}
	EXPECT_EQ(killed.clones, before.clones - 1);
	EXPECT_EQ(killed.snapshots, before.snapshots + 2);

	/* a caller's removal leaves a record naming a live snapshot */
	snprintf(path, sizeof(path), "%s/k1", v.ckdir);
	EXPECT_EQ(cube_checkpoint_remove(v.ckdir, "k1", err, sizeof(err)),
		  -EBUSY);
	TH_LOG("%s", err);
	{
		char rec[400];

		snprintf(rec, sizeof(rec), "%s/cube-snapshot-id", path);
		EXPECT_EQ(access(rec, F_OK), 0);
	}
	/*
	 * k1's record copied, as a VMM of another uid could forge it: its
	 * release, as that uid, deletes nothing and removes the copy.
	 */
	{
		char forged[256], cmd[1024];

		snprintf(forged, sizeof(forged), "%s/forged", dir);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/k1 && cp %s/cube-snapshot-id %s/k1/",
			 forged, path, forged);
		ASSERT_EQ(system(cmd), 0);
		EXPECT_EQ(cube_checkpoints_release(forged, 65534, err,
						   sizeof(err)), 0);
		mem_stats(&after);
		EXPECT_EQ(after.snapshots, killed.snapshots);
		EXPECT_EQ(dir_entries(forged), -1);
	}

	/*
	 * A record naming a snapshot that is not a checkpoint (the
	 * template's, depth 1) and one with garbage are left alone.
	 */
	snprintf(path, sizeof(path), "%s/cube-snapshot-id", snap);
	f = fopen(path, "r");
	ASSERT_NE(f, NULL);
	ASSERT_EQ(fscanf(f, "%llu", &tid), 1);
	fclose(f);
	info.id = tid;
	snprintf(path, sizeof(path), "%s/tpl", v.ckdir);
	ASSERT_EQ(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/tpl/cube-snapshot-id", v.ckdir);
	f = fopen(path, "w");
	ASSERT_NE(f, NULL);
	fprintf(f, "%llu %llu %llu\n", tid, tid,
		(unsigned long long)MEM_MIB << 20);
	fclose(f);
	snprintf(path, sizeof(path), "%s/junk", v.ckdir);
	ASSERT_EQ(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/junk/cube-snapshot-id", v.ckdir);
	f = fopen(path, "w");
	ASSERT_NE(f, NULL);
	fprintf(f, "not a record\n");
	fclose(f);

	EXPECT_EQ(cube_checkpoints_release(v.ckdir, geteuid(), err,
					   sizeof(err)), 0);
	mem_stats(&after);
	EXPECT_EQ(after.snapshots, before.snapshots);
	EXPECT_EQ(after.clones, killed.clones);
	EXPECT_EQ(dir_entries(v.ckdir), -1);
	/* the template's snapshot is still there */
	{
		int dev = open("/dev/cube", O_RDWR | O_CLOEXEC);

		ASSERT_GE(dev, 0);
		EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), 0);
		close(dev);
	}
	/* idempotent */
	EXPECT_EQ(cube_checkpoints_release(v.ckdir, geteuid(), err,
					   sizeof(err)), 0);
	rm_tree(dir);
}

/* Delete module snapshot @id, if any, as root (any owner's). */
static void drop_snapshot(uint64_t id)
{
	struct cube_snapshot_id del = { .id = id };
	int dev;

	if (!id)
		return;
	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &del);
		close(dev);
	}
}

/*
 * A module snapshot of a clone of @parent, made as @uid (its owner in
 * cube.ko), as a jailed VMM makes its checkpoints: its id, or 0.
 */
static uint64_t snapshot_as(uid_t uid, uint64_t parent)
{
	uint64_t id = 0;
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		return 0;
	pid = fork();
	if (pid == 0) {
		struct cube_clone_create cc = { .snapshot_id = parent };
		struct cube_snapshot_create sc = {
			.source = CUBE_SNAPSHOT_SRC_CLONE,
		};
		int dev = open("/dev/cube", O_RDWR | O_CLOEXEC);

		/* the clone as root (the template is root's), the rest not */
		if (dev < 0 || ioctl(dev, CUBE_IOC_CLONE_CREATE, &cc) < 0 ||
		    setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(1);
		sc.fd = cc.fd;
		if (ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &sc))
			_exit(2);
		if (write(p[1], &sc.id, sizeof(sc.id)) != sizeof(sc.id))
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &id, sizeof(id)) != sizeof(id))
		id = 0;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return id;
}

static void write_rec(const char *dir, const char *name, uint64_t id,
		      uint64_t parent, uint64_t size)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	mkdir(dir, 0700);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%s/cube-snapshot-id", dir, name);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%llu %llu %llu\n", (unsigned long long)id,
			(unsigned long long)parent, (unsigned long long)size);
		fclose(f);
	}
}

/*
 * cube_checkpoints_release() deletes as the uid it is given: a snapshot
 * of that uid's goes, another uid's stays, and the records go both ways.
 */
TEST(release_acts_as_the_vmm_uid)
{
	char dir[128], snap[160], path[320], err[256], recs[256];
	struct cube_snapshot_info info = { 0 };
	struct cube_mem_stats before, after;
	unsigned long long tid;
	uint64_t mine, theirs;
	int dev;
	FILE *f;

	scratch(dir, sizeof(dir), snap, sizeof(snap), "rb7");
	snprintf(path, sizeof(path), "%s/cube-snapshot-id", snap);
	f = fopen(path, "r");
	ASSERT_NE(f, NULL);
	ASSERT_EQ(fscanf(f, "%llu", &tid), 1);
	fclose(f);
	mem_stats(&before);
	mine = snapshot_as(60001, tid);
	theirs = snapshot_as(60002, tid);
	if (!mine || !theirs) {
		/* root may delete either: nothing stays behind */
		drop_snapshot(mine);
		drop_snapshot(theirs);
		rm_tree(dir);
	}
	ASSERT_NE(mine, 0);
	ASSERT_NE(theirs, 0);
	mem_stats(&after);
	EXPECT_EQ(after.snapshots, before.snapshots + 2);

	snprintf(recs, sizeof(recs), "%s/checkpoints", dir);
	write_rec(recs, "mine", mine, tid, (uint64_t)MEM_MIB << 20);
	write_rec(recs, "theirs", theirs, tid, (uint64_t)MEM_MIB << 20);
	EXPECT_EQ(cube_checkpoints_release(recs, 60001, err, sizeof(err)), 0);
	EXPECT_EQ(dir_entries(recs), -1);

	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	EXPECT_GE(dev, 0);
	info.id = mine;
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), -1);
	EXPECT_EQ(errno, ENOENT);
	info.id = theirs;
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), 0);
	/* its own uid releases it */
	write_rec(recs, "theirs", theirs, tid, (uint64_t)MEM_MIB << 20);
	EXPECT_EQ(cube_checkpoints_release(recs, 60002, err, sizeof(err)), 0);
	EXPECT_EQ(ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, &info), -1);
	EXPECT_EQ(errno, ENOENT);
	close(dev);
	mem_stats(&after);
	EXPECT_EQ(after.snapshots, before.snapshots);
	/* after a failure above, nothing stays behind */
	drop_snapshot(mine);
	drop_snapshot(theirs);
	rm_tree(dir);
}

/* Last: the template and its module snapshot go. */
TEST(zz_cleanup)
{
	char dir[128], snap[192];

	tpl_dir(dir, sizeof(dir));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	drop_recorded_snapshot(snap);
	rm_tree(dir);
}

VMM_TEST_MAIN()
