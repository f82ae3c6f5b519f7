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
#include <stdio.h>
#include <string.h>
#include "analysis/livetable.h"
#include "analysis/sample.h"
#include "analysis/session.h"
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

/* a live entry stands for itself, its estimate, or nothing */
static void test_live_est(void **state)
{
	struct mt_live e = { .size = 1000 };

	assert_int_equal(mt_live_est(&e), 1000);
	assert_true(mt_live_weight(&e) == 1.0);
	e.est_adj = 1.5f;
	assert_int_equal(mt_live_est(&e), 2500);
	assert_true(mt_live_weight(&e) == 2.5); /* not rounded */
	e.est_adj = -1.0f;
	assert_int_equal(mt_live_est(&e), 0);
	assert_true(mt_live_weight(&e) == 0.0);
}

/*
 * Calibrated counts: parts that saw 1 and 3 allocations and estimate 5.6
 * and 6.4 of a set of exactly 10 share its 6 unwalked ones as 4.6 : 3.4,
 * 3.45 and 2.55: they count 4.45 and 5.55, whole 4 and 6, and add up to
 * the 10 in either order.
 */
static void test_cal(void **state)
{
	struct mt_sample_cal c;
	__u64 a, b;

	mt_sample_cal_init(&c, 10, 4, 12.0);
	assert_true(fabs(mt_sample_cal_count(&c, 1, 5.6) - 4.45) < 1e-9);
	assert_true(fabs(mt_sample_cal_count(&c, 3, 6.4) - 5.55) < 1e-9);
	a = mt_sample_cal_next(&c, 1, 5.6);
	b = mt_sample_cal_next(&c, 3, 6.4);
	assert_int_equal(a, 4);
	assert_int_equal(b, 6);
	mt_sample_cal_init(&c, 10, 4, 12.0);
	b = mt_sample_cal_next(&c, 3, 6.4);
	a = mt_sample_cal_next(&c, 1, 5.6);
	assert_int_equal(a, 4);
	assert_int_equal(b, 6);

	/*
	 * 1000 parts of one walked allocation, each estimating 1.3: 300
	 * unwalked shared 0.3 each, which no part rounds up on its own;
	 * taken in turn they still add up to the exact 1300
	 */
	mt_sample_cal_init(&c, 1300, 1000, 1300.0);
	a = 0;
	for (int i = 0; i < 1000; i++) {
		b = mt_sample_cal_next(&c, 1, 1.3);
		assert_true(b == 1 || b == 2);
		a += b;
	}
	assert_int_equal(a, 1300);

	/* an estimate far past the exact count: never past it */
	mt_sample_cal_init(&c, 3, 1, 1000.0);
	assert_int_equal(mt_sample_cal_next(&c, 1, 1000.0), 3);

	/* a full trace: every count is what was seen */
	mt_sample_cal_init(&c, 7, 7, 7.0);
	assert_int_equal(mt_sample_cal_next(&c, 5, 5.0), 5);
	assert_int_equal(mt_sample_cal_next(&c, 2, 2.0), 2);

	/*
	 * the estimates say 8 of 98 unwalked: they stand, 10 in all; the
	 * rest are in no part
	 */
	mt_sample_cal_init(&c, 100, 2, 10.0);
	assert_true(fabs(mt_sample_cal_count(&c, 2, 10.0) - 10.0) < 1e-9);
	assert_int_equal(mt_sample_cal_next(&c, 2, 10.0), 10);

	/* nothing said of the unwalked ones: the parts are what was seen */
	mt_sample_cal_init(&c, 9, 2, 2.0);
	assert_int_equal(mt_sample_cal_next(&c, 2, 2.0), 2);
	/* tables out of step (more walked than exact): nothing shared */
	mt_sample_cal_init(&c, 1, 2, 8.0);
	assert_int_equal(mt_sample_cal_next(&c, 2, 8.0), 2);
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

#define PID 4242

/* one allocation (flags: MT_EV_SAMPLED or 0) or free of ptr at site */
static void feed(struct mt_session *s, struct mt_site *site, bool alloc,
		 __u64 ptr, __u64 size, __u16 flags)
{
	static __u64 ts;
	struct mt_event ev = {
		.pid = PID, .tid = PID, .flags = flags, .comm = "python3"
	};
	struct mt_call r;

	ev.ts = ++ts;
	r = (struct mt_call){
		.ev = &ev,
		.ki = mt_kind(alloc ? MT_K_CPU_NEW : MT_K_CPU_DELETE),
		.event = alloc ? "c10:cpu_alloc" : "c10:cpu_free",
		.role = alloc ? MT_ROLE_ALLOC : MT_ROLE_FREE,
		.has_ptr = true,
		.ptr = ptr,
		.size_state = alloc ? MT_SIZE_KNOWN : MT_SIZE_UNKNOWN,
		.size = alloc ? size : 0,
		.dev_type = MT_DT_CPU,
		.dev_index = -1,
	};

	assert_true(mt_session_event(s, &r, site));
}

static const struct mt_module_stat *module_of(const struct mt_session *s,
					      const char *module)
{
	for (size_t i = 0; i < s->sum.nmods; i++)
		if (!strcmp(s->sum.mods[i].module, module))
			return &s->sum.mods[i];
	return NULL;
}

/*
 * The session of a sampled trace: every total counts every event; the
 * module and the site of a sampled allocation count s/p bytes and 1/p
 * allocations, an unsampled one nothing, and both go when freed; the
 * counts over the trace, kept to the process's, take what of its ten
 * unwalked allocations it says (7.5 of 10): never more than there are
 */
static void test_session(void **state)
{
	struct mt_session_conf c = { .max_live = 1024,
				     .max_sites = 16,
				     .sample_bytes = R };
	struct mt_session s;
	struct mt_site key = { .pid = PID,
			       .event = "c10:cpu_alloc",
			       .phase = "forward",
			       .module = "encoder" },
		       bare = { .pid = PID, .event = "c10:cpu_alloc" },
		       freed = { .pid = PID, .event = "c10:cpu_free" };
	struct mt_site *mod, *none, *fr;
	const struct mt_module_stat *m;
	__u64 small = 65536, big = 64 * R, est;
	struct mt_sample_cal cal;
	double w;
	bool is_new;

	assert_int_equal(mt_session_init(&s, &c, stderr), 0);
	mod = mt_sites_get(s.sites, &key, &is_new);
	none = mt_sites_get(s.sites, &bare, &is_new);
	fr = mt_sites_get(s.sites, &freed, &is_new);
	feed(&s, mod, true, 0x1000, small, MT_EV_SAMPLED);
	feed(&s, mod, true, 0x2000, big, MT_EV_SAMPLED);
	for (__u64 i = 0; i < 10; i++)
		feed(&s, none, true, 0x10000 + i * 0x1000, small, 0);

	/* the totals: all twelve */
	assert_int_equal(s.sum.kinds[0].count, 12);
	assert_int_equal(s.sum.kinds[0].bytes, 11 * small + big);
	assert_int_equal(s.sum.devs[0].cur, 11 * small + big);
	assert_int_equal(s.sample_allocs, 12);
	assert_int_equal(s.sample_walked, 2);
	/* the estimates: the small block stands for R/small of them */
	w = 1.0 + (double)(float)(mt_sample_weight(small, R) - 1.0);
	est = mt_sample_scale(small, w);
	m = module_of(&s, "encoder");
	assert_non_null(m);
	assert_int_equal(m->bytes_alloc, est + big);
	assert_int_equal(m->allocs, 2);
	assert_true(fabs(m->alloc_est - (1.0 + w)) < 1e-9);
	assert_int_equal(m->live, est + big);
	assert_int_equal(mod->alloc_bytes, est + big);
	assert_int_equal(mod->allocs, 2);
	assert_true(fabs(mod->alloc_est - (1.0 + w)) < 1e-9);
	mt_session_alloc_cal(&s, PID, &cal);
	assert_int_equal(mt_sample_cal_next(&cal, mod->allocs, mod->alloc_est),
			 10);
	assert_int_equal(mod->live_bytes, est + big);
	assert_int_equal(mod->live_count, 2);
	assert_int_equal(none->alloc_bytes, 0);
	assert_int_equal(none->allocs, 0);
	assert_int_equal(none->live_bytes, 0);
	assert_int_equal(none->live_count, 0);

	/* freed: what each stood for goes, the totals follow the sizes */
	feed(&s, fr, false, 0x1000, 0, 0);
	feed(&s, fr, false, 0x10000, 0, 0);
	assert_int_equal(m->live, big);
	assert_int_equal(mod->live_bytes, big);
	assert_int_equal(mod->live_count, 1);
	assert_int_equal(none->live_count, 0);
	assert_int_equal(s.sum.devs[0].cur, 9 * small + big);
	assert_int_equal(s.sum.devs[0].peak, 11 * small + big);
	mt_session_free(&s);
}

/*
 * Whose stack a sampled trace walked: the allocations the sampler chose;
 * never a free; every event in a full trace
 */
static void test_unwalked(void **state)
{
	struct mt_event ev = { 0 };
	struct mt_call r = { .ev = &ev, .role = MT_ROLE_ALLOC };

	assert_true(mt_sample_unwalked(R, &r));
	ev.flags = MT_EV_SAMPLED;
	assert_false(mt_sample_unwalked(R, &r));
	assert_false(mt_sample_unwalked(0, &r));
	r.role = MT_ROLE_FREE;
	assert_true(mt_sample_unwalked(R, &r));
	assert_false(mt_sample_unwalked(0, &r));
	r.role = MT_ROLE_OOM;
	ev.flags = 0;
	assert_false(mt_sample_unwalked(R, &r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weight),
		cmocka_unit_test(test_live_est),
		cmocka_unit_test(test_cal),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_estimate_unbiased),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_unwalked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
