// SPDX-License-Identifier: GPL-2.0
/* user/event/format.c: the event line a user reads, byte for byte. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include "event/format.h"
#include "event/kinds.h"

#define COMM "python3"
#define HEAD COMM " 4242/4243 [003] 12345.678901: "

static struct mt_event event(unsigned int kind)
{
	struct mt_event ev = {
		.ts = 12345678901234ULL,
		.pid = 4242,
		.tid = 4243,
		.cpu = 3,
		.kind = (__u16)kind,
		.dev = 0,
		.comm = COMM,
	};

	return ev;
}

/* decode ev as a thread traced from its start would be, then format it */
static void expect_line(const struct mt_event *ev, const char *caller,
			const char *want)
{
	struct mt_call r;
	char buf[512];
	int n;

	assert_true(mt_decode(ev, 0, &r));
	memset(buf, 'Z', sizeof(buf));
	n = mt_format_event(buf, sizeof(buf), &r, caller, NULL);
	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
}

static void test_cuda_malloc_ok(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_MALLOC);

	ev.args[0] = 0x7ffd5e0c1a28; /* &devPtr */
	ev.args[1] = 1048576;
	ev.out = 0x7f2a40000000;
	ev.ret = 0;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cudart:cudaMalloc: ptr=0x7f2a40000000 size=1048576 "
			 "dev=cuda:0 ret=0 caller=libtorch_cuda.so\n");
}

static void test_cuda_malloc_failed(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_MALLOC);

	ev.args[0] = 0x7ffd5e0c1a28;
	ev.args[1] = 1024;
	ev.out = 0;
	ev.ret = 35;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cudart:cudaMalloc: size=1024 dev=cuda:0 ret=35 "
			 "err=cudaErrorInsufficientDriver "
			 "caller=libtorch_cuda.so\n");
}

static void test_driver_error_and_unknown_error(void **state)
{
	struct mt_event ev = event(MT_K_CU_MEM_ALLOC);

	ev.args[1] = 1ULL << 40;
	ev.ret = 2;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	ev.dev = 1;
	expect_line(&ev, "libcudart.so.13",
		    HEAD "cuda:cuMemAlloc_v2: size=1099511627776 dev=cuda:1 "
			 "ret=2 err=CUDA_ERROR_OUT_OF_MEMORY "
			 "caller=libcudart.so.13\n");

	ev = event(MT_K_CUDA_FREE);
	ev.args[0] = 0x1234;
	ev.ret = 12345;
	ev.flags = MT_EV_RET;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cudart:cudaFree: ptr=0x1234 size=? dev=cuda:0 "
			 "ret=12345 err=unknown caller=libtorch_cuda.so\n");
}

static void test_c10_alloc_free(void **state)
{
	struct mt_event ev = event(MT_K_C10_REPORT);

	ev.args[0] = 0x7f0000200000;
	ev.args[1] = 2097152;
	ev.args[2] = 4194304; /* allocated */
	ev.args[3] = 20971520; /* reserved */
	ev.args[4] = 0x0101; /* c10::Device{CUDA, 1} */
	expect_line(&ev, "libc10_cuda.so",
		    HEAD
		    "c10:alloc: ptr=0x7f0000200000 size=2097152 dev=cuda:1 "
		    "allocated=4194304 reserved=20971520 "
		    "caller=libc10_cuda.so\n");

	ev.args[1] = (__u64)-2097152LL;
	ev.args[2] = 2097152;
	expect_line(&ev, "libc10_cuda.so",
		    HEAD "c10:free: ptr=0x7f0000200000 size=2097152 dev=cuda:1 "
			 "allocated=2097152 reserved=20971520 "
			 "caller=libc10_cuda.so\n");
}

static void test_free_async_stream(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE_ASYNC);

	ev.args[0] = 0x7f2a40000000;
	ev.args[1] = 0x55d0c0de1230;
	ev.ret = 0;
	ev.flags = MT_EV_RET;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cudart:cudaFreeAsync: ptr=0x7f2a40000000 size=? "
			 "dev=cuda:0 ret=0 stream=0x55d0c0de1230 "
			 "caller=libtorch_cuda.so\n");

	/* the legacy default stream is 0 */
	ev = event(MT_K_CUDA_MALLOC_ASYNC);
	ev.args[1] = 512;
	ev.args[2] = 0;
	ev.out = 0x7f2a40000200;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cudart:cudaMallocAsync: ptr=0x7f2a40000200 size=512 "
			 "dev=cuda:0 ret=0 stream=0x0 "
			 "caller=libtorch_cuda.so\n");
}

static void test_cu_mem_create_and_map(void **state)
{
	struct mt_event ev = event(MT_K_CU_MEM_CREATE);

	ev.args[0] = 0x7ffd5e0c1a30; /* &handle */
	ev.args[1] = 2097152;
	ev.args[2] = 0x7ffd5e0c1a40; /* &prop */
	ev.out = 0x55aa01;
	ev.dev = 2; /* prop->location.id */
	ev.flags = MT_EV_RET | MT_EV_OUT;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cuda:cuMemCreate: handle=0x55aa01 size=2097152 "
			 "dev=cuda:2 ret=0 caller=libtorch_cuda.so\n");

	ev = event(MT_K_CU_MEM_MAP);
	ev.args[0] = 0x7f1000000000; /* ptr */
	ev.args[1] = 2097152; /* size */
	ev.args[2] = 0; /* offset */
	ev.args[3] = 0x55aa01; /* handle */
	ev.flags = MT_EV_RET;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cuda:cuMemMap: ptr=0x7f1000000000 size=2097152 "
			 "ret=0 handle=0x55aa01 caller=libtorch_cuda.so\n");
}

static void test_host_and_cpu_devices(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_MALLOC_HOST);

	ev.args[1] = 4096;
	ev.out = 0x7f3000000000;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	expect_line(&ev, "libtorch_cuda.so",
		    HEAD "cudart:cudaMallocHost: ptr=0x7f3000000000 size=4096 "
			 "dev=host ret=0 caller=libtorch_cuda.so\n");

	ev = event(MT_K_CPU_NEW);
	ev.args[0] = 0x55d000001000; /* this */
	ev.args[1] = 0x7f4000000040;
	ev.args[2] = 800;
	expect_line(&ev, "libc10.so",
		    HEAD "c10:cpu_alloc: ptr=0x7f4000000040 size=800 dev=cpu "
			 "caller=libc10.so\n");
}

static void test_unknown_thread_device(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);
	struct mt_call r;
	char buf[256];

	ev.args[0] = 0x7f2a40000000;
	ev.dev = MT_DEV_UNKNOWN;
	ev.flags = MT_EV_RET;
	/* attached to a running process: the device is not known */
	assert_true(mt_decode(&ev, -1, &r));
	assert_true(mt_format_event(buf, sizeof(buf), &r, "libx.so", NULL) > 0);
	assert_string_equal(buf, HEAD "cudart:cudaFree: ptr=0x7f2a40000000 "
				      "size=? dev=cuda:? ret=0 "
				      "caller=libx.so\n");
}

static void test_free_size_from_live_table(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);
	struct mt_call r;
	char buf[256];

	ev.args[0] = 0x7f2a40000000;
	ev.flags = MT_EV_RET;
	assert_true(mt_decode(&ev, 0, &r));
	/* what the tracer does when the live table knows the allocation */
	r.size_state = MT_SIZE_KNOWN;
	r.size = 1048576;
	assert_true(mt_format_event(buf, sizeof(buf), &r, "libtorch_cuda.so",
				    NULL) > 0);
	assert_string_equal(buf, HEAD "cudart:cudaFree: ptr=0x7f2a40000000 "
				      "size=1048576 dev=cuda:0 ret=0 "
				      "caller=libtorch_cuda.so\n");
}

static void test_comm(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);

	ev.args[0] = 0x10;
	ev.flags = MT_EV_RET;
	/* one token, whatever the thread called itself */
	memcpy(ev.comm, "pt data\tworker", sizeof("pt data\tworker"));
	expect_line(&ev, "l.so",
		    "pt_data_worker 4242/4243 [003] 12345.678901: "
		    "cudart:cudaFree: ptr=0x10 size=? dev=cuda:0 ret=0 "
		    "caller=l.so\n");

	/* all 16 bytes used, no NUL */
	memcpy(ev.comm, "0123456789abcdef", MT_COMM_LEN);
	expect_line(&ev, "l.so",
		    "0123456789abcdef 4242/4243 [003] 12345.678901: "
		    "cudart:cudaFree: ptr=0x10 size=? dev=cuda:0 ret=0 "
		    "caller=l.so\n");

	memset(ev.comm, 0, sizeof(ev.comm));
	expect_line(&ev, "l.so",
		    "? 4242/4243 [003] 12345.678901: "
		    "cudart:cudaFree: ptr=0x10 size=? dev=cuda:0 ret=0 "
		    "caller=l.so\n");
}

/* what the target named cannot add a line, a field or a terminal control */
static void test_hostile_names(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);
	const struct mt_attrib a = {
		.phase = "forward",
		.module = "enc\n# OOM pid=1 x=y",
		.node = "N\x1b[2J",
		.rank = 3,
	};
	struct mt_attrib raised = a;
	char buf[512], comm[MT_FORMAT_COMM_LEN];
	struct mt_call r;

	ev.args[0] = 0x10;
	ev.flags = MT_EV_RET;
	memcpy(ev.comm, "a\x1b[2J\nb c\xc3\xa9",
	       sizeof("a\x1b[2J\nb c\xc3\xa9"));
	assert_true(mt_decode(&ev, 0, &r));
	assert_true(mt_format_event(buf, sizeof(buf), &r, "lib x.so", &a) > 0);
	assert_string_equal(
		buf, "a\\x1b[2J\\nb_c\xc3\xa9 4242/4243 [003] 12345.678901: "
		     "cudart:cudaFree: ptr=0x10 size=? dev=cuda:0 ret=0 "
		     "caller=lib\\x20x.so phase=forward "
		     "module=enc\\n#\\x20OOM\\x20pid\\x3d1\\x20x\\x3dy "
		     "node=N\\x1b[2J rank=3\n");
	/* the exception's type, for python:raise */
	raised.detail = "E\rrank=9";
	ev = event(MT_K_PY_RAISE);
	assert_true(mt_decode(&ev, 0, &r));
	assert_true(mt_format_event(buf, sizeof(buf), &r, NULL, &raised) > 0);
	assert_non_null(strstr(buf, " type=E\\rrank\\x3d9 caller=? "));
	/* a comm of 16 bytes, each escaped: 4 bytes a byte */
	memset(ev.comm, 0x1b, MT_COMM_LEN);
	assert_int_equal(strlen(mt_format_comm(comm, sizeof(comm), ev.comm)),
			 4 * MT_COMM_LEN);
}

static void test_header_fields(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);

	ev.args[0] = 0x10;
	ev.flags = MT_EV_RET;
	ev.ts = 1000000000ULL + 999; /* 1 s and 999 ns: µs truncated */
	ev.cpu = 1234;
	ev.pid = 1;
	ev.tid = 4294967295U;
	expect_line(&ev, "l.so",
		    COMM " 1/4294967295 [1234] 1.000000: cudart:cudaFree: "
			 "ptr=0x10 size=? dev=cuda:0 ret=0 caller=l.so\n");

	ev.ts = 999999;
	ev.cpu = 0;
	expect_line(&ev, "l.so",
		    COMM " 1/4294967295 [000] 0.000999: cudart:cudaFree: "
			 "ptr=0x10 size=? dev=cuda:0 ret=0 caller=l.so\n");
}

static void test_unknown_caller(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);

	ev.args[0] = 0x7f2a40000000;
	ev.flags = MT_EV_RET;
	expect_line(&ev, NULL,
		    HEAD "cudart:cudaFree: ptr=0x7f2a40000000 size=? "
			 "dev=cuda:0 ret=0 caller=?\n");
}

static void test_buffer_too_small(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_MALLOC);
	char full[512], buf[512];
	struct mt_call r;
	int n;

	ev.args[1] = 1048576;
	ev.out = 0x7f2a40000000;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	assert_true(mt_decode(&ev, 0, &r));
	n = mt_format_event(full, sizeof(full), &r, "libtorch_cuda.so", NULL);
	assert_true(n > 0);
	assert_int_equal(n, strlen(full));

	/* exactly the line and its NUL fits */
	assert_int_equal(mt_format_event(buf, (size_t)n + 1, &r,
					 "libtorch_cuda.so", NULL),
			 n);
	assert_string_equal(buf, full);
	/* one byte fewer, or much fewer, does not */
	assert_int_equal(
		mt_format_event(buf, (size_t)n, &r, "libtorch_cuda.so", NULL),
		-1);
	assert_int_equal(mt_format_event(buf, 10, &r, "libtorch_cuda.so", NULL),
			 -1);
	assert_int_equal(mt_format_event(buf, 1, &r, "libtorch_cuda.so", NULL),
			 -1);
}

static void test_format_dev(void **state)
{
	char buf[32], small[4];

	assert_ptr_equal(mt_format_dev(buf, sizeof(buf), MT_DT_CUDA, 0), buf);
	assert_string_equal(buf, "cuda:0");
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_CUDA, 7),
			    "cuda:7");
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_CUDA, 127),
			    "cuda:127");
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_CUDA, -1),
			    "cuda:?");
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_HOST, 0),
			    "host");
	/* the index means nothing off the GPU */
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_HOST, 3),
			    "host");
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_CPU, -1),
			    "cpu");
	assert_string_equal(mt_format_dev(buf, sizeof(buf), MT_DT_NONE, 0),
			    "-");
	/* truncated, still a string */
	assert_string_equal(mt_format_dev(small, sizeof(small), MT_DT_CUDA, 0),
			    "cud");
}

static void test_format_bytes(void **state)
{
	char buf[32], small[4];

	assert_ptr_equal(mt_format_bytes(buf, sizeof(buf), 512), buf);
	assert_string_equal(buf, "512 B");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 0), "0 B");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 1023), "1023 B");
	/* three significant digits from 1 KiB on */
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 1024),
			    "1.00 KiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 1536),
			    "1.50 KiB");
	/* 9.994 KiB and 9.995 KiB: the rounding picks the digits */
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 10234),
			    "9.99 KiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 10235),
			    "10.0 KiB");
	/* 99.949 KiB and 99.950 KiB */
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 102348),
			    "99.9 KiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 102349),
			    "100 KiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 1000000),
			    "977 KiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 2086666),
			    "1.99 MiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 13273927),
			    "12.7 MiB");
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), 17824114278ULL),
			    "16.6 GiB");
	/* PiB is the last unit */
	assert_string_equal(mt_format_bytes(buf, sizeof(buf), ~0ULL),
			    "16384 PiB");
	/* truncated, still a string */
	assert_string_equal(mt_format_bytes(small, sizeof(small), 1536), "1.5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cuda_malloc_ok),
		cmocka_unit_test(test_cuda_malloc_failed),
		cmocka_unit_test(test_driver_error_and_unknown_error),
		cmocka_unit_test(test_c10_alloc_free),
		cmocka_unit_test(test_free_async_stream),
		cmocka_unit_test(test_cu_mem_create_and_map),
		cmocka_unit_test(test_host_and_cpu_devices),
		cmocka_unit_test(test_unknown_thread_device),
		cmocka_unit_test(test_free_size_from_live_table),
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_header_fields),
		cmocka_unit_test(test_unknown_caller),
		cmocka_unit_test(test_buffer_too_small),
		cmocka_unit_test(test_format_dev),
		cmocka_unit_test(test_format_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
