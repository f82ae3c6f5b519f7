// SPDX-License-Identifier: GPL-2.0
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hashing.h"
#include "analysis/sites.h"

/* the table grows with its sites: a small one stays in the cache */
#define MIN_CAP 1024

/* a slot keeps its site's hash: a probe reads a site only on a match */
struct slot {
	__u64 hash;
	struct mt_site *site; /* NULL: free */
};

struct mt_sites {
	struct slot *slots; /* open addressing, cap a power of two */
	struct mt_site **all; /* in order of creation: walks touch n, not cap */
	size_t cap, n, max;
	struct mt_site overflow;
	bool overflow_used;
};

struct mt_sites *mt_sites_new(size_t max)
{
	struct mt_sites *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->max = max;
	s->cap = MIN_CAP;
	s->slots = calloc(s->cap, sizeof(*s->slots));
	s->all = calloc(s->cap / 2, sizeof(*s->all));
	if (!s->slots || !s->all) {
		free(s->slots);
		free(s->all);
		free(s);
		return NULL;
	}
	s->overflow.event = "[sites table full]";
	return s;
}

void mt_sites_free(struct mt_sites *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->all[i]->frames);
		free(s->all[i]);
	}
	free(s->slots);
	free(s->all);
	free(s);
}

static __u64 site_hash(const struct mt_site *k)
{
	__u64 h = mt_mix64(k->pid ^ ((__u64)k->recompute << 32) ^
			   ((__u64)k->truncated << 33));

	h = mt_mix64(h ^ (__u64)(uintptr_t)k->event);
	h = mt_mix64(h ^ (__u64)(uintptr_t)k->caller);
	h = mt_mix64(h ^ (__u64)(uintptr_t)k->phase);
	h = mt_mix64(h ^ (__u64)(uintptr_t)k->module);
	h = mt_mix64(h ^ (__u64)(uintptr_t)k->node);
	h = mt_mix64(h ^ (__u64)(uintptr_t)k->detail);
	return mt_mix64(h ^
			(k->frames_hash ? k->frames_hash :
					  mt_frames_hash(k->frames, k->depth)));
}

__u64 mt_frames_hash(const char *const *frames, int depth)
{
	__u64 h = (__u64)depth;

	for (int i = 0; i < depth; i++)
		h = mt_mix64(h ^ (__u64)(uintptr_t)frames[i]);
	return h;
}

static bool site_equal(const struct mt_site *a, const struct mt_site *b)
{
	return a->pid == b->pid && a->event == b->event &&
	       a->caller == b->caller && a->phase == b->phase &&
	       a->module == b->module && a->node == b->node &&
	       a->detail == b->detail && a->recompute == b->recompute &&
	       a->truncated == b->truncated && a->depth == b->depth &&
	       (!a->depth || !memcmp(a->frames, b->frames,
				     (size_t)a->depth * sizeof(a->frames[0])));
}

static struct mt_site *make(const struct mt_site *key, __u32 id)
{
	struct mt_site *site = malloc(sizeof(*site));

	if (!site)
		return NULL;
	*site = (struct mt_site){
		.id = id,
		.pid = key->pid,
		.event = key->event,
		.caller = key->caller,
		.phase = key->phase,
		.module = key->module,
		.node = key->node,
		.detail = key->detail,
		.recompute = key->recompute,
		.truncated = key->truncated,
		.depth = key->depth > 0 ? key->depth : 0,
	};
	if (site->depth) {
		size_t bytes = (size_t)site->depth * sizeof(site->frames[0]);

		site->frames = malloc(bytes);
		if (!site->frames) {
			free(site);
			return NULL;
		}
		memcpy(site->frames, key->frames, bytes);
	}
	return site;
}

/* twice the slots, and room in all[] for half as many sites: 0 or -1 */
static int grow(struct mt_sites *s)
{
	size_t cap = s->cap * 2, mask = cap - 1;
	struct slot *slots = calloc(cap, sizeof(*slots));
	struct mt_site **all = realloc(s->all, cap / 2 * sizeof(*all));

	if (all)
		s->all = all;
	if (!slots || !all) {
		free(slots);
		return -1;
	}
	for (size_t k = 0; k < s->cap; k++) {
		size_t i;

		if (!s->slots[k].site)
			continue;
		for (i = s->slots[k].hash & mask; slots[i].site;
		     i = (i + 1) & mask)
			;
		slots[i] = s->slots[k];
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

struct mt_site *mt_sites_get(struct mt_sites *s, const struct mt_site *key,
			     bool *is_new)
{
	__u64 h = site_hash(key);
	size_t mask = s->cap - 1, i = h & mask;

	*is_new = false;
	for (; s->slots[i].site; i = (i + 1) & mask)
		if (s->slots[i].hash == h && site_equal(s->slots[i].site, key))
			return s->slots[i].site;
	if (s->n < s->max && (s->n + 1 <= s->cap / 2 || !grow(s))) {
		struct mt_site *site = make(key, (__u32)s->n + 1);

		if (site) {
			/* the slot found before a growth is no longer it */
			for (mask = s->cap - 1, i = h & mask; s->slots[i].site;
			     i = (i + 1) & mask)
				;
			s->slots[i] = (struct slot){ .hash = h, .site = site };
			s->all[s->n++] = site;
			*is_new = true;
			return site;
		}
	}
	s->overflow_used = true;
	return &s->overflow;
}

size_t mt_sites_count(const struct mt_sites *s)
{
	return s->n;
}

void mt_sites_foreach(struct mt_sites *s,
		      void (*fn)(struct mt_site *site, void *ctx), void *ctx)
{
	if (s->overflow_used)
		fn(&s->overflow, ctx);
	for (size_t i = 0; i < s->n; i++)
		fn(s->all[i], ctx);
}
