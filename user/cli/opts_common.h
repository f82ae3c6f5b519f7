/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The option groups that several commands take (what to trace, running a
 * command, Python, what is printed, exports, filters, watching, reading a
 * record), the checks on them that those commands share, and the defaults
 * of every option.
 */
#ifndef __CLI_OPTS_COMMON_H
#define __CLI_OPTS_COMMON_H

#include "cli/opt.h"
#include "cli/options.h"

extern const struct mt_opt_group mt_opts_input; /* -i */
extern const struct mt_opt_group mt_opts_target; /* -p, --children, -d... */
extern const struct mt_opt_group mt_opts_command; /* -- COMMAND: --user */
extern const struct mt_opt_group mt_opts_python; /* stacks, phases... */
extern const struct mt_opt_group mt_opts_output; /* -o, -q, the summary */
extern const struct mt_opt_group mt_opts_export; /* --export, --at */
extern const struct mt_opt_group mt_opts_filter; /* --time, --steps... */
extern const struct mt_opt_group mt_opts_watch; /* --watch, metrics */

/* o as no option was given, for a command of mode */
void mt_options_init(struct mt_options *o, enum mt_mode mode);

/* -p PID[,PID...], an MT_OPT_CALL: exits 2 after one line if bad */
void mt_opt_pids(struct mt_options *o, char *arg);

/* --phase NAME, the filter: exits 2 after one line if bad or given twice */
void mt_opt_phase_filter(struct mt_options *o, char *arg);

/*
 * The checks of the shared groups. Each returns 0, or 2 after printing a
 * one-line error; a command calls those of its groups in its own order.
 */
int mt_check_rows(const struct mt_options *o); /* --percent-limit, --keys */
int mt_check_export_output(const struct mt_options *o); /* --export, -o */
int mt_check_user(const struct mt_options *o); /* --user, -- COMMAND */
/* -i, for the command name that needs it */
int mt_check_input(const struct mt_options *o, const char *name);
int mt_check_at_export(const struct mt_options *o); /* --at, --export */
int mt_check_watch(const struct mt_options *o); /* --watch, --alert-pct */
/* a live trace: one target, and what the Python options need */
int mt_check_tracing(const struct mt_options *o);

#endif /* __CLI_OPTS_COMMON_H */
