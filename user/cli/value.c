// SPDX-License-Identifier: GPL-2.0
/*
 * The grammar of option values, one for every option: 1M means one thing
 * to --min-size, --size and --device-mem alike, and 500ms to -d and
 * --watch alike.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli/value.h"
#include "lib/err.h"

/* the units of a duration, in seconds; "": none, seconds */
static const struct {
	const char *name;
	double secs;
} units[] = { { "", 1 },      { "s", 1 },  { "ms", 1e-3 },
	      { "us", 1e-6 }, { "m", 60 }, { "h", 3600 } };

void mt_bad(const char *what, const char *arg)
{
	mt_err("invalid %s: '%s' (see --help)", what, arg);
	exit(2);
}

/* a filter option that takes one value, given twice: which one was meant? */
void mt_once(bool given, const char *opt)
{
	if (!given)
		return;
	mt_err("%s given twice: give it once", opt);
	exit(2);
}

unsigned long long mt_parse_ull(const char *what, const char *arg,
				unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > max)
		mt_bad(what, arg);
	return v;
}

double mt_parse_double(const char *what, const char *arg, double min,
		       double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= min && v <= max))
		mt_bad(what, arg);
	return v;
}

/*
 * The number at the start of arg, its unit suffix left in *suffix. A
 * number is digits with an optional fraction and exponent: no sign, no
 * blank, no inf, nan or hex, which strtod alone would take. One of digits
 * only is read exactly (*exact), past the 53 bits of a double. Returns
 * false if arg does not start with one.
 */
static bool parse_number(const char *arg, double *v, unsigned long long *exact,
			 bool *is_exact, const char **suffix)
{
	size_t digits = strspn(arg, "0123456789");
	char *end;

	if (!digits && arg[0] != '.')
		return false;
	errno = 0;
	*v = strtod(arg, &end);
	if (errno || end == arg ||
	    strspn(arg, "0123456789.eE+-") < (size_t)(end - arg))
		return false;
	*is_exact = (size_t)(end - arg) == digits;
	if (*is_exact) {
		errno = 0;
		*exact = strtoull(arg, NULL, 10);
		if (errno)
			return false;
	}
	*suffix = end;
	return true;
}

unsigned long long mt_parse_size(const char *what, const char *arg,
				 unsigned long long unit,
				 unsigned long long min)
{
	static const char *const prefix = "KMGT";
	unsigned long long exact = 0, scale = unit;
	const char *sfx, *p;
	bool is_exact;
	double v;

	if (!parse_number(arg, &v, &exact, &is_exact, &sfx))
		mt_bad(what, arg);
	if (!strcasecmp(sfx, "B")) {
		scale = 1;
	} else if (*sfx) {
		p = strchr(prefix, toupper((unsigned char)sfx[0]));
		if (!p || !sfx[0] ||
		    (sfx[1] && strcasecmp(sfx + 1, "B") &&
		     strcasecmp(sfx + 1, "iB")))
			mt_bad(what, arg);
		scale = 1ULL << (10 * (p - prefix + 1));
	}
	if (is_exact) {
		if (exact > ULLONG_MAX / scale || exact * scale < min)
			mt_bad(what, arg);
		return exact * scale;
	}
	/* a fraction: 1.5M is 1572864 bytes, 0.5 (of a byte) is nothing */
	v *= (double)scale;
	if (!(v >= (double)min && v < 18446744073709551616.0) ||
	    v != (double)(unsigned long long)v)
		mt_bad(what, arg);
	return (unsigned long long)v;
}

/* the seconds of one unit of sfx; 0 where sfx is no duration's unit */
static double unit_secs(const char *sfx)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(sfx, units[i].name))
			return units[i].secs;
	return 0;
}

double mt_parse_duration(const char *what, const char *arg, double min,
			 double max)
{
	unsigned long long exact;
	const char *sfx;
	bool is_exact;
	double v, secs;

	if (!parse_number(arg, &v, &exact, &is_exact, &sfx))
		mt_bad(what, arg);
	secs = unit_secs(sfx);
	if (!secs)
		mt_bad(what, arg);
	v *= secs;
	/* non-finite: refused, as 1e400 overflows to inf */
	if (!(v >= min && v <= max))
		mt_bad(what, arg);
	return v;
}

bool mt_is_duration(const char *arg)
{
	unsigned long long exact;
	const char *sfx;
	bool is_exact;
	double v;

	return parse_number(arg, &v, &exact, &is_exact, &sfx) &&
	       unit_secs(sfx) != 0;
}
