/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --flight: a flight recorder. Each traced process keeps, in
 * bounded memory, the events of its last TIME (or the last SIZE of them)
 * and every allocation older than that which was still alive when the
 * window began, so that a dump is a whole picture: what was alive at its
 * start and everything since. A dump is an ordinary record
 * (docs/FORMAT.md) in the dump folder, named by time, the tracer's pid,
 * a number, pid, rank and reason, and given that name only once it is
 * whole; the folder keeps at most so many dumps and bytes: the end dumps
 * removed first, then usage and asked, then signal and exit, then oom
 * and oomkill, the oldest first within each.
 */
#ifndef __FLIGHT_H
#define __FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "event/kinds.h"
#include "analysis/sites.h"
#include "proc/rank.h"

struct mt_flight_conf {
	__u64 window_ns; /* --flight TIME; 0 when the window is a size */
	__u64 window_bytes; /* the window's memory: SIZE, or a cap for TIME */
	const char *dir; /* -o DIR */
	unsigned int max_dumps; /* --flight-dumps */
	__u64 max_total; /* --flight-total: bytes of dumps kept */
	__u64 sample_bytes; /* --sample-bytes of the trace; 0: none */
};

/*
 * A dump's header lines for the analyses: its window's first and last
 * event ("FIRST LAST", ns as the events' times), and how its process
 * ended (analysis/session.h's MT_END_META)
 */
#define MT_FLIGHT_SPAN_KEY "window_ns"
#define MT_FLIGHT_ENDED_KEY "ended"

/* the window's memory when it is given as a time */
#define MT_FLIGHT_MEM_DEFAULT (1ULL << 30)
/* allocations older than the window kept, at most, a process */
#define MT_FLIGHT_MAX_PINNED 4194304
/* header lines a dump repeats, at most, a process */
#define MT_FLIGHT_MAX_META 256
/* the window's events are kept in blocks of this many (2.6 MiB) */
#define MT_FLIGHT_BLOCK 16384

struct mt_flight;
struct mt_flight_dir;

/*
 * The dump folder: conf's, opened once (not a symbolic link) and checked
 * to be a folder this process can write in. NULL and err filled (one
 * line) otherwise: a buffer, as the unit test reads it.
 */
struct mt_flight_dir *mt_flight_dir_open(const struct mt_flight_conf *c,
					 char *err, size_t errlen);
/* The dumps written, and those that failed, as far as mt_flight_dir_reap knows */
unsigned int mt_flight_dir_dumps(const struct mt_flight_dir *d);
unsigned int mt_flight_dir_failed(const struct mt_flight_dir *d);
/*
 * The dumps child processes write (mt_flight_dump): those done are said on
 * stderr and counted, the caps enforced; wait: all of them, else those
 * done now
 */
void mt_flight_dir_reap(struct mt_flight_dir *d, bool wait);
/* waits for the dumps being written first */
void mt_flight_dir_close(struct mt_flight_dir *d);

/* One process's window. NULL: no memory. */
struct mt_flight *mt_flight_new(struct mt_flight_dir *d, int pid);
void mt_flight_free(struct mt_flight *f);

/* a header line each of its dumps repeats (the tool, target, libraries) */
void mt_flight_meta(struct mt_flight *f, const char *key, const char *value);

/* an event the session counted, with its decoding (role, pointer) */
void mt_flight_event(struct mt_flight *f, const struct mt_event *ev,
		     bool default0, const struct mt_call *r,
		     const struct mt_site *site);

/*
 * The process ran execve (ev, MT_K_EXEC; site names its new program):
 * what its old image held is freed. The event joins the window.
 */
void mt_flight_exec(struct mt_flight *f, const struct mt_event *ev,
		    const struct mt_site *site);

/*
 * Dump f as it is now: tag names it in the file name (oom, oomkill,
 * signal, exit, usage, asked, end: how long the caps keep it), why says it in
 * the dump's first lines; lost: the trace's events lost so far. A child
 * process writes it (where fork fails, this one does, before it returns):
 * f may be freed once this returns. mt_flight_dir_reap says it, counts it
 * and holds the folder's caps, each removal said on stderr. Returns 0, or
 * -errno after a line on stderr; a failed dump is counted, and the next
 * one tried as any other (a full disk may have room by then).
 */
int mt_flight_dump(struct mt_flight *f, const char *tag, const char *why,
		   const struct mt_rank *rank, __u64 lost);

/* events in the window, and allocations older than it kept, now */
size_t mt_flight_events(const struct mt_flight *f);
size_t mt_flight_pinned(const struct mt_flight *f);
/* bytes the window holds for its events now, and for one event */
size_t mt_flight_mem(const struct mt_flight *f);
size_t mt_flight_event_bytes(void);

#endif /* __FLIGHT_H */
