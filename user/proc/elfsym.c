// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc/elfsym.h"
#include "proc/mapfile.h"

#define VERSYM_HIDDEN 0x8000

/*
 * The Itanium C++ ABI's codes of the 64-bit integers on LP64: long,
 * unsigned long, long long, unsigned long long.
 */
static const char int64_token[] = "{int64}";
static const char int64_codes[] = "lmxy";

bool mt_elf_name_matches(const char *symname, const char *pattern)
{
	const size_t toklen = sizeof(int64_token) - 1;
	const char *s = symname, *p = pattern;

	while (*p) {
		if (!strncmp(p, int64_token, toklen)) {
			if (!*s || !strchr(int64_codes, *s))
				return false;
			s++;
			p += toklen;
			continue;
		}
		if (*s != *p)
			return false;
		s++;
		p++;
	}
	return *s == '\0' || *s == '@';
}

/*
 * File offset of vaddr. With bss_ok, a vaddr in the zero-filled tail of a
 * segment (.bss) has no file bytes and gets offset 0 (the ELF header, never
 * a symbol) instead of failing.
 */
static int vaddr_to_offset(Elf *elf, __u64 vaddr, bool bss_ok, __u64 *off)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
		if (bss_ok && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_memsz) {
			*off = 0;
			return 0;
		}
	}
	return -ENOENT;
}

/* .gnu.version of .dynsym: marks the non-default versions of a name */
static Elf_Data *find_versym(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

static bool type_wanted(int type, bool objects)
{
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	return objects && type == STT_OBJECT;
}

static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			Elf_Data *versym, bool objects,
			const char *const *names, size_t n, struct mt_sym *out,
			bool *is_default)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count;

	if (!data || !sh->sh_entsize)
		return;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		GElf_Versym vs;
		const char *name;
		bool dflt = true;
		int type;

		if (!gelf_getsym(data, (int)i, &sym) ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (!type_wanted(type, objects))
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		if (versym) {
			if (gelf_getversym(versym, (int)i, &vs))
				dflt = !(vs & VERSYM_HIDDEN);
		} else {
			/* .symtab spells versions: foo@V hidden, foo@@V default */
			const char *at = strchr(name, '@');

			dflt = !at || at[1] == '@';
		}
		for (size_t k = 0; k < n; k++) {
			if (!mt_elf_name_matches(name, names[k]))
				continue;
			if (out[k].vaddr && (is_default[k] || !dflt))
				continue;
			out[k].vaddr = sym.st_value;
			is_default[k] = dflt;
		}
	}
}

static int resolve(int fd, const char *path, const char *const *names, size_t n,
		   bool objects, struct mt_sym *out, char *err, size_t errlen)
{
	bool is_default[64] = { false };
	Elf_Data *versym;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *elf;
	int ret = 0;

	if (n > sizeof(is_default) / sizeof(is_default[0])) {
		snprintf(err, errlen, "%s: more than %zu names asked for", path,
			 sizeof(is_default) / sizeof(is_default[0]));
		return -E2BIG;
	}
	if (n)
		memset(out, 0, n * sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		ret = -ENOEXEC;
		goto out;
	}
	versym = find_versym(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			scan_symtab(elf, scn, &sh, versym, objects, names, n,
				    out, is_default);
		else if (sh.sh_type == SHT_SYMTAB)
			scan_symtab(elf, scn, &sh, NULL, objects, names, n, out,
				    is_default);
	}
	for (size_t k = 0; k < n; k++) {
		if (out[k].vaddr &&
		    vaddr_to_offset(elf, out[k].vaddr, objects, &out[k].offset))
			out[k].vaddr = 0; /* not in a loaded segment */
	}
out:
	if (elf)
		elf_end(elf);
	return ret;
}

static int resolve_path(const char *path, const char *const *names, size_t n,
			bool objects, struct mt_sym *out, char *err,
			size_t errlen)
{
	int fd = mt_mapfile_open_path(path, err, errlen);
	int ret;

	if (fd < 0)
		return fd;
	ret = resolve(fd, path, names, n, objects, out, err, errlen);
	close(fd);
	return ret;
}

int mt_elf_resolve(const char *path, const char *const *names, size_t n,
		   struct mt_sym *out, char *err, size_t errlen)
{
	return resolve_path(path, names, n, false, out, err, errlen);
}

int mt_elf_resolve_any(const char *path, const char *const *names, size_t n,
		       struct mt_sym *out, char *err, size_t errlen)
{
	return resolve_path(path, names, n, true, out, err, errlen);
}

int mt_elf_resolve_fd(int fd, const char *name, const char *const *names,
		      size_t n, struct mt_sym *out, char *err, size_t errlen)
{
	return resolve(fd, name, names, n, false, out, err, errlen);
}

int mt_elf_resolve_any_fd(int fd, const char *name, const char *const *names,
			  size_t n, struct mt_sym *out, char *err,
			  size_t errlen)
{
	return resolve(fd, name, names, n, true, out, err, errlen);
}
