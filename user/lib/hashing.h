/* SPDX-License-Identifier: GPL-2.0 */
/* What the open-addressing tables of user space share. */
#ifndef __HASHING_H
#define __HASHING_H

#include <stddef.h>
#include <linux/types.h>

/* splitmix64's finaliser: spreads aligned pointers over every bit */
static inline __u64 mt_mix64(__u64 h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

/* slots for at most max entries at half load, a power of two */
static inline size_t mt_table_cap(size_t max)
{
	size_t cap = 16;

	while (cap < max * 2)
		cap *= 2;
	return cap;
}

#endif /* __HASHING_H */
