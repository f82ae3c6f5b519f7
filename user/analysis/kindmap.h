/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kind of each allocation of a record (memkind.h), by its number
 * among the session's events (mt_live.seq), told in a first reading of
 * the record so that a second can filter by it (report --kind): a kind is
 * known only once its allocation is freed or the events are over.
 */
#ifndef __KINDMAP_H
#define __KINDMAP_H

#include <stddef.h>
#include <linux/types.h>
#include "analysis/memkind.h"

struct mt_kindmap;

/*
 * A map of at most max allocations' kinds (bounded memory: past it a
 * kind is not kept, and reads as unknown). NULL when out of memory.
 */
struct mt_kindmap *mt_kindmap_new(size_t max);
void mt_kindmap_free(struct mt_kindmap *m);

/* the allocation of event seq is of kind k: 0, or -ENOMEM / -E2BIG */
int mt_kindmap_set(struct mt_kindmap *m, __u64 seq, enum mt_memkind k);

/* the kind told of event seq's allocation; MT_MK_MAX if none was */
enum mt_memkind mt_kindmap_get(const struct mt_kindmap *m, __u64 seq);

#endif /* __KINDMAP_H */
