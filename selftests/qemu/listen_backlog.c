// SPDX-License-Identifier: GPL-2.0
/*
 * listen_backlog.so: preloaded into the harness's QEMU (run.sh), it gives
 * the ports QEMU forwards into L1 (-netdev user,hostfwd=) a listen backlog
 * the size of this host's somaxconn.  QEMU's user-mode network asks for a
 * backlog of 1, so a burst of connections to L1 (the SDK benchmark's 50
 * creates at once) overflows the accept queue: the kernel drops the
 * handshakes it cannot queue, each client retransmits into the same full
 * queue with a growing interval, and one whose SYN cookie has aged out
 * by then is answered with a reset (the client reads ECONNRESET).  A
 * client on a KVM host talks to cubed's own sockets and never meets this;
 * in the harness it made cube look as if it refused work.
 *
 * Only listen(2) changes; a caller asking for more than the floor keeps
 * what it asked for (the kernel caps it at net.core.somaxconn).
 */
#include <sys/syscall.h>
#include <unistd.h>

#define HARNESS_LISTEN_BACKLOG	4096

int listen(int fd, int backlog);

int listen(int fd, int backlog)
{
	if (backlog < HARNESS_LISTEN_BACKLOG)
		backlog = HARNESS_LISTEN_BACKLOG;
	return syscall(SYS_listen, fd, backlog);
}
