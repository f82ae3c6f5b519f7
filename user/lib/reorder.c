// SPDX-License-Identifier: GPL-2.0
/*
 * The records come nearly in order: each CPU sends its events in time
 * order, a batch at a time, and batches of CPUs interleave. So they are
 * kept as a few sorted runs (a record joins the run whose last key is the
 * highest not above its own, else starts one), and handed back by merging
 * the runs' heads: a push and a pop cost a look at each run, and the
 * records stay where they were copied, in the order they came.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/grow.h"
#include "lib/reorder.h"

/* runs at most; past it a record is put in its place in one of them */
#define MAX_RUNS 256

struct entry {
	__u64 key;
	__u64 seq; /* order of arrival: breaks ties */
	size_t rec; /* index of the record in the pool */
};

/* entries in order of key, those from head on still held */
struct run {
	struct entry *v;
	size_t head, n, cap;
};

struct mt_reorder {
	size_t size, max, held;
	struct run runs[MAX_RUNS];
	size_t nruns;
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
	for (size_t i = 0; i < r->nruns; i++)
		free(r->runs[i].v);
	free(r->pool);
	free(r->free);
	free(r);
}

size_t mt_reorder_held(const struct mt_reorder *r)
{
	return r->held;
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
	void *p = r->pool;

	if (r->nfree) {
		*slot = r->free[--r->nfree];
		return 0;
	}
	if (r->pool_used == r->pool_cap) {
		if (mt_grow(&p, &cap, r->pool_used + 1, r->size))
			return -ENOMEM;
		r->pool = p;
		/*
		 * the pool holds its old count until the free list can take
		 * every slot back
		 */
		p = r->free;
		if (mt_grow(&p, &r->free_cap, cap, sizeof(size_t)))
			return -ENOMEM;
		r->free = p;
		r->pool_cap = cap;
	}
	*slot = r->pool_used++;
	return 0;
}

/* room for one more entry at the end of run u; -ENOMEM */
static int run_room(struct run *u)
{
	void *p = u->v;

	if (u->n < u->cap)
		return 0;
	/* moved back once half of it is taken: a move per push is not */
	if (u->head && u->head >= u->n / 2) {
		memmove(u->v, u->v + u->head, (u->n - u->head) * sizeof(*u->v));
		u->n -= u->head;
		u->head = 0;
		return 0;
	}
	if (mt_grow(&p, &u->cap, u->n + 1, sizeof(*u->v)))
		return -ENOMEM;
	u->v = p;
	return 0;
}

/*
 * The run e joins: the one whose last entry is the latest not after e,
 * else an empty one, else a new one; NULL when there are MAX_RUNS, none
 * of which e can end.
 */
static struct run *run_for(struct mt_reorder *r, const struct entry *e)
{
	struct run *best = NULL, *empty = NULL;

	for (size_t i = 0; i < r->nruns; i++) {
		struct run *u = &r->runs[i];

		if (u->head == u->n) {
			empty = empty ? empty : u;
			continue;
		}
		if (before(e, &u->v[u->n - 1]))
			continue;
		if (!best || before(&best->v[best->n - 1], &u->v[u->n - 1]))
			best = u;
	}
	if (best || empty)
		return best ? best : empty;
	if (r->nruns < MAX_RUNS)
		return &r->runs[r->nruns++];
	return NULL;
}

/* put e in its place in run u (every run taken, none it could end) */
static void insert(struct run *u, const struct entry *e)
{
	size_t lo = u->head, hi = u->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (before(e, &u->v[mid]))
			hi = mid;
		else
			lo = mid + 1;
	}
	memmove(u->v + lo + 1, u->v + lo, (u->n - lo) * sizeof(*u->v));
	u->v[lo] = *e;
	u->n++;
}

int mt_reorder_push(struct mt_reorder *r, __u64 key, const void *rec)
{
	struct entry e = { .key = key, .seq = r->seq };
	struct run *u;

	reclaim(r);
	if (r->held >= r->max)
		return -ENOSPC;
	u = run_for(r, &e);
	if (run_room(u ? u : &r->runs[0]) || take_slot(r, &e.rec))
		return -ENOMEM;
	memcpy(r->pool + e.rec * r->size, rec, r->size);
	r->seq++;
	r->held++;
	if (u)
		u->v[u->n++] = e;
	else
		insert(&r->runs[0], &e);
	return 0;
}

/* the run whose head comes first; NULL: none held */
static struct run *first_run(const struct mt_reorder *r)
{
	const struct run *first = NULL;

	for (size_t i = 0; i < r->nruns; i++) {
		const struct run *u = &r->runs[i];

		if (u->head < u->n &&
		    (!first || before(&u->v[u->head], &first->v[first->head])))
			first = u;
	}
	return (struct run *)first;
}

bool mt_reorder_first(const struct mt_reorder *r, __u64 *key)
{
	const struct run *first = first_run(r);

	if (first)
		*key = first->v[first->head].key;
	return first;
}

const void *mt_reorder_pop(struct mt_reorder *r, __u64 upto)
{
	struct run *first;
	struct entry *e;

	reclaim(r);
	first = first_run(r);
	if (!first || first->v[first->head].key >= upto)
		return NULL;
	e = &first->v[first->head++];
	if (first->head == first->n)
		first->head = first->n = 0;
	r->held--;
	r->popped = e->rec + 1;
	return r->pool + e->rec * r->size;
}
