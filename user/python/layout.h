/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where each CPython version keeps what python/ reads: object and type
 * fields common to 3.10-3.15, and a table of what differs (layout.c).
 * Internal to python/.
 *
 * 3.10-3.12: the offsets are those of CPython's own headers (x86_64, GIL
 * builds), checked against the DWARF of 3.10.13, 3.11.7 and 3.12.1 and
 * against running interpreters; layouts do not change within a minor
 * version for the fields used here. 3.13+: the interpreter publishes most
 * of them in _Py_DebugOffsets, which are read from the target (dbgoff.c);
 * the table holds only what that structure does not.
 */
#ifndef __PYLAYOUT_H
#define __PYLAYOUT_H

#include <stdbool.h>
#include <linux/types.h>

/* object and type fields, the same in 3.10-3.15 (3.13+: checked at open) */
#define OB_TYPE 8
#define BYTES_SIZE 16
#define BYTES_DATA 32
#define STR_LENGTH 16
#define STR_STATE 32
#define TP_NAME 24
#define TP_BASICSIZE 32
#define TP_FLAGS 168
#define TP_DICTOFFSET 288
#define TYPE_HDR 296
#define TS_PREV 0
#define TS_NEXT 8
#define TS_INTERP 16
#define DICT_KEYS 32
#define DICT_VALUES 40

#define TPF_INLINE_VALUES (1UL << 2) /* 3.13+ */
#define TPF_MANAGED_DICT (1UL << 4) /* 3.11+ */
#define TPF_HEAPTYPE (1UL << 9)
#define TPF_DICT_SUBCLASS (1UL << 29)

/* where a version keeps what we read */
struct layout {
	__u32 minor;
	__u64 rt_interp_head;
	__u64 rt_tss; /* Py_tss_t autoTSSkey; 0: none (3.15+) */
	__u64 is_threads_head;
	__u64 ts_thread_id, ts_frame;
	/* datastack_chunk, then datastack_top and _limit; 0: none (3.10) */
	__u64 ts_chunk;
	__s64 cframe_cur; /* -1: no _PyCFrame step */
	__u64 f_code, f_back, f_instr, f_localsplus;
	__u64 f_owner; /* MT_PY_NO_OWNER on 3.10 */
	__u32 owner_cstack_min;
	bool tagged; /* frames hold _PyStackRef: low 2 bits are tags (3.14+) */
	__u64 co_argcount, co_flags, co_firstlineno;
	__u64 co_filename, co_name, co_qualname, co_linetable, co_adaptive;
	__u64 str_ascii_data, str_compact_data;
	__u64 ht_cached_keys;
};

/* the newest minor version python/ knows */
#define MT_PY_MINOR_MAX 15u

/*
 * The table entry of 3.<minor>: the newest one for a newer minor, NULL
 * for one older than 3.10.
 */
const struct layout *mt_py_layout(unsigned int minor);

#endif /* __PYLAYOUT_H */
