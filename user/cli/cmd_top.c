// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf top: a live trace shown as one frame redrawn in place, its
 * interval the one option of its own.
 */
#include <stddef.h>
#include "cli/cmd.h"
#include "cli/keys.h"
#include "cli/opts_common.h"

static const char top_doc[] =
	"A live view of a running process, redrawn in place as py-spy top:\n"
	"per process and device the memory held now, its peak and its growth\n"
	"per optimizer step, then the modules and the source lines holding\n"
	"the most memory now. q or Ctrl-C quits; the last frame stays on the\n"
	"terminal, then what the tool (and a COMMAND) printed meanwhile.\n"
	"When stdout is no terminal, one frame after another below a line of\n"
	"dashes, for a log.\n"
	"\n"
	"USAGE: memtrace-bpf top [--interval TIME] [OPTION...] -p PID[,PID...]\n"
	"       memtrace-bpf top [--interval TIME] [OPTION...] -- COMMAND";

static const struct mt_opt top_opts[] = {
	MT_OPT_DURATION("interval", OPT_INTERVAL, "TIME",
			"Redraw every TIME, at least 100ms (default 1s)",
			interval, "interval", 0.1, 1e6),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_top = { "The live view:", top_opts };

static const struct mt_opt_group *const groups[] = {
	&mt_opts_target, &mt_opts_command, &mt_opts_python, &opts_top, NULL,
};

/* --interval cannot be 0, so 0 is "not given" */
static void defaults(struct mt_options *o)
{
	if (!o->interval)
		o->interval = 1;
}

static int check(const struct mt_cmd *cmd, const struct mt_options *o)
{
	(void)cmd;
	if (mt_check_user(o) || mt_check_tracing(o))
		return 2;
	return 0;
}

const struct mt_cmd mt_cmd_top = {
	.name = "top",
	.mode = MT_MODE_TOP,
	.doc = top_doc,
	.groups = groups,
	.command = true,
	.defaults = defaults,
	.check = check,
	.run = mt_run_trace,
};
