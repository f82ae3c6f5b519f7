// SPDX-License-Identifier: GPL-2.0
/*
 * One parser for every option: it reads the argument as the entry's kind
 * says and stores it in the field the entry is bound to.
 */
#include <string.h>
#include "cli/opt.h"
#include "cli/value.h"

/* an unsigned value into a field of width bytes (int, unsigned, size_t) */
static void store_unsigned(void *field, size_t width, unsigned long long v)
{
	unsigned int narrow = (unsigned int)v;

	/* through memcpy: the field may be an int, not an unsigned int */
	if (width == sizeof(narrow))
		memcpy(field, &narrow, sizeof(narrow));
	else
		memcpy(field, &v, sizeof(v));
}

void mt_opt_apply(const struct mt_opt *opt, struct mt_options *o, char *arg)
{
	char *field = (char *)o + opt->off;
	unsigned long long v;
	double d;

	switch (opt->kind) {
	case MT_OPT_FLAG:
		*(bool *)field = true;
		break;
	case MT_OPT_COUNT:
		(*(int *)field)++;
		break;
	case MT_OPT_STRING:
		*(const char **)field = arg;
		break;
	case MT_OPT_SIZE:
		v = mt_parse_size(opt->what, arg, opt->unit, opt->min);
		memcpy(field, &v, sizeof(v));
		break;
	case MT_OPT_DURATION:
		d = mt_parse_duration(opt->what, arg, opt->lo, opt->hi);
		memcpy(field, &d, sizeof(d));
		break;
	case MT_OPT_DOUBLE:
		d = mt_parse_double(opt->what, arg, opt->lo, opt->hi);
		memcpy(field, &d, sizeof(d));
		break;
	case MT_OPT_UNSIGNED:
		v = mt_parse_ull(opt->what, arg, opt->max);
		if (opt->nonzero && !v)
			mt_bad(opt->what, arg);
		store_unsigned(field, opt->width, v);
		break;
	case MT_OPT_CALL:
		opt->call(o, arg);
		break;
	case MT_OPT_END:
		break;
	}
}
