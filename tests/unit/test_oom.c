// SPDX-License-Identifier: GPL-2.0
/*
 * user/analysis/oom.c: the caching allocator's retry after a failed
 * cudaMalloc, as the stand-in's runtime shows it (the runtime's events
 * only) and as a GPU's does (each cudaMalloc and cudaFree through the
 * driver's probed entry points, whose events come first).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "event/kinds.h"
#include "analysis/oom.h"
#include "analysis/sites.h"
#include "analysis/summary.h"

#define SIZE 150294495232ULL /* the H200's failed cudaMalloc */
#define SEG (20ULL << 20)
#define TID 871

struct fixture {
	struct mt_oom *o;
	struct mt_summary *sum;
	struct mt_sites *sites;
	struct mt_site site;
	__u64 ts;
	char *buf;
	size_t len;
	FILE *out;
};

static void setup(struct fixture *x)
{
	memset(x, 0, sizeof(*x));
	x->o = mt_oom_new();
	x->sum = calloc(1, sizeof(*x->sum));
	x->sites = mt_sites_new(64);
	x->out = open_memstream(&x->buf, &x->len);
	x->site.module = "-";
	x->site.phase = "other";
	assert_non_null(x->o);
	assert_non_null(x->sum);
	assert_non_null(x->sites);
	assert_non_null(x->out);
}

static void teardown(struct fixture *x)
{
	assert_int_equal(fclose(x->out), 0);
	free(x->buf);
	mt_oom_free(x->o);
	mt_sites_free(x->sites);
	mt_summary_free(x->sum);
	free(x->sum);
}

/* r counted, then shown as the event lines' view shows it */
static void show(struct fixture *x, const struct mt_call *r, __u64 live)
{
	struct mt_oom_state st = { .sum = x->sum,
				   .sites = x->sites,
				   .live = live };

	mt_oom_event(x->o, r, &x->site);
	mt_oom_print_event(x->o, r, &x->site, &st, x->out);
}

/* one call of kind k on the thread: ok, or failed out of memory */
static void call(struct fixture *x, unsigned int k, __u64 size, bool failed)
{
	const struct mt_kind_info *ki = mt_kind(k);
	struct mt_event ev = {
		.ts = ++x->ts, .pid = TID, .tid = TID, .kind = k
	};
	struct mt_call r = {
		.ev = &ev,
		.ki = ki,
		.event = ki->event,
		.role = ki->role,
		.has_ptr = !failed,
		.ptr = failed ? 0 : 0x7f0000000000ULL + x->ts * SEG,
		.size_state = MT_SIZE_KNOWN,
		.size = size,
		.dev_type = MT_DT_CUDA,
		.dev_index = ki->role == MT_ROLE_OOM ? 0 : -1,
		.has_ret = ki->role != MT_ROLE_OOM,
		/* cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY */
		.ret = failed ? 2 : 0,
		.failed = failed,
	};

	show(x, &r, 0);
}

static int count(struct fixture *x, const char *what)
{
	int n = 0;

	assert_int_equal(fflush(x->out), 0);
	for (const char *p = x->buf; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* a cudaMalloc, as the runtime makes it: through the driver on a GPU */
static void malloc_(struct fixture *x, bool gpu, __u64 size, bool failed)
{
	if (gpu)
		call(x, MT_K_CU_MEM_ALLOC, size, failed);
	call(x, MT_K_CUDA_MALLOC, size, failed);
}

static void free_(struct fixture *x, bool gpu)
{
	if (gpu)
		call(x, MT_K_CU_MEM_FREE, SEG, false);
	call(x, MT_K_CUDA_FREE, SEG, false);
}

/* failed, two cached segments freed, failed again, the allocator gives up */
static void retry_failed(bool gpu)
{
	struct mt_oom_counts c;
	struct fixture x;

	setup(&x);
	malloc_(&x, gpu, SIZE, true);
	free_(&x, gpu);
	free_(&x, gpu);
	malloc_(&x, gpu, SIZE, true);
	call(&x, MT_K_C10_OOM, SIZE - 917504, false);
	assert_int_equal(count(&x, "# OOM retry "), 1);
	assert_int_equal(
		count(&x,
		      "# OOM retry pid=871 tid=871: 2 cached segments "
		      "freed (40.0 MiB), then cudart:cudaMalloc "
		      "size=150294495232 again: failed num_alloc_retries=1\n"),
		1);
	/* the first failure's block at each layer, then the allocator's */
	assert_int_equal(count(&x, ": cudart:cudaMalloc size=150294495232 "),
			 1);
	assert_int_equal(count(&x, ": cuda:cuMemAlloc_v2 size="), gpu);
	assert_int_equal(count(&x, ": c10:oom size="), 1);
	mt_oom_counts(x.o, &c);
	/* one allocation failed, at one or two layers */
	assert_int_equal(c.failures, 1);
	assert_int_equal(c.retries, 1);
	assert_int_equal(c.gave_up, 1);
	teardown(&x);
}

static void test_retry_standin(void **state)
{
	(void)state;
	retry_failed(false);
}

static void test_retry_gpu(void **state)
{
	(void)state;
	retry_failed(true);
}

/* on a GPU, a retry that gets its memory */
static void test_retry_ok_gpu(void **state)
{
	struct mt_oom_counts c;
	struct fixture x;

	(void)state;
	setup(&x);
	malloc_(&x, true, SIZE, true);
	free_(&x, true);
	malloc_(&x, true, SIZE, false);
	assert_int_equal(count(&x, "# OOM retry pid=871 tid=871: 1 cached "
				   "segments freed (20.0 MiB), then "
				   "cudart:cudaMalloc size=150294495232 "
				   "again: ok num_alloc_retries=1\n"),
			 1);
	mt_oom_counts(x.o, &c);
	assert_int_equal(c.failures, 1);
	assert_int_equal(c.retries, 1);
	teardown(&x);
}

/* a driver allocation of its own (cuBLAS's) that fails is one failure */
static void test_driver_alone(void **state)
{
	struct mt_oom_counts c;
	struct fixture x;

	(void)state;
	setup(&x);
	call(&x, MT_K_CU_MEM_ALLOC, 64 << 20, true);
	call(&x, MT_K_CUDA_MALLOC, SEG, false);
	mt_oom_counts(x.o, &c);
	assert_int_equal(c.failures, 1);
	assert_int_equal(c.retries, 0);
	assert_int_equal(count(&x, "# OOM retry "), 0);
	teardown(&x);
}

/*
 * A sampled trace's top live sites: a site whose 2 walked allocations
 * stand for 10, another's 1 for itself, of 8 alive in the process. Its
 * count is what was seen plus what its estimate says of the 5 unwalked,
 * kept to them (it says 8): 2 + 8 * 5/8, 7, and the two add up to the 8;
 * before, the walked 2 beside bytes that stood for 10.
 */
static void test_sampled_top_sites(void **state)
{
	static const char ev_malloc[] = "cudart:cudaMalloc";
	struct mt_site key = { .pid = TID,
			       .event = ev_malloc,
			       .phase = "other" };
	struct mt_site *a, *b;
	struct fixture x;
	bool is_new;

	(void)state;
	setup(&x);
	key.module = "Net.cache";
	a = mt_sites_get(x.sites, &key, &is_new);
	key.module = "Net.big";
	b = mt_sites_get(x.sites, &key, &is_new);
	assert_non_null(a);
	assert_non_null(b);
	a->live_count = 2;
	a->live_est = 10.0;
	a->live_bytes = 40 << 20;
	b->live_count = 1;
	b->live_est = 1.0;
	b->live_bytes = 20 << 20;
	{
		struct mt_event ev = { .ts = 1,
				       .pid = TID,
				       .tid = TID,
				       .kind = MT_K_CUDA_MALLOC };
		const struct mt_kind_info *ki = mt_kind(MT_K_CUDA_MALLOC);
		struct mt_call r = { .ev = &ev,
				     .ki = ki,
				     .event = ki->event,
				     .role = ki->role,
				     .size_state = MT_SIZE_KNOWN,
				     .size = SIZE,
				     .dev_type = MT_DT_CUDA,
				     .dev_index = 0,
				     .has_ret = true,
				     .ret = 2,
				     .failed = true };

		show(&x, &r, 8);
	}
	assert_int_equal(count(&x, "#     40.0 MiB in 7 allocations: "
				   "cudart:cudaMalloc module=Net.cache "),
			 1);
	assert_int_equal(count(&x, "#     20.0 MiB in 1 allocations: "
				   "cudart:cudaMalloc module=Net.big "),
			 1);
	teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_standin),
		cmocka_unit_test(test_sampled_top_sites),
		cmocka_unit_test(test_retry_gpu),
		cmocka_unit_test(test_retry_ok_gpu),
		cmocka_unit_test(test_driver_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
