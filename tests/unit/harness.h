/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The harness of the unit tests that feed a session as the tracer does,
 * without BPF: a session of the test's own, its call sites, events one
 * microsecond apart, decoded as the tracer decodes them, and a file for an
 * export to write. Each of those tests had a copy of its own.
 *
 * A test's state is a struct harness or begins with one (harness_teardown
 * frees it); the test includes this file after cmocka.h.
 */
#ifndef MT_TEST_HARNESS_H
#define MT_TEST_HARNESS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "analysis/lines.h"
#include "analysis/session.h"
#include "event/kinds.h"

struct harness {
	struct mt_session s;
	__u64 ts; /* the last event's time, ns */
	char path[64]; /* the file harness_file made, or empty */
};

/*
 * the session of c, its lines (an OOM block) to out as the trace's
 * (export/output.c); 0, or -1
 */
static inline int harness_init(struct harness *h,
			       const struct mt_session_conf *c, FILE *out)
{
	h->ts = 0;
	h->path[0] = '\0';
	return mt_session_init(&h->s, c, out) || mt_lines_observe(&h->s) ? -1 :
									   0;
}

/* an empty file in /tmp named after the test, in h->path; 0, or -1 */
static inline int harness_file(struct harness *h, const char *test)
{
	int fd;

	snprintf(h->path, sizeof(h->path), "/tmp/%s_XXXXXX", test);
	fd = mkstemp(h->path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* the session and the file go */
static inline void harness_free(struct harness *h)
{
	mt_session_free(&h->s);
	if (h->path[0])
		unlink(h->path);
}

/*
 * cmocka's teardown of a test whose state, allocated with malloc, is a
 * struct harness or begins with one
 */
static inline int harness_teardown(void **state)
{
	struct harness *h = *state;

	harness_free(h);
	free(h);
	return 0;
}

/* the site of key as the tracer interns it: the live table keeps it */
static inline struct mt_site *harness_site(struct harness *h,
					   const struct mt_site *key)
{
	bool is_new;

	return mt_sites_get(h->s.sites, key, &is_new);
}

/* the time of the next event: a microsecond after the last */
static inline __u64 harness_tick(struct harness *h)
{
	return h->ts += 1000;
}

/*
 * ev as BPF sends it at the return of a call on the process's main
 * thread, after the last event, decoded into r
 */
static inline void harness_decode(struct harness *h, struct mt_event *ev,
				  struct mt_call *r)
{
	ev->ts = harness_tick(h);
	ev->tid = ev->pid;
	ev->flags |= MT_EV_RET;
	assert_true(mt_decode(ev, 0, r));
}

/*
 * c10's CPU allocator on pid's main thread: an allocation of size bytes
 * at ptr, or (alloc false) the free of ptr, counted at site; flags are
 * the event's MT_EV_* (MT_EV_SAMPLED: its stack was walked)
 */
static inline void harness_cpu(struct harness *h, struct mt_site *site,
			       __u32 pid, bool alloc, __u64 ptr, __u64 size,
			       __u16 flags)
{
	const struct mt_kind_info *ki =
		mt_kind(alloc ? MT_K_CPU_NEW : MT_K_CPU_DELETE);
	struct mt_event ev = { .ts = harness_tick(h),
			       .pid = pid,
			       .tid = pid,
			       .cpu = 1,
			       .flags = flags,
			       .comm = "python3" };
	struct mt_call r = {
		.ev = &ev,
		.ki = ki,
		.event = ki->event,
		.role = alloc ? MT_ROLE_ALLOC : MT_ROLE_FREE,
		.has_ptr = true,
		.ptr = ptr,
		.size_state = alloc ? MT_SIZE_KNOWN : MT_SIZE_UNKNOWN,
		.size = size,
		.dev_type = MT_DT_CPU,
		.dev_index = -1,
	};

	assert_true(mt_session_event(&h->s, &r, site));
}

#endif /* MT_TEST_HARNESS_H */
