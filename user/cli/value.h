/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The grammar of option values: numbers, sizes (1M, 80GiB), durations
 * (500ms, 1m), and the one-line errors for a value that is none of them.
 * Every parser here either returns the value or prints one line and exits
 * with status 2, the exit code for bad usage: an option's value is wrong
 * only at the command line, so there is nothing for a caller to undo.
 */
#ifndef __CLI_VALUE_H
#define __CLI_VALUE_H

#include <stdbool.h>

/*
 * -d and --flight TIME, in seconds: a microsecond to three years. Inf, NaN
 * and the like are refused: the trace's end is kept in nanoseconds in 64
 * bits, and a value past that wrapped around to an end 10 ms after the
 * start.
 */
#define MT_DURATION_MIN 1e-6
#define MT_DURATION_MAX 1e8

/* "invalid WHAT: 'ARG' (see --help)", then exit 2 */
void mt_bad(const char *what, const char *arg) __attribute__((noreturn));

/* an option that takes one value, given twice: exit 2 when given is set */
void mt_once(bool given, const char *opt);

/* a decimal number of at most max, no sign */
unsigned long long mt_parse_ull(const char *what, const char *arg,
				unsigned long long max);

/* a number in [min, max], as strtod reads it */
double mt_parse_double(const char *what, const char *arg, double min,
		       double max);

/*
 * A size: a number, then B, K, KB, KiB, M... up to TiB in any case (all
 * powers of 1024, as PyTorch and nvidia-smi count), or no suffix: unit
 * bytes each (1 for the options in bytes, 1 MiB for --ringbuf-mb). Returns
 * bytes, at least min.
 */
unsigned long long mt_parse_size(const char *what, const char *arg,
				 unsigned long long unit,
				 unsigned long long min);

/*
 * A duration: a number, then us, ms, s, m (minutes) or h, or no suffix for
 * seconds. Returns seconds within [min, max].
 */
double mt_parse_duration(const char *what, const char *arg, double min,
			 double max);

/*
 * Whether arg is a number with a duration's unit or none (10m, 600), as
 * opposed to a size (512MiB) or nothing valid. Prints nothing, exits never.
 */
bool mt_is_duration(const char *arg);

#endif /* __CLI_VALUE_H */
