/* SPDX-License-Identifier: GPL-2.0 */
/* Function and data symbols of an ELF file, by name, with libelf. */
#ifndef __ELFSYM_H
#define __ELFSYM_H

#include <stddef.h>
#include <linux/types.h>

struct mt_sym {
	__u64 vaddr; /* st_value; 0 if not found */
	__u64 offset; /* file offset, what a uprobe is placed at */
};

/*
 * Look up n function names in .dynsym and .symtab of the file at path. A
 * versioned name ("cudaMalloc@@libcudart.so.13") matches its plain name; of
 * several versions the default one wins. Not-found names get vaddr 0.
 * Returns 0, or -errno with a message in err (errlen bytes).
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

#endif /* __ELFSYM_H */
