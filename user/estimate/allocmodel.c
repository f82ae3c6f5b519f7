// SPDX-License-Identifier: GPL-2.0
/*
 * The caching allocator model (allocmodel.h). Function names follow
 * DeviceCachingAllocator's so that each can be read next to the original.
 * Blocks live in one array and are named by index (0: none); each pool's
 * cached blocks are a treap ordered like PyTorch's std::set (stream, size,
 * address), its unmapped expandable ranges a treap by (stream, address).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "estimate/allocmodel.h"

#define MIN_BLOCK 512ULL
#define SMALL_SIZE (1ULL << 20)
#define SMALL_BUFFER (2ULL << 20)
#define LARGE_BUFFER (20ULL << 20)
#define MIN_LARGE_ALLOC (10ULL << 20)
#define ROUND_LARGE (2ULL << 20)
#define VA_BASE 0x7f0000000000ULL
#define NO_LIMIT (~0ULL)
#define DEFAULT_MAX_BLOCKS (1U << 24)

/* what the set walks first: the key and the links share a cache line */
struct blk {
	__u64 stream, size, addr;
	__u32 l, r, p; /* treap links */
	__u32 prio;
	__u32 prev, next; /* neighbours in the segment */
	__u32 seg; /* expandable segment + 1; 0: a cudaMalloc segment */
	__u8 small;
	bool allocated, mapped, in_set;
	/* one or the other: a block is allocated or cached; 64 B a block */
	union {
		__u64 req; /* the size asked for, while allocated */
		__u64 gc_base; /* pool's get_free_block count when cached */
	};
};

struct set {
	__u32 root;
	bool by_addr; /* unmapped ranges: (stream, address) */
};

struct pool {
	struct set blocks, unmapped;
	__u64 gc_calls;
};

struct eseg {
	__u64 base, size, page;
};

/* a cudaMalloc segment's address range */
struct range {
	__u64 base, size;
};

struct mt_am {
	struct mt_am_conf c;
	__u64 max_split;
	struct blk *b;
	__u32 nb, cap, free_head, nfree;
	struct pool pools[2]; /* [1]: small */
	struct eseg *es;
	__u32 nes, es_cap;
	struct range *segs; /* the cudaMalloc segments, unordered */
	__u32 nsegs, segs_cap;
	__u64 next_va;
	__u64 rng;
	__u32 *scratch;
	__u32 scratch_cap;
	struct mt_am_stats st;
};

/* what malloc carries through its steps (AllocParams) */
struct params {
	__u64 size, alloc_size, stream;
	__u64 at; /* where the traced allocator's block is; 0: unknown */
	struct pool *pool;
	bool small;
	__u32 block;
};

/* ---- the ordered sets ---- */

static bool less(const struct mt_am *m, const struct set *s, __u32 a,
		 __u64 stream, __u64 size, __u64 addr)
{
	const struct blk *x = &m->b[a];

	if (x->stream != stream)
		return x->stream < stream;
	if (!s->by_addr && x->size != size)
		return x->size < size;
	return x->addr < addr;
}

static bool before(const struct mt_am *m, const struct set *s, __u32 a, __u32 b)
{
	return less(m, s, a, m->b[b].stream, m->b[b].size, m->b[b].addr);
}

/* p's child old (the root if p is 0) becomes x */
static void relink(struct mt_am *m, struct set *s, __u32 p, __u32 old, __u32 x)
{
	struct blk *b = m->b;

	if (!p)
		s->root = x;
	else if (b[p].l == old)
		b[p].l = x;
	else
		b[p].r = x;
}

static void rotate_up(struct mt_am *m, struct set *s, __u32 x)
{
	struct blk *b = m->b;
	__u32 p = b[x].p, g = b[p].p;

	if (b[p].l == x) {
		b[p].l = b[x].r;
		if (b[x].r)
			b[b[x].r].p = p;
		b[x].r = p;
	} else {
		b[p].r = b[x].l;
		if (b[x].l)
			b[b[x].l].p = p;
		b[x].l = p;
	}
	b[p].p = x;
	b[x].p = g;
	relink(m, s, g, p, x);
}

static void set_insert(struct mt_am *m, struct set *s, __u32 x)
{
	struct blk *b = m->b;
	__u32 y = 0, z = s->root;
	bool left = false;

	while (z) {
		y = z;
		left = before(m, s, x, z);
		z = left ? b[z].l : b[z].r;
	}
	b[x].l = b[x].r = 0;
	b[x].p = y;
	b[x].in_set = true;
	if (!y)
		s->root = x;
	else if (left)
		b[y].l = x;
	else
		b[y].r = x;
	while (b[x].p && b[b[x].p].prio < b[x].prio)
		rotate_up(m, s, x);
}

static void set_erase(struct mt_am *m, struct set *s, __u32 x)
{
	struct blk *b = m->b;
	__u32 c, p;

	while (b[x].l && b[x].r)
		rotate_up(m, s,
			  b[b[x].l].prio > b[b[x].r].prio ? b[x].l : b[x].r);
	c = b[x].l ? b[x].l : b[x].r;
	p = b[x].p;
	if (c)
		b[c].p = p;
	relink(m, s, p, x, c);
	b[x].in_set = false;
}

/* the first block not before the key; 0 if none */
static __u32 lower_bound(const struct mt_am *m, const struct set *s,
			 __u64 stream, __u64 size, __u64 addr)
{
	__u32 z = s->root, res = 0;

	while (z) {
		if (!less(m, s, z, stream, size, addr)) {
			res = z;
			z = m->b[z].l;
		} else {
			z = m->b[z].r;
		}
	}
	return res;
}

static __u32 set_next(const struct mt_am *m, __u32 x)
{
	const struct blk *b = m->b;

	if (b[x].r) {
		for (x = b[x].r; b[x].l;)
			x = b[x].l;
		return x;
	}
	while (b[x].p && b[b[x].p].r == x)
		x = b[x].p;
	return b[x].p;
}

static __u32 set_prev(const struct mt_am *m, __u32 x)
{
	const struct blk *b = m->b;

	if (b[x].l) {
		for (x = b[x].l; b[x].r;)
			x = b[x].r;
		return x;
	}
	while (b[x].p && b[b[x].p].l == x)
		x = b[x].p;
	return b[x].p;
}

static __u32 set_first(const struct mt_am *m, const struct set *s)
{
	__u32 x = s->root;

	while (x && m->b[x].l)
		x = m->b[x].l;
	return x;
}

static __u32 set_last(const struct mt_am *m, const struct set *s)
{
	__u32 x = s->root;

	while (x && m->b[x].r)
		x = m->b[x].r;
	return x;
}

/* x takes old's node: same links and priority; x's key is fixed after */
static void set_replace(struct mt_am *m, struct set *s, __u32 old, __u32 x)
{
	struct blk *b = m->b;
	__u32 p = b[old].p;

	b[x].l = b[old].l;
	b[x].r = b[old].r;
	b[x].p = p;
	b[x].prio = b[old].prio;
	if (b[x].l)
		b[b[x].l].p = x;
	if (b[x].r)
		b[b[x].r].p = x;
	relink(m, s, p, old, x);
	b[x].in_set = true;
	b[old].in_set = false;
}

/* x's key changed: back in order, moving it only when a neighbour says so */
static void set_fix(struct mt_am *m, struct set *s, __u32 x)
{
	__u32 prev = set_prev(m, x), next = set_next(m, x);

	if ((!prev || before(m, s, prev, x)) &&
	    (!next || before(m, s, x, next)))
		return;
	set_erase(m, s, x);
	set_insert(m, s, x);
}

/* ---- blocks ---- */

static __u32 xorshift(struct mt_am *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return (__u32)m->rng;
}

/* room for n more blocks, growing the array within max_blocks */
static bool blk_room(struct mt_am *m, __u32 n)
{
	__u32 ncap = m->cap;
	struct blk *nb;

	if (m->nfree + (m->cap - m->nb) >= n)
		return true;
	while (ncap < m->c.max_blocks && m->nfree + (ncap - m->nb) < n)
		ncap = ncap > m->c.max_blocks / 2 ? m->c.max_blocks : ncap * 2;
	if (m->nfree + (ncap - m->nb) < n)
		return false;
	nb = realloc(m->b, (size_t)ncap * sizeof(*nb));
	if (!nb)
		return false;
	m->b = nb;
	m->cap = ncap;
	return true;
}

/* a new block; 0 when the bound or memory is exhausted */
static __u32 blk_new(struct mt_am *m, __u64 addr, __u64 size, __u64 stream,
		     bool small, __u32 seg)
{
	__u32 x;

	if (!blk_room(m, 1))
		return 0;
	if (m->free_head) {
		x = m->free_head;
		m->free_head = m->b[x].next;
		m->nfree--;
	} else {
		x = m->nb++;
	}
	m->b[x] = (struct blk){ .addr = addr,
				.size = size,
				.stream = stream,
				.small = small,
				.seg = seg,
				.mapped = true,
				.prio = xorshift(m) };
	return x;
}

static void blk_delete(struct mt_am *m, __u32 x)
{
	m->b[x].next = m->free_head;
	m->b[x].allocated = false;
	m->free_head = x;
	m->nfree++;
}

static bool is_split(const struct blk *x)
{
	return x->prev || x->next;
}

static struct pool *pool_of(struct mt_am *m, __u32 x)
{
	return &m->pools[m->b[x].small];
}

/*
 * x, split or merged, is cached with its new key. Where it is already in
 * the set (it kept its node, or took a merged neighbour's), it stays put
 * unless the order needs it elsewhere: most splits and frees move no node.
 */
static void settle(struct mt_am *m, struct set *s, __u32 x)
{
	if (m->b[x].in_set)
		set_fix(m, s, x);
	else
		set_insert(m, s, x);
}

static void cache_block(struct mt_am *m, __u32 x)
{
	struct pool *p = pool_of(m, x);

	m->b[x].gc_base = p->gc_calls;
	settle(m, &p->blocks, x);
}

static void add_reserved(struct mt_am *m, __u64 bytes)
{
	m->st.reserved += bytes;
	if (m->st.reserved > m->st.peak_reserved) {
		m->st.peak_reserved = m->st.reserved;
		m->st.allocated_at_peak_reserved = m->st.allocated;
	}
}

static void add_split(struct mt_am *m, __u64 bytes)
{
	m->st.inactive_split_bytes += bytes;
	if (m->st.inactive_split_bytes > m->st.peak_inactive_split_bytes)
		m->st.peak_inactive_split_bytes = m->st.inactive_split_bytes;
}

/* ---- the rules ---- */

static __u64 roundup_power2_next_division(__u64 size, unsigned int div)
{
	__u64 floor2, step, down;

	if (!(size & (size - 1)))
		return size;
	floor2 = 1ULL << (63 - __builtin_clzll(size));
	step = floor2 >> (31 - __builtin_clz(div));
	if (!step)
		return floor2 << 1;
	down = size & ~(step - 1);
	return down == size ? size : down + step;
}

__u64 mt_am_round_size(const struct mt_am_conf *c, __u64 size)
{
	unsigned int div = c->roundup_power2_divisions;

	if (size < MIN_BLOCK)
		return MIN_BLOCK;
	if (div > 1 && size > MIN_BLOCK * div)
		return roundup_power2_next_division(size, div);
	return MIN_BLOCK * ((size + MIN_BLOCK - 1) / MIN_BLOCK);
}

bool mt_am_is_small(__u64 rounded)
{
	return rounded <= SMALL_SIZE;
}

__u64 mt_am_segment_size(__u64 rounded)
{
	if (rounded <= SMALL_SIZE)
		return SMALL_BUFFER;
	if (rounded < MIN_LARGE_ALLOC)
		return LARGE_BUFFER;
	return ROUND_LARGE * ((rounded + ROUND_LARGE - 1) / ROUND_LARGE);
}

static bool should_split(const struct mt_am *m, __u32 x, __u64 size)
{
	__u64 remaining = m->b[x].size - size;

	if (m->b[x].small || m->c.expandable_segments)
		return remaining >= MIN_BLOCK;
	return size < m->max_split && remaining > SMALL_SIZE;
}

/* a free block can absorb its free neighbour src: the size subsumed */
static __u64 try_merge_blocks(struct mt_am *m, __u32 dst, __u32 src)
{
	struct blk *b = m->b;
	struct pool *p = pool_of(m, dst);
	__u64 sub;

	if (!src || b[src].allocated || b[src].mapped != b[dst].mapped)
		return 0;
	if (b[dst].prev == src) {
		b[dst].addr = b[src].addr;
		b[dst].prev = b[src].prev;
		if (b[dst].prev)
			b[b[dst].prev].next = dst;
	} else {
		b[dst].next = b[src].next;
		if (b[dst].next)
			b[b[dst].next].prev = dst;
	}
	sub = b[src].size;
	b[dst].size += sub;
	if (b[src].in_set) {
		struct set *s = b[src].mapped ? &p->blocks : &p->unmapped;

		/* dst, in no set yet, takes src's node */
		if (!b[dst].in_set)
			set_replace(m, s, src, dst);
		else
			set_erase(m, s, src);
	}
	blk_delete(m, src);
	return sub;
}

static void free_block(struct mt_am *m, __u32 x)
{
	__u64 subsumed = try_merge_blocks(m, x, m->b[x].prev);

	subsumed += try_merge_blocks(m, x, m->b[x].next);
	cache_block(m, x);
	if (m->b[x].seg)
		return; /* PyTorch leaves expandable segments out */
	m->st.inactive_split_bytes -= subsumed;
	if (is_split(&m->b[x]))
		add_split(m, m->b[x].size);
}

static bool gc_on(const struct mt_am *m)
{
	return m->c.device_mem && m->c.gc_threshold > 0;
}

static bool get_free_block(struct mt_am *m, struct params *p)
{
	struct set *s = &p->pool->blocks;
	__u32 it;

	if (gc_on(m))
		p->pool->gc_calls++;
	it = lower_bound(m, s, p->stream, p->size, 0);
	if (!it || m->b[it].stream != p->stream)
		return false;
	if (m->b[it].seg) {
		/* an expandable block counts with the unmapped rest after it */
		__u32 next = set_next(m, it);

		while (m->b[it].seg && next && m->b[next].stream == p->stream) {
			const struct blk *a = &m->b[it], *n = &m->b[next];
			__u64 sa = a->size + (a->next && !m->b[a->next].mapped ?
						      m->b[a->next].size :
						      0);
			__u64 sn = n->size + (n->next && !m->b[n->next].mapped ?
						      m->b[n->next].size :
						      0);

			if (sn >= sa)
				break;
			it = next;
			next = set_next(m, it);
		}
	}
	/* no oversize block for a request below max_split_size */
	if (p->size < m->max_split && m->b[it].size >= m->max_split)
		return false;
	/* an oversize request takes one at most 20 MiB larger */
	if (p->size >= m->max_split && m->b[it].size >= p->size + LARGE_BUFFER)
		return false;
	/* left in the set: alloc_found_block moves or takes it out */
	p->block = it;
	return true;
}

/* room for one more cudaMalloc segment: a malloc makes at most one */
static bool seg_room(struct mt_am *m)
{
	struct range *v;
	__u32 cap;

	if (m->nsegs < m->segs_cap)
		return true;
	cap = m->segs_cap ? m->segs_cap * 2 : 64;
	v = realloc(m->segs, cap * sizeof(*v));
	if (!v)
		return false;
	m->segs = v;
	m->segs_cap = cap;
	return true;
}

/* true when [base, base + size) meets a segment; *end is that one's end */
static bool seg_overlaps(const struct mt_am *m, __u64 base, __u64 size,
			 __u64 *end)
{
	for (__u32 i = 0; i < m->nsegs; i++) {
		const struct range *r = &m->segs[i];

		if (base < r->base + r->size && r->base < base + size) {
			*end = r->base + r->size;
			return true;
		}
	}
	return false;
}

/*
 * Where a new segment goes. Best fit breaks ties between equal free blocks
 * by address, so a replay of a trace puts each segment where the traced
 * allocator's was (at: the first block of a new segment is at its start),
 * as CUDA may hand out addresses in any order; at 0 (a prediction) or at a
 * place the model still holds, it goes above every address used. Each
 * turn of the loop passes a segment, so it ends within nsegs turns.
 */
static __u64 seg_place(struct mt_am *m, __u64 at, __u64 size)
{
	__u64 end, base;

	if (at && !seg_overlaps(m, at, size, &end)) {
		base = at;
	} else {
		while (seg_overlaps(m, m->next_va, size, &end))
			m->next_va = (end + ROUND_LARGE - 1) / ROUND_LARGE *
				     ROUND_LARGE;
		base = m->next_va;
		m->next_va +=
			(size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
	}
	m->segs[m->nsegs++] = (struct range){ .base = base, .size = size };
	return base;
}

static void seg_remove(struct mt_am *m, __u64 base)
{
	for (__u32 i = 0; i < m->nsegs; i++) {
		if (m->segs[i].base == base) {
			m->segs[i] = m->segs[--m->nsegs];
			return;
		}
	}
}

static void release_block(struct mt_am *m, __u32 x)
{
	struct pool *p = pool_of(m, x);

	seg_remove(m, m->b[x].addr);
	m->st.num_device_free++;
	m->st.reserved -= m->b[x].size;
	m->st.segments--;
	set_erase(m, &p->blocks, x);
	blk_delete(m, x);
}

static __u64 seg_left(const struct eseg *e, __u64 a)
{
	return (a - e->base) / e->page;
}

static __u64 seg_right(const struct eseg *e, __u64 a)
{
	return (a - e->base + e->page - 1) / e->page;
}

/* map the pages under [to_map, +size) of an unmapped block */
static bool map_block(struct mt_am *m, __u32 x, __u64 size)
{
	const struct eseg *e = &m->es[m->b[x].seg - 1];
	struct pool *p = pool_of(m, x);
	__u64 begin = seg_left(e, m->b[x].addr);
	__u64 bytes = (seg_right(e, m->b[x].addr + size) - begin) * e->page;

	if (m->c.device_mem && m->st.reserved + bytes > m->c.device_mem)
		return false;
	set_erase(m, &p->unmapped, x);
	m->b[x].mapped = true;
	if (bytes < m->b[x].size) {
		struct blk *b;
		__u32 rest =
			blk_new(m, m->b[x].addr + bytes, m->b[x].size - bytes,
				m->b[x].stream, m->b[x].small, m->b[x].seg);

		if (!rest) {
			/* out of model memory: leave the range unmapped */
			m->b[x].mapped = false;
			set_insert(m, &p->unmapped, x);
			return false;
		}
		b = m->b;
		b[rest].mapped = false;
		b[rest].prev = x;
		b[rest].next = b[x].next;
		if (b[x].next)
			b[b[x].next].prev = rest;
		b[x].next = rest;
		set_insert(m, &p->unmapped, rest);
		b[x].size = bytes;
	}
	try_merge_blocks(m, x, m->b[x].prev);
	try_merge_blocks(m, x, m->b[x].next);
	cache_block(m, x);
	add_reserved(m, bytes);
	m->st.num_device_alloc++;
	return true;
}

static bool allocatable(const struct mt_am *m, __u32 x)
{
	return x && !m->b[x].allocated;
}

/* the lowest free-and-unmapped run of size bytes, or a new segment */
static __u32 find_expandable_block(struct mt_am *m, struct params *p)
{
	struct set *s = &p->pool->unmapped;
	__u64 total, page, span;
	struct eseg *e;
	__u32 it, x;

	for (it = lower_bound(m, s, p->stream, 0, 0);
	     it && m->b[it].stream == p->stream; it = set_next(m, it)) {
		__u32 c = allocatable(m, m->b[it].prev) ? m->b[it].prev : it;
		__u64 bytes = 0;

		for (x = c; bytes < p->size && allocatable(m, x);
		     x = m->b[x].next)
			bytes += m->b[x].size;
		if (bytes >= p->size)
			return c;
	}
	if (m->nes == m->es_cap) {
		__u32 ncap = m->es_cap ? m->es_cap * 2 : 4;
		struct eseg *ne = realloc(m->es, ncap * sizeof(*ne));

		if (!ne)
			return 0;
		m->es = ne;
		m->es_cap = ncap;
	}
	/* address space for 1 1/8 of the device, as PyTorch reserves */
	page = p->small ? SMALL_BUFFER : LARGE_BUFFER;
	total = m->c.device_mem ? m->c.device_mem : 1ULL << 40;
	span = (total + total / 8 + page - 1) / page * page;
	x = blk_new(m, m->next_va, span, p->stream, p->small, m->nes + 1);
	if (!x)
		return 0;
	e = &m->es[m->nes++];
	*e = (struct eseg){ .base = m->next_va, .size = span, .page = page };
	m->next_va += (span + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
	m->b[x].mapped = false;
	set_insert(m, &p->pool->unmapped, x);
	return x;
}

static __u32 try_allocate_expandable_block(struct mt_am *m, struct params *p)
{
	__u32 c = find_expandable_block(m, p);

	if (!c)
		return 0;
	if (!m->b[c].mapped &&
	    !map_block(m, c, m->b[c].size < p->size ? m->b[c].size : p->size))
		return 0;
	while (m->b[c].size < p->size) {
		__u64 rem = p->size - m->b[c].size;
		__u32 n = m->b[c].next;

		if (!map_block(m, n, m->b[n].size < rem ? m->b[n].size : rem))
			return 0;
		c = n;
	}
	set_erase(m, &p->pool->blocks, c);
	return c;
}

static bool alloc_block(struct mt_am *m, struct params *p, bool retry)
{
	__u32 x;

	if (retry)
		m->st.num_alloc_retries++;
	if (m->c.device_mem && m->st.reserved + p->alloc_size > m->c.device_mem)
		return false;
	if (m->c.expandable_segments) {
		p->block = try_allocate_expandable_block(m, p);
		return p->block != 0;
	}
	x = blk_new(m, 0, p->alloc_size, p->stream, p->small, 0);
	if (!x)
		return false;
	m->b[x].addr = seg_place(m, p->at, p->alloc_size);
	add_reserved(m, p->alloc_size);
	m->st.segments++;
	if (m->st.segments > m->st.peak_segments)
		m->st.peak_segments = m->st.segments;
	m->st.num_device_alloc++;
	p->block = x;
	return true;
}

/* free oversize cached blocks, largest first, until size is covered */
static bool release_available_cached_blocks(struct mt_am *m, struct params *p)
{
	struct set *s = &p->pool->blocks;
	__u64 key = p->size < m->max_split ? m->max_split : p->size;
	__u64 released = 0;
	__u32 it;

	if (m->max_split == NO_LIMIT)
		return false;
	it = lower_bound(m, s, p->stream, key, 0);
	if (it && m->b[it].stream == p->stream) {
		/* oversize blocks are whole segments; guard anyway */
		if (is_split(&m->b[it]) || m->b[it].seg)
			return false;
		release_block(m, it);
		return true;
	}
	it = it ? set_prev(m, it) : set_last(m, s);
	while (it && released < key && m->b[it].size >= m->max_split &&
	       m->b[it].stream == p->stream && !is_split(&m->b[it]) &&
	       !m->b[it].seg) {
		__u32 prev = set_prev(m, it);

		released += m->b[it].size;
		release_block(m, it);
		it = prev;
	}
	return released >= key;
}

static bool scratch_push(struct mt_am *m, __u32 *n, __u32 x)
{
	if (*n == m->scratch_cap) {
		__u32 ncap = m->scratch_cap ? m->scratch_cap * 2 : 64;
		__u32 *ns = realloc(m->scratch, ncap * sizeof(*ns));

		if (!ns)
			return false;
		m->scratch = ns;
		m->scratch_cap = ncap;
	}
	m->scratch[(*n)++] = x;
	return true;
}

/* unmap the whole pages of a cached expandable block */
static void unmap_block(struct mt_am *m, __u32 x)
{
	const struct eseg *e = &m->es[m->b[x].seg - 1];
	struct pool *p = pool_of(m, x);
	__u64 begin = seg_right(e, m->b[x].addr);
	__u64 end = seg_left(e, m->b[x].addr + m->b[x].size);
	__u64 ubase = e->base + begin * e->page, usize, before, after;
	__u32 y;

	if (begin >= end)
		return;
	usize = (end - begin) * e->page;
	before = ubase - m->b[x].addr;
	after = m->b[x].size - before - usize;
	/* the pieces left mapped need blocks: skip if the model is full */
	if (!blk_room(m, 2))
		return;
	set_erase(m, &p->blocks, x);
	if (before) {
		y = blk_new(m, m->b[x].addr, before, m->b[x].stream,
			    m->b[x].small, m->b[x].seg);
		m->b[y].prev = m->b[x].prev;
		m->b[y].next = x;
		if (m->b[y].prev)
			m->b[m->b[y].prev].next = y;
		m->b[x].prev = y;
		cache_block(m, y);
	}
	if (after) {
		y = blk_new(m, ubase + usize, after, m->b[x].stream,
			    m->b[x].small, m->b[x].seg);
		m->b[y].next = m->b[x].next;
		m->b[y].prev = x;
		if (m->b[y].next)
			m->b[m->b[y].next].prev = y;
		m->b[x].next = y;
		cache_block(m, y);
	}
	m->st.reserved -= usize;
	m->b[x].addr = ubase;
	m->b[x].size = usize;
	m->b[x].mapped = false;
	try_merge_blocks(m, x, m->b[x].prev);
	try_merge_blocks(m, x, m->b[x].next);
	settle(m, &p->unmapped, x);
	m->st.num_device_free++;
}

static void release_blocks(struct mt_am *m, struct pool *p)
{
	__u32 n = 0, x, next;

	for (x = set_first(m, &p->blocks); x; x = next) {
		next = set_next(m, x);
		if (m->b[x].seg) {
			if (!scratch_push(m, &n, x))
				break;
		} else if (!is_split(&m->b[x])) {
			release_block(m, x);
		}
	}
	for (__u32 i = 0; i < n; i++) {
		x = m->scratch[i];
		unmap_block(m, x);
		if (!m->b[x].mapped && !is_split(&m->b[x])) {
			/* the whole segment is unmapped: give it back */
			set_erase(m, &p->unmapped, x);
			blk_delete(m, x);
		}
	}
}

static bool release_cached_blocks(struct mt_am *m)
{
	release_blocks(m, &m->pools[0]);
	release_blocks(m, &m->pools[1]);
	return true;
}

/* free old unsplit large cached blocks once past the threshold */
static void garbage_collect_cached_blocks(struct mt_am *m)
{
	struct pool *p = &m->pools[0];
	__u64 thr = (__u64)(m->c.gc_threshold * (double)m->c.device_mem);
	__u64 target, reclaimed = 0, total_age = 0, count = 0;
	bool freed = true;
	__u32 x, next;

	if (m->st.reserved <= thr)
		return;
	target = m->st.reserved - thr;
	for (x = set_first(m, &p->blocks); x; x = set_next(m, x)) {
		if (!is_split(&m->b[x]) && !m->b[x].seg) {
			total_age += p->gc_calls - m->b[x].gc_base;
			count++;
		}
	}
	while (reclaimed < target && freed && count > 0) {
		double age = (double)total_age / (double)count;

		freed = false;
		for (x = set_first(m, &p->blocks); x; x = next) {
			__u64 a = p->gc_calls - m->b[x].gc_base;

			next = set_next(m, x);
			if (is_split(&m->b[x]) || m->b[x].seg ||
			    (double)a < age)
				continue;
			freed = true;
			reclaimed += m->b[x].size;
			total_age -= a;
			count--;
			release_block(m, x);
		}
	}
}

static void alloc_found_block(struct mt_am *m, struct params *p, __u64 orig)
{
	__u32 x = p->block, rest = 0;
	bool already_split = is_split(&m->b[x]);

	/* malloc made room: the new block is there */
	if (should_split(m, x, p->size))
		rest = blk_new(m, m->b[x].addr, p->size, p->stream, p->small,
			       m->b[x].seg);
	if (rest) {
		struct blk *b = m->b;

		/* the new block takes the front; x keeps the rest */
		b[rest].prev = b[x].prev;
		if (b[rest].prev)
			b[b[rest].prev].next = rest;
		b[rest].next = x;
		b[x].prev = rest;
		b[x].addr += p->size;
		b[x].size -= p->size;
		cache_block(m, x);
		if (!b[x].seg) {
			if (already_split)
				m->st.inactive_split_bytes -= p->size;
			else
				add_split(m, b[x].size);
		}
		x = rest;
	} else {
		if (m->b[x].in_set)
			set_erase(m, &p->pool->blocks, x);
		if (already_split && !m->b[x].seg)
			m->st.inactive_split_bytes -= m->b[x].size;
	}
	m->b[x].allocated = true;
	m->b[x].req = orig;
	m->st.allocated += m->b[x].size;
	m->st.requested += orig;
	if (m->st.allocated > m->st.peak_allocated)
		m->st.peak_allocated = m->st.allocated;
	if (m->st.reserved == m->st.peak_reserved &&
	    m->st.allocated > m->st.allocated_at_peak_reserved)
		m->st.allocated_at_peak_reserved = m->st.allocated;
	p->block = x;
}

int mt_am_malloc(struct mt_am *m, __u64 orig, __u64 stream, __u32 *id)
{
	return mt_am_malloc_at(m, orig, stream, 0, id);
}

int mt_am_malloc_at(struct mt_am *m, __u64 orig, __u64 stream, __u64 at,
		    __u32 *id)
{
	struct params p = { .stream = stream, .at = at };
	bool found;

	p.size = mt_am_round_size(&m->c, orig);
	p.small = mt_am_is_small(p.size);
	p.pool = &m->pools[p.small];
	p.alloc_size = mt_am_segment_size(p.size);
	/* what one malloc may add (splits, mapped ranges, a segment) fits */
	if (!blk_room(m, 8) || !seg_room(m))
		return -ENOMEM;
	found = get_free_block(m, &p);
	if (!found) {
		if (gc_on(m))
			garbage_collect_cached_blocks(m);
		found = alloc_block(m, &p, false) ||
			(release_available_cached_blocks(m, &p) &&
			 alloc_block(m, &p, false)) ||
			(release_cached_blocks(m) && alloc_block(m, &p, true));
	}
	if (!found) {
		m->st.num_ooms++;
		return 0;
	}
	alloc_found_block(m, &p, orig);
	*id = p.block;
	return 1;
}

int mt_am_release(struct mt_am *m, __u32 id)
{
	if (!id || id >= m->nb || !m->b[id].allocated)
		return -EINVAL;
	m->b[id].allocated = false;
	m->st.allocated -= m->b[id].size;
	m->st.requested -= m->b[id].req;
	free_block(m, id);
	return 0;
}

__u64 mt_am_addr(const struct mt_am *m, __u32 id)
{
	return m->b[id].addr;
}

__u64 mt_am_size(const struct mt_am *m, __u32 id)
{
	return m->b[id].size;
}

void mt_am_stats(const struct mt_am *m, struct mt_am_stats *s)
{
	*s = m->st;
}

struct mt_am *mt_am_new(const struct mt_am_conf *c)
{
	unsigned int d = c->roundup_power2_divisions;
	struct mt_am *m;

	if ((d & (d - 1)) || d > 64 || c->gc_threshold < 0 ||
	    c->gc_threshold >= 1)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->c = *c;
	if (!m->c.max_blocks)
		m->c.max_blocks = DEFAULT_MAX_BLOCKS;
	m->max_split = c->max_split_size ? c->max_split_size : NO_LIMIT;
	m->cap = m->c.max_blocks < 1024 ? m->c.max_blocks : 1024;
	m->b = calloc(m->cap, sizeof(*m->b));
	if (!m->b || m->cap < 2) {
		free(m->b);
		free(m);
		return NULL;
	}
	m->nb = 1; /* block 0 is "none" */
	m->pools[0].unmapped.by_addr = true;
	m->pools[1].unmapped.by_addr = true;
	m->next_va = VA_BASE;
	m->rng = 0x9e3779b97f4a7c15ULL;
	return m;
}

void mt_am_free(struct mt_am *m)
{
	if (!m)
		return;
	free(m->b);
	free(m->es);
	free(m->segs);
	free(m->scratch);
	free(m);
}
