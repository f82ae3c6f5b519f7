/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Records handed back in the order of their keys (time stamps), ties in
 * the order they came; fastest when they come nearly in order (reorder.c
 * says how). Records are copied in once, into a pool of fixed-size slots.
 */
#ifndef __REORDER_H
#define __REORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct mt_reorder;

/* holds at most max records of size bytes; NULL: out of memory */
struct mt_reorder *mt_reorder_new(size_t size, size_t max);
void mt_reorder_free(struct mt_reorder *r);

/* copy rec in under key: 0, -ENOSPC when max are held, or -ENOMEM */
int mt_reorder_push(struct mt_reorder *r, __u64 key, const void *rec);

/*
 * The held record of the lowest key, taken out, if that key is below
 * upto; else NULL. It stays valid until the next push or pop.
 */
const void *mt_reorder_pop(struct mt_reorder *r, __u64 upto);

/* the lowest key held, in *key: false when none is held */
bool mt_reorder_first(const struct mt_reorder *r, __u64 *key);

/* records held */
size_t mt_reorder_held(const struct mt_reorder *r);

#endif /* __REORDER_H */
