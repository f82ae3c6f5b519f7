// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf: trace the CUDA runtime, CUDA driver and PyTorch allocator
 * calls of running processes with uprobes, one line per event. Its modes
 * are one table, as bpftool's { "prog", do_prog }: the word that names
 * each (none for trace), the option groups it takes and what runs it.
 */
#include <stddef.h>
#include <string.h>
#include "cli/conf.h"
#include "cli/help.h"
#include "cli/options.h"
#include "lib/err.h"
#include "trace/trace.h"

static const char trace_doc[] =
	"Trace every CUDA and PyTorch allocator call of a running process.\n"
	"\n"
	"USAGE: memtrace-bpf [OPTION...] -p PID[,PID...]\n"
	"       memtrace-bpf [OPTION...] -- COMMAND [ARG...]\n"
	"       memtrace-bpf record -o FILE [OPTION...] -p PID | -- COMMAND\n"
	"       memtrace-bpf report -i FILE [--at SECS] [OPTION...]\n"
	"       memtrace-bpf script -i FILE [OPTION...]\n"
	"       memtrace-bpf estimate -i FILE [--device-mem SIZE] "
	"[--scale PATTERN=FACTOR]...\n"
	"       memtrace-bpf estimate --dry-run [--device PRESET|SIZE] "
	"[--devices N] -- COMMAND\n"
	"       memtrace-bpf top [--interval TIME] -p PID | -- COMMAND\n"
	"\n"
	"EXAMPLES:\n"
	"    memtrace-bpf -p 4121              # until Ctrl-C or its exit\n"
	"    memtrace-bpf -p 4121,4122 -d 30   # two processes, 30 seconds\n"
	"    memtrace-bpf -- python3 train.py  # start and trace a command\n"
	"    memtrace-bpf -p 4121 -q           # summary only\n"
	"    memtrace-bpf -p 4121 --min-size 1M -o trace.txt\n"
	"    memtrace-bpf -p 4121 --watch 5 --alert-pct 85\n"
	"    memtrace-bpf record -o trace.mtb -p 4121\n"
	"    memtrace-bpf report -i trace.mtb --at 12.5\n"
	"    memtrace-bpf report -i trace.mtb --export perfetto -o t.json\n"
	"    memtrace-bpf --children 812 -q -o 'trace_rank{rank}.log'\n"
	"    memtrace-bpf --all -q --metrics-addr :9400\n"
	"    memtrace-bpf estimate -i trace.mtb --device-mem 80GiB\n"
	"    memtrace-bpf estimate --dry-run --device A100-40GB -- python3 "
	"train.py\n"
	"    memtrace-bpf top -p 4121          # a live view, q quits\n"
	"\n"
	"SIZE: bytes, or with B, K, M, G or T (KB, KiB... too, in any case:\n"
	"powers of 1024), e.g. 1k, 1.5M, 80GiB. TIME: seconds, or with us, ms,\n"
	"s, m (minutes) or h, e.g. 2, 500ms, 1m.\n"
	"\n"
	"One line per event on stdout, perf-script style; lines starting with\n"
	"'#' are the tool's own (libraries attached, lost events, summary).\n"
	"Exit status: 0 when traced to the end, 2 on a usage or setup error.\n"
	"The modes record, report, script, estimate and top have their own\n"
	"--help; memtrace-bpf help [COMMAND] shows the manual page.";

static const char record_doc[] =
	"Trace as memtrace-bpf does, into a binary record that report, script\n"
	"and estimate read later (no root needed for those). With --flight, a\n"
	"flight recorder: each process's last minutes kept in memory and\n"
	"dumped into the folder -o DIR as records when something goes wrong.\n"
	"\n"
	"USAGE: memtrace-bpf record -o FILE [OPTION...] -p PID | -- COMMAND\n"
	"       memtrace-bpf record --flight TIME|SIZE -o DIR [OPTION...] "
	"-p PID | --children PID | --all | -- COMMAND";

static const char report_doc[] =
	"The summary and analyses of a record, as a live run prints them.\n"
	"\n"
	"USAGE: memtrace-bpf report -i FILE [--at SECS] [OPTION...]";

static const char script_doc[] =
	"The event lines of a record, as a live run prints them.\n"
	"\n"
	"USAGE: memtrace-bpf script -i FILE [OPTION...]";

static const char estimate_doc[] =
	"What PyTorch's caching allocator would reserve on a GPU for a\n"
	"record's allocations: the peak, and where it would run out. Or,\n"
	"with --dry-run, what a CUDA PyTorch COMMAND holds on a GPU it does\n"
	"not have: it runs on a stand-in device under PyTorch's own\n"
	"allocator (no kernel runs), traced as -q does. Exit status of a dry\n"
	"run: 0 when it fits, 1 when the device ran out of memory, 3 when\n"
	"the command failed otherwise (no verdict), 2 on an error.\n"
	"\n"
	"USAGE: memtrace-bpf estimate -i FILE [--device-mem SIZE] "
	"[--scale PATTERN=FACTOR]...\n"
	"       memtrace-bpf estimate --dry-run [--device PRESET|SIZE] "
	"[--devices N] -- COMMAND [ARG...]";

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

/*
 * The exit status of what a command returned (lib/err.h): 2 after an
 * error, else its verdict's: 0, 1 for a no, 3 when there was none
 */
static int exit_status(int ret, enum mt_verdict v)
{
	if (ret < 0)
		return 2;
	return v == MT_VERDICT_NO ? 1 : v == MT_VERDICT_UNKNOWN ? 3 : 0;
}

static int do_trace(const struct mt_options *o)
{
	struct mt_trace_conf c;
	enum mt_verdict v;
	int ret;

	mt_trace_conf_from(&c, o);
	ret = mt_trace(&c, &v);
	return exit_status(ret, v);
}

static int do_replay(const struct mt_options *o)
{
	struct mt_replay_conf c;

	mt_replay_conf_from(&c, o);
	return exit_status(mt_replay(&c), MT_VERDICT_OK);
}

static int do_estimate(const struct mt_options *o)
{
	struct mt_estimate_conf c;
	enum mt_verdict v;
	int ret;

	if (o->dry_run)
		return do_trace(o);
	mt_estimate_conf_from(&c, o);
	ret = mt_estimate(&c, &v);
	return exit_status(ret, v);
}

#define TRACING \
	(MT_OPTS_TARGET | MT_OPTS_COMMAND | MT_OPTS_PYTHON | MT_OPTS_WATCH)

static const struct mt_cmd cmds[] = {
	{ NULL, MT_MODE_TRACE,
	  TRACING | MT_OPTS_OUTPUT | MT_OPTS_EXPORT | MT_OPTS_FILTER, trace_doc,
	  do_trace },
	{ "record", MT_MODE_RECORD, TRACING | MT_OPTS_OUTPUT | MT_OPTS_FLIGHT,
	  record_doc, do_trace },
	{ "report", MT_MODE_REPORT,
	  MT_OPTS_INPUT | MT_OPTS_OUTPUT | MT_OPTS_EXPORT | MT_OPTS_SELECT |
		  MT_OPTS_FILTER,
	  report_doc, do_replay },
	{ "script", MT_MODE_SCRIPT,
	  MT_OPTS_INPUT | MT_OPTS_OUTPUT | MT_OPTS_EXPORT | MT_OPTS_SELECT |
		  MT_OPTS_FILTER,
	  script_doc, do_replay },
	{ "estimate", MT_MODE_ESTIMATE,
	  MT_OPTS_INPUT | MT_OPTS_ESTIMATE | MT_OPTS_DRYRUN | MT_OPTS_COMMAND,
	  estimate_doc, do_estimate },
	{ "top", MT_MODE_TOP,
	  MT_OPTS_TARGET | MT_OPTS_COMMAND | MT_OPTS_PYTHON | MT_OPTS_TOP,
	  top_doc, do_trace },
};

/* memtrace-bpf help [COMMAND] */
static int help(int argc, char **argv)
{
	const char *names[sizeof(cmds) / sizeof(cmds[0])];
	size_t n = 0;

	if (argc > 3) {
		mt_err("help takes one command at most (memtrace-bpf help COMMAND)");
		return 2;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (cmds[i].name)
			names[n++] = cmds[i].name;
	return mt_help(argc == 3 ? argv[2] : NULL, names, n);
}

int main(int argc, char **argv)
{
	const struct mt_cmd *cmd;
	struct mt_options o;
	int ret;

	if (argc >= 2 && !strcmp(argv[1], "help"))
		return help(argc, argv);
	ret = mt_parse_options(argc, argv, cmds, sizeof(cmds) / sizeof(cmds[0]),
			       &o, &cmd);
	return ret ? ret : cmd->run(&o);
}
