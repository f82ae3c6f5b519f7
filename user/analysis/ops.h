/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Operators: the call sites that create memory, by innermost Python frame
 * or, in backward, autograd node class; the operator-level view of
 * in-process trackers.
 */
#ifndef __OPS_H
#define __OPS_H

#include <stddef.h>
#include <stdio.h>
#include "analysis/sites.h"

/* the top call sites of each process by bytes allocated */
void mt_ops_print(struct mt_sites *sites, size_t top, FILE *out);

#endif /* __OPS_H */
