// SPDX-License-Identifier: GPL-2.0
/*
 * The command line: the options in groups, each mode taking the groups its
 * command (main.c) names, so that `memtrace-bpf MODE --help` shows what
 * that mode takes and an option of another mode is refused by name.
 */
#include <argp.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/types.h>
#include "analysis/sample.h"
#include "export/export.h"
#include "memtrace.h"
#include "proc/rank.h"
#include "cli/options.h"
#include "cli/value.h"
#include "lib/err.h"
#include "lib/version.h"

const char *argp_program_version = "memtrace-bpf " MT_VERSION;
const char *argp_program_bug_address =
	"<https://github.com/memtrace-bpf/memtrace-bpf/issues>";

enum {
	OPT_MIN_SIZE = 0x100,
	OPT_NO_CPU,
	OPT_NO_CUDA,
	OPT_WAIT,
	OPT_RINGBUF,
	OPT_MAX_LIVE,
	OPT_TOP_LIVE,
	OPT_NO_STACK,
	OPT_MAX_DEPTH,
	OPT_ROOT_NAME,
	OPT_PHASE,
	OPT_MODULE_LOG,
	OPT_LOG_TIME,
	OPT_NO_PYTHON,
	OPT_SAMPLE_BYTES,
	OPT_AT,
	OPT_LEAK_AGE,
	OPT_TOP_OPS,
	OPT_KEYS,
	OPT_PERCENT_LIMIT,
	OPT_WATCH,
	OPT_WATCH_WINDOW,
	OPT_DEVICE_MEM,
	OPT_ALERT_PCT,
	OPT_TRACE_EXC,
	OPT_EXPORT,
	OPT_FOLDED_PREFIX,
	OPT_METRICS_ADDR,
	OPT_METRICS_FILE,
	OPT_CHILDREN,
	OPT_ALL,
	OPT_EXPANDABLE,
	OPT_SCALE,
	OPT_MAX_SPLIT,
	OPT_ROUNDUP_DIV,
	OPT_GC_THRESHOLD,
	OPT_CHECK,
	OPT_TIME,
	OPT_STEPS,
	OPT_TID,
	OPT_COMM,
	OPT_MODULE,
	OPT_EVENT,
	OPT_SIZE,
	OPT_INTERVAL,
	OPT_DRY_RUN,
	OPT_USER,
	OPT_DEVICE,
	OPT_DEVICES,
	OPT_FLIGHT,
	OPT_FLIGHT_DUMPS,
	OPT_FLIGHT_TOTAL,
	OPT_FLIGHT_AT_END,
	OPT_FLIGHT_TOGETHER,
};

static const struct argp_option target_opts[] = {
	{ "pid", 'p', "PID[,PID...]", 0, "Processes to trace", 0 },
	{ "children", OPT_CHILDREN, "PID", 0,
	  "PID (a launcher such as torchrun) and all its descendants, also "
	  "the ones it starts later",
	  0 },
	{ "all", OPT_ALL, NULL, 0,
	  "Every process that maps libcudart, libcuda or libc10, also the "
	  "ones that start later",
	  0 },
	{ "duration", 'd', "TIME", 0, "Stop after TIME (2, 2s, 500ms, 1m)", 0 },
	{ "no-cpu", OPT_NO_CPU, NULL, 0, "Do not trace CPU tensor memory", 0 },
	{ "no-cuda", OPT_NO_CUDA, NULL, 0,
	  "Do not trace CUDA (runtime, driver, caching allocator)", 0 },
	{ "wait", OPT_WAIT, NULL, 0,
	  "Wait for the libraries if a process maps none yet", 0 },
	{ "ringbuf-mb", OPT_RINGBUF, "SIZE", 0,
	  "Ring buffer size, a power of two MiB; a bare number is MiB "
	  "(default 16)",
	  0 },
	{ "verbose", 'v', NULL, 0, "Print libbpf debug output", 0 },
	{ 0 },
};

static const struct argp_option python_opts[] = {
	{ "no-python", OPT_NO_PYTHON, NULL, 0,
	  "No Python stacks, modules or phases (cheapest)", 0 },
	{ "sample-bytes", OPT_SAMPLE_BYTES, "SIZE", 0,
	  "Walk the Python stack of one allocation every SIZE bytes on "
	  "average (e.g. 512K), chosen by bytes: totals stay exact, module "
	  "and line figures become estimates",
	  0 },
	{ "max-depth", OPT_MAX_DEPTH, "N", 0,
	  "Python frames kept per stack, 1-64 (default 64)", 0 },
	{ "root-name", OPT_ROOT_NAME, "NAME", 0,
	  "Name of the outermost nn.Module (default: its class)", 0 },
	{ "phase", OPT_PHASE, "NAME=QUALNAME|NAME", 0,
	  "Phase NAME while a frame QUALNAME runs (repeatable); NAME alone: "
	  "only the events of phase NAME",
	  0 },
	{ "module-log", OPT_MODULE_LOG, "FILE", 0,
	  "Per module and stage records per step; {pid}, {rank} expand", 0 },
	{ "log-time", OPT_LOG_TIME, NULL, 0,
	  "Timestamps in the --module-log records", 0 },
	{ "trace-exceptions", OPT_TRACE_EXC, "TYPE[,TYPE...]", 0,
	  "Print Python exceptions of these types (e.g. OutOfMemoryError; "
	  "all: every one) with their stack when raised",
	  0 },
	{ 0 },
};

static const struct argp_option watch_opts[] = {
	{ "watch", OPT_WATCH, "TIME", 0,
	  "A line every TIME with usage, growth and time to OOM", 0 },
	{ "watch-window", OPT_WATCH_WINDOW, "TIME", 0,
	  "The span of samples the growth is fitted on (default 30s)", 0 },
	{ "device-mem", OPT_DEVICE_MEM, "SIZE", 0,
	  "Device memory for --watch, e.g. 80GiB (default: from NVML)", 0 },
	{ "alert-pct", OPT_ALERT_PCT, "PCT", 0,
	  "--watch: alert when usage crosses PCT % of the device", 0 },
	{ "metrics-addr", OPT_METRICS_ADDR, "HOST:PORT", 0,
	  "Serve Prometheus metrics on http://HOST:PORT/metrics, without "
	  "authentication (no HOST: 127.0.0.1; 0.0.0.0: every interface)",
	  0 },
	{ "metrics-file", OPT_METRICS_FILE, "PATH", 0,
	  "Write Prometheus metrics to PATH every second (node_exporter's "
	  "textfile collector)",
	  0 },
	{ 0 },
};

static const struct argp_option output_opts[] = {
	{ "output", 'o', "FILE", 0,
	  "Write events and summary to FILE (record: the record)", 0 },
	{ "quiet", 'q', NULL, 0, "Print the summary only", 0 },
	{ "keys", OPT_KEYS, NULL, 0,
	  "Print the summary as '#' key=value lines, the stable machine "
	  "format (docs/KEYS.md)",
	  0 },
	{ "percent-limit", OPT_PERCENT_LIMIT, "PCT", 0,
	  "The report's rows below PCT % of their table's total are summed "
	  "into one '... N more' row (default 1; 0: every row)",
	  0 },
	{ "min-size", OPT_MIN_SIZE, "SIZE", 0,
	  "Print only events of at least SIZE, e.g. 1M (all are counted)", 0 },
	{ "no-stack", OPT_NO_STACK, NULL, 0,
	  "No Python stack lines (phase= and module= stay)", 0 },
	{ "max-live", OPT_MAX_LIVE, "N", 0,
	  "Track at most N live allocations (default 4194304); past it the "
	  "figures that pair a free with its allocation are marked "
	  "incomplete=live_table and advise_max_live= gives an N that holds "
	  "them all",
	  0 },
	{ "top-live", OPT_TOP_LIVE, "N", 0,
	  "Live-at-exit groups in the summary (default 20)", 0 },
	{ "top-ops", OPT_TOP_OPS, "N", 0,
	  "Call sites in the operators table (default 20)", 0 },
	{ "leak-age", OPT_LEAK_AGE, "N|TIME", 0,
	  "Leaks live across N optimizer steps (default 2), or TIME (5s, "
	  "1m) where a process has no steps (default 10s)",
	  0 },
	{ 0 },
};

static const struct argp_option export_opts[] = {
	{ "export", OPT_EXPORT, "KIND", 0,
	  "Write the events as KIND into -o FILE: memviz, perfetto, "
	  "speedscope, folded, json or svg",
	  0 },
	{ "folded-prefix", OPT_FOLDED_PREFIX, NULL, 0,
	  "--export folded: module and phase as the outermost frames", 0 },
	{ "at", OPT_AT, "SECS|peak", 0,
	  "What was alive SECS after the first event, or at the peak "
	  "(report; --export speedscope, folded; memviz: SECS)",
	  0 },
	{ 0 },
};

static const struct argp_option filter_opts[] = {
	{ "time", OPT_TIME, "START,END", 0,
	  "Only events from START to END seconds after the first event "
	  "(START, or ,END: open)",
	  0 },
	{ "steps", OPT_STEPS, "A,B", 0,
	  "Only events of optimizer steps A to B (A, or ,B: open)", 0 },
	{ "tid", OPT_TID, "TID[,TID...]", 0, "Only these threads", 0 },
	{ "comm", OPT_COMM, "NAME[,NAME...]", 0, "Only threads of these names",
	  0 },
	{ "module", OPT_MODULE, "PREFIX", 0,
	  "Only module PREFIX and its children (encoder.layers.1)", 0 },
	{ "event", OPT_EVENT, "KIND[,KIND...]", 0,
	  "Only these allocating kinds (c10:cpu_alloc) and their frees", 0 },
	{ "size", OPT_SIZE, "MIN[,MAX]", 0,
	  "Only allocations of MIN to MAX bytes (1M, 1M,1G) and their frees",
	  0 },
	{ 0 },
};

/* report and script: -p and --phase NAME filter what the record holds */
static const struct argp_option select_opts[] = {
	{ "pid", 'p', "PID[,PID...]", 0,
	  "Only these processes (as perf report --pid)", 0 },
	{ "phase", OPT_PHASE, "NAME", 0, "Only the events of phase NAME", 0 },
	{ 0 },
};

static const struct argp_option input_opts[] = {
	{ "input", 'i', "FILE", 0, "The record to read", 0 },
	{ 0 },
};

static const struct argp_option estimate_opts[] = {
	{ "device-mem", OPT_DEVICE_MEM, "SIZE", 0,
	  "The GPU's memory the allocator may reserve, e.g. 80GiB "
	  "(default: no limit)",
	  0 },
	{ "max-live", OPT_MAX_LIVE, "N", 0,
	  "Track at most N live allocations per device (default 4194304)", 0 },
	{ "expandable-segments", OPT_EXPANDABLE, NULL, 0,
	  "Model expandable_segments:True", 0 },
	{ "scale", OPT_SCALE, "PATTERN=FACTOR", 0,
	  "Sizes of allocations whose stack, module or phase contains "
	  "PATTERN times FACTOR (repeatable, first match wins)",
	  0 },
	{ "max-split-size-mb", OPT_MAX_SPLIT, "SIZE", 0,
	  "Model max_split_size_mb; a bare number is MiB (default: no limit)",
	  0 },
	{ "roundup-power2-divisions", OPT_ROUNDUP_DIV, "N", 0,
	  "Model roundup_power2_divisions (a power of two)", 0 },
	{ "gc-threshold", OPT_GC_THRESHOLD, "FRACTION", 0,
	  "Model garbage_collection_threshold (of --device-mem)", 0 },
	{ "check", OPT_CHECK, NULL, 0,
	  "Compare the model's reserved with the recorded c10 totals at "
	  "every event; exit 1 at a mismatch",
	  0 },
	{ 0 },
};

static const struct argp_option dryrun_opts[] = {
	{ "dry-run", OPT_DRY_RUN, NULL, 0,
	  "Run -- COMMAND on a stand-in GPU under PyTorch's own allocator "
	  "and say what the GPU would hold (no GPU needed)",
	  0 },
	{ "device", OPT_DEVICE, "PRESET|SIZE", 0,
	  "--dry-run: the GPU, a preset (H100-80GB, A100-40GB, L4...: "
	  "--device help lists them) or a memory size (default H100-80GB)",
	  0 },
	{ "devices", OPT_DEVICES, "N", 0,
	  "--dry-run: how many such GPUs, 1-8 (default 1)", 0 },
	{ 0 },
};

static const struct argp_option flight_opts[] = {
	{ "flight", OPT_FLIGHT, "TIME|SIZE", 0,
	  "A flight recorder: keep each process's last TIME (10m, 1h) or "
	  "SIZE (512MiB) of events and every allocation alive at its start; "
	  "dump them into the folder -o DIR on an OOM, a killed process, "
	  "an exit status not 0, --alert-pct, SIGUSR1",
	  0 },
	{ "flight-dumps", OPT_FLIGHT_DUMPS, "N", 0,
	  "--flight: dumps kept in DIR, the oldest removed first (default "
	  "16)",
	  0 },
	{ "flight-total", OPT_FLIGHT_TOTAL, "SIZE", 0,
	  "--flight: bytes of dumps kept in DIR (default 8GiB)", 0 },
	{ "flight-at-end", OPT_FLIGHT_AT_END, NULL, 0,
	  "--flight: dump every window when the trace ends too (a clean "
	  "exit; a failed one is dumped anyway)",
	  0 },
	{ "flight-together", OPT_FLIGHT_TOGETHER, NULL, 0,
	  "--flight: a process's dump dumps every process traced", 0 },
	{ 0 },
};

static const struct argp_option top_opts[] = {
	{ "interval", OPT_INTERVAL, "TIME", 0,
	  "Redraw every TIME, at least 100ms (default 1s)", 0 },
	{ 0 },
};

static const struct argp_option command_opts[] = {
	{ "user", OPT_USER, "USER", 0,
	  "Run -- COMMAND as USER, a name or a uid (under sudo it runs as "
	  "root otherwise: --user \"$SUDO_USER\")",
	  0 },
	{ 0 },
};

/* every mode's: -h as --help */
static const struct argp_option root_opts[] = {
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the help", 0 },
	{ 0 },
};

/* the groups, in the order --help lists them */
static const struct group {
	unsigned int bit;
	const char *header;
	const struct argp_option *opts;
} groups[] = {
	{ MT_OPTS_INPUT, "Reading a record:", input_opts },
	{ MT_OPTS_TARGET, "What to trace:", target_opts },
	{ MT_OPTS_COMMAND, "Running a command:", command_opts },
	{ MT_OPTS_PYTHON, "Python attribution:", python_opts },
	{ MT_OPTS_OUTPUT, "What is printed:", output_opts },
	{ MT_OPTS_EXPORT, "Exports:", export_opts },
	{ MT_OPTS_SELECT, "Filters of a record:", select_opts },
	{ MT_OPTS_FILTER, "Filters:", filter_opts },
	{ MT_OPTS_WATCH, "Watching:", watch_opts },
	{ MT_OPTS_ESTIMATE, "The allocator model:", estimate_opts },
	{ MT_OPTS_DRYRUN, "The dry run:", dryrun_opts },
	{ MT_OPTS_FLIGHT, "The flight recorder:", flight_opts },
	{ MT_OPTS_TOP, "The live view:", top_opts },
};

#define NGROUPS (sizeof(groups) / sizeof(groups[0]))
/* the options of all groups together, at most */
#define MAX_OPTS 96

/* what the parsers of one mode's argp share (their state->input) */
struct parse_ctx {
	struct mt_options *o;
	const struct mt_cmd *cmd, *cmds;
	size_t ncmds;
	size_t nchildren; /* of the mode's argp: its groups, the others */
};

/* N optimizer steps, or a duration with its unit (5s, 1m): seconds */
static void parse_leak_age(struct argp_state *state, struct mt_options *o,
			   const char *arg)
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

static void parse_pids(struct argp_state *state, struct mt_options *o,
		       const char *arg)
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

/*
 * "A,B", "A," or ",B" (open ends), or "A" where one is a range of itself:
 * the two parts, split in arg. A part is NULL where it is empty.
 */
static void split_range(struct argp_state *state, const char *what, char *arg,
			char **lo, char **hi, bool single)
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
static void parse_time_window(struct argp_state *state, struct mt_options *o,
			      char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	char copy[128], *lo, *hi;

	mt_once(f->has_time, "--time");
	snprintf(copy, sizeof(copy), "%s", arg);
	split_range(state, "time window (START,END)", arg, &lo, &hi, false);
	f->has_time = true;
	f->t_start = lo ? mt_parse_duration("time", lo, 0, 1e12) : 0;
	f->t_end = hi ? mt_parse_duration("time", hi, 0, 1e12) : -1;
	if (f->t_end >= 0 && f->t_end < f->t_start) {
		mt_err("--time %s: the start is after the end", copy);
		exit(2);
	}
}

/* --steps A,B: a range of optimizer steps, open at either end */
static void parse_steps(struct argp_state *state, struct mt_options *o,
			char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	char copy[128], *lo, *hi;

	mt_once(f->has_steps, "--steps");
	snprintf(copy, sizeof(copy), "%s", arg);
	split_range(state, "step range (A,B)", arg, &lo, &hi, true);
	f->has_steps = true;
	f->step_min = lo ? (__u32)mt_parse_ull("step", lo, UINT_MAX) : 0;
	f->step_max = hi ? (__u32)mt_parse_ull("step", hi, UINT_MAX) : UINT_MAX;
	if (f->step_max < f->step_min) {
		mt_err("--steps %s: the first step is after the last", copy);
		exit(2);
	}
}

/* --size MIN[,MAX] in the grammar of every size */
static void parse_size_range(struct argp_state *state, struct mt_options *o,
			     char *arg)
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
static size_t parse_words(struct argp_state *state, const char *what, char *arg,
			  const char **v, size_t n)
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

static void parse_tids(struct argp_state *state, struct mt_options *o,
		       char *arg)
{
	const char *w[MT_FILTER_MAX_VALUES];
	size_t n = parse_words(state, "tid list", arg, w, 0);

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

static void parse_events(struct argp_state *state, struct mt_options *o,
			 char *arg)
{
	struct mt_filter_conf *f = &o->filter;
	size_t first = f->nevents;
	char err[256];

	f->nevents =
		parse_words(state, "event list", arg, f->events, f->nevents);
	for (size_t i = first; i < f->nevents; i++) {
		if (mt_filter_check_event(f->events[i], err, sizeof(err))) {
			mt_err("%s", err);
			exit(2);
		}
	}
}

static void parse_phase(struct argp_state *state, struct mt_options *o,
			char *arg)
{
	char *eq = strchr(arg, '=');
	struct mt_user_phase *p;

	/* NAME alone: a filter, in every mode that filters */
	if (!eq) {
		if (o->mode == MT_MODE_RECORD) {
			mt_err("--phase %s: a record keeps every event; "
			       "filter it with report or script (--phase "
			       "NAME=QUALNAME names a phase)",
			       arg);
			exit(2);
		}
		mt_once(o->filter.phase != NULL, "--phase NAME");
		if (!*arg)
			mt_bad("phase", arg);
		o->filter.phase = arg;
		return;
	}
	if (o->mode == MT_MODE_REPORT || o->mode == MT_MODE_SCRIPT) {
		mt_err("--phase %s names a phase while tracing; a record's "
		       "phases are set: filter one with --phase NAME",
		       arg);
		exit(2);
	}
	if (!eq || eq == arg || !eq[1])
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

static void parse_scale(struct argp_state *state, struct mt_options *o,
			char *arg)
{
	char *eq = strrchr(arg, '=');
	struct mt_scale *sc;

	if (!eq || eq == arg || !eq[1])
		mt_bad("scale (PATTERN=FACTOR)", arg);
	if (o->est.nscales == MT_MAX_SCALES) {
		mt_err("at most %d --scale", MT_MAX_SCALES);
		exit(2);
	}
	sc = &o->est.scales[o->est.nscales++];
	sc->factor = mt_parse_double("scale factor", eq + 1, 1e-6, 1e6);
	*eq = '\0';
	sc->pattern = arg;
}

/*
 * --device PRESET|SIZE: a preset as it is; a size with an H100's compute
 * capability and multiprocessors, which decide workspaces
 */
/* --user: looked up at once, so that a wrong name ends us before a trace */
static void parse_user(struct argp_state *state, struct mt_options *o,
		       const char *arg)
{
	char err[256];

	(void)state;
	mt_once(o->run_as.set, "--user");
	if (mt_run_as_lookup(arg, "/etc/passwd", "/etc/group", &o->run_as, err,
			     sizeof(err))) {
		mt_err("%s", err);
		exit(2);
	}
}

static void parse_device(struct argp_state *state, struct mt_options *o,
			 const char *arg)
{
	const struct mt_dryrun_device *p = mt_dryrun_preset(arg);
	char names[256];

	if (!strcmp(arg, "help")) {
		mt_dryrun_preset_print(stdout);
		exit(0);
	}
	if (p) {
		o->dryrun.dev = *p;
		return;
	}
	if (!isdigit((unsigned char)arg[0])) {
		mt_dryrun_preset_names(names, sizeof(names));
		mt_err("no device preset '%s' (there are: %s; or a size, "
		       "e.g. 24GiB)",
		       arg, names);
		exit(2);
	}
	o->dryrun.dev = *mt_dryrun_preset(MT_DRYRUN_DEFAULT);
	o->dryrun.dev.name = NULL;
	o->dryrun.dev.mem = mt_parse_size("device size", arg, 1, 1 << 20);
}

/*
 * --flight TIME|SIZE: a duration when its unit is one (10m, 1h, 600s, or
 * none: seconds), else a size (512MiB, 2G). Whichever it failed as, the
 * line says both: "10x" is no size, nor a time.
 */
static void parse_window(struct argp_state *state, struct mt_options *o,
			 const char *arg)
{
	static const char what[] =
		"--flight TIME|SIZE (a time of 1 s to 1e8 s: 600s, 10m, 1h; "
		"or a size of 1 MiB or more: 512MiB, 2G)";

	if (!mt_is_duration(arg)) {
		o->flight.window_bytes = mt_parse_size(what, arg, 1, 1 << 20);
		return;
	}
	o->flight.window_ns =
		(__u64)(mt_parse_duration(what, arg, 1, MT_DURATION_MAX) * 1e9);
	o->flight.window_bytes = MT_FLIGHT_MEM_DEFAULT;
}

/* the flight recorder's options (record) */
static bool parse_flight_arg(int key, char *arg, struct argp_state *state)
{
	struct mt_options *o = ((struct parse_ctx *)state->input)->o;

	switch (key) {
	case OPT_FLIGHT:
		mt_once(o->flight_on, "--flight");
		o->flight_on = true;
		parse_window(state, o, arg);
		break;
	case OPT_FLIGHT_DUMPS:
		o->flight.max_dumps = (unsigned int)mt_parse_ull(
			"dump count (1-100000)", arg, 100000);
		if (!o->flight.max_dumps)
			mt_bad("dump count (1-100000)", arg);
		break;
	case OPT_FLIGHT_TOTAL:
		o->flight.max_total = mt_parse_size(
			"size of the dumps (at least 1 MiB)", arg, 1, 1 << 20);
		break;
	case OPT_FLIGHT_AT_END:
		o->flight_at_end = true;
		break;
	case OPT_FLIGHT_TOGETHER:
		o->flight_together = true;
		break;
	default:
		return false;
	}
	return true;
}

/* the estimate mode's own options */
static bool parse_estimate_arg(int key, char *arg, struct argp_state *state)
{
	struct mt_options *o = ((struct parse_ctx *)state->input)->o;
	unsigned long long v;

	switch (key) {
	case OPT_EXPANDABLE:
		o->est.model.expandable_segments = true;
		break;
	case OPT_SCALE:
		parse_scale(state, o, arg);
		break;
	case OPT_MAX_SPLIT:
		/* PyTorch: max_split_size_mb must be > 20 */
		o->est.model.max_split_size =
			mt_parse_size("max split size (> 20 MiB)", arg,
				      1ULL << 20, (20ULL << 20) + 1);
		break;
	case OPT_ROUNDUP_DIV:
		v = mt_parse_ull("divisions (a power of two)", arg, 64);
		if (v & (v - 1))
			mt_bad("divisions (a power of two)", arg);
		o->est.model.roundup_power2_divisions = (unsigned int)v;
		break;
	case OPT_GC_THRESHOLD:
		o->est.model.gc_threshold =
			mt_parse_double("threshold", arg, 1e-9, 0.999999);
		break;
	case OPT_CHECK:
		o->est.check = true;
		break;
	case OPT_DRY_RUN:
		o->dry_run = true;
		break;
	case OPT_USER:
		parse_user(state, o, arg);
		break;
	case OPT_DEVICE:
		mt_once(o->has_device, "--device");
		o->has_device = true;
		parse_device(state, o, arg);
		break;
	case OPT_DEVICES:
		o->dryrun.devices = (unsigned int)mt_parse_ull(
			"device count (1-8)", arg, MT_DRYRUN_MAX_DEVICES);
		if (!o->dryrun.devices)
			mt_bad("device count (1-8)", arg);
		break;
	default:
		return false;
	}
	return true;
}

/*
 * Options of a group a mode takes that it still cannot honour: one line
 * and exit 2, never ignored.
 */
static void unhonoured(const struct mt_options *o, int key)
{
	static const struct {
		enum mt_mode mode;
		int key;
		const char *why;
	} no[] = {
		{ MT_MODE_SCRIPT, 'q',
		  "-q: script prints only event lines, which -q leaves out "
		  "(report prints the summary)" },
		{ MT_MODE_SCRIPT, OPT_KEYS,
		  "--keys shapes the summary, which script does not print: "
		  "use report" },
		{ MT_MODE_SCRIPT, OPT_TOP_LIVE,
		  "--top-live shapes the summary, which script does not "
		  "print: use report" },
		{ MT_MODE_SCRIPT, OPT_TOP_OPS,
		  "--top-ops shapes the summary, which script does not print: "
		  "use report" },
		{ MT_MODE_SCRIPT, OPT_LEAK_AGE,
		  "--leak-age shapes the summary, which script does not "
		  "print: use report" },
		{ MT_MODE_SCRIPT, OPT_AT,
		  "--at shows what was alive at one moment, script prints "
		  "events: use report --at, or script --time ,END" },
		{ MT_MODE_REPORT, OPT_MIN_SIZE,
		  "--min-size: report prints no event lines (script does); "
		  "--size filters what report counts" },
	};

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		if (no[i].mode != o->mode || no[i].key != key)
			continue;
		mt_err("%s", no[i].why);
		exit(2);
	}
}

/* the options of every group (one parser: a key means one thing) */
static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct mt_options *o = ((struct parse_ctx *)state->input)->o;
	unsigned long long v;

	if (parse_estimate_arg(key, arg, state) ||
	    parse_flight_arg(key, arg, state))
		return 0;
	unhonoured(o, key);
	switch (key) {
	case 'p':
		parse_pids(state, o, arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'i':
		o->input = arg;
		break;
	case OPT_AT:
		if (!strcmp(arg, "peak"))
			o->at_peak = true;
		else
			o->at = mt_parse_double("time", arg, 0, 1e12);
		break;
	case OPT_EXPORT:
		/* one export a run: a second one was once silently kept */
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
		break;
	case OPT_FOLDED_PREFIX:
		o->folded_prefix = true;
		break;
	case OPT_TIME:
		parse_time_window(state, o, arg);
		break;
	case OPT_STEPS:
		parse_steps(state, o, arg);
		break;
	case OPT_TID:
		parse_tids(state, o, arg);
		break;
	case OPT_COMM:
		o->filter.ncomms =
			parse_words(state, "command list", arg, o->filter.comms,
				    o->filter.ncomms);
		break;
	case OPT_MODULE:
		mt_once(o->filter.module != NULL, "--module");
		if (!*arg)
			mt_bad("module", arg);
		o->filter.module = arg;
		break;
	case OPT_EVENT:
		parse_events(state, o, arg);
		break;
	case OPT_SIZE:
		parse_size_range(state, o, arg);
		break;
	case OPT_CHILDREN:
		o->children_of = (int)mt_parse_ull("pid", arg, INT_MAX);
		if (o->children_of <= 0)
			mt_bad("pid", arg);
		break;
	case OPT_ALL:
		o->all = true;
		break;
	case OPT_METRICS_ADDR:
		o->metrics_addr = arg;
		break;
	case OPT_METRICS_FILE:
		o->metrics_file = arg;
		break;
	case OPT_LEAK_AGE:
		parse_leak_age(state, o, arg);
		break;
	case OPT_KEYS:
		o->keys = true;
		break;
	case OPT_PERCENT_LIMIT:
		o->percent_limit = mt_parse_double("percentage", arg, 0, 100);
		break;
	case OPT_TOP_OPS:
		o->top_ops =
			(size_t)mt_parse_ull("operator count", arg, 1000000);
		break;
	case OPT_WATCH:
		o->watch = mt_parse_duration("interval", arg, 0.01, 1e6);
		break;
	case OPT_INTERVAL:
		o->interval = mt_parse_duration("interval", arg, 0.1, 1e6);
		break;
	case OPT_WATCH_WINDOW:
		o->watch_window = mt_parse_duration("window", arg, 0.01, 1e7);
		break;
	case OPT_DEVICE_MEM:
		o->device_mem = mt_parse_size("size", arg, 1, 1);
		break;
	case OPT_TRACE_EXC:
		if (!*arg || *arg == ',')
			mt_bad("exception types", arg);
		o->exc_types = arg;
		break;
	case OPT_ALERT_PCT:
		o->alert_pct = mt_parse_double("percentage", arg, 1, 100);
		break;
	case 'd':
		o->duration = mt_parse_duration(
			"duration", arg, MT_DURATION_MIN, MT_DURATION_MAX);
		break;
	case OPT_MIN_SIZE:
		o->min_size = mt_parse_size("size", arg, 1, 0);
		break;
	case 'q':
		o->quiet = true;
		break;
	case OPT_NO_CPU:
		o->no_cpu = true;
		break;
	case OPT_NO_CUDA:
		o->no_cuda = true;
		break;
	case OPT_WAIT:
		o->wait_libs = true;
		break;
	case OPT_RINGBUF:
		v = mt_parse_size("ring buffer size", arg, 1ULL << 20,
				  1ULL << 20);
		/* whole MiB, a power of two: what the kernel's ring takes */
		if ((v & ((1ULL << 20) - 1)) || v > (1ULL << 30) ||
		    (v & (v - 1)))
			mt_bad("ring buffer size (a power of two MiB)", arg);
		o->ringbuf_mb = (unsigned int)(v >> 20);
		break;
	case OPT_MAX_LIVE:
		o->max_live = (size_t)mt_parse_ull("live table size", arg,
						   1ULL << 32);
		if (!o->max_live)
			mt_bad("live table size", arg);
		break;
	case OPT_TOP_LIVE:
		o->top_live = (size_t)mt_parse_ull("group count", arg, 1000000);
		break;
	case OPT_NO_STACK:
		o->no_stack = true;
		break;
	case OPT_MAX_DEPTH:
		o->max_depth = (unsigned int)mt_parse_ull("depth", arg, 64);
		if (!o->max_depth)
			mt_bad("depth", arg);
		break;
	case OPT_ROOT_NAME:
		o->rules.root_name = arg;
		break;
	case OPT_PHASE:
		parse_phase(state, o, arg);
		break;
	case OPT_MODULE_LOG:
		o->module_log = arg;
		break;
	case OPT_LOG_TIME:
		o->log_time = true;
		break;
	case OPT_NO_PYTHON:
		o->no_python = true;
		break;
	case OPT_SAMPLE_BYTES:
		o->sample_bytes = mt_parse_size("sample size", arg, 1, 1);
		if (o->sample_bytes > MT_SAMPLE_MAX)
			mt_bad("sample size (at most 1024T)", arg);
		break;
	case 'v':
		o->verbose++;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char *mode_name(const struct mt_cmd *c)
{
	return c->name ? c->name : "trace";
}

/* "record", "trace and record", "report, script and estimate" */
static void modes_taking(const struct parse_ctx *x, unsigned int bits,
			 char *buf, size_t len)
{
	size_t n = 0, k = 0, total = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < x->ncmds; i++)
		total += (x->cmds[i].opts & bits) != 0;
	for (size_t i = 0; i < x->ncmds && n < len; i++) {
		int w;

		if (!(x->cmds[i].opts & bits))
			continue;
		k++;
		w = snprintf(buf + n, len - n, "%s%s",
			     k == 1	? "" :
			     k == total ? " and " :
					  ", ",
			     mode_name(&x->cmds[i]));
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* the groups that have an option of key */
static unsigned int groups_of(int key)
{
	unsigned int bits = 0;

	for (size_t g = 0; g < NGROUPS; g++)
		for (const struct argp_option *p = groups[g].opts; p->key; p++)
			if (p->key == key)
				bits |= groups[g].bit;
	return bits;
}

/* what (an option, "a command") only the modes of bits take: exit 2 */
static void refuse(const struct parse_ctx *x, const char *what,
		   unsigned int bits)
{
	char modes[128];

	modes_taking(x, bits, modes, sizeof(modes));
	mt_err("%s is for %s, not for %s (see --help)", what, modes,
	       mode_name(x->cmd));
	exit(2);
}

/* an option of another mode's groups: hidden here, refused by name */
static error_t parse_foreign(int key, char *arg, struct argp_state *state)
{
	const struct parse_ctx *x = state->input;
	char what[64];

	(void)arg;
	for (size_t g = 0; g < NGROUPS; g++) {
		for (const struct argp_option *p = groups[g].opts; p->key;
		     p++) {
			if (p->key != key)
				continue;
			/* as the user may have typed it: -p or --pid */
			if (key < 0x100)
				snprintf(what, sizeof(what), "-%c/--%s", key,
					 p->name);
			else
				snprintf(what, sizeof(what), "--%s", p->name);
			refuse(x, what, groups_of(key));
		}
	}
	return ARGP_ERR_UNKNOWN;
}

/* a word that names no mode where a mode or an option goes: exit 2 */
static void not_a_command(const struct parse_ctx *x, const char *word)
{
	char modes[128];
	struct stat st;
	size_t n = 0;

	/* a record named as perf report takes one, without -i */
	if (!x->o->input && !stat(word, &st) && S_ISREG(st.st_mode)) {
		if (x->cmd->opts & MT_OPTS_INPUT) {
			mt_err("'%s' is not a command; to read it: "
			       "memtrace-bpf %s -i %s",
			       word, mode_name(x->cmd), word);
			exit(2);
		}
		if (!x->cmd->name) {
			mt_err("'%s' is not a command; to read a record: "
			       "memtrace-bpf report -i %s (a program to "
			       "trace goes after --)",
			       word, word);
			exit(2);
		}
	}
	modes[0] = '\0';
	for (size_t i = 0; i < x->ncmds && n < sizeof(modes); i++) {
		int w = snprintf(modes + n, sizeof(modes) - n, "%s%s",
				 i ? ", " : "", mode_name(&x->cmds[i]));

		if (w < 0)
			break;
		n += (size_t)w;
	}
	mt_err("'%s' is not a command (%s; a program to trace goes after --)",
	       word, modes);
	exit(2);
}

static error_t parse_root(int key, char *arg, struct argp_state *state)
{
	struct parse_ctx *x = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		/* state->root_argp is argp's own wrapper: count ours */
		for (size_t i = 0; i < x->nchildren; i++)
			state->child_inputs[i] = x;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		/* a word before any "--": a mistyped mode, not a program */
		if (state->next < 2 ||
		    strcmp(state->argv[state->next - 2], "--"))
			not_a_command(x, arg);
		if (!(x->cmd->opts & (MT_OPTS_TARGET | MT_OPTS_DRYRUN)))
			refuse(x, "a command", MT_OPTS_TARGET | MT_OPTS_DRYRUN);
		/* the first non-option starts the command (after "--") */
		x->o->command = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	(void)arg;
	return 0;
}

/* the mode argv[1] names, taken out of argv; else the unnamed one */
static const struct mt_cmd *find_cmd(int *argc, char ***argv,
				     const struct mt_cmd *cmds, size_t ncmds,
				     char *name, size_t len)
{
	const struct mt_cmd *dflt = NULL;
	const char *base = strrchr((*argv)[0], '/');

	base = base ? base + 1 : (*argv)[0];
	for (size_t i = 0; i < ncmds; i++) {
		if (!cmds[i].name)
			dflt = &cmds[i];
		/* the unnamed mode answers to "trace" too */
		if (*argc < 2 || strcmp((*argv)[1], mode_name(&cmds[i])))
			continue;
		/* argp sees "memtrace-bpf MODE" as the program's name */
		snprintf(name, len, "%s %s", base, mode_name(&cmds[i]));
		(*argv)[1] = name;
		(*argc)--;
		(*argv)++;
		return &cmds[i];
	}
	return dflt;
}

/*
 * The argp of cmd: its own groups, and the other groups' options hidden.
 * Returns the number of children.
 */
static size_t build_argp(const struct mt_cmd *cmd, struct argp *root,
			 struct argp_child *children, struct argp *group_argps,
			 struct argp *foreign, struct argp_option *others)
{
	size_t nc = 0, no = 0;

	for (size_t g = 0; g < NGROUPS; g++) {
		if (!(cmd->opts & groups[g].bit))
			continue;
		group_argps[g] = (struct argp){ .options = groups[g].opts,
						.parser = parse_arg };
		children[nc++] =
			(struct argp_child){ .argp = &group_argps[g],
					     .header = groups[g].header,
					     .group = (int)g + 1 };
	}
	for (size_t g = 0; g < NGROUPS; g++) {
		if (cmd->opts & groups[g].bit)
			continue;
		for (const struct argp_option *p = groups[g].opts; p->key;
		     p++) {
			bool dup = (groups_of(p->key) & cmd->opts) != 0;

			for (size_t i = 0; i < no && !dup; i++)
				dup = others[i].key == p->key;
			if (dup || no == MAX_OPTS)
				continue;
			others[no] = *p;
			others[no++].flags |= OPTION_HIDDEN;
		}
	}
	others[no] = (struct argp_option){ 0 };
	*foreign = (struct argp){ .options = others, .parser = parse_foreign };
	children[nc++] = (struct argp_child){ .argp = foreign };
	children[nc] = (struct argp_child){ 0 };
	*root = (struct argp){ .options = root_opts,
			       .parser = parse_root,
			       .doc = cmd->doc,
			       .children = children };
	return nc;
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

/* what the tracing modes need beyond their options' own checks */
static int check_trace(const struct mt_options *o)
{
	if (o->mode == MT_MODE_RECORD && !o->output) {
		mt_err(o->flight_on ? "record --flight needs -o DIR, the "
				      "folder its dumps are written in" :
				      "record needs -o FILE");
		return 2;
	}
	if (o->watch && o->output && mt_path_per_process(o->output)) {
		mt_err("--watch reads one summary: give "
		       "-o one file, not one per {pid} or {rank}");
		return 2;
	}
	if ((o->alert_pct > 0 || o->device_mem) && !o->watch && !o->flight_on) {
		mt_err("--alert-pct and --device-mem "
		       "go with --watch or --flight");
		return 2;
	}
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

/* whether an option of the allocator model was given */
static bool model_asked(const struct mt_options *o)
{
	const struct mt_estimate_conf *e = &o->est;

	return o->device_mem || e->nscales || e->check ||
	       e->model.expandable_segments || e->model.max_split_size ||
	       e->model.roundup_power2_divisions || e->model.gc_threshold > 0;
}

/* estimate: a record's replay (-i), or a dry run of -- COMMAND */
static int check_estimate(const struct mt_options *o)
{
	if (!o->dry_run && o->command) {
		mt_err("a command goes with estimate --dry-run (estimate -i "
		       "FILE reads a record)");
		return 2;
	}
	if (!o->dry_run && (o->has_device || o->dryrun.devices)) {
		mt_err("--device and --devices go with --dry-run");
		return 2;
	}
	if (!o->dry_run)
		return 0;
	if (o->input) {
		mt_err("estimate --dry-run runs -- COMMAND, -i reads a "
		       "record: give one of them");
		return 2;
	}
	if (!o->command) {
		mt_err("estimate --dry-run needs -- COMMAND (e.g. -- python3 "
		       "train.py)");
		return 2;
	}
	if (model_asked(o)) {
		mt_err("estimate --dry-run runs PyTorch's own allocator: its "
		       "settings come from PYTORCH_CUDA_ALLOC_CONF, the GPU "
		       "from --device; --device-mem, --scale, --check and the "
		       "model's settings go with -i");
		return 2;
	}
	return 0;
}

/* what the options need of each other, past what a mode takes at all */
static int check(const struct mt_options *o, const struct mt_cmd *cmd)
{
	if (o->percent_limit >= 0 && o->keys) {
		mt_err("--percent-limit cuts the report's rows; --keys "
		       "prints every figure: give one of them");
		return 2;
	}
	if (o->export_kind && !o->output) {
		mt_err("--export needs -o FILE");
		return 2;
	}
	if (o->est.model.gc_threshold > 0 && !o->device_mem) {
		mt_err("--gc-threshold is a fraction "
		       "of --device-mem: give both");
		return 2;
	}
	if (o->mode == MT_MODE_ESTIMATE && check_estimate(o))
		return 2;
	if (o->run_as.set && !o->command) {
		mt_err("--user is whom -- COMMAND runs as: give a command "
		       "(-p and --children trace processes as they run)");
		return 2;
	}
	if ((cmd->opts & MT_OPTS_INPUT) && !o->input && !o->dry_run) {
		mt_err("%s needs -i FILE (a record "
		       "made by memtrace-bpf record)",
		       mode_name(cmd));
		return 2;
	}
	/* live, --at peak goes with an export that shows it only */
	if (o->mode == MT_MODE_TRACE &&
	    (o->at >= 0 || (o->at_peak && !o->export_kind))) {
		mt_err("-i and --at read a record: "
		       "use memtrace-bpf report");
		return 2;
	}
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
	return cmd->opts & MT_OPTS_TARGET ? check_trace(o) : 0;
}

int mt_parse_options(int argc, char **argv, const struct mt_cmd *cmds,
		     size_t ncmds, struct mt_options *o,
		     const struct mt_cmd **cmd)
{
	struct argp_child children[NGROUPS + 2];
	struct argp_option others[MAX_OPTS + 1];
	struct argp group_argps[NGROUPS];
	struct argp root, foreign;
	struct parse_ctx x;
	char name[256];

	*cmd = find_cmd(&argc, &argv, cmds, ncmds, name, sizeof(name));
	x = (struct parse_ctx){
		.o = o, .cmd = *cmd, .cmds = cmds, .ncmds = ncmds
	};
	x.nchildren = build_argp(*cmd, &root, children, group_argps, &foreign,
				 others);
	argp_err_exit_status = 2;
	*o = (struct mt_options){ .mode = (*cmd)->mode,
				  .at = -1,
				  .leak_age_steps = 2,
				  .leak_age_seconds = 10,
				  .top_ops = 20,
				  .watch_window = 30,
				  .interval = 1,
				  .ringbuf_mb = 16,
				  .max_live = 4194304,
				  .top_live = 20,
				  .percent_limit = -1,
				  .max_depth = MT_MAX_FRAMES };
	if (argp_parse(&root, argc, argv, ARGP_IN_ORDER, NULL, &x))
		return 2;
	if (o->dry_run && !o->has_device)
		o->dryrun.dev = *mt_dryrun_preset(MT_DRYRUN_DEFAULT);
	/* left on for days: stacks sampled by bytes, the totals exact */
	if (o->flight_on && !o->sample_bytes)
		o->sample_bytes = MT_FLIGHT_SAMPLE_DEFAULT;
	if (o->flight_on) {
		o->flight.dir = o->output;
		o->flight.sample_bytes = o->sample_bytes;
	}
	if (o->flight_on && !o->flight.max_dumps)
		o->flight.max_dumps = MT_FLIGHT_DUMPS_DEFAULT;
	if (o->flight_on && !o->flight.max_total)
		o->flight.max_total = MT_FLIGHT_TOTAL_DEFAULT;
	if (o->dry_run && !o->dryrun.devices)
		o->dryrun.devices = 1;
	return check(o, *cmd);
}
