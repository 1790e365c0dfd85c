/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_send_fds.h: a message with descriptors on a unix socket, for every
 * program that passes them (the VMM's control requests, the vsock connect
 * broker, cube-shim-net).  No dependency but libc.
 */
#ifndef CUBE_SEND_FDS_H
#define CUBE_SEND_FDS_H

#include <stddef.h>

/* The most descriptors cube_send_fds() passes in one message. */
#define CUBE_SEND_FDS_MAX	4

/*
 * cube_send_fds() - @len bytes of @buf on the connected unix socket @sock,
 * with the @nfds (0..CUBE_SEND_FDS_MAX) descriptors @fds (SCM_RIGHTS);
 * never raises SIGPIPE.  0 when all of @buf went, -EIO on a short send,
 * else -errno.
 */
int cube_send_fds(int sock, const void *buf, size_t len, const int *fds,
		  int nfds);

#endif /* CUBE_SEND_FDS_H */
