/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What nvidia-smi shows, reconciled: NVML's used memory of each traced
 * process on each CUDA device, sampled while --watch runs (a process's
 * figure is gone once it exits), split into what the trace saw there at
 * that moment: the caching allocator's reserved memory; the runtime and
 * driver allocations outside it, by the library that made them; the VMM
 * handles outside it; and the rest, which no probed call made (the
 * context and the module images). Pinned host memory is said beside it,
 * being on no device.
 */
#ifndef __NVSMI_H
#define __NVSMI_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "analysis/livetable.h"
#include "analysis/summary.h"

/* the libraries whose device memory outside the allocator is told apart */
enum mt_nvsmi_lib {
	MT_NL_NCCL,
	MT_NL_CUBLAS, /* cuBLAS and cuBLASLt */
	MT_NL_CUDNN,
	MT_NL_EXTENSION, /* the user's code: ctypes (libffi), extensions */
	MT_NL_OTHER, /* PyTorch's other libraries, CUDA's others */
	MT_NL_MAX,
};

/* the library a call's caller (a file name; NULL: not known) stands for */
enum mt_nvsmi_lib mt_nvsmi_library(const char *caller);
/* its key: nccl, cublas, cudnn, extensions, other */
const char *mt_nvsmi_lib_name(enum mt_nvsmi_lib lib);

/* what the trace holds of one process on one CUDA device */
struct mt_nvsmi_parts {
	__u64 reserved; /* the caching allocator's */
	__u64 lib[MT_NL_MAX]; /* cudaMalloc, cuMemAlloc outside it */
	__u64 vmm; /* cuMemCreate handles outside it */
	__u64 pinned_host; /* the process's, on no device: not in used */
};

/* outside the allocator, on the device: the libraries' and vmm */
__u64 mt_nvsmi_outside(const struct mt_nvsmi_parts *p);

/* one (process, device) of a snapshot */
struct mt_nvsmi_acct {
	__u32 pid;
	int dev;
	struct mt_nvsmi_parts p;
};

#define MT_NVSMI_ACCTS 64

/*
 * The parts of every (process, CUDA device) the trace holds memory on
 * now, in v (at most MT_NVSMI_ACCTS); their number, or -ENOMEM.
 */
int mt_nvsmi_snapshot(const struct mt_summary *sum,
		      const struct mt_livetable *live, struct mt_nvsmi_acct *v);

struct mt_nvsmi;

/* NULL when out of memory */
struct mt_nvsmi *mt_nvsmi_new(void);
/* a helper still asking NVML is killed */
void mt_nvsmi_free(struct mt_nvsmi *n);

/*
 * NVML said pid uses used bytes on cuda:dev, asked at ts (the event
 * lines' clock), while the trace held p there; settled: the trace held p
 * both when NVML was asked and when it answered, so p is what it held at
 * NVML's reading; foreign: the process holds none of the trace's memory
 * on dev but some on another device. The sample kept for a (process,
 * device) is its highest NVML figure among the settled ones (the latest
 * of equal ones), else among all.
 */
void mt_nvsmi_offer(struct mt_nvsmi *n, __u32 pid, int dev, __u64 used,
		    __u64 ts, const struct mt_nvsmi_parts *p, bool settled,
		    bool foreign);

/*
 * --watch's tick: every interval_ns, NVML asked in a helper process, and
 * its answer taken with the trace's parts before and after
 */
void mt_nvsmi_tick(struct mt_nvsmi *n, __u64 now_ns, __u64 interval_ns,
		   const struct mt_summary *sum,
		   const struct mt_livetable *live);

/* a process's rank, -1 for none: the session's mt_nvsmi_rank_fn */
typedef int (*mt_nvsmi_rank_fn)(__u32 pid, const void *ctx);

/*
 * The key lines, `# nvidia_smi pid= dev= used= ...`, t0 the first
 * event's time (at=); nothing when no sample came and NVML was never asked
 */
void mt_nvsmi_print(const struct mt_nvsmi *n, __u64 t0, mt_nvsmi_rank_fn rank,
		    const void *rctx, FILE *out);

/* The report's lines, one a (process, device), in words, to fn. */
void mt_nvsmi_lines(const struct mt_nvsmi *n, mt_nvsmi_rank_fn rank,
		    const void *rctx,
		    void (*fn)(const char *text, bool foreign, void *ctx),
		    void *ctx);

#endif /* __NVSMI_H */
