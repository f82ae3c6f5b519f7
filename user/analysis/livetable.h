/* SPDX-License-Identifier: GPL-2.0 */
/* Allocations not yet freed, by (pid, address space, pointer). */
#ifndef __LIVETABLE_H
#define __LIVETABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

struct mt_site;

struct mt_live {
	__u64 ptr;
	__u64 size;
	__u64 ts;
	__u64 seq; /* the allocating event's number in the trace, from 1 */
	const char *event; /* the allocating call's event name */
	const char *caller; /* interned library basename */
	struct mt_site *site; /* who made it; NULL in tests only */
	__u32 step; /* optimizer steps the process had finished by then */
	__u32 born; /* its process's phase instance then (memkind.h) */
	__u32 pid; /* 0 marks an empty slot: never insert pid 0 */
	__u16 space; /* enum mt_space */
	__u8 dev_type; /* enum mt_dev_type */
	__s8 dev; /* device index, -1 unknown */
	/*
	 * What each of its bytes stands for in the figures of its site and
	 * module, less one: 0 in a full trace (zero-initialised: itself); in
	 * a sampled one (analysis/sample.h) 1/p - 1 where its stack was
	 * sampled, -1 where it was not.
	 */
	float est_adj;
};

/* the bytes e stands for in its site's and module's figures */
__u64 mt_live_est(const struct mt_live *e);

/*
 * the allocations e stands for there: 1, 1/p or 0 (unsampled), not
 * rounded, so that a sum of many is not off by a rounding of each
 */
double mt_live_weight(const struct mt_live *e);

/* e's stack was not walked (--sample-bytes): it stands for nothing there */
bool mt_live_unsampled(const struct mt_live *e);

struct mt_livetable;

/* A table that never holds more than max entries (bounded memory). */
struct mt_livetable *mt_live_new(size_t max);
void mt_live_free(struct mt_livetable *t);

/*
 * Insert or replace (an address reused after a free we did not see).
 * Returns 0, -ENOSPC when full (counted in the table's mt_live_stats),
 * -ENOMEM.
 */
int mt_live_insert(struct mt_livetable *t, const struct mt_live *e);

/* Remove a key; true and *out filled if it was there. */
bool mt_live_remove(struct mt_livetable *t, __u32 pid, __u16 space, __u64 ptr,
		    struct mt_live *out);

/*
 * Remove every entry of pid (a process whose memory went at once: its
 * exec), handing each to fn once it left the table. Returns how many.
 */
size_t mt_live_remove_pid(struct mt_livetable *t, __u32 pid,
			  void (*fn)(const struct mt_live *e, void *ctx),
			  void *ctx);

size_t mt_live_count(const struct mt_livetable *t);

/*
 * A free that matched no entry. After the table first refused an entry it
 * is taken to be the free of one it refused, so that the estimate of the
 * size needed follows the allocations that are really alive.
 */
void mt_live_unpaired(struct mt_livetable *t);

/*
 * What a full table left out, for the analyses to say which of their
 * figures are incomplete and what --max-live would have held them all.
 */
struct mt_live_stats {
	size_t max; /* the bound the table was made with */
	__u64 refused; /* allocations it had no room for */
	__u64 refused_bytes;
	__u64 unfreed; /* of the refused, those not seen freed (estimated) */
	/*
	 * The most allocations alive at once: entries plus the refused ones
	 * not seen freed since. Low when frees of allocations made before
	 * the trace began are taken for frees of refused ones.
	 */
	__u64 high;
	/* a --max-live with headroom over high, only when refused */
	__u64 advise;
};

void mt_live_stats(const struct mt_livetable *t, struct mt_live_stats *st);

/*
 * The keys that mark a line's figure incomplete because the table was
 * full, written on out without a newline; nothing if it never was. For
 * a figure of the whole table (the live list, the leak headline): how
 * many allocations it refused and how many of those live.
 */
void mt_live_mark_table(const struct mt_live_stats *st, FILE *out);
/* for one account's figure: what it missed, count and bytes */
void mt_live_mark_account(const struct mt_live_stats *st, __u64 count,
			  __u64 bytes, FILE *out);

void mt_live_foreach(const struct mt_livetable *t,
		     void (*fn)(const struct mt_live *e, void *ctx), void *ctx);

#endif /* __LIVETABLE_H */
