/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --watch: every interval, per process and device, the memory in use, its
 * growth rate fitted over a window, the predicted time to out-of-memory
 * against the device's size (NVML or nvidia-smi, or --device-mem) with a
 * confidence, and a risk level; --alert-pct prints an alert with the top growing sites and
 * plain advice when usage crosses it. NVML's figure of each process is
 * sampled beside, for the reconciliation of analysis/nvsmi.h.
 */
#ifndef __WATCH_H
#define __WATCH_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "analysis/sites.h"
#include "analysis/summary.h"

struct mt_session;

struct mt_watch_conf {
	double interval; /* seconds between lines */
	double window; /* seconds of samples the rate is fitted on */
	__u64 device_mem; /* bytes; 0: ask analysis/gpumem.h per CUDA device */
	double alert_pct; /* 0: no alerts */
	/*
	 * the session whose processes NVML is asked about at each interval
	 * (its nvsmi, made here and printed at its end: analysis/nvsmi.h);
	 * NULL: none asked
	 */
	struct mt_session *ses;
};

struct mt_watch;

struct mt_watch *mt_watch_new(const struct mt_watch_conf *c);
void mt_watch_free(struct mt_watch *w);

/*
 * the device's size for cuda:index (--device-mem, or analysis/gpumem.h);
 * 0: unknown, or not known yet (the helper asking has not answered)
 */
__u64 mt_watch_device_mem(struct mt_watch *w, int index);

/* called often; prints when an interval has passed since the last lines */
void mt_watch_tick(struct mt_watch *w, __u64 now_ns, struct mt_summary *sum,
		   struct mt_sites *sites, FILE *out);

#endif /* __WATCH_H */
