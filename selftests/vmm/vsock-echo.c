// SPDX-License-Identifier: GPL-2.0
/*
 * vsock-echo PORT: guest-side helper of the vmm selftests.  Listens on
 * AF_VSOCK PORT, prints CUBE-L2-VSOCK-READY, and echoes every stream back
 * until its peer closes (one process per stream).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

static void echo(int fd)
{
	static char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (n > 0) {
			ssize_t w = write(fd, p, n);

			if (w <= 0)
				_exit(1);
			p += w;
			n -= w;
		}
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK };
	int s;

	if (argc != 2) {
		fprintf(stderr, "usage: vsock-echo PORT\n");
		return 2;
	}
	sa.svm_cid = VMADDR_CID_ANY;
	sa.svm_port = atoi(argv[1]);
	s = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s, 128)) {
		perror("CUBE-L2-VSOCK-FAILED");
		return 1;
	}
	signal(SIGCHLD, SIG_IGN);
	printf("CUBE-L2-VSOCK-READY\n");
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c < 0)
			continue;
		if (fork() == 0) {
			close(s);
			echo(c);
		}
		close(c);
	}
}
