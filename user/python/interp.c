// SPDX-License-Identifier: GPL-2.0
/*
 * Finding a target's CPython: the file that defines _PyRuntime, where it
 * is mapped, its version, and whether the running interpreter has the
 * layout of that version (mt_py_open).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc/elfsym.h"
#include "proc/mapfile.h"
#include "proc/maps.h"
#include "python/dbgoff.h"
#include "python/layout.h"
#include "python/objects.h"
#include "python/pyproc.h"
#include "python/tls.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define PTHREAD_KEYS 1024 /* glibc PTHREAD_KEYS_MAX */

enum {
	S_RUNTIME,
	S_CELL,
	S_CODE,
	S_UNICODE,
	S_BYTES,
	S_VERSION, /* 3.11+ */
	S_INIT, /* a function: where the file is mapped */
	S_GILSTATE, /* reads the thread's state from its TLS (3.15+) */
	S_N,
};

static const char *const sym_names[S_N] = {
	"_PyRuntime",	 "PyCell_Type",
	"PyCode_Type",	 "PyUnicode_Type",
	"PyBytes_Type",	 "Py_Version",
	"Py_Initialize", "PyGILState_GetThisThreadState",
};

/* X.Y of "python3.11", "libpython3.11.so.1.0", "libpython3.13t.so" */
static bool name_version(const char *path, unsigned int *major,
			 unsigned int *minor)
{
	const char *base = mt_basename(path);

	if (!strncmp(base, "lib", 3))
		base += 3;
	if (strncmp(base, "python", 6) || base[6] < '0' || base[6] > '9')
		return false;
	return sscanf(base + 6, "%u.%u", major, minor) == 2;
}

/* load bias of path: where its function fn is mapped, less its vaddr */
static int load_bias(const struct mt_maps *maps, const char *path,
		     const struct mt_sym *fn, __u64 *bias)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct mt_mapping *m = &maps->v[i];

		if (!m->path || strcmp(m->path, path) ||
		    fn->offset < m->offset ||
		    fn->offset - m->offset >= m->end - m->start)
			continue;
		*bias = m->start + (fn->offset - m->offset) - fn->vaddr;
		return 0;
	}
	return -ENOENT;
}

/*
 * The file of pid that defines _PyRuntime: the executable or a libpython.
 * Returns 0 with *path (pointing into maps) and its symbols, -ENOENT with
 * *old set to a Python too old to have _PyRuntime (or NULL), or -errno
 * with err when a candidate could not be read.
 */
static int find_python(int pid, const struct mt_maps *maps, const char **path,
		       const char **old, struct mt_sym *syms, char *err,
		       size_t errlen)
{
	char exe[PATH_MAX], link[32];
	const char *prev = NULL;
	ssize_t n;
	int fd, ret = -ENOENT;

	*path = NULL;
	*old = NULL;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	for (size_t i = 0; i < maps->n; i++) {
		const char *p = maps->v[i].path;
		unsigned int major, minor;
		int r;

		if (!p || (prev && !strcmp(p, prev)))
			continue;
		prev = p;
		if (strcmp(p, exe) && strncmp(mt_basename(p), "libpython", 9))
			continue;
		if (strstr(p, " (deleted)"))
			continue;
		/* the file mapped itself, whatever the target's root */
		fd = mt_mapfile_open(pid, &maps->v[i], err, errlen);
		if (fd < 0) {
			ret = fd;
			continue;
		}
		r = mt_elf_resolve_any_fd(fd, p, sym_names, S_N, syms, err,
					  errlen);
		close(fd);
		if (r) {
			ret = r;
			continue;
		}
		if (syms[S_RUNTIME].vaddr && syms[S_INIT].vaddr) {
			*path = p;
			return 0;
		}
		if (name_version(p, &major, &minor))
			*old = p;
	}
	return *old ? -ENOENT : ret;
}

#define UNSUPPORTED \
	"is not supported (3.10-3.15): events carry no Python stacks"
#define NO_STACKS "events carry no Python stacks"

/*
 * the Python version hex (PY_VERSION_HEX), whether free-threaded, and
 * whether _PyRuntime opens with _Py_DebugOffsets (*dbg)
 */
static int find_version(struct mt_py *py, const char *path,
			const struct mt_sym *syms, __u64 bias, __u64 *hex,
			bool *ft, bool *has_dbg, char *err, size_t errlen)
{
	unsigned int major, minor;
	__u8 dbg[24];
	int ret;

	*ft = false;
	*has_dbg = false;
	ret = mt_py_read_mem(py, py->runtime, dbg, sizeof(dbg));
	if (ret) {
		snprintf(err, errlen, "process %d: reading _PyRuntime: %s",
			 py->pid, strerror(-ret));
		return ret;
	}
	/* 3.13+: _Py_DebugOffsets opens _PyRuntime */
	if (!memcmp(dbg, "xdebugpy", 8)) {
		*hex = get_u64(dbg, 8);
		*ft = get_u64(dbg, 16) != 0;
		*has_dbg = true;
		return 0;
	}
	if (syms[S_VERSION].vaddr &&
	    !mt_py_read(py, bias + syms[S_VERSION].vaddr, hex, sizeof(*hex)))
		return 0;
	if (name_version(path, &major, &minor)) {
		*hex = (__u64)major << 24 | (__u64)minor << 16;
		return 0;
	}
	snprintf(err, errlen, "%s: cannot tell which CPython version it is",
		 path);
	return -ENOTSUP;
}

/* thread states and frames followed when checking a layout */
#define CHECK_THREADS 64
#define CHECK_FRAMES 16
/* times a check that a thread's exit can fail is made */
#define CHECK_TRIES 3

/*
 * 3.13+: the first Python frame of each thread that runs one must hold a
 * code object where the offsets say (through the tag bits of 3.14+).
 */
static bool frames_hold_code_once(const struct mt_py *py)
{
	const struct layout *lay = py->lay;
	__u64 mask = lay->tagged ? ~3ULL : ~0ULL;
	struct py_threads w;

	if (py_threads_first(py, &w))
		return false;
	for (int i = 0; w.ts && i < CHECK_THREADS; i++) {
		__u64 ts = w.ts, f, exe, type;
		__u8 owner = 0;
		int k;

		if (rd_u64(py, ts + lay->ts_frame, &f))
			return false;
		for (k = 0; f && k < CHECK_FRAMES; k++) {
			if (mt_py_read(py, f + lay->f_owner, &owner, 1))
				return false;
			if (owner < lay->owner_cstack_min)
				break;
			if (rd_u64(py, f + lay->f_back, &f))
				return false;
		}
		if (f && k < CHECK_FRAMES &&
		    (rd_u64(py, f + lay->f_code, &exe) ||
		     rd_u64(py, (exe & mask) + OB_TYPE, &type) ||
		     type != py->code_type))
			return false;
		if (py_threads_next(py, &w))
			return false;
	}
	return true;
}

/*
 * A thread that exits while its frames are checked leaves freed frames
 * behind its state: the check is made again before the layout is refused.
 */
static bool frames_hold_code(const struct mt_py *py)
{
	for (int i = 0; i < CHECK_TRIES; i++) {
		if (frames_hold_code_once(py))
			return true;
	}
	return false;
}

/*
 * What must hold in a running interpreter of this layout: the TSS key is
 * initialised (3.10-3.14: in *key), the first thread state points back at
 * its interpreter, PyCode_Type is named "code", and (3.13+) frames hold
 * code objects. Returns 0, -EAGAIN (not initialised yet) or -EPROTO,
 * with err.
 */
static int check_layout(struct mt_py *py, __u32 *key, char *err, size_t errlen)
{
	const struct layout *lay = py->lay;
	__u64 interp = 0, ts = 0, back = 0, tp_name;
	char name[16];
	/* Py_tss_t: int _is_initialized; pthread_key_t _key */
	__u32 tss[2] = { 1, 0 };

	if ((lay->rt_tss &&
	     mt_py_read(py, py->runtime + lay->rt_tss, tss, sizeof(tss))) ||
	    rd_u64(py, py->runtime + lay->rt_interp_head, &interp) ||
	    (interp && rd_u64(py, interp + lay->is_threads_head, &ts)) ||
	    (ts && rd_u64(py, ts + TS_INTERP, &back)) ||
	    rd_u64(py, py->code_type + TP_NAME, &tp_name) ||
	    mt_py_read_cstr(py, tp_name, name, sizeof(name))) {
		snprintf(err, errlen,
			 "process %d: CPython 3.%u state is unreadable",
			 py->pid, lay->minor);
		return -EPROTO;
	}
	if (!tss[0] || !interp || !ts) {
		snprintf(err, errlen,
			 "process %d: CPython 3.%u is not initialised yet",
			 py->pid, lay->minor);
		return -EAGAIN;
	}
	if (tss[1] >= PTHREAD_KEYS || back != interp || strcmp(name, "code")) {
		snprintf(
			err, errlen,
			"process %d: CPython 3.%u does not have the expected layout",
			py->pid, lay->minor);
		return -EPROTO;
	}
	if (lay->minor >= 13 && !frames_hold_code(py)) {
		snprintf(
			err, errlen,
			"process %d: CPython 3.%u frames hold no code object where _Py_DebugOffsets say",
			py->pid, lay->minor);
		return -EPROTO;
	}
	*key = tss[1];
	return 0;
}

/* can the walker read a frame's fields in one go? */
static bool frame_fits(const struct mt_pyconf *c)
{
	return !c->instr_is_index && c->f_code + 8 <= MT_FRAME_WIN &&
	       c->f_back + 8 <= MT_FRAME_WIN &&
	       c->f_instr + 8 <= MT_FRAME_WIN &&
	       c->f_localsplus + 8 <= MT_FRAME_WIN &&
	       (!c->owner_cstack_min || c->f_owner < MT_FRAME_WIN) &&
	       !(c->f_code % 8) && !(c->f_back % 8) && !(c->f_instr % 8) &&
	       !(c->f_localsplus % 8);
}

/*
 * Do the thread states' data stack fields say what CPython's source says
 * of them: a chunk, then top and limit, top within the chunk and limit at
 * its end (chunk->size at +8)? A thread that ran no Python yet has no
 * chunk; one that contradicts it is enough to say no.
 */
static bool datastack_holds(const struct mt_py *py)
{
	const struct layout *lay = py->lay;
	struct py_threads w;
	__u64 ds[3], size;

	if (py_threads_first(py, &w))
		return false;
	for (int i = 0; w.ts && i < CHECK_THREADS; i++) {
		if (mt_py_read(py, w.ts + lay->ts_chunk, ds, sizeof(ds)))
			return false;
		if (ds[0] && (rd_u64(py, ds[0] + 8, &size) || ds[1] <= ds[0] ||
			      ds[1] > ds[2] || ds[2] != ds[0] + size))
			return false;
		if (py_threads_next(py, &w))
			return false;
	}
	return true;
}

/*
 * The thread state's window (mt_pyconf.ts_win_*): the frame pointer and,
 * where the walk reads frame heads and the data stack's three fields are
 * to be trusted and close enough to come in the same read, those fields.
 */
static void ts_window(const struct mt_py *py, struct mt_pyconf *c)
{
	const struct layout *lay = py->lay;
	__u64 lo = lay->ts_frame, hi = lay->ts_frame + 8;

	c->ts_chunk_off = -1;
	if (c->frame_win && lay->ts_chunk && datastack_holds(py)) {
		if (lay->ts_chunk < lo)
			lo = lay->ts_chunk;
		if (lay->ts_chunk + 24 > hi)
			hi = lay->ts_chunk + 24;
		if (hi - lo <= MT_TS_WIN) {
			c->ts_chunk_off = (__s64)lay->ts_chunk;
		} else {
			lo = lay->ts_frame;
			hi = lay->ts_frame + 8;
		}
	}
	c->ts_win_off = (__u32)lo;
	c->ts_win_len = (__u32)(hi - lo);
}

static void fill_conf(struct mt_py *py)
{
	const struct layout *lay = py->lay;
	struct mt_pyconf *c = &py->conf;

	c->minor = lay->minor;
	c->ts_frame_off = lay->ts_frame;
	c->cframe_cur_off = lay->cframe_cur;
	c->f_code = lay->f_code;
	c->f_back = lay->f_back;
	c->f_instr = lay->f_instr;
	c->f_localsplus = lay->f_localsplus;
	c->f_owner = lay->f_owner;
	c->instr_is_index = lay->minor == 10;
	c->owner_cstack_min = lay->owner_cstack_min;
	c->ref_mask = lay->tagged ? ~3ULL : ~0ULL;
	c->max_depth = MT_MAX_FRAMES;
	c->frame_win = frame_fits(c) ? MT_FRAME_WIN : 0;
	ts_window(py, c);
}

/* Everything of mt_py_open after the file is found. */
static int open_runtime(struct mt_py *py, const struct mt_maps *maps,
			const char *path, const struct mt_sym *syms, char *err,
			size_t errlen)
{
	unsigned int major, minor;
	__u64 bias, hex;
	bool ft, dbg;
	__u32 key;
	int ret;

	if (load_bias(maps, path, &syms[S_INIT], &bias)) {
		snprintf(err, errlen, "%s: not mapped where its symbols say",
			 path);
		return -ENOEXEC;
	}
	py->runtime = bias + syms[S_RUNTIME].vaddr;
	py->cell_type = bias + syms[S_CELL].vaddr;
	py->code_type = bias + syms[S_CODE].vaddr;
	py->unicode_type = bias + syms[S_UNICODE].vaddr;
	py->bytes_type = bias + syms[S_BYTES].vaddr;
	ret = find_version(py, path, syms, bias, &hex, &ft, &dbg, err, errlen);
	if (ret)
		return ret;
	major = (hex >> 24) & 0xff;
	minor = (hex >> 16) & 0xff;
	/* 3.13+ describe themselves: a newer one may still be readable */
	py->lay = mt_py_layout(minor);
	if (major != 3 || !py->lay || (minor >= 13 && !dbg)) {
		snprintf(err, errlen, "CPython %u.%u " UNSUPPORTED, major,
			 minor);
		return -ENOTSUP;
	}
	if (ft) {
		snprintf(
			err, errlen,
			"CPython %u.%u free-threaded builds are not supported: " NO_STACKS,
			major, minor);
		return -ENOTSUP;
	}
	if (minor >= 13) {
		ret = mt_py_debug_layout(py, minor, py->lay, &py->own_lay, err,
					 errlen);
		if (!ret)
			py->lay = &py->own_lay;
	}
	if (!ret)
		ret = check_layout(py, &key, err, errlen);
	if (ret && minor > MT_PY_MINOR_MAX && ret != -EAGAIN) {
		/* one line: what of the newest known layout does not hold */
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(
			err, errlen,
			"CPython 3.%u is newer than 3.%u, whose layout does not hold (%s): " NO_STACKS,
			minor, MT_PY_MINOR_MAX, why);
		return -ENOTSUP;
	}
	if (ret)
		return ret;
	fill_conf(py);
	mt_py_find_tstate(
		py, maps,
		syms[S_GILSTATE].vaddr ? bias + syms[S_GILSTATE].vaddr : 0,
		key);
	return 0;
}

int mt_py_open(int pid, struct mt_py **out, char *err, size_t errlen)
{
	struct mt_maps maps = { 0 };
	struct mt_sym syms[S_N];
	const char *path, *old;
	unsigned int major, minor;
	struct mt_py *py = NULL;
	int ret;

	*out = NULL;
	ret = mt_maps_read(pid, &maps);
	if (ret) {
		/* no /proc/PID: the process, not Python, is missing */
		if (ret == -ENOENT)
			ret = -ESRCH;
		snprintf(err, errlen, "process %d: reading its maps: %s", pid,
			 strerror(-ret));
		goto out;
	}
	ret = find_python(pid, &maps, &path, &old, syms, err, errlen);
	if (ret == -ENOENT && old && name_version(old, &major, &minor) &&
	    major == 3 && minor >= 10) {
		/* a supported python3.X whose libpython is not mapped yet */
		snprintf(err, errlen,
			 "process %d: CPython %u.%u not loaded yet", pid, major,
			 minor);
		ret = -EAGAIN;
	} else if (ret == -ENOENT && old && name_version(old, &major, &minor)) {
		snprintf(err, errlen, "CPython %u.%u " UNSUPPORTED, major,
			 minor);
		ret = -ENOTSUP;
	} else if (ret == -ENOENT) {
		snprintf(err, errlen, "process %d runs no CPython", pid);
	}
	if (ret)
		goto out;
	py = calloc(1, sizeof(*py));
	if (!py) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	py->pid = pid;
	ret = open_runtime(py, &maps, path, syms, err, errlen);
	if (ret) {
		free(py);
		goto out;
	}
	*out = py;
out:
	mt_maps_free(&maps);
	return ret;
}

void mt_py_close(struct mt_py *py)
{
	if (py)
		mt_py_forget_codes(py);
	free(py);
}

const struct mt_pyconf *mt_py_conf(const struct mt_py *py)
{
	return &py->conf;
}
