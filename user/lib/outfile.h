/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every file the tool writes is created here. It runs as root, often with
 * an output in /tmp or another directory every user can write, so it does
 * not do what a plain fopen(path, "w") would there:
 *
 * - it never follows a symbolic link at PATH (O_NOFOLLOW): another user
 *   could have planted one pointing at /etc/...;
 * - in a sticky world-writable directory (/tmp), it applies the kernel's
 *   protected_regular rule, whatever the sysctl says: an existing file is
 *   truncated only if it belongs to us or to the directory's owner, and has
 *   no other hard link (a link to /etc/shadow is owned by root too);
 * - it checks the file it opened (fstat), and truncates only after that;
 * - under sudo, a file it creates belongs to the user who ran sudo
 *   (SUDO_UID, SUDO_GID), so that they read it without root; in a sticky
 *   directory their file counts as ours.
 *
 * Only the last component is checked: the directories on the way are the
 * user's choice, as they are for the kernel's own protections.
 */
#ifndef __OUTFILE_H
#define __OUTFILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * PATH opened for writing, created with MODE (less the umask) or emptied.
 * An existing file keeps its mode, as with the shell's ">".
 * Returns the descriptor (close-on-exec), or a negative errno with err set
 * to "PATH: reason": strerror's, or why it was refused (-ELOOP: a symbolic
 * link; -EPERM: another user's file or a hard link in a sticky directory).
 * A buffer, not mt_err(): each caller words the line ("cannot write",
 * "cannot create", "metrics: write"), some into a buffer of their own.
 */
int mt_create_output(const char *path, mode_t mode, char *err, size_t errlen);

/*
 * NAME made new in the directory dfd, with MODE less the umask: never an
 * existing file nor a link (O_EXCL), and under sudo the user's who ran it
 * as mt_create_output's are (shown names it in the line that says when it
 * cannot be). The descriptor (close-on-exec), or a negative errno
 * (-EEXIST: the name is taken).
 */
int mt_create_new_at(int dfd, const char *name, mode_t mode, const char *shown);

/* the same as a stdio stream; NULL with errno and err set on failure */
FILE *mt_create_output_file(const char *path, mode_t mode, char *err,
			    size_t errlen);

/*
 * Whether a file of uid is ours: our own, or under sudo the user's who ran
 * it (whose our new files are).
 */
bool mt_output_ours(uid_t uid);

/*
 * Records, logs and exports hold the target's command line, module and
 * file names: for their owner only. --metrics-file is read by
 * node_exporter, which runs as its own user, and holds figures only.
 */
#define MT_OUT_PRIVATE 0600
#define MT_OUT_SHARED 0644

#endif /* __OUTFILE_H */
