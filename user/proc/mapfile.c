// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include "proc/mapfile.h"

/*
 * O_NONBLOCK: a FIFO planted at a path must not hang us in open(); for a
 * regular file it changes nothing.
 */
#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/*
 * Is st the file of mapping m? maps gives the device of the inode's
 * superblock; stat gives the same, except on btrfs, where it is the
 * subvolume's own device: there the inode alone has to do, and the file
 * came from the mapping itself anyway.
 */
static bool same_file(int fd, const struct stat *st, const struct mt_mapping *m)
{
	struct statfs sf;

	if ((__u64)st->st_ino != m->inode)
		return false;
	if ((__u64)st->st_dev == m->dev)
		return true;
	return !fstatfs(fd, &sf) && sf.f_type == BTRFS_SUPER_MAGIC;
}

int mt_mapfile_open(int pid, const struct mt_mapping *m, char *err,
		    size_t errlen)
{
	const char *name = m->path ? m->path : "(anonymous)";
	char link[96];
	struct stat st;
	int fd, ret;

	snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 pid, (uint64_t)m->start, (uint64_t)m->end);
	fd = open(link, OPEN_FLAGS);
	if (fd < 0) {
		ret = -errno;
		/*
		 * the map_files directory is its owner's (0500): without root
		 * another user's process is denied here
		 */
		snprintf(err, errlen, "pid %d: open %s mapped at %s: %s%s", pid,
			 name, link, strerror(-ret),
			 ret == -EACCES ?
				 " (another user's process needs root, or "
				 "CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH "
				 "besides CAP_SYS_ADMIN)" :
				 "");
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "pid %d: stat %s: %s", pid, name,
			 strerror(errno));
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "pid %d: %s is not a regular file", pid,
			 name);
		close(fd);
		return -EINVAL;
	}
	if (!same_file(fd, &st, m)) {
		/* unmapped since maps was read, and another file mapped there */
		snprintf(err, errlen,
			 "pid %d: the file mapped at %s is no longer %s "
			 "(inode %" PRIu64 ", maps said %" PRIu64 ")",
			 pid, link, name, (uint64_t)st.st_ino,
			 (uint64_t)m->inode);
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int mt_mapfile_open_path(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	fd = open(path, OPEN_FLAGS);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "stat %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int mt_mapfile_fd_path(int fd, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/self/fd/%d", fd);

	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}
