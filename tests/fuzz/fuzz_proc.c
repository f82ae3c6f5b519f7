// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: any bytes, as each /proc file the tracer reads of a
 * process it does not own: maps, cmdline, environ (the rank variables),
 * and the torch/version.py and library paths a process maps. Besides not
 * crashing, each reader must keep its word: mappings that end after they
 * start, strings that end within their buffers, ranks in their range.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/maps.h"
#include "proc/procinfo.h"
#include "proc/rank.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fmemopen takes a writable buffer, even to read */
static FILE *open_copy(const uint8_t *data, size_t size, char **copy)
{
	FILE *f;

	*copy = malloc(size + 1);
	if (!*copy)
		abort();
	memcpy(*copy, data, size);
	f = fmemopen(*copy, size, "rb");
	if (!f)
		abort();
	return f;
}

static void read_maps(const uint8_t *data, size_t size)
{
	struct mt_maps maps = { 0 };
	char *copy;
	FILE *f = open_copy(data, size, &copy);
	int ret = mt_maps_parse(f, &maps);

	if (ret && ret != -ENOMEM)
		abort();
	for (size_t i = 0; i < maps.n; i++) {
		const struct mt_mapping *m = &maps.v[i];

		if (m->end < m->start || !m->exec)
			abort();
		if (m->path)
			(void)mt_lib_classify(m->path);
		/* in any order the file gives: found or not, never past v[] */
		(void)mt_maps_find(&maps, m->start);
	}
	mt_maps_free(&maps);
	fclose(f);
	free(copy);
}

static void read_cmdline(const uint8_t *data, size_t size)
{
	char buf[64], *copy;
	FILE *f = open_copy(data, size, &copy);

	mt_cmdline_parse(f, buf, sizeof(buf));
	if (strnlen(buf, sizeof(buf)) == sizeof(buf))
		abort();
	fclose(f);
	free(copy);
}

static void read_version(const uint8_t *data, size_t size)
{
	char buf[16] = "", *copy;
	FILE *f = open_copy(data, size, &copy);

	if (mt_version_py_parse(f, buf, sizeof(buf)) && !buf[0])
		abort();
	fclose(f);
	free(copy);
}

/* environ as mt_rank_read hands it on: a NUL after its last byte */
static void read_environ(const uint8_t *data, size_t size)
{
	char *env = malloc(size + 1);
	struct mt_rank r;

	if (!env)
		abort();
	memcpy(env, data, size);
	env[size] = '\0';
	mt_rank_parse(env, size, &r);
	if (r.known != (r.rank >= 0) || r.rank > 1 << 24 ||
	    r.local_rank > 1 << 24 || r.world_size > 1 << 24)
		abort();
	free(env);
}

/*
 * The input as the path of a mapped library: classified, and its torch
 * version taken from its name; a pid that cannot exist keeps the version.py
 * beside it from being opened.
 */
static void read_path(const uint8_t *data, size_t size)
{
	char *path = strndup((const char *)data, size), ver[32] = "";

	if (!path)
		abort();
	(void)mt_lib_classify(path);
	if (mt_torch_version(INT_MAX, path, ver, sizeof(ver)) && !ver[0])
		abort();
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_maps(data, size);
	read_cmdline(data, size);
	read_version(data, size);
	read_environ(data, size);
	read_path(data, size);
	return 0;
}
