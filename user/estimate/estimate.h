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

/* the exit status: 0; 1 when --check found a mismatch; 2 on an error */
int mt_estimate(const struct mt_estimate_conf *c);

#endif /* __ESTIMATE_H */
