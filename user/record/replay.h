/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report and script: read a record back through the same session code as
 * a live run, so that both print the same lines and the same analyses.
 */
#ifndef __REPLAY_H
#define __REPLAY_H

#include "cli/options.h"

/* the exit status: 0, or 2 after a one-line error */
int mt_replay(const struct mt_options *o);

#endif /* __REPLAY_H */
