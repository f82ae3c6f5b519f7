// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "lib/strpool.h"

/* a slot keeps its string's hash: strcmp only on a match */
struct slot {
	size_t hash;
	char *s; /* NULL: free */
};

struct mt_strpool {
	struct slot *slots;
	size_t cap; /* power of two, at least twice count */
	size_t count, max;
};

struct mt_strpool *mt_strpool_new(size_t max)
{
	struct mt_strpool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max = max;
	/* the table grows with its strings: a short replay, a short one */
	p->cap = MT_HASH_MIN_CAP;
	p->slots = calloc(p->cap, sizeof(*p->slots));
	if (!p->slots) {
		free(p);
		return NULL;
	}
	return p;
}

void mt_strpool_free(struct mt_strpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->cap; i++)
		free(p->slots[i].s);
	free(p->slots);
	free(p);
}

/* the table's accessors for lib/hashtab.h: tab is the slot array */
static bool slot_used(const void *tab, size_t i)
{
	return ((const struct slot *)tab)[i].s;
}

/* what a lookup matches: the string and its hash */
struct probe_key {
	size_t hash;
	const char *s;
};

static bool slot_match(const void *tab, size_t i, const void *key)
{
	const struct slot *x = (const struct slot *)tab + i;
	const struct probe_key *k = key;

	return x->hash == k->hash && !strcmp(x->s, k->s);
}

static int grow(struct mt_strpool *p)
{
	size_t cap = p->cap * 2;
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < p->cap; i++)
		if (p->slots[i].s)
			slots[mt_probe(slots, cap - 1, p->slots[i].hash,
				       slot_used, NULL, NULL)] = p->slots[i];
	free(p->slots);
	p->slots = slots;
	p->cap = cap;
	return 0;
}

const char *mt_intern(struct mt_strpool *p, const char *s)
{
	struct probe_key key = { .hash = mt_fnv1a_str(s), .s = s };
	size_t i = mt_probe(p->slots, p->cap - 1, key.hash, slot_used,
			    slot_match, &key);

	if (p->slots[i].s)
		return p->slots[i].s;
	if (p->count == p->max)
		return NULL;
	if (2 * (p->count + 1) > p->cap) {
		if (grow(p))
			return NULL;
		i = mt_probe(p->slots, p->cap - 1, key.hash, slot_used, NULL,
			     NULL);
	}
	p->slots[i].s = strdup(s);
	if (!p->slots[i].s)
		return NULL;
	p->slots[i].hash = key.hash;
	p->count++;
	return p->slots[i].s;
}
