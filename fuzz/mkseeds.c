// SPDX-License-Identifier: GPL-2.0
/*
 * mkseeds: writes the seed corpora of fuzz/corpus/ (make -C fuzz seeds).
 * Binary seeds come from the project's own encoders: state files from
 * snapshot_save() of a VM with the VMM's devices (fake_vm.c), agent
 * messages from lib/agent_wire.c.  Text seeds (HTTP requests, JSON bodies)
 * are written out as they are.  Each seed is a well-formed starting point
 * the fuzzer mutates; none is a test by itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/virtio_vsock.h>

#include "agent_proto.h"
#include "fake_vm.h"
#include "snapshot.h"
#include "vm.h"
#include "vsock.h"

static const char *top;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* corpus/<harness>/<name>: @prefix bytes, then @data. */
static void seed(const char *harness, const char *name, const void *prefix,
		 size_t plen, const void *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, harness);
	if (mkdir(path, 0755) && errno != EEXIST)
		die(path);
	snprintf(path, sizeof(path), "%s/%s/%s", top, harness, name);
	f = fopen(path, "wb");
	if (!f || fwrite(prefix, 1, plen, f) != plen ||
	    fwrite(data, 1, len, f) != len || fclose(f))
		die(path);
}

static void seed_text(const char *harness, const char *name, uint8_t prefix,
		      const char *text)
{
	seed(harness, name, &prefix, 1, text, strlen(text));
}

/* --- state files --- */

static void read_all(const char *path, uint8_t **data, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		die(path);
	*data = malloc(st.st_size);
	if (!*data || read(fd, *data, st.st_size) != st.st_size)
		die(path);
	*len = st.st_size;
	close(fd);
}

/*
 * @state with its VSOCK section replaced by one holding two connections,
 * as a snapshot of a sandbox with open streams has: the restore resets
 * them.
 */
static void with_vsock_conns(const char *name, const uint8_t *state,
			     size_t len)
{
	static const uint8_t plain = 0;
	struct vsock_state vs = {
		.guest_cid = 3, .next_port = (1U << 30) + 2, .nr_conns = 2,
		.conns = { { (1U << 30), 1024 }, { (1U << 30) + 1, 1025 } },
	};
	struct snap_image img;
	struct snap_buf b;
	char err[160];
	unsigned int i;

	if (snap_parse(state, len, &img, err, sizeof(err))) {
		fprintf(stderr, "mkseeds: %s\n", err);
		exit(1);
	}
	snap_buf_init(&b);
	for (i = 0; i + 1 < img.nr; i++) {
		const struct snap_section *sec = &img.secs[i];

		if (sec->type == SNAP_SEC_VSOCK)
			snap_add(&b, sec->type, sec->id, &vs,
				 offsetof(struct vsock_state, conns) +
				 2 * sizeof(vs.conns[0]));
		else
			snap_add(&b, sec->type, sec->id, sec->data, sec->size);
	}
	if (snap_finish(&b, img.hdr.mem_size, img.hdr.mem_crc32,
			img.hdr.nr_vcpus))
		die("snap_finish");
	seed("snapshot", name, &plain, 1, b.data, b.len);
	snap_buf_free(&b);
	snap_image_free(&img);
}

static void saved_state(const char *name, uint32_t nr_vcpus, uint32_t flags)
{
	static const uint8_t plain = 0, fixed = 1;
	struct snap_config cfg = {
		.mem_size = VM_MEM_MIN, .nr_vcpus = nr_vcpus, .flags = flags,
		.guest_cid = 3, .blk_size = 64 << 20, .rootfs = "/rootfs.ext4",
	};
	struct vm *vm = fake_vm();
	char dir[] = "/tmp/cube-mkseeds.XXXXXX", path[64], err[256];
	uint8_t *state;
	size_t len;

	if (!mkdtemp(dir))
		die("mkdtemp");
	vm->nr_vcpus = nr_vcpus;
	if (snapshot_save(vm, &cfg, dir, err, sizeof(err))) {
		fprintf(stderr, "mkseeds: snapshot_save: %s\n", err);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	read_all(path, &state, &len);
	seed("snapfile", name, &plain, 1, state, len);
	seed("snapshot", name, &plain, 1, state, len);
	/* the same, to be mutated with the checksums made right */
	snprintf(path, sizeof(path), "%s-fixed", name);
	seed("snapfile", path, &fixed, 1, state, len);
	seed("snapshot", path, &fixed, 1, state, len);
	if (flags & SNAP_CFG_NET) {
		snprintf(path, sizeof(path), "%s-vsock-conns", name);
		with_vsock_conns(path, state, len);
	}
	free(state);
	snprintf(path, sizeof(path), "%s/state", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/memory", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/disk.img", dir);
	unlink(path);
	rmdir(dir);
}

static void small_state(void)
{
	static const uint8_t fixed = 1;
	struct snap_buf b;
	uint32_t v = 7;

	snap_buf_init(&b);
	snap_add(&b, SNAP_SEC_CLOCK, 0, &v, sizeof(v));
	snap_add(&b, SNAP_SEC_VCPU_MSRS, 1, "abcdefghijk", 11);
	if (snap_finish(&b, VM_MEM_MIN, 0, 1))
		die("snap_finish");
	seed("snapfile", "small", &fixed, 1, b.data, b.len);
	snap_buf_free(&b);
}

/* --- agent messages --- */

struct stream {
	uint8_t *data;
	size_t len;
};

static void add(struct stream *s, struct cube_wire_buf *b)
{
	if (cube_wire_finish(b))
		die("cube_wire_finish");
	s->data = realloc(s->data, s->len + b->len);
	if (!s->data)
		die("realloc");
	memcpy(s->data + s->len, b->data, b->len);
	s->len += b->len;
	cube_wire_free(b);
}

static void simple(struct stream *s, uint16_t type, uint32_t id)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, type, id);
	add(s, &b);
}

static void with_str(struct stream *s, uint16_t type, uint32_t id,
		     uint16_t attr, const char *str)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, type, id);
	cube_wire_put_str(&b, attr, str);
	add(s, &b);
}

static void with_data(struct stream *s, uint16_t type, uint32_t id,
		      const char *data)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, type, id);
	cube_wire_put(&b, CUBE_ATTR_DATA, data, strlen(data));
	add(s, &b);
}

static void with_u32(struct stream *s, uint16_t type, uint32_t id,
		     uint16_t attr, uint32_t v)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, type, id);
	cube_wire_put_u32(&b, attr, v);
	add(s, &b);
}

static void end(struct stream *s, uint32_t id, uint64_t size)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_END, id);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, size);
	add(s, &b);
}

static void pong(struct stream *s, uint32_t id)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_PONG, id);
	cube_wire_put_u32(&b, CUBE_ATTR_VERSION, CUBE_AGENT_PROTO_VERSION);
	cube_wire_put_u32(&b, CUBE_ATTR_READY, 1);
	cube_wire_put_str(&b, CUBE_ATTR_SANDBOX_ID, "sb-1");
	cube_wire_put_str(&b, CUBE_ATTR_HOSTNAME, "box");
	add(s, &b);
}

static void error(struct stream *s, uint32_t id, uint32_t err)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_ERROR, id);
	cube_wire_put_u32(&b, CUBE_ATTR_ERRNO, err);
	cube_wire_put_str(&b, CUBE_ATTR_MESSAGE, "refused");
	add(s, &b);
}

static void entry(struct stream *s, uint16_t type, uint32_t id,
		  const char *name, uint32_t ftype)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, type, id);
	if (name)
		cube_wire_put_str(&b, CUBE_ATTR_NAME, name);
	cube_wire_put_u32(&b, CUBE_ATTR_FTYPE, ftype);
	cube_wire_put_u64(&b, CUBE_ATTR_SIZE, 11);
	cube_wire_put_u32(&b, CUBE_ATTR_MODE, 0644);
	cube_wire_put_u64(&b, CUBE_ATTR_MTIME_NS, 1700000000000000000ULL);
	if (!name) {
		cube_wire_put_u32(&b, CUBE_ATTR_UID, 1000);
		cube_wire_put_u32(&b, CUBE_ATTR_GID, 1000);
	}
	add(s, &b);
}

static void fs_event(struct stream *s, uint32_t id, uint32_t ev,
		     const char *name)
{
	struct cube_wire_buf b = { 0 };

	cube_wire_start(&b, CUBE_MSG_FS_EVENT, id);
	cube_wire_put_u32(&b, CUBE_ATTR_EVENT, ev);
	cube_wire_put_str(&b, CUBE_ATTR_NAME, name);
	add(s, &b);
}

/* The agent's answers to one request of agent_client_fuzz (op @op). */
static void client_seed(const char *name, uint8_t op, struct stream *s)
{
	seed("agent_client", name, &op, 1, s->data, s->len);
	free(s->data);
	s->data = NULL;
	s->len = 0;
}

static void agent_client_seeds(void)
{
	struct stream s = { 0 };
	struct cube_wire_buf b = { 0 };

	pong(&s, 1);
	pong(&s, 2);
	client_seed("ping", 0, &s);
	simple(&s, CUBE_MSG_OK, 1);
	pong(&s, 2);
	client_seed("identity", 1, &s);
	error(&s, 1, EPERM);
	client_seed("reseed-refused", 2, &s);

	with_u32(&s, CUBE_MSG_STARTED, 1, CUBE_ATTR_PID, 7);
	with_data(&s, CUBE_MSG_STDOUT, 1, "4\n");
	with_data(&s, CUBE_MSG_STDERR, 1, "warning\n");
	with_u32(&s, CUBE_MSG_EXIT, 1, CUBE_ATTR_EXIT_CODE, 0);
	pong(&s, 2);
	client_seed("exec", 3, &s);

	with_u32(&s, CUBE_MSG_STARTED, 1, CUBE_ATTR_PID, 7);
	with_data(&s, CUBE_MSG_STDOUT, 1, "hello\n");
	error(&s, 1, ESRCH);
	cube_wire_start(&b, CUBE_MSG_EXIT, 1);
	cube_wire_put_u32(&b, CUBE_ATTR_TERM_SIGNAL, 15);
	cube_wire_put_flag(&b, CUBE_ATTR_TIMED_OUT);
	add(&s, &b);
	client_seed("exec-steps", 4, &s);

	with_data(&s, CUBE_MSG_DATA, 1, "sandbox\n");
	end(&s, 1, 8);
	client_seed("read", 5, &s);
	simple(&s, CUBE_MSG_OK, 1);
	simple(&s, CUBE_MSG_OK, 1);
	client_seed("write", 6, &s);
	entry(&s, CUBE_MSG_STAT_REPLY, 1, NULL, CUBE_FTYPE_DIR);
	client_seed("stat", 7, &s);
	entry(&s, CUBE_MSG_DIRENT, 1, "a.txt", CUBE_FTYPE_FILE);
	entry(&s, CUBE_MSG_DIRENT, 1, "dir", CUBE_FTYPE_DIR);
	end(&s, 1, 0);
	client_seed("list", 8, &s);
	simple(&s, CUBE_MSG_OK, 1);
	client_seed("mkdir", 9, &s);
	error(&s, 1, ENOTEMPTY);
	client_seed("remove-refused", 10, &s);
	simple(&s, CUBE_MSG_OK, 1);
	client_seed("rename", 11, &s);
	simple(&s, CUBE_MSG_OK, 1);
	fs_event(&s, 1, CUBE_FS_CREATE, "new.txt");
	fs_event(&s, 1, CUBE_FS_RENAME, "old.txt");
	client_seed("watch", 12, &s);
}

/* What a host sends agent_session_fuzz. */
static void session_seed(const char *name, struct stream *s)
{
	seed("agent_session", name, "", 0, s->data, s->len);
	free(s->data);
	s->data = NULL;
	s->len = 0;
}

static void agent_session_seeds(void)
{
	struct stream s = { 0 };
	struct cube_wire_buf b = { 0 };
	uint8_t bytes[32];

	simple(&s, CUBE_MSG_PING, 1);
	session_seed("ping", &s);
	with_str(&s, CUBE_MSG_STAT, 1, CUBE_ATTR_PATH, "/etc/passwd");
	with_str(&s, CUBE_MSG_LIST, 2, CUBE_ATTR_PATH, "/etc");
	with_str(&s, CUBE_MSG_FILE_READ, 3, CUBE_ATTR_PATH, "/etc/hostname");
	session_seed("stat-list-read", &s);

	cube_wire_start(&b, CUBE_MSG_FILE_WRITE, 1);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, "/home/f.txt");
	cube_wire_put_u32(&b, CUBE_ATTR_MODE, 0600);
	add(&s, &b);
	with_data(&s, CUBE_MSG_DATA, 1, "abc");
	end(&s, 1, 3);
	with_str(&s, CUBE_MSG_FILE_READ, 2, CUBE_ATTR_PATH, "/home/f.txt");
	session_seed("write-read", &s);

	cube_wire_start(&b, CUBE_MSG_MKDIR, 1);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, "/home/a/b");
	cube_wire_put_flag(&b, CUBE_ATTR_PARENTS);
	add(&s, &b);
	cube_wire_start(&b, CUBE_MSG_RENAME, 2);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, "/home/a");
	cube_wire_put_str(&b, CUBE_ATTR_NEWPATH, "/home/c");
	add(&s, &b);
	cube_wire_start(&b, CUBE_MSG_REMOVE, 3);
	cube_wire_put_str(&b, CUBE_ATTR_PATH, "/home/c");
	cube_wire_put_flag(&b, CUBE_ATTR_RECURSIVE);
	add(&s, &b);
	session_seed("mkdir-rename-remove", &s);

	with_str(&s, CUBE_MSG_WATCH, 1, CUBE_ATTR_PATH, "/home");
	with_str(&s, CUBE_MSG_MKDIR, 2, CUBE_ATTR_PATH, "/home/x");
	session_seed("watch", &s);

	cube_wire_start(&b, CUBE_MSG_IDENTITY, 1);
	cube_wire_put_str(&b, CUBE_ATTR_HOSTNAME, "box");
	cube_wire_put_str(&b, CUBE_ATTR_SANDBOX_ID, "sb-1");
	add(&s, &b);
	memset(bytes, 0x5a, sizeof(bytes));
	cube_wire_start(&b, CUBE_MSG_RESEED, 2);
	cube_wire_put(&b, CUBE_ATTR_SEED, bytes, sizeof(bytes));
	add(&s, &b);
	session_seed("identity-reseed", &s);

	cube_wire_start(&b, CUBE_MSG_EXEC, 1);
	cube_wire_put_str(&b, CUBE_ATTR_ARGV, "sh");
	cube_wire_put_str(&b, CUBE_ATTR_ARGV, "-c");
	cube_wire_put_str(&b, CUBE_ATTR_ENV, "A=1");
	add(&s, &b);
	with_data(&s, CUBE_MSG_STDIN, 1, "x");
	with_u32(&s, CUBE_MSG_SIGNAL, 1, CUBE_ATTR_SIGNAL, 9);
	simple(&s, CUBE_MSG_STDIN_CLOSE, 1);
	session_seed("exec", &s);

	/* a header with flags, then one too long: both refused, then a PING */
	memset(bytes, 0, sizeof(bytes));
	bytes[6] = 1;
	bytes[12] = 0xff;
	bytes[13] = 0xff;
	bytes[14] = 0x0f;
	s.data = malloc(24);
	if (!s.data)
		die("malloc");
	memcpy(s.data, bytes, 24);
	s.len = 24;
	simple(&s, CUBE_MSG_PING, 9);
	session_seed("bad-headers", &s);
}

/* --- virtio programs (virtio_fuzz.c: op, device, arguments) --- */

static void virtio_seeds(void)
{
	/* rng: queue 0 of 8, one writable buffer, a notify, save and load */
	static const uint8_t rng[] = {
		3, 0, 6,
		4, 0, 0, 0, 0x00, 0x10, 64, 0, 1,
		5, 0, 0,
		9, 0,
	};
	/* blk: a read of sector 1: header, 512 bytes of data, status */
	static const uint8_t blk[] = {
		3, 1, 6,
		2, 1, 0x00, 0x01, 16, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		4, 1, 0, 2, 0x00, 0x01, 16, 0, 0, 0x00, 0x02, 0x00, 0x02, 1,
		0x00, 0x04, 1, 0, 1,
		5, 1, 0,
		9, 1,
	};
	/* net: a frame sent (TX, queue 1), a frame received (RX, queue 0) */
	uint8_t net[256] = {
		3, 2, 7,
		2, 2, 0x00, 0x20, 72,
	};
	size_t n = 8;
	static const uint8_t net_tail[] = {
		4, 2, 1, 0, 0x00, 0x20, 72, 0, 0,
		5, 2, 1,
		3, 2, 6,
		4, 2, 0, 0, 0x00, 0x30, 0xf6, 0x05, 1,
		6, 2, 8,
	};

	seed("virtio", "rng", "", 0, rng, sizeof(rng));
	seed("virtio", "blk-read", "", 0, blk, sizeof(blk));
	memset(net + n, 0, 12);			/* virtio_net_hdr */
	n += 12;
	memset(net + n, 0xff, 6);		/* broadcast */
	memset(net + n + 6, 0x02, 6);
	net[n + 12] = 0x08;			/* IPv4 */
	memset(net + n + 14, 0x45, 46);
	n += 60;
	memcpy(net + n, net_tail, sizeof(net_tail));
	n += sizeof(net_tail);
	memset(net + n, 0, 12);			/* the received frame */
	memset(net + n + 12, 0x33, 52);
	n += 64;
	net[n++] = 9;
	net[n++] = 2;
	seed("virtio", "net-tx-rx", "", 0, net, n);
}

/* A guest vsock packet header written at @gpa by an OP_MEM. */
static size_t vsock_pkt(uint8_t *p, uint16_t gpa, uint32_t src_port,
			uint32_t dst_port, uint16_t op, uint32_t len)
{
	struct virtio_vsock_hdr h = {
		.src_cid = 3, .dst_cid = 2, .src_port = src_port,
		.dst_port = dst_port, .len = len, .type = VIRTIO_VSOCK_TYPE_STREAM,
		.op = op, .buf_alloc = 65536,
	};

	p[0] = 2;
	p[1] = 3;
	p[2] = gpa;
	p[3] = gpa >> 8;
	p[4] = sizeof(h);
	memcpy(p + 5, &h, sizeof(h));
	return 5 + sizeof(h);
}

/*
 * vsock: the rings set up and RX buffers given; the host connects to guest
 * port 1024 and the guest accepts (RESPONSE to the first local port); the
 * host writes; the guest connects to host port 1234, which accepts, and
 * writes "hello" on it; the host reads and closes; save and load.
 */
static void vsock_seed(void)
{
	static const uint8_t head[] = {
		3, 3, 6,  3, 3, 7,  3, 3, 8,
		4, 3, 0, 0, 0x00, 0x20, 0x00, 0x01, 1,
		4, 3, 0, 0, 0x00, 0x21, 0x00, 0x01, 1,
		11, 3, 0, 0, 0x00, 0x04,
	};
	static const uint8_t accept[] = {
		4, 3, 1, 0, 0x00, 0x10, 44, 0, 0,
		5, 3, 1,
		12, 3, 0, 1, 'h', 'o', 's', 't', ' ', 'w', 'r', 'i', 't', 'e',
		's', ' ', 'h', 'e', 'r', 'e',
	};
	static const uint8_t connect[] = {
		4, 3, 1, 0, 0x00, 0x11, 44, 0, 0,
		5, 3, 1,
		15, 3, 1,
	};
	static const uint8_t write[] = {
		2, 3, 0x2c, 0x12, 5, 'h', 'e', 'l', 'l', 'o',
		4, 3, 1, 1, 0x00, 0x12, 44, 0, 0, 0x2c, 0x12, 5, 0, 0,
		5, 3, 1,
		13, 3, 1,
		14, 3, 0, 0,
		7, 3,
		9, 3,
	};
	uint8_t p[512];
	size_t n = 0;

	memcpy(p, head, sizeof(head));
	n += sizeof(head);
	n += vsock_pkt(p + n, 0x1000, 1024, 1U << 30, VIRTIO_VSOCK_OP_RESPONSE, 0);
	memcpy(p + n, accept, sizeof(accept));
	n += sizeof(accept);
	n += vsock_pkt(p + n, 0x1100, 5000, 1234, VIRTIO_VSOCK_OP_REQUEST, 0);
	memcpy(p + n, connect, sizeof(connect));
	n += sizeof(connect);
	n += vsock_pkt(p + n, 0x1200, 5000, 1234, VIRTIO_VSOCK_OP_RW, 5);
	memcpy(p + n, write, sizeof(write));
	n += sizeof(write);
	seed("virtio", "vsock-streams", "", 0, p, n);
}

/* --- E2B requests and bodies --- */

/* An envd stream request: its JSON in one Connect envelope. */
static void stream_request(const char *name, const char *head, const char *json)
{
	size_t hlen = strlen(head), jlen = strlen(json);
	uint8_t *req = malloc(hlen + 5 + jlen);
	const uint8_t envd = 1;

	if (!req)
		die("malloc");
	memcpy(req, head, hlen);
	req[hlen] = 0;
	req[hlen + 1] = jlen >> 24;
	req[hlen + 2] = jlen >> 16;
	req[hlen + 3] = jlen >> 8;
	req[hlen + 4] = jlen;
	memcpy(req + hlen + 5, json, jlen);
	seed("e2b_dispatch", name, &envd, 1, req, hlen + 5 + jlen);
	free(req);
}

static void e2b_seeds(void)
{
	/* connect_frame_fuzz: limit and cut, then envelopes */
	seed("connect_frame", "two-messages", "\x85", 1,
	     "\x00\x00\x00\x00\x02{}\x02\x00\x00\x00\x0c{\"error\":{}}", 24);
	seed("connect_frame", "over-limit", "\x01", 1,
	     "\x00\x00\x00\x00\x08{\"a\":12}", 13);

	/* e2b_json_fuzz: parser index, then the body */
	seed_text("e2b_json", "json", 0, "{\"a\":\"it's\",\"b\":[1.5,null,true]}");
	seed_text("e2b_json", "new-sandbox", 1,
		  "{\"templateID\":\"base\",\"timeout\":60,\"metadata\":{\"k\":\"v\"},"
		  "\"envVars\":{\"A\":\"1\"},\"autoPause\":false,"
		  "\"allow_internet_access\":true,\"network\":{\"allowOut\":"
		  "[\"example.com\",\"10.1.0.0/16\"],\"denyOut\":[\"0.0.0.0/0\"],"
		  "\"allowPublicTraffic\":false}}");
	seed_text("e2b_json", "network", 2,
		  "{\"allowOut\":[\"1.1.1.1\"],\"denyOut\":[\"10.0.0.0/8\"],"
		  "\"allow_internet_access\":false}");
	seed_text("e2b_json", "timeout", 3, "{\"timeout\":30}");
	seed_text("e2b_json", "timeout-required", 4, "{\"timeout\":86400}");
	seed_text("e2b_json", "fork", 5, "{\"timeout\":60,\"count\":3}");
	seed_text("e2b_json", "start", 6,
		  "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"],"
		  "\"envs\":{\"A\":\"B\"},\"cwd\":\"/home/user\"},\"pty\":{\"size\":"
		  "{\"cols\":80,\"rows\":24}},\"tag\":\"t1\",\"stdin\":true}");
	seed_text("e2b_json", "selector", 7, "{\"process\":{\"tag\":\"t1\"}}");
	seed_text("e2b_json", "signal", 8,
		  "{\"process\":{\"pid\":3},\"signal\":\"SIGNAL_SIGKILL\"}");
	seed_text("e2b_json", "input", 9,
		  "{\"process\":{\"pid\":3},\"input\":{\"stdin\":\"aGVsbG8K\"}}");
	seed_text("e2b_json", "path", 10, "{\"path\":\"/home/user\"}");
	seed_text("e2b_json", "list-dir", 11, "{\"path\":\"/\",\"depth\":2}");
	seed_text("e2b_json", "move", 12, "{\"source\":\"/a\",\"destination\":\"/b\"}");
	seed_text("e2b_json", "watch", 13, "{\"path\":\"/a\",\"recursive\":true}");

	/* e2b_dispatch_fuzz: flags, method, path, fields, empty line, body */
	seed_text("e2b_dispatch", "create", 0,
		  "POST\n/sandboxes\nX-API-Key: e2b_fuzzkey\n\n"
		  "{\"templateID\":\"base\",\"timeout\":60,\"metadata\":{\"k\":\"v\"}}");
	seed_text("e2b_dispatch", "list", 0,
		  "GET\n/v2/sandboxes\nAuthorization: Bearer e2b_fuzzkey\n"
		  "?metadata=k%3Dv\n?state=running\n?limit=1\n\n");
	seed_text("e2b_dispatch", "get", 0,
		  "GET\n/sandboxes/isb1\nX-API-Key: e2b_fuzzkey\n\n");
	seed_text("e2b_dispatch", "timeout", 0,
		  "POST\n/sandboxes/isb1/timeout\nX-API-Key: e2b_fuzzkey\n\n{\"timeout\":30}");
	seed_text("e2b_dispatch", "fork-fails", 4 * 2,
		  "POST\n/sandboxes/isb1/fork\nX-API-Key: e2b_fuzzkey\n\n{\"count\":2}");
	seed_text("e2b_dispatch", "network", 0,
		  "PUT\n/sandboxes/isb1/network\nX-API-Key: e2b_fuzzkey\n\n"
		  "{\"allowOut\":[\"example.com\"],\"denyOut\":[\"10.0.0.0/8\"]}");
	seed_text("e2b_dispatch", "metrics", 0,
		  "GET\n/sandboxes/isb1/metrics\nX-API-Key: e2b_fuzzkey\n\n");
	seed_text("e2b_dispatch", "list-paged", 0,
		  "GET\n/v2/sandboxes\nX-API-Key: e2b_fuzzkey\n?limit=1\n?order=desc\n"
		  "?nextToken=1700000000.isb1\n?startedAfter=2023-11-14T22:13:20Z\n"
		  "?template=base\n?state=running,paused\n?metadata=owner=fu%7Azz\n\n");
	seed_text("e2b_dispatch", "metrics-range", 0,
		  "GET\n/sandboxes/isb1/metrics\nX-API-Key: e2b_fuzzkey\n"
		  "?start=1700000000\n?end=1700000300\n\n");
	seed_text("e2b_dispatch", "template-delete", 0,
		  "DELETE\n/templates/snap1\nX-API-Key: e2b_fuzzkey\n\n");
	seed_text("e2b_dispatch", "template-alias", 0,
		  "GET\n/templates/aliases/base\nX-API-Key: e2b_fuzzkey\n\n");
	seed_text("e2b_dispatch", "snapshots", 0,
		  "GET\n/snapshots\nX-API-Key: e2b_fuzzkey\n?sandboxID=isb1\n?name=snap1\n\n");
	seed_text("e2b_dispatch", "download-signed", 1,
		  "GET\n/files\nE2b-Sandbox-Id: isb1\n?path=/etc/hostname\n"
		  "?username=user\n?signature=v1_0123456789abcdef\n"
		  "?signature_expiration=1900000000\n\n");
	seed_text("e2b_dispatch", "snapshot", 0,
		  "POST\n/sandboxes/isb1/snapshots\nX-API-Key: e2b_fuzzkey\n\n{\"name\":\"s1\"}");
	stream_request("proc-start",
		       "POST\n/process.Process/Start\nE2b-Sandbox-Id: isb1\n"
		       "X-Access-Token: tok\nContent-Type: application/connect+json\n"
		       "Keepalive-Ping-Interval: 1\nConnect-Timeout-Ms: 5000\n\n",
		       "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[]}}");
	seed_text("e2b_dispatch", "proc-list", 1,
		  "POST\n/process.Process/List\nE2b-Sandbox-Id: isb1\n"
		  "X-Access-Token: tok\n\n{}");
	seed_text("e2b_dispatch", "send-input", 1,
		  "POST\n/process.Process/SendInput\nE2b-Sandbox-Id: isb1\n"
		  "X-Access-Token: tok\n\n"
		  "{\"process\":{\"pid\":42},\"input\":{\"stdin\":\"aGk=\"}}");
	seed_text("e2b_dispatch", "signal", 1,
		  "POST\n/process.Process/SendSignal\nE2b-Sandbox-Id: isb1\n"
		  "X-Access-Token: tok\n\n"
		  "{\"process\":{\"pid\":42},\"signal\":\"SIGNAL_SIGTERM\"}");
	seed_text("e2b_dispatch", "list-dir", 1,
		  "POST\n/filesystem.Filesystem/ListDir\nE2b-Sandbox-Id: isb1\n"
		  "X-Access-Token: tok\nAuthorization: Basic dXNlcjo=\n\n"
		  "{\"path\":\"/home/user\",\"depth\":2}");
	stream_request("watch-dir",
		       "POST\n/filesystem.Filesystem/WatchDir\nE2b-Sandbox-Id: isb1\n"
		       "X-Access-Token: tok\n\n",
		       "{\"path\":\"/home\",\"recursive\":true}");
	stream_request("proc-connect",
		       "POST\n/process.Process/Connect\nE2b-Sandbox-Id: isb1\n"
		       "X-Access-Token: tok\n\n",
		       "{\"process\":{\"pid\":42}}");
	seed_text("e2b_dispatch", "download", 1,
		  "GET\n/files\nE2b-Sandbox-Id: isb1\nX-Access-Token: tok\n"
		  "?path=/etc/hostname\n?username=user\n\n");
	seed_text("e2b_dispatch", "upload", 1,
		  "POST\n/files\nE2b-Sandbox-Id: isb1\nX-Access-Token: tok\n"
		  "Content-Type: application/octet-stream\n?path=/home/user/up.txt\n\n"
		  "hello upload");
	seed_text("e2b_dispatch", "forward", 1,
		  "GET\n/index.html?x=1\nE2b-Sandbox-Id: isb1\nE2b-Sandbox-Port: 8080\n"
		  "Accept: */*\n\n\n--port--\n"
		  "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
		  "Content-Length: 5\r\n\r\nhello");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds CORPUS_DIR\n");
		return 2;
	}
	top = argv[1];
	saved_state("saved-1vcpu", 1, 0);
	saved_state("saved-2vcpu-net", 2, SNAP_CFG_NET);
	saved_state("saved-1vcpu-disk", 1, SNAP_CFG_DISK);
	small_state();
	virtio_seeds();
	vsock_seed();
	agent_client_seeds();
	agent_session_seeds();
	e2b_seeds();
	return 0;
}
