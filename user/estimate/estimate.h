/* SPDX-License-Identifier: GPL-2.0 */
/*
 * estimate: replay a record's allocations through the caching allocator
 * model (allocmodel.h) and print what a GPU would have reserved, where it
 * peaks and where it would run out of memory.
 */
#ifndef __ESTIMATE_H
#define __ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include "estimate/allocmodel.h"
#include "lib/err.h"

#define MT_MAX_SCALES 16

/* --scale PATTERN=FACTOR */
struct mt_scale {
	const char *pattern; /* a substring of a frame, module or phase */
	double factor;
};

struct mt_estimate_conf {
	const char *input; /* the record */
	size_t max_live; /* recorded pointers tracked per device */
	struct mt_am_conf model; /* the caching allocator's settings */
	bool check; /* compare reserved with the record's c10 totals */
	struct mt_scale scales[MT_MAX_SCALES];
	int nscales;
};

/*
 * Estimate as c asks: 0, *v MT_VERDICT_NO when --check found a mismatch;
 * or negative after mt_err()
 */
int mt_estimate(const struct mt_estimate_conf *c, enum mt_verdict *v);

#endif /* __ESTIMATE_H */
