// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: any bytes, as the memory of a target running CPython,
 * read by python/'s object readers as the tracer reads them: the
 * _Py_DebugOffsets of 3.13+, code objects with their names and line
 * tables, strings, instance dicts and nn.Module children, type names and
 * the frames of a thread.
 *
 * Every read of the target ends in one process_vm_readv (objects.c): the
 * fuzz build links with --wrap=process_vm_readv, so the readers run as they
 * are and only the syscall is this file's. Memory is the input repeated
 * over the low 4 GiB (every pointer below that reads something, which
 * gets the fuzzer deep fast); from 4 GiB up it is unmapped, and a read
 * across that line is short. The header of the input is also where the
 * arguments come from (struct args): the readers see the same bytes.
 *
 * With MT_FUZZ_SEEDS=DIR set, the program writes seed images there (a
 * code object with its strings and line table, and a thread with one
 * frame, in the 3.10-3.12 layouts) and exits.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "python/dbgoff.h"
#include "python/layout.h"
#include "python/line.h"
#include "python/objects.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *local,
				unsigned long liovcnt,
				const struct iovec *remote,
				unsigned long riovcnt, unsigned long flags);

#define MEM_END (1ULL << 32)
#define NAME_LEN 48 /* less than MT_PY_NAME_MAX: cutting is a path too */
#define MAX_FRAMES 16

/* the input's first bytes: what the tracer would be asked about */
struct args {
	__u64 minor; /* 3.(10 + minor % 7): 16 stands for a newer one */
	__u64 code, instr, parent, child, obj, thread_id, runtime;
	__u64 code_type, unicode_type, bytes_type, cell_type;
	__s64 firstlineno, addrq; /* for the line decoders run directly */
};

static const uint8_t *mem;
static size_t mem_size;
static struct mt_py py;

ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *local,
				unsigned long liovcnt,
				const struct iovec *remote,
				unsigned long riovcnt, unsigned long flags)
{
	__u64 addr = (uintptr_t)remote->iov_base;
	size_t len = local->iov_len, done = 0;

	/* the readers make one-piece reads into a buffer as long */
	if (liovcnt != 1 || riovcnt != 1 || remote->iov_len != len || flags)
		abort();
	if (!mem_size || addr >= MEM_END) {
		errno = EFAULT;
		return -1;
	}
	while (done < len && addr + done < MEM_END) {
		size_t at = (size_t)((addr + done) % mem_size);
		size_t n = mem_size - at;

		if (n > len - done)
			n = len - done;
		if (n > MEM_END - (addr + done))
			n = (size_t)(MEM_END - (addr + done));
		memcpy((char *)local->iov_base + done, mem + at, n);
		done += n;
	}
	return (ssize_t)done;
}

static void check_str(const char *s, size_t cap)
{
	if (strnlen(s, cap) == cap)
		abort();
}

static void read_code(const struct args *a)
{
	char qualname[NAME_LEN], file[NAME_LEN];
	int line, ret;

	/* twice: the second time from the cache, its header checked */
	for (int i = 0; i < 2; i++) {
		ret = mt_py_frame(&py, a->code, a->instr, qualname,
				  sizeof(qualname), file, sizeof(file), &line);
		if (ret && ret != -EINVAL && ret != -EFAULT && ret != -ENOMEM)
			abort();
		if (!ret) {
			check_str(qualname, sizeof(qualname));
			check_str(file, sizeof(file));
		}
	}
	(void)mt_py_is_module_call(&py, a->code);
}

static void read_objects(const struct args *a)
{
	char name[NAME_LEN];
	int ret;

	(void)mt_py_module_self(&py, a->obj);
	(void)mt_py_is_module(&py, a->obj);
	ret = mt_py_child_name(&py, a->parent, a->child, name, sizeof(name));
	if (!ret)
		check_str(name, sizeof(name));
	if (!mt_py_type_name(&py, a->obj, name, sizeof(name)))
		check_str(name, sizeof(name));
	if (!mt_py_class_name(&py, a->obj, name, sizeof(name)))
		check_str(name, sizeof(name));
}

static void read_thread(const struct args *a)
{
	struct mt_pyframe frames[MAX_FRAMES];
	__u64 tstate;
	int n = mt_py_thread_frames(&py, a->thread_id, frames, MAX_FRAMES,
				    &tstate);

	if (n > MAX_FRAMES)
		abort();
}

/* the decoders straight on the bytes after the header: cheaper to reach */
static void read_lines(const struct args *a, const uint8_t *data, size_t size)
{
	const __u8 *tab = data + sizeof(*a);
	size_t len = size - sizeof(*a);
	int first = (int)a->firstlineno;

	/* any line is possible: the first line and deltas are the target's */
	(void)mt_pyline_310(tab, len, first, a->addrq);
	(void)mt_pyline_311(tab, len, first, a->addrq);
}

/* py as mt_py_open leaves it, the layout of 3.13+ from the input */
static int open_py(const struct args *a)
{
	unsigned int minor = 10 + (unsigned int)(a->minor % 7);
	char err[256] = "";
	int ret;

	mt_py_forget_codes(&py);
	memset(&py, 0, sizeof(py));
	py.pid = 1;
	py.lay = mt_py_layout(minor);
	py.runtime = a->runtime;
	py.code_type = a->code_type;
	py.unicode_type = a->unicode_type;
	py.bytes_type = a->bytes_type;
	py.cell_type = a->cell_type;
	if (minor >= 13) {
		ret = mt_py_debug_layout(&py, minor, py.lay, &py.own_lay, err,
					 sizeof(err));
		if (ret) {
			if (!err[0] || (ret != -EFAULT && ret != -EPROTO))
				abort();
			return ret; /* mt_py_open gives up here too */
		}
		py.lay = &py.own_lay;
	}
	py.conf.ref_mask = py.lay->tagged ? ~3ULL : ~0ULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct args a;

	if (size < sizeof(a))
		return 0;
	memcpy(&a, data, sizeof(a));
	mem = data;
	mem_size = size;
	read_lines(&a, data, size);
	if (open_py(&a))
		return 0;
	read_code(&a);
	read_objects(&a);
	read_thread(&a);
	return 0;
}

/* ---- seeds ---- */

#define SEED_SIZE 0x1000
/* where the seed's objects lie: 0x200 apart, room for every field read */
enum {
	AT_CODE = 0x200,
	AT_FILE = 0x400,
	AT_QUAL = 0x600,
	AT_TABLE = 0x800,
	AT_RUNTIME = 0xa00,
	AT_INTERP = 0xb00,
	AT_TSTATE = 0xc00,
	AT_CFRAME = 0xe00,
	AT_FRAME = 0xf00,
	TYPE_CODE = 0x2000,
	TYPE_STR = 0x3000,
	TYPE_BYTES = 0x4000,
	THREAD_ID = 0x7f00,
};

static void put_u64(__u8 *img, __u64 at, __u64 v)
{
	memcpy(img + at, &v, sizeof(v));
}

static void put_str(__u8 *img, const struct layout *lay, __u64 at,
		    const char *s)
{
	/* compact ASCII: state bits 2-4 kind 1, bit 5 compact, bit 6 ascii */
	__u32 state = 1 << 2 | 1 << 5 | 1 << 6;

	put_u64(img, at + OB_TYPE, TYPE_STR);
	put_u64(img, at + STR_LENGTH, strlen(s));
	memcpy(img + at + STR_STATE, &state, sizeof(state));
	memcpy(img + at + lay->str_ascii_data, s, strlen(s) + 1);
}

static void seed_image(__u8 *img, unsigned int minor)
{
	const struct layout *lay = mt_py_layout(minor);
	/* 3.11+: four one-unit entries without columns, lines +1 each */
	static const __u8 tab311[] = { 0xe8, 0x02, 0xe8, 0x02,
				       0xe8, 0x02, 0xe8, 0x02 };
	/* 3.10: (bytes, line delta) pairs */
	static const __u8 tab310[] = { 2, 1, 2, 1, 4, 1, 2, 0x80 };
	struct args a = {
		.minor = minor - 10,
		.code = AT_CODE,
		.runtime = AT_RUNTIME,
		.thread_id = THREAD_ID,
		.code_type = TYPE_CODE,
		.unicode_type = TYPE_STR,
		.bytes_type = TYPE_BYTES,
		.firstlineno = 7,
		.addrq = 4,
	};
	__u64 frame = lay->cframe_cur >= 0 ? AT_CFRAME : AT_FRAME;

	memset(img, 0, SEED_SIZE);
	/* 3.10 counts u16 units in f_lasti, 3.11+ point into the code */
	a.instr = minor == 10 ? 2 : AT_CODE + lay->co_adaptive + 4;
	memcpy(img, &a, sizeof(a));
	put_u64(img, AT_CODE + OB_TYPE, TYPE_CODE);
	put_u64(img, AT_CODE + lay->co_filename, AT_FILE);
	put_u64(img, AT_CODE + lay->co_name, AT_QUAL);
	put_u64(img, AT_CODE + lay->co_qualname, AT_QUAL);
	put_u64(img, AT_CODE + lay->co_linetable, AT_TABLE);
	put_u64(img, AT_CODE + lay->co_firstlineno, 7);
	put_str(img, lay, AT_FILE, "/opt/torch/nn/modules/module.py");
	put_str(img, lay, AT_QUAL, "_call_impl");
	put_u64(img, AT_TABLE + OB_TYPE, TYPE_BYTES);
	put_u64(img, AT_TABLE + BYTES_SIZE, sizeof(tab311));
	memcpy(img + AT_TABLE + BYTES_DATA, minor == 10 ? tab310 : tab311,
	       sizeof(tab311));
	/* one thread, one frame of that code */
	put_u64(img, AT_RUNTIME + lay->rt_interp_head, AT_INTERP);
	put_u64(img, AT_INTERP + lay->is_threads_head, AT_TSTATE);
	put_u64(img, AT_TSTATE + lay->ts_thread_id, THREAD_ID);
	put_u64(img, AT_TSTATE + lay->ts_frame, frame);
	if (lay->cframe_cur >= 0)
		put_u64(img, AT_CFRAME + (__u64)lay->cframe_cur, AT_FRAME);
	put_u64(img, AT_FRAME + lay->f_code, AT_CODE);
	put_u64(img, AT_FRAME + lay->f_instr, a.instr);
}

static void write_seeds(const char *dir)
{
	static __u8 img[SEED_SIZE];

	for (unsigned int minor = 10; minor <= 12; minor++) {
		char path[4096];
		FILE *f;

		seed_image(img, minor);
		snprintf(path, sizeof(path), "%s/py3%u", dir, minor);
		f = fopen(path, "wbe");
		if (!f || fwrite(img, 1, sizeof(img), f) != sizeof(img) ||
		    fclose(f)) {
			perror(path);
			exit(1);
		}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("MT_FUZZ_SEEDS");

	if (dir) {
		write_seeds(dir);
		exit(0);
	}
	return 0;
}
