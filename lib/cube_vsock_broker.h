/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_vsock_broker.h: how a jailed cube-vmm gets the host end of a
 * guest-initiated vsock stream without naming a socket itself.
 *
 * A guest connect() to host port P is bridged to the Unix socket
 * "<vsock-uds>_<P>".  A jailed VMM's filter has neither socket() nor
 * connect(), so its supervisor hands it an end of a SOCK_SEQPACKET socket
 * pair (cube-vmm --vsock-connect-fd N) and connects for it:
 *
 *   VMM -> broker: struct cube_vsock_broker_msg { port = P, seq = S,
 *                  result = 0 }, S new for each request
 *   broker -> VMM: the same struct with port P, seq S and result 0, the connected
 *                  stream its one SCM_RIGHTS descriptor; or result -errno
 *                  (nothing listens there: -ENOENT or -ECONNREFUSED) and
 *                  no descriptor.
 *
 * One request at a time; the broker names only "<vsock-uds>_<P>" with a
 * decimal P, so the VMM chooses nothing but the port.
 */
#ifndef CUBE_VSOCK_BROKER_H
#define CUBE_VSOCK_BROKER_H

#include <pthread.h>
#include <stdint.h>

struct cube_vsock_broker_msg {
	uint32_t port;
	uint32_t seq;		/* the request's, echoed */
	int32_t result;
};

/* The supervisor's side: a thread that answers until the VMM's end closes. */
struct cube_vsock_broker {
	int fd;			/* the broker's end, -1: not started */
	char *base;		/* "<vsock-uds>" */
	pthread_t thread;
	unsigned long served;	/* streams passed */
};

/*
 * Make the socket pair and start the thread serving connects to
 * "@base_<P>"; *@vmm_fd is the VMM's end (close-on-exec: dup it to the
 * number the VMM is told).  0 or -errno.
 */
int cube_vsock_broker_start(struct cube_vsock_broker *b, const char *base,
			    int *vmm_fd);
/* Once the VMM is gone: end the thread, close the broker's end. */
void cube_vsock_broker_stop(struct cube_vsock_broker *b);

#endif /* CUBE_VSOCK_BROKER_H */
