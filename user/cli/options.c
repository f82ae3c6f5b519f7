// SPDX-License-Identifier: GPL-2.0
/*
 * The command line: the options in groups, each mode taking the groups its
 * command (main.c) names, so that `memtrace-bpf MODE --help` shows what
 * that mode takes and an option of another mode is refused by name. The
 * groups several modes share are in opts_common.c; each option is a table
 * entry that one parser applies (opt.c).
 */
#include <argp.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/types.h>
#include "cli/keys.h"
#include "cli/opt.h"
#include "cli/options.h"
#include "cli/opts_common.h"
#include "cli/value.h"
#include "lib/err.h"
#include "lib/version.h"

const char *argp_program_version = "memtrace-bpf " MT_VERSION;
const char *argp_program_bug_address =
	"<https://github.com/memtrace-bpf/memtrace-bpf/issues>";

/*
 * report and script: -p and --phase NAME filter what the record holds. A
 * record's phases are set: --phase NAME filters by one, nothing more.
 */
static void opt_phase(struct mt_options *o, char *arg)
{
	if (strchr(arg, '=')) {
		mt_err("--phase %s names a phase while tracing; a record's "
		       "phases are set: filter one with --phase NAME",
		       arg);
		exit(2);
	}
	mt_opt_phase_filter(o, arg);
}

static const struct mt_opt select_opts[] = {
	MT_OPT_CALL("pid", 'p', "PID[,PID...]",
		    "Only these processes (as perf report --pid)", mt_opt_pids),
	MT_OPT_CALL("phase", OPT_PHASE, "NAME", "Only the events of phase NAME",
		    opt_phase),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_select = { "Filters of a record:",
						 select_opts };

static void opt_scale(struct mt_options *o, char *arg)
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

static void opt_roundup_divisions(struct mt_options *o, char *arg)
{
	unsigned long long v =
		mt_parse_ull("divisions (a power of two)", arg, 64);

	if (v & (v - 1))
		mt_bad("divisions (a power of two)", arg);
	o->est.model.roundup_power2_divisions = (unsigned int)v;
}

static const struct mt_opt estimate_opts[] = {
	MT_OPT_SIZE("device-mem", OPT_DEVICE_MEM, "SIZE",
		    "The GPU's memory the allocator may reserve, e.g. 80GiB "
		    "(default: no limit)",
		    device_mem, "size", 1, 1),
	MT_OPT_UNSIGNED("max-live", OPT_MAX_LIVE, "N",
			"Track at most N live allocations per device (default "
			"4194304)",
			max_live, "live table size", 1ULL << 32, true),
	MT_OPT_FLAG("expandable-segments", OPT_EXPANDABLE,
		    "Model expandable_segments:True",
		    est.model.expandable_segments),
	MT_OPT_CALL("scale", OPT_SCALE, "PATTERN=FACTOR",
		    "Sizes of allocations whose stack, module or phase "
		    "contains PATTERN times FACTOR (repeatable, first match "
		    "wins)",
		    opt_scale),
	/* PyTorch: max_split_size_mb must be > 20 */
	MT_OPT_SIZE("max-split-size-mb", OPT_MAX_SPLIT, "SIZE",
		    "Model max_split_size_mb; a bare number is MiB (default: "
		    "no limit)",
		    est.model.max_split_size, "max split size (> 20 MiB)",
		    1ULL << 20, (20ULL << 20) + 1),
	MT_OPT_CALL("roundup-power2-divisions", OPT_ROUNDUP_DIV, "N",
		    "Model roundup_power2_divisions (a power of two)",
		    opt_roundup_divisions),
	MT_OPT_DOUBLE("gc-threshold", OPT_GC_THRESHOLD, "FRACTION",
		      "Model garbage_collection_threshold (of --device-mem)",
		      est.model.gc_threshold, "threshold", 1e-9, 0.999999),
	MT_OPT_FLAG("check", OPT_CHECK,
		    "Compare the model's reserved with the recorded c10 "
		    "totals at every event; exit 1 at a mismatch",
		    est.check),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_estimate = { "The allocator model:",
						   estimate_opts };

/*
 * --device PRESET|SIZE: a preset as it is; a size with an H100's compute
 * capability and multiprocessors, which decide workspaces
 */
static void opt_device(struct mt_options *o, char *arg)
{
	const struct mt_dryrun_device *p;
	char names[256];

	mt_once(o->has_device, "--device");
	o->has_device = true;
	p = mt_dryrun_preset(arg);
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

static const struct mt_opt dryrun_opts[] = {
	MT_OPT_FLAG("dry-run", OPT_DRY_RUN,
		    "Run -- COMMAND on a stand-in GPU under PyTorch's own "
		    "allocator and say what the GPU would hold (no GPU needed)",
		    dry_run),
	MT_OPT_CALL("device", OPT_DEVICE, "PRESET|SIZE",
		    "--dry-run: the GPU, a preset (H100-80GB, A100-40GB, "
		    "L4...: --device help lists them) or a memory size "
		    "(default H100-80GB)",
		    opt_device),
	MT_OPT_UNSIGNED("devices", OPT_DEVICES, "N",
			"--dry-run: how many such GPUs, 1-8 (default 1)",
			dryrun.devices, "device count (1-8)",
			MT_DRYRUN_MAX_DEVICES, true),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_dryrun = { "The dry run:", dryrun_opts };

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

static const struct mt_opt top_opts[] = {
	MT_OPT_DURATION("interval", OPT_INTERVAL, "TIME",
			"Redraw every TIME, at least 100ms (default 1s)",
			interval, "interval", 0.1, 1e6),
	MT_OPT_END_ENTRY,
};

static const struct mt_opt_group opts_top = { "The live view:", top_opts };

/* every mode's: -h as --help */
static const struct argp_option root_opts[] = {
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the help", 0 },
	{ 0 },
};

/* the groups, in the order --help lists them */
static const struct group {
	unsigned int bit;
	const struct mt_opt_group *g;
} groups[] = {
	{ MT_OPTS_INPUT, &mt_opts_input },
	{ MT_OPTS_TARGET, &mt_opts_target },
	{ MT_OPTS_COMMAND, &mt_opts_command },
	{ MT_OPTS_PYTHON, &mt_opts_python },
	{ MT_OPTS_OUTPUT, &mt_opts_output },
	{ MT_OPTS_EXPORT, &mt_opts_export },
	{ MT_OPTS_SELECT, &opts_select },
	{ MT_OPTS_FILTER, &mt_opts_filter },
	{ MT_OPTS_WATCH, &mt_opts_watch },
	{ MT_OPTS_ESTIMATE, &opts_estimate },
	{ MT_OPTS_DRYRUN, &opts_dryrun },
	{ MT_OPTS_FLIGHT, &opts_flight },
	{ MT_OPTS_TOP, &opts_top },
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

/* the entry of key in the groups of bits; NULL if they have none */
static const struct mt_opt *find_opt(unsigned int bits, int key)
{
	for (size_t g = 0; g < NGROUPS; g++) {
		if (!(bits & groups[g].bit))
			continue;
		for (const struct mt_opt *p = groups[g].g->opts; p->kind; p++)
			if (p->arg.key == key)
				return p;
	}
	return NULL;
}

/* an option of the mode's groups: applied by its entry */
static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct parse_ctx *x = state->input;
	const struct mt_opt *opt = find_opt(x->cmd->opts, key);

	if (!opt)
		return ARGP_ERR_UNKNOWN;
	unhonoured(x->o, key);
	mt_opt_apply(opt, x->o, arg);
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
		for (const struct mt_opt *p = groups[g].g->opts; p->kind; p++)
			if (p->arg.key == key)
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
		for (const struct mt_opt *p = groups[g].g->opts; p->kind; p++) {
			if (p->arg.key != key)
				continue;
			/* as the user may have typed it: -p or --pid */
			if (key < 0x100)
				snprintf(what, sizeof(what), "-%c/--%s", key,
					 p->arg.name);
			else
				snprintf(what, sizeof(what), "--%s",
					 p->arg.name);
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
 * The argp of cmd: its own groups, whose options are copied into own, and
 * the other groups' options hidden. Returns the number of children.
 */
static size_t build_argp(const struct mt_cmd *cmd, struct argp *root,
			 struct argp_child *children, struct argp *group_argps,
			 struct argp *foreign, struct argp_option *own,
			 struct argp_option *others)
{
	size_t nc = 0, no = 0, nown = 0;

	for (size_t g = 0; g < NGROUPS; g++) {
		struct argp_option *first = &own[nown];

		if (!(cmd->opts & groups[g].bit))
			continue;
		for (const struct mt_opt *p = groups[g].g->opts;
		     p->kind && nown < MAX_OPTS; p++)
			own[nown++] = p->arg;
		own[nown++] = (struct argp_option){ 0 };
		group_argps[g] =
			(struct argp){ .options = first, .parser = parse_opt };
		children[nc++] =
			(struct argp_child){ .argp = &group_argps[g],
					     .header = groups[g].g->header,
					     .group = (int)g + 1 };
	}
	for (size_t g = 0; g < NGROUPS; g++) {
		if (cmd->opts & groups[g].bit)
			continue;
		for (const struct mt_opt *p = groups[g].g->opts; p->kind; p++) {
			bool dup = (groups_of(p->arg.key) & cmd->opts) != 0;

			for (size_t i = 0; i < no && !dup; i++)
				dup = others[i].key == p->arg.key;
			if (dup || no == MAX_OPTS)
				continue;
			others[no] = p->arg;
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

/* what the tracing modes need beyond their options' own checks */
static int check_trace(const struct mt_options *o)
{
	if (o->mode == MT_MODE_RECORD && !o->output) {
		mt_err(o->flight_on ? "record --flight needs -o DIR, the "
				      "folder its dumps are written in" :
				      "record needs -o FILE");
		return 2;
	}
	if (mt_check_watch(o) || check_flight(o) || mt_check_tracing(o))
		return 2;
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
	if (mt_check_rows(o) || mt_check_export_output(o))
		return 2;
	if (o->est.model.gc_threshold > 0 && !o->device_mem) {
		mt_err("--gc-threshold is a fraction "
		       "of --device-mem: give both");
		return 2;
	}
	if (o->mode == MT_MODE_ESTIMATE && check_estimate(o))
		return 2;
	if (mt_check_user(o))
		return 2;
	if ((cmd->opts & MT_OPTS_INPUT) && !o->dry_run &&
	    mt_check_input(o, mode_name(cmd)))
		return 2;
	/* live, --at peak goes with an export that shows it only */
	if (o->mode == MT_MODE_TRACE &&
	    (o->at >= 0 || (o->at_peak && !o->export_kind))) {
		mt_err("-i and --at read a record: "
		       "use memtrace-bpf report");
		return 2;
	}
	if (mt_check_at_export(o))
		return 2;
	return cmd->opts & MT_OPTS_TARGET ? check_trace(o) : 0;
}

int mt_parse_options(int argc, char **argv, const struct mt_cmd *cmds,
		     size_t ncmds, struct mt_options *o,
		     const struct mt_cmd **cmd)
{
	struct argp_child children[NGROUPS + 2];
	struct argp_option own[MAX_OPTS + NGROUPS], others[MAX_OPTS + 1];
	struct argp group_argps[NGROUPS];
	struct argp root, foreign;
	struct parse_ctx x;
	char name[256];

	*cmd = find_cmd(&argc, &argv, cmds, ncmds, name, sizeof(name));
	x = (struct parse_ctx){
		.o = o, .cmd = *cmd, .cmds = cmds, .ncmds = ncmds
	};
	x.nchildren = build_argp(*cmd, &root, children, group_argps, &foreign,
				 own, others);
	argp_err_exit_status = 2;
	mt_options_init(o, (*cmd)->mode);
	o->interval = 1;
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
