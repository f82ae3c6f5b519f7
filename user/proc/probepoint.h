/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where in a function its entry probe goes, so that the trap is one the
 * kernel emulates. An x86-64 uprobe emulates a push, a nop, a jump or a
 * call in the trap itself; any other instruction it copies out of line
 * and single-steps, about fifteen times dearer (bench/traps.sh: 0.8 us
 * against 12 us a hit here). Builds begin functions with endbr64 (CET),
 * a stack frame (sub $N,%rsp) or a load of a global (mov G(%rip),%rax),
 * all single-stepped: torch 2.14's c10 reporters begin so.
 */
#ifndef __PROBEPOINT_H
#define __PROBEPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

/*
 * endbr64, which CET builds begin functions with: it marks where an
 * indirect branch may land, and the kernel single-steps it
 */
extern const __u8 mt_endbr64[4];

/* the length of the endbr64 that the n bytes of code begin with: 4, or 0 */
static inline size_t mt_endbr64_at(const __u8 *code, size_t n)
{
	if (n < sizeof(mt_endbr64) ||
	    memcmp(code, mt_endbr64, sizeof(mt_endbr64)))
		return 0;
	return sizeof(mt_endbr64);
}

/* the signed 32-bit displacement or immediate in x86-64 code at p */
static inline __s32 mt_code_s32(const __u8 *p)
{
	__s32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* the most a point's sp may be: what a cookie carries (memtrace.h) */
#define MT_PROBE_SP_MAX (0xfff * 8)

struct mt_probe_point {
	__u32 off; /* from the function's start */
	__u32 sp; /* bytes the stack pointer moved down by then */
};

/*
 * The first instruction the kernel emulates that the function, whose
 * code is the len bytes at code (all of it), reaches in a straight line
 * from its entry through instructions known to leave the argument
 * registers alone: endbr64, sub $N,%rsp, loads into rax, r10 or r11,
 * stores to the stack, test and xor. Only those exact encodings are
 * passed; no branch in the function may land past the entry and up to
 * the point (the probe would fire twice a call). keep_sp: a return probe
 * goes there too and needs the return address at the stack pointer, so
 * nothing that moves it is passed. Where no such point is found, the
 * point is past a leading endbr64 (which only marks where an indirect
 * call may land) with code after it, else the entry: always inside the
 * function. Never fails.
 */
struct mt_probe_point mt_probe_point(const __u8 *code, size_t len,
				     bool keep_sp);

#endif /* __PROBEPOINT_H */
