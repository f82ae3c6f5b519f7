// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/outfile.h"

#define REFUSE_HINT "(remove it or choose another path)"

/* a new name created again after we saw it: give up after a few rounds */
#define MAX_TRIES 4

static int fail(const char *path, int errnum, const char *why, char *err,
		size_t errlen)
{
	snprintf(err, errlen, "%s: %s", path, why ? why : strerror(errnum));
	return -errnum;
}

/* the directory PATH's last component is in, opened to check and use it */
static int open_dir(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!slash) {
		*base = path;
		return open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	/* "dir/": the directory itself, which open refuses with EISDIR */
	*base = slash[1] ? slash + 1 : ".";
	if (slash == path)
		return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if ((size_t)(slash - path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* an id sudo put in the environment: a plain decimal number, or false */
static bool env_id(const char *name, unsigned int *id)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= UINT_MAX)
		return false;
	*id = (unsigned int)v;
	return true;
}

/*
 * Run as root by sudo: the user who ran it (SUDO_UID, SUDO_GID), to whom
 * the files we make go, so that they read a record without root. False
 * when not root or not under sudo.
 */
static bool sudo_user(uid_t *uid, gid_t *gid)
{
	unsigned int u, g;

	if (geteuid() != 0 || !env_id("SUDO_UID", &u) ||
	    !env_id("SUDO_GID", &g))
		return false;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return true;
}

bool mt_output_ours(uid_t uid)
{
	uid_t sudo_uid;
	gid_t sudo_gid;

	return uid == geteuid() ||
	       (sudo_user(&sudo_uid, &sudo_gid) && uid == sudo_uid);
}

/*
 * The kernel's protected_regular and protected_fifos, for root as well: in
 * a directory where anyone may create a file but only its owner remove
 * it, a file someone else made there is not ours to empty. Under sudo the
 * user who ran it is us: their file may be one we made for them before.
 */
static const char *refusal(const struct stat *dir, const struct stat *st)
{
	bool sticky = (dir->st_mode & S_ISVTX) && (dir->st_mode & S_IWOTH);

	if (!sticky)
		return NULL;
	if (!mt_output_ours(st->st_uid) && st->st_uid != dir->st_uid)
		return "belongs to another user in a world-writable sticky "
		       "directory; refusing to overwrite it " REFUSE_HINT;
	if (S_ISREG(st->st_mode) && st->st_nlink > 1)
		return "has other hard links in a world-writable sticky "
		       "directory; refusing to overwrite it " REFUSE_HINT;
	return NULL;
}

/*
 * A file we just made, under sudo: the user's who ran it, as one their
 * shell's redirection would have made. A file system that refuses (vfat,
 * NFS squashing root) leaves it root's: said, not fatal.
 */
static void give_to_sudo_user(int fd, const char *path)
{
	uid_t uid;
	gid_t gid;

	if (sudo_user(&uid, &gid) && fchown(fd, uid, gid))
		mt_err("%s: left to root, not given to uid %u who ran sudo: %s",
		       path, (unsigned int)uid, strerror(errno));
}

/* an existing file at base, opened without emptying it; -errno on failure */
static int open_existing(int dfd, const char *base, const struct stat *dir,
			 const char **why)
{
	struct stat st;
	int fd, flags, ret;

	/* non-blocking: a FIFO without a reader must not hang the tracer */
	fd = openat(dfd, base,
		    O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		/* base has no slash: ELOOP is the last component's link */
		if (ret == -ELOOP)
			*why = "is a symbolic link; refusing to follow it " REFUSE_HINT;
		return ret;
	}
	if (fstat(fd, &st))
		goto fail_errno;
	*why = refusal(dir, &st);
	if (*why) {
		close(fd);
		return -EPERM;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK))
		goto fail_errno;
	/* what O_TRUNC would do, now that the file is known to be ours */
	if (S_ISREG(st.st_mode) && ftruncate(fd, 0))
		goto fail_errno;
	return fd;
fail_errno:
	ret = -errno;
	close(fd);
	return ret;
}

int mt_create_output(const char *path, mode_t mode, char *err, size_t errlen)
{
	const char *base, *why = NULL;
	struct stat dir;
	int dfd, fd = -EEXIST;

	dfd = open_dir(path, &base);
	if (dfd < 0)
		return fail(path, errno, NULL, err, errlen);
	if (fstat(dfd, &dir)) {
		fd = -errno;
		close(dfd);
		return fail(path, -fd, NULL, err, errlen);
	}
	for (int i = 0; i < MAX_TRIES; i++) {
		/* a new file is ours: nothing to check */
		fd = openat(dfd, base,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_NOCTTY | O_CLOEXEC,
			    mode);
		if (fd >= 0) {
			give_to_sudo_user(fd, path);
			break;
		}
		if (errno != EEXIST) {
			fd = -errno;
			break;
		}
		fd = open_existing(dfd, base, &dir, &why);
		/* removed since: create it again */
		if (fd != -ENOENT)
			break;
	}
	close(dfd);
	if (fd < 0)
		return fail(path, -fd, why, err, errlen);
	return fd;
}

int mt_create_new_at(int dfd, const char *name, mode_t mode, const char *shown)
{
	int fd = openat(dfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
				O_CLOEXEC,
			mode);

	if (fd < 0)
		return -errno;
	give_to_sudo_user(fd, shown);
	return fd;
}

FILE *mt_create_output_file(const char *path, mode_t mode, char *err,
			    size_t errlen)
{
	int fd = mt_create_output(path, mode, err, errlen);
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		fail(path, e, NULL, err, errlen);
		close(fd);
		errno = e;
	}
	return f;
}
