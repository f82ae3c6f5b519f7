// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/grow.h"
#include "lib/reorder.h"

struct entry {
	__u64 key;
	__u64 seq; /* order of arrival: breaks ties */
	size_t rec; /* index of the record in the pool */
};

struct mt_reorder {
	size_t size, max;
	struct entry *heap;
	size_t n, heap_cap;
	unsigned char *pool;
	size_t pool_cap, pool_used;
	size_t *free; /* pool indices given back */
	size_t nfree, free_cap;
	__u64 seq;
	size_t popped; /* the record pop handed out, + 1; 0: none */
};

struct mt_reorder *mt_reorder_new(size_t size, size_t max)
{
	struct mt_reorder *r;

	if (!size || !max)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->size = size;
	r->max = max;
	return r;
}

void mt_reorder_free(struct mt_reorder *r)
{
	if (!r)
		return;
	free(r->heap);
	free(r->pool);
	free(r->free);
	free(r);
}

size_t mt_reorder_held(const struct mt_reorder *r)
{
	return r->n;
}

static bool before(const struct entry *a, const struct entry *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

/* the record pop handed out is no longer the caller's: its slot is free */
static void reclaim(struct mt_reorder *r)
{
	if (!r->popped)
		return;
	/* room was made for every slot of the pool when it grew */
	r->free[r->nfree++] = r->popped - 1;
	r->popped = 0;
}

/* a free slot of the pool; -ENOMEM */
static int take_slot(struct mt_reorder *r, size_t *slot)
{
	size_t cap = r->pool_cap;

	if (r->nfree) {
		*slot = r->free[--r->nfree];
		return 0;
	}
	if (r->pool_used == r->pool_cap) {
		void *p = r->pool;

		if (mt_grow(&p, &cap, r->pool_used + 1, r->size))
			return -ENOMEM;
		r->pool = p;
		p = r->free;
		/* the pool holds its old count until the free list can take
		 * every slot back */
		if (mt_grow(&p, &r->free_cap, cap, sizeof(size_t)))
			return -ENOMEM;
		r->free = p;
		r->pool_cap = cap;
	}
	*slot = r->pool_used++;
	return 0;
}

int mt_reorder_push(struct mt_reorder *r, __u64 key, const void *rec)
{
	struct entry e = { .key = key, .seq = r->seq };
	size_t i;
	void *p;

	reclaim(r);
	if (r->n >= r->max)
		return -ENOSPC;
	p = r->heap;
	if (mt_grow(&p, &r->heap_cap, r->n + 1, sizeof(*r->heap)))
		return -ENOMEM;
	r->heap = p;
	if (take_slot(r, &e.rec))
		return -ENOMEM;
	memcpy(r->pool + e.rec * r->size, rec, r->size);
	r->seq++;
	/* sift up */
	for (i = r->n++; i > 0; i = (i - 1) / 2) {
		struct entry *parent = &r->heap[(i - 1) / 2];

		if (!before(&e, parent))
			break;
		r->heap[i] = *parent;
	}
	r->heap[i] = e;
	return 0;
}

const void *mt_reorder_pop(struct mt_reorder *r, __u64 upto)
{
	struct entry top, last;
	size_t i = 0;

	reclaim(r);
	if (!r->n || r->heap[0].key >= upto)
		return NULL;
	top = r->heap[0];
	last = r->heap[--r->n];
	/* sift the last entry down from the root */
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= r->n)
			break;
		if (c + 1 < r->n && before(&r->heap[c + 1], &r->heap[c]))
			c++;
		if (!before(&r->heap[c], &last))
			break;
		r->heap[i] = r->heap[c];
		i = c;
	}
	if (r->n)
		r->heap[i] = last;
	r->popped = top.rec + 1;
	return r->pool + top.rec * r->size;
}
