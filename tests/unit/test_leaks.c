// SPDX-License-Identifier: GPL-2.0
/* user/analysis/leaks.c: sites whose old allocations grow step over step. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "event/kinds.h"
#include "analysis/leaks.h"
#include "analysis/livetable.h"
#include "analysis/sites.h"

#define SEC 1000000000ULL

/* interned strings: one pointer each */
static const char EV_MALLOC[] = "c10:malloc";
static const char MOD_CACHE[] = "Net.cache";
static const char MOD_FC[] = "Net.fc";
static const char MOD_ADAM[] = "Adam";
static const char PH_FWD[] = "forward";
static const char PH_OPT[] = "optimizer";
static const char *const FRAMES[] = { "train.py:17 remember",
				      "train.py:30 forward" };

struct sim {
	struct mt_livetable *live;
	struct mt_sites *sites;
	struct mt_leaks *leaks;
	__u64 next_ptr;
	char *buf;
	size_t len;
};

static void sim_free(struct sim *s)
{
	mt_live_free(s->live);
	mt_sites_free(s->sites);
	mt_leaks_free(s->leaks);
	free(s->buf);
	free(s);
}

static int setup_conf(void **state, unsigned int steps, double seconds)
{
	struct mt_leak_conf c = { .age_steps = steps, .age_seconds = seconds };
	struct sim *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	s->live = mt_live_new(1 << 16);
	s->sites = mt_sites_new(1024);
	s->leaks = mt_leaks_new(&c);
	s->next_ptr = 0x10000;
	if (!s->live || !s->sites || !s->leaks) {
		sim_free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int setup(void **state)
{
	return setup_conf(state, 1, 10);
}

static int setup_age2(void **state)
{
	return setup_conf(state, 2, 10);
}

static int teardown(void **state)
{
	sim_free(*state);
	return 0;
}

static struct mt_site *site(struct sim *s, __u32 pid, const char *module,
			    const char *phase, int depth)
{
	struct mt_site key = { .pid = pid,
			       .event = EV_MALLOC,
			       .module = module,
			       .phase = phase,
			       .depth = depth,
			       .frames = (const char **)FRAMES };
	bool is_new;

	return mt_sites_get(s->sites, &key, &is_new);
}

/* an allocation during step `step` (so `step` steps finished), at ts */
static __u64 alloc(struct sim *s, __u32 pid, struct mt_site *st, __u64 size,
		   __u32 step, __u64 ts)
{
	struct mt_live e = { .ptr = s->next_ptr,
			     .size = size,
			     .ts = ts,
			     .seq = s->next_ptr,
			     .event = EV_MALLOC,
			     .site = st,
			     .step = step,
			     .pid = pid,
			     .space = MT_SP_C10,
			     .dev_type = MT_DT_CUDA };

	s->next_ptr += 0x100;
	assert_int_equal(mt_live_insert(s->live, &e), 0);
	return e.ptr;
}

static void release(struct sim *s, __u32 pid, __u64 ptr)
{
	assert_true(mt_live_remove(s->live, pid, MT_SP_C10, ptr, NULL));
}

static const char *print(struct sim *s, bool stacks)
{
	FILE *f;

	free(s->buf);
	s->buf = NULL;
	f = open_memstream(&s->buf, &s->len);
	assert_non_null(f);
	mt_leaks_print(s->leaks, s->live, stacks, f);
	assert_int_equal(fclose(f), 0);
	return s->buf;
}

/*
 * A training loop of `steps` steps: parameters made before the first,
 * Adam's state made in the first two steps then kept, activations freed
 * within their step, and, if leak, one 4 KiB block per step kept for good.
 */
static void train(struct sim *s, __u32 pid, int steps, bool leak)
{
	struct mt_site *params = site(s, pid, MOD_FC, NULL, 0);
	struct mt_site *adam = site(s, pid, MOD_ADAM, PH_OPT, 0);
	struct mt_site *act = site(s, pid, MOD_FC, PH_FWD, 0);
	struct mt_site *cache = site(s, pid, MOD_CACHE, PH_FWD, 2);

	for (int i = 0; i < 4; i++)
		alloc(s, pid, params, 1 << 20, 0, 0);
	for (__u32 step = 0; step < (__u32)steps; step++) {
		__u64 ts = (step + 1) * SEC;
		__u64 a = alloc(s, pid, act, 1 << 22, step, ts);

		if (leak)
			alloc(s, pid, cache, 4096, step, ts);
		if (step < 2)
			for (int i = 0; i < 3; i++)
				alloc(s, pid, adam, 1 << 20, step, ts);
		release(s, pid, a);
		mt_leaks_boundary(s->leaks, pid, step + 1, ts + SEC / 2,
				  s->live);
	}
}

static void test_planted_leak(void **state)
{
	struct sim *s = *state;
	const char *out;

	train(s, 7, 8, true);
	out = print(s, true);
	assert_string_equal(
		out,
		"# leaks verdict=growing sites=1 boundaries=8\n"
		"# leak pid=7 growth=+1.00/step bytes_growth=+4096/step "
		"(+4.00 KiB) count=8 bytes=32768 (32.0 KiB) counts=5,6,7,8 "
		"event=c10:malloc module=Net.cache phase=forward node=-\n"
		"#\ttrain.py:17 remember\n"
		"#\ttrain.py:30 forward\n");
	assert_null(strstr(print(s, false), "#\t"));
}

static void test_steady_loop_is_no_leak(void **state)
{
	struct sim *s = *state;

	train(s, 7, 8, false);
	assert_string_equal(print(s, true),
			    "# leaks verdict=none boundaries=8\n");
}

/* counted from a live table that refused one: the headline says so */
static void test_live_table_full(void **state)
{
	struct sim *s = *state;
	struct mt_live e = { .ptr = 0x1000, .size = 64, .pid = 7 };

	train(s, 7, 8, false);
	mt_live_free(s->live);
	s->live = mt_live_new(0);
	assert_non_null(s->live);
	assert_int_equal(mt_live_insert(s->live, &e), -ENOSPC);
	assert_string_equal(print(s, true),
			    "# leaks verdict=none boundaries=8 "
			    "incomplete=live_table untracked_allocs=1 "
			    "untracked_live=1 advise_max_live=2\n");
}

/* Adam's state is still settling at the 4th boundary: not a leak yet */
static void test_settling_is_no_leak(void **state)
{
	struct sim *s = *state;

	train(s, 7, 4, false);
	assert_string_equal(print(s, true),
			    "# leaks verdict=none boundaries=4\n");
}

static void test_too_few_boundaries(void **state)
{
	struct sim *s = *state;

	assert_string_equal(print(s, true),
			    "# leaks verdict=unjudged boundaries=0 "
			    "needed=4\n");
	train(s, 7, 3, true);
	assert_string_equal(print(s, true),
			    "# leaks pid=7 verdict=unjudged boundaries=3 "
			    "needed=4\n");
	mt_leaks_free(NULL);
}

/* only the allocations alive across age_steps count */
static void test_age_steps(void **state)
{
	struct sim *s = *state;

	train(s, 7, 8, true);
	/* at the 8th boundary the 8th block is too young */
	assert_non_null(strstr(print(s, false),
			       " count=7 bytes=28672 (28.0 KiB) "
			       "counts=4,5,6,7 "));
}

/* growth by bytes alone: one block replaced by a bigger one each step */
static void test_bytes_growth(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 7, MOD_CACHE, PH_FWD, 0);
	__u64 ptr = 0;

	for (__u32 step = 0; step < 6; step++) {
		if (ptr)
			release(s, 7, ptr);
		ptr = alloc(s, 7, st, 1024 * (step + 1), step, step * SEC);
		mt_leaks_boundary(s->leaks, 7, step + 1, step * SEC, s->live);
	}
	assert_non_null(strstr(print(s, false),
			       "# leak pid=7 growth=+0.00/step "
			       "bytes_growth=+1024/step (+1.00 KiB) count=1 "
			       "bytes=6144 (6.00 KiB) counts=1,1,1,1 "));
}

/* a site gone at a boundary counts 0 there and starts over */
static void test_absent_counts_zero(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 7, MOD_CACHE, PH_FWD, 0);
	__u64 ptrs[16];
	int n = 0;

	for (__u32 step = 0; step < 10; step++) {
		/* grows at steps 0-3, all freed at step 4, grows again */
		if (step == 4)
			while (n)
				release(s, 7, ptrs[--n]);
		else
			ptrs[n++] = alloc(s, 7, st, 100, step, 0);
		mt_leaks_boundary(s->leaks, 7, step + 1, 0, s->live);
		if (step == 4)
			assert_string_equal(print(s, false),
					    "# leaks verdict=none "
					    "boundaries=5\n");
		if (step == 6)
			/* 0 at step 4, then 1, 2: not three rises yet */
			assert_null(strstr(print(s, false), "# leak pid"));
	}
	assert_non_null(strstr(print(s, false), " counts=2,3,4,5 "));
}

/* without steps: boundaries every age_seconds, growth per interval */
static void test_seconds(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 9, MOD_CACHE, PH_FWD, 0);
	struct mt_site *fixed = site(s, 9, MOD_FC, NULL, 0);

	alloc(s, 9, fixed, 1 << 20, 0, 0);
	for (__u64 t = 1; t <= 6; t++) {
		/* two blocks a second; the last interval's are too young */
		alloc(s, 9, st, 512, 0, t * 10 * SEC - SEC);
		alloc(s, 9, st, 512, 0, t * 10 * SEC - SEC / 2);
		mt_leaks_boundary(s->leaks, 9, 0, t * 10 * SEC, s->live);
	}
	assert_string_equal(print(s, false),
			    "# leaks verdict=growing sites=1 boundaries=6\n"
			    "# leak pid=9 growth=+2.00/10s "
			    "bytes_growth=+1024/10s (+1.00 KiB) count=10 "
			    "bytes=5120 (5.00 KiB) counts=4,6,8,10 "
			    "event=c10:malloc module=Net.cache phase=forward "
			    "node=-\n");
}

/* a process that starts stepping is judged on its steps alone */
static void test_kind_change(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 7, MOD_CACHE, PH_FWD, 0);

	for (__u64 t = 1; t <= 5; t++) {
		alloc(s, 7, st, 8, 0, 0);
		mt_leaks_boundary(s->leaks, 7, 0, t * 20 * SEC, s->live);
	}
	assert_non_null(strstr(print(s, false), "growth=+1.00/20s"));
	for (__u32 step = 1; step <= 3; step++) {
		alloc(s, 7, st, 8, step - 1, 0);
		mt_leaks_boundary(s->leaks, 7, step, 200 * SEC, s->live);
	}
	assert_non_null(strstr(print(s, false),
			       "# leaks pid=7 verdict=unjudged boundaries=3 "
			       "needed=4\n"));
	alloc(s, 7, st, 8, 3, 0);
	mt_leaks_boundary(s->leaks, 7, 4, 200 * SEC, s->live);
	assert_non_null(strstr(print(s, false), "growth=+1.00/step"));
}

/* processes apart: one leaks, the other not; largest growth first */
static void test_pids(void **state)
{
	struct sim *s = *state;
	const char *out;

	train(s, 7, 6, false);
	train(s, 8, 6, true);
	out = print(s, false);
	assert_non_null(strstr(out, "# leaks verdict=growing sites=1 "
				    "boundaries=12\n"));
	assert_non_null(strstr(out, "# leak pid=8 growth=+1.00/step"));
	assert_null(strstr(out, "pid=7"));
}

/* more sites than the table holds: counted, said, and no crash */
static void test_site_table_full(void **state)
{
	struct sim *s = *state;
	static char names[20000][8];
	struct mt_sites *many = mt_sites_new(20000);

	assert_non_null(many);
	for (int i = 0; i < 20000; i++) {
		struct mt_site key = { .pid = 7, .module = names[i] };
		bool is_new;

		alloc(s, 7, mt_sites_get(many, &key, &is_new), 1, 0, 0);
	}
	mt_leaks_boundary(s->leaks, 7, 1, SEC, s->live);
	assert_non_null(strstr(print(s, false),
			       "# leaks pid=7 uncounted_allocations=3616 "
			       "site_table=16384\n"));
	mt_sites_free(many);
}

/* many leaks: largest bytes growth first, the rest counted */
static void test_many_leaks(void **state)
{
	static const char mods[22][8] = { "m0",	 "m1",	"m2",  "m3",  "m4",
					  "m5",	 "m6",	"m7",  "m8",  "m9",
					  "m10", "m11", "m12", "m13", "m14",
					  "m15", "m16", "m17", "m18", "m19",
					  "m20", "m21" };
	struct sim *s = *state;
	const char *out;

	for (__u32 step = 0; step < 4; step++) {
		for (int i = 0; i < 22; i++)
			for (int k = 0; k <= i; k++)
				alloc(s, 7, site(s, 7, mods[i], NULL, 0), 100,
				      step, 0);
		/* a site of no known origin grows too, least of all */
		alloc(s, 7, NULL, 1, step, 0);
		mt_leaks_boundary(s->leaks, 7, step + 1, 0, s->live);
	}
	out = print(s, false);
	assert_non_null(strstr(out, "# leaks verdict=growing sites=23 "
				    "boundaries=4\n"
				    "# leak pid=7 growth=+22.00/step "
				    "bytes_growth=+2200/step (+2.15 KiB) "
				    "count=88 bytes=8800 (8.59 KiB) "
				    "counts=22,44,66,88 event=c10:malloc "
				    "module=m21 phase=- node=-\n"
				    "# leak pid=7 growth=+21.00/step "));
	assert_non_null(strstr(out, "module=m2 phase=- node=-\n"
				    "# leak ... 3 more growing sites\n"));
	assert_null(strstr(out, "module=m1 "));
	assert_null(strstr(out, "event=- module=-"));
}

/* one suspect's figures, as the report's table gets them */
static void keep_first(const struct mt_leak_suspect *k, void *ctx)
{
	struct mt_leak_suspect *first = ctx;

	if (!first->pid)
		*first = *k;
}

/*
 * A sampled trace: each step keeps four blocks of 100 B, one walked that
 * stands for five (est_adj 4) and three whose stack was not. The site's
 * count is kept to the exact old allocations at each boundary: it saw 1 a
 * step and says 4 more, of 3 unwalked, so it counts 1 + 3 = 4 a step (its
 * estimate alone 5; before, the walked ones alone, 1).
 */
static void test_sampled_counts(void **state)
{
	struct sim *s = *state;
	struct mt_site *cache = site(s, 7, MOD_CACHE, PH_FWD, 2);
	struct mt_site *bare = site(s, 7, NULL, NULL, 0);
	struct mt_leak_suspect k = { 0 };
	struct mt_leak_verdict vd;

	for (__u32 step = 0; step < 8; step++) {
		__u64 ts = (step + 1) * SEC;
		struct mt_live e = { .size = 100,
				     .ts = ts,
				     .event = EV_MALLOC,
				     .step = step,
				     .pid = 7,
				     .space = MT_SP_C10,
				     .dev_type = MT_DT_CUDA };

		for (int i = 0; i < 4; i++) {
			e.ptr = e.seq = s->next_ptr;
			s->next_ptr += 0x100;
			e.site = i ? bare : cache;
			e.est_adj = i ? -1.0f : 4.0f;
			assert_int_equal(mt_live_insert(s->live, &e), 0);
		}
		mt_leaks_boundary(s->leaks, 7, step + 1, ts + SEC / 2, s->live);
	}
	assert_non_null(strstr(print(s, false),
			       "# leak pid=7 growth=+4.00/step "
			       "bytes_growth=+500/step (+500 B) count=32 "
			       "bytes=4000 (3.91 KiB) counts=20,24,28,32 "
			       "event=c10:malloc module=Net.cache "));
	assert_int_equal(mt_leaks_verdict(s->leaks, &vd, keep_first, &k), 0);
	assert_int_equal(vd.growing, 1);
	assert_int_equal(k.count, 32);
	assert_true(k.count_growth > 3.999 && k.count_growth < 4.001);
}

/* more allocations, fewer bytes: still growth, shown with its sign */
static void test_count_up_bytes_down(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 7, MOD_CACHE, PH_FWD, 0);
	__u64 big = 0;

	for (__u32 step = 0; step < 4; step++) {
		if (big)
			release(s, 7, big);
		big = alloc(s, 7, st, 1000 - 200 * step, step, 0);
		if (step)
			alloc(s, 7, st, 1, step, 0);
		mt_leaks_boundary(s->leaks, 7, step + 1, 0, s->live);
	}
	assert_non_null(strstr(print(s, false),
			       "growth=+1.00/step bytes_growth=-199/step "
			       "(-199 B) count=4 bytes=403 (403 B) "
			       "counts=1,2,3,4 "));
}

/* a NULL site groups as one, and a cut stack says so */
static void test_null_site_and_cut_stack(void **state)
{
	struct sim *s = *state;
	struct mt_site key = *site(s, 7, MOD_CACHE, PH_FWD, 1);
	struct mt_site *cut;
	bool is_new;

	key.truncated = true;
	cut = mt_sites_get(s->sites, &key, &is_new);
	for (__u32 step = 0; step < 4; step++) {
		alloc(s, 7, NULL, 10, step, 0);
		alloc(s, 7, cut, 20, step, 0);
		mt_leaks_boundary(s->leaks, 7, step + 1, 0, s->live);
	}
	assert_string_equal(
		print(s, true),
		"# leaks verdict=growing sites=2 boundaries=4\n"
		"# leak pid=7 growth=+1.00/step bytes_growth=+20/step (+20 B) "
		"count=4 bytes=80 (80 B) counts=1,2,3,4 event=c10:malloc "
		"module=Net.cache phase=forward node=-\n"
		"#\ttrain.py:17 remember\n"
		"#\t[truncated at 1 frames]\n"
		"# leak pid=7 growth=+1.00/step bytes_growth=+10/step (+10 B) "
		"count=4 bytes=40 (40 B) counts=1,2,3,4 event=- module=- "
		"phase=- node=-\n");
}

/* processes beyond the table: said, not tracked */
static void test_too_many_pids(void **state)
{
	struct sim *s = *state;

	for (__u32 pid = 1; pid <= 66; pid++)
		mt_leaks_boundary(s->leaks, pid, 1, 0, s->live);
	assert_non_null(strstr(print(s, false),
			       "# leaks untracked_boundaries=2 "
			       "max_pids=64\n"));
}

/*
 * A dump's window of 8 s, judged at its 8 slices' ends: allocations of a
 * sampled trace, most without a stack (est_adj -1), at ts
 */
static __u64 alloc_w(struct sim *s, __u32 pid, struct mt_site *st, __u64 size,
		     __u64 ts, bool sampled)
{
	struct mt_live e = { .ptr = s->next_ptr,
			     .size = size,
			     .ts = ts,
			     .event = EV_MALLOC,
			     .site = st,
			     .pid = pid,
			     .space = MT_SP_C10,
			     .dev_type = MT_DT_CUDA,
			     .est_adj = sampled ? 2.0f : -1.0f };

	s->next_ptr += 0x100;
	assert_int_equal(mt_live_insert(s->live, &e), 0);
	return e.ptr;
}

/*
 * 10 steps a second for 8 s: an activation freed within its step and,
 * if leak, 4 KiB kept a step, one in 20 of them with its stack; the
 * process's teardown frees what it kept before the window's end
 */
static void window_run(struct sim *s, bool leak)
{
	struct mt_site *act = site(s, 7, MOD_FC, PH_FWD, 0);
	struct mt_site *cache = site(s, 7, MOD_CACHE, PH_FWD, 2);
	__u64 kept[80];
	int slice = 1;

	mt_leaks_window(s->leaks, 8 * SEC);
	alloc_w(s, 7, act, 1 << 20, 0, true);
	for (int i = 0; i < 80; i++) {
		__u64 ts = (__u64)i * SEC / 10 + 1;

		if (ts > (__u64)slice * SEC)
			mt_leaks_boundary(s->leaks, 7, 0, (__u64)slice++ * SEC,
					  s->live);
		release(s, 7, alloc_w(s, 7, act, 1 << 16, ts, i % 7 == 0));
		if (leak)
			kept[i] = alloc_w(s, 7, cache, 4096, ts, i % 20 == 3);
	}
	for (int i = 0; leak && i < 80; i++)
		release(s, 7, kept[i]);
	mt_leaks_boundary(s->leaks, 7, 0, 8 * SEC, s->live);
}

/* every allocation counts, stack or not; the teardown hides nothing */
static void test_window_leak(void **state)
{
	struct sim *s = *state;
	struct mt_leak_verdict vd;

	window_run(s, true);
	assert_int_equal(mt_leaks_verdict(s->leaks, &vd, NULL, NULL), 0);
	assert_int_equal(vd.growing, 1);
	assert_true(vd.window_s == 8.0);
	assert_int_equal(mt_leaks_count(s->leaks, 7), 1);
	/* at 7 s: the 60 made by 6 s; 10 a second, exact */
	assert_string_equal(
		print(s, false),
		"# leaks verdict=growing sites=1 boundaries=8 window=8.000s\n"
		"# leak pid=7 growth=+10.00/1s bytes_growth=+40960/1s "
		"(+40.0 KiB) count=60 bytes=245760 (240 KiB) counts=- "
		"size=4096 call=c10:malloc stack=sampled event=c10:malloc "
		"module=Net.cache phase=forward node=-\n");
}

static void test_window_clean(void **state)
{
	struct sim *s = *state;
	struct mt_leak_verdict vd;

	window_run(s, false);
	assert_int_equal(mt_leaks_verdict(s->leaks, &vd, NULL, NULL), 0);
	assert_int_equal(vd.growing, 0);
	assert_int_equal(vd.undecided, 0);
	assert_true(vd.judged);
	assert_string_equal(print(s, false),
			    "# leaks verdict=none boundaries=8 "
			    "window=8.000s\n");
}

/* kept from two slices of eight, never three in a row: cannot tell */
static void test_window_undecided(void **state)
{
	struct sim *s = *state;
	struct mt_site *cache = site(s, 7, MOD_CACHE, PH_FWD, 2);
	struct mt_leak_verdict vd;

	mt_leaks_window(s->leaks, 8 * SEC);
	for (__u64 b = 1; b <= 8; b++) {
		if (b == 2 || b == 5)
			alloc_w(s, 7, cache, 512, b * SEC - SEC / 2, false);
		mt_leaks_boundary(s->leaks, 7, 0, b * SEC, s->live);
	}
	assert_int_equal(mt_leaks_verdict(s->leaks, &vd, NULL, NULL), 0);
	assert_int_equal(vd.growing, 0);
	assert_int_equal(vd.undecided, 1);
	assert_string_equal(print(s, false),
			    "# leaks verdict=undecided sites=1 boundaries=8 "
			    "window=8.000s\n");
}

/* a group none of whose allocations had a stack: named by call and size */
static void test_window_no_stack(void **state)
{
	struct sim *s = *state;
	struct mt_leak_verdict vd;

	mt_leaks_window(s->leaks, 8 * SEC);
	for (__u64 b = 1; b <= 8; b++) {
		alloc_w(s, 7, NULL, 300, b * SEC - SEC / 2, false);
		mt_leaks_boundary(s->leaks, 7, 0, b * SEC, s->live);
	}
	assert_int_equal(mt_leaks_verdict(s->leaks, &vd, NULL, NULL), 0);
	assert_int_equal(vd.growing, 1);
	assert_non_null(strstr(print(s, false),
			       "counts=- size=300 call=c10:malloc stack=none "
			       "event=- module=-"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_planted_leak, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_steady_loop_is_no_leak,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_table_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_settling_is_no_leak, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_too_few_boundaries, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_age_steps, setup_age2,
						teardown),
		cmocka_unit_test_setup_teardown(test_bytes_growth, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_absent_counts_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_seconds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kind_change, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_site_table_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_leaks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sampled_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_count_up_bytes_down, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_null_site_and_cut_stack,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_pids, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_window_leak, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_window_clean, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_window_undecided, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_window_no_stack, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
