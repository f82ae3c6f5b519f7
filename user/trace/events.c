// SPDX-License-Identifier: GPL-2.0
/*
 * One event from the ring buffer (tracer.h): decoded, its process's
 * bookkeeping done, attributed to a site (caller, Python stack, phase,
 * module, autograd Node) and handed to its process's sink.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "analysis/sample.h"
#include "python/autograd.h"
#include "event/format.h"
#include "event/kinds.h"
#include "memtrace.skel.h"
#include "proc/maps.h"
#include "python/pyproc.h"
#include "python/stack.h"
#include "trace/autograd.h"
#include "trace/tracer.h"

/* the library a return address lies in, interned */
static const char *caller_name(struct mt_tracer *tr, struct mt_traced *t,
			       __u64 addr)
{
	const struct mt_mapping *m;

	if (!t || !addr)
		return NULL;
	m = mt_maps_find(&t->proc.maps, addr);
	if (!m && mt_maps_read(t->proc.pid, &t->proc.maps) == 0)
		m = mt_maps_find(&t->proc.maps, addr);
	if (!m || !m->path)
		return NULL;
	return mt_intern(tr->names, mt_basename(m->path));
}

/*
 * An event BPF could not walk for want of the process's walker layout:
 * counted when the process is known to run Python, else kept on the target
 * until its CPython is found (procs.c).
 */
static void count_early(struct mt_tracer *tr, struct mt_traced *t,
			const struct mt_event *ev)
{
	if (!(ev->flags & MT_EV_PY_NOCONF))
		return;
	if (t->py)
		tr->unseen.stacks_early++;
	else
		t->py_early++;
}

/*
 * A backward allocation left without a module because its Node's origin is
 * unknown: the forward that made the Node ran before the attach. A leaf's
 * AccumulateGrad is made by no forward (nor where BPF sees Nodes made): its
 * origin is never known, traced from the start or not.
 */
static void count_unseen_node(struct mt_tracer *tr, const struct mt_call *r,
			      const struct mt_attrib *a)
{
	if (r->ev->node_stack || a->recompute || strcmp(a->module, "-") ||
	    r->role != MT_ROLE_ALLOC || r->failed ||
	    (a->node && !strcmp(a->node, "AccumulateGrad")))
		return;
	tr->unseen.nodes++;
	if (r->size_state == MT_SIZE_KNOWN)
		tr->unseen.node_bytes += r->size;
}

/* phase and module of an event of a Python process; NULL if it is not one */
static const struct mt_pyresolved *attribute(struct mt_tracer *tr,
					     struct mt_traced *t,
					     const struct mt_call *r,
					     struct mt_attrib *a)
{
	const struct mt_event *ev = r->ev;
	const struct mt_pyresolved *pr = NULL;
	const char *phase;

	if (!t)
		return NULL;
	count_early(tr, t, ev);
	if (!t->py)
		return NULL;
	if (ev->flags & MT_EV_PY)
		pr = mt_pystacks_get(tr->stacks, t->py, ev->pid, ev->stack_id,
				     ev->flags & MT_EV_PY_TRUNC);
	/* a walk BPF dropped (its buffers shared) carries no MT_EV_PY */
	if ((ev->flags & MT_EV_PY_LOST) || ((ev->flags & MT_EV_PY) && !pr))
		tr->unseen.stacks_lost++;
	if (pr && pr->unread)
		tr->unseen.stacks_unread++;
	phase = mt_phase_of_thread(ev->comm);
	if (!phase)
		phase = pr ? pr->phase : "other";
	a->phase = mt_intern(tr->frames, phase);
	a->module = pr ? pr->module : mt_intern(tr->frames, "-");
	if (ev->node && !strcmp(phase, "backward")) {
		const struct mt_pyresolved *np = NULL;
		const char *m = NULL;

		/* the module whose forward made the Node: from that stack */
		if (ev->node_stack)
			np = mt_pystacks_get(tr->stacks, t->py, ev->pid,
					     ev->node_stack, false);
		if (np && strcmp(np->module, "-"))
			m = np->module;

		/* a module on the stack in backward is a recomputation */
		if (strcmp(a->module, "-"))
			a->recompute = true;
		else if (m)
			a->module = m;
		a->node = mt_node_class(tr->nodes, t->py, ev->node_vt,
					tr->frames);
		count_unseen_node(tr, r, a);
	}
	return pr;
}

/* name is in the comma-separated list of --trace-exceptions */
static bool type_wanted(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!strcmp(list, "all"))
		return true;
	for (const char *p = list; *p;) {
		const char *e = strchrnul(p, ',');

		if ((size_t)(e - p) == n && !strncmp(p, name, n))
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

/* python:raise: the type raised, if --trace-exceptions wants it */
static const char *raised_type(struct mt_tracer *tr, struct mt_traced *t,
			       const struct mt_event *ev)
{
	__u64 type = ev->args[1]; /* _PyErr_SetObject(tstate, type, value) */
	const __u8 one = 1;
	char name[256];

	if (!t || !t->py)
		return NULL;
	if (!mt_py_class_name(t->py, type, name, sizeof(name)) &&
	    type_wanted(tr->conf->exc_types, name))
		return mt_intern(tr->frames, name);
	/* not asked for: BPF drops its next ones (a full map: we do) */
	bpf_map__update_elem(tr->skel->maps.exc_skip, &type, sizeof(type), &one,
			     sizeof(one), BPF_ANY);
	return NULL;
}

/* who made the event: its site, interned in the session's table */
static struct mt_site *site_of(struct mt_tracer *tr, struct mt_sink *k,
			       struct mt_traced *t, const struct mt_call *r,
			       const char *detail)
{
	const struct mt_event *ev = r->ev;
	const struct mt_pyresolved *pr;
	struct mt_attrib a = { 0 };
	const char *caller;
	struct mt_site key;
	bool is_new;
	/* --sample-bytes left its stack out: no module, phase or line */
	bool none = mt_sample_unwalked(tr->conf->out.ses.sample_bytes, r);

	pr = none ? NULL : attribute(tr, t, r, &a);
	caller = caller_name(tr, t, ev->caller);
	/* NCCL's memory is NCCL's, whatever module runs the collective */
	if (!none && (r->ki->space == MT_SP_NCCL ||
		      (caller && !strncmp(caller, "libnccl", 7))))
		a.module = mt_intern(tr->frames, "[nccl]");
	key = (struct mt_site){
		.pid = ev->pid,
		.event = r->event,
		.caller = caller,
		.phase = a.phase,
		.module = a.module,
		.node = a.node,
		.detail = detail,
		.recompute = a.recompute,
		.truncated = pr && pr->truncated,
		.depth = pr ? pr->depth : 0,
		.frames = pr ? (const char **)pr->frames : NULL,
		.frames_hash = pr ? pr->frames_hash : 0,
	};
	return mt_sites_get(k->ses->sites, &key, &is_new);
}

static void on_fork(struct mt_tracer *tr, const struct mt_event *ev)
{
	mt_tracer_add(tr, (int)ev->pid, "forked", ev->comm, false);
}

/* the kinds of the processes' own events, each to its handler */
static const struct {
	__u32 kind;
	void (*fn)(struct mt_tracer *tr, const struct mt_event *ev);
} process_kinds[] = {
	{ MT_K_LOADER, mt_tracer_on_loader },
	{ MT_K_FORK, on_fork },
	{ MT_K_EXEC, mt_tracer_on_exec },
	{ MT_K_EXIT, mt_tracer_on_exit },
};

/*
 * An event of a process's own (a library load, fork, exec or exit),
 * handled whole: false for any other
 */
static bool process_event(struct mt_tracer *tr, const struct mt_event *ev)
{
	for (size_t i = 0; i < sizeof(process_kinds) / sizeof(process_kinds[0]);
	     i++) {
		if (ev->kind == process_kinds[i].kind) {
			process_kinds[i].fn(tr, ev);
			return true;
		}
	}
	return false;
}

int mt_tracer_on_event(void *ctx, void *data, size_t len)
{
	struct mt_tracer *tr = ctx;
	const struct mt_event *ev = data;
	const char *detail = NULL;
	struct mt_traced *t;
	struct mt_sink *k;
	struct mt_site *site;
	struct mt_call r;
	struct mt_event copy;
	bool default0;

	if (len < sizeof(*ev) || process_event(tr, ev))
		return 0;
	t = mt_tracer_find(tr, ev->pid);
	/* --all: a process that mapped an attached library since the scan */
	if (!t && tr->conf->all)
		/* its probes were there when it mapped the library */
		t = mt_tracer_add(tr, (int)ev->pid, "seen", NULL, false);
	if (t && !t->proc.ranked)
		mt_tracer_read_rank(tr, t);
	/* a backward event read from TLS: its Node's origin found */
	ev = mt_autograd_event(tr, t, ev, &copy);
	/* a feature's probe (a dry run's host read): handled whole */
	if (mt_features_probe(tr, ev))
		return 0;
	default0 = t && t->proc.spawned;
	if (!mt_decode(ev, default0 ? 0 : -1, &r))
		return 0;
	if (ev->kind == MT_K_PY_RAISE) {
		detail = raised_type(tr, t, ev);
		if (!detail)
			return 0;
	}
	k = mt_tracer_sink(tr, t);
	site = site_of(tr, k, t, &r, detail);
	if (mt_sink_event(k, ev, default0, &r, site))
		mt_features_event(tr, t, ev, default0, &r, site);
	return 0;
}
