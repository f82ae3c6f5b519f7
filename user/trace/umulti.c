// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "trace/umulti.h"

/* link_create.uprobe_multi.flags: at the returns (BPF_F_UPROBE_MULTI_RETURN) */
#define UMULTI_RETURN 1u

/*
 * The first kernel whose uprobe_multi pid filter takes a whole process.
 * 6.6 to 6.9 ran a pid's link for the thread of that id alone (the main
 * thread): 46ba0e49b642 ("bpf: fix multi-uprobe PID filtering logic",
 * 6.10; 6.6.35, 6.9.5) compared the mm instead, then 900f362e2062 ("bpf:
 * Fix uprobe multi pid filter check", 6.12) the thread group
 * (same_thread_group()), which no stable kernel took and no bpf(2)
 * answer tells apart. Before 6.12 the probes of one process stay perf
 * uprobes; a link for every process (pid 0) has no filter to get wrong.
 */
#define PID_FIX_MAJOR 6
#define PID_FIX_MINOR 12

/*
 * union bpf_attr's link_create as BPF_TRACE_UPROBE_MULTI reads it
 * (include/uapi/linux/bpf.h of 6.6 on): the head all attach types share,
 * then the union's uprobe_multi member
 */
struct umulti_attr {
	__u32 prog_fd;
	__u32 target_fd; /* unused by uprobe_multi */
	__u32 attach_type;
	__u32 link_flags;
	__u64 path; /* a pointer, as all of them */
	__u64 offsets; /* unsigned long[cnt]: offsets in the file */
	__u64 ref_ctr_offsets; /* USDT semaphores: none here */
	__u64 cookies; /* __u64[cnt] */
	__u32 cnt;
	__u32 flags;
	__u32 pid;
};

/* the head is the same as 6.1's, and the union starts where its does */
_Static_assert(offsetof(struct umulti_attr, attach_type) ==
		       offsetof(union bpf_attr, link_create.attach_type),
	       "link_create head");
_Static_assert(offsetof(struct umulti_attr, path) ==
		       offsetof(union bpf_attr, link_create.perf_event),
	       "link_create union");
/* the kernel reads the offsets as unsigned long, ours are __u64 */
_Static_assert(sizeof(unsigned long) == sizeof(__u64), "64-bit only");

/* BPF_LINK_CREATE for a uprobe_multi link: its fd, or -errno */
static int link_create(int prog_fd, const char *path, const __u64 *offsets,
		       const __u64 *cookies, __u32 cnt, __u32 flags, int pid)
{
	struct umulti_attr attr = {
		.prog_fd = (__u32)prog_fd,
		.attach_type = MT_UMULTI_ATTACH_TYPE,
		.path = (__u64)(unsigned long)path,
		.offsets = (__u64)(unsigned long)offsets,
		.cookies = (__u64)(unsigned long)cookies,
		.cnt = cnt,
		.flags = flags,
		.pid = (__u32)pid,
	};
	/* up to the last field: the kernel zeroes what a caller leaves off */
	long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr,
			  offsetof(struct umulti_attr, pid) + sizeof(attr.pid));

	return fd < 0 ? -errno : (int)fd;
}

int mt_umulti_link(int prog_fd, const char *path, const __u64 *offsets,
		   const __u64 *cookies, __u32 cnt, bool retprobe, int pid)
{
	return link_create(prog_fd, path, offsets, cookies, cnt,
			   retprobe ? UMULTI_RETURN : 0, pid);
}

/* whether the running kernel is major.minor or later */
static bool kernel_at_least(unsigned int major, unsigned int minor)
{
	struct utsname u;
	unsigned int ma, mi;

	if (uname(&u) || sscanf(u.release, "%u.%u", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

/*
 * Whether the kernel makes uprobe_multi links, asked as libbpf's own
 * probe does: a link of a program loaded for them, on "/", is refused
 * with EBADF (not a regular file) only by a kernel that got that far.
 * 1 or 0, or -errno where the probe's program would not load.
 */
static int has_links(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_load_opts opts = {
		.sz = sizeof(opts),
		.expected_attach_type =
			(enum bpf_attach_type)MT_UMULTI_ATTACH_TYPE,
	};
	const __u64 offset = 0;
	int prog, fd;

	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "mt_umulti_probe", "GPL",
			     insns, sizeof(insns) / sizeof(insns[0]), &opts);
	if (prog < 0)
		return -errno;
	fd = link_create(prog, "/", &offset, NULL, 1, 0, 0);
	if (fd >= 0)
		close(fd);
	close(prog);
	return fd == -EBADF;
}

bool mt_umulti_usable(bool pid_filter, char *why, size_t len)
{
	int ret;

	if (pid_filter && !kernel_at_least(PID_FIX_MAJOR, PID_FIX_MINOR)) {
		snprintf(why, len,
			 "kernel before %d.%d, its uprobe_multi pid filter "
			 "unfixed",
			 PID_FIX_MAJOR, PID_FIX_MINOR);
		return false;
	}
	ret = has_links();
	if (ret < 0)
		snprintf(why, len, "uprobe_multi check: %s", strerror(-ret));
	else if (!ret)
		snprintf(why, len, "kernel without uprobe_multi links");
	return ret > 0;
}
