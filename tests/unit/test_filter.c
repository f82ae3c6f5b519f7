// SPDX-License-Identifier: GPL-2.0
/* user/analysis/filter.c: which events a filtered session counts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/filter.h"

/* one event and its site, as the session hands them over */
struct ev {
	struct mt_event ev;
	struct mt_call r;
	struct mt_site site;
};

static struct ev *alloc_ev(struct ev *e, __u32 pid, __u32 tid, __u64 ptr,
			   __u64 size, const char *module, const char *phase)
{
	memset(e, 0, sizeof(*e));
	e->ev.pid = pid;
	e->ev.tid = tid;
	snprintf(e->ev.comm, sizeof(e->ev.comm), "%s",
		 tid == pid ? "python3" : "worker");
	e->r = (struct mt_call){ .ev = &e->ev,
				 .ki = mt_kind(MT_K_CPU_NEW),
				 .event = "c10:cpu_alloc",
				 .role = MT_ROLE_ALLOC,
				 .has_ptr = true,
				 .ptr = ptr,
				 .size_state = MT_SIZE_KNOWN,
				 .size = size };
	e->site = (struct mt_site){ .module = module, .phase = phase };
	return e;
}

/* the free of ptr, by thread tid, outside every module */
static struct ev *free_ev(struct ev *e, __u32 pid, __u32 tid, __u64 ptr)
{
	alloc_ev(e, pid, tid, ptr, 0, NULL, "optimizer");
	e->r.ki = mt_kind(MT_K_CPU_DELETE);
	e->r.event = "c10:cpu_free";
	e->r.role = MT_ROLE_FREE;
	e->r.size_state = MT_SIZE_UNKNOWN;
	return e;
}

static bool pass(struct mt_filter *f, struct ev *e, double secs, __u32 step)
{
	return mt_filter_event(f, &e->r, &e->site, secs, step, 0);
}

static void test_any(void **state)
{
	struct mt_filter_conf c = { 0 };

	assert_false(mt_filter_conf_any(&c));
	c.module = "encoder";
	assert_true(mt_filter_conf_any(&c));
	c = (struct mt_filter_conf){ .has_size = true };
	assert_true(mt_filter_conf_any(&c));
}

/* a module is its prefix's when the prefix ends at a dot */
static void test_module_prefix(void **state)
{
	struct mt_filter_conf c = { .module = "encoder.layers.1" };
	struct mt_filter *f = mt_filter_new(&c, 64);
	struct ev e;

	assert_non_null(f);
	assert_true(pass(
		f, alloc_ev(&e, 1, 1, 0x10, 8, "encoder.layers.1", "forward"),
		0, 0));
	assert_true(pass(f,
			 alloc_ev(&e, 1, 1, 0x20, 8,
				  "encoder.layers.1.self_attn", "forward"),
			 0, 0));
	assert_false(pass(
		f, alloc_ev(&e, 1, 1, 0x30, 8, "encoder.layers.10", "forward"),
		0, 0));
	assert_false(pass(f, alloc_ev(&e, 1, 1, 0x40, 8, "encoder", "forward"),
			  0, 0));
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x50, 8, NULL, "forward"), 0, 0));
	mt_filter_free(f);
}

/*
 * A free goes with its allocation whatever its own module, phase, thread
 * or size: the kept one's free passes, the dropped one's is dropped.
 */
static void test_free_follows_alloc(void **state)
{
	struct mt_filter_conf c = { .phase = "forward",
				    .tids = { 7 },
				    .ntids = 1,
				    .has_size = true,
				    .size_min = 100 };
	struct mt_filter *f = mt_filter_new(&c, 64);
	struct mt_filter_stats st;
	struct ev e;

	assert_true(
		pass(f, alloc_ev(&e, 1, 7, 0x10, 100, "m", "forward"), 1, 0));
	/* too small, other phase, other thread */
	assert_false(
		pass(f, alloc_ev(&e, 1, 7, 0x20, 99, "m", "forward"), 1, 0));
	assert_false(
		pass(f, alloc_ev(&e, 1, 7, 0x30, 100, "m", "backward"), 1, 0));
	assert_false(
		pass(f, alloc_ev(&e, 1, 8, 0x40, 100, "m", "forward"), 1, 0));
	/* freed by another thread, in another phase, of no known size */
	assert_true(pass(f, free_ev(&e, 1, 9, 0x10), 2, 0));
	assert_false(pass(f, free_ev(&e, 1, 9, 0x20), 2, 0));
	assert_false(pass(f, free_ev(&e, 1, 9, 0x30), 2, 0));
	assert_false(pass(f, free_ev(&e, 1, 7, 0x40), 2, 0));
	/* the same address in another process is another allocation */
	assert_false(pass(f, free_ev(&e, 2, 7, 0x10), 2, 0));
	mt_filter_stats(f, &st);
	assert_int_equal(st.passed, 2);
	assert_int_equal(st.dropped, 7);
	assert_int_equal(st.freed_before_window, 0);
	mt_filter_free(f);
}

/* before, inside and after --time 2,4 */
static void test_time_window(void **state)
{
	struct mt_filter_conf c = { .has_time = true,
				    .t_start = 2,
				    .t_end = 4 };
	struct mt_filter *f = mt_filter_new(&c, 64);
	struct mt_filter_stats st;
	struct ev e;

	/* made before: its free inside is counted apart, not passed */
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x10, 1000, "m", "forward"), 1, 0));
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x20, 24, "m", "forward"), 1.5, 0));
	assert_true(
		pass(f, alloc_ev(&e, 1, 1, 0x30, 50, "m", "forward"), 2, 0));
	assert_false(pass(f, free_ev(&e, 1, 1, 0x10), 3, 0));
	assert_false(pass(f, free_ev(&e, 1, 1, 0x20), 4, 0));
	assert_true(pass(f, free_ev(&e, 1, 1, 0x30), 4, 0));
	/* after: neither counted */
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x40, 8, "m", "forward"), 4.5, 0));
	assert_false(pass(f, free_ev(&e, 1, 1, 0x40), 5, 0));
	mt_filter_stats(f, &st);
	assert_int_equal(st.freed_before_window, 2);
	assert_int_equal(st.freed_before_window_bytes, 1024);
	assert_int_equal(st.passed, 2);
	mt_filter_free(f);
}

/* --time 3, is open at its end; a free before the window is not counted */
static void test_open_end_and_early_free(void **state)
{
	struct mt_filter_conf c = { .has_time = true,
				    .t_start = 3,
				    .t_end = -1 };
	struct mt_filter *f = mt_filter_new(&c, 64);
	struct mt_filter_stats st;
	struct ev e;

	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x10, 10, "m", "forward"), 1, 0));
	assert_false(pass(f, free_ev(&e, 1, 1, 0x10), 2, 0));
	assert_true(
		pass(f, alloc_ev(&e, 1, 1, 0x10, 10, "m", "forward"), 1e6, 0));
	mt_filter_stats(f, &st);
	assert_int_equal(st.freed_before_window, 0);
	mt_filter_free(f);
}

static void test_steps(void **state)
{
	struct mt_filter_conf c = { .has_steps = true,
				    .step_min = 2,
				    .step_max = 3 };
	struct mt_filter *f = mt_filter_new(&c, 64);
	struct mt_filter_stats st;
	struct ev e;

	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x10, 10, "m", "forward"), 0, 1));
	assert_true(
		pass(f, alloc_ev(&e, 1, 1, 0x20, 10, "m", "forward"), 0, 2));
	assert_true(pass(f, free_ev(&e, 1, 1, 0x20), 0, 3));
	assert_false(pass(f, free_ev(&e, 1, 1, 0x10), 0, 3));
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x30, 10, "m", "forward"), 0, 4));
	mt_filter_stats(f, &st);
	assert_int_equal(st.freed_before_window, 1);
	assert_int_equal(st.freed_before_window_bytes, 10);
	mt_filter_free(f);
}

/* a free of memory the trace never saw allocated is judged on its own */
static void test_unseen_free(void **state)
{
	struct mt_filter_conf c = { .pids = { 5 }, .npids = 1 };
	struct mt_filter *f = mt_filter_new(&c, 64);
	struct ev e;

	assert_true(pass(f, free_ev(&e, 5, 5, 0x10), 0, 0));
	assert_false(pass(f, free_ev(&e, 6, 6, 0x10), 0, 0));
	mt_filter_free(f);
	c = (struct mt_filter_conf){ .events = { "c10:cpu_alloc" },
				     .nevents = 1 };
	f = mt_filter_new(&c, 64);
	assert_false(pass(f, free_ev(&e, 5, 5, 0x10), 0, 0));
	assert_true(pass(f, alloc_ev(&e, 5, 5, 0x10, 1, NULL, NULL), 0, 0));
	assert_true(pass(f, free_ev(&e, 5, 5, 0x10), 0, 0));
	mt_filter_free(f);
}

/* past max_live the filter counts what it could not remember */
static void test_untracked(void **state)
{
	struct mt_filter_conf c = { .comms = { "python3" }, .ncomms = 1 };
	struct mt_filter *f = mt_filter_new(&c, 2);
	struct mt_filter_stats st;
	struct ev e;

	for (__u64 p = 1; p <= 4; p++)
		assert_true(pass(f, alloc_ev(&e, 1, 1, p * 16, 8, NULL, NULL),
				 0, 0));
	assert_false(pass(f, alloc_ev(&e, 1, 2, 0x1000, 8, NULL, NULL), 0, 0));
	mt_filter_stats(f, &st);
	assert_int_equal(st.untracked, 3);
	mt_filter_free(f);
}

static void test_check_event(void **state)
{
	char err[256];

	assert_int_equal(
		mt_filter_check_event("c10:cpu_alloc", err, sizeof(err)), 0);
	assert_int_equal(
		mt_filter_check_event("cudart:cudaMalloc", err, sizeof(err)),
		0);
	assert_int_equal(mt_filter_check_event("c10:alloc", err, sizeof(err)),
			 0);
	assert_int_equal(
		mt_filter_check_event("c10:cpu_free", err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "goes with its allocation"));
	assert_int_equal(mt_filter_check_event("c10:free", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(mt_filter_check_event("bogus", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "no such event kind"));
}

/* --size MIN,MAX: both bounds kept, 0 among them (--size 0,0) */
static void test_size_bounds(void **state)
{
	struct mt_filter_conf c = { .has_size = true, .has_size_max = true };
	struct mt_filter *f = mt_filter_new(&c, 8);
	char buf[256] = { 0 };
	FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
	struct ev e;

	assert_non_null(f);
	assert_non_null(out);
	assert_true(pass(f, alloc_ev(&e, 1, 1, 0x10, 0, "m", "forward"), 0, 0));
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x20, 1, "m", "forward"), 0, 0));
	mt_filter_print_settings(f, out);
	assert_int_equal(fclose(out), 0);
	assert_string_equal(buf, " size=0,0");
	mt_filter_free(f);

	c = (struct mt_filter_conf){ .has_size = true,
				     .has_size_max = true,
				     .size_min = 8,
				     .size_max = 16 };
	f = mt_filter_new(&c, 8);
	assert_non_null(f);
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x10, 7, "m", "forward"), 0, 0));
	assert_true(pass(f, alloc_ev(&e, 1, 1, 0x20, 8, "m", "forward"), 0, 0));
	assert_true(
		pass(f, alloc_ev(&e, 1, 1, 0x30, 16, "m", "forward"), 0, 0));
	assert_false(
		pass(f, alloc_ev(&e, 1, 1, 0x40, 17, "m", "forward"), 0, 0));
	mt_filter_free(f);
}

static void test_print(void **state)
{
	struct mt_filter_conf c = {
		.has_time = true, .t_start = 1.5, .t_end = -1, .module = "enc"
	};
	struct mt_filter *f = mt_filter_new(&c, 8);
	char buf[512] = { 0 };
	FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
	struct ev e;

	assert_non_null(out);
	pass(f, alloc_ev(&e, 1, 1, 0x10, 64, "enc", "forward"), 1, 0);
	pass(f, free_ev(&e, 1, 1, 0x10), 2, 0);
	mt_filter_print(f, out);
	mt_filter_print(NULL, out);
	fclose(out);
	assert_string_equal(buf, "# filter time=1.5, module=enc passed=0 "
				 "dropped=2 freed_before_window=1 "
				 "freed_before_window_bytes=64 untracked=0\n");
	mt_filter_free(f);
}

/*
 * --kind: an allocation passes by the kind its first reading told, its
 * free with it; an event of no memory, or a kind never told, does not
 */
static void test_kind(void **state)
{
	struct mt_kindmap *m = mt_kindmap_new(16);
	struct mt_filter_conf c = { .kinds = { "gradients" }, .nkinds = 1 };
	struct mt_filter *f;
	struct ev e;
	char err[256];

	assert_non_null(m);
	assert_int_equal(mt_kindmap_set(m, 1, MT_MK_GRADIENTS), 0);
	assert_int_equal(mt_kindmap_set(m, 2, MT_MK_TEMPORARIES), 0);
	assert_int_equal(mt_kindmap_set(m, 16, MT_MK_GRADIENTS), -E2BIG);
	assert_int_equal(mt_kindmap_get(m, 3), MT_MK_MAX);
	c.kindmap = m;
	assert_true(mt_filter_conf_any(&c));
	f = mt_filter_new(&c, 64);
	assert_non_null(f);
	alloc_ev(&e, 1, 1, 0x10, 8, "fc", "backward");
	assert_true(mt_filter_event(f, &e.r, &e.site, 0, 0, 1));
	alloc_ev(&e, 1, 1, 0x20, 8, "fc", "backward");
	assert_false(mt_filter_event(f, &e.r, &e.site, 0, 0, 2));
	alloc_ev(&e, 1, 1, 0x30, 8, "fc", "backward");
	assert_false(mt_filter_event(f, &e.r, &e.site, 0, 0, 3));
	assert_true(mt_filter_event(f, &free_ev(&e, 1, 1, 0x10)->r, &e.site, 0,
				    0, 4));
	assert_false(mt_filter_event(f, &free_ev(&e, 1, 1, 0x20)->r, &e.site, 0,
				     0, 5));
	/* a failed allocation holds no memory, of no kind */
	alloc_ev(&e, 1, 1, 0, 8, "fc", "backward");
	e.r.failed = true;
	assert_false(mt_filter_event(f, &e.r, &e.site, 0, 0, 6));
	assert_int_equal(
		mt_filter_check_kind("optimizer_state", err, sizeof(err)), 0);
	assert_int_equal(mt_filter_check_kind("grads", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(
		err,
		"--kind grads: no such kind of memory (there are: parameters, "
		"inputs, activations, gradients, optimizer_state, temporaries, "
		"unknown)");
	mt_filter_free(f);
	mt_kindmap_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_any),
		cmocka_unit_test(test_module_prefix),
		cmocka_unit_test(test_free_follows_alloc),
		cmocka_unit_test(test_time_window),
		cmocka_unit_test(test_open_end_and_early_free),
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_unseen_free),
		cmocka_unit_test(test_untracked),
		cmocka_unit_test(test_check_event),
		cmocka_unit_test(test_size_bounds),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
