/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A dry run's CUDA: the stand-in's libraries, carried in the binary,
 * written into a private folder that the command's loader searches first
 * (LD_LIBRARY_PATH), and the knobs that give it the device asked for.
 */
#ifndef __DRYRUN_STANDIN_H
#define __DRYRUN_STANDIN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "dryrun/device.h"

#define MT_DRYRUN_NLIBS 6 /* the libraries a dry run writes */

/* a file by identity, not by name: what a path cannot be swapped under */
struct mt_dryrun_id {
	unsigned long long dev, ino;
};

struct mt_dryrun_libs {
	char dir[PATH_MAX]; /* "" until made */
	int dirfd; /* the folder, held from its making to its removal */
	struct mt_dryrun_id id; /* the folder's */
	struct mt_dryrun_id files[MT_DRYRUN_NLIBS]; /* each library's */
};

/*
 * Write the libraries into a new folder of mode 0700 (0711, the files
 * 0555, where others_read: a command run as another user) under $TMPDIR, /tmp,
 * /var/tmp or /dev/shm: the first that allows running code, whose path the
 * loader reads whole (no ':', ';' or '$') and that no other user can
 * change, nor any folder above it (each owned by root or us, and writable
 * by others only where sticky). A TMPDIR that fails is passed over with a
 * line on stderr saying why. Sets the environment the command inherits:
 * LD_LIBRARY_PATH with the folder first, and ndev devices like dev.
 * Returns 0, or -errno after mt_err() (what was made is removed).
 */
int mt_dryrun_prepare(const struct mt_dryrun_device *dev, unsigned int ndev,
		      bool others_read, struct mt_dryrun_libs *l);

/*
 * Whether path, the folder chosen, is one the dry run may use; why says
 * why not. Exposed for the unit test.
 */
bool mt_dryrun_parent_ok(const char *path, char *real, char *why,
			 size_t whylen);

/*
 * Just before the command starts: whether the folder's path and each
 * library's still name the files written, by device and inode. Returns 0,
 * or -EPERM with a message in err (the command must not run): a buffer,
 * as the unit test reads what it says.
 */
int mt_dryrun_verify(const struct mt_dryrun_libs *l, char *err, size_t errlen);

/*
 * Whether the file of device dev and inode ino (a mapping's, from
 * /proc/PID/maps: the same file through a bind mount too) is one of the
 * libraries written.
 */
bool mt_dryrun_ours(const struct mt_dryrun_libs *l, unsigned long long dev,
		    unsigned long long ino);

/* Remove the folder and its libraries (a process may still map them). */
void mt_dryrun_cleanup(struct mt_dryrun_libs *l);

#endif /* __DRYRUN_STANDIN_H */
