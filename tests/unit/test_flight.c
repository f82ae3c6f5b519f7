// SPDX-License-Identifier: GPL-2.0
/*
 * user/record/flight.h: the window keeps the last TIME of events and the
 * allocations older than it that were alive when it began; a dump is a
 * record of exactly those; the folder's caps remove the dumps kept least
 * (end first, oom last), the oldest first. Dumps are made under names no
 * two recorders share, in the folder as it was opened, under their name
 * only once whole; a failed one is tried again at the next trigger.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* a cudaMalloc of ptr (free: a cudaFree of it) at t seconds, into f */
static void call_in(struct mt_flight *f, const struct mt_site *site, double t,
		    bool alloc, __u64 ptr)
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
	mt_flight_event(f, &ev, true, &r, site);
}

static void call(struct world *w, double t, bool alloc, __u64 ptr)
{
	call_in(w->f, w->site, t, alloc, ptr);
}

/* the last dump read's window_ns line, its first and last event; 0: none */
static unsigned long long span_first, span_last;

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
	span_first = span_last = 0;
	for (size_t i = 0; mt_reader_meta(r, i, &k, &v); i++) {
		if (!strcmp(k, "dump") && !strcmp(v, "asked"))
			*has_dump_meta = true;
		if (!strcmp(k, MT_FLIGHT_SPAN_KEY))
			assert_int_equal(
				sscanf(v, "%llu %llu", &span_first, &span_last),
				2);
	}
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

/* files of any name in dir, hidden ones too */
static size_t all_files_in(const char *dir)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/*
 * The record at path read whole: its events, -1 if it is not a whole
 * record; why: its dump key
 */
static long read_whole(const char *path, char *why, size_t len)
{
	struct mt_strpool *pool = mt_strpool_new(1024);
	struct mt_sites *sites = mt_sites_new(16);
	char err[512];
	struct mt_rec_item it;
	struct mt_rec_end end;
	struct mt_reader *r;
	const char *k, *v;
	long n = 0;
	int got;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	why[0] = '\0';
	r = mt_reader_open(f, pool, sites, err, sizeof(err));
	if (r) {
		while ((got = mt_reader_next(r, &it, err, sizeof(err))) == 1)
			n++;
		if (got || !mt_reader_end(r, &end))
			n = -1;
		for (size_t i = 0; mt_reader_meta(r, i, &k, &v); i++)
			if (!strcmp(k, "dump"))
				snprintf(why, len, "%s", v);
		mt_reader_close(r);
	} else {
		n = -1;
	}
	fclose(f);
	mt_sites_free(sites);
	mt_strpool_free(pool);
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
	/* the window, for the leak check: its own events, not the older */
	assert_int_equal(span_first, (__u64)(5.1 * SEC));
	assert_int_equal(span_last, (__u64)(5.8 * SEC));
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

/*
 * Two recorders on one folder, dumping in the same second (issue 39: they
 * wrote each other's files, corrupt, and both said "dumped"): every dump
 * whole, under a name of its own. The same process here, so that even the
 * tracer's pid in the names is shared: O_EXCL makes them apart.
 */
static void test_two_recorders(void **state)
{
	struct world w = { 0 };
	struct mt_flight_dir *d2;
	struct mt_flight *f2;
	char err[256], path[512], why[64];
	struct dirent *de;
	int ones = 0, twos = 0;
	DIR *d;

	(void)state;
	world_open(&w, 16);
	d2 = mt_flight_dir_open(&w.c, err, sizeof(err));
	assert_non_null(d2);
	f2 = mt_flight_new(d2, 7);
	assert_non_null(f2);
	for (int i = 0; i < 2000; i++) {
		call(&w, i * 1e-4, true, 0x100000 + (__u64)i * 0x1000);
		call_in(f2, w.site, i * 1e-4, true,
			0x100000 + (__u64)i * 0x1000);
	}
	/* neither waits for the other's writers */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mt_flight_dump(w.f, "asked", "one", NULL, 0),
				 0);
		assert_int_equal(mt_flight_dump(f2, "asked", "two", NULL, 0),
				 0);
	}
	mt_flight_dir_reap(w.d, true);
	mt_flight_dir_reap(d2, true);
	assert_int_equal(mt_flight_dir_dumps(w.d), 3);
	assert_int_equal(mt_flight_dir_dumps(d2), 3);
	assert_int_equal(all_files_in(w.dir), 6);
	d = opendir(w.dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", w.dir, de->d_name);
		assert_int_equal(read_whole(path, why, sizeof(why)), 2000);
		ones += !strcmp(why, "one");
		twos += !strcmp(why, "two");
	}
	closedir(d);
	assert_int_equal(ones, 3);
	assert_int_equal(twos, 3);
	mt_flight_free(f2);
	mt_flight_dir_close(d2);
	world_close(&w);
}

/*
 * The folder swapped for a symbolic link mid-run (issue 39): the dumps go
 * on into the folder opened, and the caps remove from there; a link given
 * as the folder is refused
 */
static void test_folder_swapped(void **state)
{
	struct world w = { 0 };
	char held[80], other[80], err[256], cmd[256];

	(void)state;
	world_open(&w, 1);
	call(&w, 0.0, true, 0xa000);
	assert_int_equal(mt_flight_dump(w.f, "before", "asked", NULL, 0), 0);
	mt_flight_dir_reap(w.d, true);
	assert_int_equal(files_in(w.dir), 1);
	snprintf(held, sizeof(held), "%s.held", w.dir);
	snprintf(other, sizeof(other), "%s.other", w.dir);
	assert_int_equal(rename(w.dir, held), 0);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(symlink(other, w.dir), 0);
	assert_int_equal(mt_flight_dump(w.f, "after", "asked", NULL, 0), 0);
	mt_flight_dir_reap(w.d, true);
	/* the cap of 1 removed "before" from the folder it is in */
	assert_int_equal(all_files_in(held), 1);
	assert_int_equal(all_files_in(other), 0);
	assert_null(mt_flight_dir_open(&w.c, err, sizeof(err)));
	assert_non_null(strstr(err, "is a symbolic link"));
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", held, other);
	assert_int_equal(system(cmd), 0);
	world_close(&w);
}

/* the pid of our one child process */
static pid_t only_child(void)
{
	char path[64];
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children",
		 (int)getpid());
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	return pid;
}

/* the size of the one file in dir (hidden ones too); 0 if none */
static off_t one_size(const char *dir)
{
	char path[512];
	struct dirent *de;
	struct stat st;
	off_t size = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !stat(path, &st))
			size = st.st_size;
	}
	closedir(d);
	return size;
}

/*
 * A dump's writer killed midway (issue 39: a 7.4 MB partial dump was left
 * under a normal name) leaves no file at all; the next dump is written
 */
static void test_writer_killed(void **state)
{
	const size_t n = 2000000;
	struct world w = { 0 };

	(void)state;
	world_open(&w, 10);
	mt_flight_free(w.f);
	w.c.window_bytes = MT_FLIGHT_MEM_DEFAULT;
	w.f = mt_flight_new(w.d, 7);
	assert_non_null(w.f);
	for (size_t i = 0; i < n; i++)
		call(&w, (double)i * 1e-7, i % 2, 0x100000 + i / 2 * 0x1000);
	assert_int_equal(mt_flight_dump(w.f, "killed", "asked", NULL, 0), 0);
	/* once it has written a part of it */
	for (int i = 0; i < 20000 && one_size(w.dir) == 0; i++)
		usleep(100);
	assert_true(one_size(w.dir) > 0);
	assert_int_equal(kill(only_child(), SIGKILL), 0);
	mt_flight_dir_reap(w.d, true);
	assert_int_equal(all_files_in(w.dir), 0);
	assert_int_equal(mt_flight_dir_failed(w.d), 1);
	assert_int_equal(mt_flight_dump(w.f, "again", "asked", NULL, 0), 0);
	mt_flight_dir_reap(w.d, true);
	assert_int_equal(files_in(w.dir), 1);
	assert_int_equal(mt_flight_dir_dumps(w.d), 1);
	world_close(&w);
}

/*
 * A write that fails (a moment of full disk: here the writer's file size
 * limit) removes the partial dump, and dumping goes on (issue 39: one
 * failure turned it off for the rest of the run)
 */
static void test_failed_then_retried(void **state)
{
	struct world w = { 0 };
	struct rlimit old, small = { 4096, 4096 };

	(void)state;
	world_open(&w, 10);
	for (int i = 0; i < 5000; i++)
		call(&w, i * 1e-4, true, 0x100000 + (__u64)i * 0x1000);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	small.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	/* the writer, a child, keeps the limit it was forked with */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	assert_int_equal(mt_flight_dump(w.f, "full", "asked", NULL, 0), 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	mt_flight_dir_reap(w.d, true);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(all_files_in(w.dir), 0);
	assert_int_equal(mt_flight_dir_failed(w.d), 1);
	assert_int_equal(mt_flight_dump(w.f, "room", "asked", NULL, 0), 0);
	mt_flight_dir_reap(w.d, true);
	assert_int_equal(files_in(w.dir), 1);
	assert_int_equal(mt_flight_dir_dumps(w.d), 1);
	world_close(&w);
}

/*
 * The caps remove end dumps first, then usage and asked, then signal, oom
 * and oomkill last; the oldest first among the same (issue 39: by age
 * alone, an OOM's dump went before workers' end dumps)
 */
static void test_eviction_order(void **state)
{
	static const char *const tags[] = { "oom",    "end", "asked", "end",
					    "signal", "end", "exit" };
	struct world w = { 0 };
	char kept[64] = "";
	struct dirent *de;
	DIR *d;

	(void)state;
	world_open(&w, 3);
	call(&w, 0.0, true, 0xa000);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		assert_int_equal(mt_flight_dump(w.f, tags[i], "asked", NULL, 0),
				 0);
		mt_flight_dir_reap(w.d, true);
	}
	assert_int_equal(all_files_in(w.dir), 3);
	/* the number in each name: the order the dumps came in */
	d = opendir(w.dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		const char *num = strstr(de->d_name, "-000");

		if (de->d_name[0] != '.' && num)
			kept[strlen(kept)] = num[4];
	}
	closedir(d);
	assert_int_equal(strlen(kept), 3);
	/* an exit outlasts an asked dump, as a signal does */
	assert_non_null(strchr(kept, '1')); /* the oom */
	assert_non_null(strchr(kept, '5')); /* the signal */
	assert_non_null(strchr(kept, '7')); /* the exit */
	world_close(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_two_recorders),
		cmocka_unit_test(test_folder_swapped),
		cmocka_unit_test(test_writer_killed),
		cmocka_unit_test(test_failed_then_retried),
		cmocka_unit_test(test_eviction_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
