// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include "lib/version.h"
#include "proc/procinfo.h"
#include "trace/header.h"
#include "trace/tracer.h"

/* a library's path may be as long as PATH_MAX */
#define VALUE_LEN 4200

void mt_header_tool(const struct mt_header *h)
{
	h->meta(h->out, "tool", "memtrace-bpf " MT_VERSION);
}

void mt_header_target(const struct mt_header *h, const struct mt_traced *t,
		      char **argv)
{
	char v[VALUE_LEN], cmdline[2048];

	/* a spawned command has not reached its exec yet */
	if (t->proc.spawned && argv)
		mt_join_args(argv, cmdline, sizeof(cmdline));
	else
		mt_proc_cmdline(t->proc.pid, cmdline, sizeof(cmdline));
	snprintf(v, sizeof(v), "pid=%d comm=%s cmdline=%s", t->proc.pid,
		 t->proc.comm, cmdline);
	h->meta(h->out, "target", v);
}

void mt_header_library(const struct mt_header *h, int pid, const char *path,
		       int probes)
{
	char v[VALUE_LEN];

	snprintf(v, sizeof(v), "pid=%d path=%s probes=%d", pid, path, probes);
	h->meta(h->out, "library", v);
}

void mt_header_python(const struct mt_header *h, const struct mt_traced *t)
{
	char v[64];

	snprintf(v, sizeof(v), "pid=%d version=3.%u", t->proc.pid,
		 t->pyconf.minor);
	h->meta(h->out, "python", v);
}

void mt_header_rank(const struct mt_header *h, int pid, const struct mt_rank *r)
{
	char v[128];

	snprintf(v, sizeof(v), MT_RANK_META, pid, r->rank, r->local_rank,
		 r->world_size);
	h->meta(h->out, "rank", v);
}
