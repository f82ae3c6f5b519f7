// SPDX-License-Identifier: GPL-2.0
/* user/lib/reorder.c: records handed back by key, ties in arrival order. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include "lib/reorder.h"

struct rec {
	__u64 key;
	__u32 id; /* order pushed */
	char pad[36]; /* a record bigger than the heap's entries */
};

static void push(struct mt_reorder *r, __u64 key, __u32 id)
{
	struct rec x = { .key = key, .id = id };

	assert_int_equal(mt_reorder_push(r, key, &x), 0);
}

/* what pop gives with every key below upto */
static const struct rec *pop(struct mt_reorder *r, __u64 upto)
{
	return mt_reorder_pop(r, upto);
}

static void test_order_and_ties(void **state)
{
	struct mt_reorder *r = mt_reorder_new(sizeof(struct rec), 16);
	const __u64 keys[] = { 30, 10, 20, 10, 40, 20 };
	const __u32 want[] = { 1, 3, 2, 5, 0, 4 };
	const struct rec *x;

	(void)state;
	assert_non_null(r);
	for (__u32 i = 0; i < 6; i++)
		push(r, keys[i], i);
	assert_int_equal(mt_reorder_held(r), 6);
	for (int i = 0; i < 6; i++) {
		x = pop(r, UINT64_MAX);
		assert_non_null(x);
		assert_int_equal(x->id, want[i]);
	}
	assert_null(pop(r, UINT64_MAX));
	mt_reorder_free(r);
}

static void test_upto_holds_later_keys(void **state)
{
	struct mt_reorder *r = mt_reorder_new(sizeof(struct rec), 16);
	const struct rec *x;
	__u64 first = 0;

	(void)state;
	assert_non_null(r);

	assert_false(mt_reorder_first(r, &first));
	push(r, 100, 0);
	push(r, 50, 1);
	push(r, 150, 2);
	assert_true(mt_reorder_first(r, &first));
	assert_int_equal(first, 50);
	x = pop(r, 100);
	assert_non_null(x);
	assert_int_equal(x->key, 50);
	/* 100 is not below 100: held */
	assert_null(pop(r, 100));
	assert_int_equal(mt_reorder_held(r), 2);
	/* a late record below what was held comes out first */
	push(r, 60, 3);
	x = pop(r, 101);
	assert_int_equal(x->id, 3);
	x = pop(r, 101);
	assert_int_equal(x->id, 0);
	assert_null(pop(r, 101));
	mt_reorder_free(r);
}

static void test_full(void **state)
{
	struct mt_reorder *r = mt_reorder_new(sizeof(struct rec), 3);
	struct rec x = { .key = 1 };

	(void)state;
	assert_non_null(r);
	for (__u32 i = 0; i < 3; i++)
		push(r, 5 - i, i);
	assert_int_equal(mt_reorder_push(r, 9, &x), -ENOSPC);
	assert_non_null(pop(r, UINT64_MAX));
	assert_int_equal(mt_reorder_push(r, 9, &x), 0);
	mt_reorder_free(r);
}

/* many records, pushed and popped interleaved: the pool grows and reuses */
static void test_random_interleaved(void **state)
{
	enum { N = 20000 };
	struct mt_reorder *r = mt_reorder_new(sizeof(struct rec), N);
	__u64 last = 0, upto = 0;
	size_t popped = 0;
	const struct rec *x;

	(void)state;
	assert_non_null(r);
	srand(7);
	for (__u32 i = 0; i < N; i++) {
		/* keys arrive up to 1000 late against a clock that runs on */
		__u64 key = (__u64)i * 10 + (__u64)(rand() % 1000);

		push(r, key, i);
		if (i % 100 == 99) {
			upto = (__u64)i * 10;
			while ((x = pop(r, upto))) {
				assert_true(x->key >= last);
				assert_true(x->key < upto);
				last = x->key;
				popped++;
			}
		}
	}
	while ((x = pop(r, UINT64_MAX))) {
		assert_true(x->key >= last);
		last = x->key;
		popped++;
	}
	assert_int_equal(popped, N);
	assert_int_equal(mt_reorder_held(r), 0);
	mt_reorder_free(r);
}

/* keys that fall each time: a run each, then places found in a run */
static void test_descending(void **state)
{
	enum { N = 1000 };
	struct mt_reorder *r = mt_reorder_new(sizeof(struct rec), N);
	const struct rec *x;

	(void)state;
	assert_non_null(r);
	for (__u32 i = 0; i < N; i++)
		push(r, N - i, i);
	for (__u64 k = 1; k <= N; k++) {
		x = pop(r, UINT64_MAX);
		assert_non_null(x);
		assert_int_equal(x->key, k);
	}
	assert_null(pop(r, UINT64_MAX));
	mt_reorder_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_ties),
		cmocka_unit_test(test_upto_holds_later_keys),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_random_interleaved),
		cmocka_unit_test(test_descending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
