/* SPDX-License-Identifier: GPL-2.0 */
/* Interned strings that live as long as the pool: callers, library names. */
#ifndef __STRPOOL_H
#define __STRPOOL_H

#include <stddef.h>

struct mt_strpool;

struct mt_strpool *mt_strpool_new(size_t max);
void mt_strpool_free(struct mt_strpool *p);

/* The pool's copy of s, or NULL when the pool is full or out of memory. */
const char *mt_intern(struct mt_strpool *p, const char *s);

#endif /* __STRPOOL_H */
