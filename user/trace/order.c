// SPDX-License-Identifier: GPL-2.0
/*
 * Events in time order (tracer.h). Each CPU sends its events in batches
 * (bpf/memtrace.h MT_BATCH), so the ring buffer holds one CPU's events
 * after another's later ones: a free can come before the allocation it
 * frees. The events wait here, ordered by time stamp, until no CPU can
 * send one stamped earlier; then they are handled.
 *
 * Each CPU has a frontier: a time before which none of its events is
 * still to come. A CPU sends its events in the order it stamped them, so
 * its frontier moves to the last event of each record it sends (a
 * program preempted amid an event, on a kernel with full preemption, is
 * the exception: its event comes late, and is counted); and a flush round,
 * which has every CPU that holds events send them and then reads the ring
 * buffer, moves the frontier of each CPU found idle or flushed to the
 * round's start. Events stamped before the lowest frontier are handled at once:
 * while every CPU sends events, as they come; else at each round.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "memtrace.h" /* the types of its globals, before the skeleton */
#include "memtrace.skel.h"
#include "event/devlearn.h"
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

static void on_event(void *ctx, const struct mt_event *ev)
{
	mt_tracer_on_event(ctx, (void *)ev, sizeof(*ev));
}

static bool from_start(void *ctx, __u32 pid)
{
	const struct mt_traced *t = mt_tracer_find(ctx, pid);

	return t && t->proc.spawned;
}

static const struct mt_devlearn_ops devlearn_ops = {
	.event = on_event,
	.from_start = from_start,
};

int mt_order_open(struct mt_tracer *tr)
{
	int n = libbpf_num_possible_cpus();

	if (n <= 0)
		return n ? n : -EINVAL;
	tr->ncpus = n;
	tr->batch_st = calloc((size_t)n, sizeof(*tr->batch_st));
	tr->frontier = calloc((size_t)n, sizeof(*tr->frontier));
	tr->flushed = calloc((size_t)n, sizeof(*tr->flushed));
	tr->order = mt_reorder_new(sizeof(struct mt_event), HELD_MAX);
	tr->devlearn = mt_devlearn_new(&devlearn_ops, tr);
	if (!tr->batch_st || !tr->frontier || !tr->flushed || !tr->order ||
	    !tr->devlearn)
		return -ENOMEM;
	return 0;
}

void mt_order_close(struct mt_tracer *tr)
{
	mt_reorder_free(tr->order);
	tr->order = NULL;
	mt_devlearn_free(tr->devlearn);
	tr->devlearn = NULL;
	free(tr->batch_st);
	tr->batch_st = NULL;
	free(tr->frontier);
	tr->frontier = NULL;
	free(tr->flushed);
	tr->flushed = NULL;
}

/*
 * hand an event on, noting one that comes after a later one; on to the
 * devices learned (event/devlearn.h), which may keep it a moment
 */
static void handle(struct mt_tracer *tr, const struct mt_event *ev)
{
	if (ev->ts < tr->released_ts)
		tr->late_events++;
	else
		tr->released_ts = ev->ts;
	mt_devlearn_push(tr->devlearn, ev);
}

/* handle the held events stamped before upto, in time order */
static void release(struct mt_tracer *tr, __u64 upto)
{
	const struct mt_event *ev;

	while ((ev = mt_reorder_pop(tr->order, upto)))
		handle(tr, ev);
	mt_devlearn_upto(tr->devlearn, upto);
}

/* the lowest frontier: no event stamped before it is still to come */
static __u64 lowest_frontier(const struct mt_tracer *tr)
{
	__u64 low = UINT64_MAX;

	for (int c = 0; c < tr->ncpus; c++)
		if (tr->frontier[c] < low)
			low = tr->frontier[c];
	return low;
}

/* the ring buffer's callback: a record of one CPU's events, in order */
int mt_order_on_record(void *ctx, void *data, size_t len)
{
	struct mt_tracer *tr = ctx;
	const struct mt_event *ev = data, *old;
	size_t n = len / sizeof(*ev);
	__u64 low;

	if (!n)
		return 0;
	/* none of this CPU's events before the record's last is to come */
	if (ev[n - 1].cpu < (__u32)tr->ncpus &&
	    ev[n - 1].ts > tr->frontier[ev[n - 1].cpu])
		tr->frontier[ev[n - 1].cpu] = ev[n - 1].ts;
	low = lowest_frontier(tr);
	for (size_t i = 0; i < n; i++, ev++) {
		__u64 first;

		/* a held command and a new process are set up at once */
		if (ev->kind == MT_K_LOADER || ev->kind == MT_K_FORK) {
			mt_tracer_on_event(tr, (void *)ev, sizeof(*ev));
			continue;
		}
		/*
		 * An exec: what the tracer keeps of the old image stays until
		 * its events are handled, but is no longer put back into BPF;
		 * the exec itself is handled in time order, after them
		 */
		if (ev->kind == MT_K_EXEC)
			mt_tracer_exec_seen(tr, ev);
		/* none held comes before it, and none can come: no copy */
		if (ev->ts < low &&
		    (!mt_reorder_first(tr->order, &first) || ev->ts < first)) {
			handle(tr, ev);
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
	release(tr, low);
	return 0;
}

/* each CPU's batch state into tr->batch_st: 0 or -errno */
static int read_states(struct mt_tracer *tr)
{
	__u32 zero = 0;

	return bpf_map__lookup_elem(
		tr->skel->maps.batch_state, &zero, sizeof(zero), tr->batch_st,
		(size_t)tr->ncpus * sizeof(*tr->batch_st), 0);
}

/* asks of a busy CPU in one round */
#define FLUSH_TRIES 16

/*
 * Have every CPU that holds events, or is writing one, send them to the
 * ring buffer (mt_flush, run on that CPU). done[c]: CPU c holds no event
 * stamped before the call any more. true: every CPU is done.
 */
static bool flush_cpus(struct mt_tracer *tr, bool *done)
{
	struct bpf_test_run_opts opts = { .sz = sizeof(opts),
					  .flags = BPF_F_TEST_RUN_ON_CPU };
	int fd = bpf_program__fd(tr->skel->progs.mt_flush);
	bool all = true;

	memset(done, 0, (size_t)tr->ncpus * sizeof(*done));
	if (read_states(tr))
		return false;
	for (int c = 0; c < tr->ncpus; c++) {
		int tries = 0, err = 0;

		if (tr->batch_st[c].busy || tr->batch_st[c].n) {
			opts.cpu = (__u32)c;
			/*
			 * A busy CPU is one amid an event, a microsecond or
			 * two: asked again it is most likely done.
			 */
			do
				err = bpf_prog_test_run_opts(fd, &opts);
			while (!err && opts.retval && ++tries < FLUSH_TRIES);
		}
		done[c] = !err && !opts.retval;
		all &= done[c];
		opts.retval = 0;
	}
	return all;
}

/*
 * A flush round: flush, read what the CPUs sent, then move the frontiers
 * of the CPUs that were done to the round's start (not before the read:
 * their events were still in the ring buffer) and handle what they free.
 * A CPU not done for HOLD_MAX_NS holds nothing back longer.
 */
static int flush_round(struct mt_tracer *tr, struct ring_buffer *rb, bool *all)
{
	bool *done = tr->flushed;
	__u64 start = mt_now_ns(), upto;
	int ret;

	*all = flush_cpus(tr, done);
	ret = ring_buffer__consume(rb);
	if (ret < 0)
		return ret;
	for (int c = 0; c < tr->ncpus; c++)
		if (done[c] && tr->frontier[c] < start)
			tr->frontier[c] = start;
	upto = lowest_frontier(tr);
	if (start > HOLD_MAX_NS && upto < start - HOLD_MAX_NS)
		upto = start - HOLD_MAX_NS;
	release(tr, upto);
	return 0;
}

int mt_order_round(struct mt_tracer *tr, struct ring_buffer *rb)
{
	bool all;

	return flush_round(tr, rb, &all);
}

/* rounds of the drain before what is held goes on regardless */
#define DRAIN_TRIES 100

int mt_order_drain(struct mt_tracer *tr, struct ring_buffer *rb)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	bool all = false;
	int ret = 0;

	/*
	 * No program writes an event from here on (the BPF side reads it
	 * after counting itself busy), so a CPU found idle or flushed below
	 * holds nothing more: without it, an event the targets made between
	 * the last round and the count below stayed in its batch and was
	 * counted lost. Sequentially consistent: the store is seen before
	 * the busy counts are read.
	 */
	__atomic_store_n(&tr->skel->bss->stopped, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < DRAIN_TRIES && !all && ret >= 0; i++) {
		ret = flush_round(tr, rb, &all);
		if (!all)
			nanosleep(&ms, NULL);
	}
	release(tr, UINT64_MAX);
	/* a CPU busy through every round kept its events: lost, said apart */
	if (!read_states(tr))
		for (int c = 0; c < tr->ncpus; c++)
			tr->unflushed += tr->batch_st[c].n;
	return ret < 0 ? ret : 0;
}
