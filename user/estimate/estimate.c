// SPDX-License-Identifier: GPL-2.0
/*
 * estimate: each c10:alloc/c10:free (per CUDA device) and each
 * c10:cpu_alloc/c10:cpu_free (the CPU run taken as one GPU) of a record
 * goes through its own allocator model; recorded pointers map to the
 * model's blocks. Per phase and module: the model's peaks while they
 * allocated, and the allocations that would fail.
 *
 * A sampled record (--sample-bytes, a flight dump) holds every
 * allocation's size and order, so the model's figures are the full
 * record's; only stacks are sampled: an allocation without one counts
 * under UNSAMPLED in the phase and module lines, and --scale, which
 * matches stacks, is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "estimate/allocmodel.h"
#include "estimate/estimate.h"
#include "event/format.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "lib/limits.h"
#include "event/kinds.h"
#include "record/iter.h"
#include "lib/err.h"
#include "lib/escape.h"
#include "analysis/sample.h"

#define MAX_DEVS 16
#define CPU_DEV MAX_DEVS /* the slot of the CPU run */
#define MAX_GROUPS 256
#define TOP_GROUPS 20
/* the phase and module of an allocation whose stack was not sampled */
#define UNSAMPLED "[stack_not_sampled]"

/* recorded pointer -> model block: linear probing, deletes shift back */
struct ptrmap {
	__u64 *key; /* 0: empty */
	__u32 *val;
	size_t cap, n, max;
};

struct group {
	const char *name;
	__u64 allocs, bytes, ooms;
	__u64 peak_allocated, peak_reserved; /* the model's, at its allocs */
};

struct groups {
	struct group g[MAX_GROUPS]; /* the last one takes the overflow */
	size_t n;
};

struct mismatch {
	__u64 event;
	double t;
	const char *what;
	__u64 ptr, size;
	__u64 model_reserved, rec_reserved, model_allocated, rec_allocated;
};

struct dev {
	struct mt_am *am;
	struct ptrmap live;
	struct groups phases, modules;
	__u64 allocs, frees, unknown_frees, scaled, failed;
	__u64 req_bytes; /* bytes asked for, after --scale */
	/* the first allocation that would fail */
	bool oom;
	__u64 oom_event, oom_size;
	double oom_t;
	const struct mt_site *oom_site;
	bool oom_bare; /* its stack not sampled */
	struct mt_am_stats oom_st;
	/* --check */
	__u64 checked, mismatches;
	struct mismatch first;
};

struct est {
	const struct mt_estimate_conf *c;
	FILE *out;
	struct mt_am_conf conf;
	struct dev *dev[MAX_DEVS + 1];
	__u64 events, first_ts;
	__u64 rate; /* the record's --sample-bytes; 0: none */
	const struct mt_site *last_site; /* --scale's one-entry cache */
	double last_factor;
};

/* the map's accessors for lib/hashtab.h: tab is the struct ptrmap */
static bool pm_used(const void *tab, size_t i)
{
	return ((const struct ptrmap *)tab)->key[i];
}

/* key: the pointer looked for */
static bool pm_match(const void *tab, size_t i, const void *key)
{
	return ((const struct ptrmap *)tab)->key[i] == *(const __u64 *)key;
}

static __u64 pm_hash(const void *tab, size_t i)
{
	return mt_mix64(((const struct ptrmap *)tab)->key[i]);
}

static void pm_move(void *tab, size_t to, size_t from)
{
	struct ptrmap *pm = tab;

	pm->key[to] = pm->key[from];
	pm->val[to] = pm->val[from];
	pm->key[from] = 0;
}

static int pm_grow(struct ptrmap *pm)
{
	struct ptrmap n = { .cap = pm->cap ? pm->cap * 2 : MT_HASH_MIN_CAP };

	n.key = calloc(n.cap, sizeof(*n.key));
	n.val = calloc(n.cap, sizeof(*n.val));
	if (!n.key || !n.val) {
		free(n.key);
		free(n.val);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pm->cap; i++) {
		size_t j;

		if (!pm->key[i])
			continue;
		j = mt_probe(&n, n.cap - 1, mt_mix64(pm->key[i]), pm_used, NULL,
			     NULL);
		n.key[j] = pm->key[i];
		n.val[j] = pm->val[i];
	}
	free(pm->key);
	free(pm->val);
	pm->key = n.key;
	pm->val = n.val;
	pm->cap = n.cap;
	return 0;
}

static size_t pm_slot(const struct ptrmap *pm, __u64 k)
{
	return mt_probe(pm, pm->cap - 1, mt_mix64(k), pm_used, pm_match, &k);
}

/* 0, or -ENOSPC past max entries, -ENOMEM */
static int pm_put(struct ptrmap *pm, __u64 k, __u32 v)
{
	size_t i;

	if (pm->n >= pm->max)
		return -ENOSPC;
	if ((pm->n + 1) * 2 > pm->cap && pm_grow(pm))
		return -ENOMEM;
	i = pm_slot(pm, k);
	if (!pm->key[i])
		pm->n++;
	pm->key[i] = k;
	pm->val[i] = v;
	return 0;
}

static bool pm_take(struct ptrmap *pm, __u64 k, __u32 *v)
{
	size_t i;

	if (!pm->cap)
		return false;
	i = pm_slot(pm, k);
	if (!pm->key[i])
		return false;
	*v = pm->val[i];
	pm->key[i] = 0;
	mt_backshift(pm, pm->cap - 1, i, pm_used, pm_hash, pm_move);
	pm->n--;
	return true;
}

static struct group *group_of(struct groups *gs, const char *name)
{
	for (size_t i = 0; i < gs->n; i++)
		if (gs->g[i].name == name)
			return &gs->g[i];
	if (gs->n == MAX_GROUPS) {
		gs->g[MAX_GROUPS - 1].name = "(other)";
		return &gs->g[MAX_GROUPS - 1];
	}
	gs->g[gs->n].name = name;
	return &gs->g[gs->n++];
}

static void group_add(struct groups *gs, const char *name, __u64 bytes,
		      const struct mt_am_stats *st, bool failed)
{
	struct group *g;

	if (!name)
		return;
	g = group_of(gs, name);
	g->allocs++;
	g->bytes += bytes;
	g->ooms += failed;
	if (st->allocated > g->peak_allocated)
		g->peak_allocated = st->allocated;
	if (st->reserved > g->peak_reserved)
		g->peak_reserved = st->reserved;
}

static bool site_matches(const struct mt_site *s, const char *pat)
{
	if ((s->module && strstr(s->module, pat)) ||
	    (s->phase && strstr(s->phase, pat)))
		return true;
	for (int i = 0; i < s->depth; i++)
		if (s->frames[i] && strstr(s->frames[i], pat))
			return true;
	return false;
}

/* the factor of the first --scale whose pattern the site matches */
static double scale_of(struct est *e, const struct mt_site *s)
{
	const struct mt_estimate_conf *eo = e->c;

	if (!eo->nscales || !s)
		return 1;
	if (s == e->last_site)
		return e->last_factor;
	e->last_site = s;
	e->last_factor = 1;
	for (int i = 0; i < eo->nscales; i++) {
		if (site_matches(s, eo->scales[i].pattern)) {
			e->last_factor = eo->scales[i].factor;
			break;
		}
	}
	return e->last_factor;
}

static struct dev *dev_get(struct est *e, int slot)
{
	struct dev *d = e->dev[slot];

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->am = mt_am_new(&e->conf);
	d->live.max = e->c->max_live;
	if (!d->am) {
		free(d);
		return NULL;
	}
	e->dev[slot] = d;
	return d;
}

static void dev_free(struct dev *d)
{
	if (!d)
		return;
	mt_am_free(d->am);
	free(d->live.key);
	free(d->live.val);
	free(d);
}

static double secs(const struct est *e, __u64 ts)
{
	return (double)(ts - e->first_ts) / 1e9;
}

/* 0, or -errno when the model cannot go on */
static int do_alloc(struct est *e, struct dev *d, const struct mt_call *r,
		    const struct mt_site *site)
{
	double f = scale_of(e, site);
	bool bare = mt_sample_unwalked(e->rate, r);
	__u64 size = r->size;
	struct mt_am_stats st;
	__u32 id, old;
	int ret;

	if (f != 1) {
		double v = (double)size * f;

		/* rounded up, as a tensor of a scaled shape would be */
		size = (__u64)v;
		size += (double)size < v;
		d->scaled++;
	}
	/* a pointer handed out again: its free was not seen */
	if (pm_take(&d->live, r->ptr, &old))
		mt_am_release(d->am, old);
	d->allocs++;
	d->req_bytes += size;
	/* a CUDA block's address places a new segment as it was placed */
	ret = mt_am_malloc_at(d->am, size ? size : 1, 0,
			      r->ev->kind == MT_K_C10_REPORT ? r->ptr : 0, &id);
	if (ret < 0)
		return ret;
	mt_am_stats(d->am, &st);
	if (bare) {
		group_add(&d->phases, UNSAMPLED, size, &st, !ret);
		group_add(&d->modules, UNSAMPLED, size, &st, !ret);
	} else if (site) {
		group_add(&d->phases, site->phase, size, &st, !ret);
		group_add(&d->modules, site->module, size, &st, !ret);
	}
	if (!ret) {
		d->failed++;
		if (!d->oom) {
			d->oom = true;
			d->oom_event = e->events;
			d->oom_t = secs(e, r->ev->ts);
			d->oom_size = size;
			d->oom_site = site;
			d->oom_bare = bare;
			d->oom_st = st;
		}
		return 0;
	}
	return pm_put(&d->live, r->ptr, id);
}

static void check(struct est *e, struct dev *d, const struct mt_call *r)
{
	struct mt_am_stats st;
	struct mismatch *m = &d->first;

	mt_am_stats(d->am, &st);
	d->checked++;
	if (st.reserved == r->reserved)
		return;
	if (!d->mismatches++) {
		m->event = e->events;
		m->t = secs(e, r->ev->ts);
		m->what = r->event;
		m->ptr = r->ptr;
		m->size = r->size;
		m->model_reserved = st.reserved;
		m->rec_reserved = r->reserved;
		m->model_allocated = st.allocated;
		m->rec_allocated = r->allocated;
	}
}

static int on_event(struct est *e, const struct mt_call *r,
		    const struct mt_site *site)
{
	int slot, ret = 0;
	struct dev *d;
	__u32 id;

	if (r->ev->kind == MT_K_C10_REPORT) {
		if (r->dev_index < 0 || r->dev_index >= MAX_DEVS)
			return 0;
		slot = r->dev_index;
	} else if (r->ki->space == MT_SP_CPU &&
		   (r->role == MT_ROLE_ALLOC || r->role == MT_ROLE_FREE)) {
		slot = CPU_DEV;
	} else {
		return 0;
	}
	if (!r->has_ptr || !r->ptr)
		return 0;
	d = dev_get(e, slot);
	if (!d)
		return -ENOMEM;
	if (r->role == MT_ROLE_ALLOC) {
		ret = do_alloc(e, d, r, site);
	} else if (pm_take(&d->live, r->ptr, &id)) {
		d->frees++;
		mt_am_release(d->am, id);
	} else {
		d->unknown_frees++;
	}
	if (e->c->check && slot != CPU_DEV && r->has_totals)
		check(e, d, r);
	return ret;
}

static const char *bytes(char *buf, size_t len, __u64 v)
{
	return mt_format_bytes(buf, len, v);
}

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->peak_reserved != y->peak_reserved)
		return x->peak_reserved < y->peak_reserved ? 1 : -1;
	if (x->peak_allocated != y->peak_allocated)
		return x->peak_allocated < y->peak_allocated ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void print_groups(FILE *out, const char *dev, const char *kind,
			 struct groups *gs)
{
	char b1[32], b2[32];

	qsort(gs->g, gs->n, sizeof(gs->g[0]), cmp_group);
	for (size_t i = 0; i < gs->n && i < TOP_GROUPS; i++) {
		const struct group *g = &gs->g[i];
		struct mt_esc e = { 0 };

		fprintf(out,
			"# estimate %s %s=%s allocs=%llu bytes=%llu "
			"peak_allocated=%llu peak_reserved=%llu ooms=%llu "
			"(%s, %s reserved)\n",
			dev, kind, mt_esc(&e, g->name, MT_ESC_FIELD),
			(unsigned long long)g->allocs,
			(unsigned long long)g->bytes,
			(unsigned long long)g->peak_allocated,
			(unsigned long long)g->peak_reserved,
			(unsigned long long)g->ooms,
			bytes(b1, sizeof(b1), g->peak_allocated),
			bytes(b2, sizeof(b2), g->peak_reserved));
	}
}

static void print_oom(FILE *out, const char *dev, const struct dev *d,
		      const struct mt_am_conf *c)
{
	const struct mt_site *s = d->oom_bare ? NULL : d->oom_site;
	struct mt_esc e = { 0 };
	char b1[32], b2[32];

	fprintf(out,
		"# estimate %s oom: %llu allocations would fail; the first, "
		"event %llu at %.6f s: size=%llu rounded=%llu allocated=%llu "
		"reserved=%llu device_mem=%llu phase=%s module=%s "
		"(%s asked with %s reserved)\n",
		dev, (unsigned long long)d->failed,
		(unsigned long long)d->oom_event, d->oom_t,
		(unsigned long long)d->oom_size,
		(unsigned long long)mt_am_round_size(c, d->oom_size),
		(unsigned long long)d->oom_st.allocated,
		(unsigned long long)d->oom_st.reserved,
		(unsigned long long)c->device_mem,
		mt_esc(&e, s && s->phase ? s->phase : "-", MT_ESC_FIELD),
		mt_esc(&e, s && s->module ? s->module : "-", MT_ESC_FIELD),
		bytes(b1, sizeof(b1), d->oom_size),
		bytes(b2, sizeof(b2), d->oom_st.reserved));
	if (d->oom_bare)
		fprintf(out, "#\t" UNSAMPLED "\n");
	else if (s)
		mt_site_print_stack(s, "#\t", out);
}

/* whether --check found a mismatch on this device */
static bool print_check(FILE *out, const char *dev, const struct dev *d)
{
	const struct mismatch *m = &d->first;

	if (!d->checked)
		return false;
	if (!d->mismatches) {
		fprintf(out,
			"# estimate %s check: ok: the model's reserved equals "
			"the recorded reserved at all %llu events\n",
			dev, (unsigned long long)d->checked);
		return false;
	}
	fprintf(out,
		"# estimate %s check: MISMATCH at event %llu (%.6f s, %s "
		"ptr=0x%llx size=%llu): model reserved=%llu, recorded "
		"reserved=%llu (allocated: model %llu, recorded %llu); "
		"%llu of %llu events differ\n",
		dev, (unsigned long long)m->event, m->t, m->what,
		(unsigned long long)m->ptr, (unsigned long long)m->size,
		(unsigned long long)m->model_reserved,
		(unsigned long long)m->rec_reserved,
		(unsigned long long)m->model_allocated,
		(unsigned long long)m->rec_allocated,
		(unsigned long long)d->mismatches,
		(unsigned long long)d->checked);
	return true;
}

/* the device's figures; whether --check found a mismatch there */
static bool print_dev(struct est *e, int slot)
{
	struct dev *d = e->dev[slot];
	char dev[24], b1[32], b2[32];
	struct mt_am_stats st;
	double frag;

	if (slot == CPU_DEV)
		snprintf(dev, sizeof(dev), "cpu");
	else
		snprintf(dev, sizeof(dev), "cuda:%d", slot);
	mt_am_stats(d->am, &st);
	frag = st.peak_reserved ?
		       100.0 *
			       (double)(st.peak_reserved -
					st.allocated_at_peak_reserved) /
			       (double)st.peak_reserved :
		       0;
	fprintf(e->out,
		"# estimate %s source=%s allocs=%llu frees=%llu "
		"unknown_frees=%llu scaled=%llu\n",
		dev,
		slot == CPU_DEV ? "c10:cpu_alloc/c10:cpu_free (as one GPU)" :
				  "c10:alloc/c10:free",
		(unsigned long long)d->allocs, (unsigned long long)d->frees,
		(unsigned long long)d->unknown_frees,
		(unsigned long long)d->scaled);
	fprintf(e->out,
		"# estimate %s peak_allocated=%llu peak_reserved=%llu "
		"fragmentation=%.1f%% segments=%llu segment_allocs=%llu "
		"segment_frees=%llu retries=%llu ooms=%llu "
		"peak_inactive_split=%llu (%s allocated, %s reserved)\n",
		dev, (unsigned long long)st.peak_allocated,
		(unsigned long long)st.peak_reserved, frag,
		(unsigned long long)st.peak_segments,
		(unsigned long long)st.num_device_alloc,
		(unsigned long long)st.num_device_free,
		(unsigned long long)st.num_alloc_retries,
		(unsigned long long)st.num_ooms,
		(unsigned long long)st.peak_inactive_split_bytes,
		bytes(b1, sizeof(b1), st.peak_allocated),
		bytes(b2, sizeof(b2), st.peak_reserved));
	if (d->oom)
		print_oom(e->out, dev, d, &e->conf);
	else if (e->conf.device_mem)
		fprintf(e->out, "# estimate %s fits in %s\n", dev,
			bytes(b1, sizeof(b1), e->conf.device_mem));
	print_groups(e->out, dev, "phase", &d->phases);
	print_groups(e->out, dev, "module", &d->modules);
	return e->c->check && print_check(e->out, dev, d);
}

static void print_header(const struct est *e)
{
	const struct mt_am_conf *c = &e->conf;

	fprintf(e->out, "# estimate model: %s\n", MT_AM_VERSION);
	fprintf(e->out,
		"# estimate config: device_mem=%llu expandable_segments=%s "
		"max_split_size=%llu roundup_power2_divisions=%u "
		"garbage_collection_threshold=%g streams=1\n",
		(unsigned long long)c->device_mem,
		c->expandable_segments ? "true" : "false",
		(unsigned long long)c->max_split_size,
		c->roundup_power2_divisions, c->gc_threshold);
	for (int i = 0; i < e->c->nscales; i++)
		fprintf(e->out, "# estimate scale: %s x%g\n",
			e->c->scales[i].pattern, e->c->scales[i].factor);
	if (e->rate)
		fprintf(e->out,
			"# estimate sample: bytes=%llu: the record's stacks "
			"are sampled (--sample-bytes); every allocation's size "
			"and order are there, so the figures are exact; the "
			"phase and module lines count an allocation without a "
			"stack under " UNSAMPLED "\n",
			(unsigned long long)e->rate);
}

static int on_item(void *ctx, const struct mt_rec_item *it, struct mt_call *r)
{
	struct est *e = ctx;
	int ret;

	if (!e->first_ts)
		e->first_ts = it->ev.ts;
	e->events++;
	if (!r)
		return 0;
	ret = on_event(e, r, it->site);
	if (ret) {
		mt_err("%s: event %llu: the model ran "
		       "out of its own memory: %s (see --max-live)",
		       e->c->input, (unsigned long long)e->events,
		       strerror(-ret));
		return ret;
	}
	return 0;
}

/* 0 with *v the check's verdict, or negative after mt_err() */
static int run(struct est *e, struct mt_rec_iter *it, struct mt_sites *sites,
	       enum mt_verdict *v)
{
	bool bad = false;
	int ret;

	if (mt_rec_iter_start(it, sites))
		return -1;
	e->rate = mt_reader_sample_bytes(it->rd);
	/* a pattern would miss the allocations without a stack */
	if (e->rate && e->c->nscales) {
		mt_err("--scale matches stacks, and %s has stacks for a "
		       "sample of its allocations only (--sample-bytes %llu): "
		       "scale a record made without --sample-bytes",
		       it->path, (unsigned long long)e->rate);
		return -1;
	}
	ret = mt_rec_iter_run(it, sites, on_item, e);
	if (ret)
		return ret;
	print_header(e);
	for (int i = 0; i <= MAX_DEVS; i++)
		if (e->dev[i])
			bad |= print_dev(e, i);
	if (!e->dev[CPU_DEV] && !bad) {
		bool any = false;

		for (int i = 0; i < MAX_DEVS; i++)
			any |= e->dev[i] != NULL;
		if (!any)
			fprintf(e->out,
				"# estimate: no c10:alloc, c10:free, "
				"c10:cpu_alloc or c10:cpu_free events in "
				"the record\n");
	}
	if (e->c->check) {
		__u64 checked = 0;

		for (int i = 0; i < MAX_DEVS; i++)
			checked += e->dev[i] ? e->dev[i]->checked : 0;
		if (!checked) {
			fprintf(e->out, "# estimate check: nothing to check: "
					"no c10:alloc/c10:free events with "
					"the allocator's totals\n");
			bad = true;
		}
	}
	*v = bad ? MT_VERDICT_NO : MT_VERDICT_OK;
	return 0;
}

int mt_estimate(const struct mt_estimate_conf *c, enum mt_verdict *v)
{
	struct est e = { .c = c, .out = stdout, .conf = c->model };
	struct mt_sites *sites = mt_sites_new(MT_MAX_SITES);
	struct mt_rec_iter it;
	int ret;

	*v = MT_VERDICT_OK;
	ret = mt_rec_iter_open(&it, c->input);
	if (ret)
		goto out;
	if (!sites) {
		mt_err("out of memory");
		ret = -ENOMEM;
		goto out;
	}
	ret = run(&e, &it, sites, v);
	if (fflush(e.out)) {
		ret = -errno;
		mt_err("write: %s", strerror(-ret));
	}
out:
	for (int i = 0; i <= MAX_DEVS; i++)
		dev_free(e.dev[i]);
	mt_rec_iter_close(&it);
	mt_sites_free(sites);
	return ret;
}
