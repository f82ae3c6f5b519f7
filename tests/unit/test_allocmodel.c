// SPDX-License-Identifier: GPL-2.0
/* user/estimate/allocmodel.c: the caching allocator's rules, case by case. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "estimate/allocmodel.h"

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)

static struct mt_am *model(const struct mt_am_conf *c)
{
	struct mt_am *m = mt_am_new(c);

	assert_non_null(m);
	return m;
}

static __u32 must_alloc(struct mt_am *m, __u64 size)
{
	__u32 id = 0;

	assert_int_equal(mt_am_malloc(m, size, 0, &id), 1);
	assert_true(id > 0);
	return id;
}

static struct mt_am_stats stats(const struct mt_am *m)
{
	struct mt_am_stats s;

	mt_am_stats(m, &s);
	return s;
}

static void test_rounding(void **state)
{
	const struct mt_am_conf c = { 0 };

	(void)state;
	assert_int_equal(mt_am_round_size(&c, 1), 512);
	assert_int_equal(mt_am_round_size(&c, 511), 512);
	assert_int_equal(mt_am_round_size(&c, 512), 512);
	assert_int_equal(mt_am_round_size(&c, 513), 1024);
	assert_int_equal(mt_am_round_size(&c, MIB - 1), MIB);
	assert_int_equal(mt_am_round_size(&c, MIB), MIB);
	assert_int_equal(mt_am_round_size(&c, MIB + 1), MIB + 512);
	assert_int_equal(mt_am_round_size(&c, 10 * MIB - 1), 10 * MIB);
	assert_int_equal(mt_am_round_size(&c, 10 * MIB + 1), 10 * MIB + 512);
	assert_int_equal(mt_am_round_size(&c, 12 * MIB), 12 * MIB);
}

static void test_power2_divisions(void **state)
{
	const struct mt_am_conf c = { .roundup_power2_divisions = 4 };

	(void)state;
	/* at most 512 * divisions: plain 512 B rounding */
	assert_int_equal(mt_am_round_size(&c, 1200), 1536);
	assert_int_equal(mt_am_round_size(&c, 5000), 5120);
	assert_int_equal(mt_am_round_size(&c, 4096), 4096);
	assert_int_equal(mt_am_round_size(&c, MIB + 1), MIB + 256 * KIB);
	assert_int_equal(mt_am_round_size(&c, 3 * MIB + 1),
			 3 * MIB + 512 * KIB);
}

static void test_pools_and_segments(void **state)
{
	const struct mt_am_conf c = { 0 };
	struct mt_am *m = model(&c);

	(void)state;
	assert_true(mt_am_is_small(MIB));
	assert_false(mt_am_is_small(MIB + 512));
	assert_int_equal(mt_am_segment_size(512), 2 * MIB);
	assert_int_equal(mt_am_segment_size(MIB), 2 * MIB);
	assert_int_equal(mt_am_segment_size(MIB + 512), 20 * MIB);
	assert_int_equal(mt_am_segment_size(10 * MIB - 512), 20 * MIB);
	assert_int_equal(mt_am_segment_size(10 * MIB), 10 * MIB);
	assert_int_equal(mt_am_segment_size(10 * MIB + 512), 12 * MIB);
	assert_int_equal(mt_am_segment_size(12 * MIB), 12 * MIB);
	assert_int_equal(mt_am_segment_size(12 * MIB + 512), 14 * MIB);

	must_alloc(m, 1000); /* small: a 2 MiB segment */
	assert_int_equal(stats(m).reserved, 2 * MIB);
	must_alloc(m, MIB); /* the same segment still has room */
	assert_int_equal(stats(m).reserved, 2 * MIB);
	must_alloc(m, MIB + 1); /* large below 10 MiB: 20 MiB */
	assert_int_equal(stats(m).reserved, 22 * MIB);
	must_alloc(m, 11 * MIB - 3); /* split off that segment's rest */
	assert_int_equal(stats(m).reserved, 22 * MIB);
	/* 10 MiB and up: in 2 MiB steps; < 1 MiB left over: not split */
	must_alloc(m, 13 * MIB + 1);
	assert_int_equal(stats(m).reserved, 36 * MIB);
	assert_int_equal(stats(m).segments, 3);
	assert_int_equal(stats(m).allocated,
			 1024 + MIB + (MIB + 512) + 11 * MIB + 14 * MIB);
	mt_am_free(m);
}

static void test_split_and_merge(void **state)
{
	const struct mt_am_conf c = { 0 };
	struct mt_am *m = model(&c);
	__u32 a, b, d, e;

	(void)state;
	a = must_alloc(m, 1000);
	b = must_alloc(m, 3000);
	d = must_alloc(m, 512);
	assert_int_equal(mt_am_addr(m, b), mt_am_addr(m, a) + 1024);
	assert_int_equal(mt_am_addr(m, d), mt_am_addr(m, b) + 3072);
	/* a and b merge once free: 4 KiB at a's address, best fit */
	assert_int_equal(mt_am_release(m, b), 0);
	assert_int_equal(mt_am_release(m, a), 0);
	assert_int_equal(mt_am_release(m, a), -EINVAL);
	e = must_alloc(m, 4096);
	assert_int_equal(mt_am_addr(m, e), mt_am_addr(m, a));
	assert_int_equal(stats(m).reserved, 2 * MIB);
	mt_am_free(m);

	/* large: split only when more than 1 MiB is left over */
	m = model(&c);
	a = must_alloc(m, 5 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	a = must_alloc(m, 19 * MIB + 512 * KIB);
	assert_int_equal(mt_am_size(m, a), 20 * MIB);
	assert_int_equal(stats(m).allocated, 20 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	a = must_alloc(m, 18 * MIB);
	assert_int_equal(mt_am_size(m, a), 18 * MIB);
	assert_int_equal(stats(m).reserved, 20 * MIB);
	assert_int_equal(stats(m).inactive_split_bytes, 2 * MIB);
	mt_am_free(m);
}

static void test_max_split_size(void **state)
{
	const struct mt_am_conf c = { .max_split_size = 32 * MIB };
	struct mt_am *m = model(&c);
	__u32 a;

	(void)state;
	a = must_alloc(m, 64 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	/* below max_split_size: an oversize block is never handed out */
	a = must_alloc(m, 12 * MIB);
	assert_int_equal(stats(m).reserved, 76 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	/* oversize request: only a block less than 20 MiB larger */
	a = must_alloc(m, 40 * MIB);
	assert_int_equal(stats(m).reserved, 116 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	a = must_alloc(m, 50 * MIB);
	assert_int_equal(stats(m).reserved, 116 * MIB);
	assert_int_equal(mt_am_size(m, a), 64 * MIB); /* not split */
	mt_am_free(m);
}

static void test_retry_frees_cached_blocks(void **state)
{
	const struct mt_am_conf c = { .device_mem = 60 * MIB };
	struct mt_am *m = model(&c);
	struct mt_am_stats s;
	__u32 id[3];

	(void)state;
	/* three 12 MiB segments cached: none fits 30 MiB, nor does a new one */
	for (int i = 0; i < 3; i++)
		id[i] = must_alloc(m, 12 * MIB);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mt_am_release(m, id[i]), 0);
	must_alloc(m, 30 * MIB);
	s = stats(m);
	assert_int_equal(s.num_alloc_retries, 1);
	assert_int_equal(s.num_device_free, 3);
	assert_int_equal(s.reserved, 30 * MIB);
	assert_int_equal(s.peak_reserved, 36 * MIB);
	assert_int_equal(s.num_ooms, 0);
	/* 30 live and 40 asked: out of memory even after the retry */
	assert_int_equal(mt_am_malloc(m, 40 * MIB, 0, &id[0]), 0);
	s = stats(m);
	assert_int_equal(s.num_alloc_retries, 2);
	assert_int_equal(s.num_ooms, 1);
	mt_am_free(m);
}

static void test_release_oversize_first(void **state)
{
	const struct mt_am_conf c = { .device_mem = 80 * MIB,
				      .max_split_size = 25 * MIB };
	struct mt_am *m = model(&c);
	__u32 a, b;

	(void)state;
	a = must_alloc(m, 26 * MIB);
	b = must_alloc(m, 26 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	assert_int_equal(mt_am_release(m, b), 0);
	/* the oversize cached blocks go, largest first, without a retry */
	must_alloc(m, 30 * MIB);
	assert_int_equal(stats(m).num_alloc_retries, 0);
	assert_int_equal(stats(m).num_device_free, 2);
	assert_int_equal(stats(m).reserved, 30 * MIB);
	mt_am_free(m);
}

static void test_expandable_segments(void **state)
{
	struct mt_am_conf c = { .device_mem = 64 * MIB,
				.expandable_segments = true };
	struct mt_am *m = model(&c);
	struct mt_am_stats s;
	__u32 id[4], a, b;

	(void)state;
	/* one segment grows in 20 MiB pages; blocks tile it */
	a = must_alloc(m, 5 * MIB);
	assert_int_equal(stats(m).reserved, 20 * MIB);
	b = must_alloc(m, 30 * MIB);
	assert_int_equal(mt_am_addr(m, b), mt_am_addr(m, a) + 5 * MIB);
	assert_int_equal(stats(m).reserved, 40 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	assert_int_equal(mt_am_release(m, b), 0);
	mt_am_free(m);

	/* four 12 MiB blocks, freed: one free range that fits 40 MiB */
	m = model(&c);
	for (int i = 0; i < 4; i++)
		id[i] = must_alloc(m, 12 * MIB);
	for (int i = 0; i < 4; i++)
		assert_int_equal(mt_am_release(m, id[i]), 0);
	a = must_alloc(m, 40 * MIB);
	s = stats(m);
	assert_int_equal(mt_am_addr(m, a), mt_am_addr(m, id[0]));
	assert_int_equal(s.reserved, 60 * MIB);
	assert_int_equal(s.num_alloc_retries, 0);
	assert_int_equal(s.num_ooms, 0);
	mt_am_free(m);

	/* the same without: four segments that cannot merge, and a retry */
	c.expandable_segments = false;
	m = model(&c);
	for (int i = 0; i < 4; i++)
		id[i] = must_alloc(m, 12 * MIB);
	for (int i = 0; i < 4; i++)
		assert_int_equal(mt_am_release(m, id[i]), 0);
	must_alloc(m, 40 * MIB);
	s = stats(m);
	assert_int_equal(s.num_alloc_retries, 1);
	assert_int_equal(s.reserved, 40 * MIB);
	assert_int_equal(s.peak_reserved, 48 * MIB);
	mt_am_free(m);
}

static void test_expandable_unmap_on_retry(void **state)
{
	const struct mt_am_conf c = { .device_mem = 64 * MIB,
				      .expandable_segments = true };
	struct mt_am *m = model(&c);
	__u32 a, b;

	(void)state;
	a = must_alloc(m, 50 * MIB); /* 60 MiB mapped */
	b = must_alloc(m, 1000); /* small pool: its own 2 MiB page */
	assert_int_equal(stats(m).reserved, 62 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	/* the small pool wants a second page: the large pages go first */
	assert_int_equal(mt_am_release(m, b), 0);
	b = must_alloc(m, 4 * MIB); /* large again: the cache serves it */
	assert_int_equal(stats(m).reserved, 62 * MIB);
	assert_int_equal(mt_am_release(m, b), 0);
	a = must_alloc(m, 3 * MIB - 512);
	(void)a;
	/* 70 MiB does not fit the device: unmapping and retrying fails too */
	assert_int_equal(mt_am_malloc(m, 70 * MIB, 0, &b), 0);
	assert_int_equal(stats(m).num_alloc_retries, 1);
	/* the retry gave back every whole free page */
	assert_true(stats(m).reserved <= 22 * MIB);
	mt_am_free(m);
}

static void test_gc_threshold(void **state)
{
	struct mt_am_conf c = { .device_mem = 100 * MIB, .gc_threshold = 0.5 };
	struct mt_am *m = model(&c);
	__u32 a, b;

	(void)state;
	a = must_alloc(m, 30 * MIB);
	b = must_alloc(m, 30 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	assert_int_equal(mt_am_release(m, b), 0);
	/* 60 MiB reserved is past 50: old cached blocks go, no retry */
	must_alloc(m, 40 * MIB);
	assert_int_equal(stats(m).reserved, 40 * MIB);
	assert_int_equal(stats(m).num_device_free, 2);
	assert_int_equal(stats(m).num_alloc_retries, 0);
	mt_am_free(m);

	/* without it the cache stays and the device fills up */
	c.gc_threshold = 0;
	m = model(&c);
	a = must_alloc(m, 30 * MIB);
	b = must_alloc(m, 30 * MIB);
	assert_int_equal(mt_am_release(m, a), 0);
	assert_int_equal(mt_am_release(m, b), 0);
	must_alloc(m, 40 * MIB);
	assert_int_equal(stats(m).reserved, 100 * MIB);
	assert_int_equal(stats(m).num_device_free, 0);
	mt_am_free(m);
}

static void test_streams(void **state)
{
	const struct mt_am_conf c = { 0 };
	struct mt_am *m = model(&c);
	__u32 a, b;

	(void)state;
	a = must_alloc(m, 1000);
	assert_int_equal(mt_am_release(m, a), 0);
	/* another stream's cached block is not reused */
	assert_int_equal(mt_am_malloc(m, 1000, 7, &b), 1);
	assert_int_equal(stats(m).reserved, 4 * MIB);
	mt_am_free(m);
}

static void test_bounds(void **state)
{
	const struct mt_am_conf bad = { .roundup_power2_divisions = 3 };
	const struct mt_am_conf c = { .max_blocks = 16 };
	struct mt_am *m;
	__u32 id;
	int ret;

	(void)state;
	assert_null(mt_am_new(&bad));
	m = model(&c);
	/* the model's own bound: an error, not a device OOM */
	for (int i = 0; i < 64; i++) {
		ret = mt_am_malloc(m, 1000, 0, &id);
		if (ret != 1)
			break;
	}
	assert_int_equal(ret, -ENOMEM);
	assert_int_equal(stats(m).num_ooms, 0);
	mt_am_free(m);
}

/* n random frees and mallocs over slots; sizes from shapes, if given */
static double replay_rate(const __u32 *shapes, int nshapes, __u64 *peak)
{
	const struct mt_am_conf c = { 0 };
	struct mt_am *m = model(&c);
	enum { SLOTS = 4096, EVENTS = 10000000 };
	static __u32 live[SLOTS];
	struct timespec t0, t1;
	__u64 rng = 88172645463325252ULL;
	double s;

	memset(live, 0, sizeof(live));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < EVENTS; i++) {
		__u32 slot, size;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		slot = (__u32)(rng % SLOTS);
		if (live[slot]) {
			assert_int_equal(mt_am_release(m, live[slot]), 0);
			live[slot] = 0;
			continue;
		}
		if (shapes)
			size = shapes[(rng >> 32) % nshapes];
		else if ((rng >> 32) % 8)
			size = (__u32)(rng >> 40) % (256 * KIB) + 1;
		else
			size = (__u32)(rng >> 38) % (64 * MIB) + 1;
		assert_int_equal(mt_am_malloc(m, size, 0, &live[slot]), 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	*peak = stats(m).peak_reserved;
	mt_am_free(m);
	return EVENTS / s;
}

/* replay speed: printed, not asserted */
static void test_speed(void **state)
{
	__u32 shapes[64];
	__u64 rng = 1, peak;
	double rate;

	(void)state;
	/* a model's tensors: a few dozen shapes, mostly small */
	for (int i = 0; i < 64; i++) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		shapes[i] = i % 4 ? (__u32)(rng >> 44) + 1 :
				    (__u32)(rng >> 37) % (64 * MIB) + 1;
	}
	rate = replay_rate(shapes, 64, &peak);
	printf("allocmodel: 64 shapes, 4096 live slots: %.1f M events/s "
	       "(peak reserved %llu MiB)\n",
	       rate / 1e6, (unsigned long long)(peak / MIB));
	rate = replay_rate(NULL, 0, &peak);
	printf("allocmodel: random sizes up to 64 MiB, 4096 live slots: "
	       "%.1f M events/s (peak reserved %llu MiB)\n",
	       rate / 1e6, (unsigned long long)(peak / MIB));
}

/*
 * A replay puts each segment where the traced allocator's was: CUDA may
 * hand out a later segment below an earlier one, and best fit then takes
 * the lower of two equal free blocks, the later segment's (the stand-in
 * runtime's mmap does so). A place the model holds is not taken twice.
 */
static void test_malloc_at(void **state)
{
	struct mt_am_conf c = { 0 };
	struct mt_am *m = model(&c);
	__u32 id[4], again;

	(void)state;
	assert_int_equal(mt_am_malloc_at(m, MIB, 0, 0x40000000, &id[0]), 1);
	assert_int_equal(mt_am_addr(m, id[0]), 0x40000000);
	id[1] = must_alloc(m, MIB);
	assert_int_equal(mt_am_addr(m, id[1]), 0x40100000);
	assert_int_equal(mt_am_malloc_at(m, MIB, 0, 0x20000000, &id[2]), 1);
	assert_int_equal(mt_am_addr(m, id[2]), 0x20000000);
	id[3] = must_alloc(m, MIB);
	assert_int_equal(mt_am_addr(m, id[3]), 0x20100000);
	assert_int_equal(stats(m).segments, 2);
	assert_int_equal(mt_am_release(m, id[1]), 0);
	assert_int_equal(mt_am_release(m, id[3]), 0);
	again = must_alloc(m, MIB);
	assert_int_equal(mt_am_addr(m, again), 0x20100000);
	/* inside a segment the model holds: the next free place instead */
	assert_int_equal(mt_am_malloc_at(m, 30 * MIB, 0, 0x40000000, &id[3]),
			 1);
	assert_true(mt_am_addr(m, id[3]) >= 0x40200000 ||
		    mt_am_addr(m, id[3]) + 30 * MIB <= 0x20000000);
	assert_int_equal(stats(m).segments, 3);
	mt_am_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_power2_divisions),
		cmocka_unit_test(test_pools_and_segments),
		cmocka_unit_test(test_split_and_merge),
		cmocka_unit_test(test_max_split_size),
		cmocka_unit_test(test_retry_frees_cached_blocks),
		cmocka_unit_test(test_release_oversize_first),
		cmocka_unit_test(test_expandable_segments),
		cmocka_unit_test(test_expandable_unmap_on_retry),
		cmocka_unit_test(test_gc_threshold),
		cmocka_unit_test(test_streams),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_malloc_at),
		cmocka_unit_test(test_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
