/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the writer and the reader of the record share (docs/FORMAT.md): the
 * format's constants and limits, a growable byte buffer, the checksum, and
 * the event coding (struct coder). Change one side, change both, and
 * MT_REC_VERSION. Internal to record/.
 */
#ifndef __CODER_H
#define __CODER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include <zlib.h>
#include "lib/limits.h"

#define MAGIC "MTBPFREC"
#define MAGIC_LEN 8
#define FILE_HDR 16 /* magic, u16 version, u16 flags, u32 crc */
#define BLOCK_HDR 13 /* u8 type, u32 length, u32 payload crc, u32 own crc */

/* what the writer never exceeds and the reader refuses beyond */
#define MAX_STR 65536 /* bytes of one string */
#define MAX_META 4096
#define MAX_META_BYTES (1u << 20)
#define MAX_BLOCK (16u << 20) /* payload bytes */
#define MAX_VARINT 10
/* a site's flag bits (docs/FORMAT.md); other bits must be 0 */
#define SITE_RECOMPUTE 1u
#define SITE_TRUNCATED 2u

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

/*
 * The helpers below run for every block or event: static inline, so that
 * they stay inlined as they were when all of this was one file.
 */
static inline __u32 crc(const void *p, size_t len)
{
	return (__u32)crc32(0, p, (uInt)len);
}

struct buf {
	unsigned char *p;
	size_t len, cap;
};

/* room for more bytes after b->len; 0 or -ENOMEM */
static inline int buf_reserve(struct buf *b, size_t more)
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

/* 0 or -ENOMEM */
int mt_rec_coder_init(struct coder *c);
/* room for the context of one more site; 0 or -ENOMEM */
int mt_rec_coder_add_site(struct coder *c);

static inline const __u64 *coder_ref(const struct coder *c, __u32 site)
{
	return c->s[c->s[site].seen ? site : c->last].v;
}

static inline __u32 coder_predict(const struct coder *c)
{
	return c->s[c->last].next;
}

static inline void coder_step(struct coder *c, const __u64 v[NF], __u64 ts)
{
	struct site_ctx *s = &c->s[v[F_SITE]];

	c->s[c->last].next = (__u32)v[F_SITE];
	memcpy(s->v, v, sizeof(s->v));
	s->seen = true;
	c->last = (__u32)v[F_SITE];
	c->ts = ts;
}

#endif /* __CODER_H */
