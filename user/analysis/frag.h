/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fragmentation of the caching allocator: reserved - allocated and its
 * share of reserved over time and per phase, per device; and the segments
 * (cudaMalloc, cuMemAlloc, cuMemMap ranges) that hold few live blocks.
 */
#ifndef __FRAG_H
#define __FRAG_H

#include <stdbool.h>
#include <stdio.h>
#include "event/kinds.h"
#include "analysis/livetable.h"

struct mt_frag;

struct mt_frag *mt_frag_new(void);
void mt_frag_free(struct mt_frag *f);

/* an event carrying the allocator's totals (r->has_totals), its phase */
void mt_frag_event(struct mt_frag *f, const struct mt_call *r,
		   const char *phase);

/*
 * Process pid ran execve at ts: its allocators are gone, and from then on
 * hold nothing (no event: the counts stay those of c10's reports)
 */
void mt_frag_exec(struct mt_frag *f, __u32 pid, __u64 ts);

/*
 * The device memory ranges the runtime and the driver handed out, alive
 * now (cudaMalloc, cuMemAlloc, cuMemMap), one per address (a cudaMalloc's
 * own cuMemAlloc_v2 inside it left out), each to fn with whether it is
 * the caching allocator's or another library's (the split of `# frag
 * other_library`). 0, or -ENOMEM.
 */
int mt_frag_ranges(const struct mt_livetable *live,
		   void (*fn)(const struct mt_live *e, bool ours, void *ctx),
		   void *ctx);

/* per device, then the emptiest segments of the live table now */
void mt_frag_print(const struct mt_frag *f, const struct mt_livetable *live,
		   __u64 t0, FILE *out);

#endif /* __FRAG_H */
