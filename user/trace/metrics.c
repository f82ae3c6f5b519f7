// SPDX-License-Identifier: GPL-2.0
/*
 * --metrics-addr, --metrics-file, a feature of the live trace
 * (feature.h): every sink's session and the events lost, served and
 * written by export/metrics.h at each turn of the trace loop and at its
 * end.
 */
#include "export/metrics.h"
#include "lib/err.h"
#include "trace/feature.h"
#include "trace/tracer.h"

static int metrics_open(struct mt_tracer *tr, unsigned int slot, void **st)
{
	const struct mt_trace_conf *o = tr->conf;
	const struct mt_metrics_conf c = { .addr = o->metrics_addr,
					   .file = o->metrics_file,
					   .file_interval = 1.0 };
	char err[512];

	if (!o->metrics_addr && !o->metrics_file)
		return 0;
	*st = mt_metrics_open(&c, err, sizeof(err));
	if (!*st) {
		mt_err("%s", err);
		return -1;
	}
	return 0;
}

static bool metrics_tick(void *st, struct mt_tracer *tr, __u64 now)
{
	struct mt_session *v[MT_MAX_TARGETS + 1];
	size_t n = mt_tracer_sessions(tr, v, MT_MAX_TARGETS + 1);

	mt_metrics_poll(st, now, v, n, mt_tracer_lost(tr));
	return false;
}

/* the last figures written: 0, or -1 after mt_err() */
static int metrics_close(void *st, struct mt_tracer *tr)
{
	struct mt_session *v[MT_MAX_TARGETS + 1];
	size_t n = mt_tracer_sessions(tr, v, MT_MAX_TARGETS + 1);

	return mt_metrics_close(st, v, n, mt_tracer_lost(tr)) ? -1 : 0;
}

const struct mt_feature mt_metrics_feature = {
	.name = "metrics",
	.open = metrics_open,
	.tick = metrics_tick,
	.close = metrics_close,
};
