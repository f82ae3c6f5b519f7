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
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <bpf/libbpf.h>
#include "event/format.h"
#include "python/autograd.h"
#include "memtrace.h" /* the types of its globals, before the skeleton */
#include "memtrace.skel.h"
#include "export/metrics.h"
#include "trace/dryrun.h"
#include "trace/flight.h"
#include "trace/modlog.h"
#include "trace/preflight.h"
#include "python/pyproc.h"
#include "python/stack.h"
#include "analysis/sample.h"
#include "analysis/session.h"
#include "lib/strpool.h"
#include "trace/tracer.h"
#include "analysis/watch.h"
#include "trace/topscreen.h"
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
		const struct mt_target *t = &tr->targets[i];

		if (!t->spawned || t->exited)
			continue;
		if (kill(t->pid, sig))
			mt_err("pass SIG%s on to the command (pid %d): %s",
			       sigabbrev_np(sig), t->pid, strerror(errno));
		else
			mt_err("SIG%s passed on to the command (pid %d)",
			       sigabbrev_np(sig), t->pid);
	}
}

/* record --flight: SIGUSR1 asks for a dump of every window */
static void on_usr1(int sig)
{
	(void)sig;
	mt_tracer_flight_ask();
}

__u64 mt_now_ns(void)
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

static __u64 lost_now(const struct mt_tracer *tr)
{
	return tr->skel->bss->lost_events + tr->skel->bss->lost_inflight +
	       tr->unflushed;
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
	__u64 lost = lost_now(tr);

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
		fprintf(tr->out, " pid=%d(%s)", tr->targets[i].pid,
			mt_format_comm(comm, sizeof(comm),
				       tr->targets[i].comm));
	fprintf(tr->out, "\n");
}

/* the sessions of every sink: the shared one, then each process's */
static size_t sessions(struct mt_tracer *tr, struct mt_session **v, size_t max)
{
	size_t n = 0;

	v[n++] = tr->sink.ses;
	for (int i = 0; i < tr->ntargets && n < max; i++)
		if (tr->targets[i].sink)
			v[n++] = tr->targets[i].sink->ses;
	return n;
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
			return 2;
		}
		report_lost(tr);
		mt_tracer_flight_tick(tr, mt_now_ns());
		if (tr->watch)
			mt_watch_tick(tr->watch, mt_now_ns(),
				      &tr->sink.ses->sum, tr->sink.ses->sites,
				      tr->out);
		/* top's screen: its keys, and a frame when one is due */
		if (tr->top && mt_topscreen_tick(tr->top, tr, mt_now_ns()))
			break;
		if (tr->metrics) {
			struct mt_session *v[MT_MAX_TARGETS + 1];
			size_t n = sessions(tr, v, MT_MAX_TARGETS + 1);

			mt_metrics_poll(tr->metrics, mt_now_ns(), v, n,
					lost_now(tr));
		}
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
				struct mt_target *t = &tr->targets[i];

				mt_tracer_rescan(tr, t);
				if (t->py && !t->exited)
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
 * nothing has gone to the output before it. 0, or the exit status.
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
		return 2;
	}
	ret = o->command ? mt_tracer_spawn(tr, gate) : mt_tracer_open(tr);
	if (!ret && o->module_log)
		ret = mt_tracer_open_module_logs(tr);
	if (!ret && o->record)
		mt_tracer_describe(tr);
	if (!ret)
		ret = mt_tracer_attach(tr);
	if (fclose(tr->att.log) && !ret) {
		mt_err("hold the attach notes: %s", strerror(errno));
		ret = 2;
	}
	tr->att.log = log;
	if (!ret && !o->record && !o->quiet)
		print_header(tr);
	if (!ret && len && fwrite(held, 1, len, log) != len) {
		mt_err("write the attach notes: %s", strerror(errno));
		ret = 2;
	}
	free(held);
	return ret;
}

static int run(struct mt_tracer *tr)
{
	const struct mt_trace_conf *o = tr->conf;
	struct ring_buffer *rb = NULL;
	int gate[2] = { -1, -1 };
	char err[512];
	__u64 start;
	int ret;

	tr->skel = memtrace_bpf__open();
	if (!tr->skel) {
		mt_err("open BPF object: %s", strerror(errno));
		return 2;
	}
	ret = bpf_map__set_max_entries(tr->skel->maps.events,
				       o->ringbuf_mb << 20);
	tr->skel->rodata->filter_pids = mt_tracer_family(o);
	tr->skel->rodata->wake_every = wake_every(o->ringbuf_mb);
	tr->skel->rodata->python_stacks = !o->no_python;
	tr->skel->rodata->sample_bytes = o->out.ses.sample_bytes;
	if (!ret)
		ret = memtrace_bpf__load(tr->skel);
	if (!ret && o->out.ses.sample_bytes)
		ret = fill_sample_gaps(tr->skel, o->out.ses.sample_bytes);
	if (ret) {
		mt_err("load BPF programs: %s", strerror(-ret));
		return 2;
	}
	tr->att.skel = tr->skel;
	tr->att.no_cpu = o->no_cpu;
	tr->att.no_cuda = o->no_cuda;
	tr->att.no_python = o->no_python;
	tr->att.trace_exceptions = o->exc_types != NULL;
	tr->att.module_log = o->module_log != NULL;
	tr->att.dry_run = o->dryrun != NULL;
	tr->att.global = mt_tracer_family(o) || o->all;
	/* with -q the attach notes still tell a script when tracing began */
	tr->att.log = o->quiet || o->record ? stderr : tr->out;
	tr->att.on_lib = mt_tracer_on_lib;
	tr->att.ctx = tr;

	if (o->dryrun && mt_dryrun_begin(tr, &tr->dry))
		return 2;
	/* before the targets: each is followed from when it is found */
	if (mt_tracer_follow_execs(tr))
		return 2;
	ret = open_and_attach(tr, gate);
	if (ret)
		return ret;
	tr->stacks = mt_pystacks_new(bpf_map__fd(tr->skel->maps.stacks),
				     MAX_STACKS, tr->frames, &o->rules,
				     mt_tracer_on_modcode, tr);
	if (!tr->stacks) {
		mt_err("out of memory");
		return 2;
	}
	ret = mt_order_open(tr);
	if (ret) {
		mt_err("order events: %s", strerror(-ret));
		return 2;
	}
	rb = ring_buffer__new(bpf_map__fd(tr->skel->maps.events),
			      mt_order_on_record, tr, NULL);
	if (!rb) {
		mt_err("ring buffer: %s", strerror(errno));
		return 2;
	}
	/* the last moment before the command could load the stand-in */
	if (tr->dry && mt_dryrun_check(tr->dry)) {
		ring_buffer__free(rb);
		return 2;
	}
	if (o->command && mt_target_start(&tr->targets[0], gate, o->command,
					  err, sizeof(err))) {
		mt_err("%s", err);
		ring_buffer__free(rb);
		return 2;
	}
	start = mt_now_ns();
	ret = trace_loop(tr, rb);
	tr->end = (struct mt_summary_end){
		.seconds = (double)(mt_now_ns() - start) / 1e9,
		.lost = lost_now(tr),
		.unseen = tr->unseen,
		.top_live = o->top_live,
	};
	tr->ran = true;
	ring_buffer__free(rb);
	return ret;
}

static int open_metrics(struct mt_tracer *tr)
{
	const struct mt_trace_conf *o = tr->conf;
	const struct mt_metrics_conf c = { .addr = o->metrics_addr,
					   .file = o->metrics_file,
					   .file_interval = 1.0 };
	char err[512];

	if (!o->metrics_addr && !o->metrics_file)
		return 0;
	tr->metrics = mt_metrics_open(&c, err, sizeof(err));
	if (!tr->metrics) {
		mt_err("%s", err);
		return 2;
	}
	return 0;
}

static int close_metrics(struct mt_tracer *tr)
{
	char err[512];
	int ret;

	if (!tr->metrics)
		return 0;
	struct mt_session *v[MT_MAX_TARGETS + 1];
	size_t n = sessions(tr, v, MT_MAX_TARGETS + 1);

	ret = mt_metrics_close(tr->metrics, v, n, tr->skel ? lost_now(tr) : 0,
			       err, sizeof(err));
	tr->metrics = NULL;
	if (ret)
		mt_err("%s", err);
	return ret ? 2 : 0;
}

static int open_watch(struct mt_tracer *tr)
{
	const struct mt_trace_conf *o = tr->conf;
	const struct mt_watch_conf c = { .interval = o->watch,
					 .window = o->watch_window,
					 .device_mem = o->device_mem,
					 .alert_pct = o->alert_pct,
					 .ses = tr->sink.ses };

	if (!o->watch)
		return 0;
	tr->watch = mt_watch_new(&c);
	return tr->watch ? 0 : -ENOMEM;
}

/* top: its screen, before anything prints or a command starts */
static int open_top(struct mt_tracer *tr)
{
	char err[512];

	if (!tr->conf->top)
		return 0;
	tr->top = mt_topscreen_open(tr, tr->conf->top, err, sizeof(err));
	if (!tr->top) {
		mt_err("%s", err);
		return 2;
	}
	return 0;
}

/* processes --children or --all could not follow: said, not lost */
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

int mt_trace(const struct mt_trace_conf *c)
{
	struct mt_tracer tr = { .conf = c };
	char err[512];
	int ret, dry = 0;

	if (mt_preflight(err, sizeof(err))) {
		mt_err("%s", err);
		return 2;
	}
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
		ret = 2;
	} else if (!tr.names || !tr.frames || !tr.nodes || open_watch(&tr)) {
		mt_err("out of memory");
		ret = 2;
	} else if (open_metrics(&tr) || open_top(&tr) ||
		   (c->flight && mt_tracer_flight_open(&tr))) {
		ret = 2;
	} else {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		signal(SIGPIPE, on_signal);
		if (c->flight)
			signal(SIGUSR1, on_usr1);
		ret = run(&tr);
		tr.end_signal = end_signal;
		relay_end_signal(&tr);
	}
	/* the windows' last dumps, while the processes' sessions are open */
	if (mt_tracer_flight_close(&tr))
		ret = 2;
	/* the terminal back, and what top kept aside printed */
	mt_topscreen_close(tr.top, &tr);
	tr.top = NULL;
	if (close_metrics(&tr))
		ret = 2;

	bpf_link__destroy(tr.fork_link);
	bpf_link__destroy(tr.exec_link);
	bpf_link__destroy(tr.exit_link);
	mt_attach_destroy(&tr.att);
	for (int i = 0; i < tr.ntargets; i++) {
		/* never leave a held command stopped behind us */
		if (tr.targets[i].spawned && !tr.targets[i].exited)
			kill(tr.targets[i].pid, SIGCONT);
		mt_py_close(tr.targets[i].py);
		if (mt_modlog_close(tr.targets[i].modlog)) {
			mt_err("write the module log: %s", strerror(errno));
			ret = 2;
		}
		if (tr.targets[i].sink &&
		    mt_sink_close(tr.targets[i].sink, tr.ran ? &tr.end : NULL))
			ret = 2;
		free(tr.targets[i].sink);
		mt_target_close(&tr.targets[i]);
	}
	report_lost_procs(&tr);
	if (tr.ran)
		hint_quiet(&tr);
	if (tr.dry)
		dry = mt_dryrun_end(&tr, tr.dry, tr.ran);
	/*
	 * the shared summary only if it has something (-o FILE{rank}); top
	 * left its last frame instead
	 */
	if (mt_sink_close(&tr.sink,
			  tr.ran && !c->top && !c->flight && dry != 2 &&
					  (!tr.per_proc || tr.sink.ses->seq) ?
				  &tr.end :
				  NULL))
		ret = 2;
	if (!ret)
		ret = dry;
	mt_watch_free(tr.watch);
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
