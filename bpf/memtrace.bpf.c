// SPDX-License-Identifier: GPL-2.0
/*
 * One entry and one return program serve every probe point: the BPF cookie
 * says which call it is and what to record, so that the kernel side stays
 * small and the meaning of each argument lives in user space (user/kinds.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "memtrace.h"

#define SIGSTOP 19
#define MAX_INFLIGHT 16384
#define MAX_THREADS 65536

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

/* the CUDA device each thread last set with cudaSetDevice */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, __s32);
} thread_dev SEC(".maps");

/* events that could not be recorded: user space reports them */
__u64 lost_events = 0;
__u64 lost_inflight = 0;

static __always_inline void fill(struct mt_event *e, struct pt_regs *ctx,
				 __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 *dev;

	e->ts = bpf_ktime_get_ns();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->cpu = bpf_get_smp_processor_id();
	e->kind = kind;
	e->flags = 0;
	e->args[0] = PT_REGS_PARM1(ctx);
	e->args[1] = PT_REGS_PARM2(ctx);
	e->args[2] = PT_REGS_PARM3(ctx);
	e->args[3] = PT_REGS_PARM4(ctx);
	e->args[4] = PT_REGS_PARM5(ctx);
	e->out = 0;
	e->ret = 0;
	e->caller = 0;
	bpf_probe_read_user(&e->caller, sizeof(e->caller),
			    (void *)PT_REGS_SP(ctx));
	dev = bpf_map_lookup_elem(&thread_dev, &e->tid);
	e->dev = dev ? *dev : MT_DEV_UNKNOWN;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

static __always_inline void submit(const struct mt_event *src)
{
	if (bpf_ringbuf_output(&events, (void *)src, sizeof(*src), 0))
		__sync_fetch_and_add(&lost_events, 1);
}

SEC("uprobe")
int mt_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 kind = MT_COOKIE_KIND(cookie);
	struct inflight_key key;
	struct mt_event ev;
	__s32 dev;

	if (cookie & MT_F_SETDEV) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();

		dev = (__s32)PT_REGS_PARM1(ctx);
		bpf_map_update_elem(&thread_dev, &tid, &dev, BPF_ANY);
		return 0;
	}

	fill(&ev, ctx, kind);
	if (cookie & MT_F_PROPDEV) {
		/* CUmemAllocationProp.location.id */
		if (bpf_probe_read_user(&dev, sizeof(dev),
					(void *)(ev.args[2] + 12)) == 0)
			ev.dev = dev;
	}
	if (cookie & MT_F_STOP)
		bpf_send_signal(SIGSTOP);

	if (!(cookie & MT_F_STASH)) {
		submit(&ev);
		return 0;
	}
	key.tid = ev.tid;
	key.kind = kind;
	if (bpf_map_update_elem(&inflight, &key, &ev, BPF_ANY))
		__sync_fetch_and_add(&lost_inflight, 1);
	return 0;
}

SEC("uretprobe")
int mt_exit(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct inflight_key key;
	struct mt_event *stashed, ev;

	key.tid = (__u32)bpf_get_current_pid_tgid();
	key.kind = MT_COOKIE_KIND(cookie);
	stashed = bpf_map_lookup_elem(&inflight, &key);
	if (!stashed)
		return 0; /* entered before the attach */
	__builtin_memcpy(&ev, stashed, sizeof(ev));
	bpf_map_delete_elem(&inflight, &key);

	ev.ts = bpf_ktime_get_ns();
	ev.ret = PT_REGS_RC(ctx);
	ev.flags |= MT_EV_RET;
	if (cookie & MT_F_DEREF0) {
		if (bpf_probe_read_user(&ev.out, sizeof(ev.out),
					(void *)ev.args[0]) == 0)
			ev.flags |= MT_EV_OUT;
		else
			ev.flags |= MT_EV_OUT_FAULT;
	}
	submit(&ev);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
