/* SPDX-License-Identifier: GPL-2.0 */
/*
 * proc_queue.h: the events of one running command, queued for its readers.
 *
 * One writer (the command's pump) appends output and, last, its end; any
 * number of readers (streams) each walk the queue at their own pace.  An
 * event every reader has passed is freed.  The queue counts what it costs
 * in real bytes (event headers included, not only payload), so a command
 * that writes one byte at a time is bounded like one that writes pages:
 * output of one kind that no reader has started on is appended to the last
 * event, up to PQ_CHUNK_MAX.  Every operation is O(1) in the length of the
 * queue (O(readers) at most); the caller serialises them.
 */
#ifndef PROC_QUEUE_H
#define PROC_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2b_backend.h"

/* the largest event output is coalesced into */
#define PQ_CHUNK_MAX	(64u << 10)

/**
 * struct pq_event - one event
 * @next: the next, newer event
 * @seq: its position, counted from 0
 * @type: E2B_EV_STDOUT, E2B_EV_STDERR, E2B_EV_PTY or E2B_EV_END
 * @exit_code: %E2B_EV_END: the exit code, -1 if none
 * @signal: %E2B_EV_END: the signal that ended it, 0 if none
 * @len: output bytes in @data (0 for %E2B_EV_END)
 * @cap: bytes allocated for @data
 * @data: output; for %E2B_EV_END the error text, NUL-terminated
 */
struct pq_event {
	struct pq_event *next;
	uint64_t seq;
	enum e2b_event_type type;
	int exit_code;
	int signal;
	size_t len;
	size_t cap;
	unsigned char data[];
};

/**
 * struct pq_reader - one reader's place
 * @next: the queue's next reader
 * @cursor: seq of the next event it reads
 * @at: that event, NULL while the reader has read all there is
 */
struct pq_reader {
	struct pq_reader *next;
	uint64_t cursor;
	struct pq_event *at;
};

/**
 * struct pq - the queue
 * @head: oldest event kept
 * @tail: newest event
 * @tail_link: the pointer that points at @tail (@head or its predecessor's
 *	@next), for growing @tail in place
 * @next_seq: seq of the next event appended
 * @bytes: what the queue holds, in real bytes
 * @readers: the readers
 * @ended: an %E2B_EV_END was appended (nothing follows it)
 */
struct pq {
	struct pq_event *head, *tail, **tail_link;
	uint64_t next_seq;
	size_t bytes;
	struct pq_reader *readers;
	bool ended;
};

void pq_init(struct pq *q);
/* frees every event; readers must be detached (or are forgotten) */
void pq_free(struct pq *q);

/*
 * pq_push_data() - append output of @type (STDOUT, STDERR or PTY)
 * Returns the change of q->bytes (>= 0), or -ENOMEM (nothing changed),
 * -EINVAL for an empty or oversized write, a bad type, or after the end.
 */
long pq_push_data(struct pq *q, enum e2b_event_type type, const void *data,
		  size_t len);
/* pq_push_end() - append the end; same returns as pq_push_data() */
long pq_push_end(struct pq *q, int exit_code, int signal, const char *error);

/* a new reader sees what is appended from now on */
void pq_attach(struct pq *q, struct pq_reader *r);
/* returns the change of q->bytes (<= 0) from what its leaving frees */
long pq_detach(struct pq *q, struct pq_reader *r);

/* the reader's next event, or NULL when it has read everything */
static inline struct pq_event *pq_peek(const struct pq_reader *r)
{
	return r->at;
}

/*
 * pq_advance() - the reader is done with pq_peek()'s event
 * Returns the change of q->bytes (<= 0) from what that frees.
 */
long pq_advance(struct pq *q, struct pq_reader *r);

#endif /* PROC_QUEUE_H */
