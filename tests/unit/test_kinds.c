// SPDX-License-Identifier: GPL-2.0
/*
 * user/event/kinds.c: what each probed call's raw event means; the probe
 * table's PyTorch symbols, found in each PyTorch this machine has.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "event/kinds.h"
#include "proc/elfsym.h"
#include "roots.h"

static struct mt_event event(unsigned int kind)
{
	struct mt_event ev = {
		.ts = 1000,
		.pid = 10,
		.tid = 11,
		.kind = (__u16)kind,
		.dev = 0,
		.comm = "python3",
	};

	return ev;
}

static void decode(const struct mt_event *ev, int default_dev,
		   struct mt_call *r)
{
	/* garbage in: every field that matters must be written */
	memset(r, 0xa5, sizeof(*r));
	assert_true(mt_decode(ev, default_dev, r));
	assert_ptr_equal(r->ev, ev);
	assert_ptr_equal(r->ki, mt_kind(ev->kind));
}

static void test_cuda_malloc(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_MALLOC);
	struct mt_call r;

	ev.args[0] = 0x7ffd00001000; /* &devPtr: never the result */
	ev.args[1] = 1048576;
	ev.out = 0x7f2a40000000;
	ev.ret = 0;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	ev.dev = 3;
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "cudart:cudaMalloc");
	assert_int_equal(r.role, MT_ROLE_ALLOC);
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x7f2a40000000);
	assert_int_equal(r.size_state, MT_SIZE_KNOWN);
	assert_int_equal(r.size, 1048576);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, 3);
	assert_true(r.has_ret);
	assert_int_equal(r.ret, 0);
	assert_false(r.failed);
	assert_false(r.has_totals);
	assert_false(r.has_stream);
	assert_false(r.has_handle);

	/* the BPF side could not read *devPtr: no pointer, whatever out holds */
	ev.flags = MT_EV_RET | MT_EV_OUT_FAULT;
	decode(&ev, 0, &r);
	assert_false(r.has_ptr);
	assert_int_equal(r.size, 1048576);
	assert_false(r.failed);

	/* no return probe fired: neither pointer nor result */
	ev.flags = 0;
	decode(&ev, 0, &r);
	assert_false(r.has_ptr);
	assert_false(r.has_ret);
	assert_false(r.failed);
}

static void test_failed_alloc(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_MALLOC);
	struct mt_call r;

	ev.args[1] = 1ULL << 40;
	ev.out = 0x7f2a40000000; /* stale: the call did not write it */
	ev.ret = 2; /* cudaErrorMemoryAllocation */
	ev.flags = MT_EV_RET | MT_EV_OUT;
	decode(&ev, 0, &r);
	assert_true(r.has_ret);
	assert_int_equal(r.ret, 2);
	assert_true(r.failed);
	assert_false(r.has_ptr);
	assert_int_equal(r.size, 1ULL << 40);
	assert_int_equal(r.role, MT_ROLE_ALLOC);

	/* only the low 32 bits of the return register are the result */
	ev.ret = (__s64)0xdeadbeef00000000LL;
	decode(&ev, 0, &r);
	assert_int_equal(r.ret, 0);
	assert_false(r.failed);
	assert_true(r.has_ptr);

	/* a failed free keeps its pointer: it names what was not freed */
	ev = event(MT_K_CUDA_FREE);
	ev.args[0] = 0x1234;
	ev.ret = 1;
	ev.flags = MT_EV_RET;
	decode(&ev, 0, &r);
	assert_true(r.failed);
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x1234);
}

static void test_thread_device(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);
	struct mt_call r;

	ev.args[0] = 0x1000;
	ev.flags = MT_EV_RET;
	ev.dev = MT_DEV_UNKNOWN;
	/* traced from its start: a thread that never set a device has 0 */
	decode(&ev, 0, &r);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, 0);
	/* attached later: not known */
	decode(&ev, -1, &r);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, -1);
	/* a known device wins over the default */
	ev.dev = 5;
	decode(&ev, 0, &r);
	assert_int_equal(r.dev_index, 5);
	decode(&ev, -1, &r);
	assert_int_equal(r.dev_index, 5);
}

static void test_free_size_unknown(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE);
	struct mt_call r;

	ev.args[0] = 0x7f2a40000000;
	ev.args[1] = 4096; /* not an argument of cudaFree */
	ev.flags = MT_EV_RET;
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "cudart:cudaFree");
	assert_int_equal(r.role, MT_ROLE_FREE);
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x7f2a40000000);
	assert_int_equal(r.size_state, MT_SIZE_UNKNOWN);
}

static void test_streams_and_handles(void **state)
{
	struct mt_event ev = event(MT_K_CUDA_FREE_ASYNC);
	struct mt_call r;

	ev.args[0] = 0x7f2a40000000;
	ev.args[1] = 0x55d0c0de1230;
	ev.flags = MT_EV_RET;
	decode(&ev, 0, &r);
	assert_true(r.has_stream);
	assert_int_equal(r.stream, 0x55d0c0de1230);
	assert_int_equal(r.ptr, 0x7f2a40000000);

	ev = event(MT_K_CUDA_MALLOC_ASYNC);
	ev.args[1] = 512;
	ev.args[2] = 0x55d0c0de1230;
	ev.out = 0x7f2a40000200;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	decode(&ev, 0, &r);
	assert_true(r.has_stream);
	assert_int_equal(r.stream, 0x55d0c0de1230);
	assert_int_equal(r.ptr, 0x7f2a40000200);
	assert_int_equal(r.size, 512);

	/* cuMemCreate: the key is the handle; the device is prop's */
	ev = event(MT_K_CU_MEM_CREATE);
	ev.args[1] = 2097152;
	ev.out = 0x55aa01;
	ev.dev = 2;
	ev.flags = MT_EV_RET | MT_EV_OUT;
	decode(&ev, -1, &r);
	assert_true(r.ki->handle);
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x55aa01);
	assert_int_equal(r.size, 2097152);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, 2);
	assert_false(r.has_handle);

	/* cuMemMap(ptr, size, offset, handle, flags) */
	ev = event(MT_K_CU_MEM_MAP);
	ev.args[0] = 0x7f1000000000;
	ev.args[1] = 2097152;
	ev.args[3] = 0x55aa01;
	ev.flags = MT_EV_RET;
	decode(&ev, 0, &r);
	assert_int_equal(r.ptr, 0x7f1000000000);
	assert_int_equal(r.size, 2097152);
	assert_true(r.has_handle);
	assert_int_equal(r.handle, 0x55aa01);
	assert_int_equal(r.dev_type, MT_DT_NONE);
}

/* c10::Device by value: DeviceType in the low byte, then the index */
#define C10_DEV(type, index) ((__u64)(__u8)(type) | (__u64)(__u8)(index) << 8)

static void test_c10_report(void **state)
{
	struct mt_event ev = event(MT_K_C10_REPORT);
	struct mt_call r;

	ev.args[0] = 0x7f0000200000;
	ev.args[1] = 2097152;
	ev.args[2] = 4194304;
	ev.args[3] = 20971520;
	ev.args[4] = C10_DEV(1, 1) | 0xffff0000ULL; /* junk above */
	ev.dev = 7; /* the thread's device does not matter */
	decode(&ev, -1, &r);
	assert_string_equal(r.event, "c10:alloc");
	assert_int_equal(r.role, MT_ROLE_ALLOC);
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x7f0000200000);
	assert_int_equal(r.size_state, MT_SIZE_KNOWN);
	assert_int_equal(r.size, 2097152);
	assert_true(r.has_totals);
	assert_int_equal(r.allocated, 4194304);
	assert_int_equal(r.reserved, 20971520);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, 1);
	assert_false(r.has_ret);
	assert_false(r.failed);

	/* a negative size is a free of that many bytes */
	ev.args[1] = (__u64)-2097152LL;
	ev.args[2] = 2097152;
	decode(&ev, -1, &r);
	assert_string_equal(r.event, "c10:free");
	assert_int_equal(r.role, MT_ROLE_FREE);
	assert_true(r.has_ptr);
	assert_int_equal(r.size_state, MT_SIZE_KNOWN);
	assert_int_equal(r.size, 2097152);
	assert_int_equal(r.allocated, 2097152);
	/* the kind itself still says alloc */
	assert_string_equal(r.ki->event, "c10:alloc");

	/* c10::Device{CPU, -1} */
	ev.args[1] = 64;
	ev.args[4] = C10_DEV(0, -1);
	decode(&ev, 0, &r);
	assert_int_equal(r.dev_type, MT_DT_CPU);
	assert_int_equal(r.dev_index, -1);
	/* c10::Device{CPU, 0}: a CPU has no index to show */
	ev.args[4] = C10_DEV(0, 0);
	decode(&ev, 0, &r);
	assert_int_equal(r.dev_type, MT_DT_CPU);
	assert_int_equal(r.dev_index, -1);

	/* CUDA device 0, index byte 0 */
	ev.args[4] = C10_DEV(1, 0);
	decode(&ev, -1, &r);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, 0);
}

static void test_c10_oom(void **state)
{
	struct mt_event ev = event(MT_K_C10_OOM);
	struct mt_call r;

	ev.args[0] = 1ULL << 34;
	ev.args[1] = 1000;
	ev.args[2] = 2000;
	ev.args[3] = C10_DEV(1, 2);
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "c10:oom");
	assert_int_equal(r.role, MT_ROLE_OOM);
	assert_false(r.has_ptr);
	assert_int_equal(r.size, 1ULL << 34);
	assert_int_equal(r.allocated, 1000);
	assert_int_equal(r.reserved, 2000);
	assert_int_equal(r.dev_type, MT_DT_CUDA);
	assert_int_equal(r.dev_index, 2);
}

static void test_cpu_new_delete(void **state)
{
	struct mt_event ev = event(MT_K_CPU_NEW);
	struct mt_call r;

	/* ProfiledCPUMemoryReporter::New(this, ptr, nbytes) */
	ev.args[0] = 0x55d000001000;
	ev.args[1] = 0x7f4000000040;
	ev.args[2] = 800;
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "c10:cpu_alloc");
	assert_int_equal(r.role, MT_ROLE_ALLOC);
	assert_int_equal(r.ptr, 0x7f4000000040);
	assert_int_equal(r.size_state, MT_SIZE_KNOWN);
	assert_int_equal(r.size, 800);
	assert_int_equal(r.dev_type, MT_DT_CPU);
	assert_int_equal(r.dev_index, -1);
	assert_true(r.ki->cpu);

	/* ProfiledCPUMemoryReporter::Delete(this, ptr) */
	ev = event(MT_K_CPU_DELETE);
	ev.args[0] = 0x55d000001000;
	ev.args[1] = 0x7f4000000040;
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "c10:cpu_free");
	assert_int_equal(r.role, MT_ROLE_FREE);
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x7f4000000040);
	assert_int_equal(r.size_state, MT_SIZE_UNKNOWN);
	assert_int_equal(r.dev_type, MT_DT_CPU);
}

static void test_alloc_cpu_fallback(void **state)
{
	struct mt_event ev = event(MT_K_ALLOC_CPU);
	struct mt_call r;

	/* void *alloc_cpu(size_t nbytes): the pointer is the result */
	ev.args[0] = 800;
	ev.ret = 0x7f4000000080;
	ev.flags = MT_EV_RET;
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "c10:cpu_alloc");
	assert_true(r.has_ptr);
	assert_int_equal(r.ptr, 0x7f4000000080);
	assert_int_equal(r.size, 800);
	assert_int_equal(r.dev_type, MT_DT_CPU);
	/* a pointer, not an error code */
	assert_false(r.has_ret);
	assert_false(r.failed);
	assert_int_equal(r.ki->fallback_of, MT_K_CPU_NEW);

	/* without the return probe there is no pointer */
	ev.flags = 0;
	decode(&ev, 0, &r);
	assert_false(r.has_ptr);
	assert_int_equal(r.size, 800);

	ev = event(MT_K_FREE_CPU);
	ev.args[0] = 0x7f4000000080;
	decode(&ev, 0, &r);
	assert_string_equal(r.event, "c10:cpu_free");
	assert_int_equal(r.ptr, 0x7f4000000080);
	assert_int_equal(r.ki->fallback_of, MT_K_CPU_DELETE);
}

static void test_not_records(void **state)
{
	static const unsigned int kinds[] = {
		MT_K_NONE, MT_K_SET_DEVICE, MT_K_LOADER, MT_K_MAX, 0xffff,
	};
	struct mt_call r;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct mt_event ev = event(kinds[i]);

		ev.flags = MT_EV_RET | MT_EV_OUT;
		if (mt_decode(&ev, 0, &r))
			fail_msg("kind %u decoded as a record", kinds[i]);
	}
	assert_null(mt_kind(MT_K_NONE));
	assert_null(mt_kind(MT_K_MAX));
	assert_null(mt_kind(0xffff));
	assert_non_null(mt_kind(MT_K_SET_DEVICE));
	assert_true(mt_kind(MT_K_SET_DEVICE)->flags & MT_F_SETDEV);
	assert_non_null(mt_kind(MT_K_LOADER));
	assert_int_equal(mt_kind(MT_K_LOADER)->lib, MT_LIB_LDSO);
}

static bool arg_valid(int a)
{
	return a == MT_ARG_NONE || a == MT_ARG_OUT || a == MT_ARG_RET ||
	       (a >= MT_A(0) && a <= MT_A(MT_NARGS - 1));
}

/* the event's layer is its library's: "cudart:" is libcudart's */
static const char *layer_of(enum mt_lib lib)
{
	switch (lib) {
	case MT_LIB_CUDART:
		return "cudart:";
	case MT_LIB_CUDA:
		return "cuda:";
	case MT_LIB_C10:
		return "c10:";
	case MT_LIB_PYTHON:
		return "python:";
	case MT_LIB_NCCL:
		return "nccl:";
	default:
		return NULL;
	}
}

/* the table is consistent with what the BPF side and the decoder assume */
static void test_table(void **state)
{
	for (unsigned int k = MT_K_NONE + 1; k < MT_K_MAX; k++) {
		const struct mt_kind_info *ki = mt_kind(k);
		const char *layer;

		if (!ki)
			fail_msg("kind %u has no entry", k);
		if (!ki->syms[0] || !ki->syms[0][0])
			fail_msg("kind %u has no symbol", k);
		if (ki->lib >= MT_LIB_MAX)
			fail_msg("kind %u has no library", k);
		assert_string_not_equal(mt_lib_name(ki->lib), "?");
		if (ki->retprobe && !(ki->flags & MT_F_STASH))
			fail_msg("kind %u (%s): a return probe without "
				 "MT_F_STASH has no arguments",
				 k, ki->syms[0]);
		if (!ki->event)
			continue;

		layer = layer_of(ki->lib);
		if (!layer || strncmp(ki->event, layer, strlen(layer)))
			fail_msg("%s is attached in %s", ki->event,
				 mt_lib_name(ki->lib));
		/* an exception raised is no memory event */
		if (ki->lib == MT_LIB_PYTHON) {
			assert_int_equal(ki->role, MT_ROLE_NONE);
			continue;
		}
		assert_true(ki->role != MT_ROLE_NONE);
		assert_true(ki->space > MT_SP_NONE && ki->space < MT_SP_MAX);
		assert_true(arg_valid(ki->ptr_arg));
		assert_true(arg_valid(ki->size_arg));
		assert_true(arg_valid(ki->stream_arg));
		assert_true(arg_valid(ki->dev_arg));
		assert_true(arg_valid(ki->allocated_arg));
		assert_true(arg_valid(ki->reserved_arg));
		/* what only the return probe knows needs one */
		if (ki->ptr_arg == MT_ARG_OUT &&
		    (!ki->retprobe || !(ki->flags & MT_F_DEREF0)))
			fail_msg("%s: *arg0 is never read", ki->event);
		if ((ki->flags & MT_F_DEREF0) && ki->ptr_arg != MT_ARG_OUT)
			fail_msg("%s: *arg0 read for nothing", ki->event);
		if (ki->ptr_arg == MT_ARG_RET && !ki->retprobe)
			fail_msg("%s: the result is never read", ki->event);
		if (ki->errdomain != MT_ERR_NONE && !ki->retprobe)
			fail_msg("%s: the error is never read", ki->event);
		/* a c10::Device comes from an argument */
		if ((ki->devsrc == MT_DS_C10ARG) !=
		    (ki->dev_arg != MT_ARG_NONE))
			fail_msg("%s: device argument", ki->event);
		if ((ki->devsrc == MT_DS_PROP) != !!(ki->flags & MT_F_PROPDEV))
			fail_msg("%s: device from prop", ki->event);
		if ((ki->allocated_arg != MT_ARG_NONE) !=
		    (ki->reserved_arg != MT_ARG_NONE))
			fail_msg("%s: half the totals", ki->event);
		if (ki->signed_size && !ki->free_event)
			fail_msg("%s: negative sizes have no name", ki->event);
		/* every allocation and free is keyed by a pointer */
		if (ki->role != MT_ROLE_OOM && ki->ptr_arg == MT_ARG_NONE)
			fail_msg("%s: no pointer", ki->event);
		if (ki->fallback_of) {
			const struct mt_kind_info *of =
				mt_kind(ki->fallback_of);

			assert_non_null(of);
			assert_int_equal(of->lib, ki->lib);
			assert_string_equal(of->event, ki->event);
			assert_int_equal(of->space, ki->space);
			assert_int_equal(of->fallback_of, MT_K_NONE);
		}
	}
}

static void test_names(void **state)
{
	assert_string_equal(mt_lib_name(MT_LIB_CUDART), "libcudart");
	assert_string_equal(mt_lib_name(MT_LIB_CUDA), "libcuda");
	assert_string_equal(mt_lib_name(MT_LIB_C10), "libc10");
	assert_string_equal(mt_lib_name(MT_LIB_LDSO), "ld.so");
	assert_string_equal(mt_lib_name(MT_LIB_MAX), "?");
	for (int sp = MT_SP_NONE; sp < MT_SP_MAX; sp++) {
		const char *name = mt_space_name((enum mt_space)sp);

		assert_non_null(name);
		assert_string_not_equal(name, "?");
		for (int o = MT_SP_NONE; o < sp; o++)
			assert_string_not_equal(
				name, mt_space_name((enum mt_space)o));
	}
	assert_string_equal(mt_space_name(MT_SP_MAX), "?");
}

/*
 * Every PyTorch kind's symbols are found in lib (a libc10 or libtorch_cpu
 * of enum mt_lib which), but where the table says that version lacks
 * them: a kind with none would silently trace nothing.
 * Returns how many kinds were checked.
 */
static int check_torch_lib(const char *path, enum mt_lib which)
{
	const char *names[MT_MAX_SYMS];
	struct mt_sym syms[MT_MAX_SYMS];
	char err[256];
	int kinds = 0;

	for (unsigned int k = MT_K_NONE + 1; k < MT_K_MAX; k++) {
		const struct mt_kind_info *ki = mt_kind(k);
		size_t n = 0;
		bool found = false;

		if (ki->lib != which)
			continue;
		while (n < MT_MAX_SYMS && ki->syms[n]) {
			names[n] = ki->syms[n];
			n++;
		}
		if (mt_elf_resolve(path, names, n, syms, err, sizeof(err)))
			fail_msg("%s", err);
		for (size_t i = 0; i < n; i++)
			found |= syms[i].vaddr != 0;
		if (!found && !(ki->absent_in && strstr(path, ki->absent_in)))
			fail_msg("%s: no symbol of kind %u (%s)", path, k,
				 ki->syms[0]);
		kinds++;
	}
	return kinds;
}

/*
 * Debian's torch 1.13 on this host and 2.6 and 2.14 in the roots that
 * scripts/debian-root.sh builds (MT_ROOTS), each where present.
 */
static void test_torch_symbols(void **state)
{
	static const char *const dirs[] = {
		"/usr/lib/x86_64-linux-gnu",
		"%s/trixie-*/usr/lib/x86_64-linux-gnu",
		"%s/sid-*/usr/lib/x86_64-linux-gnu",
	};
	const char *roots = roots_dir();
	int libs = 0;

	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		static const struct {
			const char *glob;
			enum mt_lib lib;
		} files[] = {
			{ "libc10.so.*.*.*", MT_LIB_C10 },
			{ "libtorch_cpu.so.*.*.*", MT_LIB_TORCH_CPU },
		};

		for (size_t f = 0; f < 2; f++) {
			char dir[512], pat[600];
			glob_t g;

			snprintf(dir, sizeof(dir), dirs[d], roots);
			snprintf(pat, sizeof(pat), "%s/%s", dir, files[f].glob);
			if (glob(pat, 0, NULL, &g))
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++) {
				int n = check_torch_lib(g.gl_pathv[i],
							files[f].lib);

				print_message("%s: %d kinds found\n",
					      g.gl_pathv[i], n);
				assert_true(n > 0);
				libs++;
			}
			globfree(&g);
		}
	}
	roots_skip_if_none(libs);
}

/*
 * --sample-bytes: the BPF sampler reads an allocation's size from the
 * argument its cookie names (bpf/memtrace.bpf.c walk_wanted() reads the
 * first MT_SAMPLE_SIZE_ARGS), knows frees, and leaves the other calls
 * alone
 */
static void test_sample_flags(void **state)
{
	for (unsigned int k = 1; k < MT_K_MAX; k++) {
		const struct mt_kind_info *ki = mt_kind(k);
		unsigned int f = mt_kind_sample_flags(ki);

		if (!ki->event)
			continue;
		if (ki->role == MT_ROLE_ALLOC) {
			assert_int_not_equal(ki->size_arg, MT_ARG_NONE);
			assert_int_equal(MT_COOKIE_SIZE_ARG(f), ki->size_arg);
			assert_true(MT_COOKIE_SIZE_ARG(f) <=
				    MT_SAMPLE_SIZE_ARGS);
			assert_int_equal(!!(f & MT_F_SIZE_SIGNED),
					 ki->signed_size);
			assert_false(f & MT_F_FREE);
		} else if (ki->role == MT_ROLE_FREE) {
			assert_int_equal(f, MT_F_FREE);
		} else {
			assert_int_equal(f, 0);
		}
		/* clear of the kind and the other flags */
		assert_int_equal(f & (0xffff | ki->flags), 0);
	}
	/* c10's reporter: arg 1, signed; CPU_NEW: arg 2 */
	assert_int_equal(mt_kind_sample_flags(mt_kind(MT_K_C10_REPORT)),
			 MT_F_SIZE_ARG(1) | MT_F_SIZE_SIGNED);
	assert_int_equal(mt_kind_sample_flags(mt_kind(MT_K_CPU_NEW)),
			 MT_F_SIZE_ARG(2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cuda_malloc),
		cmocka_unit_test(test_failed_alloc),
		cmocka_unit_test(test_thread_device),
		cmocka_unit_test(test_free_size_unknown),
		cmocka_unit_test(test_streams_and_handles),
		cmocka_unit_test(test_c10_report),
		cmocka_unit_test(test_c10_oom),
		cmocka_unit_test(test_cpu_new_delete),
		cmocka_unit_test(test_alloc_cpu_fallback),
		cmocka_unit_test(test_not_records),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_torch_symbols),
		cmocka_unit_test(test_sample_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
