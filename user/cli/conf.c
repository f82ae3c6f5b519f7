// SPDX-License-Identifier: GPL-2.0
#include "cli/conf.h"

/* call sites a session keeps */
#define MAX_SITES 65536

void mt_output_conf_from(struct mt_output_conf *c, const struct mt_options *o)
{
	c->ses = (struct mt_session_conf){
		/* a record is printed by report and script, not when made */
		.print_events = o->mode == MT_MODE_SCRIPT ||
				(o->mode == MT_MODE_TRACE && !o->quiet),
		.no_stack = o->no_stack,
		.min_size = o->min_size,
		.max_live = o->max_live,
		.max_sites = MAX_SITES,
		.top_live = o->top_live,
		.top_ops = o->top_ops,
		.leak = { .age_steps = o->leak_age_steps,
			  .age_seconds = o->leak_age_seconds },
	};
	c->exp = (struct mt_export_conf){ .kind = o->export_kind,
					  .path = o->output,
					  .at_peak = o->at_peak,
					  .folded_prefix = o->folded_prefix };
}

void mt_replay_conf_from(struct mt_replay_conf *c, const struct mt_options *o)
{
	*c = (struct mt_replay_conf){
		.input = o->input,
		/* with --export, -o is the export's file */
		.output = o->export_kind ? NULL : o->output,
		.script = o->mode == MT_MODE_SCRIPT,
		.at = o->at,
	};
	mt_output_conf_from(&c->out, o);
}

void mt_estimate_conf_from(struct mt_estimate_conf *c,
			   const struct mt_options *o)
{
	*c = o->est;
	c->input = o->input;
	c->max_live = o->max_live;
	c->model.device_mem = o->device_mem;
}
