// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "python/nodeseq.h"

void mt_nodeseq_init(struct mt_nodeseq *s, size_t cap)
{
	*s = (struct mt_nodeseq){ .cap = cap ? cap : MT_NODESEQ_CAP };
}

void mt_nodeseq_free(struct mt_nodeseq *s)
{
	free(s->ctr);
	free(s->stack);
	mt_nodeseq_init(s, s->cap);
}

/* the i-th pair from the oldest */
static size_t at(const struct mt_nodeseq *s, size_t i)
{
	return (s->head + i) % s->cap;
}

int mt_nodeseq_put(struct mt_nodeseq *s, __u64 ctr, __u64 stack)
{
	size_t i;

	if (s->n) {
		__u64 last = s->ctr[at(s, s->n - 1)];

		if (ctr == last)
			return 0;
		if (ctr < last) {
			s->disorder++;
			return 0;
		}
	}
	if (!s->ctr) {
		s->ctr = malloc(s->cap * sizeof(*s->ctr));
		s->stack = malloc(s->cap * sizeof(*s->stack));
		if (!s->ctr || !s->stack) {
			mt_nodeseq_free(s);
			return -ENOMEM;
		}
	}
	if (s->n == s->cap) {
		s->head = at(s, 1);
		s->n--;
		s->overwritten++;
	}
	i = at(s, s->n++);
	s->ctr[i] = ctr;
	s->stack[i] = stack;
	return 0;
}

__u64 mt_nodeseq_origin(const struct mt_nodeseq *s, __u64 seq)
{
	size_t lo = 0, hi = s->n;
	__u64 want = seq + 1;

	/* AccumulateGrad's UINT64_MAX: a leaf's, made by no forward */
	if (!want || !s->n)
		return 0;
	/* the first pair at or above want */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ctr[at(s, mid)] < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->n)
		return 0;
	/*
	 * Above want with nothing kept before it: the Node's own op may be
	 * among the pairs overwritten or before the attach. Not guessed;
	 * nor is an exact match on the first pair of a process attached
	 * mid-run, whose number follows every Node made before the attach.
	 */
	if (!lo &&
	    (s->ctr[at(s, 0)] != want || (!s->from_start && !s->overwritten)))
		return 0;
	return s->stack[at(s, lo)];
}
