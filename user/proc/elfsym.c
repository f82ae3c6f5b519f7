// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
 * a symbol) instead of failing. A segment that claims bytes past the end of
 * the file gives none: a probe there would be refused by the kernel, after
 * we had called the symbol found.
 */
static int vaddr_to_offset(Elf *elf, __u64 vaddr, bool bss_ok, __u64 *off)
{
	size_t nph, size = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph) || !elf_rawfile(elf, &size))
		return -EINVAL;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			ph.p_filesz = 0;
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
			out[k].size = sym.st_size;
			is_default[k] = dflt;
		}
	}
}

/* libelf's handle of the ELF file open as fd in *elf; -errno with err */
static int elf_open(int fd, const char *path, Elf **elf, char *err,
		    size_t errlen)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	*elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		if (*elf)
			elf_end(*elf);
		return -ENOEXEC;
	}
	return 0;
}

/* names looked up in elf's symbol tables, into out (zeroed by the caller) */
static void lookup(Elf *elf, const char *const *names, size_t n, bool objects,
		   struct mt_sym *out, bool *is_default)
{
	Elf_Data *versym = find_versym(elf);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

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
}

static int resolve(int fd, const char *path, const char *const *names, size_t n,
		   bool objects, struct mt_sym *out, char *err, size_t errlen)
{
	bool is_default[64] = { false };
	Elf *elf;
	int ret;

	if (n > sizeof(is_default) / sizeof(is_default[0])) {
		snprintf(err, errlen, "%s: more than %zu names asked for", path,
			 sizeof(is_default) / sizeof(is_default[0]));
		return -E2BIG;
	}
	if (n)
		memset(out, 0, n * sizeof(*out));
	ret = elf_open(fd, path, &elf, err, errlen);
	if (ret)
		return ret;
	lookup(elf, names, n, objects, out, is_default);
	elf_end(elf);
	return 0;
}

/*
 * The length of one instruction at p (n bytes there) of those a thin
 * wrapper puts its callee's arguments in place with, as Debian's CPython
 * 3.13 to 3.15 PyErr_SetObject does; 0 for any other instruction.
 */
static size_t arg_move_len(const unsigned char *p, size_t n)
{
	/* mov %r64,%r64: REX.W (with any R and B), 89, ModRM mod 11 */
	if (n >= 3 && (p[0] & 0xfa) == 0x48 && p[1] == 0x89 &&
	    (p[2] & 0xc0) == 0xc0)
		return 3;
	/*
	 * mov %fs:disp32,%r64: the thread state, from the thread pointer.
	 * fs, REX.W (any R), 8b, ModRM mod 00 rm 100, SIB base none, disp32.
	 */
	if (n >= 9 && p[0] == 0x64 && (p[1] & 0xfb) == 0x48 && p[2] == 0x8b &&
	    (p[3] & 0xc7) == 0x04 && p[4] == 0x25)
		return 9;
	return 0;
}

/* the most of a function read to place its probe */
#define PROBE_FN_MAX (64 * 1024)

struct mt_probe_point mt_elf_probe_point(int fd, __u64 off, __u64 size,
					 bool keep_sp)
{
	struct mt_probe_point p = { 0, 0 };
	__u8 e[sizeof(mt_endbr64)], *b;

	if (!size || size > PROBE_FN_MAX) {
		/* where the function ends is not known: its endbr64 only */
		if (pread(fd, e, sizeof(e), (off_t)off) == (ssize_t)sizeof(e))
			p.off = mt_endbr64_at(e, sizeof(e));
		return p;
	}
	b = malloc(size);
	if (b && pread(fd, b, size, (off_t)off) == (ssize_t)size)
		p = mt_probe_point(b, size, keep_sp);
	free(b);
	return p;
}

/* the executable section holding vaddr, with its bytes; NULL if none */
static Elf_Data *text_at(Elf *elf, __u64 vaddr, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	Elf_Data *d;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, sh) || sh->sh_type != SHT_PROGBITS ||
		    !(sh->sh_flags & SHF_EXECINSTR) || vaddr < sh->sh_addr ||
		    vaddr >= sh->sh_addr + sh->sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		return d && d->d_buf && d->d_size == sh->sh_size ? d : NULL;
	}
	return NULL;
}

/*
 * Where the wrapper at vaddr jumps: after endbr64 and argument moves, a
 * jmp rel32 to the start of a function in the same section. A jump into
 * the PLT (another section) or, in a build that marks function entries
 * with endbr64, to a place without one (inside a function) is refused,
 * as is any other code: a wrong probe would be worse than none.
 */
static int tail_target(Elf *elf, __u64 vaddr, __u64 *target)
{
	const unsigned char *text, *p;
	size_t n, i, len;
	bool marked;
	GElf_Shdr sh;
	Elf_Data *d;
	__u64 t;

	d = text_at(elf, vaddr, &sh);
	if (!d)
		return -ENOEXEC;
	text = d->d_buf;
	p = text + (vaddr - sh.sh_addr);
	n = sh.sh_addr + sh.sh_size - vaddr;
	if (n > 64)
		n = 64;
	i = mt_endbr64_at(p, n);
	marked = i > 0;
	while ((len = arg_move_len(p + i, n - i)))
		i += len;
	if (n - i < 5 || p[i] != 0xe9)
		return -ENOEXEC;
	t = vaddr + i + 5 + (__u64)(__s64)mt_code_s32(p + i + 1);
	if (t < sh.sh_addr || t >= sh.sh_addr + sh.sh_size)
		return -ENOEXEC;
	if (marked && !mt_endbr64_at(text + (t - sh.sh_addr),
				     sh.sh_addr + sh.sh_size - t))
		return -ENOEXEC;
	*target = t;
	return 0;
}

int mt_elf_tail_target_fd(int fd, const char *name, const char *wrapper,
			  struct mt_sym *out, char *err, size_t errlen)
{
	bool is_default = false;
	struct mt_sym w = { 0 };
	Elf *elf;
	int ret;

	*out = (struct mt_sym){ 0 };
	ret = elf_open(fd, name, &elf, err, errlen);
	if (ret)
		return ret;
	lookup(elf, &wrapper, 1, false, &w, &is_default);
	if (!w.vaddr)
		goto out;
	if (tail_target(elf, w.vaddr, &out->vaddr) ||
	    vaddr_to_offset(elf, out->vaddr, false, &out->offset)) {
		*out = (struct mt_sym){ 0 };
		snprintf(err, errlen,
			 "%s: %s's code is not a jump to the function it "
			 "wraps that we can follow",
			 name, wrapper);
		ret = -ENOEXEC;
	}
out:
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
