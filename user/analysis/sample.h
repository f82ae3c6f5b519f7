/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --sample-bytes R: the Python stack is walked for a sample of the
 * allocations chosen by bytes, as heap profilers sample (tcmalloc, Go's
 * MemProfileRate): every byte is equally likely to be chosen, R bytes
 * apart on average, so an allocation of s bytes is sampled with
 * probability p = 1 - exp(-s/R), and one much larger than R always is.
 * A sampled allocation stands for s/p bytes in the figures that come from
 * its stack (module, line, call site), an unsampled one for none: their
 * sums estimate the full trace's without bias. Every total stays exact.
 */
#ifndef __SAMPLE_H
#define __SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct mt_call;

/* the largest R: intervals far past any process's memory are no sample */
#define MT_SAMPLE_MAX (1ULL << 50)

/*
 * 1/p for an allocation of size bytes sampled at one in rate bytes: what
 * each of its bytes stands for. 1 when rate is 0 (no sampling) or size 0.
 */
double mt_sample_weight(__u64 size, __u64 rate);

/*
 * A column's title: in a sampled trace (sampled non-zero) its figures,
 * summed from stacks, are estimates, and its title says so with a '~'.
 * title: a string literal.
 */
#define MT_EST_TITLE(sampled, title) ((sampled) ? "~" title : title)

/*
 * r's Python stack was not walked in a trace sampled at rate (0: a full
 * trace, where every stack is): an allocation the sampler left out, or
 * any free (user space pairs it with its allocation). Such an event's
 * site has no stack, module or phase; its size and time are exact.
 */
bool mt_sample_unwalked(__u64 rate, const struct mt_call *r);

/*
 * What an export draws where the stack of an event that was not walked
 * would be: the event is drawn with what is known of it, its call and
 * library, exact in size, never scaled up.
 */
#define MT_SAMPLE_NO_STACK "stack not sampled"

/* size scaled by weight, rounded to the nearest byte */
__u64 mt_sample_scale(__u64 size, double weight);

/*
 * Estimated counts kept to an exact one. Every event is seen, so how
 * many allocations a set holds (an account's at a moment, a process's
 * over the trace) is exact; only which stack each of them came from is
 * estimated. A part of the set (a call site, a line) holds exactly those
 * of its allocations whose stack was walked (walked), and by the sample
 * est in all (their 1/p summed): est - walked is what it says of the
 * unwalked ones. Where the parts together say more of them than there
 * are, what they say is scaled down to the exact number, so that no part
 * counts less than was seen of it and the parts never add up past the
 * exact count. Where they say fewer, it stands: the rest are allocations
 * no walked stack speaks for, mostly ones far smaller than R, which are
 * rarely walked, and sharing them out would credit them to whichever
 * parts had one walked (on a training loop's records that made the
 * counts further from the truth than the estimates themselves).
 */
struct mt_sample_cal {
	double scale; /* of a part's est - walked: 1 or less */
	double sum; /* the scaled parts taken so far */
	__u64 left; /* the set's allocations not walked: most to give */
	__u64 given; /* of them, given to the parts taken so far */
};

/* a set of exact allocations, walked of them walked, est for all summed */
void mt_sample_cal_init(struct mt_sample_cal *c, __u64 exact, __u64 walked,
			double est);

/* a set whose exact count is not known: each part counts its estimate */
void mt_sample_cal_none(struct mt_sample_cal *c);

/* a part's calibrated count, not rounded: for one part on its own */
double mt_sample_cal_count(const struct mt_sample_cal *c, __u64 walked,
			   double est);

/*
 * The next part's calibrated count in whole allocations: the parts taken
 * in turn, each within one of its real count, add up to the rounded sum
 * of theirs, which is at most the exact count.
 */
__u64 mt_sample_cal_next(struct mt_sample_cal *c, __u64 walked, double est);

/*
 * Fill v[0..n) with intervals of an exponential distribution of mean rate,
 * for the BPF sampler to draw from at random (it has no floating point):
 * the distribution's quantiles at the middle of n equal slices of
 * probability, scaled so that their mean is rate, each at least 1. n > 0.
 */
void mt_sample_gaps(__u64 *v, size_t n, __u64 rate);

#endif /* __SAMPLE_H */
