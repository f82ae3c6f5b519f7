// SPDX-License-Identifier: GPL-2.0
/*
 * Per account: the bytes alive now, the highest they reached, and the
 * event that got them there. A free of an allocation that was alive at the
 * peak adds to a group of (account, site) in one shared table; a new peak
 * bumps the account's generation instead of clearing its groups, and the
 * slots of old generations are reused or dropped when the table grows.
 *
 * A group adds up what its allocations stand for (in a sampled trace,
 * estimates: livetable.h's mt_live_est) and their exact bytes, apart from
 * those whose stack was not walked: the report prints the first, the
 * exports draw the others. Its count is kept (sample.h's mt_sample_cal)
 * to the exact number of allocations its account held then: the groups'
 * counts never add up past it, in any view.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "event/kinds.h"
#include "analysis/peak.h"
#include "analysis/sample.h"
#include "analysis/sites.h"

#define MAX_ACCOUNTS 1024 /* pids x address spaces x devices */
#define ACCOUNT_SLOTS 2048 /* index of the accounts, at half load */
#define MIN_GROUP_CAP 1024
#define MAX_FREED_CAP (1 << 17) /* slots of freed groups: 7 MiB */
#define MAX_PRINT_CAP (1 << 20) /* slots while printing: 56 MiB */

/* what some allocations add up to */
struct tally {
	__u64 bytes; /* what they stand for (mt_live_est) */
	double est; /* how many they stand for (mt_live_weight) */
	/* those whose stack was walked: how many, their exact bytes */
	__u64 walked, exact;
	__u64 bare; /* the exact bytes of the others */
};

struct account {
	__u32 pid;
	__u16 space;
	__u8 dev_type;
	__s8 dev;
	__u64 cur, peak;
	/* allocations alive now and at the peak: exact, sampled or not */
	__u64 cur_count, peak_count;
	__u64 peak_seq, peak_ts;
	__u32 peak_step; /* steps the process had finished at the peak */
	const char *peak_phase; /* of the event that made the peak */
	__u32 gen; /* of the groups freed since the peak */
	__u32 ngroups; /* freed groups of this generation */
	struct tally unfit; /* freed, no group slot left */
	/* allocations the live table had no room for: not in cur or peak */
	__u64 untracked_count, untracked_bytes;
	bool estimated; /* its groups hold a sampled trace's estimates */
	/* exact bytes freed since the peak, alive at it, by kind */
	__u64 kinds[MT_MK_MAX];
};

struct accounts {
	struct account v[MAX_ACCOUNTS];
	__u16 slots[ACCOUNT_SLOTS]; /* index + 1; 0: empty */
	size_t n;
};

/* a tally per (account, site); acct is index + 1, 0: empty */
struct group {
	const struct mt_site *site;
	struct tally t;
	__u32 acct;
	__u32 gen;
};

struct groups {
	struct group *v;
	size_t cap, n, max_cap;
};

struct mt_peak {
	struct accounts a;
	struct groups freed;
	size_t stale; /* freed groups of an older generation */
	__u64 unfit_events; /* of accounts beyond MAX_ACCOUNTS */
};

static size_t account_hash(__u32 pid, __u16 space, __u8 dev_type, __s8 dev)
{
	return (size_t)mt_mix64((__u64)pid << 32 | (__u64)space << 16 |
				(__u64)dev_type << 8 | (__u8)dev);
}

/* the accounts' index, for lib/hashtab.h: tab is the struct accounts */
static bool account_used(const void *tab, size_t i)
{
	return ((const struct accounts *)tab)->slots[i];
}

/* key: the struct mt_live whose account is looked for */
static bool account_match(const void *tab, size_t i, const void *key)
{
	const struct accounts *a = tab;
	const struct account *x = &a->v[a->slots[i] - 1];
	const struct mt_live *e = key;

	return x->pid == e->pid && x->space == e->space &&
	       x->dev_type == e->dev_type && x->dev == e->dev;
}

/* the slot of e's account, or the empty slot where it would go */
static size_t account_slot(const struct accounts *a, const struct mt_live *e)
{
	return mt_probe(a, ACCOUNT_SLOTS - 1,
			account_hash(e->pid, e->space, e->dev_type, e->dev),
			account_used, account_match, e);
}

static const struct account *account_find(const struct accounts *a,
					  const struct mt_live *e)
{
	size_t i = account_slot(a, e);

	return a->slots[i] ? &a->v[a->slots[i] - 1] : NULL;
}

/* e's account, made if new; NULL when MAX_ACCOUNTS are taken */
static struct account *account_get(struct accounts *a, const struct mt_live *e)
{
	size_t i = account_slot(a, e);
	struct account *x;

	if (a->slots[i])
		return &a->v[a->slots[i] - 1];
	if (a->n == MAX_ACCOUNTS)
		return NULL;
	x = &a->v[a->n++];
	*x = (struct account){ .pid = e->pid,
			       .space = e->space,
			       .dev_type = e->dev_type,
			       .dev = e->dev };
	a->slots[i] = (__u16)a->n;
	return x;
}

static size_t group_hash(__u32 acct, const struct mt_site *site)
{
	return (size_t)mt_mix64((__u64)(uintptr_t)site ^ (__u64)acct << 48);
}

static int groups_init(struct groups *g, size_t max_cap)
{
	g->v = calloc(MIN_GROUP_CAP, sizeof(*g->v));
	if (!g->v)
		return -ENOMEM;
	g->cap = MIN_GROUP_CAP;
	g->n = 0;
	g->max_cap = max_cap;
	return 0;
}

/* the groups' accessors for lib/hashtab.h: tab is the slot array */
static bool group_used(const void *tab, size_t i)
{
	return ((const struct group *)tab)[i].acct;
}

/* key: a group with the acct and site looked for */
static bool group_match(const void *tab, size_t i, const void *key)
{
	const struct group *x = (const struct group *)tab + i, *k = key;

	return x->acct == k->acct && x->site == k->site;
}

static struct group *groups_find(struct groups *g, __u32 acct,
				 const struct mt_site *site)
{
	struct group k = { .acct = acct, .site = site };

	return &g->v[mt_probe(g->v, g->cap - 1, group_hash(acct, site),
			      group_used, group_match, &k)];
}

/* into a table of cap slots, the groups keep() accepts */
static int groups_rehash(struct groups *g, size_t cap,
			 bool (*keep)(const struct group *x, const void *ctx),
			 const void *ctx)
{
	struct groups ng = { .cap = cap, .max_cap = g->max_cap };

	ng.v = calloc(cap, sizeof(*ng.v));
	if (!ng.v)
		return -ENOMEM;
	for (size_t i = 0; i < g->cap; i++) {
		const struct group *x = &g->v[i];

		if (x->acct && (!keep || keep(x, ctx))) {
			*groups_find(&ng, x->acct, x->site) = *x;
			ng.n++;
		}
	}
	free(g->v);
	*g = ng;
	return 0;
}

/* the empty slot for a new group, growing the table; NULL when full */
static struct group *groups_add(struct groups *g, __u32 acct,
				const struct mt_site *site)
{
	struct group *x = groups_find(g, acct, site);

	if (x->acct)
		return x;
	if ((g->n + 1) * 2 > g->cap) {
		if (g->cap >= g->max_cap ||
		    groups_rehash(g, g->cap * 2, NULL, NULL))
			return NULL;
		x = groups_find(g, acct, site);
	}
	*x = (struct group){ .acct = acct, .site = site };
	g->n++;
	return x;
}

static bool is_current(const struct group *x, const void *ctx)
{
	const struct mt_peak *p = ctx;

	return x->gen == p->a.v[x->acct - 1].gen;
}

/*
 * The current group of (acct, site): a match of an older generation or
 * the first old slot on the probe path is taken over in place (the path
 * stays unbroken); otherwise an empty slot, after dropping the old slots
 * when they are at least an eighth of the groups, which keeps that O(1)
 * amortised.
 */
static struct group *freed_group(struct mt_peak *p, __u32 acct,
				 const struct mt_site *site)
{
	struct groups *g = &p->freed;
	struct account *a = &p->a.v[acct - 1];

	for (int pass = 0; pass < 2; pass++) {
		size_t mask = g->cap - 1, i = group_hash(acct, site) & mask;
		struct group *x, *old = NULL;
		size_t cap = g->cap;

		/* a walk of its own: it also notes the first old slot */
		for (; g->v[i].acct; i = mt_probe_next(i, mask)) {
			x = &g->v[i];
			if (x->acct == acct && x->site == site) {
				if (is_current(x, p))
					return x;
				old = x;
				break;
			}
			if (!old && !is_current(x, p))
				old = x;
		}
		if (old) {
			p->stale--;
		} else if ((g->n + 1) * 2 <= g->cap) {
			old = &g->v[i];
			g->n++;
		} else {
			if (p->stale < g->n / 8) {
				if (g->cap >= g->max_cap)
					return NULL;
				cap = g->cap * 2;
			}
			if (groups_rehash(g, cap, is_current, p))
				return NULL;
			p->stale = 0;
			continue;
		}
		*old = (struct group){ .acct = acct,
				       .site = site,
				       .gen = a->gen };
		a->ngroups++;
		return old;
	}
	return NULL;
}

static void tally_live(struct tally *t, const struct mt_live *e)
{
	if (mt_live_unsampled(e)) {
		t->bare += e->size;
		return;
	}
	t->bytes += mt_live_est(e);
	t->est += mt_live_weight(e);
	t->walked++;
	t->exact += e->size;
}

static void tally_add(struct tally *t, const struct tally *u)
{
	t->bytes += u->bytes;
	t->est += u->est;
	t->walked += u->walked;
	t->exact += u->exact;
	t->bare += u->bare;
}

struct mt_peak *mt_peak_new(void)
{
	struct mt_peak *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (groups_init(&p->freed, MAX_FREED_CAP)) {
		free(p);
		return NULL;
	}
	return p;
}

void mt_peak_free(struct mt_peak *p)
{
	if (!p)
		return;
	free(p->freed.v);
	free(p);
}

void mt_peak_alloc(struct mt_peak *p, const struct mt_live *e)
{
	struct account *a = account_get(&p->a, e);

	if (!a) {
		p->unfit_events++;
		return;
	}
	a->cur += e->size;
	a->cur_count++;
	if (a->cur <= a->peak)
		return;
	/* a new peak: what was freed since the old one no longer counts */
	a->peak = a->cur;
	a->peak_count = a->cur_count;
	a->peak_seq = e->seq;
	a->peak_ts = e->ts;
	a->peak_step = e->step;
	a->peak_phase = e->site ? e->site->phase : NULL;
	a->gen++;
	p->stale += a->ngroups;
	a->ngroups = 0;
	a->unfit = (struct tally){ 0 };
	memset(a->kinds, 0, sizeof(a->kinds));
}

void mt_peak_untracked(struct mt_peak *p, const struct mt_live *e)
{
	struct account *a = account_get(&p->a, e);

	if (!a) {
		p->unfit_events++;
		return;
	}
	a->untracked_count++;
	a->untracked_bytes += e->size;
}

void mt_peak_release(struct mt_peak *p, const struct mt_live *e,
		     enum mt_memkind kind)
{
	size_t i = account_slot(&p->a, e);
	struct account *a = p->a.slots[i] ? &p->a.v[p->a.slots[i] - 1] : NULL;
	struct group *g;

	if (!a) {
		p->unfit_events++;
		return;
	}
	a->cur = a->cur > e->size ? a->cur - e->size : 0;
	if (a->cur_count)
		a->cur_count--;
	/* allocated after the peak: not in its groups */
	if (!a->peak || e->seq > a->peak_seq)
		return;
	/* an unsampled allocation stands for nothing: no estimate in it */
	if (!mt_live_unsampled(e))
		a->estimated |= e->est_adj != 0;
	g = freed_group(p, (__u32)(a - p->a.v) + 1, e->site);
	tally_live(g ? &g->t : &a->unfit, e);
	a->kinds[kind < MT_MK_MAX ? kind : MT_MK_UNKNOWN] += e->size;
}

/* what printing one view needs */
struct view {
	const struct accounts *a;
	struct accounts *own; /* --at: the accounts made from the live table */
	struct groups g;
	/* per account: alive at the moment, no group slot left */
	struct tally unfit[MAX_ACCOUNTS];
	__u64 unfit_live; /* entries of accounts beyond MAX_ACCOUNTS */
	bool estimated; /* its groups hold a sampled trace's estimates */
};

/* u's tally to the group of (u->acct, u->site) */
static void view_add(struct view *v, const struct group *u)
{
	struct group *x = groups_add(&v->g, u->acct, u->site);

	tally_add(x ? &x->t : &v->unfit[u->acct - 1], &u->t);
}

static void view_live(const struct mt_live *e, void *ctx)
{
	struct view *v = ctx;
	const struct account *a;
	struct group u;

	if (v->own) {
		struct account *own = account_get(v->own, e);

		/* its total: all that is alive now */
		if (own) {
			own->peak += e->size;
			own->peak_count++;
		}
		a = own;
	} else {
		a = account_find(v->a, e);
		if (a && e->seq > a->peak_seq)
			return;
	}
	if (!a) {
		v->unfit_live++;
		return;
	}
	/* an unsampled allocation stands for nothing: no estimate in it */
	if (!mt_live_unsampled(e))
		v->estimated |= e->est_adj != 0;
	u = (struct group){ .acct = (__u32)(a - v->a->v) + 1, .site = e->site };
	tally_live(&u.t, e);
	view_add(v, &u);
}

static int by_account_then_bytes(const void *pa, const void *pb)
{
	const struct group *x = pa, *y = pb;
	__u32 ix = x->site ? x->site->id : 0, iy = y->site ? y->site->id : 0;

	if (x->acct != y->acct)
		return x->acct < y->acct ? -1 : 1;
	if (x->t.bytes != y->t.bytes)
		return x->t.bytes > y->t.bytes ? -1 : 1;
	if (x->t.est != y->t.est)
		return x->t.est > y->t.est ? -1 : 1;
	return ix < iy ? -1 : ix > iy;
}

/* what the bytes of a space are to a reader of the allocator's stats */
static const char *space_role(enum mt_space sp)
{
	switch (sp) {
	case MT_SP_C10:
	case MT_SP_CPU:
		return "allocated";
	case MT_SP_PINNED:
		return "page-locked";
	default:
		return "reserved";
	}
}

/* a group, count its calibrated count */
static void print_group(const struct group *x, __u64 count, bool stacks,
			FILE *out)
{
	const struct mt_site *s = x->site;
	char b[32];

	fprintf(out, "#   %s bytes=%" PRIu64 " count=%" PRIu64,
		mt_format_bytes(b, sizeof(b), x->t.bytes), (uint64_t)x->t.bytes,
		(uint64_t)count);
	mt_site_print_keys(s, out);
	fputc('\n', out);
	if (stacks && s)
		mt_site_print_stack(s, "#\t", out);
}

/* how to print the accounts of a view */
struct print_conf {
	const char *tag;
	__u64 t0;
	size_t top;
	bool stacks;
	struct mt_live_stats live; /* what the live table left out */
	FILE *out;
};

/*
 * After an account's title: the live table's overflow, which makes its
 * peak (and, --at, what lives now) low by up to the bytes it refused.
 */
static void print_incomplete(const struct account *a,
			     const struct print_conf *c)
{
	if (!c->live.refused)
		return;
	if (a->untracked_count)
		mt_live_mark_account(&c->live, a->untracked_count,
				     a->untracked_bytes, c->out);
	else if (!strcmp(c->tag, "at"))
		/* its accounts are made from the table: no count of their own */
		fprintf(c->out,
			" incomplete=live_table advise_max_live=%" PRIu64,
			(uint64_t)c->live.advise);
}

/*
 * The counts of account a's n groups g and then of those in no group
 * (unfit), taken in that order from cal, add up to no more than the
 * allocations it held at the moment (exact): in a full trace each is its
 * own count
 */
static void account_cal(const struct view *v, const struct account *a,
			const struct group *g, size_t n,
			struct mt_sample_cal *cal)
{
	const struct tally *u = &v->unfit[a - v->a->v];
	__u64 walked = u->walked;
	double est = u->est;

	for (size_t i = 0; i < n; i++) {
		walked += g[i].t.walked;
		est += g[i].t.est;
	}
	mt_sample_cal_init(cal, a->peak_count, walked, est);
}

static __u64 next_count(struct mt_sample_cal *cal, const struct tally *t)
{
	return mt_sample_cal_next(cal, t->walked, t->est);
}

/* one account: its title, then its n groups g, largest first */
static void print_account(const struct view *v, const struct account *a,
			  const struct group *g, size_t n, void *ctx)
{
	const struct print_conf *c = ctx;
	size_t idx = (size_t)(a - v->a->v), top = c->top, i;
	__u64 sum = v->unfit[idx].bytes, rest = 0, rest_count = 0;
	double at = a->peak_ts > c->t0 ? (double)(a->peak_ts - c->t0) / 1e9 : 0;
	struct mt_sample_cal cal;
	FILE *out = c->out;
	char acct[64], b[32];

	/* last (by bytes): groups of unsampled allocations, which stand for none */
	while (n && !g[n - 1].t.walked)
		n--;
	for (i = 0; i < n; i++)
		sum += g[i].t.bytes;
	account_cal(v, a, g, n, &cal);
	fprintf(out, "# %s pid=%u %s %s: %s at %.3f s", c->tag, a->pid,
		mt_format_account(acct, sizeof(acct), a->dev_type, a->dev,
				  a->space),
		space_role(a->space), mt_format_bytes(b, sizeof(b), a->peak),
		at);
	if (!v->own)
		fprintf(out, " (event %" PRIu64 ")", (uint64_t)a->peak_seq);
	/* a reader checks the lines below against bytes= and allocs= */
	fprintf(out,
		" bytes=%" PRIu64 " groups=%zu allocs=%" PRIu64 " sum=%" PRIu64
		"%s",
		(uint64_t)a->peak, n, (uint64_t)a->peak_count, (uint64_t)sum,
		sum == a->peak ? "" :
		v->estimated   ? " (estimate)" :
				 " (mismatch)");
	print_incomplete(a, c);
	fputc('\n', out);
	for (i = 0; i < n && i < top; i++)
		print_group(&g[i], next_count(&cal, &g[i].t), c->stacks, out);
	for (; i < n; i++) {
		rest += g[i].t.bytes;
		rest_count += next_count(&cal, &g[i].t);
	}
	if (n > top)
		fprintf(out,
			"#   ... %zu more group%s: %s bytes=%" PRIu64
			" count=%" PRIu64 "\n",
			n - top, n - top == 1 ? "" : "s",
			mt_format_bytes(b, sizeof(b), rest), (uint64_t)rest,
			(uint64_t)rest_count);
	if (v->unfit[idx].walked)
		fprintf(out,
			"#   ... in no group (group table full): %s bytes=%" PRIu64
			" count=%" PRIu64 "\n",
			mt_format_bytes(b, sizeof(b), v->unfit[idx].bytes),
			(uint64_t)v->unfit[idx].bytes,
			(uint64_t)next_count(&cal, &v->unfit[idx]));
}

static int by_key(const void *pa, const void *pb)
{
	const struct account *x = *(const struct account *const *)pa;
	const struct account *y = *(const struct account *const *)pb;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->dev_type != y->dev_type)
		return x->dev_type < y->dev_type ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->space < y->space ? -1 : x->space > y->space;
}

/*
 * The groups packed and sorted, then fn for each account with a peak and
 * its groups, the accounts by key or in the order first seen; -ENOMEM.
 */
static int view_walk(struct view *v, bool keyed,
		     void (*fn)(const struct view *v, const struct account *a,
				const struct group *g, size_t n, void *ctx),
		     void *ctx)
{
	const struct accounts *a = v->a;
	const struct account **order;
	size_t n = 0, *from;
	int ret = 0;

	for (size_t i = 0; i < v->g.cap; i++)
		if (v->g.v[i].acct)
			v->g.v[n++] = v->g.v[i];
	qsort(v->g.v, n, sizeof(*v->g.v), by_account_then_bytes);
	from = calloc(a->n + 1, sizeof(*from));
	order = calloc(a->n + 1, sizeof(*order));
	if (!from || !order) {
		ret = -ENOMEM;
		goto out;
	}
	/* account i's groups are [from[i], from[i + 1]) */
	for (size_t i = 0, j = 0; i <= a->n; i++) {
		while (j < n && v->g.v[j].acct <= i)
			j++;
		from[i] = j;
	}
	for (size_t i = 0; i < a->n; i++)
		order[i] = &a->v[i];
	if (keyed)
		qsort(order, a->n, sizeof(*order), by_key);
	for (size_t k = 0; k < a->n; k++) {
		size_t i = (size_t)(order[k] - a->v);

		if (a->v[i].peak)
			fn(v, &a->v[i], &v->g.v[from[i]], from[i + 1] - from[i],
			   ctx);
	}
out:
	free(from);
	free(order);
	return ret;
}

static void print_view(struct view *v, const struct mt_livetable *live,
		       const char *tag, __u64 t0, size_t top, bool stacks,
		       FILE *out)
{
	struct print_conf c = {
		.tag = tag, .t0 = t0, .top = top, .stacks = stacks, .out = out
	};

	mt_live_stats(live, &c.live);

	if (view_walk(v, true, print_account, &c)) {
		fprintf(out, "# %s: out of memory\n", tag);
		return;
	}
	if (v->unfit_live)
		fprintf(out,
			"# %s: %" PRIu64 " live allocations of accounts "
			"beyond %d not shown\n",
			tag, (uint64_t)v->unfit_live, MAX_ACCOUNTS);
}

static struct view *view_new(const struct accounts *a)
{
	struct view *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	if (groups_init(&v->g, MAX_PRINT_CAP)) {
		free(v);
		return NULL;
	}
	v->a = a;
	return v;
}

static void view_free(struct view *v)
{
	free(v->g.v);
	free(v);
}

/* all alive at each account's peak: freed since it, then still alive */
static struct view *peak_view(const struct mt_peak *p,
			      const struct mt_livetable *live)
{
	struct view *v = view_new(&p->a);

	if (!v)
		return NULL;
	for (size_t i = 0; i < p->freed.cap; i++) {
		const struct group *x = &p->freed.v[i];

		if (x->acct && is_current(x, p))
			view_add(v, x);
	}
	for (size_t i = 0; i < p->a.n; i++) {
		tally_add(&v->unfit[i], &p->a.v[i].unfit);
		v->estimated |= p->a.v[i].estimated;
	}
	mt_live_foreach(live, view_live, v);
	return v;
}

void mt_peak_print(const struct mt_peak *p, const struct mt_livetable *live,
		   __u64 t0, size_t top, bool stacks, FILE *out)
{
	struct view *v = peak_view(p, live);

	if (!v) {
		fprintf(out, "# peak: out of memory\n");
		return;
	}
	print_view(v, live, "peak", t0, top, stacks, out);
	if (p->unfit_events)
		fprintf(out,
			"# peak: %" PRIu64 " events of accounts beyond %d "
			"not counted\n",
			(uint64_t)p->unfit_events, MAX_ACCOUNTS);
	view_free(v);
}

struct hand_out {
	void (*fn)(const struct mt_peak_group *g, void *ctx);
	void *ctx;
};

static void hand_tally(struct mt_peak_group *pg, const struct tally *t,
		       struct mt_sample_cal *cal)
{
	pg->bytes = t->bytes;
	pg->count = next_count(cal, t);
	pg->exact_bytes = t->exact;
	pg->bare_bytes = t->bare;
}

static void hand_account(const struct view *v, const struct account *a,
			 const struct group *g, size_t n, void *ctx)
{
	const struct hand_out *h = ctx;
	size_t idx = (size_t)(a - v->a->v);
	struct mt_peak_group pg = { .pid = a->pid,
				    .space = (enum mt_space)a->space,
				    .dev_type = (enum mt_dev_type)a->dev_type,
				    .dev = a->dev,
				    .peak = a->peak,
				    .peak_count = a->peak_count,
				    .peak_ts = a->peak_ts,
				    .peak_step = a->peak_step,
				    .peak_phase = a->peak_phase };
	struct mt_sample_cal cal;

	account_cal(v, a, g, n, &cal);
	for (size_t i = 0; i < n; i++) {
		hand_tally(&pg, &g[i].t, &cal);
		pg.site = g[i].site;
		h->fn(&pg, h->ctx);
	}
	if (!v->unfit[idx].walked && !v->unfit[idx].bare)
		return;
	hand_tally(&pg, &v->unfit[idx], &cal);
	pg.site = NULL;
	pg.unfit = true;
	h->fn(&pg, h->ctx);
}

int mt_peak_foreach(const struct mt_peak *p, const struct mt_livetable *live,
		    void (*fn)(const struct mt_peak_group *g, void *ctx),
		    void *ctx)
{
	struct hand_out h = { .fn = fn, .ctx = ctx };
	struct view *v = peak_view(p, live);
	int ret;

	if (!v)
		return -ENOMEM;
	ret = view_walk(v, false, hand_account, &h);
	view_free(v);
	return ret;
}

/* what is alive now, each account's total as its "peak" at ts */
static struct view *now_view(const struct mt_livetable *live, __u64 ts)
{
	struct accounts *a = calloc(1, sizeof(*a));
	struct view *v = a ? view_new(a) : NULL;

	if (!v) {
		free(a);
		return NULL;
	}
	v->own = a;
	mt_live_foreach(live, view_live, v);
	for (size_t i = 0; i < a->n; i++)
		a->v[i].peak_ts = ts;
	return v;
}

static void now_view_free(struct view *v)
{
	free(v->own);
	view_free(v);
}

void mt_peak_print_now(const struct mt_livetable *live, __u64 t0, __u64 ts,
		       size_t top, bool stacks, FILE *out)
{
	struct view *v = now_view(live, ts);

	if (!v) {
		fprintf(out, "# at: out of memory\n");
		return;
	}
	print_view(v, live, "at", t0, top, stacks, out);
	now_view_free(v);
}

int mt_peak_foreach_now(const struct mt_livetable *live,
			void (*fn)(const struct mt_peak_group *g, void *ctx),
			void *ctx)
{
	struct hand_out h = { .fn = fn, .ctx = ctx };
	struct view *v = now_view(live, 0);
	int ret;

	if (!v)
		return -ENOMEM;
	ret = view_walk(v, false, hand_account, &h);
	now_view_free(v);
	return ret;
}

struct kinds_walk {
	const struct mt_peak *p;
	struct mt_peak_kinds *v; /* an account's, by its index */
	mt_peak_kind_fn *kind_of;
	void *kctx;
};

static void kinds_live(const struct mt_live *e, void *ctx)
{
	struct kinds_walk *w = ctx;
	const struct account *a = account_find(&w->p->a, e);
	enum mt_memkind k;

	if (!a || !a->peak || e->seq > a->peak_seq)
		return;
	k = w->kind_of(e, w->kctx);
	w->v[a - w->p->a.v].bytes[k < MT_MK_MAX ? k : MT_MK_UNKNOWN] += e->size;
}

int mt_peak_foreach_kinds(const struct mt_peak *p,
			  const struct mt_livetable *live,
			  mt_peak_kind_fn *kind_of, void *kctx,
			  void (*fn)(const struct mt_peak_kinds *k, void *ctx),
			  void *ctx)
{
	struct kinds_walk w = { p, NULL, kind_of, kctx };

	if (!p->a.n)
		return 0;
	w.v = calloc(p->a.n, sizeof(*w.v));
	if (!w.v)
		return -ENOMEM;
	for (size_t i = 0; i < p->a.n; i++) {
		const struct account *a = &p->a.v[i];

		w.v[i] = (struct mt_peak_kinds){ .pid = a->pid,
						 .space = a->space,
						 .dev_type = a->dev_type,
						 .dev = a->dev,
						 .peak = a->peak };
		memcpy(w.v[i].bytes, a->kinds, sizeof(a->kinds));
	}
	mt_live_foreach(live, kinds_live, &w);
	for (size_t i = 0; i < p->a.n; i++)
		if (w.v[i].peak)
			fn(&w.v[i], ctx);
	free(w.v);
	return 0;
}
