/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where events go: a session that counts them and prints into a text file
 * (stdout, -o), or into a binary record too (record). One sink serves all
 * the traced processes, or, when -o names {pid} or {rank}, each process
 * has its own, opened at its first event, when its rank is known.
 */
#ifndef __SINK_H
#define __SINK_H

#include <stdbool.h>
#include <stdio.h>
#include "event/kinds.h"
#include "analysis/session.h"
#include "export/output.h"
#include "trace/header.h"

struct mt_recorder;

struct mt_sink {
	struct mt_session *ses;
	FILE *out; /* lines, OOM blocks, the summary */
	struct mt_recorder *rec; /* record mode */
	char path[4096]; /* -o expanded, or "" for stdout */
	bool failed; /* a write error was reported: once is enough */
};

/*
 * Open the sink of path (NULL: stdout; record: the record) for a session
 * and export as c asks. 0, or -1 after mt_err().
 */
int mt_sink_open(struct mt_sink *k, const struct mt_output_conf *c, bool record,
		 const char *path);

/* a key=value of the record's header (nothing without a record) */
void mt_sink_meta(struct mt_sink *k, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct mt_traced;

/* the header lines of k's record: none without one */
struct mt_header mt_sink_header(struct mt_sink *k);

/*
 * The record's header lines for target t: the tool, its pid, comm and
 * command line (argv: a spawned command not yet exec'd; else /proc).
 */
void mt_sink_describe(struct mt_sink *k, const struct mt_traced *t,
		      char **argv);

/* a library attached; PyTorch's version when it is libc10 */
void mt_sink_library(struct mt_sink *k, int pid, const char *path, int probes);

/* one decoded event; false if the session dropped it (a free of NULL) */
bool mt_sink_event(struct mt_sink *k, const struct mt_event *ev, bool default0,
		   struct mt_call *r, struct mt_site *site);

/*
 * The process of ev (MT_K_EXEC) ran execve: the session frees what it held
 * (mt_session_exec, *freed filled) and the record keeps the event, with
 * site naming the program it runs now.
 */
void mt_sink_exec(struct mt_sink *k, const struct mt_event *ev,
		  const struct mt_site *site, struct mt_exec_freed *freed);

/* whole record blocks out (every poll) */
void mt_sink_flush(struct mt_sink *k);

/*
 * The end: the summary and analyses into the text output, or the record's
 * end block and a "recorded N events" note; closes what was opened (end
 * NULL: a run that did not start, nothing printed). 0, or -1 after
 * mt_err().
 */
int mt_sink_close(struct mt_sink *k, const struct mt_summary_end *end);

#endif /* __SINK_H */
