/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A command of memtrace-bpf (trace, record, report, script, estimate,
 * top), as perf's builtin-*.c: each is one file, cmd_NAME.c, that holds
 * its help text, its own options, the checks of what its options need of
 * each other, its defaults and what runs it. main.c lists them.
 */
#ifndef __CLI_CMD_H
#define __CLI_CMD_H

#include <stdbool.h>
#include "cli/opt.h"
#include "cli/options.h"
#include "lib/err.h"

/* an option a command takes with its group but cannot honour (why) */
struct mt_unhonoured {
	int key; /* 0 ends a list */
	const char *why; /* the error line, refusing it */
};

struct mt_cmd {
	const char *name; /* the word after memtrace-bpf; NULL: none (trace) */
	enum mt_mode mode;
	const char *doc; /* the text of its --help */
	/* the option groups it takes, in --help's order; NULL ends them */
	const struct mt_opt_group *const *groups;
	bool command; /* it takes -- COMMAND [ARG...] */
	const struct mt_unhonoured *unhonoured; /* NULL: none */
	/* after the options are read: what was not given; NULL: none */
	void (*defaults)(struct mt_options *o);
	/*
	 * What its options need of each other, past what each one's value
	 * needs. Returns 0, or 2 after printing a one-line error.
	 */
	int (*check)(const struct mt_cmd *cmd, const struct mt_options *o);
	/*
	 * Returns the exit status (mt_exit_status): 0, 2 after a one-line
	 * error, or a verdict's 1 or 3
	 */
	int (*run)(const struct mt_options *o);
};

/*
 * The exit status of what a lower layer returned (lib/err.h): 2 after an
 * error (ret < 0), else its verdict's: 0, 1 for a no, 3 when there was
 * none. The command layer is the one place exit statuses are made.
 */
static inline int mt_exit_status(int ret, enum mt_verdict v)
{
	if (ret < 0)
		return 2;
	return v == MT_VERDICT_NO ? 1 : v == MT_VERDICT_UNKNOWN ? 3 : 0;
}

extern const struct mt_cmd mt_cmd_trace; /* cmd_trace.c */
extern const struct mt_cmd mt_cmd_record; /* cmd_record.c */
extern const struct mt_cmd mt_cmd_report, mt_cmd_script; /* cmd_report.c */
extern const struct mt_cmd mt_cmd_estimate; /* cmd_estimate.c */
extern const struct mt_cmd mt_cmd_top; /* cmd_top.c */

/*
 * A live trace as o asks: what trace, record, top and estimate --dry-run
 * run (cmd_trace.c). Returns the exit status of mt_trace().
 */
int mt_run_trace(const struct mt_options *o);

#endif /* __CLI_CMD_H */
