/* SPDX-License-Identifier: GPL-2.0 */
/* The processes being traced: checks, spawning, exit detection. */
#ifndef __TARGET_H
#define __TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "memtrace.h"
#include "proc/maps.h"
#include "proc/rank.h"
#include "proc/runas.h"

#define MT_MAX_FILES 32

struct mt_file_id {
	__u64 dev, inode;
};

struct mt_target {
	int pid;
	int pidfd;
	char comm[16];
	bool spawned; /* started by us (-- mode): seen from its first call */
	/* it ran before it was found (-p, a scan): what it held is unseen */
	bool attached;
	/* spawned: our end of its guard's pipe, and the guard (target.c) */
	int guard_fd, guard_pid;
	struct mt_hold *hold; /* spawned: its stops at library loads */
	bool told_late; /* the guard's continuing it was said */
	bool exited;
	/* when the tracer saw it gone (CLOCK_MONOTONIC ns); 0: not yet */
	__u64 gone_ns;
	bool has_status; /* spawned and reaped: status is waitpid's */
	int status;
	struct mt_maps maps; /* executable mappings, for callers */
	struct mt_file_id files[MT_MAX_FILES]; /* libraries attached */
	size_t nfiles;
	unsigned int libs; /* bitmask of enum mt_lib attached */
	bool ranked; /* its rank was read (at its first event) */
	struct mt_rank rank; /* as read then */
};

/*
 * Check that pid exists and can be traced: 0, or -errno with why in err
 * (a buffer, not mt_err(): --children and --all pass over a process gone
 * or not traceable without a word)
 */
int mt_target_open(struct mt_target *t, int pid, char *err, size_t errlen);

/*
 * The most a spawned command waits at a library load for us to continue
 * it: then its guard does (docs/INTERNALS.md).
 */
#define MT_HOLD_MAX_MS 2000

/*
 * Fork argv held before its exec, to run as as (NULL: as we do; a failure
 * to become as is a failure of the exec), with its guard, which reads hold (the
 * BPF object's) to end any stop we take too long to continue. Returns 0
 * (t->pid set) or -errno after mt_err(). mt_target_start() lets it exec;
 * it fails, said, if the exec did.
 */
int mt_target_spawn(struct mt_target *t, char **argv,
		    const struct mt_run_as *as, struct mt_hold *hold,
		    int gate[2]);
int mt_target_start(struct mt_target *t, int gate[2], char **argv);

/*
 * Continue a spawned command stopped at a library load. *late: its guard
 * has continued a stop of it before us, at least once. 0 or -errno.
 */
int mt_target_resume(struct mt_target *t, bool *late);

/* True once the process is gone (reaped if we spawned it). */
bool mt_target_poll_exit(struct mt_target *t);

void mt_target_close(struct mt_target *t);

bool mt_target_has_file(const struct mt_target *t, __u64 dev, __u64 inode);

#endif /* __TARGET_H */
