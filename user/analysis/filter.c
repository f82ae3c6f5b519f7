// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/filter.h"
#include "analysis/livetable.h"

/*
 * What the filter decided for a live allocation, kept in its entry's seq
 * (the filter's own table: the session's seq numbers are not needed here)
 */
enum verdict {
	V_OUT = 1, /* failed a filter: its free is dropped too */
	V_KEPT, /* counted: its free is, inside the window */
	V_EARLY, /* passed the attributes, made before the window */
};

struct mt_filter {
	struct mt_filter_conf c;
	/* every live allocation the filter judged, its verdict in seq */
	struct mt_livetable *allocs;
	struct mt_filter_stats st;
};

bool mt_filter_conf_any(const struct mt_filter_conf *c)
{
	return c->has_time || c->has_steps || c->npids || c->ntids ||
	       c->ncomms || c->module || c->phase || c->nevents || c->has_size;
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

struct mt_filter *mt_filter_new(const struct mt_filter_conf *c, size_t max_live)
{
	struct mt_filter *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->c = *c;
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

static bool judge_alloc(struct mt_filter *f, const struct mt_call *r,
			const struct mt_site *site, int win)
{
	enum verdict v = V_OUT;
	struct mt_live e;

	if (attributes(&f->c, r, site))
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
		return verdict(f, !win && attributes(&f->c, r, site));
	if (e.seq == V_EARLY && !win) {
		f->st.freed_before_window++;
		f->st.freed_before_window_bytes += e.size;
	}
	return verdict(f, e.seq == V_KEPT && !win);
}

bool mt_filter_event(struct mt_filter *f, const struct mt_call *r,
		     const struct mt_site *site, double secs, __u32 step)
{
	int win = window(&f->c, secs, step);

	if (r->has_ptr && !r->failed && r->role == MT_ROLE_ALLOC && r->ptr)
		return judge_alloc(f, r, site, win);
	if (r->has_ptr && !r->failed && r->role == MT_ROLE_FREE)
		return judge_free(f, r, site, win);
	return verdict(f, !win && attributes(&f->c, r, site));
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
