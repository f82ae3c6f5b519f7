// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf: trace the CUDA runtime, CUDA driver and PyTorch allocator
 * calls of running processes with uprobes, one line per event. Its
 * commands are one table, as bpftool's { "prog", do_prog }; each is one
 * file, cmd_NAME.c, with its options, checks and run (cli/cmd.h).
 */
#include <stddef.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/help.h"
#include "cli/parse.h"
#include "lib/err.h"

/* in the order a refusal names them: "is for trace, record and top" */
static const struct mt_cmd *const cmds[] = {
	&mt_cmd_trace,	&mt_cmd_record,	  &mt_cmd_report,
	&mt_cmd_script, &mt_cmd_estimate, &mt_cmd_top,
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

/* memtrace-bpf help [COMMAND] */
static int help(int argc, char **argv)
{
	const char *names[NCMDS];
	size_t n = 0;

	if (argc > 3) {
		mt_err("help takes one command at most (memtrace-bpf help COMMAND)");
		return 2;
	}
	for (size_t i = 0; i < NCMDS; i++)
		if (cmds[i]->name)
			names[n++] = cmds[i]->name;
	return mt_help(argc == 3 ? argv[2] : NULL, names, n);
}

int main(int argc, char **argv)
{
	const struct mt_cmd *cmd;
	struct mt_options o;
	int ret;

	if (argc >= 2 && !strcmp(argv[1], "help"))
		return help(argc, argv);
	ret = mt_parse_options(argc, argv, cmds, NCMDS, &o, &cmd);
	return ret ? ret : cmd->run(&o);
}
