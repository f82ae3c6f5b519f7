/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's place in a distributed job, read from its environment as
 * the launchers set it (torchrun, mpirun, srun), and the per-rank file
 * names built from it.
 */
#ifndef __RANK_H
#define __RANK_H

#include <stdbool.h>
#include <stddef.h>

/* the record's "rank" header value: memtrace.c writes it, replay.c reads it */
#define MT_RANK_META "pid=%d rank=%d local_rank=%d world_size=%d"

struct mt_rank {
	bool known; /* a rank variable was set */
	int rank, local_rank, world_size; /* -1 where not set */
};

/*
 * Read pid's environment: RANK, LOCAL_RANK, WORLD_SIZE, else the MPI and
 * Slurm variants. Returns 0 (r->known false if none is set) or -errno.
 */
int mt_rank_read(int pid, struct mt_rank *r);

/* the variables from an environ block (NUL-separated, len bytes) */
void mt_rank_parse(const char *env, size_t len, struct mt_rank *r);

/*
 * pattern with {pid}, {rank} (0 where no rank is set, as a single process
 * is rank 0) and {host} expanded into out. Returns 0 or -ENAMETOOLONG.
 */
int mt_path_expand(const char *pattern, int pid, const struct mt_rank *r,
		   char *out, size_t len);

/* pattern names one file per process */
bool mt_path_per_process(const char *pattern);

#endif /* __RANK_H */
