// SPDX-License-Identifier: GPL-2.0
/*
 * user/analysis/memkind.h: a training step's allocations told apart by the
 * phases they lived through; what cannot be told is unknown.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analysis/memkind.h"

/* the phase instance a clock is at after phase at step */
static __u32 at(struct mt_memkind_clock *c, const char *phase, __u32 step)
{
	mt_memkind_tick(c, phase, step);
	return c->instance;
}

static void test_a_step(void **state)
{
	struct mt_memkind_clock c = { 0 };
	__u32 fwd, bwd, opt;

	(void)state;
	/* made before any phase: the model, or the first batch */
	assert_int_equal(at(&c, "other", 0), 0);
	fwd = at(&c, "forward", 0);
	/* forward again, same step: the same instance */
	assert_int_equal(at(&c, "forward", 0), fwd);
	/* an "other" event (a loader thread) amid it does not tick */
	assert_int_equal(at(&c, "other", 0), fwd);
	assert_int_equal(mt_memkind_of("forward", fwd, &c, false, true),
			 MT_MK_TEMPORARIES);
	bwd = at(&c, "backward", 0);
	assert_int_equal(mt_memkind_of("forward", fwd, &c, false, true),
			 MT_MK_ACTIVATIONS);
	assert_int_equal(mt_memkind_of("backward", bwd, &c, false, true),
			 MT_MK_TEMPORARIES);
	opt = at(&c, "optimizer", 0);
	assert_int_equal(mt_memkind_of("backward", bwd, &c, false, true),
			 MT_MK_GRADIENTS);
	/* the first batch, freed as the second comes: an input */
	assert_int_equal(mt_memkind_of("other", 0, &c, false, true),
			 MT_MK_INPUTS);
	/* a new step's forward: a new instance */
	assert_int_not_equal(at(&c, "forward", 1), fwd);
	assert_int_equal(mt_memkind_of("optimizer", opt, &c, true, true),
			 MT_MK_OPTIMIZER);
	/* a later batch, made between steps */
	assert_int_equal(mt_memkind_of("other", opt, &c, false, true),
			 MT_MK_INPUTS);
	at(&c, "optimizer", 1);
	/* made before the first phase, alive into the second step */
	assert_int_equal(mt_memkind_of("other", 0, &c, false, true),
			 MT_MK_PARAMETERS);
	assert_int_equal(mt_memkind_of("other", 0, &c, true, true),
			 MT_MK_PARAMETERS);
}

static void test_what_cannot_be_told(void **state)
{
	struct mt_memkind_clock c = { 0 };
	__u32 fwd;

	(void)state;
	/* no phase ever: a script with no model */
	assert_int_equal(mt_memkind_of("other", 0, &c, true, true),
			 MT_MK_UNKNOWN);
	/* a stack not walked */
	assert_int_equal(mt_memkind_of(NULL, 0, &c, false, true),
			 MT_MK_UNKNOWN);
	fwd = at(&c, "forward", 0);
	/* alive at the end of a forward that had not ended */
	assert_int_equal(mt_memkind_of("forward", fwd, &c, true, true),
			 MT_MK_UNKNOWN);
	at(&c, "backward", 0);
	at(&c, "optimizer", 0);
	at(&c, "forward", 1);
	at(&c, "optimizer", 1);
	/* attached mid-run: what came before the first phase seen */
	assert_int_equal(mt_memkind_of("other", 0, &c, true, false),
			 MT_MK_UNKNOWN);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(mt_memkind_name(MT_MK_OPTIMIZER),
			    "optimizer_state");
	assert_non_null(mt_memkind_remedy(MT_MK_ACTIVATIONS));
	assert_null(mt_memkind_remedy(MT_MK_UNKNOWN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_step),
		cmocka_unit_test(test_what_cannot_be_told),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
