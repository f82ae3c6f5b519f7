// SPDX-License-Identifier: GPL-2.0
/* user/analysis/nvsmi.c: NVML's figure split into what the trace holds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/gpumem.h"
#include "analysis/nvsmi.h"
#include "event/kinds.h"

#define MIB (1ULL << 20)
#define T0 (100ULL << 30)
#define SEC 1000000000ULL

static void test_library(void **state)
{
	(void)state;
	assert_int_equal(mt_nvsmi_library("libnccl.so.2"), MT_NL_NCCL);
	assert_int_equal(mt_nvsmi_library("libcublas.so.12"), MT_NL_CUBLAS);
	assert_int_equal(mt_nvsmi_library("libcublasLt.so.12"), MT_NL_CUBLAS);
	assert_int_equal(mt_nvsmi_library("libcudnn.so.9"), MT_NL_CUDNN);
	/* ctypes calls from libffi; an extension's own library */
	assert_int_equal(mt_nvsmi_library("libffi.so.8"), MT_NL_EXTENSION);
	assert_int_equal(
		mt_nvsmi_library("_ext.cpython-313-x86_64-linux-gnu.so"),
		MT_NL_EXTENSION);
	/* PyTorch's other libraries and CUDA's */
	assert_int_equal(mt_nvsmi_library("libtorch_cuda.so"), MT_NL_OTHER);
	assert_int_equal(mt_nvsmi_library("libcufft.so.11"), MT_NL_OTHER);
	assert_int_equal(mt_nvsmi_library("libnvrtc.so.12"), MT_NL_OTHER);
	assert_int_equal(mt_nvsmi_library(NULL), MT_NL_OTHER);
	assert_string_equal(mt_nvsmi_lib_name(MT_NL_EXTENSION), "extensions");
}

static void put(struct mt_livetable *t, __u32 pid, __u16 space, __u8 dev_type,
		int dev, __u64 ptr, __u64 size, const char *caller)
{
	struct mt_live e = {
		.ptr = ptr,
		.size = size,
		.ts = T0,
		.event = "x",
		.caller = caller,
		.pid = pid,
		.space = space,
		.dev_type = dev_type,
		.dev = (__s8)dev,
	};

	assert_int_equal(mt_live_insert(t, &e), 0);
}

static const struct mt_nvsmi_acct *acct(const struct mt_nvsmi_acct *v, int n,
					__u32 pid, int dev)
{
	for (int i = 0; i < n; i++)
		if (v[i].pid == pid && v[i].dev == dev)
			return &v[i];
	return NULL;
}

/* one of each part, as a training process holds them */
static void test_snapshot(void **state)
{
	struct mt_summary *sum = calloc(1, sizeof(*sum));
	struct mt_livetable *t = mt_live_new(64);
	struct mt_nvsmi_acct v[MT_NVSMI_ACCTS];
	const struct mt_nvsmi_acct *a;
	int n;

	(void)state;
	assert_non_null(sum);
	assert_non_null(t);
	sum->devs[0] = (struct mt_dev_stat){ .pid = 7,
					     .type = MT_DT_CUDA,
					     .index = 0,
					     .space = MT_SP_C10,
					     .reserved = 64 * MIB,
					     .totals_seen = true };
	sum->ndevs = 1;
	/* c10's segment: its reserved, not counted twice */
	put(t, 7, MT_SP_CUDART, MT_DT_CUDA, 0, 0x10000000, 64 * MIB,
	    "libc10_cuda.so");
	/* cuBLAS's workspace from the driver */
	put(t, 7, MT_SP_DRIVER, MT_DT_CUDA, 0, 0x20000000, 2 * MIB,
	    "libcublas.so.12");
	/* a ctypes cudaMalloc, and the runtime's driver call inside it */
	put(t, 7, MT_SP_CUDART, MT_DT_CUDA, 0, 0x30000000, 16 * MIB,
	    "libffi.so.8");
	put(t, 7, MT_SP_DRIVER, MT_DT_CUDA, 0, 0x30000000, 16 * MIB,
	    "libcudart.so.12");
	/* NCCL's VMM buffer: the handle counts, its mapping does not */
	put(t, 7, MT_SP_HANDLE, MT_DT_CUDA, 0, 0x1, 4 * MIB, "libnccl.so.2");
	put(t, 7, MT_SP_VAMAP, MT_DT_CUDA, 0, 0x40000000, 4 * MIB,
	    "libnccl.so.2");
	/* pinned host memory, on no device */
	put(t, 7, MT_SP_PINNED, MT_DT_HOST, -1, 0x50000000, 8 * MIB,
	    "libc10_cuda.so");
	/* a process with no caching allocator: its ranges are its reserved */
	put(t, 9, MT_SP_CUDART, MT_DT_CUDA, 1, 0x10000000, 3 * MIB, NULL);

	n = mt_nvsmi_snapshot(sum, t, v);
	assert_int_equal(n, 2);
	a = acct(v, n, 7, 0);
	assert_non_null(a);
	assert_int_equal(a->p.reserved, 64 * MIB);
	assert_int_equal(a->p.lib[MT_NL_CUBLAS], 2 * MIB);
	assert_int_equal(a->p.lib[MT_NL_EXTENSION], 16 * MIB);
	assert_int_equal(a->p.lib[MT_NL_OTHER], 0);
	assert_int_equal(a->p.vmm, 4 * MIB);
	assert_int_equal(a->p.pinned_host, 8 * MIB);
	assert_int_equal(mt_nvsmi_outside(&a->p), 22 * MIB);
	a = acct(v, n, 9, 1);
	assert_non_null(a);
	assert_int_equal(a->p.reserved, 3 * MIB);
	assert_int_equal(mt_nvsmi_outside(&a->p), 0);
	mt_live_free(t);
	mt_summary_free(sum);
	free(sum);
}

static int rank_of(__u32 pid, const void *ctx)
{
	(void)ctx;
	return pid == 8 ? 1 : -1;
}

static char *print(const struct mt_nvsmi *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	mt_nvsmi_print(n, T0, rank_of, NULL, out);
	assert_int_equal(fclose(out), 0);
	return buf;
}

/* the highest settled figure is kept, the latest of equal ones */
static void test_offer(void **state)
{
	struct mt_nvsmi *n = mt_nvsmi_new();
	struct mt_nvsmi_parts low = { .reserved = 64 * MIB },
			      high = { .reserved = 96 * MIB };
	char *buf;

	(void)state;
	assert_non_null(n);
	buf = print(n);
	assert_string_equal(buf, "");
	free(buf);
	high.lib[MT_NL_CUBLAS] = 2 * MIB;
	high.lib[MT_NL_EXTENSION] = 16 * MIB;
	high.pinned_host = 8 * MIB;
	mt_nvsmi_offer(n, 7, 0, 400 * MIB, T0 + 1 * SEC, &low, true, false);
	/* higher, but the trace moved while NVML read: not kept */
	mt_nvsmi_offer(n, 7, 0, 500 * MIB, T0 + 2 * SEC, &low, false, false);
	mt_nvsmi_offer(n, 7, 0, 414 * MIB, T0 + 3 * SEC, &high, true, false);
	mt_nvsmi_offer(n, 7, 0, 414 * MIB, T0 + 4 * SEC, &high, true, false);
	mt_nvsmi_offer(n, 7, 0, 100 * MIB, T0 + 5 * SEC, &low, true, false);
	/* rank 1's context on cuda:0, where it allocated nothing */
	mt_nvsmi_offer(n, 8, 0, 300 * MIB, T0 + 5 * SEC,
		       &(struct mt_nvsmi_parts){ 0 }, true, true);
	buf = print(n);
	assert_string_equal(
		buf,
		"# nvidia_smi pid=7 dev=cuda:0 used=434110464 reserved=100663296 outside=18874368 nccl=0 cublas=2097152 cudnn=0 extensions=16777216 other=0 vmm=0 pinned_host=8388608 unexplained=314572800 at=+4.000s samples=5 settled=1 foreign=0\n"
		"# nvidia_smi pid=8 dev=cuda:0 used=314572800 reserved=0 outside=0 nccl=0 cublas=0 cudnn=0 extensions=0 other=0 vmm=0 pinned_host=0 unexplained=314572800 at=+5.000s samples=1 settled=1 foreign=1 rank=1\n");
	free(buf);
	mt_nvsmi_free(n);
}

static void line(const char *text, bool foreign, void *ctx)
{
	char **lines = ctx;

	lines[foreign] = strdup(text);
	assert_non_null(lines[foreign]);
}

static void test_lines(void **state)
{
	struct mt_nvsmi *n = mt_nvsmi_new();
	struct mt_nvsmi_parts p = { .reserved = 96 * MIB };
	char *lines[2] = { NULL, NULL };

	(void)state;
	assert_non_null(n);
	p.lib[MT_NL_CUBLAS] = 2 * MIB;
	mt_nvsmi_offer(n, 7, 0, 398 * MIB, T0, &p, true, false);
	mt_nvsmi_offer(n, 8, 0, 300 * MIB, T0, &(struct mt_nvsmi_parts){ 0 },
		       true, true);
	mt_nvsmi_lines(n, rank_of, NULL, line, lines);
	assert_string_equal(
		lines[0],
		"pid 7 cuda:0: 398 MiB = reserved 96.0 MiB, cublas 2.00 MiB, unexplained 300 MiB (the context and module images)");
	assert_string_equal(
		lines[1],
		"rank 1 (pid 8) holds 300 MiB on cuda:0, a device it allocated nothing on: a context of its own there (a CUDA call before torch.cuda.set_device)");
	free(lines[0]);
	free(lines[1]);
	mt_nvsmi_free(n);
}

/* the helper's lines: each process of each device, or why none */
static void test_procs_read(void **state)
{
	struct mt_helper *h = calloc(1, sizeof(*h));
	struct mt_gpuproc v[4];
	char why[256];

	(void)state;
	assert_non_null(h);
	h->done = true;
	strcpy(h->out, "at nvmlInit_v2\n"
		       "at nvmlDeviceGetComputeRunningProcesses of cuda:0\n"
		       "proc 0 7 434110464\n"
		       "at nvmlDeviceGetComputeRunningProcesses of cuda:1\n"
		       "err 1 Unknown Error (999)\n");
	assert_int_equal(mt_gpumem_procs_read(h, v, 4, why, sizeof(why)), 1);
	assert_int_equal(v[0].index, 0);
	assert_int_equal(v[0].pid, 7);
	assert_int_equal(v[0].used, 434110464);
	/* the device that could not answer is named */
	assert_string_equal(
		why,
		"NVML: nvmlDeviceGetComputeRunningProcesses of cuda:1: Unknown Error (999)");
	/* killed while asking: no answer, and where it was */
	h->status = 9; /* as waitpid says SIGKILL */
	strcpy(h->out, "at nvmlInit_v2\n");
	assert_int_equal(mt_gpumem_procs_read(h, v, 4, why, sizeof(why)), -1);
	assert_string_equal(
		why, "NVML: nvmlInit_v2 killed by SIGKILL in a helper process");
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_library),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_offer),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_procs_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
