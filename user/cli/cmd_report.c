// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf report and script: a record read back, its summary and
 * analyses (report) or its event lines (script), as a live run prints
 * them. -p and --phase NAME pick what of the record they read.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/conf.h"
#include "cli/keys.h"
#include "cli/opts_common.h"
#include "lib/err.h"
#include "record/replay.h"

static const char report_doc[] =
	"The summary and analyses of a record, as a live run prints them.\n"
	"\n"
	"USAGE: memtrace-bpf report -i FILE [--at SECS] [OPTION...]";

static const char script_doc[] =
	"The event lines of a record, as a live run prints them.\n"
	"\n"
	"USAGE: memtrace-bpf script -i FILE [OPTION...]";

/* a record's phases are set: --phase NAME filters by one, nothing more */
static void opt_phase(struct mt_options *o, char *arg)
{
	if (strchr(arg, '=')) {
		mt_err("--phase %s names a phase while tracing; a record's "
		       "phases are set: filter one with --phase NAME",
		       arg);
		exit(2);
	}
	mt_opt_phase_filter(o, arg);
}

static const struct mt_opt select_opts[] = {
	MT_OPT_CALL("pid", 'p', "PID[,PID...]",
		    "Only these processes (as perf report --pid)", mt_opt_pids),
	MT_OPT_CALL("phase", OPT_PHASE, "NAME", "Only the events of phase NAME",
		    opt_phase),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_select = { "Filters of a record:",
						 select_opts };

static const struct mt_opt_group *const groups[] = {
	&mt_opts_input, &mt_opts_output, &mt_opts_export,
	&opts_select,	&mt_opts_filter, NULL,
};

/* the options of report's groups that shape what script does not print */
static const struct mt_unhonoured script_unhonoured[] = {
	{ 'q', "-q: script prints only event lines, which -q leaves out "
	       "(report prints the summary)" },
	{ OPT_KEYS, "--keys shapes the summary, which script does not "
		    "print: use report" },
	{ OPT_TOP_LIVE, "--top-live shapes the summary, which script does "
			"not print: use report" },
	{ OPT_TOP_OPS, "--top-ops shapes the summary, which script does "
		       "not print: use report" },
	{ OPT_LEAK_AGE, "--leak-age shapes the summary, which script does "
			"not print: use report" },
	{ OPT_AT, "--at shows what was alive at one moment, script prints "
		  "events: use report --at, or script --time ,END" },
	{ 0 },
};

static const struct mt_unhonoured report_unhonoured[] = {
	{ OPT_MIN_SIZE, "--min-size: report prints no event lines (script "
			"does); --size filters what report counts" },
	{ 0 },
};

static int check(const struct mt_cmd *cmd, const struct mt_options *o)
{
	if (mt_check_rows(o) || mt_check_export_output(o) ||
	    mt_check_input(o, cmd->name) || mt_check_at_export(o))
		return 2;
	return 0;
}

static int run(const struct mt_options *o)
{
	struct mt_replay_conf c;

	mt_replay_conf_from(&c, o);
	return mt_exit_status(mt_replay(&c), MT_VERDICT_OK);
}

const struct mt_cmd mt_cmd_report = {
	.name = "report",
	.mode = MT_MODE_REPORT,
	.doc = report_doc,
	.groups = groups,
	.unhonoured = report_unhonoured,
	.check = check,
	.run = run,
};

const struct mt_cmd mt_cmd_script = {
	.name = "script",
	.mode = MT_MODE_SCRIPT,
	.doc = script_doc,
	.groups = groups,
	.unhonoured = script_unhonoured,
	.check = check,
	.run = run,
};
