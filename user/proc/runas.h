/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who a command we start runs as (--user): under sudo, -- COMMAND would
 * otherwise run as root, with root's rights over everything it loads.
 */
#ifndef __PROC_RUNAS_H
#define __PROC_RUNAS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MT_RUNAS_GROUPS 64 /* supplementary groups kept, the first found */

struct mt_run_as {
	bool set; /* false: the command runs as we do */
	uid_t uid;
	gid_t gid;
	gid_t groups[MT_RUNAS_GROUPS];
	size_t ngroups;
	char home[256]; /* "" where unknown */
	char name[64]; /* the user's name; the uid in digits for none */
};

/*
 * The user named by spec, a name or a uid, read from passwd and group
 * (the paths of /etc/passwd and /etc/group; the files are read as such,
 * never through NSS, whose modules a static binary cannot load safely).
 * A uid with no passwd entry runs with its own number as its group.
 * Returns 0, or -errno / -ENOENT with a message in err (a buffer:
 * cli/options.c makes it a usage error).
 */
int mt_run_as_lookup(const char *spec, const char *passwd, const char *group,
		     struct mt_run_as *as, char *err, size_t errlen);

/*
 * In the child, before its exec: become as (groups, then gid, then uid:
 * after setuid the others could no longer be set), and set HOME (unset
 * where passwd has none), USER and LOGNAME as login would. Returns 0, or -errno. Does nothing for !as->set.
 */
int mt_run_as_become(const struct mt_run_as *as);

#endif /* __PROC_RUNAS_H */
