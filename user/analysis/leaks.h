/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Leaks: allocations that stay alive across several optimizer steps (or
 * seconds, for a process without steps) and whose count or bytes grow
 * from one step to the next, grouped by call site: memleak's view with
 * Python lines. State that settles after the first steps (parameters,
 * gradients, optimizer state) is not reported.
 */
#ifndef __LEAKS_H
#define __LEAKS_H

#include <stdbool.h>
#include <stdio.h>
#include "analysis/livetable.h"

struct mt_leak_conf {
	unsigned int age_steps; /* alive across this many steps, >= 1 */
	double age_seconds; /* or this long, where a process has no steps */
};

struct mt_leaks;

struct mt_leaks *mt_leaks_new(const struct mt_leak_conf *c);
void mt_leaks_free(struct mt_leaks *l);

/*
 * A boundary of process pid at time ts: it finished optimizer step `step`
 * (1, 2, ...), or, with step 0, age_seconds passed for a process without
 * steps. The live allocations of pid old enough (e->step <= step -
 * age_steps, or e->ts <= ts - age_seconds) are counted per site.
 */
void mt_leaks_boundary(struct mt_leaks *l, __u32 pid, __u32 step, __u64 ts,
		       const struct mt_livetable *live);

/*
 * The record is a flight recorder's dump whose window of events spans
 * window_ns (record/flight.h): judge it on the window alone. Its steps are
 * not the process's, and only sampled allocations have a site: the
 * boundaries are then the ends of the window's MT_LEAK_SLICES slices (the
 * caller passes them to mt_leaks_boundary with step 0), allocations
 * counted by call and size, exact for every one, those made a slice
 * before a boundary; a group that grew at any boundary is a leak. Call
 * before the first boundary.
 */
void mt_leaks_window(struct mt_leaks *l, __u64 window_ns);

/* the boundaries a window is judged at: the ends of its equal slices */
#define MT_LEAK_SLICES 8

/* how many of pid's sites are leaks by now */
size_t mt_leaks_count(const struct mt_leaks *l, __u32 pid);

/* the leak check's verdict over every process */
struct mt_leak_verdict {
	size_t growing; /* sites that grew at each of the last boundaries */
	bool judged; /* some process had enough boundaries to judge */
	size_t unjudged; /* processes with too few */
	int needed; /* boundaries a process needs to be judged */
	__u64 boundaries; /* seen, of the kind judged, over all processes */
	__u64 uncounted; /* allocations the site table had no room for */
	/*
	 * a dump's window (mt_leaks_window), its seconds; 0: a whole trace.
	 * Its groups that kept memory from some slices, never from RUN in a
	 * row, and let none go: it cannot tell whether they leak.
	 */
	double window_s;
	size_t undecided;
};

/* one growing site: its latest sample and its growth per boundary */
struct mt_leak_suspect {
	const struct mt_site
		*site; /* in a window: a sampled member's, or NULL */
	const char *event; /* in a window: the group's call and size */
	__u64 size;
	__u32 pid;
	__u64 count, bytes;
	double count_growth, bytes_growth; /* per boundary */
	double per_seconds; /* a boundary's seconds; 0: a boundary is a step */
};

/*
 * The verdict, and fn (may be NULL) for each growing site, largest
 * growth first. 0, or -ENOMEM.
 */
int mt_leaks_verdict(const struct mt_leaks *l, struct mt_leak_verdict *vd,
		     void (*fn)(const struct mt_leak_suspect *k, void *ctx),
		     void *ctx);

/*
 * The sites that grew at every one of the last boundaries; the headline
 * is marked incomplete when the live table (counted from) refused entries.
 */
void mt_leaks_print(const struct mt_leaks *l, const struct mt_livetable *live,
		    bool stacks, FILE *out);

#endif /* __LEAKS_H */
