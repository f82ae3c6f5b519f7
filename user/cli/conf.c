// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include "cli/conf.h"
#include "lib/limits.h"

void mt_output_conf_from(struct mt_output_conf *c, const struct mt_options *o)
{
	c->ses = (struct mt_session_conf){
		/* a record is printed by report and script, not when made */
		.print_events = o->mode == MT_MODE_SCRIPT ||
				(o->mode == MT_MODE_TRACE && !o->quiet),
		.no_stack = o->no_stack,
		.keys = o->keys,
		.percent_limit = o->percent_limit < 0 ? 1.0 : o->percent_limit,
		.min_size = o->min_size,
		.max_live = o->max_live,
		.max_sites = MT_MAX_SITES,
		.top_live = o->top_live,
		.top_ops = o->top_ops,
		.leak = { .age_steps = o->leak_age_steps,
			  .age_seconds = o->leak_age_seconds },
		.filter = o->filter,
		.sample_bytes = o->sample_bytes,
	};
	/* -p attaches a trace; in a record's modes it picks processes */
	if (o->mode == MT_MODE_REPORT || o->mode == MT_MODE_SCRIPT) {
		for (int i = 0; i < o->npids; i++)
			c->ses.filter.pids[i] = (__u32)o->pids[i];
		c->ses.filter.npids = (size_t)o->npids;
	}
	c->exp = (struct mt_export_conf){ .kind = o->export_kind,
					  .path = o->output,
					  .at_peak = o->at_peak,
					  .at_time = o->at >= 0,
					  .at = o->at,
					  .folded_prefix = o->folded_prefix };
}

void mt_trace_conf_from(struct mt_trace_conf *c, const struct mt_options *o)
{
	*c = (struct mt_trace_conf){
		.record = o->mode == MT_MODE_RECORD && !o->flight_on,
		.npids = o->npids,
		.children_of = o->children_of,
		/* a dry run's job may start under a shell or a launcher */
		.follow_children = o->follow || o->dry_run,
		.all = o->all,
		.command = o->command,
		.run_as = o->run_as.set ? &o->run_as : NULL,
		.output = o->flight_on ? NULL : o->output,
		.export_kind = o->export_kind,
		.duration = o->duration,
		/* top and a dry run: no event lines, notes on stderr (-q) */
		.quiet = o->quiet || o->mode == MT_MODE_TOP || o->dry_run ||
			 o->flight_on,
		/* a dry run says what the GPU holds */
		.no_cpu = o->no_cpu || o->dry_run,
		.no_cuda = o->no_cuda,
		.wait_libs = o->wait_libs,
		.verbose = o->verbose,
		.ringbuf_mb = o->ringbuf_mb,
		.top_live = o->top_live,
		.no_python = o->no_python,
		.max_depth = o->max_depth,
		.rules = o->rules,
		.exc_types = o->exc_types,
		.module_log = o->module_log,
		.log_time = o->log_time,
		.watch = o->watch,
		.top = o->mode == MT_MODE_TOP ? o->interval : 0,
		.watch_window = o->watch_window,
		.device_mem = o->device_mem,
		.alert_pct = o->alert_pct,
		.metrics_addr = o->metrics_addr,
		.metrics_file = o->metrics_file,
		.dryrun = o->dry_run ? &o->dryrun : NULL,
		/* a flight recorder writes dumps, not one record */
		.flight = o->flight_on ? &o->flight : NULL,
		.flight_at_end = o->flight_at_end,
		.flight_together = o->flight_together,
	};
	memcpy(c->pids, o->pids, sizeof(c->pids));
	mt_output_conf_from(&c->out, o);
}

void mt_replay_conf_from(struct mt_replay_conf *c, const struct mt_options *o)
{
	*c = (struct mt_replay_conf){
		.input = o->input,
		/* with --export, -o is the export's file */
		.output = o->export_kind ? NULL : o->output,
		.script = o->mode == MT_MODE_SCRIPT,
		.at = o->at,
		.at_peak = o->at_peak,
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
