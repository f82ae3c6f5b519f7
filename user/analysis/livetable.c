// SPDX-License-Identifier: GPL-2.0
/* Open addressing, linear probing, deletion by backward shift. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "analysis/livetable.h"
#include "analysis/sample.h"

struct mt_livetable {
	struct mt_live *slots;
	size_t cap; /* power of two */
	size_t count;
	size_t max;
	__u64 refused, refused_bytes;
	__u64 hidden; /* refused entries not seen freed yet */
	__u64 high; /* the most of count + hidden */
};

static size_t hash(__u32 pid, __u16 space, __u64 ptr)
{
	return (size_t)mt_mix64(ptr ^ ((__u64)pid << 32) ^
				((__u64)space << 16));
}

struct mt_livetable *mt_live_new(size_t max)
{
	struct mt_livetable *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = MT_HASH_MIN_CAP;
	t->max = max;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

void mt_live_free(struct mt_livetable *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

/* the table's accessors for lib/hashtab.h: tab is the slot array */
static bool slot_used(const void *tab, size_t i)
{
	return ((const struct mt_live *)tab)[i].pid;
}

/* what a lookup matches: the key of an entry */
struct live_key {
	__u64 ptr;
	__u32 pid;
	__u16 space;
};

static bool slot_match(const void *tab, size_t i, const void *key)
{
	const struct mt_live *s = (const struct mt_live *)tab + i;
	const struct live_key *k = key;

	return s->pid == k->pid && s->space == k->space && s->ptr == k->ptr;
}

static __u64 slot_hash(const void *tab, size_t i)
{
	const struct mt_live *s = (const struct mt_live *)tab + i;

	return hash(s->pid, s->space, s->ptr);
}

static void slot_move(void *tab, size_t to, size_t from)
{
	struct mt_live *slots = tab;

	slots[to] = slots[from];
	slots[from].pid = 0;
}

/* the key's slot, or the empty one where it would go (never full) */
static struct mt_live *find_slot(struct mt_live *slots, size_t cap, __u32 pid,
				 __u16 space, __u64 ptr)
{
	struct live_key k = { .ptr = ptr, .pid = pid, .space = space };

	return &slots[mt_probe(slots, cap - 1, hash(pid, space, ptr), slot_used,
			       slot_match, &k)];
}

static int grow(struct mt_livetable *t)
{
	size_t cap = t->cap * 2;
	struct mt_live *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		const struct mt_live *s = &t->slots[i];

		if (s->pid)
			*find_slot(slots, cap, s->pid, s->space, s->ptr) = *s;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

static void note_high(struct mt_livetable *t)
{
	__u64 alive = (__u64)t->count + t->hidden;

	if (alive > t->high)
		t->high = alive;
}

int mt_live_insert(struct mt_livetable *t, const struct mt_live *e)
{
	struct mt_live *s;
	int err;

	s = find_slot(t->slots, t->cap, e->pid, e->space, e->ptr);
	if (s->pid) {
		*s = *e;
		return 0;
	}
	if (t->count >= t->max) {
		t->refused++;
		t->refused_bytes += e->size;
		t->hidden++;
		note_high(t);
		return -ENOSPC;
	}
	/* keep the load under 1/2 so probes stay short */
	if ((t->count + 1) * 2 > t->cap) {
		err = grow(t);
		if (err)
			return err;
		s = find_slot(t->slots, t->cap, e->pid, e->space, e->ptr);
	}
	*s = *e;
	t->count++;
	note_high(t);
	return 0;
}

bool mt_live_remove(struct mt_livetable *t, __u32 pid, __u16 space, __u64 ptr,
		    struct mt_live *out)
{
	struct mt_live *s = find_slot(t->slots, t->cap, pid, space, ptr);

	if (!s->pid)
		return false;
	if (out)
		*out = *s;
	/* an empty slot is one whose pid is 0 */
	s->pid = 0;
	mt_backshift(t->slots, t->cap - 1, (size_t)(s - t->slots), slot_used,
		     slot_hash, slot_move);
	t->count--;
	return true;
}

size_t mt_live_remove_pid(struct mt_livetable *t, __u32 pid,
			  void (*fn)(const struct mt_live *e, void *ctx),
			  void *ctx)
{
	size_t n = 0;

	for (size_t i = 0; i < t->cap;) {
		struct mt_live e = t->slots[i];

		if (e.pid != pid) {
			i++;
			continue;
		}
		t->slots[i].pid = 0;
		mt_backshift(t->slots, t->cap - 1, i, slot_used, slot_hash,
			     slot_move);
		t->count--;
		n++;
		fn(&e, ctx);
		/*
		 * i again: the shift may have moved a later entry here. What
		 * it moves into slots already passed (a cluster that wraps
		 * around) comes from slots passed too: none is pid's.
		 */
	}
	return n;
}

size_t mt_live_count(const struct mt_livetable *t)
{
	return t->count;
}

void mt_live_unpaired(struct mt_livetable *t)
{
	if (t->hidden)
		t->hidden--;
}

void mt_live_stats(const struct mt_livetable *t, struct mt_live_stats *st)
{
	*st = (struct mt_live_stats){ .max = t->max,
				      .refused = t->refused,
				      .refused_bytes = t->refused_bytes,
				      .unfreed = t->hidden,
				      .high = t->high };
	/*
	 * A quarter more than seen: a rerun allocates a little differently,
	 * and frees of allocations older than the trace make high low.
	 */
	if (t->refused)
		st->advise = t->high + t->high / 4 + 1;
}

void mt_live_foreach(const struct mt_livetable *t,
		     void (*fn)(const struct mt_live *e, void *ctx), void *ctx)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].pid)
			fn(&t->slots[i], ctx);
}

void mt_live_mark_table(const struct mt_live_stats *st, FILE *out)
{
	if (st->refused)
		fprintf(out,
			" incomplete=live_table untracked_allocs=%" PRIu64
			" untracked_live=%" PRIu64 " advise_max_live=%" PRIu64,
			(uint64_t)st->refused, (uint64_t)st->unfreed,
			(uint64_t)st->advise);
}

void mt_live_mark_account(const struct mt_live_stats *st, __u64 count,
			  __u64 bytes, FILE *out)
{
	if (count)
		fprintf(out,
			" incomplete=live_table untracked_allocs=%" PRIu64
			" untracked_bytes=%" PRIu64 " advise_max_live=%" PRIu64,
			(uint64_t)count, (uint64_t)bytes, (uint64_t)st->advise);
}

__u64 mt_live_est(const struct mt_live *e)
{
	if (!e->est_adj)
		return e->size;
	return mt_sample_scale(e->size, 1.0 + (double)e->est_adj);
}

double mt_live_weight(const struct mt_live *e)
{
	return 1.0 + (double)e->est_adj;
}

bool mt_live_unsampled(const struct mt_live *e)
{
	return e->est_adj < 0;
}
