/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --flight in the live trace: each traced process's window
 * (record/flight.h), and when to dump it: an OOM, the process killed (by
 * the kernel's OOM killer, or a signal), usage crossing --alert-pct,
 * SIGUSR1 to the tracer, the trace's end (--flight-at-end).
 */
#ifndef __TRACE_FLIGHT_H
#define __TRACE_FLIGHT_H

#include <stdbool.h>
#include "event/kinds.h"
#include "analysis/sites.h"

struct mt_tracer;
struct mt_traced;

/* The dump folder, checked. 0, or 2 after a one-line error. */
int mt_tracer_flight_open(struct mt_tracer *tr);

/* t's library attached, for its dumps' header */
void mt_tracer_flight_lib(struct mt_tracer *tr, struct mt_traced *t,
			  const char *path, int probes);

/* an event the session counted: into t's window; an OOM arms a dump */
void mt_tracer_flight_event(struct mt_tracer *tr, struct mt_traced *t,
			    const struct mt_event *ev, bool default0,
			    const struct mt_call *r,
			    const struct mt_site *site);

/*
 * t ran execve (ev; site names its new program): its window frees what
 * the old image held, and its dumps name the new image's CPython too
 */
void mt_tracer_flight_exec(struct mt_tracer *tr, struct mt_traced *t,
			   const struct mt_event *ev,
			   const struct mt_site *site);

/*
 * SIGUSR1 came: every process's window is dumped at the next tick (one
 * line says so when there is none)
 */
void mt_tracer_flight_ask(void);

/* at each poll: the dumps due (armed, asked, a process gone a while) */
void mt_tracer_flight_tick(struct mt_tracer *tr, __u64 now);

/*
 * t is no longer followed (its slot is wanted for another process): its
 * dumps still due, then its window freed
 */
void mt_tracer_flight_release(struct mt_tracer *tr, struct mt_traced *t);

/*
 * The trace is over: the dumps still due, then everything freed. 0, or 2
 * when a dump failed (said when it did).
 */
int mt_tracer_flight_close(struct mt_tracer *tr);

#endif /* __TRACE_FLIGHT_H */
