// SPDX-License-Identifier: GPL-2.0
/*
 * The slot of a thread's PyThreadState in its TLS, found by decoding the
 * one function that reads it, so that no libc's or build's internal
 * offset is written here:
 *
 * - 3.10-3.14 keep it under the pthread key autoTSSkey. Where a key's
 *   value sits in glibc's struct pthread is glibc's business: its
 *   pthread_getspecific computes it as ((key + A) << 4) + self + D for the
 *   first keys, and A and D are read from that code in the target's own
 *   libc (A = 0x31, D = 8 in glibc 2.36 to 2.43).
 * - 3.15 keeps it in the thread-local _Py_tss_gilstate, which
 *   PyGILState_GetThisThreadState reads with one mov from %fs (local-exec
 *   TLS: an executable with libpython linked in).
 *
 * Either offset is then checked on the target's threads: the slot of each
 * thread (tstate->thread_id is its pthread_self(), the thread pointer)
 * must hold that thread's state. When no offset is found or it does not
 * hold (another libc, libpython as a shared object), the walker searches
 * the thread list instead, two reads a thread.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "proc/elfsym.h"
#include "proc/probepoint.h"
#include "python/layout.h"
#include "python/objects.h"
#include "python/tls.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* bytes of a function read to decode it */
#define CODE_BYTES 48
/* a byte of a pattern that is captured, not compared */
#define ANY (-1)
/* thread states checked at most */
#define THREADS_CHECKED 64

/*
 * glibc x86-64 pthread_getspecific, first-level keys:
 *	cmp $N-1,%edi; ja L; mov %edi,%eax; add $A,%rax; shl $4,%rax;
 *	add %fs:0x10,%rax (self); mov D(%rax),%rdx
 */
static const short getspecific[] = {
	0x83, 0xff, ANY, /* cmp $imm8,%edi */
	0x77, ANY, /* ja rel8 */
	0x89, 0xf8, /* mov %edi,%eax */
	0x48, 0x83, 0xc0, ANY, /* add $imm8,%rax */
	0x48, 0xc1, 0xe0, 0x04, /* shl $4,%rax */
	0x64, 0x48, 0x03, 0x04, 0x25, 0x10, 0x00,
	0x00, 0x00, 0x48, 0x8b, 0x50, ANY, /* mov disp8(%rax),%rdx */
};

/* PyGILState_GetThisThreadState, 3.15: mov %fs:disp32,%rax; ret */
static const short gilstate_tls[] = {
	0x64, 0x48, 0x8b, 0x04, 0x25, ANY, ANY, ANY, ANY, 0xc3,
};

/*
 * Match pattern at the start of code (after an endbr64), storing the
 * captured bytes in order. Returns the number captured, or -1.
 */
static int match(const __u8 *code, size_t len, const short *pat, size_t n,
		 __u8 *cap, size_t ncap)
{
	size_t at = mt_endbr64_at(code, len), k = 0;

	if (at + n > len)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (pat[i] == ANY) {
			if (k == ncap)
				return -1;
			cap[k++] = code[at + i];
		} else if (code[at + i] != pat[i]) {
			return -1;
		}
	}
	return (int)k;
}

/* where the file of mapping m maps file offset off, 0 if it does not */
static __u64 mapped_at(const struct mt_maps *maps, const char *path, __u64 off)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct mt_mapping *m = &maps->v[i];

		if (m->path && !strcmp(m->path, path) && off >= m->offset &&
		    off - m->offset < m->end - m->start)
			return m->start + (off - m->offset);
	}
	return 0;
}

/*
 * pthread_getspecific in the target's libc (or libpthread before glibc
 * 2.34), read from its memory. Returns its address or 0.
 */
static __u64 find_getspecific(const struct mt_py *py,
			      const struct mt_maps *maps)
{
	static const char *const names[] = { "pthread_getspecific" };
	static const char *const libs[] = { "libc.so.", "libpthread.so." };

	for (size_t i = 0; i < maps->n; i++) {
		const struct mt_mapping *m = &maps->v[i];
		char file[64], err[256];
		struct mt_sym sym;
		bool lib = false;

		if (!m->path)
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(libs); k++)
			lib |= !strncmp(mt_basename(m->path), libs[k],
					strlen(libs[k]));
		if (!lib)
			continue;
		/* the mapped file itself, whatever the target's root */
		snprintf(file, sizeof(file), "/proc/%d/map_files/%llx-%llx",
			 py->pid, (unsigned long long)m->start,
			 (unsigned long long)m->end);
		if (mt_elf_resolve(file, names, 1, &sym, err, sizeof(err)) ||
		    !sym.vaddr)
			continue;
		return mapped_at(maps, m->path, sym.offset);
	}
	return 0;
}

/* the TLS offset of pthread key's value, from pthread_getspecific */
static bool key_slot(const struct mt_py *py, const struct mt_maps *maps,
		     __u32 key, __s64 *off)
{
	__u64 fn = find_getspecific(py, maps);
	__u8 code[CODE_BYTES], cap[4];

	if (!fn || mt_py_read(py, fn, code, sizeof(code)) ||
	    match(code, sizeof(code), getspecific, ARRAY_SIZE(getspecific), cap,
		  sizeof(cap)) != 4)
		return false;
	/* cmp $N-1: keys below N are in the first block */
	if (key > cap[0])
		return false;
	*off = ((__s64)key + cap[2]) * 16 + cap[3];
	return true;
}

/* the TLS offset of _Py_tss_gilstate, from its accessor */
static bool gilstate_slot(const struct mt_py *py, __u64 fn, __s64 *off)
{
	__u8 code[CODE_BYTES], cap[4];

	if (!fn || mt_py_read(py, fn, code, sizeof(code)) ||
	    match(code, sizeof(code), gilstate_tls, ARRAY_SIZE(gilstate_tls),
		  cap, sizeof(cap)) != 4)
		return false;
	*off = mt_code_s32(cap);
	return true;
}

/*
 * Does the slot at off from each thread's pointer hold its state? At
 * least one thread must show it (the main thread always has one), and
 * none may hold another thread's.
 */
static bool slot_holds(const struct mt_py *py, __s64 off)
{
	const struct layout *lay = py->lay;
	struct py_threads w;
	__u64 self, slot;
	int found = 0;

	if (py_threads_first(py, &w))
		return false;
	for (int i = 0; w.ts && i < THREADS_CHECKED; i++) {
		if (rd_u64(py, w.ts + lay->ts_thread_id, &self))
			return false;
		if (!rd_u64(py, self + (__u64)off, &slot) && slot) {
			if (slot != w.ts)
				return false;
			found++;
		}
		if (py_threads_next(py, &w))
			return false;
	}
	return found > 0;
}

void mt_py_find_tstate(struct mt_py *py, const struct mt_maps *maps,
		       __u64 gilstate_fn, __u32 tss_key)
{
	const struct layout *lay = py->lay;
	struct mt_pyconf *c = &py->conf;
	__u64 interp = 0;
	__s64 off;
	bool found;

	if (lay->rt_tss)
		found = key_slot(py, maps, tss_key, &off);
	else
		found = gilstate_slot(py, gilstate_fn, &off);
	if (found && slot_holds(py, off)) {
		c->ts_how = MT_TS_FS;
		c->ts_fs_off = off;
		return;
	}
	/* the main interpreter does not move: its list head is a fixed place */
	c->ts_id_off = lay->ts_thread_id;
	c->ts_next_off = TS_NEXT;
	if (rd_u64(py, py->runtime + lay->rt_interp_head, &interp) || !interp)
		return; /* MT_TS_NONE: open checked it, so the target is gone */
	c->ts_how = MT_TS_LIST;
	c->ts_list = interp + lay->is_threads_head;
}
