// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include "event/kinds.h"
#include "proc/maps.h"

int mt_maps_parse_line(const char *line, struct mt_mapping *m, char *path,
		       size_t pathlen)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[5];
	int pos = 0;
	const char *p;
	size_t len;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &maj, &min, &ino, &pos) < 7 ||
	    pos == 0 || end < start)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev = makedev(maj, min);
	m->inode = ino;
	m->exec = perms[2] == 'x';
	m->path = NULL;

	p = line + pos;
	len = strcspn(p, "\n");
	if (len >= pathlen)
		return -EINVAL;
	memcpy(path, p, len);
	path[len] = '\0';
	return 0;
}

void mt_maps_free(struct mt_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		free(maps->v[i].path);
	free(maps->v);
	*maps = (struct mt_maps){ 0 };
}

static int maps_push(struct mt_maps *maps, const struct mt_mapping *m,
		     const char *path)
{
	struct mt_mapping *v;

	if (maps->n == maps->cap) {
		size_t cap = maps->cap ? maps->cap * 2 : 256;

		v = realloc(maps->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		maps->v = v;
		maps->cap = cap;
	}
	v = &maps->v[maps->n];
	*v = *m;
	if (path[0]) {
		v->path = strdup(path);
		if (!v->path)
			return -ENOMEM;
	}
	maps->n++;
	return 0;
}

int mt_maps_parse(FILE *f, struct mt_maps *maps)
{
	char line[4096 + 128], path[4096];
	struct mt_mapping m;
	int err = 0;

	mt_maps_free(maps);
	while (fgets(line, sizeof(line), f)) {
		if (mt_maps_parse_line(line, &m, path, sizeof(path)))
			continue; /* a path longer than PATH_MAX: not ours */
		/* only executable file mappings can be probed or be callers */
		if (!m.exec)
			continue;
		err = maps_push(maps, &m, path);
		if (err)
			break;
	}
	if (!err && ferror(f))
		err = -EIO;
	return err;
}

int mt_maps_read(int pid, struct mt_maps *maps)
{
	char fname[64];
	FILE *f;
	int err;

	snprintf(fname, sizeof(fname), "/proc/%d/maps", pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	err = mt_maps_parse(f, maps);
	fclose(f);
	return err;
}

const struct mt_mapping *mt_maps_find(const struct mt_maps *maps, __u64 addr)
{
	size_t lo = 0, hi = maps->n;

	/* the kernel lists mappings in address order */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mt_mapping *m = &maps->v[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

const char *mt_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "libX.so..." or a wheel's hash-suffixed "libX-1a2b3c4d.so..." */
static bool lib_named(const char *base, const char *stem)
{
	size_t n = strlen(stem);

	if (strncmp(base, stem, n))
		return false;
	return !strncmp(base + n, ".so", 3) || base[n] == '-';
}

int mt_lib_classify(const char *path)
{
	const char *base = mt_basename(path);

	/*
	 * A library deleted or replaced on disk since it was mapped ("PATH
	 * (deleted)") is one of ours all the same: it is opened through the
	 * mapping (proc/mapfile.h), so the file probed is the one running.
	 */
	if (lib_named(base, "libcudart"))
		return MT_LIB_CUDART;
	if (lib_named(base, "libcuda"))
		return MT_LIB_CUDA;
	if (lib_named(base, "libc10"))
		return MT_LIB_C10;
	if (lib_named(base, "libtorch_cpu"))
		return MT_LIB_TORCH_CPU;
	if (lib_named(base, "libnccl"))
		return MT_LIB_NCCL;
	if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl", 7))
		return MT_LIB_LDSO;
	/* libpython3.X.so..., or a python3.X executable with it linked in */
	if (lib_named(base, "libpython3") ||
	    !strncmp(base, "libpython3.", 11) ||
	    (!strncmp(base, "python3.", 8) && base[8] >= '0' && base[8] <= '9'))
		return MT_LIB_PYTHON;
	return -1;
}
