// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc/rank.h"

#define ENV_MAX (1 << 20)

/* first match wins: PyTorch's own, then the launchers' */
static const char *const rank_vars[] = { "RANK", "OMPI_COMM_WORLD_RANK",
					 "PMI_RANK", "PMIX_RANK",
					 "SLURM_PROCID" };
static const char *const local_vars[] = { "LOCAL_RANK",
					  "OMPI_COMM_WORLD_LOCAL_RANK",
					  "MPI_LOCALRANKID", "SLURM_LOCALID" };
static const char *const size_vars[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
					 "PMI_SIZE", "SLURM_NTASKS" };

/* the value of the first of names set in env, as an int; -1 if none */
static int lookup(const char *env, size_t len, const char *const *names,
		  size_t n)
{
	for (size_t k = 0; k < n; k++) {
		size_t nl = strlen(names[k]);

		for (size_t i = 0; i < len;
		     i += strnlen(env + i, len - i) + 1) {
			const char *v = env + i;
			char *end;
			long x;

			if (len - i <= nl || strncmp(v, names[k], nl) ||
			    v[nl] != '=')
				continue;
			errno = 0;
			x = strtol(v + nl + 1, &end, 10);
			if (!errno && end != v + nl + 1 && !*end && x >= 0 &&
			    x <= 1 << 24)
				return (int)x;
		}
	}
	return -1;
}

#define LOOKUP(env, len, names) \
	lookup(env, len, names, sizeof(names) / sizeof(names[0]))

void mt_rank_parse(const char *env, size_t len, struct mt_rank *r)
{
	r->rank = LOOKUP(env, len, rank_vars);
	r->local_rank = LOOKUP(env, len, local_vars);
	r->world_size = LOOKUP(env, len, size_vars);
	r->known = r->rank >= 0;
}

int mt_rank_read(int pid, struct mt_rank *r)
{
	char path[64], *buf;
	size_t n;
	FILE *f;

	*r = (struct mt_rank){ .rank = -1, .local_rank = -1, .world_size = -1 };
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	buf = malloc(ENV_MAX);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, ENV_MAX - 1, f);
	fclose(f);
	buf[n] = '\0';
	mt_rank_parse(buf, n, r);
	free(buf);
	return 0;
}

int mt_path_expand(const char *pattern, int pid, const struct mt_rank *r,
		   char *out, size_t len)
{
	char host[256];
	size_t o = 0;

	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	for (const char *p = pattern; *p; p++) {
		int w;

		if (!strncmp(p, "{pid}", 5))
			w = snprintf(out + o, len - o, "%d", pid), p += 4;
		else if (!strncmp(p, "{rank}", 6))
			w = snprintf(out + o, len - o, "%d",
				     r && r->known ? r->rank : 0),
			p += 5;
		else if (!strncmp(p, "{host}", 6))
			w = snprintf(out + o, len - o, "%s", host), p += 5;
		else
			w = snprintf(out + o, len - o, "%c", *p);
		if (w < 0 || (size_t)w >= len - o)
			return -ENAMETOOLONG;
		o += (size_t)w;
	}
	return o ? 0 : -ENAMETOOLONG;
}

bool mt_path_per_process(const char *pattern)
{
	return strstr(pattern, "{pid}") || strstr(pattern, "{rank}");
}
