// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/filter.h"
#include "analysis/livetable.h"
#include "lib/err.h"

/*
 * What the filter decided for a live allocation, kept in its entry's seq
 * (the filter's own table: the session's seq numbers are not needed here)
 */
enum verdict {
	V_OUT = 1, /* failed a filter: its free is dropped too */
	V_KEPT, /* counted: its free is, inside the window */
	V_EARLY, /* passed the attributes, made before the window */
};

/* threads and commands kept to name them when one asked for is not */
#define SEEN_MAX 12

struct mt_filter {
	struct mt_filter_conf c;
	/* every live allocation the filter judged, its verdict in seq */
	struct mt_livetable *allocs;
	struct mt_filter_stats st;
	/* which of the values asked for some event had, filtered or not */
	bool pid_seen[MT_FILTER_MAX_VALUES], tid_seen[MT_FILTER_MAX_VALUES];
	bool comm_seen[MT_FILTER_MAX_VALUES], event_seen[MT_FILTER_MAX_VALUES];
	bool module_seen, phase_seen, kind_seen[MT_MK_MAX];
	/* --kind: a bit (1 << kind) each, and those the allocations had */
	unsigned int kinds, kinds_had;
	/* the threads and commands the events had, the first SEEN_MAX */
	__u32 tids_had[SEEN_MAX];
	char comms_had[SEEN_MAX][sizeof(((struct mt_event *)0)->comm) + 1];
	size_t ntids_had, ncomms_had;
	bool more_tids, more_comms;
};

bool mt_filter_conf_any(const struct mt_filter_conf *c)
{
	return c->has_time || c->has_steps || c->npids || c->ntids ||
	       c->ncomms || c->module || c->phase || c->nevents ||
	       c->has_size || c->nkinds;
}

int mt_filter_check_sampled(const struct mt_filter_conf *c, __u64 sample_bytes,
			    char *err, size_t errlen)
{
	const char *opt = c->module    ? "--module" :
			  c->phase     ? "--phase" :
			  c->has_steps ? "--steps" :
					 NULL;

	if (!sample_bytes || !opt)
		return 0;
	snprintf(err, errlen,
		 "%s selects events by their stack, and this trace has stacks "
		 "for a sample of its allocations only (--sample-bytes %llu): "
		 "filter a trace made without --sample-bytes",
		 opt, (unsigned long long)sample_bytes);
	return -EINVAL;
}

int mt_filter_check_event(const char *name, char *err, size_t errlen)
{
	bool is_free = false;

	for (unsigned int k = 1; k < MT_K_MAX; k++) {
		const struct mt_kind_info *ki = mt_kind(k);

		if (!ki || !ki->event)
			continue;
		if (!strcmp(name, ki->event) && ki->role != MT_ROLE_FREE)
			return 0;
		if (!strcmp(name, ki->event) ||
		    (ki->free_event && !strcmp(name, ki->free_event)))
			is_free = true;
	}
	if (is_free)
		snprintf(err, errlen,
			 "--event %s: a free goes with its allocation; name "
			 "the allocating kind (c10:cpu_alloc shows its frees "
			 "too)",
			 name);
	else
		snprintf(err, errlen,
			 "--event %s: no such event kind (the names event "
			 "lines show, e.g. c10:cpu_alloc, c10:alloc, "
			 "cudart:cudaMalloc)",
			 name);
	return -EINVAL;
}

int mt_filter_check_kind(const char *name, char *err, size_t errlen)
{
	char list[256];
	size_t n = 0;

	for (int k = 0; k < MT_MK_MAX; k++) {
		int w;

		if (!strcmp(name, mt_memkind_name(k)))
			return 0;
		w = snprintf(list + n, sizeof(list) - n, "%s%s", k ? ", " : "",
			     mt_memkind_name(k));
		if (w > 0 && (size_t)w < sizeof(list) - n)
			n += (size_t)w;
	}
	snprintf(err, errlen,
		 "--kind %s: no such kind of memory (there are: %s)", name,
		 list);
	return -EINVAL;
}

static enum mt_memkind kind_named(const char *name)
{
	for (int k = 0; k < MT_MK_MAX; k++)
		if (!strcmp(name, mt_memkind_name(k)))
			return (enum mt_memkind)k;
	return MT_MK_MAX;
}

struct mt_filter *mt_filter_new(const struct mt_filter_conf *c, size_t max_live)
{
	struct mt_filter *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->c = *c;
	for (size_t i = 0; i < c->nkinds; i++) {
		enum mt_memkind k = kind_named(c->kinds[i]);

		if (k != MT_MK_MAX)
			f->kinds |= 1u << k;
	}
	f->allocs = mt_live_new(max_live);
	if (!f->allocs) {
		free(f);
		return NULL;
	}
	return f;
}

void mt_filter_free(struct mt_filter *f)
{
	if (!f)
		return;
	mt_live_free(f->allocs);
	free(f);
}

static bool has_u32(const __u32 *v, size_t n, __u32 x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool has_str(const char *const *v, size_t n, const char *x)
{
	for (size_t i = 0; i < n; i++)
		if (x && !strcmp(v[i], x))
			return true;
	return false;
}

/* module is prefix or one of its children: a.b matches a.b.c, not a.bc */
static bool under(const char *module, const char *prefix)
{
	size_t n = strlen(prefix);

	return module && !strncmp(module, prefix, n) &&
	       (module[n] == '\0' || module[n] == '.');
}

/* the attributes of an event of its own (an allocation, or a lone free) */
static bool attributes(const struct mt_filter_conf *c, const struct mt_call *r,
		       const struct mt_site *site)
{
	const struct mt_event *ev = r->ev;

	if (c->npids && !has_u32(c->pids, c->npids, ev->pid))
		return false;
	if (c->ntids && !has_u32(c->tids, c->ntids, ev->tid))
		return false;
	if (c->ncomms) {
		char comm[sizeof(ev->comm) + 1];

		memcpy(comm, ev->comm, sizeof(ev->comm));
		comm[sizeof(ev->comm)] = '\0';
		if (!has_str(c->comms, c->ncomms, comm))
			return false;
	}
	if (c->module && !under(site->module, c->module))
		return false;
	if (c->phase && (!site->phase || strcmp(site->phase, c->phase)))
		return false;
	if (c->nevents && !has_str(c->events, c->nevents, r->event))
		return false;
	if (c->has_size &&
	    (r->size_state != MT_SIZE_KNOWN || r->size < c->size_min ||
	     (c->has_size_max && r->size > c->size_max)))
		return false;
	return true;
}

/* <0 before the window, 0 inside, >0 after */
static int window(const struct mt_filter_conf *c, double secs, __u32 step)
{
	if ((c->has_time && secs < c->t_start) ||
	    (c->has_steps && step < c->step_min))
		return -1;
	if ((c->has_time && c->t_end >= 0 && secs > c->t_end) ||
	    (c->has_steps && step > c->step_max))
		return 1;
	return 0;
}

static bool verdict(struct mt_filter *f, bool pass)
{
	if (pass)
		f->st.passed++;
	else
		f->st.dropped++;
	return pass;
}

/*
 * --kind: whether the allocation of event seq is of a kind asked for (as
 * the first reading told it; one it did not tell is unknown)
 */
static bool kind_passes(struct mt_filter *f, __u64 seq)
{
	enum mt_memkind k =
		f->c.kindmap ? mt_kindmap_get(f->c.kindmap, seq) : MT_MK_MAX;

	if (k == MT_MK_MAX)
		k = MT_MK_UNKNOWN;
	f->kinds_had |= 1u << k;
	for (size_t i = 0; i < f->c.nkinds; i++)
		f->kind_seen[i] |= !strcmp(f->c.kinds[i], mt_memkind_name(k));
	return (f->kinds >> k) & 1;
}

static bool judge_alloc(struct mt_filter *f, const struct mt_call *r,
			const struct mt_site *site, int win, __u64 seq)
{
	enum verdict v = V_OUT;
	struct mt_live e;

	if (attributes(&f->c, r, site) && (!f->kinds || kind_passes(f, seq)))
		v = win < 0 ? V_EARLY : win > 0 ? V_OUT : V_KEPT;
	e = (struct mt_live){ .ptr = r->ptr,
			      .size = r->size,
			      .ts = r->ev->ts,
			      .seq = v,
			      .pid = r->ev->pid,
			      .space = (__u16)r->ki->space };
	/* an address reused without the free we missed replaces its entry */
	if (mt_live_insert(f->allocs, &e))
		f->st.untracked++;
	return verdict(f, v == V_KEPT);
}

static bool judge_free(struct mt_filter *f, const struct mt_call *r,
		       const struct mt_site *site, int win)
{
	struct mt_live e;

	/* never seen allocated (before the trace, or untracked): its own */
	if (!mt_live_remove(f->allocs, r->ev->pid, (__u16)r->ki->space, r->ptr,
			    &e))
		return verdict(f,
			       !win && !f->kinds && attributes(&f->c, r, site));
	if (e.seq == V_EARLY && !win) {
		f->st.freed_before_window++;
		f->st.freed_before_window_bytes += e.size;
	}
	return verdict(f, e.seq == V_KEPT && !win);
}

/* a thread or command the events had, kept to name it later */
static void keep_tid(struct mt_filter *f, __u32 tid)
{
	if (has_u32(f->tids_had, f->ntids_had, tid))
		return;
	if (f->ntids_had == SEEN_MAX)
		f->more_tids = true;
	else
		f->tids_had[f->ntids_had++] = tid;
}

static void keep_comm(struct mt_filter *f, const char *comm)
{
	for (size_t i = 0; i < f->ncomms_had; i++)
		if (!strcmp(f->comms_had[i], comm))
			return;
	if (f->ncomms_had == SEEN_MAX)
		f->more_comms = true;
	else
		snprintf(f->comms_had[f->ncomms_had++], sizeof(f->comms_had[0]),
			 "%s", comm);
}

/* which values asked for this event has, whatever the filter makes of it */
static void note_seen(struct mt_filter *f, const struct mt_call *r,
		      const struct mt_site *site)
{
	const struct mt_filter_conf *c = &f->c;
	const struct mt_event *ev = r->ev;

	for (size_t i = 0; i < c->npids; i++)
		f->pid_seen[i] |= c->pids[i] == ev->pid;
	for (size_t i = 0; i < c->ntids; i++)
		f->tid_seen[i] |= c->tids[i] == ev->tid;
	if (c->ntids)
		keep_tid(f, ev->tid);
	if (c->ncomms) {
		char comm[sizeof(ev->comm) + 1];

		memcpy(comm, ev->comm, sizeof(ev->comm));
		comm[sizeof(ev->comm)] = '\0';
		for (size_t i = 0; i < c->ncomms; i++)
			f->comm_seen[i] |= !strcmp(c->comms[i], comm);
		keep_comm(f, comm);
	}
	for (size_t i = 0; i < c->nevents; i++)
		f->event_seen[i] |= r->event && !strcmp(c->events[i], r->event);
	f->module_seen |= c->module && under(site->module, c->module);
	f->phase_seen |=
		c->phase && site->phase && !strcmp(site->phase, c->phase);
}

bool mt_filter_event(struct mt_filter *f, const struct mt_call *r,
		     const struct mt_site *site, double secs, __u32 step,
		     __u64 seq)
{
	int win = window(&f->c, secs, step);

	note_seen(f, r, site);
	if (r->has_ptr && !r->failed && r->role == MT_ROLE_ALLOC && r->ptr)
		return judge_alloc(f, r, site, win, seq);
	if (r->has_ptr && !r->failed && r->role == MT_ROLE_FREE)
		return judge_free(f, r, site, win);
	/* a failed call, an OOM, a raise: no memory, so of no kind */
	return verdict(f, !win && !f->kinds && attributes(&f->c, r, site));
}

/* the values a trace had, distinct, in the order first met */
#define NAMES_MAX 16
#define NAME_LEN 128

struct names {
	char v[NAMES_MAX][NAME_LEN];
	size_t n;
	bool more;
};

static void add_name(struct names *l, const char *name, size_t len)
{
	char buf[NAME_LEN];

	snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], buf))
			return;
	if (l->n == NAMES_MAX)
		l->more = true;
	else
		memcpy(l->v[l->n++], buf, sizeof(buf));
}

/* "a, b, c" and ", ..." past NAMES_MAX, or "none" */
static const char *join(const struct names *l, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < l->n && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				 l->v[i]);

		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (l->more && n < len)
		snprintf(buf + n, len - n, ", ...");
	return l->n ? buf : "none";
}

/*
 * --module: where to look for what the trace has instead, the deepest of
 * the asked module's parents that some event is under ("" for the top)
 */
struct modules {
	const char *asked;
	size_t base; /* length of that parent in asked; 0: the top */
	struct names had;
};

/* the parents of the asked module some event is under: the deepest */
static void module_base(struct mt_site *site, void *ctx)
{
	struct modules *m = ctx;

	for (size_t len = strlen(m->asked); len > m->base; len--) {
		if (m->asked[len] != '.')
			continue;
		if (site->module && !strncmp(site->module, m->asked, len) &&
		    (site->module[len] == '.' || !site->module[len])) {
			m->base = len;
			return;
		}
	}
}

/* the modules one level below the base: its children, or the top ones */
static void module_names(struct mt_site *site, void *ctx)
{
	struct modules *m = ctx;
	const char *mod = site->module, *from, *dot;

	if (!mod || !strcmp(mod, "-"))
		return;
	if (m->base) {
		if (strncmp(mod, m->asked, m->base) || mod[m->base] != '.')
			return;
		from = mod + m->base + 1;
	} else {
		from = mod;
	}
	dot = strchr(from, '.');
	add_name(&m->had, mod, dot ? (size_t)(dot - mod) : strlen(mod));
}

struct site_names {
	enum { SN_PHASE, SN_PID, SN_KIND } what;
	struct names had;
};

static void site_names(struct mt_site *site, void *ctx)
{
	struct site_names *s = ctx;
	char err[256], pid[16];

	switch (s->what) {
	case SN_PHASE:
		if (site->phase)
			add_name(&s->had, site->phase, strlen(site->phase));
		break;
	case SN_PID:
		snprintf(pid, sizeof(pid), "%u", site->pid);
		add_name(&s->had, pid, strlen(pid));
		break;
	case SN_KIND:
		/* the kinds --event takes: allocating ones */
		if (site->event &&
		    !mt_filter_check_event(site->event, err, sizeof(err)))
			add_name(&s->had, site->event, strlen(site->event));
		break;
	}
}

/*
 * One filter's values that no event had: none of them is an error (1),
 * some a warning (0, and counted in *warned); each names what the trace
 * had instead.
 */
static int said_unseen(const char *opt, const char *noun,
		       const char *const *asked, const bool *seen, size_t n,
		       const char *had_what, const struct names *had,
		       int *warned)
{
	char miss[512] = "", list[NAMES_MAX * (NAME_LEN + 2) + 8];
	size_t unseen = 0, len = 0;

	for (size_t i = 0; i < n; i++) {
		int w;

		if (seen[i])
			continue;
		w = snprintf(miss + len, sizeof(miss) - len, "%s%s",
			     unseen ? "," : "", asked[i]);
		if (w > 0 && (size_t)w < sizeof(miss) - len)
			len += (size_t)w;
		unseen++;
	}
	if (!unseen)
		return 0;
	if (unseen == n) {
		mt_err("%s %s: no event has %s; the trace's %s: %s", opt, miss,
		       n == 1 ? "it" : "any of them", had_what,
		       join(had, list, sizeof(list)));
		return 1;
	}
	mt_err("%s: no event has %s %s (the trace's %s: %s); the others are "
	       "counted",
	       opt, noun, miss, had_what, join(had, list, sizeof(list)));
	(*warned)++;
	return 0;
}

int mt_filter_check_seen(const struct mt_filter *f, struct mt_sites *sites)
{
	const struct mt_filter_conf *c = &f->c;
	char vals[MT_FILTER_MAX_VALUES][16];
	const char *asked[MT_FILTER_MAX_VALUES];
	struct site_names sn;
	struct names had;
	int none = 0, warned = 0;

	/* a trace with no event has nothing to say about the filter */
	if (!f->st.passed && !f->st.dropped)
		return 0;
	if (c->phase && !f->phase_seen) {
		sn = (struct site_names){ .what = SN_PHASE };
		mt_sites_foreach(sites, site_names, &sn);
		none += said_unseen("--phase", "phase", &c->phase,
				    &f->phase_seen, 1, "phases", &sn.had,
				    &warned);
	}
	if (c->module && !f->module_seen) {
		struct modules m = { .asked = c->module };
		char what[NAME_LEN + 32];

		mt_sites_foreach(sites, module_base, &m);
		mt_sites_foreach(sites, module_names, &m);
		snprintf(what, sizeof(what), "modules%s%.*s",
			 m.base ? " under " : "", (int)m.base, c->module);
		none += said_unseen("--module", "module", &c->module,
				    &f->module_seen, 1, what, &m.had, &warned);
	}
	if (c->npids) {
		sn = (struct site_names){ .what = SN_PID };
		mt_sites_foreach(sites, site_names, &sn);
		for (size_t i = 0; i < c->npids; i++) {
			snprintf(vals[i], sizeof(vals[i]), "%u", c->pids[i]);
			asked[i] = vals[i];
		}
		none += said_unseen("-p", "pid", asked, f->pid_seen, c->npids,
				    "pids", &sn.had, &warned);
	}
	if (c->ntids) {
		had = (struct names){ 0 };
		for (size_t i = 0; i < f->ntids_had; i++) {
			snprintf(vals[0], sizeof(vals[0]), "%u",
				 f->tids_had[i]);
			add_name(&had, vals[0], strlen(vals[0]));
		}
		had.more |= f->more_tids;
		for (size_t i = 0; i < c->ntids; i++) {
			snprintf(vals[i], sizeof(vals[i]), "%u", c->tids[i]);
			asked[i] = vals[i];
		}
		none += said_unseen("--tid", "tid", asked, f->tid_seen,
				    c->ntids, "tids", &had, &warned);
	}
	if (c->ncomms) {
		had = (struct names){ 0 };
		for (size_t i = 0; i < f->ncomms_had; i++)
			add_name(&had, f->comms_had[i],
				 strlen(f->comms_had[i]));
		had.more |= f->more_comms;
		none += said_unseen("--comm", "comm", c->comms, f->comm_seen,
				    c->ncomms, "comms", &had, &warned);
	}
	if (c->nevents) {
		sn = (struct site_names){ .what = SN_KIND };
		mt_sites_foreach(sites, site_names, &sn);
		none += said_unseen("--event", "kind", c->events, f->event_seen,
				    c->nevents, "kinds", &sn.had, &warned);
	}
	if (c->nkinds) {
		had = (struct names){ 0 };
		for (int k = 0; k < MT_MK_MAX; k++)
			if ((f->kinds_had >> k) & 1)
				add_name(&had, mt_memkind_name(k),
					 strlen(mt_memkind_name(k)));
		none += said_unseen("--kind", "allocation of kind", c->kinds,
				    f->kind_seen, c->nkinds, "kinds of memory",
				    &had, &warned);
	}
	if (none)
		return -ENOENT;
	return warned ? 1 : 0;
}

void mt_filter_stats(const struct mt_filter *f, struct mt_filter_stats *st)
{
	*st = f->st;
}

static void print_list_u32(FILE *out, const char *key, const __u32 *v, size_t n)
{
	if (!n)
		return;
	fprintf(out, " %s=", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%u", i ? "," : "", v[i]);
}

static void print_list_str(FILE *out, const char *key, const char *const *v,
			   size_t n)
{
	if (!n)
		return;
	fprintf(out, " %s=", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? "," : "", v[i]);
}

void mt_filter_print_settings(const struct mt_filter *f, FILE *out)
{
	const struct mt_filter_conf *c = &f->c;

	if (c->has_time) {
		fprintf(out, " time=%g,", c->t_start);
		if (c->t_end >= 0)
			fprintf(out, "%g", c->t_end);
	}
	if (c->has_steps)
		fprintf(out, " steps=%u,%u", c->step_min, c->step_max);
	print_list_u32(out, "pid", c->pids, c->npids);
	print_list_u32(out, "tid", c->tids, c->ntids);
	print_list_str(out, "comm", c->comms, c->ncomms);
	if (c->module)
		fprintf(out, " module=%s", c->module);
	if (c->phase)
		fprintf(out, " phase=%s", c->phase);
	print_list_str(out, "event", c->events, c->nevents);
	print_list_str(out, "kind", c->kinds, c->nkinds);
	if (c->has_size) {
		fprintf(out, " size=%" PRIu64 ",", (uint64_t)c->size_min);
		if (c->has_size_max)
			fprintf(out, "%" PRIu64, (uint64_t)c->size_max);
	}
}

void mt_filter_print(const struct mt_filter *f, FILE *out)
{
	if (!f)
		return;
	fputs("# filter", out);
	mt_filter_print_settings(f, out);
	fprintf(out,
		" passed=%" PRIu64 " dropped=%" PRIu64
		" freed_before_window=%" PRIu64
		" freed_before_window_bytes=%" PRIu64 " untracked=%" PRIu64
		"\n",
		(uint64_t)f->st.passed, (uint64_t)f->st.dropped,
		(uint64_t)f->st.freed_before_window,
		(uint64_t)f->st.freed_before_window_bytes,
		(uint64_t)f->st.untracked);
}
