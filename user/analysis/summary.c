// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "event/cudaerr.h"
#include "event/format.h"
#include "analysis/sample.h"
#include "analysis/summary.h"
#include "lib/escape.h"
#include "lib/grow.h"

static struct mt_kind_stat *kind_stat(struct mt_summary *s, const char *event)
{
	for (size_t i = 0; i < s->nkinds; i++)
		if (s->kinds[i].event == event)
			return &s->kinds[i];
	if (s->nkinds == MT_SUM_KINDS)
		return NULL;
	s->kinds[s->nkinds].event = event;
	return &s->kinds[s->nkinds++];
}

static struct mt_fail_stat *fail_stat(struct mt_summary *s,
				      const struct mt_call *r)
{
	struct mt_fail_stat *f;

	for (size_t i = 0; i < s->nfails; i++) {
		f = &s->fails[i];
		if (f->event == r->event && f->ret == r->ret)
			return f;
	}
	if (s->nfails == MT_SUM_FAILS)
		return NULL;
	f = &s->fails[s->nfails++];
	f->event = r->event;
	f->domain = r->ki->errdomain;
	f->ret = r->ret;
	return f;
}

const struct mt_dev_stat *mt_summary_dev(const struct mt_summary *s, __u32 pid,
					 enum mt_dev_type type, int index,
					 enum mt_space space)
{
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct mt_dev_stat *d = &s->devs[i];

		if (d->pid == pid && d->type == type && d->index == index &&
		    d->space == space)
			return d;
	}
	return NULL;
}

struct mt_dev_stat *mt_summary_account(struct mt_summary *s, __u32 pid,
				       enum mt_dev_type type, int index,
				       enum mt_space space)
{
	const struct mt_dev_stat *found =
		mt_summary_dev(s, pid, type, index, space);
	struct mt_dev_stat *d;

	if (found)
		return &s->devs[found - s->devs];
	if (s->ndevs == MT_SUM_DEVS)
		return NULL;
	d = &s->devs[s->ndevs++];
	*d = (struct mt_dev_stat){
		.pid = pid, .type = type, .index = index, .space = space
	};
	return d;
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

/*
 * A free whose size only the live table could have told, once the table
 * refused an entry: its bytes are missing from the freed figures.
 */
static bool unpaired(const struct mt_summary *s, const struct mt_call *r)
{
	return s->live_full && r->role == MT_ROLE_FREE && !r->failed &&
	       r->has_ptr && r->size_state != MT_SIZE_KNOWN;
}

/*
 * The first running totals of an account: what was held before this
 * event, less (or plus) the event's own bytes, and less the segments the
 * runtime was seen to hand out for it. Zero for a process traced from its
 * start; an attach with -p finds the allocator's memory there.
 */
static void note_before(struct mt_summary *s, struct mt_dev_stat *d,
			const struct mt_call *r)
{
	__u64 own = r->size_state == MT_SIZE_KNOWN && !r->failed ? r->size : 0;

	d->totals_seen = true;
	d->before_allocated = r->allocated;
	if (r->role == MT_ROLE_ALLOC && d->before_allocated >= own)
		d->before_allocated -= own;
	else if (r->role == MT_ROLE_FREE)
		d->before_allocated += own;
	d->before_reserved = r->reserved;
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct mt_dev_stat *rt = &s->devs[i];

		/* a thread that set no device since the attach: -1 */
		if (rt->pid == d->pid && rt->type == d->type &&
		    (rt->index == d->index || rt->index < 0) &&
		    (rt->space == MT_SP_CUDART || rt->space == MT_SP_VAMAP) &&
		    d->before_reserved >= rt->cur)
			d->before_reserved -= rt->cur;
	}
}

void mt_summary_event(struct mt_summary *s, const struct mt_call *r)
{
	struct mt_kind_stat *k = kind_stat(s, r->event);
	__u64 bytes = r->size_state == MT_SIZE_KNOWN ? r->size : 0;
	struct mt_dev_stat *d;

	s->events++;
	if (!k) {
		s->untracked++;
		return;
	}
	k->count++;
	if (!r->failed)
		k->bytes += bytes;
	if (unpaired(s, r))
		k->unpaired++;
	if (r->failed) {
		struct mt_fail_stat *f = fail_stat(s, r);

		if (!f) {
			s->untracked++;
		} else {
			f->count++;
			f->bytes += bytes;
		}
	}
	if (r->has_totals) {
		d = mt_summary_account(s, r->ev->pid, r->dev_type, r->dev_index,
				       r->ki->space);
		if (!d) {
			s->untracked++;
			return;
		}
		if (!d->totals_seen)
			note_before(s, d, r);
		d->allocated = r->allocated;
		d->reserved = r->reserved;
		d->allocated_peak = max_u64(d->allocated_peak, r->allocated);
		d->reserved_peak = max_u64(d->reserved_peak, r->reserved);
	}
}

void mt_summary_live(struct mt_summary *s, __u32 pid, enum mt_dev_type type,
		     int index, enum mt_space space, __s64 delta)
{
	struct mt_dev_stat *d = mt_summary_account(s, pid, type, index, space);

	if (!d) {
		s->untracked++;
		return;
	}
	if (delta < 0 && (__u64)-delta > d->cur)
		d->cur = 0;
	else
		d->cur += (__u64)delta;
	d->peak = max_u64(d->peak, d->cur);
}

void mt_summary_exec(struct mt_summary *s, __u32 pid)
{
	for (size_t i = 0; i < s->ndevs; i++) {
		struct mt_dev_stat *d = &s->devs[i];

		if (d->pid == pid && d->space == MT_SP_C10)
			d->allocated = d->reserved = 0;
	}
}

void mt_summary_untracked(struct mt_summary *s, __u32 pid,
			  enum mt_dev_type type, int index, enum mt_space space,
			  __u64 size)
{
	struct mt_dev_stat *d = mt_summary_account(s, pid, type, index, space);

	if (!d) {
		s->untracked++;
		return;
	}
	d->untracked++;
	d->untracked_bytes += size;
}

/*
 * Allocated memory of the event's device when it happened; *incomplete
 * when that is our own count and the live table missed some of it.
 */
static __u64 current_allocated(struct mt_summary *s, const struct mt_call *r,
			       bool *incomplete)
{
	struct mt_dev_stat *d;

	*incomplete = false;
	if (r->has_totals)
		return r->allocated;
	d = mt_summary_account(s, r->ev->pid, r->dev_type, r->dev_index,
			       r->ki->space);
	if (!d)
		return 0;
	*incomplete = d->untracked;
	return d->cur;
}

static struct mt_module_stat *module_stat(struct mt_summary *s, __u32 pid,
					  const char *phase, const char *module)
{
	struct mt_module_stat *m;

	/* interned strings: pointers compare */
	for (size_t i = 0; i < s->nmods; i++) {
		m = &s->mods[i];
		if (m->pid == pid && m->phase == phase && m->module == module)
			return m;
	}
	if (s->nmods == MT_SUM_MODULES ||
	    mt_grow((void **)&s->mods, &s->capmods, s->nmods + 1,
		    sizeof(*s->mods)))
		return NULL;
	m = &s->mods[s->nmods++];
	*m = (struct mt_module_stat){ .pid = pid,
				      .phase = phase,
				      .module = module };
	return m;
}

static struct mt_phase_stat *phase_stat(struct mt_summary *s, __u32 pid,
					const char *phase)
{
	for (size_t i = 0; i < s->nphases; i++)
		if (s->phases[i].pid == pid && s->phases[i].phase == phase)
			return &s->phases[i];
	if (s->nphases == MT_SUM_PHASES)
		return NULL;
	s->phases[s->nphases] =
		(struct mt_phase_stat){ .pid = pid, .phase = phase };
	return &s->phases[s->nphases++];
}

void mt_summary_attrib(struct mt_summary *s, const struct mt_call *r,
		       const char *phase, const char *module, bool recompute,
		       double weight)
{
	struct mt_thread_last *t = &s->threads[r->ev->tid % MT_SUM_THREADS];
	__u64 bytes = r->size_state == MT_SIZE_KNOWN ? r->size : 0;
	__u64 est = mt_sample_scale(bytes, weight);
	struct mt_module_stat *m;
	struct mt_phase_stat *p;
	bool incomplete;
	__u64 cur = current_allocated(s, r, &incomplete);

	s->attributed = true;
	m = module_stat(s, r->ev->pid, phase, module);
	p = phase_stat(s, r->ev->pid, phase);
	if (!m || !p) {
		s->untracked++;
		return;
	}
	if (r->role == MT_ROLE_ALLOC && !r->failed) {
		m->allocs++;
		m->alloc_est += weight;
		m->bytes_alloc += est;
		if (recompute)
			m->recompute_bytes += est;
	} else if (r->role == MT_ROLE_FREE && !r->failed) {
		m->frees++;
		m->bytes_freed += bytes;
		if (unpaired(s, r))
			m->unpaired++;
	}
	m->process_peak = max_u64(m->process_peak, cur);
	p->peak = max_u64(p->peak, cur);
	m->incomplete |= incomplete;
	p->incomplete |= incomplete;
	if (t->tid == r->ev->tid && t->phase == phase && t->module == module &&
	    r->ev->ts > t->ts)
		m->time_ns += r->ev->ts - t->ts;
	*t = (struct mt_thread_last){ .tid = r->ev->tid,
				      .phase = phase,
				      .module = module,
				      .ts = r->ev->ts };
}

/* the module entry of site's (pid, phase, module), through its hint */
static struct mt_module_stat *site_module(struct mt_summary *s,
					  struct mt_site *site)
{
	const char *module = site->module;
	struct mt_module_stat *m;

	if (site->mod_hint && site->mod_hint <= s->nmods) {
		m = &s->mods[site->mod_hint - 1];
		if (m->pid == site->pid && m->phase == site->phase &&
		    m->module == module)
			return m;
	}
	m = module_stat(s, site->pid, site->phase, module);
	if (m)
		site->mod_hint = (__u32)(m - s->mods) + 1;
	return m;
}

static bool own_match(const struct mt_module_own *o, const struct mt_live *e,
		      const char *module)
{
	return o->pid == e->pid && o->module == module &&
	       o->space == (enum mt_space)e->space &&
	       o->dev_type == (enum mt_dev_type)e->dev_type && o->dev == e->dev;
}

/* the (pid, module, account) entry of e; NULL when the table is full */
static struct mt_module_own *own_of(struct mt_summary *s,
				    const struct mt_live *e)
{
	struct mt_site *site = e->site;
	const char *module = site->module;
	struct mt_module_own *o;

	if (site->own_hint && site->own_hint <= s->nowns &&
	    own_match(&s->owns[site->own_hint - 1], e, module))
		return &s->owns[site->own_hint - 1];
	for (size_t i = 0; i < s->nowns; i++) {
		if (own_match(&s->owns[i], e, module)) {
			site->own_hint = (__u32)i + 1;
			return &s->owns[i];
		}
	}
	if (s->nowns == MT_SUM_MODULES ||
	    mt_grow((void **)&s->owns, &s->capowns, s->nowns + 1,
		    sizeof(*s->owns)))
		return NULL;
	o = &s->owns[s->nowns++];
	*o = (struct mt_module_own){ .pid = e->pid,
				     .module = module,
				     .space = (enum mt_space)e->space,
				     .dev_type = (enum mt_dev_type)e->dev_type,
				     .dev = e->dev };
	site->own_hint = (__u32)s->nowns;
	return o;
}

/* live of bytes alive now moves by delta; peak follows it up */
static void own_move(__u64 *live, __u64 *peak, __s64 delta)
{
	if (delta < 0 && (__u64)-delta > *live)
		*live = 0;
	else
		*live += (__u64)delta;
	*peak = max_u64(*peak, *live);
}

void mt_summary_own(struct mt_summary *s, const struct mt_live *e, __s64 delta)
{
	struct mt_module_stat *m;
	struct mt_module_own *o;

	/* an unsampled allocation of a sampled trace stands for nothing */
	if (!e->site || !e->site->phase || mt_live_unsampled(e))
		return;
	m = site_module(s, e->site);
	o = own_of(s, e);
	if (!m || !o) {
		s->untracked++;
		return;
	}
	own_move(&m->live, &m->own_peak, delta);
	own_move(&o->live, &o->peak, delta);
	if (delta > 0)
		o->alloc_bytes += (__u64)delta;
}

void mt_summary_unmatched_free(struct mt_summary *s, const struct mt_call *r)
{
	/* once the table refused one, it may be the free of that one */
	if (s->live_full)
		return;
	s->early_frees++;
	if (r->size_state == MT_SIZE_KNOWN)
		s->early_bytes += r->size;
	else
		s->early_unsized++;
}

bool mt_summary_has_cuda(const struct mt_summary *s, __u32 pid)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].pid == pid && s->devs[i].space == MT_SP_C10 &&
		    s->devs[i].type == MT_DT_CUDA)
			return true;
	return false;
}

bool mt_summary_in_totals(const struct mt_dev_stat *d, bool cuda)
{
	return cuda ? d->space == MT_SP_C10 && d->type == MT_DT_CUDA :
		      d->space == MT_SP_CPU;
}

void mt_summary_totals(struct mt_summary *s, __u32 pid, __u64 *allocated,
		       __u64 *reserved)
{
	bool cuda = mt_summary_has_cuda(s, pid);

	*allocated = *reserved = 0;
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct mt_dev_stat *d = &s->devs[i];

		if (d->pid != pid || !mt_summary_in_totals(d, cuda))
			continue;
		*allocated += cuda ? d->allocated : d->cur;
		*reserved += cuda ? d->reserved : d->cur;
	}
}

void mt_summary_free(struct mt_summary *s)
{
	free(s->mods);
	s->mods = NULL;
	s->nmods = s->capmods = 0;
	free(s->owns);
	s->owns = NULL;
	s->nowns = s->capowns = 0;
}

static int by_bytes_alloc_desc(const void *a, const void *b)
{
	const struct mt_module_stat *x = a, *y = b;

	return x->bytes_alloc < y->bytes_alloc ? 1 :
	       x->bytes_alloc > y->bytes_alloc ? -1 :
						 0;
}

static void print_modules(struct mt_summary *s,
			  const struct mt_summary_cal *cal, FILE *out)
{
	if (!s->attributed)
		return;
	qsort(s->mods, s->nmods, sizeof(*s->mods), by_bytes_alloc_desc);
	for (size_t i = 0; i < s->nmods; i++) {
		const struct mt_module_stat *m = &s->mods[i];
		struct mt_esc e = { 0 };
		struct mt_sample_cal c;
		__u64 allocs;

		/* a sampled trace's estimate, kept as the call sites' are */
		cal->fn(cal->ctx, m->pid, &c);
		allocs = (__u64)llround(
			mt_sample_cal_count(&c, m->allocs, m->alloc_est));

		fprintf(out,
			"# module pid=%u phase=%s module=%s allocs=%" PRIu64
			" frees=%" PRIu64 " bytes_allocated=%" PRIu64
			" bytes_freed=%" PRIu64 " net=%" PRId64
			" peak=%" PRIu64,
			m->pid, mt_esc(&e, m->phase, MT_ESC_FIELD),
			mt_esc(&e, m->module, MT_ESC_FIELD), (uint64_t)allocs,
			(uint64_t)m->frees, (uint64_t)m->bytes_alloc,
			(uint64_t)m->bytes_freed,
			(int64_t)(m->bytes_alloc - m->bytes_freed),
			(uint64_t)m->own_peak);
		/* time between a thread's events inside it: none, no figure */
		if (m->time_ns)
			fprintf(out, " time=%.6fs", (double)m->time_ns / 1e9);
		fprintf(out,
			" recompute_bytes=%" PRIu64 " live=%" PRIu64
			" process_peak=%" PRIu64,
			(uint64_t)m->recompute_bytes, (uint64_t)m->live,
			(uint64_t)m->process_peak);
		if (m->incomplete || m->unpaired)
			fprintf(out, " incomplete=live_table unpaired=%" PRIu64,
				(uint64_t)m->unpaired);
		fputc('\n', out);
	}
	for (size_t i = 0; i < s->nphases; i++) {
		struct mt_esc e = { 0 };

		fprintf(out, "# phase pid=%u phase=%s peak=%" PRIu64 "%s\n",
			s->phases[i].pid,
			mt_esc(&e, s->phases[i].phase, MT_ESC_FIELD),
			(uint64_t)s->phases[i].peak,
			s->phases[i].incomplete ? " incomplete=live_table" :
						  "");
	}
}

/* live allocations at exit, grouped by what a reader acts on */
struct live_group {
	__u32 pid;
	const char *event;
	const char *caller;
	__u64 size;
	__s8 dev;
	__u8 dev_type;
	__u64 count;
};

struct live_groups {
	struct live_group *v;
	size_t n, cap;
	bool oom;
};

static void group_live(const struct mt_live *e, void *ctx)
{
	struct live_groups *g = ctx;
	struct live_group *v;

	/* a linear scan is fine: groups are few next to allocations */
	for (size_t i = 0; i < g->n; i++) {
		v = &g->v[i];
		if (v->pid == e->pid && v->event == e->event &&
		    v->caller == e->caller && v->size == e->size &&
		    v->dev == e->dev && v->dev_type == e->dev_type) {
			v->count++;
			return;
		}
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;

		v = realloc(g->v, cap * sizeof(*v));
		if (!v) {
			g->oom = true;
			return;
		}
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = (struct live_group){ .pid = e->pid,
					    .event = e->event,
					    .caller = e->caller,
					    .size = e->size,
					    .dev = e->dev,
					    .dev_type = e->dev_type,
					    .count = 1 };
}

static int by_bytes_desc(const void *a, const void *b)
{
	const struct live_group *x = a, *y = b;
	__u64 bx = x->size * x->count, by = y->size * y->count;

	return bx < by ? 1 : bx > by ? -1 : 0;
}

static void print_live(const struct mt_livetable *live,
		       const struct mt_live_stats *st, size_t top, FILE *out)
{
	struct live_groups g = { 0 };
	char dev[32];
	size_t i;

	mt_live_foreach(live, group_live, &g);
	if (g.oom)
		fprintf(out, "# live: out of memory grouping allocations\n");
	qsort(g.v, g.n, sizeof(*g.v), by_bytes_desc);
	fprintf(out, "# live allocations=%zu groups=%zu", mt_live_count(live),
		g.n);
	/* the refused ones still alive are missing from the list */
	mt_live_mark_table(st, out);
	fputc('\n', out);
	for (i = 0; i < g.n && i < top; i++) {
		const struct live_group *v = &g.v[i];
		struct mt_esc e = { 0 };

		fprintf(out,
			"# live pid=%u event=%s size=%" PRIu64
			" dev=%s caller=%s count=%" PRIu64 " bytes=%" PRIu64
			"\n",
			v->pid, v->event, (uint64_t)v->size,
			mt_format_dev(dev, sizeof(dev), v->dev_type, v->dev),
			mt_esc(&e, v->caller ? v->caller : "?", MT_ESC_FIELD),
			(uint64_t)v->count, (uint64_t)(v->size * v->count));
	}
	if (i < g.n)
		fprintf(out, "# live ... %zu more groups\n", g.n - i);
	free(g.v);
}

/* after the device line of d: what the live table missed of it */
static void print_dev_untracked(const struct mt_dev_stat *d,
				const struct mt_live_stats *st, FILE *out)
{
	mt_live_mark_account(st, d->untracked, d->untracked_bytes, out);
}

static void print_untracked(const struct mt_summary *s,
			    const struct mt_live_stats *st, FILE *out)
{
	if (!s->untracked && !s->live_full && !s->sites_full &&
	    !s->procs_evicted)
		return;
	fprintf(out, "# untracked stats=%" PRIu64 " live_table_full=%" PRIu64,
		(uint64_t)s->untracked, (uint64_t)s->live_full);
	if (s->live_full)
		fprintf(out,
			" max_live=%zu live_high=%" PRIu64
			" advise_max_live=%" PRIu64,
			st->max, (uint64_t)st->high, (uint64_t)st->advise);
	if (s->sites_full)
		fprintf(out, " sites_table_full=%" PRIu64,
			(uint64_t)s->sites_full);
	if (s->procs_evicted)
		fprintf(out, " procs_evicted=%" PRIu64,
			(uint64_t)s->procs_evicted);
	fputc('\n', out);
}

void mt_summary_print(struct mt_summary *s, const struct mt_livetable *live,
		      const struct mt_summary_end *end,
		      const struct mt_summary_cal *cal, FILE *out)
{
	struct mt_live_stats st;
	char dev[32];

	mt_live_stats(live, &st);

	fprintf(out,
		"# summary duration=%.3fs events=%" PRIu64
		" events_per_sec=%.1f lost=%" PRIu64 "%s\n",
		end->seconds, (uint64_t)s->events,
		end->seconds > 0 ? (double)s->events / end->seconds : 0.0,
		(uint64_t)end->lost, end->cut_short ? " cut_short=1" : "");
	for (size_t i = 0; i < s->nkinds; i++) {
		const struct mt_kind_stat *k = &s->kinds[i];

		fprintf(out, "# event %s count=%" PRIu64 " bytes=%" PRIu64,
			k->event, (uint64_t)k->count, (uint64_t)k->bytes);
		if (k->unpaired)
			fprintf(out, " incomplete=live_table unpaired=%" PRIu64,
				(uint64_t)k->unpaired);
		fputc('\n', out);
	}
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct mt_dev_stat *d = &s->devs[i];

		mt_format_dev(dev, sizeof(dev), d->type, d->index);
		if (d->space == MT_SP_C10 && d->type == MT_DT_CUDA) {
			fprintf(out,
				"# device pid=%u dev=%s source=c10 allocated=%" PRIu64
				" allocated_peak=%" PRIu64 " reserved=%" PRIu64
				" reserved_peak=%" PRIu64,
				d->pid, dev, (uint64_t)d->allocated,
				(uint64_t)d->allocated_peak,
				(uint64_t)d->reserved,
				(uint64_t)d->reserved_peak);
			/* only an attach to a process holding memory has them */
			if (d->before_allocated)
				fprintf(out,
					" before_allocated=%" PRIu64
					" before_reserved=%" PRIu64,
					(uint64_t)d->before_allocated,
					(uint64_t)d->before_reserved);
			fputc('\n', out);
		}
		if (d->space != MT_SP_C10 && d->space != MT_SP_VAMAP) {
			fprintf(out,
				"# device pid=%u dev=%s source=%s current=%" PRIu64
				" peak=%" PRIu64,
				d->pid, dev, mt_space_name(d->space),
				(uint64_t)d->cur, (uint64_t)d->peak);
			print_dev_untracked(d, &st, out);
			fputc('\n', out);
		}
	}
	for (size_t i = 0; i < s->nfails; i++) {
		const struct mt_fail_stat *f = &s->fails[i];
		const char *name = mt_cuda_err_name(f->domain, f->ret);

		fprintf(out,
			"# failed event=%s ret=%d err=%s count=%" PRIu64
			" bytes=%" PRIu64 "\n",
			f->event, f->ret, name ? name : "unknown",
			(uint64_t)f->count, (uint64_t)f->bytes);
	}
	print_modules(s, cal, out);
	print_live(live, &st, end->top_live, out);
	print_untracked(s, &st, out);
	if (s->early_frees)
		fprintf(out,
			"# unseen frees_before_attach=%" PRIu64
			" bytes=%" PRIu64 " unsized=%" PRIu64 "\n",
			(uint64_t)s->early_frees, (uint64_t)s->early_bytes,
			(uint64_t)s->early_unsized);
	if (end->unseen.stacks_early)
		fprintf(out, "# unseen stacks_before_walker=%" PRIu64 "\n",
			(uint64_t)end->unseen.stacks_early);
	if (end->unseen.stacks_unread)
		fprintf(out, "# unseen stacks_unread=%" PRIu64 "\n",
			(uint64_t)end->unseen.stacks_unread);
	if (end->unseen.nodes)
		fprintf(out,
			"# unseen backward_forward_before_attach=%" PRIu64
			" bytes=%" PRIu64 "\n",
			(uint64_t)end->unseen.nodes,
			(uint64_t)end->unseen.node_bytes);
	if (end->unseen.children)
		fprintf(out,
			"# unseen children_not_followed=%" PRIu64
			" first_pid=%u\n",
			(uint64_t)end->unseen.children,
			end->unseen.first_child);
	if (end->unseen.stacks_lost)
		fprintf(out, "# lost python_stacks=%" PRIu64 "\n",
			(uint64_t)end->unseen.stacks_lost);
	fprintf(out, "# lost events=%" PRIu64 "\n", (uint64_t)end->lost);
}
