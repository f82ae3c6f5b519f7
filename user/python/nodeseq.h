/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which forward made each autograd Node, from numbers (docs/autograd-tls.md,
 * "From numbers to modules"): an op makes its Node, numbered s, before it
 * runs its kernel, so that the op's own allocations see the thread's
 * counter at s + 1. The walked forward allocations of a process give
 * pairs (counter, stack) in rising order; a Node numbered s was made by
 * the op of the first pair at s + 1, or, where that op allocated nothing,
 * by the next one above.
 */
#ifndef __NODESEQ_H
#define __NODESEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/*
 * Pairs kept per process, at most: a ring, the oldest overwritten first
 * (a step's forward of a large model walks a few thousand allocations).
 * 1 MiB a process, allocated at its first pair.
 */
#define MT_NODESEQ_CAP (1u << 16)

struct mt_nodeseq {
	__u64 *ctr, *stack; /* ring of cap pairs, the oldest at head */
	size_t cap, head, n;
	/* pairs overwritten by newer ones (their Nodes go unnamed) */
	__u64 overwritten;
	/*
	 * pairs dropped for a counter below the last: a second forward
	 * thread, whose numbers are its own (pairs are kept per process)
	 */
	__u64 disorder;
	/*
	 * The process was traced from its start: its first pair is the op
	 * of the Node numbered one below it. Attached mid-run, the first
	 * pair's number is also the next of every Node made before the
	 * attach (the last forward's loss, whose backward() walks the
	 * first), so that it names none.
	 */
	bool from_start;
};

/* an empty table of cap pairs at most (0: MT_NODESEQ_CAP) */
void mt_nodeseq_init(struct mt_nodeseq *s, size_t cap);
void mt_nodeseq_free(struct mt_nodeseq *s);
/*
 * A walked allocation outside backward: its thread's counter and stack.
 * Only the first of a counter is kept: the op that made the Node.
 * Returns 0, or -ENOMEM (the pair is lost).
 */
int mt_nodeseq_put(struct mt_nodeseq *s, __u64 ctr, __u64 stack);
/* the stack that made Node number seq; 0 when not known */
__u64 mt_nodeseq_origin(const struct mt_nodeseq *s, __u64 seq);

#endif /* __NODESEQ_H */
