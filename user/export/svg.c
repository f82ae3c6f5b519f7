// SPDX-License-Identifier: GPL-2.0
/*
 * --export svg: memory over time, one plot per (process, device), stacked
 * in one SVG; past MAX_PLOTS the ones with the highest reserved peak are
 * drawn and the rest named in a note. Each plot shows:
 *
 *   allocated  c10's running total where its caching allocator reports one
 *              (CUDA), else the live bytes of the device's allocations we
 *              saw (CPU tensors; cudaMalloc without PyTorch)
 *   reserved   c10's reserved total, else the same live bytes: there is
 *              no cache between them
 *   active     c10 reports no active total (blocks freed but still in use
 *              by a stream), so it is drawn as allocated, and the legend
 *              says so
 *
 * behind them the process's phases as bands, each from a phase's first event
 * to its last (the time between two phases, and a tenth of a second or more
 * without an event, such as a sleep between steps, is no phase's), a line
 * where each step's forward starts and where its backward starts (an eval
 * loop, forward without backward, gets one forward marker), and the
 * allocated peak with the module, phase and innermost frame of the
 * allocation that reached it. Seconds since the first event, bytes in KiB, MiB or GiB.
 *
 * A sampled trace (--sample-bytes): the curves are exact as ever; the
 * bands and markers come from the sampled events (the others know no
 * phase), a peak made by an event without a stack says "stack not
 * sampled", and the title says how the trace was sampled (its <desc> all
 * of it).
 *
 * Bounded memory: each plot keeps NBUCKETS time buckets with the min,
 * max and last value in each; when the trace outgrows them, neighbours
 * merge and the bucket width doubles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "analysis/sample.h"
#include "analysis/session.h"
#include "export/export.h"

#define NBUCKETS 512 /* even: neighbours merge in pairs */
#define MAX_SERIES 32 /* (process, device) accounts followed */
#define MAX_PROCS 32
#define MAX_PLOTS 4
#define NPHASES 8 /* phases told apart per process; more get no band */
#define START_WIDTH 100000ULL /* ns per bucket: 51 ms before merging */
/*
 * Between two events of one phase, the phase went on if the gap is shorter
 * than this: longer than an operator runs without allocating, as short as
 * a sleep or a wait for data between steps.
 */
#define PHASE_GAP_NS (100 * 1000000ULL)

/* layout, in pixels */
#define W 1000
#define HEAD 80
#define PL 84 /* left of the plot area: room for the byte labels */
#define PR 24
#define PW (W - PL - PR)
#define PLOT_TITLE 30
#define PH 220
#define PLOT_H (PLOT_TITLE + PH + 48)
#define NOTE_H 22
#define OWNER_CHARS 120 /* of the peak's owner line */

struct bucket {
	__u64 amin, amax, alast; /* allocated */
	__u64 rmin, rmax, rlast; /* reserved */
	bool has;
};

/* one (process, device) account */
struct series {
	__u32 pid;
	enum mt_dev_type type;
	int index;
	char comm[MT_COMM_LEN + 1];
	bool c10; /* values from c10's totals (once seen, only those) */
	bool seen;
	__u64 alloc, res; /* now */
	__u64 peak, peak_t, rpeak;
	const struct mt_site *peak_site; /* the allocation at the peak */
	const char *peak_event;
	bool peak_bare; /* its stack not walked (--sample-bytes) */
	struct bucket b[NBUCKETS];
};

/* a marker's moment, t + 1 (0: none), and the step it starts */
struct mark {
	__u64 t1;
	__u32 step;
};

/* the phases and step markers of one process */
struct proc {
	__u32 pid;
	const char *names[NPHASES]; /* interned: pointers compare */
	int nnames;
	int cur; /* index of the phase now; -1: none yet, or past NPHASES */
	__u64 since; /* accounted to cur up to here */
	bool in_fwd; /* a forward started and no backward yet */
	/* per bucket and phase: the time in it, its first and last event + 1 */
	__u64 ns[NBUCKETS][NPHASES];
	__u64 lo[NBUCKETS][NPHASES], hi[NBUCKETS][NPHASES];
	struct mark fwd[NBUCKETS], bwd[NBUCKETS];
};

struct svgx {
	FILE *f;
	__u64 width; /* ns per bucket */
	__u64 end; /* the last event, ns since the first */
	struct series *ser[MAX_SERIES];
	size_t nser;
	struct proc *procs[MAX_PROCS];
	size_t nprocs;
	__u64 unfollowed; /* events of accounts or processes past the bound */
	int err; /* -ENOMEM once a plot could not be made */
};

static void *open_svg(FILE *f, const struct mt_export_conf *c, char *err,
		      size_t errlen)
{
	struct svgx *x = calloc(1, sizeof(*x));

	if (!x) {
		snprintf(err, errlen, "export svg: %s", strerror(ENOMEM));
		return NULL;
	}
	x->f = f;
	x->width = START_WIDTH;
	return x;
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static struct bucket merge_buckets(const struct bucket *l,
				   const struct bucket *r)
{
	struct bucket m = *l;

	if (!r->has)
		return m;
	if (!l->has)
		return *r;
	m.amin = min_u64(l->amin, r->amin);
	m.amax = max_u64(l->amax, r->amax);
	m.rmin = min_u64(l->rmin, r->rmin);
	m.rmax = max_u64(l->rmax, r->rmax);
	m.alast = r->alast;
	m.rlast = r->rlast;
	return m;
}

static void halve_series(struct series *sr)
{
	for (size_t i = 0; i < NBUCKETS / 2; i++)
		sr->b[i] = merge_buckets(&sr->b[2 * i], &sr->b[2 * i + 1]);
	memset(&sr->b[NBUCKETS / 2], 0, sizeof(sr->b) / 2);
}

static void halve_proc(struct proc *p)
{
	for (size_t i = 0; i < NBUCKETS / 2; i++) {
		for (int k = 0; k < NPHASES; k++) {
			const size_t l = 2 * i, r = 2 * i + 1;

			p->lo[i][k] = p->lo[l][k] ? p->lo[l][k] : p->lo[r][k];
			p->hi[i][k] = p->hi[r][k] ? p->hi[r][k] : p->hi[l][k];
			p->ns[i][k] = p->ns[l][k] + p->ns[r][k];
		}
		/* the earlier marker of the two */
		p->fwd[i] =
			p->fwd[2 * i].t1 ? p->fwd[2 * i] : p->fwd[2 * i + 1];
		p->bwd[i] =
			p->bwd[2 * i].t1 ? p->bwd[2 * i] : p->bwd[2 * i + 1];
	}
	memset(&p->ns[NBUCKETS / 2], 0, sizeof(p->ns) / 2);
	memset(&p->lo[NBUCKETS / 2], 0, sizeof(p->lo) / 2);
	memset(&p->hi[NBUCKETS / 2], 0, sizeof(p->hi) / 2);
	memset(&p->fwd[NBUCKETS / 2], 0, sizeof(p->fwd) / 2);
	memset(&p->bwd[NBUCKETS / 2], 0, sizeof(p->bwd) / 2);
}

/* widen the buckets until t falls in one */
static void fit(struct svgx *x, __u64 t)
{
	while (t / x->width >= NBUCKETS) {
		for (size_t i = 0; i < x->nser; i++)
			halve_series(x->ser[i]);
		for (size_t i = 0; i < x->nprocs; i++)
			halve_proc(x->procs[i]);
		x->width *= 2;
	}
}

static struct proc *proc_of(struct svgx *x, __u32 pid)
{
	struct proc *p;

	for (size_t i = 0; i < x->nprocs; i++)
		if (x->procs[i]->pid == pid)
			return x->procs[i];
	if (x->nprocs == MAX_PROCS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		x->err = -ENOMEM;
		return NULL;
	}
	p->pid = pid;
	p->cur = -1;
	x->procs[x->nprocs++] = p;
	return p;
}

/* the time from p->since to t belongs to the phase it was in */
static void account(struct svgx *x, struct proc *p, __u64 t)
{
	__u64 a = p->since;

	while (p->cur >= 0 && a < t) {
		__u64 i = a / x->width;
		__u64 end = min_u64((i + 1) * x->width, t);

		p->ns[i][p->cur] += end - a;
		a = end;
	}
}

static int phase_index(struct proc *p, const char *phase)
{
	for (int i = 0; i < p->nnames; i++)
		if (p->names[i] == phase)
			return i;
	if (p->nnames == NPHASES)
		return -1;
	p->names[p->nnames] = phase;
	return p->nnames++;
}

static void set_mark(struct mark *m, __u64 t, __u32 step)
{
	if (!m->t1)
		*m = (struct mark){ .t1 = t + 1, .step = step };
}

static void phase_event(struct svgx *x, const struct mt_session *s, __u32 pid,
			const char *phase, __u64 t)
{
	struct proc *p = proc_of(x, pid);
	__u64 i = t / x->width;
	int k;

	if (!p)
		return;
	/*
	 * From an event to the next of the same phase the phase went on,
	 * unless nothing happened for PHASE_GAP_NS: optimizer.step() before
	 * a sleep and zero_grad() after it are both the optimizer's, and
	 * the sleep is not. Between two phases, somewhere in the gap, one
	 * ended and the other began: the gap is neither's.
	 */
	k = phase_index(p, phase);
	if (k == p->cur && t - p->since < PHASE_GAP_NS)
		account(x, p, t);
	p->cur = k;
	p->since = t;
	if (k >= 0) {
		if (!p->lo[i][k])
			p->lo[i][k] = t + 1;
		p->hi[i][k] = t + 1;
	}
	if (!strcmp(phase, "forward") && !p->in_fwd) {
		p->in_fwd = true;
		set_mark(&p->fwd[i], t, mt_session_step(s, pid));
	} else if (!strcmp(phase, "backward") && p->in_fwd) {
		p->in_fwd = false;
		set_mark(&p->bwd[i], t, mt_session_step(s, pid));
	}
}

static struct series *series_of(struct svgx *x, const struct mt_call *r)
{
	struct series *sr;

	for (size_t i = 0; i < x->nser; i++) {
		sr = x->ser[i];
		if (sr->pid == r->ev->pid && sr->type == r->dev_type &&
		    sr->index == r->dev_index)
			return sr;
	}
	if (x->nser == MAX_SERIES) {
		x->unfollowed++;
		return NULL;
	}
	sr = calloc(1, sizeof(*sr));
	if (!sr) {
		x->err = -ENOMEM;
		return NULL;
	}
	sr->pid = r->ev->pid;
	sr->type = r->dev_type;
	sr->index = r->dev_index;
	snprintf(sr->comm, sizeof(sr->comm), "%.*s", MT_COMM_LEN, r->ev->comm);
	x->ser[x->nser++] = sr;
	return sr;
}

/* bytes live on the event's device, every layer but c10's own and maps */
static __u64 live_bytes(const struct mt_session *s, const struct mt_call *r)
{
	__u64 sum = 0;

	for (size_t i = 0; i < s->sum.ndevs; i++) {
		const struct mt_dev_stat *d = &s->sum.devs[i];

		/* a cuMemMap range maps a cuMemCreate handle: counted there */
		if (d->pid == r->ev->pid && d->type == r->dev_type &&
		    d->index == r->dev_index && d->space != MT_SP_C10 &&
		    d->space != MT_SP_VAMAP)
			sum += d->cur;
	}
	return sum;
}

static void add_point(struct svgx *x, struct series *sr, __u64 t, __u64 a,
		      __u64 res)
{
	struct bucket *b = &sr->b[t / x->width];

	if (!b->has) {
		/* the bucket starts at the value before this event */
		__u64 a0 = sr->seen ? sr->alloc : a,
		      r0 = sr->seen ? sr->res : res;

		*b = (struct bucket){ .amin = a0,
				      .amax = a0,
				      .rmin = r0,
				      .rmax = r0,
				      .has = true };
	}
	b->amin = min_u64(b->amin, a);
	b->amax = max_u64(b->amax, a);
	b->rmin = min_u64(b->rmin, res);
	b->rmax = max_u64(b->rmax, res);
	b->alast = a;
	b->rlast = res;
	sr->seen = true;
	sr->alloc = a;
	sr->res = res;
	sr->rpeak = max_u64(sr->rpeak, res);
}

static void event_svg(void *p, const struct mt_session *s,
		      const struct mt_call *r, const struct mt_site *site)
{
	struct svgx *x = p;
	__u64 t = r->ev->ts > s->t0 ? r->ev->ts - s->t0 : 0;
	bool totals = r->has_totals && r->ki->space == MT_SP_C10;
	struct series *sr;
	__u64 a, res;

	if (x->err)
		return;
	fit(x, t);
	x->end = max_u64(x->end, t);
	if (site->phase)
		phase_event(x, s, r->ev->pid, site->phase, t);
	if (r->dev_type == MT_DT_NONE)
		return;
	if (!totals && (r->failed ||
			(r->role != MT_ROLE_ALLOC && r->role != MT_ROLE_FREE)))
		return;
	sr = series_of(x, r);
	if (!sr)
		return;
	if (totals && !sr->c10) {
		/* what came before were c10's own segments: start again */
		*sr = (struct series){ .pid = sr->pid,
				       .type = sr->type,
				       .index = sr->index,
				       .c10 = true };
		snprintf(sr->comm, sizeof(sr->comm), "%.*s", MT_COMM_LEN,
			 r->ev->comm);
	} else if (!totals && sr->c10) {
		return;
	}
	a = totals ? r->allocated : live_bytes(s, r);
	res = totals ? r->reserved : a;
	add_point(x, sr, t, a, res);
	if (a > sr->peak) {
		sr->peak = a;
		sr->peak_t = t;
		sr->peak_site = site;
		sr->peak_event = r->event;
		sr->peak_bare = mt_sample_unwalked(s->conf.sample_bytes, r);
	}
}

/* ---- drawing ---- */

/* XML text: markup escaped; control and non-ASCII bytes as '?' */
static void put_text(FILE *f, const char *s, size_t max)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i + 1 == max && n > max)
			fputs("...", f);
		else if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 || c >= 0x7f)
			fputc('?', f);
		else
			fputc(c, f);
	}
}

/* 1, 2 or 5 times a power of ten, near v */
static double nice_step(double v)
{
	double m = 1;

	if (v <= 0)
		return 1;
	while (m * 10 <= v)
		m *= 10;
	while (m > v)
		m /= 10;
	if (v / m >= 5)
		return 5 * m;
	if (v / m >= 2)
		return 2 * m;
	return m;
}

/* decimals that show multiples of step exactly (up to 3) */
static int decimals(double step)
{
	int d = 0;

	for (double v = step; d < 3 && v - (double)(long long)v > 1e-9; v *= 10)
		d++;
	return d;
}

struct axes {
	double x0, y0; /* top left of the plot area */
	double secs; /* the time axis' end */
	double ymax; /* bytes at the top, a multiple of ystep */
	double unit, ystep; /* bytes */
	const char *uname;
};

static double px(const struct axes *ax, double t_ns)
{
	double t = t_ns / 1e9;

	return ax->x0 + (t > ax->secs ? ax->secs : t) * PW / ax->secs;
}

static double py(const struct axes *ax, double bytes)
{
	return ax->y0 + PH - bytes * PH / ax->ymax;
}

static const char *phase_color(const char *name, int i)
{
	static const char *const other[] = { "#f3e8ff", "#e0f2fe", "#fef9c3",
					     "#ecfccb" };

	if (!strcmp(name, "forward"))
		return "#dbeafe";
	if (!strcmp(name, "backward"))
		return "#ffedd5";
	if (!strcmp(name, "optimizer"))
		return "#dcfce7";
	if (!strcmp(name, "other"))
		return NULL; /* no band: the plain background */
	return other[i % 4];
}

/* the phase that had most of bucket i; -1: none */
static int dominant(const struct proc *p, size_t i)
{
	int best = -1;
	__u64 most = 0;

	for (int k = 0; k < p->nnames; k++) {
		if (p->ns[i][k] > most) {
			most = p->ns[i][k];
			best = k;
		}
	}
	return best;
}

/*
 * Where phase k's band that begins at bucket i starts, ns + 1 (0: not
 * known): at its first event there, or earlier in bucket i - 1 when the
 * phase began there after the phase that had most of that bucket ended
 * (a forward that starts late in a bucket the data loading had).
 */
static __u64 band_start(const struct proc *p, size_t i, int k)
{
	int before = i ? dominant(p, i - 1) : -1;

	if (i && before != k && p->lo[i - 1][k] &&
	    (before < 0 || p->hi[i - 1][before] <= p->lo[i - 1][k]))
		return p->lo[i - 1][k];
	return p->lo[i][k];
}

static void draw_bands(FILE *f, const struct svgx *x, const struct axes *ax,
		       const struct proc *p, size_t last)
{
	size_t i = 0, j;

	while (i <= last) {
		int k = dominant(p, i);
		const char *color = k >= 0 ? phase_color(p->names[k], k) : NULL;
		double x0, x1;
		__u64 lo;

		/* one band for the buckets that follow in the same phase */
		for (j = i + 1; j <= last && dominant(p, j) == k; j++)
			;
		if (color) {
			/* from its first event to its last */
			lo = band_start(p, i, k);
			x0 = px(ax,
				lo ? (double)(lo - 1) : (double)i * x->width);
			x1 = px(ax, p->hi[j - 1][k] ?
					    (double)(p->hi[j - 1][k] - 1) :
					    (double)j * x->width);
			fprintf(f,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				"height=\"%d\" fill=\"%s\"/>\n",
				x0, ax->y0, x1 - x0, PH, color);
		}
		i = j;
	}
}

static void draw_marks(FILE *f, const struct svgx *x, const struct axes *ax,
		       const struct proc *p, size_t last)
{
	double label_end = -1e9;
	size_t nfwd = 0;

	for (size_t i = 0; i <= last; i++)
		nfwd += p->fwd[i].t1 != 0;
	for (size_t i = 0; i <= last; i++) {
		const struct mark *b = &p->bwd[i], *fw = &p->fwd[i];
		double xb = px(ax, (double)(b->t1 - 1)),
		       xf = px(ax, (double)(fw->t1 - 1));

		if (b->t1)
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				"y2=\"%.1f\" class=\"bwd\"/>\n",
				xb, ax->y0, xb, ax->y0 + PH);
		if (!fw->t1)
			continue;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"class=\"fwd\"/>\n",
			xf, ax->y0, xf, ax->y0 + PH);
		/* step numbers where they fit */
		if (xf < label_end || nfwd > 60)
			continue;
		fprintf(f,
			"<text x=\"%.1f\" y=\"%.1f\" class=\"step\">step "
			"%u</text>\n",
			xf + 3, ax->y0 + 11, fw->step);
		label_end = xf + 46;
	}
}

/* the steps of the series: under max, the max line, the last values */
static void draw_series(FILE *f, const struct svgx *x, const struct axes *ax,
			const struct series *sr, size_t last, bool reserved)
{
	struct bucket cur = { 0 };
	bool started = false;
	double base = ax->y0 + PH;

	fputs(reserved ? "<path class=\"res\" d=\"" :
			 "<path class=\"alloc\" d=\"",
	      f);
	for (size_t i = 0; i <= last; i++) {
		const struct bucket *b = &sr->b[i];
		double x0 = px(ax, (double)i * x->width),
		       x1 = px(ax, (double)(i + 1) * x->width);
		__u64 v;

		if (b->has) {
			cur = *b;
		} else if (started) {
			/* nothing happened: it stayed where it was */
			cur.amax = cur.alast;
			cur.rmax = cur.rlast;
		} else {
			continue;
		}
		v = reserved ? cur.rmax : cur.amax;
		if (!started)
			fprintf(f, "M%.1f %.1f", x0, base);
		started = true;
		fprintf(f, "L%.1f %.1fL%.1f %.1f", x0, py(ax, (double)v), x1,
			py(ax, (double)v));
		if (i == last)
			fprintf(f, "L%.1f %.1fZ", x1, base);
	}
	fputs("\"/>\n", f);
}

static void draw_axes(FILE *f, const struct axes *ax)
{
	int dec = decimals(ax->ystep / ax->unit);
	double tstep;

	for (double v = 0; v <= ax->ymax * 1.0001; v += ax->ystep) {
		double y = py(ax, v);

		fprintf(f,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"class=\"grid\"/>\n<text x=\"%d\" y=\"%.1f\" "
			"class=\"ylab\">%.*f %s</text>\n",
			PL, y, PL + PW, y, PL - 6, y + 4, dec, v / ax->unit,
			ax->uname);
	}
	tstep = nice_step(ax->secs / 8);
	dec = decimals(tstep);
	for (double t = 0; t <= ax->secs * 1.0001; t += tstep) {
		double xx = ax->x0 + t * PW / ax->secs;

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"class=\"tick\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"class=\"xlab\">%.*f</text>\n",
			xx, ax->y0 + PH, xx, ax->y0 + PH + 5, xx,
			ax->y0 + PH + 18, dec, t);
	}
	fprintf(f,
		"<text x=\"%d\" y=\"%.1f\" class=\"xlab\">seconds since the "
		"first event</text>\n",
		PL + PW / 2, ax->y0 + PH + 36);
	fprintf(f,
		"<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
		"class=\"frame\"/>\n",
		PL, ax->y0, PW, PH);
}

/*
 * The label of the peak: its size and moment, who made the allocation that
 * reached it (module, phase, autograd node), and where (innermost frame).
 */
static void draw_peak(FILE *f, const struct axes *ax, const struct series *sr)
{
	const struct mt_site *st = sr->peak_site;
	double xp = px(ax, (double)sr->peak_t), yp = py(ax, (double)sr->peak);
	bool left = xp > ax->x0 + PW * 0.55;
	double xl = xp + (left ? -9 : 9);
	bool module = st->module && strcmp(st->module, "-");
	char b[32];

	fprintf(f,
		"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" class=\"peak\"/>\n"
		"<text x=\"%.1f\" y=\"%.1f\" class=\"plab\" "
		"text-anchor=\"%s\"><tspan class=\"pbig\">peak %s at %.2f "
		"s</tspan>",
		xp, yp, xl, yp - 44, left ? "end" : "start",
		mt_format_bytes(b, sizeof(b), sr->peak),
		(double)sr->peak_t / 1e9);
	fprintf(f, "<tspan x=\"%.1f\" dy=\"13\">", xl);
	if (sr->peak_bare)
		put_text(f, MT_SAMPLE_NO_STACK, OWNER_CHARS);
	else
		put_text(f, module ? st->module : "no module", OWNER_CHARS);
	if (st->phase) {
		fputs(", ", f);
		put_text(f, st->phase, OWNER_CHARS);
	}
	if (st->node) {
		fputs(", ", f);
		put_text(f, st->node, OWNER_CHARS);
	}
	fprintf(f, "</tspan><tspan x=\"%.1f\" dy=\"13\">", xl);
	if (st->depth) {
		put_text(f, st->frames[0], OWNER_CHARS);
	} else {
		put_text(f, sr->peak_event, OWNER_CHARS);
		fputs(" from ", f);
		put_text(f, st->caller ? st->caller : "?", OWNER_CHARS);
	}
	fputs("</tspan></text>\n", f);
}

static const struct proc *proc_find(const struct svgx *x, __u32 pid)
{
	for (size_t i = 0; i < x->nprocs; i++)
		if (x->procs[i]->pid == pid)
			return x->procs[i];
	return NULL;
}

static void draw_plot(FILE *f, const struct svgx *x, const struct series *sr,
		      double top)
{
	size_t last = (size_t)(x->end / x->width);
	const struct proc *p = proc_find(x, sr->pid);
	struct axes ax = { .x0 = PL, .y0 = top + PLOT_TITLE };
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	char dev[16], a[32], r[32];
	double top_bytes;
	int u = 0;

	ax.secs = (double)max_u64(x->end, 1000) / 1e9;
	/* headroom over the reserved peak: the peak label under the steps */
	top_bytes = (double)max_u64(sr->rpeak, 1024) * 1.4;
	for (ax.unit = 1024; u < 3 && top_bytes / ax.unit >= 1024 * 1.5; u++)
		ax.unit *= 1024;
	ax.uname = units[u];
	ax.ystep = nice_step(top_bytes / ax.unit / 4) * ax.unit;
	ax.ymax = ax.ystep * (double)(long long)(top_bytes / ax.ystep + 0.999);

	fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"ptitle\">pid %u (", PL,
		top + 18, sr->pid);
	put_text(f, sr->comm, MT_COMM_LEN);
	fprintf(f, ") %s: allocated peak %s, reserved peak %s%s</text>\n",
		mt_format_dev(dev, sizeof(dev), sr->type, sr->index),
		mt_format_bytes(a, sizeof(a), sr->peak),
		mt_format_bytes(r, sizeof(r), sr->rpeak),
		sr->c10 ? "" : " (no caching allocator: reserved = allocated)");
	fprintf(f,
		"<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
		"fill=\"#fff\"/>\n",
		PL, ax.y0, PW, PH);
	if (p)
		draw_bands(f, x, &ax, p, last);
	draw_axes(f, &ax);
	draw_series(f, x, &ax, sr, last, true);
	draw_series(f, x, &ax, sr, last, false);
	if (p)
		draw_marks(f, x, &ax, p, last);
	if (sr->peak_site)
		draw_peak(f, &ax, sr);
}

static const char style[] =
	"<style>\n"
	"text { font-family: 'DejaVu Sans', Verdana, sans-serif; "
	"font-size: 11px; fill: #334155; }\n"
	".title { font-size: 15px; font-weight: bold; fill: #0f172a; }\n"
	".ptitle { font-size: 12.5px; font-weight: bold; fill: #0f172a; }\n"
	".ylab { text-anchor: end; }\n"
	".xlab { text-anchor: middle; }\n"
	".grid { stroke: #e2e8f0; stroke-width: 1; }\n"
	".tick { stroke: #94a3b8; stroke-width: 1; }\n"
	".frame { fill: none; stroke: #94a3b8; stroke-width: 1; }\n"
	".res { fill: #cbd5e1; fill-opacity: 0.55; stroke: #64748b; "
	"stroke-width: 1.2; }\n"
	".alloc { fill: #60a5fa; fill-opacity: 0.45; stroke: #1d4ed8; "
	"stroke-width: 1.4; }\n"
	".fwd { stroke: #1e3a8a; stroke-width: 1; stroke-dasharray: 4 3; "
	"stroke-opacity: 0.7; }\n"
	".bwd { stroke: #c2410c; stroke-width: 1; stroke-dasharray: 2 2; "
	"stroke-opacity: 0.8; }\n"
	".step { font-size: 10px; fill: #1e3a8a; }\n"
	".peak { fill: #dc2626; stroke: #fff; stroke-width: 1.5; }\n"
	".plab { font-size: 11px; fill: #7f1d1d; stroke: #fff; "
	"stroke-width: 3; paint-order: stroke; stroke-linejoin: round; }\n"
	".pbig { font-weight: bold; }\n"
	"</style>\n";

/* a legend entry at *xx: a swatch of kind 'r', 'l' or 'o' with attr */
static void legend(FILE *f, double *xx, double y, char kind, const char *attr,
		   const char *words)
{
	if (kind == 'r')
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" "
			"height=\"10\" %s/>\n",
			*xx, y - 5, attr);
	else if (kind == 'l')
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			"y2=\"%.1f\" %s/>\n",
			*xx + 8, y - 7, *xx + 8, y + 7, attr);
	else
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" %s/>\n",
			*xx + 8, y, attr);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", *xx + 22, y + 4);
	put_text(f, words, 64);
	fputs("</text>\n", f);
	*xx += 22 + 6.2 * (double)strlen(words) + 20;
}

static int phase_rank(const char *name)
{
	static const char *const order[] = { "forward", "backward",
					     "optimizer" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(name, order[i]))
			return i;
	return 3;
}

static int by_phase(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	int ra = phase_rank(a), rb = phase_rank(b);

	return ra != rb ? ra - rb : strcmp(a, b);
}

/* the banded phases of the processes drawn, each once, and the markers */
static void legend_phases(FILE *f, const struct svgx *x, size_t n, double y)
{
	const char *seen[MAX_PLOTS * NPHASES];
	size_t nseen = 0;
	double xx = PL;

	for (size_t i = 0; i < n; i++) {
		const struct proc *p = proc_find(x, x->ser[i]->pid);

		for (int k = 0; p && k < p->nnames; k++) {
			size_t j;

			for (j = 0; j < nseen; j++)
				if (!strcmp(seen[j], p->names[k]))
					break;
			if (j == nseen && phase_color(p->names[k], k))
				seen[nseen++] = p->names[k];
		}
	}
	if (!nseen)
		return;
	qsort(seen, nseen, sizeof(seen[0]), by_phase);
	for (size_t j = 0; j < nseen; j++) {
		char attr[64];

		snprintf(attr, sizeof(attr), "fill=\"%s\" stroke=\"#cbd5e1\"",
			 phase_color(seen[j], (int)j));
		legend(f, &xx, y, 'r', attr, seen[j]);
	}
	legend(f, &xx, y, 'l', "class=\"fwd\"", "forward starts (step N)");
	legend(f, &xx, y, 'l', "class=\"bwd\"", "backward starts");
}

static void draw_legend(FILE *f, const struct svgx *x, size_t n)
{
	double xx = PL;

	legend(f, &xx, 44, 'r', "class=\"res\"", "reserved");
	legend(f, &xx, 44, 'r', "class=\"alloc\"",
	       "allocated (= active: c10 reports no separate active total)");
	legend(f, &xx, 44, 'o', "class=\"peak\"", "allocated peak");
	legend_phases(f, x, n, 64);
}

static int by_rpeak_desc(const void *pa, const void *pb)
{
	const struct series *a = *(const struct series *const *)pa;
	const struct series *b = *(const struct series *const *)pb;

	return a->rpeak < b->rpeak ? 1 : a->rpeak > b->rpeak ? -1 : 0;
}

static int by_account(const void *pa, const void *pb)
{
	const struct series *a = *(const struct series *const *)pa;
	const struct series *b = *(const struct series *const *)pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* a sampled trace: the title's note, and all of it in the <desc> */
static void draw_sampled(FILE *f, const struct mt_session *s)
{
	char text[512];

	if (!s->conf.sample_bytes)
		return;
	fputs("<desc>", f);
	put_text(f, mt_export_sample_note(s, text, sizeof(text)), sizeof(text));
	fprintf(f, "</desc>\n<text x=\"%d\" y=\"24\" text-anchor=\"end\">",
		W - PR);
	put_text(f, mt_session_sample_rate(s, text, sizeof(text)),
		 sizeof(text));
	fputs(", totals exact</text>\n", f);
}

static void draw(struct svgx *x, const struct mt_session *s)
{
	FILE *f = x->f;
	size_t n = x->nser < MAX_PLOTS ? x->nser : MAX_PLOTS;
	bool note = x->nser > n || x->unfollowed;
	int h = HEAD + (int)n * PLOT_H + (note ? NOTE_H : 0) + (n ? 0 : 40);

	/* the busiest ones, drawn in (process, device) order */
	qsort(x->ser, x->nser, sizeof(x->ser[0]), by_rpeak_desc);
	qsort(x->ser, n, sizeof(x->ser[0]), by_account);
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n%s"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		"<text x=\"%d\" y=\"24\" class=\"title\">memtrace-bpf: "
		"memory over time</text>\n",
		W, h, W, h, style, PL);
	draw_sampled(f, s);
	draw_legend(f, x, n);
	for (size_t i = 0; i < n; i++)
		draw_plot(f, x, x->ser[i], HEAD + (double)i * PLOT_H);
	if (!n)
		fprintf(f, "<text x=\"%d\" y=\"%d\">no memory events</text>\n",
			PL, HEAD + 20);
	if (note)
		fprintf(f,
			"<text x=\"%d\" y=\"%d\">%zu more (process, device) "
			"accounts not drawn (%llu events past the %d "
			"followed)</text>\n",
			PL, h - 8, x->nser - n,
			(unsigned long long)x->unfollowed, MAX_SERIES);
	fputs("</svg>\n", f);
}

static int close_svg(void *p, const struct mt_session *s, char *err,
		     size_t errlen)
{
	struct svgx *x = p;
	int ret = x->err;

	if (ret)
		snprintf(err, errlen, "export svg: %s", strerror(-ret));
	else
		draw(x, s);
	for (size_t i = 0; i < x->nser; i++)
		free(x->ser[i]);
	for (size_t i = 0; i < x->nprocs; i++)
		free(x->procs[i]);
	free(x);
	return ret;
}

const struct mt_exporter mt_export_svg = {
	.name = "svg",
	.what = "memory over time with phases and the peak (SVG)",
	.open = open_svg,
	.event = event_svg,
	.close = close_svg,
};
