/* SPDX-License-Identifier: GPL-2.0 */
/*
 * estimate --dry-run: the command runs on the CUDA stand-in, traced as
 * -q -- COMMAND traces it, and the trace says what the GPU would hold.
 */
#ifndef __TRACE_DRYRUN_H
#define __TRACE_DRYRUN_H

#include <stdbool.h>
#include <stdio.h>
#include "memtrace.h"
#include "proc/target.h"

struct mt_traced;

struct mt_tracer;
struct mt_dryrun;

/*
 * Put the stand-in where the command will load it, as tr->conf->dryrun
 * asks, into *dr. Returns 0, or 2 after a one-line error.
 */
int mt_dryrun_begin(struct mt_tracer *tr, struct mt_dryrun **dr);

/*
 * A library attached in t: which CUDA runtime the command loaded, ours
 * told by the file's identity, not its name
 */
void mt_dryrun_on_lib(struct mt_dryrun *dr, const struct mt_traced *t,
		      const struct mt_mapping *m);

/*
 * Just before the command starts: the stand-in is still the files written
 * (mt_dryrun_verify). Returns 0, or 2 with the error said.
 */
int mt_dryrun_check(const struct mt_dryrun *dr);

/* an MT_K_HOST_READ event: the host read device memory */
void mt_dryrun_read(struct mt_tracer *tr, const struct mt_event *ev);

/* a dry run whose command failed without running out of memory */
#define MT_DRYRUN_FAILED 3

/*
 * The stand-in removed, and the dry run's own lines, before the report:
 * the verdict first, then the device, each device's peaks, what the host
 * read, and what the trace printed meanwhile (its OOM blocks), held until
 * then (ran false: the trace never ran, nothing to say). Returns the exit
 * status: 0 when it fits, 1 when the device ran out of memory,
 * MT_DRYRUN_FAILED when the command failed otherwise (its figures are up
 * to the failure), 2 after a one-line error when the command was no CUDA
 * PyTorch program the stand-in served or the trace was cut short. Frees dr.
 */
int mt_dryrun_end(struct mt_tracer *tr, struct mt_dryrun *dr, bool ran);

#endif /* __TRACE_DRYRUN_H */
