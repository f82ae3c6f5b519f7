// SPDX-License-Identifier: GPL-2.0
/* user/lib/hashtab.h: probing and backward-shift deletion. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>
#include "lib/hashtab.h"

#define MAX_CAP 64

/*
 * A table of keys whose hash is the key itself, so that a test chooses
 * each key's home: key k lives at k & mask or after it. 0 marks empty.
 */
struct table {
	__u64 key[MAX_CAP];
	size_t mask;
	size_t n;
};

static bool used(const void *tab, size_t i)
{
	return ((const struct table *)tab)->key[i];
}

static bool match(const void *tab, size_t i, const void *key)
{
	return ((const struct table *)tab)->key[i] == *(const __u64 *)key;
}

static __u64 hash(const void *tab, size_t i)
{
	return ((const struct table *)tab)->key[i];
}

static void move(void *tab, size_t to, size_t from)
{
	struct table *t = tab;

	t->key[to] = t->key[from];
	t->key[from] = 0;
}

static size_t find(const struct table *t, __u64 k)
{
	return mt_probe(t, t->mask, k, used, match, &k);
}

static void put(struct table *t, __u64 k)
{
	size_t i = find(t, k);

	assert_true(i <= t->mask);
	if (!t->key[i])
		t->n++;
	t->key[i] = k;
}

/* true if k was there */
static bool del(struct table *t, __u64 k)
{
	size_t i = find(t, k);

	if (i > t->mask || !t->key[i])
		return false;
	t->key[i] = 0;
	mt_backshift(t, t->mask, i, used, hash, move);
	t->n--;
	return true;
}

/* every key is found where it is, and no empty slot cuts it off its home */
static void check(const struct table *t)
{
	size_t n = 0;

	for (size_t i = 0; i <= t->mask; i++) {
		if (!t->key[i])
			continue;
		n++;
		assert_int_equal(find(t, t->key[i]), i);
		for (size_t j = t->key[i] & t->mask; j != i;
		     j = mt_probe_next(j, t->mask))
			assert_true(t->key[j]);
	}
	assert_int_equal(n, t->n);
}

static void test_next_wraps(void **state)
{
	assert_int_equal(mt_probe_next(0, 7), 1);
	assert_int_equal(mt_probe_next(6, 7), 7);
	assert_int_equal(mt_probe_next(7, 7), 0);
	assert_int_equal(mt_probe_next(0, 0), 0);
}

static void test_probe_wraps(void **state)
{
	struct table t = { .mask = 7 };

	/* three keys at home 7: the table's end, then its start */
	put(&t, 7);
	put(&t, 15);
	put(&t, 23);
	assert_int_equal(t.key[7], 7);
	assert_int_equal(t.key[0], 15);
	assert_int_equal(t.key[1], 23);
	/* home 0 is taken by a key that wrapped: the next free slot */
	put(&t, 8);
	assert_int_equal(t.key[2], 8);
	assert_int_equal(find(&t, 23), 1);
	/* an absent key: the empty slot its probe reaches */
	assert_int_equal(find(&t, 31), 3);
	assert_int_equal(find(&t, 5), 5);
	/* no match function: the first empty slot on the path */
	assert_int_equal(mt_probe(&t, t.mask, 7, used, NULL, NULL), 3);
	check(&t);
}

static void test_backshift_wraps(void **state)
{
	struct table t = { .mask = 7 };

	put(&t, 7);
	put(&t, 15);
	put(&t, 23);
	put(&t, 8);
	put(&t, 4); /* a cluster of its own, untouched */
	/* each later key moves back one slot, across the end */
	assert_true(del(&t, 7));
	assert_int_equal(t.key[7], 15);
	assert_int_equal(t.key[0], 23);
	assert_int_equal(t.key[1], 8);
	assert_int_equal(t.key[2], 0);
	assert_int_equal(t.key[4], 4);
	check(&t);
	assert_true(del(&t, 15));
	assert_int_equal(t.key[7], 23);
	assert_int_equal(t.key[0], 8);
	check(&t);
	assert_false(del(&t, 15));
	/* keys whose homes lie after the hole stay where they are */
	put(&t, 16);
	put(&t, 1);
	assert_int_equal(t.key[1], 16);
	assert_int_equal(t.key[2], 1);
	assert_true(del(&t, 23));
	assert_int_equal(t.key[7], 0);
	assert_int_equal(t.key[0], 8);
	assert_int_equal(t.key[1], 16);
	assert_int_equal(t.key[2], 1);
	check(&t);
	assert_true(del(&t, 4));
	assert_true(del(&t, 8));
	assert_true(del(&t, 16));
	assert_true(del(&t, 1));
	assert_int_equal(t.n, 0);
	check(&t);
}

static __u64 rnd(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* random inserts and deletes, up to one slot free, against a plain set */
static void test_random(void **state)
{
	bool in[4 * MAX_CAP + 1] = { false };
	struct table t = { .mask = MAX_CAP - 1 };
	__u64 s = 88172645463325252ULL;

	for (int op = 0; op < 200000; op++) {
		/* few keys over many slots: long clusters that wrap */
		__u64 k = rnd(&s) % (4 * MAX_CAP) + 1;

		if (rnd(&s) & 1) {
			if (!in[k] && t.n == MAX_CAP - 1)
				continue;
			put(&t, k);
			in[k] = true;
		} else {
			assert_int_equal(del(&t, k), in[k]);
			in[k] = false;
		}
		if (op % 97 == 0)
			check(&t);
	}
	check(&t);
	for (__u64 k = 1; k <= 4 * MAX_CAP; k++) {
		size_t i = find(&t, k);

		assert_int_equal(i <= t.mask && t.key[i] == k, in[k]);
	}
}

static void test_full(void **state)
{
	struct table t = { .mask = 15 };
	__u64 s = 0x9e3779b97f4a7c15ULL;
	__u64 keys[16];

	/* every slot used, most keys away from home */
	for (size_t i = 0; i < 16; i++) {
		keys[i] = 16 * (i + 1) + (i < 8 ? 13 : 2) + (i & 1);
		put(&t, keys[i]);
	}
	assert_int_equal(t.n, 16);
	check(&t);
	/* an absent key: every slot looked at, none free */
	assert_int_equal(find(&t, 1000), 16);
	assert_int_equal(mt_probe(&t, t.mask, 5, used, NULL, NULL), 16);
	/* delete in a random order; the rest stay findable each time */
	for (size_t n = 16; n > 0; n--) {
		size_t i = rnd(&s) % n;
		__u64 k = keys[i];

		keys[i] = keys[n - 1];
		assert_true(del(&t, k));
		check(&t);
		for (size_t j = 0; j < n - 1; j++)
			assert_int_equal(t.key[find(&t, keys[j])], keys[j]);
	}
	assert_int_equal(t.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_wraps),
		cmocka_unit_test(test_probe_wraps),
		cmocka_unit_test(test_backshift_wraps),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
