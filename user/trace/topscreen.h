/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrace-bpf top on its output: on a terminal, a screen redrawn in
 * place (the alternate screen, cursor home and clear, as py-spy top and
 * htop do; plain ANSI, no curses) with q to quit; to a pipe or a file,
 * one frame after another below a line of dashes, for a log. The trace
 * loop calls its tick on every turn; no thread of its own.
 */
#ifndef __TOPSCREEN_H
#define __TOPSCREEN_H

#include <stdbool.h>
#include <linux/types.h>

struct mt_tracer;
struct mt_topscreen;

/*
 * Before the trace starts anything (a command to trace inherits its
 * output): on a terminal, what the tool and the command print from here
 * to mt_topscreen_close is kept aside and printed after it, so that it
 * does not run over the screen. Also makes the session of tr's shared
 * sink note each step's memory. NULL and err filled on failure.
 */
struct mt_topscreen *mt_topscreen_open(struct mt_tracer *tr, double interval,
				       char *err, size_t len);

/*
 * A turn of the trace loop at now (ns): keys read, a frame drawn when the
 * interval passed or the terminal was resized. Returns true when q asked
 * to quit.
 */
bool mt_topscreen_tick(struct mt_topscreen *ts, struct mt_tracer *tr,
		       __u64 now);

/*
 * The terminal as it was, the last frame (if one was drawn) printed below
 * what the shell showed, then what was kept aside; ts freed (NULL: none).
 */
void mt_topscreen_close(struct mt_topscreen *ts, struct mt_tracer *tr);

#endif /* __TOPSCREEN_H */
