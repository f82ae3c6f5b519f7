// SPDX-License-Identifier: GPL-2.0
/*
 * The option groups several commands share, as tables bound to the fields
 * they set; the few options whose value needs code (lists, ranges, phases,
 * exports); the checks on these groups; and every option's default.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "analysis/sample.h"
#include "cli/keys.h"
#include "cli/opts_common.h"
#include "cli/value.h"
#include "export/export.h"
#include "lib/err.h"
#include "proc/rank.h"

void mt_opt_pids(struct mt_options *o, char *arg)
{
	char buf[1024], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		mt_bad("pid list", arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->npids == MT_MAX_PIDS) {
			mt_err("at most %d pids can be traced", MT_MAX_PIDS);
			exit(2);
		}
		o->pids[o->npids++] = (int)mt_parse_ull("pid", tok, INT_MAX);
		if (o->pids[o->npids - 1] <= 0)
			mt_bad("pid", tok);
	}
	if (!o->npids)
		mt_bad("pid list", arg);
}

/* whole MiB, a power of two: what the kernel's ring takes */
static void opt_ringbuf(struct mt_options *o, char *arg)
{
	unsigned long long v =
		mt_parse_size("ring buffer size", arg, 1ULL << 20, 1ULL << 20);

	if ((v & ((1ULL << 20) - 1)) || v > (1ULL << 30) || (v & (v - 1)))
		mt_bad("ring buffer size (a power of two MiB)", arg);
	o->ringbuf_mb = (unsigned int)(v >> 20);
}

static const struct mt_opt target_opts[] = {
	MT_OPT_CALL("pid", 'p', "PID[,PID...]", "Processes to trace",
		    mt_opt_pids),
	MT_OPT_UNSIGNED("children", OPT_CHILDREN, "PID",
			"PID (a launcher such as torchrun) and all its "
			"descendants, also the ones it starts later",
			children_of, "pid", INT_MAX, true),
	MT_OPT_FLAG("all", OPT_ALL,
		    "Every process that maps libcudart, libcuda or libc10, "
		    "also the ones that start later",
		    all),
	MT_OPT_DURATION("duration", 'd', "TIME",
			"Stop after TIME (2, 2s, 500ms, 1m)", duration,
			"duration", MT_DURATION_MIN, MT_DURATION_MAX),
	MT_OPT_FLAG("no-cpu", OPT_NO_CPU, "Do not trace CPU tensor memory",
		    no_cpu),
	MT_OPT_FLAG("no-cuda", OPT_NO_CUDA,
		    "Do not trace CUDA (runtime, driver, caching allocator)",
		    no_cuda),
	MT_OPT_FLAG("wait", OPT_WAIT,
		    "Wait for the libraries if a process maps none yet",
		    wait_libs),
	MT_OPT_CALL("ringbuf-mb", OPT_RINGBUF, "SIZE",
		    "Ring buffer size, a power of two MiB; a bare number is "
		    "MiB (default 16)",
		    opt_ringbuf),
	MT_OPT_COUNT("verbose", 'v', "Print libbpf debug output", verbose),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_target = { "What to trace:", target_opts };

/* --user: looked up at once, so that a wrong name ends us before a trace */
static void opt_user(struct mt_options *o, char *arg)
{
	char err[256];

	mt_once(o->run_as.set, "--user");
	if (mt_run_as_lookup(arg, "/etc/passwd", "/etc/group", &o->run_as, err,
			     sizeof(err))) {
		mt_err("%s", err);
		exit(2);
	}
}

static const struct mt_opt command_opts[] = {
	MT_OPT_FLAG("follow", 'f',
		    "-- COMMAND's child processes too, and theirs (a shell "
		    "or launcher that starts the job; a dry run always does)",
		    follow),
	MT_OPT_CALL("user", OPT_USER, "USER",
		    "Run -- COMMAND as USER, a name or a uid (under sudo it "
		    "runs as root otherwise: --user \"$SUDO_USER\")",
		    opt_user),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_command = { "Running a command:",
					      command_opts };

static void opt_sample_bytes(struct mt_options *o, char *arg)
{
	o->sample_bytes = mt_parse_size("sample size", arg, 1, 1);
	if (o->sample_bytes > MT_SAMPLE_MAX)
		mt_bad("sample size (at most 1024T)", arg);
}

void mt_opt_phase_filter(struct mt_options *o, char *arg)
{
	mt_once(o->filter.phase != NULL, "--phase NAME");
	if (!*arg)
		mt_bad("phase", arg);
	o->filter.phase = arg;
}

/* --phase NAME=QUALNAME names a phase; NAME alone filters by one */
static void opt_phase(struct mt_options *o, char *arg)
{
	char *eq = strchr(arg, '=');
	struct mt_user_phase *p;

	if (!eq) {
		if (o->mode == MT_MODE_RECORD) {
			mt_err("--phase %s: a record keeps every event; "
			       "filter it with report or script (--phase "
			       "NAME=QUALNAME names a phase)",
			       arg);
			exit(2);
		}
		mt_opt_phase_filter(o, arg);
		return;
	}
	if (eq == arg || !eq[1])
		mt_bad("phase (NAME=QUALNAME)", arg);
	if (o->rules.nuser == MT_MAX_USER_PHASES) {
		mt_err("at most %d --phase", MT_MAX_USER_PHASES);
		exit(2);
	}
	*eq = '\0';
	p = &o->rules.user[o->rules.nuser++];
	p->name = arg;
	p->qualname = eq + 1;
}

static void opt_trace_exceptions(struct mt_options *o, char *arg)
{
	if (!*arg || *arg == ',')
		mt_bad("exception types", arg);
	o->exc_types = arg;
}

static const struct mt_opt python_opts[] = {
	MT_OPT_FLAG("no-python", OPT_NO_PYTHON,
		    "No Python stacks, modules or phases (cheapest)",
		    no_python),
	MT_OPT_CALL("sample-bytes", OPT_SAMPLE_BYTES, "SIZE",
		    "Walk the Python stack of one allocation every SIZE bytes "
		    "on average (e.g. 512K), chosen by bytes: totals stay "
		    "exact, module and line figures become estimates",
		    opt_sample_bytes),
	MT_OPT_UNSIGNED("max-depth", OPT_MAX_DEPTH, "N",
			"Python frames kept per stack, 1-64 (default 64)",
			max_depth, "depth", 64, true),
	MT_OPT_STRING("root-name", OPT_ROOT_NAME, "NAME",
		      "Name of the outermost nn.Module (default: its class)",
		      rules.root_name),
	MT_OPT_CALL("phase", OPT_PHASE, "NAME=QUALNAME|NAME",
		    "Phase NAME while a frame QUALNAME runs (repeatable); NAME "
		    "alone: only the events of phase NAME",
		    opt_phase),
	MT_OPT_STRING("module-log", OPT_MODULE_LOG, "FILE",
		      "Per module and stage records per step; {pid}, {rank} "
		      "expand",
		      module_log),
	MT_OPT_FLAG("log-time", OPT_LOG_TIME,
		    "Timestamps in the --module-log records", log_time),
	MT_OPT_CALL("trace-exceptions", OPT_TRACE_EXC, "TYPE[,TYPE...]",
		    "Print Python exceptions of these types (e.g. "
		    "OutOfMemoryError; all: every one) with their stack when "
		    "raised",
		    opt_trace_exceptions),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_python = { "Python attribution:",
					     python_opts };

static const struct mt_opt watch_opts[] = {
	MT_OPT_DURATION("watch", OPT_WATCH, "TIME",
			"A line every TIME with usage, growth and time to OOM",
			watch, "interval", 0.01, 1e6),
	MT_OPT_DURATION("watch-window", OPT_WATCH_WINDOW, "TIME",
			"The span of samples the growth is fitted on (default "
			"30s)",
			watch_window, "window", 0.01, 1e7),
	MT_OPT_SIZE("device-mem", OPT_DEVICE_MEM, "SIZE",
		    "Device memory for --watch, e.g. 80GiB (default: from "
		    "NVML)",
		    device_mem, "size", 1, 1),
	MT_OPT_DOUBLE("alert-pct", OPT_ALERT_PCT, "PCT",
		      "--watch: alert when usage crosses PCT % of the device",
		      alert_pct, "percentage", 1, 100),
	MT_OPT_STRING("metrics-addr", OPT_METRICS_ADDR, "HOST:PORT",
		      "Serve Prometheus metrics on http://HOST:PORT/metrics, "
		      "without authentication (no HOST: 127.0.0.1; 0.0.0.0: "
		      "every interface)",
		      metrics_addr),
	MT_OPT_STRING("metrics-file", OPT_METRICS_FILE, "PATH",
		      "Write Prometheus metrics to PATH every second "
		      "(node_exporter's textfile collector)",
		      metrics_file),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_watch = { "Watching:", watch_opts };

/* N optimizer steps, or a duration with its unit (5s, 1m): seconds */
static void opt_leak_age(struct mt_options *o, char *arg)
{
	size_t n = strlen(arg);

	/* no unit: steps (a fraction of one is refused, as before) */
	if (n && (isdigit((unsigned char)arg[n - 1]) || arg[n - 1] == '.')) {
		o->leak_age_steps =
			(unsigned int)mt_parse_ull("leak age", arg, 1000000);
		if (!o->leak_age_steps)
			mt_bad("leak age", arg);
		return;
	}
	o->leak_age_seconds = mt_parse_duration("leak age", arg, 0.001, 1e9);
}

static const struct mt_opt output_opts[] = {
	MT_OPT_STRING("output", 'o', "FILE",
		      "Write events and summary to FILE (record: the record)",
		      output),
	MT_OPT_FLAG("quiet", 'q', "Print the summary only", quiet),
	MT_OPT_FLAG("keys", OPT_KEYS,
		    "Print the summary as '#' key=value lines, the stable "
		    "machine format (docs/KEYS.md)",
		    keys),
	MT_OPT_DOUBLE("percent-limit", OPT_PERCENT_LIMIT, "PCT",
		      "The report's rows below PCT % of their table's total "
		      "are summed into one '... N more' row (default 1; 0: "
		      "every row)",
		      percent_limit, "percentage", 0, 100),
	MT_OPT_SIZE("min-size", OPT_MIN_SIZE, "SIZE",
		    "Print only events of at least SIZE, e.g. 1M (all are "
		    "counted)",
		    min_size, "size", 1, 0),
	MT_OPT_FLAG("no-stack", OPT_NO_STACK,
		    "No Python stack lines (phase= and module= stay)",
		    no_stack),
	MT_OPT_UNSIGNED("max-live", OPT_MAX_LIVE, "N",
			"Track at most N live allocations (default 4194304); "
			"past it the figures that pair a free with its "
			"allocation are marked incomplete=live_table and "
			"advise_max_live= gives an N that holds them all",
			max_live, "live table size", 1ULL << 32, true),
	MT_OPT_UNSIGNED("top-live", OPT_TOP_LIVE, "N",
			"Live-at-exit groups in the summary (default 20)",
			top_live, "group count", 1000000, false),
	MT_OPT_UNSIGNED("top-ops", OPT_TOP_OPS, "N",
			"Call sites in the operators table (default 20)",
			top_ops, "operator count", 1000000, false),
	MT_OPT_CALL("leak-age", OPT_LEAK_AGE, "N|TIME",
		    "Leaks live across N optimizer steps (default 2), or TIME "
		    "(5s, 1m) where a process has no steps (default 10s)",
		    opt_leak_age),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_output = { "What is printed:", output_opts };

/* one export a run: a second one was once silently kept */
static void opt_export(struct mt_options *o, char *arg)
{
	if (o->export_kind) {
		mt_err("--export given twice ('%s', then '%s'): give one",
		       o->export_kind, arg);
		exit(2);
	}
	if (!mt_exporter_find(arg)) {
		mt_err("no export '%s' (there are: %s)", arg,
		       mt_export_names());
		exit(2);
	}
	o->export_kind = arg;
}

static void opt_at(struct mt_options *o, char *arg)
{
	if (!strcmp(arg, "peak"))
		o->at_peak = true;
	else
		o->at = mt_parse_double("time", arg, 0, 1e12);
}

static const struct mt_opt export_opts[] = {
	MT_OPT_CALL("export", OPT_EXPORT, "KIND",
		    "Write the events as KIND into -o FILE: memviz, perfetto, "
		    "speedscope, folded, json or svg",
		    opt_export),
	MT_OPT_FLAG("folded-prefix", OPT_FOLDED_PREFIX,
		    "--export folded: module and phase as the outermost frames",
		    folded_prefix),
	MT_OPT_CALL("at", OPT_AT, "SECS|peak",
		    "What was alive SECS after the first event, or at the peak "
		    "(report; --export speedscope, folded; memviz: SECS)",
		    opt_at),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_export = { "Exports:", export_opts };

/*
 * "A,B", "A," or ",B" (open ends), or "A" where one is a range of itself:
 * the two parts, split in arg. A part is NULL where it is empty.
 */
static void split_range(const char *what, char *arg, char **lo, char **hi,
			bool single)
{
	char *comma = strchr(arg, ',');

	/* checked whole, before the split cuts arg */
	if ((!comma && !single) || !strcmp(arg, ",") ||
	    (comma && strchr(comma + 1, ',')))
		mt_bad(what, arg);
	*lo = arg;
	*hi = comma ? comma + 1 : NULL;
	if (comma)
		*comma = '\0';
	else
		*hi = arg;
	if (!**lo)
		*lo = NULL;
	if (*hi && !**hi)
		*hi = NULL;
}

/* --time START,END: seconds (or any TIME) since the first event */
static void opt_time(struct mt_options *o, char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	char copy[128], *lo, *hi;

	mt_once(f->has_time, "--time");
	snprintf(copy, sizeof(copy), "%s", arg);
	split_range("time window (START,END)", arg, &lo, &hi, false);
	f->has_time = true;
	f->t_start = lo ? mt_parse_duration("time", lo, 0, 1e12) : 0;
	f->t_end = hi ? mt_parse_duration("time", hi, 0, 1e12) : -1;
	if (f->t_end >= 0 && f->t_end < f->t_start) {
		mt_err("--time %s: the start is after the end", copy);
		exit(2);
	}
}

/* --steps A,B: a range of optimizer steps, open at either end */
static void opt_steps(struct mt_options *o, char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	char copy[128], *lo, *hi;

	mt_once(f->has_steps, "--steps");
	snprintf(copy, sizeof(copy), "%s", arg);
	split_range("step range (A,B)", arg, &lo, &hi, true);
	f->has_steps = true;
	f->step_min = lo ? (__u32)mt_parse_ull("step", lo, UINT_MAX) : 0;
	f->step_max = hi ? (__u32)mt_parse_ull("step", hi, UINT_MAX) : UINT_MAX;
	if (f->step_max < f->step_min) {
		mt_err("--steps %s: the first step is after the last", copy);
		exit(2);
	}
}

/* --size MIN[,MAX] in the grammar of every size */
static void opt_size_range(struct mt_options *o, char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	char copy[128], *lo, *hi;

	mt_once(f->has_size, "--size");
	snprintf(copy, sizeof(copy), "%s", arg);
	/* MIN alone: no upper bound */
	lo = arg;
	hi = strchr(arg, ',');
	if (hi)
		*hi++ = '\0';
	if (hi && (!*hi || strchr(hi, ',')))
		mt_bad("size range (MIN[,MAX])", copy);
	f->has_size = true;
	f->has_size_max = hi != NULL;
	/* 0 is a size like any other: --size 0,0 keeps empty allocations */
	f->size_min = *lo ? mt_parse_size("size", lo, 1, 0) : 0;
	f->size_max = hi ? mt_parse_size("size", hi, 1, 0) : 0;
	if (f->has_size_max && f->size_max < f->size_min) {
		mt_err("--size %s: MIN is above MAX", copy);
		exit(2);
	}
}

/* a list of up to MT_FILTER_MAX_VALUES words, split in arg */
static size_t parse_words(const char *what, char *arg, const char **v, size_t n)
{
	char *save = NULL, *tok;

	if (!*arg || strstr(arg, ",,") || *arg == ',' ||
	    arg[strlen(arg) - 1] == ',')
		mt_bad(what, arg);
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MT_FILTER_MAX_VALUES) {
			mt_err("at most %d values in a %s",
			       MT_FILTER_MAX_VALUES, what);
			exit(2);
		}
		v[n++] = tok;
	}
	return n;
}

static void opt_tids(struct mt_options *o, char *arg)
{
	const char *w[MT_FILTER_MAX_VALUES];
	size_t n = parse_words("tid list", arg, w, 0);

	if (o->filter.ntids + n > MT_FILTER_MAX_VALUES) {
		mt_err("at most %d --tid", MT_FILTER_MAX_VALUES);
		exit(2);
	}
	for (size_t i = 0; i < n; i++) {
		__u32 t = (__u32)mt_parse_ull("tid", w[i], INT_MAX);

		if (!t)
			mt_bad("tid", w[i]);
		o->filter.tids[o->filter.ntids++] = t;
	}
}

static void opt_comms(struct mt_options *o, char *arg)
{
	o->filter.ncomms = parse_words("command list", arg, o->filter.comms,
				       o->filter.ncomms);
}

static void opt_module(struct mt_options *o, char *arg)
{
	mt_once(o->filter.module != NULL, "--module");
	if (!*arg)
		mt_bad("module", arg);
	o->filter.module = arg;
}

static void opt_events(struct mt_options *o, char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	size_t first = f->nevents;
	char err[256];

	f->nevents = parse_words("event list", arg, f->events, f->nevents);
	for (size_t i = first; i < f->nevents; i++) {
		if (mt_filter_check_event(f->events[i], err, sizeof(err))) {
			mt_err("%s", err);
			exit(2);
		}
	}
}

static void opt_kinds(struct mt_options *o, char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	const char *w[MT_FILTER_MAX_VALUES];
	char err[256];
	size_t n = parse_words("kind list", arg, w, 0);

	for (size_t i = 0; i < n; i++) {
		if (mt_filter_check_kind(w[i], err, sizeof(err))) {
			mt_err("%s", err);
			exit(2);
		}
		if (f->nkinds == MT_MK_MAX) {
			mt_err("--kind: at most the %d kinds, each once",
			       MT_MK_MAX);
			exit(2);
		}
		f->kinds[f->nkinds++] = w[i];
	}
}

static const struct mt_opt filter_opts[] = {
	MT_OPT_CALL("time", OPT_TIME, "START,END",
		    "Only events from START to END seconds after the first "
		    "event (START, or ,END: open)",
		    opt_time),
	MT_OPT_CALL("steps", OPT_STEPS, "A,B",
		    "Only events of optimizer steps A to B (A, or ,B: open)",
		    opt_steps),
	MT_OPT_CALL("tid", OPT_TID, "TID[,TID...]", "Only these threads",
		    opt_tids),
	MT_OPT_CALL("comm", OPT_COMM, "NAME[,NAME...]",
		    "Only threads of these names", opt_comms),
	MT_OPT_CALL("module", OPT_MODULE, "PREFIX",
		    "Only module PREFIX and its children (encoder.layers.1)",
		    opt_module),
	MT_OPT_CALL("event", OPT_EVENT, "KIND[,KIND...]",
		    "Only these allocating kinds (c10:cpu_alloc) and their "
		    "frees",
		    opt_events),
	MT_OPT_CALL("kind", OPT_KIND, "KIND[,KIND...]",
		    "Only allocations of these kinds of memory (activations, "
		    "optimizer_state...) and their frees; report and script "
		    "read the record twice, to tell them",
		    opt_kinds),
	MT_OPT_CALL("size", OPT_SIZE, "MIN[,MAX]",
		    "Only allocations of MIN to MAX bytes (1M, 1M,1G) and "
		    "their frees",
		    opt_size_range),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_filter = { "Filters:", filter_opts };

static const struct mt_opt input_opts[] = {
	MT_OPT_STRING("input", 'i', "FILE", "The record to read", input),
	MT_OPT_END_ENTRY,
};

const struct mt_opt_group mt_opts_input = { "Reading a record:", input_opts };

void mt_options_init(struct mt_options *o, enum mt_mode mode)
{
	*o = (struct mt_options){ .mode = mode,
				  .at = -1,
				  .leak_age_steps = 2,
				  .leak_age_seconds = 10,
				  .top_ops = 20,
				  .watch_window = 30,
				  .ringbuf_mb = 16,
				  .max_live = 4194304,
				  .top_live = 20,
				  .percent_limit = -1,
				  .max_depth = MT_MAX_FRAMES };
}

int mt_check_rows(const struct mt_options *o)
{
	if (o->percent_limit >= 0 && o->keys) {
		mt_err("--percent-limit cuts the report's rows; --keys "
		       "prints every figure: give one of them");
		return 2;
	}
	return 0;
}

int mt_check_export_output(const struct mt_options *o)
{
	if (o->export_kind && !o->output) {
		mt_err("--export needs -o FILE");
		return 2;
	}
	return 0;
}

int mt_check_user(const struct mt_options *o)
{
	if (o->follow && !o->command) {
		mt_err("-f follows the processes -- COMMAND starts: give a "
		       "command (--children PID follows a running launcher's)");
		return 2;
	}
	if (o->run_as.set && !o->command) {
		mt_err("--user is whom -- COMMAND runs as: give a command "
		       "(-p and --children trace processes as they run)");
		return 2;
	}
	return 0;
}

int mt_check_input(const struct mt_options *o, const char *name)
{
	if (!o->input) {
		mt_err("%s needs -i FILE (a record "
		       "made by memtrace-bpf record)",
		       name);
		return 2;
	}
	return 0;
}

int mt_check_at_export(const struct mt_options *o)
{
	if ((o->at >= 0 || o->at_peak) && o->export_kind &&
	    !(mt_exporter_find(o->export_kind)->at &
	      (o->at_peak ? MT_EXPORT_AT_PEAK : MT_EXPORT_AT_TIME))) {
		mt_err("--export %s cannot show what was alive %s: --at "
		       "%sgoes with report and --export %s",
		       o->export_kind,
		       o->at_peak ? "at the peak" : "at one time",
		       o->at_peak ? "peak " : "",
		       o->at_peak ? "speedscope or folded" :
				    "speedscope, folded or memviz");
		return 2;
	}
	return 0;
}

int mt_check_watch(const struct mt_options *o)
{
	if (o->watch && o->output && mt_path_per_process(o->output)) {
		mt_err("--watch reads one summary: give "
		       "-o one file, not one per {pid} or {rank}");
		return 2;
	}
	/* a flight recorder dumps at --alert-pct too (cmd_record.c) */
	if ((o->alert_pct > 0 || o->device_mem) && !o->watch && !o->flight_on) {
		mt_err("--alert-pct and --device-mem "
		       "go with --watch or --flight");
		return 2;
	}
	return 0;
}

/* --sample-bytes and what reads every event's stack: refused */
static int check_sampled(const struct mt_options *o)
{
	char err[512];

	if (o->no_python) {
		mt_err("--sample-bytes samples the Python stacks that "
		       "--no-python turns off: give one of them");
		return 2;
	}
	if (o->module_log) {
		mt_err("--module-log reads the phase of every event, and "
		       "--sample-bytes walks the stacks of a sample only: give "
		       "one of them");
		return 2;
	}
	if (mt_filter_check_sampled(&o->filter, o->sample_bytes, err,
				    sizeof(err))) {
		mt_err("%s", err);
		return 2;
	}
	return 0;
}

int mt_check_tracing(const struct mt_options *o)
{
	if ((o->npids > 0) + !!o->command + !!o->children_of + o->all != 1) {
		mt_err("give one of -p PID, --children "
		       "PID, --all or -- COMMAND (see --help)");
		return 2;
	}
	if (o->exc_types && o->no_python) {
		mt_err("--trace-exceptions reads the "
		       "Python that --no-python leaves alone");
		return 2;
	}
	if (o->sample_bytes && check_sampled(o))
		return 2;
	if (o->module_log && o->no_python) {
		mt_err("--module-log needs the Python "
		       "attribution that --no-python turns off");
		return 2;
	}
	if (o->no_cpu && o->no_cuda) {
		mt_err("--no-cpu with --no-cuda leaves "
		       "nothing to trace");
		return 2;
	}
	return 0;
}
