// SPDX-License-Identifier: GPL-2.0
/*
 * The record's writer: events, their sites and strings, coded and written
 * as checksummed blocks (docs/FORMAT.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record/coder.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "record/record.h"
#include "lib/outfile.h"

#define FLUSH_AT (64u << 10) /* pending bytes that make a flush */

/* an event's site, its mask, its ts and its values: at most this much */
#define MAX_EVENT_CODE ((2 + NF) * MAX_VARINT)
/* a site: pid, five strings, bits, depth, frames */
#define MAX_SITE_CODE ((9 + MT_MAX_FRAMES) * MAX_VARINT)

static void put_le(unsigned char *p, __u64 v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* signed deltas as small unsigned numbers: 0, -1, 1, -2, ... */
static __u64 zigzag(__u64 d)
{
	return (d << 1) ^ (0 - (d >> 63));
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

/* a string looked for in the table: its bytes */
struct str_key {
	const char *s;
	size_t len;
};

static bool str_used(const void *tab, size_t i)
{
	return ((const struct str_slot *)tab)[i].s;
}

static bool str_match(const void *tab, size_t i, const void *key)
{
	const struct str_slot *e = &((const struct str_slot *)tab)[i];
	const struct str_key *k = key;

	return e->len == k->len && !memcmp(e->s, k->s, k->len);
}

/* the slot of n bytes at s, or the free slot where they would go */
static struct str_slot *tab_find(struct str_slot *tab, size_t cap,
				 const char *s, size_t n)
{
	const struct str_key k = { s, n };

	/* the table is at most half full: the probe finds a slot */
	return &tab[mt_probe(tab, cap - 1, mt_fnv1a(s, n), str_used, str_match,
			     &k)];
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
	if (w->nstr >= MT_REC_MAX_STRINGS)
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
	if (site->id >= MT_REC_MAX_SITES || w->c.n > MT_REC_MAX_SITES)
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
	err = mt_rec_coder_add_site(&w->c);
	if (!err)
		err = buf_reserve(b, MAX_SITE_CODE);
	if (err)
		return err;
	put_varint(b, site->pid);
	for (int i = 0; i < 6; i++)
		put_varint(b, sid[i]);
	put_varint(b, (site->recompute ? SITE_RECOMPUTE : 0) |
			      (site->truncated ? SITE_TRUNCATED : 0));
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

struct mt_recorder *mt_recorder_open_fd(int fd, const char *path, char *err,
					size_t errlen)
{
	struct mt_recorder *w = calloc(1, sizeof(*w));
	unsigned char h[FILE_HDR];

	if (!w || mt_rec_coder_init(&w->c)) {
		free(w);
		(void)close(fd);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->fd = fd;
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

struct mt_recorder *mt_recorder_open(const char *path, char *err, size_t errlen)
{
	char why[512];
	int fd = mt_create_output(path, MT_OUT_PRIVATE, why, sizeof(why));

	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s", why);
		return NULL;
	}
	return mt_recorder_open_fd(fd, path, err, errlen);
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
	int err = buf_reserve(&body, 8 + 5 * MAX_VARINT);

	if (err)
		return err;
	memcpy(&bits, &end->seconds, sizeof(bits));
	put_le(body.p, bits, 8);
	body.len = 8;
	put_varint(&body, end->lost);
	put_varint(&body, end->unseen.stacks_lost);
	/* later than the rest: older records end before them */
	put_varint(&body, end->unseen.stacks_early);
	put_varint(&body, end->unseen.nodes);
	put_varint(&body, end->unseen.node_bytes);
	put_varint(&body, end->unseen.children);
	put_varint(&body, end->unseen.first_child);
	put_varint(&body, end->unseen.stacks_unread);
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
