/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A live trace: its state, shared by the core, run.c (the run and its
 * loop), procs.c (the processes it follows), order.c and events.c (each
 * event it reads), and read by the features (feature.h) through
 * tracer.c, which calls nothing back.
 */
#ifndef __TRACER_H
#define __TRACER_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "trace/attach.h"
#include "trace/autograd.h"
#include "trace/feature.h"
#include "memtrace.h"
#include "trace/sink.h"
#include "trace/trace.h"
#include "proc/target.h"
#include "lib/clock.h"

struct mt_devlearn;
struct mt_py;
struct mt_reorder;
struct ring_buffer;

/*
 * processes --children and --all may follow at once: the slot of one gone
 * a while is taken by the next (procs.c)
 */
#define MT_MAX_TARGETS 256

/*
 * A process the trace follows: proc/'s view of it (its pid, maps, how it
 * ended), and what the trace keeps of it above that layer
 */
struct mt_traced {
	struct mt_target proc;
	struct mt_py *py; /* its CPython, once found */
	struct mt_pyconf pyconf; /* as given to the BPF walker */
	int py_tries; /* looks for CPython so far */
	/* events BPF could not walk before py was found (events.c) */
	__u64 py_early;
	bool exec_watched; /* in the BPF map of processes whose exec is followed */
	/* execs in the ring buffer not yet handled in time order */
	unsigned int exec_pending;
	bool py_soon; /* it exec'd: its CPython is looked for at each turn */
	struct mt_sink *sink; /* its own (-o FILE{rank}), or NULL */
	/* backward's Nodes read from libtorch_cpu's TLS (autograd.c) */
	struct mt_autograd *autograd;
	/* what each feature keeps of it, by the feature's slot (feature.h) */
	void *feat[MT_MAX_FEATURES];
};

/* everything the event callback needs */
struct mt_tracer {
	const struct mt_trace_conf *conf;
	struct memtrace_bpf *skel;
	struct mt_attacher att;
	/* a slot whose pid is 0 is free: its process was let go */
	struct mt_traced targets[MT_MAX_TARGETS];
	int ntargets; /* slots used so far, free ones among them */
	__u64 targets_dropped; /* processes past MT_MAX_TARGETS, not traced */
	struct bpf_link *fork_link; /* --children */
	struct bpf_link *exec_link; /* every mode: mt_exec */
	struct bpf_link *exit_link; /* every mode: mt_proc_exit */
	struct mt_sink sink; /* every process's, or those without their own */
	bool per_proc; /* -o names {pid} or {rank}: a sink per process */
	bool ran; /* the trace ran: end holds its figures */
	int end_signal; /* the signal that ended it (SIGINT...); 0: none */
	struct mt_summary_end end;
	struct mt_strpool *names;
	struct mt_strpool *frames; /* stack lines, module and phase names */
	struct mt_pystacks *stacks;
	struct mt_nodes *nodes;
	struct mt_autograd_lib ag_lib; /* autograd.c */
	/* each feature's state, NULL for those off (feature.h) */
	void *feat[MT_MAX_FEATURES];
	/* a feature shows its own view: the shared sink prints no summary */
	bool no_summary;
	/* what a feature found, when it answers a question (a dry run's) */
	enum mt_verdict verdict;
	struct mt_unseen unseen; /* counted in events.c */
	FILE *out;
	__u64 lost_reported;
	/* order.c: the events held until they can be handled in time order */
	struct mt_reorder *order;
	struct mt_devlearn *devlearn; /* a device BPF could not tell */
	struct mt_batch_state *batch_st; /* each CPU's, as last read */
	int ncpus;
	__u64 *frontier; /* each CPU's: none of its events before it to come */
	bool *flushed; /* each CPU's, in the last flush round */
	__u64 released_ts; /* the latest time stamp handled */
	__u64 late_events; /* handled after a later one */
	__u64 unflushed; /* left in a CPU's batch at the end: lost */
};

/* tracer.c: t of pid, NULL if none is followed */
struct mt_traced *mt_tracer_find(struct mt_tracer *tr, __u32 pid);
/* where t's events go: its own sink, or the shared one */
struct mt_sink *mt_tracer_sink(struct mt_tracer *tr, const struct mt_traced *t);
/* every sink's session into v (max): the shared one first. Returns how many */
size_t mt_tracer_sessions(struct mt_tracer *tr, struct mt_session **v,
			  size_t max);
/* the events lost so far: BPF's and those left in a CPU's batch */
__u64 mt_tracer_lost(const struct mt_tracer *tr);

/* procs.c: the processes followed */
/*
 * A process --children or --all found, set up as -p does; NULL if not
 * (gone already, or MT_MAX_TARGETS alive or just gone: counted).
 * running: it ran before it was found, its earlier memory unseen.
 * comm: its name when it was found (a fork's, before any exec), or NULL
 * to read it now.
 */
struct mt_traced *mt_tracer_add(struct mt_tracer *tr, int pid, const char *how,
				const char *comm, bool running);
void mt_tracer_read_rank(struct mt_tracer *tr, struct mt_traced *t);
/* attach to the libraries t mapped since, find its CPython */
void mt_tracer_rescan(struct mt_tracer *tr, struct mt_traced *t);
void mt_tracer_on_loader(struct mt_tracer *tr, const struct mt_event *ev);
/*
 * An exec (MT_K_EXEC): seen, as it comes from the ring buffer; then, in
 * time order, after the old image's events, followed: the line that says
 * so, what the old image held freed, its CPython looked for anew
 */
void mt_tracer_exec_seen(struct mt_tracer *tr, const struct mt_event *ev);
void mt_tracer_on_exec(struct mt_tracer *tr, const struct mt_event *ev);
/* at each turn of the loop: the CPython of a process that just exec'd */
void mt_tracer_exec_tick(struct mt_tracer *tr);
/* whether every process followed is gone; those gone let go in BPF */
bool mt_tracer_all_exited(struct mt_tracer *tr);
/*
 * the BPF side tells each exec of a target, and its end: 0, or -1 after
 * mt_err()
 */
int mt_tracer_follow_execs(struct mt_tracer *tr);
/* a target ended: how, where wait() cannot tell it (-p) */
void mt_tracer_on_exit(struct mt_tracer *tr, const struct mt_event *ev);
/* the targets of -p, --children or --all: 0, or -1 after mt_err() */
int mt_tracer_open(struct mt_tracer *tr);
/* -- COMMAND: started held, the loader probed: 0, or -1 after mt_err() */
int mt_tracer_spawn(struct mt_tracer *tr, int gate[2]);
int mt_tracer_attach(struct mt_tracer *tr);
void mt_tracer_scan_all(struct mt_tracer *tr);
void mt_tracer_describe(struct mt_tracer *tr);
/* callbacks of the attacher and of the stack resolver */
void mt_tracer_on_lib(void *ctx, const struct mt_target *t,
		      const struct mt_mapping *m, int probes);
void mt_tracer_on_modcode(void *ctx, __u32 pid, __u64 code);

/* events.c: the ring buffer's callback */
int mt_tracer_on_event(void *ctx, void *data, size_t len);

/*
 * order.c: events in time order. open: 0 or -errno; the ring buffer's
 * callback takes records of events; a round, at each turn of the trace
 * loop, flushes the CPUs' batches and handles what they prove complete;
 * the drain, at the end, handles everything. Both: 0 or the ring
 * buffer's -errno.
 */
int mt_order_open(struct mt_tracer *tr);
void mt_order_close(struct mt_tracer *tr);
int mt_order_on_record(void *ctx, void *data, size_t len);
int mt_order_round(struct mt_tracer *tr, struct ring_buffer *rb);
int mt_order_drain(struct mt_tracer *tr, struct ring_buffer *rb);

/*
 * Whether the processes traced are a family (--children, or a dry run's
 * command and what it starts): the probes are on whole files, BPF keeps
 * the family's pids (its `traced` map) and adds each child as it forks.
 */
static inline bool mt_tracer_family(const struct mt_trace_conf *c)
{
	return c->children_of || c->follow_children;
}

#endif /* __TRACER_H */
