/*
 * standin.h - what the CUDA stand-in libraries share.
 *
 * The stand-in is a set of libraries with the SONAMEs and version nodes of
 * CUDA 12.4's (libcudart.so.12, libcuda.so.1, libcublas.so.12,
 * libcublasLt.so.12, libnvidia-ml.so.1, libcudnn.so.9), so that Debian's
 * CUDA build of PyTorch 2.6 runs on a machine without a GPU as if it had
 * one: "device memory" is host memory, kernels are accepted and never run,
 * streams and events complete at once.  It exists so that memtrace-bpf's
 * uprobes on the runtime, the driver and c10 can be tested end to end,
 * and so that memtrace-bpf estimate --dry-run, which carries them in its
 * binary, can run a user's job on a device it names.
 *
 * The memory accounting is one state, in libcuda.so.1, reached through
 * mt_standin_api() (a private version node): the real runtime sits on the
 * driver too, and a cudaMalloc must reach it without calling the public
 * cuMemAlloc_v2 or cuMemCreate, which memtrace-bpf probes.
 *
 * Knobs, read once from the environment when libcuda.so.1 loads; a bad
 * value prints one line naming the variable and exits with status 2, so
 * that a test never runs on defaults it did not ask for.  Sizes are a
 * decimal number of bytes with an optional suffix K, M or G, or KiB, MiB
 * or GiB (both spellings are powers of 1024):
 *   MT_STANDIN_DEVICES=N         number of devices, 1 to 8 (default 1);
 *   MT_STANDIN_DEVICE_MEM=SIZE   memory of each device (default 16GiB);
 *   MT_STANDIN_FAIL_ABOVE=SIZE   a device allocation larger than SIZE
 *                                fails with out of memory;
 *   MT_STANDIN_FAIL_AFTER=SIZE   a device allocation fails with out of
 *                                memory when it would bring the bytes
 *                                allocated over the process's life (frees
 *                                not subtracted) above SIZE;
 *   MT_STANDIN_MODEL=NAME        the GPU it stands in for, shown after
 *                                MT_DEVICE_NAME in the device's name
 *                                (printable, at most 64 characters);
 *   MT_STANDIN_CC=MAJOR.MINOR    compute capability (default 9.0), which
 *                                decides kernels and library workspaces;
 *   MT_STANDIN_SMS=N             multiprocessors, 1 to 1024 (default 132);
 *   MT_STANDIN_NVML_FAULT=WHAT   nvmlInit_v2 dies of SIGFPE (fpe), as a
 *                                static program's dlopen of a library of
 *                                another glibc does, or never returns
 *                                (hang), as with a wedged driver;
 *   MT_STANDIN_CONTEXT_MEM=SIZE  the device memory a process's context
 *                                takes on each device it allocated on
 *                                or set current (cudaSetDevice makes
 *                                the context, as CUDA 12's does)
 *                                (default 0), which NVML counts in the
 *                                process's used memory as a GPU's driver
 *                                counts the context and module images.
 * Device allocations are cudaMalloc, cudaMallocAsync, cudaMallocManaged,
 * cuMemAlloc_v2 and cuMemCreate; each is charged its requested size.
 */
#ifndef MT_STANDIN_H
#define MT_STANDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/*
 * Each export must keep an address of its own: uprobes go on these
 * symbols, and GCC's identical code folding (-fipa-icf, on at -O2) may
 * merge functions with equal bodies (cudaGetDeviceProperties and its _v2,
 * the many stubs that return one status).  clang does not fold functions
 * by default and lacks the attribute.
 */
#ifdef __clang__
#define MT_API
#else
#define MT_API __attribute__((no_icf))
#endif

/*
 * The libraries' stubs that only return a status are defined without
 * parameters: on x86-64 (SysV) the caller passes and removes the
 * arguments, so a function that reads none may be called with any.
 */
#define MT_STUB(type, name, value) \
	MT_API type name(void)     \
	{                          \
		return value;      \
	}

#define MT_MAX_DEVICES 8
#define MT_DEVICE_NAME "memtrace-bpf CUDA stand-in"
/* CUDA 12.4: the runtime's and the driver's version numbers */
#define MT_CUDA_VERSION 12040

/*
 * What a block of memory is.  The runtime's and the driver's device
 * allocations share one table, so that cudaFree frees what cuMemAlloc_v2
 * made, as with the real libraries.
 */
enum mt_kind {
	MT_DEVICE, /* cudaMalloc, cuMemAlloc_v2 */
	MT_POOL, /* cudaMallocAsync: counted in the device's memory pool */
	MT_MANAGED, /* cudaMallocManaged */
	MT_HOST, /* pinned host memory: cudaHostAlloc, cudaMallocHost */
	MT_REGISTERED, /* cudaHostRegister: the caller's memory, not ours */
};

#define MT_KIND_BIT(k) (1u << (k))
#define MT_DEVICE_KINDS                                  \
	(MT_KIND_BIT(MT_DEVICE) | MT_KIND_BIT(MT_POOL) | \
	 MT_KIND_BIT(MT_MANAGED))

struct mt_block {
	char *base;
	size_t size; /* as requested */
	size_t len; /* as mapped; 0 for registered memory */
	int dev; /* for host memory, the current device when it was made */
	enum mt_kind kind;
};

/*
 * The results are the numbers the runtime and the driver agree on:
 * 0 success, 1 invalid value, 2 out of memory.
 */
#define MT_OK 0
#define MT_EINVAL 1
#define MT_ENOMEM 2

/* MT_STANDIN_NVML_FAULT */
enum mt_nvml_fault {
	MT_NVML_OK,
	MT_NVML_FPE,
	MT_NVML_HANG,
};

struct mt_standin_api {
	int n_devices;
	enum mt_nvml_fault nvml_fault;
	size_t device_mem; /* bytes of each device */
	const char *name; /* the device's, as cudaGetDeviceProperties says */
	/*
	 * A new block of size bytes on dev; a device kind is charged to dev
	 * and may fail with MT_ENOMEM.  For MT_REGISTERED, *ptr is the
	 * caller's memory and MT_EINVAL says it overlaps a block known.
	 */
	int (*alloc)(void **ptr, size_t size, int dev, enum mt_kind kind);
	/* Forget the block starting at ptr if its kind is in kinds. */
	int (*release)(const void *ptr, unsigned int kinds, struct mt_block *b);
	/* The block that holds ptr. */
	bool (*lookup)(const void *ptr, struct mt_block *b);
	size_t (*held)(int dev);
	/* What NVML says the process uses on dev: held, and its context. */
	size_t (*used)(int dev);
	/* The device of the thread's current context (0 until set). */
	int (*current)(void);
	void (*set_current)(int dev);
	/* A device attribute, by the numbers below; false if unknown. */
	bool (*attribute)(int attr, int dev, int *value);
};

const struct mt_standin_api *mt_standin_api(void);

/*
 * The registry, through which one process's NVML sees the memory of
 * every other process on the stand-in's devices, as a GPU's driver does:
 * a process that took device memory maps a file of its own, named by its
 * pid, in its /dev/shm, and keeps there what NVML would say it uses.  A
 * reader finds a live process's file through /proc/PID/root (the
 * process's own /dev/shm, even in another mount namespace, as
 * scripts/cuda-standin.sh makes) and takes it only if the start time in
 * it is the process's own: a file a killed process left behind is not
 * taken for a process given its pid later.
 */
#define MT_REGISTRY_FILE "/dev/shm/memtrace-standin.%d"
#define MT_REGISTRY_MAGIC 0x316e6967746d7472ULL /* "rtmtgin1" */

struct mt_registry {
	unsigned long long magic; /* written last: the rest is there */
	unsigned long long start; /* field 22 of /proc/PID/stat */
	unsigned long long used[MT_MAX_DEVICES]; /* bytes, as api->used */
};

/* A process's start time, from its /proc/PID/stat; 0 if unreadable. */
static inline unsigned long long mt_start_time(const char *stat_path)
{
	unsigned long long start = 0;
	char buf[1024], *p;
	FILE *f = fopen(stat_path, "re");
	size_t n;
	int field;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the name (field 2) may hold blanks and parentheses */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 21; field++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%llu", &start) != 1)
		start = 0;
	return start;
}

/* The device's UUID, the same for the runtime and NVML. */
static inline void mt_uuid(int dev, unsigned char uuid[16])
{
	static const char stem[] = "mt-standin-dev";
	size_t i;

	for (i = 0; i < 16; i++)
		uuid[i] = i < sizeof(stem) - 1 ? (unsigned char)stem[i] : 0;
	uuid[15] = (unsigned char)dev;
}

/* Blocks per SM for a kernel of block_size threads: H100's limits. */
static inline int mt_occupancy(int block_size)
{
	int n;

	if (block_size <= 0)
		return 0;
	n = 2048 / block_size;
	return n > 32 ? 32 : n;
}

/*
 * Device attributes: cudaDeviceAttr's numbers, which CUdevice_attribute
 * shares, from CUDA 12.4's driver_types.h and cuda.h.
 */
enum mt_attr {
	MT_ATTR_MAX_THREADS_PER_BLOCK = 1,
	MT_ATTR_MAX_BLOCK_DIM_X = 2,
	MT_ATTR_MAX_BLOCK_DIM_Y = 3,
	MT_ATTR_MAX_BLOCK_DIM_Z = 4,
	MT_ATTR_MAX_GRID_DIM_X = 5,
	MT_ATTR_MAX_GRID_DIM_Y = 6,
	MT_ATTR_MAX_GRID_DIM_Z = 7,
	MT_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	MT_ATTR_TOTAL_CONSTANT_MEMORY = 9,
	MT_ATTR_WARP_SIZE = 10,
	MT_ATTR_MAX_PITCH = 11,
	MT_ATTR_MAX_REGISTERS_PER_BLOCK = 12,
	MT_ATTR_CLOCK_RATE = 13,
	MT_ATTR_TEXTURE_ALIGNMENT = 14,
	MT_ATTR_GPU_OVERLAP = 15,
	MT_ATTR_MULTIPROCESSOR_COUNT = 16,
	MT_ATTR_KERNEL_EXEC_TIMEOUT = 17,
	MT_ATTR_INTEGRATED = 18,
	MT_ATTR_CAN_MAP_HOST_MEMORY = 19,
	MT_ATTR_COMPUTE_MODE = 20,
	MT_ATTR_MAX_TEXTURE_1D_WIDTH = 21,
	MT_ATTR_MAX_TEXTURE_2D_WIDTH = 22,
	MT_ATTR_MAX_TEXTURE_2D_HEIGHT = 23,
	MT_ATTR_MAX_TEXTURE_3D_WIDTH = 24,
	MT_ATTR_MAX_TEXTURE_3D_HEIGHT = 25,
	MT_ATTR_MAX_TEXTURE_3D_DEPTH = 26,
	MT_ATTR_MAX_TEXTURE_2D_LAYERED_WIDTH = 27,
	MT_ATTR_MAX_TEXTURE_2D_LAYERED_HEIGHT = 28,
	MT_ATTR_MAX_TEXTURE_2D_LAYERED_LAYERS = 29,
	MT_ATTR_SURFACE_ALIGNMENT = 30,
	MT_ATTR_CONCURRENT_KERNELS = 31,
	MT_ATTR_ECC_ENABLED = 32,
	MT_ATTR_PCI_BUS_ID = 33,
	MT_ATTR_PCI_DEVICE_ID = 34,
	MT_ATTR_TCC_DRIVER = 35,
	MT_ATTR_MEMORY_CLOCK_RATE = 36,
	MT_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
	MT_ATTR_L2_CACHE_SIZE = 38,
	MT_ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
	MT_ATTR_ASYNC_ENGINE_COUNT = 40,
	MT_ATTR_UNIFIED_ADDRESSING = 41,
	MT_ATTR_MAX_TEXTURE_1D_LAYERED_WIDTH = 42,
	MT_ATTR_MAX_TEXTURE_1D_LAYERED_LAYERS = 43,
	MT_ATTR_MAX_TEXTURE_2D_GATHER_WIDTH = 45,
	MT_ATTR_MAX_TEXTURE_2D_GATHER_HEIGHT = 46,
	MT_ATTR_MAX_TEXTURE_3D_WIDTH_ALT = 47,
	MT_ATTR_MAX_TEXTURE_3D_HEIGHT_ALT = 48,
	MT_ATTR_MAX_TEXTURE_3D_DEPTH_ALT = 49,
	MT_ATTR_PCI_DOMAIN_ID = 50,
	MT_ATTR_TEXTURE_PITCH_ALIGNMENT = 51,
	MT_ATTR_MAX_TEXTURE_CUBEMAP_WIDTH = 52,
	MT_ATTR_MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH = 53,
	MT_ATTR_MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS = 54,
	MT_ATTR_MAX_SURFACE_1D_WIDTH = 55,
	MT_ATTR_MAX_SURFACE_2D_WIDTH = 56,
	MT_ATTR_MAX_SURFACE_2D_HEIGHT = 57,
	MT_ATTR_MAX_SURFACE_3D_WIDTH = 58,
	MT_ATTR_MAX_SURFACE_3D_HEIGHT = 59,
	MT_ATTR_MAX_SURFACE_3D_DEPTH = 60,
	MT_ATTR_MAX_SURFACE_1D_LAYERED_WIDTH = 61,
	MT_ATTR_MAX_SURFACE_1D_LAYERED_LAYERS = 62,
	MT_ATTR_MAX_SURFACE_2D_LAYERED_WIDTH = 63,
	MT_ATTR_MAX_SURFACE_2D_LAYERED_HEIGHT = 64,
	MT_ATTR_MAX_SURFACE_2D_LAYERED_LAYERS = 65,
	MT_ATTR_MAX_SURFACE_CUBEMAP_WIDTH = 66,
	MT_ATTR_MAX_SURFACE_CUBEMAP_LAYERED_WIDTH = 67,
	MT_ATTR_MAX_SURFACE_CUBEMAP_LAYERED_LAYERS = 68,
	MT_ATTR_MAX_TEXTURE_1D_LINEAR_WIDTH = 69,
	MT_ATTR_MAX_TEXTURE_2D_LINEAR_WIDTH = 70,
	MT_ATTR_MAX_TEXTURE_2D_LINEAR_HEIGHT = 71,
	MT_ATTR_MAX_TEXTURE_2D_LINEAR_PITCH = 72,
	MT_ATTR_MAX_TEXTURE_2D_MIPMAPPED_WIDTH = 73,
	MT_ATTR_MAX_TEXTURE_2D_MIPMAPPED_HEIGHT = 74,
	MT_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
	MT_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
	MT_ATTR_MAX_TEXTURE_1D_MIPMAPPED_WIDTH = 77,
	MT_ATTR_STREAM_PRIORITIES_SUPPORTED = 78,
	MT_ATTR_GLOBAL_L1_CACHE_SUPPORTED = 79,
	MT_ATTR_LOCAL_L1_CACHE_SUPPORTED = 80,
	MT_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
	MT_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
	MT_ATTR_MANAGED_MEMORY = 83,
	MT_ATTR_IS_MULTI_GPU_BOARD = 84,
	MT_ATTR_MULTI_GPU_BOARD_GROUP_ID = 85,
	MT_ATTR_HOST_NATIVE_ATOMIC_SUPPORTED = 86,
	MT_ATTR_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO = 87,
	MT_ATTR_PAGEABLE_MEMORY_ACCESS = 88,
	MT_ATTR_CONCURRENT_MANAGED_ACCESS = 89,
	MT_ATTR_COMPUTE_PREEMPTION_SUPPORTED = 90,
	MT_ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91,
	MT_ATTR_COOPERATIVE_LAUNCH = 95,
	MT_ATTR_COOPERATIVE_MULTI_DEVICE_LAUNCH = 96,
	MT_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	MT_ATTR_HOST_REGISTER_SUPPORTED = 99,
	MT_ATTR_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100,
	MT_ATTR_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST = 101,
	MT_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
	MT_ATTR_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
	MT_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
	MT_ATTR_MAX_PERSISTING_L2_CACHE_SIZE = 108,
	MT_ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE = 109,
	MT_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK = 111,
	MT_ATTR_SPARSE_CUDA_ARRAY_SUPPORTED = 112,
	MT_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED = 113,
	MT_ATTR_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED = 114,
	MT_ATTR_MEMORY_POOLS_SUPPORTED = 115,
	MT_ATTR_GPU_DIRECT_RDMA_SUPPORTED = 116,
	MT_ATTR_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS = 117,
	MT_ATTR_GPU_DIRECT_RDMA_WRITES_ORDERING = 118,
	MT_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES = 119,
	MT_ATTR_CLUSTER_LAUNCH = 120,
	MT_ATTR_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED = 121,
	MT_ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS = 122,
	MT_ATTR_CAN_USE_STREAM_WAIT_VALUE_NOR = 123,
	MT_ATTR_IPC_EVENT_SUPPORTED = 125,
	MT_ATTR_MEM_SYNC_DOMAIN_COUNT = 126,
	MT_ATTR_TENSOR_MAP_ACCESS_SUPPORTED = 127,
	MT_ATTR_UNIFIED_FUNCTION_POINTERS = 129,
	MT_ATTR_NUMA_ID = 131,
	MT_ATTR_MULTICAST_SUPPORTED = 132,
	MT_ATTR_HOST_NUMA_ID = 134,
	MT_ATTR_MAX, /* CU_DEVICE_ATTRIBUTE_MAX in 12.4 */
};

#endif /* MT_STANDIN_H */
