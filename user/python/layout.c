// SPDX-License-Identifier: GPL-2.0
/* The per-version offsets of python/layout.h, one entry a minor version. */
#include "python/layout.h"
#include "python/pyproc.h"

static const struct layout layouts[] = {
	{
		.minor = 10,
		.rt_interp_head = 32,
		.rt_tss = 584,
		.is_threads_head = 8,
		.ts_thread_id = 176,
		.ts_frame = 24,
		.cframe_cur = -1,
		.f_code = 32,
		.f_back = 24,
		.f_instr = 96,
		.f_localsplus = 352,
		.f_owner = MT_PY_NO_OWNER,
		.owner_cstack_min = 0,
		.co_argcount = 16,
		.co_flags = 36,
		.co_firstlineno = 40,
		.co_filename = 104,
		.co_name = 112,
		.co_qualname = 112, /* no co_qualname: co_name */
		.co_linetable = 120,
		.co_adaptive = 0, /* f_lasti is an index, not a pointer */
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.ht_cached_keys = 872,
	},
	{
		.minor = 11,
		.rt_interp_head = 40,
		.rt_tss = 592,
		.is_threads_head = 16,
		.ts_thread_id = 152,
		.ts_frame = 56,
		.ts_chunk = 296,
		.cframe_cur = 8,
		.f_code = 32,
		.f_back = 48,
		.f_instr = 56,
		.f_localsplus = 72,
		.f_owner = 69,
		.owner_cstack_min = 0, /* entries are marked by is_entry */
		.co_argcount = 56,
		.co_flags = 48,
		.co_firstlineno = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_adaptive = 184,
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.ht_cached_keys = 872,
	},
	{
		.minor = 12,
		.rt_interp_head = 40,
		.rt_tss = 1544,
		.is_threads_head = 72,
		.ts_thread_id = 136,
		.ts_frame = 56,
		.ts_chunk = 232,
		.cframe_cur = 0,
		.f_code = 0,
		.f_back = 8,
		.f_instr = 56,
		.f_localsplus = 72,
		.f_owner = 70,
		.owner_cstack_min = 3,
		.co_argcount = 52,
		.co_flags = 48,
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_adaptive = 192,
		.str_ascii_data = 40,
		.str_compact_data = 56,
		.ht_cached_keys = 880,
	},
	/*
	 * 3.13+: the frame, code, thread and string offsets come from the
	 * target's _Py_DebugOffsets (dbgoff.c); these are the rest.
	 */
	{
		.minor = 13,
		.rt_tss = 2160,
		.cframe_cur = -1,
		.owner_cstack_min = 3,
		.co_flags = 48,
		.str_compact_data = 56,
		.ht_cached_keys = 880,
	},
	/* owner 3 (INTERPRETER) and 4 (CSTACK) are shims */
	{
		.minor = 14,
		.rt_tss = 2336,
		.cframe_cur = -1,
		.owner_cstack_min = 3,
		.tagged = true,
		.co_flags = 48,
		.str_compact_data = 56,
		.ht_cached_keys = 880,
	},
	/* no autoTSSkey: the thread state is a thread-local (tls.c) */
	{
		.minor = 15,
		.rt_tss = 0,
		.cframe_cur = -1,
		.owner_cstack_min = 3,
		.tagged = true,
		.co_flags = 48,
		.str_compact_data = 56,
		.ht_cached_keys = 888,
	},
};

const struct layout *mt_py_layout(unsigned int minor)
{
	if (minor < 10)
		return NULL;
	if (minor > MT_PY_MINOR_MAX)
		minor = MT_PY_MINOR_MAX;
	return &layouts[minor - 10];
}
