/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report and script: read a record back through the same session code as
 * a live run, so that both print the same lines and the same analyses.
 */
#ifndef __REPLAY_H
#define __REPLAY_H

#include <stdbool.h>
#include "export/output.h"

struct mt_replay_conf {
	const char *input; /* the record */
	const char *output; /* lines and summary; NULL: stdout */
	bool script; /* the event lines only; else summary and analyses */
	double at; /* stop this many seconds in, show what lives; < 0: none */
	bool at_peak; /* --at peak: what was alive at the peak */
	struct mt_output_conf out; /* the session and its export */
};

/* report or script as c asks: 0, or negative after mt_err() */
int mt_replay(const struct mt_replay_conf *c);

#endif /* __REPLAY_H */
