// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "export/pickle.h"
#include "lib/escape.h"

/* protocol 2 opcodes (Lib/pickletools.py) */
#define OP_PROTO 0x80
#define OP_STOP '.'
#define OP_MARK '('
#define OP_EMPTY_DICT '}'
#define OP_EMPTY_LIST ']'
#define OP_SETITEMS 'u'
#define OP_APPENDS 'e'
#define OP_BINUNICODE 'X'
#define OP_BININT1 'K'
#define OP_BININT2 'M'
#define OP_BININT 'J'
#define OP_LONG1 0x8a
#define OP_NEWTRUE 0x88
#define OP_NEWFALSE 0x89
#define OP_NONE 'N'
#define OP_BINPUT 'q'
#define OP_LONG_BINPUT 'r'
#define OP_BINGET 'h'
#define OP_LONG_BINGET 'j'

/*
 * Items between a MARK and its APPENDS/SETITEMS, as Python's own pickler
 * batches them: memory_viz's unpickler spreads them as call arguments,
 * which a JS engine limits.
 */
#define BATCH 1000

static void put(struct mt_pickle *p, const void *buf, size_t n)
{
	if (!p->bad && fwrite(buf, 1, n, p->f) != n)
		p->bad = true;
}

static void put1(struct mt_pickle *p, unsigned char c)
{
	put(p, &c, 1);
}

/* n bytes of v, little endian */
static void put_le(struct mt_pickle *p, __u64 v, int n)
{
	unsigned char b[8];

	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(p, b, (size_t)n);
}

static void close_batch(struct mt_pickle *p)
{
	put1(p, p->dict[p->depth - 1] ? OP_SETITEMS : OP_APPENDS);
}

/* before each value: start a new batch in a full container */
static void begin_value(struct mt_pickle *p)
{
	unsigned int *n;

	if (!p->depth)
		return;
	n = &p->n[p->depth - 1];
	if (p->dict[p->depth - 1] ? *n < 2 * BATCH || *n % 2 : *n < BATCH)
		return;
	close_batch(p);
	put1(p, OP_MARK);
	*n = 0;
}

static void end_value(struct mt_pickle *p)
{
	if (p->depth)
		p->n[p->depth - 1]++;
}

void mt_pk_start(struct mt_pickle *p, FILE *f)
{
	*p = (struct mt_pickle){ .f = f };
	put1(p, OP_PROTO);
	put1(p, 2);
}

static void open_container(struct mt_pickle *p, bool dict)
{
	begin_value(p);
	if (p->depth == MT_PK_DEPTH) {
		p->misuse = true;
		return;
	}
	put1(p, dict ? OP_EMPTY_DICT : OP_EMPTY_LIST);
	put1(p, OP_MARK);
	p->dict[p->depth] = dict;
	p->n[p->depth] = 0;
	p->depth++;
}

void mt_pk_dict(struct mt_pickle *p)
{
	open_container(p, true);
}

void mt_pk_list(struct mt_pickle *p)
{
	open_container(p, false);
}

void mt_pk_end(struct mt_pickle *p)
{
	/* an odd count is a key without its value */
	if (!p->depth || (p->dict[p->depth - 1] && p->n[p->depth - 1] % 2)) {
		p->misuse = true;
		return;
	}
	close_batch(p);
	p->depth--;
	end_value(p);
}

void mt_pk_strn(struct mt_pickle *p, const char *s, size_t n)
{
	begin_value(p);
	if (n > 0xffffffffu) {
		p->misuse = true;
		return;
	}
	put1(p, OP_BINUNICODE);
	put_le(p, n, 4);
	/*
	 * Python refuses a pickle whose str is not UTF-8, and a library's
	 * file name need not be: its bytes above 0x7f as '?', as jsonw.c does
	 */
	if (mt_utf8_valid(s, n))
		put(p, s, n);
	else
		for (size_t i = 0; i < n; i++)
			put1(p, (unsigned char)s[i] < 0x80 ? s[i] : '?');
	end_value(p);
}

void mt_pk_str(struct mt_pickle *p, const char *s)
{
	mt_pk_strn(p, s, strlen(s));
}

/* the fewest bytes whose sign extension gives v back */
static int long1_len(__s64 v)
{
	int n = 1;

	while (n < 8) {
		__s64 lo = -((__s64)1 << (8 * n - 1));

		if (v >= lo && v < -lo)
			break;
		n++;
	}
	return n;
}

void mt_pk_int(struct mt_pickle *p, __s64 v)
{
	int n;

	begin_value(p);
	if (v >= 0 && v < 0x100) {
		put1(p, OP_BININT1);
		put_le(p, (__u64)v, 1);
	} else if (v >= 0 && v < 0x10000) {
		put1(p, OP_BININT2);
		put_le(p, (__u64)v, 2);
	} else if (v >= -0x80000000LL && v <= 0x7fffffffLL) {
		put1(p, OP_BININT);
		put_le(p, (__u64)v, 4);
	} else {
		n = long1_len(v);
		put1(p, OP_LONG1);
		put1(p, (unsigned char)n);
		put_le(p, (__u64)v, n);
	}
	end_value(p);
}

void mt_pk_uint(struct mt_pickle *p, __u64 v)
{
	if (v <= (__u64)INT64_MAX) {
		mt_pk_int(p, (__s64)v);
		return;
	}
	/* the top bit set: a ninth, zero byte keeps it positive */
	begin_value(p);
	put1(p, OP_LONG1);
	put1(p, 9);
	put_le(p, v, 8);
	put1(p, 0);
	end_value(p);
}

void mt_pk_bool(struct mt_pickle *p, bool v)
{
	begin_value(p);
	put1(p, v ? OP_NEWTRUE : OP_NEWFALSE);
	end_value(p);
}

void mt_pk_none(struct mt_pickle *p)
{
	begin_value(p);
	put1(p, OP_NONE);
	end_value(p);
}

__u32 mt_pk_put(struct mt_pickle *p)
{
	__u32 i = p->memo++;

	if (i < 0x100) {
		put1(p, OP_BINPUT);
		put_le(p, i, 1);
	} else {
		put1(p, OP_LONG_BINPUT);
		put_le(p, i, 4);
	}
	return i;
}

void mt_pk_get(struct mt_pickle *p, __u32 i)
{
	begin_value(p);
	if (i < 0x100) {
		put1(p, OP_BINGET);
		put_le(p, i, 1);
	} else {
		put1(p, OP_LONG_BINGET);
		put_le(p, i, 4);
	}
	end_value(p);
}

int mt_pk_finish(struct mt_pickle *p)
{
	if (p->depth || p->misuse)
		return -EINVAL;
	put1(p, OP_STOP);
	if (p->bad || ferror(p->f))
		return -EIO;
	return 0;
}
