// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/follow.h"
#include "proc/maps.h"

#define MAX_PROCS 65536

struct proc {
	int pid, ppid;
};

/* the parent of pid, from /proc/PID/stat; -1 if it is gone */
static int parent_of(int pid)
{
	char path[64], buf[512], *p;
	int ppid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* "pid (comm) state ppid": comm may hold spaces and ')' */
	p = p ? strrchr(buf, ')') : NULL;
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* the pids in /proc now, at most max; the count */
static size_t list_pids(int *v, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while (n < max && (e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]))
			v[n++] = atoi(e->d_name);
	closedir(d);
	return n;
}

/* every process's pid and parent, at most max; the count */
static size_t list_procs(struct proc *v, int *pids, size_t max)
{
	size_t n = list_pids(pids, max), k = 0;

	for (size_t i = 0; i < n; i++) {
		v[k].ppid = parent_of(pids[i]);
		if (v[k].ppid >= 0)
			v[k++].pid = pids[i];
	}
	return k;
}

size_t mt_descendants(int root, int *out, size_t max)
{
	struct proc *v = malloc(MAX_PROCS * sizeof(*v));
	int *pids = malloc(MAX_PROCS * sizeof(*pids));
	size_t n, found = 0;

	if (!v || !pids) {
		free(v);
		free(pids);
		return 0;
	}
	n = list_procs(v, pids, MAX_PROCS);
	/* breadth first: out[] doubles as the queue of parents */
	for (size_t q = 0;; q++) {
		int parent = q ? out[q - 1] : root;

		if (q > found)
			break;
		for (size_t i = 0; i < n && found < max; i++)
			if (v[i].ppid == parent)
				out[found++] = v[i].pid;
	}
	free(v);
	free(pids);
	return found;
}

size_t mt_procs_mapping(unsigned int libs, int self, int *out, size_t max)
{
	int *pids = malloc(MAX_PROCS * sizeof(*pids));
	struct mt_maps maps = { 0 };
	size_t np, n = 0;

	if (!pids)
		return 0;
	np = list_pids(pids, MAX_PROCS);
	for (size_t p = 0; p < np && n < max; p++) {
		if (pids[p] == self || mt_maps_read(pids[p], &maps))
			continue;
		for (size_t i = 0; i < maps.n; i++) {
			int lib = maps.v[i].path ?
					  mt_lib_classify(maps.v[i].path) :
					  -1;

			if (lib >= 0 && (libs & (1u << lib))) {
				out[n++] = pids[p];
				break;
			}
		}
	}
	mt_maps_free(&maps);
	free(pids);
	return n;
}
