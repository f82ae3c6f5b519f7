/*
 * driver.c - libcuda.so.1 of the CUDA stand-in (see standin.h), and the
 * state every stand-in library shares.
 *
 * Callers: c10's DriverAPI dlopen()s this library and dlsym()s its entry
 * points, asserting on each (expandable segments, cuGetErrorString);
 * libcaffe2_nvrtc links it; a CUDA library with the runtime built in asks
 * cuGetProcAddress.  The libcudart and libnvidia-ml of the stand-in link
 * it for mt_standin_api(), the one way to the state, which never passes
 * through the public entry points (memtrace-bpf probes some of them).
 *
 * The state: the knobs, the bytes held on each device, and one table of
 * the blocks the runtime and the driver hand out.  Memory is anonymous
 * host memory mapped per block and never touched here, so large sizes
 * cost nothing until used.
 *
 * Virtual memory management maps like the GPU's: a reservation is an
 * inaccessible anonymous mapping, cuMemCreate makes a memfd of the size
 * (charged to the device like cudaMalloc), cuMemMap maps the memfd over
 * part of a reservation, still inaccessible, cuMemSetAccess opens it,
 * cuMemUnmap puts the inaccessible mapping back.  Granularity is 2 MiB.
 *
 * Each thread has a current device, set by cudaSetDevice or
 * cuCtxSetCurrent: device 0's primary context is current on a thread
 * until then, as if the runtime had made it so.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "standin.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GRANULARITY (2UL << 20)
#define DEFAULT_DEVICE_MEM (16ULL << 30)

/* The driver API's types and numbers, from CUDA 12.4's cuda.h. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef void *CUstream;
typedef struct ctx *CUcontext;
typedef char *CUmodule;
typedef char *CUfunction;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_OPERATING_SYSTEM 304
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_SUPPORTED 801

#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 1
#define CU_MEM_ACCESS_FLAGS_PROT_READ 1
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3
#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4
#define CU_GET_PROC_ADDRESS_SUCCESS 0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1

typedef struct {
	int type;
	int id;
} CUmemLocation;

typedef struct {
	int type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	unsigned char allocFlags[8];
} CUmemAllocationProp;

typedef struct {
	CUmemLocation location;
	int flags;
} CUmemAccessDesc;

_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp");
_Static_assert(offsetof(CUmemAllocationProp, location) == 8, "location");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc");

struct ctx {
	int dev;
};

/* What cuMemCreate hands out: the handle is this struct's address. */
struct vmm {
	int fd;
	int dev;
	size_t size;
	bool charged; /* false when imported: the exporter holds it */
};

struct range {
	uintptr_t base;
	size_t size;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mt_standin_api api;
static struct ctx ctxs[MT_MAX_DEVICES];
static _Thread_local int cur_dev;

/* Guarded by lock. */
static size_t fail_above = SIZE_MAX, fail_after = SIZE_MAX;
static size_t held[MT_MAX_DEVICES], lifetime;
/* MT_STANDIN_CONTEXT_MEM, and the devices the process has a context on */
static size_t context_mem;
static bool context[MT_MAX_DEVICES];
/* this process's file of the registry (standin.h); NULL: none yet */
static struct mt_registry *registry;
static pid_t registry_pid;
static struct mt_block *blocks;
static size_t n_blocks, cap_blocks;
static struct range *resv;
static size_t n_resv, cap_resv;

static void lock_state(void)
{
	if (pthread_mutex_lock(&lock) != 0)
		abort();
}

static void unlock_state(void)
{
	if (pthread_mutex_unlock(&lock) != 0)
		abort();
}

static void knob_fail(const char *name, const char *form)
{
	fprintf(stderr, "memtrace-bpf CUDA stand-in: %s='%s': expected %s\n",
		name, getenv(name), form);
	exit(2);
}

/* A size: decimal bytes, optionally K, M, G, KiB, MiB or GiB. */
static bool parse_size(const char *s, size_t *out)
{
	static const struct {
		const char *suffix;
		unsigned int shift;
	} units[] = {
		{ "", 0 },     { "K", 10 }, { "KiB", 10 }, { "M", 20 },
		{ "MiB", 20 }, { "G", 30 }, { "GiB", 30 },
	};
	unsigned long long v;
	char *end;
	size_t i;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return false;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (v > (SIZE_MAX >> units[i].shift))
			return false;
		*out = (size_t)v << units[i].shift;
		return true;
	}
	return false;
}

#define SUFFIXES "optionally with a K, M, G, KiB, MiB or GiB suffix"

static void knob_size(const char *name, size_t *out, bool positive)
{
	const char *s = getenv(name);

	if (!s)
		return;
	if (!parse_size(s, out) || (positive && *out == 0))
		knob_fail(name, positive ? "a byte count above 0, " SUFFIXES :
					   "a byte count, " SUFFIXES);
}

/* MT_DEVICE_NAME, and the GPU of MT_STANDIN_MODEL after it */
static void knob_model(void)
{
	static char name[sizeof(MT_DEVICE_NAME) + 68];
	const char *s = getenv("MT_STANDIN_MODEL");
	size_t i;

	api.name = MT_DEVICE_NAME;
	if (!s)
		return;
	for (i = 0; s[i]; i++)
		if (i == 64 || s[i] < ' ' || s[i] > '~')
			knob_fail("MT_STANDIN_MODEL",
				  "at most 64 printable characters");
	snprintf(name, sizeof(name), "%s (%s)", MT_DEVICE_NAME, s);
	api.name = name;
}

static void knob_nvml_fault(void)
{
	const char *s = getenv("MT_STANDIN_NVML_FAULT");

	if (!s)
		return;
	if (!strcmp(s, "fpe"))
		api.nvml_fault = MT_NVML_FPE;
	else if (!strcmp(s, "hang"))
		api.nvml_fault = MT_NVML_HANG;
	else
		knob_fail("MT_STANDIN_NVML_FAULT", "fpe or hang");
}

static bool valid_dev(int dev)
{
	return dev >= 0 && dev < api.n_devices;
}

/* Called with the lock held. */
static size_t used_locked(int dev)
{
	return held[dev] + (context[dev] ? context_mem : 0);
}

/*
 * Called with the lock held: this process's file of the registry, made
 * at its first device allocation.  A forked child (its pid not the
 * file's) makes its own, as a child has no context of its parent's.
 * Without /dev/shm there is none, and only the process's own NVML sees
 * its memory.
 */
static struct mt_registry *registry_file(void)
{
	char path[64];
	void *p;
	int fd;

	if (registry && registry_pid == getpid())
		return registry;
	if (registry)
		munmap(registry, sizeof(*registry));
	registry = NULL;
	registry_pid = getpid();
	snprintf(path, sizeof(path), MT_REGISTRY_FILE, (int)registry_pid);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, sizeof(*registry)) != 0) {
		close(fd);
		unlink(path);
		return NULL;
	}
	p = mmap(NULL, sizeof(*registry), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(path);
		return NULL;
	}
	registry = p;
	registry->start = mt_start_time("/proc/self/stat");
	__atomic_store_n(&registry->magic, MT_REGISTRY_MAGIC, __ATOMIC_RELEASE);
	return registry;
}

/* Called with the lock held: what another process's NVML reads of dev. */
static void publish(int dev)
{
	struct mt_registry *r = registry_file();

	if (r)
		__atomic_store_n(&r->used[dev], used_locked(dev),
				 __ATOMIC_RELEASE);
}

/*
 * Called with the lock held.  The lifetime total never passes the knob.
 * The first allocation on a device makes the process's context there.
 */
static bool charge(int dev, size_t size)
{
	if (size > fail_above || size > fail_after - lifetime ||
	    size > api.device_mem - held[dev])
		return false;
	held[dev] += size;
	lifetime += size;
	context[dev] = true;
	publish(dev);
	return true;
}

/* Called with the lock held: an allocation charged and then not made. */
static void refund(int dev, size_t size)
{
	held[dev] -= size;
	lifetime -= size;
	publish(dev);
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *p;

	if (n < *cap)
		return true;
	p = realloc(*arr, c * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = c;
	return true;
}

static bool inside(uintptr_t p, size_t size, uintptr_t base, size_t len)
{
	return p >= base && p - base < len && size <= len - (p - base);
}

/* Called with the lock held. */
static bool overlaps_block(uintptr_t p, size_t size)
{
	size_t i;

	for (i = 0; i < n_blocks; i++) {
		uintptr_t b = (uintptr_t)blocks[i].base;

		if (p < b + blocks[i].size && b < p + size)
			return true;
	}
	return false;
}

static char *map_pages(size_t size, size_t *len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (size > SIZE_MAX - page)
		return NULL;
	*len = (size + page - 1) & ~(page - 1);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void unmap_or_die(void *p, size_t len)
{
	/* Cannot fail for a mapping we made; if it does, a table is bad. */
	if (munmap(p, len) != 0) {
		perror("memtrace-bpf CUDA stand-in: munmap");
		abort();
	}
}

static int block_alloc(void **ptr, size_t size, int dev, enum mt_kind kind)
{
	struct mt_block b = { .size = size, .dev = dev, .kind = kind };
	bool device = MT_KIND_BIT(kind) & MT_DEVICE_KINDS, charged = false;
	int err = MT_OK;

	if (!ptr || !valid_dev(dev))
		return MT_EINVAL;
	if (kind == MT_REGISTERED) {
		b.base = *ptr;
		if (!b.base || size == 0 ||
		    UINTPTR_MAX - size < (uintptr_t)b.base)
			return MT_EINVAL;
	} else {
		*ptr = NULL;
		if (size == 0)
			return MT_OK;
	}

	lock_state();
	if (kind == MT_REGISTERED && overlaps_block((uintptr_t)b.base, size))
		err = MT_EINVAL;
	else if (device && !(charged = charge(dev, size)))
		err = MT_ENOMEM;
	else if (kind != MT_REGISTERED && !(b.base = map_pages(size, &b.len)))
		err = MT_ENOMEM;
	else if (!grow((void **)&blocks, &cap_blocks, n_blocks,
		       sizeof(*blocks)))
		err = MT_ENOMEM;
	else
		blocks[n_blocks++] = b;
	if (err && charged)
		refund(dev, size);
	unlock_state();
	if (err && b.len)
		unmap_or_die(b.base, b.len);
	if (!err)
		*ptr = b.base;
	return err;
}

static int block_release(const void *ptr, unsigned int kinds,
			 struct mt_block *out)
{
	struct mt_block b;
	size_t i;

	lock_state();
	for (i = 0; i < n_blocks && blocks[i].base != ptr; i++)
		;
	if (i == n_blocks || !(MT_KIND_BIT(blocks[i].kind) & kinds)) {
		unlock_state();
		return MT_EINVAL;
	}
	b = blocks[i];
	blocks[i] = blocks[--n_blocks];
	if (MT_KIND_BIT(b.kind) & MT_DEVICE_KINDS) {
		held[b.dev] -= b.size;
		publish(b.dev);
	}
	unlock_state();
	if (b.len)
		unmap_or_die(b.base, b.len);
	if (out)
		*out = b;
	return MT_OK;
}

static bool block_lookup(const void *ptr, struct mt_block *out)
{
	bool found = false;
	size_t i;

	lock_state();
	for (i = 0; i < n_blocks && !found; i++) {
		found = inside((uintptr_t)ptr, 1, (uintptr_t)blocks[i].base,
			       blocks[i].size);
		if (found)
			*out = blocks[i];
	}
	unlock_state();
	return found;
}

static size_t held_on(int dev)
{
	size_t n;

	lock_state();
	n = held[dev];
	unlock_state();
	return n;
}

static size_t used_on(int dev)
{
	size_t n;

	lock_state();
	n = used_locked(dev);
	unlock_state();
	return n;
}

static int current(void)
{
	return cur_dev;
}

/*
 * cudaSetDevice: as CUDA 12's, it makes the device's primary context
 * when the process has none there, allocation or not. That is how a rank
 * that touches another's device before torch.cuda.set_device ends up
 * holding a context there, which NVML shows and no allocation explains.
 */
static void set_current(int dev)
{
	cur_dev = dev;
	lock_state();
	if (!context[dev]) {
		context[dev] = true;
		/* a context of no size changes nothing NVML says */
		if (context_mem)
			publish(dev);
	}
	unlock_state();
}

/*
 * An H100 SXM's, as its driver reports them; compute capability and the
 * multiprocessors follow their knobs.
 */
static int attrs[MT_ATTR_MAX] = {
	[MT_ATTR_MAX_THREADS_PER_BLOCK] = 1024,
	[MT_ATTR_MAX_BLOCK_DIM_X] = 1024,
	[MT_ATTR_MAX_BLOCK_DIM_Y] = 1024,
	[MT_ATTR_MAX_BLOCK_DIM_Z] = 64,
	[MT_ATTR_MAX_GRID_DIM_X] = 2147483647,
	[MT_ATTR_MAX_GRID_DIM_Y] = 65535,
	[MT_ATTR_MAX_GRID_DIM_Z] = 65535,
	[MT_ATTR_MAX_SHARED_MEMORY_PER_BLOCK] = 49152,
	[MT_ATTR_TOTAL_CONSTANT_MEMORY] = 65536,
	[MT_ATTR_WARP_SIZE] = 32,
	[MT_ATTR_MAX_PITCH] = 2147483647,
	[MT_ATTR_MAX_REGISTERS_PER_BLOCK] = 65536,
	[MT_ATTR_CLOCK_RATE] = 1980000,
	[MT_ATTR_TEXTURE_ALIGNMENT] = 512,
	[MT_ATTR_GPU_OVERLAP] = 1,
	[MT_ATTR_MULTIPROCESSOR_COUNT] = 132,
	[MT_ATTR_CAN_MAP_HOST_MEMORY] = 1,
	[MT_ATTR_MAX_TEXTURE_1D_WIDTH] = 131072,
	[MT_ATTR_MAX_TEXTURE_2D_WIDTH] = 131072,
	[MT_ATTR_MAX_TEXTURE_2D_HEIGHT] = 65536,
	[MT_ATTR_MAX_TEXTURE_3D_WIDTH] = 16384,
	[MT_ATTR_MAX_TEXTURE_3D_HEIGHT] = 16384,
	[MT_ATTR_MAX_TEXTURE_3D_DEPTH] = 16384,
	[MT_ATTR_MAX_TEXTURE_2D_LAYERED_WIDTH] = 32768,
	[MT_ATTR_MAX_TEXTURE_2D_LAYERED_HEIGHT] = 32768,
	[MT_ATTR_MAX_TEXTURE_2D_LAYERED_LAYERS] = 2048,
	[MT_ATTR_SURFACE_ALIGNMENT] = 512,
	[MT_ATTR_CONCURRENT_KERNELS] = 1,
	[MT_ATTR_ECC_ENABLED] = 1,
	[MT_ATTR_MEMORY_CLOCK_RATE] = 2619000,
	[MT_ATTR_GLOBAL_MEMORY_BUS_WIDTH] = 5120,
	[MT_ATTR_L2_CACHE_SIZE] = 52428800,
	[MT_ATTR_MAX_THREADS_PER_MULTIPROCESSOR] = 2048,
	[MT_ATTR_ASYNC_ENGINE_COUNT] = 3,
	[MT_ATTR_UNIFIED_ADDRESSING] = 1,
	[MT_ATTR_MAX_TEXTURE_1D_LAYERED_WIDTH] = 32768,
	[MT_ATTR_MAX_TEXTURE_1D_LAYERED_LAYERS] = 2048,
	[MT_ATTR_MAX_TEXTURE_2D_GATHER_WIDTH] = 32768,
	[MT_ATTR_MAX_TEXTURE_2D_GATHER_HEIGHT] = 32768,
	[MT_ATTR_MAX_TEXTURE_3D_WIDTH_ALT] = 8192,
	[MT_ATTR_MAX_TEXTURE_3D_HEIGHT_ALT] = 8192,
	[MT_ATTR_MAX_TEXTURE_3D_DEPTH_ALT] = 32768,
	[MT_ATTR_TEXTURE_PITCH_ALIGNMENT] = 32,
	[MT_ATTR_MAX_TEXTURE_CUBEMAP_WIDTH] = 32768,
	[MT_ATTR_MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH] = 32768,
	[MT_ATTR_MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS] = 2046,
	[MT_ATTR_MAX_SURFACE_1D_WIDTH] = 32768,
	[MT_ATTR_MAX_SURFACE_2D_WIDTH] = 131072,
	[MT_ATTR_MAX_SURFACE_2D_HEIGHT] = 65536,
	[MT_ATTR_MAX_SURFACE_3D_WIDTH] = 16384,
	[MT_ATTR_MAX_SURFACE_3D_HEIGHT] = 16384,
	[MT_ATTR_MAX_SURFACE_3D_DEPTH] = 16384,
	[MT_ATTR_MAX_SURFACE_1D_LAYERED_WIDTH] = 32768,
	[MT_ATTR_MAX_SURFACE_1D_LAYERED_LAYERS] = 2048,
	[MT_ATTR_MAX_SURFACE_2D_LAYERED_WIDTH] = 32768,
	[MT_ATTR_MAX_SURFACE_2D_LAYERED_HEIGHT] = 32768,
	[MT_ATTR_MAX_SURFACE_2D_LAYERED_LAYERS] = 2048,
	[MT_ATTR_MAX_SURFACE_CUBEMAP_WIDTH] = 32768,
	[MT_ATTR_MAX_SURFACE_CUBEMAP_LAYERED_WIDTH] = 32768,
	[MT_ATTR_MAX_SURFACE_CUBEMAP_LAYERED_LAYERS] = 2046,
	[MT_ATTR_MAX_TEXTURE_1D_LINEAR_WIDTH] = 268435456,
	[MT_ATTR_MAX_TEXTURE_2D_LINEAR_WIDTH] = 131072,
	[MT_ATTR_MAX_TEXTURE_2D_LINEAR_HEIGHT] = 65000,
	[MT_ATTR_MAX_TEXTURE_2D_LINEAR_PITCH] = 2097120,
	[MT_ATTR_MAX_TEXTURE_2D_MIPMAPPED_WIDTH] = 32768,
	[MT_ATTR_MAX_TEXTURE_2D_MIPMAPPED_HEIGHT] = 32768,
	[MT_ATTR_COMPUTE_CAPABILITY_MAJOR] = 9,
	[MT_ATTR_COMPUTE_CAPABILITY_MINOR] = 0,
	[MT_ATTR_MAX_TEXTURE_1D_MIPMAPPED_WIDTH] = 32768,
	[MT_ATTR_STREAM_PRIORITIES_SUPPORTED] = 1,
	[MT_ATTR_GLOBAL_L1_CACHE_SUPPORTED] = 1,
	[MT_ATTR_LOCAL_L1_CACHE_SUPPORTED] = 1,
	[MT_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] = 233472,
	[MT_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536,
	[MT_ATTR_MANAGED_MEMORY] = 1,
	[MT_ATTR_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO] = 2,
	[MT_ATTR_CONCURRENT_MANAGED_ACCESS] = 1,
	[MT_ATTR_COMPUTE_PREEMPTION_SUPPORTED] = 1,
	[MT_ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM] = 1,
	[MT_ATTR_COOPERATIVE_LAUNCH] = 1,
	[MT_ATTR_COOPERATIVE_MULTI_DEVICE_LAUNCH] = 1,
	[MT_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = 232448,
	[MT_ATTR_HOST_REGISTER_SUPPORTED] = 1,
	[MT_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 1,
	[MT_ATTR_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = 1,
	[MT_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32,
	[MT_ATTR_MAX_PERSISTING_L2_CACHE_SIZE] = 32505856,
	[MT_ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE] = 134213632,
	[MT_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK] = 1024,
	[MT_ATTR_SPARSE_CUDA_ARRAY_SUPPORTED] = 1,
	[MT_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED] = 1,
	[MT_ATTR_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED] = 1,
	[MT_ATTR_MEMORY_POOLS_SUPPORTED] = 1,
	[MT_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES] =
		CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	[MT_ATTR_CLUSTER_LAUNCH] = 1,
	[MT_ATTR_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED] = 1,
	[MT_ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS] = 1,
	[MT_ATTR_CAN_USE_STREAM_WAIT_VALUE_NOR] = 1,
	[MT_ATTR_MEM_SYNC_DOMAIN_COUNT] = 4,
	[MT_ATTR_TENSOR_MAP_ACCESS_SUPPORTED] = 1,
	[MT_ATTR_UNIFIED_FUNCTION_POINTERS] = 1,
	[MT_ATTR_NUMA_ID] = -1,
	[MT_ATTR_HOST_NUMA_ID] = -1,
};

static void knob_cc(void)
{
	const char *s = getenv("MT_STANDIN_CC");
	unsigned int major, minor;
	char end;

	if (!s)
		return;
	if (sscanf(s, "%u.%u%c", &major, &minor, &end) != 2 || major < 1 ||
	    major > 20 || minor > 9)
		knob_fail("MT_STANDIN_CC", "MAJOR.MINOR, e.g. 8.0");
	attrs[MT_ATTR_COMPUTE_CAPABILITY_MAJOR] = (int)major;
	attrs[MT_ATTR_COMPUTE_CAPABILITY_MINOR] = (int)minor;
}

static void knob_sms(void)
{
	const char *s = getenv("MT_STANDIN_SMS");
	unsigned int n;
	char end;

	if (!s)
		return;
	if (sscanf(s, "%u%c", &n, &end) != 1 || n < 1 || n > 1024)
		knob_fail("MT_STANDIN_SMS", "a number from 1 to 1024");
	attrs[MT_ATTR_MULTIPROCESSOR_COUNT] = (int)n;
}

static bool attribute(int attr, int dev, int *value)
{
	if (attr <= 0 || attr >= MT_ATTR_MAX || !valid_dev(dev))
		return false;
	if (attr == MT_ATTR_PCI_BUS_ID)
		*value = dev + 1; /* bus 0 is the host bridge's */
	else if (attr == MT_ATTR_MULTI_GPU_BOARD_GROUP_ID)
		*value = dev;
	else
		*value = attrs[attr];
	return true;
}

static void init(void)
{
	const char *s = getenv("MT_STANDIN_DEVICES");
	int i;

	api.n_devices = 1;
	if (s) {
		if (s[0] < '1' || s[0] > '0' + MT_MAX_DEVICES || s[1] != '\0')
			knob_fail("MT_STANDIN_DEVICES", "a number from 1 to 8");
		api.n_devices = s[0] - '0';
	}
	api.device_mem = DEFAULT_DEVICE_MEM;
	knob_size("MT_STANDIN_DEVICE_MEM", &api.device_mem, true);
	knob_model();
	knob_cc();
	knob_sms();
	knob_nvml_fault();
	knob_size("MT_STANDIN_FAIL_ABOVE", &fail_above, false);
	knob_size("MT_STANDIN_FAIL_AFTER", &fail_after, false);
	knob_size("MT_STANDIN_CONTEXT_MEM", &context_mem, false);
	for (i = 0; i < MT_MAX_DEVICES; i++)
		ctxs[i].dev = i;
	api.alloc = block_alloc;
	api.release = block_release;
	api.lookup = block_lookup;
	api.held = held_on;
	api.used = used_on;
	api.current = current;
	api.set_current = set_current;
	api.attribute = attribute;
}

/* The knobs are read as the library loads, so that a bad one stops it. */
__attribute__((constructor)) static void load(void)
{
	if (pthread_once(&once, init) != 0)
		abort();
}

/* The registry's file goes with the process that made it. */
__attribute__((destructor)) static void unload(void)
{
	char path[64];

	lock_state();
	if (registry && registry_pid == getpid()) {
		snprintf(path, sizeof(path), MT_REGISTRY_FILE,
			 (int)registry_pid);
		unlink(path);
	}
	unlock_state();
}

MT_API const struct mt_standin_api *mt_standin_api(void)
{
	if (pthread_once(&once, init) != 0)
		abort();
	return &api;
}

MT_STUB(CUresult, cuInit, CUDA_SUCCESS)

MT_API CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = MT_CUDA_VERSION;
	return CUDA_SUCCESS;
}

MT_API CUresult cuDeviceGetCount(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = api.n_devices;
	return CUDA_SUCCESS;
}

MT_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

MT_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "%s", api.name);
	return CUDA_SUCCESS;
}

MT_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = api.device_mem;
	return CUDA_SUCCESS;
}

MT_API CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	return attribute(attrib, dev, value) ? CUDA_SUCCESS :
					       CUDA_ERROR_INVALID_VALUE;
}

MT_API CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*ctx = &ctxs[dev];
	return CUDA_SUCCESS;
}

MT_STUB(CUresult, cuDevicePrimaryCtxRelease_v2, CUDA_SUCCESS)

MT_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
					   int *active)
{
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*flags = 0;
	/* c10's MaybeSetDevice asks, so as not to make one needlessly */
	lock_state();
	*active = context[dev];
	unlock_state();
	return CUDA_SUCCESS;
}

MT_API CUresult cuCtxGetCurrent(CUcontext *ctx)
{
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	*ctx = &ctxs[cur_dev];
	return CUDA_SUCCESS;
}

MT_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (ctx && (ctx < ctxs || ctx >= ctxs + api.n_devices))
		return CUDA_ERROR_INVALID_CONTEXT;
	cur_dev = ctx ? ctx->dev : 0;
	return CUDA_SUCCESS;
}

MT_API CUresult cuCtxGetDevice(CUdevice *device)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = cur_dev;
	return CUDA_SUCCESS;
}

MT_STUB(CUresult, cuCtxSynchronize, CUDA_SUCCESS)

MT_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	void *p;
	int err;

	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	err = block_alloc(&p, size, cur_dev, MT_DEVICE);
	*dptr = (uintptr_t)p;
	return err;
}

MT_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	return block_release((void *)(uintptr_t)dptr, MT_DEVICE_KINDS, NULL);
}

MT_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	*total = api.device_mem;
	*free_bytes = api.device_mem - held_on(cur_dev);
	return CUDA_SUCCESS;
}

/* Called with the lock held: the reservation that holds [p, p + size). */
static struct range *find_resv(uintptr_t p, size_t size)
{
	size_t i;

	for (i = 0; i < n_resv; i++)
		if (inside(p, size, resv[i].base, resv[i].size))
			return &resv[i];
	return NULL;
}

static bool in_resv(CUdeviceptr p, size_t size)
{
	bool found;

	if (p % (size_t)sysconf(_SC_PAGESIZE) || size == 0)
		return false;
	lock_state();
	found = find_resv(p, size) != NULL;
	unlock_state();
	return found;
}

MT_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
				    size_t alignment, CUdeviceptr addr,
				    unsigned long long flags)
{
	uintptr_t base, start;
	size_t len;
	void *p;

	(void)addr; /* a hint the driver may ignore */
	if (alignment == 0)
		alignment = GRANULARITY;
	if (!ptr || size == 0 || size % GRANULARITY || flags ||
	    (alignment & (alignment - 1)) || size > SIZE_MAX - alignment)
		return CUDA_ERROR_INVALID_VALUE;
	len = size + alignment;
	p = mmap(NULL, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Keep the aligned part; hand back the slack either side. */
	base = (uintptr_t)p;
	start = (base + alignment - 1) & ~(alignment - 1);
	if (start > base)
		unmap_or_die(p, start - base);
	if (base + len > start + size)
		unmap_or_die((void *)(start + size), base + len - start - size);

	lock_state();
	if (!grow((void **)&resv, &cap_resv, n_resv, sizeof(*resv))) {
		unlock_state();
		unmap_or_die((void *)start, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	resv[n_resv++] = (struct range){ start, size };
	unlock_state();
	*ptr = start;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct range *r;

	lock_state();
	r = find_resv(ptr, size);
	if (!r || r->base != ptr || r->size != size) {
		unlock_state();
		return CUDA_ERROR_INVALID_VALUE;
	}
	*r = resv[--n_resv];
	unlock_state();
	unmap_or_die((void *)(uintptr_t)ptr, size);
	return CUDA_SUCCESS;
}

static struct vmm *new_vmm(int fd, int dev, size_t size, bool charged)
{
	struct vmm *h = malloc(sizeof(*h));

	if (h)
		*h = (struct vmm){ fd, dev, size, charged };
	return h;
}

MT_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop,
			    unsigned long long flags)
{
	struct vmm *h = NULL;
	bool ok;
	int fd;

	if (!handle || !prop || flags || size == 0 || size % GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !valid_dev(prop->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	lock_state();
	ok = charge(prop->location.id, size);
	unlock_state();
	if (!ok)
		return CUDA_ERROR_OUT_OF_MEMORY;
	fd = memfd_create("memtrace-bpf-standin", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, (off_t)size) == 0)
		h = new_vmm(fd, prop->location.id, size, true);
	if (!h) {
		if (fd >= 0 && close(fd) != 0)
			perror("memtrace-bpf CUDA stand-in: close");
		lock_state();
		refund(prop->location.id, size);
		unlock_state();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*handle = (uintptr_t)h;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct vmm *h = (struct vmm *)(uintptr_t)handle;

	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	/* The mappings keep the memfd's pages; the device's count drops. */
	if (close(h->fd) != 0)
		perror("memtrace-bpf CUDA stand-in: close");
	if (h->charged) {
		lock_state();
		held[h->dev] -= h->size;
		publish(h->dev);
		unlock_state();
	}
	free(h);
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle,
			 unsigned long long flags)
{
	struct vmm *h = (struct vmm *)(uintptr_t)handle;

	if (!h || flags || offset > h->size || size > h->size - offset ||
	    !in_resv(ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_SHARED | MAP_FIXED, h->fd, (off_t)offset) == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	if (!in_resv(ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
		 0) == MAP_FAILED)
		return CUDA_ERROR_OPERATING_SYSTEM;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
			       const CUmemAccessDesc *desc, size_t count)
{
	int prot = PROT_NONE;

	if (!desc || count == 0 || !in_resv(ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	/* One address space for every device: the first entry decides. */
	if (desc[0].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		prot = PROT_READ | PROT_WRITE;
	else if (desc[0].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
		prot = PROT_READ;
	if (mprotect((void *)(uintptr_t)ptr, size, prot) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemGetAllocationGranularity(size_t *granularity,
					      const CUmemAllocationProp *prop,
					      int option)
{
	(void)option; /* minimum and recommended are the same */
	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = GRANULARITY;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemExportToShareableHandle(
	void *shareable, CUmemGenericAllocationHandle handle, int type,
	unsigned long long flags)
{
	struct vmm *h = (struct vmm *)(uintptr_t)handle;
	int fd;

	if (!shareable || !h || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	fd = dup(h->fd);
	if (fd < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	*(int *)shareable = fd;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemImportFromShareableHandle(
	CUmemGenericAllocationHandle *handle, void *os_handle, int type)
{
	struct vmm *h;
	struct stat st;
	int fd;

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	/* The descriptor travels in the pointer, as with the real driver. */
	fd = dup((int)(intptr_t)os_handle);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	h = fstat(fd, &st) == 0 ? new_vmm(fd, 0, (size_t)st.st_size, false) :
				  NULL;
	if (!h) {
		if (close(fd) != 0)
			perror("memtrace-bpf CUDA stand-in: close");
		return CUDA_ERROR_INVALID_VALUE;
	}
	*handle = (uintptr_t)h;
	return CUDA_SUCCESS;
}

MT_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n,
				 CUstream stream)
{
	uint32_t *p = (uint32_t *)(uintptr_t)dst;
	size_t i;

	(void)stream; /* streams complete at once */
	if (!p || dst % 4)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++)
		p[i] = value;
	return CUDA_SUCCESS;
}

static CUresult write_value32(CUdeviceptr addr, uint32_t value)
{
	if (!addr || addr % 4)
		return CUDA_ERROR_INVALID_VALUE;
	*(volatile uint32_t *)(uintptr_t)addr = value;
	return CUDA_SUCCESS;
}

/* cuda.h renames cuStreamWriteValue32 to _v2; c10 asks for the old name. */
MT_API CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
				     uint32_t value, unsigned int flags)
{
	(void)stream;
	(void)flags;
	return write_value32(addr, value);
}

MT_API CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr,
					uint32_t value, unsigned int flags)
{
	(void)stream;
	(void)flags;
	return write_value32(addr, value);
}

/* No multicast: the stand-in has no NVLink switch. */
MT_STUB(CUresult, cuMulticastCreate, CUDA_ERROR_NOT_SUPPORTED)
MT_STUB(CUresult, cuMulticastBindMem, CUDA_ERROR_NOT_SUPPORTED)
MT_STUB(CUresult, cuMulticastAddDevice, CUDA_ERROR_NOT_SUPPORTED)

/*
 * Modules and kernels, for libcaffe2_nvrtc: a module loads, its functions
 * are one token, launches are accepted and run nothing.  There is no
 * linker and no tensor map.
 */
static char module_token, function_token;

MT_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	*module = &module_token;
	return CUDA_SUCCESS;
}

MT_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
				   unsigned int n_options, int *options,
				   void **values)
{
	(void)n_options;
	(void)options;
	(void)values;
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	*module = &module_token;
	return CUDA_SUCCESS;
}

MT_STUB(CUresult, cuModuleUnload, CUDA_SUCCESS)

MT_API CUresult cuModuleGetFunction(CUfunction *func, CUmodule module,
				    const char *name)
{
	if (!func || module != &module_token || !name)
		return CUDA_ERROR_INVALID_VALUE;
	*func = &function_token;
	return CUDA_SUCCESS;
}

MT_API CUresult cuFuncGetAttribute(int *value, int attrib, CUfunction func)
{
	if (!value || !func)
		return CUDA_ERROR_INVALID_VALUE;
	if (attrib == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
		*value = 1024;
	else if (attrib == CU_FUNC_ATTRIBUTE_NUM_REGS)
		*value = 32;
	else
		*value = 0;
	return CUDA_SUCCESS;
}

MT_STUB(CUresult, cuFuncSetAttribute, CUDA_SUCCESS)
MT_STUB(CUresult, cuLaunchKernel, CUDA_SUCCESS)
MT_STUB(CUresult, cuLaunchCooperativeKernel, CUDA_SUCCESS)

MT_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n_blocks,
							    CUfunction func,
							    int block_size,
							    size_t dyn_smem)
{
	(void)dyn_smem;
	if (!n_blocks || !func)
		return CUDA_ERROR_INVALID_VALUE;
	*n_blocks = mt_occupancy(block_size);
	return CUDA_SUCCESS;
}

MT_STUB(CUresult, cuLinkCreate_v2, CUDA_ERROR_NOT_SUPPORTED)
MT_STUB(CUresult, cuLinkAddData_v2, CUDA_ERROR_NOT_SUPPORTED)
MT_STUB(CUresult, cuLinkComplete, CUDA_ERROR_NOT_SUPPORTED)
MT_STUB(CUresult, cuTensorMapEncodeTiled, CUDA_ERROR_NOT_SUPPORTED)

static const struct {
	CUresult err;
	const char *name;
	const char *text;
} errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
	  "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
	  "out of memory" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
	  "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
	  "invalid device context" },
	{ CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
	  "OS call failed or operation not supported on this OS" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND",
	  "named symbol not found" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
	  "operation not supported" },
};

static CUresult error_text(CUresult err, const char **out, bool name)
{
	size_t i;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < ARRAY_SIZE(errors); i++) {
		if (errors[i].err == err) {
			*out = name ? errors[i].name : errors[i].text;
			return CUDA_SUCCESS;
		}
	}
	*out = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

MT_API CUresult cuGetErrorString(CUresult err, const char **str)
{
	return error_text(err, str, false);
}

MT_API CUresult cuGetErrorName(CUresult err, const char **str)
{
	return error_text(err, str, true);
}

MT_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
				 uint64_t flags);
MT_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
				    uint64_t flags, int *status);

#define ENTRY(f)              \
	{                     \
#f, (void *)f \
	}

static const struct {
	const char *name;
	void *fn;
} entries[] = {
	ENTRY(cuInit),
	ENTRY(cuDriverGetVersion),
	ENTRY(cuDeviceGetCount),
	ENTRY(cuDeviceGet),
	ENTRY(cuDeviceGetName),
	ENTRY(cuDeviceTotalMem_v2),
	ENTRY(cuDeviceGetAttribute),
	ENTRY(cuDevicePrimaryCtxRetain),
	ENTRY(cuDevicePrimaryCtxRelease_v2),
	ENTRY(cuDevicePrimaryCtxGetState),
	ENTRY(cuCtxGetCurrent),
	ENTRY(cuCtxSetCurrent),
	ENTRY(cuCtxGetDevice),
	ENTRY(cuCtxSynchronize),
	ENTRY(cuMemAlloc_v2),
	ENTRY(cuMemFree_v2),
	ENTRY(cuMemGetInfo_v2),
	ENTRY(cuMemAddressReserve),
	ENTRY(cuMemAddressFree),
	ENTRY(cuMemCreate),
	ENTRY(cuMemRelease),
	ENTRY(cuMemMap),
	ENTRY(cuMemUnmap),
	ENTRY(cuMemSetAccess),
	ENTRY(cuMemGetAllocationGranularity),
	ENTRY(cuMemExportToShareableHandle),
	ENTRY(cuMemImportFromShareableHandle),
	ENTRY(cuMemsetD32Async),
	ENTRY(cuStreamWriteValue32),
	ENTRY(cuStreamWriteValue32_v2),
	ENTRY(cuMulticastCreate),
	ENTRY(cuMulticastBindMem),
	ENTRY(cuMulticastAddDevice),
	ENTRY(cuModuleLoadData),
	ENTRY(cuModuleLoadDataEx),
	ENTRY(cuModuleUnload),
	ENTRY(cuModuleGetFunction),
	ENTRY(cuFuncGetAttribute),
	ENTRY(cuFuncSetAttribute),
	ENTRY(cuLaunchKernel),
	ENTRY(cuLaunchCooperativeKernel),
	ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor),
	ENTRY(cuLinkCreate_v2),
	ENTRY(cuLinkAddData_v2),
	ENTRY(cuLinkComplete),
	ENTRY(cuTensorMapEncodeTiled),
	ENTRY(cuGetErrorString),
	ENTRY(cuGetErrorName),
	ENTRY(cuGetProcAddress),
	ENTRY(cuGetProcAddress_v2),
};

/*
 * A name asks for the newest version of the function: its _v2 where there
 * is one (cuMemAlloc is cuMemAlloc_v2 since CUDA 3.2), else the name.
 */
static void *proc_address(const char *symbol)
{
	char v2[128];
	size_t i;
	int n;

	n = snprintf(v2, sizeof(v2), "%s_v2", symbol);
	for (i = 0; n > 0 && (size_t)n < sizeof(v2) && i < ARRAY_SIZE(entries);
	     i++)
		if (strcmp(entries[i].name, v2) == 0)
			return entries[i].fn;
	for (i = 0; i < ARRAY_SIZE(entries); i++)
		if (strcmp(entries[i].name, symbol) == 0)
			return entries[i].fn;
	return NULL;
}

MT_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
				 uint64_t flags)
{
	(void)version;
	(void)flags; /* no per-thread default stream variants */
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = proc_address(symbol);
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

MT_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
				    uint64_t flags, int *status)
{
	(void)version;
	(void)flags;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = proc_address(symbol);
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS :
				 CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
