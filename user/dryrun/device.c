// SPDX-License-Identifier: GPL-2.0
/*
 * Device presets for the GPUs people rent. Memory is what nvidia-smi
 * shows as the card's total (MiB); the driver keeps a little of it back,
 * a few hundred MiB that vary with the driver and the ECC mode, so a bare
 * SIZE is the way to an exact figure. Compute capability and the
 * multiprocessor count are the card's own.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "dryrun/device.h"

#define MIB (1ULL << 20)

static const struct mt_dryrun_device presets[] = {
	{ "H100-80GB", 81559 * MIB, 9, 0, 132 }, /* H100 SXM5 80GB HBM3 */
	{ "H100-PCIe", 81559 * MIB, 9, 0, 114 },
	{ "H200", 143771 * MIB, 9, 0, 132 },
	{ "A100-80GB", 81920 * MIB, 8, 0, 108 },
	{ "A100-40GB", 40960 * MIB, 8, 0, 108 },
	{ "L40S", 46068 * MIB, 8, 9, 142 },
	{ "L4", 23034 * MIB, 8, 9, 58 },
	{ "A10G", 23028 * MIB, 8, 6, 80 },
	{ "RTX4090", 24564 * MIB, 8, 9, 128 },
	{ "T4", 15360 * MIB, 7, 5, 40 },
};

const struct mt_dryrun_device *mt_dryrun_preset(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcasecmp(name, presets[i].name))
			return &presets[i];
	return NULL;
}

void mt_dryrun_preset_print(FILE *out)
{
	fprintf(out, "%-10s %10s  %s  %s\n", "PRESET", "MEMORY",
		"COMPUTE CAPABILITY", "MULTIPROCESSORS");
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		fprintf(out, "%-10s %6llu MiB  %16u.%u  %15u\n",
			presets[i].name, presets[i].mem / MIB,
			presets[i].cc_major, presets[i].cc_minor,
			presets[i].sms);
}

void mt_dryrun_preset_names(char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				 presets[i].name);

		if (w < 0 || (size_t)w >= len - n)
			return;
		n += (size_t)w;
	}
}
