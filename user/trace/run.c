// SPDX-License-Identifier: GPL-2.0
/*
 * The live trace (trace and record modes): the BPF programs loaded, the
 * targets attached, the ring buffer read until they exit or time is up.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <bpf/libbpf.h>
#include "event/format.h"
#include "python/autograd.h"
#include "memtrace.h" /* the types of its globals, before the skeleton */
#include "memtrace.skel.h"
#include "trace/preflight.h"
#include "python/pyproc.h"
#include "python/stack.h"
#include "analysis/sample.h"
#include "analysis/session.h"
#include "lib/strpool.h"
#include "trace/autograd.h"
#include "trace/tracer.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/version.h"

#define POLL_MS 10
#define RESCAN_NS (250 * 1000000ULL)
#define MAX_STACKS 65536
/* --all looks for new processes this often */
#define ALL_SCAN_NS (2000 * 1000000ULL)

static volatile sig_atomic_t exiting;
/* the first signal that ended the trace; 0: it ended by itself */
static volatile sig_atomic_t end_signal;

/*
 * SIGINT, SIGTERM, SIGHUP (the terminal or the session gone) and SIGPIPE
 * (the reader of our output gone) all end the trace in order: the flight
 * recorder's last dumps written, a dry run's folder removed, the probes
 * taken out. Killed by any of them instead, we would leave half a dump
 * and an orphaned command.
 */
static void on_signal(int sig)
{
	if (!end_signal)
		end_signal = sig;
	exiting = 1;
}

/*
 * A SIGTERM or SIGHUP sent to us alone is passed on to the command we
 * started, as a shell's job would have had it (a terminal's Ctrl-C
 * reaches the whole process group by itself); -p targets are never ours
 * to signal.
 */
static void relay_end_signal(struct mt_tracer *tr)
{
	int sig = end_signal;

	if (sig == SIGHUP)
		mt_err("SIGHUP (the terminal or session is gone): the trace "
		       "ended there");
	if (sig == SIGPIPE)
		mt_err("SIGPIPE (the output's reader is gone): the trace "
		       "ended there");
	if (sig != SIGTERM && sig != SIGHUP)
		return;
	for (int i = 0; i < tr->ntargets; i++) {
		const struct mt_traced *t = &tr->targets[i];

		if (!t->proc.spawned || t->proc.exited)
			continue;
		if (kill(t->proc.pid, sig))
			mt_err("pass SIG%s on to the command (pid %d): %s",
			       sigabbrev_np(sig), t->proc.pid, strerror(errno));
		else
			mt_err("SIG%s passed on to the command (pid %d)",
			       sigabbrev_np(sig), t->proc.pid);
	}
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

/*
 * --sample-bytes: the intervals the BPF sampler draws from (it has no
 * floating point to draw an exponential with). 0 or -errno.
 */
static int fill_sample_gaps(struct memtrace_bpf *skel, __u64 rate)
{
	__u64 gaps[MT_SAMPLE_GAPS];

	mt_sample_gaps(gaps, MT_SAMPLE_GAPS, rate);
	for (__u32 i = 0; i < MT_SAMPLE_GAPS; i++) {
		int ret = bpf_map__update_elem(skel->maps.sample_gaps, &i,
					       sizeof(i), &gaps[i],
					       sizeof(gaps[i]), BPF_ANY);

		if (ret)
			return ret;
	}
	return 0;
}

static void report_lost(struct mt_tracer *tr)
{
	__u64 lost = mt_tracer_lost(tr);

	if (lost == tr->lost_reported)
		return;
	fprintf(tr->out, "# LOST %llu events\n",
		(unsigned long long)(lost - tr->lost_reported));
	tr->lost_reported = lost;
}

/*
 * The '# LOST' lines count every event not recorded; most are the ring
 * buffer's. The other causes are rare, and each is said apart here.
 */
static void report_lost_causes(const struct mt_tracer *tr)
{
	__u64 inflight = tr->skel->bss->lost_inflight;

	if (inflight)
		mt_err("%llu of the events lost were calls whose entry could "
		       "not be kept for their return: the table of calls in "
		       "flight was full",
		       (unsigned long long)inflight);
	if (tr->unflushed)
		mt_err("%llu of the events lost were left in a CPU's batch at "
		       "the stop: a program there was amid an event through "
		       "every flush of the drain",
		       (unsigned long long)tr->unflushed);
}

static void print_header(struct mt_tracer *tr)
{
	char comm[MT_FORMAT_COMM_LEN];

	fprintf(tr->out, "# memtrace-bpf %s:", MT_VERSION);
	for (int i = 0; i < tr->ntargets; i++)
		fprintf(tr->out, " pid=%d(%s)", tr->targets[i].proc.pid,
			mt_format_comm(comm, sizeof(comm),
				       tr->targets[i].proc.comm));
	fprintf(tr->out, "\n");
}

static void flush_sinks(struct mt_tracer *tr)
{
	mt_sink_flush(&tr->sink);
	for (int i = 0; i < tr->ntargets; i++)
		if (tr->targets[i].sink)
			mt_sink_flush(tr->targets[i].sink);
}

/*
 * The reader of our output closed its end (`| head`): a write would end us
 * by SIGPIPE, as it should, but a target that makes no event makes no
 * write, and its probes stayed in it until the next one. Asked of the
 * descriptor: a pipe's writer sees POLLERR once no reader is left, a
 * socket or terminal POLLHUP; a file never does. The end of the trace
 * then writes, and meets the SIGPIPE. A record writes nothing to stdout:
 * its reader is not ours to follow.
 */
static bool reader_gone(const struct mt_tracer *tr)
{
	struct pollfd p = { .fd = fileno(tr->out) };

	if (tr->conf->record)
		return false;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

static int trace_loop(struct mt_tracer *tr, struct ring_buffer *rb)
{
	__u64 start = mt_now_ns(), last_scan = start, last_all = start;
	__u64 end = tr->conf->duration > 0 ?
			    start + (__u64)(tr->conf->duration * 1e9) :
			    0;
	int ret;

	while (!exiting) {
		ret = ring_buffer__poll(rb, POLL_MS);
		/*
		 * BPF wakes us for urgent events and every so many: the rest
		 * on this timer, when the round flushes the CPUs' batches
		 */
		if (ret >= 0 || ret == -EINTR)
			ret = mt_order_round(tr, rb);
		if (ret < 0 && ret != -EINTR) {
			mt_err("ring buffer: %s", strerror(-ret));
			return -1;
		}
		report_lost(tr);
		/* a feature may end the trace (top's q) */
		if (mt_features_tick(tr, mt_now_ns()))
			break;
		fflush(tr->out);
		flush_sinks(tr);
		/* as the SIGPIPE the next write would meet */
		if (reader_gone(tr)) {
			on_signal(SIGPIPE);
			break;
		}
		if (end && mt_now_ns() >= end)
			break;
		if (mt_tracer_all_exited(tr))
			break;
		mt_tracer_exec_tick(tr);
		if (mt_now_ns() - last_scan >= RESCAN_NS) {
			for (int i = 0; i < tr->ntargets; i++) {
				struct mt_traced *t = &tr->targets[i];

				mt_tracer_rescan(tr, t);
				if (t->py && !t->proc.exited)
					mt_py_warm(t->py);
			}
			last_scan = mt_now_ns();
		}
		if (tr->conf->all && mt_now_ns() - last_all >= ALL_SCAN_NS) {
			mt_tracer_scan_all(tr);
			last_all = mt_now_ns();
		}
	}
	/* what the targets did before they exited or we stopped */
	ret = mt_order_drain(tr, rb);
	if (ret < 0)
		mt_err("ring buffer: %s", strerror(-ret));
	if (tr->late_events)
		mt_err("%llu events came after later ones were handled (held "
		       "past a second, or sent behind a later one by a "
		       "program preempted on their CPU): a free among them "
		       "may show as unpaired",
		       (unsigned long long)tr->late_events);
	report_lost(tr);
	report_lost_causes(tr);
	return 0;
}

/*
 * Records a CPU writes before it wakes the reader: an eighth of the ring
 * buffer shared among the CPUs, so that the reader wakes while it still
 * has room to catch up even when every CPU writes at once. A record is
 * a batch of MT_BATCH events, or a smaller one.
 */
static __u32 wake_every(__u32 ringbuf_mb)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 n = ((__u64)ringbuf_mb << 20) / 8 /
		  (MT_BATCH * sizeof(struct mt_event) + BPF_RINGBUF_HDR_SZ);

	if (ncpu > 0)
		n /= (__u64)ncpu;
	return n ? (__u32)n : 1;
}

/*
 * The targets found and their libraries attached. What that prints (the
 * '# attach', '# follow' and '# python' notes) is held, and the header
 * too, until it has worked: an error here is then the only line, and
 * nothing has gone to the output before it. 0, or -1 after mt_err().
 */
static int open_and_attach(struct mt_tracer *tr, int gate[2])
{
	const struct mt_trace_conf *o = tr->conf;
	FILE *log = tr->att.log;
	size_t len = 0;
	char *held = NULL;
	int ret;

	tr->att.log = open_memstream(&held, &len);
	if (!tr->att.log) {
		mt_err("hold the attach notes: %s", strerror(errno));
		tr->att.log = log;
		return -1;
	}
	ret = o->command ? mt_tracer_spawn(tr, gate) : mt_tracer_open(tr);
	if (!ret)
		ret = mt_features_found(tr);
	if (!ret && o->record)
		mt_tracer_describe(tr);
	if (!ret)
		ret = mt_tracer_attach(tr);
	if (fclose(tr->att.log) && !ret) {
		mt_err("hold the attach notes: %s", strerror(errno));
		ret = -1;
	}
	tr->att.log = log;
	if (!ret && !o->record && !o->quiet)
		print_header(tr);
	if (!ret && len && fwrite(held, 1, len, log) != len) {
		mt_err("write the attach notes: %s", strerror(errno));
		ret = -1;
	}
	free(held);
	return ret;
}

static int run(struct mt_tracer *tr)
{
	const struct mt_trace_conf *o = tr->conf;
	struct ring_buffer *rb = NULL;
	int gate[2] = { -1, -1 };
	__u64 start;
	int ret;

	tr->skel = memtrace_bpf__open();
	if (!tr->skel) {
		mt_err("open BPF object: %s", strerror(errno));
		return -1;
	}
	ret = bpf_map__set_max_entries(tr->skel->maps.events,
				       o->ringbuf_mb << 20);
	tr->skel->rodata->filter_pids = mt_tracer_family(o);
	tr->skel->rodata->count_forks = o->command && !o->follow_children;
	tr->skel->rodata->wake_every = wake_every(o->ringbuf_mb);
	tr->skel->rodata->python_stacks = !o->no_python;
	tr->skel->rodata->sample_bytes = o->out.ses.sample_bytes;
	tr->att.skel = tr->skel;
	tr->att.no_cpu = o->no_cpu;
	tr->att.no_cuda = o->no_cuda;
	tr->att.no_python = o->no_python;
	tr->att.trace_exceptions = o->exc_types != NULL;
	tr->att.global = mt_tracer_family(o) || o->all;
	tr->att.verbose = o->verbose;
	if (!ret && mt_attach_choose_progs(&tr->att))
		return -1;
	if (!ret)
		ret = memtrace_bpf__load(tr->skel);
	if (!ret && o->out.ses.sample_bytes)
		ret = fill_sample_gaps(tr->skel, o->out.ses.sample_bytes);
	if (ret) {
		mt_err("load BPF programs: %s", strerror(-ret));
		return -1;
	}
	/* with -q the attach notes still tell a script when tracing began */
	tr->att.log = o->quiet || o->record ? stderr : tr->out;
	tr->att.on_lib = mt_tracer_on_lib;
	tr->att.node_tls = mt_autograd_choose;
	tr->att.ctx = tr;

	/* before the targets: each is followed from when it is found */
	if (mt_tracer_follow_execs(tr))
		return -1;
	ret = open_and_attach(tr, gate);
	if (ret)
		return ret;
	tr->stacks = mt_pystacks_new(bpf_map__fd(tr->skel->maps.stacks),
				     MAX_STACKS, tr->frames, &o->rules,
				     mt_tracer_on_modcode, tr);
	if (!tr->stacks) {
		mt_err("out of memory");
		return -1;
	}
	ret = mt_order_open(tr);
	if (ret) {
		mt_err("order events: %s", strerror(-ret));
		return -1;
	}
	rb = ring_buffer__new(bpf_map__fd(tr->skel->maps.events),
			      mt_order_on_record, tr, NULL);
	if (!rb) {
		mt_err("ring buffer: %s", strerror(errno));
		return -1;
	}
	/* the last moment before the command could load the stand-in */
	if (mt_features_start(tr)) {
		ring_buffer__free(rb);
		return -1;
	}
	if (o->command &&
	    mt_target_start(&tr->targets[0].proc, gate, o->command)) {
		ring_buffer__free(rb);
		return -1;
	}
	start = mt_now_ns();
	ret = trace_loop(tr, rb);
	tr->unseen.children = tr->skel->bss->unfollowed_forks;
	tr->unseen.first_child = (__u32)tr->skel->bss->first_unfollowed;
	tr->end = (struct mt_summary_end){
		.seconds = (double)(mt_now_ns() - start) / 1e9,
		.lost = mt_tracer_lost(tr),
		.unseen = tr->unseen,
		.top_live = o->top_live,
	};
	tr->ran = true;
	ring_buffer__free(rb);
	return ret;
}

/*
 * Event lines that ran past a screen: the report after them is what
 * most people want, and -q prints it alone
 */
static void hint_quiet(const struct mt_tracer *tr)
{
	struct winsize ws;
	__u64 rows = 50;

	if (tr->conf->quiet || tr->conf->record || !tr->sink.ses)
		return;
	if (isatty(fileno(tr->out)) &&
	    !ioctl(fileno(tr->out), TIOCGWINSZ, &ws) && ws.ws_row)
		rows = ws.ws_row;
	if (tr->sink.ses->seq > rows)
		fprintf(tr->out,
			"# memtrace-bpf printed %llu events above; -q prints "
			"the report below alone\n",
			(unsigned long long)tr->sink.ses->seq);
}

/* processes --children or --all could not follow: said, not lost */
static void report_lost_procs(const struct mt_tracer *tr)
{
	__u64 forks = tr->skel ? tr->skel->bss->lost_forks : 0;

	if (tr->targets_dropped || forks)
		fprintf(tr->out,
			"# lost processes=%llu (past %d followed) forks=%llu "
			"(children not followed: the traced map was full)\n",
			(unsigned long long)tr->targets_dropped, MT_MAX_TARGETS,
			(unsigned long long)forks);
}

int mt_trace(const struct mt_trace_conf *c, enum mt_verdict *v)
{
	struct mt_tracer tr = { .conf = c };
	int ret;

	if (mt_preflight())
		return -1;
	libbpf_set_print(c->verbose ? libbpf_print_verbose : libbpf_print);
	/* with --export, -o is the export's file */
	tr.per_proc =
		c->output && !c->export_kind && mt_path_per_process(c->output);
	ret = mt_sink_open(&tr.sink, &c->out, c->record,
			   tr.per_proc || c->export_kind ? NULL : c->output);
	tr.out = tr.sink.out;
	tr.names = mt_strpool_new(4096);
	tr.frames = mt_strpool_new(1 << 18);
	tr.nodes = mt_nodes_new();
	if (ret) {
		ret = -1;
	} else if (!tr.names || !tr.frames || !tr.nodes) {
		mt_err("out of memory");
		ret = -1;
	} else if (mt_features_open(&tr)) {
		ret = -1;
	} else {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		signal(SIGPIPE, on_signal);
		ret = run(&tr);
		tr.end_signal = end_signal;
		relay_end_signal(&tr);
	}
	/*
	 * The features done with each process (the flight recorder's last
	 * dumps, the module logs' last records), then with the trace, while
	 * the processes' sessions are open
	 */
	for (int i = 0; i < tr.ntargets; i++)
		mt_features_exit(&tr, &tr.targets[i]);
	if (mt_features_close(&tr))
		ret = -1;

	bpf_link__destroy(tr.fork_link);
	bpf_link__destroy(tr.exec_link);
	bpf_link__destroy(tr.exit_link);
	mt_attach_destroy(&tr.att);
	for (int i = 0; i < tr.ntargets; i++) {
		/* never leave a held command stopped behind us */
		if (tr.targets[i].proc.spawned && !tr.targets[i].proc.exited)
			kill(tr.targets[i].proc.pid, SIGCONT);
		mt_py_close(tr.targets[i].py);
		if (tr.targets[i].sink &&
		    mt_sink_close(tr.targets[i].sink, tr.ran ? &tr.end : NULL))
			ret = -1;
		free(tr.targets[i].sink);
		mt_target_close(&tr.targets[i].proc);
	}
	report_lost_procs(&tr);
	if (tr.ran)
		hint_quiet(&tr);
	/* the shared summary only if it has something (-o FILE{rank}) */
	if (mt_sink_close(&tr.sink,
			  tr.ran && !tr.no_summary &&
					  (!tr.per_proc || tr.sink.ses->seq) ?
				  &tr.end :
				  NULL))
		ret = -1;
	/* a dry run's verdict, when nothing failed */
	*v = ret ? MT_VERDICT_OK : tr.verdict;
	mt_pystacks_free(tr.stacks);
	mt_nodes_free(tr.nodes);
	mt_order_close(&tr);
	memtrace_bpf__destroy(tr.skel);
	mt_strpool_free(tr.names);
	mt_strpool_free(tr.frames);
	/*
	 * a pipeline's writer whose reader left ends as SIGPIPE says; the
	 * flush first, since it may be what meets the closed pipe
	 */
	fflush(NULL);
	if (end_signal == SIGPIPE) {
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
	return ret;
}
