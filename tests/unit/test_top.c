// SPDX-License-Identifier: GPL-2.0
/* user/analysis/top.c: the live view's frame from a session. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/top.h"
#include "harness.h"

#define PID 4242
#define LEAK 1000 /* bytes kept by every step */

static const char EV_ALLOC[] = "c10:cpu_alloc";
static const char EV_FREE[] = "c10:cpu_free";
static const char FORWARD[] = "forward";
static const char BACKWARD[] = "backward";
static const char OPTIMIZER[] = "optimizer";
#define MODULE "encoder.layers.0.self_attn.out_proj"
#define LIB_FRAME "linear (torch/nn/functional.py:10)"
#define OWN_FRAME "Net.forward (/src/train.py:20)"

struct sim {
	struct harness h;
	struct mt_top *top;
	struct mt_site *fwd, *bwd, *opt, *free_site;
	const char *stack[2];
	__u64 ptr;
};

static struct mt_site *site_of(struct sim *m, const char *event,
			       const char *phase, const char *module,
			       const char **frames, int depth)
{
	struct mt_site key = { .pid = PID,
			       .event = event,
			       .phase = phase,
			       .module = module,
			       .depth = depth,
			       .frames = frames };

	return harness_site(&m->h, &key);
}

static int setup(void **state)
{
	struct mt_session_conf c = { .max_live = 1 << 16,
				     .max_sites = 64,
				     .leak = { .age_steps = 2 } };
	struct sim *m = calloc(1, sizeof(*m));

	if (!m || harness_init(&m->h, &c, stderr))
		return -1;
	m->top = mt_top_new();
	if (!m->top)
		return -1;
	if (mt_session_observe(&m->h.s,
			       &(struct mt_session_observer){
				       .event = mt_top_event, .ctx = m->top }))
		return -1;
	m->stack[0] = LIB_FRAME;
	m->stack[1] = OWN_FRAME;
	m->fwd = site_of(m, EV_ALLOC, FORWARD, MODULE, m->stack, 2);
	m->bwd = site_of(m, EV_ALLOC, BACKWARD, MODULE, m->stack, 2);
	m->opt = site_of(m, EV_ALLOC, OPTIMIZER, "-", NULL, 0);
	m->free_site = site_of(m, EV_FREE, NULL, NULL, NULL, 0);
	m->ptr = 0x10000;
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	struct sim *m = *state;

	mt_top_free(m->top);
	harness_free(&m->h);
	free(m);
	return 0;
}

/*
 * An allocation at site (its pointer returned), or a free of ptr; flags:
 * the event's MT_EV_* (MT_EV_SAMPLED: its stack was walked)
 */
static __u64 feed_flags(struct sim *m, struct mt_site *site, __u64 ptr,
			__u64 size, __u16 flags)
{
	bool alloc = site != m->free_site;

	if (alloc)
		ptr = m->ptr += 0x10000;
	harness_cpu(&m->h, site, PID, alloc, ptr, size, flags);
	return ptr;
}

static __u64 feed(struct sim *m, struct mt_site *site, __u64 ptr, __u64 size)
{
	return feed_flags(m, site, ptr, size, 0);
}

/* steps of a loop that keeps LEAK bytes of its forward every step */
static void train(struct sim *m, int steps)
{
	for (int i = 0; i < steps; i++) {
		__u64 act, grad, state;

		feed(m, m->fwd, 0, LEAK);
		act = feed(m, m->fwd, 0, 5000);
		grad = feed(m, m->bwd, 0, 200);
		feed(m, m->free_site, act, 0);
		state = feed(m, m->opt, 0, 300);
		feed(m, m->free_site, grad, 0);
		feed(m, m->free_site, state, 0);
	}
}

/* the frame, as a string to free */
static char *frame(struct sim *m, int cols, int rows)
{
	struct mt_top_status st = { .elapsed = 3,
				    .interval = 1,
				    .nprocs = 1,
				    .pid = PID,
				    .comm = "python3" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(mt_top_frame(m->top, &m->h.s, &st, cols, rows, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* the growth per step, what is alive by module and by line */
static void test_frame(void **state)
{
	struct sim *m = *state;
	char *t;

	train(m, 6);
	/* mid-step: the forward's activation is alive */
	feed(m, m->fwd, 0, LEAK);
	feed(m, m->fwd, 0, 5000);
	t = frame(m, 0, 0);
	assert_non_null(strstr(t, "memtrace-bpf top: pid 4242 python3  up 3s"));
	/* 6 leaks and a 7th step's forward: 6 * 1000 + 1000 + 5000 */
	assert_non_null(strstr(t, "\n   4242      cpu    11.7 KiB    11.7 KiB"
				  "           -       +1000 B       6  cpu\n"));
	assert_non_null(
		strstr(t, "    cpu    11.7 KiB  100.0        8  " MODULE "\n"));
	/* the program's own line, not torch's */
	assert_non_null(strstr(
		t, "    cpu    11.7 KiB  100.0        8  " OWN_FRAME "\n"));
	assert_null(strstr(t, LIB_FRAME));
	/* a full trace: nothing is an estimate */
	assert_null(strstr(t, "Sampled"));
	assert_null(strchr(t, '~'));
	free(t);
}

/*
 * An optimizer that makes its state once, at its first step (AdamW; here
 * the third step the view sees, as after an attach), then holds it: no
 * growth per step, where the first step seen to the last said 1 MiB over
 * 7 steps, +146 KiB a step
 */
static void test_warmup(void **state)
{
	struct sim *m = *state;
	char *t;

	for (int i = 0; i < 8; i++) {
		__u64 act = feed(m, m->fwd, 0, 5000);
		__u64 grad = feed(m, m->bwd, 0, 200);

		feed(m, m->free_site, act, 0);
		feed(m, m->free_site, grad, 0);
		if (i == 2)
			feed(m, m->opt, 0, 1 << 20);
		else
			feed(m, m->free_site, feed(m, m->opt, 0, 300), 0);
	}
	feed(m, m->fwd, 0, 5000);
	t = frame(m, 0, 0);
	assert_non_null(strstr(t, "           -          +0 B       8  cpu\n"));
	free(t);
}

/*
 * --sample-bytes: the memory exact, what is alive by module and by line
 * estimated from the sampled allocations (each 1/p of them), and the
 * frame says which is which
 */
static void test_sampled(void **state)
{
	struct sim *m = *state;
	/* the site of an allocation whose stack was not walked */
	struct mt_site *none = site_of(m, EV_ALLOC, NULL, NULL, NULL, 0);
	char *t;

	m->h.s.conf.sample_bytes = 4096;
	for (int i = 0; i < 4; i++)
		feed(m, none, 0, 1000);
	t = frame(m, 0, 0);
	assert_non_null(strstr(t, "\nSampled (R=4.00 KiB): ~ figures are "
				  "estimates, totals exact; no stack yet in 4 "
				  "allocations\n"));
	free(t);
	/* 1/p = 1/(1 - exp(-1000/4096)): 4.62 of them, 4617 bytes */
	feed_flags(m, m->fwd, 0, 1000, MT_EV_SAMPLED);
	/* far larger than R: itself */
	feed_flags(m, m->fwd, 0, 1 << 20, MT_EV_SAMPLED);
	t = frame(m, 0, 0);
	assert_non_null(strstr(t, "\nSampled (R=4.00 KiB): ~ figures are "
				  "estimates, totals exact; stacks for 1 "
				  "allocation in 3\n"));
	/* all 6 allocations, exact; the steps marked estimates */
	assert_non_null(strstr(t, "\n    PID   DEVICE     CURRENT        PEAK"
				  "    RESERVED  ~GROWTH/STEP   ~STEP  SOURCE\n"
				  "   4242      cpu    1.00 MiB    1.00 MiB"
				  "           -             -       0  cpu\n"));
	/* 1048576 + 4617 bytes in 1 + 5 allocations, the 4000 unsampled in none */
	assert_non_null(
		strstr(t, "\n DEVICE        ~NOW     ~%   ~COUNT  MODULE"
			  " (alive now)\n"
			  "    cpu    1.00 MiB  100.0        6  " MODULE "\n"));
	assert_non_null(strstr(
		t, "    cpu    1.00 MiB  100.0        6  " OWN_FRAME "\n"));
	assert_null(strstr(t, "no module"));
	free(t);
}

/* what a walk of the live table tells, allocation by allocation */
struct walk {
	struct mt_session *s;
	__u64 bytes[MT_MK_MAX];
};

static void walk_one(const struct mt_live *e, void *ctx)
{
	struct walk *w = ctx;

	w->bytes[mt_session_kind_alive(e, w->s)] += e->size;
}

/* the session's tally of kinds is what the report's walk tells */
static void same_as_walk(struct sim *m)
{
	struct walk w = { .s = &m->h.s };
	__u64 tally[MT_MK_MAX];

	assert_int_equal(m->h.s.sum.ndevs, 1);
	mt_live_foreach(m->h.s.live, walk_one, &w);
	mt_session_kinds_now(&m->h.s, &m->h.s.sum.devs[0], tally);
	for (int k = 0; k < MT_MK_MAX; k++)
		assert_int_equal(tally[k], w.bytes[k]);
}

/*
 * Per account, what it holds now by kind: the model made before the
 * first phase, last step's gradients and the optimizer's state settled,
 * the forward running now unknown until it ends
 */
static void test_kinds(void **state)
{
	struct sim *m = *state;
	struct mt_site *model = site_of(m, EV_ALLOC, "other", "-", NULL, 0);
	char *t;

	feed(m, model, 0, 4096);
	for (int i = 0; i < 2; i++) {
		__u64 act = feed(m, m->fwd, 0, 5000);

		feed(m, m->bwd, 0, 200);
		feed(m, m->free_site, act, 0);
		feed(m, m->opt, 0, 300);
		same_as_walk(m);
	}
	feed(m, m->fwd, 0, 5000);
	same_as_walk(m);
	t = frame(m, 0, 0);
	assert_non_null(strstr(t, "\n   4242      cpu  now by kind: "
				  "unknown 4.88 KiB  parameters 4.00 KiB  "
				  "optimizer_state 600 B  gradients 400 B\n"));
	free(t);
	/* its backward begins: the forward's activation is told */
	feed(m, m->bwd, 0, 100);
	same_as_walk(m);
	t = frame(m, 0, 0);
	assert_non_null(strstr(t, "now by kind: activations 4.88 KiB  "
				  "parameters 4.00 KiB  optimizer_state 600 B  "
				  "gradients 400 B  unknown 100 B\n"));
	free(t);
}

/* no line wider than the terminal, none past its height */
static void test_fits(void **state)
{
	struct sim *m = *state;
	int lines = 0;
	char *t, *p;

	train(m, 3);
	t = frame(m, 60, 12);
	for (p = t; *p; lines++) {
		size_t n = strcspn(p, "\n");

		assert_true(n <= 60);
		p += n + (p[n] == '\n');
	}
	assert_true(lines <= 12);
	/* too narrow for every figure: columns left out, none cut */
	assert_non_null(strstr(t, "\n    PID   DEVICE     CURRENT   GROWTH/STEP"
				  "  SOURCE\n"
				  "   4242      cpu    2.93 KiB       +1000 B"
				  "  cpu\n"));
	/* a name that does not fit keeps its end */
	assert_non_null(strstr(t, "  ...0.self_attn.out_proj\n"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warmup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kinds, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
