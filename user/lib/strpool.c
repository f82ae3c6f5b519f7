// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>
#include "lib/strpool.h"

/* the table grows with its strings: a short replay pays for a short one */
#define MIN_CAP 1024

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

static size_t hash_str(const char *s)
{
	size_t h = 14695981039346656037ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct mt_strpool *mt_strpool_new(size_t max)
{
	struct mt_strpool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max = max;
	p->cap = MIN_CAP;
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

static size_t find_slot(const struct slot *slots, size_t cap, size_t h,
			const char *s)
{
	size_t mask = cap - 1, i = h & mask;

	while (slots[i].s && (slots[i].hash != h || strcmp(slots[i].s, s)))
		i = (i + 1) & mask;
	return i;
}

static int grow(struct mt_strpool *p)
{
	size_t cap = p->cap * 2;
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < p->cap; i++)
		if (p->slots[i].s)
			slots[find_slot(slots, cap, p->slots[i].hash,
					p->slots[i].s)] = p->slots[i];
	free(p->slots);
	p->slots = slots;
	p->cap = cap;
	return 0;
}

const char *mt_intern(struct mt_strpool *p, const char *s)
{
	size_t h = hash_str(s), i = find_slot(p->slots, p->cap, h, s);

	if (p->slots[i].s)
		return p->slots[i].s;
	if (p->count == p->max)
		return NULL;
	if (2 * (p->count + 1) > p->cap) {
		if (grow(p))
			return NULL;
		i = find_slot(p->slots, p->cap, h, s);
	}
	p->slots[i].s = strdup(s);
	if (!p->slots[i].s)
		return NULL;
	p->slots[i].hash = h;
	p->count++;
	return p->slots[i].s;
}
