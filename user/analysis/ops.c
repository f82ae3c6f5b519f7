// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "analysis/ops.h"
#include "analysis/session.h"
#include "analysis/sites.h"
#include "lib/escape.h"

/* an operator: a node class, an innermost frame, or a call and library */
struct op {
	__u32 pid;
	const char *what, *where; /* interned: pointers compare */
	__u64 allocs, bytes; /* allocs: those walked (mt_site's) */
	double est; /* what they stand for */
};

struct ops {
	struct op *v;
	size_t n, cap;
	bool oom;
};

static void add_site(struct mt_site *site, void *ctx)
{
	struct ops *o = ctx;
	struct op *p;

	if (!site->allocs)
		return;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;

		p = realloc(o->v, cap * sizeof(*p));
		if (!p) {
			o->oom = true;
			return;
		}
		o->v = p;
		o->cap = cap;
	}
	p = &o->v[o->n++];
	*p = (struct op){ .pid = site->pid,
			  .allocs = site->allocs,
			  .bytes = site->alloc_bytes,
			  .est = site->alloc_est };
	if (site->node) {
		p->what = site->node;
		p->where = "autograd node";
	} else if (site->depth) {
		p->what = site->frames[0];
		p->where = "python";
	} else {
		p->what = site->event;
		p->where = site->caller;
	}
}

static int by_key(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->what != y->what)
		return (uintptr_t)x->what < (uintptr_t)y->what ? -1 : 1;
	if (x->where != y->where)
		return (uintptr_t)x->where < (uintptr_t)y->where ? -1 : 1;
	return 0;
}

static int by_pid_bytes(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	/* ties by name: the same order in every run */
	return strcmp(x->what ? x->what : "", y->what ? y->what : "");
}

/* sum the sites of one operator into one entry */
static size_t merge(struct op *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && !by_key(&v[k - 1], &v[i])) {
			v[k - 1].allocs += v[i].allocs;
			v[k - 1].bytes += v[i].bytes;
			v[k - 1].est += v[i].est;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

void mt_ops_print(const struct mt_session *s, size_t top, FILE *out)
{
	struct ops o = { 0 };
	struct mt_sample_cal cal;
	struct mt_esc e;
	char b[32];
	size_t n, shown = 0;

	mt_sites_foreach(s->sites, add_site, &o);
	if (o.oom)
		fprintf(out, "# operators: out of memory, some left out\n");
	qsort(o.v, o.n, sizeof(*o.v), by_key);
	n = merge(o.v, o.n);
	qsort(o.v, n, sizeof(*o.v), by_pid_bytes);
	for (size_t i = 0; i < n; i++) {
		const struct op *p = &o.v[i];

		if (i && p->pid != o.v[i - 1].pid)
			shown = 0;
		if (!shown) {
			fprintf(out,
				"# operators pid=%u (top %zu call sites by "
				"bytes allocated)\n",
				p->pid, top);
			mt_session_alloc_cal(s, p->pid, &cal);
		}
		if (shown++ >= top)
			continue;
		e.used = 0;
		fprintf(out,
			"# op bytes=%" PRIu64 " (%s) allocs=%" PRIu64
			" %s: %s\n",
			(uint64_t)p->bytes,
			mt_format_bytes(b, sizeof(b), p->bytes),
			(uint64_t)llround(
				mt_sample_cal_count(&cal, p->allocs, p->est)),
			mt_esc(&e, p->where ? p->where : "?", MT_ESC_TEXT),
			mt_esc(&e, p->what ? p->what : "?", MT_ESC_TEXT));
	}
	free(o.v);
}
