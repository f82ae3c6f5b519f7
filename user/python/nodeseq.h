/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which forward made each autograd Node, from numbers (docs/autograd-tls.md,
 * "From numbers to modules"): an op makes its Node, numbered s, before it
 * runs its kernel, so that the op's own allocations see the thread's
 * counter at s + 1. Each thread numbers its own Nodes, and a Node keeps
 * the id of the thread that made it. The walked forward allocations of a
 * thread give pairs (counter, stack) in rising order; a Node numbered s
 * was made by the op of its thread's first pair at s + 1, or, where that
 * op allocated nothing, by the next one above.
 */
#ifndef __NODESEQ_H
#define __NODESEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/*
 * Pairs kept per forward thread, at most: a ring, the oldest overwritten
 * first (a step's forward of a large model walks a few thousand
 * allocations). It grows as pairs come, to 1 MiB.
 */
#define MT_NODESEQ_CAP (1u << 16)
/*
 * Forward threads kept per process: torch.nn.DataParallel runs each
 * replica's forward on a thread of its own, new at each step; the ring
 * of the thread that made a pair longest ago goes to a new one.
 */
#define MT_NODESEQ_THREADS 16

/* one forward thread's pairs */
struct mt_nodering {
	__u64 thread; /* at::RecordFunction's id of the thread; 0: unused */
	__u64 used; /* the table's clock at its last pair */
	__u64 *ctr, *stack; /* alloc pairs, the oldest at head */
	size_t alloc, head, n;
	/* pairs overwritten by newer ones (their Nodes go unnamed) */
	__u64 overwritten;
	/*
	 * Its first pair is the op of the Node numbered one below it: the
	 * process was traced from its start and no ring of this thread was
	 * given away. Else the first pair's number is also the next of every
	 * Node made before (the last forward's loss, whose backward() walks
	 * the first), so that it names none; unless that number is 0 (a
	 * thread seen before its first Node, as DataParallel's replicas are
	 * when they allocate their input), which no Node takes.
	 */
	bool from_start;
};

struct mt_nodeseq {
	struct mt_nodering ring[MT_NODESEQ_THREADS];
	size_t cap; /* pairs a ring, at most */
	__u64 clock; /* pairs put so far */
	/* pairs dropped for a counter below their thread's last */
	__u64 disorder;
	/* rings given to a newer thread, and the highest id given away */
	__u64 threads_dropped, dropped_max;
	bool from_start; /* the process was traced from its start */
};

/* an empty table of cap pairs a thread at most (0: MT_NODESEQ_CAP) */
void mt_nodeseq_init(struct mt_nodeseq *s, size_t cap);
void mt_nodeseq_free(struct mt_nodeseq *s);
/*
 * A walked allocation outside backward: its thread's id, counter and
 * stack. Only the first of a counter is kept: the op that made the Node.
 * A thread whose id is 0 made no Node yet: nothing to keep. Returns 0, or
 * -ENOMEM (the pair is lost).
 */
int mt_nodeseq_put(struct mt_nodeseq *s, __u64 thread, __u64 ctr, __u64 stack);
/* the stack that made Node number seq on thread; 0 when not known */
__u64 mt_nodeseq_origin(const struct mt_nodeseq *s, __u64 thread, __u64 seq);

#endif /* __NODESEQ_H */
