/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent_client_int.h: internals of the agent client, shared by
 * agent_client.c, agent_exec.c and agent_files.c.
 */
#ifndef CUBE_AGENT_CLIENT_INT_H
#define CUBE_AGENT_CLIENT_INT_H

#include "agent_client.h"

/* Output queued towards the agent beyond which sending waits. */
#define CLIENT_OUT_LIMIT	(1024 * 1024)
#define CLIENT_DEFAULT_TIMEOUT	30000

struct cube_agent {
	int fd;
	int timeout_ms;
	uint32_t next_id;
	int broken;			/* sticky: the connection is unusable */
	uint8_t *in;			/* CUBE_AGENT_HDR_LEN + MAX_PAYLOAD */
	size_t in_len;
	size_t in_used;			/* bytes of the message last returned */
	uint8_t *out;
	size_t out_len, out_cap;
	char errmsg[CUBE_AGENT_MAX_MESSAGE + 64];
	char owner[CUBE_AGENT_MAX_NAME];	/* USER of writes, mkdirs; "" none */
	/* the running command */
	bool exec_active;
	bool stdin_closed;
	uint32_t exec_id;
	/* the directory watch (the connection serves only it) */
	bool watch_active;
	bool watch_recursive;	/* events may name paths below */
	uint32_t watch_id;
};

int client_fail(struct cube_agent *a, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int client_broken(struct cube_agent *a, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint32_t client_new_id(struct cube_agent *a);
int client_queue(struct cube_agent *a, struct cube_wire_buf *b);
int client_send(struct cube_agent *a, struct cube_wire_buf *b);
int client_recv(struct cube_agent *a, struct cube_wire_msg *m, int timeout_ms);
int client_agent_error(struct cube_agent *a, const struct cube_wire_msg *m);
int client_expect(struct cube_agent *a, uint32_t id, uint16_t type,
		  struct cube_wire_msg *m);
int client_idle(struct cube_agent *a);
int client_simple(struct cube_agent *a, struct cube_wire_buf *b, uint32_t id);
int client_check_string(struct cube_agent *a, const char *what, const char *s,
			size_t max);

#endif /* CUBE_AGENT_CLIENT_INT_H */
