// SPDX-License-Identifier: GPL-2.0
/*
 * What the features and the core read of a live trace (tracer.h): a
 * process by its pid, where its events go, every session, the events
 * lost. It calls nothing of trace/, so that any file there may use it.
 */
#include <bpf/libbpf.h>
#include "memtrace.h" /* the types of its globals, before the skeleton */
#include "memtrace.skel.h"
#include "trace/tracer.h"

struct mt_traced *mt_tracer_find(struct mt_tracer *tr, __u32 pid)
{
	/* a free slot's pid, 0, is no process's */
	for (int i = 0; pid && i < tr->ntargets; i++)
		if ((__u32)tr->targets[i].proc.pid == pid)
			return &tr->targets[i];
	return NULL;
}

struct mt_sink *mt_tracer_sink(struct mt_tracer *tr, const struct mt_traced *t)
{
	return t && t->sink ? t->sink : &tr->sink;
}

size_t mt_tracer_sessions(struct mt_tracer *tr, struct mt_session **v,
			  size_t max)
{
	size_t n = 0;

	v[n++] = tr->sink.ses;
	for (int i = 0; i < tr->ntargets && n < max; i++)
		if (tr->targets[i].sink)
			v[n++] = tr->targets[i].sink->ses;
	return n;
}

__u64 mt_tracer_lost(const struct mt_tracer *tr)
{
	if (!tr->skel)
		return 0;
	return tr->skel->bss->lost_events + tr->skel->bss->lost_inflight +
	       tr->unflushed;
}
