/* SPDX-License-Identifier: GPL-2.0 */
/* Arrays that double as they fill. */
#ifndef __GROW_H
#define __GROW_H

#include <errno.h>
#include <stdlib.h>

/*
 * Room for need elements of size bytes in *p, which holds *cap: 0, or
 * -ENOMEM with *p and *cap as they were.
 */
static inline int mt_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

#endif /* __GROW_H */
