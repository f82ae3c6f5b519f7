/* SPDX-License-Identifier: GPL-2.0 */
/* Command line of memtrace-bpf. */
#ifndef __OPTIONS_H
#define __OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include "analysis/filter.h"
#include "dryrun/device.h"
#include "record/flight.h"
#include "estimate/estimate.h"
#include "proc/runas.h"
#include "python/stack.h"
#include "trace/trace.h"

enum mt_mode {
	MT_MODE_TRACE, /* memtrace-bpf [OPTION...]: event lines and summary */
	MT_MODE_RECORD, /* memtrace-bpf record: a binary record */
	MT_MODE_REPORT, /* memtrace-bpf report -i: summary and analyses */
	MT_MODE_SCRIPT, /* memtrace-bpf script -i: the event lines */
	MT_MODE_ESTIMATE, /* memtrace-bpf estimate -i: a GPU's memory */
	MT_MODE_TOP, /* memtrace-bpf top: a live view, redrawn in place */
};

struct mt_options {
	enum mt_mode mode;
	const char *input; /* -i: report, script and estimate */
	double at; /* --at seconds into the record; < 0: none */
	unsigned int leak_age_steps;
	double leak_age_seconds;
	size_t top_ops;
	double watch; /* --watch interval in seconds; 0: off */
	double watch_window;
	double interval; /* top: seconds between frames */
	unsigned long long device_mem; /* --device-mem bytes; 0: NVML */
	double alert_pct;
	const char *exc_types; /* --trace-exceptions: names, or "all" */
	const char *export_kind; /* --export KIND: -o names its file */
	bool at_peak; /* --at peak */
	bool folded_prefix;
	const char *metrics_addr; /* --metrics-addr HOST:PORT */
	const char *metrics_file; /* --metrics-file PATH */
	int children_of; /* --children PID: it and its descendants */
	bool all; /* --all: every process mapping our libraries */
	int pids[MT_MAX_PIDS];
	int npids;
	char **command; /* after "--", NULL-terminated; NULL if none */
	struct mt_run_as run_as; /* --user: whom the command runs as */
	const char *output; /* -o */
	double duration; /* -d seconds, 0 = until the targets exit */
	unsigned long long min_size;
	bool quiet;
	bool keys; /* the summary as '#' key=value lines */
	double percent_limit; /* the report's cut; -1: not given (1 %) */
	bool no_cpu;
	bool no_cuda;
	bool wait_libs;
	int verbose;
	unsigned int ringbuf_mb;
	size_t max_live;
	size_t top_live;
	bool no_stack; /* no stack lines (phase and module stay) */
	unsigned int max_depth; /* Python frames kept */
	struct mt_phase_rules rules; /* --root-name, --phase */
	const char *module_log; /* --module-log pattern */
	bool log_time;
	bool no_python; /* no stacks, modules or phases */
	/* --sample-bytes: stacks of allocations sampled by bytes; 0: all */
	unsigned long long sample_bytes;
	struct mt_filter_conf filter; /* --time, --steps, --tid... (filter.h) */
	/* estimate: --scale, --check and the allocator settings */
	struct mt_estimate_conf est;
	bool dry_run; /* estimate --dry-run: run COMMAND on the stand-in */
	bool has_device; /* --device given */
	struct mt_dryrun_conf dryrun; /* devices 0: --devices not given */
	bool flight_on; /* record --flight */
	bool flight_at_end, flight_together;
	struct mt_flight_conf flight; /* 0 caps: not given */
};

/* record --flight without --sample-bytes samples one in 512 KiB */
#define MT_FLIGHT_SAMPLE_DEFAULT (512ULL << 10)
#define MT_FLIGHT_DUMPS_DEFAULT 16
#define MT_FLIGHT_TOTAL_DEFAULT (8ULL << 30)

/* the option groups a mode takes, a bit each (their options: options.c) */
enum {
	MT_OPTS_TARGET = 1 << 0, /* -p, --children, --all, -d, what to probe */
	MT_OPTS_PYTHON = 1 << 1, /* stacks, modules, phases, exceptions */
	MT_OPTS_WATCH = 1 << 2, /* --watch, --metrics-addr, --metrics-file */
	MT_OPTS_OUTPUT = 1 << 3, /* -o, -q and what the session prints */
	MT_OPTS_EXPORT = 1 << 4, /* --export */
	MT_OPTS_INPUT = 1 << 5, /* -i */
	MT_OPTS_ESTIMATE = 1 << 6, /* the allocator model's settings */
	MT_OPTS_FILTER = 1 << 7, /* --time, --steps, --tid, --module... */
	MT_OPTS_SELECT = 1 << 8, /* -p, --phase NAME as filters of a record */
	MT_OPTS_TOP = 1 << 9, /* top: --interval */
	MT_OPTS_DRYRUN = 1 << 10, /* estimate --dry-run, --device, --devices */
	MT_OPTS_FLIGHT = 1 << 11, /* record --flight and its caps */
	MT_OPTS_COMMAND = 1 << 12, /* -- COMMAND: --user */
};

/* one mode of the command line, as bpftool's { "prog", do_prog } */
struct mt_cmd {
	const char *name; /* the word after memtrace-bpf; NULL: none (trace) */
	enum mt_mode mode;
	unsigned int opts; /* the MT_OPTS_ groups it takes */
	const char *doc; /* the text of its --help */
	/* the exit status: 0, or 2 after a one-line error */
	int (*run)(const struct mt_options *o);
};

/*
 * Parse argv into *o for the mode of cmds[0..ncmds) that argv[1] names
 * (none named: the one whose name is NULL), set in *cmd. An option of
 * another mode is refused, naming the modes that take it. Returns 0, or 2
 * after printing a one-line error (the exit code for bad usage). argp
 * itself exits after --help and --version.
 */
int mt_parse_options(int argc, char **argv, const struct mt_cmd *cmds,
		     size_t ncmds, struct mt_options *o,
		     const struct mt_cmd **cmd);

#endif /* __OPTIONS_H */
