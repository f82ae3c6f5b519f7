/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bounds on what user space keeps, each named for what it bounds, in
 * one place: the tools that share a table (a live trace, report, script,
 * estimate) then agree on its size, and the bounds that differ on purpose
 * say why beside each other.
 */
#ifndef __MT_LIMITS_H
#define __MT_LIMITS_H

/*
 * Call sites a session interns (analysis/sites.c), live or read from a
 * record; past it new sites share the overflow site. Training runs make
 * a few thousand distinct stacks; 64 Ki sites of 120 bytes and up to
 * MT_MAX_FRAMES frame pointers each are about 40 MiB at worst.
 */
#define MT_MAX_SITES 65536

/*
 * Call sites a record file may define: a bound of the file format, which
 * the writer never exceeds and the reader refuses beyond before it
 * allocates (8 MiB of site pointers at most). It is larger than
 * MT_MAX_SITES so that a record stays readable if a session keeps more
 * sites one day; a reader keeps MT_MAX_SITES and shares the overflow site
 * for the rest.
 */
#define MT_REC_MAX_SITES (1u << 20)

/*
 * Sites the leak check follows (analysis/leaks.c): only sites with live
 * allocations old enough at a process boundary, a fraction of all sites.
 * 16 Ki of 88 bytes is 1.4 MiB; past it the allocations are counted and
 * the report says the table was full.
 */
#define MT_MAX_LEAK_SITES 16384

/*
 * Distinct strings a reader of a record interns (replay, estimate): the
 * events' names, libraries, phases, modules and frames of the sites kept.
 */
#define MT_MAX_STRINGS (1 << 20)

/*
 * Distinct strings a record file may define: a bound of the file format,
 * as for MT_REC_MAX_SITES, above MT_MAX_STRINGS for the same reason.
 */
#define MT_REC_MAX_STRINGS (1u << 22)

#endif /* __MT_LIMITS_H */
