/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --module-log: one record per module per stage (pre/post forward,
 * pre/post backward, pre/post optimizer step) per optimizer step, as the
 * hook-based tracers write from inside a process, here rebuilt from the
 * phase and module of each allocator event.
 */
#ifndef __MODLOG_H
#define __MODLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct mt_modlog;

/*
 * Open the log of process pid: {pid} and {rank} in pattern expand (rank:
 * the target's RANK environment variable, 0 if unset). Returns NULL with
 * a message in err.
 */
struct mt_modlog *mt_modlog_open(const char *pattern, int pid, bool with_time,
				 char *err, size_t errlen);

/*
 * An event of phase and module (interned strings; root names the root
 * module, which holds every other, NULL if not known) happened at ts, after
 * which the process held allocated / reserved bytes. A stage's record
 * shows the memory before the event that starts or ends it.
 */
void mt_modlog_event(struct mt_modlog *ml, __u64 ts, const char *phase,
		     const char *module, const char *root, __u64 allocated,
		     __u64 reserved);

/* Write what the last step recorded and close; 0 or -errno. */
int mt_modlog_close(struct mt_modlog *ml);

#endif /* __MODLOG_H */
