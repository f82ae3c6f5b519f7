// SPDX-License-Identifier: GPL-2.0
/*
 * The frame of memtrace-bpf top. The growth per step comes from the memory
 * of each account noted at the first event of every optimizer step (the
 * same event each step, so the differences are exact); the modules and
 * lines from the live table's groups by (account, site), summed by module
 * and by line. The tables are lib/table.h's, each with only the rows the
 * frame has room for, their lines placed by the frame, which cuts them
 * at its columns and stops at its rows.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "lib/escape.h"
#include "lib/grow.h"
#include "lib/table.h"
#include "analysis/peak.h"
#include "analysis/sample.h"
#include "analysis/top.h"

#define TOP_ACCOUNTS MT_SUM_DEVS /* accounts whose steps are noted */
#define TOP_STEPS 11 /* step starts kept: growth over the last 10 steps */
#define TOP_DEVS 64 /* devices the percentages are of */
#define TOP_ROWS 10 /* rows a table has when the height is not limited */
#define LINE_MAX_LEN 4096

/* an account's memory at the start of one step */
struct mark {
	__u32 step;
	__u64 bytes;
};

struct account {
	__u32 pid;
	enum mt_dev_type type;
	int index;
	enum mt_space space;
	struct mark ring[TOP_STEPS];
	int head, n; /* next slot written; marks held */
};

struct proc_seen {
	__u32 pid; /* 0: free */
	__u32 step; /* the last step seen */
};

struct mt_top {
	struct account acc[TOP_ACCOUNTS];
	size_t nacc;
	struct proc_seen procs[MT_PROCS]; /* by pid % size, as the session */
};

struct mt_top *mt_top_new(void)
{
	return calloc(1, sizeof(struct mt_top));
}

void mt_top_free(struct mt_top *t)
{
	free(t);
}

/* what a memory account holds now: the caching allocator's own total */
static __u64 held(const struct mt_dev_stat *d)
{
	return d->space == MT_SP_C10 ? d->allocated : d->cur;
}

static __u64 peak_of(const struct mt_dev_stat *d)
{
	return d->space == MT_SP_C10 ? d->allocated_peak : d->peak;
}

static struct account *account(struct mt_top *t, const struct mt_dev_stat *d,
			       bool add)
{
	struct account *a;

	for (size_t i = 0; i < t->nacc; i++) {
		a = &t->acc[i];
		if (a->pid == d->pid && a->type == d->type &&
		    a->index == d->index && a->space == d->space)
			return a;
	}
	if (!add || t->nacc == TOP_ACCOUNTS)
		return NULL;
	a = &t->acc[t->nacc++];
	*a = (struct account){ .pid = d->pid,
			       .type = d->type,
			       .index = d->index,
			       .space = d->space };
	return a;
}

static void note_step(struct mt_top *t, const struct mt_session *s, __u32 pid,
		      __u32 step)
{
	for (size_t i = 0; i < s->sum.ndevs; i++) {
		const struct mt_dev_stat *d = &s->sum.devs[i];
		struct account *a;

		if (d->pid != pid)
			continue;
		a = account(t, d, true);
		if (!a)
			return;
		a->ring[a->head] =
			(struct mark){ .step = step, .bytes = held(d) };
		a->head = (a->head + 1) % TOP_STEPS;
		if (a->n < TOP_STEPS)
			a->n++;
	}
}

void mt_top_event(void *ctx, const struct mt_session *s,
		  const struct mt_call *r, const struct mt_site *site)
{
	struct mt_top *t = ctx;
	__u32 pid = r->ev->pid, step = mt_session_step(s, pid);
	struct proc_seen *p = &t->procs[pid % MT_PROCS];

	(void)site;
	if (p->pid != pid) {
		*p = (struct proc_seen){ .pid = pid, .step = step };
		return;
	}
	if (p->step == step)
		return;
	p->step = step;
	note_step(t, s, pid, step);
}

static int by_value(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/*
 * Bytes per step over the marks held: the median of each step's growth,
 * so that a one-time warm-up (an optimizer making its state at its first
 * step, a cache filling) is no growth, while memory that grows every step
 * is. False: fewer than two steps.
 */
static bool growth(const struct account *a, double *per_step)
{
	double g[TOP_STEPS];
	size_t n = 0;

	if (!a || a->n < 2)
		return false;
	for (int i = 1; i < a->n; i++) {
		const struct mark *p =
			&a->ring[(a->head - a->n + i - 1 + TOP_STEPS) %
				 TOP_STEPS];
		const struct mark *q =
			&a->ring[(a->head - a->n + i + TOP_STEPS) % TOP_STEPS];

		if (q->step > p->step)
			g[n++] = ((double)q->bytes - (double)p->bytes) /
				 (double)(q->step - p->step);
	}
	if (!n)
		return false;
	qsort(g, n, sizeof(g[0]), by_value);
	*per_step = n % 2 ? g[n / 2] : (g[n / 2 - 1] + g[n / 2]) / 2;
	return true;
}

/* the caching allocator keeps (pid, device): its segments are its own */
static bool has_c10(const struct mt_summary *sum, __u32 pid, int index)
{
	for (size_t i = 0; i < sum->ndevs; i++)
		if (sum->devs[i].pid == pid &&
		    sum->devs[i].space == MT_SP_C10 &&
		    sum->devs[i].type == MT_DT_CUDA &&
		    sum->devs[i].index == index)
			return true;
	return false;
}

/*
 * Whether an account is shown: cuMemMap ranges map memory counted at its
 * creation, and the runtime's and driver's segments of a device the
 * caching allocator serves hold its blocks (its reserved bytes).
 */
static bool shown(const struct mt_summary *sum, __u32 pid,
		  enum mt_dev_type type, int index, enum mt_space space)
{
	if (space == MT_SP_VAMAP)
		return false;
	if (type == MT_DT_CUDA &&
	    (space == MT_SP_CUDART || space == MT_SP_DRIVER ||
	     space == MT_SP_HANDLE))
		return !has_c10(sum, pid, index);
	return true;
}

/* the lines of one frame: none past rows, none longer than cols */
struct frame {
	FILE *out;
	int cols, rows, used;
};

static bool room(const struct frame *f)
{
	return !f->rows || f->used < f->rows;
}

/* n bytes of text as one line, cut at the frame's columns, no blanks last */
static void put_bytes(struct frame *f, const char *text, size_t n)
{
	if (!room(f))
		return;
	if (f->cols > 0 && n > (size_t)f->cols)
		n = (size_t)f->cols;
	while (n && text[n - 1] == ' ')
		n--;
	fwrite(text, 1, n, f->out);
	fputc('\n', f->out);
	f->used++;
}

static void put_text(struct frame *f, const char *text)
{
	put_bytes(f, text, strlen(text));
}

static void __attribute__((format(printf, 2, 3)))
put_line(struct frame *f, const char *fmt, ...)
{
	struct mt_esc e = { 0 };
	char line[LINE_MAX_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* it may name the target (its comm): escaped, as the tables' cells */
	put_text(f, mt_esc(&e, line, MT_ESC_TEXT));
}

/*
 * A table's lines, as wide as the frame (uncut: as wide as they are),
 * without colour: the frame is plain text. 0 or -ENOMEM.
 */
static int put_table(struct frame *f, const struct mt_table *t)
{
	struct mt_table_style st = {
		.width = f->cols > 0 ? (size_t)f->cols : SIZE_MAX,
	};
	size_t len = 0;
	char *text = mt_table_format(t, &st, &len);
	const char *p, *end;

	if (!text)
		return -ENOMEM;
	for (p = text, end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		put_bytes(f, p, n);
		p += n + 1;
	}
	free(text);
	return 0;
}

/*
 * "+1.50 MiB", "-512 B", "+0 B": a mean over steps, rounded to whole bytes
 * and spelled as every other size is
 */
static const char *fmt_signed(char *buf, size_t len, double v)
{
	char mag[32];
	unsigned long long b = (unsigned long long)((v < 0 ? -v : v) + 0.5);

	snprintf(buf, len, "%c%s", v < 0 && b ? '-' : '+',
		 mt_format_bytes(mag, sizeof(mag), b));
	return buf;
}

static int by_key(const void *pa, const void *pb)
{
	const struct mt_dev_stat *x = *(const struct mt_dev_stat *const *)pa;
	const struct mt_dev_stat *y = *(const struct mt_dev_stat *const *)pb;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->space < y->space ? -1 : x->space > y->space;
}

/*
 * The rows a table's body has: at most max (0: no limit), and no more than
 * the frame has left below the table's title line. SIZE_MAX: no limit.
 */
static size_t body_rows(const struct frame *f, int max)
{
	size_t cap = max > 0 ? (size_t)max : SIZE_MAX;
	int left = f->rows - f->used - 1;

	if (f->rows && (size_t)(left > 0 ? left : 0) < cap)
		cap = (size_t)(left > 0 ? left : 0);
	return cap;
}

/* of n rows, those shown in cap: when more, the last place says so */
static size_t rows_shown(size_t n, size_t cap)
{
	return n <= cap ? n : (cap ? cap - 1 : 0);
}

/* a table of ncols columns, widths[i] characters at least; NULL: no memory */
static struct mt_table *new_table(const struct mt_table_col *cols,
				  const size_t *widths, size_t ncols)
{
	struct mt_table *tb = mt_table_new(cols, ncols);

	for (size_t i = 0; tb && i < ncols; i++)
		mt_table_set_width(tb, i, widths[i]);
	return tb;
}

/* the table's lines into the frame and the table freed; 0 or -ENOMEM */
static int end_table(struct frame *f, struct mt_table *tb, int err)
{
	if (!err)
		err = put_table(f, tb);
	mt_table_free(tb);
	return err;
}

enum { DEV_GROWTH = 5, DEV_STEP = 6 }; /* titled per frame */

static const struct mt_table_col dev_cols[] = {
	{ "PID", MT_TABLE_RIGHT, false, 0 },
	{ "DEVICE", MT_TABLE_RIGHT, false, 0 },
	{ "CURRENT", MT_TABLE_RIGHT, false, 0 },
	/* on a narrow screen: left out, RESERVED first, not cut mid-figure */
	{ "PEAK", MT_TABLE_RIGHT, false, 1 },
	{ "RESERVED", MT_TABLE_RIGHT, false, 3 },
	[DEV_GROWTH] = { NULL, MT_TABLE_RIGHT, false, 0 },
	[DEV_STEP] = { NULL, MT_TABLE_RIGHT, false, 2 },
	{ "SOURCE", MT_TABLE_LEFT, true, 0 },
};

#define NDEV_COLS (sizeof(dev_cols) / sizeof(dev_cols[0]))

/* the columns' least widths: they stay put from frame to frame */
static const size_t dev_widths[NDEV_COLS] = { 7, 7, 10, 10, 10, 12, 6, 0 };

/*
 * What a tensor account shown holds now by kind of memory, largest first
 * (a narrow terminal cuts the smallest), kinds at 0 left out: one line
 * under the table, its pid and device in the table's columns. The kinds are the session's tally,
 * told as the report tells them at the end: what the phase running now
 * made is unknown until that phase ends. Exact, sampled or not.
 */
static void put_kinds(const struct mt_session *s, const struct mt_dev_stat *d,
		      struct frame *f)
{
	char line[LINE_MAX_LEN], dev[32], size[32];
	__u64 bytes[MT_MK_MAX], sum;
	int order[MT_MK_MAX], nk;
	size_t used = 0;

	if (!mt_space_is_tensor(d->space))
		return;
	mt_session_kinds_now(s, d, bytes);
	nk = mt_memkind_by_size(bytes, order, &sum);
	if (!nk)
		return;
	for (int i = 0; i < nk && used < sizeof(line); i++) {
		int n = snprintf(
			line + used, sizeof(line) - used, "%s%s %s",
			i ? "  " : " ", mt_memkind_name(order[i]),
			mt_format_bytes(size, sizeof(size), bytes[order[i]]));

		if (n < 0)
			return;
		used += (size_t)n;
	}
	put_line(f, "%*u  %*s  now by kind:%s", (int)dev_widths[0], d->pid,
		 (int)dev_widths[1],
		 mt_format_dev(dev, sizeof(dev), d->type, d->index), line);
}

static int put_devices(struct mt_top *t, const struct mt_session *s,
		       struct frame *f, int max)
{
	const struct mt_dev_stat *v[MT_SUM_DEVS] = { NULL };
	__u64 sampled = s->conf.sample_bytes;
	struct mt_table_col cols[NDEV_COLS];
	struct mt_table *tb;
	size_t n = 0, i, show;
	int err = 0;

	/*
	 * Steps are counted from the phases of the events' stacks: in a
	 * sampled trace those of the sampled allocations only, which can miss
	 * a step and see it begin late. The memory is exact.
	 */
	memcpy(cols, dev_cols, sizeof(cols));
	cols[DEV_GROWTH].title = MT_EST_TITLE(sampled, "GROWTH/STEP");
	cols[DEV_STEP].title = MT_EST_TITLE(sampled, "STEP");
	tb = new_table(cols, dev_widths, NDEV_COLS);
	if (!tb)
		return -ENOMEM;
	for (i = 0; i < s->sum.ndevs; i++) {
		const struct mt_dev_stat *d = &s->sum.devs[i];

		if (shown(&s->sum, d->pid, d->type, d->index, d->space))
			v[n++] = d;
	}
	qsort(v, n, sizeof(v[0]), by_key);
	show = rows_shown(n, body_rows(f, max));
	for (i = 0; i < show && !err; i++) {
		const struct mt_dev_stat *d = v[i];
		char pid[16], dev[32], cur[32], peak[32], res[32], grow[32],
			step[16];
		const char *cell[NDEV_COLS] = {
			pid, dev,  cur,	 peak,
			res, grow, step, mt_space_name(d->space),
		};
		double g;

		snprintf(pid, sizeof(pid), "%u", d->pid);
		mt_format_dev(dev, sizeof(dev), d->type, d->index);
		mt_format_bytes(cur, sizeof(cur), held(d));
		mt_format_bytes(peak, sizeof(peak), peak_of(d));
		if (d->space == MT_SP_C10)
			mt_format_bytes(res, sizeof(res), d->reserved);
		else
			snprintf(res, sizeof(res), "-");
		if (growth(account(t, d, false), &g))
			fmt_signed(grow, sizeof(grow), g);
		else
			snprintf(grow, sizeof(grow), "-");
		snprintf(step, sizeof(step), "%u", mt_session_step(s, d->pid));
		err = mt_table_add(tb, MT_TONE_PLAIN, cell);
	}
	err = end_table(f, tb, err);
	if (err)
		return err;
	if (!n)
		put_line(f, "%*s", (int)dev_widths[0], "-");
	else if (show < n)
		put_line(f, "%*s ... %zu more accounts", (int)dev_widths[0], "",
			 n - show);
	for (i = 0; i < show; i++)
		put_kinds(s, v[i], f);
	return 0;
}

/* bytes alive now under one key (a module, or a line) on one device */
struct item {
	enum mt_dev_type type;
	int dev;
	const char *name; /* NULL: none known */
	const char *phase; /* where name is NULL: what it was allocated in */
	__u64 bytes, count;
};

struct items {
	struct item *v;
	size_t n, cap;
};

struct dev_total {
	enum mt_dev_type type;
	int dev;
	__u64 bytes;
};

struct collect {
	const struct mt_session *s;
	struct items mods, lines;
	struct dev_total devs[TOP_DEVS];
	size_t ndevs;
	bool nomem;
};

/* a frame's file, "qual (file:line)": one of the program, not a library */
/* the innermost frame of the program's own code, else the innermost one */
static const char *line_of(const struct mt_site *site)
{
	const char *own = mt_site_own_frame(site);

	if (own || !site || site->depth <= 0)
		return own;
	return site->frames[0];
}

static const char *module_of(const struct mt_site *site)
{
	if (!site || !site->module || !strcmp(site->module, "-"))
		return NULL;
	return site->module;
}

static void add_item(struct collect *c, struct items *it,
		     const struct mt_peak_group *g, const char *name,
		     const char *phase)
{
	if (mt_grow((void **)&it->v, &it->cap, it->n + 1, sizeof(*it->v))) {
		c->nomem = true;
		return;
	}
	it->v[it->n++] = (struct item){ .type = g->dev_type,
					.dev = g->dev,
					.name = name,
					.phase = name ? NULL : phase,
					.bytes = g->bytes,
					.count = g->count };
}

static void collect_group(const struct mt_peak_group *g, void *ctx)
{
	struct collect *c = ctx;
	const struct mt_site *site = g->site;
	const char *phase = site && site->phase ? site->phase : "-";
	size_t i;

	/* unsampled allocations only (--sample-bytes): they stand for none */
	if (!g->count)
		return;
	if (!shown(&c->s->sum, g->pid, g->dev_type, g->dev, g->space))
		return;
	for (i = 0; i < c->ndevs; i++)
		if (c->devs[i].type == g->dev_type && c->devs[i].dev == g->dev)
			break;
	if (i == c->ndevs && c->ndevs < TOP_DEVS)
		c->devs[c->ndevs++] = (struct dev_total){ .type = g->dev_type,
							  .dev = g->dev };
	if (i < c->ndevs)
		c->devs[i].bytes += g->bytes;
	add_item(c, &c->mods, g, module_of(site), g->unfit ? NULL : phase);
	add_item(c, &c->lines, g, line_of(site), NULL);
}

static int by_item_key(const void *pa, const void *pb)
{
	const struct item *x = pa, *y = pb;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->name != y->name)
		return (uintptr_t)x->name < (uintptr_t)y->name ? -1 : 1;
	if (x->phase != y->phase)
		return (uintptr_t)x->phase < (uintptr_t)y->phase ? -1 : 1;
	return 0;
}

static int by_bytes(const void *pa, const void *pb)
{
	const struct item *x = pa, *y = pb;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	/* interned names: the order of equal figures stays put */
	return x->name && y->name ? strcmp(x->name, y->name) :
				    (x->name != NULL) - (y->name != NULL);
}

/* the items of one key summed into one, largest first */
static void merge(struct items *it)
{
	size_t n = 0;

	/* none yet (a sampled trace before its first stack): v is NULL */
	if (!it->n)
		return;
	qsort(it->v, it->n, sizeof(*it->v), by_item_key);
	for (size_t i = 0; i < it->n; i++) {
		if (n && !by_item_key(&it->v[n - 1], &it->v[i])) {
			it->v[n - 1].bytes += it->v[i].bytes;
			it->v[n - 1].count += it->v[i].count;
			continue;
		}
		it->v[n++] = it->v[i];
	}
	it->n = n;
	qsort(it->v, it->n, sizeof(*it->v), by_bytes);
}

static __u64 dev_total(const struct collect *c, const struct item *x)
{
	for (size_t i = 0; i < c->ndevs; i++)
		if (c->devs[i].type == x->type && c->devs[i].dev == x->dev)
			return c->devs[i].bytes;
	return 0;
}

enum { ITEM_NOW = 1, ITEM_PCT = 2, ITEM_COUNT = 3 }; /* titled per frame */

static const struct mt_table_col item_cols[] = {
	{ "DEVICE", MT_TABLE_RIGHT, false, 0 },
	[ITEM_NOW] = { NULL, MT_TABLE_RIGHT, false, 0 },
	[ITEM_PCT] = { NULL, MT_TABLE_RIGHT, false, 0 },
	[ITEM_COUNT] = { NULL, MT_TABLE_RIGHT, false, 0 },
	{ NULL, MT_TABLE_LEFT, true, 0 }, /* the table's title */
};

#define NITEM_COLS (sizeof(item_cols) / sizeof(item_cols[0]))

static const size_t item_widths[NITEM_COLS] = { 7, 10, 5, 7, 0 };

/* the rows past those shown, summed into one that says how many */
static int add_rest(struct mt_table *tb, const struct items *it, size_t shown)
{
	__u64 rest = 0, rest_count = 0;
	char now[32], count[24], more[48];
	const char *cell[NITEM_COLS] = { NULL, now, NULL, count, more };

	for (size_t i = shown; i < it->n; i++) {
		rest += it->v[i].bytes;
		rest_count += it->v[i].count;
	}
	mt_format_bytes(now, sizeof(now), rest);
	snprintf(count, sizeof(count), "%" PRIu64, (uint64_t)rest_count);
	snprintf(more, sizeof(more), "... %zu more", it->n - shown);
	return mt_table_add(tb, MT_TONE_DIM, cell);
}

static int put_items(const struct collect *c, const struct items *it,
		     const char *title, const char *none, struct frame *f,
		     int max)
{
	__u64 sampled = c->s->conf.sample_bytes;
	struct mt_table_col cols[NITEM_COLS];
	struct mt_table *tb;
	size_t i, show = rows_shown(it->n, body_rows(f, max));
	int err = 0;

	/* summed from stacks: in a sampled trace estimates, as the report's */
	memcpy(cols, item_cols, sizeof(cols));
	cols[ITEM_NOW].title = MT_EST_TITLE(sampled, "NOW");
	cols[ITEM_PCT].title = MT_EST_TITLE(sampled, "%");
	cols[ITEM_COUNT].title = MT_EST_TITLE(sampled, "COUNT");
	cols[NITEM_COLS - 1].title = title;
	tb = new_table(cols, item_widths, NITEM_COLS);
	if (!tb)
		return -ENOMEM;
	for (i = 0; i < show && !err; i++) {
		const struct item *x = &it->v[i];
		char dev[32], now[32], pct[16], count[24], name[256];
		const char *cell[NITEM_COLS] = { dev, now, pct, count, name };
		__u64 total = dev_total(c, x);

		mt_format_dev(dev, sizeof(dev), x->type, x->dev);
		mt_format_bytes(now, sizeof(now), x->bytes);
		snprintf(pct, sizeof(pct), "%.1f",
			 total ? 100.0 * (double)x->bytes / (double)total : 0);
		snprintf(count, sizeof(count), "%" PRIu64, (uint64_t)x->count);
		if (x->name)
			cell[NITEM_COLS - 1] = x->name;
		else if (x->phase)
			snprintf(name, sizeof(name), "[%s: %s]", none,
				 x->phase);
		else
			snprintf(name, sizeof(name), "[%s]", none);
		err = mt_table_add(tb, MT_TONE_PLAIN, cell);
	}
	if (!err && show < it->n)
		err = add_rest(tb, it, show);
	err = end_table(f, tb, err);
	if (!err && !it->n)
		put_line(f, "%*s", (int)item_widths[0], "-");
	return err;
}

/*
 * --sample-bytes: which figures are estimates, and of how many stacks.
 * The report's headline says the same at more length: this one puts what
 * '~' means first, so that a narrow terminal cuts only the ratio.
 */
static void put_sampled(const struct mt_session *s, struct frame *f)
{
	char r[32];

	if (!s->conf.sample_bytes)
		return;
	mt_format_bytes(r, sizeof(r), s->conf.sample_bytes);
	if (s->sample_walked)
		put_line(f,
			 "Sampled (R=%s): ~ figures are estimates, totals "
			 "exact; stacks for 1 allocation in %.0f",
			 r,
			 (double)s->sample_allocs / (double)s->sample_walked);
	else
		put_line(f,
			 "Sampled (R=%s): ~ figures are estimates, totals "
			 "exact; no stack yet in %" PRIu64 " allocations",
			 r, (uint64_t)s->sample_allocs);
}

static void put_status(const struct mt_session *s,
		       const struct mt_top_status *st, struct frame *f)
{
	char who[96];

	if (st->nprocs == 1)
		snprintf(who, sizeof(who), "pid %u %s%s", st->pid,
			 st->comm ? st->comm : "",
			 st->nexited ? " (exited)" : "");
	else
		snprintf(who, sizeof(who), "%d processes (%d exited)",
			 st->nprocs, st->nexited);
	put_line(f,
		 "memtrace-bpf top: %s  up %.0fs  every %gs  events %" PRIu64
		 "  lost %" PRIu64 "%s",
		 who, st->elapsed, st->interval, (uint64_t)s->seq,
		 (uint64_t)st->lost, st->keys ? "  (q quits)" : "");
	put_sampled(s, f);
	/* what the figures below miss, beside them */
	if (st->lost)
		put_line(f,
			 "LOST %" PRIu64
			 " events: the figures below miss them (--ringbuf-mb)",
			 (uint64_t)st->lost);
	if (s->sum.live_full)
		put_line(f,
			 "live table full: %" PRIu64
			 " allocations not tracked, the figures are low",
			 (uint64_t)s->sum.live_full);
	if (st->stacks_lost)
		put_line(
			f,
			"%" PRIu64
			" events have no Python stack: their lines are unknown",
			(uint64_t)st->stacks_lost);
}

/* the three tables, each as long as its share of the frame's rows */
static int put_tables(struct mt_top *t, const struct mt_session *s,
		      struct collect *c, struct frame *f)
{
	int rows = f->rows, dev_max = 0, mod_max = TOP_ROWS,
	    line_max = TOP_ROWS, left, err;

	merge(&c->mods);
	merge(&c->lines);
	if (rows > 0)
		dev_max = rows / 4 > 1 ? rows / 4 : 1;
	put_text(f, "");
	err = put_devices(t, s, f, dev_max);
	if (err)
		return err;
	if (rows > 0) {
		/* two titles and two blank lines, the rest shared */
		left = rows - f->used - 4;
		if (left < 0)
			left = 0;
		mod_max = (left + 1) / 2;
		line_max = left / 2;
	}
	put_text(f, "");
	if (mod_max > 0 || !rows) {
		err = put_items(c, &c->mods, "MODULE (alive now)", "no module",
				f, mod_max);
		if (err)
			return err;
	}
	put_text(f, "");
	if (line_max > 0 || !rows)
		err = put_items(c, &c->lines, "LINE (alive now)",
				"no Python stack", f, line_max);
	return err;
}

int mt_top_frame(struct mt_top *t, const struct mt_session *s,
		 const struct mt_top_status *st, int cols, int rows, FILE *out)
{
	struct frame f = { .out = out, .cols = cols, .rows = rows };
	struct collect c = { .s = s };
	int err = -ENOMEM;

	put_status(s, st, &f);
	if (!mt_peak_foreach_now(s->live, collect_group, &c) && !c.nomem)
		err = put_tables(t, s, &c, &f);
	if (err)
		put_line(&f, "out of memory: no tables this time");
	free(c.mods.v);
	free(c.lines.v);
	return err;
}
