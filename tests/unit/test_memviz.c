// SPDX-License-Identifier: GPL-2.0
/*
 * user/export/memviz.c fed by a session as on an H200: each cudaMalloc
 * of c10 through the runtime's own probed cuMemAlloc_v2 (whose event comes
 * first), cuBLAS's memory from the driver. The snapshot's segments and
 * segment history are the caching allocator's only, as torch's own are;
 * a process without c10 keeps every range it took.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/export.h"
#include "harness.h"

#define PID 558
#define MIB (1ULL << 20)
#define SEG_A 0x7fc711c00000ULL

static int setup(void **state)
{
	struct mt_session_conf c = {
		.max_live = 1024, .max_sites = 64, .top_live = 5, .top_ops = 5
	};
	struct harness *h = calloc(1, sizeof(*h));

	if (!h || harness_init(h, &c, stderr) || harness_file(h, "test_memviz"))
		return -1;
	*state = h;
	return 0;
}

/* an allocation of kind k made from caller's code */
static void feed(struct harness *h, unsigned int k, __u64 ptr, __u64 size,
		 const char *caller)
{
	const struct mt_kind_info *ki = mt_kind(k);
	struct mt_event ev = { .ts = harness_tick(h),
			       .pid = PID,
			       .tid = PID,
			       .kind = k,
			       .comm = "python3" };
	/* interned in the tool: here a literal, compared by its text */
	struct mt_site key = { .pid = PID,
			       .event = ki->event,
			       .caller = caller };
	struct mt_call r = {
		.ev = &ev,
		.ki = ki,
		.event = ki->event,
		.role = MT_ROLE_ALLOC,
		.has_ptr = true,
		.ptr = ptr,
		.size_state = MT_SIZE_KNOWN,
		.size = size,
		.dev_type = MT_DT_CUDA,
		.dev_index = ki->space == MT_SP_C10 ? 0 : -1,
		.has_totals = ki->space == MT_SP_C10,
		.allocated = size,
		.reserved = 2 * MIB,
	};

	assert_true(mt_session_event(&h->s, &r, harness_site(h, &key)));
}

/* how many times the pickle holds the string s */
static int count(const char *path, const char *s)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;
	int n = 0;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	for (const char *p = buf;
	     (p = memmem(p, (size_t)(buf + len - p), s, strlen(s))); p++)
		n++;
	free(buf);
	return n;
}

static void export_start(struct harness *h)
{
	struct mt_export_conf c = { .kind = "memviz", .path = h->path };

	assert_int_equal(mt_export_start(&h->s, &c), 0);
}

static void export_finish(struct harness *h)
{
	assert_int_equal(mt_export_finish(&h->s), 0);
}

static void test_allocator_segments_only(void **state)
{
	struct harness *h = *state;

	export_start(h);
	feed(h, MT_K_CU_MEM_ALLOC, SEG_A, 2 * MIB, "libcudart.so.13");
	feed(h, MT_K_CUDA_MALLOC, SEG_A, 2 * MIB, "libc10_cuda.so");
	feed(h, MT_K_C10_REPORT, SEG_A, 512, "libc10_cuda.so");
	feed(h, MT_K_CU_MEM_ALLOC, 0x7fc729000000ULL, 1024, "libcublas.so.13");
	feed(h, MT_K_CU_MEM_ALLOC, 0x7fc729000400ULL, 131072,
	     "libcublas.so.13");
	feed(h, MT_K_CU_MEM_ALLOC, 0x7fc6fc000000ULL, 64 * MIB,
	     "libcublas.so.13");
	export_finish(h);
	/* one segment, in 'segments' and in the trace, c10's block in it */
	assert_int_equal(count(h->path, "total_size"), 1);
	assert_int_equal(count(h->path, "segment_alloc"), 1);
	assert_int_equal(count(h->path, "active_allocated"), 1);
	assert_int_equal(count(h->path, "libcublas.so.13"), 0);
	assert_int_equal(count(h->path, "cudart:cudaMalloc"), 1);
}

/* no caching allocator: a program's own ranges are its segments */
static void test_no_allocator(void **state)
{
	struct harness *h = *state;

	export_start(h);
	feed(h, MT_K_CUDA_MALLOC, SEG_A, 2 * MIB, "cudart_calls");
	feed(h, MT_K_CU_MEM_ALLOC, 0x7fc729000000ULL, 1024, "libcublas.so.13");
	export_finish(h);
	assert_int_equal(count(h->path, "total_size"), 2);
	assert_int_equal(count(h->path, "segment_alloc"), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_allocator_segments_only,
						setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_no_allocator, setup,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
