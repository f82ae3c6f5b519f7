// SPDX-License-Identifier: GPL-2.0
/*
 * user/event/devlearn.h: the runtime's allocation on a thread whose
 * device BPF could not tell waits for the caching allocator's report on
 * that thread and takes its device; the order stays the time order; what
 * never learns its device goes on as cuda:? within the hold, and is not
 * waited for again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include "event/devlearn.h"
#include "event/kinds.h"

#define MS 1000000ULL
#define C10_CUDA 1 /* c10::DeviceType::CUDA */

struct seen {
	struct mt_event ev[64];
	size_t n;
	__u32 started; /* a pid traced from its start */
};

static void on_event(void *ctx, const struct mt_event *ev)
{
	struct seen *s = ctx;

	assert_true(s->n < 64);
	s->ev[s->n++] = *ev;
}

static bool from_start(void *ctx, __u32 pid)
{
	return ((struct seen *)ctx)->started == pid;
}

static const struct mt_devlearn_ops ops = { on_event, from_start };

static struct mt_event ev_of(unsigned int kind, __u32 pid, __u32 tid, __u64 ts)
{
	return (struct mt_event){ .kind = (__u16)kind,
				  .pid = pid,
				  .tid = tid,
				  .ts = ts,
				  .dev = MT_DEV_UNKNOWN };
}

/* cudaMalloc(&ptr, size) returning 0 */
static struct mt_event cuda_malloc(__u32 tid, __u64 ts, __u64 ptr, __u64 size)
{
	struct mt_event e = ev_of(MT_K_CUDA_MALLOC, 10, tid, ts);

	e.args[1] = size;
	e.out = ptr;
	e.flags = MT_EV_OUT | MT_EV_RET;
	return e;
}

/* c10's report of a block (size < 0: a free) on CUDA device dev */
static struct mt_event c10_report(__u32 tid, __u64 ts, __u64 ptr, __s64 size,
				  int dev)
{
	struct mt_event e = ev_of(MT_K_C10_REPORT, 10, tid, ts);

	e.args[0] = ptr;
	e.args[1] = (__u64)size;
	e.args[4] = C10_CUDA | (__u64)(unsigned char)dev << 8;
	return e;
}

static struct mt_event cuda_free(__u32 tid, __u64 ts, __u64 ptr)
{
	struct mt_event e = ev_of(MT_K_CUDA_FREE, 10, tid, ts);

	e.args[0] = ptr;
	e.flags = MT_EV_RET;
	return e;
}

static void push(struct mt_devlearn *d, struct mt_event e)
{
	mt_devlearn_push(d, &e);
}

static void test_segment_takes_its_blocks_device(void **state)
{
	struct seen s = { 0 };
	struct mt_devlearn *d = mt_devlearn_new(&ops, &s);
	struct mt_event other = ev_of(MT_K_CPU_NEW, 10, 2, 2 * MS);

	(void)state;
	assert_non_null(d);
	mt_devlearn_push(d, &(struct mt_event){ 0 });
	assert_int_equal(s.n, 1);
	push(d, cuda_malloc(1, MS, 0x1000, 2 << 20));
	/* another thread's event waits behind it: the order is kept */
	mt_devlearn_push(d, &other);
	assert_int_equal(s.n, 1);
	assert_int_equal(mt_devlearn_held(d), 2);
	push(d, c10_report(1, 3 * MS, 0x1000, 512, 3));
	assert_int_equal(mt_devlearn_held(d), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.ev[1].kind, MT_K_CUDA_MALLOC);
	assert_int_equal(s.ev[1].dev, 3);
	assert_int_equal(s.ev[2].tid, 2);
	assert_int_equal(s.ev[3].kind, MT_K_C10_REPORT);
	/* learned: the thread's later runtime calls say it at once */
	push(d, cuda_free(1, 4 * MS, 0x1000));
	push(d, cuda_malloc(1, 5 * MS, 0x9000, 1 << 20));
	assert_int_equal(s.n, 6);
	assert_int_equal(s.ev[4].dev, 3);
	assert_int_equal(s.ev[5].dev, 3);
	mt_devlearn_free(d);
}

static void test_no_report_goes_on_unknown_once(void **state)
{
	struct seen s = { 0 };
	struct mt_devlearn *d = mt_devlearn_new(&ops, &s);
	struct mt_event late = ev_of(MT_K_CPU_NEW, 10, 2, 150 * MS);

	(void)state;
	assert_non_null(d);
	push(d, cuda_malloc(1, MS, 0x1000, 4096));
	/* a report of another thread, or a free, does not teach thread 1 */
	push(d, c10_report(2, 2 * MS, 0x5000, 512, 1));
	push(d, c10_report(1, 3 * MS, 0x6000, -512, 1));
	mt_devlearn_push(d, &late);
	mt_devlearn_upto(d, 150 * MS);
	assert_int_equal(s.n, 0);
	/* 200 ms of later events and none: cuda:?, in its place */
	mt_devlearn_upto(d, 202 * MS);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.ev[0].kind, MT_K_CUDA_MALLOC);
	assert_int_equal(s.ev[0].dev, MT_DEV_UNKNOWN);
	assert_int_equal(s.ev[3].ts, 150 * MS);
	/* not waited for again */
	push(d, cuda_malloc(1, 300 * MS, 0x2000, 4096));
	assert_int_equal(s.n, 5);
	assert_int_equal(s.ev[4].dev, MT_DEV_UNKNOWN);
	/* until a report of its own teaches it */
	push(d, c10_report(1, 301 * MS, 0x7000, 512, 2));
	push(d, cuda_free(1, 302 * MS, 0x2000));
	assert_int_equal(s.ev[6].dev, 2);
	mt_devlearn_free(d);
}

static void test_known_and_started_never_wait(void **state)
{
	struct seen s = { .started = 10 };
	struct mt_devlearn *d = mt_devlearn_new(&ops, &s);
	struct mt_event e = cuda_malloc(1, MS, 0x1000, 4096);

	(void)state;
	assert_non_null(d);
	/* traced from its start: its unknown device is 0, said downstream */
	mt_devlearn_push(d, &e);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ev[0].dev, MT_DEV_UNKNOWN);
	/* BPF knew it: as it came, and no report overrides it */
	s.started = 0;
	e.dev = 1;
	mt_devlearn_push(d, &e);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ev[1].dev, 1);
	mt_devlearn_free(d);
}

static void test_exit_forgets_and_drain_ends_all(void **state)
{
	struct seen s = { 0 };
	struct mt_devlearn *d = mt_devlearn_new(&ops, &s);
	struct mt_event exit_ev = ev_of(MT_K_EXIT, 10, 10, 3 * MS);

	(void)state;
	assert_non_null(d);
	push(d, c10_report(1, MS, 0x1000, 512, 1));
	mt_devlearn_push(d, &exit_ev);
	/* a new image, or a pid used again: its device is to learn anew */
	push(d, cuda_malloc(1, 4 * MS, 0x1000, 4096));
	assert_int_equal(s.n, 2);
	assert_int_equal(mt_devlearn_held(d), 1);
	/* the end of the trace: everything goes on */
	mt_devlearn_upto(d, UINT64_MAX);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.ev[2].dev, MT_DEV_UNKNOWN);
	mt_devlearn_free(d);
}

struct counted {
	size_t n;
	struct mt_event first;
};

static void count_event(void *ctx, const struct mt_event *ev)
{
	struct counted *c = ctx;

	if (!c->n++)
		c->first = *ev;
}

static bool never_started(void *ctx, __u32 pid)
{
	return false;
}

static void test_bounded(void **state)
{
	static const struct mt_devlearn_ops count_ops = { count_event,
							  never_started };
	struct counted c = { 0 };
	struct mt_devlearn *d = mt_devlearn_new(&count_ops, &c);
	size_t most = 0;

	(void)state;
	assert_non_null(d);
	push(d, cuda_malloc(1, MS, 0x1000, 4096));
	/* a busy thread's events, all within the hold */
	for (__u64 i = 0; i < 100000; i++) {
		struct mt_event e = ev_of(MT_K_CPU_NEW, 10, 2, MS + i);

		mt_devlearn_push(d, &e);
		if (mt_devlearn_held(d) > most)
			most = mt_devlearn_held(d);
	}
	/* the waiting one given up when the hold was full, first and cuda:? */
	assert_true(most <= 16384);
	assert_int_equal(c.first.kind, MT_K_CUDA_MALLOC);
	assert_int_equal(c.first.dev, MT_DEV_UNKNOWN);
	assert_int_equal(c.n, 100001);
	mt_devlearn_free(d);
}

/* threads past the table's room go on at once, never waited for */
static void test_threads_table_full(void **state)
{
	struct counted c = { 0 };
	static const struct mt_devlearn_ops count_ops = { count_event,
							  never_started };
	struct mt_devlearn *d = mt_devlearn_new(&count_ops, &c);
	__u32 tid;

	(void)state;
	assert_non_null(d);
	/* each thread learned from a report of its own */
	for (tid = 1; tid <= 2048; tid++)
		push(d, c10_report(tid, tid, 0x1000 * tid, 512, 0));
	assert_int_equal(c.n, 2048);
	push(d, cuda_malloc(5000, 3000, 0x1000, 4096));
	assert_int_equal(mt_devlearn_held(d), 0);
	assert_int_equal(c.n, 2049);
	mt_devlearn_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segment_takes_its_blocks_device),
		cmocka_unit_test(test_no_report_goes_on_unknown_once),
		cmocka_unit_test(test_known_and_started_never_wait),
		cmocka_unit_test(test_exit_forgets_and_drain_ends_all),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_threads_table_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
