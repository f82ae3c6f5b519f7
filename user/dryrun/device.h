/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The GPU a dry run (estimate --dry-run) stands in for: what the CUDA
 * stand-in tells PyTorch of each device. Memory decides when the caching
 * allocator runs out; compute capability and multiprocessors decide which
 * kernels and library workspaces PyTorch picks, and so what it allocates.
 */
#ifndef __DRYRUN_DEVICE_H
#define __DRYRUN_DEVICE_H

#include <stddef.h>
#include <stdio.h>

struct mt_dryrun_device {
	const char *name; /* a preset's; NULL for a bare size */
	unsigned long long mem; /* bytes of memory */
	unsigned int cc_major, cc_minor; /* compute capability */
	unsigned int sms; /* multiprocessors */
};

/* what estimate --dry-run asks for */
struct mt_dryrun_conf {
	struct mt_dryrun_device dev; /* each device's */
	unsigned int devices; /* how many, 1 to MT_DRYRUN_MAX_DEVICES */
};

#define MT_DRYRUN_MAX_DEVICES 8 /* the stand-in's most */

/* the preset without --device: an H100 SXM, the GPU most rented to train */
#define MT_DRYRUN_DEFAULT "H100-80GB"

/* The preset called name (in any case), or NULL if there is none. */
const struct mt_dryrun_device *mt_dryrun_preset(const char *name);

/* The presets, a line each: name, memory, compute capability, SMs. */
void mt_dryrun_preset_print(FILE *out);

/* The presets' names, ", " between them, into buf (cut to len). */
void mt_dryrun_preset_names(char *buf, size_t len);

#endif /* __DRYRUN_DEVICE_H */
