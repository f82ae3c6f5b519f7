// SPDX-License-Identifier: GPL-2.0
/*
 * The binary record; docs/FORMAT.md describes every byte. The writer and
 * the reader share the event coding (struct coder): change one, change
 * both, and MT_REC_VERSION.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "lib/grow.h"
#include "record/record.h"

#define MAGIC "MTBPFREC"
#define MAGIC_LEN 8
#define FILE_HDR 16 /* magic, u16 version, u16 flags, u32 crc */
#define BLOCK_HDR 13 /* u8 type, u32 length, u32 payload crc, u32 own crc */

/* what the writer never exceeds and the reader refuses beyond */
#define MAX_STR 65536 /* bytes of one string */
#define MAX_STRINGS (1u << 22)
#define MAX_SITES (1u << 20)
#define MAX_META 4096
#define MAX_META_BYTES (1u << 20)
#define MAX_BLOCK (16u << 20) /* payload bytes */
#define MAX_VARINT 10
#define FLUSH_AT (64u << 10) /* pending bytes that make a flush */
#define READ_CHUNK (64u << 10)

enum block_type {
	B_META = 1,
	B_STRINGS,
	B_SITES,
	B_EVENTS,
	B_END,
};

/*
 * The values of an event, in the order of the bits of its mask; each is
 * coded against the same value of the last event of its site (ts against
 * the last event of all).
 */
enum field {
	F_SITE, /* coded against the site that followed the last one last time */
	F_A0,
	F_A1,
	F_A2,
	F_A3,
	F_CPU,
	F_TID,
	F_A4,
	F_OUT,
	F_RET,
	F_PID,
	F_COMM, /* a string id, coded as itself */
	F_KIND,
	F_FLAGS,
	F_DEV,
	F_DD0, /* default_dev0: its bit toggles it, no value follows */
	NF,
};

/* an event's site, its mask, its ts and its values: at most this much */
#define MAX_EVENT_CODE ((2 + NF) * MAX_VARINT)
/* a site: pid, five strings, bits, depth, frames */
#define MAX_SITE_CODE ((9 + MT_MAX_FRAMES) * MAX_VARINT)

/* the widest value of each field coded as a number */
static const __u64 field_max[NF] = {
	[F_A0] = UINT64_MAX,	[F_A1] = UINT64_MAX,   [F_A2] = UINT64_MAX,
	[F_A3] = UINT64_MAX,	[F_CPU] = UINT32_MAX,  [F_TID] = UINT32_MAX,
	[F_A4] = UINT64_MAX,	[F_OUT] = UINT64_MAX,  [F_RET] = UINT64_MAX,
	[F_PID] = UINT32_MAX,	[F_COMM] = UINT32_MAX, [F_KIND] = UINT16_MAX,
	[F_FLAGS] = UINT16_MAX, [F_DEV] = UINT32_MAX,
};

static void put_le(unsigned char *p, __u64 v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static __u64 get_le(const unsigned char *p, int bytes)
{
	__u64 v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (__u64)p[i] << (8 * i);
	return v;
}

static __u32 crc(const void *p, size_t len)
{
	return (__u32)crc32(0, p, (uInt)len);
}

/* signed deltas as small unsigned numbers: 0, -1, 1, -2, ... */
static __u64 zigzag(__u64 d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

static __u64 unzigzag(__u64 z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	unsigned char *p;

	if (b->len + more <= b->cap)
		return 0;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* the put_* write into room reserved before */
static void put_varint(struct buf *b, __u64 v)
{
	while (v >= 0x80) {
		b->p[b->len++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (unsigned char)v;
}

static void put_bytes(struct buf *b, const void *s, size_t n)
{
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* what the next event of each site is coded against */
struct site_ctx {
	__u64 v[NF]; /* its last event's values */
	__u32 next; /* the site of the event after that one */
	bool seen;
};

struct coder {
	__u64 ts; /* of the last event */
	__u32 last; /* the last event's site: its values start a new site's */
	struct site_ctx *s; /* by site id; 0 is "no site" */
	size_t n, cap;
};

static int coder_init(struct coder *c)
{
	c->s = calloc(1, sizeof(*c->s));
	if (!c->s)
		return -ENOMEM;
	c->n = c->cap = 1;
	return 0;
}

/* room for the context of one more site */
static int coder_add_site(struct coder *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap * 2;
		struct site_ctx *s = realloc(c->s, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->s = s;
		c->cap = cap;
	}
	memset(&c->s[c->n++], 0, sizeof(c->s[0]));
	return 0;
}

static const __u64 *coder_ref(const struct coder *c, __u32 site)
{
	return c->s[c->s[site].seen ? site : c->last].v;
}

static __u32 coder_predict(const struct coder *c)
{
	return c->s[c->last].next;
}

static void coder_step(struct coder *c, const __u64 v[NF], __u64 ts)
{
	struct site_ctx *s = &c->s[v[F_SITE]];

	c->s[c->last].next = (__u32)v[F_SITE];
	memcpy(s->v, v, sizeof(s->v));
	s->seen = true;
	c->last = (__u32)v[F_SITE];
	c->ts = ts;
}

/* ------------------------------------------------------------------ */
/* writer */

struct pending {
	struct buf body; /* the block's items; the count goes in front */
	__u32 count;
};

struct str_slot {
	char *s; /* our copy; NULL: free */
	size_t len;
	__u32 id;
};

struct mt_recorder {
	int fd;
	int err; /* the first failed write: the record ends before it */
	__u64 bytes, events;
	struct pending meta, strs, sites, evs;
	size_t nmeta, meta_bytes;
	struct str_slot *tab; /* strings defined, by content */
	size_t tab_cap;
	__u32 nstr;
	__u32 *site_ids; /* file site id by the caller's site id; 0: none */
	size_t nsite_ids;
	struct coder c;
	char comm[MT_COMM_LEN]; /* the last comm and its id: no lookup */
	__u32 comm_id;
	struct buf out; /* a flush, written at once */
};

static __u64 hash_bytes(const char *s, size_t n)
{
	__u64 h = 14695981039346656037ULL; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static struct str_slot *tab_find(struct str_slot *tab, size_t cap,
				 const char *s, size_t n)
{
	size_t mask = cap - 1, i = hash_bytes(s, n) & mask;

	for (; tab[i].s; i = (i + 1) & mask)
		if (tab[i].len == n && !memcmp(tab[i].s, s, n))
			break;
	return &tab[i];
}

/* at most half full, so that a probe ends */
static int tab_grow(struct mt_recorder *w)
{
	size_t cap = w->tab_cap ? w->tab_cap * 2 : 256;
	struct str_slot *tab;

	if ((w->nstr + 1) * 2 <= w->tab_cap)
		return 0;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < w->tab_cap; i++)
		if (w->tab[i].s)
			*tab_find(tab, cap, w->tab[i].s, w->tab[i].len) =
				w->tab[i];
	free(w->tab);
	w->tab = tab;
	w->tab_cap = cap;
	return 0;
}

/* the id of n bytes at s, defined in the next strings block if new */
static int str_id(struct mt_recorder *w, const char *s, size_t n, __u32 *id)
{
	struct str_slot *slot;
	int err;

	if (n > MAX_STR)
		return -E2BIG;
	if (w->tab_cap) {
		slot = tab_find(w->tab, w->tab_cap, s, n);
		if (slot->s) {
			*id = slot->id;
			return 0;
		}
	}
	if (w->nstr >= MAX_STRINGS)
		return -ENOSPC;
	err = tab_grow(w);
	if (!err)
		err = buf_reserve(&w->strs.body, MAX_VARINT + n);
	if (err)
		return err;
	slot = tab_find(w->tab, w->tab_cap, s, n);
	slot->s = malloc(n + 1);
	if (!slot->s)
		return -ENOMEM;
	memcpy(slot->s, s, n);
	slot->s[n] = '\0';
	slot->len = n;
	slot->id = ++w->nstr;
	put_varint(&w->strs.body, n);
	put_bytes(&w->strs.body, s, n);
	w->strs.count++;
	*id = slot->id;
	return 0;
}

/* a C string's id; NULL is 0 */
static int cstr_id(struct mt_recorder *w, const char *s, __u32 *id)
{
	if (!s) {
		*id = 0;
		return 0;
	}
	return str_id(w, s, strnlen(s, MAX_STR + 1), id);
}

static int comm_id(struct mt_recorder *w, const char *comm, __u32 *id)
{
	char c[MT_COMM_LEN] = { 0 };
	size_t n = strnlen(comm, MT_COMM_LEN - 1);

	/* the bytes after the NUL are not the name: compare without them */
	memcpy(c, comm, n);
	if (n && memcmp(c, w->comm, sizeof(c))) {
		int err = str_id(w, c, n, &w->comm_id);

		if (err)
			return err;
		memcpy(w->comm, c, sizeof(c));
	}
	*id = n ? w->comm_id : 0;
	return 0;
}

/* the site's id in the file, defining it (and its strings) if new */
static int site_id(struct mt_recorder *w, const struct mt_site *site, __u32 *id)
{
	const char *strs[6];
	__u32 sid[6], fid[MT_MAX_FRAMES];
	int depth, err;
	struct buf *b = &w->sites.body;

	*id = 0;
	if (!site)
		return 0;
	if (site->id < w->nsite_ids && w->site_ids[site->id]) {
		*id = w->site_ids[site->id];
		return 0;
	}
	depth = site->depth > 0 ? site->depth : 0;
	if (depth > MT_MAX_FRAMES)
		return -EINVAL;
	if (site->id >= MAX_SITES || w->c.n > MAX_SITES)
		return -ENOSPC;
	if (site->id >= w->nsite_ids) {
		size_t n = w->nsite_ids ? w->nsite_ids : 256;
		__u32 *ids;

		while (n <= site->id)
			n *= 2;
		ids = realloc(w->site_ids, n * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		memset(ids + w->nsite_ids, 0,
		       (n - w->nsite_ids) * sizeof(*ids));
		w->site_ids = ids;
		w->nsite_ids = n;
	}
	strs[0] = site->event;
	strs[1] = site->caller;
	strs[2] = site->phase;
	strs[3] = site->module;
	strs[4] = site->node;
	strs[5] = site->detail;
	for (int i = 0; i < 6; i++) {
		err = cstr_id(w, strs[i], &sid[i]);
		if (err)
			return err;
	}
	for (int i = 0; i < depth; i++) {
		err = cstr_id(w, site->frames[i], &fid[i]);
		if (err)
			return err;
	}
	err = coder_add_site(&w->c);
	if (!err)
		err = buf_reserve(b, MAX_SITE_CODE);
	if (err)
		return err;
	put_varint(b, site->pid);
	for (int i = 0; i < 6; i++)
		put_varint(b, sid[i]);
	put_varint(b, (__u64)site->recompute | (__u64)site->truncated << 1);
	put_varint(b, (__u64)depth);
	for (int i = 0; i < depth; i++)
		put_varint(b, fid[i]);
	w->sites.count++;
	*id = w->site_ids[site->id] = (__u32)(w->c.n - 1);
	return 0;
}

static void encode(struct coder *c, struct buf *b, const __u64 v[NF], __u64 ts)
{
	const __u64 *ref = coder_ref(c, (__u32)v[F_SITE]);
	__u64 mask = v[F_SITE] != coder_predict(c);

	for (int i = 1; i < NF; i++)
		if (v[i] != ref[i])
			mask |= 1u << i;
	put_varint(b, mask);
	put_varint(b, zigzag(ts - c->ts));
	if (mask & 1)
		put_varint(b, v[F_SITE]);
	for (int i = 1; i < F_DD0; i++)
		if (mask & 1u << i)
			put_varint(b,
				   i == F_COMM ? v[i] : zigzag(v[i] - ref[i]));
	coder_step(c, v, ts);
}

static size_t pending_bytes(const struct mt_recorder *w)
{
	return w->meta.body.len + w->strs.body.len + w->sites.body.len +
	       w->evs.body.len;
}

static int write_all(struct mt_recorder *w, const void *p, size_t len)
{
	const unsigned char *q = p;

	while (len) {
		ssize_t n = write(w->fd, q, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* a block cut here reads as the end of the record */
			w->err = n < 0 ? -errno : -EIO;
			return w->err;
		}
		q += n;
		len -= (size_t)n;
		w->bytes += (__u64)n;
	}
	return 0;
}

/* block header and payload (count, then items) onto out */
static int put_block(struct buf *out, int type, __u32 count,
		     const struct buf *body)
{
	unsigned char *h;
	size_t start;
	int err = buf_reserve(out, BLOCK_HDR + MAX_VARINT + body->len);

	if (err)
		return err;
	h = out->p + out->len;
	out->len += BLOCK_HDR;
	start = out->len;
	put_varint(out, count);
	put_bytes(out, body->p, body->len);
	h[0] = (unsigned char)type;
	put_le(h + 1, out->len - start, 4);
	put_le(h + 5, crc(out->p + start, out->len - start), 4);
	put_le(h + 9, crc(h, 9), 4);
	return 0;
}

int mt_recorder_flush(struct mt_recorder *w)
{
	struct {
		int type;
		struct pending *p;
	} order[] = {
		/* strings before the sites, sites before the events */
		{ B_META, &w->meta },
		{ B_STRINGS, &w->strs },
		{ B_SITES, &w->sites },
		{ B_EVENTS, &w->evs },
	};
	int err;

	if (w->err)
		return w->err;
	w->out.len = 0;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!order[i].p->count)
			continue;
		err = put_block(&w->out, order[i].type, order[i].p->count,
				&order[i].p->body);
		if (err)
			return err;
	}
	if (!w->out.len)
		return 0;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		order[i].p->count = 0;
		order[i].p->body.len = 0;
	}
	return write_all(w, w->out.p, w->out.len);
}

struct mt_recorder *mt_recorder_open(const char *path, char *err, size_t errlen)
{
	struct mt_recorder *w = calloc(1, sizeof(*w));
	unsigned char h[FILE_HDR];

	if (!w || coder_init(&w->c)) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (w->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path,
			 strerror(errno));
		free(w->c.s);
		free(w);
		return NULL;
	}
	memcpy(h, MAGIC, MAGIC_LEN);
	put_le(h + 8, MT_REC_VERSION, 2);
	put_le(h + 10, 0, 2);
	put_le(h + 12, crc(h, 12), 4);
	if (write_all(w, h, sizeof(h))) {
		snprintf(err, errlen, "write %s: %s", path, strerror(-w->err));
		/* the write's error is the one to tell */
		(void)close(w->fd);
		free(w->c.s);
		free(w);
		return NULL;
	}
	return w;
}

int mt_recorder_meta(struct mt_recorder *w, const char *key, const char *value)
{
	size_t kl, vl;
	int err;

	if (!key || !value)
		return -EINVAL;
	if (w->err)
		return w->err;
	kl = strnlen(key, MAX_STR + 1);
	vl = strnlen(value, MAX_STR + 1);
	if (kl > MAX_STR || vl > MAX_STR)
		return -E2BIG;
	if (w->nmeta >= MAX_META || w->meta_bytes + kl + vl > MAX_META_BYTES)
		return -ENOSPC;
	err = buf_reserve(&w->meta.body, 2 * MAX_VARINT + kl + vl);
	if (err)
		return err;
	put_varint(&w->meta.body, kl);
	put_bytes(&w->meta.body, key, kl);
	put_varint(&w->meta.body, vl);
	put_bytes(&w->meta.body, value, vl);
	w->meta.count++;
	w->nmeta++;
	w->meta_bytes += kl + vl;
	return 0;
}

int mt_recorder_event(struct mt_recorder *w, const struct mt_event *ev,
		      bool default_dev0, const struct mt_site *site)
{
	__u64 v[NF];
	__u32 sid, cid;
	int err;

	if (w->err)
		return w->err;
	err = site_id(w, site, &sid);
	if (!err)
		err = comm_id(w, ev->comm, &cid);
	if (!err)
		err = buf_reserve(&w->evs.body, MAX_EVENT_CODE);
	if (err)
		return err;
	v[F_SITE] = sid;
	for (int i = 0; i < MT_NARGS; i++)
		v[i < 4 ? F_A0 + i : F_A4] = ev->args[i];
	v[F_CPU] = ev->cpu;
	v[F_TID] = ev->tid;
	v[F_OUT] = ev->out;
	v[F_RET] = (__u64)ev->ret;
	v[F_PID] = ev->pid;
	v[F_COMM] = cid;
	v[F_KIND] = ev->kind;
	v[F_FLAGS] = ev->flags;
	v[F_DEV] = (__u32)ev->dev;
	v[F_DD0] = default_dev0;
	encode(&w->c, &w->evs.body, v, ev->ts);
	w->evs.count++;
	w->events++;
	if (pending_bytes(w) >= FLUSH_AT)
		return mt_recorder_flush(w);
	return 0;
}

__u64 mt_recorder_bytes(const struct mt_recorder *w)
{
	return w->bytes;
}

__u64 mt_recorder_events(const struct mt_recorder *w)
{
	return w->events;
}

static int write_end(struct mt_recorder *w, const struct mt_rec_end *end)
{
	struct buf body = { 0 };
	__u64 bits;
	int err = buf_reserve(&body, 8 + 2 * MAX_VARINT);

	if (err)
		return err;
	memcpy(&bits, &end->seconds, sizeof(bits));
	put_le(body.p, bits, 8);
	body.len = 8;
	put_varint(&body, end->lost);
	put_varint(&body, end->stacks_lost);
	w->out.len = 0;
	err = put_block(&w->out, B_END, 1, &body);
	free(body.p);
	if (err)
		return err;
	return write_all(w, w->out.p, w->out.len);
}

int mt_recorder_close(struct mt_recorder *w, const struct mt_rec_end *end)
{
	int err = mt_recorder_flush(w);

	if (!err)
		err = write_end(w, end);
	if (close(w->fd) && !err)
		err = -errno;
	for (size_t i = 0; i < w->tab_cap; i++)
		free(w->tab[i].s);
	free(w->tab);
	free(w->site_ids);
	free(w->c.s);
	free(w->meta.body.p);
	free(w->strs.body.p);
	free(w->sites.body.p);
	free(w->evs.body.p);
	free(w->out.p);
	free(w);
	return err;
}

/* ------------------------------------------------------------------ */
/* reader */

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
		if (r->meta_bytes > MAX_META_BYTES)
			return fail(r, "metadata over %u bytes",
				    MAX_META_BYTES);
	}
	return 0;
}

static int read_strings(struct mt_reader *r, struct cur *c)
{
	__u64 n;

	if (!get_count(c, 1, &n) || r->nstr - 1 + n > MAX_STRINGS)
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
	if (!get_count(c, 8, &n) || r->c.n - 1 + n > MAX_SITES)
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
		    !get_strid(r, c, &key.detail) || !get_max(c, 3, &bits) ||
		    !get_max(c, MT_MAX_FRAMES, &depth))
			return fail(r, "bad site %zu", r->c.n);
		for (__u64 d = 0; d < depth; d++)
			if (!get_strid(r, c, &frames[d]))
				return fail(r, "bad frame %llu of site %zu",
					    (unsigned long long)d, r->c.n);
		key.pid = (__u32)pid;
		key.recompute = bits & 1;
		key.truncated = bits & 2;
		key.depth = (int)depth;
		if (coder_add_site(&r->c))
			return fail(r, "out of memory");
		r->site[r->c.n - 1] = mt_sites_get(r->sites, &key, &is_new);
	}
	return 0;
}

static int read_end(struct mt_reader *r, struct cur *c)
{
	__u64 n, bits;

	if (!get_varint(c, &n) || n != 1 || cur_left(c) < 8)
		return fail(r, "bad end block");
	bits = get_le(c->p + c->pos, 8);
	c->pos += 8;
	memcpy(&r->end.seconds, &bits, sizeof(bits));
	if (!get_varint(c, &r->end.lost) || !get_varint(c, &r->end.stacks_lost))
		return fail(r, "bad end block");
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
	coder_step(&r->c, v, ts);
	r->pos = c.pos;
	/* field by field: a memset of the whole item costs more per event */
	_Static_assert(sizeof(*ev) == 144,
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
	ev->stack_id = ev->node = ev->node_vt = ev->node_stack = 0;
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
	if (!r || coder_init(&r->c) ||
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
