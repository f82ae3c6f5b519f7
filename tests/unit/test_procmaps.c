// SPDX-License-Identifier: GPL-2.0
/*
 * user/proc/maps.c: parsing /proc/PID/maps and naming the libraries in it;
 * user/proc/mapfile.c: opening the very file a mapping holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "event/kinds.h"
#include "proc/mapfile.h"
#include "proc/maps.h"

static int parse(const char *line, struct mt_mapping *m, char *path,
		 size_t pathlen)
{
	/* fill with garbage: every field must be written by the parser */
	memset(m, 0xa5, sizeof(*m));
	memset(path, 'X', pathlen);
	return mt_maps_parse_line(line, m, path, pathlen);
}

static void test_parse_file_mapping(void **state)
{
	struct mt_mapping m;
	char path[256];

	assert_int_equal(
		parse("7f3a1c000000-7f3a1c200000 r-xp 00026000 fe:01 1835042"
		      "                    /usr/lib/x86_64-linux-gnu/libc.so.6\n",
		      &m, path, sizeof(path)),
		0);
	assert_int_equal(m.start, 0x7f3a1c000000ULL);
	assert_int_equal(m.end, 0x7f3a1c200000ULL);
	assert_int_equal(m.offset, 0x26000);
	assert_int_equal(m.dev, makedev(0xfe, 0x01));
	assert_int_equal(m.inode, 1835042);
	assert_true(m.exec);
	assert_null(m.path);
	assert_string_equal(path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
}

static void test_parse_not_exec(void **state)
{
	struct mt_mapping m;
	char path[256];

	assert_int_equal(parse("5650a3969000-5650a396b000 r--p 00000000 08:02 "
			       "247498     /usr/bin/head\n",
			       &m, path, sizeof(path)),
			 0);
	assert_false(m.exec);
	assert_int_equal(m.dev, makedev(8, 2));
	assert_string_equal(path, "/usr/bin/head");

	/* "x" only counts in the third column */
	assert_int_equal(parse("1000-2000 rw-x 00000000 00:00 0\n", &m, path,
			       sizeof(path)),
			 0);
	assert_false(m.exec);
}

static void test_parse_anonymous(void **state)
{
	struct mt_mapping m;
	char path[64];

	/* the kernel ends an unnamed mapping with "0 \n" */
	assert_int_equal(parse("55d883aca000-55d883ada000 rw-p 00000000 00:00 "
			       "0 \n",
			       &m, path, sizeof(path)),
			 0);
	assert_int_equal(m.start, 0x55d883aca000ULL);
	assert_int_equal(m.end, 0x55d883ada000ULL);
	assert_int_equal(m.inode, 0);
	assert_int_equal(m.dev, makedev(0, 0));
	assert_false(m.exec);
	assert_string_equal(path, "");

	/* without the trailing space, newline or both */
	assert_int_equal(parse("1000-2000 rwxp 00000000 00:00 0\n", &m, path,
			       sizeof(path)),
			 0);
	assert_string_equal(path, "");
	assert_true(m.exec);
	assert_int_equal(parse("1000-2000 rwxp 00000000 00:00 0", &m, path,
			       sizeof(path)),
			 0);
	assert_string_equal(path, "");
	assert_int_equal(m.end, 0x2000);
}

static void test_parse_special_names(void **state)
{
	struct mt_mapping m;
	char path[256];

	assert_int_equal(parse("7ff9b7b57000-7ff9b7b59000 r-xp 00000000 00:00 0"
			       "                          [vdso]\n",
			       &m, path, sizeof(path)),
			 0);
	assert_string_equal(path, "[vdso]");
	assert_true(m.exec);

	/* a path may hold spaces; only the newline ends it */
	assert_int_equal(parse("400000-452000 r-xp 00001000 fd:00 77"
			       "    /home/a user/my libs/libfoo.so\n",
			       &m, path, sizeof(path)),
			 0);
	assert_string_equal(path, "/home/a user/my libs/libfoo.so");
	assert_int_equal(m.offset, 0x1000);
	assert_int_equal(m.inode, 77);

	assert_int_equal(parse("400000-452000 r-xp 00000000 fd:00 77"
			       "    /x/libc10.so (deleted)\n",
			       &m, path, sizeof(path)),
			 0);
	assert_string_equal(path, "/x/libc10.so (deleted)");
}

static void test_parse_path_length(void **state)
{
	static const char line[] = "1000-2000 r-xp 00000000 00:00 1 /a/b.so\n";
	struct mt_mapping m;
	char path[16];

	/* "/a/b.so" and its NUL need 8 bytes */
	assert_int_equal(parse(line, &m, path, 8), 0);
	assert_string_equal(path, "/a/b.so");
	assert_int_equal(parse(line, &m, path, 7), -EINVAL);
}

static void test_parse_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage\n",
		/* no inode */
		"00400000-00452000 r-xp 00000000 08:02\n",
		/* no dash between the addresses */
		"00400000 00452000 r-xp 00000000 08:02 173521 /bin/x\n",
		/* no device colon */
		"00400000-00452000 r-xp 00000000 0802 173521 /bin/x\n",
		/* non-hex address */
		"zz400000-00452000 r-xp 00000000 08:02 173521 /bin/x\n",
		/* end before start */
		"00452000-00400000 r-xp 00000000 08:02 173521 /bin/x\n",
		/* five permission characters */
		"00400000-00452000 r-xpq 00000000 08:02 173521 /bin/x\n",
	};
	struct mt_mapping m;
	char path[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = parse(bad[i], &m, path, sizeof(path));

		if (ret != -EINVAL)
			fail_msg("line %zu \"%s\": got %d, want -EINVAL", i,
				 bad[i], ret);
	}
}

static void test_classify(void **state)
{
	static const struct {
		const char *path;
		int lib;
	} cases[] = {
		{ "/usr/local/cuda/lib64/libcudart.so.13", MT_LIB_CUDART },
		{ "libcudart.so", MT_LIB_CUDART },
		{ "/venv/lib/python3.11/site-packages/torch/lib/"
		  "libcudart-9335f6a2.so.12",
		  MT_LIB_CUDART },
		{ "/usr/lib/x86_64-linux-gnu/libcuda.so.1", MT_LIB_CUDA },
		{ "libcuda.so", MT_LIB_CUDA },
		{ "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", -1 },
		{ "libcudadevrt.a", -1 },
		{ "libcudart_static.a", -1 },
		{ "/usr/lib/libc10.so", MT_LIB_C10 },
		{ "/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0", MT_LIB_C10 },
		{ "/venv/torch/lib/libc10_cuda.so", -1 },
		{ "/lib64/ld-linux-x86-64.so.2", MT_LIB_LDSO },
		{ "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", MT_LIB_LDSO },
		{ "/lib/ld-linux-aarch64.so.1", MT_LIB_LDSO },
		{ "/lib/ld-musl-x86_64.so.1", MT_LIB_LDSO },
		{ "/lib/x86_64-linux-gnu/libc.so.6", -1 },
		{ "[vdso]", -1 },
		{ "", -1 },
		/* a directory named like a library does not make one */
		{ "/opt/libcudart.so.13/libfoo.so", -1 },
		/* replaced on disk since mapped: still the file running */
		{ "/x/libc10.so (deleted)", MT_LIB_C10 },
		{ "/x/libcudart.so.13 (deleted)", MT_LIB_CUDART },
		/* CPython: its library, or an executable with it linked in */
		{ "/usr/bin/python3.11", MT_LIB_PYTHON },
		{ "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
		  MT_LIB_PYTHON },
		{ "/usr/bin/python3", -1 },
		{ "/usr/bin/python3-config", -1 },
		{ "/usr/lib/python3.11/lib-dynload/_ctypes.so", -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = mt_lib_classify(cases[i].path);

		if (got != cases[i].lib)
			fail_msg("\"%s\": got %d, want %d", cases[i].path, got,
				 cases[i].lib);
	}
}

static void test_basename(void **state)
{
	static const char full[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	static const char bare[] = "libc.so.6";
	static const char dir[] = "/usr/lib/";

	assert_string_equal(mt_basename(full), "libc.so.6");
	/* a pointer into the argument, not a copy */
	assert_ptr_equal(mt_basename(full), full + strlen(full) - 9);
	assert_ptr_equal(mt_basename(bare), bare);
	assert_string_equal(mt_basename(dir), "");
	assert_string_equal(mt_basename("/"), "");
	assert_string_equal(mt_basename(""), "");
	assert_string_equal(mt_basename("[vdso]"), "[vdso]");
}

/* a function of this program, not inlined away */
__attribute__((noinline)) static int marker(int x)
{
	return x * 3 + 1;
}

static void check_sorted(const struct mt_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		assert_true(maps->v[i].exec);
		assert_true(maps->v[i].start < maps->v[i].end);
		if (i)
			assert_true(maps->v[i - 1].end <= maps->v[i].start);
	}
}

static void test_read_self(void **state)
{
	struct mt_maps maps = { 0 };
	const struct mt_mapping *m;
	char exe[PATH_MAX];
	uintptr_t addr = (uintptr_t)&marker;
	int local = marker(1);
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';

	assert_int_equal(mt_maps_read(getpid(), &maps), 0);
	assert_true(maps.n > 0);
	assert_true(maps.n <= maps.cap);
	check_sorted(&maps);

	m = mt_maps_find(&maps, addr);
	assert_non_null(m);
	assert_true(m->start <= addr && addr < m->end);
	assert_true(m->exec);
	assert_non_null(m->path);
	assert_string_equal(m->path, exe);
	assert_int_equal(mt_lib_classify(m->path), -1);

	/* only executable mappings are kept: not the stack, not address 1 */
	assert_null(mt_maps_find(&maps, (uintptr_t)&local));
	assert_null(mt_maps_find(&maps, 1));
	assert_null(mt_maps_find(&maps, 0));
	assert_null(mt_maps_find(&maps, UINT64_MAX));
	/* the first and last bytes of a mapping, and the end (exclusive) */
	assert_ptr_equal(mt_maps_find(&maps, m->start), m);
	assert_ptr_equal(mt_maps_find(&maps, m->end - 1), m);
	assert_ptr_not_equal(mt_maps_find(&maps, m->end), m);
	mt_maps_free(&maps);
	assert_null(maps.v);
	assert_int_equal(maps.n, 0);
}

static void test_read_finds_libc(void **state)
{
	struct mt_maps maps = { 0 };
	const struct mt_mapping *m;
	void *h, *fn;
	Dl_info info;
	char *want;
	uintptr_t addr;

	/*
	 * libc's own getpid, as dlsym on libc's handle sees it: not a PLT
	 * stub and not a sanitizer interceptor.
	 */
	h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	fn = dlsym(h, "getpid");
	assert_non_null(fn);
	assert_true(dladdr(fn, &info) != 0);
	want = realpath(info.dli_fname, NULL);
	assert_non_null(want);
	addr = (uintptr_t)fn;

	/* read twice into the same struct: the second read replaces */
	assert_int_equal(mt_maps_read(getpid(), &maps), 0);
	assert_int_equal(mt_maps_read(getpid(), &maps), 0);
	check_sorted(&maps);
	m = mt_maps_find(&maps, addr);
	assert_non_null(m);
	assert_true(m->start <= addr && addr < m->end);
	assert_non_null(m->path);
	assert_string_equal(mt_basename(m->path), "libc.so.6");
	assert_string_equal(m->path, want);
	assert_int_equal(mt_lib_classify(m->path), -1);

	free(want);
	mt_maps_free(&maps);
	dlclose(h);
}

static void test_read_missing_pid(void **state)
{
	struct mt_maps maps = { 0 };

	/* above any pid_max the kernel allows */
	assert_int_equal(mt_maps_read(INT_MAX, &maps), -ENOENT);
	assert_int_equal(maps.n, 0);
	mt_maps_free(&maps);
}

/* a temporary file of len bytes of c, mapped read-only; *m describes it */
static void *map_temp(char *path, size_t len, int c, struct mt_mapping *m)
{
	struct stat st;
	char buf[4096];
	void *addr;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	memset(buf, c, sizeof(buf));
	for (size_t done = 0; done < len; done += sizeof(buf))
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(fstat(fd, &st), 0);
	addr = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(addr != MAP_FAILED);
	close(fd);
	*m = (struct mt_mapping){ .start = (uintptr_t)addr,
				  .end = (uintptr_t)addr + len,
				  .dev = st.st_dev,
				  .inode = st.st_ino,
				  .path = path };
	return addr;
}

/*
 * The file mapped is opened, not the one at its path now: a library
 * replaced on disk after it was mapped is still the one read and probed.
 */
static void test_mapfile_replaced(void **state)
{
	char path[] = "/tmp/test_procmaps.XXXXXX";
	char other[] = "/tmp/test_procmaps.XXXXXX";
	char err[256] = "", fdpath[64];
	struct mt_mapping m, m2;
	struct stat st, via;
	void *a, *b;
	char c;
	int fd;

	a = map_temp(path, 8192, 'A', &m);
	b = map_temp(other, 4096, 'B', &m2);
	/* the path now names another file */
	assert_int_equal(rename(other, path), 0);
	fd = mt_mapfile_open(getpid(), &m, err, sizeof(err));
	if (fd < 0)
		fail_msg("mt_mapfile_open: %s", err);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, m.inode);
	assert_int_equal(st.st_dev, m.dev);
	assert_int_equal(pread(fd, &c, 1, 0), 1);
	assert_int_equal(c, 'A');
	/* a path naming the descriptor resolves to the same inode */
	assert_int_equal(mt_mapfile_fd_path(fd, fdpath, sizeof(fdpath)), 0);
	assert_int_equal(stat(fdpath, &via), 0);
	assert_int_equal(via.st_ino, m.inode);
	assert_int_equal(via.st_dev, m.dev);
	/* what the path names is not what is mapped */
	assert_int_equal(stat(path, &st), 0);
	assert_int_not_equal(st.st_ino, m.inode);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(fd);
	unlink(path);
	munmap(a, 8192);
	munmap(b, 4096);
}

/* an inode other than the mapping's, or no mapping: one line, no fd */
static void test_mapfile_refused(void **state)
{
	char path[] = "/tmp/test_procmaps.XXXXXX";
	struct mt_mapping m, bad;
	char err[256] = "";
	void *a;

	a = map_temp(path, 4096, 'A', &m);
	bad = m;
	bad.inode++;
	assert_int_equal(mt_mapfile_open(getpid(), &bad, err, sizeof(err)),
			 -ESTALE);
	assert_non_null(strstr(err, path));
	assert_null(strchr(err, '\n'));

	/* the range is not a mapping (the end is off by a page) */
	bad = m;
	bad.end += 4096;
	err[0] = '\0';
	assert_true(mt_mapfile_open(getpid(), &bad, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "map_files"));

	munmap(a, 4096);
	unlink(path);
	bad = m;
	assert_true(mt_mapfile_open(INT_MAX, &bad, err, sizeof(err)) < 0);
}

/* a FIFO or a directory at a path: refused at once, never waited on */
static void test_mapfile_path_not_regular(void **state)
{
	char dir[] = "/tmp/test_procmaps.XXXXXX", fifo[64], err[256] = "";

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* no writer: a blocking open would wait here for ever */
	assert_int_equal(mt_mapfile_open_path(fifo, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, fifo));
	assert_int_equal(mt_mapfile_open_path(dir, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, dir));
	assert_int_equal(
		mt_mapfile_open_path("/nonexistent/lib.so", err, sizeof(err)),
		-ENOENT);
	assert_non_null(strstr(err, "/nonexistent/lib.so"));
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_file_mapping),
		cmocka_unit_test(test_parse_not_exec),
		cmocka_unit_test(test_parse_anonymous),
		cmocka_unit_test(test_parse_special_names),
		cmocka_unit_test(test_parse_path_length),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_basename),
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_read_finds_libc),
		cmocka_unit_test(test_read_missing_pid),
		cmocka_unit_test(test_mapfile_replaced),
		cmocka_unit_test(test_mapfile_refused),
		cmocka_unit_test(test_mapfile_path_not_regular),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
