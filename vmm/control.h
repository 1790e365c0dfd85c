/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control socket: a Unix stream socket taking one-line requests,
 * answering one line each, "OK ..." or "ERR <reason>":
 *   pause | resume | snapshot [DIR] | stop | status
 * A request may carry up to CONTROL_MAX_FDS descriptors (one SCM_RIGHTS
 * message, with its first byte): the handler gets them, and they are
 * closed once the request is answered.
 */
#ifndef CUBE_VMM_CONTROL_H
#define CUBE_VMM_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#define CONTROL_MAX_CLIENTS	8
#define CONTROL_LINE_MAX	512
#define CONTROL_MAX_FDS		3

struct control_client {
	int fd;
	char buf[CONTROL_LINE_MAX];
	size_t len;
	int fds[CONTROL_MAX_FDS];	/* what the pending bytes came with */
	int nfds;
};

struct control {
	int listen_fd;
	char *path;
	bool keep_path;		/* jailed: the socket file is its root's */
	struct control_client clients[CONTROL_MAX_CLIENTS];
};

/*
 * The request handler: writes the reply (no newline) into reply.  @fds
 * are the @nfds descriptors passed with the request; the handler must not
 * keep them.
 */
typedef void (*control_fn)(void *arg, char *req, const int *fds, int nfds,
			   char *reply, size_t len);

int control_open(struct control *c, const char *path);
void control_close(struct control *c);
/* Accept or read what is ready on fd (listen or client); calls fn per line. */
void control_event(struct control *c, int fd, control_fn fn, void *arg);
/* Is fd one of ours?  Returns true for the listener and clients. */
bool control_owns(const struct control *c, int fd);
/* Fds to watch: the listener and the clients (register on accept). */
typedef void (*control_watch_fn)(void *arg, int fd, bool add);
void control_set_watch(control_watch_fn fn, void *arg);

#endif /* CUBE_VMM_CONTROL_H */
