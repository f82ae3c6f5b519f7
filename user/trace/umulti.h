/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF uprobe_multi links (BPF_LINK_CREATE, attach type
 * BPF_TRACE_UPROBE_MULTI): one link places a program on many offsets of
 * one file, and its close removes them all after one wait for the
 * probes' handlers (a uprobe opened through perf waits once per probe,
 * ~0.1 s each). Debian 12's libbpf 1.1 and UAPI headers predate them, so
 * the bpf(2) calls are made here.
 *
 * Return conventions: mt_umulti_link, a link's fd or -errno;
 * mt_umulti_usable, true or false with the reason in a buffer. Nothing
 * here prints.
 */
#ifndef __UMULTI_H
#define __UMULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI (kernel 6.6) */
#define MT_UMULTI_ATTACH_TYPE 48

/*
 * Whether uprobe_multi links serve us on this kernel: it has them and,
 * where pid_filter (links for one process, not pid 0), their pid filter
 * takes every thread of the process (the fixes umulti.c names). false
 * with why said in why (also where the check itself failed: then the
 * probes go on as before).
 */
bool mt_umulti_usable(bool pid_filter, char *why, size_t len);

/*
 * Place prog_fd on the cnt offsets of the file at path, each with its
 * cookie (bpf_get_attach_cookie()), at the functions' returns where
 * retprobe; pid > 0: in that process alone, 0: in every process. prog_fd
 * must be loaded with expected_attach_type MT_UMULTI_ATTACH_TYPE. Returns
 * the link's fd (its close removes the probes), or -errno.
 */
int mt_umulti_link(int prog_fd, const char *path, const __u64 *offsets,
		   const __u64 *cookies, __u32 cnt, bool retprobe, int pid);

#endif /* __UMULTI_H */
