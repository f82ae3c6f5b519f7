/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What happens to each decoded event, live or read back from a record:
 * the live table, the summary, the incident analyses (peak, leaks, OOM,
 * fragmentation, operators). The trace feeds it from the ring buffer,
 * replay.c from a record, so both count the same. The session prints
 * nothing: its observers see each event after it counted it (the event
 * lines, analysis/lines.h; an export; top), and the views print its end
 * (analysis/view.h).
 */
#ifndef __SESSION_H
#define __SESSION_H

#include <stdbool.h>
#include <stdio.h>
#include "analysis/filter.h"
#include "analysis/frag.h"
#include "event/kinds.h"
#include "analysis/leaks.h"
#include "analysis/livetable.h"
#include "analysis/memkind.h"
#include "analysis/nvsmi.h"
#include "analysis/oom.h"
#include "analysis/peak.h"
#include "analysis/sample.h"
#include "proc/rank.h"
#include "analysis/sites.h"
#include "analysis/summary.h"

#define MT_PROCS 1024

struct mt_session_conf {
	bool print_events; /* the event lines (not with -q, record, report) */
	bool no_stack;
	bool keys; /* summary as '#' key=value lines, not the report */
	unsigned long long
		min_size; /* lines of smaller events are not printed */
	size_t max_live, max_sites, top_live, top_ops;
	/* the report's rows below this % of their table's total are cut */
	double percent_limit;
	struct mt_leak_conf leak;
	struct mt_filter_conf filter; /* which events count (filter.h) */
	/*
	 * --sample-bytes R of the trace or of the record (analysis/sample.h):
	 * only sampled allocations carry stacks, and their site and module
	 * figures are estimates; 0: a full trace
	 */
	__u64 sample_bytes;
};

/* what the session knows of one process */
struct mt_proc {
	__u32 pid;
	/* optimizer steps, from the phases of its events */
	__u32 step;
	const char *phase; /* of its last event */
	bool backward_seen; /* since the last step: zero_grad is no step */
	__u64 last_boundary; /* ts of the last leak boundary */
	struct mt_rank rank; /* from its environment (rank= on its lines) */
	/* it ran before it was traced (-p): what it held then is unseen */
	bool attached;
	struct mt_memkind_clock clock; /* its phase instances (memkind.h) */
	__u64 allocs, frees, failed, live; /* allocation calls */
	/*
	 * of allocs, those whose stack was walked (all of them in a full
	 * trace), and what they stand for (analysis/sample.h)
	 */
	__u64 walked;
	double est;
};

struct mt_session;

typedef void (*mt_session_event_fn)(void *ctx, const struct mt_session *s,
				    const struct mt_call *r,
				    const struct mt_site *site);

/*
 * What sees each event after the session counted it (the event lines,
 * an export, top plug in here: the session knows none of them)
 */
struct mt_session_observer {
	mt_session_event_fn event;
	void *ctx;
};

/* the event lines, an export and top at once, at most */
#define MT_SESSION_OBSERVERS 4

/* how a process ended, as a flight recorder's dump says it */
enum mt_end_how { MT_END_EXIT = 1, MT_END_SIGNAL, MT_END_OOMKILL };

/* the dump's "ended" header line (MT_END_META), read back */
struct mt_ended {
	__u32 pid;
	enum mt_end_how how;
	int code; /* the exit status, or the signal (an OOM kill's too) */
	char raised[256]; /* the last exception traced before it; "" none */
};

/* the ended line's fields; " raised=TEXT" may follow, to the line's end */
#define MT_END_META "pid=%d how=%15s code=%d"
#define MT_MAX_ENDED 8

struct mt_session {
	struct mt_session_conf conf;
	FILE *out; /* where its observers and views print */
	struct mt_livetable *live;
	struct mt_sites *sites;
	struct mt_summary sum;
	struct mt_peak *peak;
	struct mt_leaks *leaks;
	struct mt_frag *frag;
	struct mt_oom *oom;
	/*
	 * NVML's figures reconciled (analysis/nvsmi.h): made and sampled by
	 * --watch (analysis/watch.h); NULL without it
	 */
	struct mt_nvsmi *nvsmi;
	struct mt_proc procs[MT_PROCS]; /* by pid % size; 0 pid: free */
	/* called in the order they came; the first event NULL ends them */
	struct mt_session_observer obs[MT_SESSION_OBSERVERS];
	struct mt_filter *filter; /* NULL: every event counts */
	__u64 seq; /* events seen */
	/* --sample-bytes: allocations counted, and those whose stack was walked */
	__u64 sample_allocs, sample_walked;
	__u64 t0; /* ts of the first event */
	__u64 last_ts;
	/*
	 * a flight recorder's dump: its window's first and last event
	 * (win_last 0: a whole trace), and the leak boundaries at its
	 * quarters passed so far
	 */
	__u64 win_first, win_last;
	int win_passed;
	struct mt_ended ended[MT_MAX_ENDED];
	size_t nended;
	/*
	 * The kind told of the allocation the event being counted freed
	 * (memkind.h, mt_memkind_of at its free), for an observer at a free;
	 * MT_MK_MAX where the event freed none that was live
	 */
	enum mt_memkind freed_kind;
	/*
	 * Called with each allocation's number (mt_live.seq) and kind as it
	 * is told: at its free, and by mt_session_tell_alive for those alive
	 * at the end (report --kind's first reading). NULL: none.
	 */
	void (*told)(void *ctx, __u64 seq, enum mt_memkind kind);
	void *told_ctx;
	/*
	 * The bytes alive now in each tensor account (by its place in
	 * sum.devs), by the kind they have once their phase instance is over
	 * (mt_memkind_settled, from_start taken as true): settled, those made
	 * before their process's current instance; young, those made in it.
	 * Kept at each event, so that a live view reads its kinds without a
	 * walk of the live table (mt_session_kinds_now).
	 */
	struct mt_kind_tally {
		__u64 settled[MT_MK_MAX], young[MT_MK_MAX];
	} kinds[MT_SUM_DEVS];
};

/*
 * o sees each event from now on, after those observing already. 0, or
 * -ENOSPC when MT_SESSION_OBSERVERS observe already.
 */
int mt_session_observe(struct mt_session *s,
		       const struct mt_session_observer *o);

/* the observer of fn no more: its ctx, NULL if fn observed not */
void *mt_session_unobserve(struct mt_session *s, mt_session_event_fn fn);

/* 0, or -ENOMEM (what was made is freed by mt_session_free) */
int mt_session_init(struct mt_session *s, const struct mt_session_conf *c,
		    FILE *out);
void mt_session_free(struct mt_session *s);

/*
 * One decoded event and its site. Returns false for an event that is no
 * record of its own (a free of NULL) and was dropped.
 */
bool mt_session_event(struct mt_session *s, struct mt_call *r,
		      struct mt_site *site);

/* what an exec freed: the live allocations of the image it ended */
struct mt_exec_freed {
	__u64 allocs, bytes;
};

/*
 * Process pid ran execve at ts (MT_K_EXEC): everything its old image held
 * is gone. Its live allocations go as if each were freed then, so that
 * every figure follows (current bytes, its modules' own, the live list,
 * leaks, fragmentation; peaks stay); c10's totals of its old allocator go
 * to 0. No event is counted. *freed says what went.
 */
void mt_session_exec(struct mt_session *s, __u32 pid, __u64 ts,
		     struct mt_exec_freed *freed);

/* pid's rank, -1 if none: an mt_nvsmi_rank_fn, ctx the session */
int mt_session_rank_of(__u32 pid, const void *ctx);

/* the steps process pid finished so far */
__u32 mt_session_step(const struct mt_session *s, __u32 pid);

/* pid's rank, shown on its lines and in the per-rank table */
void mt_session_set_rank(struct mt_session *s, __u32 pid,
			 const struct mt_rank *r);

/*
 * The record is a flight recorder's dump, its window's events from first
 * to last (ns): leaks are judged on the window alone (mt_leaks_window),
 * and its step numbers are no more than a lower bound of the process's.
 * Before the first event.
 */
void mt_session_set_window(struct mt_session *s, __u64 first, __u64 last);

/*
 * A dump's "ended" header line (MT_END_META): how its process ended, for
 * the report's OOMs and Died. -EINVAL for a line it cannot read.
 */
int mt_session_set_ended(struct mt_session *s, const char *value);

/* pid ran before it was traced (-p): its report says what that hides */
void mt_session_set_attached(struct mt_session *s, __u32 pid);

/* what the session knows of pid; NULL if none of its events came */
const struct mt_proc *mt_session_proc(const struct mt_session *s, __u32 pid);

/*
 * The kind of e, alive at the end (memkind.h); ctx: the session. An
 * mt_peak_kind_fn.
 */
enum mt_memkind mt_session_kind_alive(const struct mt_live *e, void *ctx);

/*
 * The bytes alive now in tensor account d (of s->sum) by kind, each told
 * as mt_session_kind_alive tells it: what the phase its process runs now
 * made is unknown until that phase ends. Exact (sizes, not estimates);
 * all 0 for an account of no tensors. O(1).
 */
void mt_session_kinds_now(const struct mt_session *s,
			  const struct mt_dev_stat *d, __u64 bytes[MT_MK_MAX]);

/*
 * The same over the accounts of pid's totals (mt_summary_totals): they
 * add up to its allocated where the trace saw all of it
 */
void mt_session_kinds_totals(const struct mt_session *s, __u32 pid,
			     __u64 bytes[MT_MK_MAX]);

/*
 * The kind of each allocation still alive, handed to s->told as the end
 * tells it (mt_session_kind_alive). Nothing without s->told.
 */
void mt_session_tell_alive(struct mt_session *s);

/*
 * The calibration (analysis/sample.h) of the counts of pid's allocations
 * over the trace, by call site or module, kept to the exact number it made;
 * the estimates as they are where its count is gone (its slot taken by
 * another process). ctx: the session (mt_summary_cal's form).
 */
void mt_session_alloc_cal(const void *ctx, __u32 pid,
			  struct mt_sample_cal *cal);

/*
 * The end of the events: what waits for it counted (a dump's window's
 * last boundary). The views then print (analysis/view.h).
 */
void mt_session_end(struct mt_session *s);

/*
 * --sample-bytes: how many allocations have a stack, as the report's
 * headline and the exports' notes say it: "stacks for 1 allocation in N
 * (by bytes, R=512 KiB)", or "stacks for none of N allocations (by bytes,
 * R=...)"; buf, "" in a full trace
 */
const char *mt_session_sample_rate(const struct mt_session *s, char *buf,
				   size_t len);

#endif /* __SESSION_H */
