// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "lib/escape.h"
#include "analysis/sample.h"
#include "analysis/session.h"

int mt_session_init(struct mt_session *s, const struct mt_session_conf *c,
		    FILE *out)
{
	memset(s, 0, sizeof(*s));
	s->conf = *c;
	s->out = out;
	s->live = mt_live_new(c->max_live);
	s->sites = mt_sites_new(c->max_sites);
	s->peak = mt_peak_new();
	s->leaks = mt_leaks_new(&c->leak);
	s->frag = mt_frag_new();
	s->oom = mt_oom_new();
	if (mt_filter_conf_any(&c->filter)) {
		s->filter = mt_filter_new(&c->filter, c->max_live);
		if (!s->filter)
			return -ENOMEM;
	}
	if (!s->live || !s->sites || !s->peak || !s->leaks || !s->frag ||
	    !s->oom)
		return -ENOMEM;
	return 0;
}

int mt_session_observe(struct mt_session *s,
		       const struct mt_session_observer *o)
{
	for (size_t i = 0; i < MT_SESSION_OBSERVERS; i++) {
		if (!s->obs[i].event) {
			s->obs[i] = *o;
			return 0;
		}
	}
	return -ENOSPC;
}

void *mt_session_unobserve(struct mt_session *s, mt_session_event_fn fn)
{
	for (size_t i = 0; i < MT_SESSION_OBSERVERS && s->obs[i].event; i++) {
		void *ctx = s->obs[i].ctx;

		if (s->obs[i].event != fn)
			continue;
		/* the rest move up: the first empty slot ends the list */
		memmove(&s->obs[i], &s->obs[i + 1],
			(MT_SESSION_OBSERVERS - i - 1) * sizeof(s->obs[0]));
		s->obs[MT_SESSION_OBSERVERS - 1] =
			(struct mt_session_observer){ 0 };
		return ctx;
	}
	return NULL;
}

void mt_session_free(struct mt_session *s)
{
	mt_nvsmi_free(s->nvsmi);
	mt_filter_free(s->filter);
	mt_oom_free(s->oom);
	mt_frag_free(s->frag);
	mt_leaks_free(s->leaks);
	mt_peak_free(s->peak);
	mt_summary_free(&s->sum);
	mt_sites_free(s->sites);
	mt_live_free(s->live);
}

/* pid's slot; a pid whose slot another took starts afresh (counted) */
static struct mt_proc *proc_of(struct mt_session *s, __u32 pid)
{
	struct mt_proc *p = &s->procs[pid % MT_PROCS];

	if (p->pid != pid) {
		if (p->pid)
			s->sum.procs_evicted++;
		*p = (struct mt_proc){ .pid = pid,
				       .rank = { .rank = -1,
						 .local_rank = -1,
						 .world_size = -1 } };
	}
	return p;
}

const struct mt_proc *mt_session_proc(const struct mt_session *s, __u32 pid)
{
	const struct mt_proc *p = &s->procs[pid % MT_PROCS];

	return p->pid == pid ? p : NULL;
}

void mt_session_alloc_cal(const void *ctx, __u32 pid, struct mt_sample_cal *cal)
{
	const struct mt_proc *p = mt_session_proc(ctx, pid);

	if (p)
		mt_sample_cal_init(cal, p->allocs, p->walked, p->est);
	else
		mt_sample_cal_none(cal);
}

__u32 mt_session_step(const struct mt_session *s, __u32 pid)
{
	const struct mt_proc *p = mt_session_proc(s, pid);

	return p ? p->step : 0;
}

void mt_session_set_rank(struct mt_session *s, __u32 pid,
			 const struct mt_rank *r)
{
	proc_of(s, pid)->rank = *r;
}

void mt_session_set_attached(struct mt_session *s, __u32 pid)
{
	proc_of(s, pid)->attached = true;
}

/* pid's phase instance ended: what it made in it is settled */
static void settle_kinds(struct mt_session *s, __u32 pid)
{
	for (size_t i = 0; i < s->sum.ndevs; i++) {
		struct mt_kind_tally *t = &s->kinds[i];

		if (s->sum.devs[i].pid != pid)
			continue;
		for (int k = 0; k < MT_MK_MAX; k++) {
			t->settled[k] += t->young[k];
			t->young[k] = 0;
		}
	}
}

/*
 * An optimizer phase left after a backward ends a step (zero_grad before
 * the forward is none); a process without steps gets a leak boundary each
 * age_seconds instead.
 */
static void count_steps(struct mt_session *s, const struct mt_call *r,
			const char *phase)
{
	struct mt_proc *st = proc_of(s, r->ev->pid);
	__u64 ts = r->ev->ts, age = (__u64)(s->conf.leak.age_seconds * 1e9);

	if (phase) {
		bool was_opt = st->phase && !strcmp(st->phase, "optimizer");
		__u32 was = st->clock.instance;

		if (was_opt && strcmp(phase, "optimizer") &&
		    st->backward_seen) {
			st->step++;
			st->backward_seen = false;
			st->last_boundary = ts;
			if (!s->win_last)
				mt_leaks_boundary(s->leaks, st->pid, st->step,
						  ts, s->live);
		}
		if (!strcmp(phase, "backward"))
			st->backward_seen = true;
		st->phase = phase;
		mt_memkind_tick(&st->clock, phase, st->step);
		if (st->clock.instance != was)
			settle_kinds(s, st->pid);
	}
	if (!st->last_boundary)
		st->last_boundary = ts;
	/* a dump's boundaries are its window's (window_boundaries) */
	if (s->win_last)
		return;
	if (!st->step && age && ts - st->last_boundary >= age) {
		st->last_boundary = ts;
		mt_leaks_boundary(s->leaks, st->pid, 0, ts, s->live);
	}
}

/*
 * A dump's leak boundaries at the ends of its window's slices up to ts
 * (the last one at its end): each counts every process as the live table is before
 * the event at ts
 */
static void window_boundaries(struct mt_session *s, __u64 ts)
{
	__u64 span = s->win_last - s->win_first;

	while (s->win_passed < MT_LEAK_SLICES) {
		__u64 at = s->win_first +
			   span * (__u64)(s->win_passed + 1) / MT_LEAK_SLICES;

		if (ts <= at)
			return;
		for (size_t i = 0; i < MT_PROCS; i++)
			if (s->procs[i].pid)
				mt_leaks_boundary(s->leaks, s->procs[i].pid, 0,
						  at, s->live);
		s->win_passed++;
	}
}

void mt_session_set_window(struct mt_session *s, __u64 first, __u64 last)
{
	if (last <= first)
		return;
	s->win_first = first;
	s->win_last = last;
	mt_leaks_window(s->leaks, last - first);
}

int mt_session_set_ended(struct mt_session *s, const char *value)
{
	struct mt_ended *e;
	const char *raised = strstr(value, " raised=");
	char how[16];
	int pid, code;

	if (sscanf(value, MT_END_META, &pid, how, &code) != 3 || pid <= 0)
		return -EINVAL;
	if (s->nended == MT_MAX_ENDED)
		return 0;
	e = &s->ended[s->nended];
	*e = (struct mt_ended){ .pid = (__u32)pid, .code = code };
	if (!strcmp(how, "exit"))
		e->how = MT_END_EXIT;
	else if (!strcmp(how, "signal"))
		e->how = MT_END_SIGNAL;
	else if (!strcmp(how, "oomkill"))
		e->how = MT_END_OOMKILL;
	else
		return -EINVAL;
	if (raised)
		snprintf(e->raised, sizeof(e->raised), "%s",
			 raised + strlen(" raised="));
	s->nended++;
	return 0;
}

static void count_calls(struct mt_proc *p, const struct mt_call *r)
{
	if (r->role == MT_ROLE_ALLOC && r->failed)
		p->failed++;
	else if (r->role == MT_ROLE_ALLOC)
		p->allocs++;
	else if (r->role == MT_ROLE_FREE && !r->failed)
		p->frees++;
}

/*
 * e became live (alloc) or was freed: its site's live figures follow, by
 * the bytes it stands for (an unsampled allocation of a sampled trace
 * stands for nothing, and is no count either)
 */
static void site_live(struct mt_site *site, const struct mt_live *e, bool alloc)
{
	__u64 bytes = mt_live_est(e);

	if (!site || mt_live_unsampled(e))
		return;
	if (alloc) {
		site->live_count++;
		site->live_est += mt_live_weight(e);
		site->live_bytes += bytes;
		return;
	}
	if (site->live_count)
		site->live_count--;
	/* none left: nor the rounding errors of the sums and differences */
	site->live_est =
		site->live_count ? site->live_est - mt_live_weight(e) : 0;
	site->live_bytes -= site->live_bytes < bytes ? site->live_bytes : bytes;
}

/*
 * Whether what process p made in account d before its first phase is seen
 * from its start: traced from the process's start, or attached while the
 * caching allocator held nothing (d NULL: no account, not known)
 */
static bool account_from_start(const struct mt_proc *p,
			       const struct mt_dev_stat *d)
{
	if (!p->attached)
		return true;
	return d && d->space == MT_SP_C10 && d->totals_seen &&
	       !d->before_allocated;
}

/*
 * Whether e's memory is seen from its start: its process was traced from
 * its start, or (-p) e is the caching allocator's and it held nothing
 * when the trace began, so that the model it holds came after. Asked
 * only of what was made before the first phase.
 */
static bool seen_from_start(const struct mt_session *s, const struct mt_proc *p,
			    const struct mt_live *e)
{
	if (!p->attached)
		return true;
	if (e->born)
		return false;
	return account_from_start(
		p,
		mt_summary_dev(&s->sum, e->pid, e->dev_type, e->dev, e->space));
}

/*
 * e's bytes in its account's tally of kinds (mt_session.kinds), added
 * (in) or taken out. A young allocation is one made in its process's
 * current phase instance. Taken out, a count never goes below 0: a
 * process whose slot another took (proc_of) has a new clock, and its old
 * allocations may be looked for under the wrong age.
 */
static void tally_kind(struct mt_session *s, struct mt_summary *sum,
		       const struct mt_proc *p, const struct mt_live *e,
		       bool in)
{
	struct mt_dev_stat *d;
	struct mt_kind_tally *t;
	enum mt_memkind k;
	__u64 *v;

	if (!mt_space_is_tensor(e->space))
		return;
	d = in ? mt_summary_account(sum, e->pid, e->dev_type, e->dev,
				    e->space) :
		 (struct mt_dev_stat *)mt_summary_dev(sum, e->pid, e->dev_type,
						      e->dev, e->space);
	if (!d)
		return;
	t = &s->kinds[d - sum->devs];
	k = mt_memkind_settled(e->site ? e->site->phase : NULL, e->born, true);
	v = e->born == p->clock.instance ? &t->young[k] : &t->settled[k];
	if (in)
		*v += e->size;
	else
		*v -= *v < e->size ? *v : e->size;
}

/* the kind of e, freed now or (alive) held at the end */
static enum mt_memkind kind_of(const struct mt_session *s,
			       const struct mt_proc *p, const struct mt_live *e,
			       bool alive)
{
	return mt_memkind_of(e->site ? e->site->phase : NULL, e->born,
			     &p->clock, alive, seen_from_start(s, p, e));
}

static void forget(struct mt_session *s, const struct mt_live *old)
{
	bool counted = old->space != MT_SP_C10; /* c10 reports totals */
	struct mt_proc *p = proc_of(s, old->pid);

	if (p->live)
		p->live--;
	s->freed_kind = kind_of(s, p, old, false);
	if (s->told)
		s->told(s->told_ctx, old->seq, s->freed_kind);
	mt_peak_release(s->peak, old, s->freed_kind);
	tally_kind(s, &s->sum, p, old, false);
	site_live(old->site, old, false);
	mt_summary_own(&s->sum, old, -(__s64)mt_live_est(old));
	if (counted)
		mt_summary_live(&s->sum, old->pid, old->dev_type, old->dev,
				old->space, -(__s64)old->size);
}

struct exec_drop {
	struct mt_session *s;
	struct mt_exec_freed *freed;
};

static void exec_drop(const struct mt_live *e, void *ctx)
{
	struct exec_drop *x = ctx;

	forget(x->s, e);
	x->freed->allocs++;
	x->freed->bytes += e->size;
}

void mt_session_exec(struct mt_session *s, __u32 pid, __u64 ts,
		     struct mt_exec_freed *freed)
{
	struct exec_drop x = { .s = s, .freed = freed };

	*freed = (struct mt_exec_freed){ 0 };
	mt_live_remove_pid(s->live, pid, exec_drop, &x);
	mt_summary_exec(&s->sum, pid);
	mt_frag_exec(s->frag, pid, ts);
	if (ts > s->last_ts)
		s->last_ts = ts;
}

/* e had no room in the live table: each figure it is missing from says so */
static void untracked(struct mt_session *s, const struct mt_live *e)
{
	s->sum.live_full++;
	mt_peak_untracked(s->peak, e);
	if (e->space != MT_SP_C10)
		mt_summary_untracked(&s->sum, e->pid, e->dev_type, e->dev,
				     e->space, e->size);
}

/*
 * What each byte of r stands for in its site's and module's figures: 1 in
 * a full trace; in a sampled one 1/p for an allocation whose stack was
 * sampled, 0 for one whose was not (analysis/sample.h).
 */
static double event_weight(const struct mt_session *s, const struct mt_call *r)
{
	if (!s->conf.sample_bytes || r->role != MT_ROLE_ALLOC)
		return 1.0;
	if (!(r->ev->flags & MT_EV_SAMPLED))
		return 0.0;
	/*
	 * as the live entry keeps it (mt_live.est_adj), so that what a module
	 * allocated and what it holds add up alike
	 */
	return 1.0 +
	       (double)(float)(mt_sample_weight(r->size, s->conf.sample_bytes) -
			       1.0);
}

static void track_live(struct mt_session *s, struct mt_call *r,
		       struct mt_site *site, double weight)
{
	const struct mt_event *ev = r->ev;
	struct mt_live e;

	/* NULL (a zero-size request) holds no memory */
	if (r->role == MT_ROLE_ALLOC && r->has_ptr && r->ptr && !r->failed) {
		e = (struct mt_live){
			.ptr = r->ptr,
			.size = r->size,
			.ts = ev->ts,
			.seq = s->seq,
			.event = r->event,
			.caller = site->caller,
			.site = site,
			.step = mt_session_step(s, ev->pid),
			.born = proc_of(s, ev->pid)->clock.instance,
			.pid = ev->pid,
			.space = (__u16)r->ki->space,
			.dev_type = (__u8)r->dev_type,
			.dev = (__s8)r->dev_index,
			.est_adj = (float)(weight - 1.0),
		};
		struct mt_live old;

		/* an address reused without the free we missed: undo it */
		if (mt_live_remove(s->live, ev->pid, e.space, e.ptr, &old))
			forget(s, &old);
		if (mt_live_insert(s->live, &e)) {
			untracked(s, &e);
			return;
		}
		mt_peak_alloc(s->peak, &e);
		proc_of(s, ev->pid)->live++;
		tally_kind(s, &s->sum, proc_of(s, ev->pid), &e, true);
		site_live(site, &e, true);
		mt_summary_own(&s->sum, &e, (__s64)mt_live_est(&e));
		if (e.space != MT_SP_C10)
			mt_summary_live(&s->sum, ev->pid, r->dev_type,
					r->dev_index, r->ki->space,
					(__s64)r->size);
	} else if (r->role == MT_ROLE_FREE && r->has_ptr && !r->failed) {
		if (!mt_live_remove(s->live, ev->pid, (__u16)r->ki->space,
				    r->ptr, &e)) {
			mt_live_unpaired(s->live);
			mt_summary_unmatched_free(&s->sum, r);
			return;
		}
		if (r->size_state == MT_SIZE_UNKNOWN) {
			r->size_state = MT_SIZE_KNOWN;
			r->size = e.size;
		}
		forget(s, &e);
	}
}

bool mt_session_event(struct mt_session *s, struct mt_call *r,
		      struct mt_site *site)
{
	double weight;

	/* a free of NULL frees nothing */
	if (r->role == MT_ROLE_FREE && r->has_ptr && !r->ptr && !r->failed)
		return false;
	s->seq++;
	s->freed_kind = MT_MK_MAX;
	if (!s->t0)
		s->t0 = r->ev->ts;
	s->last_ts = r->ev->ts;
	if (s->win_last)
		window_boundaries(s, r->ev->ts);
	/* a process without Python still gets leak boundaries by time */
	count_steps(s, r, site->phase);
	/* steps and time count every event; the rest only those let through */
	if (s->filter &&
	    !mt_filter_event(s->filter, r, site,
			     (double)(r->ev->ts - s->t0) / 1e9,
			     mt_session_step(s, r->ev->pid), s->seq))
		return true;
	count_calls(proc_of(s, r->ev->pid), r);
	if (mt_site_is_overflow(site))
		s->sum.sites_full++;
	weight = event_weight(s, r);
	if (s->conf.sample_bytes && r->role == MT_ROLE_ALLOC && !r->failed) {
		s->sample_allocs++;
		s->sample_walked += weight > 0;
	}
	track_live(s, r, site, weight);
	mt_summary_event(&s->sum, r);
	if (r->role == MT_ROLE_ALLOC && !r->failed &&
	    r->size_state == MT_SIZE_KNOWN) {
		if (weight > 0) {
			struct mt_proc *p = proc_of(s, r->ev->pid);

			site->allocs++;
			site->alloc_est += weight;
			p->walked++;
			p->est += weight;
		}
		site->alloc_bytes += mt_sample_scale(r->size, weight);
	}
	if (site->phase)
		mt_summary_attrib(&s->sum, r, site->phase, site->module,
				  site->recompute, weight);
	if (r->has_totals)
		mt_frag_event(s->frag, r, site->phase);
	mt_oom_event(s->oom, r, site);
	for (size_t i = 0; i < MT_SESSION_OBSERVERS && s->obs[i].event; i++)
		s->obs[i].event(s->obs[i].ctx, s, r, site);
	return true;
}

int mt_session_rank_of(__u32 pid, const void *ctx)
{
	const struct mt_proc *p = mt_session_proc(ctx, pid);

	return p && p->rank.known ? p->rank.rank : -1;
}

enum mt_memkind mt_session_kind_alive(const struct mt_live *e, void *ctx)
{
	const struct mt_proc *p = mt_session_proc(ctx, e->pid);

	return p ? kind_of(ctx, p, e, true) : MT_MK_UNKNOWN;
}

static void tell_alive(const struct mt_live *e, void *ctx)
{
	struct mt_session *s = ctx;

	s->told(s->told_ctx, e->seq, mt_session_kind_alive(e, s));
}

void mt_session_tell_alive(struct mt_session *s)
{
	if (s->told)
		mt_live_foreach(s->live, tell_alive, s);
}

void mt_session_kinds_now(const struct mt_session *s,
			  const struct mt_dev_stat *d, __u64 bytes[MT_MK_MAX])
{
	const struct mt_proc *p = mt_session_proc(s, d->pid);
	const struct mt_kind_tally *t = &s->kinds[d - s->sum.devs];

	memset(bytes, 0, MT_MK_MAX * sizeof(bytes[0]));
	for (int k = 0; k < MT_MK_MAX; k++) {
		/* no clock (a slot another process took): none is told */
		enum mt_memkind to = p ? (enum mt_memkind)k : MT_MK_UNKNOWN;

		if (to == MT_MK_PARAMETERS && !account_from_start(p, d))
			to = MT_MK_UNKNOWN;
		bytes[to] += t->settled[k];
		bytes[MT_MK_UNKNOWN] += t->young[k];
	}
}

void mt_session_kinds_totals(const struct mt_session *s, __u32 pid,
			     __u64 bytes[MT_MK_MAX])
{
	bool cuda = mt_summary_has_cuda(&s->sum, pid);
	__u64 b[MT_MK_MAX];

	memset(bytes, 0, MT_MK_MAX * sizeof(bytes[0]));
	for (size_t i = 0; i < s->sum.ndevs; i++) {
		const struct mt_dev_stat *d = &s->sum.devs[i];

		if (d->pid != pid || !mt_summary_in_totals(d, cuda))
			continue;
		mt_session_kinds_now(s, d, b);
		for (int k = 0; k < MT_MK_MAX; k++)
			bytes[k] += b[k];
	}
}

void mt_session_end(struct mt_session *s)
{
	/* a dump's last boundary: its window's end */
	if (s->win_last)
		window_boundaries(s, UINT64_MAX);
}

const char *mt_session_sample_rate(const struct mt_session *s, char *buf,
				   size_t len)
{
	char r[32];

	if (!len)
		return buf;
	buf[0] = '\0';
	if (!s->conf.sample_bytes)
		return buf;
	mt_format_bytes(r, sizeof(r), s->conf.sample_bytes);
	if (!s->sample_walked)
		snprintf(buf, len,
			 "stacks for none of %" PRIu64
			 " allocations (by bytes, R=%s)",
			 (uint64_t)s->sample_allocs, r);
	else
		snprintf(buf, len,
			 "stacks for 1 allocation in %.0f (by bytes, R=%s)",
			 (double)s->sample_allocs / (double)s->sample_walked,
			 r);
	return buf;
}
