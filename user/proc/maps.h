/* SPDX-License-Identifier: GPL-2.0 */
/* /proc/PID/maps: which files a process maps, and where. */
#ifndef __PROCMAPS_H
#define __PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

struct mt_mapping {
	__u64 start, end, offset;
	__u64 dev; /* makedev(major, minor) */
	__u64 inode;
	bool exec;
	char *path; /* NULL for anonymous mappings */
};

struct mt_maps {
	struct mt_mapping *v;
	size_t n, cap;
};

/*
 * Parse one line of a maps file. path receives the file name (empty for an
 * anonymous mapping). Returns 0, or -EINVAL for a malformed line.
 */
int mt_maps_parse_line(const char *line, struct mt_mapping *m, char *path,
		       size_t pathlen);

/* Read /proc/PID/maps into *maps (replacing what it held). Returns -errno. */
int mt_maps_read(int pid, struct mt_maps *maps);

/*
 * The same from f, open on maps text: what mt_maps_read does once the file
 * is open (and what the fuzzer feeds). Returns 0, -ENOMEM or -EIO.
 */
int mt_maps_parse(FILE *f, struct mt_maps *maps);
void mt_maps_free(struct mt_maps *maps);

/* The mapping that contains addr, or NULL. */
const struct mt_mapping *mt_maps_find(const struct mt_maps *maps, __u64 addr);

const char *mt_basename(const char *path);

/*
 * Which enum mt_lib a file is, from its name (a " (deleted)" suffix
 * included); -1 for none of ours.
 */
int mt_lib_classify(const char *path);

#endif /* __PROCMAPS_H */
