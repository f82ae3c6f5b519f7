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
#include "analysis/session.h"
#include "analysis/top.h"

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
	struct mt_session s;
	struct mt_top *top;
	struct mt_site *fwd, *bwd, *opt, *free_site;
	const char *stack[2];
	__u64 ts, ptr;
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
	bool is_new;

	return mt_sites_get(m->s.sites, &key, &is_new);
}

static int setup(void **state)
{
	struct mt_session_conf c = { .max_live = 1 << 16,
				     .max_sites = 64,
				     .leak = { .age_steps = 2 } };
	struct sim *m = calloc(1, sizeof(*m));

	if (!m || mt_session_init(&m->s, &c, stderr))
		return -1;
	m->top = mt_top_new();
	if (!m->top)
		return -1;
	m->s.obs = (struct mt_session_observer){ .event = mt_top_event,
						 .ctx = m->top };
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
	mt_session_free(&m->s);
	free(m);
	return 0;
}

/* an allocation at site (its pointer returned), or a free of ptr */
static __u64 feed(struct sim *m, struct mt_site *site, __u64 ptr, __u64 size)
{
	bool alloc = site != m->free_site;
	struct mt_event ev = {
		.ts = (m->ts += 1000), .pid = PID, .tid = PID, .comm = "python3"
	};
	struct mt_call r = {
		.ev = &ev,
		.ki = mt_kind(alloc ? MT_K_CPU_NEW : MT_K_CPU_DELETE),
		.event = alloc ? EV_ALLOC : EV_FREE,
		.role = alloc ? MT_ROLE_ALLOC : MT_ROLE_FREE,
		.has_ptr = true,
		.ptr = alloc ? (m->ptr += 0x10000) : ptr,
		.size_state = alloc ? MT_SIZE_KNOWN : MT_SIZE_UNKNOWN,
		.size = size,
		.dev_type = MT_DT_CPU,
		.dev_index = -1,
	};

	assert_true(mt_session_event(&m->s, &r, site));
	return r.ptr;
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
	assert_int_equal(mt_top_frame(m->top, &m->s, &st, cols, rows, f), 0);
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
		cmocka_unit_test_setup_teardown(test_fits, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
