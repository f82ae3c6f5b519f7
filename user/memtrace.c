// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf: trace the CUDA runtime, CUDA driver and PyTorch allocator
 * calls of running processes with uprobes, one line per event.
 */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "attach.h"
#include "autograd.h"
#include "format.h"
#include "modlog.h"
#include "memtrace.skel.h"
#include "options.h"
#include "preflight.h"
#include "pyproc.h"
#include "pystack.h"
#include "record.h"
#include "estimate.h"
#include "replay.h"
#include "session.h"
#include "sink.h"
#include "strpool.h"
#include "target.h"
#include "watch.h"
#include "follow.h"
#include "rank.h"
#include "metrics.h"

#define POLL_MS 10
#define RESCAN_NS (250 * 1000000ULL)
#define LDSO_PATH "/lib64/ld-linux-x86-64.so.2"
/* CPython may not be initialised yet: look again at each rescan, a while */
#define PY_TRIES 200
#define MAX_STACKS 65536
/* processes --children and --all may follow */
#define MAX_TARGETS 256
/* --all looks for new processes this often */
#define ALL_SCAN_NS (2000 * 1000000ULL)

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

/* everything the event callback needs */
struct tracer {
	const struct mt_options *opt;
	struct memtrace_bpf *skel;
	struct mt_attacher att;
	struct mt_target targets[MAX_TARGETS];
	int ntargets;
	__u64 targets_dropped; /* processes past MAX_TARGETS, not traced */
	struct bpf_link *fork_link; /* --children */
	struct mt_sink sink; /* every process's, or those without their own */
	bool per_proc; /* -o names {pid} or {rank}: a sink per process */
	bool ran; /* the trace ran: end holds its figures */
	struct mt_summary_end end;
	struct mt_strpool *names;
	struct mt_strpool *frames; /* stack lines, module and phase names */
	struct mt_pystacks *stacks;
	struct mt_nodes *nodes;
	struct mt_watch *watch; /* --watch */
	struct mt_metrics *metrics; /* --metrics-addr, --metrics-file */
	__u64 stacks_lost;
	FILE *out;
	__u64 lost_reported;
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int libbpf_print_verbose(enum libbpf_print_level level, const char *fmt,
				va_list args)
{
	(void)level;
	return vfprintf(stderr, fmt, args);
}

static struct mt_target *find_target(struct tracer *tr, __u32 pid)
{
	for (int i = 0; i < tr->ntargets; i++)
		if ((__u32)tr->targets[i].pid == pid)
			return &tr->targets[i];
	return NULL;
}

/* the library a return address lies in, interned */
static const char *caller_name(struct tracer *tr, struct mt_target *t,
			       __u64 addr)
{
	const struct mt_mapping *m;

	if (!t || !addr)
		return NULL;
	m = mt_maps_find(&t->maps, addr);
	if (!m && mt_maps_read(t->pid, &t->maps) == 0)
		m = mt_maps_find(&t->maps, addr);
	if (!m || !m->path)
		return NULL;
	return mt_intern(tr->names, mt_basename(m->path));
}

static struct mt_sink *sink_of(struct tracer *tr, struct mt_target *t)
{
	return t && t->sink ? t->sink : &tr->sink;
}

static int put_pyconf(struct tracer *tr, struct mt_target *t)
{
	__u32 pid = (__u32)t->pid;

	return bpf_map__update_elem(tr->skel->maps.pyconf, &pid, sizeof(pid),
				    &t->pyconf, sizeof(t->pyconf), BPF_ANY);
}

/* a code object that calls an nn.Module: its self joins the stack hash */
static void on_modcode(void *ctx, __u32 pid, __u64 code)
{
	struct tracer *tr = ctx;
	struct mt_target *t = find_target(tr, pid);

	if (!t || !t->py || t->pyconf.nmodcode == MT_MAX_MODCODE)
		return;
	t->pyconf.modcode[t->pyconf.nmodcode++] = code;
	if (put_pyconf(tr, t))
		fprintf(stderr, "memtrace-bpf: pid %d: update walker: %s\n",
			t->pid, strerror(errno));
}

/* find the target's CPython and hand the walker its offsets */
static void find_python(struct tracer *tr, struct mt_target *t)
{
	char err[512];
	int ret;

	if (t->py || t->py_tries >= PY_TRIES || tr->opt->no_python)
		return;
	t->py_tries++;
	ret = mt_py_open(t->pid, &t->py, err, sizeof(err));
	if (ret == -ENOENT || ret == -EAGAIN)
		return; /* no CPython (yet) */
	if (ret) {
		t->py_tries = PY_TRIES;
		fprintf(stderr, "memtrace-bpf: pid %d: %s\n", t->pid, err);
		return;
	}
	t->pyconf = *mt_py_conf(t->py);
	t->pyconf.max_depth = tr->opt->max_depth;
	t->pyconf.nmodcode = 0;
	if (put_pyconf(tr, t)) {
		fprintf(stderr, "memtrace-bpf: pid %d: start the walker: %s\n",
			t->pid, strerror(errno));
		return;
	}
	if (tr->att.log)
		fprintf(tr->att.log, "# python pid=%d version=3.%u\n", t->pid,
			t->pyconf.minor);
	mt_sink_meta(t->sink ? t->sink : &tr->sink, "python",
		     "pid=%d version=3.%u", t->pid, t->pyconf.minor);
}

/* -o FILE{rank}: the process's own sink, named once its rank is known */
static void open_proc_sink(struct tracer *tr, struct mt_target *t,
			   const struct mt_rank *r)
{
	char path[4096];

	if (mt_path_expand(tr->opt->output, t->pid, r, path, sizeof(path))) {
		fprintf(stderr, "memtrace-bpf: -o %s: name too long\n",
			tr->opt->output);
		return;
	}
	t->sink = calloc(1, sizeof(*t->sink));
	if (!t->sink || mt_sink_open(t->sink, tr->opt, path)) {
		if (t->sink)
			mt_sink_close(t->sink, NULL);
		free(t->sink);
		t->sink = NULL; /* its events go to the shared sink */
		return;
	}
	mt_sink_describe(t->sink, t, tr->opt->command);
	if (!tr->opt->quiet && !t->sink->rec)
		fprintf(t->sink->out, "# memtrace-bpf %s: pid=%d(%s)\n",
			MT_VERSION, t->pid, t->comm);
}

/*
 * The rank is in the environment once the process runs its own image:
 * read at its first event.
 */
static void read_rank(struct tracer *tr, struct mt_target *t)
{
	struct mt_rank r;

	t->ranked = true;
	if (mt_rank_read(t->pid, &r))
		r = (struct mt_rank){ .rank = -1,
				      .local_rank = -1,
				      .world_size = -1 };
	/* a process without a rank has no file of its own under {rank} */
	if (tr->per_proc && (r.known || strstr(tr->opt->output, "{pid}")))
		open_proc_sink(tr, t, &r);
	if (!r.known)
		return;
	mt_session_set_rank(sink_of(tr, t)->ses, (__u32)t->pid, &r);
	mt_sink_meta(sink_of(tr, t), "rank", MT_RANK_META, t->pid, r.rank,
		     r.local_rank, r.world_size);
}

static void rescan(struct tracer *tr, struct mt_target *t)
{
	char err[512];

	if (t->exited)
		return;
	if (mt_attach_scan(&tr->att, t, err, sizeof(err)) < 0 &&
	    !mt_target_poll_exit(t))
		fprintf(stderr, "memtrace-bpf: %s\n", err);
	find_python(tr, t);
}

/*
 * A process --children or --all found: set up as -p does, without
 * failing the run when it is gone already or maps nothing of ours.
 */
static struct mt_target *add_target(struct tracer *tr, int pid, const char *how)
{
	const __u8 one = 1;
	struct mt_target *t = find_target(tr, (__u32)pid);
	char err[512];

	if (t)
		return t;
	if (tr->ntargets == MAX_TARGETS) {
		tr->targets_dropped++;
		return NULL;
	}
	t = &tr->targets[tr->ntargets];
	if (mt_target_open(t, pid, err, sizeof(err)))
		return NULL;
	tr->ntargets++;
	if (tr->opt->children_of &&
	    bpf_map__update_elem(tr->skel->maps.traced, &pid, sizeof(pid), &one,
				 sizeof(one), BPF_ANY))
		fprintf(stderr, "memtrace-bpf: follow pid %d: %s\n", pid,
			strerror(errno));
	if (tr->att.log)
		fprintf(tr->att.log, "# follow pid=%d comm=%s (%s)\n", pid,
			t->comm, how);
	rescan(tr, t);
	return t;
}

/* a library came: attach before the (held) process goes on */
static void on_loader(struct tracer *tr, const struct mt_event *ev)
{
	struct mt_target *t = find_target(tr, ev->pid);

	if (!t)
		return;
	rescan(tr, t);
	if (t->spawned && kill(t->pid, SIGCONT))
		fprintf(stderr, "memtrace-bpf: resume pid %d: %s\n", t->pid,
			strerror(errno));
}

/* phase and module of an event of a Python process; NULL if it is not one */
static const struct mt_pyresolved *attribute(struct tracer *tr,
					     struct mt_target *t,
					     const struct mt_event *ev,
					     struct mt_attrib *a)
{
	const struct mt_pyresolved *pr = NULL;
	const char *phase;

	if (!t || !t->py)
		return NULL;
	if (ev->flags & MT_EV_PY) {
		pr = mt_pystacks_get(tr->stacks, t->py, ev->pid, ev->stack_id,
				     ev->flags & MT_EV_PY_TRUNC);
		if (!pr || (ev->flags & MT_EV_PY_LOST))
			tr->stacks_lost++;
	}
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
static const char *raised_type(struct tracer *tr, struct mt_target *t,
			       const struct mt_event *ev)
{
	__u64 type = ev->args[1]; /* _PyErr_SetObject(tstate, type, value) */
	const __u8 one = 1;
	char name[256];

	if (!t || !t->py)
		return NULL;
	if (!mt_py_class_name(t->py, type, name, sizeof(name)) &&
	    type_wanted(tr->opt->exc_types, name))
		return mt_intern(tr->frames, name);
	/* not asked for: BPF drops its next ones (a full map: we do) */
	bpf_map__update_elem(tr->skel->maps.exc_skip, &type, sizeof(type), &one,
			     sizeof(one), BPF_ANY);
	return NULL;
}

/* who made the event: its site, interned in the session's table */
static struct mt_site *site_of(struct tracer *tr, struct mt_sink *k,
			       struct mt_target *t, const struct mt_rec *r,
			       const char *detail)
{
	const struct mt_event *ev = r->ev;
	const struct mt_pyresolved *pr;
	struct mt_attrib a = { 0 };
	const char *caller;
	struct mt_site key;
	bool is_new;

	pr = attribute(tr, t, ev, &a);
	caller = caller_name(tr, t, ev->caller);
	/* NCCL's memory is NCCL's, whatever module runs the collective */
	if (r->ki->space == MT_SP_NCCL ||
	    (caller && !strncmp(caller, "libnccl", 7)))
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
	};
	return mt_sites_get(k->ses->sites, &key, &is_new);
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct tracer *tr = ctx;
	const struct mt_event *ev = data;
	const char *detail = NULL;
	struct mt_target *t;
	struct mt_sink *k;
	struct mt_site *site;
	struct mt_rec r;
	bool default0;

	if (len < sizeof(*ev))
		return 0;
	if (ev->kind == MT_K_LOADER) {
		on_loader(tr, ev);
		return 0;
	}
	if (ev->kind == MT_K_FORK) {
		add_target(tr, (int)ev->pid, "forked");
		return 0;
	}
	t = find_target(tr, ev->pid);
	/* --all: a process that mapped an attached library since the scan */
	if (!t && tr->opt->all)
		t = add_target(tr, (int)ev->pid, "seen");
	if (t && !t->ranked)
		read_rank(tr, t);
	default0 = t && t->spawned;
	if (!mt_decode(ev, default0 ? 0 : -1, &r))
		return 0;
	if (ev->kind == MT_K_PY_RAISE) {
		detail = raised_type(tr, t, ev);
		if (!detail)
			return 0;
	}
	k = sink_of(tr, t);
	site = site_of(tr, k, t, &r, detail);
	if (!mt_sink_event(k, ev, default0, &r, site))
		return 0;
	if (site->phase && t && t->modlog) {
		__u64 allocated, reserved;

		mt_summary_totals(&k->ses->sum, ev->pid, &allocated, &reserved);
		mt_modlog_event(t->modlog, ev->ts, site->phase, site->module,
				mt_pystacks_root(tr->stacks, ev->pid),
				allocated, reserved);
	}
	return 0;
}

static __u64 lost_now(const struct tracer *tr)
{
	return tr->skel->bss->lost_events + tr->skel->bss->lost_inflight;
}

static void report_lost(struct tracer *tr)
{
	__u64 lost = lost_now(tr);

	if (lost == tr->lost_reported)
		return;
	fprintf(tr->out, "# LOST %llu events\n",
		(unsigned long long)(lost - tr->lost_reported));
	tr->lost_reported = lost;
}

static bool all_exited(struct tracer *tr)
{
	bool all = !tr->opt->all; /* --all waits for new ones */

	for (int i = 0; i < tr->ntargets; i++)
		if (!mt_target_poll_exit(&tr->targets[i]))
			all = false;
	return all;
}

static const char *const wanted_libs = "libcudart, libcuda, libc10";

/* the first attach of each target; errors here end the run (exit 2) */
static int attach_targets(struct tracer *tr)
{
	/* with --trace-exceptions, a Python without PyTorch is enough */
	const unsigned int ours =
		(1u << MT_LIB_CUDART) | (1u << MT_LIB_CUDA) |
		(1u << MT_LIB_C10) |
		(tr->opt->exc_types ? 1u << MT_LIB_PYTHON : 0);
	char err[512];

	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_target *t = &tr->targets[i];

		if (t->spawned)
			continue; /* attached as its loader maps them */
		if (mt_attach_scan(&tr->att, t, err, sizeof(err)) < 0) {
			fprintf(stderr, "memtrace-bpf: %s\n", err);
			return 2;
		}
		find_python(tr, t);
		if (!(t->libs & ours) && !tr->opt->wait_libs &&
		    !tr->att.global) {
			fprintf(stderr,
				"memtrace-bpf: pid %d (%s) maps none of %s; "
				"use --wait to wait for them\n",
				t->pid, t->comm, wanted_libs);
			return 2;
		}
	}
	return 0;
}

/* -- mode: the loader probe goes on before the command's first exec */
static int spawn_command(struct tracer *tr, int gate[2])
{
	struct mt_target *t = &tr->targets[0];
	char ldso[4096], err[512];
	struct stat st;
	int ret;

	if (!realpath(LDSO_PATH, ldso) || stat(ldso, &st)) {
		fprintf(stderr, "memtrace-bpf: %s: %s (glibc x86-64 needed)\n",
			LDSO_PATH, strerror(errno));
		return 2;
	}
	ret = mt_target_spawn(t, tr->opt->command, gate, err, sizeof(err));
	tr->ntargets = 1;
	if (ret) {
		fprintf(stderr, "memtrace-bpf: %s\n", err);
		return 2;
	}
	ret = mt_attach_lib(&tr->att, t, MT_LIB_LDSO, ldso, err, sizeof(err));
	if (ret <= 0) {
		fprintf(stderr, "memtrace-bpf: %s\n",
			ret ? err : "no _dl_debug_state in the loader");
		return 2;
	}
	t->files[t->nfiles++] =
		(struct mt_file_id){ .dev = st.st_dev, .inode = st.st_ino };
	return 0;
}

/* --children: the launcher, what it started so far, and what it starts */
static int follow_children(struct tracer *tr)
{
	int pids[MAX_TARGETS];
	size_t n;

	if (!add_target(tr, tr->opt->children_of, "launcher")) {
		fprintf(stderr,
			"memtrace-bpf: no such process: %d (check the pid "
			"with ps)\n",
			tr->opt->children_of);
		return 2;
	}
	tr->fork_link = bpf_program__attach(tr->skel->progs.mt_fork);
	if (!tr->fork_link) {
		fprintf(stderr, "memtrace-bpf: follow forks: %s\n",
			strerror(errno));
		return 2;
	}
	n = mt_descendants(tr->opt->children_of, pids, MAX_TARGETS);
	for (size_t i = 0; i < n; i++)
		add_target(tr, pids[i], "child");
	return 0;
}

/* --all: every process that maps our libraries now */
static void scan_all(struct tracer *tr)
{
	const unsigned int ours = (1u << MT_LIB_CUDART) | (1u << MT_LIB_CUDA) |
				  (1u << MT_LIB_C10);
	int pids[MAX_TARGETS];
	size_t n = mt_procs_mapping(ours, getpid(), pids, MAX_TARGETS);

	for (size_t i = 0; i < n; i++)
		add_target(tr, pids[i], "maps our libraries");
}

static int open_targets(struct tracer *tr)
{
	char err[512];

	if (tr->opt->children_of)
		return follow_children(tr);
	if (tr->opt->all) {
		scan_all(tr);
		return 0;
	}
	for (int i = 0; i < tr->opt->npids; i++) {
		if (mt_target_open(&tr->targets[i], tr->opt->pids[i], err,
				   sizeof(err))) {
			fprintf(stderr, "memtrace-bpf: %s\n", err);
			return 2;
		}
		tr->ntargets++;
	}
	return 0;
}

static int open_module_logs(struct tracer *tr)
{
	char err[512];

	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_target *t = &tr->targets[i];

		t->modlog = mt_modlog_open(tr->opt->module_log, t->pid,
					   tr->opt->log_time, err, sizeof(err));
		if (!t->modlog) {
			fprintf(stderr, "memtrace-bpf: %s\n", err);
			return 2;
		}
	}
	return 0;
}

static void print_header(struct tracer *tr)
{
	fprintf(tr->out, "# memtrace-bpf %s:", MT_VERSION);
	for (int i = 0; i < tr->ntargets; i++)
		fprintf(tr->out, " pid=%d(%s)", tr->targets[i].pid,
			tr->targets[i].comm);
	fprintf(tr->out, "\n");
}

/* the sessions of every sink: the shared one, then each process's */
static size_t sessions(struct tracer *tr, struct mt_session **v, size_t max)
{
	size_t n = 0;

	v[n++] = tr->sink.ses;
	for (int i = 0; i < tr->ntargets && n < max; i++)
		if (tr->targets[i].sink)
			v[n++] = tr->targets[i].sink->ses;
	return n;
}

static void flush_sinks(struct tracer *tr)
{
	mt_sink_flush(&tr->sink);
	for (int i = 0; i < tr->ntargets; i++)
		if (tr->targets[i].sink)
			mt_sink_flush(tr->targets[i].sink);
}

static int trace_loop(struct tracer *tr, struct ring_buffer *rb)
{
	__u64 start = now_ns(), last_scan = start, last_all = start;
	__u64 end = tr->opt->duration > 0 ?
			    start + (__u64)(tr->opt->duration * 1e9) :
			    0;
	int ret;

	while (!exiting) {
		ret = ring_buffer__poll(rb, POLL_MS);
		/* events below the wakeup threshold are read on this timer */
		if (ret >= 0)
			ret = ring_buffer__consume(rb);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "memtrace-bpf: ring buffer: %s\n",
				strerror(-ret));
			return 2;
		}
		report_lost(tr);
		if (tr->watch)
			mt_watch_tick(tr->watch, now_ns(), &tr->sink.ses->sum,
				      tr->sink.ses->sites, tr->out);
		if (tr->metrics) {
			struct mt_session *v[MAX_TARGETS + 1];
			size_t n = sessions(tr, v, MAX_TARGETS + 1);

			mt_metrics_poll(tr->metrics, now_ns(), v, n,
					lost_now(tr));
		}
		fflush(tr->out);
		flush_sinks(tr);
		if (end && now_ns() >= end)
			break;
		if (all_exited(tr))
			break;
		if (now_ns() - last_scan >= RESCAN_NS) {
			for (int i = 0; i < tr->ntargets; i++)
				rescan(tr, &tr->targets[i]);
			last_scan = now_ns();
		}
		if (tr->opt->all && now_ns() - last_all >= ALL_SCAN_NS) {
			scan_all(tr);
			last_all = now_ns();
		}
	}
	/* what the targets did before they exited or we stopped */
	ring_buffer__consume(rb);
	report_lost(tr);
	return 0;
}

static void describe_targets(struct tracer *tr)
{
	mt_sink_meta(&tr->sink, "tool", "memtrace-bpf %s", MT_VERSION);
	for (int i = 0; i < tr->ntargets; i++)
		mt_sink_describe(&tr->sink, &tr->targets[i], tr->opt->command);
}

/* a library attached: the record keeps it */
static void on_lib(void *ctx, const struct mt_target *t, const char *path,
		   int probes)
{
	struct tracer *tr = ctx;

	mt_sink_library(t->sink ? t->sink : &tr->sink, t->pid, path, probes);
}

static int run(struct tracer *tr)
{
	const struct mt_options *o = tr->opt;
	struct ring_buffer *rb = NULL;
	int gate[2] = { -1, -1 };
	char err[512];
	__u64 start;
	int ret;

	tr->skel = memtrace_bpf__open();
	if (!tr->skel) {
		fprintf(stderr, "memtrace-bpf: open BPF object: %s\n",
			strerror(errno));
		return 2;
	}
	ret = bpf_map__set_max_entries(tr->skel->maps.events,
				       o->ringbuf_mb << 20);
	/* an eighth full: the reader still has room to catch up */
	tr->skel->rodata->wakeup_bytes = ((__u64)o->ringbuf_mb << 20) / 8;
	tr->skel->rodata->filter_pids = o->children_of > 0;
	if (!ret)
		ret = memtrace_bpf__load(tr->skel);
	if (ret) {
		fprintf(stderr, "memtrace-bpf: load BPF programs: %s\n",
			strerror(-ret));
		return 2;
	}
	tr->att.skel = tr->skel;
	tr->att.no_cpu = o->no_cpu;
	tr->att.no_cuda = o->no_cuda;
	tr->att.no_python = o->no_python;
	tr->att.trace_exceptions = o->exc_types != NULL;
	tr->att.global = o->children_of || o->all;
	/* with -q the attach notes still tell a script when tracing began */
	tr->att.log = o->quiet || o->mode == MT_MODE_RECORD ? stderr : tr->out;
	tr->att.on_lib = on_lib;
	tr->att.ctx = tr;

	ret = o->command ? spawn_command(tr, gate) : open_targets(tr);
	if (!ret && o->module_log)
		ret = open_module_logs(tr);
	if (ret)
		return ret;
	if (o->mode == MT_MODE_RECORD)
		describe_targets(tr);
	else if (!o->quiet)
		print_header(tr);
	ret = attach_targets(tr);
	if (ret)
		return ret;
	tr->stacks =
		mt_pystacks_new(bpf_map__fd(tr->skel->maps.stacks), MAX_STACKS,
				tr->frames, &o->rules, on_modcode, tr);
	if (!tr->stacks) {
		fprintf(stderr, "memtrace-bpf: out of memory\n");
		return 2;
	}
	rb = ring_buffer__new(bpf_map__fd(tr->skel->maps.events), on_event, tr,
			      NULL);
	if (!rb) {
		fprintf(stderr, "memtrace-bpf: ring buffer: %s\n",
			strerror(errno));
		return 2;
	}
	if (o->command && mt_target_start(&tr->targets[0], gate, o->command,
					  err, sizeof(err))) {
		fprintf(stderr, "memtrace-bpf: %s\n", err);
		ring_buffer__free(rb);
		return 2;
	}
	start = now_ns();
	ret = trace_loop(tr, rb);
	tr->end = (struct mt_summary_end){
		.seconds = (double)(now_ns() - start) / 1e9,
		.lost = lost_now(tr),
		.stacks_lost = tr->stacks_lost,
		.top_live = o->top_live,
	};
	tr->ran = true;
	ring_buffer__free(rb);
	return ret;
}

static int open_metrics(struct tracer *tr)
{
	const struct mt_options *o = tr->opt;
	const struct mt_metrics_conf c = { .addr = o->metrics_addr,
					   .file = o->metrics_file,
					   .file_interval = 1.0 };
	char err[512];

	if (!o->metrics_addr && !o->metrics_file)
		return 0;
	tr->metrics = mt_metrics_open(&c, err, sizeof(err));
	if (!tr->metrics) {
		fprintf(stderr, "memtrace-bpf: %s\n", err);
		return 2;
	}
	return 0;
}

static int close_metrics(struct tracer *tr)
{
	char err[512];
	int ret;

	if (!tr->metrics)
		return 0;
	struct mt_session *v[MAX_TARGETS + 1];
	size_t n = sessions(tr, v, MAX_TARGETS + 1);

	ret = mt_metrics_close(tr->metrics, v, n, tr->skel ? lost_now(tr) : 0,
			       err, sizeof(err));
	tr->metrics = NULL;
	if (ret)
		fprintf(stderr, "memtrace-bpf: %s\n", err);
	return ret ? 2 : 0;
}

static int open_watch(struct tracer *tr)
{
	const struct mt_options *o = tr->opt;
	const struct mt_watch_conf c = { .interval = o->watch,
					 .window = o->watch_window,
					 .device_mem = o->device_mem,
					 .alert_pct = o->alert_pct };

	if (!o->watch)
		return 0;
	tr->watch = mt_watch_new(&c);
	return tr->watch ? 0 : -ENOMEM;
}

/* processes --children or --all could not follow: said, not lost */
static void report_lost_procs(const struct tracer *tr)
{
	__u64 forks = tr->skel ? tr->skel->bss->lost_forks : 0;

	if (tr->targets_dropped || forks)
		fprintf(tr->out,
			"# lost processes=%llu (past %d followed) forks=%llu "
			"(children not followed: the traced map was full)\n",
			(unsigned long long)tr->targets_dropped, MAX_TARGETS,
			(unsigned long long)forks);
}

static int trace(const struct mt_options *opt)
{
	struct tracer tr = { .opt = opt };
	struct mt_export_conf ec;
	char err[512];
	int ret;

	if (mt_preflight(err, sizeof(err))) {
		fprintf(stderr, "memtrace-bpf: %s\n", err);
		return 2;
	}
	libbpf_set_print(opt->verbose ? libbpf_print_verbose : libbpf_print);
	/* with --export, -o is the export's file */
	tr.per_proc = opt->output && !opt->export_kind &&
		      mt_path_per_process(opt->output);
	ret = mt_sink_open(&tr.sink, opt,
			   tr.per_proc || opt->export_kind ? NULL :
							     opt->output);
	tr.out = tr.sink.out;
	tr.names = mt_strpool_new(4096);
	tr.frames = mt_strpool_new(1 << 18);
	tr.nodes = mt_nodes_new();
	if (ret) {
		ret = 2;
	} else if (!tr.names || !tr.frames || !tr.nodes || open_watch(&tr)) {
		fprintf(stderr, "memtrace-bpf: out of memory\n");
		ret = 2;
	} else if (mt_export_conf_from(&ec, opt) &&
		   mt_export_start(tr.sink.ses, &ec, err, sizeof(err))) {
		fprintf(stderr, "memtrace-bpf: %s\n", err);
		ret = 2;
	} else if (open_metrics(&tr)) {
		ret = 2;
	} else {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		ret = run(&tr);
	}
	if (close_metrics(&tr))
		ret = 2;
	if (tr.sink.ses && mt_export_finish(tr.sink.ses, err, sizeof(err))) {
		fprintf(stderr, "memtrace-bpf: export: %s\n", err);
		ret = 2;
	}

	bpf_link__destroy(tr.fork_link);
	mt_attach_destroy(&tr.att);
	for (int i = 0; i < tr.ntargets; i++) {
		/* never leave a held command stopped behind us */
		if (tr.targets[i].spawned && !tr.targets[i].exited)
			kill(tr.targets[i].pid, SIGCONT);
		mt_py_close(tr.targets[i].py);
		if (mt_modlog_close(tr.targets[i].modlog)) {
			fprintf(stderr,
				"memtrace-bpf: write the module log: %s\n",
				strerror(errno));
			ret = 2;
		}
		if (tr.targets[i].sink &&
		    mt_sink_close(tr.targets[i].sink, tr.ran ? &tr.end : NULL))
			ret = 2;
		free(tr.targets[i].sink);
		mt_target_close(&tr.targets[i]);
	}
	report_lost_procs(&tr);
	/* the shared summary only if it has something (-o FILE{rank}) */
	if (mt_sink_close(&tr.sink,
			  tr.ran && (!tr.per_proc || tr.sink.ses->seq) ?
				  &tr.end :
				  NULL))
		ret = 2;
	mt_watch_free(tr.watch);
	mt_pystacks_free(tr.stacks);
	mt_nodes_free(tr.nodes);
	memtrace_bpf__destroy(tr.skel);
	mt_strpool_free(tr.names);
	mt_strpool_free(tr.frames);
	return ret;
}

int main(int argc, char **argv)
{
	struct mt_options opt;
	int ret;

	ret = mt_parse_options(argc, argv, &opt);
	if (ret)
		return ret;
	if (opt.mode == MT_MODE_REPORT || opt.mode == MT_MODE_SCRIPT)
		return mt_replay(&opt);
	if (opt.mode == MT_MODE_ESTIMATE)
		return mt_estimate(&opt);
	return trace(&opt);
}
