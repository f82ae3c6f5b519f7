// SPDX-License-Identifier: GPL-2.0
/* user/analysis/frag.c: waste over time and per phase; half-empty segments. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/frag.h"
#include "event/kinds.h"
#include "analysis/livetable.h"
#include "analysis/sites.h"

#define MIB (1ULL << 20)
#define T0 (100ULL << 30) /* ns of the first event */
#define U (1ULL << 30) /* ns: a power of two, so buckets align */

static void feed(struct mt_frag *f, __u32 pid, int dev, __u64 ts,
		 __u64 allocated, __u64 reserved, const char *phase)
{
	const struct mt_kind_info *ki = mt_kind(MT_K_C10_REPORT);
	struct mt_event ev = { .ts = ts, .pid = pid, .tid = pid };
	struct mt_call r = {
		.ev = &ev,
		.ki = ki,
		.event = ki->event,
		.role = MT_ROLE_ALLOC,
		.dev_type = MT_DT_CUDA,
		.dev_index = dev,
		.has_totals = true,
		.allocated = allocated,
		.reserved = reserved,
	};

	mt_frag_event(f, &r, phase);
}

struct capture {
	char *buf;
	size_t len;
	FILE *out;
};

static void capture_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->out = open_memstream(&c->buf, &c->len);
	assert_non_null(c->out);
}

static void capture_close(struct capture *c)
{
	assert_int_equal(fclose(c->out), 0);
}

/* the line holding every one of the words, copied; NULL if none */
static char *line_with(const char *buf, const char *a, const char *b)
{
	static char line[1024];
	const char *p = buf;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			if (strstr(line, a) && (!b || strstr(line, b)))
				return line;
		}
		p += n + (nl ? 1 : 0);
	}
	return NULL;
}

static double num_after(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	assert_non_null(p);
	return strtod(p + strlen(key), NULL);
}

static void test_no_events(void **state)
{
	struct mt_frag *f = mt_frag_new();
	struct mt_livetable *live = mt_live_new(16);
	struct capture c;

	assert_non_null(f);
	assert_non_null(live);
	capture_open(&c);
	mt_frag_print(f, live, T0, c.out);
	capture_close(&c);
	assert_string_equal(c.buf, "# frag no c10 events\n");
	free(c.buf);
	mt_live_free(live);
	mt_frag_free(f);
	mt_frag_free(NULL);
}

/*
 * waste 0 for 1 U (forward), 100 MiB for 2 U (backward), 50 MiB for 2 U
 * (forward), then 10 MiB at the end (optimizer, no time after it)
 */
static void test_time_weighted(void **state)
{
	struct mt_frag *f = mt_frag_new();
	struct mt_livetable *live = mt_live_new(16);
	struct capture c;
	char *l;

	assert_non_null(f);
	assert_non_null(live);
	feed(f, 7, 0, T0, 100 * MIB, 100 * MIB, "forward");
	feed(f, 7, 0, T0 + U, 100 * MIB, 200 * MIB, "backward");
	feed(f, 7, 0, T0 + 3 * U, 150 * MIB, 200 * MIB, "forward");
	feed(f, 7, 0, T0 + 5 * U, 190 * MIB, 200 * MIB, "optimizer");
	/* CPU reports are no caching allocator's */
	{
		const struct mt_kind_info *ki = mt_kind(MT_K_C10_REPORT);
		struct mt_event ev = { .ts = T0 + 2 * U, .pid = 7 };
		struct mt_call r = { .ev = &ev,
				     .ki = ki,
				     .event = ki->event,
				     .dev_type = MT_DT_CPU,
				     .has_totals = true,
				     .reserved = 1000 * MIB };

		mt_frag_event(f, &r, "forward");
	}
	capture_open(&c);
	mt_frag_print(f, live, T0, c.out);
	capture_close(&c);

	l = line_with(c.buf, "# frag pid=7 dev=cuda:0 events=", NULL);
	assert_non_null(l);
	assert_non_null(strstr(l, " events=4 "));
	/* (0 * 1 + 100 * 2 + 50 * 2) / 5 = 60 MiB; (0 + 1 + 0.5) / 5 = 30 % */
	assert_int_equal((__u64)num_after(l, " waste_mean="), 60 * MIB);
	assert_non_null(strstr(l, " ratio_mean=30.0% "));
	assert_int_equal((__u64)num_after(l, " waste_max="), 100 * MIB);
	assert_non_null(strstr(l, " waste_max_at=+1.074s "));
	assert_int_equal((__u64)num_after(l, " waste_max_reserved="),
			 200 * MIB);
	assert_non_null(strstr(l, " ratio_max=50.0% "));
	assert_int_equal((__u64)num_after(l, " waste_last="), 10 * MIB);

	/* forward: (0 * 1 + 50 * 2) / 3; ratio (0 + 0.25 * 2) / 3 */
	l = line_with(c.buf, " phase=forward ", NULL);
	assert_non_null(l);
	assert_int_equal((__u64)num_after(l, " waste_mean="), 100 * MIB / 3);
	assert_non_null(strstr(l, " ratio_mean=16.7%"));
	l = line_with(c.buf, " phase=backward ", NULL);
	assert_non_null(l);
	assert_int_equal((__u64)num_after(l, " waste_mean="), 100 * MIB);
	assert_non_null(strstr(l, " ratio_mean=50.0%"));
	/* the last event's phase held no time */
	assert_null(line_with(c.buf, " phase=optimizer ", NULL));

	/* tenths of 5 U: the step to 100 MiB at 1 U, to 50 MiB at 3 U */
	l = line_with(c.buf, " series ", NULL);
	assert_non_null(l);
	assert_non_null(strstr(
		l,
		" waste_max_mib=0.0,0.0,100.0,100.0,100.0,100.0,50.0,50.0,50.0,50.0"));
	free(c.buf);
	mt_live_free(live);
	mt_frag_free(f);
}

/* accounts of two processes and devices stay apart */
static void test_accounts(void **state)
{
	struct mt_frag *f = mt_frag_new();
	struct mt_livetable *live = mt_live_new(16);
	struct capture c;
	char *l;

	assert_non_null(f);
	assert_non_null(live);
	feed(f, 7, 0, T0, 1 * MIB, 2 * MIB, NULL);
	feed(f, 7, 1, T0 + U, 3 * MIB, 4 * MIB, NULL);
	feed(f, 8, 0, T0 + 2 * U, 5 * MIB, 8 * MIB, NULL);
	/* out of order by a little: the waste before it held no time */
	feed(f, 8, 0, T0 + U, 7 * MIB, 8 * MIB, NULL);
	feed(f, 8, 0, T0 + 4 * U, 8 * MIB, 8 * MIB, NULL);
	capture_open(&c);
	mt_frag_print(f, live, T0, c.out);
	capture_close(&c);
	l = line_with(c.buf, "# frag pid=7 dev=cuda:0 ", " events=");
	assert_non_null(l);
	assert_int_equal((__u64)num_after(l, " waste_mean="), 1 * MIB);
	l = line_with(c.buf, "# frag pid=7 dev=cuda:1 ", " events=");
	assert_non_null(l);
	assert_int_equal((__u64)num_after(l, " waste_max="), 1 * MIB);
	l = line_with(c.buf, "# frag pid=8 dev=cuda:0 ", " events=");
	assert_non_null(l);
	assert_non_null(strstr(l, " events=3 "));
	assert_int_equal((__u64)num_after(l, " waste_mean="), 1 * MIB);
	assert_int_equal((__u64)num_after(l, " waste_max="), 3 * MIB);
	assert_int_equal((__u64)num_after(l, " waste_last="), 0);
	/* without phases, no phase lines */
	assert_null(strstr(c.buf, " phase="));
	free(c.buf);
	mt_live_free(live);
	mt_frag_free(f);
}

/* a live range made from caller (NULL: not known) */
static void put_by(struct mt_livetable *t, __u32 pid, __u16 space, __u64 ptr,
		   __u64 size, const char *event, const char *caller)
{
	struct mt_live e = {
		.ptr = ptr,
		.size = size,
		.ts = T0 + U,
		.event = event,
		.caller = caller,
		.pid = pid,
		.space = space,
		.dev_type = MT_DT_CUDA,
		.dev = 0,
	};

	assert_int_equal(mt_live_insert(t, &e), 0);
}

static void put(struct mt_livetable *t, __u32 pid, __u16 space, __u64 ptr,
		__u64 size, const char *event, struct mt_site *site)
{
	struct mt_live e = {
		.ptr = ptr,
		.size = size,
		.ts = T0 + U,
		.event = event,
		.site = site,
		.pid = pid,
		.space = space,
		.dev_type = MT_DT_CUDA,
		.dev = 0,
	};

	assert_int_equal(mt_live_insert(t, &e), 0);
}

static void test_segments(void **state)
{
	struct mt_site site = { .pid = 7,
				.event = "cudart:cudaMalloc",
				.module = "Net.fc",
				.phase = "forward" };
	struct mt_frag *f = mt_frag_new();
	struct mt_livetable *t = mt_live_new(64);
	struct capture c;
	char *l;

	assert_non_null(f);
	assert_non_null(t);
	/* A: 20 MiB, two 4 MiB blocks: 40 % */
	put(t, 7, MT_SP_CUDART, 0x10000000, 20 * MIB, "cudart:cudaMalloc",
	    &site);
	put(t, 7, MT_SP_C10, 0x10000000, 4 * MIB, "c10:alloc", NULL);
	put(t, 7, MT_SP_C10, 0x10400000, 4 * MIB, "c10:alloc", NULL);
	/* the driver call under A's cudaMalloc: one range */
	put(t, 7, MT_SP_DRIVER, 0x10000000, 2 * MIB, "cuda:cuMemAlloc", NULL);
	/* B: full */
	put(t, 7, MT_SP_CUDART, 0x20000000, 2 * MIB, "cudart:cudaMalloc", NULL);
	put(t, 7, MT_SP_C10, 0x20000000, 2 * MIB, "c10:alloc", NULL);
	/* C: empty */
	put(t, 7, MT_SP_DRIVER, 0x30000000, 4 * MIB, "cuda:cuMemAlloc", NULL);
	/* D1, D2: mapped ranges of an expandable segment, one block on both */
	put(t, 7, MT_SP_VAMAP, 0x40000000, 20 * MIB, "cuda:cuMemMap", NULL);
	put(t, 7, MT_SP_VAMAP, 0x41400000, 20 * MIB, "cuda:cuMemMap", NULL);
	put(t, 7, MT_SP_C10, 0x41000000, 8 * MIB, "c10:alloc", NULL);
	/* handles are no addresses */
	put(t, 7, MT_SP_HANDLE, 0x30000000, 64 * MIB, "cuda:cuMemCreate", NULL);
	/* a block of another process, and one outside every segment */
	put(t, 8, MT_SP_C10, 0x10800000, 4 * MIB, "c10:alloc", NULL);
	put(t, 7, MT_SP_C10, 0x50000000, 4 * MIB, "c10:alloc", NULL);

	/* the segments are listed for a process with a caching allocator */
	feed(f, 7, 0, T0, 0, 0, NULL);
	capture_open(&c);
	mt_frag_print(f, t, T0, c.out);
	capture_close(&c);

	l = line_with(c.buf, "# frag segments=", NULL);
	assert_non_null(l);
	assert_non_null(strstr(l, "# frag segments=5 "));
	assert_non_null(strstr(l, " blocks=6 blocks_outside=2 "));
	assert_non_null(strstr(l, " under_50pct=4 "));
	assert_int_equal((__u64)num_after(l, " bytes="), 66 * MIB);
	assert_int_equal((__u64)num_after(l, " used="), 18 * MIB);

	l = line_with(c.buf, "# frag segment ", " start=0x10000000 ");
	assert_non_null(l);
	assert_non_null(strstr(l, " size=20971520 used=8388608 util=40.0% "
				  "blocks=2 unused=12582912 "
				  "event=cudart:cudaMalloc at=+1.074s "
				  "module=Net.fc phase=forward"));
	l = line_with(c.buf, "# frag segment ", " start=0x30000000 ");
	assert_non_null(l);
	assert_non_null(strstr(l, " util=0.0% blocks=0 "));
	l = line_with(c.buf, "# frag segment ", " start=0x41400000 ");
	assert_non_null(l);
	assert_non_null(strstr(l, " used=4194304 util=20.0% blocks=1 "));
	assert_null(line_with(c.buf, "# frag segment ", " start=0x20000000 "));

	/* the emptiest by unused bytes first: D1 and D2, A, C */
	assert_true(strstr(c.buf, "start=0x41400000") <
		    strstr(c.buf, "start=0x10000000"));
	assert_true(strstr(c.buf, "start=0x40000000") <
		    strstr(c.buf, "start=0x10000000"));
	assert_true(strstr(c.buf, "start=0x10000000") <
		    strstr(c.buf, "start=0x30000000"));
	free(c.buf);
	mt_live_free(t);
	mt_frag_free(f);
}

/*
 * As on an H200: each cudaMalloc of c10 through the runtime's own
 * cuMemAlloc_v2 at the same address and size, and cuBLAS's memory from
 * the driver and the runtime: PyTorch's segments are c10's only, the rest
 * one line for its library.
 */
static void test_segments_other_libraries(void **state)
{
	const char *c10 = "libc10_cuda.so", *rt = "libcudart.so.13",
		   *blas = "libcublas.so.13";
	struct mt_frag *f = mt_frag_new();
	struct mt_livetable *t = mt_live_new(64);
	struct capture c;
	char *l;

	assert_non_null(f);
	assert_non_null(t);
	put_by(t, 7, MT_SP_DRIVER, 0x10000000, 2 * MIB, "cuda:cuMemAlloc_v2",
	       rt);
	put_by(t, 7, MT_SP_CUDART, 0x10000000, 2 * MIB, "cudart:cudaMalloc",
	       c10);
	put_by(t, 7, MT_SP_C10, 0x10000000, MIB / 2, "c10:alloc", c10);
	/* cuBLAS's handle: the driver's, in one 2 MiB page as on the GPU */
	put_by(t, 7, MT_SP_DRIVER, 0x20000000, 1024, "cuda:cuMemAlloc_v2",
	       blas);
	put_by(t, 7, MT_SP_DRIVER, 0x20000400, 131072, "cuda:cuMemAlloc_v2",
	       blas);
	put_by(t, 7, MT_SP_DRIVER, 0x30000000, 2 * MIB, "cuda:cuMemAlloc_v2",
	       blas);
	/* and a cudaMalloc of cuBLAS, through the driver */
	put_by(t, 7, MT_SP_DRIVER, 0x40000000, 4 * MIB, "cuda:cuMemAlloc_v2",
	       rt);
	put_by(t, 7, MT_SP_CUDART, 0x40000000, 4 * MIB, "cudart:cudaMalloc",
	       blas);
	feed(f, 7, 0, T0, MIB / 2, 2 * MIB, NULL);
	capture_open(&c);
	mt_frag_print(f, t, T0, c.out);
	capture_close(&c);

	l = line_with(c.buf, "# frag segments=", NULL);
	assert_non_null(l);
	assert_non_null(strstr(l, "# frag segments=1 bytes=2097152 "
				  "used=524288 blocks=1 blocks_outside=0 "));
	l = line_with(c.buf, "# frag segment ", " start=0x10000000 ");
	assert_non_null(l);
	assert_non_null(strstr(l, " event=cudart:cudaMalloc "));
	assert_null(line_with(c.buf, "# frag segment ", " start=0x30000000 "));
	l = line_with(c.buf, "# frag other_library ", NULL);
	assert_non_null(l);
	assert_string_equal(l, "# frag other_library pid=7 dev=cuda:0 "
			       "caller=libcublas.so.13 ranges=4 "
			       "bytes=6423552");
	/* one line a library */
	assert_null(strstr(strstr(c.buf, "# frag other_library ") + 1,
			   "# frag other_library "));
	free(c.buf);
	mt_live_free(t);
	mt_frag_free(f);
}

/* more low segments than the top: the rest are counted */
static void test_segments_top(void **state)
{
	struct mt_frag *f = mt_frag_new();
	struct mt_livetable *t = mt_live_new(64);
	struct capture c;

	assert_non_null(f);
	assert_non_null(t);
	for (__u64 i = 0; i < 12; i++)
		put(t, 7, MT_SP_CUDART, 0x10000000 + i * 0x1000000,
		    (i + 1) * MIB, "cudart:cudaMalloc", NULL);
	/* the segments are listed for a process with a caching allocator */
	feed(f, 7, 0, T0, 0, 0, NULL);
	capture_open(&c);
	mt_frag_print(f, t, T0, c.out);
	capture_close(&c);
	assert_non_null(strstr(c.buf, "# frag segment ... 2 more under 50%\n"));
	/* the two smallest are the ones left out */
	assert_null(strstr(c.buf, "size=1048576 "));
	assert_null(strstr(c.buf, "size=2097152 "));
	assert_non_null(strstr(c.buf, "size=12582912 "));
	free(c.buf);
	mt_live_free(t);
	mt_frag_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_events),
		cmocka_unit_test(test_time_weighted),
		cmocka_unit_test(test_accounts),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_segments_top),
		cmocka_unit_test(test_segments_other_libraries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
