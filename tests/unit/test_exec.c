// SPDX-License-Identifier: GPL-2.0
/*
 * user/analysis/session.c: a process that runs execve frees what its old
 * image held (mt_session_exec), in every figure; another process keeps
 * its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/frag.h"
#include "analysis/lines.h"
#include "harness.h"

#define A 100 /* the process that execs */
#define B 200 /* another, untouched */
#define C10_CUDA0 1 /* c10::Device{CUDA, 0} as the report passes it */

struct sim {
	struct harness h; /* first: harness_teardown frees the whole */
	struct mt_site *fwd_a, *other_a, *site_b;
};

static int setup(void **state)
{
	struct mt_session_conf c = { .max_live = 1024,
				     .max_sites = 64,
				     .leak = { .age_steps = 2 } };
	struct sim *m = calloc(1, sizeof(*m));

	if (!m || harness_init(&m->h, &c, stderr))
		return -1;
	m->fwd_a = harness_site(&m->h,
				&(struct mt_site){ .pid = A,
						   .event = "cudart:cudaMalloc",
						   .phase = "forward",
						   .module = "net" });
	m->other_a = harness_site(
		&m->h, &(struct mt_site){ .pid = A, .event = "c10:alloc" });
	m->site_b = harness_site(
		&m->h,
		&(struct mt_site){ .pid = B, .event = "cudart:cudaMalloc" });
	*state = m;
	return 0;
}

/* an event as BPF sends it, decoded, counted at site */
static void feed(struct sim *m, struct mt_event *ev, struct mt_site *site)
{
	struct mt_call r;

	harness_decode(&m->h, ev, &r);
	assert_true(mt_session_event(&m->h.s, &r, site));
}

static void cuda_malloc(struct sim *m, __u32 pid, __u64 ptr, __u64 size,
			struct mt_site *site)
{
	struct mt_event ev = { .pid = pid,
			       .kind = MT_K_CUDA_MALLOC,
			       .flags = MT_EV_OUT,
			       .args = { 0x100, size },
			       .out = ptr,
			       .dev = 0 };

	feed(m, &ev, site);
}

/* c10's report of a block, with the allocator's totals after it */
static void c10_alloc(struct sim *m, __u32 pid, __u64 ptr, __u64 size,
		      __u64 allocated, __u64 reserved)
{
	struct mt_event ev = {
		.pid = pid,
		.kind = MT_K_C10_REPORT,
		.args = { ptr, size, allocated, reserved, C10_CUDA0 },
	};

	feed(m, &ev, m->other_a);
}

static const struct mt_dev_stat *dev(const struct mt_session *s, __u32 pid,
				     enum mt_space space)
{
	for (size_t i = 0; i < s->sum.ndevs; i++)
		if (s->sum.devs[i].pid == pid && s->sum.devs[i].space == space)
			return &s->sum.devs[i];
	fail_msg("no account of pid %u space %d", pid, space);
	return NULL;
}

static const struct mt_module_own *own(const struct mt_session *s, __u32 pid)
{
	for (size_t i = 0; i < s->sum.nowns; i++)
		if (s->sum.owns[i].pid == pid)
			return &s->sum.owns[i];
	fail_msg("no module of pid %u", pid);
	return NULL;
}

static void test_exec_frees_what_the_image_held(void **state)
{
	struct sim *m = *state;
	struct mt_exec_freed freed;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	cuda_malloc(m, A, 0x1000, 1000, m->fwd_a);
	cuda_malloc(m, A, 0x2000, 3000, m->fwd_a);
	c10_alloc(m, A, 0x9000, 512, 512, 2048);
	cuda_malloc(m, B, 0x1000, 5000, m->site_b);
	assert_int_equal(mt_live_count(m->h.s.live), 4);

	mt_session_exec(&m->h.s, A, m->h.ts + 500, &freed);
	assert_int_equal(freed.allocs, 3);
	assert_int_equal(freed.bytes, 1000 + 3000 + 512);
	/* only B's allocation is alive, and its figures are its own */
	assert_int_equal(mt_live_count(m->h.s.live), 1);
	assert_int_equal(mt_session_proc(&m->h.s, A)->live, 0);
	assert_int_equal(mt_session_proc(&m->h.s, B)->live, 1);
	assert_int_equal(dev(&m->h.s, A, MT_SP_CUDART)->cur, 0);
	assert_int_equal(dev(&m->h.s, A, MT_SP_CUDART)->peak, 4000);
	assert_int_equal(dev(&m->h.s, B, MT_SP_CUDART)->cur, 5000);
	/* c10's totals of the old allocator: gone, their peaks stay */
	assert_int_equal(dev(&m->h.s, A, MT_SP_C10)->allocated, 0);
	assert_int_equal(dev(&m->h.s, A, MT_SP_C10)->reserved, 0);
	assert_int_equal(dev(&m->h.s, A, MT_SP_C10)->allocated_peak, 512);
	assert_int_equal(dev(&m->h.s, A, MT_SP_C10)->reserved_peak, 2048);
	/* the module's own bytes and the site's live ones */
	assert_int_equal(own(&m->h.s, A)->live, 0);
	assert_int_equal(own(&m->h.s, A)->peak, 4000);
	assert_int_equal(m->fwd_a->live_bytes, 0);
	assert_int_equal(m->fwd_a->live_count, 0);
	assert_int_equal(m->other_a->live_bytes, 0);
	assert_int_equal(m->site_b->live_bytes, 5000);
	/* the allocator's waste ends with it; its report still counts one */
	f = open_memstream(&text, &len);
	assert_non_null(f);
	mt_frag_print(m->h.s.frag, m->h.s.live, 0, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "# frag pid=100 dev=cuda:0 events=1 "));
	assert_non_null(strstr(text, " waste_last=0 reserved_last=0 "
				     "allocated_last=0\n"));
	free(text);

	/* the new image's allocation at an old address is a new one */
	cuda_malloc(m, A, 0x1000, 7000, m->fwd_a);
	assert_int_equal(dev(&m->h.s, A, MT_SP_CUDART)->cur, 7000);
	assert_int_equal(dev(&m->h.s, A, MT_SP_CUDART)->peak, 7000);
	assert_int_equal(own(&m->h.s, A)->live, 7000);
	assert_int_equal(m->h.s.sum.early_frees, 0);
}

static void test_exec_of_nothing(void **state)
{
	struct sim *m = *state;
	struct mt_exec_freed freed = { 9, 9 };

	cuda_malloc(m, B, 0x1000, 5000, m->site_b);
	mt_session_exec(&m->h.s, A, m->h.ts, &freed);
	assert_int_equal(freed.allocs, 0);
	assert_int_equal(freed.bytes, 0);
	assert_int_equal(mt_live_count(m->h.s.live), 1);
	assert_int_equal(dev(&m->h.s, B, MT_SP_CUDART)->cur, 5000);
}

static void test_exec_line(void **state)
{
	const struct mt_exec_freed freed = { 3, 4512 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	/* a comm of 16 bytes has no NUL: no more is read, as in event lines */
	mt_lines_print_exec(f, A, "python3.12456789XYZ", "/usr/bin/python3.12",
			    &freed);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text, "# exec pid=100: now python3.12456789 "
				  "(/usr/bin/python3.12): what it held before "
				  "is freed: allocs=3 bytes=4512\n");
	free(text);

	/* a name the program chose stays in its place on one line */
	f = open_memstream(&text, &len);
	assert_non_null(f);
	mt_lines_print_exec(f, A, "t\x1b[2J\n# OOM", "/x\n# OOM pid=1 (y)",
			    &freed);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text,
			    "# exec pid=100: now t\\x1b[2J\\n#_OOM "
			    "(/x\\n#\\x20OOM\\x20pid\\x3d1\\x20(y)): what it "
			    "held before is freed: allocs=3 bytes=4512\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_exec_frees_what_the_image_held, setup,
			harness_teardown),
		cmocka_unit_test_setup_teardown(test_exec_of_nothing, setup,
						harness_teardown),
		cmocka_unit_test(test_exec_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
