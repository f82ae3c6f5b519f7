// SPDX-License-Identifier: GPL-2.0
/*
 * user/proc/probepoint.c: where an entry probe goes so that the kernel
 * emulates its trap; on code written here and on Debian's real c10 (torch
 * 2.14 begins its reporters with instructions the kernel single-steps).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc/elfsym.h"
#include "proc/probepoint.h"
#include "roots.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ENDBR 0xf3, 0x0f, 0x1e, 0xfa

struct want_point {
	const char *what;
	__u8 code[48];
	size_t len;
	__u32 off, sp; /* an entry probe's */
	__u32 ret_off; /* a return probe's (sp 0) */
};

static const struct want_point points[] = {
	{ "push first", { 0x41, 0x56, 0xc3 }, 3, 0, 0, 0 },
	{ "endbr64, push", { ENDBR, 0x55, 0xc3 }, 6, 4, 0, 4 },
	/* torch 2.14's reportMemoryUsageToProfiler */
	{ "a global loaded into rax, then push",
	  { ENDBR, 0x48, 0x8b, 0x05, 0x0d, 0x2d, 0x0f, 0x00, 0x41, 0x57, 0xc3 },
	  14,
	  11,
	  0,
	  11 },
	/* torch 2.14's ProfiledCPUMemoryReporter::New, to its first jne */
	{ "a frame, the canary, a test: the jne",
	  { ENDBR, 0x48, 0x81, 0xec, 0x28, 0x02, 0x00, 0x00, /* sub */
	    0x64,  0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, /* fs */
	    0x48,  0x89, 0x84, 0x24, 0xe8, 0x01, 0x00, 0x00, /* store */
	    0x31,  0xc0, 0x48, 0x85, 0xd2, /* xor, test */
	    0x75,  0x01, 0xc3, 0xc3 },
	  37,
	  33,
	  0x228,
	  4 },
	/* 1.13's New: pushes first; its add of -128 comes after them */
	{ "add $-128,%rsp then push",
	  { 0x48, 0x83, 0xc4, 0x80, 0x53, 0xc3 },
	  6,
	  4,
	  128,
	  0 },
	{ "an argument register written first",
	  { ENDBR, 0x48, 0x8b, 0x3d, 0, 0, 0, 0, 0x55, 0xc3 },
	  13,
	  4,
	  0,
	  4 },
	{ "an unknown instruction first",
	  { ENDBR, 0x48, 0x89, 0xe5, 0x55, 0xc3 },
	  9,
	  4,
	  0,
	  4 },
	{ "a frame not of whole words",
	  { 0x48, 0x83, 0xec, 0x04, 0x55, 0xc3 },
	  6,
	  0,
	  0,
	  0 },
	/* a jump back from later in the function to the point: twice a call */
	{ "a branch that lands on the point",
	  { ENDBR, 0x48, 0x85, 0xd2, 0x75, 0x02, 0x90, 0x90, 0xeb, 0xfa, 0xc3 },
	  15,
	  4,
	  0,
	  4 },
	{ "cut short", { ENDBR, 0x48, 0x81, 0xec, 0x28 }, 8, 4, 0, 4 },
	{ "nothing", { 0 }, 0, 0, 0, 0 },
};

static void test_points(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(points); i++) {
		const struct want_point *w = &points[i];
		struct mt_probe_point p =
			mt_probe_point(w->code, w->len, false);
		struct mt_probe_point r = mt_probe_point(w->code, w->len, true);

		print_message("%s: +%u sp %u, return +%u\n", w->what, p.off,
			      p.sp, r.off);
		assert_int_equal(p.off, w->off);
		assert_int_equal(p.sp, w->sp);
		assert_int_equal(r.off, w->ret_off);
		assert_int_equal(r.sp, 0);
	}
}

struct want_lib {
	const char *glob; /* under the roots, or absolute */
	const char *sym;
	__u32 off, sp;
};

/* the probe points of c10's reporters that CPU and CUDA events come from */
static const struct want_lib libs[] = {
	{ "/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0",
	  "_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm", 0, 0 },
	{ "%s/trixie-*/usr/lib/x86_64-linux-gnu/libc10.so.2.6.0",
	  "_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm", 4, 0 },
	{ "%s/cuda-*/usr/lib/x86_64-linux-gnu/libc10.so.2.6.0",
	  "_ZN3c1027reportMemoryUsageToProfilerEPv{int64}{int64}{int64}NS_6DeviceE",
	  4, 0 },
	{ "%s/sid-*/usr/lib/x86_64-linux-gnu/libc10.so.2.14.1",
	  "_ZN3c1027reportMemoryUsageToProfilerEPv{int64}{int64}{int64}NS_6DeviceE",
	  11, 0 },
	{ "%s/sid-*/usr/lib/x86_64-linux-gnu/libc10.so.2.14.1",
	  "_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm", 33, 0x228 },
	{ "%s/sid-*/usr/lib/x86_64-linux-gnu/libc10.so.2.14.1",
	  "_ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv", 4, 0 },
};

static void test_real_libraries(void **state)
{
	int read = 0;

	(void)state;
	for (size_t w = 0; w < ARRAY_SIZE(libs); w++) {
		char pat[512];
		glob_t g;

		snprintf(pat, sizeof(pat), libs[w].glob, roots_dir());
		if (glob(pat, 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *names[] = { libs[w].sym };
			struct mt_sym sym = { 0 };
			struct mt_probe_point p;
			char err[256];
			int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);

			assert_true(fd >= 0);
			assert_int_equal(mt_elf_resolve_fd(fd, g.gl_pathv[i],
							   names, 1, &sym, err,
							   sizeof(err)),
					 0);
			assert_true(sym.vaddr && sym.size);
			p = mt_elf_probe_point(fd, sym.offset, sym.size, false);
			print_message("%s %s: +%u sp %u\n", g.gl_pathv[i],
				      libs[w].sym, p.off, p.sp);
			assert_int_equal(p.off, libs[w].off);
			assert_int_equal(p.sp, libs[w].sp);
			assert_int_equal(close(fd), 0);
			read++;
		}
		globfree(&g);
	}
	roots_skip_if_none(read);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_points),
		cmocka_unit_test(test_real_libraries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
