/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Backward's Nodes, per traced process: read from libtorch_cpu's TLS by
 * the allocation probes, or named by the autograd probes (autograd.c).
 */
#ifndef __TRACE_AUTOGRAD_H
#define __TRACE_AUTOGRAD_H

#include <stdbool.h>
#include <sys/types.h>
#include "memtrace.h"
#include "proc/target.h"
#include "python/nodetls.h"

struct mt_tracer;
struct mt_traced;

/*
 * The libtorch_cpu last decoded, by file: the ranks of a job map the same
 * one, and each decode reads its code again (12 to 30 ms, 60 to 80 the
 * first time: torch 1.13 to 2.14)
 */
struct mt_autograd_lib {
	bool known;
	struct mt_file_id id;
	off_t size;
	struct timespec mtime;
	int ret; /* mt_node_tls_find_fd's */
	struct mt_node_tls found;
	char err[256];
};

/*
 * The attacher's node_tls: libtorch_cpu, open as fd, comes for pt. True
 * when its TLS is to be read (the autograd probes stay off); either way a
 * '# autograd' line says which, once known.
 */
bool mt_autograd_choose(void *ctx, const struct mt_target *pt, int fd,
			const char *path);
/*
 * Tell BPF where t's TLS lies once its loader filled libtorch_cpu's GOT:
 * at its library loads; if it never can, t falls back to the probes
 */
void mt_autograd_place(struct mt_tracer *tr, struct mt_traced *t);
/*
 * Each event of t (NULL: none followed), before it is attributed: the
 * event to attribute, ev or, for a backward one, copy with the origin
 * of its Node in node_stack
 */
const struct mt_event *mt_autograd_event(struct mt_tracer *tr,
					 struct mt_traced *t,
					 const struct mt_event *ev,
					 struct mt_event *copy);
/* t's image is gone (exec, exit): what was kept of it freed, in BPF too */
void mt_autograd_forget(struct mt_tracer *tr, struct mt_traced *t);

#endif /* __TRACE_AUTOGRAD_H */
