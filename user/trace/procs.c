// SPDX-License-Identifier: GPL-2.0
/*
 * The processes a trace follows (tracer.h): found by -p, -- COMMAND,
 * --children or --all; attached as their libraries come; their CPython,
 * rank and, with -o FILE{rank}, their own sink.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "analysis/lines.h"
#include "event/format.h"
#include "proc/follow.h"
#include "proc/procinfo.h"
#include "memtrace.h" /* the types of its globals, before the skeleton */
#include "memtrace.skel.h"
#include "python/pyproc.h"
#include "python/stack.h"
#include "proc/rank.h"
#include "record/record.h"
#include "trace/autograd.h"
#include "trace/tracer.h"
#include "lib/err.h"
#include "lib/version.h"

#define LDSO_PATH "/lib64/ld-linux-x86-64.so.2"
/* CPython may not be initialised yet: look again at each rescan, a while */
#define PY_TRIES 200
/*
 * A process gone this long has no event left on the way (order.c holds
 * one a second at most), and the features are done with it (the flight
 * recorder's last dumps wait a second): its slot may go to another
 */
#define REUSE_NS (2 * 1000000000ULL)
/* a gone process's CPython view (its code cache) is kept this long */
#define PY_KEEP_NS (1000000000ULL)

static const char *const wanted_libs = "libcudart, libcuda, libc10";

static int put_pyconf(struct mt_tracer *tr, struct mt_traced *t)
{
	__u32 pid = (__u32)t->proc.pid;

	return bpf_map__update_elem(tr->skel->maps.pyconf, &pid, sizeof(pid),
				    &t->pyconf, sizeof(t->pyconf), BPF_ANY);
}

/* a code object that calls an nn.Module: its self joins the stack hash */
void mt_tracer_on_modcode(void *ctx, __u32 pid, __u64 code)
{
	struct mt_tracer *tr = ctx;
	struct mt_traced *t = mt_tracer_find(tr, pid);

	/* an exec pending: the walker's layout in BPF is gone with its image */
	if (!t || !t->py || t->exec_pending ||
	    t->pyconf.nmodcode == MT_MAX_MODCODE)
		return;
	t->pyconf.modcode[t->pyconf.nmodcode++] = code;
	if (put_pyconf(tr, t))
		mt_err("pid %d: update walker: %s", t->proc.pid,
		       strerror(errno));
}

/*
 * Find the target's CPython and hand the walker its offsets. True when it
 * was found now: say_python() tells it. Done before a scan attaches
 * probes, so that their first events are walked.
 */
static bool find_python(struct mt_tracer *tr, struct mt_traced *t)
{
	char err[512];
	int ret;

	/*
	 * An exec pending: the events before it are the old image's, and
	 * the new image's CPython is looked for once they are handled
	 */
	if (t->py || t->exec_pending || t->py_tries >= PY_TRIES ||
	    tr->conf->no_python)
		return false;
	t->py_tries++;
	ret = mt_py_open(t->proc.pid, &t->py, err, sizeof(err));
	if (ret == -ENOENT || ret == -EAGAIN)
		return false; /* no CPython (yet) */
	/*
	 * A program that just started (exec'd) may be caught amid its
	 * initialisation, its state half written: tried again at the next
	 * turn, and said only when the tries run out
	 */
	if (ret == -EPROTO && t->py_soon && t->py_tries < PY_TRIES)
		return false;
	if (ret) {
		t->py_tries = PY_TRIES;
		/*
		 * gone meanwhile, or exiting (ESRCH: its mappings went
		 * first): its exit is told where it is noticed
		 */
		if (ret != -ESRCH && !mt_target_poll_exit(&t->proc))
			mt_err("pid %d: %s", t->proc.pid, err);
		return false;
	}
	t->pyconf = *mt_py_conf(t->py);
	t->pyconf.max_depth = tr->conf->max_depth;
	t->pyconf.nmodcode = 0;
	if (put_pyconf(tr, t)) {
		mt_err("pid %d: start the walker: %s", t->proc.pid,
		       strerror(errno));
		return false;
	}
	/* the events that came before are now known to lack their stack */
	tr->unseen.stacks_early += t->py_early;
	t->py_early = 0;
	return true;
}

/*
 * The '# python' line and the record's meta: after the '# attach' lines,
 * as the last word of an attach (tests and users wait for it)
 */
static void say_python(struct mt_tracer *tr, const struct mt_traced *t)
{
	const struct mt_header h = mt_sink_header(mt_tracer_sink(tr, t));

	if (tr->att.log)
		fprintf(tr->att.log, "# python pid=%d version=3.%u\n",
			t->proc.pid, t->pyconf.minor);
	mt_header_python(&h, t);
}

/* t's execs are followed from now on: BPF tells each (mt_exec) */
static void watch_exec(struct mt_tracer *tr, struct mt_traced *t)
{
	const __u8 one = 1;
	int pid = t->proc.pid, ret;

	t->exec_watched = true;
	ret = bpf_map__update_elem(tr->skel->maps.exec_watch, &pid, sizeof(pid),
				   &one, sizeof(one), BPF_ANY);
	if (ret)
		mt_err("pid %d: its execs will not be followed: %s", pid,
		       strerror(-ret));
}

/* t is gone: a process that takes its pid later is none of ours */
static void unwatch_exec(struct mt_tracer *tr, struct mt_traced *t)
{
	int pid = t->proc.pid, ret;

	if (!t->exec_watched)
		return;
	t->exec_watched = false;
	ret = bpf_map__delete_elem(tr->skel->maps.exec_watch, &pid, sizeof(pid),
				   0);
	if (ret && ret != -ENOENT)
		mt_err("pid %d: stop following its execs: %s", pid,
		       strerror(-ret));
}

/* pid into BPF's map of the family traced: 0, or -1 with errno set */
static int trace_pid(struct mt_tracer *tr, int pid)
{
	const __u8 one = 1;

	return bpf_map__update_elem(tr->skel->maps.traced, &pid, sizeof(pid),
				    &one, sizeof(one), BPF_ANY);
}

/*
 * A family's children, traced from their fork (BPF adds each to the map),
 * and pid (0: none) put in the map first. 0, or -1 after mt_err().
 */
static int follow_forks(struct mt_tracer *tr, int pid)
{
	if (pid && trace_pid(tr, pid)) {
		mt_err("follow pid %d: %s", pid, strerror(errno));
		return -1;
	}
	tr->fork_link = bpf_program__attach(tr->skel->progs.mt_fork);
	if (!tr->fork_link) {
		mt_err("follow forks: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * --children: t is gone, its pid out of the BPF map of processes traced,
 * so that a process given its pid later is not traced for it, and the map
 * (4,096 entries) does not fill with the dead of a long job
 */
static void untrace(struct mt_tracer *tr, struct mt_traced *t)
{
	int pid = t->proc.pid, ret;

	if (!mt_tracer_family(tr->conf))
		return;
	ret = bpf_map__delete_elem(tr->skel->maps.traced, &pid, sizeof(pid), 0);
	if (ret && ret != -ENOENT)
		mt_err("pid %d: stop tracing it in BPF: %s", pid,
		       strerror(-ret));
}

void mt_tracer_exec_seen(struct mt_tracer *tr, const struct mt_event *ev)
{
	struct mt_traced *t = mt_tracer_find(tr, ev->pid);

	if (t)
		t->exec_pending++;
}

/* what was known of t's CPython belonged to the image an exec ended */
static void forget_python(struct mt_tracer *tr, struct mt_traced *t)
{
	__u32 pid = (__u32)t->proc.pid;
	int ret;

	mt_py_close(t->py);
	t->py = NULL;
	t->py_tries = 0;
	t->py_early = 0;
	t->pyconf = (struct mt_pyconf){ 0 };
	mt_pystacks_forget(tr->stacks, pid);
	mt_autograd_forget(tr, t);
	/*
	 * BPF dropped the old layout at the exec, but a code object found
	 * to call a module before the exec came to us may have put it back
	 */
	ret = bpf_map__delete_elem(tr->skel->maps.pyconf, &pid, sizeof(pid), 0);
	if (ret && ret != -ENOENT)
		mt_err("pid %d: stop the walker: %s", t->proc.pid,
		       strerror(-ret));
}

void mt_tracer_on_exec(struct mt_tracer *tr, const struct mt_event *ev)
{
	struct mt_traced *t = mt_tracer_find(tr, ev->pid);
	struct mt_exec_freed freed;
	struct mt_site key, *site;
	struct mt_sink *k;
	char exe[4096];
	bool is_new;

	if (!t)
		return;
	if (t->exec_pending)
		t->exec_pending--;
	snprintf(t->proc.comm, sizeof(t->proc.comm), "%.*s", MT_COMM_LEN - 1,
		 ev->comm);
	/*
	 * Read now: a process that exec'd again since names its latest
	 * program, one gone since none
	 */
	if (mt_proc_exe(t->proc.pid, exe, sizeof(exe)))
		snprintf(exe, sizeof(exe), "?");
	k = mt_tracer_sink(tr, t);
	key = (struct mt_site){ .pid = ev->pid,
				.event = mt_intern(tr->frames, "process:exec"),
				.detail = mt_intern(tr->frames, exe) };
	site = mt_sites_get(k->ses->sites, &key, &is_new);
	mt_sink_exec(k, ev, site, &freed);
	mt_features_exec(tr, t, ev, site);
	if (tr->att.log)
		mt_lines_print_exec(tr->att.log, ev->pid, ev->comm, exe,
				    &freed);
	forget_python(tr, t);
	/* the old image's mappings: the callers of the new one are not there */
	mt_maps_free(&t->proc.maps);
	if (tr->conf->no_python)
		return;
	/* its first calls come soon after it starts: looked for at each turn */
	t->py_soon = true;
	if (find_python(tr, t))
		say_python(tr, t);
	t->py_soon = !t->py && t->py_tries < PY_TRIES;
}

void mt_tracer_exec_tick(struct mt_tracer *tr)
{
	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_traced *t = &tr->targets[i];

		if (!t->py_soon)
			continue;
		if (find_python(tr, t))
			say_python(tr, t);
		t->py_soon = !t->py && t->py_tries < PY_TRIES;
	}
}

/* -o FILE{rank}: the process's own sink, named once its rank is known */
static void open_proc_sink(struct mt_tracer *tr, struct mt_traced *t,
			   const struct mt_rank *r)
{
	char path[4096], comm[MT_FORMAT_COMM_LEN];

	if (mt_path_expand(tr->conf->output, t->proc.pid, r, path,
			   sizeof(path))) {
		mt_err("-o %s: name too long", tr->conf->output);
		return;
	}
	t->sink = calloc(1, sizeof(*t->sink));
	if (!t->sink ||
	    mt_sink_open(t->sink, &tr->conf->out, tr->conf->record, path)) {
		if (t->sink)
			mt_sink_close(t->sink, NULL);
		free(t->sink);
		t->sink = NULL; /* its events go to the shared sink */
		return;
	}
	mt_sink_describe(t->sink, t, tr->conf->command);
	if (!tr->conf->quiet && !t->sink->rec)
		fprintf(t->sink->out, "# memtrace-bpf %s: pid=%d(%s)\n",
			MT_VERSION, t->proc.pid,
			mt_format_comm(comm, sizeof(comm), t->proc.comm));
}

/* a process that ran before it was traced: its report says what it hides */
static void note_attached(struct mt_tracer *tr, const struct mt_traced *t)
{
	struct mt_sink *k = mt_tracer_sink(tr, t);

	mt_session_set_attached(k->ses, (__u32)t->proc.pid);
	mt_sink_meta(k, MT_REC_ATTACH_KEY, "pid=%d", t->proc.pid);
}

/*
 * The rank is in the environment once the process runs its own image:
 * read at its first event.
 */
void mt_tracer_read_rank(struct mt_tracer *tr, struct mt_traced *t)
{
	struct mt_header h;
	struct mt_rank r;

	t->proc.ranked = true;
	if (mt_rank_read(t->proc.pid, &r))
		r = (struct mt_rank){ .rank = -1,
				      .local_rank = -1,
				      .world_size = -1 };
	t->proc.rank = r;
	/* a process without a rank has no file of its own under {rank} */
	if (tr->per_proc && (r.known || strstr(tr->conf->output, "{pid}")))
		open_proc_sink(tr, t, &r);
	if (t->proc.attached)
		note_attached(tr, t);
	if (!r.known)
		return;
	h = mt_sink_header(mt_tracer_sink(tr, t));
	mt_session_set_rank(mt_tracer_sink(tr, t)->ses, (__u32)t->proc.pid, &r);
	mt_header_rank(&h, t->proc.pid, &r);
}

void mt_tracer_rescan(struct mt_tracer *tr, struct mt_traced *t)
{
	char err[512];
	bool found;
	int ret;

	if (t->proc.exited)
		return;
	found = find_python(tr, t);
	ret = mt_attach_scan(&tr->att, &t->proc, err, sizeof(err));
	/*
	 * ESRCH: it is exiting, its mappings going before its exit shows
	 * (a short child of a followed family, often): nothing to say
	 */
	if (ret < 0 && ret != -ESRCH && !mt_target_poll_exit(&t->proc))
		mt_err("%s", err);
	if (found)
		say_python(tr, t);
}

/* a slot no process holds */
static void free_slot(struct mt_traced *t)
{
	*t = (struct mt_traced){
		.proc = { .pidfd = -1, .guard_fd = -1, .exited = true }
	};
}

/*
 * Whether t's slot may go to another process: t is gone (REUSE_NS), and
 * holds nothing that is written at the trace's end only: a file of its
 * own (-o FILE{pid}), the command we started
 */
static bool reusable(const struct mt_traced *t, __u64 now)
{
	return t->proc.pid && t->proc.gone_ns &&
	       now - t->proc.gone_ns >= REUSE_NS && !t->sink &&
	       !t->proc.spawned;
}

/* t is let go: what the features and the trace kept of it freed */
static void let_go(struct mt_tracer *tr, struct mt_traced *t)
{
	mt_features_exit(tr, t);
	mt_autograd_forget(tr, t);
	if (tr->stacks)
		mt_pystacks_forget(tr->stacks, (__u32)t->proc.pid);
	mt_py_close(t->py);
	mt_target_close(&t->proc);
	free_slot(t);
}

/*
 * A slot for one more process: a new one, else a free one, else that of
 * a process gone a while (let go now); NULL when every slot holds a
 * process alive or just gone
 */
static struct mt_traced *slot(struct mt_tracer *tr)
{
	__u64 now;

	if (tr->ntargets < MT_MAX_TARGETS)
		return &tr->targets[tr->ntargets];
	for (int i = 0; i < tr->ntargets; i++)
		if (!tr->targets[i].proc.pid)
			return &tr->targets[i];
	now = mt_now_ns();
	for (int i = 0; i < tr->ntargets; i++) {
		if (reusable(&tr->targets[i], now)) {
			let_go(tr, &tr->targets[i]);
			return &tr->targets[i];
		}
	}
	return NULL;
}

/*
 * A process --children or --all found: set up as -p does, without
 * failing the run when it is gone already or maps nothing of ours.
 */
struct mt_traced *mt_tracer_add(struct mt_tracer *tr, int pid, const char *how,
				const char *comm, bool running)
{
	struct mt_traced *t = mt_tracer_find(tr, (__u32)pid);
	char err[512], shown[MT_FORMAT_COMM_LEN];

	if (t)
		return t;
	t = slot(tr);
	if (!t) {
		tr->targets_dropped++;
		return NULL;
	}
	if (mt_target_open(&t->proc, pid, err, sizeof(err))) {
		mt_target_close(&t->proc);
		free_slot(t);
		return NULL;
	}
	t->proc.attached = running;
	/* an exec after the fork follows as its own event, with its name */
	if (comm)
		snprintf(t->proc.comm, sizeof(t->proc.comm), "%.*s",
			 MT_COMM_LEN - 1, comm);
	if (t == &tr->targets[tr->ntargets])
		tr->ntargets++;
	watch_exec(tr, t);
	if (mt_tracer_family(tr->conf) && trace_pid(tr, pid))
		mt_err("follow pid %d: %s", pid, strerror(errno));
	if (tr->att.log)
		fprintf(tr->att.log, "# follow pid=%d comm=%s (%s)\n", pid,
			mt_format_comm(shown, sizeof(shown), t->proc.comm),
			how);
	mt_tracer_rescan(tr, t);
	return t;
}

/* a library came: attach before the (held) process goes on */
void mt_tracer_on_loader(struct mt_tracer *tr, const struct mt_event *ev)
{
	struct mt_traced *t = mt_tracer_find(tr, ev->pid);
	bool late;
	int ret;

	if (!t)
		return;
	/*
	 * A command we started runs its own image by its first load: its
	 * execs are followed from there (the one that started it is not)
	 */
	if (!t->exec_watched)
		watch_exec(tr, t);
	mt_tracer_rescan(tr, t);
	/* the load just done relocated libtorch_cpu, maybe */
	mt_autograd_place(tr, t);
	if (!t->proc.spawned)
		return;
	ret = mt_target_resume(&t->proc, &late);
	if (ret)
		mt_err("resume pid %d: %s", t->proc.pid, strerror(-ret));
	if (late && !t->proc.told_late) {
		mt_err("pid %d (%s) waited %.1f s at a library load: its guard "
		       "let it go on before the tracer had attached the "
		       "library (the tracer was stopped or too slow); calls "
		       "made meanwhile were not traced",
		       t->proc.pid, t->proc.comm, MT_HOLD_MAX_MS / 1000.0);
		t->proc.told_late = true;
	}
}

bool mt_tracer_all_exited(struct mt_tracer *tr)
{
	bool all = !tr->conf->all; /* --all waits for new ones */

	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_traced *t = &tr->targets[i];

		if (!t->proc.pid)
			continue;
		if (!mt_target_poll_exit(&t->proc)) {
			all = false;
		} else if (!t->proc.gone_ns) {
			t->proc.gone_ns = mt_now_ns();
			unwatch_exec(tr, t);
			untrace(tr, t);
		} else if (t->py &&
			   mt_now_ns() - t->proc.gone_ns >= PY_KEEP_NS) {
			/*
			 * its events are handled (a second: what the time
			 * order holds at most); their names are in the
			 * stacks resolved, and its code cache can go
			 */
			mt_py_close(t->py);
			t->py = NULL;
		}
	}
	return all;
}

/*
 * A target that exits while it is being attached makes the attach fail in
 * whatever step it was (its maps gone, its files gone, perf_event_open's
 * ESRCH): that is the target's exit, not an error, so say that in one line
 * and go on with the others.
 */
static bool gone_during_attach(struct mt_traced *t)
{
	if (!mt_target_poll_exit(&t->proc))
		return false;
	mt_err("pid %d (%s) exited while it was being attached; nothing of "
	       "it was traced",
	       t->proc.pid, t->proc.comm);
	return true;
}

/*
 * The first attach of each target; errors here end the run (exit 2), but a
 * target that exits meanwhile is skipped (gone_during_attach).
 */
int mt_tracer_attach(struct mt_tracer *tr)
{
	/* with --trace-exceptions, a Python without PyTorch is enough */
	const unsigned int ours =
		(1u << MT_LIB_CUDART) | (1u << MT_LIB_CUDA) |
		(1u << MT_LIB_C10) |
		(tr->conf->exc_types ? 1u << MT_LIB_PYTHON : 0);
	char err[512];

	for (int i = 0; i < tr->ntargets; i++) {
		struct mt_traced *t = &tr->targets[i];
		bool found;

		if (t->proc.spawned)
			continue; /* attached as its loader maps them */
		found = find_python(tr, t);
		if (mt_attach_scan(&tr->att, &t->proc, err, sizeof(err)) < 0) {
			if (gone_during_attach(t))
				continue;
			mt_err("%s", err);
			return -1;
		}
		if (found)
			say_python(tr, t);
		if (!(t->proc.libs & ours) && !tr->conf->wait_libs &&
		    !tr->att.global) {
			if (gone_during_attach(t))
				continue;
			mt_err("pid %d (%s) maps none of %s; "
			       "use --wait to wait for them",
			       t->proc.pid, t->proc.comm, wanted_libs);
			return -1;
		}
	}
	return 0;
}

/* -- mode: the loader probe goes on before the command's first exec */
int mt_tracer_spawn(struct mt_tracer *tr, int gate[2])
{
	struct mt_traced *t = &tr->targets[0];
	char ldso[4096];
	struct stat st;
	int ret;

	if (!realpath(LDSO_PATH, ldso) || stat(ldso, &st)) {
		mt_err("%s: %s (glibc x86-64 needed)", LDSO_PATH,
		       strerror(errno));
		return -1;
	}
	ret = mt_target_spawn(&t->proc, tr->conf->command, tr->conf->run_as,
			      &tr->skel->bss->hold, gate);
	tr->ntargets = 1;
	if (ret)
		return -1;
	/* held at its loads, before it runs: its children are not */
	tr->skel->bss->hold.pid = (__u32)t->proc.pid;
	/* without -f, its children are counted (count_forks), not followed */
	if (follow_forks(tr, t->proc.pid))
		return -1;
	ret = mt_attach_lib(&tr->att, &t->proc, MT_LIB_LDSO, ldso);
	if (ret < 0)
		return -1;
	if (!ret) {
		mt_err("no _dl_debug_state in the loader");
		return -1;
	}
	t->proc.files[t->proc.nfiles++] =
		(struct mt_file_id){ .dev = st.st_dev, .inode = st.st_ino };
	return 0;
}

int mt_tracer_follow_execs(struct mt_tracer *tr)
{
	tr->exec_link = bpf_program__attach(tr->skel->progs.mt_exec);
	if (!tr->exec_link) {
		mt_err("follow execs: %s", strerror(errno));
		return -1;
	}
	tr->exit_link = bpf_program__attach(tr->skel->progs.mt_proc_exit);
	if (!tr->exit_link) {
		mt_err("follow exits: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void mt_tracer_on_exit(struct mt_tracer *tr, const struct mt_event *ev)
{
	struct mt_traced *t = mt_tracer_find(tr, ev->pid);

	/* wait() told it already of the command we started */
	if (!t || t->proc.has_status)
		return;
	t->proc.status = (int)ev->args[0];
	t->proc.has_status = true;
}

/* --children: the launcher, what it started so far, and what it starts */
static int follow_children(struct mt_tracer *tr)
{
	int pids[MT_MAX_TARGETS];
	size_t n;

	if (!mt_tracer_add(tr, tr->conf->children_of, "launcher", NULL, true)) {
		mt_err("no such process: %d (check the pid "
		       "with ps)",
		       tr->conf->children_of);
		return -1;
	}
	if (follow_forks(tr, 0))
		return -1;
	n = mt_descendants(tr->conf->children_of, pids, MT_MAX_TARGETS);
	for (size_t i = 0; i < n; i++)
		mt_tracer_add(tr, pids[i], "child", NULL, true);
	return 0;
}

/* --all: every process that maps our libraries now */
void mt_tracer_scan_all(struct mt_tracer *tr)
{
	const unsigned int ours = (1u << MT_LIB_CUDART) | (1u << MT_LIB_CUDA) |
				  (1u << MT_LIB_C10);
	int pids[MT_MAX_TARGETS];
	size_t n = mt_procs_mapping(ours, getpid(), pids, MT_MAX_TARGETS);

	for (size_t i = 0; i < n; i++)
		mt_tracer_add(tr, pids[i], "maps our libraries", NULL, true);
}

int mt_tracer_open(struct mt_tracer *tr)
{
	char err[512];

	if (tr->conf->children_of)
		return follow_children(tr);
	if (tr->conf->all) {
		mt_tracer_scan_all(tr);
		return 0;
	}
	for (int i = 0; i < tr->conf->npids; i++) {
		if (mt_target_open(&tr->targets[i].proc, tr->conf->pids[i], err,
				   sizeof(err))) {
			mt_err("%s", err);
			return -1;
		}
		tr->targets[i].proc.attached = true;
		tr->ntargets++;
		watch_exec(tr, &tr->targets[i]);
	}
	return 0;
}

void mt_tracer_describe(struct mt_tracer *tr)
{
	const struct mt_header h = mt_sink_header(&tr->sink);

	mt_header_tool(&h);
	for (int i = 0; i < tr->ntargets; i++)
		mt_sink_describe(&tr->sink, &tr->targets[i], tr->conf->command);
}

/* a library attached: the record keeps it */
void mt_tracer_on_lib(void *ctx, const struct mt_target *pt,
		      const struct mt_mapping *m, int probes)
{
	struct mt_tracer *tr = ctx;
	struct mt_traced *t = mt_tracer_find(tr, (__u32)pt->pid);
	const char *path = m->path;

	mt_sink_library(mt_tracer_sink(tr, t), pt->pid, path, probes);
	if (t)
		mt_features_lib(tr, t, m, probes);
}
