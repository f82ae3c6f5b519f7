// SPDX-License-Identifier: GPL-2.0
/*
 * --watch, a feature of the live trace (feature.h): at each turn of the
 * trace loop the shared session's figures go to the watcher
 * (analysis/watch.h), which prints its line when its interval is up.
 */
#include "analysis/watch.h"
#include "lib/err.h"
#include "trace/feature.h"
#include "trace/tracer.h"

static int watch_open(struct mt_tracer *tr, unsigned int slot, void **st)
{
	const struct mt_trace_conf *o = tr->conf;
	const struct mt_watch_conf c = { .interval = o->watch,
					 .window = o->watch_window,
					 .device_mem = o->device_mem,
					 .alert_pct = o->alert_pct,
					 .ses = tr->sink.ses };

	if (!o->watch)
		return 0;
	*st = mt_watch_new(&c);
	if (!*st) {
		mt_err("out of memory");
		return -1;
	}
	return 0;
}

static bool watch_tick(void *st, struct mt_tracer *tr, __u64 now)
{
	mt_watch_tick(st, now, &tr->sink.ses->sum, tr->sink.ses->sites,
		      tr->out);
	return false;
}

static int watch_close(void *st, struct mt_tracer *tr)
{
	mt_watch_free(st);
	return 0;
}

const struct mt_feature mt_watch_feature = {
	.name = "watch",
	.open = watch_open,
	.tick = watch_tick,
	.close = watch_close,
};
