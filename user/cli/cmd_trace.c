// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf [OPTION...]: the live trace, event lines and a summary. Its
 * run, the trace, is also what record, top and estimate --dry-run run.
 */
#include <stddef.h>
#include "cli/cmd.h"
#include "cli/conf.h"
#include "cli/opts_common.h"
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

static const struct mt_opt_group *const groups[] = {
	&mt_opts_target, &mt_opts_command, &mt_opts_python, &mt_opts_output,
	&mt_opts_export, &mt_opts_filter,  &mt_opts_watch,  NULL,
};

/* live, --at peak goes with an export that shows it only */
static int check_at_live(const struct mt_options *o)
{
	if (o->at >= 0 || (o->at_peak && !o->export_kind)) {
		mt_err("-i and --at read a record: "
		       "use memtrace-bpf report");
		return 2;
	}
	return 0;
}

/* a kind is told at an allocation's free: a live line cannot wait */
static int check_kind_live(const struct mt_options *o)
{
	if (o->filter.nkinds) {
		mt_err("--kind tells an allocation by its whole life, known "
		       "only once it is over: record, then report --kind or "
		       "script --kind");
		return 2;
	}
	return 0;
}

static int check(const struct mt_cmd *cmd, const struct mt_options *o)
{
	(void)cmd;
	if (mt_check_rows(o) || mt_check_export_output(o) || mt_check_user(o) ||
	    check_at_live(o) || mt_check_at_export(o) || mt_check_watch(o) ||
	    check_kind_live(o) || mt_check_tracing(o))
		return 2;
	return 0;
}

int mt_run_trace(const struct mt_options *o)
{
	struct mt_trace_conf c;
	enum mt_verdict v;
	int ret;

	mt_trace_conf_from(&c, o);
	ret = mt_trace(&c, &v);
	return mt_exit_status(ret, v);
}

const struct mt_cmd mt_cmd_trace = {
	.name = NULL,
	.mode = MT_MODE_TRACE,
	.doc = trace_doc,
	.groups = groups,
	.command = true,
	.check = check,
	.run = mt_run_trace,
};
