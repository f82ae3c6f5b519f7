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

#define NLIBS (sizeof(libs) / sizeof(libs[0]))

/* a folder to make ours in: one where mapped code may run */
static const char *parent_dir(void)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };
	const char *env = getenv("TMPDIR");
	struct statvfs sv;

	if (env && env[0] == '/' && !statvfs(env, &sv) &&
	    !(sv.f_flag & ST_NOEXEC))
		return env;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!statvfs(dirs[i], &sv) && !(sv.f_flag & ST_NOEXEC))
			return dirs[i];
	return NULL;
}

static int write_lib(int dirfd, const struct lib *b)
{
	const unsigned char *p = b->start;
	int fd, ret = 0;

	fd = openat(dirfd, b->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500);
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

int mt_dryrun_prepare(const struct mt_dryrun_device *dev, unsigned int ndev,
		      struct mt_dryrun_libs *l, char *err, size_t errlen)
{
	const char *parent = parent_dir();
	size_t i;
	int dirfd, ret = 0;

	l->dir[0] = '\0';
	if (!parent) {
		snprintf(err, errlen,
			 "no folder to put the CUDA stand-in in: /tmp, "
			 "/var/tmp and /dev/shm are mounted noexec (set "
			 "TMPDIR to one that is not)");
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
	dirfd = open(l->dir, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "open %s: %s", l->dir, strerror(-ret));
		mt_dryrun_cleanup(l);
		return ret;
	}
	for (i = 0; !ret && i < NLIBS; i++)
		ret = write_lib(dirfd, &libs[i]);
	close(dirfd);
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

bool mt_dryrun_ours(const struct mt_dryrun_libs *l, const char *path)
{
	size_t n = strlen(l->dir);
	const char *slash = strrchr(path, '/');
	size_t head;

	if (!n || !slash || !slash[1])
		return false;
	/* the folder is what comes before the file's name */
	head = (size_t)(slash - path);
	return head >= n && !strncmp(slash - n, l->dir, n);
}

void mt_dryrun_cleanup(struct mt_dryrun_libs *l)
{
	if (!l->dir[0])
		return;
	for (size_t i = 0; i < NLIBS; i++) {
		char path[PATH_MAX + 32];

		snprintf(path, sizeof(path), "%s/%s", l->dir, libs[i].name);
		if (unlink(path) && errno != ENOENT)
			mt_err("remove %s: %s", path, strerror(errno));
	}
	if (rmdir(l->dir))
		mt_err("remove %s: %s", l->dir, strerror(errno));
	l->dir[0] = '\0';
}
