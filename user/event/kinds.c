// SPDX-License-Identifier: GPL-2.0
#include <stddef.h>
#include "event/kinds.h"

/* a runtime or driver call whose result comes back through *arg0 */
#define OUT_ALLOC(ev, l, sp, ds, err)                                       \
	.event = ev, .lib = l, .flags = MT_F_STASH | MT_F_DEREF0,           \
	.retprobe = true, .role = MT_ROLE_ALLOC, .space = sp, .devsrc = ds, \
	.errdomain = err

#define RET_FREE(ev, l, sp, ds, err)                                  \
	.event = ev, .lib = l, .flags = MT_F_STASH, .retprobe = true, \
	.role = MT_ROLE_FREE, .space = sp, .devsrc = ds, .errdomain = err

/* Argument positions follow the C prototypes (x86-64 SysV registers). */
static const struct mt_kind_info kinds[MT_K_MAX] = {
	[MT_K_CUDA_MALLOC] = {
		OUT_ALLOC("cudart:cudaMalloc", MT_LIB_CUDART, MT_SP_CUDART,
			  MT_DS_THREAD, MT_ERR_CUDART),
		.syms = { "cudaMalloc" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1),
	},
	[MT_K_CUDA_FREE] = {
		RET_FREE("cudart:cudaFree", MT_LIB_CUDART, MT_SP_CUDART,
			 MT_DS_THREAD, MT_ERR_CUDART),
		.syms = { "cudaFree" },
		.ptr_arg = MT_A(0),
	},
	[MT_K_CUDA_MALLOC_ASYNC] = {
		OUT_ALLOC("cudart:cudaMallocAsync", MT_LIB_CUDART, MT_SP_CUDART,
			  MT_DS_THREAD, MT_ERR_CUDART),
		.syms = { "cudaMallocAsync", "cudaMallocAsync_ptsz" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1), .stream_arg = MT_A(2),
	},
	[MT_K_CUDA_FREE_ASYNC] = {
		RET_FREE("cudart:cudaFreeAsync", MT_LIB_CUDART, MT_SP_CUDART,
			 MT_DS_THREAD, MT_ERR_CUDART),
		.syms = { "cudaFreeAsync", "cudaFreeAsync_ptsz" },
		.ptr_arg = MT_A(0), .stream_arg = MT_A(1),
	},
	[MT_K_CUDA_MALLOC_MANAGED] = {
		OUT_ALLOC("cudart:cudaMallocManaged", MT_LIB_CUDART,
			  MT_SP_CUDART, MT_DS_THREAD, MT_ERR_CUDART),
		.syms = { "cudaMallocManaged" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1),
	},
	[MT_K_CUDA_MALLOC_HOST] = {
		OUT_ALLOC("cudart:cudaMallocHost", MT_LIB_CUDART, MT_SP_PINNED,
			  MT_DS_HOST, MT_ERR_CUDART),
		.syms = { "cudaMallocHost" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1),
	},
	[MT_K_CUDA_HOST_ALLOC] = {
		OUT_ALLOC("cudart:cudaHostAlloc", MT_LIB_CUDART, MT_SP_PINNED,
			  MT_DS_HOST, MT_ERR_CUDART),
		.syms = { "cudaHostAlloc" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1),
	},
	[MT_K_CUDA_FREE_HOST] = {
		RET_FREE("cudart:cudaFreeHost", MT_LIB_CUDART, MT_SP_PINNED,
			 MT_DS_HOST, MT_ERR_CUDART),
		.syms = { "cudaFreeHost" },
		.ptr_arg = MT_A(0),
	},
	[MT_K_CU_MEM_ALLOC] = {
		OUT_ALLOC("cuda:cuMemAlloc_v2", MT_LIB_CUDA, MT_SP_DRIVER,
			  MT_DS_THREAD, MT_ERR_CU),
		.syms = { "cuMemAlloc_v2" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1),
	},
	[MT_K_CU_MEM_FREE] = {
		RET_FREE("cuda:cuMemFree_v2", MT_LIB_CUDA, MT_SP_DRIVER,
			 MT_DS_THREAD, MT_ERR_CU),
		.syms = { "cuMemFree_v2" },
		.ptr_arg = MT_A(0),
	},
	[MT_K_CU_MEM_CREATE] = {
		.event = "cuda:cuMemCreate", .lib = MT_LIB_CUDA,
		.flags = MT_F_STASH | MT_F_DEREF0 | MT_F_PROPDEV,
		.retprobe = true, .role = MT_ROLE_ALLOC, .space = MT_SP_HANDLE,
		.devsrc = MT_DS_PROP, .errdomain = MT_ERR_CU,
		.syms = { "cuMemCreate" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1), .handle = true,
	},
	[MT_K_CU_MEM_RELEASE] = {
		RET_FREE("cuda:cuMemRelease", MT_LIB_CUDA, MT_SP_HANDLE,
			 MT_DS_NONE, MT_ERR_CU),
		.syms = { "cuMemRelease" },
		.ptr_arg = MT_A(0), .handle = true,
	},
	/* mapping puts memory cuMemCreate made at a VA: no new memory */
	[MT_K_CU_MEM_MAP] = {
		.event = "cuda:cuMemMap", .lib = MT_LIB_CUDA,
		.flags = MT_F_STASH, .retprobe = true, .role = MT_ROLE_ALLOC,
		.space = MT_SP_VAMAP, .devsrc = MT_DS_NONE,
		.errdomain = MT_ERR_CU, 
		.syms = { "cuMemMap" },
		.ptr_arg = MT_A(0), .size_arg = MT_A(1),
	},
	[MT_K_CU_MEM_UNMAP] = {
		.event = "cuda:cuMemUnmap", .lib = MT_LIB_CUDA,
		.flags = MT_F_STASH, .retprobe = true, .role = MT_ROLE_FREE,
		.space = MT_SP_VAMAP, .devsrc = MT_DS_NONE,
		.errdomain = MT_ERR_CU, 
		.syms = { "cuMemUnmap" },
		.ptr_arg = MT_A(0), .size_arg = MT_A(1),
	},
	/* (ptr, alloc_size, total_allocated, total_reserved, Device) */
	[MT_K_C10_REPORT] = {
		.event = "c10:alloc", .free_event = "c10:free",
		.lib = MT_LIB_C10, .role = MT_ROLE_ALLOC, .space = MT_SP_C10,
		.devsrc = MT_DS_C10ARG, 
		.syms = { "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE",
			  "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE" },
		.ptr_arg = MT_A(0), .size_arg = MT_A(1), .allocated_arg = MT_A(2),
		.reserved_arg = MT_A(3), .dev_arg = MT_A(4), .signed_size = true,
	},
	/* (alloc_size, total_allocated, total_reserved, Device) */
	[MT_K_C10_OOM] = {
		.event = "c10:oom", .lib = MT_LIB_C10, .role = MT_ROLE_OOM,
		.space = MT_SP_C10, .devsrc = MT_DS_C10ARG, 
		.syms = { "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE",
			  "_ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE" },
		.size_arg = MT_A(0), .allocated_arg = MT_A(1), .reserved_arg = MT_A(2),
		.dev_arg = MT_A(3),
	},
	/* ProfiledCPUMemoryReporter::New(this, ptr, nbytes) */
	[MT_K_CPU_NEW] = {
		.event = "c10:cpu_alloc", .lib = MT_LIB_C10, .cpu = true,
		.role = MT_ROLE_ALLOC, .space = MT_SP_CPU,
		.devsrc = MT_DS_CPU, 
		.syms = { "_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm" },
		.ptr_arg = MT_A(1), .size_arg = MT_A(2),
	},
	/* ProfiledCPUMemoryReporter::Delete(this, ptr) */
	[MT_K_CPU_DELETE] = {
		.event = "c10:cpu_free", .lib = MT_LIB_C10, .cpu = true,
		.role = MT_ROLE_FREE, .space = MT_SP_CPU, .devsrc = MT_DS_CPU,
		.syms = { "_ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv" },
		.ptr_arg = MT_A(1),
	},
	/* older builds without the reporter: the pointer is the result */
	[MT_K_ALLOC_CPU] = {
		.event = "c10:cpu_alloc", .lib = MT_LIB_C10, .cpu = true,
		.fallback_of = MT_K_CPU_NEW, .flags = MT_F_STASH,
		.retprobe = true, .role = MT_ROLE_ALLOC, .space = MT_SP_CPU,
		.devsrc = MT_DS_CPU, 
		.syms = { "_ZN3c109alloc_cpuEm" },
		.ptr_arg = MT_ARG_RET, .size_arg = MT_A(0),
	},
	[MT_K_FREE_CPU] = {
		.event = "c10:cpu_free", .lib = MT_LIB_C10, .cpu = true,
		.fallback_of = MT_K_CPU_DELETE, .role = MT_ROLE_FREE,
		.space = MT_SP_CPU, .devsrc = MT_DS_CPU, 
		.syms = { "_ZN3c108free_cpuEPv" },
		.ptr_arg = MT_A(0),
	},
	[MT_K_SET_DEVICE] = {
		.event = NULL, .lib = MT_LIB_CUDART, .flags = MT_F_SETDEV,
		.syms = { "cudaSetDevice" },
	},
	/* forward: which autograd Node a tensor's history now points to */
	[MT_K_GRAD_EDGE] = {
		.event = NULL, .lib = MT_LIB_TORCH_CPU, .flags = MT_F_EDGE,
		.syms = { "_ZN5torch8autograd4impl17set_gradient_edgeERKN2at6TensorENS0_4EdgeE" },
	},
	/* backward: Engine::evaluate_function(graph_task, Node*, ...) */
	[MT_K_EVAL_FN] = {
		.event = NULL, .lib = MT_LIB_TORCH_CPU, .flags = MT_F_SETNODE,
		.syms = { "_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE" },
	},
	/* ncclMemAlloc(void **ptr, size_t size): NCCL's own buffers */
	[MT_K_NCCL_MEM_ALLOC] = {
		OUT_ALLOC("nccl:ncclMemAlloc", MT_LIB_NCCL, MT_SP_NCCL,
			  MT_DS_THREAD, MT_ERR_NCCL),
		.syms = { "ncclMemAlloc" },
		.ptr_arg = MT_ARG_OUT, .size_arg = MT_A(1),
	},
	[MT_K_NCCL_MEM_FREE] = {
		RET_FREE("nccl:ncclMemFree", MT_LIB_NCCL, MT_SP_NCCL,
			 MT_DS_THREAD, MT_ERR_NCCL),
		.syms = { "ncclMemFree" },
		.ptr_arg = MT_A(0),
	},
	/* _PyErr_SetObject(tstate, type, value): raise, and C code's PyErr_* */
	[MT_K_PY_RAISE] = {
		.event = "python:raise", .lib = MT_LIB_PYTHON, .flags = MT_F_EXC,
		.syms = { "_PyErr_SetObject" },
	},
	/* the dynamic loader's debugger hook: a library came or went */
	[MT_K_LOADER] = {
		.event = NULL, .lib = MT_LIB_LDSO, 
		.syms = { "_dl_debug_state" },
	},
};

const struct mt_kind_info *mt_kind(unsigned int kind)
{
	if (kind == MT_K_NONE || kind >= MT_K_MAX)
		return NULL;
	return &kinds[kind];
}

const char *mt_lib_name(enum mt_lib lib)
{
	static const char *const names[MT_LIB_MAX] = {
		[MT_LIB_CUDART] = "libcudart",
		[MT_LIB_CUDA] = "libcuda",
		[MT_LIB_C10] = "libc10",
		[MT_LIB_TORCH_CPU] = "libtorch_cpu",
		[MT_LIB_LDSO] = "ld.so",
		[MT_LIB_PYTHON] = "libpython",
		[MT_LIB_NCCL] = "libnccl",
	};

	return lib < MT_LIB_MAX ? names[lib] : "?";
}

const char *mt_space_name(enum mt_space sp)
{
	static const char *const names[MT_SP_MAX] = {
		[MT_SP_NONE] = "-",	   [MT_SP_CUDART] = "cudart",
		[MT_SP_PINNED] = "pinned", [MT_SP_DRIVER] = "driver",
		[MT_SP_HANDLE] = "vmm",	   [MT_SP_VAMAP] = "vmm_map",
		[MT_SP_C10] = "c10",	   [MT_SP_CPU] = "cpu",
		[MT_SP_NCCL] = "nccl",
	};

	return sp < MT_SP_MAX ? names[sp] : "?";
}

static __u64 arg(const struct mt_event *ev, int i)
{
	if (i >= MT_A(0) && i <= MT_A(MT_NARGS - 1))
		return ev->args[i - 1];
	if (i == MT_ARG_OUT)
		return ev->out;
	return (__u64)ev->ret;
}

static bool arg_known(const struct mt_event *ev, int i)
{
	if (i == MT_ARG_NONE)
		return false;
	if (i == MT_ARG_OUT)
		return ev->flags & MT_EV_OUT;
	if (i == MT_ARG_RET)
		return ev->flags & MT_EV_RET;
	return true;
}

static void decode_dev(const struct mt_event *ev, const struct mt_kind_info *ki,
		       int default_dev, struct mt_call *r)
{
	__u64 d;

	r->dev_index = -1;
	switch (ki->devsrc) {
	case MT_DS_NONE:
		r->dev_type = MT_DT_NONE;
		break;
	case MT_DS_HOST:
		r->dev_type = MT_DT_HOST;
		break;
	case MT_DS_CPU:
		r->dev_type = MT_DT_CPU;
		break;
	case MT_DS_THREAD:
		r->dev_type = MT_DT_CUDA;
		r->dev_index =
			ev->dev == MT_DEV_UNKNOWN ? default_dev : ev->dev;
		break;
	case MT_DS_PROP:
		r->dev_type = MT_DT_CUDA;
		r->dev_index = ev->dev;
		break;
	case MT_DS_C10ARG:
		/* c10::Device in the low bytes: DeviceType, then index */
		d = arg(ev, ki->dev_arg);
		r->dev_type = (d & 0xff) == 1 ? MT_DT_CUDA : MT_DT_CPU;
		r->dev_index = (signed char)((d >> 8) & 0xff);
		if (r->dev_type == MT_DT_CPU)
			r->dev_index = -1;
		break;
	}
}

bool mt_decode(const struct mt_event *ev, int default_dev, struct mt_call *r)
{
	const struct mt_kind_info *ki = mt_kind(ev->kind);
	__s64 size;

	if (!ki || !ki->event)
		return false;
	/* each field set once: zeroing the struct first costs more */
	_Static_assert(sizeof(*r) == 128,
		       "mt_decode() sets each field of struct mt_call");
	r->ev = ev;
	r->ki = ki;
	r->event = ki->event;
	r->role = ki->role;
	r->has_ptr = arg_known(ev, ki->ptr_arg);
	r->ptr = r->has_ptr ? arg(ev, ki->ptr_arg) : 0;
	r->size_state = MT_SIZE_NONE;
	r->size = 0;
	if (ki->size_arg != MT_ARG_NONE) {
		r->size_state = MT_SIZE_KNOWN;
		r->size = arg(ev, ki->size_arg);
		size = (__s64)r->size;
		if (ki->signed_size && size < 0) {
			r->role = MT_ROLE_FREE;
			r->event = ki->free_event;
			r->size = (__u64)-size;
		}
	} else if (r->role == MT_ROLE_FREE) {
		r->size_state = MT_SIZE_UNKNOWN; /* until the live table says */
	}
	r->has_stream = ki->stream_arg != MT_ARG_NONE;
	r->stream = r->has_stream ? arg(ev, ki->stream_arg) : 0;
	r->has_handle = ev->kind == MT_K_CU_MEM_MAP;
	r->handle = r->has_handle ? ev->args[3] : 0;
	r->has_totals = ki->allocated_arg != MT_ARG_NONE;
	r->allocated = r->has_totals ? arg(ev, ki->allocated_arg) : 0;
	r->reserved = r->has_totals ? arg(ev, ki->reserved_arg) : 0;
	r->has_ret = ki->errdomain != MT_ERR_NONE && (ev->flags & MT_EV_RET);
	/* cudaError_t / CUresult are 32-bit */
	r->ret = r->has_ret ? (int)ev->ret : 0;
	r->failed = r->ret != 0;
	/* a failed allocation returns no pointer worth showing */
	if (r->failed &&
	    (ki->ptr_arg == MT_ARG_OUT || ki->ptr_arg == MT_ARG_RET))
		r->has_ptr = false;
	decode_dev(ev, ki, default_dev, r);
	return true;
}
