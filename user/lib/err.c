// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include "lib/err.h"
#include "lib/escape.h"

void mt_err(const char *fmt, ...)
{
	struct mt_esc e = { 0 };
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/*
	 * A message may name what the target chose (a library's path, its
	 * command): escaped whole, it stays one line with no terminal control
	 */
	fprintf(stderr, "memtrace-bpf: %s\n", mt_esc(&e, msg, MT_ESC_TEXT));
}
