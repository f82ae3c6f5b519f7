/*
 * cudart.c - libcudart.so.12 of the CUDA stand-in (see standin.h).
 *
 * Every function libc10_cuda, libtorch_cuda and libtorch_python of
 * PyTorch 2.6 and Debian's libgloo_cuda import, and the usual allocation
 * calls besides, in the
 * version node "libcudart.so.12" their references name.  The CUDA headers
 * are not included: those here are CUDA 13's, whose struct layouts differ
 * from the 12.4 ones PyTorch was built with; the types below follow
 * 12.4's driver_types.h, and the asserts pin what PyTorch reads.
 *
 * Memory comes from the state in libcuda.so.1 (mt_standin_api()), which
 * charges device allocations to the current device.  Copies and sets are
 * done at once on that memory.  Kernels are accepted and not run; streams
 * and events are complete as soon as asked.  Work sent to a capturing
 * stream becomes a node of its graph instead of being done; an event
 * recorded there pulls a stream that waits on it into the capture.
 * cudaMallocAsync counts in the device's default pool, which keeps
 * nothing cached: its reserved memory is its used memory.
 *
 * A failing call leaves its error for cudaGetLastError, which returns and
 * clears it, as the real runtime does for errors that are not sticky.
 */
#define _GNU_SOURCE

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "standin.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

typedef int cudaError_t;
typedef struct stream *cudaStream_t;
typedef struct event *cudaEvent_t;
typedef struct graph *cudaGraph_t;
typedef struct graph_exec *cudaGraphExec_t;
typedef char *cudaGraphNode_t;
typedef struct pool *cudaMemPool_t;
typedef void (*cudaHostFn_t)(void *data);

typedef struct {
	unsigned int x, y, z;
} dim3;

#define cudaSuccess 0
#define cudaErrorInvalidValue 1
#define cudaErrorMemoryAllocation 2
#define cudaErrorInvalidConfiguration 9
#define cudaErrorInvalidMemcpyDirection 21
#define cudaErrorInvalidDeviceFunction 98
#define cudaErrorInvalidDevice 101
#define cudaErrorInvalidResourceHandle 400
#define cudaErrorIllegalState 401
#define cudaErrorPeerAccessAlreadyEnabled 704
#define cudaErrorPeerAccessNotEnabled 705
#define cudaErrorHostMemoryAlreadyRegistered 712
#define cudaErrorHostMemoryNotRegistered 713
#define cudaErrorNotSupported 801
#define cudaErrorStreamCaptureUnsupported 900
#define cudaErrorStreamCaptureUnmatched 903

#define cudaMemcpyDefault 4
#define cudaMemAttachGlobal 1
#define cudaMemAttachHost 2
#define cudaHostAllocKnown 0x7 /* Portable, Mapped, WriteCombined */
#define cudaHostRegisterKnown 0xf /* and IoMemory, ReadOnly */
#define cudaEventDisableTiming 0x2
#define cudaEventKnown 0x7 /* BlockingSync, DisableTiming, Interprocess */
#define cudaStreamNonBlocking 0x1
#define cudaStreamCaptureStatusNone 0
#define cudaStreamCaptureStatusActive 1
#define cudaStreamCaptureModeRelaxed 2

enum cudaMemoryType {
	cudaMemoryTypeUnregistered,
	cudaMemoryTypeHost,
	cudaMemoryTypeDevice,
	cudaMemoryTypeManaged,
};

enum cudaMemPoolAttr {
	cudaMemPoolReuseFollowEventDependencies = 1,
	cudaMemPoolReuseAllowOpportunistic,
	cudaMemPoolReuseAllowInternalDependencies,
	cudaMemPoolAttrReleaseThreshold,
	cudaMemPoolAttrReservedMemCurrent,
	cudaMemPoolAttrReservedMemHigh,
	cudaMemPoolAttrUsedMemCurrent,
	cudaMemPoolAttrUsedMemHigh,
};

/* The stream priorities an H100 offers: lower numbers go first. */
#define LEAST_PRIORITY 0
#define GREATEST_PRIORITY (-5)

/* CUDA 12.4's struct cudaDeviceProp, field by field. */
struct cudaDeviceProp {
	char name[256];
	struct {
		unsigned char bytes[16];
	} uuid;
	char luid[8];
	unsigned int luidDeviceNodeMask;
	size_t totalGlobalMem;
	size_t sharedMemPerBlock;
	int regsPerBlock;
	int warpSize;
	size_t memPitch;
	int maxThreadsPerBlock;
	int maxThreadsDim[3];
	int maxGridSize[3];
	int clockRate;
	size_t totalConstMem;
	int major;
	int minor;
	size_t textureAlignment;
	size_t texturePitchAlignment;
	int deviceOverlap;
	int multiProcessorCount;
	int kernelExecTimeoutEnabled;
	int integrated;
	int canMapHostMemory;
	int computeMode;
	int maxTexture1D;
	int maxTexture1DMipmap;
	int maxTexture1DLinear;
	int maxTexture2D[2];
	int maxTexture2DMipmap[2];
	int maxTexture2DLinear[3];
	int maxTexture2DGather[2];
	int maxTexture3D[3];
	int maxTexture3DAlt[3];
	int maxTextureCubemap;
	int maxTexture1DLayered[2];
	int maxTexture2DLayered[3];
	int maxTextureCubemapLayered[2];
	int maxSurface1D;
	int maxSurface2D[2];
	int maxSurface3D[3];
	int maxSurface1DLayered[2];
	int maxSurface2DLayered[3];
	int maxSurfaceCubemap;
	int maxSurfaceCubemapLayered[2];
	size_t surfaceAlignment;
	int concurrentKernels;
	int ECCEnabled;
	int pciBusID;
	int pciDeviceID;
	int pciDomainID;
	int tccDriver;
	int asyncEngineCount;
	int unifiedAddressing;
	int memoryClockRate;
	int memoryBusWidth;
	int l2CacheSize;
	int persistingL2CacheMaxSize;
	int maxThreadsPerMultiProcessor;
	int streamPrioritiesSupported;
	int globalL1CacheSupported;
	int localL1CacheSupported;
	size_t sharedMemPerMultiprocessor;
	int regsPerMultiprocessor;
	int managedMemory;
	int isMultiGpuBoard;
	int multiGpuBoardGroupID;
	int hostNativeAtomicSupported;
	int singleToDoublePrecisionPerfRatio;
	int pageableMemoryAccess;
	int concurrentManagedAccess;
	int computePreemptionSupported;
	int canUseHostPointerForRegisteredMem;
	int cooperativeLaunch;
	int cooperativeMultiDeviceLaunch;
	size_t sharedMemPerBlockOptin;
	int pageableMemoryAccessUsesHostPageTables;
	int directManagedMemAccessFromHost;
	int maxBlocksPerMultiProcessor;
	int accessPolicyMaxWindowSize;
	size_t reservedSharedMemPerBlock;
	int hostRegisterSupported;
	int sparseCudaArraySupported;
	int hostRegisterReadOnlySupported;
	int timelineSemaphoreInteropSupported;
	int memoryPoolsSupported;
	int gpuDirectRDMASupported;
	unsigned int gpuDirectRDMAFlushWritesOptions;
	int gpuDirectRDMAWritesOrdering;
	unsigned int memoryPoolSupportedHandleTypes;
	int deferredMappingCudaArraySupported;
	int ipcEventSupported;
	int clusterLaunch;
	int unifiedFunctionPointers;
	int reserved2[2];
	int reserved1[1];
	int reserved[60];
};

/* The offsets the 12.4 header gives (checked with offsetof against it). */
_Static_assert(sizeof(struct cudaDeviceProp) == 1032, "cudaDeviceProp");
_Static_assert(offsetof(struct cudaDeviceProp, uuid) == 256, "uuid");
_Static_assert(offsetof(struct cudaDeviceProp, totalGlobalMem) == 288,
	       "totalGlobalMem");
_Static_assert(offsetof(struct cudaDeviceProp, warpSize) == 308, "warpSize");
_Static_assert(offsetof(struct cudaDeviceProp, clockRate) == 348, "clockRate");
_Static_assert(offsetof(struct cudaDeviceProp, major) == 360, "major");
_Static_assert(offsetof(struct cudaDeviceProp, multiProcessorCount) == 388,
	       "multiProcessorCount");
_Static_assert(offsetof(struct cudaDeviceProp, maxTexture1D) == 408,
	       "maxTexture1D");
_Static_assert(offsetof(struct cudaDeviceProp, surfaceAlignment) == 568,
	       "surfaceAlignment");
_Static_assert(offsetof(struct cudaDeviceProp, l2CacheSize) == 616,
	       "l2CacheSize");
_Static_assert(offsetof(struct cudaDeviceProp, maxThreadsPerMultiProcessor) ==
		       624,
	       "maxThreadsPerMultiProcessor");
_Static_assert(offsetof(struct cudaDeviceProp, sharedMemPerMultiprocessor) ==
		       640,
	       "sharedMemPerMultiprocessor");
_Static_assert(offsetof(struct cudaDeviceProp, regsPerMultiprocessor) == 648,
	       "regsPerMultiprocessor");
_Static_assert(offsetof(struct cudaDeviceProp, sharedMemPerBlockOptin) == 696,
	       "sharedMemPerBlockOptin");
_Static_assert(offsetof(struct cudaDeviceProp, reservedSharedMemPerBlock) ==
		       720,
	       "reservedSharedMemPerBlock");
_Static_assert(offsetof(struct cudaDeviceProp, unifiedFunctionPointers) == 776,
	       "unifiedFunctionPointers");
_Static_assert(offsetof(struct cudaDeviceProp, reserved) == 792, "reserved");

struct cudaPointerAttributes {
	enum cudaMemoryType type;
	int device;
	void *devicePointer;
	void *hostPointer;
};

_Static_assert(sizeof(struct cudaPointerAttributes) == 24,
	       "cudaPointerAttributes");

struct cudaFuncAttributes {
	size_t sharedSizeBytes;
	size_t constSizeBytes;
	size_t localSizeBytes;
	int maxThreadsPerBlock;
	int numRegs;
	int ptxVersion;
	int binaryVersion;
	int cacheModeCA;
	int maxDynamicSharedSizeBytes;
	int preferredShmemCarveout;
	int clusterDimMustBeSet;
	int requiredClusterWidth;
	int requiredClusterHeight;
	int requiredClusterDepth;
	int clusterSchedulingPolicyPreference;
	int nonPortableClusterSizeAllowed;
	int reserved[16];
};

_Static_assert(sizeof(struct cudaFuncAttributes) == 144, "cudaFuncAttributes");

typedef struct {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	void *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

_Static_assert(offsetof(cudaLaunchConfig_t, stream) == 32, "stream");
_Static_assert(sizeof(cudaLaunchConfig_t) == 56, "cudaLaunchConfig_t");

struct graph {
	size_t n_nodes;
	char *nodes; /* n_nodes bytes; the address of each is a node handle */
};

struct graph_exec {
	size_t n_nodes;
};

struct capture {
	unsigned long long id;
	struct stream *origin;
	struct graph *graph;
};

struct stream {
	struct stream *next;
	int dev;
	int priority;
	unsigned int flags;
	struct capture *cap; /* the capture this stream is part of */
};

struct event {
	unsigned int flags;
	bool recorded; /* outside a capture, with a time */
	struct timespec at;
	unsigned long long cap_id; /* recorded in this capture; 0 if none */
};

struct pool {
	int dev;
	int reuse[3];
	uint64_t release_threshold;
	uint64_t used, used_high, reserved_high;
};

static const struct mt_standin_api *api;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Guarded by lock. */
static struct stream *streams;
static unsigned long long next_capture_id = 1;
static struct pool pools[MT_MAX_DEVICES];
static unsigned int peers[MT_MAX_DEVICES]; /* bit p: access to p enabled */

static _Thread_local cudaError_t last_error;
static _Thread_local int capture_mode;
static _Thread_local struct {
	dim3 grid, block;
	size_t shmem;
	void *stream;
} call_config;

__attribute__((constructor)) static void load(void)
{
	int i;

	api = mt_standin_api();
	for (i = 0; i < MT_MAX_DEVICES; i++)
		pools[i].dev = i;
}

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

/* Remember a failure for cudaGetLastError(), as the real runtime does. */
static cudaError_t note(cudaError_t err)
{
	if (err != cudaSuccess)
		last_error = err;
	return err;
}

static bool valid_dev(int dev)
{
	return dev >= 0 && dev < api->n_devices;
}

/* NULL, cudaStreamLegacy and cudaStreamPerThread: never capturing. */
static struct stream *stream_of(cudaStream_t s)
{
	return (uintptr_t)s > 2 ? s : NULL;
}

static int stream_dev(cudaStream_t s)
{
	return stream_of(s) ? s->dev : api->current();
}

/*
 * Whether s is capturing: work sent to it then becomes a node of the
 * capture's graph, to be done at each launch, and is not done now.
 */
static bool captured(cudaStream_t s)
{
	bool cap;

	if (!stream_of(s))
		return false;
	lock_state();
	cap = s->cap != NULL;
	if (cap)
		s->cap->graph->n_nodes++;
	unlock_state();
	return cap;
}

MT_API cudaError_t cudaGetLastError(void)
{
	cudaError_t err = last_error;

	last_error = cudaSuccess;
	return err;
}

MT_API cudaError_t cudaPeekAtLastError(void)
{
	return last_error;
}

/* Names and texts as the real 12.4 runtime gives them. */
static const struct {
	cudaError_t err;
	const char *name;
	const char *text;
} errors[] = {
	{ 0, "cudaSuccess", "no error" },
	{ 1, "cudaErrorInvalidValue", "invalid argument" },
	{ 2, "cudaErrorMemoryAllocation", "out of memory" },
	{ 3, "cudaErrorInitializationError", "initialization error" },
	{ 9, "cudaErrorInvalidConfiguration",
	  "invalid configuration argument" },
	{ 21, "cudaErrorInvalidMemcpyDirection",
	  "invalid copy direction for memcpy" },
	{ 98, "cudaErrorInvalidDeviceFunction", "invalid device function" },
	{ 100, "cudaErrorNoDevice", "no CUDA-capable device is detected" },
	{ 101, "cudaErrorInvalidDevice", "invalid device ordinal" },
	{ 217, "cudaErrorPeerAccessUnsupported",
	  "peer access is not supported between these two devices" },
	{ 400, "cudaErrorInvalidResourceHandle", "invalid resource handle" },
	{ 401, "cudaErrorIllegalState",
	  "the operation cannot be performed in the present state" },
	{ 600, "cudaErrorNotReady", "device not ready" },
	{ 704, "cudaErrorPeerAccessAlreadyEnabled",
	  "peer access is already enabled" },
	{ 705, "cudaErrorPeerAccessNotEnabled",
	  "peer access has not been enabled" },
	{ 712, "cudaErrorHostMemoryAlreadyRegistered",
	  "part or all of the requested memory range is already mapped" },
	{ 713, "cudaErrorHostMemoryNotRegistered",
	  "pointer does not correspond to a registered memory region" },
	{ 801, "cudaErrorNotSupported", "operation not supported" },
	{ 900, "cudaErrorStreamCaptureUnsupported",
	  "operation not permitted when stream is capturing" },
	{ 901, "cudaErrorStreamCaptureInvalidated",
	  "operation failed due to a previous error during capture" },
	{ 903, "cudaErrorStreamCaptureUnmatched",
	  "capture was not ended in the same stream as it began" },
	{ 904, "cudaErrorStreamCaptureUnjoined",
	  "capturing stream has unjoined work" },
	{ 999, "cudaErrorUnknown", "unknown error" },
};

#define UNKNOWN_ERROR "unrecognized error code"

MT_API const char *cudaGetErrorName(cudaError_t err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errors); i++)
		if (errors[i].err == err)
			return errors[i].name;
	return UNKNOWN_ERROR;
}

MT_API const char *cudaGetErrorString(cudaError_t err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errors); i++)
		if (errors[i].err == err)
			return errors[i].text;
	return UNKNOWN_ERROR;
}

MT_API cudaError_t cudaDriverGetVersion(int *version)
{
	if (!version)
		return note(cudaErrorInvalidValue);
	*version = MT_CUDA_VERSION;
	return cudaSuccess;
}

MT_API cudaError_t cudaRuntimeGetVersion(int *version)
{
	if (!version)
		return note(cudaErrorInvalidValue);
	*version = MT_CUDA_VERSION;
	return cudaSuccess;
}

MT_API cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return note(cudaErrorInvalidValue);
	*count = api->n_devices;
	return cudaSuccess;
}

MT_API cudaError_t cudaSetDevice(int dev)
{
	if (!valid_dev(dev))
		return note(cudaErrorInvalidDevice);
	api->set_current(dev);
	return cudaSuccess;
}

MT_API cudaError_t cudaGetDevice(int *dev)
{
	if (!dev)
		return note(cudaErrorInvalidValue);
	*dev = api->current();
	return cudaSuccess;
}

MT_STUB(cudaError_t, cudaDeviceSynchronize, cudaSuccess)

MT_API cudaError_t cudaDeviceGetAttribute(int *value, int attr, int dev)
{
	if (!value)
		return note(cudaErrorInvalidValue);
	if (!valid_dev(dev))
		return note(cudaErrorInvalidDevice);
	if (!api->attribute(attr, dev, value))
		return note(cudaErrorInvalidValue);
	return cudaSuccess;
}

static int attr(int a, int dev)
{
	int v;

	/* The driver knows every attribute standin.h names. */
	if (!api->attribute(a, dev, &v))
		abort();
	return v;
}

MT_API cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev)
{
	if (!id || len <= 0)
		return note(cudaErrorInvalidValue);
	if (!valid_dev(dev))
		return note(cudaErrorInvalidDevice);
	snprintf(id, (size_t)len, "%04x:%02x:%02x.0",
		 attr(MT_ATTR_PCI_DOMAIN_ID, dev),
		 attr(MT_ATTR_PCI_BUS_ID, dev),
		 attr(MT_ATTR_PCI_DEVICE_ID, dev));
	return cudaSuccess;
}

static cudaError_t get_props(struct cudaDeviceProp *p, int d)
{
	if (!p)
		return note(cudaErrorInvalidValue);
	if (!valid_dev(d))
		return note(cudaErrorInvalidDevice);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", api->name);
	mt_uuid(d, p->uuid.bytes);
	p->totalGlobalMem = api->device_mem;
	p->sharedMemPerBlock = attr(MT_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, d);
	p->regsPerBlock = attr(MT_ATTR_MAX_REGISTERS_PER_BLOCK, d);
	p->warpSize = attr(MT_ATTR_WARP_SIZE, d);
	p->memPitch = attr(MT_ATTR_MAX_PITCH, d);
	p->maxThreadsPerBlock = attr(MT_ATTR_MAX_THREADS_PER_BLOCK, d);
	p->maxThreadsDim[0] = attr(MT_ATTR_MAX_BLOCK_DIM_X, d);
	p->maxThreadsDim[1] = attr(MT_ATTR_MAX_BLOCK_DIM_Y, d);
	p->maxThreadsDim[2] = attr(MT_ATTR_MAX_BLOCK_DIM_Z, d);
	p->maxGridSize[0] = attr(MT_ATTR_MAX_GRID_DIM_X, d);
	p->maxGridSize[1] = attr(MT_ATTR_MAX_GRID_DIM_Y, d);
	p->maxGridSize[2] = attr(MT_ATTR_MAX_GRID_DIM_Z, d);
	p->clockRate = attr(MT_ATTR_CLOCK_RATE, d);
	p->totalConstMem = attr(MT_ATTR_TOTAL_CONSTANT_MEMORY, d);
	p->major = attr(MT_ATTR_COMPUTE_CAPABILITY_MAJOR, d);
	p->minor = attr(MT_ATTR_COMPUTE_CAPABILITY_MINOR, d);
	p->textureAlignment = attr(MT_ATTR_TEXTURE_ALIGNMENT, d);
	p->texturePitchAlignment = attr(MT_ATTR_TEXTURE_PITCH_ALIGNMENT, d);
	p->deviceOverlap = attr(MT_ATTR_GPU_OVERLAP, d);
	p->multiProcessorCount = attr(MT_ATTR_MULTIPROCESSOR_COUNT, d);
	p->kernelExecTimeoutEnabled = attr(MT_ATTR_KERNEL_EXEC_TIMEOUT, d);
	p->integrated = attr(MT_ATTR_INTEGRATED, d);
	p->canMapHostMemory = attr(MT_ATTR_CAN_MAP_HOST_MEMORY, d);
	p->computeMode = attr(MT_ATTR_COMPUTE_MODE, d);
	p->maxTexture1D = attr(MT_ATTR_MAX_TEXTURE_1D_WIDTH, d);
	p->maxTexture1DMipmap = attr(MT_ATTR_MAX_TEXTURE_1D_MIPMAPPED_WIDTH, d);
	p->maxTexture1DLinear = attr(MT_ATTR_MAX_TEXTURE_1D_LINEAR_WIDTH, d);
	p->maxTexture2D[0] = attr(MT_ATTR_MAX_TEXTURE_2D_WIDTH, d);
	p->maxTexture2D[1] = attr(MT_ATTR_MAX_TEXTURE_2D_HEIGHT, d);
	p->maxTexture2DMipmap[0] =
		attr(MT_ATTR_MAX_TEXTURE_2D_MIPMAPPED_WIDTH, d);
	p->maxTexture2DMipmap[1] =
		attr(MT_ATTR_MAX_TEXTURE_2D_MIPMAPPED_HEIGHT, d);
	p->maxTexture2DLinear[0] = attr(MT_ATTR_MAX_TEXTURE_2D_LINEAR_WIDTH, d);
	p->maxTexture2DLinear[1] =
		attr(MT_ATTR_MAX_TEXTURE_2D_LINEAR_HEIGHT, d);
	p->maxTexture2DLinear[2] = attr(MT_ATTR_MAX_TEXTURE_2D_LINEAR_PITCH, d);
	p->maxTexture2DGather[0] = attr(MT_ATTR_MAX_TEXTURE_2D_GATHER_WIDTH, d);
	p->maxTexture2DGather[1] =
		attr(MT_ATTR_MAX_TEXTURE_2D_GATHER_HEIGHT, d);
	p->maxTexture3D[0] = attr(MT_ATTR_MAX_TEXTURE_3D_WIDTH, d);
	p->maxTexture3D[1] = attr(MT_ATTR_MAX_TEXTURE_3D_HEIGHT, d);
	p->maxTexture3D[2] = attr(MT_ATTR_MAX_TEXTURE_3D_DEPTH, d);
	p->maxTexture3DAlt[0] = attr(MT_ATTR_MAX_TEXTURE_3D_WIDTH_ALT, d);
	p->maxTexture3DAlt[1] = attr(MT_ATTR_MAX_TEXTURE_3D_HEIGHT_ALT, d);
	p->maxTexture3DAlt[2] = attr(MT_ATTR_MAX_TEXTURE_3D_DEPTH_ALT, d);
	p->maxTextureCubemap = attr(MT_ATTR_MAX_TEXTURE_CUBEMAP_WIDTH, d);
	p->maxTexture1DLayered[0] =
		attr(MT_ATTR_MAX_TEXTURE_1D_LAYERED_WIDTH, d);
	p->maxTexture1DLayered[1] =
		attr(MT_ATTR_MAX_TEXTURE_1D_LAYERED_LAYERS, d);
	p->maxTexture2DLayered[0] =
		attr(MT_ATTR_MAX_TEXTURE_2D_LAYERED_WIDTH, d);
	p->maxTexture2DLayered[1] =
		attr(MT_ATTR_MAX_TEXTURE_2D_LAYERED_HEIGHT, d);
	p->maxTexture2DLayered[2] =
		attr(MT_ATTR_MAX_TEXTURE_2D_LAYERED_LAYERS, d);
	p->maxTextureCubemapLayered[0] =
		attr(MT_ATTR_MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH, d);
	p->maxTextureCubemapLayered[1] =
		attr(MT_ATTR_MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS, d);
	p->maxSurface1D = attr(MT_ATTR_MAX_SURFACE_1D_WIDTH, d);
	p->maxSurface2D[0] = attr(MT_ATTR_MAX_SURFACE_2D_WIDTH, d);
	p->maxSurface2D[1] = attr(MT_ATTR_MAX_SURFACE_2D_HEIGHT, d);
	p->maxSurface3D[0] = attr(MT_ATTR_MAX_SURFACE_3D_WIDTH, d);
	p->maxSurface3D[1] = attr(MT_ATTR_MAX_SURFACE_3D_HEIGHT, d);
	p->maxSurface3D[2] = attr(MT_ATTR_MAX_SURFACE_3D_DEPTH, d);
	p->maxSurface1DLayered[0] =
		attr(MT_ATTR_MAX_SURFACE_1D_LAYERED_WIDTH, d);
	p->maxSurface1DLayered[1] =
		attr(MT_ATTR_MAX_SURFACE_1D_LAYERED_LAYERS, d);
	p->maxSurface2DLayered[0] =
		attr(MT_ATTR_MAX_SURFACE_2D_LAYERED_WIDTH, d);
	p->maxSurface2DLayered[1] =
		attr(MT_ATTR_MAX_SURFACE_2D_LAYERED_HEIGHT, d);
	p->maxSurface2DLayered[2] =
		attr(MT_ATTR_MAX_SURFACE_2D_LAYERED_LAYERS, d);
	p->maxSurfaceCubemap = attr(MT_ATTR_MAX_SURFACE_CUBEMAP_WIDTH, d);
	p->maxSurfaceCubemapLayered[0] =
		attr(MT_ATTR_MAX_SURFACE_CUBEMAP_LAYERED_WIDTH, d);
	p->maxSurfaceCubemapLayered[1] =
		attr(MT_ATTR_MAX_SURFACE_CUBEMAP_LAYERED_LAYERS, d);
	p->surfaceAlignment = attr(MT_ATTR_SURFACE_ALIGNMENT, d);
	p->concurrentKernels = attr(MT_ATTR_CONCURRENT_KERNELS, d);
	p->ECCEnabled = attr(MT_ATTR_ECC_ENABLED, d);
	p->pciBusID = attr(MT_ATTR_PCI_BUS_ID, d);
	p->pciDeviceID = attr(MT_ATTR_PCI_DEVICE_ID, d);
	p->pciDomainID = attr(MT_ATTR_PCI_DOMAIN_ID, d);
	p->tccDriver = attr(MT_ATTR_TCC_DRIVER, d);
	p->asyncEngineCount = attr(MT_ATTR_ASYNC_ENGINE_COUNT, d);
	p->unifiedAddressing = attr(MT_ATTR_UNIFIED_ADDRESSING, d);
	p->memoryClockRate = attr(MT_ATTR_MEMORY_CLOCK_RATE, d);
	p->memoryBusWidth = attr(MT_ATTR_GLOBAL_MEMORY_BUS_WIDTH, d);
	p->l2CacheSize = attr(MT_ATTR_L2_CACHE_SIZE, d);
	p->persistingL2CacheMaxSize =
		attr(MT_ATTR_MAX_PERSISTING_L2_CACHE_SIZE, d);
	p->maxThreadsPerMultiProcessor =
		attr(MT_ATTR_MAX_THREADS_PER_MULTIPROCESSOR, d);
	p->streamPrioritiesSupported =
		attr(MT_ATTR_STREAM_PRIORITIES_SUPPORTED, d);
	p->globalL1CacheSupported = attr(MT_ATTR_GLOBAL_L1_CACHE_SUPPORTED, d);
	p->localL1CacheSupported = attr(MT_ATTR_LOCAL_L1_CACHE_SUPPORTED, d);
	p->sharedMemPerMultiprocessor =
		attr(MT_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d);
	p->regsPerMultiprocessor =
		attr(MT_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR, d);
	p->managedMemory = attr(MT_ATTR_MANAGED_MEMORY, d);
	p->isMultiGpuBoard = attr(MT_ATTR_IS_MULTI_GPU_BOARD, d);
	p->multiGpuBoardGroupID = attr(MT_ATTR_MULTI_GPU_BOARD_GROUP_ID, d);
	p->hostNativeAtomicSupported =
		attr(MT_ATTR_HOST_NATIVE_ATOMIC_SUPPORTED, d);
	p->singleToDoublePrecisionPerfRatio =
		attr(MT_ATTR_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, d);
	p->pageableMemoryAccess = attr(MT_ATTR_PAGEABLE_MEMORY_ACCESS, d);
	p->concurrentManagedAccess = attr(MT_ATTR_CONCURRENT_MANAGED_ACCESS, d);
	p->computePreemptionSupported =
		attr(MT_ATTR_COMPUTE_PREEMPTION_SUPPORTED, d);
	p->canUseHostPointerForRegisteredMem =
		attr(MT_ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, d);
	p->cooperativeLaunch = attr(MT_ATTR_COOPERATIVE_LAUNCH, d);
	p->cooperativeMultiDeviceLaunch =
		attr(MT_ATTR_COOPERATIVE_MULTI_DEVICE_LAUNCH, d);
	p->sharedMemPerBlockOptin =
		attr(MT_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d);
	p->pageableMemoryAccessUsesHostPageTables =
		attr(MT_ATTR_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, d);
	p->directManagedMemAccessFromHost =
		attr(MT_ATTR_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, d);
	p->maxBlocksPerMultiProcessor =
		attr(MT_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR, d);
	p->accessPolicyMaxWindowSize =
		attr(MT_ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE, d);
	p->reservedSharedMemPerBlock =
		attr(MT_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK, d);
	p->hostRegisterSupported = attr(MT_ATTR_HOST_REGISTER_SUPPORTED, d);
	p->sparseCudaArraySupported =
		attr(MT_ATTR_SPARSE_CUDA_ARRAY_SUPPORTED, d);
	p->hostRegisterReadOnlySupported =
		attr(MT_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED, d);
	p->timelineSemaphoreInteropSupported =
		attr(MT_ATTR_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, d);
	p->memoryPoolsSupported = attr(MT_ATTR_MEMORY_POOLS_SUPPORTED, d);
	p->gpuDirectRDMASupported = attr(MT_ATTR_GPU_DIRECT_RDMA_SUPPORTED, d);
	p->gpuDirectRDMAFlushWritesOptions =
		attr(MT_ATTR_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, d);
	p->gpuDirectRDMAWritesOrdering =
		attr(MT_ATTR_GPU_DIRECT_RDMA_WRITES_ORDERING, d);
	p->memoryPoolSupportedHandleTypes =
		attr(MT_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES, d);
	p->deferredMappingCudaArraySupported =
		attr(MT_ATTR_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, d);
	p->ipcEventSupported = attr(MT_ATTR_IPC_EVENT_SUPPORTED, d);
	p->clusterLaunch = attr(MT_ATTR_CLUSTER_LAUNCH, d);
	p->unifiedFunctionPointers = attr(MT_ATTR_UNIFIED_FUNCTION_POINTERS, d);
	return cudaSuccess;
}

/* cuda_runtime_api.h names the _v2 for both; binaries may ask for either. */
MT_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int dev)
{
	return get_props(prop, dev);
}

MT_API cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop,
					      int dev)
{
	return get_props(prop, dev);
}

MT_API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
	if (least)
		*least = LEAST_PRIORITY;
	if (greatest)
		*greatest = GREATEST_PRIORITY;
	return cudaSuccess;
}

MT_API cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
	if (!can)
		return note(cudaErrorInvalidValue);
	if (!valid_dev(dev) || !valid_dev(peer))
		return note(cudaErrorInvalidDevice);
	*can = dev != peer;
	return cudaSuccess;
}

static cudaError_t peer_access(int peer, unsigned int flags, bool enable)
{
	int dev = api->current();
	cudaError_t err = cudaSuccess;
	bool on;

	if (flags)
		return note(cudaErrorInvalidValue);
	if (!valid_dev(peer) || peer == dev)
		return note(cudaErrorInvalidDevice);
	lock_state();
	on = peers[dev] & (1u << peer);
	if (on == enable)
		err = enable ? cudaErrorPeerAccessAlreadyEnabled :
			       cudaErrorPeerAccessNotEnabled;
	else
		peers[dev] ^= 1u << peer;
	unlock_state();
	return note(err);
}

MT_API cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
	return peer_access(peer, flags, true);
}

MT_API cudaError_t cudaDeviceDisablePeerAccess(int peer)
{
	return peer_access(peer, 0, false);
}

MT_API cudaError_t cudaMalloc(void **ptr, size_t size)
{
	return note(api->alloc(ptr, size, api->current(), MT_DEVICE));
}

MT_API cudaError_t cudaMallocManaged(void **ptr, size_t size,
				     unsigned int flags)
{
	/* Documented: size 0 and flags other than Global/Host are errors. */
	if (size == 0 ||
	    (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
		return note(cudaErrorInvalidValue);
	return note(api->alloc(ptr, size, api->current(), MT_MANAGED));
}

static cudaError_t pool_alloc(void **ptr, size_t size, cudaStream_t stream)
{
	int dev = stream_dev(stream);
	struct pool *p = &pools[dev];
	int err = api->alloc(ptr, size, dev, MT_POOL);

	if (err)
		return note(err);
	lock_state();
	p->used += size;
	if (p->used > p->used_high)
		p->used_high = p->used;
	if (p->used > p->reserved_high)
		p->reserved_high = p->used;
	unlock_state();
	return cudaSuccess;
}

static cudaError_t free_device(const void *ptr)
{
	struct mt_block b;

	if (!ptr)
		return cudaSuccess;
	if (api->release(ptr, MT_DEVICE_KINDS, &b) != MT_OK)
		return note(cudaErrorInvalidValue);
	if (b.kind == MT_POOL) {
		lock_state();
		pools[b.dev].used -= b.size;
		unlock_state();
	}
	return cudaSuccess;
}

MT_API cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
	return pool_alloc(ptr, size, stream);
}

/* The per-thread default stream variants, which memtrace-bpf probes too. */
MT_API cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size,
					cudaStream_t stream)
{
	return pool_alloc(ptr, size, stream);
}

MT_API cudaError_t cudaFree(void *ptr)
{
	return free_device(ptr);
}

MT_API cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
	(void)stream; /* streams complete at once */
	return free_device(ptr);
}

MT_API cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream)
{
	(void)stream;
	return free_device(ptr);
}

MT_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return note(api->alloc(ptr, size, api->current(), MT_HOST));
}

MT_API cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
	if (flags & ~cudaHostAllocKnown)
		return note(cudaErrorInvalidValue);
	return note(api->alloc(ptr, size, api->current(), MT_HOST));
}

MT_API cudaError_t cudaFreeHost(void *ptr)
{
	if (!ptr)
		return cudaSuccess;
	if (api->release(ptr, MT_KIND_BIT(MT_HOST), NULL) != MT_OK)
		return note(cudaErrorInvalidValue);
	return cudaSuccess;
}

MT_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	if (!ptr || size == 0 || (flags & ~cudaHostRegisterKnown))
		return note(cudaErrorInvalidValue);
	/* The arguments are good: what fails is an overlap. */
	if (api->alloc(&ptr, size, api->current(), MT_REGISTERED) != MT_OK)
		return note(cudaErrorHostMemoryAlreadyRegistered);
	return cudaSuccess;
}

MT_API cudaError_t cudaHostUnregister(void *ptr)
{
	if (api->release(ptr, MT_KIND_BIT(MT_REGISTERED), NULL) != MT_OK)
		return note(cudaErrorHostMemoryNotRegistered);
	return cudaSuccess;
}

MT_API cudaError_t cudaHostGetDevicePointer(void **dev_ptr, void *host_ptr,
					    unsigned int flags)
{
	struct mt_block b;

	if (!dev_ptr || flags || !api->lookup(host_ptr, &b) ||
	    (b.kind != MT_HOST && b.kind != MT_REGISTERED))
		return note(cudaErrorInvalidValue);
	/* One address space: the device sees host memory where it is. */
	*dev_ptr = host_ptr;
	return cudaSuccess;
}

MT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
					    const void *ptr)
{
	struct mt_block b;

	if (!a)
		return note(cudaErrorInvalidValue);
	*a = (struct cudaPointerAttributes){ cudaMemoryTypeUnregistered, -2,
					     NULL, (void *)ptr };
	if (!api->lookup(ptr, &b))
		return cudaSuccess;
	a->device = b.dev;
	a->devicePointer = (void *)ptr;
	switch (b.kind) {
	case MT_DEVICE:
	case MT_POOL:
		a->type = cudaMemoryTypeDevice;
		a->hostPointer = NULL;
		break;
	case MT_MANAGED:
		a->type = cudaMemoryTypeManaged;
		break;
	case MT_HOST:
	case MT_REGISTERED:
		a->type = cudaMemoryTypeHost;
		break;
	}
	return cudaSuccess;
}

MT_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	if (!free_bytes || !total)
		return note(cudaErrorInvalidValue);
	*total = api->device_mem;
	*free_bytes = api->device_mem - api->held(api->current());
	return cudaSuccess;
}

/* Every kind is a plain copy: all the memory is the host's. */
static cudaError_t copy(void *dst, const void *src, size_t n, int kind,
			cudaStream_t stream)
{
	if (kind < 0 || kind > cudaMemcpyDefault)
		return note(cudaErrorInvalidMemcpyDirection);
	if (n && (!dst || !src))
		return note(cudaErrorInvalidValue);
	if (n && !captured(stream))
		memmove(dst, src, n);
	return cudaSuccess;
}

MT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	return copy(dst, src, n, kind, NULL);
}

MT_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
				   int kind, cudaStream_t stream)
{
	return copy(dst, src, n, kind, stream);
}

MT_API cudaError_t cudaMemcpyPeer(void *dst, int dst_dev, const void *src,
				  int src_dev, size_t n)
{
	if (!valid_dev(dst_dev) || !valid_dev(src_dev))
		return note(cudaErrorInvalidDevice);
	return copy(dst, src, n, cudaMemcpyDefault, NULL);
}

MT_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src,
				       int src_dev, size_t n,
				       cudaStream_t stream)
{
	if (!valid_dev(dst_dev) || !valid_dev(src_dev))
		return note(cudaErrorInvalidDevice);
	return copy(dst, src, n, cudaMemcpyDefault, stream);
}

static cudaError_t set(void *dst, int value, size_t n, cudaStream_t stream)
{
	if (n && !dst)
		return note(cudaErrorInvalidValue);
	if (n && !captured(stream))
		memset(dst, value, n);
	return cudaSuccess;
}

MT_API cudaError_t cudaMemset(void *dst, int value, size_t n)
{
	return set(dst, value, n, NULL);
}

MT_API cudaError_t cudaMemsetAsync(void *dst, int value, size_t n,
				   cudaStream_t stream)
{
	return set(dst, value, n, stream);
}

MT_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev)
{
	if (!pool)
		return note(cudaErrorInvalidValue);
	if (!valid_dev(dev))
		return note(cudaErrorInvalidDevice);
	*pool = &pools[dev];
	return cudaSuccess;
}

static bool valid_pool(cudaMemPool_t p)
{
	return p >= pools && p < pools + api->n_devices;
}

MT_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t p, int attr,
					   void *value)
{
	cudaError_t err = cudaSuccess;
	uint64_t *v64 = value;

	if (!valid_pool(p) || !value)
		return note(cudaErrorInvalidValue);
	lock_state();
	switch (attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		*(int *)value = p->reuse[attr - 1];
		break;
	case cudaMemPoolAttrReleaseThreshold:
		*v64 = p->release_threshold;
		break;
	case cudaMemPoolAttrReservedMemCurrent:
	case cudaMemPoolAttrUsedMemCurrent:
		*v64 = p->used;
		break;
	case cudaMemPoolAttrReservedMemHigh:
		*v64 = p->reserved_high;
		break;
	case cudaMemPoolAttrUsedMemHigh:
		*v64 = p->used_high;
		break;
	default:
		err = cudaErrorInvalidValue;
	}
	unlock_state();
	return note(err);
}

MT_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t p, int attr,
					   void *value)
{
	cudaError_t err = cudaSuccess;
	const uint64_t *v64 = value;

	if (!valid_pool(p) || !value)
		return note(cudaErrorInvalidValue);
	lock_state();
	switch (attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		p->reuse[attr - 1] = *(const int *)value;
		break;
	case cudaMemPoolAttrReleaseThreshold:
		p->release_threshold = *v64;
		break;
	/* A high-water mark may only be reset, to the current value. */
	case cudaMemPoolAttrReservedMemHigh:
		if (*v64)
			err = cudaErrorInvalidValue;
		else
			p->reserved_high = p->used;
		break;
	case cudaMemPoolAttrUsedMemHigh:
		if (*v64)
			err = cudaErrorInvalidValue;
		else
			p->used_high = p->used;
		break;
	default:
		err = cudaErrorInvalidValue;
	}
	unlock_state();
	return note(err);
}

MT_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t p, size_t keep)
{
	(void)keep; /* nothing is cached to trim */
	return valid_pool(p) ? cudaSuccess : note(cudaErrorInvalidValue);
}

MT_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t p, const void *desc,
					size_t count)
{
	if (!valid_pool(p) || (count && !desc))
		return note(cudaErrorInvalidValue);
	return cudaSuccess;
}

/* No interprocess handles: a stand-in's memory is its process's. */
#define NOT_SUPPORTED(name)                         \
	MT_API cudaError_t name(void)               \
	{                                           \
		return note(cudaErrorNotSupported); \
	}

NOT_SUPPORTED(cudaIpcGetMemHandle)
NOT_SUPPORTED(cudaIpcOpenMemHandle)
NOT_SUPPORTED(cudaIpcCloseMemHandle)
NOT_SUPPORTED(cudaIpcGetEventHandle)
NOT_SUPPORTED(cudaIpcOpenEventHandle)

static cudaError_t new_stream(cudaStream_t *out, unsigned int flags,
			      int priority)
{
	struct stream *s;

	if (!out || (flags & ~cudaStreamNonBlocking))
		return note(cudaErrorInvalidValue);
	s = calloc(1, sizeof(*s));
	if (!s)
		return note(cudaErrorMemoryAllocation);
	/* Out-of-range priorities are clamped, as documented. */
	if (priority > LEAST_PRIORITY)
		priority = LEAST_PRIORITY;
	if (priority < GREATEST_PRIORITY)
		priority = GREATEST_PRIORITY;
	*s = (struct stream){ .dev = api->current(),
			      .priority = priority,
			      .flags = flags };
	lock_state();
	s->next = streams;
	streams = s;
	unlock_state();
	*out = s;
	return cudaSuccess;
}

MT_API cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	return new_stream(s, 0, LEAST_PRIORITY);
}

MT_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s,
					     unsigned int flags)
{
	return new_stream(s, flags, LEAST_PRIORITY);
}

MT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s,
						unsigned int flags,
						int priority)
{
	return new_stream(s, flags, priority);
}

MT_API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	struct stream **pp;
	cudaError_t err = cudaErrorInvalidResourceHandle;

	lock_state();
	for (pp = &streams; *pp; pp = &(*pp)->next) {
		if (*pp != s)
			continue;
		if (s->cap) {
			err = cudaErrorStreamCaptureUnsupported;
			break;
		}
		*pp = s->next;
		free(s);
		err = cudaSuccess;
		break;
	}
	unlock_state();
	return note(err);
}

MT_STUB(cudaError_t, cudaStreamQuery, cudaSuccess)
MT_STUB(cudaError_t, cudaStreamSynchronize, cudaSuccess)

MT_API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority)
{
	if (!priority)
		return note(cudaErrorInvalidValue);
	*priority = stream_of(s) ? s->priority : LEAST_PRIORITY;
	return cudaSuccess;
}

MT_API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *flags)
{
	if (!flags)
		return note(cudaErrorInvalidValue);
	*flags = stream_of(s) ? s->flags : 0;
	return cudaSuccess;
}

MT_API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn,
				      void *data)
{
	if (!fn)
		return note(cudaErrorInvalidValue);
	/* The stream's earlier work is done: the function's turn is now. */
	if (!captured(s))
		fn(data);
	return cudaSuccess;
}

MT_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, int mode)
{
	struct capture *cap;
	struct graph *g;
	cudaError_t err = cudaSuccess;

	if (mode < 0 || mode > cudaStreamCaptureModeRelaxed)
		return note(cudaErrorInvalidValue);
	if (!stream_of(s))
		return note(cudaErrorStreamCaptureUnsupported);
	cap = malloc(sizeof(*cap));
	g = calloc(1, sizeof(*g));
	if (!cap || !g) {
		free(cap);
		free(g);
		return note(cudaErrorMemoryAllocation);
	}
	lock_state();
	if (s->cap) {
		err = cudaErrorIllegalState;
	} else {
		*cap = (struct capture){ next_capture_id++, s, g };
		s->cap = cap;
	}
	unlock_state();
	if (err) {
		free(cap);
		free(g);
	}
	return note(err);
}

MT_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
	struct capture *cap;
	struct stream *t;
	char *nodes = NULL;

	if (!graph || !stream_of(s))
		return note(cudaErrorInvalidValue);
	lock_state();
	cap = s->cap;
	if (!cap || cap->origin != s) {
		unlock_state();
		return note(cap ? cudaErrorStreamCaptureUnmatched :
				  cudaErrorIllegalState);
	}
	if (cap->graph->n_nodes) {
		nodes = malloc(cap->graph->n_nodes);
		if (!nodes) {
			unlock_state();
			return note(cudaErrorMemoryAllocation);
		}
	}
	/* The streams that joined through events leave with the origin. */
	for (t = streams; t; t = t->next)
		if (t->cap == cap)
			t->cap = NULL;
	unlock_state();
	cap->graph->nodes = nodes;
	*graph = cap->graph;
	free(cap);
	return cudaSuccess;
}

MT_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, int *status)
{
	if (!status)
		return note(cudaErrorInvalidValue);
	lock_state();
	*status = stream_of(s) && s->cap ? cudaStreamCaptureStatusActive :
					   cudaStreamCaptureStatusNone;
	unlock_state();
	return cudaSuccess;
}

static cudaError_t capture_info(cudaStream_t s, int *status,
				unsigned long long *id, cudaGraph_t *graph,
				const cudaGraphNode_t **deps, size_t *n_deps)
{
	struct capture *cap = NULL;

	if (!status)
		return note(cudaErrorInvalidValue);
	lock_state();
	if (stream_of(s))
		cap = s->cap;
	*status = cap ? cudaStreamCaptureStatusActive :
			cudaStreamCaptureStatusNone;
	if (id && cap)
		*id = cap->id;
	if (graph)
		*graph = cap ? cap->graph : NULL;
	unlock_state();
	/* Nodes are counted, not linked: none is a dependency. */
	if (deps)
		*deps = NULL;
	if (n_deps)
		*n_deps = 0;
	return cudaSuccess;
}

MT_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, int *status,
					    unsigned long long *id)
{
	return capture_info(s, status, id, NULL, NULL, NULL);
}

MT_API cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t s, int *status,
					       unsigned long long *id,
					       cudaGraph_t *graph,
					       const cudaGraphNode_t **deps,
					       size_t *n_deps)
{
	return capture_info(s, status, id, graph, deps, n_deps);
}

MT_API cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode)
{
	int old = capture_mode;

	if (!mode || *mode < 0 || *mode > cudaStreamCaptureModeRelaxed)
		return note(cudaErrorInvalidValue);
	capture_mode = *mode;
	*mode = old;
	return cudaSuccess;
}

MT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
	if (!e || (flags & ~cudaEventKnown))
		return note(cudaErrorInvalidValue);
	*e = calloc(1, sizeof(**e));
	if (!*e)
		return note(cudaErrorMemoryAllocation);
	(*e)->flags = flags;
	return cudaSuccess;
}

MT_API cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	return cudaEventCreateWithFlags(e, 0);
}

MT_API cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	if (!e)
		return note(cudaErrorInvalidResourceHandle);
	free(e);
	return cudaSuccess;
}

MT_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	struct timespec now;

	if (!e)
		return note(cudaErrorInvalidResourceHandle);
	lock_state();
	e->cap_id = stream_of(s) && s->cap ? s->cap->id : 0;
	unlock_state();
	if (e->cap_id)
		return cudaSuccess;
	if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		return note(cudaErrorInvalidValue);
	e->at = now;
	e->recorded = true;
	return cudaSuccess;
}

MT_API cudaError_t cudaEventQuery(cudaEvent_t e)
{
	return e ? cudaSuccess : note(cudaErrorInvalidResourceHandle);
}

MT_API cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	return e ? cudaSuccess : note(cudaErrorInvalidResourceHandle);
}

MT_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
					cudaEvent_t end)
{
	if (!ms || !start || !end)
		return note(cudaErrorInvalidValue);
	if ((start->flags | end->flags) & cudaEventDisableTiming ||
	    !start->recorded || !end->recorded)
		return note(cudaErrorInvalidResourceHandle);
	*ms = (float)((double)(end->at.tv_sec - start->at.tv_sec) * 1e3 +
		      (double)(end->at.tv_nsec - start->at.tv_nsec) / 1e6);
	return cudaSuccess;
}

/* A stream that waits on an event recorded in a capture joins it. */
MT_API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
				       unsigned int flags)
{
	struct stream *t;

	(void)flags;
	if (!e)
		return note(cudaErrorInvalidResourceHandle);
	if (!stream_of(s))
		return cudaSuccess;
	lock_state();
	for (t = streams; t && e->cap_id && !s->cap; t = t->next)
		if (t->cap && t->cap->id == e->cap_id)
			s->cap = t->cap;
	unlock_state();
	return cudaSuccess;
}

static cudaError_t instantiate(cudaGraphExec_t *exec, cudaGraph_t g)
{
	if (!exec || !g)
		return note(cudaErrorInvalidValue);
	*exec = malloc(sizeof(**exec));
	if (!*exec)
		return note(cudaErrorMemoryAllocation);
	(*exec)->n_nodes = g->n_nodes;
	return cudaSuccess;
}

MT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g,
					unsigned long long flags)
{
	(void)flags;
	return instantiate(exec, g);
}

MT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec,
						 cudaGraph_t g,
						 unsigned long long flags)
{
	(void)flags;
	return instantiate(exec, g);
}

MT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
	if (!exec)
		return note(cudaErrorInvalidValue);
	(void)captured(s);
	return cudaSuccess;
}

MT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
	if (!exec)
		return note(cudaErrorInvalidValue);
	free(exec);
	return cudaSuccess;
}

MT_API cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
	if (!g)
		return note(cudaErrorInvalidValue);
	free(g->nodes);
	free(g);
	return cudaSuccess;
}

MT_API cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes,
				     size_t *n)
{
	size_t i;

	if (!g || !n)
		return note(cudaErrorInvalidValue);
	for (i = 0; nodes && i < *n && i < g->n_nodes; i++)
		nodes[i] = g->nodes + i;
	for (; nodes && i < *n; i++)
		nodes[i] = NULL;
	*n = g->n_nodes;
	return cudaSuccess;
}

MT_API cudaError_t cudaGraphDebugDotPrint(cudaGraph_t g, const char *path,
					  unsigned int flags)
{
	FILE *f;
	size_t i;
	int bad;

	(void)flags;
	if (!g || !path)
		return note(cudaErrorInvalidValue);
	f = fopen(path, "w");
	if (!f)
		return note(cudaErrorInvalidValue);
	bad = fprintf(f, "digraph dot {\n") < 0;
	for (i = 0; i < g->n_nodes; i++)
		bad |= fprintf(f, "\tnode%zu [label=\"captured work\"];\n", i) <
		       0;
	bad |= fprintf(f, "}\n") < 0;
	bad |= fclose(f) != 0;
	return bad ? note(cudaErrorInvalidValue) : cudaSuccess;
}

/*
 * Kernel registration, run by the constructors of libraries with device
 * code (thousands of kernels in libtorch_cuda): nothing is kept, since no
 * kernel runs.  The handle is never looked into by the caller.
 */
static void *fatbin_handle;

MT_API void **__cudaRegisterFatBinary(void *fatbin)
{
	(void)fatbin;
	return &fatbin_handle;
}

MT_API void __cudaRegisterFatBinaryEnd(void)
{
}

MT_API void __cudaUnregisterFatBinary(void)
{
}

MT_API void __cudaRegisterFunction(void)
{
}

MT_API void __cudaRegisterVar(void)
{
}

/* The <<<>>> launch: nvcc's stub pushes the configuration, then pops it. */
MT_API unsigned int __cudaPushCallConfiguration(dim3 grid, dim3 block,
						size_t shmem, void *stream)
{
	call_config.grid = grid;
	call_config.block = block;
	call_config.shmem = shmem;
	call_config.stream = stream;
	return cudaSuccess;
}

MT_API cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block,
					      size_t *shmem, void *stream)
{
	*grid = call_config.grid;
	*block = call_config.block;
	*shmem = call_config.shmem;
	*(void **)stream = call_config.stream;
	return cudaSuccess;
}

static cudaError_t launch(const void *func, dim3 grid, dim3 block,
			  cudaStream_t stream)
{
	unsigned long long threads =
		(unsigned long long)block.x * block.y * block.z;

	if (!func)
		return note(cudaErrorInvalidDeviceFunction);
	if (!grid.x || !grid.y || !grid.z || grid.x > INT_MAX ||
	    grid.y > 65535 || grid.z > 65535 || !threads || threads > 1024 ||
	    block.z > 64)
		return note(cudaErrorInvalidConfiguration);
	(void)captured(stream);
	return cudaSuccess;
}

MT_API cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
				    void **args, size_t shmem,
				    cudaStream_t stream)
{
	(void)args;
	(void)shmem;
	return launch(func, grid, block, stream);
}

MT_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
				       const void *func, void **args)
{
	(void)args;
	if (!config)
		return note(cudaErrorInvalidValue);
	return launch(func, config->gridDim, config->blockDim, config->stream);
}

MT_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a,
					 const void *func)
{
	if (!a)
		return note(cudaErrorInvalidValue);
	if (!func)
		return note(cudaErrorInvalidDeviceFunction);
	*a = (struct cudaFuncAttributes){
		.maxThreadsPerBlock = 1024,
		.numRegs = 32,
		.ptxVersion = 90,
		.binaryVersion = 90,
		.maxDynamicSharedSizeBytes = 49152,
		.preferredShmemCarveout = -1,
	};
	return cudaSuccess;
}

MT_STUB(cudaError_t, cudaFuncSetAttribute, cudaSuccess)

static cudaError_t occupancy(int *n, const void *func, int block_size)
{
	if (!n || block_size <= 0)
		return note(cudaErrorInvalidValue);
	if (!func)
		return note(cudaErrorInvalidDeviceFunction);
	*n = mt_occupancy(block_size);
	return cudaSuccess;
}

MT_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
	int *n, const void *func, int block_size, size_t dyn_smem)
{
	(void)dyn_smem;
	return occupancy(n, func, block_size);
}

MT_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *n, const void *func, int block_size, size_t dyn_smem,
	unsigned int flags)
{
	(void)dyn_smem;
	(void)flags;
	return occupancy(n, func, block_size);
}

MT_STUB(cudaError_t, cudaProfilerStart, cudaSuccess)
MT_STUB(cudaError_t, cudaProfilerStop, cudaSuccess)
