// SPDX-License-Identifier: GPL-2.0
/*
 * At each boundary of a process, the live allocations old enough are
 * counted per site into a short history; a site whose count or bytes rose
 * at each of the last RUN boundaries is a leak. Only the sites seen at a
 * process's latest boundary are kept: one absent there counts 0 at it, and
 * a leak's series must rise to its last sample, so nothing is lost.
 *
 * A flight recorder's dump is judged on its window alone (mt_leaks_window):
 * its steps are not the process's, and in a sampled record only some
 * allocations have a site, so that a site's count rises at a boundary by
 * chance. There allocations are grouped by what every event has exactly,
 * its call and size, each counted once at its size; the line shown is a
 * sampled member's. The window's slices are its boundaries, and a group
 * that grew at any of them stays a suspect: a dump taken at a process's
 * exit ends with its teardown, which frees what leaked.
 *
 * In a sampled trace a site counts its old allocations whose stack was
 * walked; what they stand for (1/p each) is kept beside, and the counts
 * shown are that estimate kept to the process's exact number of old
 * allocations at each boundary (analysis/sample.h), as the report's other
 * counts are.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include "event/format.h"
#include "lib/grow.h"
#include "lib/hashing.h"
#include "lib/limits.h"
#include "analysis/leaks.h"
#include "analysis/sample.h"
#include "analysis/sites.h"

#define RUN 3 /* rises in a row that make a leak */
#define HISTORY (RUN + 1) /* samples a leak is judged on */
#define MAX_PIDS 64
#define MIN_SITES 256
#define SITE_HEADS 4096 /* hash chains, a power of two */
#define MAX_SHOWN 20 /* leaks printed; the rest counted */
#define NONE UINT32_MAX

struct sample {
	__u64 count, bytes;
	double est; /* what the count stands for: itself but when sampled */
};

struct leak_site {
	/* the key; in a window, only shown (a sampled member's, or NULL) */
	const struct mt_site *site;
	const char *event; /* in a window: the key, with size */
	__u64 size;
	struct sample h[HISTORY]; /* by the pid's boundary number % HISTORY */
	__u32 pid; /* 0: free */
	__u32 last; /* the pid's boundary it was last seen at */
	/*
	 * in a window: it grew at some boundary (at: its latest sample and
	 * growth then), or only kept memory from some slices (undecided)
	 */
	bool grew, unsure;
	struct sample at;
	__s64 at_dcount, at_dbytes;
	__u32 next; /* in its chain or the free list */
};

struct leak_pid {
	__u32 pid;
	__u32 n; /* boundaries seen */
	__u32 kind_since; /* first boundary of the present kind */
	bool steps; /* steps, or age_seconds passing */
	__u64 ts[HISTORY];
	__u64 unfit; /* allocations at the last boundary: site table full */
	/*
	 * at each boundary, its sites' counts kept to its old allocations:
	 * how many of those, walked, and what these stand for (summed by the
	 * scan), then the calibration
	 */
	__u64 old, old_walked;
	double old_est;
	struct mt_sample_cal cal[HISTORY];
};

struct mt_leaks {
	struct mt_leak_conf conf;
	struct leak_pid pids[MAX_PIDS];
	size_t npids;
	__u64 unfit_boundaries; /* of processes beyond MAX_PIDS */
	__u32 heads[SITE_HEADS];
	struct leak_site *sites;
	size_t cap, used; /* slots allocated, slots ever handed out */
	__u32 free_list;
	__u64 window_ns; /* a dump's window; 0: a whole trace */
};

struct mt_leaks *mt_leaks_new(const struct mt_leak_conf *c)
{
	struct mt_leaks *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->conf = *c;
	l->sites = calloc(MIN_SITES, sizeof(*l->sites));
	if (!l->sites) {
		free(l);
		return NULL;
	}
	l->cap = MIN_SITES;
	l->free_list = NONE;
	for (size_t i = 0; i < SITE_HEADS; i++)
		l->heads[i] = NONE;
	return l;
}

void mt_leaks_free(struct mt_leaks *l)
{
	if (!l)
		return;
	free(l->sites);
	free(l);
}

/* pid's index, or npids when it has none */
static size_t pid_index(const struct mt_leaks *l, __u32 pid)
{
	size_t i = 0;

	while (i < l->npids && l->pids[i].pid != pid)
		i++;
	return i;
}

static struct leak_pid *pid_get(struct mt_leaks *l, __u32 pid)
{
	size_t i = pid_index(l, pid);

	if (i < l->npids)
		return &l->pids[i];
	if (l->npids == MAX_PIDS)
		return NULL;
	l->pids[l->npids] = (struct leak_pid){ .pid = pid };
	return &l->pids[l->npids++];
}

void mt_leaks_window(struct mt_leaks *l, __u64 window_ns)
{
	l->window_ns = window_ns;
	l->conf.age_seconds = (double)window_ns / 1e9 / MT_LEAK_SLICES;
}

/* e's group: its site, or in a window its call and size */
static bool same_group(const struct mt_leaks *l, const struct leak_site *s,
		       const struct mt_live *e)
{
	if (l->window_ns)
		return s->event == e->event && s->size == e->size;
	return s->site == e->site;
}

static size_t head_of(const struct mt_leaks *l, __u32 pid,
		      const struct mt_live *e)
{
	__u64 k = l->window_ns ?
			  (__u64)(uintptr_t)e->event ^ mt_mix64(e->size) :
			  (__u64)(uintptr_t)e->site;

	return (size_t)mt_mix64(k ^ (__u64)pid << 32) & (SITE_HEADS - 1);
}

/* a zeroed slot off the free list or the array, grown up to MT_MAX_LEAK_SITES */
static struct leak_site *site_alloc(struct mt_leaks *l)
{
	struct leak_site *s;

	if (l->free_list != NONE) {
		s = &l->sites[l->free_list];
		l->free_list = s->next;
	} else {
		if (l->used == MT_MAX_LEAK_SITES ||
		    mt_grow((void **)&l->sites, &l->cap, l->used + 1,
			    sizeof(*l->sites)))
			return NULL;
		s = &l->sites[l->used++];
	}
	*s = (struct leak_site){ 0 };
	return s;
}

/* e's group's record at boundary n of pid, made if new; NULL when full */
static struct leak_site *site_at(struct mt_leaks *l, __u32 pid,
				 const struct mt_live *e, __u32 n)
{
	size_t head = head_of(l, pid, e);
	struct leak_site *s;

	for (__u32 i = l->heads[head]; i != NONE; i = s->next) {
		s = &l->sites[i];
		if (s->pid != pid || !same_group(l, s, e))
			continue;
		/*
		 * kept from boundary n - 1 (see sweep), or in a window from
		 * before boundaries it was absent at, which count 0: start
		 * sample n
		 */
		for (__u32 b = s->last + 1; b <= n && b <= s->last + HISTORY;
		     b++)
			s->h[b % HISTORY] = (struct sample){ 0 };
		s->last = n;
		return s;
	}
	s = site_alloc(l);
	if (!s)
		return NULL;
	if (l->window_ns) {
		s->event = e->event;
		s->size = e->size;
	} else {
		s->site = e->site;
	}
	s->pid = pid;
	s->last = n;
	s->next = l->heads[head];
	l->heads[head] = (__u32)(s - l->sites);
	return s;
}

struct scan {
	struct mt_leaks *l;
	struct leak_pid *p;
	__u32 step;
	__u64 ts, age_ns;
};

static void count_live(const struct mt_live *e, void *ctx)
{
	struct scan *sc = ctx;
	struct leak_site *s;
	struct sample *h;
	double w;

	if (e->pid != sc->p->pid)
		return;
	/* old enough: alive across age_steps steps, or age_seconds */
	if (sc->step ? (__u64)e->step + sc->l->conf.age_steps > sc->step :
		       e->ts + sc->age_ns > sc->ts)
		return;
	/*
	 * an unsampled allocation of a sampled trace stands for nothing at
	 * a site; it counts in the process's old ones, which the sites'
	 * estimates are kept to
	 */
	if (!sc->l->window_ns && mt_live_unsampled(e)) {
		sc->p->old++;
		return;
	}
	s = site_at(sc->l, e->pid, e, sc->p->n);
	if (!s) {
		sc->p->unfit++;
		return;
	}
	h = &s->h[sc->p->n % HISTORY];
	/* in a window each allocation is itself, at its exact size */
	w = sc->l->window_ns ? 1.0 : mt_live_weight(e);
	h->count++;
	h->est += w;
	sc->p->old++;
	sc->p->old_walked++;
	sc->p->old_est += w;
	if (!sc->l->window_ns) {
		h->bytes += mt_live_est(e);
		return;
	}
	h->bytes += e->size;
	/* the line a reader acts on: a sampled member with the program's own */
	if (!mt_live_unsampled(e) && e->site &&
	    (!s->site ||
	     (!mt_site_own_frame(s->site) && mt_site_own_frame(e->site))))
		s->site = e->site;
}

static bool judged(const struct leak_pid *p);
static bool grows(const struct leak_site *s, const struct leak_pid *p);
static bool undecided(const struct leak_site *s, const struct leak_pid *p);
static const struct sample *sample(const struct leak_site *s,
				   const struct leak_pid *p, int i);

/* a window's groups that grew, or kept some, at p's latest boundary */
static void latch(struct mt_leaks *l, const struct leak_pid *p)
{
	if (!l->window_ns || !judged(p))
		return;
	for (size_t i = 0; i < l->used; i++) {
		struct leak_site *s = &l->sites[i];

		if (s->pid != p->pid || s->last != p->n)
			continue;
		if (grows(s, p)) {
			s->grew = true;
			s->at = *sample(s, p, RUN);
			s->at_dcount =
				(__s64)(s->at.count - sample(s, p, 0)->count);
			s->at_dbytes =
				(__s64)(s->at.bytes - sample(s, p, 0)->bytes);
		} else if (undecided(s, p)) {
			s->unsure = true;
		}
	}
}

/*
 * drop p's sites not seen at its latest boundary: they count 0 there
 * (a window's suspects stay)
 */
static void sweep(struct mt_leaks *l, const struct leak_pid *p)
{
	for (size_t h = 0; h < SITE_HEADS; h++) {
		__u32 *link = &l->heads[h];

		while (*link != NONE) {
			struct leak_site *s = &l->sites[*link];
			__u32 i = *link;

			if (s->pid != p->pid || s->last == p->n || s->grew ||
			    s->unsure) {
				link = &s->next;
				continue;
			}
			*link = s->next;
			s->pid = 0;
			s->next = l->free_list;
			l->free_list = i;
		}
	}
}

void mt_leaks_boundary(struct mt_leaks *l, __u32 pid, __u32 step, __u64 ts,
		       const struct mt_livetable *live)
{
	struct leak_pid *p = pid_get(l, pid);
	struct scan sc = { .l = l, .p = p, .step = step, .ts = ts };

	if (!p) {
		l->unfit_boundaries++;
		return;
	}
	if (l->conf.age_seconds > 0)
		sc.age_ns = (__u64)(l->conf.age_seconds * 1e9);
	p->n++;
	/* growth is judged over boundaries of one kind only */
	if (p->n == 1 || p->steps != (step > 0))
		p->kind_since = p->n;
	p->steps = step > 0;
	p->ts[p->n % HISTORY] = ts;
	p->unfit = 0;
	p->old = p->old_walked = 0;
	p->old_est = 0;
	mt_live_foreach(live, count_live, &sc);
	mt_sample_cal_init(&p->cal[p->n % HISTORY], p->old, p->old_walked,
			   p->old_est);
	latch(l, p);
	sweep(l, p);
}

struct leak {
	const struct leak_site *s;
	const struct leak_pid *p;
	struct sample now; /* its latest sample (a window's: when it grew) */
	double count, dcount; /* now's count (cal_count), and its rise */
	__s64 dbytes; /* over the last RUN boundaries */
};

static bool judged(const struct leak_pid *p)
{
	return p->n - p->kind_since + 1 >= HISTORY;
}

static const struct sample *sample(const struct leak_site *s,
				   const struct leak_pid *p, int i)
{
	return &s->h[(p->n - RUN + (__u32)i) % HISTORY];
}

/* sample(s, p, i)'s count, kept to p's old allocations then */
static double cal_count(const struct leak_site *s, const struct leak_pid *p,
			int i)
{
	const struct sample *x = sample(s, p, i);

	return mt_sample_cal_count(&p->cal[(p->n - RUN + (__u32)i) % HISTORY],
				   x->count, x->est);
}

/* count or bytes rose at each of the last RUN boundaries */
static bool grows(const struct leak_site *s, const struct leak_pid *p)
{
	bool count = true, bytes = true;

	for (int i = 0; i < RUN; i++) {
		const struct sample *a = sample(s, p, i),
				    *b = sample(s, p, i + 1);

		count = count && b->count > a->count;
		bytes = bytes && b->bytes > a->bytes;
	}
	return count || bytes;
}

/*
 * In a window: kept memory from some of its quarters and let none go, but
 * not from each: a leak slower than one allocation a quarter, or state
 * still filling. The window cannot tell which.
 */
static bool undecided(const struct leak_site *s, const struct leak_pid *p)
{
	bool rose = false;

	for (int i = 0; i < RUN; i++) {
		const struct sample *a = sample(s, p, i),
				    *b = sample(s, p, i + 1);

		if (b->bytes < a->bytes)
			return false;
		rose = rose || b->bytes > a->bytes;
	}
	return rose && !grows(s, p);
}

static int by_growth(const void *pa, const void *pb)
{
	const struct leak *x = pa, *y = pb;
	__u32 ix = x->s->site ? x->s->site->id : 0;
	__u32 iy = y->s->site ? y->s->site->id : 0;

	if (x->dbytes != y->dbytes)
		return x->dbytes > y->dbytes ? -1 : 1;
	if (x->dcount != y->dcount)
		return x->dcount > y->dcount ? -1 : 1;
	if (x->s->pid != y->s->pid)
		return x->s->pid < y->s->pid ? -1 : 1;
	return ix < iy ? -1 : ix > iy;
}

/* seconds a boundary of p takes, over the last RUN of them */
static double boundary_seconds(const struct leak_pid *p)
{
	return (double)(p->ts[p->n % HISTORY] - p->ts[(p->n - RUN) % HISTORY]) /
	       1e9 / RUN;
}

static void print_leak(const struct leak *k, bool stacks, FILE *out)
{
	const struct mt_site *site = k->s->site;
	const struct sample *now = &k->now;
	double per = (double)k->dbytes / RUN;
	char unit[32], b[32], g[32];

	if (k->p->steps)
		snprintf(unit, sizeof(unit), "step");
	else
		snprintf(unit, sizeof(unit), "%.3gs", boundary_seconds(k->p));
	fprintf(out,
		"# leak pid=%u growth=%+.2f/%s bytes_growth=%+.0f/%s "
		"(%s%s) count=%" PRIu64 " bytes=%" PRIu64 " (%s) counts=",
		k->s->pid, k->dcount / RUN, unit, per, unit,
		per < 0 ? "-" : "+",
		mt_format_bytes(g, sizeof(g),
				(unsigned long long)(per < 0 ? -per : per)),
		(uint64_t)llround(k->count), (uint64_t)now->bytes,
		mt_format_bytes(b, sizeof(b), now->bytes));
	/* a window's group: its call and size; the site a sampled member's */
	if (k->s->event) {
		fprintf(out, "- size=%" PRIu64 " call=%s stack=%s",
			(uint64_t)k->s->size, k->s->event,
			site ? "sampled" : "none");
	} else {
		for (int i = 0; i <= RUN; i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "",
				(uint64_t)llround(cal_count(k->s, k->p, i)));
	}
	mt_site_print_keys(site, out);
	fputc('\n', out);
	if (stacks && site)
		mt_site_print_stack(site, "#\t", out);
}

/* s is a leak: it grows now, or in a window it grew at a boundary */
static bool is_leak(const struct mt_leaks *l, const struct leak_site *s,
		    const struct leak_pid *p)
{
	if (l->window_ns)
		return s->grew;
	return judged(p) && grows(s, p);
}

size_t mt_leaks_count(const struct mt_leaks *l, __u32 pid)
{
	size_t k = pid_index(l, pid), n = 0;

	if (k == l->npids)
		return 0;
	for (size_t i = 0; i < l->used; i++)
		if (l->sites[i].pid == pid &&
		    is_leak(l, &l->sites[i], &l->pids[k]))
			n++;
	return n;
}

/* the growing sites in *out (to free), largest growth first; -1: no memory */
static ssize_t collect(const struct mt_leaks *l, struct leak **out)
{
	struct leak *v = malloc((l->used ? l->used : 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return -1;
	for (size_t i = 0; i < l->used; i++) {
		const struct leak_site *s = &l->sites[i];
		const struct leak_pid *p;

		if (!s->pid)
			continue;
		p = &l->pids[pid_index(l, s->pid)];
		if (!is_leak(l, s, p))
			continue;
		/* a window's suspect as it was when it grew */
		if (l->window_ns) {
			v[n++] = (struct leak){ .s = s,
						.p = p,
						.now = s->at,
						.count = (double)s->at.count,
						.dcount = (double)s->at_dcount,
						.dbytes = s->at_dbytes };
			continue;
		}
		v[n++] = (struct leak){
			.s = s,
			.p = p,
			.now = *sample(s, p, RUN),
			.count = cal_count(s, p, RUN),
			.dcount = cal_count(s, p, RUN) - cal_count(s, p, 0),
			.dbytes = (__s64)(sample(s, p, RUN)->bytes -
					  sample(s, p, 0)->bytes),
		};
	}
	qsort(v, n, sizeof(*v), by_growth);
	return (ssize_t)n;
}

/* a window's groups that it cannot judge (undecided) */
static size_t count_undecided(const struct mt_leaks *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->used; i++) {
		const struct leak_site *s = &l->sites[i];

		if (!s->pid)
			continue;
		n += s->unsure && !s->grew;
	}
	return n;
}

int mt_leaks_verdict(const struct mt_leaks *l, struct mt_leak_verdict *vd,
		     void (*fn)(const struct mt_leak_suspect *k, void *ctx),
		     void *ctx)
{
	struct leak *v;
	ssize_t n = collect(l, &v);

	*vd = (struct mt_leak_verdict){
		.needed = HISTORY,
		.window_s = (double)l->window_ns / 1e9,
	};
	if (n < 0)
		return -ENOMEM;
	vd->growing = (size_t)n;
	vd->undecided = count_undecided(l);
	for (size_t i = 0; i < l->npids; i++) {
		/* those of the kind judged: steps, or time before any step */
		vd->boundaries += l->pids[i].n - l->pids[i].kind_since + 1;
		if (judged(&l->pids[i]))
			vd->judged = true;
		else
			vd->unjudged++;
		vd->uncounted += l->pids[i].unfit;
	}
	for (ssize_t i = 0; fn && i < n; i++) {
		const struct sample *now = &v[i].now;
		struct mt_leak_suspect k = {
			.site = v[i].s->site,
			.pid = v[i].s->pid,
			.event = v[i].s->event,
			.size = v[i].s->size,
			.count = (__u64)llround(v[i].count),
			.bytes = now->bytes,
			.count_growth = v[i].dcount / RUN,
			.bytes_growth = (double)v[i].dbytes / RUN,
			.per_seconds =
				v[i].p->steps ? 0 : boundary_seconds(v[i].p),
		};

		fn(&k, ctx);
	}
	free(v);
	return 0;
}

void mt_leaks_print(const struct mt_leaks *l, const struct mt_livetable *live,
		    bool stacks, FILE *out)
{
	struct leak *v;
	ssize_t got = collect(l, &v);
	struct mt_live_stats st;
	size_t n, u;
	__u64 seen = 0;
	bool any_judged = false;

	if (got < 0) {
		fprintf(out, "# leaks: out of memory\n");
		return;
	}
	n = (size_t)got;
	mt_live_stats(live, &st);
	for (size_t i = 0; i < l->npids; i++) {
		seen += l->pids[i].n;
		if (judged(&l->pids[i]))
			any_judged = true;
	}
	/* the verdict: growing, none, or unjudged (per process, below) */
	if (n) {
		fprintf(out,
			"# leaks verdict=growing sites=%zu boundaries=%" PRIu64,
			n, (uint64_t)seen);
		if (l->window_ns)
			fprintf(out, " window=%.3fs",
				(double)l->window_ns / 1e9);
		mt_live_mark_table(&st, out);
		fputc('\n', out);
	} else if (any_judged && (u = count_undecided(l))) {
		fprintf(out,
			"# leaks verdict=undecided sites=%zu boundaries=%" PRIu64
			" window=%.3fs",
			u, (uint64_t)seen, (double)l->window_ns / 1e9);
		mt_live_mark_table(&st, out);
		fputc('\n', out);
	} else if (any_judged) {
		fprintf(out, "# leaks verdict=none boundaries=%" PRIu64,
			(uint64_t)seen);
		if (l->window_ns)
			fprintf(out, " window=%.3fs",
				(double)l->window_ns / 1e9);
		mt_live_mark_table(&st, out);
		fputc('\n', out);
	}
	for (size_t i = 0; i < n && i < MAX_SHOWN; i++)
		print_leak(&v[i], stacks, out);
	if (n > MAX_SHOWN)
		fprintf(out, "# leak ... %zu more growing sites\n",
			n - MAX_SHOWN);
	free(v);
	for (size_t i = 0; i < l->npids; i++) {
		const struct leak_pid *p = &l->pids[i];

		if (!judged(p))
			fprintf(out,
				"# leaks pid=%u verdict=unjudged boundaries=%u "
				"needed=%d\n",
				p->pid, p->n - p->kind_since + 1, HISTORY);
		if (p->unfit)
			fprintf(out,
				"# leaks pid=%u uncounted_allocations=%" PRIu64
				" site_table=%d\n",
				p->pid, (uint64_t)p->unfit, MT_MAX_LEAK_SITES);
	}
	if (!l->npids)
		fprintf(out,
			"# leaks verdict=unjudged boundaries=0 needed=%d\n",
			HISTORY);
	if (l->unfit_boundaries)
		fprintf(out,
			"# leaks untracked_boundaries=%" PRIu64
			" max_pids=%d\n",
			(uint64_t)l->unfit_boundaries, MAX_PIDS);
}
