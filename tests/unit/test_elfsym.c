// SPDX-License-Identifier: GPL-2.0
/*
 * user/proc/elfsym.c: symbol addresses and file offsets, checked against what
 * binutils (nm, readelf) says about real libraries and against the code this
 * process runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proc/elfsym.h"

#define LIBC10 "/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0"
#define LIBCUDART "/usr/local/cuda/lib64/libcudart.so.13"
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct nm_sym {
	unsigned long long value;
	char type;
	char *name; /* as nm prints it: "foo", "foo@V" or "foo@@V" */
};

struct nm_syms {
	struct nm_sym *v;
	size_t n, cap;
};

struct segment {
	unsigned long long offset, vaddr, filesz;
};

struct segments {
	struct segment v[32];
	size_t n;
};

/* skip() the test when a system library is not installed */
static void need_file(const char *path)
{
	if (access(path, R_OK)) {
		print_message("skipped: %s: %s\n", path, strerror(errno));
		skip();
	}
}

static void nm_read(const char *path, struct nm_syms *syms)
{
	char cmd[PATH_MAX + 64], line[1024], name[1024];
	unsigned long long value;
	char type;
	FILE *f;

	*syms = (struct nm_syms){ 0 };
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %1023s", &value, &type, name) != 3)
			continue;
		if (syms->n == syms->cap) {
			size_t cap = syms->cap ? syms->cap * 2 : 1024;
			struct nm_sym *v = realloc(syms->v, cap * sizeof(*v));

			assert_non_null(v);
			syms->v = v;
			syms->cap = cap;
		}
		syms->v[syms->n].value = value;
		syms->v[syms->n].type = type;
		syms->v[syms->n].name = strdup(name);
		assert_non_null(syms->v[syms->n].name);
		syms->n++;
	}
	assert_int_equal(pclose(f), 0);
	if (!syms->n)
		fail_msg("nm -D printed no symbols for %s", path);
}

static void nm_free(struct nm_syms *syms)
{
	for (size_t i = 0; i < syms->n; i++)
		free(syms->v[i].name);
	free(syms->v);
	*syms = (struct nm_syms){ 0 };
}

/* the version tail of nm's name if it is sym's, else NULL: "", "@V", "@@V" */
static const char *nm_version(const char *nmname, const char *sym)
{
	size_t n = strlen(sym);

	if (strncmp(nmname, sym, n) || (nmname[n] && nmname[n] != '@'))
		return NULL;
	return nmname + n;
}

/*
 * The default definition of sym (unversioned or "@@"); fails the test if
 * there is not exactly one. *hidden counts the "@" (non-default) versions.
 */
static const struct nm_sym *nm_default(const struct nm_syms *syms,
				       const char *sym, size_t *hidden)
{
	const struct nm_sym *dflt = NULL;

	*hidden = 0;
	for (size_t i = 0; i < syms->n; i++) {
		const char *ver = nm_version(syms->v[i].name, sym);

		if (!ver)
			continue;
		if (ver[0] == '@' && ver[1] != '@') {
			(*hidden)++;
			continue;
		}
		if (dflt)
			fail_msg("two default definitions of %s", sym);
		dflt = &syms->v[i];
	}
	if (!dflt)
		fail_msg("nm shows no default definition of %s", sym);
	return dflt;
}

static void readelf_segments(const char *path, struct segments *segs)
{
	unsigned long long off, vaddr, paddr, filesz, memsz;
	char cmd[PATH_MAX + 64], line[1024];
	FILE *f;

	segs->n = 0;
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx",
			   &off, &vaddr, &paddr, &filesz, &memsz) != 5)
			continue;
		assert_true(segs->n < ARRAY_SIZE(segs->v));
		segs->v[segs->n++] = (struct segment){ off, vaddr, filesz };
	}
	assert_int_equal(pclose(f), 0);
	if (!segs->n)
		fail_msg("readelf -lW shows no PT_LOAD in %s", path);
}

/* vaddr - p_vaddr + p_offset of the PT_LOAD whose file bytes hold vaddr */
static unsigned long long expected_offset(const struct segments *segs,
					  unsigned long long vaddr)
{
	for (size_t i = 0; i < segs->n; i++) {
		const struct segment *s = &segs->v[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz)
			return vaddr - s->vaddr + s->offset;
	}
	fail_msg("0x%llx is in no PT_LOAD", vaddr);
	return 0;
}

static void file_bytes(const char *path, unsigned long long off, void *buf,
		       size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/*
 * Resolve names in path and check each against nm's default definition and
 * readelf's segments. Returns nothing; fails the test on a mismatch.
 */
static void check_against_binutils(const char *path, const char *const *names,
				   size_t n, struct mt_sym *out)
{
	struct nm_syms syms;
	struct segments segs;
	char err[256] = "";
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	nm_read(path, &syms);
	readelf_segments(path, &segs);
	if (mt_elf_resolve(path, names, n, out, err, sizeof(err)))
		fail_msg("mt_elf_resolve %s: %s", path, err);
	for (size_t k = 0; k < n; k++) {
		size_t hidden;
		const struct nm_sym *s = nm_default(&syms, names[k], &hidden);

		if (out[k].vaddr != s->value)
			fail_msg("%s: vaddr 0x%llx, nm says %s at 0x%llx",
				 names[k], (unsigned long long)out[k].vaddr,
				 s->name, s->value);
		assert_int_equal(out[k].offset,
				 expected_offset(&segs, s->value));
		assert_true(out[k].offset < (unsigned long long)st.st_size);
	}
	nm_free(&syms);
}

static void test_libc10(void **state)
{
	static const char *const names[] = {
		"_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE",
		"_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm",
		"_ZN3c109alloc_cpuEm",
	};
	struct mt_sym out[ARRAY_SIZE(names)];

	need_file(LIBC10);
	check_against_binutils(LIBC10, names, ARRAY_SIZE(names), out);
	/* three different functions */
	assert_int_not_equal(out[0].vaddr, out[1].vaddr);
	assert_int_not_equal(out[1].vaddr, out[2].vaddr);
}

/* "{int64}" stands for one 64-bit integer code; the rest is literal */
static void test_name_patterns(void **state)
{
	static const char pat[] =
		"_ZN3c1027reportMemoryUsageToProfilerEPv{int64}{int64}{int64}NS_6DeviceE";

	/* torch 1.13 (int64_t x3) and 2.x (int64_t, size_t x2) */
	assert_true(mt_elf_name_matches(
		"_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE", pat));
	assert_true(mt_elf_name_matches(
		"_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE", pat));
	assert_true(mt_elf_name_matches(
		"_ZN3c1027reportMemoryUsageToProfilerEPvxyyNS_6DeviceE@@V1",
		pat));
	/* an int is not a 64-bit integer; a missing parameter is not one */
	assert_false(mt_elf_name_matches(
		"_ZN3c1027reportMemoryUsageToProfilerEPvlliNS_6DeviceE", pat));
	assert_false(mt_elf_name_matches(
		"_ZN3c1027reportMemoryUsageToProfilerEPvllNS_6DeviceE", pat));
	/* nothing may follow but a version */
	assert_false(mt_elf_name_matches(
		"_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceEi", pat));
	assert_false(mt_elf_name_matches("_ZN3c1027report", pat));
	assert_false(mt_elf_name_matches("", pat));
	/* plain names as before */
	assert_true(mt_elf_name_matches("cudaMalloc", "cudaMalloc"));
	assert_true(mt_elf_name_matches("cudaMalloc@@libcudart.so.13",
					"cudaMalloc"));
	assert_false(mt_elf_name_matches("cudaMallocHost", "cudaMalloc"));
	assert_false(mt_elf_name_matches("cudaMallo", "cudaMalloc"));
}

/* a pattern finds the one definition nm knows by its full name */
static void test_libc10_pattern(void **state)
{
	static const char *const pat[] = {
		"_ZN3c1027reportMemoryUsageToProfilerEPv{int64}{int64}{int64}NS_6DeviceE",
	};
	static const char *const exact[] = {
		"_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE",
	};
	struct mt_sym a[1], b[1];
	char err[256] = "";
	int fd;

	need_file(LIBC10);
	check_against_binutils(LIBC10, exact, 1, b);
	/* through a descriptor, as a mapped library is read */
	fd = open(LIBC10, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	if (mt_elf_resolve_fd(fd, "libc10", pat, 1, a, err, sizeof(err)))
		fail_msg("mt_elf_resolve_fd: %s", err);
	close(fd);
	assert_int_equal(a[0].vaddr, b[0].vaddr);
	assert_int_equal(a[0].offset, b[0].offset);
}

static void test_cudart_versioned(void **state)
{
	static const char *const names[] = {
		"cudaMalloc",
		"cudaFree",
		"cudaMallocAsync",
	};
	struct mt_sym out[ARRAY_SIZE(names)];
	struct nm_syms syms;

	need_file(LIBCUDART);
	/* the case under test: nm spells these with a default version */
	nm_read(LIBCUDART, &syms);
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		size_t hidden;
		const struct nm_sym *s = nm_default(&syms, names[k], &hidden);

		assert_string_equal(nm_version(s->name, names[k]),
				    "@@libcudart.so.13");
	}
	nm_free(&syms);

	check_against_binutils(LIBCUDART, names, ARRAY_SIZE(names), out);
	/* "cudaMalloc" is not a prefix match of "cudaMallocAsync" */
	assert_int_not_equal(out[0].vaddr, out[2].vaddr);
}

static void test_cudart_not_defined(void **state)
{
	static const char *const names[] = {
		"malloc", /* imported (U), not defined here */
		"cudaMallo", /* a prefix of a defined name */
		"cudaMallocX", /* a defined name and more */
		"mt_no_such_function",
		"cudaMalloc",
	};
	struct mt_sym out[ARRAY_SIZE(names)];
	char err[256] = "";

	need_file(LIBCUDART);
	assert_int_equal(mt_elf_resolve(LIBCUDART, names, ARRAY_SIZE(names),
					out, err, sizeof(err)),
			 0);
	for (size_t k = 0; k < 4; k++) {
		if (out[k].vaddr || out[k].offset)
			fail_msg("%s: found at 0x%llx", names[k],
				 (unsigned long long)out[k].vaddr);
	}
	/* a missing name does not disturb the ones after it */
	assert_int_not_equal(out[4].vaddr, 0);
}

/* the load bias of the loaded object whose file is the same as path's */
struct find_obj {
	dev_t dev;
	ino_t ino;
	uintptr_t bias;
	bool found;
};

static int find_obj_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_obj *fo = data;
	struct stat st;

	if (!info->dlpi_name || !info->dlpi_name[0] ||
	    stat(info->dlpi_name, &st))
		return 0;
	if (st.st_dev != fo->dev || st.st_ino != fo->ino)
		return 0;
	fo->bias = info->dlpi_addr;
	fo->found = true;
	return 1;
}

static void test_libc_versions(void **state)
{
	/* several versions each: the "@@" one must win */
	static const char *const multi[] = {
		"realpath",
		"pthread_cond_wait",
		"memcpy",
	};
	static const char *const names[] = {
		"malloc", "free", "realpath", "pthread_cond_wait", "memcpy",
	};
	struct mt_sym out[ARRAY_SIZE(names)];
	struct nm_syms syms;

	need_file(LIBC);
	nm_read(LIBC, &syms);
	for (size_t k = 0; k < ARRAY_SIZE(multi); k++) {
		size_t hidden;
		const struct nm_sym *s = nm_default(&syms, multi[k], &hidden);

		if (!hidden)
			fail_msg("nm shows one version of %s: no test",
				 multi[k]);
		assert_true(strstr(s->name, "@@") != NULL);
		/* the old versions live elsewhere */
		for (size_t i = 0; i < syms.n; i++) {
			const char *ver = nm_version(syms.v[i].name, multi[k]);

			if (ver && ver[0] == '@' && ver[1] != '@')
				assert_int_not_equal(syms.v[i].value, s->value);
		}
	}
	nm_free(&syms);

	check_against_binutils(LIBC, names, ARRAY_SIZE(names), out);
}

/* the offsets point at the very bytes this process runs */
static void test_libc_offsets_in_process(void **state)
{
	static const char *const names[] = {
		"realpath",
		"pthread_cond_wait",
		"getpid",
		"fopen",
	};
	struct mt_sym out[ARRAY_SIZE(names)];
	struct find_obj fo = { 0 };
	char err[256] = "";
	struct stat st;

	need_file(LIBC);
	assert_int_equal(stat(LIBC, &st), 0);
	fo.dev = st.st_dev;
	fo.ino = st.st_ino;
	dl_iterate_phdr(find_obj_cb, &fo);
	if (!fo.found)
		fail_msg("%s is not the libc this test runs with", LIBC);

	assert_int_equal(mt_elf_resolve(LIBC, names, ARRAY_SIZE(names), out,
					err, sizeof(err)),
			 0);
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		unsigned char disk[16];

		assert_int_not_equal(out[k].vaddr, 0);
		file_bytes(LIBC, out[k].offset, disk, sizeof(disk));
		if (memcmp(disk, (const void *)(fo.bias + out[k].vaddr),
			   sizeof(disk)))
			fail_msg("%s: bytes at offset 0x%llx differ from code",
				 names[k], (unsigned long long)out[k].offset);
	}
}

/*
 * A uprobe goes past a leading endbr64 (CET builds): 4 bytes on; any other
 * start, a short read or an unreadable descriptor keeps the offset.
 */
static void test_probe_offset(void **state)
{
	static const unsigned char code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x56, /* endbr64; push %r14 */
		0x55, 0x48, 0x89, 0xe5, /* push %rbp; mov %rsp,%rbp */
		0xf3, 0x0f, 0x1e, /* endbr64 cut by the end of the file */
	};
	char path[] = "/tmp/mt-test-probe-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, code, sizeof(code)), sizeof(code));
	assert_int_equal(mt_elf_probe_point(fd, 0, 0, false).off, 4);
	assert_int_equal(mt_elf_probe_point(fd, 6, 0, false).off, 0);
	assert_int_equal(mt_elf_probe_point(fd, 10, 0, false).off, 0);
	assert_int_equal(mt_elf_probe_point(fd, 1000, 0, false).off, 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(mt_elf_probe_point(fd, 0, 0, false).off, 0);
}

int main(void);

/* a function of this program, in .symtab only (static) */
__attribute__((noinline)) static int marker(int x)
{
	return x * 7 + 3;
}

static int first_obj_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

/* .symtab of this unstripped test program */
static void test_self_symtab(void **state)
{
	static const char *const names[] = { "marker", "main" };
	struct mt_sym out[ARRAY_SIZE(names)];
	uintptr_t addr[] = { (uintptr_t)&marker, (uintptr_t)&main };
	char exe[PATH_MAX], err[256] = "";
	uintptr_t bias = UINTPTR_MAX;
	ssize_t len;

	assert_int_equal(marker(1), 10);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	/* the main program comes first; its load bias is 0 unless PIE */
	dl_iterate_phdr(first_obj_cb, &bias);
	assert_int_not_equal(bias, UINTPTR_MAX);

	assert_int_equal(mt_elf_resolve(exe, names, ARRAY_SIZE(names), out, err,
					sizeof(err)),
			 0);
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		unsigned char disk[16];

		assert_int_equal(out[k].vaddr + bias, addr[k]);
		file_bytes(exe, out[k].offset, disk, sizeof(disk));
		if (memcmp(disk, (const void *)addr[k], sizeof(disk)))
			fail_msg("%s: bytes at offset 0x%llx differ from code",
				 names[k], (unsigned long long)out[k].offset);
	}
}

static void test_no_names(void **state)
{
	static const char *const names[] = { "main" };
	struct mt_sym out[1] = { { 0x1234, 0x5678, 0x9a } };
	char err[64] = "";

	/* nothing asked, nothing written */
	assert_int_equal(mt_elf_resolve("/proc/self/exe", names, 0, out, err,
					sizeof(err)),
			 0);
	assert_int_equal(out[0].vaddr, 0x1234);
	assert_int_equal(out[0].offset, 0x5678);
}

static void test_too_many_names(void **state)
{
	static const char *names[65];
	static struct mt_sym out[65];
	char err[256] = "";

	for (size_t k = 0; k < ARRAY_SIZE(names); k++)
		names[k] = "main";
	assert_int_equal(mt_elf_resolve("/proc/self/exe", names, 64, out, err,
					sizeof(err)),
			 0);
	assert_int_not_equal(out[63].vaddr, 0);
	assert_int_equal(out[63].vaddr, out[0].vaddr);
	assert_int_equal(mt_elf_resolve("/proc/self/exe", names, 65, out, err,
					sizeof(err)),
			 -E2BIG);
}

static void test_missing_file(void **state)
{
	static const char path[] = "/nonexistent/dir/libcudart.so.13";
	static const char *const names[] = { "cudaMalloc" };
	struct mt_sym out[1];
	char err[256] = "";

	assert_int_equal(mt_elf_resolve(path, names, 1, out, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, path));
}

static char *temp_file(const void *data, size_t len)
{
	char *path = strdup("/tmp/test_elfsym.XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

/* path is not ELF; a temporary file (tmp) is removed before any check */
static void expect_not_elf(char *path, bool tmp)
{
	static const char *const names[] = { "cudaMalloc" };
	struct mt_sym out[1];
	char err[256] = "";
	bool named;
	int ret;

	ret = mt_elf_resolve(path, names, 1, out, err, sizeof(err));
	named = strstr(err, path) != NULL;
	if (tmp) {
		unlink(path);
		free(path);
		path = "(temporary file)";
	}
	if (ret >= 0)
		fail_msg("%s: returned %d", path, ret);
	if (!named)
		fail_msg("%s: message \"%s\" does not name it", path, err);
}

static void test_not_elf(void **state)
{
	static const char text[] = "vm\n";
	static char dir[] = "/tmp", hostname[] = "/etc/hostname";

	expect_not_elf(temp_file(text, sizeof(text) - 1), true);
	expect_not_elf(temp_file("", 0), true);
	expect_not_elf(dir, false);
	if (!access(hostname, R_OK))
		expect_not_elf(hostname, false);
}

/* a file that ends after its ELF header: an error or nothing found */
static void test_truncated_elf(void **state)
{
	static const char *const names[] = { "malloc", "free" };
	unsigned char head[4096];
	struct mt_sym out[ARRAY_SIZE(names)];
	char err[256] = "", *path;
	int ret;

	need_file(LIBC);
	file_bytes(LIBC, 0, head, sizeof(head));
	path = temp_file(head, sizeof(head));
	ret = mt_elf_resolve(path, names, ARRAY_SIZE(names), out, err,
			     sizeof(err));
	unlink(path);
	free(path);
	if (ret == 0) {
		assert_int_equal(out[0].vaddr, 0);
		assert_int_equal(out[1].vaddr, 0);
	} else {
		assert_true(ret < 0);
		assert_true(err[0] != '\0');
	}
}

/*
 * A small shared object written by hand, where binutils cannot be the
 * judge: the text segment's file offset is not its address (as lld and
 * gold lay out), versions come in both orders, and some symbols are not
 * functions, not defined, or not backed by file bytes.
 */
#define SYN_TEXT_OFF 0x1000ULL
#define SYN_TEXT_ADDR 0x201000ULL
#define SYN_TEXT_SIZE 0x1000ULL
#define SYN_VER_DFLT 2
#define SYN_VER_OLD (0x8000 | 3) /* hidden: name@V1 */

struct syn_sym {
	const char *name;
	unsigned char type;
	unsigned char bind;
	__u64 value;
	Elf64_Half versym; /* .dynsym only */
	bool undef;
};

static const struct syn_sym syn_dyn[] = {
	{ "alpha", STT_FUNC, STB_GLOBAL, 0x201010, SYN_VER_DFLT, false },
	{ "alpha", STT_FUNC, STB_GLOBAL, 0x201020, SYN_VER_OLD, false },
	{ "beta", STT_FUNC, STB_GLOBAL, 0x201030, SYN_VER_OLD, false },
	{ "beta", STT_FUNC, STB_GLOBAL, 0x201040, SYN_VER_DFLT, false },
	{ "gamma", STT_OBJECT, STB_GLOBAL, 0x201050, SYN_VER_DFLT, false },
	{ "delta", STT_FUNC, STB_GLOBAL, 0, 0, true },
	/* undefined, with a PLT address as executables have */
	{ "mu", STT_FUNC, STB_GLOBAL, 0x201100, 0, true },
	{ "eps", STT_FUNC, STB_GLOBAL, 0x202800, SYN_VER_DFLT, false },
	{ "zeta", STT_GNU_IFUNC, STB_GLOBAL, 0x201060, SYN_VER_DFLT, false },
	{ "eta", STT_FUNC, STB_GLOBAL, 0x900000, SYN_VER_DFLT, false },
	{ "alphabet", STT_FUNC, STB_GLOBAL, 0x201070, SYN_VER_DFLT, false },
	{ "old", STT_FUNC, STB_GLOBAL, 0x201078, SYN_VER_OLD, false },
};

/* .symtab spells the versions in the names */
static const struct syn_sym syn_tab[] = {
	{ "kappa", STT_FUNC, STB_LOCAL, 0x2010c0, 0, false },
	{ "theta@V1", STT_FUNC, STB_GLOBAL, 0x201080, 0, false },
	{ "theta@@V2", STT_FUNC, STB_GLOBAL, 0x201090, 0, false },
	{ "iota@@V2", STT_FUNC, STB_GLOBAL, 0x2010a0, 0, false },
	{ "iota@V1", STT_FUNC, STB_GLOBAL, 0x2010b0, 0, false },
	/* wrappers, whose code syn_code lays out */
	{ "wrap_ok", STT_FUNC, STB_GLOBAL, 0x201200, 0, false },
	{ "wrap_push", STT_FUNC, STB_GLOBAL, 0x201240, 0, false },
	{ "wrap_far", STT_FUNC, STB_GLOBAL, 0x201280, 0, false },
	{ "wrap_mid", STT_FUNC, STB_GLOBAL, 0x2012c0, 0, false },
	{ "wrap_plain", STT_FUNC, STB_GLOBAL, 0x201340, 0, false },
};

/* the code of the wrappers, at their addresses, and of what they jump to */
static const struct {
	__u64 vaddr;
	unsigned char code[24];
	size_t len;
} syn_code[] = {
	/* Debian's PyErr_SetObject, jumping to 0x201300 */
	{ 0x201200,
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xf2, 0x48,
	    0x89, 0xfe, 0x64, 0x48, 0x8b, 0x3c, 0x25, 0xe8,
	    0xff, 0xff, 0xff, 0xe9, 0xe8, 0x00, 0x00, 0x00 },
	  24 },
	/* a frame first: not an argument move */
	{ 0x201240, { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xe9, 0, 0, 0, 0 }, 10 },
	/* to 0x300000, outside .text (as a PLT entry is) */
	{ 0x201280, { 0x48, 0x89, 0xf2, 0xe9, 0x78, 0xed, 0x0f, 0x00 }, 8 },
	/* marked with endbr64, to 0x201302: inside a function */
	{ 0x2012c0,
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0x39, 0x00, 0x00, 0x00 },
	  9 },
	/* the function they jump to */
	{ 0x201300, { 0xf3, 0x0f, 0x1e, 0xfa, 0xc3 }, 5 },
	/* unmarked, back to 0x201300 */
	{ 0x201340, { 0x48, 0x89, 0xfe, 0xe9, 0xb8, 0xff, 0xff, 0xff }, 8 },
};

struct syn_buf {
	unsigned char *p;
	size_t len;
};

static size_t syn_put(struct syn_buf *b, const void *data, size_t len,
		      size_t align)
{
	size_t at = (b->len + align - 1) / align * align;
	unsigned char *p = realloc(b->p, at + len);

	assert_non_null(p);
	memset(p + b->len, 0, at - b->len);
	memcpy(p + at, data, len);
	b->p = p;
	b->len = at + len;
	return at;
}

/* a string table of the names of syms; *offs gets each name's offset */
static size_t syn_strtab(const struct syn_sym *syms, size_t n, char *tab,
			 size_t *offs)
{
	size_t len = 1;

	tab[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		offs[i] = len;
		strcpy(tab + len, syms[i].name);
		len += strlen(syms[i].name) + 1;
	}
	return len;
}

static size_t syn_symtab(struct syn_buf *b, const struct syn_sym *syms,
			 size_t n, const size_t *offs)
{
	Elf64_Sym v[16] = { { 0 } };

	assert_true(n < 16);
	for (size_t i = 0; i < n; i++) {
		v[i + 1] = (Elf64_Sym){
			.st_name = (Elf64_Word)offs[i],
			.st_info = ELF64_ST_INFO(syms[i].bind, syms[i].type),
			.st_shndx = syms[i].undef ? SHN_UNDEF : 1,
			.st_value = syms[i].value,
			.st_size = 8,
		};
	}
	return syn_put(b, v, (n + 1) * sizeof(v[0]), 8);
}

static char *syn_write(void)
{
	enum {
		S_TEXT = 1,
		S_DYNSYM,
		S_DYNSTR,
		S_VERSYM,
		S_SYMTAB,
		S_STRTAB,
		S_SHSTRTAB,
		S_NUM
	};
	static const char shstr[] = "\0.text\0.dynsym\0.dynstr\0.gnu.version\0"
				    ".symtab\0.strtab\0.shstrtab";
	const size_t nd = ARRAY_SIZE(syn_dyn), nt = ARRAY_SIZE(syn_tab);
	char dynstr[512], strtab[512];
	size_t doffs[16], toffs[16], dynstr_len, strtab_len;
	size_t off[S_NUM] = { 0 }, size[S_NUM] = { 0 };
	Elf64_Half versym[16] = { 0 };
	Elf64_Shdr sh[S_NUM];
	Elf64_Phdr ph[2];
	Elf64_Ehdr eh;
	struct syn_buf b = { 0 };
	unsigned char text[SYN_TEXT_SIZE];
	char *path;

	/* headers, then the text at its file offset */
	b.len = SYN_TEXT_OFF;
	b.p = calloc(1, b.len);
	assert_non_null(b.p);
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (unsigned char)(i * 7 + 1);
	for (size_t i = 0; i < ARRAY_SIZE(syn_code); i++)
		memcpy(text + (syn_code[i].vaddr - SYN_TEXT_ADDR),
		       syn_code[i].code, syn_code[i].len);
	off[S_TEXT] = syn_put(&b, text, sizeof(text), 16);
	size[S_TEXT] = sizeof(text);
	assert_int_equal(off[S_TEXT], SYN_TEXT_OFF);

	dynstr_len = syn_strtab(syn_dyn, nd, dynstr, doffs);
	off[S_DYNSYM] = syn_symtab(&b, syn_dyn, nd, doffs);
	size[S_DYNSYM] = (nd + 1) * sizeof(Elf64_Sym);
	off[S_DYNSTR] = syn_put(&b, dynstr, dynstr_len, 1);
	size[S_DYNSTR] = dynstr_len;
	for (size_t i = 0; i < nd; i++)
		versym[i + 1] = syn_dyn[i].versym;
	off[S_VERSYM] = syn_put(&b, versym, (nd + 1) * sizeof(versym[0]), 2);
	size[S_VERSYM] = (nd + 1) * sizeof(versym[0]);
	strtab_len = syn_strtab(syn_tab, nt, strtab, toffs);
	off[S_SYMTAB] = syn_symtab(&b, syn_tab, nt, toffs);
	size[S_SYMTAB] = (nt + 1) * sizeof(Elf64_Sym);
	off[S_STRTAB] = syn_put(&b, strtab, strtab_len, 1);
	size[S_STRTAB] = strtab_len;
	off[S_SHSTRTAB] = syn_put(&b, shstr, sizeof(shstr), 1);
	size[S_SHSTRTAB] = sizeof(shstr);

	memset(sh, 0, sizeof(sh));
	sh[S_TEXT] = (Elf64_Shdr){ .sh_name = 1,
				   .sh_type = SHT_PROGBITS,
				   .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				   .sh_addr = SYN_TEXT_ADDR,
				   .sh_addralign = 16 };
	sh[S_DYNSYM] = (Elf64_Shdr){ .sh_name = 7,
				     .sh_type = SHT_DYNSYM,
				     .sh_link = S_DYNSTR,
				     .sh_info = 1,
				     .sh_addralign = 8,
				     .sh_entsize = sizeof(Elf64_Sym) };
	sh[S_DYNSTR] = (Elf64_Shdr){ .sh_name = 15,
				     .sh_type = SHT_STRTAB,
				     .sh_addralign = 1 };
	sh[S_VERSYM] = (Elf64_Shdr){ .sh_name = 23,
				     .sh_type = SHT_GNU_versym,
				     .sh_link = S_DYNSYM,
				     .sh_addralign = 2,
				     .sh_entsize = sizeof(Elf64_Half) };
	sh[S_SYMTAB] = (Elf64_Shdr){ .sh_name = 36,
				     .sh_type = SHT_SYMTAB,
				     .sh_link = S_STRTAB,
				     .sh_info = 2, /* after kappa */
				     .sh_addralign = 8,
				     .sh_entsize = sizeof(Elf64_Sym) };
	sh[S_STRTAB] = (Elf64_Shdr){ .sh_name = 44,
				     .sh_type = SHT_STRTAB,
				     .sh_addralign = 1 };
	sh[S_SHSTRTAB] = (Elf64_Shdr){ .sh_name = 52,
				       .sh_type = SHT_STRTAB,
				       .sh_addralign = 1 };
	for (int i = S_TEXT; i < S_NUM; i++) {
		sh[i].sh_offset = off[i];
		sh[i].sh_size = size[i];
	}

	/* headers at 0, text 2 MiB further up in memory than in the file */
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R,
			      .p_offset = 0,
			      .p_vaddr = 0,
			      .p_paddr = 0,
			      .p_filesz = SYN_TEXT_OFF,
			      .p_memsz = SYN_TEXT_OFF,
			      .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_X,
			      .p_offset = SYN_TEXT_OFF,
			      .p_vaddr = SYN_TEXT_ADDR,
			      .p_paddr = SYN_TEXT_ADDR,
			      .p_filesz = SYN_TEXT_SIZE,
			      .p_memsz = 2 * SYN_TEXT_SIZE,
			      .p_align = 0x1000 };

	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph[0]);
	eh.e_phnum = ARRAY_SIZE(ph);
	eh.e_shentsize = sizeof(sh[0]);
	eh.e_shnum = S_NUM;
	eh.e_shstrndx = S_SHSTRTAB;
	eh.e_shoff = syn_put(&b, sh, sizeof(sh), 8);
	memcpy(b.p, &eh, sizeof(eh));
	memcpy(b.p + sizeof(eh), ph, sizeof(ph));

	path = temp_file(b.p, b.len);
	free(b.p);
	return path;
}

static void test_synthetic(void **state)
{
	static const struct {
		const char *name;
		__u64 vaddr; /* 0: must not be found */
	} want[] = {
		{ "alpha", 0x201010 }, /* default first */
		{ "beta", 0x201040 }, /* default second */
		{ "gamma", 0 }, /* an object */
		{ "delta", 0 }, /* undefined */
		{ "mu", 0 }, /* undefined, with a value */
		{ "eps", 0 }, /* .bss: no file bytes to probe */
		{ "zeta", 0x201060 }, /* IFUNC */
		{ "eta", 0 }, /* in no segment */
		{ "alphabet", 0x201070 },
		{ "alphab", 0 },
		{ "old", 0x201078 }, /* only a hidden version: still it */
		{ "theta", 0x201090 }, /* .symtab: "@@" after "@" */
		{ "iota", 0x2010a0 }, /* .symtab: "@@" before "@" */
		{ "kappa", 0x2010c0 }, /* .symtab: a local function */
	};
	const char *names[ARRAY_SIZE(want)];
	struct mt_sym out[ARRAY_SIZE(want)];
	char err[256] = "", *path = syn_write();
	int ret;

	for (size_t k = 0; k < ARRAY_SIZE(want); k++)
		names[k] = want[k].name;
	ret = mt_elf_resolve(path, names, ARRAY_SIZE(names), out, err,
			     sizeof(err));
	unlink(path);
	free(path);
	if (ret)
		fail_msg("synthetic ELF: %d: %s", ret, err);
	for (size_t k = 0; k < ARRAY_SIZE(want); k++) {
		__u64 off = want[k].vaddr ? want[k].vaddr - SYN_TEXT_ADDR +
						    SYN_TEXT_OFF :
					    0;

		if (out[k].vaddr != want[k].vaddr)
			fail_msg("%s: vaddr 0x%llx, want 0x%llx", want[k].name,
				 (unsigned long long)out[k].vaddr,
				 (unsigned long long)want[k].vaddr);
		if (want[k].vaddr && out[k].offset != off)
			fail_msg("%s: offset 0x%llx, want 0x%llx", want[k].name,
				 (unsigned long long)out[k].offset,
				 (unsigned long long)off);
	}
}

/* the wrappers of syn_code: followed only in the form we know */
static void test_wrapper_synthetic(void **state)
{
	static const struct {
		const char *wrapper;
		int ret;
		__u64 vaddr;
	} want[] = {
		{ "wrap_ok", 0, 0x201300 },   { "wrap_plain", 0, 0x201300 },
		{ "wrap_push", -ENOEXEC, 0 }, { "wrap_far", -ENOEXEC, 0 },
		{ "wrap_mid", -ENOEXEC, 0 },  { "nosuch", 0, 0 },
	};
	char err[256], *path = syn_write();
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	unlink(path);
	free(path);
	assert_true(fd >= 0);
	for (size_t k = 0; k < ARRAY_SIZE(want); k++) {
		struct mt_sym out;
		int ret;

		err[0] = '\0';
		ret = mt_elf_tail_target_fd(fd, "syn", want[k].wrapper, &out,
					    err, sizeof(err));
		if (ret != want[k].ret || out.vaddr != want[k].vaddr)
			fail_msg("%s: %d 0x%llx (%s), want %d 0x%llx",
				 want[k].wrapper, ret,
				 (unsigned long long)out.vaddr, err,
				 want[k].ret,
				 (unsigned long long)want[k].vaddr);
		if (ret)
			assert_non_null(strstr(err, want[k].wrapper));
		else if (out.vaddr)
			assert_int_equal(out.offset, out.vaddr - SYN_TEXT_ADDR +
							     SYN_TEXT_OFF);
	}
	close(fd);
}

/*
 * _PyErr_SetObject through the PyErr_SetObject that jumps to it in real
 * interpreters, matched by pattern (a missing one is skipped, as above).
 * Where a symbol table names it, what is derived is that or nothing; in
 * Debian's stripped 3.13 and 3.14 (the roots of scripts/debian-root.sh)
 * it must be derived.
 */
static int wrapped_check(const char *pattern, bool must_derive)
{
	static const char *const name = "_PyErr_SetObject";
	char err[256] = "";
	struct mt_sym sym, via;
	int checked = 0;
	glob_t g;

	if (glob(pattern, 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *path = g.gl_pathv[i];
		int fd, ret;

		if (mt_elf_resolve(path, &name, 1, &sym, err, sizeof(err)))
			fail_msg("%s", err);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		ret = mt_elf_tail_target_fd(fd, path, "PyErr_SetObject", &via,
					    err, sizeof(err));
		close(fd);
		print_message("%s: symbol 0x%llx, through the wrapper 0x%llx "
			      "(%d)\n",
			      path, (unsigned long long)sym.vaddr,
			      (unsigned long long)via.vaddr, ret);
		if (ret && (ret != -ENOEXEC || must_derive))
			fail_msg("%s: %s", path, err);
		if (sym.vaddr && via.vaddr &&
		    (via.vaddr != sym.vaddr || via.offset != sym.offset))
			fail_msg(
				"%s: 0x%llx through the wrapper, symbol 0x%llx",
				path, (unsigned long long)via.vaddr,
				(unsigned long long)sym.vaddr);
		checked++;
	}
	globfree(&g);
	return checked;
}

static void test_wrapper_pythons(void **state)
{
	const char *roots = getenv("MT_ROOTS");
	const char *home = getenv("HOME");
	char pat[PATH_MAX];
	int n = 0;

	if (!roots)
		roots = "/var/cache/memtrace-bpf/roots";
	snprintf(pat, sizeof(pat), "%s/trixie-*/usr/bin/python3.13", roots);
	n += wrapped_check(pat, true);
	snprintf(pat, sizeof(pat), "%s/sid-*/usr/bin/python3.1[45]", roots);
	n += wrapped_check(pat, true);
	n += wrapped_check("/usr/bin/python3.1[0-9]", false);
	if (home) {
		snprintf(pat, sizeof(pat),
			 "%s/.pyenv/versions/3.1*/lib/libpython3.*.so.1.0",
			 home);
		n += wrapped_check(pat, false);
	}
	if (!n) {
		print_message("skipped: no CPython 3.10 or newer found\n");
		skip();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc10),
		cmocka_unit_test(test_name_patterns),
		cmocka_unit_test(test_libc10_pattern),
		cmocka_unit_test(test_cudart_versioned),
		cmocka_unit_test(test_cudart_not_defined),
		cmocka_unit_test(test_libc_versions),
		cmocka_unit_test(test_libc_offsets_in_process),
		cmocka_unit_test(test_self_symtab),
		cmocka_unit_test(test_no_names),
		cmocka_unit_test(test_too_many_names),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated_elf),
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_wrapper_synthetic),
		cmocka_unit_test(test_wrapper_pythons),
		cmocka_unit_test(test_probe_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
