// SPDX-License-Identifier: GPL-2.0
/*
 * agent_session_fuzz: the guest agent's side of the wire.  A host whose
 * every byte is the fuzzer's talks to session_run() (guest/agent/
 * session.c), which frames, validates and dispatches its messages to the
 * agent's own command, file, system and watch handlers over a scratch
 * root directory (commands are checked but never started: agent_shim.c).  The session must end
 * when the host closes, whatever it sent, and nothing outside the root
 * may change: a file beside the root is checked after every input.  The
 * root is emptied between inputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "fuzz.h"
#include "peer.h"

static char top[64];		/* holds root/ and the sentinel */
static char root[96];
static char sentinel[96];
static struct agent_config cfg;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *f)
{
	if (f->level == 0)
		return 0;	/* keep the root itself */
	if (flag == FTW_DP)
		return rmdir(path) ? -1 : 0;
	/* a file the host made read-only, a directory without x */
	return unlink(path) ? -1 : 0;
}

static void empty_root(void)
{
	chmod(root, 0755);
	if (nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS)) {
		fprintf(stderr, "agent_session_fuzz: cannot empty %s\n", root);
		abort();
	}
}

static void cleanup(void)
{
	empty_root();
	rmdir(root);
	unlink(sentinel);
	rmdir(top);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(top, sizeof(top), "/tmp/cube-fuzz-agent.XXXXXX");
	if (!mkdtemp(top))
		die("mkdtemp");
	snprintf(root, sizeof(root), "%s/root", top);
	snprintf(sentinel, sizeof(sentinel), "%s/outside", top);
	if (mkdir(root, 0755))
		die(root);
	write_file(sentinel, "outside the root\n");
	cfg.root = root;
	cfg.rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cfg.rootfd < 0)
		die(root);
	cfg.ready = true;
	cfg.disk_fd = -1;
	atexit(cleanup);
	return 0;
}

/* The layout every input starts from: a home, a passwd, a file. */
static void populate(void)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/etc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/passwd", root);
	write_file(path, "root:x:0:0:root:/root:/bin/sh\n"
		   "user:x:1000:1000::/home/user:/bin/sh\n");
	snprintf(path, sizeof(path), "%s/etc/hostname", root);
	write_file(path, "sandbox\n");
	snprintf(path, sizeof(path), "%s/home", root);
	mkdir(path, 0755);
}

static void check_sentinel(void)
{
	struct stat st;
	char buf[64];
	int fd = open(sentinel, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		abort();	/* removed or renamed from inside the root */
	n = read(fd, buf, sizeof(buf));
	if (n != 17 || memcmp(buf, "outside the root\n", 17) ||
	    fstat(fd, &st) || (st.st_mode & 07777) != 0644)
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct peer p;
	int fd;

	populate();
	fd = peer_start(&p, data, size);
	session_run(fd, -1, &cfg);	/* closes fd; no main process to park with */
	peer_stop(&p);
	check_sentinel();
	empty_root();
	return 0;
}
