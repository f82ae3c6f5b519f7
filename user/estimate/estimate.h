/* SPDX-License-Identifier: GPL-2.0 */
/*
 * estimate: replay a record's allocations through the caching allocator
 * model (allocmodel.h) and print what a GPU would have reserved, where it
 * peaks and where it would run out of memory.
 */
#ifndef __ESTIMATE_H
#define __ESTIMATE_H

#include "cli/options.h"

/* the exit status: 0; 1 when --check found a mismatch; 2 on an error */
int mt_estimate(const struct mt_options *o);

#endif /* __ESTIMATE_H */
