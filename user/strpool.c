// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>
#include "hashing.h"
#include "strpool.h"

struct mt_strpool {
	char **slots;
	size_t cap; /* power of two, at least twice max */
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
	p->cap = mt_table_cap(max);
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
		free(p->slots[i]);
	free(p->slots);
	free(p);
}

const char *mt_intern(struct mt_strpool *p, const char *s)
{
	size_t mask = p->cap - 1, i = hash_str(s) & mask;

	while (p->slots[i]) {
		if (!strcmp(p->slots[i], s))
			return p->slots[i];
		i = (i + 1) & mask;
	}
	if (p->count == p->max)
		return NULL;
	p->slots[i] = strdup(s);
	if (!p->slots[i])
		return NULL;
	p->count++;
	return p->slots[i];
}
