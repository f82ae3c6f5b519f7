// SPDX-License-Identifier: GPL-2.0
/*
 * A seed for fuzz_elf, built as a shared library: PyErr_SetObject hands
 * its arguments, swapped, to a function of its own with a jump, the shape
 * mt_elf_tail_target_fd follows in Debian's CPython. Never run.
 */
#include <stdint.h>

int PyErr_SetObject(void *type, void *value);
int _PyRuntime[64];
volatile uintptr_t mt_seed_sink;

/* hidden: reached by a jump in this file, not through the PLT */
__attribute__((noinline, visibility("hidden"))) int mt_seed_set(void *value,
								void *type)
{
	mt_seed_sink = (uintptr_t)value ^ (uintptr_t)type;
	return 0;
}

/* aligned away from its callee: far enough for a jmp rel32 */
__attribute__((aligned(256))) int PyErr_SetObject(void *type, void *value)
{
	return mt_seed_set(value, type);
}
