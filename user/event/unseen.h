/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tracer saw of events it could not attribute, counted as they
 * came: the report's Unseen line says each with its cause, and a record's
 * end block keeps them.
 */
#ifndef __UNSEEN_H
#define __UNSEEN_H

#include <linux/types.h>

struct mt_unseen {
	/* events whose Python stack was not kept (no room, or dropped) */
	__u64 stacks_lost;
	/*
	 * events of a Python process from before the walker knew its
	 * CPython: the first moments of an attach, or of a program that
	 * just started
	 */
	__u64 stacks_early;
	/*
	 * backward allocations with no module because the forward that
	 * made their autograd Node was not seen (it ran before the attach),
	 * and their bytes
	 */
	__u64 nodes, node_bytes;
	/*
	 * -- COMMAND without -f: the processes the command started, not
	 * traced, and the first one's pid
	 */
	__u64 children;
	__u32 first_child;
	/*
	 * events whose Python stack could not all be read when named: its
	 * process had exited (names are read from the live process after
	 * the event), or its code was freed
	 */
	__u64 stacks_unread;
};

#endif /* __UNSEEN_H */
