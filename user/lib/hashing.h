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

/*
 * FNV-1a, for keys of bytes (strings), where each byte must reach every
 * bit of the hash and the key is too short for more: one step, then the
 * hash of n bytes and of a string up to its NUL (one pass, no strlen).
 */
#define MT_FNV1A_BASIS 14695981039346656037ULL

static inline __u64 mt_fnv1a_step(__u64 h, unsigned char c)
{
	return (h ^ c) * 1099511628211ULL;
}

static inline __u64 mt_fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	__u64 h = MT_FNV1A_BASIS;

	for (size_t i = 0; i < n; i++)
		h = mt_fnv1a_step(h, b[i]);
	return h;
}

static inline __u64 mt_fnv1a_str(const char *s)
{
	__u64 h = MT_FNV1A_BASIS;

	for (; *s; s++)
		h = mt_fnv1a_step(h, (unsigned char)*s);
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
