// SPDX-License-Identifier: GPL-2.0
/*
 * --export folded: folded stacks for flamegraph.pl, inferno and stackvis,
 * one line per distinct stack, "outermost;...;innermost bytes", weighted by
 * the bytes allocated there over the whole trace (with --at, the bytes
 * alive at that moment or at the peak). The innermost frame is
 * the allocating call (c10:cpu_alloc, cudart:cudaMalloc), under the Python
 * stack, or under the calling library where there is none. With
 * --folded-prefix the module and phase are the outermost frames; with more
 * than one process traced, "pid N" is outermost of all.
 *
 * A process whose tensor allocations we see (c10) is weighed by those and
 * its pinned host memory only: the cudaMalloc segments that hold its
 * tensors would count the same bytes twice. The sums are kept per (site,
 * event), so memory is bounded by the session's sites table.
 *
 * A sampled trace (--sample-bytes) weighs every allocation by its exact
 * size, so that the lines add up to the full trace's totals: one whose
 * stack was not walked is drawn as "[stack not sampled (--sample-bytes
 * R)]" over its calling library and call, the format's only place to say
 * how the trace was sampled.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "analysis/peak.h"
#include "analysis/sample.h"
#include "analysis/session.h"
#include "export/export.h"

/* kinds that may share the overflow site, beyond one entry per site */
#define EXTRA_KEYS 64

struct fentry {
	const struct mt_site *site;
	const char *event; /* interned by kinds.c: pointers compare */
	enum mt_space space;
	__u32 pid;
	bool bare; /* its stack not walked (--sample-bytes) */
	__u64 bytes;
};

struct folded {
	FILE *f;
	bool prefix;
	bool at_peak, at_time; /* --at: what was alive then, not allocated */
	struct fentry *ents;
	size_t n, capents;
	__u32 *slots; /* index + 1 into ents; 0: empty */
	size_t capslots;
	__u64 unkept; /* bytes of keys past the bound (none expected) */
	int err; /* -ENOMEM once an entry could not be made */
	char bare_frame[64]; /* the frame of a bare entry, at the end */
};

static void *open_folded(FILE *f, const struct mt_export_conf *c, char *err,
			 size_t errlen)
{
	struct folded *x = calloc(1, sizeof(*x));

	if (!x) {
		snprintf(err, errlen, "export folded: %s", strerror(ENOMEM));
		return NULL;
	}
	x->f = f;
	x->prefix = c->folded_prefix;
	x->at_peak = c->at_peak;
	x->at_time = c->at_time;
	return x;
}

static size_t key_hash(const struct fentry *k)
{
	return (size_t)mt_mix64((__u64)(uintptr_t)k->site ^
				mt_mix64((__u64)(uintptr_t)k->event) ^
				(__u64)k->bare);
}

/* tab: a struct mt_index into ents; key: an entry with the site, event, bare */
static bool slot_match(const void *tab, size_t i, const void *key)
{
	const struct mt_index *t = tab;
	const struct fentry *e =
		(const struct fentry *)t->ents + t->slots[i] - 1;
	const struct fentry *k = key;

	return e->site == k->site && e->event == k->event && e->bare == k->bare;
}

static void slot_put(__u32 *slots, size_t cap, const struct fentry *e,
		     __u32 idx)
{
	struct mt_index t = { .slots = slots };

	slots[mt_probe(&t, cap - 1, key_hash(e), mt_index_used, NULL, NULL)] =
		idx + 1;
}

/* room for one more entry, at half load; false: out of memory */
static bool grow(struct folded *x)
{
	if (x->n == x->capents) {
		size_t cap = x->capents ? x->capents * 2 : MT_HASH_MIN_CAP / 2;
		struct fentry *e = realloc(x->ents, cap * sizeof(*e));

		if (!e)
			return false;
		x->ents = e;
		x->capents = cap;
	}
	if ((x->n + 1) * 2 > x->capslots) {
		size_t cap = x->capslots ? x->capslots * 2 : MT_HASH_MIN_CAP;
		__u32 *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return false;
		for (size_t i = 0; i < x->n; i++)
			slot_put(slots, cap, &x->ents[i], (__u32)i);
		free(x->slots);
		x->slots = slots;
		x->capslots = cap;
	}
	return true;
}

/* k: the key (site, event, bare) and what a new entry starts with */
static struct fentry *entry(struct folded *x, const struct mt_session *s,
			    const struct fentry *k)
{
	if (x->capslots) {
		struct mt_index t = { .slots = x->slots, .ents = x->ents };
		size_t i = mt_probe(&t, x->capslots - 1, key_hash(k),
				    mt_index_used, slot_match, k);

		if (x->slots[i])
			return &x->ents[x->slots[i] - 1];
	}
	if (x->n >= s->conf.max_sites + EXTRA_KEYS)
		return NULL;
	if (!grow(x)) {
		x->err = -ENOMEM;
		return NULL;
	}
	x->ents[x->n] = *k;
	x->ents[x->n].bytes = 0;
	slot_put(x->slots, x->capslots, &x->ents[x->n], (__u32)x->n);
	return &x->ents[x->n++];
}

static void add(struct folded *x, const struct mt_session *s,
		const struct fentry *k, __u64 bytes)
{
	struct fentry *e = entry(x, s, k);

	if (e)
		e->bytes += bytes;
	else
		x->unkept += bytes;
}

static void event_folded(void *p, const struct mt_session *s,
			 const struct mt_call *r, const struct mt_site *site)
{
	struct folded *x = p;

	/* --at is weighed at close, from the peak view or the live table */
	if (r->role != MT_ROLE_ALLOC || r->failed ||
	    r->size_state != MT_SIZE_KNOWN || !r->size || x->err ||
	    x->at_peak || x->at_time)
		return;
	add(x, s,
	    &(struct fentry){
		    .site = site,
		    .event = r->event,
		    .space = r->ki->space,
		    .pid = r->ev->pid,
		    .bare = mt_sample_unwalked(s->conf.sample_bytes, r) },
	    r->size);
}

/* what --at weighs by: the session (for its bounds) and the export */
struct at_ctx {
	struct folded *x;
	const struct mt_session *s;
};

/* --at SECS: one allocation alive then (the reading stopped there) */
static void add_live(const struct mt_live *e, void *ctx)
{
	struct at_ctx *a = ctx;

	if (a->x->err || !e->site || !e->size || e->space == MT_SP_VAMAP)
		return;
	add(a->x, a->s,
	    &(struct fentry){ .site = e->site,
			      .event = e->event,
			      .space = (enum mt_space)e->space,
			      .pid = e->pid,
			      .bare = mt_live_unsampled(e) },
	    e->size);
}

/* --at peak: one group alive at its account's peak, by exact bytes */
static void add_peak(const struct mt_peak_group *g, void *ctx)
{
	struct at_ctx *a = ctx;
	struct fentry k;

	if (a->x->err || g->space == MT_SP_VAMAP)
		return;
	if (g->unfit || !g->site) {
		a->x->unkept += g->exact_bytes + g->bare_bytes;
		return;
	}
	k = (struct fentry){ .site = g->site,
			     .event = g->site->event,
			     .space = g->space,
			     .pid = g->pid };
	if (g->exact_bytes)
		add(a->x, a->s, &k, g->exact_bytes);
	k.bare = true;
	if (g->bare_bytes)
		add(a->x, a->s, &k, g->bare_bytes);
}

/* the frames of a line, outermost first; NULL past the last one */
static const char *part(const struct folded *x, const struct fentry *e, int i)
{
	const struct mt_site *st = e->site;
	int depth = e->bare ? 0 : st->depth;

	if (x->prefix) {
		/* "-": outside every module */
		if (i == 0)
			return st->module && strcmp(st->module, "-") ?
				       st->module :
				       "[no module]";
		if (i == 1)
			return st->phase ? st->phase : "[no phase]";
		i -= 2;
	}
	if (e->bare) {
		if (i == 0)
			return x->bare_frame;
		i--;
	} else if (st->truncated) {
		if (i == 0)
			return "[truncated]";
		i--;
	}
	if (!depth && st->caller) {
		if (i == 0)
			return st->caller;
		i--;
	}
	if (i < depth)
		return st->frames[depth - 1 - i];
	return i == depth ? e->event : NULL;
}

/* a frame as written: ';' separates frames, a line ends at '\n' */
static char frame_char(char c)
{
	if (c == ';')
		return ':';
	if ((unsigned char)c < 0x20 || c == 0x7f)
		return '?';
	return c;
}

/* as written, so that stacks equal once written merge */
static int frame_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		int ca = *a ? (unsigned char)frame_char(*a) : -1;
		int cb = *b ? (unsigned char)frame_char(*b) : -1;

		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (ca < 0)
			return 0;
	}
}

/* by pid, then frame by frame from the outermost; ctx: the export */
static int entry_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct fentry *a = pa, *b = pb;
	const struct folded *x = ctx;
	const char *fa, *fb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	for (int i = 0;; i++) {
		int c;

		fa = part(x, a, i);
		fb = part(x, b, i);
		if (!fa || !fb)
			return !fa && !fb ? 0 : !fa ? -1 : 1;
		c = frame_cmp(fa, fb);
		if (c)
			return c;
	}
}

static void write_frame(FILE *f, const char *s)
{
	if (!*s) {
		fputs("[?]", f);
		return;
	}
	for (; *s; s++)
		fputc(frame_char(*s), f);
}

static void write_line(struct folded *x, const struct fentry *e, bool pids,
		       __u64 bytes)
{
	const char *fr;

	if (pids)
		fprintf(x->f, "pid %" PRIu32 ";", e->pid);
	for (int i = 0; (fr = part(x, e, i)); i++) {
		if (i)
			fputc(';', x->f);
		write_frame(x->f, fr);
	}
	fprintf(x->f, " %llu\n", (unsigned long long)bytes);
}

/* what a process is weighed by, given whether its tensors were seen */
static bool weighed(const struct fentry *e, bool tensors)
{
	return !tensors || mt_space_is_tensor(e->space) ||
	       e->space == MT_SP_PINNED;
}

static void write_all(struct folded *x, const struct mt_session *s)
{
	bool pids = false;
	size_t i, j, k;

	snprintf(x->bare_frame, sizeof(x->bare_frame),
		 "[" MT_SAMPLE_NO_STACK " (--sample-bytes %llu)]",
		 (unsigned long long)s->conf.sample_bytes);
	for (i = 1; i < x->n; i++)
		pids |= x->ents[i].pid != x->ents[0].pid;
	qsort_r(x->ents, x->n, sizeof(*x->ents), entry_cmp, x);
	for (i = 0; i < x->n; i = j) {
		bool tensors = false;

		/* one process: sorted by pid, so its entries are a run */
		for (j = i; j < x->n && x->ents[j].pid == x->ents[i].pid; j++)
			tensors |= mt_space_is_tensor(x->ents[j].space);
		for (k = i; k < j;) {
			const struct fentry *first = &x->ents[k];
			__u64 bytes = 0;

			/* identical stacks are neighbours: one line */
			for (; k < j && !entry_cmp(first, &x->ents[k], x); k++)
				if (weighed(&x->ents[k], tensors))
					bytes += x->ents[k].bytes;
			if (bytes)
				write_line(x, first, pids, bytes);
		}
	}
	if (x->unkept)
		fprintf(x->f, "[stacks past the bound] %llu\n",
			(unsigned long long)x->unkept);
}

static int close_folded(void *p, const struct mt_session *s, char *err,
			size_t errlen)
{
	struct folded *x = p;
	struct at_ctx a = { .x = x, .s = s };
	int ret;

	if (x->at_peak && !x->err)
		x->err = mt_peak_foreach(s->peak, s->live, add_peak, &a);
	if (x->at_time && !x->err)
		mt_live_foreach(s->live, add_live, &a);
	ret = x->err;
	if (ret)
		snprintf(err, errlen, "export folded: %zu stacks kept: %s",
			 x->n, strerror(-ret));
	else
		write_all(x, s);
	free(x->slots);
	free(x->ents);
	free(x);
	return ret;
}

const struct mt_exporter mt_export_folded = {
	.name = "folded",
	.what = "folded stacks by bytes allocated (flamegraph.pl, inferno; "
		"--at: live then)",
	.at = MT_EXPORT_AT_TIME | MT_EXPORT_AT_PEAK,
	.open = open_folded,
	.event = event_folded,
	.close = close_folded,
};
