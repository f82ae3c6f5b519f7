// SPDX-License-Identifier: GPL-2.0
/*
 * user/record/flight.h: the window keeps the last TIME of events and the
 * allocations older than it that were alive when it began; a dump is a
 * record of exactly those; the folder's caps remove the oldest dumps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include "record/flight.h"
#include "record/record.h"

#define SEC 1000000000ULL

struct world {
	char dir[64];
	struct mt_flight_conf c;
	struct mt_flight_dir *d;
	struct mt_flight *f;
	struct mt_sites *sites;
	struct mt_site *site;
};

static void world_open(struct world *w, unsigned int max_dumps)
{
	static const struct mt_site key = { .pid = 7 };
	char err[256];
	bool is_new;

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "/tmp/mt-test-flight.XXXXXX");
	assert_non_null(mkdtemp(w->dir));
	w->c = (struct mt_flight_conf){ .window_ns = 1 * SEC,
					.window_bytes = 1 << 20,
					.dir = w->dir,
					.max_dumps = max_dumps,
					.max_total = 1 << 30 };
	w->d = mt_flight_dir_open(&w->c, err, sizeof(err));
	assert_non_null(w->d);
	w->f = mt_flight_new(w->d, 7);
	assert_non_null(w->f);
	w->sites = mt_sites_new(16);
	assert_non_null(w->sites);
	w->site = mt_sites_get(w->sites, &key, &is_new);
	assert_non_null(w->site);
	mt_flight_meta(w->f, "tool", "memtrace-bpf test");
}

static void world_close(struct world *w)
{
	char cmd[128];

	mt_flight_free(w->f);
	mt_flight_dir_close(w->d);
	mt_sites_free(w->sites);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", w->dir);
	assert_int_equal(system(cmd), 0);
}

/* a cudaMalloc of ptr (free: a cudaFree of it) at t seconds */
static void call(struct world *w, double t, bool alloc, __u64 ptr)
{
	struct mt_event ev = { .ts = (__u64)(t * SEC),
			       .pid = 7,
			       .tid = 7,
			       .flags = MT_EV_RET,
			       .dev = 0 };
	struct mt_call r;

	if (alloc) {
		ev.kind = MT_K_CUDA_MALLOC;
		ev.args[1] = 4096;
		ev.out = ptr;
		ev.flags |= MT_EV_OUT;
	} else {
		ev.kind = MT_K_CUDA_FREE;
		ev.args[0] = ptr;
	}
	assert_true(mt_decode(&ev, 0, &r));
	mt_flight_event(w->f, &ev, true, &r, w->site);
}

/* the one dump file in w's folder with tag in its name: its events */
static size_t read_dump(struct world *w, const char *tag, __u64 *ptrs,
			size_t max, double *seconds, bool *has_dump_meta)
{
	struct mt_strpool *pool = mt_strpool_new(1024);
	struct mt_sites *sites = mt_sites_new(16);
	char path[512] = "", err[512];
	struct mt_rec_item it;
	struct mt_rec_end end;
	struct mt_reader *r;
	const char *k, *v;
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	FILE *f;

	/* a child process writes it: done once it is reaped */
	mt_flight_dir_reap(w->d, true);
	d = opendir(w->dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, tag))
			snprintf(path, sizeof(path), "%s/%s", w->dir,
				 de->d_name);
	closedir(d);
	assert_true(path[0]);
	f = fopen(path, "rb");
	assert_non_null(f);
	r = mt_reader_open(f, pool, sites, err, sizeof(err));
	assert_non_null(r);
	while (mt_reader_next(r, &it, err, sizeof(err)) == 1) {
		assert_true(n < max);
		ptrs[n++] = it.ev.kind == MT_K_CUDA_MALLOC ? it.ev.out :
							     it.ev.args[0] | 1;
	}
	assert_true(mt_reader_end(r, &end));
	*seconds = end.seconds;
	*has_dump_meta = false;
	for (size_t i = 0; mt_reader_meta(r, i, &k, &v); i++)
		if (!strcmp(k, "dump") && !strcmp(v, "asked"))
			*has_dump_meta = true;
	mt_reader_close(r);
	fclose(f);
	mt_sites_free(sites);
	mt_strpool_free(pool);
	return n;
}

static size_t files_in(const char *dir)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_window(void **state)
{
	struct world w = { 0 };
	__u64 p[16];
	double secs;
	bool meta;

	(void)state;
	world_open(&w, 10);
	call(&w, 0.0, true, 0xa000); /* alive throughout: kept */
	call(&w, 0.1, true, 0xb000);
	call(&w, 0.2, false, 0xb000); /* both gone before the window */
	call(&w, 0.3, true, 0xc000); /* alive at the window's start */
	call(&w, 5.1, true, 0xd000);
	call(&w, 5.5, false, 0xc000);
	call(&w, 5.8, true, 0xe000);
	assert_int_equal(mt_flight_events(w.f), 3);
	assert_int_equal(mt_flight_pinned(w.f), 2);
	assert_int_equal(mt_flight_dump(w.f, "first", "asked", NULL, 0), 0);
	assert_int_equal(read_dump(&w, "first", p, 16, &secs, &meta), 5);
	assert_true(meta);
	/* the old ones first, in time order, then the window */
	assert_int_equal(p[0], 0xa000);
	assert_int_equal(p[1], 0xc000);
	assert_int_equal(p[2], 0xd000);
	assert_int_equal(p[3], 0xc001);
	assert_int_equal(p[4], 0xe000);
	assert_true(secs > 5.79 && secs < 5.81);
	/* C's free leaves the window: C is no longer alive at its start */
	call(&w, 6.9, true, 0xf000);
	assert_int_equal(mt_flight_pinned(w.f), 3);
	assert_int_equal(mt_flight_dump(w.f, "second", "asked", NULL, 0), 0);
	assert_int_equal(read_dump(&w, "second", p, 16, &secs, &meta), 4);
	assert_int_equal(p[0], 0xa000);
	assert_int_equal(p[1], 0xd000);
	assert_int_equal(p[2], 0xe000);
	assert_int_equal(p[3], 0xf000);
	world_close(&w);
}

static void test_caps(void **state)
{
	struct world w = { 0 };
	char err[256];

	(void)state;
	world_open(&w, 2);
	call(&w, 0.0, true, 0xa000);
	for (int i = 0; i < 5; i++)
		assert_int_equal(mt_flight_dump(w.f, "cap", "asked", NULL, 0),
				 0);
	mt_flight_dir_reap(w.d, true);
	assert_int_equal(files_in(w.dir), 2);
	assert_int_equal(mt_flight_dir_dumps(w.d), 5);
	world_close(&w);
	w.c.dir = "/nonexistent/flight";
	assert_null(mt_flight_dir_open(&w.c, err, sizeof(err)));
	assert_non_null(strstr(err, "is no folder"));
}

/*
 * the window's memory: its events now, however many it held, and 3
 * blocks at most beside them (the oldest's and the newest's, partly
 * used, and the one kept for reuse)
 */
static bool mem_fits(const struct world *w)
{
	return mt_flight_mem(w->f) <=
	       (mt_flight_events(w->f) + 3 * MT_FLIGHT_BLOCK) *
		       mt_flight_event_bytes();
}

static void test_memory(void **state)
{
	const size_t n = 10 * MT_FLIGHT_BLOCK + 123;
	struct world w = { 0 };
	__u64 *p = malloc((n + 16) * sizeof(*p));
	double secs;
	bool meta;

	(void)state;
	assert_non_null(p);
	world_open(&w, 10);
	/* a time window of 1 s under the default 1 GiB cap */
	mt_flight_free(w.f);
	w.c.window_bytes = MT_FLIGHT_MEM_DEFAULT;
	w.f = mt_flight_new(w.d, 7);
	assert_non_null(w.f);
	call(&w, 0.0, true, 0xa000); /* alive throughout */
	/* n - 1 events in 0.5 s: allocations, each freed at once */
	for (size_t i = 1; i < n; i++)
		call(&w, 0.1 + (double)i * 0.4 / (double)n, i % 2,
		     0x100000 + (i + 1) / 2 * 0x1000);
	assert_int_equal(mt_flight_events(w.f), n);
	assert_true(mem_fits(&w)); /* a ring that doubles holds 16 blocks */
	/* a window across blocks dumps whole and in order */
	assert_int_equal(mt_flight_dump(w.f, "blocks", "asked", NULL, 0), 0);
	assert_int_equal(read_dump(&w, "blocks", p, n + 16, &secs, &meta), n);
	assert_int_equal(p[0], 0xa000);
	for (size_t i = 1; i < n; i++)
		assert_int_equal(p[i],
				 (0x100000 + (i + 1) / 2 * 0x1000) | !(i % 2));
	/* 10 s later, a few events: the rest left, and their memory too */
	for (size_t i = 0; i < 100; i++)
		call(&w, 10.0 + (double)i * 1e-4, true, 0x900000 + i * 0x1000);
	assert_int_equal(mt_flight_events(w.f), 100);
	assert_int_equal(mt_flight_pinned(w.f), 1);
	assert_true(mem_fits(&w));
	assert_true(mt_flight_mem(w.f) <=
		    2 * MT_FLIGHT_BLOCK * mt_flight_event_bytes());
	mt_flight_free(w.f);
	/*
	 * the memory cap, not on a block's bound: the newest events kept,
	 * the older allocations (never freed) copied aside as they left
	 */
	w.c.window_bytes = (3 * MT_FLIGHT_BLOCK + 77) * mt_flight_event_bytes();
	w.f = mt_flight_new(w.d, 7);
	assert_non_null(w.f);
	for (size_t i = 0; i < n; i++)
		call(&w, (double)i * 1e-6, true, 0x100000 + i * 0x1000);
	assert_int_equal(mt_flight_events(w.f), 3 * MT_FLIGHT_BLOCK + 77);
	assert_int_equal(mt_flight_pinned(w.f), n - 3 * MT_FLIGHT_BLOCK - 77);
	assert_true(mem_fits(&w));
	assert_int_equal(mt_flight_dump(w.f, "cut", "asked", NULL, 0), 0);
	assert_int_equal(read_dump(&w, "cut", p, n + 16, &secs, &meta), n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(p[i], 0x100000 + i * 0x1000);
	free(p);
	world_close(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
