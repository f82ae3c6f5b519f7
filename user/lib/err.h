/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way the tool reports an error or a warning: a line on stderr,
 * "memtrace-bpf: " and the message, as bpftool's p_err() does for it.
 *
 * The convention below the command layer (cli/): a function that fails
 * says why with mt_err() where it knows the context (what, which file,
 * pid or library, the way out), and returns a negative value: -1, or
 * -errno where an errno is the cause; 0 on success. It returns no exit
 * status: the command layer alone makes one (cli/cmd.h's
 * mt_exit_status), 2 of any negative value. An outcome that is no error
 * but an answer (a dry run's "does not fit", estimate --check's
 * mismatch) is an enum mt_verdict handed back beside the 0. A function keeps an err/errlen buffer only where a caller may
 * leave the text unsaid, words the line itself, or a test reads it; its
 * header says which.
 */
#ifndef __ERR_H
#define __ERR_H

/* printf-style, no trailing newline: mt_err() ends the line */
void mt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * What a command that ran without error found, when it answers a
 * question: the command layer makes the exit status of it (0, 1, 3)
 */
enum mt_verdict {
	MT_VERDICT_OK, /* nothing to say, it fits, the check agrees */
	MT_VERDICT_NO, /* out of memory on the device, a check's mismatch */
	MT_VERDICT_UNKNOWN, /* a dry run's command failed otherwise */
};

#endif /* __ERR_H */
