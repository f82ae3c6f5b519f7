/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What python/ keeps of an open target (struct mt_py: where its
 * interpreter is, filled by interp.c, and the caches of objects.c), and
 * the readers of its memory both files use. Internal to python/.
 */
#ifndef __PYOBJECTS_H
#define __PYOBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>
#include "python/layout.h"
#include "python/pyproc.h"

/*
 * code object bytes read per lookup: through co_linetable on every version
 * (dbgoff.c refuses a target whose fields lie beyond)
 */
#define CODE_HDR 144

/* what must stay the same for a cached code object to still be it */
struct code_fp {
	__u64 type, filename, name, qualname, linetable;
	__s32 argcount, flags, firstlineno, pad;
};

#define CODE_SETS 256
#define CODE_WAYS 4
#define CODE_LINES 8

struct code_entry {
	__u64 code; /* 0: free */
	__u64 used; /* mt_py.tick at the last hit, for eviction */
	struct code_fp fp;
	bool module_call;
	char qualname[MT_PY_NAME_MAX];
	char file[MT_PY_NAME_MAX];
	/* instruction offset -> line, the last few asked for */
	struct {
		__s64 addrq;
		int line;
	} lines[CODE_LINES];
	unsigned int nlines, next_line;
	/*
	 * co_linetable, copied when the entry is filled (NULL where longer
	 * than CODE_TABLE_KEEP or unreadable then): a script's <module> code
	 * object is freed the moment its top-level code ends, before the
	 * events of its last lines are resolved (issue 34, item 5)
	 */
	__u8 *table;
	size_t table_len;
};

/* the longest co_linetable kept in a cache entry (a few thousand lines) */
#define CODE_TABLE_KEEP (64u << 10)

#define CHILD_SLOTS 256

struct child_entry {
	__u64 parent, child; /* parent 0: free */
	char name[MT_PY_NAME_MAX];
};

struct mt_py {
	int pid;
	const struct layout *lay; /* a table entry, or own_lay (3.13+) */
	struct layout own_lay; /* the table's, with the target's own offsets */
	struct mt_pyconf conf;
	__u64 runtime; /* &_PyRuntime */
	__u64 cell_type, code_type, unicode_type, bytes_type;
	__u64 modules_key; /* the interned "_modules", once seen; 0 before */
	__u64 tick;
	struct code_entry codes[CODE_SETS * CODE_WAYS];
	size_t table_bytes; /* the line tables the entries hold */
	struct child_entry children[CHILD_SLOTS];
};

/* The code cache emptied, and what its entries hold freed. */
void mt_py_forget_codes(struct mt_py *py);

/* Returns 0, -EFAULT for a short read, or process_vm_readv's -errno. */
int mt_py_read_mem(const struct mt_py *py, __u64 addr, void *buf, size_t len);

/*
 * The C string at addr into out (cap bytes, at most MT_PY_NAME_MAX), cut
 * at a UTF-8 character boundary. Returns 0 or -EFAULT.
 */
int mt_py_read_cstr(const struct mt_py *py, __u64 addr, char *out, size_t cap);

/*
 * A walk over the first interpreter's thread states. A thread that exits
 * while the list is read is unlinked and freed under the walk, and its
 * next field then holds the allocator's bookkeeping (glibc's tcache keeps
 * a key there), or the memory is made again for a new thread's state:
 * every state left and reached must point back at the interpreter and at
 * each other, and where one does not the walk starts again from the head,
 * a few times at most. Callers bound the steps they take.
 */
struct py_threads {
	__u64 interp;
	__u64 ts; /* the state reached; 0: the end */
	unsigned int restarts;
};

/* At the first thread state (ts 0: none). Returns 0 or -EFAULT. */
int py_threads_first(const struct mt_py *py, struct py_threads *w);

/*
 * At the next thread state (ts 0: the end), or at the head again where the
 * list changed under the walk. Returns 0, -EFAULT, or -ESTALE when it kept
 * changing.
 */
int py_threads_next(const struct mt_py *py, struct py_threads *w);

/* the small reads every walk makes: inline, as before the split */
static inline int rd_u64(const struct mt_py *py, __u64 addr, __u64 *v)
{
	return mt_py_read(py, addr, v, sizeof(*v));
}

static inline __u64 get_u64(const __u8 *buf, size_t off)
{
	__u64 v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static inline __s32 get_s32(const __u8 *buf, size_t off)
{
	__s32 v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

#endif /* __PYOBJECTS_H */
