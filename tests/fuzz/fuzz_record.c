// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: any bytes, read as a record to their end with a fresh
 * string pool and sites table. Besides not crashing, the reader must keep
 * its word: an error says why, an event fits struct mt_event, the end stays
 * the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "record/record.h"

/* small tables: a full one is a path to fuzz too */
#define FUZZ_STRINGS 512
#define FUZZ_SITES 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

static void put32(uint8_t *p, uLong v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Checksums made right again after a mutation, as docs/FORMAT.md lays
 * them out: else nearly every mutant fails its checksum and the parsers
 * behind it are never reached.
 */
static void fix_checksums(uint8_t *data, size_t size)
{
	size_t at = 16;

	if (size < at)
		return;
	put32(data + 12, crc32(0, data, 12));
	while (size - at >= 13) {
		uint8_t *h = data + at;
		size_t len = (size_t)h[1] | (size_t)h[2] << 8 |
			     (size_t)h[3] << 16 | (size_t)h[4] << 24;

		if (len <= size - at - 13)
			put32(h + 5, crc32(0, h + 13, (uInt)len));
		put32(h + 9, crc32(0, h, 9));
		if (len > size - at - 13)
			break;
		at += 13 + len;
	}
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	size = LLVMFuzzerMutate(data, size, max_size);
	/* one mutant in eight keeps its bad checksums: those paths too */
	if (seed % 8)
		fix_checksums(data, size);
	return size;
}

static void check_item(const struct mt_rec_item *it)
{
	const struct mt_site *s = it->site;

	if (strnlen(it->ev.comm, MT_COMM_LEN) == MT_COMM_LEN)
		abort();
	if (s && (s->depth < 0 || s->depth > MT_MAX_FRAMES))
		abort();
	/* every string of a site is a whole C string */
	for (int i = 0; s && i < s->depth; i++)
		if (s->frames[i] && strlen(s->frames[i]) > 65536)
			abort();
}

static void read_record(FILE *f, struct mt_strpool *pool,
			struct mt_sites *sites)
{
	char err[256] = "";
	struct mt_rec_item it;
	struct mt_rec_end end;
	struct mt_reader *r;
	const char *key, *value;
	int ret;

	r = mt_reader_open(f, pool, sites, err, sizeof(err));
	if (!r) {
		if (!err[0])
			abort();
		return;
	}
	for (size_t i = 0; mt_reader_meta(r, i, &key, &value); i++)
		if (!key || !value)
			abort();
	while ((ret = mt_reader_next(r, &it, err, sizeof(err))) == 1)
		check_item(&it);
	if (ret < 0 && !err[0])
		abort();
	/* what ended stays ended, the same way */
	if (mt_reader_next(r, &it, err, sizeof(err)) != ret)
		abort();
	if (ret == 0 && mt_reader_truncated(r) == mt_reader_end(r, &end))
		abort();
	mt_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_strpool *pool = mt_strpool_new(FUZZ_STRINGS);
	struct mt_sites *sites = mt_sites_new(FUZZ_SITES);
	/* fmemopen takes a writable buffer, even to read */
	void *copy = malloc(size + 1);
	FILE *f;

	if (!pool || !sites || !copy)
		abort();
	memcpy(copy, data, size);
	f = fmemopen(copy, size, "rb");
	if (!f)
		abort();
	read_record(f, pool, sites);
	if (fclose(f))
		abort();
	free(copy);
	mt_sites_free(sites);
	mt_strpool_free(pool);
	return 0;
}
