// SPDX-License-Identifier: GPL-2.0
/*
 * --export memviz: a PyTorch memory snapshot, the pickle that
 * torch.cuda.memory._dump_snapshot() writes, for pytorch.org/memory_viz
 * (Active Memory Timeline, Allocator State History) and for
 * torch.cuda._memory_viz: { 'segments': [...], 'device_traces': [...] }.
 *
 * device_traces[i] is CUDA device i's list of events; the CPU's comes
 * after the CUDA devices seen (index = highest CUDA index + 1), as torch's
 * _profile_to_snapshot() does:
 *   c10 block, CPU tensor     alloc; free_requested + free_completed
 *   cudaMalloc*, cuMemAlloc   segment_alloc / segment_free
 *   cuMemMap / cuMemUnmap     segment_map / segment_unmap (cuMemCreate's
 *                             device; a handle made before we attached
 *                             gives no device and its mappings are left out)
 *   cudaMalloc*, cuMemAlloc, cuMemCreate out of memory; c10:oom
 *                             oom (device_free 0: not known); other
 *                             failures are left out
 * with addr, size (0 when a free's size is not known), stream (0 if not
 * known), time_us (since the first event) and frames: the site's Python
 * stack, innermost first, after one frame naming the call and its library.
 * An alloc carries its kind of memory (analysis/memkind.h) as category,
 * as torch's _profile_to_snapshot() carries the profiler's: the kind its
 * free was told, or the one it has alive at the end (the report's).
 * In a process with c10 events, segments are the caching allocator's (its
 * calls, from libc10_cuda: mt_caller_is_allocator), as in torch's own
 * snapshot: the device memory other libraries take (cuBLAS's workspaces)
 * and the driver calls the runtime makes for a cudaMalloc are left out of
 * 'segments' and the traces (the report's '# frag other_library' lines
 * name the former). A CUDA device that is not known (cuda:?) counts as
 * device 0; pinned host
 * memory is left out (no list for it before PyTorch 2.7). One process: the
 * first whose memory event came; the others' events are left out.
 *
 * segments is the state at the end. The viewer replays the trace back from
 * it and needs every block inside a segment at every step, so a CUDA
 * device whose blocks all lay inside segments we saw gets those segments
 * (blocks tiled by "inactive" gaps); any other CUDA device gets one segment
 * over every address its blocks ever used, and its segment events are
 * left out (the viewer would find them inconsistent).
 *
 * The CPU has no segments: c10's CPU allocator takes each block from
 * malloc and gives it back at its free, caching nothing, so what it holds
 * is its blocks. Each CPU block is its own segment: a segment_alloc before
 * its alloc, a segment_free after its free, a segment of its own at the
 * end. (torch's _profile_to_snapshot() makes one segment from the lowest
 * address to the highest, which spans the heap and the mmap area: 127.6
 * TiB, nearly all "inactive", for a CPU training loop holding 40.9 MiB.)
 * A CPU free of no known size (of a block allocated before the attach)
 * and a block of 0 bytes are left out: no segment can hold them in the
 * viewer.
 *
 * Blocks carry 'frames' and the 1.13 'history', so that torch 1.13's
 * _memory_viz, which takes a bare list of segments, works on
 * snapshot['segments']:
 *   stats(s['segments']), segments(s['segments'], format_flamegraph=...).
 *
 * A sampled trace (--sample-bytes) has every event, its size and time
 * exact; where the stack was not walked the frames are the call and a
 * frame "stack not sampled" (its file names the rate), and the snapshot
 * gets a key of its own, 'memtrace_sample', saying how it was sampled
 * (viewers read the keys they know: torch's functions and MemoryViz.js
 * draw it as any other).
 *
 * Bounded memory: the last MV_MAX_RECS events are kept (a free is one, two
 * entries in the file), like PyTorch's own max_entries ring buffer: older
 * ones are dropped and what they left live still shows in 'segments'.
 * Segments and handles are kept up to MV_MAX_SEGS; past that a device
 * falls back to one covering segment. Each site's frames are written once
 * and referenced by memo afterwards.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/cudaerr.h"
#include "export/export.h"
#include "export/frames.h"
#include "export/pickle.h"
#include "analysis/sample.h"
#include "analysis/session.h"

#define MV_MAX_RECS 1000000
#define MV_MIN_RECS 4096
#define MV_MAX_SEGS 65536
#define MV_MAX_DEVS 128 /* c10 device indexes are int8 */
#define MV_CPU MV_MAX_DEVS /* the CPU's slot, its list index set at the end */
#define MV_SMALL_SEG (2 << 20) /* the caching allocator's small segment */

enum mv_action {
	MV_ALLOC,
	MV_FREE, /* written as free_requested, free_completed */
	MV_SEG_ALLOC,
	MV_SEG_FREE,
	MV_SEG_MAP,
	MV_SEG_UNMAP,
	MV_OOM,
};

static const char *const action_name[] = {
	[MV_ALLOC] = "alloc",
	[MV_FREE] = "free_requested",
	[MV_SEG_ALLOC] = "segment_alloc",
	[MV_SEG_FREE] = "segment_free",
	[MV_SEG_MAP] = "segment_map",
	[MV_SEG_UNMAP] = "segment_unmap",
	[MV_OOM] = "oom",
};

struct mv_rec {
	__u64 ts, addr, size, stream;
	const struct mt_site *site;
	__u8 action;
	__u8 dev; /* CUDA index or MV_CPU */
	bool bare; /* its stack not walked (--sample-bytes) */
	bool foreign; /* not the caching allocator's call */
	/*
	 * enum mt_memkind: a free's, told by the session at it; an alloc's,
	 * told at the end (tell_kinds); MT_MK_MAX: none
	 */
	__u8 kind;
};

/* a live segment or mapping (addr), or a cuMemCreate handle (addr) */
struct mv_range {
	__u64 addr, size, stream;
	const struct mt_site *site;
	__u8 dev;
	bool expandable;
	bool bare; /* as mv_rec's */
	bool foreign; /* not the caching allocator's memory */
};

struct mv_ranges {
	struct mv_range *v; /* sorted by addr */
	size_t n, cap;
};

struct mv_dev {
	__u64 lo, hi; /* the addresses its block events used */
	bool seen;
	bool cover; /* a block outside the segments we saw: one segment */
};

/* a block live at the end */
struct mv_block {
	__u64 addr, size;
	const struct mt_site *site;
	__u8 dev;
	bool bare; /* as mv_rec's */
	__u8 kind; /* enum mt_memkind, alive at the end */
};

struct memviz {
	FILE *f;
	__u32 pid;
	bool has_pid;
	bool c10; /* the process has a caching allocator: others' go */
	bool nomem;
	struct mv_rec *ring; /* the last events; oldest at head once full */
	size_t cap, head, n;
	struct mv_ranges segs, handles;
	struct mv_dev dev[MV_MAX_DEVS + 1];
	/* at the end */
	struct mv_block *blocks;
	size_t nblocks;
	/*
	 * by site: 1 + memo index of its frames, 0: none; at 2 * id, then
	 * at 2 * id + 1 the same site without its stack (bare)
	 */
	__u32 *memo;
	size_t nmemo;
	__u64 rate; /* --sample-bytes of the trace; 0: none */
	const struct mt_session *s; /* the session, at the end */
	__u8 freed_kind; /* the session's of the event seen now */
	/*
	 * alloc entries carry their kind as 'category'; need_unknown: none of
	 * them is unknown, so the first entry of another action carries it
	 */
	bool categories, need_unknown;
	__u64 t0;
	int cpu_index;
};

static void *open_memviz(FILE *f, const struct mt_export_conf *c, char *err,
			 size_t errlen)
{
	struct memviz *m = calloc(1, sizeof(*m));

	if (!m) {
		snprintf(err, errlen, "export memviz: out of memory");
		return NULL;
	}
	m->f = f;
	for (int i = 0; i <= MV_MAX_DEVS; i++)
		m->dev[i].lo = UINT64_MAX;
	return m;
}

/* keep the last MV_MAX_RECS: grow up to it (or what memory allows), then wrap */
static void push(struct memviz *m, const struct mv_rec *r)
{
	if (m->n == m->cap && m->cap < MV_MAX_RECS) {
		size_t cap = m->cap ? 2 * m->cap : MV_MIN_RECS;
		struct mv_rec *v;

		if (cap > MV_MAX_RECS)
			cap = MV_MAX_RECS;
		v = realloc(m->ring, cap * sizeof(*v));
		if (v) {
			m->ring = v;
			m->cap = cap;
		} else if (!m->cap) {
			m->nomem = true;
			return;
		}
	}
	if (m->n < m->cap) {
		m->ring[m->n++] = *r;
		return;
	}
	m->ring[m->head] = *r;
	m->head = (m->head + 1) % m->cap;
}

/* index of the first range at or after addr */
static size_t ranges_pos(const struct mv_ranges *t, __u64 addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct mv_range *ranges_find(const struct mv_ranges *t, __u64 addr)
{
	size_t i = ranges_pos(t, addr);

	return i < t->n && t->v[i].addr == addr ? &t->v[i] : NULL;
}

/* insert or replace (a reuse without the free we missed); false if full */
static bool ranges_add(struct memviz *m, struct mv_ranges *t,
		       const struct mv_range *e)
{
	size_t i = ranges_pos(t, e->addr);

	if (i < t->n && t->v[i].addr == e->addr) {
		t->v[i] = *e;
		return true;
	}
	if (t->n == MV_MAX_SEGS)
		return false;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct mv_range *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			m->nomem = true;
			return false;
		}
		t->v = v;
		t->cap = cap;
	}
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i] = *e;
	t->n++;
	return true;
}

static void ranges_del(struct mv_ranges *t, __u64 addr)
{
	size_t i = ranges_pos(t, addr);

	if (i == t->n || t->v[i].addr != addr)
		return;
	memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
	t->n--;
}

/* the live segment of dev holding [addr, addr + size) */
static bool inside_seg(const struct memviz *m, int dev, __u64 addr, __u64 size)
{
	size_t i = ranges_pos(&m->segs, addr + 1);
	const struct mv_range *g;

	if (!i)
		return false;
	g = &m->segs.v[i - 1];
	return g->dev == dev && addr - g->addr + size <= g->size;
}

/* the trace list of a CUDA event; -1: an index memviz cannot hold */
static int cuda_dev(const struct mt_call *r)
{
	if (r->dev_index >= MV_MAX_DEVS)
		return -1;
	return r->dev_index < 0 ? 0 : r->dev_index;
}

/* a call of another library than the caching allocator */
static bool foreign(const struct mt_site *site)
{
	return !mt_caller_is_allocator(site ? site->caller : NULL);
}

/* an event for the traces; other: not the caching allocator's memory */
static void rec(struct memviz *m, const struct mt_call *r,
		const struct mt_site *site, enum mv_action a, int dev,
		__u64 addr, bool other)
{
	struct mv_rec e = {
		.ts = r->ev->ts,
		.addr = addr,
		.size = r->size_state == MT_SIZE_KNOWN ? r->size : 0,
		.stream = r->has_stream ? r->stream : 0,
		.site = site,
		.action = (__u8)a,
		.dev = (__u8)dev,
		.bare = mt_sample_unwalked(m->rate, r),
		.foreign = other,
		.kind = a == MV_FREE ? m->freed_kind : MT_MK_MAX,
	};

	m->dev[dev].seen = true;
	push(m, &e);
}

static void block_event(struct memviz *m, const struct mt_call *r,
			const struct mt_site *site)
{
	int dev = r->ki->space == MT_SP_CPU ? MV_CPU : cuda_dev(r);
	struct mv_dev *d;
	__u64 size = r->size_state == MT_SIZE_KNOWN && r->size ? r->size : 1;

	if (dev < 0)
		return;
	if (r->ki->space == MT_SP_C10)
		m->c10 = true;
	if (r->role == MT_ROLE_OOM) {
		rec(m, r, site, MV_OOM, dev, 0, false);
		return;
	}
	if (!r->has_ptr || !r->ptr || r->failed)
		return;
	if (dev == MV_CPU && !(r->size_state == MT_SIZE_KNOWN && r->size))
		return;
	rec(m, r, site, r->role == MT_ROLE_ALLOC ? MV_ALLOC : MV_FREE, dev,
	    r->ptr, false);
	if (dev == MV_CPU)
		return; /* its own segment: nothing to cover */
	d = &m->dev[dev];
	if (r->ptr < d->lo)
		d->lo = r->ptr;
	if (r->ptr + size > d->hi)
		d->hi = r->ptr + size;
	if (!inside_seg(m, dev, r->ptr, size))
		d->cover = true;
}

/*
 * A failed allocation, recorded as memory_viz's oom if it ran out of
 * memory (memory_viz has no other failed call). True if r was one.
 */
static bool failed_alloc(struct memviz *m, const struct mt_call *r,
			 const struct mt_site *site, int dev)
{
	if (r->role != MT_ROLE_ALLOC || !r->failed)
		return false;
	if (mt_cuda_err_is_oom(r->ki->errdomain, r->ret))
		rec(m, r, site, MV_OOM, dev, 0, foreign(site));
	return true;
}

static void segment_event(struct memviz *m, const struct mt_call *r,
			  const struct mt_site *site)
{
	int dev = cuda_dev(r);
	struct mv_range g;

	if (dev < 0)
		return;
	if (failed_alloc(m, r, site, dev))
		return;
	if (!r->has_ptr || !r->ptr || r->failed)
		return;
	if (r->role == MT_ROLE_FREE) {
		rec(m, r, site, MV_SEG_FREE, dev, r->ptr, foreign(site));
		ranges_del(&m->segs, r->ptr);
		return;
	}
	g = (struct mv_range){ .addr = r->ptr,
			       .size = r->size,
			       .stream = r->has_stream ? r->stream : 0,
			       .site = site,
			       .dev = (__u8)dev,
			       .bare = mt_sample_unwalked(m->rate, r),
			       .foreign = foreign(site) };
	rec(m, r, site, MV_SEG_ALLOC, dev, r->ptr, g.foreign);
	if (!ranges_add(m, &m->segs, &g))
		m->dev[dev].cover = true; /* not in 'segments': not shown */
}

static void handle_event(struct memviz *m, const struct mt_call *r,
			 const struct mt_site *site)
{
	int dev = cuda_dev(r);
	struct mv_range h;

	if (dev < 0)
		return;
	if (failed_alloc(m, r, site, dev))
		return;
	if (!r->has_ptr || r->failed)
		return;
	if (r->role == MT_ROLE_FREE) {
		ranges_del(&m->handles, r->ptr);
		return;
	}
	h = (struct mv_range){ .addr = r->ptr, .dev = (__u8)dev };
	/* full: its mappings are left out, their blocks then get a cover */
	ranges_add(m, &m->handles, &h);
}

static void map_event(struct memviz *m, const struct mt_call *r,
		      const struct mt_site *site)
{
	const struct mv_range *h, *g;
	struct mv_range n;
	int dev;

	if (!r->has_ptr || r->failed)
		return;
	if (r->role == MT_ROLE_FREE) {
		g = ranges_find(&m->segs, r->ptr);
		if (!g || !g->expandable)
			return;
		dev = g->dev;
		rec(m, r, site, MV_SEG_UNMAP, dev, r->ptr, foreign(site));
		ranges_del(&m->segs, r->ptr);
		return;
	}
	h = r->has_handle ? ranges_find(&m->handles, r->handle) : NULL;
	if (!h)
		return;
	n = (struct mv_range){ .addr = r->ptr,
			       .size = r->size,
			       .site = site,
			       .dev = h->dev,
			       .expandable = true,
			       .bare = mt_sample_unwalked(m->rate, r),
			       .foreign = foreign(site) };
	rec(m, r, site, MV_SEG_MAP, h->dev, r->ptr, n.foreign);
	if (!ranges_add(m, &m->segs, &n))
		m->dev[n.dev].cover = true;
}

static void event_memviz(void *x, const struct mt_session *s,
			 const struct mt_call *r, const struct mt_site *site)
{
	struct memviz *m = x;
	enum mt_space sp = r->ki->space;

	if (m->nomem || sp == MT_SP_NONE || sp == MT_SP_PINNED)
		return;
	m->rate = s->conf.sample_bytes;
	if (!m->has_pid) {
		m->pid = r->ev->pid;
		m->has_pid = true;
	}
	if (r->ev->pid != m->pid)
		return;
	m->freed_kind = (__u8)s->freed_kind;
	if (mt_space_is_tensor(sp))
		block_event(m, r, site);
	else if (sp == MT_SP_CUDART || sp == MT_SP_DRIVER)
		segment_event(m, r, site);
	else if (sp == MT_SP_HANDLE)
		handle_event(m, r, site);
	else if (sp == MT_SP_VAMAP)
		map_event(m, r, site);
}

/* ---- the end: the file ---- */

static void gather_block(const struct mt_live *e, void *ctx)
{
	struct memviz *m = ctx;

	if (e->pid != m->pid || !mt_space_is_tensor(e->space) ||
	    (e->space == MT_SP_CPU && !e->size))
		return;
	m->blocks[m->nblocks++] = (struct mv_block){
		.addr = e->ptr,
		.size = e->size,
		.site = e->site,
		.dev = e->space == MT_SP_CPU ? MV_CPU :
		       e->dev < 0	     ? 0 :
					       (__u8)e->dev,
		.bare = mt_live_unsampled(e),
		/* the session's kind_fn takes it as its context, read only */
		.kind = (__u8)mt_session_kind_alive(e, (void *)m->s),
	};
}

static int cmp_block(const void *a, const void *b)
{
	const struct mv_block *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The blocks live at the end, by device and address, without any that
 * overlaps the one before (a free we missed); a device with one outside
 * the segments we saw gets a cover.
 */
static int gather_blocks(struct memviz *m, const struct mt_session *s)
{
	size_t n = 0;

	m->blocks = calloc(mt_live_count(s->live) + 1, sizeof(*m->blocks));
	if (!m->blocks)
		return -ENOMEM;
	m->s = s;
	mt_live_foreach(s->live, gather_block, m);
	qsort(m->blocks, m->nblocks, sizeof(*m->blocks), cmp_block);
	for (size_t i = 0; i < m->nblocks; i++) {
		const struct mv_block *b = &m->blocks[i];

		if (n && m->blocks[n - 1].dev == b->dev &&
		    b->addr < m->blocks[n - 1].addr + m->blocks[n - 1].size)
			continue;
		m->blocks[n++] = *b;
		if (b->dev != MV_CPU &&
		    !inside_seg(m, b->dev, b->addr, b->size))
			m->dev[b->dev].cover = true;
	}
	m->nblocks = n;
	return 0;
}

/* a block event of the ring, for pairing an alloc with its free */
struct mv_use {
	__u64 addr;
	__u32 pos; /* in the ring, oldest first */
	__u8 dev;
};

static int cmp_use(const void *a, const void *b)
{
	const struct mv_use *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* the kind of the block live at the end at (dev, addr); unknown if none */
static __u8 live_kind(const struct memviz *m, __u8 dev, __u64 addr)
{
	struct mv_block key = { .addr = addr, .dev = dev };
	const struct mv_block *b = bsearch(&key, m->blocks, m->nblocks,
					   sizeof(*m->blocks), cmp_block);

	return b ? b->kind : MT_MK_UNKNOWN;
}

/*
 * Each alloc of the ring told its kind, as the report tells it: the kind
 * its free was told (the next event at its address, a free), else that of
 * the block live there at the end; unknown where neither (a free missed).
 * The events by (device, address, time): each alloc's free follows it.
 * Then whether the entries carry categories, and who carries "unknown"
 * (write_entry). 0 or -ENOMEM.
 */
static int tell_kinds(struct memviz *m)
{
	struct mv_use *u = calloc(m->n + 1, sizeof(*u));
	bool allocs = false, unknown = false, other = false;
	size_t n = 0;

	if (!u)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		const struct mv_rec *e = &m->ring[(m->head + i) % m->cap];

		if (e->action == MV_ALLOC || e->action == MV_FREE)
			u[n++] = (struct mv_use){ .addr = e->addr,
						  .pos = (__u32)i,
						  .dev = e->dev };
		/* an entry of another action, which every trace keeps */
		other |= e->action == MV_FREE || e->action == MV_OOM ||
			 e->dev == MV_CPU;
	}
	qsort(u, n, sizeof(*u), cmp_use);
	for (size_t i = 0; i < n; i++) {
		struct mv_rec *e = &m->ring[(m->head + u[i].pos) % m->cap];
		bool same = i + 1 < n && u[i + 1].dev == u[i].dev &&
			    u[i + 1].addr == u[i].addr;
		const struct mv_rec *next =
			same ? &m->ring[(m->head + u[i + 1].pos) % m->cap] :
			       NULL;

		if (e->action != MV_ALLOC)
			continue;
		if (!next)
			e->kind = live_kind(m, e->dev, e->addr);
		else if (next->action == MV_FREE && next->kind < MT_MK_MAX)
			e->kind = next->kind;
		else
			e->kind = MT_MK_UNKNOWN;
		allocs = true;
		unknown |= e->kind == MT_MK_UNKNOWN;
	}
	free(u);
	/*
	 * MemoryViz.js (torch 2.6 to 2.14) adds "unknown" to the categories
	 * where none has it, through a misspelt name that throws: an entry
	 * that is no alloc carries it then, or no entry carries a category
	 */
	m->categories = allocs && (unknown || other);
	m->need_unknown = m->categories && !unknown;
	return 0;
}

static void key_uint(struct mt_pickle *p, const char *k, __u64 v)
{
	mt_pk_str(p, k);
	mt_pk_uint(p, v);
}

static void key_str(struct mt_pickle *p, const char *k, const char *v)
{
	mt_pk_str(p, k);
	mt_pk_str(p, v);
}

static void write_frame(struct mt_pickle *p, const char *name, size_t nlen,
			const char *file, size_t flen, __u64 line)
{
	mt_pk_dict(p);
	mt_pk_str(p, "filename");
	mt_pk_strn(p, file, flen);
	key_uint(p, "line", line);
	mt_pk_str(p, "name");
	mt_pk_strn(p, name, nlen);
	mt_pk_end(p);
}

/* "qualname (file:line)" as memviz's {filename, line, name} */
static void write_py_frame(struct mt_pickle *p, const char *fr)
{
	struct mt_frame_parts fp;

	if (mt_frame_parse(fr, &fp) < 0)
		write_frame(p, fr, fp.name_len, "??", 2, 0);
	else
		write_frame(p, fp.name, fp.name_len, fp.file, fp.file_len,
			    fp.line);
}

/*
 * a site's frames, the call first; bare: its stack not walked, the call
 * then "stack not sampled". Written once, then by memo.
 */
static void write_frames(struct mt_pickle *p, struct memviz *m,
			 const struct mt_site *site, bool bare)
{
	size_t at = site ? 2 * (size_t)site->id + bare : m->nmemo;
	__u32 *memo = at < m->nmemo ? &m->memo[at] : NULL;

	if (memo && *memo) {
		mt_pk_get(p, *memo - 1);
		return;
	}
	mt_pk_list(p);
	if (site) {
		const char *ev = site->event ? site->event : "?";
		const char *lib = site->caller ? site->caller : "??";

		write_frame(p, ev, strlen(ev), lib, strlen(lib), 0);
		for (int i = 0; i < site->depth; i++)
			write_py_frame(p, site->frames[i]);
	}
	if (site && bare) {
		char rate[64];
		int n = snprintf(rate, sizeof(rate),
				 "memtrace-bpf --sample-bytes %llu",
				 (unsigned long long)m->rate);

		write_frame(p, MT_SAMPLE_NO_STACK, strlen(MT_SAMPLE_NO_STACK),
			    rate, (size_t)n, 0);
	}
	mt_pk_end(p);
	if (memo)
		*memo = mt_pk_put(p) + 1;
}

static void write_block(struct mt_pickle *p, struct memviz *m, __u64 addr,
			__u64 size, const struct mv_block *b)
{
	mt_pk_dict(p);
	key_uint(p, "address", addr);
	key_uint(p, "size", size);
	key_uint(p, "requested_size", b ? size : 0);
	key_str(p, "state", b ? "active_allocated" : "inactive");
	mt_pk_str(p, "frames");
	write_frames(p, m, b ? b->site : NULL, b && b->bare);
	if (b) {
		/* torch 1.13's form of the same */
		mt_pk_str(p, "history");
		mt_pk_list(p);
		mt_pk_dict(p);
		key_uint(p, "addr", addr);
		key_uint(p, "real_size", size);
		mt_pk_str(p, "frames");
		write_frames(p, m, b->site, b->bare);
		mt_pk_end(p);
		mt_pk_end(p);
	}
	mt_pk_end(p);
}

/* a segment and the n blocks in it (sorted), tiled by inactive gaps */
static void write_segment(struct mt_pickle *p, struct memviz *m, int index,
			  const struct mv_range *g, const struct mv_block *b,
			  size_t n)
{
	__u64 at = g->addr, end = g->addr + g->size, live = 0;

	for (size_t i = 0; i < n; i++)
		live += b[i].size;
	mt_pk_dict(p);
	key_uint(p, "device", (__u64)index);
	key_uint(p, "address", g->addr);
	key_uint(p, "total_size", g->size);
	key_uint(p, "allocated_size", live);
	key_uint(p, "active_size", live);
	key_uint(p, "requested_size", live);
	key_uint(p, "stream", g->stream);
	key_str(p, "segment_type", g->size <= MV_SMALL_SEG ? "small" : "large");
	mt_pk_str(p, "is_expandable");
	mt_pk_bool(p, g->expandable);
	mt_pk_str(p, "frames");
	write_frames(p, m, g->site, g->bare);
	mt_pk_str(p, "blocks");
	mt_pk_list(p);
	for (size_t i = 0; i < n; i++) {
		if (b[i].addr > at)
			write_block(p, m, at, b[i].addr - at, NULL);
		write_block(p, m, b[i].addr, b[i].size, &b[i]);
		at = b[i].addr + b[i].size;
	}
	if (at < end)
		write_block(p, m, at, end - at, NULL);
	mt_pk_end(p);
	mt_pk_end(p);
}

/* device slot -> its index in device_traces */
static int list_index(const struct memviz *m, int dev)
{
	return dev == MV_CPU ? m->cpu_index : dev;
}

static void write_segments(struct mt_pickle *p, struct memviz *m, int dev,
			   size_t *bi)
{
	const struct mv_dev *d = &m->dev[dev];
	size_t first, k;

	while (*bi < m->nblocks && m->blocks[*bi].dev < dev)
		(*bi)++;
	first = *bi;
	while (*bi < m->nblocks && m->blocks[*bi].dev == dev)
		(*bi)++;
	if (dev == MV_CPU) {
		for (k = first; k < *bi; k++) {
			const struct mv_block *b = &m->blocks[k];
			struct mv_range g = { .addr = b->addr,
					      .size = b->size,
					      .site = b->site,
					      .bare = b->bare };

			write_segment(p, m, list_index(m, dev), &g, b, 1);
		}
		return;
	}
	if (d->cover) {
		struct mv_range g = { .addr = d->lo, .size = d->hi - d->lo };

		if (d->lo < d->hi)
			write_segment(p, m, list_index(m, dev), &g,
				      &m->blocks[first], *bi - first);
		return;
	}
	/* both by address: one walk */
	k = first;
	for (size_t i = 0; i < m->segs.n; i++) {
		const struct mv_range *g = &m->segs.v[i];
		size_t n = 0;

		if (g->dev != dev || (m->c10 && g->foreign))
			continue;
		while (k < *bi && m->blocks[k].addr < g->addr)
			k++;
		while (k + n < *bi && m->blocks[k + n].addr - g->addr +
						      m->blocks[k + n].size <=
					      g->size)
			n++;
		write_segment(p, m, dev, g, &m->blocks[k], n);
		k += n;
	}
}

static void write_entry(struct mt_pickle *p, struct memviz *m,
			const struct mv_rec *e, const char *action)
{
	mt_pk_dict(p);
	key_str(p, "action", action);
	if (e->action == MV_OOM)
		key_uint(p, "device_free", 0);
	else
		key_uint(p, "addr", e->addr);
	key_uint(p, "size", e->size);
	key_uint(p, "stream", e->stream);
	key_uint(p, "time_us", e->ts > m->t0 ? (e->ts - m->t0) / 1000 : 0);
	mt_pk_str(p, "frames");
	write_frames(p, m, e->site, e->bare);
	/*
	 * the kind of memory, where torch's _profile_to_snapshot puts the
	 * profiler's category: the Active Memory Timeline colours by it,
	 * with a legend
	 */
	if (m->categories && !strcmp(action, "alloc")) {
		key_str(p, "category", mt_memkind_name(e->kind));
	} else if (m->need_unknown) {
		key_str(p, "category", mt_memkind_name(MT_MK_UNKNOWN));
		m->need_unknown = false;
	}
	mt_pk_end(p);
}

static void write_trace(struct mt_pickle *p, struct memviz *m, int dev)
{
	bool cover = m->dev[dev].cover;

	mt_pk_list(p);
	for (size_t i = 0; i < m->n; i++) {
		const struct mv_rec *e = &m->ring[(m->head + i) % m->cap];

		if (e->dev != dev || (m->c10 && e->foreign))
			continue;
		if (cover && e->action >= MV_SEG_ALLOC &&
		    e->action <= MV_SEG_UNMAP)
			continue;
		if (dev == MV_CPU && e->action == MV_ALLOC)
			write_entry(p, m, e, "segment_alloc");
		write_entry(p, m, e, action_name[e->action]);
		if (e->action == MV_FREE)
			write_entry(p, m, e, "free_completed");
		if (dev == MV_CPU && e->action == MV_FREE)
			write_entry(p, m, e, "segment_free");
	}
	mt_pk_end(p);
}

/* a sampled trace's key: how it was sampled */
static void write_sample(struct mt_pickle *p, const struct mt_session *s)
{
	char note[512];

	mt_pk_str(p, "memtrace_sample");
	mt_pk_dict(p);
	key_uint(p, "sample_bytes", s->conf.sample_bytes);
	key_uint(p, "allocations", s->sample_allocs);
	key_uint(p, "sampled", s->sample_walked);
	key_str(p, "note", mt_export_sample_note(s, note, sizeof(note)));
	mt_pk_end(p);
}

static int write_snapshot(struct memviz *m, const struct mt_session *s)
{
	struct mt_pickle p;
	int ncuda = 0;
	size_t bi = 0;

	for (int i = 0; i < MV_MAX_DEVS; i++)
		if (m->dev[i].seen)
			ncuda = i + 1;
	m->cpu_index = ncuda;
	m->t0 = s->t0;

	mt_pk_start(&p, m->f);
	mt_pk_dict(&p);
	mt_pk_str(&p, "segments");
	mt_pk_list(&p);
	for (int i = 0; i < ncuda; i++)
		write_segments(&p, m, i, &bi);
	if (m->dev[MV_CPU].seen)
		write_segments(&p, m, MV_CPU, &bi);
	mt_pk_end(&p);
	mt_pk_str(&p, "device_traces");
	mt_pk_list(&p);
	for (int i = 0; i < ncuda; i++)
		write_trace(&p, m, i);
	if (m->dev[MV_CPU].seen)
		write_trace(&p, m, MV_CPU);
	mt_pk_end(&p);
	if (s->conf.sample_bytes)
		write_sample(&p, s);
	mt_pk_end(&p);
	return mt_pk_finish(&p);
}

static int close_memviz(void *x, const struct mt_session *s, char *err,
			size_t errlen)
{
	struct memviz *m = x;
	int ret = m->nomem ? -ENOMEM : 0;

	if (!ret) {
		m->nmemo = 2 * (mt_sites_count(s->sites) + 1);
		m->memo = calloc(m->nmemo, sizeof(*m->memo));
		ret = m->memo ? gather_blocks(m, s) : -ENOMEM;
	}
	if (!ret)
		ret = tell_kinds(m);
	if (ret)
		snprintf(err, errlen, "export memviz: out of memory");
	else if ((ret = write_snapshot(m, s)))
		snprintf(err, errlen, "export memviz: %s",
			 ret == -EIO ? "write failed" : "bad nesting (a bug)");
	free(m->blocks);
	free(m->memo);
	free(m->segs.v);
	free(m->handles.v);
	free(m->ring);
	free(m);
	return ret;
}

const struct mt_exporter mt_export_memviz = {
	.name = "memviz",
	.what = "PyTorch memory snapshot pickle (pytorch.org/memory_viz)",
	/*
	 * a snapshot is the state where the events end: report --at stops
	 * there; the state at the peak is not kept
	 */
	.at = MT_EXPORT_AT_TIME,
	.open = open_memviz,
	.event = event_memviz,
	.close = close_memviz,
};
