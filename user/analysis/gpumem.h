/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The memory of each CUDA device, for --watch: asked of NVML
 * (libnvidia-ml.so.1) in a helper process (lib/helper.h), so that the
 * library crashing (a static memtrace-bpf cannot load the system's: it
 * dies of SIGFPE where the host's glibc differs from the build's) or
 * hanging is a reason in a line, never the tracer's end; where NVML gives
 * nothing, of nvidia-smi. Both number devices as nvidia-smi does.
 */
#ifndef __GPUMEM_H
#define __GPUMEM_H

#include <stddef.h>
#include <linux/types.h>
#include "lib/helper.h"

enum mt_gpumem_state {
	MT_GPUMEM_ASKING, /* the helper has not answered yet */
	MT_GPUMEM_KNOWN,
	MT_GPUMEM_UNKNOWN, /* for good: mt_gpumem_why() says why */
};

struct mt_gpumem;

/* starts asking: NULL when out of memory */
struct mt_gpumem *mt_gpumem_new(void);
/* a helper still running is killed */
void mt_gpumem_free(struct mt_gpumem *g);

/* the answer read if it came, nvidia-smi started if NVML gave none */
void mt_gpumem_poll(struct mt_gpumem *g);

/*
 * The memory of cuda:index in *bytes when KNOWN. Never waits: it looks
 * whether the answer came.
 */
enum mt_gpumem_state mt_gpumem_size(struct mt_gpumem *g, int index,
				    __u64 *bytes);

/*
 * Why a size is UNKNOWN; for sizes KNOWN from nvidia-smi, why NVML gave
 * none; else NULL
 */
const char *mt_gpumem_why(const struct mt_gpumem *g);

/* where the sizes KNOWN came from: "NVML" or "nvidia-smi" */
const char *mt_gpumem_source(const struct mt_gpumem *g);

/* one process's memory on a device, as NVML lists it for nvidia-smi */
struct mt_gpuproc {
	int index; /* cuda:index */
	__u32 pid;
	__u64 used; /* bytes */
};

/*
 * Ask NVML for the memory of every process on every device, in the
 * helper h (not running). 0, or a negative errno.
 */
int mt_gpumem_procs_start(struct mt_helper *h);

/*
 * The answer, once mt_helper_poll said h ended: up to max entries in v
 * and their number; -1 when NVML gave none (why says why; when it gave
 * some, why may still name a device it could not read).
 */
int mt_gpumem_procs_read(const struct mt_helper *h, struct mt_gpuproc *v,
			 int max, char *why, size_t len);

#endif /* __GPUMEM_H */
