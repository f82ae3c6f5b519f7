/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A model of PyTorch's native CUDA caching allocator (the
 * DeviceCachingAllocator of c10/cuda/CUDACachingAllocator.cpp), one device:
 * what it would reserve, split, cache, release and fail for a sequence of
 * malloc/free calls, without a GPU.
 *
 * Followed: PyTorch 2.x as read at pytorch/pytorch 001074d2 (a 2.2-2.4
 * tree), whose default-configuration rules the 2.5-2.11 code keeps
 * (max_non_split_rounding_size defaults to the 20 MiB it hard-coded):
 *  - sizes rounded to 512 B, or to roundup_power2_divisions steps;
 *  - small pool (<= 1 MiB, 2 MiB segments) and large pool (20 MiB
 *    segments below 10 MiB, larger requests rounded up to 2 MiB);
 *  - best fit by (stream, size, address), splitting (small: >= 512 B
 *    left over; large: > 1 MiB left and the request below
 *    max_split_size), oversize blocks (>= max_split_size) kept whole and
 *    only handed out within 20 MiB of the request;
 *  - per-stream pools, merging of freed neighbours;
 *  - on a failed segment allocation: free oversize cached blocks and
 *    retry, then free every unsplit cached block and retry (counted as
 *    num_alloc_retries), then OOM;
 *  - garbage_collection_threshold (with device_mem as the allowed
 *    maximum, as set_per_process_memory_fraction would set it);
 *  - expandable segments: one growing segment per stream and pool, mapped
 *    in 2 MiB (small) or 20 MiB (large) pages, unmapped on retry.
 * Left out: recordStream and its CUDA events (a freed block is reusable at
 * once), CUDA graph private pools, IPC, the free-memory callbacks,
 * emptyCache() calls of the program, and memory outside the allocator
 * (CUDA context, cuBLAS/cuDNN workspaces when not from the allocator):
 * device_mem is what the allocator may reserve.
 */
#ifndef __ALLOCMODEL_H
#define __ALLOCMODEL_H

#include <stdbool.h>
#include <linux/types.h>

#define MT_AM_VERSION                                                     \
	"PyTorch 2.x native CUDACachingAllocator (c10/cuda/"              \
	"CUDACachingAllocator.cpp, 2.2-2.11 rules; 1.13 differs only in " \
	"having no expandable segments)"

struct mt_am_conf {
	__u64 device_mem; /* bytes the allocator may reserve; 0: no limit */
	bool expandable_segments;
	__u64 max_split_size; /* bytes; 0: no limit (PyTorch's default) */
	unsigned int roundup_power2_divisions; /* 0, 1: off; else 2^k */
	double gc_threshold; /* of device_mem, in (0, 1); 0: off */
	__u32 max_blocks; /* bound on the model's blocks; 0: 1 << 24 */
};

struct mt_am_stats {
	__u64 allocated, peak_allocated; /* bytes of allocated blocks */
	__u64 reserved, peak_reserved; /* bytes of segments (mapped pages) */
	__u64 requested; /* bytes asked for by the live blocks */
	__u64 allocated_at_peak_reserved;
	__u64 segments, peak_segments; /* cudaMalloc'd segments now */
	__u64 num_device_alloc; /* cudaMalloc calls (or page maps) */
	__u64 num_device_free; /* cudaFree calls (or page unmaps) */
	__u64 num_alloc_retries; /* free-all-cached-and-retry paths taken */
	__u64 num_ooms;
	__u64 inactive_split_bytes, peak_inactive_split_bytes;
};

struct mt_am;

/* NULL if out of memory or c is invalid */
struct mt_am *mt_am_new(const struct mt_am_conf *c);
void mt_am_free(struct mt_am *m);

/*
 * Allocate size bytes on stream: 1 and *id set (a block id, > 0), 0 when
 * the device would run out of memory, -ENOMEM when the model's own memory
 * or its max_blocks bound is exhausted.
 */
int mt_am_malloc(struct mt_am *m, __u64 size, __u64 stream, __u32 *id);

/*
 * The same, replaying a trace: at is where the traced allocator put the
 * block (0: unknown). A new segment goes there, so that ties between
 * equal free blocks break as they did (mt_am_malloc puts segments in
 * rising addresses).
 */
int mt_am_malloc_at(struct mt_am *m, __u64 size, __u64 stream, __u64 at,
		    __u32 *id);

/* free an allocated block: 0, or -EINVAL if id is not allocated */
int mt_am_release(struct mt_am *m, __u32 id);

/* the block's device address and size (the rounded one) */
__u64 mt_am_addr(const struct mt_am *m, __u32 id);
__u64 mt_am_size(const struct mt_am *m, __u32 id);

void mt_am_stats(const struct mt_am *m, struct mt_am_stats *s);

/* the rules on their own: block size of a request, pool, segment size */
__u64 mt_am_round_size(const struct mt_am_conf *c, __u64 size);
bool mt_am_is_small(__u64 rounded);
__u64 mt_am_segment_size(__u64 rounded);

#endif /* __ALLOCMODEL_H */
