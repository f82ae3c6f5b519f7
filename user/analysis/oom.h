/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocations that failed for want of memory (cudaErrorMemoryAllocation,
 * CUDA_ERROR_OUT_OF_MEMORY, c10's OOM report; other failures are failed
 * calls, not OOMs), counted and shown the moment they happen (by the
 * event lines' view, analysis/lines.h): the request, its Python stack,
 * module and phase, the allocator's state, the top live sites of the
 * process; then the caching allocator's retry (cached segments freed, the
 * same request again) as it unfolds.
 */
#ifndef __OOM_H
#define __OOM_H

#include <stdio.h>
#include "event/kinds.h"
#include "analysis/sites.h"
#include "analysis/summary.h"

struct mt_oom;

struct mt_oom *mt_oom_new(void);
void mt_oom_free(struct mt_oom *o);

/* every event, after the summary and the sites counted it */
void mt_oom_event(struct mt_oom *o, const struct mt_call *r,
		  const struct mt_site *site);

/* what an OOM block shows of the moment it happened */
struct mt_oom_state {
	const struct mt_summary *sum;
	struct mt_sites *sites;
	/*
	 * the allocations r's process holds now, exact, which the sites'
	 * estimated counts are kept to (analysis/sample.h)
	 */
	__u64 live;
	__u64 t0; /* the first event's ts */
	bool stacks;
};

/*
 * What the last event mt_oom_event counted (r, site) shows: an exception
 * line, a retry line, an OOM block; nothing for most events
 */
void mt_oom_print_event(const struct mt_oom *o, const struct mt_call *r,
			const struct mt_site *site,
			const struct mt_oom_state *st, FILE *out);

struct mt_oom_counts {
	__u64 failures; /* allocations failed for want of memory */
	__u64 retries; /* the caching allocator's retries after one */
	__u64 gave_up; /* c10's OOM reports: the allocator gave up */
	__u64 raised; /* Python exceptions traced (--trace-exceptions) */
	/* of them, torch's OutOfMemoryError; the first one's site */
	__u64 raised_oom;
	const struct mt_site *raised_oom_site;
};

/* r is a Python raise of torch's OutOfMemoryError (--trace-exceptions) */
bool mt_oom_is_raise(const struct mt_call *r, const struct mt_site *site);

void mt_oom_counts(const struct mt_oom *o, struct mt_oom_counts *c);

/* out-of-memory failures and retries of the whole run */
void mt_oom_print(const struct mt_oom *o, FILE *out);

#endif /* __OOM_H */
