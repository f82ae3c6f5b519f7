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
	assert_int_equal(mt_nodeseq_origin(&s, 7, 0), 0);
	assert_int_equal(mt_nodeseq_put(&s, 7, 1, 0xa), 0);
	assert_int_equal(mt_nodeseq_put(&s, 7, 3, 0xc), 0);
	/* the op's second allocation: its first names it */
	assert_int_equal(mt_nodeseq_put(&s, 7, 3, 0xd), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 0), 0xa);
	/* the view allocated nothing: the next op above names it */
	assert_int_equal(mt_nodeseq_origin(&s, 7, 1), 0xc);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 2), 0xc);
	/* made after the last walked allocation */
	assert_int_equal(mt_nodeseq_origin(&s, 7, 3), 0);
	/* AccumulateGrad: no number */
	assert_int_equal(mt_nodeseq_origin(&s, 7, UINT64_MAX), 0);
	/* a number below the thread's last is dropped, counted */
	assert_int_equal(mt_nodeseq_put(&s, 7, 2, 0xe), 0);
	assert_int_equal(s.disorder, 1);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 1), 0xc);
	mt_nodeseq_free(&s);
}

/*
 * Two forward threads number their Nodes from the same start, their
 * allocations interleaved: each Node is named by its own thread's pairs.
 * A thread that made no Node yet (id 0) names nothing.
 */
static void test_threads(void **state)
{
	struct mt_nodeseq s;

	mt_nodeseq_init(&s, 0);
	s.from_start = true;
	assert_int_equal(mt_nodeseq_put(&s, 1, 1, 0xa1), 0);
	assert_int_equal(mt_nodeseq_put(&s, 2, 1, 0xb1), 0);
	assert_int_equal(mt_nodeseq_put(&s, 2, 2, 0xb2), 0);
	assert_int_equal(mt_nodeseq_put(&s, 1, 3, 0xa3), 0);
	assert_int_equal(mt_nodeseq_put(&s, 0, 5, 0xf), 0);
	assert_int_equal(s.disorder, 0);
	assert_int_equal(mt_nodeseq_origin(&s, 1, 0), 0xa1);
	assert_int_equal(mt_nodeseq_origin(&s, 2, 0), 0xb1);
	assert_int_equal(mt_nodeseq_origin(&s, 2, 1), 0xb2);
	assert_int_equal(mt_nodeseq_origin(&s, 1, 1), 0xa3);
	assert_int_equal(mt_nodeseq_origin(&s, 3, 0), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 0, 4), 0);
	mt_nodeseq_free(&s);
}

/*
 * A new thread at each step (DataParallel's replicas): the ring used
 * longest ago goes to the newest thread; a thread that comes back after
 * its ring was given away does not trust its first pair
 */
static void test_many_threads(void **state)
{
	struct mt_nodeseq s;

	mt_nodeseq_init(&s, 0);
	s.from_start = true;
	for (__u64 t = 1; t <= MT_NODESEQ_THREADS + 2; t++)
		assert_int_equal(mt_nodeseq_put(&s, t, 1, 0x100 + t), 0);
	assert_int_equal(s.threads_dropped, 2);
	assert_int_equal(mt_nodeseq_origin(&s, 1, 0), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 2, 0), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 3, 0), 0x103);
	assert_int_equal(mt_nodeseq_origin(&s, MT_NODESEQ_THREADS + 2, 0),
			 0x100 + MT_NODESEQ_THREADS + 2);
	/* thread 1 again, its earlier pairs gone */
	assert_int_equal(mt_nodeseq_put(&s, 1, 5, 0x1f), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 1, 4), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 3, 0), 0);
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
	assert_int_equal(mt_nodeseq_put(&s, 7, 41, 0xa), 0);
	assert_int_equal(mt_nodeseq_put(&s, 7, 43, 0xc), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 40), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 41), 0xc);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 42), 0xc);
	/*
	 * a thread first seen at counter 0 (a replica allocating its input
	 * before its first Node): its first Node's op is known
	 */
	assert_int_equal(mt_nodeseq_put(&s, 8, 0, 0x80), 0);
	assert_int_equal(mt_nodeseq_put(&s, 8, 2, 0x82), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 8, 1), 0x82);
	mt_nodeseq_free(&s);
}

/*
 * a full ring forgets its oldest pairs, and guesses nothing below them;
 * it grew to its cap first, keeping every pair
 */
static void test_ring(void **state)
{
	struct mt_nodeseq s;

	mt_nodeseq_init(&s, 4);
	for (__u64 c = 1; c <= 10; c++)
		assert_int_equal(mt_nodeseq_put(&s, 7, 2 * c, 0x100 + c), 0);
	assert_int_equal(s.ring[0].n, 4);
	assert_int_equal(s.ring[0].overwritten, 6);
	/* kept: counters 14, 16, 18, 20 */
	assert_int_equal(mt_nodeseq_origin(&s, 7, 13), 0x107);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 14), 0x108);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 19), 0x10a);
	/* 12's pair was overwritten: 14's op is not its */
	assert_int_equal(mt_nodeseq_origin(&s, 7, 11), 0);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 20), 0);
	mt_nodeseq_free(&s);
	/* grown past its first allocation, nothing lost */
	mt_nodeseq_init(&s, 1000);
	for (__u64 c = 1; c <= 600; c++)
		assert_int_equal(mt_nodeseq_put(&s, 7, c, 0x1000 + c), 0);
	assert_int_equal(s.ring[0].n, 600);
	assert_int_equal(s.ring[0].overwritten, 0);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 1), 0x1002);
	assert_int_equal(mt_nodeseq_origin(&s, 7, 599), 0x1000 + 600);
	mt_nodeseq_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_origin),
		cmocka_unit_test(test_attached),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_many_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
