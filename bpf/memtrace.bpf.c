// SPDX-License-Identifier: GPL-2.0
/*
 * One entry and one return program serve every probe that makes an event:
 * the BPF cookie says which call it is and what to record, so that the
 * kernel side stays small and the meaning of each argument lives in user
 * space (user/event/kinds.c). The probes that only keep per-thread state
 * (device, autograd Node) and the exception filter have programs of their
 * own, named for what they do, chosen by the same flags.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memtrace.h"

/*
 * vmlinux.h holds the kernel's types, not its uapi macros: the errno and
 * signal numbers used here, as include/uapi/asm-generic/errno-base.h and
 * arch/x86/include/uapi/asm/signal.h define them.
 */
#define EEXIST 17
#define SIGSTOP 19

#define MAX_INFLIGHT 16384

struct inflight_key {
	__u32 tid;
	__u32 kind;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space */
} events SEC(".maps");

/* entry state of calls whose result is known only on return */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_INFLIGHT);
	__type(key, struct inflight_key);
	__type(value, struct mt_event);
} inflight SEC(".maps");

struct node_ref {
	__u64 node, vt, stack;
};

/*
 * The Python stack each autograd Node was made in (forward), by the Node's
 * address and process: a 4-way set-associative table in an array. An LRU
 * hash cost ~1.4 us an update, more than the stack walk; here a Node takes
 * a free way of its set, or replaces the one its address picks, with no
 * lock. A slot is valid while its check matches its other fields, so a
 * slot two CPUs write at once is found empty, never mixed.
 */
#define NODE_WAYS 4
#define NODE_SET_BITS 17

struct node_slot {
	__u64 node;
	__u64 stack;
	__u32 pid;
	__u32 pad;
	__u64 check; /* node_check() of the fields above; 0: empty */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NODE_WAYS << NODE_SET_BITS);
	__type(key, __u32);
	__type(value, struct node_slot);
} node_stack SEC(".maps");

/*
 * What a thread's events carry from its earlier calls: the CUDA device it
 * last set with cudaSetDevice, and the autograd Node it evaluates now
 * (backward). Kept in the thread's own task storage: an event finds it
 * from its task_struct without hashing (a hash map lookup cost ~90 ns an
 * event), the thread writes it in place, and it goes when the thread
 * exits.
 */
struct thread_vars {
	__s32 dev; /* MT_DEV_UNKNOWN until cudaSetDevice */
	/* --module-log: the Node evaluated now returned, its outputs go on */
	__u32 node_done;
	struct node_ref node;
	/* --sample-bytes: bytes to the next sampled one; 0: none drawn yet */
	__u64 sample_left;
	/*
	 * The thread's libtorch_cpu TLS block, dtv[tls_modid] of its DTV
	 * (node_tls()); 0: not found yet. A block never moves while its
	 * thread lives: three reads spared at each event.
	 */
	__u64 tls_blk, tls_modid;
	/*
	 * The thread's id in that block (at::RecordFunction's): 0 until
	 * PyTorch first asks for it on the thread (at its first Node at the
	 * latest), then fixed for its life
	 */
	__u64 rf_tid;
	/* the sequence counter at the thread's last walked allocation */
	__u64 walked_ctr;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_vars);
} thread_vars SEC(".maps");

/* per traced process: how to walk its Python frames */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct mt_pyconf);
} pyconf SEC(".maps");

/*
 * per traced process: where its libtorch_cpu keeps backward's Node and the
 * sequence counter (memtrace.h); a process without one keeps the probes
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct mt_node_tlsconf);
} nodetls SEC(".maps");

/* exception types --trace-exceptions does not want: no event for them */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u8);
} exc_skip SEC(".maps");

/* Python stacks by id; the least used go when it is full */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct mt_pystack);
} stacks SEC(".maps");

/* the calling thread's thread_vars, made on first use; NULL: no memory */
static __always_inline struct thread_vars *thread_vars_get(void)
{
	struct thread_vars fresh = { .dev = MT_DEV_UNKNOWN };

	return bpf_task_storage_get(&thread_vars, bpf_get_current_task_btf(),
				    &fresh, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/*
 * Walks begun on this CPU. The scratch and bulk buffers below are the
 * CPU's, and a uprobe's program can be preempted (a kernel with full
 * preemption): a walk that finds the count moved on shared its buffers
 * with another and is dropped, counted as a lost stack, never stored.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} walk_gen SEC(".maps");

/* a stack is built here: too big for the BPF stack */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_pystack);
} scratch SEC(".maps");

/*
 * Bytes of the thread's data stack copied at once (3.11+): the top of its
 * current chunk, where the innermost frames lie one above the other, so
 * that one read usually holds the whole stack. A read costs far more than
 * the bytes it copies, and a copy takes no more than the stack uses.
 */
#define MT_BULK 4096

/*
 * Where the walk's copies lie. Kept in the map value, not in the walk's
 * context on the BPF stack: the verifier then takes each load of them for
 * any value, and a walk's step is verified a few times, not once per
 * combination of the copies' bounds.
 */
struct walk_mem {
	__u64 chunk, top, limit; /* the data stack's chunk (3.11+), or 0 */
	__u64 copy_lo, copy_len; /* user address and length b holds */
	__u64 sp, cs_end; /* the C stack: its pointer at the probe, its end */
	__u64 cs_lo, cs_len; /* user address and length c holds */
};

struct bulk {
	struct walk_mem m;
	__u8 b[MT_BULK];
	__u8 slack[8]; /* the verifier bounds a field's offset to 87, not 80 */
	/*
	 * the thread state's fields the walk reads (mt_pyconf.ts_win_*);
	 * the verifier bounds an offset in it to MT_TS_WIN - 1, and the
	 * field after it takes the 8 bytes read there
	 */
	__u64 ts[MT_TS_WIN / 8];
	/* a frame outside the copies (a generator's), alone */
	__u64 one[MT_FRAME_WIN / 8];
	__u8 one_slack[8]; /* as slack, for one */
	/* the C stack from an entry frame up (3.12+), MT_BULK bytes at most */
	__u8 c[MT_BULK];
	__u8 c_slack[8]; /* as slack, for c */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bulk);
} bulkbuf SEC(".maps");

/* --no-python: no stacks, so no event looks for its process's pyconf */
const volatile bool python_stacks = true;

/*
 * --children: the probes are on whole library files, for every process
 * that maps them; only the processes in `traced` report, and a traced
 * process's children join it as they are forked.
 */
const volatile bool filter_pids = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

/*
 * Every process traced, in every mode (user space adds each, and
 * mt_fork the children of --children): an execve of one is followed
 * (mt_exec). Unlike `traced`, it says nothing of forks.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} exec_watch SEC(".maps");

/*
 * --sample-bytes: the mean number of bytes between allocations whose stack
 * is walked; 0: every event's is. The intervals are drawn from sample_gaps.
 */
const volatile __u64 sample_bytes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_SAMPLE_GAPS);
	__type(key, __u32);
	__type(value, __u64);
} sample_gaps SEC(".maps");

/* events that could not be recorded: user space reports them */
__u64 lost_events = 0;
__u64 lost_inflight = 0;
__u64 lost_forks = 0; /* children not followed: the traced map was full */
/*
 * -- COMMAND without -f: the command's own children are counted, not
 * followed, so that the report says what it did not see (the first one's
 * pid kept to name it)
 */
const volatile bool count_forks = false;
__u64 unfollowed_forks = 0;
__u64 first_unfollowed = 0;
/* -- mode: the command's stops at library loads (memtrace.h) */
struct mt_hold hold = {};
/*
 * Set by user space when the trace stops (-d, Ctrl-C, the targets gone):
 * from then on no program writes an event, so that the drain that follows
 * finds every event of the trace and none made after it.
 */
__u32 stopped = 0;

static __always_inline bool is_stopped(void)
{
	return *(volatile __u32 *)&stopped;
}

static __always_inline bool wanted(void)
{
	__u32 tgid;

	if (is_stopped())
		return false;
	if (!filter_pids)
		return true;
	tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&traced, &tgid);
}

/*
 * A helper call costs tens of nanoseconds (a third of a user read) on a
 * kernel with return-thunk mitigations: what the task itself holds (its
 * ids, name and fs_base) is loaded straight from its task_struct, one call
 * for all of it.
 */
/* returns the thread's vars where MT_F_TVARS looked them up, else NULL */
static __always_inline struct thread_vars *
fill(struct mt_event *e, struct pt_regs *ctx, __u64 cookie)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct thread_vars *tv;

	e->ts = bpf_ktime_get_ns();
	e->pid = task->tgid;
	e->tid = task->pid;
	e->cpu = bpf_get_smp_processor_id();
	e->kind = MT_COOKIE_KIND(cookie);
	e->flags = 0;
	e->args[0] = PT_REGS_PARM1(ctx);
	e->args[1] = PT_REGS_PARM2(ctx);
	e->args[2] = PT_REGS_PARM3(ctx);
	e->args[3] = PT_REGS_PARM4(ctx);
	e->args[4] = PT_REGS_PARM5(ctx);
	e->out = 0;
	e->ret = 0;
	e->caller = 0;
	e->stack_id = 0;
	/*
	 * A user read costs ~170 ns, as much as the rest of this function:
	 * skipped where the probe's own address names the caller's library.
	 * (In a uprobe's handler the ip is the probed address.)
	 */
	if (cookie & MT_F_SELFCALL)
		e->caller = PT_REGS_IP(ctx);
	else
		bpf_probe_read_user(
			&e->caller, sizeof(e->caller),
			(void *)(PT_REGS_SP(ctx) + MT_COOKIE_SP(cookie)));
	tv = cookie & MT_F_TVARS ?
		     bpf_task_storage_get(&thread_vars, task, 0, 0) :
		     NULL;
	e->dev = tv ? tv->dev : MT_DEV_UNKNOWN;
	e->node = tv ? tv->node.node : 0;
	e->node_vt = tv ? tv->node.vt : 0;
	e->node_stack = tv ? tv->node.stack : 0;
	e->seq = 0;
	e->seq_thread = 0;
	__builtin_memcpy(e->comm, task->comm, sizeof(e->comm));
	return tv;
}

/* 64-bit FNV-1a: a stack's id is the hash of its frames */
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static __always_inline __u64 node_check(__u64 node, __u64 stack, __u32 pid)
{
	return ((node ^ stack ^ ((__u64)pid << 32)) * FNV_PRIME) | 1;
}

/* the first slot of the set a Node's address and process pick */
static __always_inline __u32 node_set(__u64 node, __u32 pid)
{
	return (__u32)((((node >> 4) ^ pid) * 0x9e3779b97f4a7c15ULL) >>
		       (64 - NODE_SET_BITS)) *
	       NODE_WAYS;
}

/* the stack Node node of process pid was made in; 0: not known */
static __always_inline __u64 node_origin(__u64 node, __u32 pid)
{
	__u32 first = node_set(node, pid);

	for (__u32 w = 0; w < NODE_WAYS; w++) {
		__u32 k = first + w;
		struct node_slot *s = bpf_map_lookup_elem(&node_stack, &k);
		__u64 stack;

		if (!s)
			return 0;
		if (s->node != node || s->pid != pid)
			continue;
		stack = s->stack;
		return s->check == node_check(node, stack, pid) ? stack : 0;
	}
	return 0;
}

/* remember that Node node of process pid was made in stack */
static __always_inline void node_origin_put(__u64 node, __u32 pid, __u64 stack)
{
	__u32 first = node_set(node, pid), k;
	struct node_slot *s, *victim = NULL;

	for (__u32 w = 0; w < NODE_WAYS; w++) {
		k = first + w;
		s = bpf_map_lookup_elem(&node_stack, &k);
		if (!s)
			return;
		if (s->node == node && s->pid == pid) {
			victim = s;
			break;
		}
		if (!victim && !s->check)
			victim = s;
	}
	if (!victim) {
		/* a full set: the way the address picks gives way */
		k = first + ((node >> 4) & (NODE_WAYS - 1));
		victim = bpf_map_lookup_elem(&node_stack, &k);
		if (!victim)
			return;
	}
	victim->check = 0;
	asm volatile("" ::: "memory");
	victim->node = node;
	victim->stack = stack;
	victim->pid = pid;
	asm volatile("" ::: "memory");
	victim->check = node_check(node, stack, pid);
}

static __always_inline int read_u64(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (void *)addr);
}

static __always_inline bool is_modcode(const struct mt_pyconf *c, __u64 code)
{
	for (int i = 0; i < MT_MAX_MODCODE; i++)
		if (i < c->nmodcode && c->modcode[i] == code)
			return true;
	return false;
}

/* the search of the thread list for the calling thread's state */
struct ts_search {
	const struct mt_pyconf *c;
	__u64 fs, ts;
	bool found;
};

static long ts_step(__u64 i, void *data)
{
	struct ts_search *s = data;
	__u64 id;

	if (!s->ts || read_u64(&id, s->ts + s->c->ts_id_off))
		return 1;
	/* tstate->thread_id is pthread_self(): the thread pointer, fs_base */
	if (id == s->fs) {
		s->found = true;
		return 1;
	}
	if (read_u64(&s->ts, s->ts + s->c->ts_next_off))
		s->ts = 0;
	return 0;
}

/*
 * The calling thread's PyThreadState, 0 if it has none. A TLS slot costs
 * one read; the list, two a thread, is for targets whose slot user space
 * could not find.
 */
static __always_inline __u64 thread_state(const struct mt_pyconf *c)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ts_search s = { .c = c };
	__u64 ts;

	s.fs = task->thread.fsbase;
	if (c->ts_how == MT_TS_FS)
		return read_u64(&ts, s.fs + c->ts_fs_off) ? 0 : ts;
	if (c->ts_how != MT_TS_LIST || read_u64(&s.ts, c->ts_list))
		return 0;
	bpf_loop(MT_MAX_THREADS, ts_step, &s, 0);
	return s.found ? s.ts : 0;
}

/* a u64 field of a frame head read whole; the bound is for the verifier */
static __always_inline __u64 win_at(const __u64 *win, __u64 off)
{
	__u64 i = off / 8;

	if (i >= MT_FRAME_WIN / 8)
		return 0;
	return win[i];
}

struct walk_ctx {
	const struct mt_pyconf *c;
	struct mt_pystack *st;
	struct bulk *bulk;
	__u64 frame;
	__u64 hash;
	__u32 n, max;
};

/* the thread state's u64 field at off, from its window in bulk->ts */
static __always_inline __u64 ts_at(const struct walk_ctx *w, __s64 off)
{
	__u64 i = (__u64)(off - w->c->ts_win_off) / 8;

	if (off < 0 || i >= MT_TS_WIN / 8)
		return 0;
	return w->bulk->ts[i];
}

/*
 * The calling thread's top Python frame and its data stack, from the
 * thread state's window (one read) and, on 3.11 and 3.12, the
 * interpreter's _PyCFrame. False if it runs no Python.
 */
static __always_inline bool read_tstate(struct walk_ctx *w, __u64 tstate)
{
	const struct mt_pyconf *c = w->c;
	struct walk_mem *m = &w->bulk->m;
	__u32 len = c->ts_win_len;
	__u64 p;

	if (!len || len > MT_TS_WIN ||
	    bpf_probe_read_user(w->bulk->ts, len,
				(void *)(tstate + c->ts_win_off)))
		return false;
	p = ts_at(w, c->ts_frame_off);
	if (c->ts_chunk_off >= 0) {
		m->chunk = ts_at(w, c->ts_chunk_off);
		m->top = ts_at(w, c->ts_chunk_off + 8);
		m->limit = ts_at(w, c->ts_chunk_off + 16);
	}
	if (!p)
		return false;
	if (c->cframe_cur_off >= 0 &&
	    read_u64(&p, p + (__u64)c->cframe_cur_off))
		return false;
	w->frame = p;
	return p != 0;
}

/*
 * Copy the bytes of the data stack's current chunk that end at end
 * (datastack_top at first): MT_BULK at most, never below the chunk's
 * start. The chunk is mapped whole; what lies below it need not be.
 */
static __always_inline bool copy_chunk(struct bulk *bk, __u64 end)
{
	struct walk_mem *m = &bk->m;
	__u64 lo = end - m->chunk > MT_BULK ? end - MT_BULK : m->chunk;
	__u64 len = end - lo;

	m->copy_len = 0;
	if (len > MT_BULK || bpf_probe_read_user(bk->b, len, (void *)lo))
		return false;
	m->copy_lo = lo;
	m->copy_len = len;
	return true;
}

/*
 * Copy the top of the data stack, if the thread state shows a sound one
 * (user space gives none where the walk does not read frame heads)
 */
static __always_inline void copy_stack(struct bulk *bk)
{
	struct walk_mem *m = &bk->m;

	if (m->chunk && m->chunk < m->top && m->top <= m->limit)
		copy_chunk(bk, m->top);
	else
		m->chunk = 0;
}

/*
 * Where the calling thread's C stack ends, above its stack pointer: the
 * main thread's at the arguments and environment the kernel put on it;
 * another thread's at its control block, which glibc and musl put at the
 * top of the thread's stack, at the thread pointer. The bytes between the
 * stack pointer and it are mapped.
 */
static __always_inline __u64 cstack_end(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (task->pid != task->tgid)
		return task->thread.fsbase;
	/*
	 * Read, not dereferenced: the verifier looks a trusted pointer's
	 * field up in vmlinux's BTF by name at each path it checks through
	 * it, and this one is on many; that lookup was a quarter of the
	 * tracer's start.
	 */
	return BPF_CORE_READ(task, mm, start_stack);
}

/*
 * Copy the C stack from frame up, MT_BULK bytes at most, if frame lies on
 * it. On 3.12+ each call from C into Python leaves an entry frame on the
 * C stack, in _PyEval_EvalFrameDefault's own frame; nested module calls
 * put them 0.5 to 1 KiB apart (a CUDA training step on 3.13: 6.3 of them
 * a walk, 3.4 KiB from the first to the last), so one copy holds those
 * that follow. A frame elsewhere (a generator's) is read alone.
 */
static __always_inline bool copy_cstack(struct bulk *bk, __u64 frame)
{
	struct walk_mem *m = &bk->m;
	__u64 len;

	if (!m->cs_end)
		m->cs_end = cstack_end();
	if (frame < m->sp || frame >= m->cs_end)
		return false;
	len = m->cs_end - frame;
	if (len > MT_BULK)
		len = MT_BULK;
	m->cs_len = 0;
	if (len < MT_FRAME_WIN ||
	    bpf_probe_read_user(bk->c, len, (void *)frame))
		return false;
	m->cs_lo = frame;
	m->cs_len = len;
	return true;
}

/* the head at off in a copy of MT_BULK bytes; the bound is the verifier's */
static __always_inline const __u64 *head_at(const __u8 *copy, __u64 off)
{
	/* the bound is checked on off itself, as the verifier sees it */
	asm volatile("" : "+r"(off));
	if (off > MT_BULK - MT_FRAME_WIN)
		return NULL;
	return (const __u64 *)&copy[off];
}

/*
 * The head of frame (MT_FRAME_WIN bytes): from the copy of the data stack
 * where it lies there; a frame lower in the same chunk (a stack deeper
 * than the copy) brings the copy of the MT_BULK bytes below; an entry
 * frame (3.12+) comes from the copy of the C stack, or brings it; any
 * other (a generator's in its object, one in an older chunk) is read
 * alone. NULL if it cannot be read.
 */
static __always_inline const __u64 *frame_head(struct walk_ctx *w, __u64 frame)
{
	struct bulk *bk = w->bulk;
	struct walk_mem *m = &bk->m;

	if (frame >= m->copy_lo &&
	    frame + MT_FRAME_WIN <= m->copy_lo + m->copy_len)
		return head_at(bk->b, frame - m->copy_lo);
	if (frame >= m->chunk && frame < m->copy_lo &&
	    frame + MT_FRAME_WIN <= m->limit &&
	    copy_chunk(bk, frame + MT_FRAME_WIN))
		return head_at(bk->b, frame - m->copy_lo);
	if (w->c->owner_cstack_min &&
	    ((frame >= m->cs_lo &&
	      frame + MT_FRAME_WIN <= m->cs_lo + m->cs_len) ||
	     copy_cstack(bk, frame)))
		return head_at(bk->c, frame - m->cs_lo);
	if (bpf_probe_read_user(bk->one, sizeof(bk->one), (void *)frame))
		return NULL;
	return bk->one;
}

/* a frame kept: its fields join the stack's hash */
static __always_inline void keep_frame(struct walk_ctx *w,
				       const struct mt_pyframe *f)
{
	const struct mt_pyconf *c = w->c;

	w->hash = (w->hash ^ f->code) * FNV_PRIME;
	w->hash = (w->hash ^ f->instr) * FNV_PRIME;
	if (!c->nmodcode || is_modcode(c, f->code))
		w->hash = (w->hash ^ f->local0) * FNV_PRIME;
	w->n++;
}

/* one frame of the walk from frame heads (3.11+); 1: the walk is over */
static __always_inline long walk_head(struct walk_ctx *w)
{
	const struct mt_pyconf *c = w->c;
	__u64 frame = w->frame, o = c->f_owner;
	struct mt_pyframe *f;
	const __u64 *win;

	if (!frame || w->n >= w->max || (frame & 7))
		return 1;
	win = frame_head(w, frame);
	if (!win)
		return 1;
	w->frame = win_at(win, c->f_back);
	/* a C shim frame is walked through, not kept */
	if (c->owner_cstack_min && o < MT_FRAME_WIN &&
	    ((__u8 *)win)[o] >= c->owner_cstack_min)
		return 0;
	f = &w->st->frames[w->n & (MT_MAX_FRAMES - 1)];
	f->code = win_at(win, c->f_code) & c->ref_mask;
	f->instr = win_at(win, c->f_instr);
	f->local0 = win_at(win, c->f_localsplus) & c->ref_mask;
	keep_frame(w, f);
	return 0;
}

/*
 * Frames a step of bpf_loop walks from frame heads. Eight a step saved the
 * call and return of seven steps (W2, bench/bpfcost.py: mt_enter 1,072 ns
 * a run with one, 984 with eight, 1,078 with two), but the verifier then
 * checks eight frames' paths: the tracer took 2.2 s to start instead of
 * 0.96 (a -p run of 10 ms), which every attach pays and make test pays at
 * each of its few hundred starts (its wall time went from 20.7 to 26 min
 * under load). One a step.
 */
#define MT_WALK_STEP 1

static long walk_head_step(__u64 i, void *data)
{
	for (int k = 0; k < MT_WALK_STEP; k++) {
		if (walk_head(data))
			return 1;
	}
	return 0;
}

/*
 * One frame of the walk field by field (3.10's frame objects, whose
 * fields lie far apart); 1: the walk is over.
 */
static long walk_fields_step(__u64 i, void *data)
{
	struct walk_ctx *w = data;
	const struct mt_pyconf *c = w->c;
	__u64 frame = w->frame;
	struct mt_pyframe *f;
	__u32 lasti = 0;
	__u8 owner = 0;

	if (!frame || w->n >= w->max)
		return 1;
	if (c->owner_cstack_min &&
	    !bpf_probe_read_user(&owner, 1, (void *)(frame + c->f_owner)) &&
	    owner >= c->owner_cstack_min) {
		if (read_u64(&w->frame, frame + c->f_back))
			w->frame = 0;
		return 0;
	}
	f = &w->st->frames[w->n & (MT_MAX_FRAMES - 1)];
	f->code = 0;
	f->instr = 0;
	f->local0 = 0;
	read_u64(&f->code, frame + c->f_code);
	if (c->instr_is_index) {
		bpf_probe_read_user(&lasti, sizeof(lasti),
				    (void *)(frame + c->f_instr));
		f->instr = lasti;
	} else {
		read_u64(&f->instr, frame + c->f_instr);
	}
	read_u64(&f->local0, frame + c->f_localsplus);
	f->code &= c->ref_mask;
	f->local0 &= c->ref_mask;
	if (read_u64(&w->frame, frame + c->f_back))
		w->frame = 0;
	keep_frame(w, f);
	return 0;
}

/*
 * Walk the thread's Python frames, store the stack under its hash and put
 * that id in the event. The GIL is usually released here (PyTorch drops it
 * around ops): the thread state comes from the thread's own TLS (or the
 * thread list), which is valid while the thread is stopped at our probe.
 * Reads cost far more than the bytes they copy, so they are few: the
 * thread state's fields in one, and on 3.11+ the frames from one copy of
 * the top of the thread's data stack, walked here; only a frame outside
 * it (a generator's, a C entry shim) takes a read of its own. Nothing is
 * kept from one event to the next: each walk reads what is current.
 * From 3.14 on, frames hold tagged references: the low bits are cleared.
 */
static __always_inline void walk_python(struct mt_event *ev, __u64 sp)
{
	struct walk_ctx w = { .hash = FNV_OFFSET };
	__u32 zero = 0;
	__u64 *gen, mine, tstate;
	long err;

	if (!python_stacks)
		return;
	w.c = bpf_map_lookup_elem(&pyconf, &ev->pid);
	if (!w.c) {
		ev->flags |= MT_EV_PY_NOCONF;
		return;
	}
	tstate = thread_state(w.c);
	if (!tstate)
		return;
	w.st = bpf_map_lookup_elem(&scratch, &zero);
	w.bulk = bpf_map_lookup_elem(&bulkbuf, &zero);
	gen = bpf_map_lookup_elem(&walk_gen, &zero);
	if (!w.st || !w.bulk || !gen)
		return;
	mine = ++*gen;
	w.bulk->m = (struct walk_mem){ .sp = sp };
	if (!read_tstate(&w, tstate))
		return;
	copy_stack(w.bulk);
	w.max = w.c->max_depth < MT_MAX_FRAMES ? w.c->max_depth : MT_MAX_FRAMES;
	/* twice the cap: C shim frames are walked but not kept */
	if (w.c->frame_win)
		bpf_loop(2 * MT_MAX_FRAMES / MT_WALK_STEP, walk_head_step, &w,
			 0);
	else
		bpf_loop(2 * MT_MAX_FRAMES, walk_fields_step, &w, 0);
	if (!w.n)
		return;
	if (*gen != mine) {
		ev->flags |= MT_EV_PY_LOST;
		return;
	}
	w.st->depth = w.n;
	w.hash = (w.hash ^ w.n) * FNV_PRIME;
	ev->stack_id = w.hash;
	ev->flags |= MT_EV_PY;
	if (w.frame)
		ev->flags |= MT_EV_PY_TRUNC;
	/* most stacks were seen before: a lookup is cheaper than a copy */
	if (bpf_map_lookup_elem(&stacks, &w.hash))
		return;
	err = bpf_map_update_elem(&stacks, &w.hash, w.st, BPF_NOEXIST);
	/* EEXIST: another CPU stored the same stack meanwhile */
	if (err && err != -EEXIST) {
		ev->flags |= MT_EV_PY_LOST;
	} else if (!err && *gen != mine) {
		/* preempted before the copy: what was stored may be another's */
		bpf_map_delete_elem(&stacks, &w.hash);
		ev->flags = (ev->flags & ~MT_EV_PY) | MT_EV_PY_LOST;
	}
}

/*
 * Records this CPU wrote since it last woke the reader. The reader drains
 * the ring buffer on a 10 ms timer; a burst wakes it sooner, when each
 * CPU's count reaches wake_every (an eighth of the ring shared among the
 * CPUs, set by user space). Counting here costs the traced thread
 * nothing like a wakeup per event, or asking the ring how full it is.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} since_wakeup SEC(".maps");

const volatile __u32 wake_every = 1024;

/* urgent: the reader must act on this event at once (a held command, a fork) */
static __always_inline __u64 wakeup(bool urgent)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&since_wakeup, &zero);

	if (!urgent && n && ++*n < wake_every)
		return BPF_RB_NO_WAKEUP;
	if (n)
		*n = 0;
	return BPF_RB_FORCE_WAKEUP;
}

/* this CPU's events not yet in the ring buffer (mt_batch_state) */
struct batch {
	struct mt_event ev[MT_BATCH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} batch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_batch_state);
} batch_state SEC(".maps");

/* send the batch's events, one ring buffer record for all */
static __always_inline void batch_out(struct mt_batch_state *st,
				      struct batch *b, bool urgent)
{
	__u32 n = st->n;
	__u64 len = (__u64)n * sizeof(b->ev[0]);

	/* the bound is checked on len itself, as the verifier sees it */
	asm volatile("" : "+r"(len));
	if (!len || len > sizeof(b->ev))
		return;
	if (bpf_ringbuf_output(&events, b->ev, len, wakeup(urgent)))
		__sync_fetch_and_add(&lost_events, n);
	st->n = 0;
}

/*
 * Where a program writes its event: the next slot of this CPU's batch, or
 * a record of its own in the ring buffer when the batch is in use (by a
 * program this one preempted, on a kernel with full preemption) or full.
 * e is NULL when there is no room: the event is lost, and counted.
 */
struct slot {
	struct mt_event *e;
	struct mt_batch_state *st;
	struct batch *b;
	bool ring;
};

/*
 * Take a slot before the event's time stamp is taken: from here to
 * slot_end() the CPU counts as busy, so that user space never takes it
 * for holding no event stamped earlier (user/trace/order.c).
 */
static __always_inline struct mt_event *slot_begin(struct slot *s)
{
	__u32 zero = 0;

	s->e = NULL;
	s->ring = false;
	s->b = bpf_map_lookup_elem(&batch, &zero);
	s->st = bpf_map_lookup_elem(&batch_state, &zero);
	if (!s->b || !s->st)
		return NULL;
	/*
	 * The batch is this program's when busy, read after its own count,
	 * is 1: a program that preempts it reads 2 or more until it is done.
	 */
	__sync_fetch_and_add(&s->st->busy, 1);
	/*
	 * Read after busy is counted: a program that got past wanted() as
	 * the trace stopped either shows busy to the drain, which waits for
	 * it, or sees stopped here and writes nothing (not a loss).
	 */
	if (is_stopped())
		return NULL;
	if (*(volatile __u32 *)&s->st->busy == 1 && s->st->n < MT_BATCH) {
		s->e = &s->b->ev[s->st->n & (MT_BATCH - 1)];
		return s->e;
	}
	s->ring = true;
	s->e = bpf_ringbuf_reserve(&events, sizeof(*s->e), 0);
	if (!s->e)
		__sync_fetch_and_add(&lost_events, 1);
	return s->e;
}

/*
 * The slot's event is written (keep) or not wanted after all; a kept one
 * goes with its batch when the batch is full or the event is urgent (the
 * reader must act on it at once: a held command, a fork).
 */
static __always_inline void slot_end(struct slot *s, bool keep, bool urgent)
{
	if (!s->st)
		return;
	if (s->ring && s->e) {
		if (keep)
			bpf_ringbuf_submit(s->e, wakeup(urgent));
		else
			bpf_ringbuf_discard(s->e, BPF_RB_NO_WAKEUP);
	} else if (s->e && keep) {
		s->st->n++;
		if (s->st->n >= MT_BATCH || urgent)
			batch_out(s->st, s->b, urgent);
	}
	__sync_fetch_and_add(&s->st->busy, -1);
}

/* an exponential interval of mean sample_bytes, never 0 */
static __always_inline __u64 sample_gap(void)
{
	__u32 i = bpf_get_prandom_u32() % MT_SAMPLE_GAPS;
	__u64 *gap = bpf_map_lookup_elem(&sample_gaps, &i);

	return gap && *gap ? *gap : sample_bytes;
}

/*
 * Whether this event's Python stack is walked: always, unless
 * --sample-bytes. Then the walk, the costly part, is done for allocations
 * chosen by bytes, as heap profilers sample: the thread's countdown falls
 * by each allocation's size, and the one that takes it to zero is sampled
 * and draws the next interval (the countdown restarts: exponential
 * intervals have no memory), so that every byte is equally likely and a
 * block of s bytes is walked with probability 1 - exp(-s/sample_bytes).
 * Frees are never walked (user space finds their allocation); the events
 * that are neither (OOMs, exceptions) always are.
 */
static __always_inline bool walk_wanted(struct mt_event *ev, __u64 cookie,
					struct thread_vars *tv)
{
	__s64 size;

	if (!sample_bytes)
		return true;
	if (cookie & MT_F_FREE)
		return false;
	switch (MT_COOKIE_SIZE_ARG(cookie)) {
	case 1:
		size = (__s64)ev->args[0];
		break;
	case 2:
		size = (__s64)ev->args[1];
		break;
	case 3:
		size = (__s64)ev->args[2];
		break;
	default:
		return true;
	}
	if ((cookie & MT_F_SIZE_SIGNED) && size <= 0)
		return false;
	/* tv: what fill() found; none yet: made here */
	if (!tv)
		tv = thread_vars_get();
	/* no room for the thread's countdown: not sampled, not guessed */
	if (!tv)
		return false;
	if (!tv->sample_left)
		tv->sample_left = sample_gap();
	if ((__u64)size < tv->sample_left) {
		tv->sample_left -= (__u64)size;
		return false;
	}
	tv->sample_left = sample_gap();
	ev->flags |= MT_EV_SAMPLED;
	return true;
}

/* glibc's dtv_t: a slot whose block is not allocated yet */
#define TLS_DTV_UNALLOCATED ((__u64)-1)

/*
 * The calling thread's libtorch_cpu TLS block from glibc's DTV: tcbhead_t
 * (at fs_base) holds the DTV at +8, whose slot -1 counts the slots and
 * slot modid (16 bytes each) points at the block. 0 while the thread has
 * none: it never reached that TLS, so it runs no Node and made none.
 */
static __always_inline __u64 tls_block(struct thread_vars *tv,
				       const struct mt_node_tlsconf *c)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 dtv, len, blk;

	if (tv->tls_blk && tv->tls_modid == c->modid)
		return tv->tls_blk;
	if (read_u64(&dtv, task->thread.fsbase + 8) || !dtv ||
	    read_u64(&len, dtv - 16) || c->modid > len ||
	    read_u64(&blk, dtv + 16 * c->modid) || !blk ||
	    blk == TLS_DTV_UNALLOCATED)
		return 0;
	tv->tls_blk = blk;
	tv->tls_modid = c->modid;
	tv->rf_tid = 0;
	return blk;
}

/*
 * The process's TLS layout, the thread's vars (made here if need be), its
 * block and the Node it runs (0 outside backward); NULL if any is missing
 */
static __always_inline const struct mt_node_tlsconf *
tls_node(__u32 pid, struct thread_vars **tv, __u64 *blk, __u64 *node)
{
	const struct mt_node_tlsconf *c = bpf_map_lookup_elem(&nodetls, &pid);

	if (!c)
		return NULL;
	if (!*tv)
		*tv = thread_vars_get();
	if (!*tv)
		return NULL;
	*blk = tls_block(*tv, c);
	if (!*blk || read_u64(node, *blk + c->node_off))
		return NULL;
	return c;
}

/*
 * Backward's Node, read where PyTorch keeps it (docs/autograd-tls.md)
 * instead of from the autograd probes, which are off for this process:
 * in backward the Node and, in one read of its head, its vtable, number
 * and forward thread; at a walked allocation outside backward the
 * thread's counter and id, which user space pairs with the stack to name
 * each Node's module.
 */
static __always_inline void node_tls(struct mt_event *e, struct thread_vars *tv)
{
	const struct mt_node_tlsconf *c;
	__u64 blk, node, head[MT_NODE_HEAD / 8];

	c = tls_node(e->pid, &tv, &blk, &node);
	if (!c)
		return;
	if (node) {
		if (bpf_probe_read_user(head, sizeof(head), (void *)node))
			return;
		e->node = node;
		e->node_vt = head[0];
		e->seq = head[(c->seq_nr_off / 8) & (MT_NODE_HEAD / 8 - 1)];
		e->seq_thread =
			head[(c->thread_id_off / 8) & (MT_NODE_HEAD / 8 - 1)];
		e->flags |= MT_EV_SEQ_NODE;
	} else if ((e->flags & MT_EV_PY) &&
		   !read_u64(&e->seq, blk + c->ctr_off)) {
		e->flags |= MT_EV_SEQ_CTR;
		tv->walked_ctr = e->seq;
		/*
		 * Read until set (PyTorch sets it before the thread's first
		 * Node, often before its first allocation), then kept for
		 * the thread's life: a pair at counter 0 keyed by it tells
		 * that the thread's numbering was seen from its start
		 */
		if (!tv->rf_tid && read_u64(&tv->rf_tid, blk + c->tid_off))
			tv->rf_tid = 0;
		e->seq_thread = tv->rf_tid;
	}
}

/*
 * --sample-bytes: an allocation the sampler left unwalked is walked all
 * the same outside backward when its thread's counter moved since its
 * last walk, so that the op of every Node made has a walked allocation to
 * name its module (the autograd probes walked at each Node made). The
 * sample is not changed: the event is not marked sampled.
 */
static __always_inline bool number_moved(struct mt_event *e,
					 struct thread_vars *tv)
{
	const struct mt_node_tlsconf *c;
	__u64 blk, node, ctr;

	c = tls_node(e->pid, &tv, &blk, &node);
	if (!c || node || read_u64(&ctr, blk + c->ctr_off))
		return false;
	return ctr != tv->walked_ctr;
}

/*
 * CUmemAllocationProp.location.id: after the type, the requested handle
 * types and location.type, four bytes each
 */
#define CU_PROP_LOCATION_ID_OFF 12

/* the event of a call at its entry, written in place */
static __always_inline void entry_event(struct mt_event *ev,
					struct pt_regs *ctx, __u64 cookie)
{
	struct thread_vars *tv = fill(ev, ctx, cookie);
	bool walk = false;
	__s32 dev;

	if (MT_COOKIE_KIND(cookie) != MT_K_LOADER) {
		walk = walk_wanted(ev, cookie, tv);
		if (!walk && sample_bytes && (cookie & MT_F_TVARS) &&
		    !(cookie & MT_F_FREE))
			walk = number_moved(ev, tv);
	}
	if (walk)
		walk_python(ev, PT_REGS_SP(ctx));
	/* after the walk: the counter is read where a stack names it */
	if (cookie & MT_F_TVARS)
		node_tls(ev, tv);
	if (cookie & MT_F_PROPDEV) {
		if (bpf_probe_read_user(&dev, sizeof(dev),
					(void *)(ev->args[2] +
						 CU_PROP_LOCATION_ID_OFF)) == 0)
			ev->dev = dev;
	}
}

/*
 * -- mode: stop the command until user space has attached the library
 * being loaded; not while an earlier stop is still the tracer's to
 * continue (its guard continued it instead: memtrace.h).
 */
static __always_inline void hold_caller(void)
{
	/* a child of the command (a dry run follows them) goes on */
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) != hold.pid)
		return;
	if (*(volatile __u64 *)&hold.stops != *(volatile __u64 *)&hold.resumed)
		return;
	/* counted before the event goes out, so the tracer sees it counted */
	__sync_fetch_and_add(&hold.stops, 1);
	bpf_send_signal(SIGSTOP);
}

/*
 * The event of a call at its entry: built in its slot and sent, or kept
 * in inflight for the return probe to finish (MT_F_STASH).
 */
static __always_inline void record_entry(struct pt_regs *ctx, __u64 cookie)
{
	__u32 kind = MT_COOKIE_KIND(cookie);
	struct inflight_key key;
	struct mt_event ev, *e;
	struct slot s;

	if (!(cookie & MT_F_STASH)) {
		e = slot_begin(&s);
		if (e)
			entry_event(e, ctx, cookie);
		if (cookie & MT_F_STOP)
			hold_caller();
		/* a held command waits for its loader event to be handled */
		slot_end(&s, true, kind == MT_K_LOADER);
		return;
	}
	entry_event(&ev, ctx, cookie);
	if (cookie & MT_F_STOP)
		hold_caller();
	key.tid = ev.tid;
	key.kind = kind;
	if (bpf_map_update_elem(&inflight, &key, &ev, BPF_ANY))
		__sync_fetch_and_add(&lost_inflight, 1);
}

/*
 * The entry of every call that makes an event. The calls that only keep
 * state for later events have their own programs below, so that bpftool
 * and the run statistics tell the two apart; user space picks the program
 * from the probe's flags (user/trace/attach.c).
 */
SEC("uprobe")
int mt_enter(struct pt_regs *ctx)
{
	if (wanted())
		record_entry(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

/* MT_F_EXC: an exception is set; no event for a type in exc_skip */
SEC("uprobe")
int mt_exc_filter(struct pt_regs *ctx)
{
	__u64 type = PT_REGS_PARM2(ctx);

	if (wanted() && !bpf_map_lookup_elem(&exc_skip, &type))
		record_entry(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

/*
 * MT_F_D2H (dry run): cudaMemcpy and cudaMemcpyAsync(dst, src, count,
 * kind, ...): an event only for a copy from the device to the host, which
 * reads values a dry run never computed
 */
#define CUDA_MEMCPY_DEVICE_TO_HOST 2

SEC("uprobe")
int mt_d2h_filter(struct pt_regs *ctx)
{
	if (wanted() && PT_REGS_PARM4(ctx) == CUDA_MEMCPY_DEVICE_TO_HOST)
		record_entry(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

/* MT_F_SETDEV: cudaSetDevice(dev), the device of the thread's next calls */
SEC("uprobe")
int mt_set_device(struct pt_regs *ctx)
{
	struct thread_vars *tv;

	if (!wanted())
		return 0;
	tv = thread_vars_get();
	if (tv)
		tv->dev = (__s32)PT_REGS_PARM1(ctx);
	return 0;
}

/*
 * MT_F_EDGE: set_gradient_edge(tensor, edge), forward. No event: remember
 * the Python stack the Node is made in, for backward. Edge comes by
 * reference; its first member is the Node.
 */
SEC("uprobe")
int mt_node_origin(struct pt_regs *ctx)
{
	struct mt_event ev;
	__u64 node = 0;

	if (!wanted())
		return 0;
	ev.pid = bpf_get_current_pid_tgid() >> 32;
	ev.flags = 0;
	if (read_u64(&node, PT_REGS_PARM2(ctx)) || !node)
		return 0;
	walk_python(&ev, PT_REGS_SP(ctx));
	if (ev.flags & MT_EV_PY)
		node_origin_put(node, ev.pid, ev.stack_id);
	return 0;
}

/*
 * MT_F_SETNODE: Engine::evaluate_function(graph_task, node, ...), backward.
 * The thread runs this Node now: its events carry it, and the stack it was
 * made in.
 */
SEC("uprobe")
int mt_set_node(struct pt_regs *ctx)
{
	struct node_ref ref = { .node = PT_REGS_PARM3(ctx) };
	struct thread_vars *tv;

	if (!wanted())
		return 0;
	tv = thread_vars_get();
	if (!tv)
		return 0;
	ref.stack = node_origin(ref.node, bpf_get_current_pid_tgid() >> 32);
	read_u64(&ref.vt, ref.node);
	tv->node = ref;
	return 0;
}

SEC("uretprobe")
int mt_exit(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct inflight_key key;
	struct mt_event *stashed, *e;
	struct slot s;

	if (!wanted())
		return 0;
	key.tid = (__u32)bpf_get_current_pid_tgid();
	key.kind = MT_COOKIE_KIND(cookie);
	stashed = bpf_map_lookup_elem(&inflight, &key);
	if (!stashed)
		return 0; /* entered before the attach */
	e = slot_begin(&s);
	if (e)
		__builtin_memcpy(e, stashed, sizeof(*e));
	bpf_map_delete_elem(&inflight, &key);
	if (!e) {
		slot_end(&s, false, false);
		return 0;
	}
	e->ts = bpf_ktime_get_ns(); /* the return's, not the entry's */
	/* the batch's CPU: user space orders each CPU's events by it */
	e->cpu = bpf_get_smp_processor_id();
	e->ret = PT_REGS_RC(ctx);
	e->flags |= MT_EV_RET;
	if (cookie & MT_F_DEREF0) {
		if (bpf_probe_read_user(&e->out, sizeof(e->out),
					(void *)e->args[0]) == 0)
			e->flags |= MT_EV_OUT;
		else
			e->flags |= MT_EV_OUT_FAULT;
	}
	slot_end(&s, true, false);
	return 0;
}

/*
 * --children, -f: a traced process's new child process is traced too;
 * -- COMMAND alone: the command's children are counted
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(mt_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct mt_event *e;
	struct slot s;
	__u8 one = 1;

	/* a new thread is no new process */
	if (BPF_CORE_READ(child, pid) != ctgid ||
	    !bpf_map_lookup_elem(&traced, &ptgid))
		return 0;
	if (count_forks) {
		__sync_fetch_and_add(&unfollowed_forks, 1);
		__sync_val_compare_and_swap(&first_unfollowed, 0, (__u64)ctgid);
		return 0;
	}
	if (bpf_map_update_elem(&traced, &ctgid, &one, BPF_ANY)) {
		__sync_fetch_and_add(&lost_forks, 1);
		return 0;
	}
	/*
	 * Here, before the child can exec; user space adds it again as it
	 * sets it up, and says so if the map is full
	 */
	bpf_map_update_elem(&exec_watch, &ctgid, &one, BPF_ANY);
	e = slot_begin(&s);
	if (e)
		*e = (struct mt_event){ .ts = bpf_ktime_get_ns(),
					.pid = ctgid,
					.tid = ctgid,
					.cpu = bpf_get_smp_processor_id(),
					.kind = MT_K_FORK,
					.args = { ptgid } };
	if (e)
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm),
					  child->comm);
	/* user space sets the child up before it gets far */
	slot_end(&s, true, true);
	return 0;
}

/*
 * A process in exec_watch ran execve: its new image is another program,
 * maybe another CPython. What BPF kept for the old image goes at once: the
 * walker's layout, with which a walk of the new image reads garbage, and
 * the thread's vars (a device the old image set). Sent at once: user space
 * finds what the new image runs and frees what the old one held.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(mt_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	struct mt_event *e;
	struct slot s;

	if (!bpf_map_lookup_elem(&exec_watch, &tgid))
		return 0;
	bpf_map_delete_elem(&pyconf, &tgid);
	bpf_map_delete_elem(&nodetls, &tgid);
	bpf_task_storage_delete(&thread_vars, p);
	e = slot_begin(&s);
	if (e) {
		*e = (struct mt_event){ .ts = bpf_ktime_get_ns(),
					.pid = tgid,
					.tid = p->pid,
					.cpu = bpf_get_smp_processor_id(),
					.kind = MT_K_EXEC,
					.args = { (__u32)old_pid } };
		__builtin_memcpy(e->comm, p->comm, sizeof(e->comm));
	}
	slot_end(&s, true, true);
	return 0;
}

/*
 * A process in exec_watch ended: how, as wait() would say it (a signal's
 * number, or the exit status << 8). User space can wait() only for the
 * command it started; of a process it attached to (-p) only this tells
 * whether a signal killed it. Sent by the last thread to exit (the group
 * is dead once signal->live reaches 0, before this tracepoint), whose
 * exit_code is the group's.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(mt_proc_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	struct mt_event *e;
	struct slot s;

	if (p->signal->live.counter || !bpf_map_lookup_elem(&exec_watch, &tgid))
		return 0;
	e = slot_begin(&s);
	if (e) {
		*e = (struct mt_event){ .ts = bpf_ktime_get_ns(),
					.pid = tgid,
					.tid = p->pid,
					.cpu = bpf_get_smp_processor_id(),
					.kind = MT_K_EXIT,
					.args = { (__u32)p->exit_code } };
		__builtin_memcpy(e->comm, p->comm, sizeof(e->comm));
	}
	slot_end(&s, true, true);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

/*
 * MT_F_MODCALL (--module-log only): torch::jit::tracer::getTracingState(),
 * which nn.Module._call_impl reaches first thing on every call, through
 * torch._C._get_tracing_state(). Other callers reach it too: user space
 * keeps the events whose innermost Python frame is _call_impl, whose code
 * goes in args[0]. A caller with no Python on its thread sends nothing.
 */
SEC("uprobe")
int mt_module_call(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct mt_pystack *st;
	struct mt_event *e;
	struct slot s;
	__u32 zero = 0;

	if (!wanted())
		return 0;
	e = slot_begin(&s);
	if (!e) {
		slot_end(&s, false, false);
		return 0;
	}
	fill(e, ctx, MT_COOKIE_KIND(cookie));
	walk_python(e, PT_REGS_SP(ctx));
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!(e->flags & MT_EV_PY) || !st) {
		slot_end(&s, false, false);
		return 0;
	}
	e->args[0] = st->frames[0].code;
	slot_end(&s, true, false);
	return 0;
}

/*
 * MT_F_NODEEVAL (--module-log only): Engine::evaluate_function(graph_task,
 * node, ...), an event for each Node evaluated, so that user space sees
 * backward enter and leave each module. A Node made by no Python
 * (AccumulateGrad) or before the attach comes with no stack: it belongs to
 * no module, but its evaluation has begun.
 */
SEC("uprobe")
int mt_node_eval(struct pt_regs *ctx)
{
	__u64 node = PT_REGS_PARM3(ctx);
	struct thread_vars *tv;
	struct mt_event *e;
	struct slot s;

	if (!wanted())
		return 0;
	tv = thread_vars_get();
	if (tv)
		tv->node_done = 0;
	e = slot_begin(&s);
	if (e) {
		fill(e, ctx, MT_COOKIE_KIND(bpf_get_attach_cookie(ctx)));
		e->node = node;
		e->node_stack = node_origin(node, e->pid);
		e->node_vt = 0;
		read_u64(&e->node_vt, node);
	}
	slot_end(&s, true, false);
	return 0;
}

/*
 * MT_F_NODEOUT (--module-log only): InputBuffer::add, where the Node that
 * returned hands each output to the Node that takes it (adding it up where
 * a tensor fed two). One event for the first: from it until the next Node
 * begins, memory moves for the Nodes after this one.
 */
SEC("uprobe")
int mt_node_out(struct pt_regs *ctx)
{
	struct thread_vars *tv = thread_vars_get();
	struct mt_event *e;
	struct slot s;

	if (!wanted() || !tv || tv->node_done)
		return 0;
	tv->node_done = 1;
	e = slot_begin(&s);
	if (e)
		fill(e, ctx, MT_COOKIE_KIND(bpf_get_attach_cookie(ctx)));
	slot_end(&s, true, false);
	return 0;
}

/*
 * Run by user space on each CPU that holds events (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU, in an interrupt of whatever the CPU runs): the
 * CPU's batch goes to the ring buffer now. 1: a program on the CPU was
 * writing an event, so nothing was sent; user space tries again later.
 */
SEC("raw_tp")
int mt_flush(void *ctx)
{
	__u32 zero = 0;
	struct batch *b = bpf_map_lookup_elem(&batch, &zero);
	struct mt_batch_state *st = bpf_map_lookup_elem(&batch_state, &zero);

	if (!b || !st)
		return 0;
	if (st->busy)
		return 1;
	batch_out(st, b, false);
	return 0;
}
