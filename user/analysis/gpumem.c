// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analysis/gpumem.h"
#include "lib/helper.h"

#define GPUMEM_DEVS 128 /* CUDA device indexes; c10's are int8 */
/* NVML's first use starts the driver's state of every GPU: seconds */
#define NVML_TIMEOUT_MS 10000
#define SMI_TIMEOUT_MS 10000
#define NVML_LIB "libnvidia-ml.so.1"

/* the few NVML declarations used (nvml.h need not be installed) */
typedef struct nvml_device_st *nvml_device_t; /* nvmlDevice_t */
struct nvml_memory { /* nvmlMemory_t */
	unsigned long long total, free, used;
};
struct nvml_proc_v1 { /* nvmlProcessInfo_v1_t */
	unsigned int pid;
	unsigned long long used;
};
struct nvml_proc_v3 { /* nvmlProcessInfo_t of the _v2 and _v3 calls */
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};
/* usedGpuMemory where the driver cannot tell (Windows' WDDM) */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_PROCS 64 /* processes a device, asked at once */

enum stage { ST_NVML, ST_SMI, ST_DONE };

struct mt_gpumem {
	enum stage stage;
	struct mt_helper h;
	bool known[GPUMEM_DEVS];
	__u64 bytes[GPUMEM_DEVS];
	int count; /* devices the source counted; -1: none answered */
	const char *source;
	char nvml_why[384]; /* why NVML gave no size */
	char why[512];
};

void mt_gpumem_free(struct mt_gpumem *g)
{
	if (!g)
		return;
	if (g->stage == ST_NVML || g->stage == ST_SMI)
		mt_helper_stop(&g->h);
	free(g);
}

/*
 * A line to the parent; when it cannot be written the parent has stopped
 * listening, and the child has nothing left to do.
 */
__attribute__((format(printf, 2, 3))) static void say(int fd, const char *fmt,
						      ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vdprintf(fd, fmt, ap);
	va_end(ap);
	if (n < 0)
		_exit(1);
}

/*
 * In the helper process, the processes on device i: "proc INDEX PID
 * BYTES" each, from the newest call the library has (the _v3 call's
 * entries are larger than the first one's).
 */
static int nvml_procs(int fd, void *lib, nvml_device_t dev, unsigned int i)
{
	int (*v3)(nvml_device_t, unsigned int *, struct nvml_proc_v3 *);
	int (*v1)(nvml_device_t, unsigned int *, struct nvml_proc_v1 *);
	struct nvml_proc_v3 p3[NVML_PROCS];
	struct nvml_proc_v1 p1[NVML_PROCS];
	unsigned int n = NVML_PROCS;
	int err;

	v3 = (int (*)(nvml_device_t, unsigned int *, struct nvml_proc_v3 *))
		dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	v1 = (int (*)(nvml_device_t, unsigned int *, struct nvml_proc_v1 *))
		dlsym(lib, "nvmlDeviceGetComputeRunningProcesses");
	say(fd, "at nvmlDeviceGetComputeRunningProcesses of cuda:%u\n", i);
	if (!v3 && !v1)
		return -1;
	err = v3 ? v3(dev, &n, p3) : v1(dev, &n, p1);
	if (err)
		return err;
	for (unsigned int k = 0; k < n && k < NVML_PROCS; k++) {
		unsigned long long used = v3 ? p3[k].used : p1[k].used;

		if (used != NVML_VALUE_NOT_AVAILABLE)
			say(fd, "proc %u %u %llu\n", i,
			    v3 ? p3[k].pid : p1[k].pid, used);
	}
	return 0;
}

/*
 * In the helper process: "at STEP" before each step that may crash or
 * hang (so the parent can name it), then "dev INDEX BYTES" (or, asked
 * for the processes, arg not NULL: their "proc" lines) or "err INDEX
 * TEXT" a device, or "fail TEXT".
 */
static int nvml_child(int fd, void *arg)
{
	int (*init)(void), (*count)(unsigned int *);
	int (*by_index)(unsigned int, nvml_device_t *);
	int (*mem_info)(nvml_device_t, struct nvml_memory *);
	const char *(*err_str)(int);
	unsigned int n;
	void *lib;
	int err;

	say(fd, "at dlopen(" NVML_LIB ")\n");
	lib = dlopen(NVML_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		say(fd, "fail %s\n", dlerror());
		return 1;
	}
	init = (int (*)(void))dlsym(lib, "nvmlInit_v2");
	count = (int (*)(unsigned int *))dlsym(lib, "nvmlDeviceGetCount_v2");
	by_index = (int (*)(unsigned int, nvml_device_t *))dlsym(
		lib, "nvmlDeviceGetHandleByIndex_v2");
	mem_info = (int (*)(nvml_device_t, struct nvml_memory *))dlsym(
		lib, "nvmlDeviceGetMemoryInfo");
	err_str = (const char *(*)(int))dlsym(lib, "nvmlErrorString");
	if (!init || !count || !by_index || !mem_info || !err_str) {
		say(fd, "fail " NVML_LIB " lacks an NVML function\n");
		return 1;
	}
	say(fd, "at nvmlInit_v2\n");
	err = init();
	if (err) {
		say(fd, "fail nvmlInit_v2: %s (%d)\n", err_str(err), err);
		return 1;
	}
	say(fd, "at nvmlDeviceGetCount_v2\n");
	err = count(&n);
	if (err) {
		say(fd, "fail nvmlDeviceGetCount_v2: %s (%d)\n", err_str(err),
		    err);
		return 1;
	}
	for (unsigned int i = 0; i < n && i < GPUMEM_DEVS; i++) {
		struct nvml_memory m;
		nvml_device_t dev;

		say(fd, "at nvmlDeviceGetMemoryInfo of cuda:%u\n", i);
		err = by_index(i, &dev);
		if (!err && arg)
			err = nvml_procs(fd, lib, dev, i);
		else if (!err)
			err = mem_info(dev, &m);
		if (err < 0)
			say(fd, "err %u " NVML_LIB " lacks an NVML function\n",
			    i);
		else if (err)
			say(fd, "err %u %s (%d)\n", i, err_str(err), err);
		else if (!arg)
			say(fd, "dev %u %llu\n", i, m.total);
	}
	/* no nvmlShutdown: the process ends here, and the driver with it */
	return 0;
}

static void set_size(struct mt_gpumem *g, unsigned int i, __u64 bytes)
{
	if (i >= GPUMEM_DEVS)
		return;
	g->known[i] = true;
	g->bytes[i] = bytes;
	if ((int)i >= g->count)
		g->count = (int)i + 1;
}

/* the helper's lines; true when a device's size came */
static bool read_nvml(struct mt_gpumem *g, char *at, size_t atlen, char *fail,
		      size_t faillen)
{
	unsigned long long bytes;
	unsigned int i;
	int off;
	bool any = false;

	*at = *fail = '\0';
	for (char *l = g->h.out, *end; *l; l = *end ? end + 1 : end) {
		end = strchrnul(l, '\n');
		if (!strncmp(l, "at ", 3))
			snprintf(at, atlen, "%.*s", (int)(end - l - 3), l + 3);
		else if (!strncmp(l, "fail ", 5))
			snprintf(fail, faillen, "%.*s", (int)(end - l - 5),
				 l + 5);
		else if (sscanf(l, "dev %u %llu", &i, &bytes) == 2) {
			set_size(g, i, bytes);
			any = true;
		} else if (sscanf(l, "err %u %n", &i, &off) == 1 && !*fail)
			snprintf(fail, faillen,
				 "nvmlDeviceGetMemoryInfo of cuda:%u: %.*s", i,
				 (int)(end - l - off), l + off);
	}
	return any;
}

/* nvidia-smi, when NVML gave nothing: false if there is none */
static bool start_smi(struct mt_gpumem *g)
{
	char path[4096];
	char *argv[] = { "nvidia-smi", "--query-gpu=index,memory.total",
			 "--format=csv,noheader,nounits", NULL };
	int ret;

	if (!mt_helper_which("nvidia-smi", path, sizeof(path))) {
		snprintf(g->why, sizeof(g->why), "%s; no nvidia-smi on PATH",
			 g->nvml_why);
		return false;
	}
	ret = mt_helper_exec(&g->h, path, argv, SMI_TIMEOUT_MS);
	if (ret) {
		snprintf(g->why, sizeof(g->why), "%s; nvidia-smi: fork: %s",
			 g->nvml_why, strerror(-ret));
		return false;
	}
	g->stage = ST_SMI;
	return true;
}

static void nvml_done(struct mt_gpumem *g)
{
	char at[128], fail[256], end[64];

	if (read_nvml(g, at, sizeof(at), fail, sizeof(fail))) {
		g->source = "NVML";
		/* a device NVML could not read is named, if it is asked for */
		if (*fail)
			snprintf(g->why, sizeof(g->why), "NVML: %s", fail);
		g->stage = ST_DONE;
		return;
	}
	if (*fail)
		snprintf(g->nvml_why, sizeof(g->nvml_why), "NVML: %s", fail);
	else if (mt_helper_ok(&g->h))
		snprintf(g->nvml_why, sizeof(g->nvml_why), "NVML: no device");
	else
		snprintf(g->nvml_why, sizeof(g->nvml_why),
			 "NVML: %s %s in a helper process%s", *at ? at : "?",
			 mt_helper_end(&g->h, end, sizeof(end)),
			 mt_helper_signaled(&g->h) && mt_static_binary() ?
				 ": a static memtrace-bpf cannot load this "
				 "system's libnvidia-ml" :
				 "");
	g->stage = start_smi(g) ? ST_SMI : ST_DONE;
}

static void smi_done(struct mt_gpumem *g)
{
	unsigned long long mib;
	unsigned int i;
	char end[64];
	bool any = false;

	for (char *l = g->h.out, *e; *l; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		if (sscanf(l, "%u, %llu", &i, &mib) == 2) {
			set_size(g, i, (__u64)mib << 20);
			any = true;
		}
	}
	g->stage = ST_DONE;
	if (any && mt_helper_ok(&g->h)) {
		g->source = "nvidia-smi";
		snprintf(g->why, sizeof(g->why), "%s", g->nvml_why);
		return;
	}
	/* its first line says what it found wrong */
	snprintf(g->why, sizeof(g->why), "%s; nvidia-smi %s: %.*s", g->nvml_why,
		 mt_helper_end(&g->h, end, sizeof(end)),
		 (int)strcspn(g->h.out, "\n"), g->h.out);
}

struct mt_gpumem *mt_gpumem_new(void)
{
	struct mt_gpumem *g = calloc(1, sizeof(*g));
	int ret;

	if (!g)
		return NULL;
	g->count = -1;
	ret = mt_helper_run(&g->h, nvml_child, NULL, NVML_TIMEOUT_MS);
	if (ret) {
		snprintf(g->nvml_why, sizeof(g->nvml_why), "NVML: fork: %s",
			 strerror(-ret));
		g->stage = start_smi(g) ? ST_SMI : ST_DONE;
	} else {
		g->stage = ST_NVML;
	}
	return g;
}

void mt_gpumem_poll(struct mt_gpumem *g)
{
	if (g->stage == ST_NVML && mt_helper_poll(&g->h, false))
		nvml_done(g);
	if (g->stage == ST_SMI && mt_helper_poll(&g->h, false))
		smi_done(g);
}

enum mt_gpumem_state mt_gpumem_size(struct mt_gpumem *g, int index,
				    __u64 *bytes)
{
	mt_gpumem_poll(g);
	if (g->stage != ST_DONE)
		return MT_GPUMEM_ASKING;
	if (index >= 0 && index < GPUMEM_DEVS && g->known[index]) {
		*bytes = g->bytes[index];
		return MT_GPUMEM_KNOWN;
	}
	if (g->source && index >= g->count)
		snprintf(g->why, sizeof(g->why), "%s counts %d devices",
			 g->source, g->count);
	return MT_GPUMEM_UNKNOWN;
}

const char *mt_gpumem_why(const struct mt_gpumem *g)
{
	return *g->why ? g->why : NULL;
}

int mt_gpumem_procs_start(struct mt_helper *h)
{
	/* any pointer: the child asks for the processes */
	static int procs;

	return mt_helper_run(h, nvml_child, &procs, NVML_TIMEOUT_MS);
}

int mt_gpumem_procs_read(const struct mt_helper *h, struct mt_gpuproc *v,
			 int max, char *why, size_t len)
{
	const char *at = NULL, *fail = NULL;
	unsigned long long used;
	unsigned int i, pid;
	int n = 0, atlen = 0, faillen = 0, off, dev = -1;
	char end[64];

	for (const char *l = h->out, *e; *l; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		if (!strncmp(l, "at ", 3)) {
			at = l + 3;
			atlen = (int)(e - at);
		} else if (!strncmp(l, "fail ", 5) && !fail) {
			fail = l + 5;
			faillen = (int)(e - fail);
		} else if (sscanf(l, "err %u %n", &i, &off) == 1 && !fail) {
			dev = (int)i;
			fail = l + off;
			faillen = (int)(e - fail);
		} else if (sscanf(l, "proc %u %u %llu", &i, &pid, &used) == 3 &&
			   n < max) {
			v[n++] = (struct mt_gpuproc){ .index = (int)i,
						      .pid = pid,
						      .used = used };
		}
	}
	/* the devices that answered are an answer; one that did not, a why */
	if (fail && dev >= 0)
		snprintf(
			why, len,
			"NVML: nvmlDeviceGetComputeRunningProcesses of cuda:%d: %.*s",
			dev, faillen, fail);
	else if (fail)
		snprintf(why, len, "NVML: %.*s", faillen, fail);
	else if (!mt_helper_ok(h))
		snprintf(why, len, "NVML: %.*s %s in a helper process",
			 at ? atlen : 1, at ? at : "?",
			 mt_helper_end(h, end, sizeof(end)));
	else
		*why = '\0';
	return mt_helper_ok(h) ? n : -1;
}

const char *mt_gpumem_source(const struct mt_gpumem *g)
{
	return g->source ? g->source : "?";
}
