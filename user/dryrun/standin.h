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

struct mt_dryrun_libs {
	char dir[PATH_MAX]; /* "" until made */
};

/*
 * Write the libraries into a new folder of mode 0700 under $TMPDIR, /tmp,
 * /var/tmp or /dev/shm (the first that allows running code), and set the
 * environment the command inherits: LD_LIBRARY_PATH with the folder first,
 * and ndev devices like dev. Returns 0, or -errno with a message in err
 * (what was made is removed).
 */
int mt_dryrun_prepare(const struct mt_dryrun_device *dev, unsigned int ndev,
		      struct mt_dryrun_libs *l, char *err, size_t errlen);

/*
 * Whether path is one of the libraries in l's folder: the folder's path,
 * or that path after another (the root of a command that chroots into a
 * root where the folder is bound at its own path: the tracer names its
 * files with that root in front), then '/' and the file's name.
 */
bool mt_dryrun_ours(const struct mt_dryrun_libs *l, const char *path);

/* Remove the folder and its libraries (a process may still map them). */
void mt_dryrun_cleanup(struct mt_dryrun_libs *l);

#endif /* __DRYRUN_STANDIN_H */
