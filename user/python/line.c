// SPDX-License-Identifier: GPL-2.0
#include "python/line.h"

/* 3.10: the line delta that means "no line" */
#define NO_LINE_310 (-128)

/*
 * line + delta as CPython computes it, in an int wrapping on overflow (it
 * builds with -fwrapv): a table from the target can hold any deltas, and
 * their sum must not be undefined behaviour here.
 */
static int add_line(int line, int delta)
{
	return (int)((unsigned int)line + (unsigned int)delta);
}

int mt_pyline_310(const __u8 *tab, size_t len, int firstlineno, __s64 addrq)
{
	__s64 end = 0;
	int line = firstlineno;

	if (addrq < 0)
		return firstlineno;
	/* every pair is its own range, even when its line delta is 0 */
	for (size_t i = 0; i + 1 < len; i += 2) {
		__s64 start = end;
		int ldelta = (__s8)tab[i + 1];

		end += tab[i];
		if (ldelta != NO_LINE_310)
			line = add_line(line, ldelta);
		if (addrq >= start && addrq < end)
			return ldelta == NO_LINE_310 ? -1 : line;
	}
	return -1;
}

/*
 * 3.11+ location table: an entry's first byte is 1 cccc lll (code, length
 * in code units - 1); the bytes after it have bit 7 clear.
 */
#define LOC_START 0x80
#define LOC_CODE(b) (((b) >> 3) & 0xf)
#define LOC_UNITS(b) (((b)&0x7) + 1)
#define CODE_UNIT_BYTES 2 /* sizeof(_Py_CODEUNIT) */
#define LOC_ONE_LINE0 10
#define LOC_ONE_LINE2 12
#define LOC_NO_COLUMNS 13
#define LOC_LONG 14
#define LOC_NONE 15

/* unsigned varint: 6-bit chunks, least significant first */
#define VARINT_MORE 0x40 /* another chunk follows */
#define VARINT_BITS 0x3f
static unsigned int varint(const __u8 *tab, size_t len, size_t i)
{
	unsigned int val = 0, shift = 0;

	while (i < len && shift < 32) {
		__u8 b = tab[i++];

		val |= (unsigned int)(b & VARINT_BITS) << shift;
		shift += 6;
		if (!(b & VARINT_MORE))
			break;
	}
	return val;
}

static int line_delta(const __u8 *tab, size_t len, size_t i)
{
	int code = LOC_CODE(tab[i]);
	unsigned int v;

	if (code == LOC_NO_COLUMNS || code == LOC_LONG) {
		/* signed varint: the low bit is the sign */
		v = varint(tab, len, i + 1);
		return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
	}
	if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
		return code - LOC_ONE_LINE0;
	/* the short forms stay on the line; NONE has none */
	return 0;
}

int mt_pyline_311(const __u8 *tab, size_t len, int firstlineno, __s64 addrq)
{
	__s64 end = 0;
	int line = firstlineno;
	size_t i = 0;

	if (addrq < 0)
		return firstlineno;
	while (i < len) {
		__s64 start = end;
		int code = LOC_CODE(tab[i]);

		/* a table that lost sync: no answer rather than a wrong one */
		if (!(tab[i] & LOC_START))
			return -1;
		line = add_line(line, line_delta(tab, len, i));
		end += LOC_UNITS(tab[i]) * CODE_UNIT_BYTES;
		if (addrq >= start && addrq < end)
			return code == LOC_NONE ? -1 : line;
		/* on to the next entry's first byte */
		do
			i++;
		while (i < len && !(tab[i] & LOC_START));
	}
	return -1;
}
