// SPDX-License-Identifier: GPL-2.0
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/escape.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "analysis/sites.h"

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
	/* the table grows with its sites: a small one stays in the cache */
	s->cap = MT_HASH_MIN_CAP;
	s->slots = calloc(s->cap, sizeof(*s->slots));
	s->all = calloc(s->cap / 2, sizeof(*s->all));
	if (!s->slots || !s->all) {
		free(s->slots);
		free(s->all);
		free(s);
		return NULL;
	}
	s->overflow.event = MT_SITES_OVERFLOW;
	return s;
}

bool mt_site_is_overflow(const struct mt_site *site)
{
	/* no call's event name starts with '[': one byte for most events */
	return !site->id || (site->event && site->event[0] == '[' &&
			     !strcmp(site->event, MT_SITES_OVERFLOW));
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

/* inline: the probe of every event's lookup runs it */
static inline bool site_equal(const struct mt_site *a, const struct mt_site *b)
{
	return a->pid == b->pid && a->event == b->event &&
	       a->caller == b->caller && a->phase == b->phase &&
	       a->module == b->module && a->node == b->node &&
	       a->detail == b->detail && a->recompute == b->recompute &&
	       a->truncated == b->truncated && a->depth == b->depth &&
	       (!a->depth || !memcmp(a->frames, b->frames,
				     (size_t)a->depth * sizeof(a->frames[0])));
}

/* the table's accessors for lib/hashtab.h: tab is the slot array */
static bool slot_used(const void *tab, size_t i)
{
	return ((const struct slot *)tab)[i].site;
}

/* what a lookup matches: the key's hash and the key */
struct probe_key {
	__u64 hash;
	const struct mt_site *site;
};

static bool slot_match(const void *tab, size_t i, const void *key)
{
	const struct slot *s = (const struct slot *)tab + i;
	const struct probe_key *k = key;

	return s->hash == k->hash && site_equal(s->site, k->site);
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
	size_t cap = s->cap * 2;
	struct slot *slots = calloc(cap, sizeof(*slots));
	struct mt_site **all = realloc(s->all, cap / 2 * sizeof(*all));

	if (all)
		s->all = all;
	if (!slots || !all) {
		free(slots);
		return -1;
	}
	for (size_t k = 0; k < s->cap; k++)
		if (s->slots[k].site)
			slots[mt_probe(slots, cap - 1, s->slots[k].hash,
				       slot_used, NULL, NULL)] = s->slots[k];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

struct mt_site *mt_sites_get(struct mt_sites *s, const struct mt_site *key,
			     bool *is_new)
{
	struct probe_key k = { .hash = site_hash(key), .site = key };
	size_t i = mt_probe(s->slots, s->cap - 1, k.hash, slot_used, slot_match,
			    &k);

	*is_new = false;
	if (s->slots[i].site)
		return s->slots[i].site;
	if (s->n < s->max && (s->n + 1 <= s->cap / 2 || !grow(s))) {
		struct mt_site *site = make(key, (__u32)s->n + 1);

		if (site) {
			/* the slot found before a growth is no longer it */
			i = mt_probe(s->slots, s->cap - 1, k.hash, slot_used,
				     NULL, NULL);
			s->slots[i] =
				(struct slot){ .hash = k.hash, .site = site };
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

static bool own_frame(const char *frame)
{
	const char *file = strrchr(frame, '(');

	return file && file[1] == '/' && !strstr(file, "/lib/python");
}

void mt_site_print_stack(const struct mt_site *site, const char *prefix,
			 FILE *out)
{
	struct mt_esc e;

	for (int i = 0; i < site->depth; i++) {
		e.used = 0;
		fprintf(out, "%s%s\n", prefix,
			mt_esc(&e, site->frames[i] ? site->frames[i] : "?",
			       MT_ESC_TEXT));
	}
	if (site->truncated)
		fprintf(out, "%s[truncated at %d frames]\n", prefix,
			site->depth);
}

void mt_site_print_module(const struct mt_site *site, FILE *out)
{
	struct mt_esc e = { 0 };

	fprintf(out, " module=%s phase=%s",
		mt_esc(&e, site && site->module ? site->module : "-",
		       MT_ESC_FIELD),
		mt_esc(&e, site && site->phase ? site->phase : "-",
		       MT_ESC_FIELD));
}

void mt_site_print_keys(const struct mt_site *site, FILE *out)
{
	struct mt_esc e = { 0 };

	fprintf(out, " event=%s",
		mt_esc(&e, site && site->event ? site->event : "-",
		       MT_ESC_FIELD));
	mt_site_print_module(site, out);
	e.used = 0;
	fprintf(out, " node=%s%s",
		mt_esc(&e, site && site->node ? site->node : "-", MT_ESC_FIELD),
		site && site->recompute ? " recompute" : "");
}

const char *mt_site_own_frame(const struct mt_site *site)
{
	if (!site)
		return NULL;
	for (int i = 0; i < site->depth; i++)
		if (own_frame(site->frames[i]))
			return site->frames[i];
	return NULL;
}
