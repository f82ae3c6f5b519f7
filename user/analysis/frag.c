// SPDX-License-Identifier: GPL-2.0
/*
 * Per (process, CUDA device): the caching allocator's waste, reserved -
 * allocated, held from one c10 event to the next, so that its means are
 * weighted by time; a fixed set of fine time buckets keeps the series
 * bounded, halving its resolution when the trace outgrows it. At the end
 * the live table tells which segments hold few live blocks. Segments are
 * the caching allocator's ranges only: what another library (cuBLAS's
 * workspaces, NCCL's buffers) took from the runtime or the driver is no
 * memory of PyTorch's, and is listed apart, by library.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "event/format.h"
#include "analysis/frag.h"
#include "analysis/sites.h"
#include "lib/escape.h"

#define FRAG_DEVS 64 /* (process, device) accounts */
#define FRAG_PHASES 16 /* per account, the last one collects the rest */
#define FRAG_FINE 128 /* fine buckets; the printed series has FRAG_SERIES */
#define FRAG_SERIES 10
#define FRAG_W0 1024 /* ns, first width of a fine bucket */
#define FRAG_TOP_SEGS 10
#define FRAG_LOW_UTIL 0.5 /* segments used less than this are listed */

/* phases are interned; this one is not, so it never equals a real one */
static const char other_phase[] = "[other]";

struct frag_phase {
	const char *phase; /* NULL: no phase known */
	double ns, waste_ns, ratio_ns; /* time, and waste and ratio over it */
};

struct frag_dev {
	__u32 pid;
	int index;
	__u64 events;
	__u64 first_ts, last_ts;
	/* what the last event left, held until the next one */
	__u64 waste, allocated, reserved;
	double ratio;
	const char *phase;
	double ns, waste_ns, ratio_ns;
	__u64 max_waste, max_waste_ts, max_waste_reserved;
	double max_ratio;
	__u64 max_ratio_ts, max_ratio_reserved;
	struct frag_phase phases[FRAG_PHASES];
	int nphases;
	/* fine[i]: max waste over [first + i * width, first + (i+1) * width) */
	__u64 width;
	int filled; /* fine[0..filled] hold values */
	__u64 fine[FRAG_FINE];
};

struct mt_frag {
	struct frag_dev devs[FRAG_DEVS];
	int ndevs;
	__u64 untracked; /* events of accounts that did not fit */
};

struct mt_frag *mt_frag_new(void)
{
	return calloc(1, sizeof(struct mt_frag));
}

void mt_frag_free(struct mt_frag *f)
{
	free(f);
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

static struct frag_dev *frag_dev(struct mt_frag *f, __u32 pid, int index)
{
	struct frag_dev *d;

	for (int i = 0; i < f->ndevs; i++)
		if (f->devs[i].pid == pid && f->devs[i].index == index)
			return &f->devs[i];
	if (f->ndevs == FRAG_DEVS)
		return NULL;
	d = &f->devs[f->ndevs++];
	d->pid = pid;
	d->index = index;
	return d;
}

static struct frag_phase *frag_phase(struct frag_dev *d, const char *phase)
{
	struct frag_phase *p;

	for (int i = 0; i < d->nphases; i++)
		if (d->phases[i].phase == phase)
			return &d->phases[i];
	if (d->nphases < FRAG_PHASES - 1) {
		p = &d->phases[d->nphases++];
		p->phase = phase;
		return p;
	}
	/* full: the last slot collects the phases that came later */
	p = &d->phases[FRAG_PHASES - 1];
	p->phase = other_phase;
	d->nphases = FRAG_PHASES;
	return p;
}

/* halve the resolution until offset off falls in a fine bucket */
static void fit_fine(struct frag_dev *d, __u64 off)
{
	while (off / d->width >= FRAG_FINE) {
		for (int i = 0; 2 * i <= d->filled; i++) {
			__u64 hi =
				2 * i + 1 <= d->filled ? d->fine[2 * i + 1] : 0;

			d->fine[i] = max_u64(d->fine[2 * i], hi);
		}
		d->filled /= 2;
		d->width *= 2;
	}
}

static void note_series(struct frag_dev *d, __u64 ts, __u64 waste)
{
	__u64 off = ts - d->first_ts;
	int b;

	fit_fine(d, off);
	b = (int)(off / d->width);
	if (b == d->filled) {
		d->fine[b] = max_u64(d->fine[b], waste);
		return;
	}
	/* the buckets since the last event held its waste */
	for (int i = d->filled + 1; i < b; i++)
		d->fine[i] = d->waste;
	d->fine[b] =
		off > (__u64)b * d->width ? max_u64(d->waste, waste) : waste;
	d->filled = b;
}

/* the allocator of d holds allocated and reserved from ts on */
static void frag_point(struct frag_dev *d, __u64 ts, __u64 allocated,
		       __u64 reserved, const char *phase)
{
	__u64 waste = reserved > allocated ? reserved - allocated : 0;
	double ratio = reserved ? (double)waste / (double)reserved : 0.0;

	if (!d->events) {
		d->first_ts = ts;
		d->width = FRAG_W0;
		d->fine[0] = waste;
		d->max_waste_ts = d->max_ratio_ts = ts;
	} else {
		/* events of several CPUs may arrive slightly out of order */
		double ns;
		struct frag_phase *p = frag_phase(d, d->phase);

		if (ts < d->last_ts)
			ts = d->last_ts;
		ns = (double)(ts - d->last_ts);
		d->ns += ns;
		d->waste_ns += (double)d->waste * ns;
		d->ratio_ns += d->ratio * ns;
		p->ns += ns;
		p->waste_ns += (double)d->waste * ns;
		p->ratio_ns += d->ratio * ns;
		note_series(d, ts, waste);
	}
	if (waste > d->max_waste || !d->events) {
		d->max_waste = waste;
		d->max_waste_ts = ts;
		d->max_waste_reserved = reserved;
	}
	if (ratio > d->max_ratio || !d->events) {
		d->max_ratio = ratio;
		d->max_ratio_ts = ts;
		d->max_ratio_reserved = reserved;
	}
	d->last_ts = ts;
	d->waste = waste;
	d->ratio = ratio;
	d->allocated = allocated;
	d->reserved = reserved;
	d->phase = phase;
}

void mt_frag_event(struct mt_frag *f, const struct mt_call *r,
		   const char *phase)
{
	struct frag_dev *d;

	/* CPU reports (MapAllocator) carry no totals worth the name */
	if (!r->has_totals || r->dev_type != MT_DT_CUDA)
		return;
	d = frag_dev(f, r->ev->pid, r->dev_index);
	if (!d) {
		f->untracked++;
		return;
	}
	frag_point(d, r->ev->ts, r->allocated, r->reserved, phase);
	d->events++;
}

void mt_frag_exec(struct mt_frag *f, __u32 pid, __u64 ts)
{
	for (int i = 0; i < f->ndevs; i++)
		if (f->devs[i].pid == pid && f->devs[i].events)
			frag_point(&f->devs[i], ts, 0, 0, f->devs[i].phase);
}

static double since(__u64 ts, __u64 t0)
{
	return ts >= t0 ? (double)(ts - t0) / 1e9 : 0.0;
}

/* time-weighted mean, or the only value there is */
static double mean(double sum_ns, double ns, double last)
{
	return ns > 0 ? sum_ns / ns : last;
}

static void print_series(const struct frag_dev *d, const char *dev, FILE *out)
{
	__u64 span = d->last_ts - d->first_ts;

	fprintf(out,
		"# frag pid=%u dev=%s series step=%.3fs waste_max_mib=", d->pid,
		dev, (double)span / FRAG_SERIES / 1e9);
	/* one event, or all at one time: one value */
	for (int c = 0; c < (span ? FRAG_SERIES : 1); c++) {
		__u64 a = span * c / FRAG_SERIES,
		      b = span * (c + 1) / FRAG_SERIES;
		int lo = (int)(a / d->width);
		int hi = c == FRAG_SERIES - 1 ? d->filled :
			 b > a		      ? (int)((b - 1) / d->width) :
						lo;
		__u64 m = 0;

		if (hi > d->filled)
			hi = d->filled;
		for (int i = lo; i <= hi; i++)
			m = max_u64(m, d->fine[i]);
		fprintf(out, "%s%.1f", c ? "," : "", (double)m / (1 << 20));
	}
	fputc('\n', out);
}

static void print_dev(const struct frag_dev *d, __u64 t0, FILE *out)
{
	char dev[32];

	mt_format_dev(dev, sizeof(dev), MT_DT_CUDA, d->index);
	fprintf(out,
		"# frag pid=%u dev=%s events=%" PRIu64
		" span=%.3fs waste_mean=%.0f ratio_mean=%.1f%% waste_max=%" PRIu64
		" waste_max_at=+%.3fs waste_max_reserved=%" PRIu64
		" ratio_max=%.1f%% ratio_max_at=+%.3fs ratio_max_reserved=%" PRIu64
		" waste_last=%" PRIu64 " reserved_last=%" PRIu64
		" allocated_last=%" PRIu64 "\n",
		d->pid, dev, (uint64_t)d->events,
		(double)(d->last_ts - d->first_ts) / 1e9,
		mean(d->waste_ns, d->ns, (double)d->waste),
		100 * mean(d->ratio_ns, d->ns, d->ratio),
		(uint64_t)d->max_waste, since(d->max_waste_ts, t0),
		(uint64_t)d->max_waste_reserved, 100 * d->max_ratio,
		since(d->max_ratio_ts, t0), (uint64_t)d->max_ratio_reserved,
		(uint64_t)d->waste, (uint64_t)d->reserved,
		(uint64_t)d->allocated);
	/* one phase, no phase: the lines would repeat the mean above */
	for (int i = 0; i < d->nphases; i++) {
		const struct frag_phase *p = &d->phases[i];
		struct mt_esc e = { 0 };

		if (d->nphases == 1 && !p->phase)
			break;
		fprintf(out,
			"# frag pid=%u dev=%s phase=%s time=%.3fs waste_mean=%.0f ratio_mean=%.1f%%\n",
			d->pid, dev,
			mt_esc(&e, p->phase ? p->phase : "-", MT_ESC_FIELD),
			p->ns / 1e9, mean(p->waste_ns, p->ns, 0),
			100 * mean(p->ratio_ns, p->ns, 0));
	}
	print_series(d, dev, out);
}

/* a range taken from CUDA, and the live caching-allocator blocks in it */
struct segment {
	const struct mt_live *e;
	__u64 used, blocks;
	bool ours; /* the caching allocator's (mt_caller_is_allocator) */
};

struct segments {
	struct segment *v;
	size_t n, cap;
	bool oom;
	__u64 blocks, outside; /* live blocks; of them in no segment */
};

static bool is_segment(const struct mt_live *e)
{
	return e->space == MT_SP_CUDART || e->space == MT_SP_DRIVER ||
	       e->space == MT_SP_VAMAP;
}

static void collect_segment(const struct mt_live *e, void *ctx)
{
	struct segments *s = ctx;
	struct segment *v;

	if (!is_segment(e) || !e->size || s->oom)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;

		v = realloc(s->v, cap * sizeof(*v));
		if (!v) {
			s->oom = true;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] =
		(struct segment){ .e = e,
				  .ours = mt_caller_is_allocator(e->caller) };
}

static int by_start(const void *a, const void *b)
{
	const struct mt_live *x = ((const struct segment *)a)->e;
	const struct mt_live *y = ((const struct segment *)b)->e;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ptr != y->ptr)
		return x->ptr < y->ptr ? -1 : 1;
	/* the larger of two ranges at one address first: it is kept */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	/* of two equal, the runtime's, whose driver call the other is */
	return (x->space != MT_SP_CUDART) - (y->space != MT_SP_CUDART);
}

/*
 * The real runtime makes each cudaMalloc through the probed cuMemAlloc_v2
 * (its caller the runtime): keep one range per address, the outer one,
 * the allocator's if either call was.
 */
static void drop_nested(struct segments *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++) {
		const struct mt_live *e = s->v[i].e;

		if (k) {
			struct segment *p = &s->v[k - 1];

			if (p->e->pid == e->pid &&
			    e->ptr - p->e->ptr < p->e->size) {
				p->ours |= s->v[i].ours;
				continue;
			}
		}
		s->v[k++] = s->v[i];
	}
	s->n = k;
}

/*
 * Keep the allocator's segments in s->v[0..s->n); the others, which
 * s->v[s->n..s->n + *nother) then holds, are another library's
 */
static void split_others(struct segments *s, size_t *nother)
{
	size_t k = 0, n = s->n;

	*nother = 0;
	for (size_t i = 0; i < n; i++) {
		if (s->v[i].ours) {
			struct segment t = s->v[k];

			s->v[k++] = s->v[i];
			s->v[i] = t;
		}
	}
	s->n = k;
	*nother = n - k;
}

static int by_library(const void *a, const void *b)
{
	const struct mt_live *x = ((const struct segment *)a)->e;
	const struct mt_live *y = ((const struct segment *)b)->e;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	/* interned: one pointer a library; any order of them will do */
	return (x->caller > y->caller) - (x->caller < y->caller);
}

/*
 * Device memory other libraries took from the runtime or the driver,
 * per process, device and library: not PyTorch's reserved memory, and
 * not in segments=
 */
static void print_others(struct segment *v, size_t n, FILE *out)
{
	char dev[32];

	if (n)
		qsort(v, n, sizeof(*v), by_library);
	for (size_t i = 0, j; i < n; i = j) {
		const struct mt_live *e = v[i].e;
		__u64 bytes = 0;

		for (j = i; j < n && !by_library(&v[i], &v[j]); j++)
			bytes += v[j].e->size;
		fprintf(out,
			"# frag other_library pid=%u dev=%s caller=%s "
			"ranges=%zu bytes=%" PRIu64 "\n",
			e->pid,
			mt_format_dev(dev, sizeof(dev), e->dev_type, e->dev),
			e->caller, j - i, (uint64_t)bytes);
	}
}

/* the last segment starting at or before ptr in pid, or s->n */
static size_t find_segment(const struct segments *s, __u32 pid, __u64 ptr)
{
	size_t lo = 0, hi = s->n;

	/* first index whose (pid, start) is above (pid, ptr) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mt_live *e = s->v[mid].e;

		if (e->pid < pid || (e->pid == pid && e->ptr <= ptr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || s->v[lo - 1].e->pid != pid)
		return s->n;
	return lo - 1;
}

static void count_block(const struct mt_live *e, void *ctx)
{
	struct segments *s = ctx;
	__u64 end = e->ptr + e->size;
	size_t i;

	if (e->space != MT_SP_C10 || e->dev_type != MT_DT_CUDA)
		return;
	s->blocks++;
	i = find_segment(s, e->pid, e->ptr);
	if (i == s->n || e->ptr - s->v[i].e->ptr >= s->v[i].e->size) {
		s->outside++;
		return;
	}
	/* a block of an expandable segment may span several mapped ranges */
	for (; i < s->n && s->v[i].e->pid == e->pid && s->v[i].e->ptr < end;
	     i++) {
		const struct mt_live *g = s->v[i].e;
		__u64 lo = max_u64(g->ptr, e->ptr);
		__u64 hi = g->ptr + g->size < end ? g->ptr + g->size : end;

		if (hi <= lo)
			continue;
		s->v[i].used += hi - lo;
		s->v[i].blocks++;
	}
}

static __u64 unused(const struct segment *g)
{
	return g->e->size - g->used;
}

static int by_unused_desc(const void *a, const void *b)
{
	__u64 x = unused(a), y = unused(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

static bool low_util(const struct segment *g)
{
	return (double)g->used < FRAG_LOW_UTIL * (double)g->e->size;
}

/* the ranges alive, one per address, by process and start; false: OOM */
static bool gather(const struct mt_livetable *live, struct segments *s)
{
	mt_live_foreach(live, collect_segment, s);
	if (s->oom)
		return false;
	/* qsort must not see the NULL of an empty list */
	if (s->n) {
		qsort(s->v, s->n, sizeof(*s->v), by_start);
		drop_nested(s);
	}
	return true;
}

int mt_frag_ranges(const struct mt_livetable *live,
		   void (*fn)(const struct mt_live *e, bool ours, void *ctx),
		   void *ctx)
{
	struct segments s = { 0 };
	bool ok = gather(live, &s);

	for (size_t i = 0; ok && i < s.n; i++)
		fn(s.v[i].e, s.v[i].ours, ctx);
	free(s.v);
	return ok ? 0 : -ENOMEM;
}

static void print_segments(const struct mt_livetable *live, __u64 t0, FILE *out)
{
	struct segments s = { 0 };
	__u64 bytes = 0, used = 0, low_unused = 0;
	size_t low = 0, shown = 0, nother;
	char dev[32];

	if (!gather(live, &s)) {
		fprintf(out, "# frag segments: out of memory listing %zu\n",
			s.n);
		free(s.v);
		return;
	}
	split_others(&s, &nother);
	mt_live_foreach(live, count_block, &s);
	/* low-utilisation segments first, by the bytes they leave unused */
	for (size_t i = 0; i < s.n; i++) {
		bytes += s.v[i].e->size;
		used += s.v[i].used;
		if (low_util(&s.v[i])) {
			low_unused += unused(&s.v[i]);
			s.v[low++] = s.v[i];
		}
	}
	if (low)
		qsort(s.v, low, sizeof(*s.v), by_unused_desc);
	fprintf(out,
		"# frag segments=%zu bytes=%" PRIu64 " used=%" PRIu64
		" blocks=%" PRIu64 " blocks_outside=%" PRIu64
		" under_50pct=%zu unused_under_50pct=%" PRIu64 "\n",
		s.n, (uint64_t)bytes, (uint64_t)used, (uint64_t)s.blocks,
		(uint64_t)s.outside, low, (uint64_t)low_unused);
	for (; shown < low && shown < FRAG_TOP_SEGS; shown++) {
		const struct segment *g = &s.v[shown];
		const struct mt_site *site = g->e->site;

		fprintf(out,
			"# frag segment pid=%u dev=%s start=0x%" PRIx64
			" size=%" PRIu64 " used=%" PRIu64
			" util=%.1f%% blocks=%" PRIu64 " unused=%" PRIu64
			" event=%s at=+%.3fs",
			g->e->pid,
			mt_format_dev(dev, sizeof(dev), g->e->dev_type,
				      g->e->dev),
			(uint64_t)g->e->ptr, (uint64_t)g->e->size,
			(uint64_t)g->used,
			100.0 * (double)g->used / (double)g->e->size,
			(uint64_t)g->blocks, (uint64_t)unused(g),
			g->e->event ? g->e->event : "?", since(g->e->ts, t0));
		if (site)
			mt_site_print_module(site, out);
		fputc('\n', out);
	}
	if (shown < low)
		fprintf(out, "# frag segment ... %zu more under 50%%\n",
			low - shown);
	print_others(s.v + s.n, nother, out);
	free(s.v);
}

void mt_frag_print(const struct mt_frag *f, const struct mt_livetable *live,
		   __u64 t0, FILE *out)
{
	/* segments are half empty by design without a caching allocator */
	if (!f->ndevs) {
		fprintf(out, "# frag no c10 events\n");
		return;
	}
	for (int i = 0; i < f->ndevs; i++)
		print_dev(&f->devs[i], t0, out);
	if (f->untracked)
		fprintf(out,
			"# frag untracked_events=%" PRIu64
			" (more than %d process-device accounts)\n",
			(uint64_t)f->untracked, FRAG_DEVS);
	print_segments(live, t0, out);
}
