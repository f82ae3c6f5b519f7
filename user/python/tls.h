/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the BPF walker finds the calling thread's PyThreadState (tls.c).
 * Internal to python/.
 */
#ifndef __PYTLS_H
#define __PYTLS_H

#include <linux/types.h>
#include "proc/maps.h"

struct mt_py;

/*
 * Set py->conf's ts_how and the fields it uses. The thread state is read
 * from a slot at a fixed offset from the thread pointer when that offset
 * can be found and holds on the target's threads: on 3.10-3.14 the value
 * of pthread key tss_key, placed as the target's own pthread_getspecific
 * places it; on 3.15+ the thread-local that gilstate_fn (the target's
 * PyGILState_GetThisThreadState, 0 if absent) reads. Otherwise the walker
 * searches the interpreter's thread list. Needs py->lay; never fails.
 */
void mt_py_find_tstate(struct mt_py *py, const struct mt_maps *maps,
		       __u64 gilstate_fn, __u32 tss_key);

#endif /* __PYTLS_H */
