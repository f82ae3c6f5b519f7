/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The configurations of the layers below, made from the command line: the
 * trace, the session, the export, replay and estimate know their own
 * structs only, never struct mt_options.
 */
#ifndef __CONF_H
#define __CONF_H

#include "analysis/session.h"
#include "cli/options.h"
#include "estimate/estimate.h"
#include "export/output.h"
#include "record/replay.h"
#include "trace/trace.h"

/* each session's, the event lines as o's mode prints them; the export */
void mt_output_conf_from(struct mt_output_conf *c, const struct mt_options *o);

/* a live trace (trace and record) */
void mt_trace_conf_from(struct mt_trace_conf *c, const struct mt_options *o);

/* report and script */
void mt_replay_conf_from(struct mt_replay_conf *c, const struct mt_options *o);

/* estimate */
void mt_estimate_conf_from(struct mt_estimate_conf *c,
			   const struct mt_options *o);

#endif /* __CONF_H */
