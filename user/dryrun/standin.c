// SPDX-License-Identifier: GPL-2.0
/*
 * The stand-in's libraries come out of the binary (libs.S) into a folder
 * made for this run. LD_LIBRARY_PATH is searched before a library's
 * DT_RUNPATH and the system's, so Debian's torch (whose libc10_cuda needs
 * libcudart.so.12 by name) and a pip wheel's (RUNPATH into
 * site-packages/nvidia) both load these; the tracer checks after the run
 * that they did (trace/dryrun.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "dryrun/standin.h"
#include "lib/err.h"

#define LIB_BOUNDS(sym) extern const unsigned char sym##_start[], sym##_end[]
LIB_BOUNDS(mt_lib_cuda);
LIB_BOUNDS(mt_lib_cudart);
LIB_BOUNDS(mt_lib_cublas);
LIB_BOUNDS(mt_lib_cublaslt);
LIB_BOUNDS(mt_lib_nvml);
LIB_BOUNDS(mt_lib_cudnn);

static const struct lib {
	const char *name;
	const unsigned char *start, *end;
} libs[] = {
	{ "libcuda.so.1", mt_lib_cuda_start, mt_lib_cuda_end },
	{ "libcudart.so.12", mt_lib_cudart_start, mt_lib_cudart_end },
	{ "libcublas.so.12", mt_lib_cublas_start, mt_lib_cublas_end },
	{ "libcublasLt.so.12", mt_lib_cublaslt_start, mt_lib_cublaslt_end },
	{ "libnvidia-ml.so.1", mt_lib_nvml_start, mt_lib_nvml_end },
	{ "libcudnn.so.9", mt_lib_cudnn_start, mt_lib_cudnn_end },
};

_Static_assert(sizeof(libs) / sizeof(libs[0]) == MT_DRYRUN_NLIBS,
	       "MT_DRYRUN_NLIBS counts the libraries");
#define NLIBS MT_DRYRUN_NLIBS

static struct mt_dryrun_id id_of(const struct stat *st)
{
	return (struct mt_dryrun_id){ st->st_dev, st->st_ino };
}

static bool same_id(struct mt_dryrun_id a, struct mt_dryrun_id b)
{
	return a.dev == b.dev && a.ino == b.ino;
}

/*
 * One folder of the path: another user who owns it, or may rename what
 * it holds, could put a folder of theirs where ours was between its making
 * and the command's loading of it, and root would run their code. Sticky
 * and writable by all (/tmp) is safe: only the owner of an entry (us, for
 * the folder we make) may rename it there.
 */
static bool folder_ok(const char *path, const struct stat *st, char *why,
		      size_t whylen)
{
	if (!S_ISDIR(st->st_mode)) {
		snprintf(why, whylen, "%s is not a folder", path);
		return false;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, whylen, "%s belongs to uid %u", path,
			 (unsigned int)st->st_uid);
		return false;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		snprintf(why, whylen,
			 "%s is writable by other users and not sticky", path);
		return false;
	}
	return true;
}

/* the folder path, up to its byte i, checked as folder_ok says */
static bool prefix_ok(char *path, size_t i, char *why, size_t whylen)
{
	char c = path[i];
	struct stat st;
	bool ok;

	path[i] = '\0';
	ok = !lstat(i ? path : "/", &st);
	if (!ok)
		snprintf(why, whylen, "%s: %s", i ? path : "/",
			 strerror(errno));
	else
		ok = folder_ok(i ? path : "/", &st, why, whylen);
	path[i] = c;
	return ok;
}

bool mt_dryrun_parent_ok(const char *path, char *real, char *why, size_t whylen)
{
	struct statvfs sv;
	size_t len;

	if (path[0] != '/') {
		snprintf(why, whylen, "%s is not an absolute path", path);
		return false;
	}
	if (!realpath(path, real)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return false;
	}
	/* LD_LIBRARY_PATH splits at ':' and ';' and expands $ORIGIN */
	if (strpbrk(real, ":;$")) {
		snprintf(why, whylen,
			 "%s holds ':', ';' or '$', which the loader would "
			 "not read as one folder",
			 real);
		return false;
	}
	if (statvfs(real, &sv) || (sv.f_flag & ST_NOEXEC)) {
		snprintf(why, whylen, "%s is mounted noexec", real);
		return false;
	}
	/* every folder from the root down; realpath left no link */
	len = strlen(real);
	if (!prefix_ok(real, 0, why, whylen))
		return false;
	for (size_t i = 1; i <= len; i++)
		if ((i == len || real[i] == '/') &&
		    !prefix_ok(real, i, why, whylen))
			return false;
	return true;
}

/*
 * A folder to make ours in, resolved into real (PATH_MAX): the path is
 * used as checked, never through a link whose target could change after
 * the check. A TMPDIR passed over is said on stderr.
 */
static bool parent_dir(char *real)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };
	const char *env = getenv("TMPDIR");
	char why[PATH_MAX + 128];

	if (env && *env) {
		if (mt_dryrun_parent_ok(env, real, why, sizeof(why)))
			return true;
		mt_err("estimate --dry-run: TMPDIR passed over: %s", why);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mt_dryrun_parent_ok(dirs[i], real, why, sizeof(why)))
			return true;
	return false;
}

static int write_lib(int dirfd, const struct lib *b, mode_t mode,
		     struct mt_dryrun_id *id)
{
	const unsigned char *p = b->start;
	struct stat st;
	int fd, ret = 0;

	fd = openat(dirfd, b->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (p < b->end) {
		ssize_t n = write(fd, p, (size_t)(b->end - p));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
	}
	if (!ret && fstat(fd, &st))
		ret = -errno;
	else if (!ret)
		*id = id_of(&st);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

static int set_env(const struct mt_dryrun_device *dev, unsigned int ndev,
		   const char *dir)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char path[PATH_MAX * 2], num[32], mem[32], cc[32], sms[32];

	if (snprintf(path, sizeof(path), "%s%s%s", dir, old && *old ? ":" : "",
		     old && *old ? old : "") >= (int)sizeof(path))
		return -ENAMETOOLONG;
	snprintf(num, sizeof(num), "%u", ndev);
	snprintf(mem, sizeof(mem), "%llu", dev->mem);
	snprintf(cc, sizeof(cc), "%u.%u", dev->cc_major, dev->cc_minor);
	snprintf(sms, sizeof(sms), "%u", dev->sms);
	if (setenv("LD_LIBRARY_PATH", path, 1) ||
	    setenv("MT_STANDIN_DEVICES", num, 1) ||
	    setenv("MT_STANDIN_DEVICE_MEM", mem, 1) ||
	    setenv("MT_STANDIN_CC", cc, 1) ||
	    setenv("MT_STANDIN_SMS", sms, 1) ||
	    (dev->name ? setenv("MT_STANDIN_MODEL", dev->name, 1) :
			 unsetenv("MT_STANDIN_MODEL")))
		return -errno;
	return 0;
}

/* mt_dryrun_prepare: 0, or -errno with why in err (after the cleanup) */
static int prepare(const struct mt_dryrun_device *dev, unsigned int ndev,
		   bool others_read, struct mt_dryrun_libs *l, char *err,
		   size_t errlen)
{
	char parent[PATH_MAX];
	struct stat st;
	size_t i;
	int ret = 0;

	l->dir[0] = '\0';
	l->dirfd = -1;
	if (!parent_dir(parent)) {
		snprintf(err, errlen,
			 "no folder to put the CUDA stand-in in: /tmp, "
			 "/var/tmp and /dev/shm are mounted noexec or "
			 "writable by other users (set TMPDIR to a folder "
			 "of yours)");
		return -EACCES;
	}
	if (snprintf(l->dir, sizeof(l->dir), "%s/memtrace-dryrun.XXXXXX",
		     parent) >= (int)sizeof(l->dir))
		ret = -ENAMETOOLONG;
	else if (!mkdtemp(l->dir))
		ret = -errno;
	if (ret) {
		snprintf(err, errlen, "make a folder in %s: %s", parent,
			 strerror(-ret));
		l->dir[0] = '\0';
		return ret;
	}
	l->dirfd = open(l->dir, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l->dirfd < 0 || fstat(l->dirfd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "open %s: %s", l->dir, strerror(-ret));
		mt_dryrun_cleanup(l);
		return ret;
	}
	l->id = id_of(&st);
	/* made by us a moment ago: anything else is another's doing */
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		snprintf(err, errlen, "%s is not the folder just made", l->dir);
		mt_dryrun_cleanup(l);
		return -EPERM;
	}
	/* read, never changed, by the user a command runs as (--user) */
	if (others_read && fchmod(l->dirfd, 0711)) {
		ret = -errno;
		snprintf(err, errlen, "chmod %s: %s", l->dir, strerror(-ret));
		mt_dryrun_cleanup(l);
		return ret;
	}
	for (i = 0; !ret && i < NLIBS; i++)
		ret = write_lib(l->dirfd, &libs[i], others_read ? 0555 : 0500,
				&l->files[i]);
	if (ret) {
		snprintf(err, errlen, "write %s/%s: %s", l->dir,
			 libs[i - 1].name, strerror(-ret));
		mt_dryrun_cleanup(l);
		return ret;
	}
	ret = set_env(dev, ndev, l->dir);
	if (ret) {
		snprintf(err, errlen, "set the command's environment: %s",
			 strerror(-ret));
		mt_dryrun_cleanup(l);
	}
	return ret;
}

int mt_dryrun_prepare(const struct mt_dryrun_device *dev, unsigned int ndev,
		      bool others_read, struct mt_dryrun_libs *l)
{
	char err[PATH_MAX + 128];
	int ret = prepare(dev, ndev, others_read, l, err, sizeof(err));

	if (ret)
		mt_err("estimate --dry-run: %s", err);
	return ret;
}

int mt_dryrun_verify(const struct mt_dryrun_libs *l, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	struct stat st;

	if (lstat(l->dir, &st) || !same_id(id_of(&st), l->id)) {
		snprintf(err, errlen,
			 "%s was replaced after it was made: the command "
			 "was not run",
			 l->dir);
		return -EPERM;
	}
	for (size_t i = 0; i < NLIBS; i++) {
		snprintf(path, sizeof(path), "%s/%s", l->dir, libs[i].name);
		if (stat(path, &st) || !same_id(id_of(&st), l->files[i])) {
			snprintf(err, errlen,
				 "%s was replaced after it was written: the "
				 "command was not run",
				 path);
			return -EPERM;
		}
	}
	return 0;
}

bool mt_dryrun_ours(const struct mt_dryrun_libs *l, unsigned long long dev,
		    unsigned long long ino)
{
	struct mt_dryrun_id id = { dev, ino };

	for (size_t i = 0; l->dir[0] && i < NLIBS; i++)
		if (same_id(id, l->files[i]))
			return true;
	return false;
}

void mt_dryrun_cleanup(struct mt_dryrun_libs *l)
{
	struct stat st;

	if (!l->dir[0])
		return;
	/* through the folder held: never a file of a folder put in its place */
	for (size_t i = 0; l->dirfd >= 0 && i < NLIBS; i++)
		if (unlinkat(l->dirfd, libs[i].name, 0) && errno != ENOENT)
			mt_err("remove %s/%s: %s", l->dir, libs[i].name,
			       strerror(errno));
	if (l->dirfd >= 0 &&
	    (lstat(l->dir, &st) || !same_id(id_of(&st), l->id)))
		mt_err("%s is no longer the folder the dry run made: left "
		       "as it is",
		       l->dir);
	else if (rmdir(l->dir))
		mt_err("remove %s: %s", l->dir, strerror(errno));
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->dirfd = -1;
	l->dir[0] = '\0';
}
