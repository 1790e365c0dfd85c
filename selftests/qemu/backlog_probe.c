// SPDX-License-Identifier: GPL-2.0
/*
 * backlog_probe N: listen on a loopback port with a backlog of 1, as QEMU
 * does for a forwarded port, make N connections to it at once, give the
 * handshakes a moment and print how many the accept queue holds.  The
 * harness's own test (harness_test.sh) runs it with and without
 * listen_backlog.so preloaded: about 2 without, N with.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	struct timespec pause = { 0, 300 * 1000 * 1000 };
	int n = argc == 2 ? atoi(argv[1]) : 0;
	int lfd, queued = 0, i;

	if (n <= 0 || n > 512) {
		fprintf(stderr, "usage: backlog_probe N (1-512)\n");
		return 2;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&sa, &len)) {
		perror("backlog_probe: listener");
		return 1;
	}
	for (i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (fd < 0 || (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
			       errno != EINPROGRESS)) {
			perror("backlog_probe: connect");
			return 1;
		}
		/* left open: the process's end closes them */
	}
	nanosleep(&pause, NULL);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			break;
		queued++;
	}
	if (errno != EAGAIN) {
		perror("backlog_probe: accept");
		return 1;
	}
	printf("%d\n", queued);
	return 0;
}
