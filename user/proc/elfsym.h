/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Function and data symbols of an ELF file, by name, with libelf. Errors
 * come back in err buffers: a probe that may be missing is passed over
 * quietly by its caller, and the unit and fuzz tests read the text.
 */
#ifndef __ELFSYM_H
#define __ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "proc/probepoint.h"

struct mt_sym {
	__u64 vaddr; /* st_value; 0 if not found */
	__u64 offset; /* file offset, what a uprobe is placed at */
	__u64 size; /* st_size; 0 where not known */
};

/*
 * Does a symbol's name match a name asked for? A name asked for is the
 * symbol's own name, in which "{int64}" stands for the mangled code of any
 * 64-bit integer type (l, m, x, y): C++ names whose parameters went from
 * int64_t to size_t between releases are found by what they are. A
 * versioned name ("cudaMalloc@@libcudart.so.13") matches its plain name.
 */
bool mt_elf_name_matches(const char *symname, const char *pattern);

/*
 * Look up n function names (as mt_elf_name_matches) in .dynsym and .symtab
 * of the file at path; of several versions the default one wins, of
 * several symbols matching a pattern the first. Not-found names get vaddr
 * 0. Only a regular file is read, and its open cannot block. Returns 0, or
 * -errno with a message in err (errlen bytes).
 */
int mt_elf_resolve(const char *path, const char *const *names, size_t n,
		   struct mt_sym *out, char *err, size_t errlen);

/*
 * mt_elf_resolve that also finds data (STT_OBJECT) symbols such as
 * _PyRuntime. A data symbol in .bss has no file bytes: it keeps its vaddr
 * and gets offset 0.
 */
int mt_elf_resolve_any(const char *path, const char *const *names, size_t n,
		       struct mt_sym *out, char *err, size_t errlen);

/*
 * The same for a file already open as fd (the file a process maps), read
 * through that descriptor; name is what messages call it.
 */
int mt_elf_resolve_fd(int fd, const char *name, const char *const *names,
		      size_t n, struct mt_sym *out, char *err, size_t errlen);
int mt_elf_resolve_any_fd(int fd, const char *name, const char *const *names,
			  size_t n, struct mt_sym *out, char *err,
			  size_t errlen);

/*
 * Where a uprobe on the function at file offset off, size bytes long, of
 * the file open as fd goes (proc/probepoint.h), from off: a point the
 * kernel emulates, past the instructions before it that leave the
 * arguments alone. A size of 0 (not known) or above 64 KiB gives only a
 * leading endbr64's skip; a file that cannot be read there, the entry.
 */
struct mt_probe_point mt_elf_probe_point(int fd, __u64 off, __u64 size,
					 bool keep_sp);

/*
 * The function that the function named wrapper hands its call on to, in the
 * file open as fd (name is what messages call it), for a build whose symbol
 * tables no longer name the callee: stripped Debian CPython 3.13 and 3.14
 * export PyErr_SetObject, which moves its arguments into place (register
 * moves, the thread state from the thread pointer) and jumps (jmp rel32) to
 * the _PyErr_SetObject they keep local. Only that x86-64 form is followed,
 * to the start of a function in the same section; no guess is made.
 * Returns 0 with out set, 0 with out->vaddr 0 when the file defines no
 * wrapper, -ENOEXEC with a message in err when its code is of another form,
 * or -errno with err set.
 */
int mt_elf_tail_target_fd(int fd, const char *name, const char *wrapper,
			  struct mt_sym *out, char *err, size_t errlen);

#endif /* __ELFSYM_H */
