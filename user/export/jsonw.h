/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the JSON exporters share: a yajl generator that streams into a FILE
 * and keeps its first failure, so that a writer calls on without checking
 * each value and asks once, at the end, what went wrong (mt_jw_error).
 */
#ifndef __JSONW_H
#define __JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include <yajl/yajl_gen.h>

struct mt_jw {
	yajl_gen g;
	FILE *f;
	const char *what; /* "export json", for messages */
	yajl_gen_status st; /* the first failure; later calls do nothing */
	int io; /* -errno of the first failed write */
};

/*
 * a generator that checks UTF-8; -ENOMEM, with err, if none. Its errors
 * are buffers: they are an exporter's open or close message (export.h).
 */
int mt_jw_open(struct mt_jw *w, FILE *f, const char *what, char *err,
	       size_t errlen);
/* the generator; what it had buffered is not written */
void mt_jw_free(struct mt_jw *w);

/* a string; bytes that are not UTF-8 (a file name, a comm) become '?' */
void mt_jw_strn(struct mt_jw *w, const char *s, size_t n);
void mt_jw_str(struct mt_jw *w, const char *s);
void mt_jw_int(struct mt_jw *w, long long v);
void mt_jw_bool(struct mt_jw *w, bool v);
/* null: a value that is not known */
void mt_jw_null(struct mt_jw *w);
/* num: the digits of a JSON number, as they are to be written */
void mt_jw_number(struct mt_jw *w, const char *num, size_t n);
void mt_jw_u64(struct mt_jw *w, __u64 v);
/* v's digits in base 10 or 16, written to end backwards: their count */
size_t mt_jw_digits(char *end, __u64 v, unsigned int base);
/* v as a "0x..." string */
void mt_jw_hex(struct mt_jw *w, __u64 v);
/* '{', '}', '[' or ']' */
void mt_jw_open_close(struct mt_jw *w, char c);

/* a key and its value */
void mt_jw_key_str(struct mt_jw *w, const char *key, const char *value);
void mt_jw_key_u64(struct mt_jw *w, const char *key, __u64 value);

/* the buffered output into the file */
void mt_jw_flush(struct mt_jw *w);

/* the first failure, with context; 0 if none */
int mt_jw_error(const struct mt_jw *w, char *err, size_t errlen);

#endif /* __JSONW_H */
