/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An option of the command line as one table entry, as perf's struct
 * option: what argp shows and matches (name, key, argument, help), the
 * field of struct mt_options it sets, bound by offsetof, and how its value
 * is read (its kind). One parser applies any entry by its kind, so that an
 * option is declared once, beside the command that takes it.
 */
#ifndef __CLI_OPT_H
#define __CLI_OPT_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include "cli/options.h"

enum mt_opt_kind {
	MT_OPT_END, /* the entry that ends a table */
	MT_OPT_FLAG, /* a bool, set true */
	MT_OPT_COUNT, /* an int, one more each time (-v -v) */
	MT_OPT_STRING, /* a const char *, the argument as it is */
	MT_OPT_SIZE, /* an unsigned long long: mt_parse_size(unit, min) */
	MT_OPT_DURATION, /* a double, seconds: mt_parse_duration(lo, hi) */
	MT_OPT_UNSIGNED, /* an int, unsigned int or size_t of at most max */
	MT_OPT_DOUBLE, /* a double in [lo, hi] */
	MT_OPT_CALL, /* whatever call does: values that need code */
};

/*
 * What an option of kind MT_OPT_CALL does with its argument, which it may
 * cut up (argv is ours). Returns nothing: it exits 2 after one line when
 * the argument is bad, as the value parsers do (cli/value.h).
 */
typedef void (*mt_opt_fn)(struct mt_options *o, char *arg);

struct mt_opt {
	struct argp_option arg; /* name, key, argument and help, for argp */
	enum mt_opt_kind kind;
	size_t off; /* of the field it sets in struct mt_options */
	size_t width; /* MT_OPT_UNSIGNED: the field's sizeof */
	const char *what; /* the value's name in "invalid WHAT: ..." */
	unsigned long long unit, min, max; /* SIZE: unit, min; UNSIGNED: max */
	double lo, hi; /* DURATION, DOUBLE: the range */
	bool nonzero; /* UNSIGNED: 0 refused too */
	mt_opt_fn call; /* MT_OPT_CALL */
};

/* the options --help lists under one header, ended by MT_OPT_END_ENTRY */
struct mt_opt_group {
	const char *header; /* e.g. "What to trace:" */
	const struct mt_opt *opts;
};

/*
 * offsetof field f of struct mt_options, which must be of type T: an
 * entry bound to a field of another type does not compile, so the parser
 * never writes a field as what it is not.
 */
#define MT_FIELD(f, T)                    \
	(offsetof(struct mt_options, f) + \
	 0 * sizeof(_Generic(((struct mt_options *)0)->f, T : 1)))

#define MT_ARGP(name, key, arg, doc)      \
	{                                 \
		name, key, arg, 0, doc, 0 \
	}

#define MT_OPT_FLAG(name, key, doc, f)                                     \
	{                                                                  \
		.arg = MT_ARGP(name, key, NULL, doc), .kind = MT_OPT_FLAG, \
		.off = MT_FIELD(f, bool)                                   \
	}

#define MT_OPT_COUNT(name, key, doc, f)                                     \
	{                                                                   \
		.arg = MT_ARGP(name, key, NULL, doc), .kind = MT_OPT_COUNT, \
		.off = MT_FIELD(f, int)                                     \
	}

#define MT_OPT_STRING(name, key, arg_, doc, f)                               \
	{                                                                    \
		.arg = MT_ARGP(name, key, arg_, doc), .kind = MT_OPT_STRING, \
		.off = MT_FIELD(f, const char *)                             \
	}

#define MT_OPT_SIZE(name, key, arg_, doc, f, what_, unit_, min_)           \
	{                                                                  \
		.arg = MT_ARGP(name, key, arg_, doc), .kind = MT_OPT_SIZE, \
		.off = MT_FIELD(f, unsigned long long), .what = what_,     \
		.unit = unit_, .min = min_                                 \
	}

#define MT_OPT_DURATION(name, key, arg_, doc, f, what_, lo_, hi_)              \
	{                                                                      \
		.arg = MT_ARGP(name, key, arg_, doc), .kind = MT_OPT_DURATION, \
		.off = MT_FIELD(f, double), .what = what_, .lo = lo_,          \
		.hi = hi_                                                      \
	}

#define MT_OPT_DOUBLE(name, key, arg_, doc, f, what_, lo_, hi_)              \
	{                                                                    \
		.arg = MT_ARGP(name, key, arg_, doc), .kind = MT_OPT_DOUBLE, \
		.off = MT_FIELD(f, double), .what = what_, .lo = lo_,        \
		.hi = hi_                                                    \
	}

/* int, unsigned int or size_t; nonzero_: 0 is refused as "invalid WHAT" */
#define MT_OPT_UNSIGNED(name, key, arg_, doc, f, what_, max_, nonzero_)        \
	{                                                                      \
		.arg = MT_ARGP(name, key, arg_, doc), .kind = MT_OPT_UNSIGNED, \
		.off = offsetof(struct mt_options, f),                         \
		.width = sizeof(_Generic(((struct mt_options *)0)->f, int : 0, \
					 unsigned int : 0U, size_t : 0UL)),    \
		.what = what_, .max = max_, .nonzero = nonzero_                \
	}

#define MT_OPT_CALL(name, key, arg_, doc, fn)                              \
	{                                                                  \
		.arg = MT_ARGP(name, key, arg_, doc), .kind = MT_OPT_CALL, \
		.call = fn                                                 \
	}

#define MT_OPT_END_ENTRY           \
	{                          \
		.kind = MT_OPT_END \
	}

/*
 * Apply opt to *o with its argument arg (NULL for a flag or a count).
 * Returns nothing: a bad argument is one line and exit 2 (cli/value.h).
 */
void mt_opt_apply(const struct mt_opt *opt, struct mt_options *o, char *arg);

#endif /* __CLI_OPT_H */
