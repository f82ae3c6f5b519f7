/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event lines, perf script's view of a session: each event's line and
 * Python stack as it is counted (unless -q, record or report leaves them
 * out), the OOM blocks and exception lines the moment they happen, and
 * the line of a process that ran execve. It watches the session as an
 * observer; the session itself prints nothing.
 */
#ifndef __LINES_H
#define __LINES_H

#include <stdio.h>
#include "analysis/session.h"

/*
 * Show s's events on s->out from now on, as s->conf asks. 0, or -ENOSPC
 * when s has no observer slot left.
 */
int mt_lines_observe(struct mt_session *s);

/*
 * The line that tells it, live and in a record read back: pid runs comm
 * (the program exe) now, and what it held is freed
 */
void mt_lines_print_exec(FILE *out, __u32 pid, const char *comm,
			 const char *exe, const struct mt_exec_freed *freed);

#endif /* __LINES_H */
