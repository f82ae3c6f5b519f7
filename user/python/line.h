/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython line tables: which source line a bytecode offset belongs to. Pure
 * decoders over a copy of a code object's co_linetable.
 */
#ifndef __PYLINE_H
#define __PYLINE_H

#include <stddef.h>
#include <linux/types.h>

/*
 * Line of the instruction at byte offset addrq of the bytecode, as
 * PyCode_Addr2Line computes it: firstlineno when addrq < 0, -1 when the
 * instruction has no line or addrq lies past the table.
 *
 * mt_pyline_310: the 3.10 (PEP 626) table, (start delta, line delta) byte
 * pairs. mt_pyline_311: the 3.11+ location table (Objects/locations.md).
 */
int mt_pyline_310(const __u8 *tab, size_t len, int firstlineno, __s64 addrq);
int mt_pyline_311(const __u8 *tab, size_t len, int firstlineno, __s64 addrq);

#endif /* __PYLINE_H */
