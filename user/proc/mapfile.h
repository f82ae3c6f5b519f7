/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening the very file a process maps, whatever its root or namespaces.
 * Errors come back in err buffers: mt_attach_scan passes over a process
 * gone meanwhile without a word, and the unit test reads the text.
 */
#ifndef __MAPFILE_H
#define __MAPFILE_H

#include <stddef.h>
#include "proc/maps.h"

/*
 * Open the file pid maps at m through /proc/PID/map_files/START-END, which
 * names the mapped file itself: the path maps shows may mean another file
 * (or none) in our root, and the file at that path may have been replaced
 * since it was mapped. The open cannot block (O_NONBLOCK) and is accepted
 * only for a regular file that is the mapping's device and inode. Returns
 * the descriptor (O_CLOEXEC, the caller closes it), or -errno with one line
 * in err (errlen bytes).
 */
int mt_mapfile_open(int pid, const struct mt_mapping *m, char *err,
		    size_t errlen);

/*
 * Open a file of our own root by path, with the same rules but no mapping
 * to compare with: regular, no blocking. Returns the descriptor or -errno
 * with err set.
 */
int mt_mapfile_open_path(const char *path, char *err, size_t errlen);

/*
 * The name under which the kernel resolves fd to its own file, for calls
 * that take a path (a uprobe is placed on the inode the path resolves to):
 * /proc/self/fd/FD. Returns 0 or -ENAMETOOLONG.
 */
int mt_mapfile_fd_path(int fd, char *buf, size_t len);

#endif /* __MAPFILE_H */
