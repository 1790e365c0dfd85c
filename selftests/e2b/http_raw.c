// SPDX-License-Identifier: GPL-2.0
/*
 * http_raw: send a file as it is to 127.0.0.1:PORT and print what comes
 * back until the server closes the connection (e2b_input_test.sh's
 * client: L1 has no curl, and busybox nc half-closes the connection when
 * its input ends, which a server may take for a client gone).
 *
 *   http_raw PORT FILE
 *
 * Exit status: 0 when an answer came, 1 on any failure (no connection, no
 * answer within 120 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char buf[65536];
	size_t got = 0;
	FILE *f;
	int fd;

	if (argc != 3 || atoi(argv[1]) <= 0 || atoi(argv[1]) > 65535) {
		fprintf(stderr, "usage: http_raw PORT FILE\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	sa.sin_port = htons(atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("http_raw: connect");
		return 1;
	}
	for (;;) {
		size_t n = fread(buf, 1, sizeof(buf), f);

		if (!n)
			break;
		/* a server may answer (413) and close before it all went */
		if (write_all(fd, buf, n))
			break;
	}
	fclose(f);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;
		int pr = poll(&p, 1, 120000);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			fprintf(stderr, "http_raw: no answer within 120 s\n");
			return 1;
		}
		r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (write_all(1, buf, r))
			return 1;
		got += r;
	}
	close(fd);
	return got ? 0 : 1;
}
