// SPDX-License-Identifier: GPL-2.0
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "memtrace.h"
#include "options.h"

const char *argp_program_version = "memtrace-bpf " MT_VERSION;
const char *argp_program_bug_address =
	"<https://github.com/memtrace-bpf/memtrace-bpf/issues>";

static const char doc[] =
	"Trace every CUDA and PyTorch allocator call of a running process.\n"
	"\n"
	"USAGE: memtrace-bpf [OPTION...] -p PID[,PID...]\n"
	"       memtrace-bpf [OPTION...] -- COMMAND [ARG...]\n"
	"\n"
	"EXAMPLES:\n"
	"    memtrace-bpf -p 4121              # until Ctrl-C or its exit\n"
	"    memtrace-bpf -p 4121,4122 -d 30   # two processes, 30 seconds\n"
	"    memtrace-bpf -- python3 train.py  # start and trace a command\n"
	"    memtrace-bpf -p 4121 -q           # summary only\n"
	"    memtrace-bpf -p 4121 --min-size 1048576 -o trace.txt\n"
	"\n"
	"One line per event on stdout, perf-script style; lines starting with\n"
	"'#' are the tool's own (libraries attached, lost events, summary).\n"
	"Exit status: 0 when traced to the end, 2 on a usage or setup error.";

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
};

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID[,PID...]", 0, "Processes to trace", 0 },
	{ "output", 'o', "FILE", 0, "Write events and summary to FILE", 0 },
	{ "duration", 'd', "SECS", 0, "Stop after SECS seconds", 0 },
	{ "min-size", OPT_MIN_SIZE, "BYTES", 0,
	  "Print only events of at least BYTES (all are counted)", 0 },
	{ "quiet", 'q', NULL, 0, "Print the summary only", 0 },
	{ "no-cpu", OPT_NO_CPU, NULL, 0, "Do not trace CPU tensor memory", 0 },
	{ "no-cuda", OPT_NO_CUDA, NULL, 0,
	  "Do not trace CUDA (runtime, driver, caching allocator)", 0 },
	{ "wait", OPT_WAIT, NULL, 0,
	  "Wait for the libraries if a process maps none yet", 0 },
	{ "ringbuf-mb", OPT_RINGBUF, "MB", 0,
	  "Ring buffer size in MiB, a power of two (default 16)", 0 },
	{ "max-live", OPT_MAX_LIVE, "N", 0,
	  "Track at most N live allocations (default 4194304)", 0 },
	{ "top-live", OPT_TOP_LIVE, "N", 0,
	  "Live-at-exit groups in the summary (default 20)", 0 },
	{ "no-stack", OPT_NO_STACK, NULL, 0,
	  "No Python stack lines (phase= and module= stay)", 0 },
	{ "max-depth", OPT_MAX_DEPTH, "N", 0,
	  "Python frames kept per stack, 1-64 (default 64)", 0 },
	{ "root-name", OPT_ROOT_NAME, "NAME", 0,
	  "Name of the outermost nn.Module (default: its class)", 0 },
	{ "phase", OPT_PHASE, "NAME=QUALNAME", 0,
	  "Phase NAME while a frame QUALNAME runs (repeatable)", 0 },
	{ "module-log", OPT_MODULE_LOG, "FILE", 0,
	  "Per module and stage records per step; {pid}, {rank} expand", 0 },
	{ "log-time", OPT_LOG_TIME, NULL, 0,
	  "Timestamps in the --module-log records", 0 },
	{ "no-python", OPT_NO_PYTHON, NULL, 0,
	  "No Python stacks, modules or phases (cheapest)", 0 },
	{ "verbose", 'v', NULL, 0, "Print libbpf debug output", 0 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the help", 0 },
	{ 0 },
};

static int bad(struct argp_state *state, const char *what, const char *arg)
{
	fprintf(stderr, "memtrace-bpf: invalid %s: '%s' (see --help)\n", what,
		arg);
	(void)state;
	exit(2);
}

static unsigned long long parse_ull(struct argp_state *state, const char *what,
				    const char *arg, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > max)
		bad(state, what, arg);
	return v;
}

static void parse_pids(struct argp_state *state, struct mt_options *o,
		       const char *arg)
{
	char buf[1024], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		bad(state, "pid list", arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->npids == MT_MAX_PIDS) {
			fprintf(stderr,
				"memtrace-bpf: at most %d pids can be traced\n",
				MT_MAX_PIDS);
			exit(2);
		}
		o->pids[o->npids++] =
			(int)parse_ull(state, "pid", tok, INT_MAX);
		if (o->pids[o->npids - 1] <= 0)
			bad(state, "pid", tok);
	}
	if (!o->npids)
		bad(state, "pid list", arg);
}

static void parse_phase(struct argp_state *state, struct mt_options *o,
			char *arg)
{
	char *eq = strchr(arg, '=');
	struct mt_user_phase *p;

	if (!eq || eq == arg || !eq[1])
		bad(state, "phase (NAME=QUALNAME)", arg);
	if (o->rules.nuser == MT_MAX_USER_PHASES) {
		fprintf(stderr, "memtrace-bpf: at most %d --phase\n",
			MT_MAX_USER_PHASES);
		exit(2);
	}
	*eq = '\0';
	p = &o->rules.user[o->rules.nuser++];
	p->name = arg;
	p->qualname = eq + 1;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct mt_options *o = state->input;
	char *end;

	switch (key) {
	case 'p':
		parse_pids(state, o, arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'd':
		errno = 0;
		o->duration = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->duration > 0))
			bad(state, "duration", arg);
		break;
	case OPT_MIN_SIZE:
		o->min_size = parse_ull(state, "size", arg, ULLONG_MAX);
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
		o->ringbuf_mb = (unsigned int)parse_ull(
			state, "ring buffer size", arg, 1024);
		if (!o->ringbuf_mb || (o->ringbuf_mb & (o->ringbuf_mb - 1)))
			bad(state, "ring buffer size (a power of two)", arg);
		break;
	case OPT_MAX_LIVE:
		o->max_live = (size_t)parse_ull(state, "live table size", arg,
						1ULL << 32);
		if (!o->max_live)
			bad(state, "live table size", arg);
		break;
	case OPT_TOP_LIVE:
		o->top_live =
			(size_t)parse_ull(state, "group count", arg, 1000000);
		break;
	case OPT_NO_STACK:
		o->no_stack = true;
		break;
	case OPT_MAX_DEPTH:
		o->max_depth = (unsigned int)parse_ull(state, "depth", arg, 64);
		if (!o->max_depth)
			bad(state, "depth", arg);
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
	case 'v':
		o->verbose++;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		/* the first non-option starts the command (after "--") */
		o->command = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int mt_parse_options(int argc, char **argv, struct mt_options *o)
{
	static const struct argp argp = { .options = opts,
					  .parser = parse_arg,
					  .doc = doc };

	argp_err_exit_status = 2;
	*o = (struct mt_options){ .ringbuf_mb = 16,
				  .max_live = 4194304,
				  .top_live = 20,
				  .max_depth = MT_MAX_FRAMES };
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, o))
		return 2;
	if (!o->npids && !o->command) {
		fprintf(stderr, "memtrace-bpf: give -p PID or -- COMMAND "
				"(see --help)\n");
		return 2;
	}
	if (o->npids && o->command) {
		fprintf(stderr, "memtrace-bpf: -p and a command exclude each "
				"other\n");
		return 2;
	}
	if (o->module_log && o->no_python) {
		fprintf(stderr, "memtrace-bpf: --module-log needs the Python "
				"attribution that --no-python turns off\n");
		return 2;
	}
	if (o->no_cpu && o->no_cuda) {
		fprintf(stderr, "memtrace-bpf: --no-cpu with --no-cuda leaves "
				"nothing to trace\n");
		return 2;
	}
	return 0;
}
