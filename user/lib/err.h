/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way the tool reports an error or a warning: a line on stderr,
 * "memtrace-bpf: " and the message, as bpftool's p_err() does for it.
 */
#ifndef __ERR_H
#define __ERR_H

/* printf-style, no trailing newline: mt_err() ends the line */
void mt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* __ERR_H */
