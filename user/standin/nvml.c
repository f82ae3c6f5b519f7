/*
 * nvml.c - libnvidia-ml.so.1 of the CUDA stand-in (see standin.h).
 *
 * c10 dlopen()s NVML and dlsym()s nvmlInit_v2,
 * nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetComputeRunningProcesses
 * and two NVLink queries, asserting on each: with them, the caching
 * allocator's out-of-memory message says how much memory the process
 * holds ("Including non-PyTorch memory, this process has ...").
 * torch.cuda counts devices and reads UUIDs with it too.  A process's
 * memory is what the stand-in handed it on the device and its context
 * (MT_STANDIN_CONTEXT_MEM): the calling process's from the state, every
 * other's from the registry (standin.h), so that a tracer's NVML sees the
 * traced processes as a GPU's driver shows them to nvidia-smi.
 */
#define _GNU_SOURCE

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standin.h"

typedef int nvmlReturn_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct dev {
	int index;
};

typedef struct dev *nvmlDevice_t;

typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* nvmlProcessInfo_t of the _v2 and _v3 calls */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_v3_t;

/* A process on a device, and the bytes it uses there. */
struct proc_use {
	unsigned int pid;
	unsigned long long used;
};

#define MAX_PROCS 64

static const struct mt_standin_api *api;
static struct dev devs[MT_MAX_DEVICES];
static atomic_int inits;

__attribute__((constructor)) static void load(void)
{
	int i;

	api = mt_standin_api();
	for (i = 0; i < MT_MAX_DEVICES; i++)
		devs[i].index = i;
}

/* Whether d is a handle of this library, once it is initialised. */
static nvmlReturn_t check(nvmlDevice_t d)
{
	if (atomic_load(&inits) == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (d < devs || d >= devs + api->n_devices)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

static nvmlReturn_t init(void)
{
	atomic_fetch_add(&inits, 1);
	return NVML_SUCCESS;
}

MT_API nvmlReturn_t nvmlInit_v2(void)
{
	/* the knob's faults are for the first call a caller makes */
	if (api->nvml_fault == MT_NVML_FPE)
		raise(SIGFPE);
	while (api->nvml_fault == MT_NVML_HANG)
		pause();
	return init();
}

MT_API nvmlReturn_t nvmlInit(void)
{
	return init();
}

MT_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	(void)flags;
	return init();
}

MT_API nvmlReturn_t nvmlShutdown(void)
{
	int n = atomic_load(&inits);

	while (n > 0 && !atomic_compare_exchange_weak(&inits, &n, n - 1))
		;
	return n > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

MT_API const char *nvmlErrorString(nvmlReturn_t ret)
{
	switch (ret) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	default:
		return "Unknown Error";
	}
}

static nvmlReturn_t count(unsigned int *n)
{
	if (atomic_load(&inits) == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	*n = (unsigned int)api->n_devices;
	return NVML_SUCCESS;
}

MT_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	return count(n);
}

MT_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *n)
{
	return count(n);
}

static nvmlReturn_t by_index(unsigned int i, nvmlDevice_t *d)
{
	if (atomic_load(&inits) == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || i >= (unsigned int)api->n_devices)
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = &devs[i];
	return NVML_SUCCESS;
}

MT_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i,
						  nvmlDevice_t *d)
{
	return by_index(i, d);
}

MT_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d)
{
	return by_index(i, d);
}

/* The bus id as c10 writes it from cudaDeviceProp: "%08X:%02X:%02X.0". */
static nvmlReturn_t by_pci_bus_id(const char *id, nvmlDevice_t *d)
{
	unsigned int domain, bus, device, function;
	int i, v[3];

	if (atomic_load(&inits) == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!id || !d ||
	    sscanf(id, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (i = 0; i < api->n_devices; i++) {
		if (!api->attribute(MT_ATTR_PCI_DOMAIN_ID, i, &v[0]) ||
		    !api->attribute(MT_ATTR_PCI_BUS_ID, i, &v[1]) ||
		    !api->attribute(MT_ATTR_PCI_DEVICE_ID, i, &v[2]))
			return NVML_ERROR_NOT_SUPPORTED;
		if ((unsigned int)v[0] == domain && (unsigned int)v[1] == bus &&
		    (unsigned int)v[2] == device && function == 0) {
			*d = &devs[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

MT_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id,
						     nvmlDevice_t *d)
{
	return by_pci_bus_id(id, d);
}

MT_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *id,
						  nvmlDevice_t *d)
{
	return by_pci_bus_id(id, d);
}

MT_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index)
{
	nvmlReturn_t ret = check(d);

	if (ret)
		return ret;
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = (unsigned int)d->index;
	return NVML_SUCCESS;
}

MT_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name,
				      unsigned int length)
{
	nvmlReturn_t ret = check(d);

	if (ret)
		return ret;
	if (!name)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (length <= strlen(api->name))
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(name, api->name, strlen(api->name) + 1);
	return NVML_SUCCESS;
}

MT_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid,
				      unsigned int length)
{
	nvmlReturn_t ret = check(d);
	unsigned char u[16];
	int n;

	if (ret)
		return ret;
	if (!uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	mt_uuid(d->index, u);
	n = snprintf(uuid, length,
		     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		     "%02x%02x%02x%02x%02x%02x",
		     u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		     u[10], u[11], u[12], u[13], u[14], u[15]);
	if (n < 0 || (unsigned int)n >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	return NVML_SUCCESS;
}

/*
 * The bytes process pid's registry file says it uses on dev; 0 when it
 * has none, or one another process left with its pid.
 */
static unsigned long long registered(unsigned int pid, int dev)
{
	struct mt_registry r;
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/root" MT_REGISTRY_FILE, pid,
		 (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = pread(fd, &r, sizeof(r), 0);
	close(fd);
	if (n != (ssize_t)sizeof(r) || r.magic != MT_REGISTRY_MAGIC)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (r.start != mt_start_time(path))
		return 0;
	return r.used[dev];
}

/*
 * The processes using memory on dev, the caller first, at most max;
 * how many there are.
 */
static unsigned int processes(int dev, struct proc_use *v, unsigned int max)
{
	unsigned int n = 0, self = (unsigned int)getpid();
	unsigned long long used = api->used(dev);
	struct dirent *e;
	DIR *d;

	if (used && n < max)
		v[n] = (struct proc_use){ self, used };
	n += used != 0;
	d = opendir("/proc");
	if (!d)
		return n;
	while ((e = readdir(d))) {
		unsigned int pid = (unsigned int)atoi(e->d_name);

		if (!isdigit((unsigned char)e->d_name[0]) || pid == self)
			continue;
		used = registered(pid, dev);
		if (!used)
			continue;
		if (n < max)
			v[n] = (struct proc_use){ pid, used };
		n++;
	}
	closedir(d);
	return n;
}

MT_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *mem)
{
	struct proc_use v[MAX_PROCS];
	nvmlReturn_t ret = check(d);
	unsigned int n;

	if (ret)
		return ret;
	if (!mem)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = processes(d->index, v, MAX_PROCS);
	mem->total = api->device_mem;
	mem->used = 0;
	for (unsigned int i = 0; i < n && i < MAX_PROCS; i++)
		mem->used += v[i].used;
	if (mem->used > mem->total)
		mem->used = mem->total;
	mem->free = mem->total - mem->used;
	return NVML_SUCCESS;
}

/*
 * A process is listed on a device from its first allocation there (its
 * context) while it uses memory there: infos of either layout, each
 * element size bytes.
 */
static nvmlReturn_t running(nvmlDevice_t d, unsigned int *count, void *infos,
			    bool v3)
{
	struct proc_use v[MAX_PROCS];
	nvmlReturn_t ret = check(d);
	unsigned int n;

	if (ret)
		return ret;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = processes(d->index, v, MAX_PROCS);
	if (n > MAX_PROCS)
		n = MAX_PROCS;
	if (n > *count || (n && !infos)) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (v3)
			((nvmlProcessInfo_v3_t *)infos)[i] =
				(nvmlProcessInfo_v3_t){ v[i].pid, v[i].used,
							0xffffffff,
							0xffffffff };
		else
			((nvmlProcessInfo_v1_t *)infos)[i] =
				(nvmlProcessInfo_v1_t){ v[i].pid, v[i].used };
	}
	*count = n;
	return NVML_SUCCESS;
}

MT_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(
	nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v1_t *infos)
{
	return running(d, count, infos, false);
}

MT_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
	nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v3_t *infos)
{
	return running(d, count, infos, true);
}

/* No NVLink. */
MT_STUB(nvmlReturn_t, nvmlDeviceGetNvLinkRemoteDeviceType,
	NVML_ERROR_NOT_SUPPORTED)
MT_STUB(nvmlReturn_t, nvmlDeviceGetNvLinkRemotePciInfo_v2,
	NVML_ERROR_NOT_SUPPORTED)
