/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A CUDA call's device where BPF could not tell it: that of a thread that
 * set its device before the attach (-p), learned from the caching
 * allocator's allocations on that thread (devlearn.c says why that holds).
 * Events pass through in time order; a thread's allocation calls wait,
 * with every event behind them, until its device is learned or no longer
 * can be.
 */
#ifndef __DEVLEARN_H
#define __DEVLEARN_H

#include <stdbool.h>
#include <linux/types.h>
#include "memtrace.h"

struct mt_devlearn;

struct mt_devlearn_ops {
	/* takes each event on, in the order pushed, its device set */
	void (*event)(void *ctx, const struct mt_event *ev);
	/*
	 * whether pid is traced from its start: a device it never set is
	 * its first one, 0, and nothing waits to learn it
	 */
	bool (*from_start)(void *ctx, __u32 pid);
};

/* NULL: out of memory */
struct mt_devlearn *mt_devlearn_new(const struct mt_devlearn_ops *ops,
				    void *ctx);
/* frees what is held without handing it on: mt_devlearn_upto() first */
void mt_devlearn_free(struct mt_devlearn *d);

/* the next event in time order: handed on now, or once its thread's is */
void mt_devlearn_push(struct mt_devlearn *d, const struct mt_event *ev);

/*
 * Every event stamped before upto has been pushed: those that waited long
 * enough go on, their device unknown (UINT64_MAX: all that wait)
 */
void mt_devlearn_upto(struct mt_devlearn *d, __u64 upto);

/* events waiting now */
size_t mt_devlearn_held(const struct mt_devlearn *d);

#endif /* __DEVLEARN_H */
