// SPDX-License-Identifier: GPL-2.0
/*
 * vsock-sh PORT: guest-side helper of vmm_disk_test.  Listens on AF_VSOCK
 * PORT, prints CUBE-L2-SH-READY, and per connection runs the one line it
 * reads with "sh -c", its standard output and error going back on the
 * stream, then "EXIT N" (N its exit status, 255 when it did not exit).
 * Test guests only: whoever reaches the port runs commands as root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

static void serve(int fd)
{
	char line[1024], out[32];
	size_t n = 0;
	int st, len;
	pid_t pid;

	while (n < sizeof(line) - 1) {
		if (read(fd, line + n, 1) != 1)
			return;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	pid = fork();
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = 255 << 8;
	len = snprintf(out, sizeof(out), "EXIT %d\n",
		       WIFEXITED(st) ? WEXITSTATUS(st) : 255);
	if (write(fd, out, len) != len) {
		/* the host went away (a restore or rollback resets streams) */
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK };
	int s;

	if (argc != 2) {
		fprintf(stderr, "usage: vsock-sh PORT\n");
		return 2;
	}
	sa.svm_cid = VMADDR_CID_ANY;
	sa.svm_port = atoi(argv[1]);
	s = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s, 16)) {
		perror("CUBE-L2-SH-FAILED");
		return 1;
	}
	printf("CUBE-L2-SH-READY\n");
	fflush(stdout);
	for (;;) {
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			continue;
		serve(c);
		close(c);
	}
}
