// SPDX-License-Identifier: GPL-2.0
/* Open addressing, linear probing, deletion by backward shift. */
#include <errno.h>
#include <stdlib.h>
#include "lib/hashing.h"
#include "analysis/livetable.h"

struct mt_livetable {
	struct mt_live *slots;
	size_t cap; /* power of two */
	size_t count;
	size_t max;
};

#define MIN_CAP 1024

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
	t->cap = MIN_CAP;
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

static bool same_key(const struct mt_live *s, __u32 pid, __u16 space, __u64 ptr)
{
	return s->pid == pid && s->space == space && s->ptr == ptr;
}

static struct mt_live *find_slot(struct mt_live *slots, size_t cap, __u32 pid,
				 __u16 space, __u64 ptr)
{
	size_t mask = cap - 1, i = hash(pid, space, ptr) & mask;

	while (slots[i].pid && !same_key(&slots[i], pid, space, ptr))
		i = (i + 1) & mask;
	return &slots[i];
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

int mt_live_insert(struct mt_livetable *t, const struct mt_live *e)
{
	struct mt_live *s;
	int err;

	s = find_slot(t->slots, t->cap, e->pid, e->space, e->ptr);
	if (s->pid) {
		*s = *e;
		return 0;
	}
	if (t->count >= t->max)
		return -ENOSPC;
	/* keep the load under 1/2 so probes stay short */
	if ((t->count + 1) * 2 > t->cap) {
		err = grow(t);
		if (err)
			return err;
		s = find_slot(t->slots, t->cap, e->pid, e->space, e->ptr);
	}
	*s = *e;
	t->count++;
	return 0;
}

bool mt_live_remove(struct mt_livetable *t, __u32 pid, __u16 space, __u64 ptr,
		    struct mt_live *out)
{
	size_t mask = t->cap - 1, i, j, home;
	struct mt_live *s = find_slot(t->slots, t->cap, pid, space, ptr);

	if (!s->pid)
		return false;
	if (out)
		*out = *s;
	/* shift later members of the cluster back over the hole */
	i = (size_t)(s - t->slots);
	j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!t->slots[j].pid)
			break;
		home = hash(t->slots[j].pid, t->slots[j].space,
			    t->slots[j].ptr) &
		       mask;
		/* move j to i unless its home lies cyclically in (i, j] */
		if ((i < j) ? (home <= i || home > j) :
			      (home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = (struct mt_live){ 0 };
	t->count--;
	return true;
}

size_t mt_live_count(const struct mt_livetable *t)
{
	return t->count;
}

void mt_live_foreach(const struct mt_livetable *t,
		     void (*fn)(const struct mt_live *e, void *ctx), void *ctx)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].pid)
			fn(&t->slots[i], ctx);
}
