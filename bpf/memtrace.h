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

/* Which call an event comes from; decoded by user/kinds.c. */
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
#define MT_F_STOP (1u << 20) /* entry: SIGSTOP the caller (-- mode loader) */

/* mt_event.flags */
#define MT_EV_RET (1u << 0) /* ret is valid */
#define MT_EV_OUT (1u << 1) /* out is valid */
#define MT_EV_OUT_FAULT (1u << 2) /* reading *arg0 failed */

/* mt_event.dev when the thread's device is not known */
#define MT_DEV_UNKNOWN (-1)

struct mt_event {
	__u64 ts; /* CLOCK_MONOTONIC, ns */
	__u64 args[MT_NARGS]; /* raw argument registers at entry */
	__u64 out; /* *arg0 at return (MT_F_DEREF0) */
	__s64 ret; /* return register */
	__u64 caller; /* return address at entry */
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u16 kind; /* enum mt_kind */
	__u16 flags; /* MT_EV_* */
	__s32 dev; /* thread's CUDA device, or from the call's arguments */
	char comm[MT_COMM_LEN]; /* thread name */
};

#endif /* __MEMTRACE_H */
