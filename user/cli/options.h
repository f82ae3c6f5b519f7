/* SPDX-License-Identifier: GPL-2.0 */
/* Command line of memtrace-bpf. */
#ifndef __OPTIONS_H
#define __OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include "estimate/estimate.h"
#include "python/stack.h"

#define MT_MAX_PIDS 64

enum mt_mode {
	MT_MODE_TRACE, /* memtrace-bpf [OPTION...]: event lines and summary */
	MT_MODE_RECORD, /* memtrace-bpf record: a binary record */
	MT_MODE_REPORT, /* memtrace-bpf report -i: summary and analyses */
	MT_MODE_SCRIPT, /* memtrace-bpf script -i: the event lines */
	MT_MODE_ESTIMATE, /* memtrace-bpf estimate -i: a GPU's memory */
};

struct mt_options {
	enum mt_mode mode;
	const char *input; /* -i, report and script */
	double at; /* --at seconds into the record; < 0: none */
	unsigned int leak_age_steps;
	double leak_age_seconds;
	size_t top_ops;
	double watch; /* --watch interval in seconds; 0: off */
	double watch_window;
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
	const char *output; /* -o */
	double duration; /* -d seconds, 0 = until the targets exit */
	unsigned long long min_size;
	bool quiet;
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
	/* estimate: --scale, --check and the allocator settings */
	struct mt_estimate_conf est;
};

/*
 * Parse argv into *o. Returns 0, or 2 after printing a one-line error (the
 * exit code for bad usage). argp itself exits after --help and --version.
 */
int mt_parse_options(int argc, char **argv, struct mt_options *o);

#endif /* __OPTIONS_H */
