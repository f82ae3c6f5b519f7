/* SPDX-License-Identifier: GPL-2.0 */
/*
 * _Py_DebugOffsets, the offsets CPython 3.13+ publishes at the start of
 * _PyRuntime for out-of-process readers: the values the target was built
 * with, taken from the target itself. Internal to python/.
 */
#ifndef __PYDBGOFF_H
#define __PYDBGOFF_H

#include <stddef.h>
#include <linux/types.h>
#include "python/layout.h"

struct mt_py;

/*
 * Fill *lay with base (what the structure does not hold) overlaid with the
 * target's own values, read where the structure of version minor keeps
 * them; a minor newer than any known is read as the newest known one.
 * Offsets python/ keeps as constants (object header, type name and flags,
 * dict, bytes and str fields) must equal the target's.
 *
 * Returns 0, -EFAULT (unreadable) or -EPROTO (a value differs from our
 * constant or lies beyond what the readers fetch), with a message in err
 * that names the value (a buffer: it is mt_py_open's message).
 */
int mt_py_debug_layout(const struct mt_py *py, unsigned int minor,
		       const struct layout *base, struct layout *lay, char *err,
		       size_t errlen);

#endif /* __PYDBGOFF_H */
