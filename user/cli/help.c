// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf help [COMMAND]: the command's manual page, as perf help and
 * git help show theirs: man(1) on memtrace-bpf-COMMAND (make install puts
 * the pages of docs/ in section 8).
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "cli/help.h"
#include "lib/err.h"

extern char **environ;

/* man(1)'s exit status when it has no page of that name */
#define MAN_NO_PAGE 16

int mt_help(const char *command, const char *const *names, size_t n)
{
	char page[64];
	char *argv[] = { "man", "8", page, NULL };
	pid_t pid;
	int err, status;
	bool known = !command;

	for (size_t i = 0; command && i < n; i++)
		known |= !strcmp(command, names[i]);
	if (!known) {
		char list[128] = "";
		size_t len = 0;

		for (size_t i = 0; i < n && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len,
						"%s%s", i ? ", " : "",
						names[i]);
		mt_err("help %s: no such command (memtrace-bpf help COMMAND: %s; none for the live trace)",
		       command, list);
		return 2;
	}
	snprintf(page, sizeof(page), "memtrace-bpf%s%s", command ? "-" : "",
		 command ? command : "");
	err = posix_spawnp(&pid, "man", NULL, NULL, argv, environ);
	if (err) {
		mt_err("help: run man: %s: read docs/%s.md, or install man-db",
		       strerror(err), page);
		return 2;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			mt_err("help: wait for man: %s", strerror(errno));
			return 2;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == MAN_NO_PAGE)
		mt_err("help: no manual page %s installed: make install puts them in place, or read docs/%s.md",
		       page, page);
	return 2;
}
