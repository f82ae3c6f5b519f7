// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include "lib/err.h"

void mt_err(const char *fmt, ...)
{
	va_list ap;

	/* one fprintf per part; a line of stderr is unbuffered anyway */
	fputs("memtrace-bpf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
