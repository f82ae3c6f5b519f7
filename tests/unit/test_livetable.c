// SPDX-License-Identifier: GPL-2.0
/* user/analysis/livetable.c: the table of allocations not yet freed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "event/kinds.h"
#include "analysis/livetable.h"

static struct mt_live entry(__u32 pid, __u16 space, __u64 ptr, __u64 size)
{
	return (struct mt_live){
		.ptr = ptr,
		.size = size,
		.ts = ptr ^ size,
		.event = "cudart:cudaMalloc",
		.caller = "libtorch_cuda.so",
		.pid = pid,
		.space = space,
		.dev_type = MT_DT_CUDA,
		.dev = 0,
	};
}

static void test_empty(void **state)
{
	struct mt_livetable *t = mt_live_new(16);
	struct mt_live out;

	assert_non_null(t);
	assert_int_equal(mt_live_count(t), 0);
	assert_false(mt_live_remove(t, 1, MT_SP_CUDART, 0x1000, &out));
	assert_false(mt_live_remove(t, 1, MT_SP_CUDART, 0, NULL));
	mt_live_free(t);
	mt_live_free(NULL);
}

static void test_insert_remove(void **state)
{
	struct mt_livetable *t = mt_live_new(16);
	struct mt_live e = entry(100, MT_SP_CUDART, 0x7f0000001000, 4096);
	struct mt_live out;

	e.dev_type = MT_DT_HOST;
	e.dev = -1;
	e.ts = 123456789;
	assert_int_equal(mt_live_insert(t, &e), 0);
	assert_int_equal(mt_live_count(t), 1);

	/* everything comes back as it went in */
	memset(&out, 0x5a, sizeof(out));
	assert_true(mt_live_remove(t, 100, MT_SP_CUDART, 0x7f0000001000, &out));
	assert_int_equal(out.ptr, 0x7f0000001000);
	assert_int_equal(out.size, 4096);
	assert_int_equal(out.ts, 123456789);
	assert_ptr_equal(out.event, e.event);
	assert_ptr_equal(out.caller, e.caller);
	assert_int_equal(out.pid, 100);
	assert_int_equal(out.space, MT_SP_CUDART);
	assert_int_equal(out.dev_type, MT_DT_HOST);
	assert_int_equal(out.dev, -1);
	assert_int_equal(mt_live_count(t), 0);

	/* removed means gone */
	assert_false(
		mt_live_remove(t, 100, MT_SP_CUDART, 0x7f0000001000, &out));
	assert_int_equal(mt_live_count(t), 0);

	/* out may be NULL */
	assert_int_equal(mt_live_insert(t, &e), 0);
	assert_true(mt_live_remove(t, 100, MT_SP_CUDART, 0x7f0000001000, NULL));
	assert_int_equal(mt_live_count(t), 0);
	mt_live_free(t);
}

static void test_replace(void **state)
{
	struct mt_livetable *t = mt_live_new(16);
	struct mt_live e = entry(7, MT_SP_C10, 0x1000, 100);
	struct mt_live out;

	assert_int_equal(mt_live_insert(t, &e), 0);
	/* the address came back from a free we did not see */
	e.size = 200;
	e.event = "c10:alloc";
	assert_int_equal(mt_live_insert(t, &e), 0);
	assert_int_equal(mt_live_count(t), 1);
	assert_true(mt_live_remove(t, 7, MT_SP_C10, 0x1000, &out));
	assert_int_equal(out.size, 200);
	assert_string_equal(out.event, "c10:alloc");
	assert_false(mt_live_remove(t, 7, MT_SP_C10, 0x1000, &out));
	assert_int_equal(mt_live_count(t), 0);
	mt_live_free(t);
}

static void test_remove_missing(void **state)
{
	struct mt_livetable *t = mt_live_new(16);
	struct mt_live e = entry(1, MT_SP_CUDART, 0x2000, 64);
	struct mt_live out = entry(9, 9, 9, 9);

	assert_int_equal(mt_live_insert(t, &e), 0);
	/* neighbours of the key are other keys */
	assert_false(mt_live_remove(t, 1, MT_SP_CUDART, 0x2001, &out));
	assert_false(mt_live_remove(t, 1, MT_SP_CUDART, 0x1fff, &out));
	assert_false(mt_live_remove(t, 2, MT_SP_CUDART, 0x2000, &out));
	assert_false(mt_live_remove(t, 1, MT_SP_PINNED, 0x2000, &out));
	/* a miss leaves out alone */
	assert_int_equal(out.pid, 9);
	assert_int_equal(out.size, 9);
	assert_int_equal(mt_live_count(t), 1);
	assert_true(mt_live_remove(t, 1, MT_SP_CUDART, 0x2000, &out));
	assert_int_equal(out.size, 64);
	mt_live_free(t);
}

static void test_keys_by_pid_and_space(void **state)
{
	struct mt_livetable *t = mt_live_new(16);
	struct mt_live e[] = {
		entry(1, MT_SP_CUDART, 0x1000, 10),
		entry(1, MT_SP_C10, 0x1000, 20),
		entry(2, MT_SP_CUDART, 0x1000, 30),
		entry(1, MT_SP_PINNED, 0x1000, 40),
		entry(1, MT_SP_HANDLE, 0x1000, 50),
	};
	struct mt_live out;

	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		assert_int_equal(mt_live_insert(t, &e[i]), 0);
	assert_int_equal(mt_live_count(t), 5);

	assert_true(mt_live_remove(t, 1, MT_SP_C10, 0x1000, &out));
	assert_int_equal(out.size, 20);
	assert_true(mt_live_remove(t, 2, MT_SP_CUDART, 0x1000, &out));
	assert_int_equal(out.size, 30);
	assert_false(mt_live_remove(t, 2, MT_SP_CUDART, 0x1000, &out));
	assert_true(mt_live_remove(t, 1, MT_SP_CUDART, 0x1000, &out));
	assert_int_equal(out.size, 10);
	assert_true(mt_live_remove(t, 1, MT_SP_HANDLE, 0x1000, &out));
	assert_int_equal(out.size, 50);
	assert_true(mt_live_remove(t, 1, MT_SP_PINNED, 0x1000, &out));
	assert_int_equal(out.size, 40);
	assert_int_equal(mt_live_count(t), 0);
	mt_live_free(t);
}

static void test_bound(void **state)
{
	const size_t max = 10;
	struct mt_livetable *t = mt_live_new(max);
	struct mt_live e, out;

	for (size_t i = 0; i < max; i++) {
		e = entry(1, MT_SP_CUDART, 0x1000 * (i + 1), i + 1);
		assert_int_equal(mt_live_insert(t, &e), 0);
	}
	assert_int_equal(mt_live_count(t), max);

	/* a new key does not fit, in any pid or space */
	e = entry(1, MT_SP_CUDART, 0xdead000, 1);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	e = entry(2, MT_SP_CUDART, 0x1000, 1);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	assert_int_equal(mt_live_count(t), max);
	assert_false(mt_live_remove(t, 1, MT_SP_CUDART, 0xdead000, &out));
	assert_false(mt_live_remove(t, 2, MT_SP_CUDART, 0x1000, &out));

	/* a replacement takes no room */
	e = entry(1, MT_SP_CUDART, 0x1000, 999);
	assert_int_equal(mt_live_insert(t, &e), 0);
	assert_int_equal(mt_live_count(t), max);

	/* a free makes room for one */
	assert_true(mt_live_remove(t, 1, MT_SP_CUDART, 0x2000, &out));
	assert_int_equal(out.size, 2);
	e = entry(1, MT_SP_CUDART, 0xdead000, 1);
	assert_int_equal(mt_live_insert(t, &e), 0);
	e = entry(1, MT_SP_CUDART, 0xbeef000, 1);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	assert_int_equal(mt_live_count(t), max);

	assert_true(mt_live_remove(t, 1, MT_SP_CUDART, 0x1000, &out));
	assert_int_equal(out.size, 999);
	mt_live_free(t);
}

static void test_bound_zero(void **state)
{
	struct mt_livetable *t = mt_live_new(0);
	struct mt_live e = entry(1, MT_SP_CUDART, 0x1000, 1);

	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	assert_int_equal(mt_live_count(t), 0);
	mt_live_free(t);
}

static void test_stats(void **state)
{
	struct mt_livetable *t = mt_live_new(3);
	struct mt_live_stats st;
	struct mt_live e;

	/* within the bound: the most held at once, no advice */
	for (__u64 i = 1; i <= 3; i++) {
		e = entry(1, MT_SP_CPU, 0x1000 * i, i);
		assert_int_equal(mt_live_insert(t, &e), 0);
	}
	assert_true(mt_live_remove(t, 1, MT_SP_CPU, 0x1000, NULL));
	mt_live_stats(t, &st);
	assert_int_equal(st.max, 3);
	assert_int_equal(st.refused, 0);
	assert_int_equal(st.high, 3);
	assert_int_equal(st.advise, 0);

	/* two refused: 2 held + 1 room + 2 refused were alive at once */
	e = entry(1, MT_SP_CPU, 0x1000, 1);
	assert_int_equal(mt_live_insert(t, &e), 0);
	e = entry(1, MT_SP_CPU, 0x9000, 100);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	e = entry(1, MT_SP_CPU, 0xa000, 200);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	mt_live_stats(t, &st);
	assert_int_equal(st.refused, 2);
	assert_int_equal(st.refused_bytes, 300);
	assert_int_equal(st.unfreed, 2);
	assert_int_equal(st.high, 5);
	/* a quarter more, and one */
	assert_int_equal(st.advise, 7);

	/* their frees match nothing; a replacement takes no room */
	mt_live_unpaired(t);
	mt_live_unpaired(t);
	mt_live_unpaired(t);
	e = entry(1, MT_SP_CPU, 0x2000, 7);
	assert_int_equal(mt_live_insert(t, &e), 0);
	mt_live_stats(t, &st);
	assert_int_equal(st.unfreed, 0);
	assert_int_equal(st.refused, 2);
	assert_int_equal(st.high, 5);

	/* one more refused on top of a full table is no new high */
	e = entry(1, MT_SP_CPU, 0xb000, 1);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);
	mt_live_stats(t, &st);
	assert_int_equal(st.refused, 3);
	assert_int_equal(st.unfreed, 1);
	assert_int_equal(st.high, 5);
	mt_live_free(t);
}

struct sum {
	size_t n;
	__u64 size;
	__u64 ptr_xor;
};

static void add(const struct mt_live *e, void *ctx)
{
	struct sum *s = ctx;

	s->n++;
	s->size += e->size;
	s->ptr_xor ^= e->ptr;
}

static void test_growth(void **state)
{
	const size_t n = 100000;
	struct mt_livetable *t = mt_live_new(n);
	struct sum s = { 0 }, want = { 0 };
	struct mt_live e, out;

	/* 2 MiB-aligned pointers: the low bits say nothing */
	for (size_t i = 0; i < n; i++) {
		e = entry(1000 + (__u32)(i % 3), MT_SP_C10,
			  0x7f0000000000ULL + ((__u64)i << 21), i + 1);
		assert_int_equal(mt_live_insert(t, &e), 0);
		want.n++;
		want.size += i + 1;
		want.ptr_xor ^= e.ptr;
	}
	assert_int_equal(mt_live_count(t), n);
	e = entry(1, MT_SP_C10, 1, 1);
	assert_int_equal(mt_live_insert(t, &e), -ENOSPC);

	/* every entry visited once */
	mt_live_foreach(t, add, &s);
	assert_int_equal(s.n, want.n);
	assert_int_equal(s.size, want.size);
	assert_int_equal(s.ptr_xor, want.ptr_xor);

	/* every entry found after the moves of growing */
	for (size_t i = 0; i < n; i += 2) {
		__u64 ptr = 0x7f0000000000ULL + ((__u64)i << 21);

		if (!mt_live_remove(t, 1000 + (__u32)(i % 3), MT_SP_C10, ptr,
				    &out))
			fail_msg("entry %zu lost", i);
		assert_int_equal(out.size, i + 1);
	}
	assert_int_equal(mt_live_count(t), n / 2);
	for (size_t i = 1; i < n; i += 2) {
		__u64 ptr = 0x7f0000000000ULL + ((__u64)i << 21);

		if (!mt_live_remove(t, 1000 + (__u32)(i % 3), MT_SP_C10, ptr,
				    &out))
			fail_msg("entry %zu lost", i);
		assert_int_equal(out.size, i + 1);
	}
	assert_int_equal(mt_live_count(t), 0);
	s = (struct sum){ 0 };
	mt_live_foreach(t, add, &s);
	assert_int_equal(s.n, 0);
	mt_live_free(t);
}

/* xorshift64*: the same sequence everywhere */
static __u64 rng(__u64 *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dULL;
}

#define N_KEYS 3000
#define N_OPS 200000

struct ref {
	bool live;
	__u64 size;
};

static void key_of(size_t k, __u32 *pid, __u16 *space, __u64 *ptr)
{
	*pid = 1 + (__u32)(k % 3);
	*space = (__u16)(MT_SP_CUDART + (k / 3) % 2);
	*ptr = 0x7f0000000000ULL + (__u64)(k / 6) * 512;
}

static void check_foreach(const struct mt_livetable *t, const struct ref *ref)
{
	struct sum s = { 0 }, want = { 0 };

	for (size_t k = 0; k < N_KEYS; k++) {
		if (!ref[k].live)
			continue;
		want.n++;
		want.size += ref[k].size;
	}
	mt_live_foreach(t, add, &s);
	assert_int_equal(s.n, want.n);
	assert_int_equal(s.size, want.size);
}

/*
 * Random inserts, replacements and removes against a plain array. The keys
 * are few, so the table stays crowded and removes shift whole clusters; the
 * bound is below the number of keys, so -ENOSPC comes up too. Phases of
 * mostly inserts and mostly removes fill and drain it.
 */
static void test_random_against_reference(void **state)
{
	const size_t max = 2000;
	struct mt_livetable *t = mt_live_new(max);
	struct ref *ref = calloc(N_KEYS, sizeof(*ref));
	size_t live = 0, n_remove_hit = 0, n_nospc = 0;
	__u64 x = 0x9e3779b97f4a7c15ULL;

	assert_non_null(ref);
	for (size_t op = 0; op < N_OPS; op++) {
		__u64 r = rng(&x);
		size_t k = (size_t)(r % N_KEYS);
		struct mt_live e, out;
		__u32 pid;
		__u16 space;
		__u64 ptr;
		bool hit;

		key_of(k, &pid, &space, &ptr);
		/* phases that fill the table to its bound and drain it */
		if ((r >> 32) % 100 < ((op / 20000) % 2 ? 30u : 75u)) {
			int want, ret;

			e = entry(pid, space, ptr, 1 + (r >> 40));
			if (ref[k].live)
				want = 0;
			else
				want = live < max ? 0 : -ENOSPC;
			ret = mt_live_insert(t, &e);
			if (ret != want)
				fail_msg("op %zu: insert key %zu: %d, want %d",
					 op, k, ret, want);
			if (!ret) {
				live += !ref[k].live;
				ref[k] = (struct ref){ true, e.size };
			} else {
				n_nospc++;
			}
		} else {
			hit = mt_live_remove(t, pid, space, ptr, &out);
			if (hit != ref[k].live)
				fail_msg("op %zu: remove key %zu: %d, want %d",
					 op, k, hit, ref[k].live);
			if (hit) {
				if (out.size != ref[k].size || out.ptr != ptr ||
				    out.pid != pid || out.space != space)
					fail_msg("op %zu: key %zu: size %llu, "
						 "want %llu",
						 op, k,
						 (unsigned long long)out.size,
						 (unsigned long long)ref[k]
							 .size);
				ref[k].live = false;
				live--;
				n_remove_hit++;
			}
		}
		if (mt_live_count(t) != live)
			fail_msg("op %zu: count %zu, want %zu", op,
				 mt_live_count(t), live);
		if (op % 10000 == 0)
			check_foreach(t, ref);
	}
	check_foreach(t, ref);
	/* the run did exercise what it is for */
	assert_true(n_remove_hit > N_OPS / 10);
	assert_true(n_nospc > 0);

	/* and empties completely */
	for (size_t k = 0; k < N_KEYS; k++) {
		__u32 pid;
		__u16 space;
		__u64 ptr;

		key_of(k, &pid, &space, &ptr);
		assert_int_equal(mt_live_remove(t, pid, space, ptr, NULL),
				 ref[k].live);
	}
	assert_int_equal(mt_live_count(t), 0);
	free(ref);
	mt_live_free(t);
}

static void count_removed(const struct mt_live *e, void *ctx)
{
	struct sum *s = ctx;

	/* handed over once out of the table, as the session's forget wants */
	assert_int_equal(e->pid, 2);
	s->n++;
	s->size += e->size;
	s->ptr_xor ^= e->ptr;
}

/*
 * Every entry of one process removed at once (its exec), from a crowded
 * table whose clusters wrap around its end: the others all stay findable.
 */
static void test_remove_pid(void **state)
{
	const size_t n = 1500;
	struct mt_livetable *t = mt_live_new(n);
	struct sum s = { 0 }, want = { 0 };
	struct mt_live e, out;

	assert_non_null(t);
	for (size_t i = 0; i < n; i++) {
		e = entry(1 + (__u32)(i % 3), MT_SP_CUDART + (__u16)(i % 2),
			  0x7f0000000000ULL + (__u64)i * 4096, i + 1);
		assert_int_equal(mt_live_insert(t, &e), 0);
		if (e.pid == 2) {
			want.n++;
			want.size += e.size;
			want.ptr_xor ^= e.ptr;
		}
	}
	assert_int_equal(mt_live_remove_pid(t, 2, count_removed, &s), want.n);
	assert_int_equal(s.n, want.n);
	assert_int_equal(s.size, want.size);
	assert_int_equal(s.ptr_xor, want.ptr_xor);
	assert_int_equal(mt_live_count(t), n - want.n);
	for (size_t i = 0; i < n; i++) {
		__u32 pid = 1 + (__u32)(i % 3);
		__u64 ptr = 0x7f0000000000ULL + (__u64)i * 4096;
		bool hit = mt_live_remove(t, pid, MT_SP_CUDART + (__u16)(i % 2),
					  ptr, &out);

		if (hit != (pid != 2))
			fail_msg("entry %zu of pid %u: %s", i, pid,
				 hit ? "still there" : "lost");
		if (hit)
			assert_int_equal(out.size, i + 1);
	}
	assert_int_equal(mt_live_count(t), 0);
	/* none left: nothing handed over */
	s = (struct sum){ 0 };
	assert_int_equal(mt_live_remove_pid(t, 2, count_removed, &s), 0);
	assert_int_equal(s.n, 0);
	mt_live_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_insert_remove),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_remove_missing),
		cmocka_unit_test(test_keys_by_pid_and_space),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_bound_zero),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_remove_pid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
