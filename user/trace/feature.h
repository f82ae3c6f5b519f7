/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A feature of the live trace, in the manner of perf's struct perf_tool:
 * the core (run.c's loop, order.c, events.c, procs.c, the sink) calls
 * each feature's callbacks at the steps of a trace and names none of
 * them; features.c lists them. A feature keeps its state in its own file,
 * and what it keeps of one process in that process's slot for it
 * (struct mt_traced's feat[slot]). A callback left NULL is not called,
 * and none is called of a feature its open left off.
 */
#ifndef __FEATURE_H
#define __FEATURE_H

#include <stdbool.h>
#include <linux/types.h>
#include "event/kinds.h"
#include "analysis/sites.h"
#include "proc/maps.h"

struct mt_tracer;
struct mt_traced;

struct mt_feature {
	const char *name;
	/*
	 * Before the BPF programs load, as tr->conf asks: *st is its state,
	 * or stays NULL when the trace does not ask for it. slot: its index
	 * into each process's feat[]. 0, or negative after mt_err().
	 */
	int (*open)(struct mt_tracer *tr, unsigned int slot, void **st);
	/* the first processes found, before they are attached: 0 or < 0 */
	int (*found)(void *st, struct mt_tracer *tr);
	/* the moment before the command starts: 0 or < 0 */
	int (*start)(void *st, struct mt_tracer *tr);
	/*
	 * The event kinds it takes whole (its own probes'), MT_K_NONE
	 * ended; on_probe has each, in time order, undecoded
	 */
	const __u32 *kinds;
	void (*on_probe)(void *st, struct mt_tracer *tr,
			 const struct mt_event *ev);
	/* an event of t (NULL: of no process followed) its sink counted */
	void (*on_event)(void *st, struct mt_tracer *tr, struct mt_traced *t,
			 const struct mt_event *ev, bool default0,
			 const struct mt_call *r, const struct mt_site *site);
	/* t ran execve (ev): site names the program it runs now */
	void (*on_exec)(void *st, struct mt_tracer *tr, struct mt_traced *t,
			const struct mt_event *ev, const struct mt_site *site);
	/* a library of t attached, with its probes */
	void (*on_lib)(void *st, struct mt_tracer *tr, struct mt_traced *t,
		       const struct mt_mapping *m, int probes);
	/*
	 * t is let go: its slot goes to another process, or the trace is
	 * over. What the feature kept of it is finished and freed.
	 */
	void (*on_exit)(void *st, struct mt_tracer *tr, struct mt_traced *t);
	/* each turn of the trace loop, at now (ns); true ends the trace */
	bool (*tick)(void *st, struct mt_tracer *tr, __u64 now);
	/*
	 * The trace is over (tr->ran: it ran), every process let go; st is
	 * freed. 0, or negative after mt_err(); a feature that answers a
	 * question (a dry run) sets tr->verdict.
	 */
	int (*close)(void *st, struct mt_tracer *tr);
};

/* the most features features.c may list */
#define MT_MAX_FEATURES 8

/*
 * features.c: each step of the trace, for every feature on, in the order
 * listed. open, found, start: 0, or -1 after the first mt_err(); probe:
 * false when no feature takes ev's kind; tick: true when one asked to end
 * the trace; close: 0, or -1 when a feature's close failed (said).
 */
int mt_features_open(struct mt_tracer *tr);
int mt_features_found(struct mt_tracer *tr);
int mt_features_start(struct mt_tracer *tr);
bool mt_features_probe(struct mt_tracer *tr, const struct mt_event *ev);
void mt_features_event(struct mt_tracer *tr, struct mt_traced *t,
		       const struct mt_event *ev, bool default0,
		       const struct mt_call *r, const struct mt_site *site);
void mt_features_exec(struct mt_tracer *tr, struct mt_traced *t,
		      const struct mt_event *ev, const struct mt_site *site);
void mt_features_lib(struct mt_tracer *tr, struct mt_traced *t,
		     const struct mt_mapping *m, int probes);
void mt_features_exit(struct mt_tracer *tr, struct mt_traced *t);
bool mt_features_tick(struct mt_tracer *tr, __u64 now);
int mt_features_close(struct mt_tracer *tr);

#endif /* __FEATURE_H */
