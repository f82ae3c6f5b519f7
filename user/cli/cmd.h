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
	/* Returns the exit status: 0, or 2 after a one-line error */
	int (*run)(const struct mt_options *o);
};

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
