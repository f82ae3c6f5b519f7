// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: any bytes, as the file a process maps, read by the ELF
 * symbol reader through a descriptor as the tracer does (a memfd is a
 * regular file): functions, data symbols and a wrapper's jump target,
 * where a function found is probed, and libtorch_cpu's autograd
 * thread-locals decoded from its code. Besides not crashing, it must
 * keep its word: an error says why, a symbol found lies in the file's
 * loaded bytes, and a probe point lies in its function.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "proc/elfsym.h"
#include "python/nodetls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* names the tracer asks for, of each kind: plain, versioned, {int64}, data */
static const char *const names[] = {
	"cudaMalloc",
	"_ZN3c104cuda20CUDACachingAllocator9raw_allocE{int64}",
	"PyErr_SetObject",
	"mt_seed_set",
	"_PyRuntime",
	"Py_Version",
	"dlopen",
	"clock_gettime",
	"main",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static int memfd = -1;

static void check(int ret, const char *err, const struct mt_sym *out, size_t n,
		  size_t size)
{
	if (ret < 0 && !err[0])
		abort();
	for (size_t i = 0; !ret && i < n; i++) {
		struct mt_probe_point p, r;

		if (!out[i].vaddr)
			continue;
		if (out[i].offset >= size)
			abort();
		p = mt_elf_probe_point(memfd, out[i].offset, out[i].size,
				       false);
		r = mt_elf_probe_point(memfd, out[i].offset, out[i].size, true);
		if ((out[i].size && p.off >= out[i].size) || r.sp ||
		    p.sp > MT_PROBE_SP_MAX || p.sp % 8)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_sym out[NNAMES], tail;
	char err[256] = "";
	int ret;

	if (memfd < 0)
		memfd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 0) ||
	    pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	ret = mt_elf_resolve_fd(memfd, "fuzz", names, NNAMES, out, err,
				sizeof(err));
	check(ret, err, out, NNAMES, size);
	err[0] = '\0';
	ret = mt_elf_resolve_any_fd(memfd, "fuzz", names, NNAMES, out, err,
				    sizeof(err));
	check(ret, err, out, NNAMES, size);
	err[0] = '\0';
	ret = mt_elf_tail_target_fd(memfd, "fuzz", "PyErr_SetObject", &tail,
				    err, sizeof(err));
	check(ret, err, &tail, 1, size);
	/* a jump is followed to code, and never to the file's header */
	if (!ret && tail.vaddr && !tail.offset)
		abort();
	err[0] = '\0';
	{
		struct mt_node_tls t;

		ret = mt_node_tls_find_fd(memfd, "fuzz", &t, err, sizeof(err));
		if (ret < 0 && !err[0])
			abort();
	}
	return 0;
}
