// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/kindmap.h"
#include "lib/grow.h"

/* a byte an event, MT_MK_MAX where none was told: events are numbered 1.. */
struct mt_kindmap {
	__u8 *kind;
	size_t cap, max;
};

struct mt_kindmap *mt_kindmap_new(size_t max)
{
	struct mt_kindmap *m = calloc(1, sizeof(*m));

	if (m)
		m->max = max;
	return m;
}

void mt_kindmap_free(struct mt_kindmap *m)
{
	if (!m)
		return;
	free(m->kind);
	free(m);
}

int mt_kindmap_set(struct mt_kindmap *m, __u64 seq, enum mt_memkind k)
{
	size_t old = m->cap;
	int ret;

	if (seq >= m->max)
		return -E2BIG;
	ret = mt_grow((void **)&m->kind, &m->cap, (size_t)seq + 1, 1);
	if (ret)
		return ret;
	if (m->cap > old)
		memset(m->kind + old, MT_MK_MAX, m->cap - old);
	m->kind[seq] = (__u8)k;
	return 0;
}

enum mt_memkind mt_kindmap_get(const struct mt_kindmap *m, __u64 seq)
{
	return seq < m->cap ? (enum mt_memkind)m->kind[seq] : MT_MK_MAX;
}
