/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Records handed back in the order of their keys (time stamps), ties in
 * the order they came: a binary heap of keys over a pool of fixed-size
 * records, so that the heap moves 24 bytes, not a record.
 */
#ifndef __REORDER_H
#define __REORDER_H

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

/* records held */
size_t mt_reorder_held(const struct mt_reorder *r);

#endif /* __REORDER_H */
