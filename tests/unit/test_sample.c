// SPDX-License-Identifier: GPL-2.0
/*
 * user/analysis/sample.c: --sample-bytes' estimator and the table of
 * exponential intervals the BPF sampler draws from, and the two together
 * as bpf/memtrace.bpf.c's walk_wanted() uses them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include "analysis/livetable.h"
#include "analysis/sample.h"
#include "memtrace.h"

#define R 524288ULL

/* 1/p, p = 1 - exp(-s/R): exact where s >> R, R/s where s << R */
static void test_weight(void **state)
{
	assert_true(mt_sample_weight(64 * R, R) == 1.0);
	assert_true(fabs(mt_sample_weight(R, R) - 1.0 / (1.0 - exp(-1.0))) <
		    1e-12);
	/* small blocks: each stands for about R/s, slightly more than 1 */
	assert_true(fabs(mt_sample_weight(64, R) - (double)R / 64.0 - 0.5) <
		    1e-3);
	/* no sampling, or nothing to sample: itself */
	assert_true(mt_sample_weight(4096, 0) == 1.0);
	assert_true(mt_sample_weight(0, R) == 1.0);
	assert_int_equal(mt_sample_scale(1000, 1.5), 1500);
	assert_int_equal(mt_sample_scale(3, 0.5), 2); /* to the nearest */
	assert_int_equal(mt_sample_scale(1000, 0.0), 0);
}

/* a live entry stands for its size, its estimate, or nothing */
static void test_live_est(void **state)
{
	struct mt_live e = { .size = 1000 };

	assert_int_equal(mt_live_est(&e), 1000);
	e.est_adj = 1.5f;
	assert_int_equal(mt_live_est(&e), 2500);
	e.est_adj = -1.0f;
	assert_int_equal(mt_live_est(&e), 0);
}

/* the table: exponential, mean R, never 0 */
static void test_gaps(void **state)
{
	static __u64 v[MT_SAMPLE_GAPS];
	double sum = 0;
	size_t below = 0;

	mt_sample_gaps(v, MT_SAMPLE_GAPS, R);
	for (size_t i = 0; i < MT_SAMPLE_GAPS; i++) {
		assert_true(v[i] >= 1);
		if (i)
			assert_true(v[i] <= v[i - 1]);
		sum += (double)v[i];
		below += v[i] < R;
	}
	assert_true(fabs(sum / MT_SAMPLE_GAPS / (double)R - 1.0) < 1e-4);
	/* P(X < mean) = 1 - 1/e for an exponential */
	assert_true(fabs((double)below / MT_SAMPLE_GAPS - (1.0 - exp(-1.0))) <
		    0.002);
	/* R = 1: intervals of a byte or more, still of mean about 1 */
	mt_sample_gaps(v, MT_SAMPLE_GAPS, 1);
	sum = 0;
	for (size_t i = 0; i < MT_SAMPLE_GAPS; i++) {
		assert_true(v[i] >= 1);
		sum += (double)v[i];
	}
	assert_true(sum / MT_SAMPLE_GAPS < 1.6);
}

/* xorshift64: a fixed sequence, so that the test is the same every run */
static __u64 next_rand(__u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * The BPF countdown over allocations of the given sizes (walk_wanted):
 * the estimate of the bytes allocated, and how many were sampled
 */
static double simulate(const __u64 *gaps, const __u64 *sizes, size_t n,
		       __u64 *seed, size_t *sampled)
{
	__u64 left = 0;
	double est = 0;

	*sampled = 0;
	for (size_t i = 0; i < n; i++) {
		if (!left)
			left = gaps[next_rand(seed) % MT_SAMPLE_GAPS];
		if (sizes[i] < left) {
			left -= sizes[i];
			continue;
		}
		left = gaps[next_rand(seed) % MT_SAMPLE_GAPS];
		(*sampled)++;
		est += (double)mt_sample_scale(sizes[i],
					       mt_sample_weight(sizes[i], R));
	}
	return est;
}

/*
 * Unbiased: over many allocations of mixed sizes the estimate of each
 * kind's bytes comes close to the truth; blocks far larger than R are
 * always sampled, and count exactly.
 */
static void test_estimate_unbiased(void **state)
{
	static __u64 gaps[MT_SAMPLE_GAPS], small[200000], big[64];
	__u64 seed = 88172645463325252ULL, truth = 0;
	size_t sampled;
	double est;

	mt_sample_gaps(gaps, MT_SAMPLE_GAPS, R);
	for (size_t i = 0; i < 200000; i++) {
		small[i] = 64 + next_rand(&seed) % 16384;
		truth += small[i];
	}
	est = simulate(gaps, small, 200000, &seed, &sampled);
	assert_true(sampled > 0 && sampled < 200000 / 10);
	assert_true(fabs(est / (double)truth - 1.0) < 0.03);

	for (size_t i = 0; i < 64; i++)
		big[i] = 32 * R + i;
	est = simulate(gaps, big, 64, &seed, &sampled);
	assert_int_equal(sampled, 64);
	truth = 0;
	for (size_t i = 0; i < 64; i++)
		truth += big[i];
	assert_true(est == (double)truth);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weight),
		cmocka_unit_test(test_live_est),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_estimate_unbiased),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
