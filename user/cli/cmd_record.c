// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf record: a live trace into a binary record, or with --flight
 * a flight recorder that dumps each process's last minutes into a folder.
 * The flight recorder's options, checks and defaults are here.
 */
#include <stddef.h>
#include <linux/types.h>
#include "cli/cmd.h"
#include "cli/keys.h"
#include "cli/opts_common.h"
#include "cli/value.h"
#include "lib/err.h"

/* record --flight without --sample-bytes samples one in 512 KiB */
#define FLIGHT_SAMPLE_DEFAULT (512ULL << 10)
#define FLIGHT_DUMPS_DEFAULT 16
#define FLIGHT_TOTAL_DEFAULT (8ULL << 30)

static const char record_doc[] =
	"Trace as memtrace-bpf does, into a binary record that report, script\n"
	"and estimate read later (no root needed for those). With --flight, a\n"
	"flight recorder: each process's last minutes kept in memory and\n"
	"dumped into the folder -o DIR as records when something goes wrong.\n"
	"\n"
	"USAGE: memtrace-bpf record -o FILE [OPTION...] -p PID | -- COMMAND\n"
	"       memtrace-bpf record --flight TIME|SIZE -o DIR [OPTION...] "
	"-p PID | --children PID | --all | -- COMMAND";

/*
 * --flight TIME|SIZE: a duration when its unit is one (10m, 1h, 600s, or
 * none: seconds), else a size (512MiB, 2G). Whichever it failed as, the
 * line says both: "10x" is no size, nor a time.
 */
static void opt_flight(struct mt_options *o, char *arg)
{
	static const char what[] =
		"--flight TIME|SIZE (a time of 1 s to 1e8 s: 600s, 10m, 1h; "
		"or a size of 1 MiB or more: 512MiB, 2G)";

	mt_once(o->flight_on, "--flight");
	o->flight_on = true;
	if (!mt_is_duration(arg)) {
		o->flight.window_bytes = mt_parse_size(what, arg, 1, 1 << 20);
		return;
	}
	o->flight.window_ns =
		(__u64)(mt_parse_duration(what, arg, 1, MT_DURATION_MAX) * 1e9);
	o->flight.window_bytes = MT_FLIGHT_MEM_DEFAULT;
}

static const struct mt_opt flight_opts[] = {
	MT_OPT_CALL("flight", OPT_FLIGHT, "TIME|SIZE",
		    "A flight recorder: keep each process's last TIME (10m, "
		    "1h) or SIZE (512MiB) of events and every allocation alive "
		    "at its start; dump them into the folder -o DIR on an OOM, "
		    "a killed process, an exit status not 0, --alert-pct, "
		    "SIGUSR1",
		    opt_flight),
	MT_OPT_UNSIGNED("flight-dumps", OPT_FLIGHT_DUMPS, "N",
			"--flight: dumps kept in DIR, the oldest removed first "
			"(default 16)",
			flight.max_dumps, "dump count (1-100000)", 100000,
			true),
	MT_OPT_SIZE("flight-total", OPT_FLIGHT_TOTAL, "SIZE",
		    "--flight: bytes of dumps kept in DIR (default 8GiB)",
		    flight.max_total, "size of the dumps (at least 1 MiB)", 1,
		    1 << 20),
	MT_OPT_FLAG("flight-at-end", OPT_FLIGHT_AT_END,
		    "--flight: dump every window when the trace ends too (a "
		    "clean exit; a failed one is dumped anyway)",
		    flight_at_end),
	MT_OPT_FLAG("flight-together", OPT_FLIGHT_TOGETHER,
		    "--flight: a process's dump dumps every process traced",
		    flight_together),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_flight = { "The flight recorder:",
						 flight_opts };

static const struct mt_opt_group *const groups[] = {
	&mt_opts_target,
	&mt_opts_command,
	&mt_opts_python,
	&mt_opts_output,
	&mt_opts_watch,
	&opts_flight,
	NULL,
};

static void defaults(struct mt_options *o)
{
	if (!o->flight_on)
		return;
	/* left on for days: stacks sampled by bytes, the totals exact */
	if (!o->sample_bytes)
		o->sample_bytes = FLIGHT_SAMPLE_DEFAULT;
	o->flight.dir = o->output;
	o->flight.sample_bytes = o->sample_bytes;
	if (!o->flight.max_dumps)
		o->flight.max_dumps = FLIGHT_DUMPS_DEFAULT;
	if (!o->flight.max_total)
		o->flight.max_total = FLIGHT_TOTAL_DEFAULT;
}

/* what --flight and its caps need of each other */
static int check_flight(const struct mt_options *o)
{
	if (o->flight_on && !o->watch && !!o->alert_pct != !!o->device_mem) {
		mt_err("--flight --alert-pct PCT dumps when a process's "
		       "reserved memory crosses PCT %% of --device-mem: give "
		       "both");
		return 2;
	}
	if (!o->flight_on && (o->flight.max_dumps || o->flight.max_total ||
			      o->flight_at_end || o->flight_together)) {
		mt_err("--flight-dumps, --flight-total, --flight-at-end and "
		       "--flight-together go with --flight");
		return 2;
	}
	return 0;
}

static int check(const struct mt_cmd *cmd, const struct mt_options *o)
{
	(void)cmd;
	if (mt_check_rows(o) || mt_check_user(o))
		return 2;
	if (!o->output) {
		mt_err(o->flight_on ? "record --flight needs -o DIR, the "
				      "folder its dumps are written in" :
				      "record needs -o FILE");
		return 2;
	}
	if (mt_check_watch(o) || check_flight(o) || mt_check_tracing(o))
		return 2;
	return 0;
}

const struct mt_cmd mt_cmd_record = {
	.name = "record",
	.mode = MT_MODE_RECORD,
	.doc = record_doc,
	.groups = groups,
	.command = true,
	.defaults = defaults,
	.check = check,
	.run = mt_run_trace,
};
