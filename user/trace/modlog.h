/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --module-log: the records a hook-based tracer writes from inside a
 * process (pre/post forward and backward of each module call, pre/post
 * optimizer step), per optimizer step, with the memory the process held
 * then. A module's forward starts at its _call_impl (the module-call
 * probe) and ends at the thread's first event outside it; its backward
 * starts at the first autograd Node made in its forward that is evaluated,
 * and ends at the first Node evaluated outside it.
 */
#ifndef __MODLOG_H
#define __MODLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "memtrace.h"

struct mt_modlog;
struct mt_tracer;

/*
 * Open the log of process pid: {pid} and {rank} in pattern expand (rank:
 * the target's RANK environment variable, 0 if unset); its header names
 * the units. Returns NULL with a message in err.
 */
struct mt_modlog *mt_modlog_open(const char *pattern, int pid, bool with_time,
				 char *err, size_t errlen);

/*
 * An allocator event of thread tid, phase, made in an autograd Node or
 * not (in_node), and Python stack (frames named as python/stack.h does,
 * innermost first; truncated: cut at depth) at ts, after which the
 * process held allocated / reserved bytes. The module calls it is not in
 * have returned: their post records show the memory before it.
 */
void mt_modlog_event(struct mt_modlog *ml, __u64 ts, __u32 tid,
		     const char *phase, bool in_node, const char *const *frames,
		     int depth, bool truncated, __u64 allocated,
		     __u64 reserved);

/*
 * An event of the module-call probes (MT_K_MODULE_CALL, MT_K_NODE_EVAL,
 * MT_K_NODE_OUT) of one of tr's targets: resolved with its Python stacks
 * and written to its log. Events of other callers of the probed functions
 * are dropped.
 */
void mt_modlog_probe(struct mt_tracer *tr, const struct mt_event *ev);

/*
 * Write the post records of the calls no event was seen outside of, with
 * the figures of the last event; note what the log could not show and
 * close. 0 or -errno.
 */
int mt_modlog_close(struct mt_modlog *ml);

#endif /* __MODLOG_H */
