/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A live trace, as the command line asks for one: what cli/ hands to trace/
 * (cli/conf.c makes it from the options, so trace/ never reads them).
 */
#ifndef __TRACE_H
#define __TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include "dryrun/device.h"
#include "lib/err.h"
#include "export/output.h"
#include "proc/runas.h"
#include "record/flight.h"
#include "python/stack.h"

/* pids one -p may name */
#define MT_MAX_PIDS 64

struct mt_trace_conf {
	bool record; /* a binary record, not event lines */
	int pids[MT_MAX_PIDS]; /* -p */
	int npids;
	int children_of; /* --children PID: it and its descendants */
	bool follow_children; /* -- COMMAND's descendants too (-f, dry run) */
	bool all; /* --all: every process mapping our libraries */
	char **command; /* after "--", NULL-terminated; NULL if none */
	const struct mt_run_as *run_as; /* --user; NULL: as we run */
	const char *output; /* -o: may name {pid}, {rank}, {host} */
	const char *export_kind; /* --export: -o is then its file */
	double duration; /* -d seconds; 0: until the targets exit */
	bool quiet, no_cpu, no_cuda, wait_libs;
	int verbose;
	unsigned int ringbuf_mb;
	size_t top_live;
	bool no_python; /* no stacks, modules or phases */
	unsigned int max_depth; /* Python frames kept */
	struct mt_phase_rules rules; /* --root-name, --phase */
	const char *exc_types; /* --trace-exceptions: names, or "all" */
	const char *module_log; /* --module-log pattern */
	bool log_time;
	double watch, watch_window; /* --watch interval and window; 0: off */
	double top; /* top: seconds between frames; 0: not top */
	unsigned long long device_mem; /* --device-mem; 0: ask NVML */
	double alert_pct;
	const char *metrics_addr, *metrics_file;
	struct mt_output_conf out; /* each sink's session and export */
	/* estimate --dry-run: COMMAND runs on the stand-in; NULL: not */
	const struct mt_dryrun_conf *dryrun;
	/* record --flight: dumps into its folder; NULL: not */
	const struct mt_flight_conf *flight;
	bool flight_at_end, flight_together;
};

/*
 * Trace as c asks: 0, *v a dry run's verdict (MT_VERDICT_OK for any other
 * trace); or negative after mt_err()
 */
int mt_trace(const struct mt_trace_conf *c, enum mt_verdict *v);

#endif /* __TRACE_H */
