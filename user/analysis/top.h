/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrace-bpf top: the frame of the live view, drawn from a trace's
 * session. Per process and device the memory held now, its peak and its
 * growth per optimizer step, and what it holds now by kind of memory
 * (analysis/memkind.h, the session's tally); then the modules and the source lines that
 * hold the most of it now, from the peak view's grouping of the live
 * table (mt_peak_foreach_now). In a sampled trace (--sample-bytes) a line
 * says so, and the columns of figures from stacks (the modules' and
 * lines', the steps) are titled '~', estimates; the memory stays exact.
 * Plain lines: trace/topscreen.c puts them on the terminal.
 */
#ifndef __TOP_H
#define __TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "analysis/session.h"

/* what the frame's first lines say besides the session's figures */
struct mt_top_status {
	double elapsed; /* seconds since the trace began */
	double interval; /* seconds between frames */
	__u64 lost; /* events the ring buffer dropped */
	__u64 stacks_lost; /* events whose Python stack was not kept */
	int nprocs, nexited; /* processes traced, and those gone */
	__u32 pid; /* the first one */
	const char *comm; /* its name; NULL: not known */
	bool keys; /* q quits (input from a terminal) */
};

struct mt_top;

struct mt_top *mt_top_new(void);
void mt_top_free(struct mt_top *t);

/*
 * A session observer (ctx: the struct mt_top): at the first event of each
 * optimizer step it notes the process's memory per account, from which
 * the frame has the growth per step.
 */
void mt_top_event(void *ctx, const struct mt_session *s,
		  const struct mt_call *r, const struct mt_site *site);

/*
 * The frame into out: at most rows lines (0: as many as it has, ten rows
 * a table) of at most cols bytes (0: uncut), each ending in a newline.
 * Returns 0, or -ENOMEM (a line saying so was written).
 */
int mt_top_frame(struct mt_top *t, const struct mt_session *s,
		 const struct mt_top_status *st, int cols, int rows, FILE *out);

#endif /* __TOP_H */
