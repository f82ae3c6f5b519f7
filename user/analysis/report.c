// SPDX-License-Identifier: GPL-2.0
/*
 * The report gathers rows keyed by (process, module, line) from the peak's
 * groups, the modules' own figures and the sites, in small hash tables,
 * then prints each table sorted and cut (--percent-limit, --top-live,
 * --top-ops), a "... N more" row carrying what was cut so that every
 * table still adds up to its total.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "lib/escape.h"
#include "lib/grow.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "lib/table.h"
#include "analysis/modtree.h"
#include "analysis/report.h"
#include "analysis/sample.h"

#define MAX_ACCOUNTS 64 /* device accounts given a section of their own */
#define MAX_DEPTH 64 /* tree levels whose cut rows are summed apart */
#define MAX_SUSPECTS 20 /* leak suspects listed */
#define LABEL_WIDTH 10 /* the headline's labels */

/*
 * A column of figures summed from stacks (modules, phases, lines): in a
 * sampled trace (--sample-bytes) an estimate, its title marked "~"
 */
#define EST_COL(rp, title) MT_EST_TITLE((rp)->s->conf.sample_bytes, title)

/* the column of the bytes alive at the moment the tables are about */
#define ALIVE_COL(rp)                                          \
	((rp)->view && !(rp)->at_peak ? EST_COL(rp, "alive") : \
					EST_COL(rp, "at peak"))

/* what a row of a table is about, and its figures */
struct row {
	__u32 pid;
	/* interned, pointers compare; NULL: none */
	const char *module, *line, *lib;
	__u64 bytes, count; /* at the peak (or what the table is about) */
	__u64 end, end_count; /* alive when the trace ended */
	__u64 alloc, allocs; /* allocated over the trace */
	/* of allocs, sampled: those walked and what they stand for */
	__u64 walked;
	double est;
	__u64 own_peak; /* the most of its own bytes alive at once */
};

struct agg {
	struct row *v;
	size_t n, cap;
	__u32 *slots; /* index + 1; 0: empty */
	size_t nslots; /* a power of two, at least twice n */
	bool oom;
};

struct account {
	__u32 pid;
	enum mt_space space;
	enum mt_dev_type dev_type;
	int dev;
	__u64 peak, peak_ts;
	__u64 peak_count; /* its allocations alive then: exact */
	__u32 peak_step;
	const char *peak_phase;
	struct agg by_line, by_module, by_phase;
	bool hidden; /* the allocator's segments of a device c10 covers */
	/*
	 * what the rows' shares are of: peak, or in a sampled trace the
	 * rows' estimated sum where it is more (see set_wholes)
	 */
	__u64 whole;
	__u64 kinds[MT_MK_MAX]; /* exact bytes at the peak (memkind.h) */
};

struct report {
	struct mt_session *s;
	const struct mt_summary_end *end;
	struct mt_table_style st;
	FILE *out;
	/*
	 * --at: only what was alive at one moment, SECS into the trace
	 * (at_secs) or at each account's peak; the report's other tables,
	 * about the whole trace, are left out
	 */
	bool view, at_peak;
	double at_secs;
	struct account acc[MAX_ACCOUNTS];
	size_t nacc;
	__u64 unshown; /* groups of accounts beyond MAX_ACCOUNTS */
	bool many_pids;
};

static __u64 row_hash(const struct row *k)
{
	return mt_mix64((__u64)(uintptr_t)k->module * 31 ^
			(__u64)(uintptr_t)k->line * 7 ^
			(__u64)(uintptr_t)k->lib ^ k->pid);
}

static bool row_match(const void *tab, size_t i, const void *key)
{
	const struct mt_index *x = tab;
	const struct row *r = (const struct row *)x->ents + x->slots[i] - 1;
	const struct row *k = key;

	return r->pid == k->pid && r->module == k->module &&
	       r->line == k->line && r->lib == k->lib;
}

static int agg_rehash(struct agg *a, size_t nslots)
{
	__u32 *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		struct mt_index x = { .slots = slots, .ents = a->v };
		size_t j = mt_probe(&x, nslots - 1, row_hash(&a->v[i]),
				    mt_index_used, NULL, NULL);

		slots[j] = (__u32)i + 1;
	}
	free(a->slots);
	a->slots = slots;
	a->nslots = nslots;
	return 0;
}

/* the row of key's (pid, module, line, lib), made if new; NULL: no memory */
static struct row *agg_get(struct agg *a, const struct row *key)
{
	struct mt_index x;
	size_t i;

	if ((a->n + 1) * 2 > a->nslots &&
	    agg_rehash(a, a->nslots ? a->nslots * 2 : 256)) {
		a->oom = true;
		return NULL;
	}
	x = (struct mt_index){ .slots = a->slots, .ents = a->v };
	i = mt_probe(&x, a->nslots - 1, row_hash(key), mt_index_used, row_match,
		     key);
	if (a->slots[i])
		return &a->v[a->slots[i] - 1];
	if (mt_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v))) {
		a->oom = true;
		return NULL;
	}
	a->v[a->n] = (struct row){ .pid = key->pid,
				   .module = key->module,
				   .line = key->line,
				   .lib = key->lib };
	a->slots[i] = (__u32)++a->n;
	return &a->v[a->n - 1];
}

static void agg_free(struct agg *a)
{
	free(a->v);
	free(a->slots);
	memset(a, 0, sizeof(*a));
}

/* a frame of PyTorch or the interpreter, not the user's own line */
/*
 * The line a reader acts on: the innermost frame of the program's own
 * code, else the innermost frame, else the autograd node, else the call
 * (and its library in *lib).
 */
static const char *site_line(const struct mt_site *s, const char **lib)
{
	const char *own = mt_site_own_frame(s);

	*lib = NULL;
	if (!s || own)
		return own;
	if (s->depth)
		return s->frames[0];
	if (s->node)
		return s->node;
	*lib = s->caller;
	return s->event;
}

static const char *show_line(char *buf, size_t len, const struct row *r)
{
	if (!r->line)
		return "-";
	if (!r->lib)
		return r->line;
	snprintf(buf, len, "%s (%s)", r->line, r->lib);
	return buf;
}

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

/*
 * A module as a reader sees it: "-" (a Python process outside every
 * module) spelled out; NULL (no Python) stays "-".
 */
static const char *module_name(const char *m)
{
	if (!m)
		return "-";
	return strcmp(m, "-") ? m : "(no module)";
}

static const char *pct(char *buf, size_t len, __u64 part, __u64 total)
{
	snprintf(buf, len, "%.1f%%",
		 total ? 100.0 * (double)part / (double)total : 0.0);
	return buf;
}

static bool below(const struct report *rp, __u64 part, __u64 total)
{
	double limit = rp->s->conf.percent_limit;

	/* of a total of nothing, nothing is worth a row */
	return !total ||
	       (limit > 0 && (double)part * 100.0 < limit * (double)total);
}

static struct account *account_of(struct report *rp, __u32 pid,
				  enum mt_space space,
				  enum mt_dev_type dev_type, int dev)
{
	for (size_t i = 0; i < rp->nacc; i++) {
		struct account *a = &rp->acc[i];

		if (a->pid == pid && a->space == space &&
		    a->dev_type == dev_type && a->dev == dev)
			return a;
	}
	return NULL;
}

/* the line of the allocations the peak's group table had no room for */
static const char NO_GROUP_SLOT[] = "(no group slot left)";

static void add_group(const struct mt_peak_group *g, void *ctx)
{
	struct report *rp = ctx;
	struct account *a =
		account_of(rp, g->pid, g->space, g->dev_type, g->dev);
	const struct mt_site *s = g->site;
	struct row k = { .pid = g->pid }, *r;

	/* unsampled allocations only (--sample-bytes): they stand for none */
	if (!g->count)
		return;
	if (!a) {
		if (rp->nacc == MAX_ACCOUNTS) {
			rp->unshown++;
			return;
		}
		a = &rp->acc[rp->nacc++];
		*a = (struct account){ .pid = g->pid,
				       .space = g->space,
				       .dev_type = g->dev_type,
				       .dev = g->dev,
				       .peak = g->peak,
				       .peak_count = g->peak_count,
				       .peak_ts = g->peak_ts,
				       .peak_step = g->peak_step,
				       .peak_phase = g->peak_phase };
	}
	k.module = s ? s->module : NULL;
	k.line = g->unfit ? NO_GROUP_SLOT : site_line(s, &k.lib);
	r = agg_get(&a->by_line, &k);
	if (r) {
		r->bytes += g->bytes;
		r->count += g->count;
	}
	k.line = k.lib = NULL;
	r = agg_get(&a->by_module, &k);
	if (r) {
		r->bytes += g->bytes;
		r->count += g->count;
	}
	k.module = s ? s->phase : NULL;
	r = agg_get(&a->by_phase, &k);
	if (r) {
		r->bytes += g->bytes;
		r->count += g->count;
	}
}

/* the modules' own figures (summary.c) into their accounts' module rows */
static void add_owns(struct report *rp)
{
	const struct mt_summary *sum = &rp->s->sum;

	for (size_t i = 0; i < sum->nowns; i++) {
		const struct mt_module_own *o = &sum->owns[i];
		struct account *a =
			account_of(rp, o->pid, o->space, o->dev_type, o->dev);
		struct row k = { .pid = o->pid, .module = o->module }, *r;

		if (!a || !(r = agg_get(&a->by_module, &k)))
			continue;
		r->end += o->live;
		r->alloc += o->alloc_bytes;
		if (o->peak > r->own_peak)
			r->own_peak = o->peak;
	}
}

static bool reserved_space(enum mt_space sp)
{
	return sp == MT_SP_CUDART || sp == MT_SP_DRIVER || sp == MT_SP_VAMAP ||
	       sp == MT_SP_HANDLE;
}

/* the allocator's segments are hidden where c10's blocks tell more */
static void hide_segments(struct report *rp)
{
	for (size_t i = 0; i < rp->nacc; i++) {
		struct account *a = &rp->acc[i];

		if (a->pid != rp->acc[0].pid)
			rp->many_pids = true;
		if (!reserved_space(a->space))
			continue;
		for (size_t j = 0; j < rp->nacc; j++)
			if (rp->acc[j].space == MT_SP_C10 &&
			    rp->acc[j].pid == a->pid &&
			    rp->acc[j].dev == a->dev)
				a->hidden = true;
	}
}

/*
 * A sampled trace's rows at a moment are estimates of parts of an exact
 * total, and may add up to more than it (a module at 806 % of a 64 KiB
 * peak): their shares are then of their own sum, so that none passes
 * 100 % and together they make 100 %
 */
static void set_wholes(struct report *rp)
{
	for (size_t i = 0; i < rp->nacc; i++) {
		struct account *a = &rp->acc[i];
		__u64 sum = 0;

		for (size_t j = 0; j < a->by_line.n; j++)
			sum += a->by_line.v[j].bytes;
		a->whole = rp->s->conf.sample_bytes && sum > a->peak ? sum :
								       a->peak;
	}
}

static const char *account_name(char *buf, size_t len, const struct report *rp,
				const struct account *a)
{
	char acct[64], pid[32] = "";

	if (rp->many_pids)
		snprintf(pid, sizeof(pid), " pid %u", a->pid);
	snprintf(buf, len, "%s%s",
		 mt_format_account(acct, sizeof(acct), a->dev_type, a->dev,
				   a->space),
		 pid);
	return buf;
}

static int by_bytes_then_end(const void *pa, const void *pb)
{
	const struct row *x = pa, *y = pb;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->alloc != y->alloc)
		return x->alloc > y->alloc ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_alloc(const void *pa, const void *pb)
{
	const struct row *x = pa, *y = pb;

	if (x->alloc != y->alloc)
		return x->alloc > y->alloc ? -1 : 1;
	return by_bytes_then_end(pa, pb);
}

static int by_end(const void *pa, const void *pb)
{
	const struct row *x = pa, *y = pb;

	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return by_alloc(pa, pb);
}

/* the (module, line) row holding most at a's peak; NULL: none */
static const struct row *top_line(const struct account *a)
{
	const struct row *best = NULL;

	for (size_t i = 0; i < a->by_line.n; i++)
		if (!best || a->by_line.v[i].bytes > best->bytes)
			best = &a->by_line.v[i];
	return best;
}

static void heading(const struct report *rp, const char *title)
{
	fprintf(rp->out, "\n%s%s%s\n", mt_table_tone_on(&rp->st, MT_TONE_BOLD),
		title, mt_table_tone_off(&rp->st));
}

/*
 * A headline: a label (or blanks) and its text in a tone, the text
 * escaped (it may name the target's modules and files), wrapped at blanks
 * to the width, its later lines under its first.
 */
static void headline(const struct report *rp, const char *label,
		     enum mt_table_tone tone, const char *raw)
{
	struct mt_esc e = { 0 };
	const char *text = mt_esc(&e, raw, MT_ESC_TEXT);
	size_t w = rp->st.width > LABEL_WIDTH + 1 + MT_TABLE_MIN_ELIDED ?
			   rp->st.width - LABEL_WIDTH - 1 :
			   MT_TABLE_MIN_ELIDED;
	const char *on = mt_table_tone_on(&rp->st, tone);

	do {
		size_t n = strlen(text), cut = n;

		if (mt_table_text_width(text) > w) {
			/* the last blank that fits; none: cut where it must */
			cut = w;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (!cut)
				cut = w;
		}
		fprintf(rp->out, "%s%-*s%s %s%.*s%s\n",
			mt_table_tone_on(&rp->st, MT_TONE_BOLD), LABEL_WIDTH,
			label ? label : "", mt_table_tone_off(&rp->st), on,
			(int)cut, text, *on ? mt_table_tone_off(&rp->st) : "");
		label = NULL;
		text += cut;
		while (*text == ' ')
			text++;
	} while (*text);
}

/* room left on a headline line after LABEL_WIDTH and used characters */
static size_t room(const struct report *rp, size_t used)
{
	size_t taken = LABEL_WIDTH + 1 + used;

	return rp->st.width > taken + MT_TABLE_MIN_ELIDED ?
		       rp->st.width - taken :
		       MT_TABLE_MIN_ELIDED;
}

/*
 * What an account held before the trace began (an attach with -p): the
 * caching allocator's own totals at the first event say it for a CUDA
 * device; for the CPU, only the frees of that memory are seen. Its owner
 * is unknown and its bytes are not in the peak, which is since then.
 */
static void headline_before(const struct report *rp, const struct account *a)
{
	const struct mt_summary *sum = &rp->s->sum;
	const struct mt_proc *p = mt_session_proc(rp->s, a->pid);
	bool cpu_frees = a->space == MT_SP_CPU && sum->early_frees;
	char text[400], b1[32], b2[32], frees[48] = "";

	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *d = &sum->devs[i];

		if (d->pid != a->pid || d->type != a->dev_type ||
		    d->index != a->dev || d->space != a->space ||
		    !d->before_allocated)
			continue;
		snprintf(text, sizeof(text),
			 "  before the attach: %s allocated, %s reserved",
			 mt_format_bytes(b1, sizeof(b1), d->before_allocated),
			 mt_format_bytes(b2, sizeof(b2), d->before_reserved));
		headline(rp, NULL, MT_TONE_YELLOW, text);
		return;
	}
	if (!cpu_frees && !(p && p->attached))
		return;
	if (cpu_frees)
		snprintf(frees, sizeof(frees),
			 " (%" PRIu64 " frees of it seen)",
			 (uint64_t)sum->early_frees);
	snprintf(text, sizeof(text),
		 "  since the attach: what it held before is not in this "
		 "peak%s",
		 frees);
	headline(rp, NULL, MT_TONE_YELLOW, text);
}

static void add_kinds(const struct mt_peak_kinds *k, void *ctx)
{
	struct account *a =
		account_of(ctx, k->pid, k->space, k->dev_type, k->dev);

	if (a && mt_space_is_tensor(k->space))
		memcpy(a->kinds, k->bytes, sizeof(a->kinds));
}

/*
 * What kind of memory the peak held, largest first, and what helps with
 * the largest known kind
 */
static void headline_kinds(const struct report *rp, const struct account *a)
{
	int order[MT_MK_MAX], nk, n, first = -1;
	char text[600], p[16];
	__u64 sum;

	nk = mt_memkind_by_size(a->kinds, order, &sum);
	if (!nk)
		return;
	n = snprintf(text, sizeof(text), "  kinds:");
	for (int i = 0, shown = 0; i < nk && n > 0 && (size_t)n < sizeof(text);
	     i++) {
		int k = order[i];

		/* what would print as 0.0% is left out */
		if (a->kinds[k] * 2000 < sum)
			break;
		if (first < 0 && k != MT_MK_UNKNOWN)
			first = k;
		n += snprintf(text + n, sizeof(text) - (size_t)n, "%s %s %s",
			      shown++ ? "," : "", mt_memkind_name(k),
			      pct(p, sizeof(p), a->kinds[k], sum));
	}
	headline(rp, NULL, MT_TONE_PLAIN, text);
	if (first < 0 || !mt_memkind_remedy(first))
		return;
	snprintf(text, sizeof(text), "  for %s: %s", mt_memkind_name(first),
		 mt_memkind_remedy(first));
	headline(rp, NULL, MT_TONE_PLAIN, text);
}

static void headline_peaks(const struct report *rp)
{
	bool any = false;

	for (size_t i = 0; i < rp->nacc; i++) {
		const struct account *a = &rp->acc[i];
		const struct row *top = top_line(a);
		char name[64], b[32], text[600], line[512], el[512], p[16];
		double at = a->peak_ts > rp->s->t0 ?
				    (double)(a->peak_ts - rp->s->t0) / 1e9 :
				    0;
		int n;

		if (a->hidden || !a->peak)
			continue;
		n = snprintf(text, sizeof(text), "%s: %s at %.3f s",
			     account_name(name, sizeof(name), rp, a),
			     mt_format_bytes(b, sizeof(b), a->peak), at);
		/* a dump's steps began with its window: the process's are more */
		if (n > 0 && rp->s->sum.attributed)
			snprintf(text + n, sizeof(text) - (size_t)n,
				 ", step %s%u, %s",
				 rp->s->win_last ? ">= " : "", a->peak_step,
				 or_dash(a->peak_phase));
		headline(rp, any ? NULL : "Peak", MT_TONE_BOLD, text);
		any = true;
		headline_before(rp, a);
		headline_kinds(rp, a);
		if (!top)
			continue;
		snprintf(text, sizeof(text), "  most held%s%s: %s%s, %s",
			 top->module ? " by " : "",
			 top->module ? module_name(top->module) : "",
			 rp->s->conf.sample_bytes ? "~" : "",
			 mt_format_bytes(b, sizeof(b), top->bytes),
			 pct(p, sizeof(p), top->bytes, a->whole));
		headline(rp, NULL, MT_TONE_PLAIN, text);
		mt_table_elide(el, sizeof(el),
			       show_line(line, sizeof(line), top), room(rp, 5));
		snprintf(text, sizeof(text), "  at %s", el);
		headline(rp, NULL, MT_TONE_PLAIN, text);
	}
	if (!any)
		headline(rp, "Peak", MT_TONE_PLAIN,
			 "no memory seen allocated and alive");
}

struct suspects {
	struct mt_leak_suspect v[MAX_SUSPECTS];
	size_t n;
};

static void keep_suspect(const struct mt_leak_suspect *k, void *ctx)
{
	struct suspects *s = ctx;

	if (s->n < MAX_SUSPECTS)
		s->v[s->n++] = *k;
}

/*
 * A dump's verdict, on its window alone: what its slices show, and the
 * slowest leak they could show
 */
static void headline_window_leaks(const struct report *rp,
				  const struct mt_leak_verdict *vd)
{
	double w = vd->window_s, sl = w / MT_LEAK_SLICES;
	char text[512];

	if (vd->growing) {
		snprintf(text, sizeof(text),
			 "%zu allocation group%s (call and size, every "
			 "allocation counted) kept memory from each of %d "
			 "slices in a row of the dump's %.3g s window (%d "
			 "slices): leak suspects below",
			 vd->growing, vd->growing == 1 ? "" : "s",
			 vd->needed - 1, w, MT_LEAK_SLICES);
		headline(rp, "Leaks", MT_TONE_RED, text);
	} else if (vd->undecided) {
		snprintf(text, sizeof(text),
			 "cannot tell: %zu allocation group%s kept memory from "
			 "some of the %d slices of the dump's %.3g s window, "
			 "never from %d in a row (a leak slower than one "
			 "allocation every %.3g s, or state still filling); a "
			 "longer --flight window decides",
			 vd->undecided, vd->undecided == 1 ? "" : "s",
			 MT_LEAK_SLICES, w, vd->needed - 1, sl);
		headline(rp, "Leaks", MT_TONE_YELLOW, text);
	} else if (vd->judged) {
		snprintf(text, sizeof(text),
			 "none in the dump's %.3g s window: no allocation "
			 "group kept memory from its slices (a leak slower "
			 "than one allocation every %.3g s would not show)",
			 w, sl);
		headline(rp, "Leaks", MT_TONE_GREEN, text);
	} else {
		snprintf(text, sizeof(text),
			 "cannot tell: the window holds %" PRIu64
			 " boundaries, %d needed",
			 (uint64_t)vd->boundaries, vd->needed);
		headline(rp, "Leaks", MT_TONE_PLAIN, text);
	}
}

static void headline_leaks(const struct report *rp,
			   const struct mt_leak_verdict *vd)
{
	char text[256];

	if (vd->window_s > 0) {
		headline_window_leaks(rp, vd);
	} else if (vd->growing) {
		snprintf(text, sizeof(text),
			 "%zu call site%s grew at each of the last %d "
			 "boundaries (steps, or --leak-age): leak suspects "
			 "below",
			 vd->growing, vd->growing == 1 ? "" : "s",
			 vd->needed - 1);
		headline(rp, "Leaks", MT_TONE_RED, text);
	} else if (vd->judged) {
		snprintf(text, sizeof(text),
			 "none: no call site grew at each of the last %d "
			 "boundaries (%" PRIu64 " seen)",
			 vd->needed - 1, (uint64_t)vd->boundaries);
		headline(rp, "Leaks", MT_TONE_GREEN, text);
	} else {
		snprintf(text, sizeof(text),
			 "not judged: %" PRIu64 " boundar%s seen, %d needed "
			 "(optimizer steps, or --leak-age TIME)",
			 (uint64_t)vd->boundaries,
			 vd->boundaries == 1 ? "y" : "ies", vd->needed);
		headline(rp, "Leaks", MT_TONE_PLAIN, text);
	}
	if (vd->uncounted) {
		snprintf(text, sizeof(text),
			 "%" PRIu64 " allocations not counted: the leak "
			 "check's site table was full",
			 (uint64_t)vd->uncounted);
		headline(rp, NULL, MT_TONE_YELLOW, text);
	}
}

/* a dump's processes the kernel's OOM killer took: true if any */
static bool headline_oomkills(const struct report *rp, const char **label)
{
	char text[256];
	bool any = false;

	for (size_t i = 0; i < rp->s->nended; i++) {
		const struct mt_ended *e = &rp->s->ended[i];

		if (e->how != MT_END_OOMKILL)
			continue;
		snprintf(text, sizeof(text),
			 "pid %u: the kernel's OOM killer took it (its memory "
			 "cgroup's oom_kill rose)%s%s",
			 e->pid, e->code > 0 ? ", killed by SIG" : "",
			 e->code > 0 ? sigabbrev_np(e->code) ?: "?" : "");
		headline(rp, *label, MT_TONE_RED, text);
		*label = NULL;
		any = true;
	}
	return any;
}

/*
 * torch's OutOfMemoryError raised with no allocation seen failing: a
 * failure before the trace or its window, or the error raised by hand
 */
static void headline_raised_oom(const struct report *rp, const char *label,
				const struct mt_oom_counts *c)
{
	char text[600], line[512], el[512];
	struct row r = { 0 };

	r.line = site_line(c->raised_oom_site, &r.lib);
	snprintf(text, sizeof(text),
		 "%" PRIu64 " OutOfMemoryError%s raised, no allocation seen "
		 "failing",
		 (uint64_t)c->raised_oom, c->raised_oom == 1 ? "" : "s");
	headline(rp, label, MT_TONE_RED, text);
	mt_table_elide(el, sizeof(el), show_line(line, sizeof(line), &r),
		       room(rp, 5));
	snprintf(text, sizeof(text), "  at %s", el);
	headline(rp, NULL, MT_TONE_PLAIN, text);
}

static void headline_ooms(const struct report *rp)
{
	const struct mt_summary *sum = &rp->s->sum;
	const char *label = "OOMs";
	struct mt_oom_counts c;
	__u64 failed = 0;
	char text[256];
	bool killed = headline_oomkills(rp, &label);

	mt_oom_counts(rp->s->oom, &c);
	for (size_t i = 0; i < sum->nfails; i++)
		failed += sum->fails[i].count;
	if (c.failures || c.gave_up) {
		snprintf(text, sizeof(text),
			 "%" PRIu64 " allocation%s failed for want of memory, "
			 "the allocator retried %" PRIu64
			 " and gave up %" PRIu64
			 " time%s (the '# oom' blocks above)",
			 (uint64_t)c.failures, c.failures == 1 ? "" : "s",
			 (uint64_t)c.retries, (uint64_t)c.gave_up,
			 c.gave_up == 1 ? "" : "s");
		headline(rp, label, MT_TONE_RED, text);
	} else if (c.raised_oom) {
		headline_raised_oom(rp, label, &c);
	} else if (!killed) {
		headline(rp, label, MT_TONE_GREEN, "none");
	}
	if (failed > c.failures) {
		snprintf(text, sizeof(text),
			 "%" PRIu64 " other failed call%s (--keys: '# failed')",
			 (uint64_t)(failed - c.failures),
			 failed - c.failures == 1 ? "" : "s");
		headline(rp, NULL, MT_TONE_YELLOW, text);
	}
}

struct nvsmi_ctx {
	const struct report *rp;
	const char *label;
};

static void nvsmi_line(const char *text, bool foreign, void *ctx)
{
	struct nvsmi_ctx *c = ctx;

	headline(c->rp, c->label, foreign ? MT_TONE_YELLOW : MT_TONE_PLAIN,
		 text);
	c->label = NULL;
}

/*
 * --watch: each process's memory as nvidia-smi showed it at its highest,
 * in the parts the trace explains ('# nvidia_smi' says it in keys)
 */
static void headline_nvsmi(const struct report *rp)
{
	struct nvsmi_ctx c = { rp, "nvidia-smi" };

	if (rp->s->nvsmi)
		mt_nvsmi_lines(rp->s->nvsmi, mt_session_rank_of, rp->s,
			       nvsmi_line, &c);
}

/*
 * How a dump's process died, as its tracer saw it end: killed by a signal,
 * or exited with a failure status (and the exception it raised last,
 * where --trace-exceptions traced it). Nothing when none is known: only a
 * dump says how its process ended.
 */
static void headline_died(const struct report *rp)
{
	const char *label = "Died";
	char text[512];

	for (size_t i = 0; i < rp->s->nended; i++) {
		const struct mt_ended *e = &rp->s->ended[i];

		if (e->how == MT_END_SIGNAL)
			snprintf(text, sizeof(text),
				 "pid %u: killed by SIG%s (%s)", e->pid,
				 sigabbrev_np(e->code) ?: "?",
				 strsignal(e->code));
		else if (e->how == MT_END_EXIT)
			snprintf(text, sizeof(text),
				 "pid %u: exited with status %d%s%s", e->pid,
				 e->code,
				 e->raised[0] ? "; the last exception "
						"it raised: " :
						"",
				 e->raised);
		else
			continue;
		headline(rp, label, MT_TONE_RED, text);
		label = NULL;
	}
}

/* what a filter left out, said where the figures it narrows are read */
static void headline_filter(const struct report *rp)
{
	struct mt_filter_stats st;
	char set[256] = "", text[512];
	FILE *m;

	if (!rp->s->filter)
		return;
	mt_filter_stats(rp->s->filter, &st);
	m = fmemopen(set, sizeof(set) - 1, "w");
	if (m) {
		mt_filter_print_settings(rp->s->filter, m);
		if (fclose(m))
			set[0] = '\0';
	}
	snprintf(text, sizeof(text),
		 "%s: %" PRIu64 " of %" PRIu64
		 " events counted; every figure below is of those",
		 set[0] == ' ' ? set + 1 : set, (uint64_t)st.passed,
		 (uint64_t)(st.passed + st.dropped));
	headline(rp, "Filter", MT_TONE_YELLOW, text);
}

/* --sample-bytes: which figures are estimates, which exact */
static void headline_sampled(const struct report *rp)
{
	const struct mt_session *s = rp->s;
	char rate[128], text[512];

	if (!s->conf.sample_bytes)
		return;
	snprintf(text, sizeof(text), "%s%s",
		 mt_session_sample_rate(s, rate, sizeof(rate)),
		 s->sample_walked ?
			 "; module and line figures (~) are "
			 "estimates, totals exact" :
			 ": no module or line figures; totals exact");
	headline(rp, "Sampled", MT_TONE_YELLOW, text);
}

/*
 * One line of the Unseen headline: the label on the first line printed
 * only (*label NULL after it)
 */
static void __attribute__((format(printf, 3, 4)))
unseen_line(const struct report *rp, const char **label, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	headline(rp, *label, MT_TONE_YELLOW, text);
	*label = NULL;
}

static void headline_unseen(const struct report *rp)
{
	const struct mt_summary *sum = &rp->s->sum;
	const struct mt_summary_end *end = rp->end;
	const char *label = "Unseen";
	struct mt_live_stats st;
	char b[32], known[64] = "", unsized[64] = "";

	mt_live_stats(rp->s->live, &st);
	if (end->cut_short)
		unseen_line(rp, &label,
			    "the record was cut short at %.3f s (its recorder "
			    "killed, or its disk full): what came after is "
			    "missing, and how many events were lost is unknown",
			    end->seconds);
	if (end->lost)
		unseen_line(rp, &label,
			    "%" PRIu64 " events lost (ring buffer full: "
			    "--ringbuf-mb); every figure is low",
			    (uint64_t)end->lost);
	if (end->unseen.stacks_lost)
		unseen_line(rp, &label,
			    "%" PRIu64 " events have no Python stack (not "
			    "stored, not readable, or a walk cut short): their "
			    "lines are unknown",
			    (uint64_t)end->unseen.stacks_lost);
	if (end->unseen.stacks_early)
		unseen_line(
			rp, &label,
			"%" PRIu64 " events have no Python stack: they came "
			"before the tracer had read their process's CPython "
			"(its first moments): their lines and modules are "
			"unknown",
			(uint64_t)end->unseen.stacks_early);
	if (end->unseen.stacks_unread)
		unseen_line(rp, &label,
			    "%" PRIu64 " events' Python stacks could not all "
			    "be read when named (their process had exited, or "
			    "the code was freed): frames say [unknown], and "
			    "their modules and phases may be missing",
			    (uint64_t)end->unseen.stacks_unread);
	if (end->unseen.nodes)
		unseen_line(
			rp, &label,
			"%" PRIu64 " backward allocations (%s) have no "
			"module: the forward that made their autograd Node "
			"ran before the attach",
			(uint64_t)end->unseen.nodes,
			mt_format_bytes(b, sizeof(b), end->unseen.node_bytes));
	if (end->unseen.children)
		unseen_line(rp, &label,
			    "the command started %" PRIu64 " process%s (the "
			    "first: pid %u), not traced: -- traces the "
			    "command's own process, -f what it starts too",
			    (uint64_t)end->unseen.children,
			    end->unseen.children == 1 ? "" : "es",
			    end->unseen.first_child);
	if (sum->early_frees) {
		if (sum->early_frees > sum->early_unsized)
			snprintf(known, sizeof(known), ", %s known",
				 mt_format_bytes(b, sizeof(b),
						 sum->early_bytes));
		if (sum->early_unsized)
			snprintf(unsized, sizeof(unsized),
				 ", %" PRIu64 " of unknown size",
				 (uint64_t)sum->early_unsized);
		unseen_line(rp, &label,
			    "%" PRIu64 " frees of memory allocated before the "
			    "attach%s%s",
			    (uint64_t)sum->early_frees, known, unsized);
	}
	if (rp->s->filter) {
		struct mt_filter_stats fs;

		mt_filter_stats(rp->s->filter, &fs);
		if (fs.freed_before_window)
			unseen_line(
				rp, &label,
				"%" PRIu64 " frees (%s) of memory allocated "
				"before the --time/--steps window",
				(uint64_t)fs.freed_before_window,
				mt_format_bytes(b, sizeof(b),
						fs.freed_before_window_bytes));
		if (fs.untracked)
			unseen_line(rp, &label,
				    "%" PRIu64 " frees judged without their "
				    "allocation: the filter's table was full "
				    "(--max-live)",
				    (uint64_t)fs.untracked);
	}
	if (sum->live_full)
		unseen_line(rp, &label,
			    "%" PRIu64 " allocations not tracked: the live "
			    "table was full (--max-live %" PRIu64
			    " holds them all)",
			    (uint64_t)sum->live_full, (uint64_t)st.advise);
	if (sum->untracked || sum->sites_full || sum->procs_evicted)
		unseen_line(rp, &label,
			    "%" PRIu64
			    " events beyond the summary's tables, %" PRIu64
			    " in the sites table's overflow, %" PRIu64
			    " processes evicted",
			    (uint64_t)sum->untracked, (uint64_t)sum->sites_full,
			    (uint64_t)sum->procs_evicted);
	if (label)
		headline(rp, label, MT_TONE_GREEN,
			 "nothing: no event lost, every free paired with "
			 "its allocation");
}

/* the table's rows; a failure to add one only shortens the table */
static void add(struct mt_table *t, enum mt_table_tone tone,
		const char *const *cells)
{
	(void)mt_table_add(t, tone, cells);
}

static void print_table(struct report *rp, struct mt_table *t)
{
	if (t)
		mt_table_print(t, &rp->st, rp->out);
	else
		fprintf(rp->out, "(out of memory)\n");
	mt_table_free(t);
}

/* the cut rows of one parent in the module tree */
struct pending {
	size_t n;
	__u64 incl[MT_TREE_VALS];
};

static void tree_more(struct mt_table *t, int depth, const struct pending *p,
		      __u64 total)
{
	char name[64], b0[32], b1[32], b2[32], pc[16];

	snprintf(name, sizeof(name), "%*s... %zu more", 2 * depth, "", p->n);
	add(t, MT_TONE_DIM,
	    (const char *const[]){
		    name, mt_format_bytes(b0, sizeof(b0), p->incl[0]),
		    pct(pc, sizeof(pc), p->incl[0], total), NULL, NULL,
		    mt_format_bytes(b1, sizeof(b1), p->incl[1]),
		    mt_format_bytes(b2, sizeof(b2), p->incl[2]) });
}

enum { V_PEAK, V_END, V_ALLOC, V_OWN_PEAK };

static void print_tree(struct report *rp, const struct account *a)
{
	const struct mt_table_col cols[] = {
		{ "module", MT_TABLE_LEFT, true, 0 },
		{ ALIVE_COL(rp), MT_TABLE_RIGHT, false, 0 },
		{ "%", MT_TABLE_RIGHT, false, 0 },
		{ EST_COL(rp, "self"), MT_TABLE_RIGHT, false, 0 },
		{ EST_COL(rp, "own peak"), MT_TABLE_RIGHT, false, 1 },
		{ EST_COL(rp, "at end"), MT_TABLE_RIGHT, false, 2 },
		{ EST_COL(rp, "allocated"), MT_TABLE_RIGHT, false, 3 },
	};
	/* --at: the moment's own columns; the others are the whole trace's */
	size_t ncols = rp->view ? 4 : sizeof(cols) / sizeof(cols[0]);
	struct mt_tree_in *in = calloc(a->by_module.n + 1, sizeof(*in));
	struct pending pend[MAX_DEPTH] = { 0 };
	__u64 end_total = 0;
	struct mt_tree tree;
	struct mt_table *t;
	int skip_below = -1;

	for (size_t i = 0; in && i < a->by_module.n; i++) {
		const struct row *r = &a->by_module.v[i];

		in[i] = (struct mt_tree_in){
			.name = module_name(r->module),
			.v = { r->bytes, r->end, r->alloc, r->own_peak },
		};
		end_total += r->end;
	}
	if (!in || mt_tree_build(&tree, in, a->by_module.n)) {
		free(in);
		fprintf(rp->out, "(out of memory)\n");
		return;
	}
	free(in);
	t = mt_table_new(cols, ncols);
	for (size_t i = 0; t && i <= tree.n; i++) {
		const struct mt_tree_node *x = i < tree.n ? &tree.v[i] : NULL;
		int d = x ? (x->depth < MAX_DEPTH ? x->depth : MAX_DEPTH - 1) :
			    -1;
		char name[512], b[5][32], pc[16];

		if (x && skip_below >= 0 && d > skip_below)
			continue;
		skip_below = -1;
		/* the cut children of the parents this node is past */
		for (int k = MAX_DEPTH - 1; k > d; k--)
			if (pend[k].n) {
				tree_more(t, k, &pend[k], a->whole);
				memset(&pend[k], 0, sizeof(pend[k]));
			}
		if (!x)
			break;
		if (below(rp, x->incl[V_PEAK], a->whole) &&
		    below(rp, x->incl[V_END], end_total)) {
			pend[d].n++;
			for (int k = 0; k < MT_TREE_VALS; k++)
				pend[d].incl[k] += x->incl[k];
			skip_below = d;
			continue;
		}
		snprintf(name, sizeof(name), "%*s%s", 2 * d, "", x->name);
		add(t, d ? MT_TONE_PLAIN : MT_TONE_BOLD,
		    (const char *const[]){
			    name, mt_format_bytes(b[0], 32, x->incl[V_PEAK]),
			    pct(pc, sizeof(pc), x->incl[V_PEAK], a->whole),
			    mt_format_bytes(b[1], 32, x->self[V_PEAK]),
			    x->self[V_OWN_PEAK] ?
				    mt_format_bytes(b[2], 32,
						    x->self[V_OWN_PEAK]) :
				    "-",
			    mt_format_bytes(b[3], 32, x->incl[V_END]),
			    mt_format_bytes(b[4], 32, x->incl[V_ALLOC]) });
	}
	mt_tree_free(&tree);
	print_table(rp, t);
}

static void print_phases(struct report *rp, struct account *a)
{
	const struct mt_table_col cols[] = {
		{ "phase", MT_TABLE_LEFT, true, 0 },
		{ ALIVE_COL(rp), MT_TABLE_RIGHT, false, 0 },
		{ "%", MT_TABLE_RIGHT, false, 0 },
		{ EST_COL(rp, "count"), MT_TABLE_RIGHT, false, 0 },
	};
	struct mt_table *t = mt_table_new(cols, 4);
	struct row *v = a->by_phase.v;
	char b[32], pc[16], c[32];

	if (a->by_phase.n)
		qsort(v, a->by_phase.n, sizeof(*v), by_bytes_then_end);
	for (size_t i = 0; t && i < a->by_phase.n; i++) {
		snprintf(c, sizeof(c), "%" PRIu64, (uint64_t)v[i].count);
		add(t, MT_TONE_PLAIN,
		    (const char *const[]){
			    or_dash(v[i].module),
			    mt_format_bytes(b, sizeof(b), v[i].bytes),
			    pct(pc, sizeof(pc), v[i].bytes, a->whole), c });
	}
	print_table(rp, t);
}

/* the bytes at the peak by kind of memory, largest first, and what helps */
static void print_kinds(struct report *rp, const struct account *a)
{
	const struct mt_table_col cols[] = {
		{ "kind", MT_TABLE_LEFT, true, 0 },
		{ "at peak", MT_TABLE_RIGHT, false, 0 },
		{ "%", MT_TABLE_RIGHT, false, 0 },
		{ "what helps", MT_TABLE_LEFT, true, 0 },
	};
	struct mt_table *t = mt_table_new(cols, 4);
	int order[MT_MK_MAX], nk;
	char b[32], pc[16];
	__u64 sum;

	nk = mt_memkind_by_size(a->kinds, order, &sum);
	for (int i = 0; t && i < nk; i++)
		add(t, MT_TONE_PLAIN,
		    (const char *const[]){
			    mt_memkind_name(order[i]),
			    mt_format_bytes(b, sizeof(b), a->kinds[order[i]]),
			    pct(pc, sizeof(pc), a->kinds[order[i]], sum),
			    or_dash(mt_memkind_remedy(order[i])) });
	print_table(rp, t);
}

/* rows [from, n) of v, summed into a "... N more" row */
static void more_row(struct mt_table *t, const struct row *v, size_t from,
		     size_t n, size_t ncols, int fig, __u64 total)
{
	__u64 sum = 0, count = 0;
	char what[64], b[32], pc[16], c[32];
	const char *cells[MT_TABLE_MAX_COLS] = { 0 };

	if (from >= n)
		return;
	for (size_t i = from; i < n; i++) {
		sum += fig == V_PEAK ? v[i].bytes :
		       fig == V_END  ? v[i].end :
				       v[i].alloc;
		count += fig == V_PEAK ? v[i].count :
			 fig == V_END  ? v[i].end_count :
					 v[i].allocs;
	}
	snprintf(what, sizeof(what), "... %zu more", n - from);
	snprintf(c, sizeof(c), "%" PRIu64, (uint64_t)count);
	cells[0] = what;
	cells[ncols - 3] = mt_format_bytes(b, sizeof(b), sum);
	cells[ncols - 2] = pct(pc, sizeof(pc), sum, total);
	cells[ncols - 1] = c;
	add(t, MT_TONE_DIM, cells);
}

/*
 * A flat table of rows v: module, line, the figure fig, its percentage of
 * total, its count; at most top rows, none below --percent-limit.
 */
static void print_lines(struct report *rp, struct row *v, size_t n, int fig,
			__u64 total, size_t top, const char *what)
{
	const struct mt_table_col cols[] = {
		{ "module", MT_TABLE_LEFT, false, 0 },
		{ "line", MT_TABLE_LEFT, true, 0 },
		{ what, MT_TABLE_RIGHT, false, 0 },
		{ "%", MT_TABLE_RIGHT, false, 0 },
		{ fig == V_ALLOC ? EST_COL(rp, "allocations") :
				   EST_COL(rp, "count"),
		  MT_TABLE_RIGHT, false, 1 },
	};
	struct mt_table *t;
	size_t i;

	if (!total) {
		fprintf(rp->out, "nothing\n");
		return;
	}
	t = mt_table_new(cols, 5);
	if (n)
		qsort(v, n, sizeof(*v),
		      fig == V_PEAK ? by_bytes_then_end :
		      fig == V_END  ? by_end :
				      by_alloc);
	for (i = 0; t && i < n && i < top; i++) {
		__u64 f = fig == V_PEAK ? v[i].bytes :
			  fig == V_END	? v[i].end :
					  v[i].alloc;
		__u64 c = fig == V_PEAK ? v[i].count :
			  fig == V_END	? v[i].end_count :
					  v[i].allocs;
		char line[512], b[32], pc[16], cs[32], mod[128];

		if (!f || below(rp, f, total))
			break;
		if (rp->many_pids)
			snprintf(mod, sizeof(mod), "%u %s", v[i].pid,
				 module_name(v[i].module));
		else
			snprintf(mod, sizeof(mod), "%s",
				 module_name(v[i].module));
		snprintf(cs, sizeof(cs), "%" PRIu64, (uint64_t)c);
		add(t, MT_TONE_PLAIN,
		    (const char *const[]){ mod,
					   show_line(line, sizeof(line), &v[i]),
					   mt_format_bytes(b, sizeof(b), f),
					   pct(pc, sizeof(pc), f, total), cs });
	}
	/* the rest, without the rows of nothing */
	while (n > i && !(fig == V_PEAK ? v[n - 1].bytes :
			  fig == V_END	? v[n - 1].end :
					  v[n - 1].alloc))
		n--;
	if (t)
		more_row(t, v, i, n, 5, fig, total);
	print_table(rp, t);
}

static void print_account(struct report *rp, struct account *a)
{
	char name[64], b[32], title[256], when[64];
	double at = a->peak_ts > rp->s->t0 ?
			    (double)(a->peak_ts - rp->s->t0) / 1e9 :
			    0;

	if (rp->view && !rp->at_peak)
		snprintf(when, sizeof(when), "at %.3f s", rp->at_secs);
	else
		snprintf(when, sizeof(when), "at the peak");
	/* the exact count the ~count columns below never pass */
	if (rp->view && !rp->at_peak)
		snprintf(title, sizeof(title),
			 "%s: %s in %" PRIu64 " allocation%s alive %s",
			 account_name(name, sizeof(name), rp, a),
			 mt_format_bytes(b, sizeof(b), a->peak),
			 (uint64_t)a->peak_count, a->peak_count == 1 ? "" : "s",
			 when);
	else
		snprintf(title, sizeof(title),
			 "%s: %s in %" PRIu64
			 " allocation%s at the peak, %.3f s",
			 account_name(name, sizeof(name), rp, a),
			 mt_format_bytes(b, sizeof(b), a->peak),
			 (uint64_t)a->peak_count, a->peak_count == 1 ? "" : "s",
			 at);
	heading(rp, title);
	if (rp->s->sum.attributed) {
		if (rp->view)
			fprintf(rp->out, "By module (self: its own):\n");
		else
			fprintf(rp->out,
				"By module (self: its own at the peak; own "
				"peak: the most it held at once):\n");
		print_tree(rp, a);
		fprintf(rp->out, "\nBy phase:\n");
		print_phases(rp, a);
		fprintf(rp->out, "\n");
		/* told at each account's peak: not of another moment */
		if (!rp->view || rp->at_peak) {
			int order[MT_MK_MAX];
			__u64 sum;

			if (mt_memkind_by_size(a->kinds, order, &sum)) {
				fprintf(rp->out, "By kind:\n");
				print_kinds(rp, a);
				fprintf(rp->out, "\n");
			}
		}
	}
	fprintf(rp->out, "Alive %s, by module and line:\n", when);
	print_lines(rp, a->by_line.v, a->by_line.n, V_PEAK, a->whole,
		    rp->s->conf.top_live, ALIVE_COL(rp));
}

static void add_site(struct mt_site *site, void *ctx)
{
	struct agg *a = ctx;
	struct row k = { .pid = site->pid, .module = site->module }, *r;

	if (!site->allocs)
		return;
	k.line = site_line(site, &k.lib);
	r = agg_get(a, &k);
	if (!r)
		return;
	r->alloc += site->alloc_bytes;
	r->walked += site->allocs;
	r->est += site->alloc_est;
}

/* rows by process, then as the call sites' table, ties by name: one order */
static int by_pid_then_alloc(const void *pa, const void *pb)
{
	const struct row *x = *(const struct row *const *)pa;
	const struct row *y = *(const struct row *const *)pb;
	int c;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	c = by_alloc(x, y);
	if (!c)
		c = strcmp(or_dash(x->module), or_dash(y->module));
	if (!c)
		c = strcmp(or_dash(x->line), or_dash(y->line));
	return c ? c : strcmp(or_dash(x->lib), or_dash(y->lib));
}

/*
 * The rows' allocations over the trace: in a sampled trace kept to their
 * process's exact count, as the peak's are to its account's, each
 * process's rows taken in turn (in one order, whatever the table's) so
 * that they never add up past it. false when out of memory.
 */
static bool set_allocs(struct report *rp, struct agg *a)
{
	struct row **v = malloc((a->n ? a->n : 1) * sizeof(*v));
	struct mt_sample_cal cal;

	if (!v)
		return false;
	for (size_t i = 0; i < a->n; i++)
		v[i] = &a->v[i];
	qsort(v, a->n, sizeof(*v), by_pid_then_alloc);
	for (size_t i = 0; i < a->n; i++) {
		if (!i || v[i]->pid != v[i - 1]->pid)
			mt_session_alloc_cal(rp->s, v[i]->pid, &cal);
		v[i]->allocs =
			mt_sample_cal_next(&cal, v[i]->walked, v[i]->est);
	}
	free(v);
	return true;
}

/*
 * What is alive at the end, as the peak's groups are counted: in a
 * sampled trace the same allocations then count the same here as at the
 * peak, each account's rows adding up to no more than its exact count
 */
static void add_end(const struct mt_peak_group *g, void *ctx)
{
	struct agg *a = ctx;
	struct row k = { .pid = g->pid }, *r;

	/* unsampled allocations only (--sample-bytes): they stand for none */
	if (!g->count)
		return;
	k.module = g->site ? g->site->module : NULL;
	k.line = g->unfit ? NO_GROUP_SLOT : site_line(g->site, &k.lib);
	r = agg_get(a, &k);
	if (!r)
		return;
	r->end += g->bytes;
	r->end_count += g->count;
}

/* false when out of memory: some rows are missing */
static bool print_sites(struct report *rp)
{
	struct agg a = { 0 };
	__u64 alloc = 0, end = 0;
	bool ok;

	mt_sites_foreach(rp->s->sites, add_site, &a);
	ok = set_allocs(rp, &a);
	ok = !mt_peak_foreach_now(rp->s->live, add_end, &a) && !a.oom && ok;
	for (size_t i = 0; i < a.n; i++) {
		alloc += a.v[i].alloc;
		end += a.v[i].end;
	}
	heading(rp, "Top call sites, by bytes allocated");
	print_lines(rp, a.v, a.n, V_ALLOC, alloc, rp->s->conf.top_ops,
		    EST_COL(rp, "allocated"));
	heading(rp, "Still alive when the trace ended");
	fprintf(rp->out, "(not leaks: the leak check is the headline's "
			 "Leaks)\n");
	print_lines(rp, a.v, a.n, V_END, end, rp->s->conf.top_live,
		    EST_COL(rp, "alive at end"));
	agg_free(&a);
	return ok;
}

/* a dump's suspects count every allocation: exact, sampled or not */
#define SUSPECT_COL(rp, title) \
	MT_EST_TITLE((rp)->s->conf.sample_bytes && !(rp)->s->win_last, title)

static void print_suspects(struct report *rp, const struct suspects *sp)
{
	const struct mt_table_col cols[] = {
		{ "module", MT_TABLE_LEFT, false, 0 },
		{ "line", MT_TABLE_LEFT, true, 0 },
		{ SUSPECT_COL(rp, "alive"), MT_TABLE_RIGHT, false, 0 },
		{ SUSPECT_COL(rp, "count"), MT_TABLE_RIGHT, false, 1 },
		{ SUSPECT_COL(rp, "growth"), MT_TABLE_RIGHT, false, 0 },
	};
	struct mt_table *t;

	if (!sp->n)
		return;
	if (rp->s->win_last)
		heading(rp, "Leak suspects: allocations of one call and size "
			    "kept from slice after slice of the window");
	else
		heading(rp, "Leak suspects: alive across steps, growing at "
			    "each");
	t = mt_table_new(cols, 5);
	for (size_t i = 0; t && i < sp->n; i++) {
		const struct mt_leak_suspect *k = &sp->v[i];
		struct row r = { .module = k->site ? k->site->module : NULL };
		char line[512], b[32], g[64], c[32], unit[32], nostack[96];
		double gb = k->bytes_growth < 0 ? -k->bytes_growth :
						  k->bytes_growth;

		r.line = site_line(k->site, &r.lib);
		/* a dump's group none of whose allocations had its stack walked */
		if (!k->site && k->event) {
			snprintf(nostack, sizeof(nostack),
				 "%s size=%" PRIu64 " (%s)", k->event,
				 (uint64_t)k->size, MT_SAMPLE_NO_STACK);
			r.line = nostack;
		}
		if (k->per_seconds > 0)
			snprintf(unit, sizeof(unit), "%.3g s", k->per_seconds);
		else
			snprintf(unit, sizeof(unit), "step");
		snprintf(g, sizeof(g), "%s%s/%s",
			 k->bytes_growth < 0 ? "-" : "+",
			 mt_format_bytes(b, sizeof(b), (__u64)gb), unit);
		snprintf(c, sizeof(c), "%" PRIu64, (uint64_t)k->count);
		add(t, MT_TONE_RED,
		    (const char *const[]){
			    module_name(r.module),
			    show_line(line, sizeof(line), &r),
			    mt_format_bytes(b, sizeof(b), k->bytes), c, g });
	}
	print_table(rp, t);
}

static void free_accounts(struct report *rp)
{
	for (size_t i = 0; i < rp->nacc; i++) {
		agg_free(&rp->acc[i].by_line);
		agg_free(&rp->acc[i].by_module);
		agg_free(&rp->acc[i].by_phase);
	}
}

void mt_report_print(struct mt_session *s, const struct mt_summary_end *end)
{
	struct report rp = { .s = s, .end = end, .out = s->out };
	struct mt_leak_verdict vd;
	struct suspects sp = { 0 };
	bool oom = false;

	mt_table_style_for(s->out, &rp.st);
	if (mt_peak_foreach(s->peak, s->live, add_group, &rp) ||
	    mt_peak_foreach_kinds(s->peak, s->live, mt_session_kind_alive, s,
				  add_kinds, &rp))
		oom = true;
	if (mt_leaks_verdict(s->leaks, &vd, keep_suspect, &sp))
		oom = true;
	set_wholes(&rp);
	add_owns(&rp);
	hide_segments(&rp);
	fprintf(rp.out,
		"%smemtrace-bpf report%s: %.3f s traced, %" PRIu64 " events, ",
		mt_table_tone_on(&rp.st, MT_TONE_BOLD),
		mt_table_tone_off(&rp.st), end->seconds,
		(uint64_t)s->sum.events);
	/* a cut record's lost count is not known: its end block is gone */
	if (end->cut_short)
		fprintf(rp.out, "then cut short: the rest is missing\n\n");
	else
		fprintf(rp.out, "%" PRIu64 " lost\n\n", (uint64_t)end->lost);
	headline_peaks(&rp);
	headline_leaks(&rp, &vd);
	headline_ooms(&rp);
	headline_nvsmi(&rp);
	headline_died(&rp);
	headline_filter(&rp);
	headline_sampled(&rp);
	headline_unseen(&rp);
	for (size_t i = 0; i < rp.nacc; i++)
		if (!rp.acc[i].hidden && rp.acc[i].peak)
			print_account(&rp, &rp.acc[i]);
	print_suspects(&rp, &sp);
	if (!print_sites(&rp))
		oom = true;
	if (oom || rp.unshown)
		fprintf(rp.out,
			"\n(out of memory or past %d device accounts: some "
			"rows are missing)\n",
			MAX_ACCOUNTS);
	fprintf(rp.out,
		"\nEvery figure as key=value lines: --keys (docs/KEYS.md)\n");
	free_accounts(&rp);
}

void mt_report_print_at(struct mt_session *s, bool at_peak, double at_secs)
{
	struct report rp = { .s = s,
			     .out = s->out,
			     .view = true,
			     .at_peak = at_peak,
			     .at_secs = at_secs };
	bool oom;
	size_t shown = 0;

	mt_table_style_for(s->out, &rp.st);
	oom = at_peak ? mt_peak_foreach(s->peak, s->live, add_group, &rp) :
			mt_peak_foreach_now(s->live, add_group, &rp);
	set_wholes(&rp);
	hide_segments(&rp);
	fprintf(rp.out, "%smemtrace-bpf report%s: ",
		mt_table_tone_on(&rp.st, MT_TONE_BOLD),
		mt_table_tone_off(&rp.st));
	if (at_peak)
		fprintf(rp.out,
			"what was alive at each peak, %" PRIu64 " events\n",
			(uint64_t)s->sum.events);
	else
		fprintf(rp.out,
			"what was alive %.3f s after the first event, %" PRIu64
			" events up to then\n",
			at_secs, (uint64_t)s->sum.events);
	headline_filter(&rp);
	headline_sampled(&rp);
	for (size_t i = 0; i < rp.nacc; i++) {
		if (rp.acc[i].hidden || !rp.acc[i].peak)
			continue;
		print_account(&rp, &rp.acc[i]);
		shown++;
	}
	if (!shown)
		fprintf(rp.out, "\nnothing alive\n");
	if (oom || rp.unshown)
		fprintf(rp.out,
			"\n(out of memory or past %d device accounts: some "
			"rows are missing)\n",
			MAX_ACCOUNTS);
	fprintf(rp.out,
		"\nEvery figure as key=value lines: --keys (docs/KEYS.md)\n");
	free_accounts(&rp);
}
