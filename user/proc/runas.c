// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc/runas.h"

/* a uid in digits: the whole of spec, within a uid_t */
static bool parse_uid(const char *spec, uid_t *uid)
{
	char *end;
	unsigned long v;

	if (!*spec || spec[0] < '0' || spec[0] > '9')
		return false;
	errno = 0;
	v = strtoul(spec, &end, 10);
	if (errno || *end || v >= (uid_t)-1)
		return false;
	*uid = (uid_t)v;
	return true;
}

/* the supplementary groups that list as->name, from group */
static int read_groups(const char *group, struct mt_run_as *as, char *err,
		       size_t errlen)
{
	FILE *f = fopen(group, "re");
	struct group *g;

	as->groups[0] = as->gid;
	as->ngroups = 1;
	if (!f) {
		snprintf(err, errlen, "--user: %s: %s", group, strerror(errno));
		return -errno;
	}
	while ((g = fgetgrent(f)) && as->ngroups < MT_RUNAS_GROUPS) {
		if (g->gr_gid == as->gid)
			continue;
		for (char **m = g->gr_mem; m && *m; m++)
			if (!strcmp(*m, as->name)) {
				as->groups[as->ngroups++] = g->gr_gid;
				break;
			}
	}
	fclose(f);
	return 0;
}

int mt_run_as_lookup(const char *spec, const char *passwd, const char *group,
		     struct mt_run_as *as, char *err, size_t errlen)
{
	bool by_uid;
	struct passwd *pw;
	uid_t uid = 0;
	FILE *f;

	*as = (struct mt_run_as){ 0 };
	by_uid = parse_uid(spec, &uid);
	f = fopen(passwd, "re");
	if (!f) {
		snprintf(err, errlen, "--user: %s: %s", passwd,
			 strerror(errno));
		return -errno;
	}
	while ((pw = fgetpwent(f)))
		if (by_uid ? pw->pw_uid == uid : !strcmp(pw->pw_name, spec))
			break;
	if (pw) {
		as->uid = pw->pw_uid;
		as->gid = pw->pw_gid;
		snprintf(as->name, sizeof(as->name), "%s", pw->pw_name);
		snprintf(as->home, sizeof(as->home), "%s", pw->pw_dir);
	}
	fclose(f);
	if (!pw && !by_uid) {
		snprintf(err, errlen,
			 "--user: no user '%s' in %s (a uid in digits needs "
			 "none)",
			 spec, passwd);
		return -ENOENT;
	}
	as->set = true;
	if (!pw) {
		as->uid = uid;
		as->gid = (gid_t)uid;
		snprintf(as->name, sizeof(as->name), "%u", (unsigned int)uid);
		as->groups[0] = as->gid;
		as->ngroups = 1;
		return 0;
	}
	return read_groups(group, as, err, errlen);
}

int mt_run_as_become(const struct mt_run_as *as)
{
	if (!as || !as->set)
		return 0;
	if (setgroups(as->ngroups, as->groups) || setgid(as->gid) ||
	    setuid(as->uid))
		return -errno;
	/* no way back: a setuid(0) that works means the drop did not */
	if (as->uid != 0 && !setuid(0))
		return -EPERM;
	/* never root's HOME for a user with no passwd entry */
	if ((as->home[0] ? setenv("HOME", as->home, 1) : unsetenv("HOME")) ||
	    setenv("USER", as->name, 1) || setenv("LOGNAME", as->name, 1))
		return -errno;
	return 0;
}
