// SPDX-License-Identifier: GPL-2.0
/*
 * agent_client_fuzz: libcube's agent client (lib/agent_client.c,
 * agent_exec.c, agent_files.c) talking to a fake agent whose every byte
 * is the fuzzer's.  The first byte picks the request the host makes
 * (ping, identity, reseed, a command with its stdin, signals and output,
 * a file read, write, stat, listing, mkdir, remove, rename, a watch); the
 * rest is what the agent answers.  Whatever the agent says, the client
 * must return an error or a result that holds what it promises: strings
 * terminated, output within what was received, an exit status that is
 * one of its kinds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_client.h"
#include "fuzz.h"
#include "peer.h"

enum op {
	OP_PING, OP_IDENTITY, OP_RESEED, OP_EXEC, OP_EXEC_STEPS, OP_READ,
	OP_WRITE, OP_STAT, OP_LIST, OP_MKDIR, OP_REMOVE, OP_RENAME, OP_WATCH,
	NR_OPS
};

static size_t peer_len;		/* bytes the fake agent sent */

static void check_str(const char *s, size_t size)
{
	if (!memchr(s, 0, size))
		abort();
}

/* Reads every byte handed out: ASan checks the whole range. */
static void touch(const void *data, size_t len)
{
	const volatile uint8_t *p = data;
	uint8_t x = 0;
	size_t i;

	if (len > peer_len)
		abort();
	for (i = 0; i < len; i++)
		x ^= p[i];
	(void)x;
}

static int on_output(void *ctx, enum cube_exec_event_type stream,
		     const void *data, size_t len)
{
	if (stream != CUBE_EXEC_STDOUT && stream != CUBE_EXEC_STDERR)
		abort();
	touch(data, len);
	return 0;
}

static int on_data(void *ctx, const void *buf, size_t len)
{
	size_t *total = ctx;

	touch(buf, len);
	*total += len;
	return 0;
}

static int on_entry(void *ctx, const char *name,
		    const struct cube_agent_stat *st)
{
	if (!name[0] || strlen(name) >= CUBE_AGENT_MAX_NAME ||
	    strchr(name, '/'))
		abort();
	return 0;
}

static ssize_t from_zeros(void *ctx, void *buf, size_t len)
{
	size_t *left = ctx;
	size_t n = len < *left ? len : *left;

	memset(buf, 0, n);
	*left -= n;
	return n;
}

static void check_status(const struct cube_exec_status *st)
{
	if (st->exited ? (st->code < 0 || st->code > 255) :
	    (st->signal < 1 || st->signal > 64))
		abort();
}

static void exec_steps(struct cube_agent *a)
{
	static const char *const argv[] = { "sh", "-c", "cat", NULL };
	const struct cube_exec_spec spec = { .argv = argv, .pty = true };
	struct cube_exec_event ev;
	uint32_t pid;
	int i;

	if (cube_agent_exec_start(a, &spec, &pid))
		return;
	for (i = 0; i < 64; i++) {
		switch (i % 4) {
		case 1:
			cube_agent_exec_stdin(a, "hello\n", 6);
			break;
		case 2:
			cube_agent_exec_resize(a, 40, 100);
			break;
		case 3:
			cube_agent_exec_signal(a, 15);
			break;
		}
		if (cube_agent_exec_next(a, &ev, 1000))
			return;
		switch (ev.type) {
		case CUBE_EXEC_STDOUT:
		case CUBE_EXEC_STDERR:
			on_output(NULL, ev.type, ev.data, ev.len);
			break;
		case CUBE_EXEC_EXIT:
			check_status(&ev.status);
			return;
		case CUBE_EXEC_ERROR:
			if (ev.err >= 0)
				abort();
			break;
		default:
			abort();
		}
	}
	cube_agent_exec_close_stdin(a);
}

static void run(struct cube_agent *a, enum op op)
{
	static const char *const argv[] = { "python3", "-c", "print(2+2)", NULL };
	struct cube_agent_identity id = {
		.hostname = "box", .sandbox_id = "sb-1", .set_time = true,
		.time_ns = 1700000000000000000ULL,
	};
	struct cube_exec_spec spec = { .argv = argv, .timeout_ms = 5000 };
	struct cube_exec_status status;
	struct cube_agent_info info;
	struct cube_agent_stat st;
	struct cube_watch_event wev;
	uint8_t seed[64] = { 1 };
	size_t total = 0, left = 70000;
	uint64_t size;

	switch (op) {
	case OP_PING:
		if (!cube_agent_ping(a, &info)) {
			check_str(info.sandbox_id, sizeof(info.sandbox_id));
			check_str(info.hostname, sizeof(info.hostname));
		}
		break;
	case OP_IDENTITY:
		cube_agent_set_identity(a, &id);
		break;
	case OP_RESEED:
		cube_agent_reseed(a, seed, sizeof(seed));
		break;
	case OP_EXEC:
		if (!cube_agent_exec(a, &spec, "in", 2, on_output, NULL, &status))
			check_status(&status);
		break;
	case OP_EXEC_STEPS:
		exec_steps(a);
		break;
	case OP_READ:
		if (!cube_agent_read_file(a, "/etc/hostname", on_data, &total,
					  &size) && size != total)
			abort();
		break;
	case OP_WRITE:
		cube_agent_write_file(a, "/tmp/out", 0644, 0, from_zeros, &left);
		break;
	case OP_STAT:
		cube_agent_stat(a, "/home/user", &st);
		break;
	case OP_LIST:
		cube_agent_list(a, "/", on_entry, NULL);
		break;
	case OP_MKDIR:
		cube_agent_mkdir(a, "/a/b", 0, true);
		break;
	case OP_REMOVE:
		cube_agent_remove(a, "/a", true);
		break;
	case OP_RENAME:
		cube_agent_rename(a, "/a", "/b");
		break;
	case OP_WATCH:
		if (cube_agent_watch(a, "/tmp"))
			break;
		while (!cube_agent_watch_next(a, &wev, 1000))
			check_str(wev.name, sizeof(wev.name));
		break;
	default:
		break;
	}
	/* after anything, the connection still answers or says why not */
	if (cube_agent_ping(a, &info) && !cube_agent_error(a)[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cube_agent *a;
	struct peer p;
	int fd;

	if (!size)
		return 0;
	peer_len = size - 1;
	fd = peer_start(&p, data + 1, size - 1);
	if (cube_agent_from_fd(fd, &a)) {
		close(fd);
		peer_stop(&p);
		return 0;
	}
	cube_agent_set_timeout(a, 2000);
	run(a, data[0] % NR_OPS);
	cube_agent_close(a);
	peer_stop(&p);
	return 0;
}
