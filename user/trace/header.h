/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The header lines of a record and of a flight dump (key=value, as
 * record/record.h keeps them): the tool, each process, its libraries,
 * its CPython and rank. One set of writers for both, so that a record
 * and a dump say the same things of a process the same way.
 */
#ifndef __HEADER_H
#define __HEADER_H

#include "proc/rank.h"

struct mt_traced;

/* where the lines go: meta(out, key, value) */
struct mt_header {
	void (*meta)(void *out, const char *key, const char *value);
	void *out;
};

void mt_header_tool(const struct mt_header *h);

/*
 * t's pid, comm and command line: argv's when t is a command we started
 * that has not run its exec yet (argv NULL: none), else /proc's
 */
void mt_header_target(const struct mt_header *h, const struct mt_traced *t,
		      char **argv);

void mt_header_library(const struct mt_header *h, int pid, const char *path,
		       int probes);

/* t's CPython, once it was found */
void mt_header_python(const struct mt_header *h, const struct mt_traced *t);

void mt_header_rank(const struct mt_header *h, int pid,
		    const struct mt_rank *r);

#endif /* __HEADER_H */
