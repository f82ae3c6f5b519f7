/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The command line read by argp for one command: the groups of options it
 * takes shown in its --help, and every other command's options refused by
 * name rather than as unknown.
 */
#ifndef __CLI_PARSE_H
#define __CLI_PARSE_H

#include <stddef.h>
#include "cli/cmd.h"
#include "cli/options.h"

/*
 * Parse argv into *o for the command of cmds[0..ncmds) that argv[1] names
 * (none named: the one whose name is NULL), set in *cmd; then its
 * defaults and its checks. Returns 0, or 2 after printing a one-line error
 * (the exit code for bad usage). A bad option value also exits 2 at once,
 * and argp itself exits after --help and --version.
 */
int mt_parse_options(int argc, char **argv, const struct mt_cmd *const *cmds,
		     size_t ncmds, struct mt_options *o,
		     const struct mt_cmd **cmd);

#endif /* __CLI_PARSE_H */
