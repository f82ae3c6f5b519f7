/* SPDX-License-Identifier: GPL-2.0 */
/* What each probed call means: its library, symbols, arguments and role. */
#ifndef __KINDS_H
#define __KINDS_H

#include <stdbool.h>
#include <linux/types.h>
#include "memtrace.h"

/* the libraries we attach to, found by name in /proc/PID/maps */
enum mt_lib {
	MT_LIB_CUDART,
	MT_LIB_CUDA,
	MT_LIB_C10,
	MT_LIB_TORCH_CPU,
	MT_LIB_LDSO,
	MT_LIB_PYTHON, /* libpython, or a python executable linking it in */
	MT_LIB_NCCL,
	MT_LIB_MAX,
};

enum mt_role {
	MT_ROLE_NONE,
	MT_ROLE_ALLOC,
	MT_ROLE_FREE,
	MT_ROLE_OOM,
};

/* separate address spaces of the live-allocation table */
enum mt_space {
	MT_SP_NONE,
	MT_SP_CUDART, /* device memory from the runtime */
	MT_SP_PINNED, /* page-locked host memory from the runtime */
	MT_SP_DRIVER, /* cuMemAlloc device memory */
	MT_SP_HANDLE, /* cuMemCreate physical allocations, by handle */
	MT_SP_VAMAP, /* cuMemMap ranges */
	MT_SP_C10, /* caching-allocator blocks */
	MT_SP_CPU, /* CPU tensor storage */
	MT_SP_NCCL, /* ncclMemAlloc device memory */
	MT_SP_MAX,
};

enum mt_devsrc {
	MT_DS_NONE,
	MT_DS_THREAD, /* thread's current device (cudaSetDevice) */
	MT_DS_HOST,
	MT_DS_CPU,
	MT_DS_C10ARG, /* c10::Device passed by value */
	MT_DS_PROP, /* CUmemAllocationProp.location.id */
};

enum mt_errdomain {
	MT_ERR_NONE,
	MT_ERR_CUDART,
	MT_ERR_CU,
	MT_ERR_NCCL, /* ncclResult_t */
};

/* where a value comes from; 0 (the default) means the call has none */
#define MT_ARG_NONE 0
#define MT_A(i) ((i) + 1) /* the i-th argument, from 0 */
#define MT_ARG_OUT (-2) /* the value the call wrote to *arg0 */
#define MT_ARG_RET (-3) /* the return value */
#define MT_MAX_SYMS 3

struct mt_kind_info {
	const char *event; /* <layer>:<call> */
	const char *free_event; /* c10 report: the name when size < 0 */
	enum mt_lib lib;
	/* every one found is attached; "{int64}" as in proc/elfsym.h */
	const char *syms[MT_MAX_SYMS];
	/*
	 * when no name of syms is found: the function this exported wrapper
	 * jumps to, read from its code (proc/elfsym.h) in builds whose symbol
	 * tables no longer name it
	 */
	const char *wrapper;
	enum mt_kind fallback_of; /* attach only if that kind found none */
	/* the library version (".so.1.13") that lacks every name of syms */
	const char *absent_in;
	__u64 flags; /* MT_F_* of the cookie */
	bool retprobe;
	bool cpu; /* a CPU-side kind (--no-cpu) */
	enum mt_role role;
	enum mt_space space;
	enum mt_devsrc devsrc;
	enum mt_errdomain errdomain;
	signed char ptr_arg, size_arg, stream_arg, dev_arg;
	signed char allocated_arg, reserved_arg; /* running totals */
	bool handle; /* the key is a handle, printed handle= */
	bool signed_size; /* size < 0 means a free of -size */
};

const struct mt_kind_info *mt_kind(unsigned int kind);
const char *mt_lib_name(enum mt_lib lib);

/*
 * Whether a call's caller (a library's file name, NULL if not known) is
 * PyTorch's caching allocator: libc10_cuda, where it takes its segments
 * from the runtime or, with a runtime linked in, the driver. Device
 * memory any other library takes is not PyTorch's reserved memory. An
 * unknown caller counts as the allocator's.
 */
bool mt_caller_is_allocator(const char *caller);

/* the arguments the BPF sampler can read a size from: the first three */
#define MT_SAMPLE_SIZE_ARGS 3

/*
 * The cookie bits --sample-bytes reads (MT_F_SIZE_ARG, MT_F_SIZE_SIGNED,
 * MT_F_FREE) for a kind: where an allocation's size is, or that it frees;
 * 0 for the other calls, whose stacks are always walked.
 */
unsigned int mt_kind_sample_flags(const struct mt_kind_info *ki);
const char *mt_space_name(enum mt_space sp);

/*
 * Whether sp holds PyTorch's tensor memory: the caching allocator's
 * blocks, or CPU tensor storage (not the segments or pages under them)
 */
bool mt_space_is_tensor(enum mt_space sp);

enum mt_size_state {
	MT_SIZE_NONE, /* the call has no size */
	MT_SIZE_KNOWN,
	MT_SIZE_UNKNOWN, /* a free of an allocation made before the attach */
};

enum mt_dev_type {
	MT_DT_NONE,
	MT_DT_CUDA,
	MT_DT_HOST,
	MT_DT_CPU,
};

/* an event with its arguments given their meaning */
struct mt_call {
	const struct mt_event *ev;
	const struct mt_kind_info *ki;
	const char *event;
	enum mt_role role;
	bool has_ptr;
	__u64 ptr;
	enum mt_size_state size_state;
	__u64 size;
	enum mt_dev_type dev_type;
	int dev_index; /* -1: not known */
	bool has_ret;
	int ret;
	bool failed;
	bool has_totals;
	__u64 allocated, reserved;
	bool has_stream;
	__u64 stream;
	bool has_handle;
	__u64 handle; /* cuMemMap's handle argument */
};

/*
 * Decode a raw event. default_dev is the device assumed for a thread that
 * never called cudaSetDevice while traced (0 when traced from its start,
 * -1 otherwise). Returns false for events that are not records.
 */
bool mt_decode(const struct mt_event *ev, int default_dev, struct mt_call *r);

#endif /* __KINDS_H */
