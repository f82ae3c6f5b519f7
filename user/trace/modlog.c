// SPDX-License-Identifier: GPL-2.0
/*
 * --module-log, a feature of the live trace (feature.h): the records a
 * hook-based tracer writes from inside a process (pre/post forward and
 * backward of each module call, pre/post optimizer step), per optimizer
 * step, with the memory the process held then. A module's forward starts
 * at its _call_impl (the module-call probe) and ends at the thread's
 * first event outside it; its backward starts at the first autograd Node
 * made in its forward that is evaluated, and ends at the first Node
 * evaluated outside it.
 *
 * The module log is written as the events come, in the order a hook-based
 * tracer writes it: a module's pre record when its call begins, after its
 * parent's; its post record when the thread is seen outside it, before its
 * parent's. Forward and backward each keep the modules running inside one
 * another (a nest). In forward, the number of module calls an event of the
 * nest's thread is inside is the number of _call_impl frames on its Python
 * stack: the calls of the nest past that many have returned. Nothing is
 * allocated between a return and that event, so the post record's memory
 * is what a hook would read; its time is that event's. Each module call
 * notes the call it was made in: in backward, a Node's module enters with
 * the calls it was made in, and they leave at the first Node evaluated
 * outside them. Their post records hold what the thread held when their
 * last Node returned, as a hook on that Node reads it: without what the
 * engine did since to hand its gradients on (InputBuffer::add: a sum
 * where a tensor fed two Nodes), with what Nodes of no module
 * (AccumulateGrad) did.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/escape.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "lib/outfile.h"
#include "lib/strpool.h"
#include "proc/rank.h"
#include "python/pyproc.h"
#include "python/stack.h"
#include "trace/feature.h"
#include "trace/tracer.h"

#define MAX_OPEN 64 /* modules running inside one another */
#define MAX_CALLED 4096 /* module paths seen called */
#define CALLED_CAP 8192 /* slots of the table of them: at most half full */
#define MAX_PATHS 16384 /* strings the log keeps */
#define PATH_LEN 1024
#define MIB (1024.0 * 1024.0)

enum stage {
	PRE_FORWARD,
	POST_FORWARD,
	PRE_BACKWARD,
	POST_BACKWARD,
	PRE_STEP,
	POST_STEP,
};

static const char *const stage_names[] = {
	"pre_forward",	 "post_forward", "pre_backward",
	"post_backward", "pre_step",	 "post_step",
};

/* whether the log writes: the step the trace began in is left out */
enum start {
	UNDECIDED, /* nothing of a step seen yet */
	WHOLE, /* the trace saw the step begin */
	PARTIAL, /* it began inside a step: no records until the next */
};

/*
 * the allocator's figures, and what its allocated holds by kind of memory
 * (analysis/memkind.h)
 */
struct figures {
	__u64 allocated, reserved, max_allocated, max_reserved;
	__u64 kinds[MT_MK_MAX];
};

/* the modules running inside one another in one pass, outermost first */
struct nest {
	const char *mod[MAX_OPEN];
	int n;
	__u32 tid; /* the thread that runs them */
	enum stage pre; /* PRE_FORWARD or PRE_BACKWARD */
};

struct mt_modlog {
	FILE *f;
	bool with_time;
	enum start start;
	unsigned long step;
	bool backward_seen; /* since the last step: zero_grad is no step */
	bool in_optimizer;
	const char *root; /* the root module's name */
	struct mt_strpool *pool; /* module paths from the root */
	struct called {
		const char *path,
			*parent; /* a module, the call it was made in */
	} called[CALLED_CAP];
	size_t ncalled;
	struct nest fwd, bwd;
	struct figures now; /* at the last event */
	__u64 now_ts; /* the last event's time */
	/*
	 * backward: now, less what moved while the thread handed a Node's
	 * gradients on, since a module's Node last began
	 */
	struct figures done;
	bool handing_on; /* the backward thread's Node returned */
	unsigned long calls; /* module calls seen */
	unsigned long lost; /* records not written: too deep, too many paths */
	unsigned long other_thread; /* calls of a second thread, not followed */
};

static const char backward[] = "backward";

/*
 * The log of process pid: {pid} and {rank} in pattern expand (rank: the
 * target's RANK environment variable, 0 if unset); its header names the
 * units. NULL with a message in err.
 */
static struct mt_modlog *log_open(const char *pattern, int pid, bool with_time,
				  char *err, size_t errlen)
{
	struct mt_modlog *ml;
	struct mt_rank rank;
	char path[4096], why[512];

	mt_rank_read(pid, &rank); /* no environ to read: rank 0 */
	if (mt_path_expand(pattern, pid, &rank, path, sizeof(path))) {
		snprintf(err, errlen, "--module-log %s: name too long",
			 pattern);
		return NULL;
	}
	ml = calloc(1, sizeof(*ml));
	if (ml)
		ml->pool = mt_strpool_new(MAX_PATHS);
	if (!ml || !ml->pool) {
		free(ml);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ml->f = mt_create_output_file(path, MT_OUT_PRIVATE, why, sizeof(why));
	if (!ml->f) {
		snprintf(err, errlen, "cannot write %s", why);
		mt_strpool_free(ml->pool);
		free(ml);
		return NULL;
	}
	ml->with_time = with_time;
	ml->fwd.pre = PRE_FORWARD;
	ml->bwd.pre = PRE_BACKWARD;
	fprintf(ml->f,
		"# memtrace-bpf module log pid=%d: a record per module call "
		"and stage; allocated_mib, reserved_mib, max_allocated_mib, "
		"max_reserved_mib in MiB (2^20 bytes)%s; then allocated_mib "
		"by kind of memory, parameters_mib to unknown_mib, in MiB\n",
		pid, with_time ? "; time in seconds of CLOCK_MONOTONIC" : "");
	return ml;
}

/* "a.b" lies within "a" (or is "a", unless proper), by name */
static bool within(const char *outer, const char *inner, bool proper)
{
	size_t n = strlen(outer);

	if (strncmp(outer, inner, n))
		return false;
	return inner[n] == '.' || (!proper && !inner[n]);
}

/*
 * Kind k's bytes in f. In backward the figures leave out what the engine
 * did handing gradients on, by kind as in total; where that took out of a
 * kind more than it holds (a buffer made handing on, freed by a Node), the
 * kind reads 0, not a wrapped count.
 */
static double kind_bytes(const struct figures *f, int k)
{
	return f->kinds[k] > f->allocated ? 0 : (double)f->kinds[k];
}

static void put(struct mt_modlog *ml, const char *module, enum stage st,
		__u64 ts, const struct figures *f)
{
	const char *name = module;
	struct mt_esc e;

	if (ml->start != WHOLE)
		return;
	e.used = 0;
	/* named as named_modules() does: from under the root */
	if (ml->root && within(ml->root, module, true))
		name += strlen(ml->root) + 1;
	fprintf(ml->f,
		"step=%lu module=%s stage=%s allocated_mib=%.3f "
		"reserved_mib=%.3f max_allocated_mib=%.3f "
		"max_reserved_mib=%.3f",
		ml->step, mt_esc(&e, name, MT_ESC_FIELD), stage_names[st],
		f->allocated / MIB, f->reserved / MIB, f->max_allocated / MIB,
		f->max_reserved / MIB);
	if (ml->with_time)
		fprintf(ml->f, " time=%llu.%06llu",
			(unsigned long long)(ts / 1000000000ULL),
			(unsigned long long)(ts % 1000000000ULL / 1000));
	/* after the fields a hook writes: a parser of those reads them on */
	for (int k = 0; k < MT_MK_MAX; k++)
		fprintf(ml->f, " %s_mib=%.3f", mt_memkind_name(k),
			kind_bytes(f, k) / MIB);
	fputc('\n', ml->f);
}

/* the modules of the nest past its first n return */
static void leave_to(struct mt_modlog *ml, struct nest *ns, int n, __u64 ts)
{
	const struct figures *f = ns == &ml->bwd ? &ml->done : &ml->now;

	while (ns->n > n) {
		ns->n--;
		put(ml, ns->mod[ns->n], ns->pre + 1, ts, f);
	}
}

/*
 * A cut stack does not show every call it is in: then the modules whose
 * names do not hold path return.
 */
static void leave_by_name(struct mt_modlog *ml, struct nest *ns,
			  const char *path, __u64 ts)
{
	int n = ns->n;

	while (n > 0 && !within(ns->mod[n - 1], path, true))
		n--;
	leave_to(ml, ns, n, ts);
}

/* how many module calls a stack is inside: its _call_impl frames */
static int calls_in(const char *const *frames, int depth)
{
	int n = 0;

	for (int i = 0; frames && i < depth; i++)
		if (!strncmp(frames[i], "Module._call_impl (", 19) ||
		    !strncmp(frames[i], "_call_impl (", 12)) /* 3.10 */
			n++;
	return n;
}

static void enter(struct mt_modlog *ml, struct nest *ns, const char *path,
		  __u64 ts)
{
	if (ns->n == MAX_OPEN) {
		ml->lost++;
		return;
	}
	ns->mod[ns->n++] = path;
	put(ml, path, ns->pre, ts, &ml->now);
}

/* the table of called paths, for lib/hashtab.h: tab is ml */
static bool called_used(const void *tab, size_t i)
{
	return ((const struct mt_modlog *)tab)->called[i].path;
}

static bool called_match(const void *tab, size_t i, const void *key)
{
	return ((const struct mt_modlog *)tab)->called[i].path == key;
}

/* path is interned: the pointer is the key */
static size_t called_slot(const struct mt_modlog *ml, const char *path)
{
	return mt_probe(ml, CALLED_CAP - 1, mt_mix64((__u64)(size_t)path),
			called_used, called_match, path);
}

/* the call path was last made in, NULL if in none or not seen */
static const char *parent_of(const struct mt_modlog *ml, const char *path)
{
	return ml->called[called_slot(ml, path)].parent;
}

static void note_called(struct mt_modlog *ml, const char *path,
			const char *parent)
{
	size_t i = called_slot(ml, path);

	if (!ml->called[i].path) {
		if (ml->ncalled == MAX_CALLED) {
			ml->lost++;
			return;
		}
		ml->called[i].path = path;
		ml->ncalled++;
	}
	ml->called[i].parent = parent;
}

/* the trace began inside a step: say so once, write from the next one */
static void began_inside(struct mt_modlog *ml)
{
	ml->start = PARTIAL;
	fprintf(ml->f, "# the trace began inside a step: its records are left "
		       "out, step=0 is the first whole step\n");
}

/*
 * An optimizer phase that follows a backward is the optimizer step; the
 * step ends with it (a zero_grad before the backward is no step).
 */
static void phase_to(struct mt_modlog *ml, const char *phase, __u64 ts)
{
	bool is_opt = !strcmp(phase, "optimizer");

	if (is_opt && !ml->in_optimizer && ml->backward_seen) {
		leave_to(ml, &ml->bwd, 0, ts);
		put(ml, "optimizer", PRE_STEP, ts, &ml->now);
	}
	if (!is_opt && ml->in_optimizer && ml->backward_seen) {
		leave_to(ml, &ml->fwd, 0, ts);
		leave_to(ml, &ml->bwd, 0, ts);
		put(ml, "optimizer", POST_STEP, ts, &ml->now);
		if (ml->start == PARTIAL)
			ml->start = WHOLE;
		else if (ml->start == WHOLE)
			ml->step++;
		ml->backward_seen = false;
	}
	ml->in_optimizer = is_opt;
	if (!strcmp(phase, backward)) {
		ml->backward_seen = true;
		if (ml->start == UNDECIDED)
			began_inside(ml);
	}
}

static void raise_max(struct figures *f)
{
	if (f->allocated > f->max_allocated)
		f->max_allocated = f->allocated;
	if (f->reserved > f->max_reserved)
		f->max_reserved = f->reserved;
}

/*
 * An allocator event of thread tid, phase, made in an autograd Node or
 * not (in_node), and Python stack (frames named as python/stack.h does,
 * innermost first; truncated: cut at depth) at ts, after which the
 * process held allocated / reserved bytes. The module calls it is not in
 * have returned: their post records show the memory before it.
 */
static void log_event(struct mt_modlog *ml, __u64 ts, __u32 tid,
		      const char *phase, bool in_node,
		      const char *const *frames, int depth, bool truncated,
		      __u64 allocated, __u64 reserved,
		      const __u64 kinds[MT_MK_MAX])
{
	int calls = calls_in(frames, depth);
	bool in_backward = !strcmp(phase, backward);

	phase_to(ml, phase, ts);
	if (ml->start == UNDECIDED && calls)
		began_inside(ml);
	if (ml->fwd.n && tid == ml->fwd.tid && !truncated)
		leave_to(ml, &ml->fwd, calls, ts);
	if (ml->bwd.n && tid == ml->bwd.tid && !in_backward)
		leave_to(ml, &ml->bwd, 0, ts);
	/*
	 * The engine runs the last Node and the final callbacks on its own
	 * thread, then wakes the one in backward(), which runs no Node of a
	 * device's graph: what that thread does outside a Node, such as
	 * freeing the loss's gradient of ones, is after the whole backward.
	 */
	if (ml->bwd.n && tid != ml->bwd.tid && in_backward && !in_node)
		leave_to(ml, &ml->bwd, 0, ts);
	/* unsigned arithmetic: done stays below now, the sums are exact */
	if (!ml->handing_on || tid != ml->bwd.tid) {
		ml->done.allocated += allocated - ml->now.allocated;
		ml->done.reserved += reserved - ml->now.reserved;
		for (int k = 0; k < MT_MK_MAX; k++)
			ml->done.kinds[k] += kinds[k] - ml->now.kinds[k];
		raise_max(&ml->done);
	}
	ml->now.allocated = allocated;
	ml->now.reserved = reserved;
	memcpy(ml->now.kinds, kinds, sizeof(ml->now.kinds));
	ml->now_ts = ts;
	raise_max(&ml->now);
}

/*
 * module (named from under the root) as the log keeps it: from the root,
 * interned. NULL for no module ("-"), or when the log keeps too many.
 */
static const char *from_root(struct mt_modlog *ml, const char *root,
			     const char *module)
{
	char path[PATH_LEN];
	const char *p;

	if (root)
		ml->root = root;
	if (!strcmp(module, "-"))
		return NULL;
	if (ml->root && strcmp(module, ml->root))
		snprintf(path, sizeof(path), "%s.%s", ml->root, module);
	else
		snprintf(path, sizeof(path), "%s", module);
	p = mt_intern(ml->pool, path);
	if (!p)
		ml->lost++;
	return p;
}

/*
 * A module's call begins (phase "forward", or "backward" when recomputed),
 * the innermost of the calls module calls its stack is inside, unless the
 * stack is truncated.
 */
static void module_call(struct mt_modlog *ml, __u64 ts, __u32 tid,
			const char *phase, const char *path, int calls,
			bool truncated)
{
	phase_to(ml, phase, ts);
	ml->calls++;
	if (ml->fwd.n && tid != ml->fwd.tid) {
		ml->other_thread++;
		return;
	}
	/* the trace saw the step begin if it sees its first call begin */
	if (ml->start == UNDECIDED) {
		if (calls == 1 && !truncated)
			ml->start = WHOLE;
		else
			began_inside(ml);
	}
	/* a forward starts: the last backward is over */
	if (strcmp(phase, backward))
		leave_to(ml, &ml->bwd, 0, ts);
	if (truncated)
		leave_by_name(ml, &ml->fwd, path, ts);
	else
		leave_to(ml, &ml->fwd, calls - 1, ts);
	ml->fwd.tid = tid;
	note_called(ml, path, ml->fwd.n ? ml->fwd.mod[ml->fwd.n - 1] : NULL);
	enter(ml, &ml->fwd, path, ts);
}

/*
 * An autograd Node made in path's forward (NULL: in no module's) is
 * evaluated: path enters backward with the calls it was made in.
 */
static void node_eval(struct mt_modlog *ml, __u64 ts, __u32 tid,
		      const char *path)
{
	const char *chain[MAX_OPEN]; /* innermost first */
	int n = 0, k = 0;

	phase_to(ml, backward, ts);
	if (ml->bwd.n && tid != ml->bwd.tid) {
		ml->other_thread++;
		return;
	}
	ml->bwd.tid = tid;
	ml->handing_on = false;
	for (const char *p = path; p && n < MAX_OPEN; p = parent_of(ml, p))
		chain[n++] = p;
	/* the nest keeps the calls that hold path, outermost first */
	while (k < ml->bwd.n && k < n && ml->bwd.mod[k] == chain[n - 1 - k])
		k++;
	leave_to(ml, &ml->bwd, k, ts);
	ml->done = ml->now;
	for (int i = n - 1 - k; i >= 0; i--)
		enter(ml, &ml->bwd, chain[i], ts);
}

/*
 * A Node of the backward thread begins (whether or not it is a module's:
 * what it does counts) or hands its outputs on (what that does is for
 * the Nodes after it).
 */
static void node_step(struct mt_modlog *ml, __u32 tid, bool out)
{
	if (ml->bwd.n && tid == ml->bwd.tid)
		ml->handing_on = out;
}

/*
 * The calls no event was seen outside of: the last step's optimizer step
 * returns with nothing after it, the process ends or is let go. No event
 * came since the last, so the figures are those a hook would read.
 */
static int end_pending(struct mt_modlog *ml)
{
	int n = ml->fwd.n + ml->bwd.n;

	leave_to(ml, &ml->fwd, 0, ml->now_ts);
	leave_to(ml, &ml->bwd, 0, ml->now_ts);
	if (ml->in_optimizer && ml->backward_seen) {
		put(ml, "optimizer", POST_STEP, ml->now_ts, &ml->now);
		n++;
	}
	return ml->start == WHOLE ? n : 0;
}

/*
 * Write the post records of the calls no event was seen outside of, with
 * the figures of the last event; note what the log could not show and
 * close. 0 or -errno.
 */
static int log_close(struct mt_modlog *ml)
{
	int ret = 0, ended;

	ended = end_pending(ml);
	if (!ml->calls)
		fprintf(ml->f, "# no module call seen: this torch has no "
			       "torch::jit::tracer::getTracingState to probe, "
			       "or no module ran\n");
	else if (ml->start == PARTIAL)
		fprintf(ml->f, "# no whole step: no optimizer step ended "
			       "after the one the trace began in\n");
	if (ml->lost)
		fprintf(ml->f,
			"# lost=%lu module records: deeper than %d modules, "
			"over %d module paths or stacks no longer held\n",
			ml->lost, MAX_OPEN, MAX_CALLED);
	if (ml->other_thread)
		fprintf(ml->f,
			"# other_thread=%lu module calls and Nodes of a "
			"second thread left out\n",
			ml->other_thread);
	if (ended)
		fprintf(ml->f,
			"# ended=%d post records written at the trace's end, "
			"with the figures and time of its last event: no "
			"event came after their calls returned\n",
			ended);
	if (fclose(ml->f))
		ret = -errno;
	mt_strpool_free(ml->pool);
	free(ml);
	return ret;
}

/* the logs: the processes' slot for theirs, and whether one failed */
struct modlogs {
	unsigned int slot;
	bool failed;
};

/*
 * An event of the module-call probes (MT_K_MODULE_CALL, MT_K_NODE_EVAL,
 * MT_K_NODE_OUT): resolved with its process's Python stacks and written
 * to its log. Events of other callers of the probed functions are dropped.
 */
static void modlog_probe(void *st, struct mt_tracer *tr,
			 const struct mt_event *ev)
{
	const struct modlogs *ls = st;
	struct mt_traced *t = mt_tracer_find(tr, ev->pid);
	struct mt_modlog *ml = t ? t->feat[ls->slot] : NULL;
	const struct mt_pyresolved *pr;
	const char *p;

	if (!ml || !t->py)
		return;
	if (ev->kind == MT_K_MODULE_CALL) {
		/* only _call_impl calls it first thing */
		if (!mt_py_is_module_call(t->py, ev->args[0]))
			return;
		pr = mt_pystacks_get(tr->stacks, t->py, ev->pid, ev->stack_id,
				     ev->flags & MT_EV_PY_TRUNC);
		p = pr ? from_root(ml, mt_pystacks_root(tr->stacks, ev->pid),
				   pr->module) :
			 NULL;
		if (!p) {
			ml->lost++;
			return;
		}
		module_call(ml, ev->ts, ev->tid, pr->phase, p,
			    calls_in(pr->frames, pr->depth), pr->truncated);
		return;
	}
	if (ev->kind == MT_K_NODE_OUT || !ev->node_stack) {
		node_step(ml, ev->tid, ev->kind == MT_K_NODE_OUT);
		return;
	}
	pr = mt_pystacks_get(tr->stacks, t->py, ev->pid, ev->node_stack, false);
	if (!pr) {
		ml->lost++;
		return;
	}
	p = from_root(ml, mt_pystacks_root(tr->stacks, ev->pid), pr->module);
	node_eval(ml, ev->ts, ev->tid, p);
}

/* with --module-log: its probes on */
static int modlog_open(struct mt_tracer *tr, unsigned int slot, void **st)
{
	struct modlogs *ls;

	if (!tr->conf->module_log)
		return 0;
	ls = calloc(1, sizeof(*ls));
	if (!ls) {
		mt_err("out of memory");
		return -1;
	}
	ls->slot = slot;
	tr->att.module_log = true;
	*st = ls;
	return 0;
}

/* a log for each process found at the start: 0, or -1 after mt_err() */
static int modlog_found(void *st, struct mt_tracer *tr)
{
	const struct modlogs *ls = st;
	const struct mt_trace_conf *c = tr->conf;
	char err[640]; /* room for log_open's "cannot write" and its why */

	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_traced *t = &tr->targets[i];

		t->feat[ls->slot] = log_open(c->module_log, t->proc.pid,
					     c->log_time, err, sizeof(err));
		if (!t->feat[ls->slot]) {
			mt_err("%s", err);
			return -1;
		}
	}
	return 0;
}

/* an allocator event of a process with a log, attributed to a phase */
static void modlog_event(void *st, struct mt_tracer *tr, struct mt_traced *t,
			 const struct mt_event *ev, bool default0,
			 const struct mt_call *r, const struct mt_site *site)
{
	const struct modlogs *ls = st;
	struct mt_modlog *ml = t ? t->feat[ls->slot] : NULL;
	struct mt_session *ses;
	__u64 allocated, reserved, kinds[MT_MK_MAX];

	if (!ml || !site->phase)
		return;
	ses = mt_tracer_sink(tr, t)->ses;
	mt_summary_totals(&ses->sum, ev->pid, &allocated, &reserved);
	mt_session_kinds_totals(ses, ev->pid, kinds);
	log_event(ml, ev->ts, ev->tid, site->phase, site->node, site->frames,
		  site->depth, site->truncated, allocated, reserved, kinds);
}

/* t is let go: its log's last records, and the log closed */
static void modlog_exit(void *st, struct mt_tracer *tr, struct mt_traced *t)
{
	struct modlogs *ls = st;
	int ret;

	if (!t->feat[ls->slot])
		return;
	ret = log_close(t->feat[ls->slot]);
	t->feat[ls->slot] = NULL;
	if (ret) {
		mt_err("write the module log: %s", strerror(-ret));
		ls->failed = true;
	}
}

/* -1 when a log could not be written (said when it was closed) */
static int modlog_close(void *st, struct mt_tracer *tr)
{
	struct modlogs *ls = st;
	int ret = ls->failed ? -1 : 0;

	free(ls);
	return ret;
}

static const __u32 modlog_kinds[] = { MT_K_MODULE_CALL, MT_K_NODE_EVAL,
				      MT_K_NODE_OUT, MT_K_NONE };

const struct mt_feature mt_modlog_feature = {
	.name = "modlog",
	.open = modlog_open,
	.found = modlog_found,
	.kinds = modlog_kinds,
	.on_probe = modlog_probe,
	.on_event = modlog_event,
	.on_exit = modlog_exit,
	.close = modlog_close,
};
