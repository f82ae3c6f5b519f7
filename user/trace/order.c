// SPDX-License-Identifier: GPL-2.0
/*
 * Events in time order (tracer.h). Each CPU sends its events in batches
 * (bpf/memtrace.h MT_BATCH), so the ring buffer holds one CPU's events
 * after another's later ones: a free can come before the allocation it
 * frees. The events wait here, ordered by time stamp, until a flush round
 * proves that no CPU holds one stamped earlier; then they are handled.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "memtrace.skel.h"
#include "lib/reorder.h"
#include "trace/tracer.h"

/* events held at most: ~10 ms of the fastest event rates, many times */
#define HELD_MAX (1u << 18)
/*
 * A round that cannot prove every CPU flushed (a program was writing an
 * event there, or the CPU went offline) releases what is older than this:
 * no event takes that long from its time stamp to the ring buffer.
 */
#define HOLD_MAX_NS (1000 * 1000000ULL)

static __u64 monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

int mt_order_open(struct mt_tracer *tr)
{
	int n = libbpf_num_possible_cpus();

	if (n <= 0)
		return n ? n : -EINVAL;
	tr->ncpus = n;
	tr->batch_st = calloc((size_t)n, sizeof(*tr->batch_st));
	tr->order = mt_reorder_new(sizeof(struct mt_event), HELD_MAX);
	if (!tr->batch_st || !tr->order)
		return -ENOMEM;
	return 0;
}

void mt_order_close(struct mt_tracer *tr)
{
	mt_reorder_free(tr->order);
	tr->order = NULL;
	free(tr->batch_st);
	tr->batch_st = NULL;
}

/* hand an event on, noting one that comes after a later one */
static void handle(struct mt_tracer *tr, const struct mt_event *ev)
{
	if (ev->ts < tr->released_ts)
		tr->late_events++;
	else
		tr->released_ts = ev->ts;
	mt_tracer_on_event(tr, (void *)ev, sizeof(*ev));
}

/* the ring buffer's callback: a record of one CPU's events */
int mt_order_on_record(void *ctx, void *data, size_t len)
{
	struct mt_tracer *tr = ctx;
	const struct mt_event *ev, *old;

	for (size_t off = 0; off + sizeof(*ev) <= len; off += sizeof(*ev)) {
		ev = (const struct mt_event *)((const char *)data + off);
		/* a held command and a new process are set up at once */
		if (ev->kind == MT_K_LOADER || ev->kind == MT_K_FORK) {
			mt_tracer_on_event(tr, (void *)ev, sizeof(*ev));
			continue;
		}
		if (mt_reorder_push(tr->order, ev->ts, ev) == 0)
			continue;
		/* full, or no memory: the oldest held goes on to make room */
		old = mt_reorder_pop(tr->order, UINT64_MAX);
		if (old)
			handle(tr, old);
		if (!old || mt_reorder_push(tr->order, ev->ts, ev))
			handle(tr, ev);
	}
	return 0;
}

/*
 * Have every CPU that holds events, or is writing one, send them to the
 * ring buffer (mt_flush, run on that CPU). true: each did, so every event
 * stamped before the call is in the ring buffer.
 */
static bool flush_cpus(struct mt_tracer *tr)
{
	struct bpf_test_run_opts opts = { .sz = sizeof(opts),
					  .flags = BPF_F_TEST_RUN_ON_CPU };
	int fd = bpf_program__fd(tr->skel->progs.mt_flush);
	size_t size = (size_t)tr->ncpus * sizeof(*tr->batch_st);
	bool all = true;
	__u32 zero = 0;

	if (bpf_map__lookup_elem(tr->skel->maps.batch_state, &zero,
				 sizeof(zero), tr->batch_st, size, 0))
		return false;
	for (int c = 0; c < tr->ncpus; c++) {
		if (!tr->batch_st[c].busy && !tr->batch_st[c].n)
			continue;
		opts.cpu = (__u32)c;
		if (bpf_prog_test_run_opts(fd, &opts) || opts.retval)
			all = false;
	}
	return all;
}

/* handle the held events stamped before upto, in time order */
static void release(struct mt_tracer *tr, __u64 upto)
{
	const struct mt_event *ev;

	while ((ev = mt_reorder_pop(tr->order, upto)))
		handle(tr, ev);
}

int mt_order_round(struct mt_tracer *tr, struct ring_buffer *rb)
{
	__u64 start = monotonic_ns(), upto = start;
	int ret;

	if (!flush_cpus(tr))
		upto = start > HOLD_MAX_NS ? start - HOLD_MAX_NS : 0;
	ret = ring_buffer__consume(rb);
	if (ret < 0)
		return ret;
	release(tr, upto);
	return 0;
}

/* rounds of the drain before what is held goes on regardless */
#define DRAIN_TRIES 100

int mt_order_drain(struct mt_tracer *tr, struct ring_buffer *rb)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	__u32 zero = 0;
	int ret;

	for (int i = 0; i < DRAIN_TRIES && !flush_cpus(tr); i++)
		nanosleep(&ms, NULL);
	ret = ring_buffer__consume(rb);
	release(tr, UINT64_MAX);
	/* events a CPU still holds are lost: say so */
	if (!bpf_map__lookup_elem(tr->skel->maps.batch_state, &zero,
				  sizeof(zero), tr->batch_st,
				  (size_t)tr->ncpus * sizeof(*tr->batch_st), 0))
		for (int c = 0; c < tr->ncpus; c++)
			tr->unflushed += tr->batch_st[c].n;
	return ret < 0 ? ret : 0;
}
