// SPDX-License-Identifier: GPL-2.0
/*
 * record --flight, a feature of the live trace (feature.h): each traced
 * process's window (record/flight.h), and when to dump it.
 *
 * When the flight recorder dumps. An OOM (a failed device allocation for
 * want of memory, c10's report that the allocator gave up, a raised
 * OutOfMemoryError) arms a dump a second later, so that the allocator's
 * retry, its report and the exception are in it too; a process that
 * exits in the meantime is dumped at once. A process that ends is dumped
 * when the kernel's OOM killer took it (its cgroup's memory.events
 * oom_kill rose), when a signal killed it, or when it exited with a status
 * other than 0 (an uncaught exception, sys.exit(1)); the dump's "ended"
 * line says how, for the report's headline.
 * Each process has its own window and dumps; --flight-together dumps them
 * all at any process's trigger. A process's window is freed once it is
 * gone and its last dump taken (with --flight-at-end its end dump, taken
 * then): a job that starts workers every epoch would otherwise hold a
 * window for each worker it ever ran.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "event/cudaerr.h"
#include "event/format.h"
#include "lib/err.h"
#include "record/flight.h"
#include "trace/feature.h"
#include "trace/header.h"
#include "trace/tracer.h"

#define ARM_NS 1000000000ULL /* an OOM's dump waits for the rest of it */
#define GONE_NS 1000000000ULL /* an exit's, for the events still coming */
#define WHY_LEN 1024

/* what a process's window knows beyond its events */
struct mt_flight_proc {
	struct mt_flight *f; /* NULL once it is gone and dumped: freed */
	char cgroup[640]; /* its cgroup's oom_kill count; "" if none */
	__u64 oom_kills; /* there, when it was first seen */
	__u64 armed; /* when an armed dump is due; 0: none */
	char why[WHY_LEN]; /* the armed dump's reason */
	__u64 gone; /* when it was seen gone; 0: alive */
	bool over; /* usage is over --alert-pct */
	bool done; /* its end was handled */
	bool py_noted, rank_noted; /* in its header */
	bool end_dumped; /* its end made a dump */
	/* the last exception --trace-exceptions saw it raise; "" none */
	char raised[256];
};

/* the recorder: its folder, and its slot in each process */
struct flight {
	struct mt_flight_dir *dir;
	unsigned int slot;
	__u64 t0; /* ts of the first event a window took */
};

/* SIGUSR1 came: every window is dumped at the next tick */
static volatile sig_atomic_t asked;

static void on_usr1(int sig)
{
	(void)sig;
	asked = 1;
}

/*
 * The dump folder, checked; SIGUSR1 asks for dumps from then on. The
 * dumps are the output: the trace prints no summary.
 */
static int flight_open(struct mt_tracer *tr, unsigned int slot, void **st)
{
	struct flight *fl;
	char err[512];

	if (!tr->conf->flight)
		return 0;
	fl = calloc(1, sizeof(*fl));
	if (!fl) {
		mt_err("out of memory");
		return -1;
	}
	fl->slot = slot;
	fl->dir = mt_flight_dir_open(tr->conf->flight, err, sizeof(err));
	if (!fl->dir) {
		mt_err("%s", err);
		free(fl);
		return -1;
	}
	signal(SIGUSR1, on_usr1);
	tr->no_summary = true;
	*st = fl;
	return 0;
}

/* the oom_kill count of the memory.events at path; 0 if unreadable */
static __u64 oom_kills(const char *path)
{
	unsigned long long n = 0;
	char line[128];
	FILE *f;

	if (!path[0] || !(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * The file of pid's memory cgroup that counts its OOM kills, into buf:
 * cgroup v1's memory.oom_control or v2's memory.events (both have an
 * oom_kill line); "" when there is none
 */
static void cgroup_events(int pid, char *buf, size_t len)
{
	char path[64], line[512], v2[512] = "";
	struct stat st;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && !buf[0]) {
		char *p = strchr(line, ':'), *q = p ? strchr(p + 1, ':') : NULL;

		line[strcspn(line, "\n")] = '\0';
		if (!q)
			continue;
		*q++ = '\0';
		if (!strcmp(p + 1, "memory"))
			snprintf(buf, len,
				 "/sys/fs/cgroup/memory%s/memory.oom_control",
				 q);
		else if (!strcmp(line, "0"))
			snprintf(v2, sizeof(v2),
				 "/sys/fs/cgroup%s/memory.events", q);
	}
	fclose(f);
	if (!buf[0] && v2[0] && !stat(v2, &st))
		snprintf(buf, len, "%s", v2);
	if (buf[0] && stat(buf, &st))
		buf[0] = '\0';
}

static void window_meta(void *f, const char *key, const char *value)
{
	mt_flight_meta(f, key, value);
}

/* the header lines of p's dumps */
static struct mt_header header(struct mt_flight_proc *p)
{
	return (struct mt_header){ .meta = window_meta, .out = p->f };
}

/*
 * t's window, made at its first use with the header its dumps repeat;
 * NULL when there is none to take events (t's was freed: it is gone)
 */
static struct mt_flight_proc *proc_of(struct flight *fl, struct mt_tracer *tr,
				      struct mt_traced *t)
{
	struct mt_flight_proc *p = t->feat[fl->slot];
	struct mt_header h;

	if (p)
		return p->f ? p : NULL;
	p = calloc(1, sizeof(*p));
	if (p)
		p->f = mt_flight_new(fl->dir, t->proc.pid);
	if (!p || !p->f) {
		free(p);
		return NULL;
	}
	t->feat[fl->slot] = p;
	cgroup_events(t->proc.pid, p->cgroup, sizeof(p->cgroup));
	p->oom_kills = oom_kills(p->cgroup);
	h = header(p);
	mt_header_tool(&h);
	mt_header_target(&h, t, NULL);
	return p;
}

/* t's library attached, for its dumps' header */
static void flight_lib(void *st, struct mt_tracer *tr, struct mt_traced *t,
		       const struct mt_mapping *m, int probes)
{
	struct flight *fl = st;
	struct mt_flight_proc *p = proc_of(fl, tr, t);
	struct mt_header h;

	if (!p)
		return;
	h = header(p);
	mt_header_library(&h, t->proc.pid, m->path, probes);
}

/* the dump of t now, for why; the others too with --flight-together */
static void dump(struct flight *fl, struct mt_tracer *tr, struct mt_traced *t,
		 const char *tag, const char *why)
{
	struct mt_flight_proc *p = t->feat[fl->slot];
	struct mt_header h;

	if (!p || !p->f)
		return;
	h = header(p);
	p->armed = 0;
	/* known only once it ran a while */
	if (t->py && !p->py_noted) {
		mt_header_python(&h, t);
		p->py_noted = true;
	}
	if (t->proc.rank.known && !p->rank_noted) {
		mt_header_rank(&h, t->proc.pid, &t->proc.rank);
		p->rank_noted = true;
	}
	mt_flight_dump(p->f, tag, why, &t->proc.rank, tr->lost_reported);
}

static void dump_all(struct flight *fl, struct mt_tracer *tr,
		     struct mt_traced *trigger, const char *tag,
		     const char *why)
{
	char other[3 * WHY_LEN];

	dump(fl, tr, trigger, tag, why);
	if (!tr->conf->flight_together)
		return;
	snprintf(other, sizeof(other), "pid %d's dump: %s", trigger->proc.pid,
		 why);
	for (int i = 0; i < tr->ntargets; i++)
		if (&tr->targets[i] != trigger)
			dump(fl, tr, &tr->targets[i], tag, other);
}

/* an event that says the process ran out of memory: its words, or NULL */
static bool is_oom(const struct mt_call *r, const struct mt_site *site)
{
	if (r->role == MT_ROLE_OOM)
		return true;
	if (r->ev->kind == MT_K_PY_RAISE)
		return mt_oom_is_raise(r, site);
	return r->role == MT_ROLE_ALLOC && r->failed &&
	       mt_cuda_err_is_oom(r->ki->errdomain, r->ret);
}

static void arm_oom(struct flight *fl, struct mt_tracer *tr,
		    struct mt_traced *t, struct mt_flight_proc *p,
		    const struct mt_call *r, const struct mt_site *site)
{
	char size[32] = "", dev[16];

	if (p->armed)
		return;
	if (r->size_state == MT_SIZE_KNOWN)
		snprintf(size, sizeof(size), " size=%llu",
			 (unsigned long long)r->size);
	mt_format_dev(dev, sizeof(dev), r->dev_type, r->dev_index);
	snprintf(p->why, sizeof(p->why),
		 "out of memory in pid %d (rank %d) at %.3f s: %s%s dev=%s "
		 "at %s",
		 t->proc.pid, t->proc.rank.known ? t->proc.rank.rank : 0,
		 (double)(r->ev->ts - fl->t0) / 1e9, r->event, size, dev,
		 site && site->depth ? site->frames[0] :
		 site && site->node  ? site->node :
				       "(no stack)");
	p->armed = mt_now_ns() + ARM_NS;
}

/* --alert-pct: a dump when the process's reserved memory crosses it */
static void check_usage(struct flight *fl, struct mt_tracer *tr,
			struct mt_traced *t, struct mt_flight_proc *p)
{
	const struct mt_trace_conf *c = tr->conf;
	__u64 allocated, reserved, line;
	char why[WHY_LEN];

	if (c->alert_pct <= 0 || !c->device_mem)
		return;
	mt_summary_totals(&mt_tracer_sink(tr, t)->ses->sum, (__u32)t->proc.pid,
			  &allocated, &reserved);
	line = (__u64)((double)c->device_mem * c->alert_pct / 100.0);
	/* a crossing each time it comes back from 5 points below */
	if (p->over && (double)reserved < (double)c->device_mem *
						  (c->alert_pct - 5.0) / 100.0)
		p->over = false;
	if (p->over || reserved < line)
		return;
	p->over = true;
	snprintf(why, sizeof(why),
		 "usage crossed --alert-pct %.1f%% in pid %d (rank %d): %llu "
		 "bytes reserved of --device-mem %llu",
		 c->alert_pct, t->proc.pid,
		 t->proc.rank.known ? t->proc.rank.rank : 0,
		 (unsigned long long)reserved,
		 (unsigned long long)c->device_mem);
	dump_all(fl, tr, t, "usage", why);
}

/* an event the session counted: into t's window; an OOM arms a dump */
static void flight_event(void *st, struct mt_tracer *tr, struct mt_traced *t,
			 const struct mt_event *ev, bool default0,
			 const struct mt_call *r, const struct mt_site *site)
{
	struct flight *fl = st;
	struct mt_flight_proc *p = t ? proc_of(fl, tr, t) : NULL;

	if (!p)
		return;
	if (!fl->t0)
		fl->t0 = ev->ts;
	mt_flight_event(p->f, ev, default0, r, site);
	/* its last raise: what an exit with a failure status follows */
	if (r->ev->kind == MT_K_PY_RAISE && site)
		snprintf(p->raised, sizeof(p->raised), "%s at %s",
			 site->detail ? site->detail : "?",
			 site->depth ? site->frames[0] : "(no stack)");
	if (is_oom(r, site))
		arm_oom(fl, tr, t, p, r, site);
	if (r->role == MT_ROLE_ALLOC || r->role == MT_ROLE_FREE)
		check_usage(fl, tr, t, p);
}

/*
 * t ran execve (ev; site names its new program): its window frees what
 * the old image held, and its dumps name the new image's CPython too
 */
static void flight_exec(void *st, struct mt_tracer *tr, struct mt_traced *t,
			const struct mt_event *ev, const struct mt_site *site)
{
	struct flight *fl = st;
	struct mt_flight_proc *p = proc_of(fl, tr, t);

	if (!p)
		return;
	mt_flight_exec(p->f, ev, site);
	p->py_noted = false;
}

/* how t ended, for the report (analysis/session.h's MT_END_META) */
static void note_ended(const struct mt_traced *t, struct mt_flight_proc *p,
		       const char *how, int code)
{
	char v[512];
	int n;

	n = snprintf(v, sizeof(v), "pid=%d how=%s code=%d", t->proc.pid, how,
		     code);
	if (n > 0 && (size_t)n < sizeof(v) && p->raised[0])
		snprintf(v + n, sizeof(v) - (size_t)n, " raised=%s", p->raised);
	mt_flight_meta(p->f, MT_FLIGHT_ENDED_KEY, v);
}

/* the exception an exit follows, in words: traced or not */
static void raised_words(const struct mt_tracer *tr,
			 const struct mt_flight_proc *p, char *buf, size_t len)
{
	if (p->raised[0])
		snprintf(buf, len,
			 "; the last exception it raised (--trace-exceptions): "
			 "%s",
			 p->raised);
	else if (tr->conf->exc_types)
		snprintf(buf, len,
			 "; no exception of --trace-exceptions' types seen "
			 "raised");
	else
		snprintf(buf, len,
			 "; exceptions not traced (--trace-exceptions TYPE "
			 "names the one it died of)");
}

/* why t ended, if a dump should say so: tag and why filled */
static bool death(const struct mt_tracer *tr, const struct mt_traced *t,
		  struct mt_flight_proc *p, const char **tag, char *why,
		  size_t len)
{
	__u64 kills = oom_kills(p->cgroup);
	int sig = t->proc.has_status && WIFSIGNALED(t->proc.status) ?
			  WTERMSIG(t->proc.status) :
			  0;
	int status = t->proc.has_status && WIFEXITED(t->proc.status) ?
			     WEXITSTATUS(t->proc.status) :
			     0;
	char exc[400];

	if (kills > p->oom_kills) {
		*tag = "oomkill";
		snprintf(
			why, len,
			"pid %d (rank %d) ended as the kernel's OOM killer "
			"acted in its cgroup (%s: oom_kill %llu -> %llu)%s%s",
			t->proc.pid, t->proc.rank.known ? t->proc.rank.rank : 0,
			p->cgroup, (unsigned long long)p->oom_kills,
			(unsigned long long)kills, sig ? ", killed by SIG" : "",
			sig ? sigabbrev_np(sig) : "");
		note_ended(t, p, "oomkill", sig);
		return true;
	}
	if (sig) {
		*tag = "signal";
		snprintf(why, len, "pid %d (rank %d) was killed by SIG%s (%s)",
			 t->proc.pid,
			 t->proc.rank.known ? t->proc.rank.rank : 0,
			 sigabbrev_np(sig), strsignal(sig));
		note_ended(t, p, "signal", sig);
		return true;
	}
	if (status) {
		*tag = "exit";
		raised_words(tr, p, exc, sizeof(exc));
		snprintf(why, len, "pid %d (rank %d) exited with status %d%s",
			 t->proc.pid,
			 t->proc.rank.known ? t->proc.rank.rank : 0, status,
			 exc);
		note_ended(t, p, "exit", status);
		return true;
	}
	return false;
}

/* t is gone: its armed dump now, or one that says how it died */
static void ended(struct flight *fl, struct mt_tracer *tr, struct mt_traced *t)
{
	struct mt_flight_proc *p = t->feat[fl->slot];
	char why[WHY_LEN], both[2 * WHY_LEN + 16];
	const char *tag = NULL;
	bool died;

	p->done = true;
	died = death(tr, t, p, &tag, why, sizeof(why));
	if (died && p->armed && !strcmp(tag, "exit")) {
		/* the OOM it died of, most likely: kept as long as one */
		snprintf(both, sizeof(both), "%s; then %s", p->why, why);
		dump_all(fl, tr, t, "oom", both);
		p->end_dumped = true;
	} else if (died) {
		snprintf(both, sizeof(both), "%s%s%s", why,
			 p->armed ? "; before it, " : "",
			 p->armed ? p->why : "");
		dump_all(fl, tr, t, tag, both);
		p->end_dumped = true;
	} else if (p->armed) {
		dump_all(fl, tr, t, "oom", p->why);
		p->end_dumped = true;
	}
}

/*
 * t's last dumps, then its window freed: at the trace's end, or once t is
 * gone (then its window takes no more events and no later trigger could
 * show more of it)
 */
static void last_dumps(struct flight *fl, struct mt_tracer *tr,
		       struct mt_traced *t)
{
	struct mt_flight_proc *p = t->feat[fl->slot];
	char why[WHY_LEN];

	if (!p || !p->f)
		return;
	if (!p->done && t->proc.exited)
		ended(fl, tr, t);
	if (p->armed) {
		dump(fl, tr, t, "oom", p->why);
	} else if (tr->conf->flight_at_end && !p->end_dumped) {
		if (t->proc.exited)
			snprintf(why, sizeof(why),
				 "pid %d (rank %d) ended (--flight-at-end)",
				 t->proc.pid,
				 t->proc.rank.known ? t->proc.rank.rank : 0);
		else
			snprintf(why, sizeof(why),
				 "the trace ended (--flight-at-end)");
		dump(fl, tr, t, "end", why);
	}
	mt_flight_free(p->f);
	p->f = NULL;
}

/* SIGUSR1: every window; said when there was none to dump */
static void dump_asked(struct flight *fl, struct mt_tracer *tr)
{
	bool any = false;

	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_flight_proc *p = tr->targets[i].feat[fl->slot];

		if (!p || !p->f)
			continue;
		dump(fl, tr, &tr->targets[i], "asked",
		     "asked for: SIGUSR1 to the tracer");
		any = true;
	}
	if (!any)
		mt_err("flight: SIGUSR1: no process followed has a window yet "
		       "(none attached, or every one gone and dumped): "
		       "nothing to dump");
}

/* at each turn: the dumps due (armed, asked, a process gone a while) */
static bool flight_tick(void *st, struct mt_tracer *tr, __u64 now)
{
	struct flight *fl = st;

	mt_flight_dir_reap(fl->dir, false);
	/* cleared first: a SIGUSR1 that comes while these dump is not lost */
	if (asked) {
		asked = 0;
		dump_asked(fl, tr);
	}
	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_traced *t = &tr->targets[i];
		struct mt_flight_proc *p = t->feat[fl->slot];

		if (!p || !p->f || p->done)
			continue;
		if (t->proc.exited && !p->gone)
			p->gone = now;
		if (p->gone && now - p->gone >= GONE_NS)
			last_dumps(fl, tr, t);
		else if (p->armed && now >= p->armed)
			dump_all(fl, tr, t, "oom", p->why);
	}
	return false;
}

/* t is let go: its dumps still due, then its window freed */
static void flight_exit(void *st, struct mt_tracer *tr, struct mt_traced *t)
{
	struct flight *fl = st;

	last_dumps(fl, tr, t);
	free(t->feat[fl->slot]);
	t->feat[fl->slot] = NULL;
}

/* the dumps written and those failed said; 2 when one failed */
static int flight_close(void *st, struct mt_tracer *tr)
{
	struct flight *fl = st;
	unsigned int n, failed;

	mt_flight_dir_reap(fl->dir, true);
	n = mt_flight_dir_dumps(fl->dir);
	failed = mt_flight_dir_failed(fl->dir);
	/* a trace that never ran (no such pid) has its one line already */
	if (tr->ran && failed)
		mt_err("flight: %u dump%s written in %s; %u failed (above)", n,
		       n == 1 ? "" : "s", tr->conf->flight->dir, failed);
	else if (tr->ran)
		mt_err("flight: %u dump%s written in %s", n, n == 1 ? "" : "s",
		       tr->conf->flight->dir);
	mt_flight_dir_close(fl->dir);
	free(fl);
	return failed ? -1 : 0;
}

const struct mt_feature mt_flight_feature = {
	.name = "flight",
	.open = flight_open,
	.on_event = flight_event,
	.on_exec = flight_exec,
	.on_lib = flight_lib,
	.on_exit = flight_exit,
	.tick = flight_tick,
	.close = flight_close,
};
