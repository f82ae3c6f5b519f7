/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a traced process tells of itself, for the record's header: its
 * command line and the PyTorch version of the libc10 it maps.
 */
#ifndef __PROCINFO_H
#define __PROCINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* pid's command line, arguments joined by spaces ("" if unreadable) */
void mt_proc_cmdline(int pid, char *buf, size_t len);

/*
 * The same from f, open on a cmdline file (len > 0): what
 * mt_proc_cmdline does once the file is open.
 */
void mt_cmdline_parse(FILE *f, char *buf, size_t len);

/*
 * The program pid runs now into buf: /proc/PID/exe's target, as the
 * kernel names it (a file deleted since ends in " (deleted)"). 0, or
 * -errno (a readlink cut at len - 1 bytes is not told).
 */
int mt_proc_exe(int pid, char *buf, size_t len);

/* argv (NULL-terminated) joined by spaces: a command not yet exec'd */
void mt_join_args(char **argv, char *buf, size_t len);

/*
 * PyTorch's version for pid's libc10 at path: from its file name (Debian:
 * libc10.so.1.13.0) or torch/version.py beside torch/lib/ (wheels). false
 * if path is no libc10 or the version cannot be read.
 */
bool mt_torch_version(int pid, const char *path, char *buf, size_t len);

/* the __version__ of a torch/version.py open as f; false if none */
bool mt_version_py_parse(FILE *f, char *buf, size_t len);

#endif /* __PROCINFO_H */
