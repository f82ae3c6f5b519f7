/* SPDX-License-Identifier: GPL-2.0 */
/* The perf-script-style event line; its grammar is documented in docs/OUTPUT.md. */
#ifndef __FORMAT_H
#define __FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include "event/kinds.h"

/* who asked for the memory, above the allocator (NULL fields: none) */
struct mt_attrib {
	const char *phase;
	const char *module;
	const char *node; /* autograd Node class, in backward */
	const char *detail; /* python:raise: the exception's type */
	int rank; /* the process's rank in its job; -1: none */
	bool recompute; /* a forward run again in backward (checkpointing) */
};

/*
 * Format r as one line, newline included:
 *   <comm> <pid>/<tid> [<cpu>] <secs>.<usecs>: <event>: key=value ...
 * caller is the calling library's basename (NULL: unknown); a adds phase=
 * and module= (NULL: not known). The comm and the values the target named
 * (caller, type, phase, module, node) are escaped (lib/escape.h). Returns
 * the length, or -1 if buf is too small.
 */
int mt_format_event(char *buf, size_t len, const struct mt_call *r,
		    const char *caller, const struct mt_attrib *a);

/*
 * A thread's name (at most MT_COMM_LEN bytes, NUL-ended or not) as every
 * line prints it: one token, its blanks as '_', the rest escaped as a
 * field (lib/escape.h); "?" when empty. Returns buf.
 */
#define MT_FORMAT_COMM_LEN (4 * MT_COMM_LEN + 1)
const char *mt_format_comm(char *buf, size_t len, const char *comm);

/* "cuda:0", "cuda:?", "host", "cpu" or "-" */
const char *mt_format_dev(char *buf, size_t len, enum mt_dev_type type,
			  int index);

/*
 * A memory account, its device then its layer: "cuda:0 c10", "host
 * pinned"; CPU tensor memory is "cpu" alone, the device and the layer
 * having one name.
 */
const char *mt_format_account(char *buf, size_t len, enum mt_dev_type type,
			      int index, enum mt_space space);

/*
 * bytes for people, three significant digits at most above 1023 bytes:
 * "512 B", "1.99 MiB", "16.6 GiB", "977 KiB". Writes at most len bytes
 * into buf (truncated if short; 32 always fits) and returns buf.
 */
const char *mt_format_bytes(char *buf, size_t len, unsigned long long bytes);

/* *v (bytes, or bytes per second; signed) scaled to the unit returned */
const char *mt_byte_unit(double *v);

#endif /* __FORMAT_H */
