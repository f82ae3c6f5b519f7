/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPython of a target process, read from outside and read-only
 * (process_vm_readv): what the BPF frame walker needs to know about it, the
 * names of the code objects it records, and the names of nn.Modules.
 * CPython 3.10-3.15 (and a newer one whose _Py_DebugOffsets still have
 * 3.15's layout), x86_64, default (GIL) builds.
 *
 * An mt_py holds caches and is not thread-safe: one thread at a time. It
 * never writes to the target.
 */
#ifndef __PYPROC_H
#define __PYPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "memtrace.h"

/* mt_pyconf.f_owner on 3.10, whose frames have no owner field */
#define MT_PY_NO_OWNER (~0ULL)

/* longest string (UTF-8, with its NUL) this module hands out */
#define MT_PY_NAME_MAX 256

struct mt_py;

/*
 * Find the CPython in process pid: the executable or a libpython*.so that
 * defines _PyRuntime (files opened through /proc/PID/root, so containers
 * work). The version comes from _Py_DebugOffsets (3.13+), else from
 * Py_Version (3.11+), else from the file name (python3.X, libpython3.X.so).
 * 3.10-3.12 use our tables; 3.13+ the offsets the target publishes in
 * _Py_DebugOffsets (a newer minor read with 3.15's layout of them). The
 * layout is then checked against the running interpreter (initialised
 * TSS key, first thread state pointing back at its interpreter, "code" as
 * PyCode_Type's name; 3.13+: frames hold code objects where the offsets
 * say). The walker's way to the thread state is found last (python/tls.h).
 *
 * Returns 0 with *out, or -errno with a one-line message in err:
 * -ENOENT: the process runs no CPython (not an error for callers);
 * -ENOTSUP: a version or build we cannot walk (free-threaded; 3.16+ whose
 *  offsets do not hold);
 * -EAGAIN: CPython is mapped but not initialised yet (try again later);
 * -EPROTO: the interpreter does not look like its version's layout;
 * -ESRCH, -EPERM, -ENOMEM: as usual.
 * A buffer, not mt_err(): the tracer says it only once its tries are
 * over, and the fuzz and unit tests read it.
 */
int mt_py_open(int pid, struct mt_py **out, char *err, size_t errlen);
void mt_py_close(struct mt_py *py);

/*
 * What the BPF walker needs. max_depth is preset to MT_MAX_FRAMES and
 * modcode is empty: both are the caller's to set.
 */
const struct mt_pyconf *mt_py_conf(const struct mt_py *py);

/*
 * Read len bytes (at most 1 MiB) of the target at addr. Returns 0 or
 * -EFAULT (unmapped, short, or the process is gone). Every read of the
 * target goes through here.
 */
int mt_py_read(const struct mt_py *py, __u64 addr, void *buf, size_t len);

/*
 * Name one frame recorded by the walker: code is the code object, instr the
 * raw instruction field (3.10: f_lasti in the low 32 bits; 3.11/3.12:
 * prev_instr; 3.13+: instr_ptr). Fills qualname (co_name on 3.10, which has
 * no co_qualname), file (co_filename) and line: the instruction's line as
 * CPython computes it (co_firstlineno for a frame not yet started), or -1
 * when it has none, instr does not point into the code, or the line table
 * cannot be read. Strings are UTF-8, cut at a character boundary to fit.
 *
 * Code objects are cached by address (1024 of them, about 0.75 MiB per
 * target). A hit costs one read of the object's header: when its type,
 * counts, first line or name pointers changed, the address was reused and
 * the entry is refetched. When that read fails (the target exited) the
 * cached names are used as they are. Each entry remembers the lines of the
 * last 8 instructions asked for.
 *
 * Returns 0, -EINVAL when code is not a code object, -EFAULT when it cannot
 * be read.
 */
int mt_py_frame(struct mt_py *py, __u64 code, __u64 instr, char *qualname,
		size_t qlen, char *file, size_t flen, int *line);

/*
 * Is code torch.nn.Module._call_impl or _wrapped_call_impl (co_name, and
 * co_filename ending in torch/nn/modules/module.py)? From the code cache.
 */
bool mt_py_is_module_call(struct mt_py *py, __u64 code);

/*
 * self of a _call_impl/_wrapped_call_impl frame from its localsplus[0]:
 * the object, or 0 when local0 is 0, unreadable or a cell. torch 2.x keeps
 * _call_impl's self in a cell, which its call frees: read after the event
 * it may hold another module. 3.10 keeps a cell argument elsewhere and
 * leaves localsplus[0] NULL. Either way _wrapped_call_impl (torch >= 2.1),
 * which holds self itself, gives it.
 */
__u64 mt_py_module_self(struct mt_py *py, __u64 local0);

/* Does obj have a _modules dict, as every nn.Module has? */
bool mt_py_is_module(struct mt_py *py, __u64 obj);

/*
 * The key under which parent._modules holds child ("encoder", "3"), with
 * every instance __dict__ layout of 3.10-3.15 (split, inline values,
 * combined). A child held through modules that are not running (a
 * ModuleList iterated, not called) gets the dotted path: "layers.3".
 * Found names are cached by (parent, child) and not revalidated: modules
 * live long, and a freed pair reused as another pair with another
 * name is not worth a walk per event. Returns 0, -ENOENT (child is not
 * there) or -EFAULT.
 */
int mt_py_child_name(struct mt_py *py, __u64 parent, __u64 child, char *name,
		     size_t len);

/*
 * type(obj).__name__: tp_name, after its last dot for static types. Returns
 * 0 or -EFAULT.
 */
int mt_py_type_name(struct mt_py *py, __u64 obj, char *name, size_t len);

/* the same for the type object tp itself: tp.__name__ */
int mt_py_class_name(struct mt_py *py, __u64 tp, char *name, size_t len);

/*
 * Walk the frames of the thread whose tstate->thread_id (its pthread_t) is
 * thread_id the way the BPF walker does, innermost first, shims skipped.
 * The thread state comes from the first interpreter's thread list, not the
 * TLS slot, and is returned in *tstate. Fills at most max frames; returns
 * how many, -ESRCH when no thread state has that id, or -EFAULT. For tests
 * and debugging: BPF finds the thread state as mt_py_conf() says.
 */
int mt_py_thread_frames(struct mt_py *py, __u64 thread_id,
			struct mt_pyframe *frames, size_t max, __u64 *tstate);

/*
 * Read the code objects every thread of py runs now into the code cache,
 * with their line tables, while they live: a script's <module> code is
 * freed the moment its top-level code ends, and the events of its last
 * lines are resolved after that (issue 34, item 5). Called now and then;
 * what cannot be read is left.
 */
void mt_py_warm(struct mt_py *py);

#endif /* __PYPROC_H */
