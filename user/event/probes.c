// SPDX-License-Identifier: GPL-2.0
/*
 * The probes: for each kind of call, its library, symbols, arguments and
 * role (struct mt_kind_info), and the names of libraries and spaces.
 */
#include <stddef.h>
#include <string.h>
#include "event/kinds.h"

/* a runtime or driver call whose result comes back through *arg0 */
#define OUT_ALLOC(ev, l, sp, ds, err)                                       \
	.event = ev, .lib = l, .flags = MT_F_STASH | MT_F_DEREF0,           \
	.retprobe = true, .role = MT_ROLE_ALLOC, .space = sp, .devsrc = ds, \
	.errdomain = err

#define RET_FREE(ev, l, sp, ds, err)                                  \
	.event = ev, .lib = l, .flags = MT_F_STASH, .retprobe = true, \
	.role = MT_ROLE_FREE, .space = sp, .devsrc = ds, .errdomain = err

/*
 * Argument positions follow the C prototypes (x86-64 SysV registers).
 * Symbols are matched as proc/elfsym.h says: "{int64}" is any 64-bit
 * integer in a mangled parameter list, so that a parameter retyped from
 * int64_t to size_t (c10 1.13 to 2.x) is the same function, and one
 * pattern names it in every release. The names here hold for Debian's
 * torch 1.13, 2.6 and 2.14 (tests/unit/test_kinds.c checks them).
 */
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
		.syms = { "_ZN3c1027reportMemoryUsageToProfilerEPv{int64}{int64}{int64}NS_6DeviceE" },
		.ptr_arg = MT_A(0), .size_arg = MT_A(1), .allocated_arg = MT_A(2),
		.reserved_arg = MT_A(3), .dev_arg = MT_A(4), .signed_size = true,
	},
	/* (alloc_size, total_allocated, total_reserved, Device) */
	[MT_K_C10_OOM] = {
		.event = "c10:oom", .lib = MT_LIB_C10, .role = MT_ROLE_OOM,
		.space = MT_SP_C10, .devsrc = MT_DS_C10ARG, 
		.syms = { "_ZN3c1027reportOutOfMemoryToProfilerE{int64}{int64}{int64}NS_6DeviceE" },
		.size_arg = MT_A(0), .allocated_arg = MT_A(1), .reserved_arg = MT_A(2),
		.dev_arg = MT_A(3),
	},
	/* ProfiledCPUMemoryReporter::New(this, ptr, nbytes) */
	[MT_K_CPU_NEW] = {
		.event = "c10:cpu_alloc", .lib = MT_LIB_C10, .cpu = true,
		.flags = MT_F_SELFCALL, /* c10's CPU allocators call it */
		.role = MT_ROLE_ALLOC, .space = MT_SP_CPU,
		.devsrc = MT_DS_CPU, 
		.syms = { "_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm" },
		.ptr_arg = MT_A(1), .size_arg = MT_A(2),
	},
	/* ProfiledCPUMemoryReporter::Delete(this, ptr) */
	[MT_K_CPU_DELETE] = {
		.event = "c10:cpu_free", .lib = MT_LIB_C10, .cpu = true,
		.flags = MT_F_SELFCALL, /* c10's CPU allocators call it */
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
	/*
	 * _PyErr_SetObject(tstate, type, value): raise, and C code's PyErr_*.
	 * Debian's stripped 3.13 and 3.14 keep it local; their exported
	 * PyErr_SetObject(type, value) jumps to it with the thread's state.
	 */
	[MT_K_PY_RAISE] = {
		.event = "python:raise", .lib = MT_LIB_PYTHON, .flags = MT_F_EXC,
		.syms = { "_PyErr_SetObject" }, .wrapper = "PyErr_SetObject",
	},
	/* the dynamic loader's debugger hook: a library came or went */
	[MT_K_LOADER] = {
		.event = NULL, .lib = MT_LIB_LDSO, 
		.syms = { "_dl_debug_state" },
	},
	/*
	 * --module-log: torch::jit::tracer::getTracingState(), reached by
	 * every nn.Module._call_impl (torch 1.13 to 2.14) through
	 * torch._C._get_tracing_state()
	 */
	[MT_K_MODULE_CALL] = {
		.event = NULL, .lib = MT_LIB_TORCH_CPU, .flags = MT_F_MODCALL,
		.syms = { "_ZN5torch3jit6tracer15getTracingStateEv" },
	},
	/* --module-log: each Node evaluated, as MT_K_EVAL_FN's probe */
	[MT_K_NODE_EVAL] = {
		.event = NULL, .lib = MT_LIB_TORCH_CPU, .flags = MT_F_NODEEVAL,
		.syms = { "_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE" },
	},
	/*
	 * --module-log: InputBuffer::add(pos, Tensor&&, streams[, Node*]),
	 * torch 2.x (1.13 keeps it local: there a module's backward ends at
	 * the next Node's beginning)
	 */
	/*
	 * estimate --dry-run: the host reads device memory (loss.item(),
	 * .cpu(), the count nonzero() needs); PyTorch copies with
	 * cudaMemcpyAsync, cudaMemcpy is the plain call's
	 */
	[MT_K_HOST_READ] = {
		.event = NULL, .lib = MT_LIB_CUDART, .flags = MT_F_D2H,
		.syms = { "cudaMemcpyAsync", "cudaMemcpy" },
	},
	[MT_K_NODE_OUT] = {
		.event = NULL, .lib = MT_LIB_TORCH_CPU, .flags = MT_F_NODEOUT,
		.absent_in = ".so.1.13",
		.syms = { "_ZN5torch8autograd11InputBuffer3addEmON2at6TensorERKSt8optionalIN3c106StreamEESA_",
			  "_ZN5torch8autograd11InputBuffer3addEmON2at6TensorERKSt8optionalIN3c106StreamEESA_PNS0_4NodeE" },
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

bool mt_caller_is_allocator(const char *caller)
{
	static const char lib[] = "libc10_cuda.so";

	return !caller || !strncmp(caller, lib, sizeof(lib) - 1);
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

bool mt_space_is_tensor(enum mt_space sp)
{
	return sp == MT_SP_C10 || sp == MT_SP_CPU;
}

unsigned int mt_kind_sample_flags(const struct mt_kind_info *ki)
{
	if (ki->role == MT_ROLE_FREE)
		return MT_F_FREE;
	if (ki->role != MT_ROLE_ALLOC || ki->size_arg <= MT_ARG_NONE ||
	    ki->size_arg > MT_A(MT_SAMPLE_SIZE_ARGS - 1))
		return 0;
	return MT_F_SIZE_ARG(ki->size_arg - 1) |
	       (ki->signed_size ? MT_F_SIZE_SIGNED : 0);
}
