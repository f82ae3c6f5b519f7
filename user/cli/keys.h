/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The key of each long option that has no letter. argp tells options apart
 * by key, and an option of another command is refused by its key, so the
 * keys of every command are one enum: two options of one name (--pid,
 * --phase, --device-mem, --max-live in two groups) share a key, and two of
 * different names never do.
 */
#ifndef __CLI_KEYS_H
#define __CLI_KEYS_H

enum {
	OPT_MIN_SIZE = 0x100,
	OPT_NO_CPU,
	OPT_NO_CUDA,
	OPT_WAIT,
	OPT_RINGBUF,
	OPT_MAX_LIVE,
	OPT_TOP_LIVE,
	OPT_NO_STACK,
	OPT_MAX_DEPTH,
	OPT_ROOT_NAME,
	OPT_PHASE,
	OPT_MODULE_LOG,
	OPT_LOG_TIME,
	OPT_NO_PYTHON,
	OPT_SAMPLE_BYTES,
	OPT_AT,
	OPT_LEAK_AGE,
	OPT_TOP_OPS,
	OPT_KEYS,
	OPT_PERCENT_LIMIT,
	OPT_WATCH,
	OPT_WATCH_WINDOW,
	OPT_DEVICE_MEM,
	OPT_ALERT_PCT,
	OPT_TRACE_EXC,
	OPT_EXPORT,
	OPT_FOLDED_PREFIX,
	OPT_METRICS_ADDR,
	OPT_METRICS_FILE,
	OPT_CHILDREN,
	OPT_ALL,
	OPT_EXPANDABLE,
	OPT_SCALE,
	OPT_MAX_SPLIT,
	OPT_ROUNDUP_DIV,
	OPT_GC_THRESHOLD,
	OPT_CHECK,
	OPT_TIME,
	OPT_STEPS,
	OPT_TID,
	OPT_COMM,
	OPT_MODULE,
	OPT_EVENT,
	OPT_KIND,
	OPT_SIZE,
	OPT_INTERVAL,
	OPT_DRY_RUN,
	OPT_USER,
	OPT_DEVICE,
	OPT_DEVICES,
	OPT_FLIGHT,
	OPT_FLIGHT_DUMPS,
	OPT_FLIGHT_TOTAL,
	OPT_FLIGHT_AT_END,
	OPT_FLIGHT_TOGETHER,
};

#endif /* __CLI_KEYS_H */
