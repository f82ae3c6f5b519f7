// SPDX-License-Identifier: GPL-2.0
/* user/python/nodeseq.c: a Node's number to the forward stack that made it */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "python/nodeseq.h"

/*
 * A forward as docs/autograd-tls.md tells it: Linear makes Node 0 and
 * allocates at counter 1; a view makes Node 1 and allocates nothing; ReLU
 * makes Node 2 and allocates at 3, twice.
 */
static void test_origin(void **state)
{
	struct mt_nodeseq s;

	mt_nodeseq_init(&s, 0);
	s.from_start = true;
	assert_int_equal(mt_nodeseq_origin(&s, 0), 0);
	assert_int_equal(mt_nodeseq_put(&s, 1, 0xa), 0);
	assert_int_equal(mt_nodeseq_put(&s, 3, 0xc), 0);
	/* the op's second allocation: its first names it */
	assert_int_equal(mt_nodeseq_put(&s, 3, 0xd), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 0), 0xa);
	/* the view allocated nothing: the next op above names it */
	assert_int_equal(mt_nodeseq_origin(&s, 1), 0xc);
	assert_int_equal(mt_nodeseq_origin(&s, 2), 0xc);
	/* made after the last walked allocation */
	assert_int_equal(mt_nodeseq_origin(&s, 3), 0);
	/* AccumulateGrad: no number */
	assert_int_equal(mt_nodeseq_origin(&s, UINT64_MAX), 0);
	/* another thread's lower numbers are dropped, counted */
	assert_int_equal(mt_nodeseq_put(&s, 2, 0xe), 0);
	assert_int_equal(s.disorder, 1);
	assert_int_equal(mt_nodeseq_origin(&s, 1), 0xc);
	mt_nodeseq_free(&s);
}

/*
 * Attached mid-run: the first walked allocation (backward()'s own, at the
 * next number after the loss's Node) names no Node made before the attach
 */
static void test_attached(void **state)
{
	struct mt_nodeseq s;

	mt_nodeseq_init(&s, 0);
	assert_int_equal(mt_nodeseq_put(&s, 41, 0xa), 0);
	assert_int_equal(mt_nodeseq_put(&s, 43, 0xc), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 40), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 41), 0xc);
	assert_int_equal(mt_nodeseq_origin(&s, 42), 0xc);
	mt_nodeseq_free(&s);
}

/* a full ring forgets its oldest pairs, and guesses nothing below them */
static void test_ring(void **state)
{
	struct mt_nodeseq s;

	mt_nodeseq_init(&s, 4);
	for (__u64 c = 1; c <= 10; c++)
		assert_int_equal(mt_nodeseq_put(&s, 2 * c, 0x100 + c), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.overwritten, 6);
	/* kept: counters 14, 16, 18, 20 */
	assert_int_equal(mt_nodeseq_origin(&s, 13), 0x107);
	assert_int_equal(mt_nodeseq_origin(&s, 14), 0x108);
	assert_int_equal(mt_nodeseq_origin(&s, 19), 0x10a);
	/* 12's pair was overwritten: 14's op is not its */
	assert_int_equal(mt_nodeseq_origin(&s, 11), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 20), 0);
	mt_nodeseq_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_origin),
		cmocka_unit_test(test_attached),
		cmocka_unit_test(test_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
