/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Call sites: who made an allocation (process, call, calling library,
 * Python stack, module, phase, autograd node), interned, so that the
 * analyses group by pointer and a record names each one once.
 */
#ifndef __SITES_H
#define __SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

struct mt_site {
	__u32 id; /* 1, 2, ... in order of creation; 0 is the overflow site */
	__u32 pid;
	/* interned strings (pointers compare); NULL: not known */
	const char *event;
	const char *caller;
	const char *phase;
	const char *module;
	const char *node;
	const char *detail; /* python:raise: the exception's type */
	bool recompute;
	bool truncated; /* the stack is cut at depth frames */
	int depth;
	const char **frames; /* innermost first, interned */
	/* in a key: mt_frames_hash() of the frames if known, else 0 */
	__u64 frames_hash;
	/*
	 * what the analyses add up per site: its allocations whose stack
	 * was walked (all of them in a full trace), what they stand for
	 * (analysis/sample.h: 1/p each) and their bytes so scaled
	 */
	__u64 allocs;
	double alloc_est;
	__u64 alloc_bytes;
	/*
	 * its allocations alive now: those whose stack was walked, what they
	 * stand for (as allocs, alloc_est) and their bytes so scaled
	 */
	__u64 live_count;
	double live_est;
	__u64 live_bytes;
	__u64 mark_bytes; /* live_bytes when --watch last looked */
	/* the summary's module entries of its last event, index + 1 */
	__u32 mod_hint, own_hint;
};

/* the overflow site's event: a record carries the writer's under it too */
#define MT_SITES_OVERFLOW "[sites table full]"

struct mt_sites;

/*
 * site is the overflow site: this table's (id 0) or a record writer's,
 * read back as a site of its own.
 */
bool mt_site_is_overflow(const struct mt_site *site);

/*
 * The innermost frame of the program's own code, the line a reader acts
 * on: not an installed package's (their files are printed relative to
 * site-packages) nor the standard library's; NULL when there is none.
 */
const char *mt_site_own_frame(const struct mt_site *site);

/*
 * site's stack, innermost first, a frame a line after prefix ("\t", "#\t"),
 * escaped as text (the target named its functions and files), then
 * "[truncated at N frames]" where the walk cut it
 */
void mt_site_print_stack(const struct mt_site *site, const char *prefix,
			 FILE *out);

/*
 * " module= phase=" of site, escaped as fields (lib/escape.h), "-" for
 * what it lacks (both when site is NULL)
 */
void mt_site_print_module(const struct mt_site *site, FILE *out);

/* the same as " event= module= phase= node=", and " recompute" where it was */
void mt_site_print_keys(const struct mt_site *site, FILE *out);

/* at most max sites; then every new one shares the overflow site */
struct mt_sites *mt_sites_new(size_t max);
void mt_sites_free(struct mt_sites *s);

/*
 * The site equal to key (its strings and frames interned by the caller),
 * made if new. Never NULL: the overflow site when full or out of memory.
 * *is_new tells a record writer to define it.
 */
struct mt_site *mt_sites_get(struct mt_sites *s, const struct mt_site *key,
			     bool *is_new);

size_t mt_sites_count(const struct mt_sites *s);

/*
 * The hash of interned frames, by pointer: a key can carry it, computed
 * once per stack, so that a lookup need not walk the frames each time.
 */
__u64 mt_frames_hash(const char *const *frames, int depth);

/* every site, overflow site first if it was used, then in order of creation */
void mt_sites_foreach(struct mt_sites *s,
		      void (*fn)(struct mt_site *site, void *ctx), void *ctx);

#endif /* __SITES_H */
