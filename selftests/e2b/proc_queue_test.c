// SPDX-License-Identifier: GPL-2.0
/*
 * proc_queue_test: a command's output queue (e2b/proc_queue.c) counts what
 * it holds in real bytes, so one-byte writes cost about what their payload
 * does instead of a header each; readers at different places each see
 * every event once and in order, also across the coalescing that moves the
 * newest event; what every reader has passed is freed; bad pushes change
 * nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cube_test.h"
#include "proc_queue.h"

/* the queue's real cost, recounted from its events */
static size_t recount(const struct pq *q)
{
	const struct pq_event *e;
	size_t n = 0;

	for (e = q->head; e; e = e->next)
		n += sizeof(*e) + e->cap;
	return n;
}

static size_t nr_events(const struct pq *q)
{
	const struct pq_event *e;
	size_t n = 0;

	for (e = q->head; e; e = e->next)
		n++;
	return n;
}

/*
 * @r's place is consistent: it waits on nothing only when it has read all,
 * else on the event of the queue whose seq is its cursor (an event that
 * moved when it grew is followed).
 */
static bool reader_ok(const struct pq *q, const struct pq_reader *r)
{
	const struct pq_event *e;

	if (!r->at)
		return r->cursor == q->next_seq;
	for (e = q->head; e; e = e->next)
		if (e == r->at)
			return e->seq == r->cursor;
	return false;
}

/* read everything @r has not read into @buf (output only); bytes read */
static size_t drain(struct pq *q, struct pq_reader *r, char *buf, size_t cap,
		    long *delta)
{
	struct pq_event *e;
	size_t n = 0;

	while ((e = pq_peek(r)) && e->type != E2B_EV_END) {
		ASSERT_LE(n + e->len, cap);
		memcpy(buf + n, e->data, e->len);
		n += e->len;
		*delta += pq_advance(q, r);
	}
	return n;
}

TEST(one_byte_writes_cost_their_payload)
{
	struct pq q;
	struct pq_reader slow;
	size_t i, n = 100000;
	long sum = 0;

	pq_init(&q);
	pq_attach(&q, &slow);
	for (i = 0; i < n; i++) {
		long d = pq_push_data(&q, E2B_EV_STDOUT, "x", 1);

		ASSERT_GE(d, 0);
		sum += d;
	}
	/* what push reported is what the queue holds, and that is real */
	EXPECT_EQ((size_t)sum, q.bytes);
	EXPECT_EQ(q.bytes, recount(&q));
	/* a header per 64 KiB at most, and at most twice the payload */
	EXPECT_LE(nr_events(&q), n / PQ_CHUNK_MAX + 1);
	EXPECT_LE(q.bytes, 2 * n);
	EXPECT_GE(q.bytes, n);
	pq_detach(&q, &slow);
	EXPECT_EQ(q.bytes, 0);
	EXPECT_TRUE(q.head == NULL);
	pq_free(&q);
}

/*
 * One reader keeps up, one lags: the one that keeps up stops the
 * coalescing of what it has read, never loses a byte; the laggard reads
 * the same stream later, and its leaving frees it all.
 */
TEST(readers_at_different_places)
{
	static char want[300000], a[300000], b[300000];
	static void *fence[4096];
	struct pq_reader fast, slow;
	size_t i, na = 0, nb, nfence = 0;
	long sum = 0, d;
	struct pq q;

	pq_init(&q);
	pq_attach(&q, &fast);
	pq_attach(&q, &slow);
	for (i = 0; i < sizeof(want); i++)
		want[i] = 'a' + (i * 7) % 26;
	for (i = 0; i < sizeof(want);) {
		size_t len = 1 + (i * 13) % 700;

		if (len > sizeof(want) - i)
			len = sizeof(want) - i;
		d = pq_push_data(&q, E2B_EV_STDERR, want + i, len);
		ASSERT_GE(d, 0);
		sum += d;
		i += len;
		ASSERT_TRUE(reader_ok(&q, &fast));
		ASSERT_TRUE(reader_ok(&q, &slow));
		/* a block after the newest event: it cannot grow in place */
		if (nfence < sizeof(fence) / sizeof(fence[0]))
			fence[nfence++] = malloc(16);
		if (i % 3 == 0)
			na += drain(&q, &fast, a + na, sizeof(a) - na, &sum);
	}
	d = pq_push_end(&q, 3, 0, "timed out");
	ASSERT_GE(d, 0);
	sum += d;
	na += drain(&q, &fast, a + na, sizeof(a) - na, &sum);
	ASSERT_EQ(na, sizeof(want));
	EXPECT_EQ(memcmp(a, want, na), 0);
	ASSERT_TRUE(pq_peek(&fast) != NULL);
	EXPECT_EQ(pq_peek(&fast)->type, E2B_EV_END);
	EXPECT_EQ(pq_peek(&fast)->exit_code, 3);
	EXPECT_STREQ((const char *)pq_peek(&fast)->data, "timed out");
	sum += pq_advance(&q, &fast);
	EXPECT_TRUE(pq_peek(&fast) == NULL);
	EXPECT_EQ((size_t)sum, q.bytes);
	EXPECT_EQ(q.bytes, recount(&q));

	nb = drain(&q, &slow, b, sizeof(b), &sum);
	ASSERT_EQ(nb, sizeof(want));
	EXPECT_EQ(memcmp(b, want, nb), 0);
	EXPECT_EQ(pq_peek(&slow)->type, E2B_EV_END);
	sum += pq_advance(&q, &slow);
	/* both have read everything: nothing is kept */
	EXPECT_EQ(sum, 0);
	EXPECT_EQ(q.bytes, 0);
	EXPECT_TRUE(q.head == NULL && q.tail == NULL);
	pq_detach(&q, &fast);
	pq_detach(&q, &slow);
	pq_free(&q);
	while (nfence)
		free(fence[--nfence]);
}

/* output of another kind, or after a reader started on it, is not merged */
TEST(kinds_stay_apart)
{
	struct pq_reader r;
	struct pq q;

	pq_init(&q);
	pq_attach(&q, &r);
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDOUT, "ab", 2), 0);
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDERR, "cd", 2), 0);
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDERR, "ef", 2), 0);
	EXPECT_EQ(nr_events(&q), 2);
	EXPECT_EQ(pq_peek(&r)->type, E2B_EV_STDOUT);
	EXPECT_EQ(pq_peek(&r)->len, 2);
	pq_advance(&q, &r);
	EXPECT_EQ(pq_peek(&r)->type, E2B_EV_STDERR);
	EXPECT_EQ(memcmp(pq_peek(&r)->data, "cdef", 4), 0);
	pq_advance(&q, &r);
	EXPECT_TRUE(pq_peek(&r) == NULL);
	/* read up to here: the next write is an event of its own */
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDERR, "gh", 2), 0);
	EXPECT_EQ(pq_peek(&r)->len, 2);
	EXPECT_EQ(memcmp(pq_peek(&r)->data, "gh", 2), 0);
	pq_detach(&q, &r);
	EXPECT_EQ(q.bytes, 0);
	pq_free(&q);
}

/* a reader attached later sees only what comes after */
TEST(late_reader_sees_what_follows)
{
	struct pq_reader first, late;
	struct pq q;

	pq_init(&q);
	pq_attach(&q, &first);
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDOUT, "old", 3), 0);
	pq_attach(&q, &late);
	EXPECT_TRUE(pq_peek(&late) == NULL);
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDOUT, "new", 3), 0);
	/* "new" could not join "old": @late has passed it */
	EXPECT_EQ(memcmp(pq_peek(&late)->data, "new", 3), 0);
	EXPECT_EQ(pq_peek(&late)->len, 3);
	EXPECT_EQ(memcmp(pq_peek(&first)->data, "old", 3), 0);
	pq_detach(&q, &first);
	pq_detach(&q, &late);
	pq_free(&q);
}

TEST(bad_pushes_change_nothing)
{
	struct pq_reader r;
	struct pq q;
	size_t bytes;
	static char big[PQ_CHUNK_MAX + 1];

	pq_init(&q);
	pq_attach(&q, &r);
	ASSERT_GE(pq_push_data(&q, E2B_EV_STDOUT, "x", 1), 0);
	bytes = q.bytes;
	EXPECT_EQ(pq_push_data(&q, E2B_EV_STDOUT, "", 0), -EINVAL);
	EXPECT_EQ(pq_push_data(&q, E2B_EV_STDOUT, big, sizeof(big)), -EINVAL);
	EXPECT_EQ(pq_push_data(&q, E2B_EV_END, "x", 1), -EINVAL);
	EXPECT_EQ(pq_push_data(&q, E2B_EV_START, "x", 1), -EINVAL);
	EXPECT_EQ(q.bytes, bytes);
	ASSERT_GE(pq_push_end(&q, 0, 0, NULL), 0);
	bytes = q.bytes;
	/* nothing after the end */
	EXPECT_EQ(pq_push_data(&q, E2B_EV_STDOUT, "x", 1), -EINVAL);
	EXPECT_EQ(pq_push_end(&q, 1, 0, "again"), -EINVAL);
	EXPECT_EQ(q.bytes, bytes);
	EXPECT_EQ(nr_events(&q), 2);
	pq_detach(&q, &r);
	pq_free(&q);
}

/* with nobody reading, nothing is kept */
TEST(no_reader_keeps_nothing)
{
	struct pq q;

	pq_init(&q);
	EXPECT_EQ(pq_push_data(&q, E2B_EV_STDOUT, "abc", 3), 0);
	EXPECT_EQ(pq_push_end(&q, 0, 0, ""), 0);
	EXPECT_EQ(q.bytes, 0);
	EXPECT_TRUE(q.head == NULL);
	pq_free(&q);
}

TEST_MAIN()
