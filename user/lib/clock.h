/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tool's one clock: CLOCK_MONOTONIC, the clock BPF stamps events
 * with (bpf_ktime_get_ns), so that a time read here compares with theirs.
 */
#ifndef __CLOCK_H
#define __CLOCK_H

#include <linux/types.h>

/* now, in ns of CLOCK_MONOTONIC; it cannot fail */
__u64 mt_now_ns(void);

#endif /* __CLOCK_H */
