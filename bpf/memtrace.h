/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event ABI between bpf/memtrace.bpf.c and user space: the only place
 * where these types and numbers are defined. Include <linux/types.h> (user
 * space) or vmlinux.h (BPF) first.
 */
#ifndef __MEMTRACE_H
#define __MEMTRACE_H

#define MT_COMM_LEN 16
#define MT_NARGS 5

/* Which call an event comes from; decoded by user/event/kinds.c. */
enum mt_kind {
	MT_K_NONE = 0,
	MT_K_CUDA_MALLOC,
	MT_K_CUDA_FREE,
	MT_K_CUDA_MALLOC_ASYNC,
	MT_K_CUDA_FREE_ASYNC,
	MT_K_CUDA_MALLOC_MANAGED,
	MT_K_CUDA_MALLOC_HOST,
	MT_K_CUDA_HOST_ALLOC,
	MT_K_CUDA_FREE_HOST,
	MT_K_CU_MEM_ALLOC,
	MT_K_CU_MEM_FREE,
	MT_K_CU_MEM_CREATE,
	MT_K_CU_MEM_RELEASE,
	MT_K_CU_MEM_MAP,
	MT_K_CU_MEM_UNMAP,
	MT_K_C10_REPORT,
	MT_K_C10_OOM,
	MT_K_CPU_NEW,
	MT_K_CPU_DELETE,
	MT_K_ALLOC_CPU,
	MT_K_FREE_CPU,
	MT_K_SET_DEVICE,
	MT_K_LOADER,
	MT_K_GRAD_EDGE,
	MT_K_EVAL_FN,
	MT_K_PY_RAISE, /* CPython's _PyErr_SetObject: an exception is set */
	MT_K_NCCL_MEM_ALLOC,
	MT_K_NCCL_MEM_FREE,
	MT_K_MODULE_CALL, /* --module-log: an nn.Module call begins */
	MT_K_NODE_EVAL, /* --module-log: an autograd Node is evaluated */
	MT_K_NODE_OUT, /* --module-log: a Node returned; its outputs go on */
	MT_K_HOST_READ, /* dry run: a copy of device memory to the host */
	MT_K_MAX,
};

/*
 * The BPF cookie of every probe: kind in the low 16 bits, what to do in the
 * bits above. The BPF side knows no call by name; it only follows these.
 */
#define MT_COOKIE_KIND(c) ((c)&0xffff)
#define MT_F_STASH (1u << 16) /* entry: keep args until the return probe */
#define MT_F_DEREF0 (1u << 17) /* return: result is the u64 at *arg0 */
#define MT_F_PROPDEV (1u << 18) /* entry: device = s32 at arg2 + 12 */
#define MT_F_SETDEV (1u << 19) /* entry: arg0 is the thread's new device */
#define MT_F_STOP (1u << 20) /* entry: SIGSTOP the caller (struct mt_hold) */
#define MT_F_EDGE (1u << 21) /* entry: the Node* of Edge *arg1 was made here */
#define MT_F_SETNODE (1u << 22) /* entry: arg2 is the Node* this thread runs */
#define MT_F_EXC (1u << 23) /* entry: drop it if arg1 (a type) is in exc_skip */
#define MT_F_MODCALL (1u << 24) /* entry: a module call (args[0]: top code) */
#define MT_F_NODEEVAL (1u << 25) /* entry: arg2 is the Node* evaluated now */
/*
 * entry: every caller lies in the probed function's own library (a method
 * only that library calls), so the event's caller is the probed address,
 * which names the same library, and the return address is not read
 */
#define MT_F_SELFCALL (1u << 26)
/*
 * --sample-bytes, read by the sampler only (entry): the argument holding
 * the size an allocation asks for, as its index + 1 in bits 27-29 (0: the
 * call allocates nothing); MT_F_SIZE_SIGNED: that size is signed, and one
 * <= 0 is a free (c10's reporter); MT_F_FREE: the call frees
 */
#define MT_F_SIZE_SHIFT 27
#define MT_F_SIZE_ARG(i) ((__u32)((i) + 1) << MT_F_SIZE_SHIFT)
#define MT_COOKIE_SIZE_ARG(c) (((c) >> MT_F_SIZE_SHIFT) & 7)
#define MT_F_SIZE_SIGNED (1u << 30)
#define MT_F_FREE (1u << 31)

/*
 * --sample-bytes: entries of the table of exponential intervals between
 * sampled bytes, which user space fills (BPF has no floating point)
 */
#define MT_SAMPLE_GAPS 1024

/*
 * entry: the event carries the thread's device and autograd Node (a
 * device taken from cudaSetDevice, or Python attribution with the autograd
 * probes); without it they are left unknown and not looked up
 */
#define MT_F_TVARS (1ULL << 32)
/* entry (--module-log): a Node's outputs go to the next Nodes' inputs */
#define MT_F_NODEOUT (1ULL << 33)
/* entry (dry run): only a cudaMemcpy(Async) whose arg 3 is device to host */
#define MT_F_D2H (1ULL << 34)
/*
 * entry: the probe sits past the function's first instructions, which
 * moved the stack pointer down by this many 8-byte words: the return
 * address is that far above it (user/proc/probepoint.h)
 */
#define MT_F_SP_SHIFT 40
#define MT_F_SP(bytes) ((__u64)((bytes) / 8) << MT_F_SP_SHIFT)
#define MT_COOKIE_SP(c) ((((c) >> MT_F_SP_SHIFT) & 0xfff) * 8)

/*
 * A ring buffer record holds 1 to MT_BATCH events back to back: each CPU
 * gathers its events and sends them MT_BATCH at a time (a reserve and a
 * submit cost more than the rest of an event without Python), or sooner
 * when one is urgent or user space flushes it (mt_flush). Records of
 * different CPUs interleave: user space orders events by ts.
 */
#define MT_BATCH 16

/*
 * A CPU's batch (the map batch_state, read by user space): busy counts
 * the programs on the CPU that have taken an event's time stamp and not
 * yet written it, n the events held. Read as one u64, so that a pair with
 * busy 0 and n 0 proves the CPU holds no event stamped before the read.
 */
struct mt_batch_state {
	__u32 busy;
	__u32 n;
};

/*
 * -- mode: the command is stopped (SIGSTOP) at each library load until
 * user space has attached the library and continues it. A global of the
 * BPF object, shared by three writers: BPF counts the stops, the tracer
 * says up to which stop it has continued the command, and the tracer's
 * guard (user/proc/target.c) counts the stops it ended itself because the
 * tracer took too long (stopped, hung). While a stop waits for the
 * tracer, BPF stops the command no more: it would only wait for the
 * guard again at each load.
 */
struct mt_hold {
	__u32 pid; /* the command: only it is held, not its children */
	__u32 pad;
	__u64 stops; /* BPF: SIGSTOPs sent */
	__u64 resumed; /* tracer: every stop up to this count is continued */
	__u64 released; /* guard: stops it continued in the tracer's stead */
};

/* mt_event.kind of what no probe reports: a traced process forked */
/*
 * pid: the child, args[0]: its parent, comm: its name at the fork (it may
 * have exec'd by the time user space reads this)
 */
#define MT_K_FORK 0x8000
/*
 * a traced process ran execve: pid, tid and comm are the new image's,
 * args[0] the thread id that called it (a thread other than the leader
 * takes the leader's id)
 */
#define MT_K_EXEC 0x8001
/*
 * a traced process ended: args[0] how, as wait() says it (WIFSIGNALED,
 * WTERMSIG, WEXITSTATUS read it); tid the last thread's
 */
#define MT_K_EXIT 0x8002

/* mt_event.flags */
#define MT_EV_RET (1u << 0) /* ret is valid */
#define MT_EV_OUT (1u << 1) /* out is valid */
#define MT_EV_OUT_FAULT (1u << 2) /* reading *arg0 failed */
#define MT_EV_PY (1u << 3) /* the thread runs Python: stack_id is valid */
#define MT_EV_PY_TRUNC (1u << 4) /* the stack is deeper than the cap */
#define MT_EV_PY_LOST (1u << 5) /* no room to store the stack, or dropped */
/* --sample-bytes: an allocation the sampler chose; its stack was walked */
#define MT_EV_SAMPLED (1u << 6)
/*
 * No walk: the process has no walker layout yet (user space has not found
 * its CPython, or has not finished). Counted once it proves to be Python.
 */
#define MT_EV_PY_NOCONF (1u << 7)
/*
 * Read from libtorch_cpu's thread-locals (struct mt_node_tlsconf):
 * MT_EV_SEQ_NODE, in backward: node and node_vt are the Node the thread
 * evaluates, seq its sequence_nr_ and seq_thread its thread_id_, the
 * forward thread that made it; MT_EV_SEQ_CTR, at a walked allocation
 * outside backward: seq is the thread's sequence counter, the number the
 * next Node made will take, and seq_thread the thread's own id (0 until
 * PyTorch first asks for it there). Each thread numbers its own Nodes.
 */
#define MT_EV_SEQ_NODE (1u << 8)
#define MT_EV_SEQ_CTR (1u << 9)

#define MT_MAX_FRAMES 64
#define MT_MAX_MODCODE 4
#define MT_FRAME_WIN 88 /* bytes of a frame head holding every field (3.11+) */
#define MT_MAX_THREADS 256 /* thread states searched by MT_TS_LIST */
#define MT_TS_WIN 320 /* bytes of a thread state read at once, at most */

/* mt_pyconf.ts_how: how the walker finds the calling thread's state */
enum mt_ts_how {
	MT_TS_NONE = 0, /* it cannot: no stacks */
	MT_TS_FS, /* the pointer at fs_base + ts_fs_off (a TLS slot) */
	MT_TS_LIST, /* the state in the list at ts_list whose thread_id is fs_base */
};

/*
 * How to walk one target's CPython frames (user/python/ fills it from the
 * interpreter's version and its _Py_DebugOffsets): where the calling
 * thread's PyThreadState is, and the offsets of the fields the walk reads.
 * Byte offsets.
 */
struct mt_pyconf {
	__u32 minor; /* 3.<minor> */
	__u32 ts_how; /* enum mt_ts_how */
	__s64 ts_fs_off; /* MT_TS_FS: the slot's offset from fs_base */
	__u64 ts_list; /* MT_TS_LIST: address of the first thread state pointer */
	__u64 ts_next_off, ts_id_off; /* tstate->next, ->thread_id */
	__u64 ts_frame_off; /* tstate->frame (3.10), ->cframe (3.11/12), ->current_frame (3.13+) */
	__s64 cframe_cur_off; /* current_frame in _PyCFrame; -1: none */
	/*
	 * The thread state's fields the walk reads, in one read of ts_win_len
	 * bytes (at most MT_TS_WIN) at ts_win_off: the frame pointer above
	 * and, from 3.11 on, datastack_chunk, datastack_top and
	 * datastack_limit, three pointers in a row from ts_chunk_off (-1:
	 * none, or not to be trusted).
	 */
	__u32 ts_win_off, ts_win_len;
	__s64 ts_chunk_off;
	__u64 f_code, f_back, f_instr, f_localsplus, f_owner;
	__u64 ref_mask; /* f_code and localsplus are tagged (3.14+): ~3 */
	__u32 instr_is_index; /* 3.10: f_lasti is an int */
	__u32 owner_cstack_min; /* owner >= this: a C shim, skipped; 0: none */
	__u32 max_depth; /* frames kept, at most MT_MAX_FRAMES */
	__u32 frame_win; /* MT_FRAME_WIN if every field lies within it, else 0 */
	/*
	 * Stacks are deduplicated by a hash of each frame's code and
	 * instruction; localsplus[0] joins the hash only for the frames that
	 * call an nn.Module (whose self names the module), once user space
	 * knows those code objects. Until then every frame's joins it.
	 */
	__u32 nmodcode;
	__u32 pad;
	__u64 modcode[MT_MAX_MODCODE];
};

/* one Python frame as the walk saw it; user space gives it names */
struct mt_pyframe {
	__u64 code; /* code object (tag bits cleared) */
	__u64 instr; /* instruction pointer (f_lasti on 3.10) */
	__u64 local0; /* localsplus[0]: self of a method (tag bits cleared) */
};

struct mt_pystack {
	__u32 depth;
	__u32 pad;
	struct mt_pyframe frames[MT_MAX_FRAMES]; /* innermost first */
};

/* mt_event.dev when the thread's device is not known */
#define MT_DEV_UNKNOWN (-1)

struct mt_event {
	__u64 ts; /* CLOCK_MONOTONIC, ns */
	__u64 args[MT_NARGS]; /* raw argument registers at entry */
	__u64 out; /* *arg0 at return (MT_F_DEREF0) */
	__s64 ret; /* return register */
	__u64 caller; /* return address at entry; MT_F_SELFCALL: the probe's */
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u16 kind; /* enum mt_kind */
	__u16 flags; /* MT_EV_* */
	__s32 dev; /* thread's CUDA device, or from the call's arguments */
	char comm[MT_COMM_LEN]; /* thread name */
	__u64 stack_id; /* key of the Python stack in the stacks map */
	__u64 node; /* autograd Node this thread evaluates (backward) */
	__u64 node_vt; /* its vtable pointer: names its class */
	__u64 node_stack; /* the Python stack the Node was made in, or 0 */
	__u64 seq; /* MT_EV_SEQ_NODE or MT_EV_SEQ_CTR: a sequence number */
	__u64 seq_thread; /* and the forward thread it counts on */
};

/* bytes of a Node read at once: its vtable, number and thread id */
#define MT_NODE_HEAD 64

/*
 * Where a process's libtorch_cpu keeps, per thread, the autograd Node the
 * engine evaluates, ATen's sequence counter and RecordFunction's thread
 * id (docs/autograd-tls.md): each thread's block is dtv[modid] of glibc's
 * DTV, the Node pointer at node_off in it, the counter at ctr_off, the id
 * at tid_off; a Node's number and its forward thread's id are at
 * seq_nr_off and thread_id_off (multiples of 8 below MT_NODE_HEAD) in it.
 * Filled by user space from user/python/nodetls.c, per process; without
 * it the autograd probes name backward's Nodes.
 */
struct mt_node_tlsconf {
	__u64 modid; /* libtorch_cpu's slot in each thread's DTV */
	__u64 node_off; /* the Node pointer's offset in the block */
	__u64 ctr_off; /* the counter's offset in the block */
	__u64 tid_off; /* the thread id's offset in the block */
	__u32 seq_nr_off; /* Node::sequence_nr_ */
	__u32 thread_id_off; /* Node::thread_id_ */
};

#endif /* __MEMTRACE_H */
