/* SPDX-License-Identifier: GPL-2.0 */
/*
 * peer.h: the far end of a stream socket, played from fuzz input.  A thread
 * sends the given bytes, then shuts its sending side, and reads and drops
 * whatever comes back until the near end closes, so the code under test
 * never waits on a full socket.
 */
#ifndef CUBE_FUZZ_PEER_H
#define CUBE_FUZZ_PEER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct peer {
	int fd;			/* the far end (the thread's) */
	const uint8_t *data;
	size_t len;
	size_t received;	/* bytes the near end sent */
	pthread_t thread;
};

/* Returns the near end's descriptor, or exits the program when it cannot. */
int peer_start(struct peer *p, const uint8_t *data, size_t len);
/* After the near end is closed: waits for the thread. */
void peer_stop(struct peer *p);

#endif /* CUBE_FUZZ_PEER_H */
