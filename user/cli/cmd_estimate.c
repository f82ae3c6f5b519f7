// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf estimate: what PyTorch's caching allocator would reserve on
 * a GPU for a record's allocations (-i, the allocator model's options), or
 * with --dry-run what a command holds on a stand-in GPU (the dry run's
 * options and defaults).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/conf.h"
#include "cli/keys.h"
#include "cli/opts_common.h"
#include "cli/value.h"
#include "estimate/estimate.h"
#include "lib/err.h"

static const char estimate_doc[] =
	"What PyTorch's caching allocator would reserve on a GPU for a\n"
	"record's allocations: the peak, and where it would run out. Or,\n"
	"with --dry-run, what a CUDA PyTorch COMMAND holds on a GPU it does\n"
	"not have: it runs on a stand-in device under PyTorch's own\n"
	"allocator (no kernel runs), traced as -q does. Exit status of a dry\n"
	"run: 0 when it fits, 1 when the device ran out of memory, 3 when\n"
	"the command failed otherwise (no verdict), 2 on an error.\n"
	"\n"
	"USAGE: memtrace-bpf estimate -i FILE [--device-mem SIZE] "
	"[--scale PATTERN=FACTOR]...\n"
	"       memtrace-bpf estimate --dry-run [--device PRESET|SIZE] "
	"[--devices N] -- COMMAND [ARG...]";

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

static const struct mt_opt_group *const groups[] = {
	&mt_opts_input, &mt_opts_command, &opts_estimate, &opts_dryrun, NULL,
};

static void defaults(struct mt_options *o)
{
	if (!o->dry_run)
		return;
	if (!o->has_device)
		o->dryrun.dev = *mt_dryrun_preset(MT_DRYRUN_DEFAULT);
	if (!o->dryrun.devices)
		o->dryrun.devices = 1;
}

/* whether an option of the allocator model was given */
static bool model_asked(const struct mt_options *o)
{
	const struct mt_estimate_conf *e = &o->est;

	return o->device_mem || e->nscales || e->check ||
	       e->model.expandable_segments || e->model.max_split_size ||
	       e->model.roundup_power2_divisions || e->model.gc_threshold > 0;
}

/* a record's replay (-i), or a dry run of -- COMMAND */
static int check_mode(const struct mt_options *o)
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

static int check(const struct mt_cmd *cmd, const struct mt_options *o)
{
	if (o->est.model.gc_threshold > 0 && !o->device_mem) {
		mt_err("--gc-threshold is a fraction "
		       "of --device-mem: give both");
		return 2;
	}
	if (check_mode(o) || mt_check_user(o) ||
	    (!o->dry_run && mt_check_input(o, cmd->name)))
		return 2;
	return 0;
}

static int run(const struct mt_options *o)
{
	struct mt_estimate_conf c;
	enum mt_verdict v;
	int ret;

	if (o->dry_run)
		return mt_run_trace(o);
	mt_estimate_conf_from(&c, o);
	ret = mt_estimate(&c, &v);
	return mt_exit_status(ret, v);
}

const struct mt_cmd mt_cmd_estimate = {
	.name = "estimate",
	.mode = MT_MODE_ESTIMATE,
	.doc = estimate_doc,
	.groups = groups,
	.command = true,
	.defaults = defaults,
	.check = check,
	.run = run,
};
