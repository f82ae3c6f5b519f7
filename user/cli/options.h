/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the command line asked for: each option sets one field here (its
 * entry in a table of cli/ says which), and cli/conf.c makes the lower
 * layers' configurations of it.
 */
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
	bool follow; /* -f: -- COMMAND's children too */
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

#endif /* __OPTIONS_H */
