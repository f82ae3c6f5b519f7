// SPDX-License-Identifier: GPL-2.0
/*
 * --export perfetto: Chrome's trace-event JSON, which ui.perfetto.dev and
 * chrome://tracing open. Per process: a counter per memory account of the
 * summary, written at each change (c10's allocated and reserved for a CUDA
 * device, else the live bytes of the layer: CPU tensors, cudart, driver,
 * vmm, pinned) and per PyTorch tensor account one by kind of memory;
 * per thread: phase slices with module slices inside them,
 * from the phase and module of consecutive events; instant events for
 * failed allocations, c10's OOM reports and Python raises; process and
 * thread names. Times are CLOCK_MONOTONIC microseconds, the clock of the
 * event lines.
 *
 * A sampled trace (--sample-bytes): the counters are exact as ever; an
 * event whose stack was not walked knows no phase or module, so it moves
 * no slice (the slices follow the sampled events), and its instant says
 * "stack": "not sampled". otherData says how the trace was sampled.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "event/cudaerr.h"
#include "event/format.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "export/jsonw.h"
#include "export/export.h"
#include "lib/version.h"
#include "analysis/sample.h"
#include "analysis/session.h"

#define MAX_THREADS 4096 /* with slices and names; more get neither */
#define THREAD_SLOTS 8192 /* at half load */

/* a thread's open slices: phase, and the module inside it */
struct thread {
	__u32 tid; /* 0: an empty slot */
	__u32 pid;
	const char *phase, *module; /* interned; NULL: no slice open */
	__u64 last_ts;
	char comm[MT_COMM_LEN];
};

/* the last values written of one account of the summary */
struct written {
	bool seen, kinds_seen;
	__u64 a, b;
	__u64 kinds[MT_MK_MAX]; /* a tensor account's bytes by kind */
};

struct perfetto {
	struct mt_jw w;
	struct thread threads[THREAD_SLOTS];
	size_t nthreads;
	struct written devs[MT_SUM_DEVS]; /* by index in s->sum.devs */
};

static void *open_perfetto(FILE *f, const struct mt_export_conf *c, char *err,
			   size_t errlen)
{
	struct perfetto *x = calloc(1, sizeof(*x));

	if (!x) {
		snprintf(err, errlen, "export perfetto: out of memory");
		return NULL;
	}
	if (mt_jw_open(&x->w, f, "export perfetto", err, errlen)) {
		free(x);
		return NULL;
	}
	mt_jw_open_close(&x->w, '{');
	mt_jw_str(&x->w, "traceEvents");
	mt_jw_open_close(&x->w, '[');
	return x;
}

/* microseconds with the nanoseconds kept: exact, not a double */
static void put_ts(struct mt_jw *w, __u64 ns)
{
	char b[32];
	int n = snprintf(b, sizeof(b), "%" PRIu64 ".%03" PRIu64,
			 (uint64_t)(ns / 1000), (uint64_t)(ns % 1000));

	mt_jw_str(w, "ts");
	mt_jw_number(w, b, (size_t)n);
}

/* the start of a trace event: {"name":..,"ph":..,"pid":..,"tid":.. */
static void begin_event(struct mt_jw *w, const char *name, const char *ph,
			__u32 pid, __u32 tid)
{
	mt_jw_open_close(w, '{');
	mt_jw_key_str(w, "name", name);
	mt_jw_key_str(w, "ph", ph);
	mt_jw_key_u64(w, "pid", pid);
	mt_jw_key_u64(w, "tid", tid);
}

static void name_meta(struct mt_jw *w, const char *what, __u32 pid, __u32 tid,
		      const char *comm)
{
	begin_event(w, what, "M", pid, tid);
	mt_jw_str(w, "args");
	mt_jw_open_close(w, '{');
	mt_jw_str(w, "name");
	mt_jw_strn(w, comm, strnlen(comm, MT_COMM_LEN));
	mt_jw_open_close(w, '}');
	mt_jw_open_close(w, '}');
}

/* "B" or "E" of a slice on thread t's track */
static void slice(struct mt_jw *w, const struct thread *t, const char *ph,
		  const char *cat, const char *name, __u64 ts)
{
	begin_event(w, name, ph, t->pid, t->tid);
	mt_jw_key_str(w, "cat", cat);
	put_ts(w, ts);
	mt_jw_open_close(w, '}');
}

/* end t's open slices at ts, the module's inside the phase's */
static void end_slices(struct mt_jw *w, struct thread *t, __u64 ts)
{
	if (t->module)
		slice(w, t, "E", "module", t->module, ts);
	if (t->phase)
		slice(w, t, "E", "phase", t->phase, ts);
	t->module = t->phase = NULL;
}

/*
 * The slices of t from its event at ts: a new phase ends the open ones; a
 * module runs inside its phase, so a new phase starts its module anew.
 */
static void follow_slices(struct mt_jw *w, struct thread *t, __u64 ts,
			  const char *phase, const char *module)
{
	if (module && !strcmp(module, "-"))
		module = NULL;
	if (phase != t->phase) {
		end_slices(w, t, ts);
		if (phase)
			slice(w, t, "B", "phase", phase, ts);
		t->phase = phase;
	}
	if (module != t->module) {
		if (t->module)
			slice(w, t, "E", "module", t->module, ts);
		if (module)
			slice(w, t, "B", "module", module, ts);
		t->module = module;
	}
}

/* the threads' accessors for lib/hashtab.h: tab is the slot array */
static bool thread_used(const void *tab, size_t i)
{
	return ((const struct thread *)tab)[i].tid;
}

/* key: the tid looked for */
static bool thread_match(const void *tab, size_t i, const void *key)
{
	return ((const struct thread *)tab)[i].tid == *(const __u32 *)key;
}

/* tid's slot, taken if new; NULL when MAX_THREADS are known */
static struct thread *thread_get(struct perfetto *x, __u32 tid, bool *is_new)
{
	size_t i = mt_probe(x->threads, THREAD_SLOTS - 1, mt_mix64(tid),
			    thread_used, thread_match, &tid);

	*is_new = !x->threads[i].tid;
	if (!*is_new)
		return &x->threads[i];
	if (x->nthreads == MAX_THREADS)
		return NULL;
	x->nthreads++;
	x->threads[i].tid = tid;
	return &x->threads[i];
}

/* the thread of an event, its names written when new or renamed */
static struct thread *thread_of(struct perfetto *x, const struct mt_event *ev)
{
	struct mt_jw *w = &x->w;
	struct thread *t;
	bool is_new;

	t = thread_get(x, ev->tid, &is_new);
	if (!t)
		return NULL;
	if (!is_new && t->pid != ev->pid) {
		/* a tid reused by another process */
		end_slices(w, t, t->last_ts);
		is_new = true;
	}
	if (is_new) {
		t->pid = ev->pid;
		t->phase = t->module = NULL;
		memset(t->comm, 0, sizeof(t->comm));
	}
	if (strncmp(t->comm, ev->comm, MT_COMM_LEN)) {
		memcpy(t->comm, ev->comm, MT_COMM_LEN);
		name_meta(w, "thread_name", ev->pid, ev->tid, ev->comm);
		if (ev->tid == ev->pid)
			name_meta(w, "process_name", ev->pid, ev->tid,
				  ev->comm);
	}
	return t;
}

static void counter(struct mt_jw *w, __u32 pid, __u64 ts, const char *dev,
		    const char *what, __u64 bytes)
{
	char name[64];

	snprintf(name, sizeof(name), "%s %s", dev, what);
	begin_event(w, name, "C", pid, pid);
	put_ts(w, ts);
	mt_jw_str(w, "args");
	mt_jw_open_close(w, '{');
	mt_jw_key_u64(w, "bytes", bytes);
	mt_jw_open_close(w, '}');
	mt_jw_open_close(w, '}');
}

/* what a layer's live bytes are, as the counter names them */
static const char *layer_what(enum mt_space sp)
{
	switch (sp) {
	case MT_SP_CPU:
		return "allocated";
	case MT_SP_PINNED:
		return "page-locked (pinned)";
	case MT_SP_CUDART:
		return "reserved (cudart)";
	case MT_SP_DRIVER:
		return "reserved (driver)";
	default:
		return "reserved (vmm)";
	}
}

/*
 * A tensor account's bytes alive by kind of memory (analysis/memkind.h),
 * when they changed: one counter, "<dev> by kind", with an arg a kind,
 * all seven always, which chrome://tracing stacks into one chart and
 * Perfetto shows as a track a kind. Told as the report tells what is alive
 * at its end: what the phase running now made is unknown until it ends
 * (a forward's activations move from unknown when its backward begins).
 */
static void kind_counter(struct perfetto *x, const struct mt_session *s,
			 size_t i, __u64 ts)
{
	const struct mt_dev_stat *d = &s->sum.devs[i];
	struct written *o = &x->devs[i];
	__u64 kinds[MT_MK_MAX];
	char name[64], dev[32];

	if (!mt_space_is_tensor(d->space))
		return;
	mt_session_kinds_now(s, d, kinds);
	if (o->kinds_seen && !memcmp(o->kinds, kinds, sizeof(kinds)))
		return;
	snprintf(name, sizeof(name), "%s by kind",
		 mt_format_dev(dev, sizeof(dev), d->type, d->index));
	begin_event(&x->w, name, "C", d->pid, d->pid);
	put_ts(&x->w, ts);
	mt_jw_str(&x->w, "args");
	mt_jw_open_close(&x->w, '{');
	for (int k = 0; k < MT_MK_MAX; k++)
		mt_jw_key_u64(&x->w, mt_memkind_name(k), kinds[k]);
	mt_jw_open_close(&x->w, '}');
	mt_jw_open_close(&x->w, '}');
	memcpy(o->kinds, kinds, sizeof(kinds));
	o->kinds_seen = true;
}

/*
 * Every account of the summary that changed since it was last written
 * (an event can change another account than its own: a free names the
 * device of the thread, the allocation may have had another).
 */
static void counters(struct perfetto *x, const struct mt_session *s, __u64 ts)
{
	const struct mt_summary *sum = &s->sum;

	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *d = &sum->devs[i];
		struct written *o = &x->devs[i];
		bool c10 = d->space == MT_SP_C10;
		__u64 a = c10 ? d->allocated : d->cur;
		__u64 b = c10 ? d->reserved : 0;
		char dev[32];

		/* as the summary prints them: vmm_map ranges are no memory */
		if ((c10 && d->type != MT_DT_CUDA) || d->space == MT_SP_VAMAP)
			continue;
		kind_counter(x, s, i, ts);
		if (o->seen && o->a == a && o->b == b)
			continue;
		mt_format_dev(dev, sizeof(dev), d->type, d->index);
		if (!c10) {
			counter(&x->w, d->pid, ts, dev, layer_what(d->space),
				a);
		} else {
			if (!o->seen || o->a != a)
				counter(&x->w, d->pid, ts, dev, "allocated", a);
			if (!o->seen || o->b != b)
				counter(&x->w, d->pid, ts, dev, "reserved", b);
		}
		o->seen = true;
		o->a = a;
		o->b = b;
	}
}

/* an allocation that failed, c10's OOM report, a Python raise */
static void instant(struct mt_jw *w, const struct mt_call *r,
		    const struct mt_site *site, bool bare)
{
	const struct mt_event *ev = r->ev;
	const char *err;
	char name[128], dev[32];

	if (site->detail)
		snprintf(name, sizeof(name), "%s %s", r->event, site->detail);
	else if (r->role == MT_ROLE_OOM ||
		 mt_cuda_err_is_oom(r->ki->errdomain, r->ret))
		snprintf(name, sizeof(name), "OOM %s", r->event);
	else
		snprintf(name, sizeof(name), "failed %s", r->event);
	begin_event(w, name, "i", ev->pid, ev->tid);
	mt_jw_key_str(w, "s", "t");
	put_ts(w, ev->ts);
	mt_jw_str(w, "args");
	mt_jw_open_close(w, '{');
	if (r->size_state == MT_SIZE_KNOWN)
		mt_jw_key_u64(w, "size", r->size);
	if (r->dev_type != MT_DT_NONE)
		mt_jw_key_str(w, "dev",
			      mt_format_dev(dev, sizeof(dev), r->dev_type,
					    r->dev_index));
	if (r->failed) {
		err = mt_cuda_err_name(r->ki->errdomain, r->ret);
		mt_jw_key_str(w, "err", err ? err : "unknown");
	}
	if (r->has_totals) {
		mt_jw_key_u64(w, "allocated", r->allocated);
		mt_jw_key_u64(w, "reserved", r->reserved);
	}
	if (site->phase)
		mt_jw_key_str(w, "phase", site->phase);
	if (site->module)
		mt_jw_key_str(w, "module", site->module);
	if (bare)
		mt_jw_key_str(w, "stack", "not sampled");
	mt_jw_open_close(w, '}');
	mt_jw_open_close(w, '}');
}

static void event_perfetto(void *p, const struct mt_session *s,
			   const struct mt_call *r, const struct mt_site *site)
{
	struct perfetto *x = p;
	struct thread *t = thread_of(x, r->ev);
	bool bare = mt_sample_unwalked(s->conf.sample_bytes, r);

	if (t && !bare)
		follow_slices(&x->w, t, r->ev->ts, site->phase, site->module);
	/* its slices end here at the latest: on its track, time goes on */
	if (t)
		t->last_ts = r->ev->ts;
	counters(x, s, r->ev->ts);
	if (r->role == MT_ROLE_OOM || (r->role == MT_ROLE_ALLOC && r->failed) ||
	    site->detail)
		instant(&x->w, r, site, bare);
	mt_jw_flush(&x->w);
}

static int close_perfetto(void *p, const struct mt_session *s, char *err,
			  size_t errlen)
{
	struct perfetto *x = p;
	struct mt_jw *w = &x->w;
	int ret;

	for (size_t i = 0; i < THREAD_SLOTS; i++)
		if (x->threads[i].tid)
			end_slices(w, &x->threads[i], x->threads[i].last_ts);
	mt_jw_open_close(w, ']');
	mt_jw_key_str(w, "displayTimeUnit", "ms");
	mt_jw_str(w, "otherData");
	mt_jw_open_close(w, '{');
	mt_jw_key_str(w, "exporter", "memtrace-bpf " MT_VERSION);
	mt_jw_key_str(w, "clock", "CLOCK_MONOTONIC");
	if (s->conf.sample_bytes) {
		char note[512];

		mt_jw_key_u64(w, "sample_bytes", s->conf.sample_bytes);
		mt_jw_key_str(w, "stacks",
			      mt_export_sample_note(s, note, sizeof(note)));
	}
	mt_jw_open_close(w, '}');
	mt_jw_open_close(w, '}');
	mt_jw_flush(w);
	ret = mt_jw_error(w, err, errlen);
	mt_jw_free(w);
	free(x);
	return ret;
}

const struct mt_exporter mt_export_perfetto = {
	.name = "perfetto",
	.what = "Chrome trace-event JSON for ui.perfetto.dev: memory "
		"counters, phase and module slices, OOMs",
	.open = open_perfetto,
	.event = event_perfetto,
	.close = close_perfetto,
};
