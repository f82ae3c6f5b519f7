// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include "proc/probepoint.h"

/* instructions walked at most, and bytes */
#define WALK_INSNS 16
#define WALK_BYTES 64

/* registers by number (REX.R or REX.B as bit 3) */
enum { RAX = 0, R10 = 10, R11 = 11 };

const __u8 mt_endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* a register the function may write before its point: no argument's */
static bool scratch(unsigned int reg)
{
	return reg == RAX || reg == R10 || reg == R11;
}

/* the length of an instruction the kernel emulates at c (n bytes), or 0 */
static size_t emulated(const __u8 *c, size_t n)
{
	if (n >= 1 && ((c[0] >= 0x50 && c[0] <= 0x57) || c[0] == 0x90))
		return 1; /* push %reg, nop */
	if (n >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57)
		return 2; /* push %r8-%r15 */
	if (n >= 2 && ((c[0] >= 0x70 && c[0] <= 0x7f) || c[0] == 0xeb))
		return 2; /* jcc rel8, jmp rel8 */
	if (n >= 5 && (c[0] == 0xe8 || c[0] == 0xe9))
		return 5; /* call, jmp rel32 */
	if (n >= 6 && c[0] == 0x0f && c[1] >= 0x80 && c[1] <= 0x8f)
		return 6; /* jcc rel32 */
	return 0;
}

/*
 * The length of an instruction at c (n bytes) that leaves the argument
 * registers alone, adding to *sp what it moves the stack pointer down;
 * 0 for any other.
 */
static size_t passed(const __u8 *c, size_t n, __u32 *sp)
{
	__u8 rex = c[0];
	bool w = rex == 0x48 || rex == 0x4c;

	if (n >= 4 && rex == 0x48 && c[1] == 0x83 && c[2] == 0xec &&
	    c[3] < 0x80) {
		*sp += c[3]; /* sub $imm8,%rsp */
		return 4;
	}
	if (n >= 4 && rex == 0x48 && c[1] == 0x83 && c[2] == 0xc4 &&
	    c[3] >= 0x80) {
		*sp += 0x100 - c[3]; /* add $-imm8,%rsp */
		return 4;
	}
	if (n >= 7 && rex == 0x48 && c[1] == 0x81 && c[2] == 0xec &&
	    mt_code_s32(c + 3) > 0) {
		*sp += (__u32)mt_code_s32(c + 3); /* sub $imm32,%rsp */
		return 7;
	}
	/* mov disp32(%rip),%reg */
	if (n >= 7 && w && c[1] == 0x8b && (c[2] & 0xc7) == 0x05 &&
	    scratch(((rex & 4) << 1) | ((c[2] >> 3) & 7)))
		return 7;
	/* mov %fs:disp32,%rax (the stack protector's canary) */
	if (n >= 9 && rex == 0x64 && c[1] == 0x48 && c[2] == 0x8b &&
	    c[3] == 0x04 && c[4] == 0x25)
		return 9;
	/* mov %reg,disp8(%rsp) and disp32(%rsp): a store */
	if (n >= 5 && w && c[1] == 0x89 && (c[2] & 0xc7) == 0x44 &&
	    c[3] == 0x24)
		return 5;
	if (n >= 8 && w && c[1] == 0x89 && (c[2] & 0xc7) == 0x84 &&
	    c[3] == 0x24)
		return 8;
	if (n >= 2 && c[0] == 0x31 && c[1] == 0xc0)
		return 2; /* xor %eax,%eax */
	/* test %reg,%reg: the flags only */
	if (n >= 3 && (rex & 0xf0) == 0x40 && c[1] == 0x85 &&
	    (c[2] & 0xc0) == 0xc0)
		return 3;
	if (n >= 2 && c[0] == 0x85 && (c[1] & 0xc0) == 0xc0)
		return 2;
	return 0;
}

/*
 * Whether a relative branch anywhere in the function past its walked
 * prologue (from 'from' on) may land in (0, to]: every byte is read as a
 * branch's first, so data that looks like one refuses too.
 */
static bool lands_in(const __u8 *c, size_t len, size_t from, size_t to)
{
	for (size_t i = from; i < len; i++) {
		__s64 t;

		if (((c[i] >= 0x70 && c[i] <= 0x7f) || c[i] == 0xeb) &&
		    i + 2 <= len)
			t = (__s64)i + 2 + (__s8)c[i + 1];
		else if ((c[i] == 0xe8 || c[i] == 0xe9) && i + 5 <= len)
			t = (__s64)i + 5 + mt_code_s32(c + i + 1);
		else if (c[i] == 0x0f && i + 6 <= len && c[i + 1] >= 0x80 &&
			 c[i + 1] <= 0x8f)
			t = (__s64)i + 6 + mt_code_s32(c + i + 2);
		else
			continue;
		if (t > 0 && t <= (__s64)to)
			return true;
	}
	return false;
}

struct mt_probe_point mt_probe_point(const __u8 *code, size_t len, bool keep_sp)
{
	struct mt_probe_point entry = { 0, 0 }, p = { 0, 0 };

	if (len > sizeof(mt_endbr64))
		entry.off = p.off = mt_endbr64_at(code, len);
	for (int i = 0; i < WALK_INSNS && p.off < WALK_BYTES; i++) {
		const __u8 *c = code + p.off;
		size_t n = len - p.off, step;
		__u32 sp = p.sp;

		if (!n)
			break;
		step = emulated(c, n);
		if (step) {
			/* a branch at the point itself lands after it */
			if (p.off != entry.off &&
			    lands_in(code, len, p.off, p.off))
				return entry;
			return p;
		}
		step = passed(c, n, &sp);
		if (!step || (keep_sp && sp != p.sp) || sp % 8 ||
		    sp > MT_PROBE_SP_MAX)
			break;
		p.off += (__u32)step;
		p.sp = sp;
	}
	return entry;
}
