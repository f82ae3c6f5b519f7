// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "python/nodeseq.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* a ring's first allocation, in pairs; it doubles up to the cap */
#define RING_FIRST 256

void mt_nodeseq_init(struct mt_nodeseq *s, size_t cap)
{
	*s = (struct mt_nodeseq){ .cap = cap ? cap : MT_NODESEQ_CAP };
}

static void ring_free(struct mt_nodering *r)
{
	free(r->ctr);
	free(r->stack);
	*r = (struct mt_nodering){ 0 };
}

void mt_nodeseq_free(struct mt_nodeseq *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(s->ring); i++)
		ring_free(&s->ring[i]);
}

/* the i-th pair from the oldest */
static size_t at(const struct mt_nodering *r, size_t i)
{
	return (r->head + i) % r->alloc;
}

static const struct mt_nodering *find(const struct mt_nodeseq *s, __u64 thread)
{
	for (size_t i = 0; i < ARRAY_SIZE(s->ring); i++)
		if (s->ring[i].thread == thread)
			return &s->ring[i];
	return NULL;
}

/* thread's ring: its own, an unused one, or the one used longest ago */
static struct mt_nodering *ring_of(struct mt_nodeseq *s, __u64 thread)
{
	struct mt_nodering *r = (struct mt_nodering *)find(s, thread), *old;

	if (r)
		return r;
	old = &s->ring[0];
	for (size_t i = 0; i < ARRAY_SIZE(s->ring) && old->thread; i++)
		if (!s->ring[i].thread || s->ring[i].used < old->used)
			old = &s->ring[i];
	if (old->thread) {
		s->threads_dropped++;
		if (old->thread > s->dropped_max)
			s->dropped_max = old->thread;
	}
	ring_free(old);
	old->thread = thread;
	/* a thread whose ring was given away comes back after a gap */
	old->from_start = s->from_start && thread > s->dropped_max;
	return old;
}

/* room for one more pair; a ring grows before it is first full */
static int ring_room(struct mt_nodering *r, size_t cap)
{
	size_t want;
	__u64 *ctr, *stack;

	if (r->n < r->alloc || r->alloc == cap)
		return 0;
	want = r->alloc ? 2 * r->alloc : RING_FIRST;
	if (want > cap)
		want = cap;
	/* head is 0 until the ring is full at cap: the pairs stay in order */
	ctr = realloc(r->ctr, want * sizeof(*ctr));
	if (!ctr)
		return -ENOMEM;
	r->ctr = ctr;
	stack = realloc(r->stack, want * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	r->stack = stack;
	r->alloc = want;
	return 0;
}

int mt_nodeseq_put(struct mt_nodeseq *s, __u64 thread, __u64 ctr, __u64 stack)
{
	struct mt_nodering *r;
	size_t i;

	if (!thread)
		return 0;
	r = ring_of(s, thread);
	r->used = ++s->clock;
	if (r->n) {
		__u64 last = r->ctr[at(r, r->n - 1)];

		if (ctr == last)
			return 0;
		if (ctr < last) {
			s->disorder++;
			return 0;
		}
	}
	if (ring_room(r, s->cap))
		return -ENOMEM;
	if (r->n == r->alloc) {
		r->head = at(r, 1);
		r->n--;
		r->overwritten++;
	}
	i = at(r, r->n++);
	r->ctr[i] = ctr;
	r->stack[i] = stack;
	return 0;
}

__u64 mt_nodeseq_origin(const struct mt_nodeseq *s, __u64 thread, __u64 seq)
{
	const struct mt_nodering *r = thread ? find(s, thread) : NULL;
	__u64 want = seq + 1;
	size_t lo = 0, hi;

	/* AccumulateGrad's UINT64_MAX: a leaf's, made by no forward */
	if (!want || !r || !r->n)
		return 0;
	/* the first pair at or above want */
	hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->ctr[at(r, mid)] < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->n)
		return 0;
	/*
	 * Above want with nothing kept before it: the Node's own op may be
	 * among the pairs overwritten or before the attach. Not guessed;
	 * nor is an exact match on the first pair of a thread seen mid-run,
	 * whose number follows every Node made before.
	 */
	if (!lo &&
	    (r->ctr[at(r, 0)] != want || (!r->from_start && !r->overwritten)))
		return 0;
	return r->stack[at(r, lo)];
}
