// SPDX-License-Identifier: GPL-2.0
/*
 * vsock-kv PORT: guest-side helper of the rollback selftests.  Listens on
 * AF_VSOCK PORT, prints CUBE-L2-KV-READY, and answers one request line
 * per connection, one connection at a time, from state in its own memory
 * (so a rollback of the guest's memory takes it back too):
 *   PING                 -> PONG
 *   SET VALUE            -> OK        (VALUE: up to 63 bytes, no spaces)
 *   GET                  -> VAL VALUE (VAL - before any SET)
 *   DIRTY MIB SEED       -> OK        writes every page of a MIB MiB buffer
 *   ZERO MIB             -> OK        zeroes the first MIB MiB of it again
 *   DIAL PORT            -> GOT LINE  connects to the host's PORT, writes
 *                                     "HELLO\n", answers its first line;
 *                                     ERR ERRNO when that fails
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#define MAX_DIRTY_MIB	192

static char value[64] = "-";
static unsigned char *dirty;

static void reply(int fd, const char *s)
{
	size_t n = strlen(s);

	if (write(fd, s, n) != (ssize_t)n) {
		/* the peer went (a rollback resets its stream) */
	}
}

/* A guest-initiated stream to the host's @port. */
static void dial(int fd, unsigned int port)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_HOST,
		.svm_port = port,
	};
	char got[64], out[96];
	size_t n = 0;
	int s = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(s, "HELLO\n", 6) != 6) {
		snprintf(out, sizeof(out), "ERR %d\n", errno);
		reply(fd, out);
		if (s >= 0)
			close(s);
		return;
	}
	while (n < sizeof(got) - 1 && read(s, got + n, 1) == 1 &&
	       got[n] != '\n')
		n++;
	got[n] = 0;
	close(s);
	snprintf(out, sizeof(out), "GOT %s\n", got);
	reply(fd, out);
}

static void serve(int fd)
{
	char line[128], out[96];
	unsigned int mib, seed, port;
	size_t n = 0, i;
	ssize_t r;

	while (n < sizeof(line) - 1) {
		r = read(fd, line + n, 1);
		if (r <= 0)
			return;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	if (!strcmp(line, "PING")) {
		reply(fd, "PONG\n");
	} else if (!strncmp(line, "SET ", 4) && strlen(line + 4) < sizeof(value)) {
		strcpy(value, line + 4);
		reply(fd, "OK\n");
	} else if (!strcmp(line, "GET")) {
		snprintf(out, sizeof(out), "VAL %s\n", value);
		reply(fd, out);
	} else if (sscanf(line, "DIRTY %u %u", &mib, &seed) == 2 &&
		   mib <= MAX_DIRTY_MIB) {
		/* reserved as it is written: the guest may be small */
		if (!dirty)
			dirty = mmap(NULL, (size_t)MAX_DIRTY_MIB << 20,
				     PROT_READ | PROT_WRITE, MAP_PRIVATE |
				     MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (dirty == MAP_FAILED)
			dirty = NULL;
		if (!dirty) {
			reply(fd, "ERR out of memory\n");
			return;
		}
		for (i = 0; i < ((size_t)mib << 20); i += 4096)
			dirty[i] = (unsigned char)(seed + i / 4096) | 1;
		reply(fd, "OK\n");
	} else if (sscanf(line, "DIAL %u", &port) == 1) {
		dial(fd, port);
	} else if (sscanf(line, "ZERO %u", &mib) == 1 && dirty &&
		   mib <= MAX_DIRTY_MIB) {
		memset(dirty, 0, (size_t)mib << 20);
		reply(fd, "OK\n");
	} else {
		reply(fd, "ERR\n");
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK };
	int s;

	if (argc != 2) {
		fprintf(stderr, "usage: vsock-kv PORT\n");
		return 2;
	}
	sa.svm_cid = VMADDR_CID_ANY;
	sa.svm_port = atoi(argv[1]);
	s = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s, 128)) {
		perror("CUBE-L2-KV-FAILED");
		return 1;
	}
	printf("CUBE-L2-KV-READY\n");
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c < 0)
			continue;
		serve(c);
		close(c);
	}
}
