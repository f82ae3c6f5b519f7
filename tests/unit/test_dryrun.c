// SPDX-License-Identifier: GPL-2.0
/*
 * user/dryrun: the device presets, and the stand-in's libraries written
 * out of the binary into a private folder the command's loader searches
 * first, then removed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dryrun/device.h"
#include "dryrun/standin.h"

static void test_presets(void **state)
{
	const struct mt_dryrun_device *d = mt_dryrun_preset("a100-40gb");
	char names[256];

	(void)state;
	assert_non_null(d);
	assert_string_equal(d->name, "A100-40GB");
	assert_int_equal(d->mem, 40960ULL << 20);
	assert_int_equal(d->cc_major, 8);
	assert_int_equal(d->cc_minor, 0);
	assert_int_equal(d->sms, 108);
	assert_null(mt_dryrun_preset("X100"));
	assert_null(mt_dryrun_preset(""));
	d = mt_dryrun_preset(MT_DRYRUN_DEFAULT);
	assert_non_null(d);
	assert_int_equal(d->cc_major, 9);
	mt_dryrun_preset_names(names, sizeof(names));
	assert_non_null(strstr(names, "H100-80GB, "));
	assert_non_null(strstr(names, ", T4"));
	/* cut short, never past the buffer */
	mt_dryrun_preset_names(names, 12);
	assert_true(strlen(names) < 12);
}

/* the libraries written are whole ELF files with the soname as name */
static void check_lib(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	unsigned char ident[EI_NIDENT];
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0500);
	assert_true(st.st_size > 4096);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(ident, 1, sizeof(ident), f), sizeof(ident));
	fclose(f);
	assert_memory_equal(ident, ELFMAG, SELFMAG);
}

static void test_prepare(void **state)
{
	struct mt_dryrun_device dev = *mt_dryrun_preset("L4");
	char tmp[] = "/tmp/mt-test-dryrun.XXXXXX", err[512],
	     path[PATH_MAX + 64];
	struct mt_dryrun_libs l;
	struct stat st;
	const char *env;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	setenv("TMPDIR", tmp, 1);
	setenv("LD_LIBRARY_PATH", "/opt/x", 1);
	assert_int_equal(mt_dryrun_prepare(&dev, 2, &l, err, sizeof(err)), 0);
	assert_int_equal(strncmp(l.dir, tmp, strlen(tmp)), 0);
	assert_int_equal(stat(l.dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	check_lib(l.dir, "libcudart.so.12");
	check_lib(l.dir, "libcuda.so.1");
	check_lib(l.dir, "libnvidia-ml.so.1");
	snprintf(path, sizeof(path), "%s/libcudart.so.12", l.dir);
	assert_true(mt_dryrun_ours(&l, path));
	assert_false(mt_dryrun_ours(&l, "/usr/lib/libcudart.so.12"));
	/* the command chrooted into a root that binds the folder */
	snprintf(path, sizeof(path), "/var/cache/root%s/libcudart.so.12",
		 l.dir);
	assert_true(mt_dryrun_ours(&l, path));
	snprintf(path, sizeof(path), "%s/sub/libcudart.so.12", l.dir);
	assert_false(mt_dryrun_ours(&l, path));
	snprintf(path, sizeof(path), "%sx/libcudart.so.12", l.dir);
	assert_false(mt_dryrun_ours(&l, path));
	snprintf(path, sizeof(path), "%s/", l.dir);
	assert_false(mt_dryrun_ours(&l, path));
	env = getenv("LD_LIBRARY_PATH");
	assert_int_equal(strncmp(env, l.dir, strlen(l.dir)), 0);
	assert_string_equal(env + strlen(l.dir), ":/opt/x");
	assert_string_equal(getenv("MT_STANDIN_DEVICES"), "2");
	assert_string_equal(getenv("MT_STANDIN_DEVICE_MEM"), "24152899584");
	assert_string_equal(getenv("MT_STANDIN_CC"), "8.9");
	assert_string_equal(getenv("MT_STANDIN_SMS"), "58");
	assert_string_equal(getenv("MT_STANDIN_MODEL"), "L4");
	snprintf(path, sizeof(path), "%s", l.dir);
	mt_dryrun_cleanup(&l);
	assert_int_equal(l.dir[0], '\0');
	assert_int_not_equal(stat(path, &st), 0);
	assert_int_equal(rmdir(tmp), 0);
	unsetenv("TMPDIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_presets),
		cmocka_unit_test(test_prepare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
