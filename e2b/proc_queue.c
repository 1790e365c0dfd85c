// SPDX-License-Identifier: GPL-2.0
/* The events of one running command, queued for its readers; proc_queue.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc_queue.h"

static size_t event_cost(const struct pq_event *e)
{
	return sizeof(*e) + e->cap;
}

void pq_init(struct pq *q)
{
	memset(q, 0, sizeof(*q));
	q->tail_link = &q->head;
}

void pq_free(struct pq *q)
{
	while (q->head) {
		struct pq_event *e = q->head;

		q->head = e->next;
		free(e);
	}
	pq_init(q);
}

/* the seq every reader has passed: events before it are nobody's */
static uint64_t min_cursor(const struct pq *q)
{
	const struct pq_reader *r;
	uint64_t m = q->next_seq;

	for (r = q->readers; r; r = r->next)
		if (r->cursor < m)
			m = r->cursor;
	return m;
}

static long trim(struct pq *q)
{
	uint64_t m = min_cursor(q);
	long freed = 0;

	while (q->head && q->head->seq < m) {
		struct pq_event *e = q->head;

		q->head = e->next;
		if (q->tail_link == &e->next)
			q->tail_link = &q->head;
		if (!q->head) {
			q->tail = NULL;
			q->tail_link = &q->head;
		}
		freed += event_cost(e);
		free(e);
	}
	q->bytes -= freed;
	return -freed;
}

/* link @e in as the newest event; caught-up readers now wait on it */
static long append(struct pq *q, struct pq_event *e)
{
	struct pq_reader *r;

	e->seq = q->next_seq++;
	e->next = NULL;
	if (q->tail) {
		q->tail->next = e;
		q->tail_link = &q->tail->next;
	} else {
		q->head = e;
		q->tail_link = &q->head;
	}
	q->tail = e;
	q->bytes += event_cost(e);
	for (r = q->readers; r; r = r->next)
		if (!r->at)
			r->at = e;
	return (long)event_cost(e) + trim(q);
}

/* no reader has read the tail yet: output may still be added to it */
static bool tail_unread(const struct pq *q)
{
	const struct pq_reader *r;

	for (r = q->readers; r; r = r->next)
		if (r->cursor > q->tail->seq)
			return false;
	return true;
}

/*
 * Add @len bytes to the tail, growing it (it may move: the readers waiting
 * on it follow).  The change of q->bytes, or -ENOMEM.
 */
static long grow_tail(struct pq *q, const void *data, size_t len)
{
	struct pq_event *old = q->tail, *e = old;
	size_t need = old->len + len, cap = old->cap;
	struct pq_reader *r;
	long delta = 0;

	if (need > cap) {
		cap = cap * 2 > need ? cap * 2 : need;
		if (cap > PQ_CHUNK_MAX)
			cap = PQ_CHUNK_MAX;
		e = realloc(old, sizeof(*e) + cap);
		if (!e)
			return -ENOMEM;
		*q->tail_link = e;
		q->tail = e;
		for (r = q->readers; r; r = r->next)
			if (r->at == old)
				r->at = e;
		delta = (long)(cap - e->cap);
		e->cap = cap;
		q->bytes += delta;
	}
	memcpy(e->data + e->len, data, len);
	e->len = need;
	return delta;
}

long pq_push_data(struct pq *q, enum e2b_event_type type, const void *data,
		  size_t len)
{
	struct pq_event *e;
	size_t cap;

	if (q->ended || !len || len > PQ_CHUNK_MAX ||
	    (type != E2B_EV_STDOUT && type != E2B_EV_STDERR &&
	     type != E2B_EV_PTY))
		return -EINVAL;
	if (q->tail && q->tail->type == type &&
	    q->tail->len + len <= PQ_CHUNK_MAX && tail_unread(q))
		return grow_tail(q, data, len);
	/* room for a few more writes: small ones are the costly kind */
	cap = len < 256 ? 256 : len;
	e = malloc(sizeof(*e) + cap);
	if (!e)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->len = len;
	e->cap = cap;
	memcpy(e->data, data, len);
	return append(q, e);
}

long pq_push_end(struct pq *q, int exit_code, int signal, const char *error)
{
	size_t n = strlen(error ? error : "") + 1;
	struct pq_event *e;

	if (q->ended)
		return -EINVAL;
	e = calloc(1, sizeof(*e) + n);
	if (!e)
		return -ENOMEM;
	e->type = E2B_EV_END;
	e->exit_code = exit_code;
	e->signal = signal;
	e->cap = n;
	memcpy(e->data, error ? error : "", n);
	q->ended = true;
	return append(q, e);
}

void pq_attach(struct pq *q, struct pq_reader *r)
{
	r->cursor = q->next_seq;
	r->at = NULL;
	r->next = q->readers;
	q->readers = r;
}

long pq_detach(struct pq *q, struct pq_reader *r)
{
	struct pq_reader **rp;

	for (rp = &q->readers; *rp; rp = &(*rp)->next) {
		if (*rp == r) {
			*rp = r->next;
			break;
		}
	}
	r->next = NULL;
	r->at = NULL;
	return trim(q);
}

long pq_advance(struct pq *q, struct pq_reader *r)
{
	if (!r->at)
		return 0;
	r->cursor = r->at->seq + 1;
	r->at = r->at->next;
	return trim(q);
}
