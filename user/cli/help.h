/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __CLI_HELP_H
#define __CLI_HELP_H

#include <stdbool.h>
#include <stddef.h>

/*
 * memtrace-bpf help [COMMAND]: man(1) shows memtrace-bpf-COMMAND(8), or
 * memtrace-bpf(8) when COMMAND is NULL. names: the n commands there are.
 * Returns the exit status: 0 when man showed the page, 2 otherwise (said
 * in one line: an unknown command, no man, no page installed).
 */
int mt_help(const char *command, const char *const *names, size_t n);

#endif /* __CLI_HELP_H */
