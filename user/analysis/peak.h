/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The peak of each memory account (a process's allocations of one address
 * space on one device) and what was alive at it, grouped by call site.
 * O(1) per event: at a new peak only the moment is noted; an allocation
 * freed later that was alive then is added to the peak's groups as it
 * goes, and the ones still alive come from the live table at the end.
 */
#ifndef __PEAK_H
#define __PEAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "event/kinds.h"
#include "analysis/livetable.h"
#include "analysis/memkind.h"

struct mt_peak;

struct mt_peak *mt_peak_new(void);
void mt_peak_free(struct mt_peak *p);

/* e became live (after the live table took it) */
void mt_peak_alloc(struct mt_peak *p, const struct mt_live *e);

/*
 * e could not become live: the live table had no room. Its account's peak
 * is marked incomplete by up to the bytes so refused.
 */
void mt_peak_untracked(struct mt_peak *p, const struct mt_live *e);

/*
 * e, live until now, was freed (after the live table let it go); kind:
 * what it was (memkind.h), told now that its life is known
 */
void mt_peak_release(struct mt_peak *p, const struct mt_live *e,
		     enum mt_memkind kind);

/* an account's bytes alive at its peak, by kind (memkind.h) */
struct mt_peak_kinds {
	__u32 pid;
	enum mt_space space;
	enum mt_dev_type dev_type;
	int dev; /* -1: none or unknown */
	__u64 peak;
	__u64 bytes[MT_MK_MAX]; /* exact; they add up to peak */
};

/* the kind of e, alive at the end */
typedef enum mt_memkind mt_peak_kind_fn(const struct mt_live *e, void *ctx);

/*
 * Each account with a peak, in the order first seen: the bytes alive at
 * it by kind, those freed since told at their free, those still alive
 * by kind_of. 0, or -ENOMEM.
 */
int mt_peak_foreach_kinds(const struct mt_peak *p,
			  const struct mt_livetable *live,
			  mt_peak_kind_fn *kind_of, void *kctx,
			  void (*fn)(const struct mt_peak_kinds *k, void *ctx),
			  void *ctx);

/*
 * For each account: when it peaked (ts, seconds since t0), the peak in
 * bytes, and the allocations alive then grouped by site (module, phase,
 * stack), largest first, the top ones printed and the rest summed, so that
 * the lines add up to the peak. stacks: print each group's Python stack.
 */
void mt_peak_print(const struct mt_peak *p, const struct mt_livetable *live,
		   __u64 t0, size_t top, bool stacks, FILE *out);

/*
 * The same groups, handed to fn one at a time: the accounts with a peak in
 * the order first seen, each one's groups largest first, then (unfit) the
 * bytes alive at its peak that no group slot held. 0, or -ENOMEM.
 */
struct mt_peak_group {
	__u32 pid;
	enum mt_space space;
	enum mt_dev_type dev_type;
	int dev; /* -1: none or unknown */
	__u64 peak, peak_ts; /* the account's: bytes, ns */
	__u64 peak_count; /* its allocations alive then: exact */
	__u32 peak_step; /* steps its process had finished at the peak */
	const char *peak_phase; /* of the event that made it; NULL: none */
	const struct mt_site *site; /* NULL when unfit, or in tests */
	/*
	 * sampled trace: estimates, bytes mt_live_est's and count kept so
	 * that an account's groups never add up past its peak_count
	 * (sample.h);
	 * count is 0 only for a group none of whose stacks was walked
	 */
	__u64 bytes, count;
	/*
	 * exact bytes: of its allocations whose stack was walked, and of
	 * those whose was not (--sample-bytes: then bytes and count leave
	 * them out; a group of those only has count 0)
	 */
	__u64 exact_bytes, bare_bytes;
	bool unfit;
};

int mt_peak_foreach(const struct mt_peak *p, const struct mt_livetable *live,
		    void (*fn)(const struct mt_peak_group *g, void *ctx),
		    void *ctx);

/* --at: the same view of what is alive now, at ts */
void mt_peak_print_now(const struct mt_livetable *live, __u64 t0, __u64 ts,
		       size_t top, bool stacks, FILE *out);

/*
 * The groups of what is alive now, handed to fn as mt_peak_foreach does:
 * each account's peak is its bytes alive now, peak_ts 0. For a live view
 * (top). 0, or -ENOMEM.
 */
int mt_peak_foreach_now(const struct mt_livetable *live,
			void (*fn)(const struct mt_peak_group *g, void *ctx),
			void *ctx);

#endif /* __PEAK_H */
