/* SPDX-License-Identifier: GPL-2.0 */
/* Totals kept while tracing and printed at the end. */
#ifndef __SUMMARY_H
#define __SUMMARY_H

#include <stdio.h>
#include "event/kinds.h"
#include "event/unseen.h"
#include "analysis/livetable.h"
#include "analysis/sites.h"

#define MT_SUM_KINDS 48
#define MT_SUM_FAILS 64
#define MT_SUM_DEVS 256
#define MT_SUM_MODULES 4096
#define MT_SUM_PHASES 64
#define MT_SUM_THREADS 1024

struct mt_kind_stat {
	const char *event;
	__u64 count, bytes;
	/* frees of no known size after the live table refused an entry */
	__u64 unpaired;
};

struct mt_fail_stat {
	const char *event;
	enum mt_errdomain domain;
	int ret;
	__u64 count, bytes;
};

/* one (process, device, source) memory account */
struct mt_dev_stat {
	__u32 pid;
	enum mt_dev_type type;
	int index;
	enum mt_space space;
	__u64 cur, peak; /* live bytes we saw allocated */
	__u64 allocated, allocated_peak; /* c10's own running totals */
	__u64 reserved, reserved_peak;
	/*
	 * c10's: what the allocator held before the first event seen, whose
	 * owner no trace that began later can know; totals_seen: it came
	 */
	bool totals_seen;
	__u64 before_allocated, before_reserved;
	/* allocations the live table had no room for: not in cur or peak */
	__u64 untracked, untracked_bytes;
};

/* one (process, module, phase) account */
struct mt_module_stat {
	__u32 pid;
	const char *phase, *module; /* interned */
	/*
	 * allocs: those whose stack was walked (all of them in a full
	 * trace), alloc_est what they stand for (analysis/sample.h)
	 */
	__u64 allocs, frees, bytes_alloc, bytes_freed;
	double alloc_est;
	/*
	 * Its own memory: the bytes it allocated in this phase that are
	 * alive now (whoever frees them), and the most alive at once.
	 */
	__u64 live, own_peak;
	/* the process's highest allocated seen at its events */
	__u64 process_peak;
	__u64 time_ns; /* between consecutive events of a thread inside it */
	__u64 recompute_bytes; /* allocated re-running forward in backward */
	__u64 unpaired; /* frees of no known size, as in mt_kind_stat */
	bool incomplete; /* peak read from an account missing allocations */
};

/*
 * One (process, module, memory account): what the module allocated on
 * that device and address space, over every phase, for the module tree.
 */
struct mt_module_own {
	__u32 pid;
	const char *module; /* interned, as its sites have it */
	enum mt_space space;
	enum mt_dev_type dev_type;
	int dev;
	__u64 live, peak; /* its bytes alive now, the most alive at once */
	__u64 alloc_bytes;
};

struct mt_phase_stat {
	__u32 pid;
	const char *phase;
	__u64 peak;
	bool incomplete; /* as in mt_module_stat */
};

/* a thread's last attributed event, to add up time inside a module */
struct mt_thread_last {
	__u32 tid;
	const char *phase, *module;
	__u64 ts;
};

struct mt_summary {
	struct mt_kind_stat kinds[MT_SUM_KINDS];
	size_t nkinds;
	struct mt_fail_stat fails[MT_SUM_FAILS];
	size_t nfails;
	struct mt_dev_stat devs[MT_SUM_DEVS];
	size_t ndevs;
	struct mt_module_stat *mods; /* grows up to MT_SUM_MODULES */
	size_t nmods, capmods;
	struct mt_module_own *owns; /* grows up to MT_SUM_MODULES */
	size_t nowns, capowns;
	struct mt_phase_stat phases[MT_SUM_PHASES];
	size_t nphases;
	struct mt_thread_last threads[MT_SUM_THREADS]; /* by tid % size */
	bool attributed; /* any event had a phase: print the tables */
	__u64 events;
	__u64 untracked; /* stats that did not fit the fixed tables */
	__u64 live_full; /* allocations the live table had no room for */
	__u64 sites_full; /* events given the sites table's overflow site */
	__u64 procs_evicted; /* processes whose slot went to another */
	/*
	 * Frees of memory allocated before the trace began (an attach with
	 * -p): no live entry had them while the live table had refused none.
	 * Their bytes where the free carries its size; unsized where not.
	 */
	__u64 early_frees, early_bytes, early_unsized;
};

/* Count a decoded event (its size already completed from the live table). */
void mt_summary_event(struct mt_summary *s, const struct mt_call *r);

/* Live bytes of (pid, device, source) change by delta. */
void mt_summary_live(struct mt_summary *s, __u32 pid, enum mt_dev_type type,
		     int index, enum mt_space space, __s64 delta);

/* An allocation of size bytes the live table had no room for. */
void mt_summary_untracked(struct mt_summary *s, __u32 pid,
			  enum mt_dev_type type, int index, enum mt_space space,
			  __u64 size);

/*
 * Account an event to the module and phase that made it (after
 * mt_summary_event and mt_summary_live saw it). weight: what each byte of
 * an allocation stands for (1; in a sampled trace, analysis/sample.h).
 */
void mt_summary_attrib(struct mt_summary *s, const struct mt_call *r,
		       const char *phase, const char *module, bool recompute,
		       double weight);

/*
 * e, an allocation of an attributed site, became live (delta its size)
 * or was freed (minus its size): its module's own figures follow.
 */
void mt_summary_own(struct mt_summary *s, const struct mt_live *e, __s64 delta);

/*
 * Process pid ran execve: the caching allocator of its old image is gone,
 * and with it what c10 said it held (allocated, reserved: 0; the peaks
 * stay). The bytes of its other accounts go with their live allocations.
 */
void mt_summary_exec(struct mt_summary *s, __u32 pid);

/* a free that matched no live allocation (after mt_summary_event saw it) */
void mt_summary_unmatched_free(struct mt_summary *s, const struct mt_call *r);

void mt_summary_free(struct mt_summary *s);

/*
 * The memory process pid holds now: the caching allocator's totals over its
 * CUDA devices where it has any, else its CPU tensor bytes (both figures).
 */
void mt_summary_totals(struct mt_summary *s, __u32 pid, __u64 *allocated,
		       __u64 *reserved);

/* pid has a CUDA caching allocator's account: its totals are those */
bool mt_summary_has_cuda(const struct mt_summary *s, __u32 pid);

/* whether pid's totals count its account d; cuda: mt_summary_has_cuda's */
bool mt_summary_in_totals(const struct mt_dev_stat *d, bool cuda);

/*
 * The account of (pid, device, space), made if none of its events came
 * yet; NULL when the summary has no room for one more
 */
struct mt_dev_stat *mt_summary_account(struct mt_summary *s, __u32 pid,
				       enum mt_dev_type type, int index,
				       enum mt_space space);

/* the account of (pid, device, space); NULL when none of its events came */
const struct mt_dev_stat *mt_summary_dev(const struct mt_summary *s, __u32 pid,
					 enum mt_dev_type type, int index,
					 enum mt_space space);

struct mt_summary_end {
	double seconds;
	__u64 lost;
	struct mt_unseen unseen;
	/*
	 * a record that ends without its end block (its recorder killed, or
	 * its disk full): seconds run to its last event, what came after is
	 * missing, and lost and unseen are not known (0)
	 */
	bool cut_short;
	size_t top_live; /* live groups printed at most */
};

struct mt_sample_cal;

/*
 * What keeps the estimated counts of a process's allocations over the
 * trace to its exact count (analysis/sample.h): fn fills *cal for pid
 */
struct mt_summary_cal {
	void (*fn)(const void *ctx, __u32 pid, struct mt_sample_cal *cal);
	const void *ctx;
};

/* prints; sorts the module table in place */
void mt_summary_print(struct mt_summary *s, const struct mt_livetable *live,
		      const struct mt_summary_end *end,
		      const struct mt_summary_cal *cal, FILE *out);

#endif /* __SUMMARY_H */
