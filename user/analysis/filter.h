/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which events a session counts and prints: the filters of trace, report,
 * script and every export (--time, --steps, --pid, --tid, --comm,
 * --module, --phase, --event, --size), judged in this one place for the
 * live trace and for a record read back, so that all of them narrow the
 * same way.
 *
 * A free goes with its allocation: it passes when its allocation passed
 * the attribute filters (process, thread, command, module, phase, kind
 * and size are the allocation's), so that a filtered report never frees
 * what it did not count. The time and step window cut both: an event
 * outside it is neither printed nor counted, and an allocation made
 * before the window and freed inside it is counted apart
 * (freed_before_window), never silently.
 */
#ifndef __FILTER_H
#define __FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "event/kinds.h"
#include "analysis/kindmap.h"
#include "analysis/sites.h"

/* values one filter option takes at most (as many as -p traces) */
#define MT_FILTER_MAX_VALUES 64

struct mt_filter_conf {
	/* --time START,END: seconds since the first event; end < 0: open */
	bool has_time;
	double t_start, t_end;
	/* --steps A,B: optimizer steps the process had finished */
	bool has_steps;
	__u32 step_min, step_max;
	__u32 pids[MT_FILTER_MAX_VALUES];
	size_t npids;
	__u32 tids[MT_FILTER_MAX_VALUES];
	size_t ntids;
	const char *comms[MT_FILTER_MAX_VALUES];
	size_t ncomms;
	const char *module; /* --module PREFIX: it and its children */
	const char *phase;
	const char *events[MT_FILTER_MAX_VALUES]; /* allocating kinds */
	size_t nevents;
	/* --size MIN[,MAX]: bytes, both included; MAX only with has_size_max */
	bool has_size, has_size_max;
	__u64 size_min, size_max;
	/*
	 * --kind: allocations of these kinds of memory (memkind.h names) and
	 * their frees; other events have no kind and are left out. A kind is
	 * told at the free or the end, so these come from a first reading of
	 * the record, kindmap (report and script only).
	 */
	const char *kinds[MT_MK_MAX];
	size_t nkinds;
	const struct mt_kindmap *kindmap;
};

struct mt_filter;

/* whether c filters anything at all */
bool mt_filter_conf_any(const struct mt_filter_conf *c);

/*
 * 0 if c can filter a trace sampled at sample_bytes (0: a full trace);
 * else -EINVAL and err says why in one line: --module, --phase and
 * --steps select events by their stacks, which a sampled trace has for a
 * sample of its allocations only, so the totals they leave would count
 * sampled allocations alone. A buffer, not mt_err(): cli/options.c words
 * it as a usage error of its own.
 */
int mt_filter_check_sampled(const struct mt_filter_conf *c, __u64 sample_bytes,
			    char *err, size_t errlen);

/*
 * Whether name is an event kind --event takes: 0; else -EINVAL and a
 * sentence in err (an unknown name, or a free's, which goes with its
 * allocation's kind). A buffer: cli/options.c makes it a usage error, and
 * the unit test reads it.
 */
int mt_filter_check_event(const char *name, char *err, size_t errlen);

/*
 * Whether name is a kind of memory --kind takes: 0; else -EINVAL and a
 * line in err listing the kinds.
 */
int mt_filter_check_kind(const char *name, char *err, size_t errlen);

/*
 * A filter of c remembering at most max_live allocations (bounded
 * memory; past it a free is judged on its own, counted as untracked).
 * NULL when out of memory.
 */
struct mt_filter *mt_filter_new(const struct mt_filter_conf *c,
				size_t max_live);
void mt_filter_free(struct mt_filter *f);

/*
 * Whether the session counts and prints event r of site: secs is its time
 * in seconds since the trace's first event, step the steps its process
 * had finished, seq its number among the session's events (mt_live.seq).
 */
bool mt_filter_event(struct mt_filter *f, const struct mt_call *r,
		     const struct mt_site *site, double secs, __u32 step,
		     __u64 seq);

/*
 * After the events: the values the filters named that no event had, each
 * on a stderr line naming what the trace had instead (its phases, the
 * modules at the level asked, its pids, tids, commands, kinds). 0: every
 * value was seen (or no event was judged); 1: some values of a list were
 * not, a warning; -ENOENT: some filter had none of its values, so that
 * nothing it counts is worth a report.
 */
int mt_filter_check_seen(const struct mt_filter *f, struct mt_sites *sites);

/* its settings as " key=value" pairs, each after a blank: " time=1,2" */
void mt_filter_print_settings(const struct mt_filter *f, FILE *out);

/* what the filter let through and held back: one '# filter' line */
void mt_filter_print(const struct mt_filter *f, FILE *out);

/* the counts behind that line, for tests */
struct mt_filter_stats {
	__u64 passed, dropped;
	__u64 freed_before_window, freed_before_window_bytes;
	__u64 untracked; /* allocations the filter had no room to remember */
};

void mt_filter_stats(const struct mt_filter *f, struct mt_filter_stats *st);

#endif /* __FILTER_H */
