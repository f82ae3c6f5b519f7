/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Open addressing over a power-of-two table: linear probing, and deletion
 * by backward shift, so that no tombstones lengthen the probes of a table
 * that sees an insert and a delete per allocation. Every table of user
 * space walks its slots with these; each keeps its own slot layout and
 * says what a slot holds through small accessors. The functions are
 * static inline and the accessors are static functions known at the call,
 * so the compiler inlines both: a table pays nothing for sharing them.
 *
 * A table passes itself (its slot array or its struct: whatever its
 * accessors read) as tab and its slot count less one as mask.
 */
#ifndef __HASHTAB_H
#define __HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* the slots a table starts with: small enough to stay in the cache */
#define MT_HASH_MIN_CAP 1024

/* whether slot i holds an entry */
typedef bool mt_slot_used_fn(const void *tab, size_t i);
/* whether the entry in slot i (a used one) has the key looked for */
typedef bool mt_slot_match_fn(const void *tab, size_t i, const void *key);
/* the hash of the entry in slot i (a used one): its home is hash & mask */
typedef __u64 mt_slot_hash_fn(const void *tab, size_t i);
/* slot to takes the entry of slot from, which is left empty */
typedef void mt_slot_move_fn(void *tab, size_t to, size_t from);

/*
 * A table whose slots hold an index + 1 into an array of entries (0:
 * empty), for entries kept in order elsewhere: tab is a struct mt_index,
 * mt_index_used its used(), and its match() reads ents.
 */
struct mt_index {
	const __u32 *slots;
	const void *ents;
};

static inline bool mt_index_used(const void *tab, size_t i)
{
	return ((const struct mt_index *)tab)->slots[i];
}

/* the slot after i, the last one followed by the first */
static inline size_t mt_probe_next(size_t i, size_t mask)
{
	return (i + 1) & mask;
}

/*
 * The slot of the entry whose key match() accepts, or else the empty slot
 * where such an entry would go: the first one on the path from h's home.
 * match may be NULL (nothing matches: a rehash placing an entry). Returns
 * mask + 1 when every slot is used and none matches; a table kept below
 * full never sees that.
 */
static inline size_t mt_probe(const void *tab, size_t mask, __u64 h,
			      mt_slot_used_fn *used, mt_slot_match_fn *match,
			      const void *key)
{
	size_t home = (size_t)h & mask, i = home;

	/* back at home: every slot looked at (a compare, not a count) */
	do {
		if (!used(tab, i) || (match && match(tab, i, key)))
			return i;
		i = mt_probe_next(i, mask);
	} while (i != home);
	return mask + 1;
}

/*
 * After the caller emptied slot hole: each later entry of its cluster
 * whose path from home would cross the hole moves back into it, and the
 * hole moves to where that entry was, so that every entry stays reachable
 * from its home by slots that are all used. The scan ends at an empty
 * slot; the hole is one, so a table that was full ends too.
 */
static inline void mt_backshift(void *tab, size_t mask, size_t hole,
				mt_slot_used_fn *used, mt_slot_hash_fn *hash,
				mt_slot_move_fn *move)
{
	for (size_t j = mt_probe_next(hole, mask); used(tab, j);
	     j = mt_probe_next(j, mask)) {
		/* j stays if its home lies cyclically in (hole, j] */
		if (((j - (size_t)hash(tab, j)) & mask) < ((j - hole) & mask))
			continue;
		move(tab, hole, j);
		hole = j;
	}
}

#endif /* __HASHTAB_H */
