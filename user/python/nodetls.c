// SPDX-License-Identifier: GPL-2.0
/*
 * libtorch_cpu's autograd thread-locals, found in its code
 * (docs/autograd-tls.md). The library is stripped and the variables are
 * static, so each is reached from an exported function that touches it:
 *
 * - the evaluating Node: Node::assign_parent() calls the accessor of its
 *   c10::ThreadLocal through a .bss slot that a static initializer fills
 *   (lea ACC(%rip),%reg; mov %reg,SLOT(%rip)); the accessor computes the
 *   variable's address with __tls_get_addr and adds an immediate;
 * - ATen's sequence counter: at::sequence_number::peek() loads it the
 *   same way;
 * - the forward thread's id, at::RecordFunction's: currentThreadId()
 *   loads it the same way;
 * - Node::sequence_nr_ and Node::thread_id_: CopySlices' constructor
 *   stores what get_and_increment() and currentThreadId() return into
 *   this.
 *
 * Only the x86-64 forms seen in Debian's torch 1.13, 2.6 and 2.14 are
 * accepted; anything else is -ENOEXEC, and the tracer keeps its probes.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "proc/elfsym.h"
#include "proc/probepoint.h"
#include "python/nodetls.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* bytes of a function decoded, at most */
#define FN_BYTES 96
/* bytes of CopySlices' constructor searched for its Node() */
#define CTOR_BYTES 512

static const char assign_parent[] = "_ZN5torch8autograd4Node13assign_parentEv";
static const char peek[] = "_ZN2at15sequence_number4peekEv";
static const char get_and_increment[] =
	"_ZN2at15sequence_number17get_and_incrementEv";
static const char current_thread_id[] =
	"_ZN2at14RecordFunction15currentThreadIdEv";
/* its parameters change with each release: one name a release */
static const char *const copy_slices[] = {
	"_ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt8functionIFS3_S5_EESt10shared_ptrINS0_4NodeEE",
	"_ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt10unique_ptrINS0_8ViewFuncESt14default_deleteIS8_EESt10shared_ptrINS0_4NodeEE",
	"_ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt10unique_ptrINS0_8ViewFuncESt14default_deleteIS8_EEN3c1013intrusive_ptrINS0_4NodeENSC_6detail34intrusive_target_default_null_typeISE_EEEE",
};

/* the file, mapped, and where its loadable segments put their bytes */
struct image {
	Elf *elf;
	const __u8 *b;
	size_t n;
	GElf_Phdr load[16];
	size_t nload;
};

/* the file's code at vaddr, len bytes of it, or NULL */
static const __u8 *at(const struct image *im, __u64 va, size_t len)
{
	for (size_t i = 0; i < im->nload; i++) {
		const GElf_Phdr *p = &im->load[i];

		if (!(p->p_flags & PF_X) || va < p->p_vaddr ||
		    va - p->p_vaddr > p->p_filesz ||
		    p->p_filesz - (va - p->p_vaddr) < len ||
		    p->p_offset + p->p_filesz > im->n)
			continue;
		return im->b + p->p_offset + (va - p->p_vaddr);
	}
	return NULL;
}

/* the code at va past its endbr64, len bytes; NULL if not in the file */
static const __u8 *code_at(const struct image *im, __u64 *va, size_t len)
{
	const __u8 *c = at(im, *va, len + sizeof(mt_endbr64));
	size_t skip;

	if (!c)
		return NULL;
	skip = mt_endbr64_at(c, len + sizeof(mt_endbr64));
	*va += skip;
	return c + skip;
}

/*
 * The GOT pair of a __tls_get_addr call in code (at va): local-dynamic
 * lea PAIR(%rip),%rdi; call, or general-dynamic, the same padded to
 * 16 bytes with data16 prefixes. Returns the offset of the instruction
 * after the call, 0 if there is none.
 */
static size_t tls_call(const __u8 *c, size_t len, __u64 va, __u64 *got)
{
	static const __u8 lea_rdi[] = { 0x48, 0x8d, 0x3d };
	static const __u8 gd_pad[] = { 0x66, 0x66, 0x48 };

	for (size_t i = 0; i + 7 + 3 + 5 <= len; i++) {
		size_t call = i + 7;

		if (memcmp(c + i, lea_rdi, sizeof(lea_rdi)))
			continue;
		*got = va + i + 7 + (__s64)mt_code_s32(c + i + 3);
		/* general-dynamic: data16 lea; data16 data16 rex.W call */
		if (i && c[i - 1] == 0x66 && !memcmp(c + call, gd_pad, 3))
			call += 3;
		if (c[call] != 0xe8)
			return 0;
		return call + 5;
	}
	return 0;
}

/* the .bss slot of the accessor that assign_parent() calls */
static bool accessor_slot(const struct image *im, __u64 fn, __u64 *slot)
{
	const __u8 *c = code_at(im, &fn, FN_BYTES);

	for (size_t i = 0; c && i + 6 <= FN_BYTES; i++) {
		/* call *disp32(%rip) */
		if (c[i] == 0xff && c[i + 1] == 0x15) {
			*slot = fn + i + 6 + (__s64)mt_code_s32(c + i + 2);
			return true;
		}
	}
	return false;
}

/*
 * Stores of a lea'd address into slot in [lo, hi) of the file's code:
 * lea ACC(%rip),%reg; mov %reg,SLOT(%rip), both with REX.W. Returns 1
 * with *acc set, 0 if none, -1 if two disagree.
 */
static int store_in(const struct image *im, __u64 lo, __u64 hi, __u64 slot,
		    __u64 *acc)
{
	int found = 0;

	for (size_t s = 0; s < im->nload; s++) {
		const GElf_Phdr *p = &im->load[s];
		__u64 from = lo > p->p_vaddr ? lo : p->p_vaddr;
		__u64 to = p->p_vaddr + p->p_filesz;
		const __u8 *c;

		if (hi < to)
			to = hi;
		if (!(p->p_flags & PF_X) || to <= from || to - from < 14)
			continue;
		c = at(im, from, to - from);
		for (size_t i = 7; c && i + 7 <= to - from; i++) {
			__u8 modrm = c[i + 2];
			__u64 a;

			/* mov %reg,disp32(%rip) into slot */
			if (c[i] != 0x48 || c[i + 1] != 0x89 ||
			    (modrm & 0xc7) != 0x05 ||
			    from + i + 7 + (__s64)mt_code_s32(c + i + 3) !=
				    slot)
				continue;
			/* lea disp32(%rip),%reg just before, same reg */
			if (c[i - 7] != 0x48 || c[i - 6] != 0x8d ||
			    c[i - 5] != modrm)
				continue;
			a = from + i + (__s64)mt_code_s32(c + i - 4);
			if (found && a != *acc)
				return -1;
			*acc = a;
			found = 1;
		}
	}
	return found;
}

/*
 * Where the static initializers lie: the span of .init_array's entries
 * (the file holds them as well as their relocations), which GCC's
 * .text.startup and the linker keep together, plus INIT_TAIL for the
 * last one. 0 when the file has none.
 */
#define INIT_TAIL (64 * 1024)
static int init_span(const struct image *im, __u64 *lo, __u64 *hi)
{
	Elf_Scn *scn = NULL;

	*lo = ~0ULL;
	*hi = 0;
	while ((scn = elf_nextscn(im->elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_INIT_ARRAY ||
		    !d || !d->d_buf)
			continue;
		for (size_t i = 0; i + 8 <= d->d_size; i += 8) {
			__u64 v;

			memcpy(&v, (const __u8 *)d->d_buf + i, sizeof(v));
			if (!v || !at(im, v, 1))
				continue;
			if (v < *lo)
				*lo = v;
			if (v > *hi)
				*hi = v;
		}
	}
	if (*lo > *hi)
		return 0;
	*hi += INIT_TAIL;
	return 1;
}

/*
 * The accessor, from the static initializer that puts it in slot. The
 * initializers' span is searched first: the whole code is 80 MiB of
 * libtorch_cpu, and reading it was a fifth of the tracer's start. The
 * one store found wins; two that disagree are no answer.
 */
static bool accessor_of(const struct image *im, __u64 slot, __u64 *acc)
{
	__u64 lo, hi;
	int r = 0;

	if (init_span(im, &lo, &hi))
		r = store_in(im, lo, hi, slot, acc);
	if (!r)
		r = store_in(im, 0, ~0ULL, slot, acc);
	return r > 0;
}

/*
 * The immediate the accessor adds to the block before its first ret,
 * past an add $imm8,%rsp: add $imm32,%rax, or lea imm32(%reg),%rax
 */
static bool accessor_imm(const __u8 *c, size_t from, __u64 *imm)
{
	for (size_t r = from; r < FN_BYTES; r++) {
		size_t e = r;

		if (c[r] != 0xc3)
			continue;
		if (e >= from + 4 && c[e - 4] == 0x48 && c[e - 3] == 0x83 &&
		    c[e - 2] == 0xc4)
			e -= 4;
		if (e >= from + 6 && c[e - 6] == 0x48 && c[e - 5] == 0x05) {
			*imm = (__u64)(__s64)mt_code_s32(c + e - 4);
			return true;
		}
		/* mod 10, reg rax, no SIB */
		if (e >= from + 7 && c[e - 7] == 0x48 && c[e - 6] == 0x8d &&
		    (c[e - 5] & 0xf8) == 0x80 && (c[e - 5] & 7) != 4) {
			*imm = (__u64)(__s64)mt_code_s32(c + e - 4);
			return true;
		}
		return false;
	}
	return false;
}

/*
 * The variable's load after __tls_get_addr returned the block in %rax,
 * past a copy of %rax to another register: mov (%rax),%reg or
 * mov imm32(%rax),%reg (peek() and currentThreadId())
 */
static bool load_imm(const __u8 *c, size_t after, __u64 *imm)
{
	/* mov %rax,%reg */
	if ((c[after] & 0xfe) == 0x48 && c[after + 1] == 0x89 &&
	    (c[after + 2] & 0xf8) == 0xc0)
		after += 3;
	/* REX.W, with or without REX.R; rm rax, no SIB */
	if ((c[after] & 0xfb) != 0x48 || c[after + 1] != 0x8b ||
	    (c[after + 2] & 7) != 0)
		return false;
	if ((c[after + 2] & 0xc0) == 0x00) {
		*imm = 0;
		return true;
	}
	if ((c[after + 2] & 0xc0) != 0x80)
		return false;
	*imm = (__u64)(__s64)mt_code_s32(c + after + 3);
	return true;
}

/* the name of the dynamic symbol a relocation at slot binds, or NULL */
static const char *slot_symbol(const struct image *im, __u64 slot)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(im->elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Shdr sh, symsh;
		Elf_Scn *symscn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !d ||
		    !sh.sh_entsize)
			continue;
		symscn = elf_getscn(im->elf, sh.sh_link);
		if (!symscn || !gelf_getshdr(symscn, &symsh))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			Elf_Data *sd = elf_getdata(symscn, NULL);
			GElf_Rela r;
			GElf_Sym sym;

			if (!gelf_getrela(d, (int)i, &r) || r.r_offset != slot)
				continue;
			if (!sd ||
			    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
				return NULL;
			return elf_strptr(im->elf, symsh.sh_link, sym.st_name);
		}
	}
	return NULL;
}

/* does a call to target reach fn (at vaddr), or its PLT stub */
static bool calls_fn(const struct image *im, __u64 target, __u64 vaddr,
		     const char *fn)
{
	const __u8 *c;
	const char *sym;
	size_t i;

	if (target == vaddr)
		return true;
	/* [endbr64] [bnd] jmp *disp32(%rip) */
	c = at(im, target, sizeof(mt_endbr64) + 7);
	if (!c)
		return false;
	i = mt_endbr64_at(c, sizeof(mt_endbr64) + 7);
	if (c[i] == 0xf2)
		i++;
	if (c[i] != 0xff || c[i + 1] != 0x25)
		return false;
	sym = slot_symbol(im, target + i + 6 + (__s64)mt_code_s32(c + i + 2));
	return sym && mt_elf_name_matches(sym, fn);
}

/*
 * A field of Node that the inlined Node() sets from a call:
 * call fn (or its PLT stub); mov %rax,disp8(%reg)
 */
static bool field_off(const struct image *im, __u64 ctor, __u64 vaddr,
		      const char *fn, __u32 *off)
{
	const __u8 *c = code_at(im, &ctor, CTOR_BYTES);

	for (size_t i = 0; c && i + 9 <= CTOR_BYTES; i++) {
		__u64 target = ctor + i + 5 + (__s64)mt_code_s32(c + i + 1);

		if (c[i] != 0xe8 || !calls_fn(im, target, vaddr, fn))
			continue;
		/* mod 01, reg rax, no SIB */
		if (c[i + 5] != 0x48 || c[i + 6] != 0x89 ||
		    (c[i + 7] & 0xf8) != 0x40 || (c[i + 7] & 7) == 4)
			return false;
		*off = c[i + 8];
		return true;
	}
	return false;
}

/* the functions looked up, in this order, then copy_slices[] */
enum { S_ASSIGN_PARENT, S_PEEK, S_GAI, S_TID, S_CTORS };

/* a thread-local that fn loads right after __tls_get_addr */
static bool tls_load(const struct image *im, __u64 fn, __u64 *got, __u64 *imm)
{
	const __u8 *c = code_at(im, &fn, FN_BYTES);
	size_t after = c ? tls_call(c, FN_BYTES - 16, fn, got) : 0;

	return after && load_imm(c, after, imm);
}

static int decode(const struct image *im, const struct mt_sym *syms,
		  struct mt_node_tls *out, const char **why)
{
	__u64 slot = 0, acc = 0, ctor = 0;
	const __u8 *c;
	size_t after;

	out->fn_vaddr = syms[S_ASSIGN_PARENT].vaddr;
	out->fn_offset = syms[S_ASSIGN_PARENT].offset;
	*why = "no accessor slot in Node::assign_parent()";
	if (!accessor_slot(im, out->fn_vaddr, &slot))
		return -ENOEXEC;
	*why = "no static initializer of the Node's accessor";
	if (!accessor_of(im, slot, &acc))
		return -ENOEXEC;
	*why = "the Node's accessor is not local- or general-dynamic TLS";
	c = code_at(im, &acc, FN_BYTES);
	after = c ? tls_call(c, FN_BYTES, acc, &out->node_got) : 0;
	if (!after || !accessor_imm(c, after, &out->node_imm))
		return -ENOEXEC;
	*why = "sequence_number::peek() is not of a known form";
	if (!tls_load(im, syms[S_PEEK].vaddr, &out->ctr_got, &out->ctr_imm))
		return -ENOEXEC;
	*why = "RecordFunction::currentThreadId() is not of a known form";
	if (!tls_load(im, syms[S_TID].vaddr, &out->tid_got, &out->tid_imm))
		return -ENOEXEC;
	for (size_t i = S_CTORS; i < S_CTORS + ARRAY_SIZE(copy_slices); i++)
		if (syms[i].vaddr)
			ctor = syms[i].vaddr;
	*why = "no Node() with get_and_increment() in CopySlices()";
	if (!ctor || !field_off(im, ctor, syms[S_GAI].vaddr, get_and_increment,
				&out->seq_nr_off))
		return -ENOEXEC;
	*why = "no Node() with currentThreadId() in CopySlices()";
	if (!field_off(im, ctor, syms[S_TID].vaddr, current_thread_id,
		       &out->thread_id_off))
		return -ENOEXEC;
	return 0;
}

int mt_node_tls_find_fd(int fd, const char *name, struct mt_node_tls *out,
			char *err, size_t errlen)
{
	const char *names[S_CTORS + ARRAY_SIZE(copy_slices)] = {
		[S_ASSIGN_PARENT] = assign_parent,
		[S_PEEK] = peek,
		[S_GAI] = get_and_increment,
		[S_TID] = current_thread_id,
	};
	struct mt_sym syms[ARRAY_SIZE(names)];
	struct image im = { 0 };
	const char *why = NULL;
	size_t nph;
	int ret;

	for (size_t i = 0; i < ARRAY_SIZE(copy_slices); i++)
		names[S_CTORS + i] = copy_slices[i];
	ret = mt_elf_resolve_fd(fd, name, names, ARRAY_SIZE(names), syms, err,
				errlen);
	if (ret)
		return ret;
	if (!syms[S_ASSIGN_PARENT].vaddr || !syms[S_PEEK].vaddr ||
	    !syms[S_GAI].vaddr || !syms[S_TID].vaddr) {
		snprintf(err, errlen, "%s: no %s", name,
			 !syms[S_ASSIGN_PARENT].vaddr ?
				 "Node::assign_parent()" :
			 !syms[S_TID].vaddr ?
				 "RecordFunction::currentThreadId()" :
				 "at::sequence_number");
		return -ENOEXEC;
	}
	/* mt_elf_resolve_fd set the library's version */
	im.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!im.elf) {
		snprintf(err, errlen, "%s: %s", name, elf_errmsg(-1));
		return -EINVAL;
	}
	im.b = (const __u8 *)elf_rawfile(im.elf, &im.n);
	ret = -ENOEXEC;
	if (!im.b || elf_getphdrnum(im.elf, &nph)) {
		why = "no program headers";
		goto out;
	}
	for (size_t i = 0; i < nph && im.nload < ARRAY_SIZE(im.load); i++)
		if (gelf_getphdr(im.elf, (int)i, &im.load[im.nload]) &&
		    im.load[im.nload].p_type == PT_LOAD)
			im.nload++;
	ret = decode(&im, syms, out, &why);
out:
	if (ret)
		snprintf(err, errlen, "%s: %s", name, why);
	elf_end(im.elf);
	return ret;
}

int mt_node_tls_place(const struct mt_node_tls *t, __u64 bias,
		      int (*rd)(void *ctx, __u64 addr, void *buf, size_t len),
		      void *ctx, struct mt_node_tlsconf *c)
{
	__u64 node[2], ctr[2], tid[2];
	int ret;

	ret = rd(ctx, bias + t->node_got, node, sizeof(node));
	if (!ret)
		ret = rd(ctx, bias + t->ctr_got, ctr, sizeof(ctr));
	if (!ret)
		ret = rd(ctx, bias + t->tid_got, tid, sizeof(tid));
	if (ret)
		return ret;
	/* the loader sets them as it relocates the library */
	if (!node[0] && !ctr[0] && !tid[0])
		return -EAGAIN;
	/* one library: one module id; one read of a Node's head holds both */
	if (node[0] != ctr[0] || node[0] != tid[0] || t->seq_nr_off % 8 ||
	    t->seq_nr_off >= MT_NODE_HEAD || t->thread_id_off % 8 ||
	    t->thread_id_off >= MT_NODE_HEAD)
		return -ENOEXEC;
	c->modid = node[0];
	c->node_off = node[1] + t->node_imm;
	c->ctr_off = ctr[1] + t->ctr_imm;
	c->tid_off = tid[1] + t->tid_imm;
	c->seq_nr_off = t->seq_nr_off;
	c->thread_id_off = t->thread_id_off;
	return 0;
}
