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
#include <errno.h>
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
	assert_int_equal(mt_dryrun_prepare(&dev, 2, false, &l), 0);
	assert_int_equal(strncmp(l.dir, tmp, strlen(tmp)), 0);
	assert_int_equal(stat(l.dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	check_lib(l.dir, "libcudart.so.12");
	check_lib(l.dir, "libcuda.so.1");
	check_lib(l.dir, "libnvidia-ml.so.1");
	/* ours by identity: a bind mount or a chroot shows the same inode */
	snprintf(path, sizeof(path), "%s/libcudart.so.12", l.dir);
	assert_int_equal(stat(path, &st), 0);
	assert_true(mt_dryrun_ours(&l, st.st_dev, st.st_ino));
	assert_int_equal(stat("/bin/sh", &st), 0);
	assert_false(mt_dryrun_ours(&l, st.st_dev, st.st_ino));
	assert_int_equal(mt_dryrun_verify(&l, err, sizeof(err)), 0);
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

/* a folder of mode mode owned by uid, made under /tmp, into path */
static void make_dir(char *path, mode_t mode, uid_t uid)
{
	assert_non_null(mkdtemp(path));
	assert_int_equal(chmod(path, mode), 0);
	assert_int_equal(chown(path, uid, 0), 0);
}

/*
 * Where another user could swap the folder for theirs, or the loader would
 * split its path, the folder is not made there (hostile round four: a
 * TMPDIR of another user's gave root their libcudart)
 */
static void test_parent(void **state)
{
	char other[] = "/tmp/mt-test-other.XXXXXX",
	     open_dir[] = "/tmp/mt-test-open.XXXXXX",
	     sticky[] = "/tmp/mt-test-sticky.XXXXXX",
	     colon[] = "/tmp/mt-test-a:b.XXXXXX", real[PATH_MAX],
	     why[PATH_MAX + 128], path[PATH_MAX + 64], link[PATH_MAX + 64];
	struct mt_dryrun_device dev = *mt_dryrun_preset("L4");
	struct mt_dryrun_libs l;

	(void)state;
	if (geteuid() != 0)
		skip(); /* chown to another user needs root */
	make_dir(other, 0755, 4321);
	make_dir(open_dir, 0777, 0);
	make_dir(sticky, 01777, 0);
	make_dir(colon, 0700, 0);
	assert_false(mt_dryrun_parent_ok(other, real, why, sizeof(why)));
	assert_non_null(strstr(why, "belongs to uid 4321"));
	assert_false(mt_dryrun_parent_ok(open_dir, real, why, sizeof(why)));
	assert_non_null(strstr(why, "writable by other users and not sticky"));
	assert_true(mt_dryrun_parent_ok(sticky, real, why, sizeof(why)));
	/* a folder of ours under another user's: the one above fails */
	snprintf(path, sizeof(path), "%s/mine", other);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_false(mt_dryrun_parent_ok(path, real, why, sizeof(why)));
	assert_non_null(strstr(why, "belongs to uid 4321"));
	assert_false(mt_dryrun_parent_ok(colon, real, why, sizeof(why)));
	assert_non_null(strstr(why, "holds ':'"));
	assert_false(
		mt_dryrun_parent_ok("/etc/passwd", real, why, sizeof(why)));
	assert_non_null(strstr(why, "is not a folder"));
	assert_false(mt_dryrun_parent_ok("tmp", real, why, sizeof(why)));
	/* a link is followed once, and the folder it names is what is used */
	snprintf(link, sizeof(link), "%s/link", sticky);
	assert_int_equal(symlink(other, link), 0);
	assert_false(mt_dryrun_parent_ok(link, real, why, sizeof(why)));
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("/tmp", link), 0);
	assert_true(mt_dryrun_parent_ok(link, real, why, sizeof(why)));
	assert_string_equal(real, "/tmp");
	/* such a TMPDIR is passed over for /tmp */
	setenv("TMPDIR", other, 1);
	assert_int_equal(mt_dryrun_prepare(&dev, 1, false, &l), 0);
	assert_int_equal(strncmp(l.dir, "/tmp/memtrace-dryrun.", 21), 0);
	mt_dryrun_cleanup(&l);
	setenv("TMPDIR", "/etc/passwd", 1);
	assert_int_equal(mt_dryrun_prepare(&dev, 1, false, &l), 0);
	assert_int_equal(strncmp(l.dir, "/tmp/memtrace-dryrun.", 21), 0);
	mt_dryrun_cleanup(&l);
	unsetenv("TMPDIR");
	assert_int_equal(unlink(link), 0);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(other), 0);
	assert_int_equal(rmdir(open_dir), 0);
	assert_int_equal(rmdir(sticky), 0);
	assert_int_equal(rmdir(colon), 0);
}

/*
 * The folder renamed aside and another put at its path, as the attack
 * did: the check before the command starts sees it, and the cleanup
 * leaves the impostor's folder alone
 */
static void test_swapped(void **state)
{
	struct mt_dryrun_device dev = *mt_dryrun_preset("L4");
	char err[PATH_MAX + 128], aside[PATH_MAX + 64], lib[PATH_MAX + 32];
	struct mt_dryrun_libs l;
	struct stat st;
	FILE *f;

	(void)state;
	assert_int_equal(mt_dryrun_prepare(&dev, 1, false, &l), 0);
	snprintf(aside, sizeof(aside), "%s.old", l.dir);
	assert_int_equal(rename(l.dir, aside), 0);
	assert_int_equal(mkdir(l.dir, 0700), 0);
	snprintf(lib, sizeof(lib), "%s/libcudart.so.12", l.dir);
	f = fopen(lib, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(mt_dryrun_verify(&l, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "was replaced after it was made"));
	assert_int_equal(stat(lib, &st), 0);
	assert_false(mt_dryrun_ours(&l, st.st_dev, st.st_ino));
	mt_dryrun_cleanup(&l);
	/* ours emptied through the descriptor; theirs untouched */
	assert_int_equal(stat(lib, &st), 0);
	assert_int_equal(rmdir(aside), 0);
	assert_int_equal(unlink(lib), 0);
	snprintf(aside, sizeof(aside), "%s", lib);
	*strrchr(aside, '/') = '\0';
	assert_int_equal(rmdir(aside), 0);

	/* one library replaced in place */
	assert_int_equal(mt_dryrun_prepare(&dev, 1, false, &l), 0);
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", l.dir);
	snprintf(aside, sizeof(aside), "%s/new", l.dir);
	f = fopen(aside, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(rename(aside, lib), 0);
	assert_int_equal(mt_dryrun_verify(&l, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "libcuda.so.1 was replaced"));
	mt_dryrun_cleanup(&l);
	assert_int_equal(l.dir[0], '\0');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_presets),
		cmocka_unit_test(test_prepare),
		cmocka_unit_test(test_parent),
		cmocka_unit_test(test_swapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
