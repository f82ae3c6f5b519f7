// SPDX-License-Identifier: GPL-2.0
/* user/analysis/modtree.c: module names rolled up into a tree. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include "analysis/modtree.h"

static const struct mt_tree_node *node(const struct mt_tree *t,
				       const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

/* parents made for the names, each parent's inclusive = self + children */
static void test_parents_sum_children(void **state)
{
	const struct mt_tree_in in[] = {
		{ "encoder.layers.0.self_attn", { 100, 1 } },
		{ "encoder.layers.0.ffn", { 300, 2 } },
		{ "encoder.layers.1.self_attn", { 50, 4 } },
		{ "encoder", { 7, 8 } },
		{ "Net", { 11, 16 } },
		{ "head", { 500, 32 } },
		{ "encoder.layers.0.ffn", { 5, 64 } }, /* added to the first */
	};
	struct mt_tree t;

	(void)state;
	assert_int_equal(mt_tree_build(&t, in, sizeof(in) / sizeof(in[0])), 0);
	/* 6 names, plus encoder.layers, encoder.layers.0 and .1 */
	assert_int_equal(t.n, 9);
	for (size_t i = 0; i < t.n; i++) {
		__u64 sum[MT_TREE_VALS];

		memcpy(sum, t.v[i].self, sizeof(sum));
		for (size_t j = 0; j < t.n; j++)
			if (t.v[j].parent == i)
				for (int k = 0; k < MT_TREE_VALS; k++)
					sum[k] += t.v[j].incl[k];
		for (int k = 0; k < MT_TREE_VALS; k++)
			assert_int_equal(sum[k], t.v[i].incl[k]);
	}
	assert_int_equal(node(&t, "encoder")->incl[0], 7 + 100 + 305 + 50);
	assert_int_equal(node(&t, "encoder")->self[0], 7);
	assert_int_equal(node(&t, "encoder.layers")->self[0], 0);
	assert_int_equal(node(&t, "encoder.layers.0")->incl[1], 1 + 2 + 64);
	assert_int_equal(node(&t, "encoder.layers.0")->nkids, 2);
	assert_int_equal(node(&t, "encoder.layers.0.ffn")->depth, 3);
	assert_int_equal(node(&t, "Net")->depth, 0);
	assert_true(node(&t, "Net")->parent == SIZE_MAX);
	mt_tree_free(&t);
}

/* depth first, siblings largest first: the order a reader reads */
static void test_order(void **state)
{
	const struct mt_tree_in in[] = {
		{ "a.small", { 1 } },  { "b", { 50 } },
		{ "a.big", { 40 } },   { "a.mid", { 20 } },
		{ "a.big.x", { 30 } },
	};
	const char *const want[] = { "a",     "a.big",	 "a.big.x",
				     "a.mid", "a.small", "b" };
	struct mt_tree t;

	(void)state;
	assert_int_equal(mt_tree_build(&t, in, sizeof(in) / sizeof(in[0])), 0);
	assert_int_equal(t.n, 6);
	for (size_t i = 0; i < t.n; i++) {
		assert_string_equal(t.v[i].name, want[i]);
		/* a parent comes before its children */
		if (t.v[i].parent != SIZE_MAX)
			assert_true(t.v[i].parent < i);
	}
	assert_int_equal(t.v[0].incl[0], 91);
	assert_int_equal(t.v[2].parent, 1);
	mt_tree_free(&t);
}

static void test_empty(void **state)
{
	struct mt_tree t;

	(void)state;
	assert_int_equal(mt_tree_build(&t, NULL, 0), 0);
	assert_int_equal(t.n, 0);
	mt_tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parents_sum_children),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
