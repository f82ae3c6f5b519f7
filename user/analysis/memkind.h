/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kind of memory an allocation is, from the phases it lived through:
 * what it tells a person to do at a peak (checkpointing for activations,
 * a sharded optimizer for its state...). Each process keeps a clock of
 * phase instances: it ticks when its events pass from one of forward,
 * backward and optimizer to another, or to a new step ("other" events, a
 * data loader's among them, do not tick it). An allocation notes the
 * instance it was made in; its kind is decided when it is freed, or at
 * the end while alive:
 *
 *   freed in the instance it was made in         temporaries
 *   made in forward, alive past it               activations
 *   made in backward, alive past it              gradients
 *   made in the optimizer, alive past it         optimizer_state
 *   made outside the phases before the first one,
 *   alive into the second step, in a process
 *   traced from its start                        parameters (and buffers)
 *   made outside the phases, alive into a phase
 *   (before the first: freed in the first step)  inputs
 *   anything else (no phase known: a stack not
 *   sampled; before the first phase of a process
 *   attached to, unless its caching allocator
 *   held nothing then; alive at the end in the
 *   instance it was made in)                     unknown
 */
#ifndef __MEMKIND_H
#define __MEMKIND_H

#include <stdbool.h>
#include <linux/types.h>

enum mt_memkind {
	MT_MK_PARAMETERS,
	MT_MK_INPUTS,
	MT_MK_ACTIVATIONS,
	MT_MK_GRADIENTS,
	MT_MK_OPTIMIZER,
	MT_MK_TEMPORARIES,
	MT_MK_UNKNOWN,
	MT_MK_MAX,
};

/* a process's phase instances; zero-initialised: none seen */
struct mt_memkind_clock {
	__u32 instance; /* 0 until a phase is seen */
	__u32 step; /* the step of the instance */
	const char *phase; /* of the instance; NULL: none yet */
};

/* an event of the process in phase (NULL: not known) at step */
void mt_memkind_tick(struct mt_memkind_clock *c, const char *phase, __u32 step);

/*
 * The kind of an allocation made in phase (NULL: not known) at instance
 * born, now at clock c: freed now, or (alive) still held at the end.
 * from_start: its memory is seen from its start (session.c says when).
 */
enum mt_memkind mt_memkind_of(const char *phase, __u32 born,
			      const struct mt_memkind_clock *c, bool alive,
			      bool from_start);

/*
 * The kind of an allocation made in phase (NULL: not known) at instance
 * born that lived past that instance: what mt_memkind_of says of it once
 * the instance is over, whenever it is freed after (but for the first
 * batch, freed before the second step). A tally of what is alive now
 * keeps each allocation under it (session.h's mt_session_kinds_now).
 */
enum mt_memkind mt_memkind_settled(const char *phase, __u32 born,
				   bool from_start);

/*
 * The kinds with bytes, largest first (equal ones in the kinds' order),
 * into order; their count. *sum: the bytes of all kinds.
 */
int mt_memkind_by_size(const __u64 bytes[MT_MK_MAX], int order[MT_MK_MAX],
		       __u64 *sum);

/* "activations", "optimizer_state"...: one token, for key lines too */
const char *mt_memkind_name(enum mt_memkind k);
/* what helps with it, a short clause; NULL: nothing to say */
const char *mt_memkind_remedy(enum mt_memkind k);

#endif /* __MEMKIND_H */
