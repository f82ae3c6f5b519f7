// SPDX-License-Identifier: GPL-2.0
/*
 * The record's reader: blocks read and checked one at a time, events
 * decoded one at a time, every count and length checked against the file
 * (docs/FORMAT.md); the fuzzer (tests/fuzz) runs it on anything.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/sample.h"
#include "lib/grow.h"
#include "record/coder.h"
#include "record/record.h"

#define READ_CHUNK (64u << 10)

/*
 * What a record's times and counts can be, checked as they are read so
 * that a crafted or damaged record is refused instead of printing a NaN
 * duration or a peak centuries in. Time stamps are CLOCK_MONOTONIC: no
 * trace spans ten years.
 */
#define MAX_SECONDS 315576000ULL /* ten years of 365.25 days */
#define MAX_SPAN_NS (MAX_SECONDS * 1000000000ULL)
/*
 * The end block's seconds run from after the attach to the end, and the
 * events from the first probe attached: a trace's events may span that
 * much more than its seconds. Attaching to many processes, each mapping
 * large libraries whose symbols are read, can take minutes on a loaded
 * host; ten are far more than that.
 */
#define ATTACH_SECONDS 600.0
/* the kernel cannot lose events faster than one a nanosecond */
#define MAX_PER_SECOND 1e9

/* the widest value of each field coded as a number */
static const __u64 field_max[NF] = {
	[F_A0] = UINT64_MAX,	[F_A1] = UINT64_MAX,   [F_A2] = UINT64_MAX,
	[F_A3] = UINT64_MAX,	[F_CPU] = UINT32_MAX,  [F_TID] = UINT32_MAX,
	[F_A4] = UINT64_MAX,	[F_OUT] = UINT64_MAX,  [F_RET] = UINT64_MAX,
	[F_PID] = UINT32_MAX,	[F_COMM] = UINT32_MAX, [F_KIND] = UINT16_MAX,
	[F_FLAGS] = UINT16_MAX, [F_DEV] = UINT32_MAX,
};

static __u64 get_le(const unsigned char *p, int bytes)
{
	__u64 v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (__u64)p[i] << (8 * i);
	return v;
}

/* the writer's zigzag undone: 0, -1, 1, -2, ... from 0, 1, 2, 3, ... */
static __u64 unzigzag(__u64 z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

struct meta_kv {
	char *key, *value;
};

struct mt_reader {
	FILE *f;
	struct mt_strpool *pool;
	struct mt_sites *sites;
	__u64 off; /* bytes read */
	__u32 blockno; /* from 1 */
	__u64 block_off; /* where the block being read starts */
	struct buf blk; /* its payload */
	size_t pos;
	__u64 left; /* events still to decode in it */
	__u64 evno; /* the next one's index in it */
	const char **str; /* by string id; 0 is NULL */
	size_t nstr, str_cap;
	struct mt_site **site; /* by site id; 0 is NULL */
	size_t site_cap;
	struct coder c;
	__u64 comm_id; /* the last comm checked, and its length */
	size_t comm_len;
	struct meta_kv *meta;
	size_t nmeta, meta_cap, meta_bytes;
	char *tmp; /* a string being interned */
	struct mt_rec_end end;
	bool ended; /* the end block was read */
	bool done; /* nothing more to read */
	bool truncated;
	bool events_seen; /* an EVENTS block was read */
	__u64 sample_bytes; /* MT_REC_SAMPLE_KEY; 0: none */
	bool timed; /* an event was decoded: ts_lo and ts_hi hold */
	__u64 ts_lo, ts_hi; /* the earliest and latest time stamps read */
	bool failed;
	char err[256];
};

static int fail(struct mt_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "block N at byte X: why"; sticky: every later call says it again */
static int fail(struct mt_reader *r, const char *fmt, ...)
{
	size_t n = 0;
	va_list ap;
	int w;

	if (r->blockno) {
		w = snprintf(r->err, sizeof(r->err),
			     "block %u at byte %llu: ", r->blockno,
			     (unsigned long long)r->block_off);
		n = w > 0 ? (size_t)w : 0;
	}
	if (n < sizeof(r->err)) {
		va_start(ap, fmt);
		vsnprintf(r->err + n, sizeof(r->err) - n, fmt, ap);
		va_end(ap);
	}
	r->failed = true;
	return -1;
}

/* a cursor over a payload whose every read is checked */
struct cur {
	const unsigned char *p;
	size_t len, pos;
};

static bool get_varint_long(struct cur *c, __u64 *v)
{
	__u64 x = 0;
	int shift = 0;
	unsigned char b;

	do {
		/* cut short, or more than 64 bits */
		if (c->pos >= c->len || (shift == 63 && c->p[c->pos] > 1))
			return false;
		b = c->p[c->pos++];
		x |= (__u64)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*v = x;
	return true;
}

/* most deltas fit in one byte: that case inline, the loop apart */
static inline bool get_varint(struct cur *c, __u64 *v)
{
	if (c->pos < c->len && c->p[c->pos] < 0x80) {
		*v = c->p[c->pos++];
		return true;
	}
	return get_varint_long(c, v);
}

static bool get_max(struct cur *c, __u64 max, __u64 *v)
{
	return get_varint(c, v) && *v <= max;
}

static size_t cur_left(const struct cur *c)
{
	return c->len - c->pos;
}

/* a string of at most max bytes, no NUL in it, copied to dst with one */
static bool get_str(struct cur *c, char *dst, size_t max)
{
	__u64 n;

	if (!get_max(c, max, &n) || n > cur_left(c) ||
	    memchr(c->p + c->pos, '\0', n))
		return false;
	memcpy(dst, c->p + c->pos, n);
	dst[n] = '\0';
	c->pos += n;
	return true;
}

/* the count in front of a block's items, each at least min bytes */
static bool get_count(struct cur *c, size_t min, __u64 *n)
{
	return get_varint(c, n) && *n <= cur_left(c) / min;
}

/*
 * MT_REC_SAMPLE_KEY: it says how every event is to be read, so it comes
 * once, before the first; a number of bytes, 1 to MT_SAMPLE_MAX
 */
static int read_sample_bytes(struct mt_reader *r, const char *value)
{
	char *end;
	unsigned long long v;

	if (r->events_seen || r->sample_bytes)
		return fail(r, "%s after the first event or twice",
			    MT_REC_SAMPLE_KEY);
	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || *end || !isdigit((unsigned char)*value) ||
	    !v || v > MT_SAMPLE_MAX)
		return fail(r, "bad %s '%s'", MT_REC_SAMPLE_KEY, value);
	r->sample_bytes = v;
	return 0;
}

static int read_meta(struct mt_reader *r, struct cur *c)
{
	__u64 n;

	if (!get_count(c, 2, &n) || r->nmeta + n > MAX_META)
		return fail(r, "bad metadata count");
	if (mt_grow((void **)&r->meta, &r->meta_cap, r->nmeta + n,
		    sizeof(*r->meta)))
		return fail(r, "out of memory");
	for (__u64 i = 0; i < n; i++) {
		struct meta_kv *kv = &r->meta[r->nmeta];

		if (!get_str(c, r->tmp, MAX_STR))
			return fail(r, "bad metadata key");
		kv->key = strdup(r->tmp);
		if (!kv->key)
			return fail(r, "out of memory");
		if (!get_str(c, r->tmp, MAX_STR)) {
			free(kv->key);
			return fail(r, "bad metadata value");
		}
		kv->value = strdup(r->tmp);
		if (!kv->value) {
			free(kv->key);
			return fail(r, "out of memory");
		}
		r->nmeta++;
		r->meta_bytes += strlen(kv->key) + strlen(kv->value);
		if (!strcmp(kv->key, MT_REC_SAMPLE_KEY) &&
		    read_sample_bytes(r, kv->value))
			return -1;
		if (r->meta_bytes > MAX_META_BYTES)
			return fail(r, "metadata over %u bytes",
				    MAX_META_BYTES);
	}
	return 0;
}

static int read_strings(struct mt_reader *r, struct cur *c)
{
	__u64 n;

	if (!get_count(c, 1, &n) || r->nstr - 1 + n > MT_REC_MAX_STRINGS)
		return fail(r, "bad string count");
	if (mt_grow((void **)&r->str, &r->str_cap, r->nstr + n,
		    sizeof(*r->str)))
		return fail(r, "out of memory");
	for (__u64 i = 0; i < n; i++) {
		const char *s;

		if (!get_str(c, r->tmp, MAX_STR))
			return fail(r, "bad string %zu", r->nstr);
		s = mt_intern(r->pool, r->tmp);
		if (!s)
			return fail(r,
				    "no room for string %zu (string pool "
				    "full or out of memory)",
				    r->nstr);
		r->str[r->nstr++] = s;
	}
	return 0;
}

static bool get_strid(struct mt_reader *r, struct cur *c, const char **s)
{
	__u64 id;

	if (!get_max(c, r->nstr - 1, &id))
		return false;
	*s = r->str[id];
	return true;
}

static int read_sites(struct mt_reader *r, struct cur *c)
{
	const char *frames[MT_MAX_FRAMES];
	__u64 n;

	/* a site is at least eight one-byte numbers */
	if (!get_count(c, 8, &n) || r->c.n - 1 + n > MT_REC_MAX_SITES)
		return fail(r, "bad site count");
	if (mt_grow((void **)&r->site, &r->site_cap, r->c.n + n,
		    sizeof(*r->site)))
		return fail(r, "out of memory");
	for (__u64 i = 0; i < n; i++) {
		struct mt_site key = { .frames = frames };
		__u64 pid, bits, depth;
		bool is_new;

		if (!get_max(c, UINT32_MAX, &pid) ||
		    !get_strid(r, c, &key.event) ||
		    !get_strid(r, c, &key.caller) ||
		    !get_strid(r, c, &key.phase) ||
		    !get_strid(r, c, &key.module) ||
		    !get_strid(r, c, &key.node) ||
		    !get_strid(r, c, &key.detail) ||
		    !get_max(c, SITE_RECOMPUTE | SITE_TRUNCATED, &bits) ||
		    !get_max(c, MT_MAX_FRAMES, &depth))
			return fail(r, "bad site %zu", r->c.n);
		for (__u64 d = 0; d < depth; d++)
			if (!get_strid(r, c, &frames[d]))
				return fail(r, "bad frame %llu of site %zu",
					    (unsigned long long)d, r->c.n);
		key.pid = (__u32)pid;
		key.recompute = bits & SITE_RECOMPUTE;
		key.truncated = bits & SITE_TRUNCATED;
		key.depth = (int)depth;
		if (mt_rec_coder_add_site(&r->c))
			return fail(r, "out of memory");
		r->site[r->c.n - 1] = mt_sites_get(r->sites, &key, &is_new);
	}
	return 0;
}

/* an end block's count of events that cannot be that high in secs */
static bool too_many(__u64 n, double secs)
{
	return (double)n > (secs + ATTACH_SECONDS) * MAX_PER_SECOND;
}

static int read_end(struct mt_reader *r, struct cur *c)
{
	struct mt_rec_end *e = &r->end;
	__u64 n, bits, first = 0;
	double span;

	if (!get_varint(c, &n) || n != 1 || cur_left(c) < 8)
		return fail(r, "bad end block");
	bits = get_le(c->p + c->pos, 8);
	c->pos += 8;
	memcpy(&e->seconds, &bits, sizeof(bits));
	if (!get_varint(c, &e->lost) || !get_varint(c, &e->unseen.stacks_lost))
		return fail(r, "bad end block");
	/* absent from records written before they were counted: 0 */
	if (cur_left(c) && (!get_varint(c, &e->unseen.stacks_early) ||
			    !get_varint(c, &e->unseen.nodes) ||
			    !get_varint(c, &e->unseen.node_bytes)))
		return fail(r, "bad end block");
	/* later still: the command's children not followed */
	if (cur_left(c) && (!get_varint(c, &e->unseen.children) ||
			    !get_varint(c, &first) || first > INT_MAX))
		return fail(r, "bad end block");
	e->unseen.first_child = (__u32)first;
	/* later still: stacks not all readable when named */
	if (cur_left(c) && !get_varint(c, &e->unseen.stacks_unread))
		return fail(r, "bad end block");
	/* !(x >= 0) is also true of a NaN */
	if (!(e->seconds >= 0) || e->seconds > (double)MAX_SECONDS)
		return fail(r, "end block: %g s traced is no duration",
			    e->seconds);
	if (too_many(e->lost, e->seconds) ||
	    too_many(e->unseen.stacks_lost, e->seconds) ||
	    too_many(e->unseen.stacks_early, e->seconds) ||
	    too_many(e->unseen.stacks_unread, e->seconds) ||
	    too_many(e->unseen.nodes, e->seconds) ||
	    too_many(e->unseen.children, e->seconds))
		return fail(r,
			    "end block: %llu events lost, %llu + %llu "
			    "without their stack, %llu without their "
			    "forward in %.3f s traced: more than one a "
			    "nanosecond",
			    (unsigned long long)e->lost,
			    (unsigned long long)e->unseen.stacks_lost,
			    (unsigned long long)e->unseen.stacks_early,
			    (unsigned long long)e->unseen.nodes, e->seconds);
	span = r->timed ? (double)(r->ts_hi - r->ts_lo) / 1e9 : 0;
	if (span > e->seconds + ATTACH_SECONDS)
		return fail(r,
			    "end block: %.3f s traced, but the events span "
			    "%.3f s",
			    e->seconds, span);
	r->ended = true;
	return 0;
}

/* the payload of len bytes; 0 and r->truncated if the file ends first */
static int read_payload(struct mt_reader *r, size_t len)
{
	r->blk.len = 0;
	while (r->blk.len < len) {
		/* grow with what the file holds, not with what it claims */
		size_t want = len - r->blk.len, got;

		if (want > READ_CHUNK)
			want = READ_CHUNK;
		if (buf_reserve(&r->blk, want))
			return fail(r, "out of memory");
		got = fread(r->blk.p + r->blk.len, 1, want, r->f);
		r->blk.len += got;
		r->off += got;
		if (got < want) {
			if (ferror(r->f))
				return fail(r, "read error: %s",
					    strerror(errno));
			r->truncated = r->done = true;
			return 0;
		}
	}
	return 1;
}

/* the next block: read, checked and taken in; -1 on error */
static int read_block(struct mt_reader *r)
{
	unsigned char h[BLOCK_HDR];
	struct cur c;
	size_t n;
	__u32 len;
	int ret;

	r->blockno++;
	r->block_off = r->off;
	n = fread(h, 1, sizeof(h), r->f);
	r->off += n;
	if (n < sizeof(h) && ferror(r->f))
		return fail(r, "read error: %s", strerror(errno));
	if (r->ended) {
		if (n)
			return fail(r, "data after the end block");
		r->done = true;
		return 0;
	}
	if (n < sizeof(h)) {
		/* killed between two blocks, or in the middle of one */
		r->truncated = r->done = true;
		return 0;
	}
	if (get_le(h + 9, 4) != crc(h, 9))
		return fail(r, "bad block header");
	len = (__u32)get_le(h + 1, 4);
	if (h[0] < B_META || h[0] > B_END)
		return fail(r, "unknown block type %u", h[0]);
	if (len > MAX_BLOCK)
		return fail(r, "%u bytes, over the limit of %u", len,
			    MAX_BLOCK);
	ret = read_payload(r, len);
	if (ret <= 0)
		return ret;
	if (get_le(h + 5, 4) != crc(r->blk.p, len))
		return fail(r, "checksum mismatch");
	c = (struct cur){ .p = r->blk.p, .len = len };
	switch (h[0]) {
	case B_META:
		ret = read_meta(r, &c);
		break;
	case B_STRINGS:
		ret = read_strings(r, &c);
		break;
	case B_SITES:
		ret = read_sites(r, &c);
		break;
	case B_END:
		ret = read_end(r, &c);
		break;
	default: /* B_EVENTS: decoded one at a time by mt_reader_next */
		/* an event is at least its mask and its ts */
		if (!get_count(&c, 2, &r->left) || !r->left)
			return fail(r, "bad event count");
		r->evno = 0;
		r->pos = c.pos;
		r->events_seen = true;
		return 0;
	}
	if (ret)
		return ret;
	if (c.pos != c.len)
		return fail(r, "%zu bytes after its last item", c.len - c.pos);
	return 0;
}

/* blocks until one has events: 1, 0 at the end, -1 on error */
static int fill(struct mt_reader *r)
{
	if (r->failed)
		return -1;
	while (!r->left) {
		if (r->done)
			return 0;
		if (read_block(r))
			return -1;
	}
	return 1;
}

static int decode(struct mt_reader *r, struct mt_rec_item *it)
{
	struct cur c = { .p = r->blk.p, .len = r->blk.len, .pos = r->pos };
	__u64 mask, dts, v[NF], site, ts;
	const __u64 *ref;
	struct mt_event *ev = &it->ev;
	const char *comm;

	if (!get_max(&c, (1u << NF) - 1, &mask) || !get_varint(&c, &dts))
		goto bad;
	site = coder_predict(&r->c);
	if ((mask & 1) && !get_max(&c, r->c.n - 1, &site))
		goto bad;
	ref = coder_ref(&r->c, (__u32)site);
	memcpy(v, ref, sizeof(v));
	v[F_SITE] = site;
	if (mask & 1u << F_DD0)
		v[F_DD0] = !ref[F_DD0];
	/* the coded fields follow in field order: visit only their bits */
	for (__u32 m = (__u32)mask & ~(1u | 1u << F_DD0); m; m &= m - 1) {
		int i = __builtin_ctz(m);
		__u64 code;

		if (!get_varint(&c, &code))
			goto bad;
		v[i] = i == F_COMM ? code : ref[i] + unzigzag(code);
		if (v[i] > field_max[i])
			goto bad;
	}
	if (v[F_COMM] >= r->nstr)
		return fail(r, "event %llu: unknown string %llu",
			    (unsigned long long)r->evno,
			    (unsigned long long)v[F_COMM]);
	comm = r->str[v[F_COMM]];
	/* comms change seldom: each is measured once in a row */
	if (v[F_COMM] != r->comm_id) {
		size_t n = comm ? strlen(comm) : 0;

		if (n >= MT_COMM_LEN)
			return fail(r, "event %llu: comm of %zu bytes",
				    (unsigned long long)r->evno, n);
		r->comm_id = v[F_COMM];
		r->comm_len = n;
	}
	ts = r->c.ts + unzigzag(dts);
	if (!r->timed) {
		r->ts_lo = r->ts_hi = ts;
		r->timed = true;
	} else if (ts < r->ts_lo || ts > r->ts_hi) {
		if (ts < r->ts_lo)
			r->ts_lo = ts;
		else
			r->ts_hi = ts;
		if (r->ts_hi - r->ts_lo > MAX_SPAN_NS)
			return fail(r,
				    "event %llu: its time stamp is %.0f s "
				    "from another's, more than a trace can "
				    "span",
				    (unsigned long long)r->evno,
				    (double)(r->ts_hi - r->ts_lo) / 1e9);
	}
	coder_step(&r->c, v, ts);
	r->pos = c.pos;
	/* field by field: a memset of the whole item costs more per event */
	_Static_assert(sizeof(*ev) == 160,
		       "decode() sets each field of struct mt_event");
	ev->ts = ts;
	for (int i = 0; i < MT_NARGS; i++)
		ev->args[i] = v[i < 4 ? F_A0 + i : F_A4];
	ev->out = v[F_OUT];
	ev->ret = (__s64)v[F_RET];
	ev->caller = 0;
	ev->pid = (__u32)v[F_PID];
	ev->tid = (__u32)v[F_TID];
	ev->cpu = (__u32)v[F_CPU];
	ev->kind = (__u16)v[F_KIND];
	ev->flags = (__u16)v[F_FLAGS];
	ev->dev = (__s32)(__u32)v[F_DEV];
	memset(ev->comm, 0, sizeof(ev->comm));
	if (r->comm_len)
		memcpy(ev->comm, comm, r->comm_len);
	ev->stack_id = ev->node = ev->node_vt = ev->node_stack = ev->seq = 0;
	ev->seq_thread = 0;
	it->default_dev0 = v[F_DD0];
	it->site = r->site[site];
	r->evno++;
	if (!--r->left && r->pos != r->blk.len)
		return fail(r, "%zu bytes after its last event",
			    r->blk.len - r->pos);
	return 1;
bad:
	return fail(r, "event %llu: bad coding", (unsigned long long)r->evno);
}

struct mt_reader *mt_reader_open(FILE *f, struct mt_strpool *pool,
				 struct mt_sites *sites, char *err,
				 size_t errlen)
{
	unsigned char h[FILE_HDR];
	struct mt_reader *r;
	size_t n = fread(h, 1, sizeof(h), f);
	unsigned int version;

	if (n < sizeof(h) && ferror(f)) {
		snprintf(err, errlen, "read error: %s", strerror(errno));
		return NULL;
	}
	if (!n) {
		snprintf(err, errlen, "empty file, not a memtrace-bpf record");
		return NULL;
	}
	if (memcmp(h, MAGIC, n < MAGIC_LEN ? n : MAGIC_LEN)) {
		snprintf(err, errlen, "not a memtrace-bpf record");
		return NULL;
	}
	if (n < sizeof(h)) {
		snprintf(err, errlen,
			 "cut short in its header (%zu of %d bytes)", n,
			 FILE_HDR);
		return NULL;
	}
	version = (unsigned int)get_le(h + 8, 2);
	if (version > MT_REC_VERSION) {
		snprintf(err, errlen,
			 "version %u is newer than this memtrace-bpf reads "
			 "(%d)",
			 version, MT_REC_VERSION);
		return NULL;
	}
	if (get_le(h + 12, 4) != crc(h, 12) || !version || get_le(h + 10, 2)) {
		snprintf(err, errlen, "corrupt header");
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || mt_rec_coder_init(&r->c) ||
	    mt_grow((void **)&r->str, &r->str_cap, 1, sizeof(*r->str)) ||
	    mt_grow((void **)&r->site, &r->site_cap, 1, sizeof(*r->site)) ||
	    !(r->tmp = malloc(MAX_STR + 1))) {
		mt_reader_close(r);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->f = f;
	r->pool = pool;
	r->sites = sites;
	r->off = FILE_HDR;
	r->str[0] = NULL;
	r->nstr = 1;
	r->site[0] = NULL;
	/* the metadata before the first event, for mt_reader_meta */
	if (fill(r) < 0) {
		snprintf(err, errlen, "%s", r->err);
		mt_reader_close(r);
		return NULL;
	}
	return r;
}

int mt_reader_next(struct mt_reader *r, struct mt_rec_item *it, char *err,
		   size_t errlen)
{
	int ret = fill(r);

	if (ret > 0)
		ret = decode(r, it);
	if (ret < 0)
		snprintf(err, errlen, "%s", r->err);
	return ret;
}

bool mt_reader_truncated(const struct mt_reader *r)
{
	return r->truncated;
}

__u64 mt_reader_sample_bytes(const struct mt_reader *r)
{
	return r->sample_bytes;
}

bool mt_reader_end(const struct mt_reader *r, struct mt_rec_end *end)
{
	if (!r->ended)
		return false;
	*end = r->end;
	return true;
}

bool mt_reader_meta(const struct mt_reader *r, size_t i, const char **key,
		    const char **value)
{
	if (i >= r->nmeta)
		return false;
	*key = r->meta[i].key;
	*value = r->meta[i].value;
	return true;
}

void mt_reader_close(struct mt_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nmeta; i++) {
		free(r->meta[i].key);
		free(r->meta[i].value);
	}
	free(r->meta);
	free(r->str);
	free(r->site);
	free(r->c.s);
	free(r->blk.p);
	free(r->tmp);
	free(r);
}
