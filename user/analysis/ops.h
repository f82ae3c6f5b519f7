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

struct mt_session;

/*
 * the top call sites of each process by bytes allocated; in a sampled
 * trace their counts kept to the process's (mt_session_alloc_cal)
 */
void mt_ops_print(const struct mt_session *s, size_t top, FILE *out);

#endif /* __OPS_H */
