// SPDX-License-Identifier: GPL-2.0
/*
 * The target's _Py_DebugOffsets (3.13+) read into a struct layout. The
 * structure describes every other structure but not itself: it grows
 * with each minor version, so a table says where each value we take sits
 * in it. The positions were computed from each version's
 * Include/internal/pycore_debug_offsets.h and checked against the values
 * of running 3.13.5, 3.14.10 and 3.15.2 (docs/cpython-offsets.md).
 */
#include <errno.h>
#include <stdio.h>
#include "python/dbgoff.h"
#include "python/objects.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* bytes of _Py_DebugOffsets read: the largest known structure */
#define DBG_MAX 888

/* a frame or type field further out than this is no offset we believe */
#define FIELD_MAX 4096

/* what a value is, for the table and for messages */
enum dbg_val {
	V_INTERP_HEAD, /* runtime_state.interpreters_head */
	V_THREADS_HEAD, /* interpreter_state.threads_head */
	V_TS_PREV,
	V_TS_NEXT,
	V_TS_INTERP,
	V_TS_FRAME, /* thread_state.current_frame */
	V_TS_THREAD_ID,
	V_TS_CHUNK, /* thread_state.datastack_chunk */
	V_F_BACK, /* interpreter_frame.previous */
	V_F_CODE, /* interpreter_frame.executable */
	V_F_INSTR,
	V_F_LOCALSPLUS,
	V_F_OWNER,
	V_CO_FILENAME,
	V_CO_NAME,
	V_CO_QUALNAME,
	V_CO_LINETABLE,
	V_CO_FIRSTLINENO,
	V_CO_ARGCOUNT,
	V_CO_ADAPTIVE,
	V_OB_TYPE,
	V_TP_NAME,
	V_TP_FLAGS,
	V_TP_BASICSIZE, /* 3.15+ */
	V_TP_DICTOFFSET, /* 3.15+ */
	V_HT_CACHED_KEYS, /* 3.15+ */
	V_DICT_KEYS,
	V_DICT_VALUES,
	V_BYTES_SIZE,
	V_BYTES_DATA,
	V_STR_STATE,
	V_STR_LENGTH,
	V_STR_ASCII, /* unicode_object.asciiobject_size */
	V_STR_COMPACT, /* 3.15+: compactunicodeobject_size */
	V_N,
};

static const char *const val_names[V_N] = {
	[V_INTERP_HEAD] = "runtime_state.interpreters_head",
	[V_THREADS_HEAD] = "interpreter_state.threads_head",
	[V_TS_PREV] = "thread_state.prev",
	[V_TS_NEXT] = "thread_state.next",
	[V_TS_INTERP] = "thread_state.interp",
	[V_TS_FRAME] = "thread_state.current_frame",
	[V_TS_THREAD_ID] = "thread_state.thread_id",
	[V_TS_CHUNK] = "thread_state.datastack_chunk",
	[V_F_BACK] = "interpreter_frame.previous",
	[V_F_CODE] = "interpreter_frame.executable",
	[V_F_INSTR] = "interpreter_frame.instr_ptr",
	[V_F_LOCALSPLUS] = "interpreter_frame.localsplus",
	[V_F_OWNER] = "interpreter_frame.owner",
	[V_CO_FILENAME] = "code_object.filename",
	[V_CO_NAME] = "code_object.name",
	[V_CO_QUALNAME] = "code_object.qualname",
	[V_CO_LINETABLE] = "code_object.linetable",
	[V_CO_FIRSTLINENO] = "code_object.firstlineno",
	[V_CO_ARGCOUNT] = "code_object.argcount",
	[V_CO_ADAPTIVE] = "code_object.co_code_adaptive",
	[V_OB_TYPE] = "pyobject.ob_type",
	[V_TP_NAME] = "type_object.tp_name",
	[V_TP_FLAGS] = "type_object.tp_flags",
	[V_TP_BASICSIZE] = "type_object.tp_basicsize",
	[V_TP_DICTOFFSET] = "type_object.tp_dictoffset",
	[V_HT_CACHED_KEYS] = "heap_type_object.cached_keys",
	[V_DICT_KEYS] = "dict_object.ma_keys",
	[V_DICT_VALUES] = "dict_object.ma_values",
	[V_BYTES_SIZE] = "bytes_object.ob_size",
	[V_BYTES_DATA] = "bytes_object.ob_sval",
	[V_STR_STATE] = "unicode_object.state",
	[V_STR_LENGTH] = "unicode_object.length",
	[V_STR_ASCII] = "unicode_object.asciiobject_size",
	[V_STR_COMPACT] = "unicode_object.compactunicodeobject_size",
};

/* where one minor version's structure keeps each value; 0: not there */
struct dbg_pos {
	unsigned int minor;
	__u16 size; /* sizeof(_Py_DebugOffsets) */
	__u16 at[V_N];
};

static const struct dbg_pos positions[] = {
	{
		.minor = 13,
		.size = 584,
		.at = {
			[V_INTERP_HEAD] = 0x28, [V_THREADS_HEAD] = 0x48,
			[V_TS_PREV] = 0xa0, [V_TS_NEXT] = 0xa8,
			[V_TS_INTERP] = 0xb0,
			[V_TS_FRAME] = 0xb8, [V_TS_THREAD_ID] = 0xc0,
			[V_TS_CHUNK] = 0xd0,
			[V_F_BACK] = 0xe8, [V_F_CODE] = 0xf0,
			[V_F_INSTR] = 0xf8, [V_F_LOCALSPLUS] = 0x100,
			[V_F_OWNER] = 0x108, [V_CO_FILENAME] = 0x118,
			[V_CO_NAME] = 0x120, [V_CO_QUALNAME] = 0x128,
			[V_CO_LINETABLE] = 0x130, [V_CO_FIRSTLINENO] = 0x138,
			[V_CO_ARGCOUNT] = 0x140, [V_CO_ADAPTIVE] = 0x158,
			[V_OB_TYPE] = 0x168, [V_TP_NAME] = 0x178,
			[V_TP_FLAGS] = 0x188, [V_DICT_KEYS] = 0x1c8,
			[V_DICT_VALUES] = 0x1d0, [V_BYTES_SIZE] = 0x208,
			[V_BYTES_DATA] = 0x210, [V_STR_STATE] = 0x220,
			[V_STR_LENGTH] = 0x228, [V_STR_ASCII] = 0x230,
		},
	},
	{
		/* adds threads_main, stackpointer, tlbc, set and gen sections */
		.minor = 14,
		.size = 760,
		.at = {
			[V_INTERP_HEAD] = 0x28, [V_THREADS_HEAD] = 0x48,
			[V_TS_PREV] = 0xb8, [V_TS_NEXT] = 0xc0,
			[V_TS_INTERP] = 0xc8,
			[V_TS_FRAME] = 0xd0, [V_TS_THREAD_ID] = 0xd8,
			[V_TS_CHUNK] = 0xe8,
			[V_F_BACK] = 0x100, [V_F_CODE] = 0x108,
			[V_F_INSTR] = 0x110, [V_F_LOCALSPLUS] = 0x118,
			[V_F_OWNER] = 0x120, [V_CO_FILENAME] = 0x140,
			[V_CO_NAME] = 0x148, [V_CO_QUALNAME] = 0x150,
			[V_CO_LINETABLE] = 0x158, [V_CO_FIRSTLINENO] = 0x160,
			[V_CO_ARGCOUNT] = 0x168, [V_CO_ADAPTIVE] = 0x180,
			[V_OB_TYPE] = 0x198, [V_TP_NAME] = 0x1a8,
			[V_TP_FLAGS] = 0x1b8, [V_DICT_KEYS] = 0x218,
			[V_DICT_VALUES] = 0x220, [V_BYTES_SIZE] = 0x258,
			[V_BYTES_DATA] = 0x260, [V_STR_STATE] = 0x270,
			[V_STR_LENGTH] = 0x278, [V_STR_ASCII] = 0x280,
		},
	},
	{
		/* adds base_frame, GIL flags, heap types and more type fields */
		.minor = 15,
		.size = 888,
		.at = {
			[V_INTERP_HEAD] = 0x28, [V_THREADS_HEAD] = 0x48,
			[V_TS_PREV] = 0xb8, [V_TS_NEXT] = 0xc0,
			[V_TS_INTERP] = 0xc8,
			[V_TS_FRAME] = 0xd0, [V_TS_THREAD_ID] = 0xf0,
			[V_TS_CHUNK] = 0x100,
			[V_F_BACK] = 0x140, [V_F_CODE] = 0x148,
			[V_F_INSTR] = 0x150, [V_F_LOCALSPLUS] = 0x158,
			[V_F_OWNER] = 0x160, [V_CO_FILENAME] = 0x180,
			[V_CO_NAME] = 0x188, [V_CO_QUALNAME] = 0x190,
			[V_CO_LINETABLE] = 0x198, [V_CO_FIRSTLINENO] = 0x1a0,
			[V_CO_ARGCOUNT] = 0x1a8, [V_CO_ADAPTIVE] = 0x1c0,
			[V_OB_TYPE] = 0x1d8, [V_TP_NAME] = 0x1e8,
			[V_TP_FLAGS] = 0x1f8, [V_TP_BASICSIZE] = 0x200,
			[V_TP_DICTOFFSET] = 0x208, [V_HT_CACHED_KEYS] = 0x218,
			[V_DICT_KEYS] = 0x278, [V_DICT_VALUES] = 0x280,
			[V_BYTES_SIZE] = 0x2b8, [V_BYTES_DATA] = 0x2c0,
			[V_STR_STATE] = 0x2d0, [V_STR_LENGTH] = 0x2d8,
			[V_STR_ASCII] = 0x2e0, [V_STR_COMPACT] = 0x2e8,
		},
	},
};

/* what python/ reads with a constant offset: the target must agree */
static const struct {
	enum dbg_val v;
	__u64 want;
} constants[] = {
	{ V_TS_PREV, TS_PREV },		  { V_TS_NEXT, TS_NEXT },
	{ V_TS_INTERP, TS_INTERP },	  { V_OB_TYPE, OB_TYPE },
	{ V_TP_NAME, TP_NAME },		  { V_TP_FLAGS, TP_FLAGS },
	{ V_TP_BASICSIZE, TP_BASICSIZE }, { V_TP_DICTOFFSET, TP_DICTOFFSET },
	{ V_DICT_KEYS, DICT_KEYS },	  { V_DICT_VALUES, DICT_VALUES },
	{ V_BYTES_SIZE, BYTES_SIZE },	  { V_BYTES_DATA, BYTES_DATA },
	{ V_STR_STATE, STR_STATE },	  { V_STR_LENGTH, STR_LENGTH },
};

static const struct dbg_pos *positions_of(unsigned int minor)
{
	const struct dbg_pos *p = &positions[ARRAY_SIZE(positions) - 1];

	for (size_t i = 0; i < ARRAY_SIZE(positions); i++) {
		if (positions[i].minor == minor)
			return &positions[i];
	}
	/* newer than any known: the newest layout, checked by the caller */
	return minor > p->minor ? p : NULL;
}

/* are the fields a fixed-size read fetches inside it? */
static bool within(const __u64 *val, const enum dbg_val *v, size_t n,
		   size_t width, __u64 limit, enum dbg_val *bad)
{
	for (size_t i = 0; i < n; i++) {
		if (val[v[i]] + width > limit) {
			*bad = v[i];
			return false;
		}
	}
	return true;
}

/* the values a reader fetches in one piece must lie inside that piece */
static int check_bounds(const __u64 *val, enum dbg_val *bad)
{
	static const enum dbg_val code8[] = { V_CO_FILENAME, V_CO_NAME,
					      V_CO_QUALNAME, V_CO_LINETABLE };
	static const enum dbg_val code4[] = { V_CO_FIRSTLINENO, V_CO_ARGCOUNT };
	static const enum dbg_val far[] = {
		V_TS_FRAME,    V_TS_THREAD_ID, V_TS_CHUNK,     V_F_BACK,
		V_F_CODE,      V_F_INSTR,      V_F_LOCALSPLUS, V_F_OWNER,
		V_CO_ADAPTIVE, V_STR_ASCII,    V_STR_COMPACT,  V_HT_CACHED_KEYS,
	};

	if (!within(val, code8, ARRAY_SIZE(code8), 8, CODE_HDR, bad) ||
	    !within(val, code4, ARRAY_SIZE(code4), 4, CODE_HDR, bad) ||
	    !within(val, far, ARRAY_SIZE(far), 8, FIELD_MAX, bad))
		return -EPROTO;
	return 0;
}

int mt_py_debug_layout(const struct mt_py *py, unsigned int minor,
		       const struct layout *base, struct layout *lay, char *err,
		       size_t errlen)
{
	const struct dbg_pos *pos = positions_of(minor);
	__u8 dbg[DBG_MAX];
	__u64 val[V_N] = { 0 };
	enum dbg_val bad;

	if (!pos) {
		snprintf(err, errlen,
			 "CPython 3.%u: no _Py_DebugOffsets layout", minor);
		return -EPROTO;
	}
	if (mt_py_read(py, py->runtime, dbg, pos->size)) {
		snprintf(
			err, errlen,
			"process %d: CPython 3.%u _Py_DebugOffsets are unreadable",
			py->pid, minor);
		return -EFAULT;
	}
	for (size_t v = 0; v < V_N; v++) {
		if (pos->at[v])
			val[v] = get_u64(dbg, pos->at[v]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(constants); i++) {
		enum dbg_val v = constants[i].v;

		if (!pos->at[v] || val[v] == constants[i].want)
			continue;
		snprintf(
			err, errlen,
			"process %d: CPython 3.%u _Py_DebugOffsets: %s is %llu, not %llu",
			py->pid, minor, val_names[v],
			(unsigned long long)val[v],
			(unsigned long long)constants[i].want);
		return -EPROTO;
	}
	if (check_bounds(val, &bad)) {
		snprintf(
			err, errlen,
			"process %d: CPython 3.%u _Py_DebugOffsets: %s is %llu, beyond what is read",
			py->pid, minor, val_names[bad],
			(unsigned long long)val[bad]);
		return -EPROTO;
	}
	*lay = *base;
	lay->minor = minor;
	lay->rt_interp_head = val[V_INTERP_HEAD];
	lay->is_threads_head = val[V_THREADS_HEAD];
	lay->ts_thread_id = val[V_TS_THREAD_ID];
	lay->ts_frame = val[V_TS_FRAME];
	lay->ts_chunk = val[V_TS_CHUNK];
	lay->f_code = val[V_F_CODE];
	lay->f_back = val[V_F_BACK];
	lay->f_instr = val[V_F_INSTR];
	lay->f_localsplus = val[V_F_LOCALSPLUS];
	lay->f_owner = val[V_F_OWNER];
	lay->co_argcount = val[V_CO_ARGCOUNT];
	lay->co_firstlineno = val[V_CO_FIRSTLINENO];
	lay->co_filename = val[V_CO_FILENAME];
	lay->co_name = val[V_CO_NAME];
	lay->co_qualname = val[V_CO_QUALNAME];
	lay->co_linetable = val[V_CO_LINETABLE];
	lay->co_adaptive = val[V_CO_ADAPTIVE];
	lay->str_ascii_data = val[V_STR_ASCII];
	if (pos->at[V_STR_COMPACT])
		lay->str_compact_data = val[V_STR_COMPACT];
	if (pos->at[V_HT_CACHED_KEYS])
		lay->ht_cached_keys = val[V_HT_CACHED_KEYS];
	return 0;
}
