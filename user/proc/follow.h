/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Finding the processes to trace beyond -p: a launcher's descendants
 * (--children) and every process that maps our libraries (--all).
 */
#ifndef __FOLLOW_H
#define __FOLLOW_H

#include <stddef.h>

/* root's descendants now (not root), from /proc; at most max; the count */
size_t mt_descendants(int root, int *out, size_t max);

/*
 * The processes that map one of the libraries in libs (a bitmask of enum
 * mt_lib), except self; at most max; the count.
 */
size_t mt_procs_mapping(unsigned int libs, int self, int *out, size_t max);

#endif /* __FOLLOW_H */
