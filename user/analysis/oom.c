// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/cudaerr.h"
#include "event/format.h"
#include "analysis/oom.h"
#include "analysis/sample.h"
#include "lib/escape.h"

#define PENDING 64 /* threads followed through a retry at once, by tid */
#define TOP_SITES 5

/* a thread whose allocation failed: does the allocator retry it? */
struct pending {
	__u32 tid;
	const char *event; /* the failed call */
	enum mt_space space; /* its layer */
	__u64 size;
	__u64 freed, freed_bytes; /* segments released since */
};

/* what the last event counted shows, a bit each */
enum {
	SHOW_RAISE = 1 << 0,
	SHOW_RETRY = 1 << 1,
	SHOW_BLOCK = 1 << 2,
};

struct mt_oom {
	struct pending p[PENDING];
	__u64 failures, retries, gave_up, raised, raised_oom;
	const struct mt_site *raised_oom_site;
	/* the last event's: what to show, and a retry's segments freed */
	unsigned int show;
	__u64 freed, freed_bytes;
};

bool mt_oom_is_raise(const struct mt_call *r, const struct mt_site *site)
{
	return r->ev->kind == MT_K_PY_RAISE && site && site->detail &&
	       strstr(site->detail, "OutOfMemoryError");
}

struct mt_oom *mt_oom_new(void)
{
	return calloc(1, sizeof(struct mt_oom));
}

void mt_oom_free(struct mt_oom *o)
{
	free(o);
}

/* device memory given back: a step of the allocator's retry */
static bool is_segment_free(const struct mt_call *r)
{
	return r->role == MT_ROLE_FREE && !r->failed &&
	       (r->ki->space == MT_SP_CUDART || r->ki->space == MT_SP_DRIVER ||
		r->ki->space == MT_SP_HANDLE || r->ki->space == MT_SP_VAMAP);
}

static void print_state(const struct mt_call *r, const struct mt_summary *sum,
			FILE *out)
{
	char dev[32], a[32], b[32], c[32], d[32];

	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *s = &sum->devs[i];

		if (s->pid != r->ev->pid || s->type != r->dev_type ||
		    (r->dev_index >= 0 && s->index != r->dev_index))
			continue;
		mt_format_account(dev, sizeof(dev), s->type, s->index,
				  s->space);
		if (s->space == MT_SP_C10)
			fprintf(out,
				"#   state %s: allocated=%s reserved=%s "
				"peak allocated=%s peak reserved=%s\n",
				dev,
				mt_format_bytes(a, sizeof(a), s->allocated),
				mt_format_bytes(b, sizeof(b), s->reserved),
				mt_format_bytes(c, sizeof(c),
						s->allocated_peak),
				mt_format_bytes(d, sizeof(d),
						s->reserved_peak));
		else if (s->space != MT_SP_VAMAP)
			fprintf(out, "#   state %s: live=%s peak=%s\n", dev,
				mt_format_bytes(a, sizeof(a), s->cur),
				mt_format_bytes(b, sizeof(b), s->peak));
	}
}

struct top {
	__u32 pid;
	bool gpu; /* leave CPU tensors out */
	const struct mt_site *v[TOP_SITES];
	size_t n;
	/* over all its sites: live allocations walked, what they stand for */
	__u64 walked;
	double est;
};

static void pick_top(struct mt_site *site, void *ctx)
{
	struct top *t = ctx;
	size_t i;

	if (site->pid != t->pid)
		return;
	t->walked += site->live_count;
	t->est += site->live_est;
	if (!site->live_bytes ||
	    (t->gpu && site->event && !strncmp(site->event, "c10:cpu", 7)))
		return;
	for (i = t->n; i > 0 && t->v[i - 1]->live_bytes < site->live_bytes; i--)
		if (i < TOP_SITES)
			t->v[i] = t->v[i - 1];
	if (i < TOP_SITES) {
		t->v[i] = site;
		if (t->n < TOP_SITES)
			t->n++;
	}
}

/* s's live figures, its count from cal (a sampled trace's estimate) */
static void print_site_line(const struct mt_site *s,
			    const struct mt_sample_cal *cal, FILE *out)
{
	struct mt_esc e = { 0 };
	char b[32];

	fprintf(out, "#     %s in %" PRIu64 " allocations: %s",
		mt_format_bytes(b, sizeof(b), s->live_bytes),
		(uint64_t)llround(
			mt_sample_cal_count(cal, s->live_count, s->live_est)),
		mt_esc(&e, s->event ? s->event : "?", MT_ESC_FIELD));
	mt_site_print_module(s, out);
	if (s->depth)
		fprintf(out, " at %s", mt_esc(&e, s->frames[0], MT_ESC_TEXT));
	fprintf(out, "\n");
}

static void print_block(const struct mt_call *r, const struct mt_site *site,
			const struct mt_oom_state *st, FILE *out)
{
	const struct mt_event *ev = r->ev;
	const char *err =
		r->has_ret ? mt_cuda_err_name(r->ki->errdomain, r->ret) : NULL;
	struct top top = { .pid = ev->pid, .gpu = r->dev_type == MT_DT_CUDA };
	struct mt_sample_cal cal;
	char dev[32], b[32];

	mt_format_dev(dev, sizeof(dev), r->dev_type, r->dev_index);
	fprintf(out, "# OOM pid=%u tid=%u dev=%s at %.6f s: %s", ev->pid,
		ev->tid, dev, (double)(ev->ts - st->t0) / 1e9, r->event);
	if (r->size_state == MT_SIZE_KNOWN)
		fprintf(out, " size=%" PRIu64 " (%s)", (uint64_t)r->size,
			mt_format_bytes(b, sizeof(b), r->size));
	if (r->role == MT_ROLE_OOM)
		fprintf(out, ": the caching allocator gave up\n");
	else
		fprintf(out, " failed: %s (%d)\n", err ? err : "error", r->ret);
	fprintf(out, "#  ");
	mt_site_print_module(site, out);
	if (site->node) {
		struct mt_esc e = { 0 };

		fprintf(out, " node=%s", mt_esc(&e, site->node, MT_ESC_FIELD));
	}
	fprintf(out, "\n");
	print_state(r, st->sum, out);
	if (st->stacks && site->depth) {
		fprintf(out, "#   stack:\n");
		mt_site_print_stack(site, "#\t", out);
	}
	mt_sites_foreach(st->sites, pick_top, &top);
	/* the counts a sampled trace estimates, kept to the process's live */
	mt_sample_cal_init(&cal, st->live, top.walked, top.est);
	if (top.n)
		fprintf(out, "#   top live sites:\n");
	for (size_t i = 0; i < top.n; i++)
		print_site_line(top.v[i], &cal, out);
}

/*
 * The real runtime makes each cudaMalloc and cudaFree through the driver's
 * probed cuMemAlloc_v2 and cuMemFree_v2, whose events come first (each is
 * sent at its return). Under a runtime's call followed, a driver call is
 * that call's own: not an allocation, a failure or a segment of its own
 * (the stand-in's runtime never calls them; the GPU's does).
 */
static bool inner_call(const struct pending *p, const struct mt_call *r)
{
	return p->space == MT_SP_CUDART && r->ki->space == MT_SP_DRIVER;
}

/*
 * The runtime's failure just after its driver's, same thread and size:
 * one allocation, seen at two layers; the runtime's is followed
 */
static bool outer_of(const struct pending *p, const struct mt_call *r)
{
	return p->space == MT_SP_DRIVER && r->ki->space == MT_SP_CUDART &&
	       r->role == MT_ROLE_ALLOC && r->failed &&
	       r->size_state == MT_SIZE_KNOWN && r->size == p->size;
}

static void follow_retry(struct mt_oom *o, const struct mt_call *r,
			 struct pending *p)
{
	if (is_segment_free(r)) {
		p->freed++;
		if (r->size_state == MT_SIZE_KNOWN)
			p->freed_bytes += r->size;
		return;
	}
	/* the allocator retries at once: anything else ends the wait */
	if (r->role != MT_ROLE_ALLOC || r->event != p->event ||
	    r->size_state != MT_SIZE_KNOWN || r->size != p->size) {
		p->tid = 0;
		return;
	}
	o->retries++;
	o->show |= SHOW_RETRY;
	o->freed = p->freed;
	o->freed_bytes = p->freed_bytes;
	p->tid = 0;
}

static void print_retry(const struct mt_oom *o, const struct mt_call *r,
			FILE *out)
{
	char b[32];

	fprintf(out,
		"# OOM retry pid=%u tid=%u: %" PRIu64 " cached segments freed "
		"(%s), then %s size=%" PRIu64 " again: %s "
		"num_alloc_retries=%" PRIu64 "\n",
		r->ev->pid, r->ev->tid, (uint64_t)o->freed,
		mt_format_bytes(b, sizeof(b), o->freed_bytes), r->event,
		(uint64_t)r->size, r->failed ? "failed" : "ok",
		(uint64_t)o->retries);
}

/* --trace-exceptions: a Python exception of a type asked for, raised */
static void print_raise(const struct mt_call *r, const struct mt_site *site,
			__u64 t0, bool stacks, FILE *out)
{
	struct mt_esc e = { 0 };

	fprintf(out, "# EXCEPTION pid=%u tid=%u at %.6f s: %s raised",
		r->ev->pid, r->ev->tid, (double)(r->ev->ts - t0) / 1e9,
		mt_esc(&e, site->detail ? site->detail : "?", MT_ESC_FIELD));
	mt_site_print_module(site, out);
	fputc('\n', out);
	if (stacks)
		mt_site_print_stack(site, "#\t", out);
}

void mt_oom_event(struct mt_oom *o, const struct mt_call *r,
		  const struct mt_site *site)
{
	struct pending *p = &o->p[r->ev->tid % PENDING];
	bool mine = p->tid == r->ev->tid;
	bool retry = mine && r->role == MT_ROLE_ALLOC && r->event == p->event;
	bool again = mine && outer_of(p, r);

	o->show = 0;
	if (r->ev->kind == MT_K_PY_RAISE) {
		o->raised++;
		if (mt_oom_is_raise(r, site) && !o->raised_oom++)
			o->raised_oom_site = site;
		o->show = SHOW_RAISE;
		return;
	}
	if (mine && inner_call(p, r))
		return;
	if (mine)
		follow_retry(o, r, p);
	if (r->role == MT_ROLE_OOM) {
		o->gave_up++;
		o->show |= SHOW_BLOCK;
		return;
	}
	/* other failures are failed calls: the `# failed` lines name them */
	if (r->role != MT_ROLE_ALLOC || !r->failed ||
	    !mt_cuda_err_is_oom(r->ki->errdomain, r->ret) || retry)
		return;
	if (!again)
		o->failures++;
	o->show |= SHOW_BLOCK;
	*p = (struct pending){ .tid = r->ev->tid,
			       .event = r->event,
			       .space = r->ki->space,
			       .size = r->size_state == MT_SIZE_KNOWN ?
					       r->size :
					       0 };
}

void mt_oom_print_event(const struct mt_oom *o, const struct mt_call *r,
			const struct mt_site *site,
			const struct mt_oom_state *st, FILE *out)
{
	if (o->show & SHOW_RAISE)
		print_raise(r, site, st->t0, st->stacks, out);
	if (o->show & SHOW_RETRY)
		print_retry(o, r, out);
	if (o->show & SHOW_BLOCK)
		print_block(r, site, st, out);
}

void mt_oom_counts(const struct mt_oom *o, struct mt_oom_counts *c)
{
	*c = (struct mt_oom_counts){ .failures = o->failures,
				     .retries = o->retries,
				     .gave_up = o->gave_up,
				     .raised = o->raised,
				     .raised_oom = o->raised_oom,
				     .raised_oom_site = o->raised_oom_site };
}

void mt_oom_print(const struct mt_oom *o, FILE *out)
{
	fprintf(out,
		"# oom failed_allocations=%" PRIu64
		" num_alloc_retries=%" PRIu64 " allocator_gave_up=%" PRIu64
		" exceptions=%" PRIu64 " out_of_memory_errors=%" PRIu64 "\n",
		(uint64_t)o->failures, (uint64_t)o->retries,
		(uint64_t)o->gave_up, (uint64_t)o->raised,
		(uint64_t)o->raised_oom);
}
