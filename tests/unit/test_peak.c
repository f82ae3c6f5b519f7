// SPDX-License-Identifier: GPL-2.0
/* user/analysis/peak.c: each account's peak and what was alive at it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "event/kinds.h"
#include "analysis/livetable.h"
#include "analysis/peak.h"
#include "analysis/sites.h"

#define T0 1000000000ULL /* the trace's start, ns */
#define MS 1000000ULL

/* interned strings: one pointer each */
static const char EV_MALLOC[] = "c10:malloc";
static const char MOD_FC1[] = "Net.fc1";
static const char MOD_FC2[] = "Net.fc2";
static const char PH_FWD[] = "forward";
static const char PH_BWD[] = "backward";
static const char NODE_MM[] = "MmBackward0";
static const char *const FRAMES[] = { "train.py:42 forward",
				      "train.py:90 train_step" };

struct sim {
	struct mt_livetable *live;
	struct mt_peak *peak;
	struct mt_sites *sites;
	__u64 seq;
	char *buf;
	size_t len;
};

static void sim_free(struct sim *s)
{
	mt_live_free(s->live);
	mt_peak_free(s->peak);
	mt_sites_free(s->sites);
	free(s->buf);
	free(s);
}

static int setup(void **state)
{
	struct sim *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	s->live = mt_live_new(1 << 20);
	s->peak = mt_peak_new();
	s->sites = mt_sites_new(1 << 17);
	if (!s->live || !s->peak || !s->sites) {
		sim_free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	sim_free(*state);
	return 0;
}

static struct mt_site *site(struct sim *s, __u32 pid, const char *module,
			    const char *phase, const char *node, int depth)
{
	struct mt_site key = { .pid = pid,
			       .event = EV_MALLOC,
			       .module = module,
			       .phase = phase,
			       .node = node,
			       .depth = depth,
			       .frames = (const char **)FRAMES };
	bool is_new;

	return mt_sites_get(s->sites, &key, &is_new);
}

static struct mt_live entry(struct sim *s, __u32 pid, __u16 space, __u64 ptr,
			    __u64 size, struct mt_site *st)
{
	s->seq++;
	return (struct mt_live){
		.ptr = ptr,
		.size = size,
		.ts = T0 + s->seq * MS,
		.seq = s->seq,
		.event = EV_MALLOC,
		.site = st,
		.pid = pid,
		.space = space,
		.dev_type = space == MT_SP_CPU	  ? MT_DT_CPU :
			    space == MT_SP_PINNED ? MT_DT_HOST :
						    MT_DT_CUDA,
		.dev = space == MT_SP_CPU || space == MT_SP_PINNED ? -1 : 0
	};
}

static void alloc_in(struct sim *s, __u32 pid, __u16 space, __u64 ptr,
		     __u64 size, struct mt_site *st)
{
	struct mt_live e = entry(s, pid, space, ptr, size, st);

	assert_int_equal(mt_live_insert(s->live, &e), 0);
	mt_peak_alloc(s->peak, &e);
}

/*
 * --sample-bytes: an allocation that stands for 1 + adj times its bytes
 * (mt_live.est_adj; -1: its stack was not walked)
 */
static void alloc_est(struct sim *s, __u64 ptr, __u64 size, struct mt_site *st,
		      float adj)
{
	struct mt_live e = entry(s, 1, MT_SP_C10, ptr, size, st);

	e.est_adj = adj;
	assert_int_equal(mt_live_insert(s->live, &e), 0);
	mt_peak_alloc(s->peak, &e);
}

static void alloc(struct sim *s, __u64 ptr, __u64 size, struct mt_site *st)
{
	alloc_in(s, 1, MT_SP_C10, ptr, size, st);
}

static void release_in(struct sim *s, __u32 pid, __u16 space, __u64 ptr)
{
	struct mt_live e;

	s->seq++;
	assert_true(mt_live_remove(s->live, pid, space, ptr, &e));
	mt_peak_release(s->peak, &e, MT_MK_UNKNOWN);
}

static void release(struct sim *s, __u64 ptr)
{
	release_in(s, 1, MT_SP_C10, ptr);
}

/* the view's text */
static const char *print(struct sim *s, size_t top, bool stacks)
{
	FILE *f;

	free(s->buf);
	s->buf = NULL;
	f = open_memstream(&s->buf, &s->len);
	assert_non_null(f);
	mt_peak_print(s->peak, s->live, T0, top, stacks, f);
	assert_int_equal(fclose(f), 0);
	return s->buf;
}

static const char *print_now(struct sim *s, __u64 ts, size_t top)
{
	FILE *f;

	free(s->buf);
	s->buf = NULL;
	f = open_memstream(&s->buf, &s->len);
	assert_non_null(f);
	mt_peak_print_now(s->live, T0, ts, top, false, f);
	assert_int_equal(fclose(f), 0);
	return s->buf;
}

/* the sum of bytes= over the lines below a title, up to the next title */
static __u64 group_sum(const char *title)
{
	const char *line = strchr(title, '\n') + 1;
	__u64 sum = 0;

	while (*line && strncmp(line, "# peak pid=", 11) &&
	       strncmp(line, "# at pid=", 9)) {
		const char *b = strstr(line, " bytes=");
		const char *end = strchr(line, '\n');

		if (line[1] != '\t' && b && b < end)
			sum += strtoull(b + 7, NULL, 10);
		line = end + 1;
	}
	return sum;
}

/* what mt_peak_foreach handed out: the first groups, the totals */
struct handed {
	struct mt_peak_group v[8];
	size_t n, unfit_n;
	__u64 bytes, unfit_bytes;
	__u64 *by_site; /* by the number of a numbered site, if set */
};

static void hand(const struct mt_peak_group *g, void *ctx)
{
	struct handed *h = ctx;

	if (h->n < 8)
		h->v[h->n] = *g;
	h->n++;
	h->bytes += g->bytes;
	if (g->unfit) {
		assert_null(g->site);
		h->unfit_n++;
		h->unfit_bytes += g->bytes;
	} else if (h->by_site) {
		h->by_site[atoi(g->site->module + 1)] += g->bytes;
	}
}

static void foreach(struct sim *s, struct handed * h)
{
	assert_int_equal(mt_peak_foreach(s->peak, s->live, hand, h), 0);
}

static void test_empty(void **state)
{
	struct sim *s = *state;
	struct handed h = { 0 };

	assert_string_equal(print(s, 10, true), "");
	assert_string_equal(print_now(s, T0, 10), "");
	foreach(s, &h)
		;
	assert_int_equal(h.n, 0);
	mt_peak_free(NULL);
}

static void test_alive_at_peak(void **state)
{
	struct sim *s = *state;
	struct mt_site *fc1 = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_site *fc2 = site(s, 1, MOD_FC2, PH_BWD, NODE_MM, 0);
	struct mt_site *late = site(s, 1, MOD_FC2, PH_FWD, NULL, 0);
	struct handed h = { 0 };
	const char *out;

	alloc(s, 0x1000, 100, fc1);
	alloc(s, 0x2000, 200, fc2);
	alloc(s, 0x3000, 50, fc1); /* seq 3: the peak, 350 */
	release(s, 0x2000); /* alive at the peak, freed after it */
	alloc(s, 0x4000, 10, late); /* after the peak */
	release(s, 0x1000);
	alloc(s, 0x5000, 20, fc1); /* after the peak, same site */
	out = print(s, 10, false);
	assert_string_equal(
		out, "# peak pid=1 cuda:0 c10 allocated: 350 B at "
		     "0.003 s (event 3) bytes=350 groups=2 allocs=3 sum=350\n"
		     "#   200 B bytes=200 count=1 event=c10:malloc "
		     "module=Net.fc2 phase=backward node=MmBackward0\n"
		     "#   150 B bytes=150 count=2 event=c10:malloc "
		     "module=Net.fc1 phase=forward node=-\n");
	/* the same groups, handed out */
	foreach(s, &h)
		;
	assert_int_equal(h.n, 2);
	assert_ptr_equal(h.v[0].site, fc2);
	assert_int_equal(h.v[0].bytes, 200);
	assert_int_equal(h.v[0].count, 1);
	assert_ptr_equal(h.v[1].site, fc1);
	assert_int_equal(h.v[1].bytes, 150);
	assert_int_equal(h.v[1].count, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(h.v[i].pid, 1);
		assert_int_equal(h.v[i].space, MT_SP_C10);
		assert_int_equal(h.v[i].dev_type, MT_DT_CUDA);
		assert_int_equal(h.v[i].dev, 0);
		assert_int_equal(h.v[i].peak, 350);
		assert_int_equal(h.v[i].peak_ts, T0 + 3 * MS);
		assert_false(h.v[i].unfit);
	}
}

static void test_higher_peak_resets(void **state)
{
	struct sim *s = *state;
	struct mt_site *a = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_site *b = site(s, 1, MOD_FC2, PH_FWD, NULL, 0);
	char *out;

	alloc(s, 0x1000, 1000, a); /* peak 1000 */
	release(s, 0x1000); /* into the first peak's groups */
	alloc(s, 0x2000, 600, b);
	alloc(s, 0x3000, 600, b); /* seq 4: peak 1200 */
	release(s, 0x2000);
	release(s, 0x3000);
	out = strdup(print(s, 10, false));
	assert_non_null(out);
	assert_non_null(strstr(
		out, "(event 4) bytes=1200 groups=1 allocs=2 sum=1200\n"));
	assert_non_null(strstr(out, "bytes=1200 count=2 event=c10:malloc "
				    "module=Net.fc2"));
	assert_null(strstr(out, "Net.fc1"));

	/* a lower one later changes nothing */
	alloc(s, 0x4000, 1100, a);
	release(s, 0x4000);
	assert_string_equal(print(s, 10, false), out);
	free(out);
}

static void test_top_and_rest_add_up(void **state)
{
	static const char layers[12][16] = { "L0", "L1", "L2",	"L3",
					     "L4", "L5", "L6",	"L7",
					     "L8", "L9", "L10", "L11" };
	struct sim *s = *state;
	const char *out;

	for (int i = 0; i < 12; i++) {
		struct mt_site *st = site(s, 1, layers[i], PH_FWD, NULL, 0);

		alloc(s, 0x1000 + (__u64)i * 0x100, 1000 + (__u64)i, st);
		alloc(s, 0x9000 + (__u64)i * 0x100, 7, st);
	}
	release(s, 0x1000);
	out = print(s, 3, false);
	assert_non_null(
		strstr(out, "bytes=12150 groups=12 allocs=24 sum=12150\n"));
	assert_non_null(strstr(out, "#   1018 B bytes=1018 count=2 "
				    "event=c10:malloc module=L11 "));
	assert_non_null(strstr(out, "#   ... 9 more groups: 8.89 KiB "
				    "bytes=9099 count=18\n"));
	assert_int_equal(group_sum(out), 12150);
	/* largest first, three of them */
	assert_true(strstr(out, "module=L11 ") < strstr(out, "module=L10 "));
	assert_true(strstr(out, "module=L10 ") < strstr(out, "module=L9 "));
	assert_null(strstr(out, "module=L8 "));
}

static void test_stacks(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 1, MOD_FC1, PH_FWD, NULL, 2);
	struct mt_site key = *st;
	struct mt_site *cut;
	bool is_new;

	key.truncated = true;
	key.depth = 1;
	key.recompute = true;
	cut = mt_sites_get(s->sites, &key, &is_new);
	alloc(s, 0x1000, 64, st);
	alloc(s, 0x2000, 32, cut);
	assert_string_equal(
		print(s, 10, true),
		"# peak pid=1 cuda:0 c10 allocated: 96 B at 0.002 s (event 2) "
		"bytes=96 groups=2 allocs=2 sum=96\n"
		"#   64 B bytes=64 count=1 event=c10:malloc module=Net.fc1 "
		"phase=forward node=-\n"
		"#\ttrain.py:42 forward\n"
		"#\ttrain.py:90 train_step\n"
		"#   32 B bytes=32 count=1 event=c10:malloc module=Net.fc1 "
		"phase=forward node=- recompute\n"
		"#\ttrain.py:42 forward\n"
		"#\t[truncated at 1 frames]\n");
	assert_null(strstr(print(s, 10, false), "#\t"));
}

static void test_null_site(void **state)
{
	struct sim *s = *state;

	alloc(s, 0x1000, 3 << 20, NULL);
	alloc(s, 0x2000, 1 << 20, NULL);
	release(s, 0x1000);
	assert_string_equal(print(s, 10, false),
			    "# peak pid=1 cuda:0 c10 allocated: 4.00 MiB at "
			    "0.002 s (event 2) bytes=4194304 groups=1 "
			    "allocs=2 sum=4194304\n"
			    "#   4.00 MiB bytes=4194304 count=2 event=- "
			    "module=- phase=- node=-\n");
}

static void test_accounts(void **state)
{
	struct sim *s = *state;
	struct mt_site *st = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_site *st2 = site(s, 2, MOD_FC1, PH_FWD, NULL, 0);
	struct handed h = { 0 };
	const char *out;

	alloc_in(s, 2, MT_SP_C10, 0x1000, 10, st2);
	alloc_in(s, 1, MT_SP_CUDART, 0x1000, 2 << 20, st);
	alloc_in(s, 1, MT_SP_C10, 0x1000, 512, st);
	alloc_in(s, 1, MT_SP_PINNED, 0x1000, 4096, st);
	alloc_in(s, 1, MT_SP_CPU, 0x1000, 1536, st);
	/* the same pointer in another space is another allocation */
	release_in(s, 1, MT_SP_CUDART, 0x1000);
	out = print(s, 0, false);
	assert_string_equal(
		out,
		"# peak pid=1 cuda:0 cudart reserved: 2.00 MiB at 0.002 s "
		"(event 2) bytes=2097152 groups=1 allocs=1 sum=2097152\n"
		"#   ... 1 more group: 2.00 MiB bytes=2097152 count=1\n"
		"# peak pid=1 cuda:0 c10 allocated: 512 B at 0.003 s "
		"(event 3) bytes=512 groups=1 allocs=1 sum=512\n"
		"#   ... 1 more group: 512 B bytes=512 count=1\n"
		"# peak pid=1 host pinned page-locked: 4.00 KiB at 0.004 s "
		"(event 4) bytes=4096 groups=1 allocs=1 sum=4096\n"
		"#   ... 1 more group: 4.00 KiB bytes=4096 count=1\n"
		"# peak pid=1 cpu allocated: 1.50 KiB at 0.005 s "
		"(event 5) bytes=1536 groups=1 allocs=1 sum=1536\n"
		"#   ... 1 more group: 1.50 KiB bytes=1536 count=1\n"
		"# peak pid=2 cuda:0 c10 allocated: 10 B at 0.001 s "
		"(event 1) bytes=10 groups=1 allocs=1 sum=10\n"
		"#   ... 1 more group: 10 B bytes=10 count=1\n");
	/* handed out in the order first seen */
	foreach(s, &h)
		;
	assert_int_equal(h.n, 5);
	assert_int_equal(h.v[0].pid, 2);
	assert_int_equal(h.v[1].space, MT_SP_CUDART);
	assert_int_equal(h.v[1].bytes, 2 << 20);
	assert_int_equal(h.v[2].space, MT_SP_C10);
	assert_int_equal(h.v[3].space, MT_SP_PINNED);
	assert_int_equal(h.v[3].dev_type, MT_DT_HOST);
	assert_int_equal(h.v[4].space, MT_SP_CPU);
	assert_int_equal(h.v[4].dev, -1);
	assert_int_equal(h.v[4].peak, 1536);
}

static void test_now(void **state)
{
	struct sim *s = *state;
	struct mt_site *a = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_site *b = site(s, 1, MOD_FC2, PH_FWD, NULL, 0);

	alloc(s, 0x1000, 1000, a);
	alloc(s, 0x2000, 300, b);
	alloc(s, 0x3000, 200, b);
	release(s, 0x1000);
	alloc(s, 0x4000, 10, a);
	assert_string_equal(print_now(s, T0 + 2500 * MS, 10),
			    "# at pid=1 cuda:0 c10 allocated: 510 B at "
			    "2.500 s bytes=510 groups=2 allocs=3 sum=510\n"
			    "#   500 B bytes=500 count=2 event=c10:malloc "
			    "module=Net.fc2 phase=forward node=-\n"
			    "#   10 B bytes=10 count=1 event=c10:malloc "
			    "module=Net.fc1 phase=forward node=-\n");
}

/*
 * A sampled trace: the groups print what they stand for (estimates) and
 * leave out a group of unsampled allocations only; handed out, every
 * group carries its exact bytes, walked or not, which add up to the peak
 * and, now, to what is alive
 */
static void test_sampled_exact(void **state)
{
	struct sim *s = *state;
	struct mt_site *fc1 = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_site *bare = site(s, 1, NULL, NULL, NULL, 0);
	struct handed h = { 0 }, now = { 0 };

	alloc_est(s, 0x1000, 100, fc1, 2.0f); /* stands for 300 B, 3 */
	alloc_est(s, 0x2000, 40, bare, -1.0f);
	alloc_est(s, 0x3000, 60, bare, -1.0f); /* the peak, 200 */
	release(s, 0x2000); /* alive at the peak, freed after it */
	alloc_est(s, 0x4000, 5, bare, -1.0f); /* after the peak */
	assert_string_equal(
		print(s, 10, false),
		"# peak pid=1 cuda:0 c10 allocated: 200 B at "
		"0.003 s (event 3) bytes=200 groups=1 allocs=3 sum=300 "
		"(estimate)\n"
		"#   300 B bytes=300 count=3 event=c10:malloc "
		"module=Net.fc1 phase=forward node=-\n");
	foreach(s, &h)
		;
	assert_int_equal(h.n, 2);
	assert_ptr_equal(h.v[0].site, fc1);
	assert_int_equal(h.v[0].bytes, 300);
	assert_int_equal(h.v[0].count, 3);
	assert_int_equal(h.v[0].exact_bytes, 100);
	assert_int_equal(h.v[0].bare_bytes, 0);
	assert_ptr_equal(h.v[1].site, bare);
	assert_int_equal(h.v[1].bytes, 0);
	assert_int_equal(h.v[1].count, 0);
	assert_int_equal(h.v[1].exact_bytes, 0);
	assert_int_equal(h.v[1].bare_bytes, 100);
	assert_int_equal(h.v[0].exact_bytes + h.v[1].bare_bytes, h.v[0].peak);

	assert_int_equal(mt_peak_foreach_now(s->live, hand, &now), 0);
	assert_int_equal(now.n, 2);
	assert_int_equal(now.v[0].exact_bytes, 100);
	assert_int_equal(now.v[1].bare_bytes, 65);
}

/*
 * A sampled trace's counts agree with the exact one: fc1's three walked
 * allocations stand for 15, fc2's one for 2, and six were not walked, ten
 * in all. The estimates say 17; the six unwalked are shared as what fc1
 * and fc2 say of them (12 : 1), so fc1 counts 3 + 5.54 and fc2 1 + 0.46,
 * 9 and 1 in whole allocations: each at least what was seen of it, and
 * together the exact count, printed, handed out, and now. Before, fc1
 * counted 15 of the 10.
 */
static void test_sampled_counts(void **state)
{
	struct sim *s = *state;
	struct mt_site *fc1 = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_site *fc2 = site(s, 1, MOD_FC2, PH_FWD, NULL, 0);
	struct mt_site *bare = site(s, 1, NULL, NULL, NULL, 0);
	struct handed h = { 0 }, now = { 0 };

	for (__u64 i = 0; i < 3; i++)
		alloc_est(s, 0x1000 + i * 0x100, 100, fc1, 4.0f);
	alloc_est(s, 0x2000, 100, fc2, 1.0f);
	for (__u64 i = 0; i < 6; i++)
		alloc_est(s, 0x3000 + i * 0x100, 100, bare, -1.0f);
	release(s, 0x1000); /* alive at the peak, freed after it */
	assert_string_equal(print(s, 10, false),
			    "# peak pid=1 cuda:0 c10 allocated: 1000 B at "
			    "0.010 s (event 10) bytes=1000 groups=2 allocs=10 "
			    "sum=1700 (estimate)\n"
			    "#   1.46 KiB bytes=1500 count=9 event=c10:malloc "
			    "module=Net.fc1 phase=forward node=-\n"
			    "#   200 B bytes=200 count=1 event=c10:malloc "
			    "module=Net.fc2 phase=forward node=-\n");
	/* one group and the rest: the same counts */
	assert_non_null(
		strstr(print(s, 1, false),
		       "#   ... 1 more group: 200 B bytes=200 count=1\n"));
	foreach(s, &h)
		;
	assert_int_equal(h.n, 3);
	assert_int_equal(h.v[0].count, 9);
	assert_int_equal(h.v[1].count, 1);
	assert_int_equal(h.v[2].count, 0); /* none walked: stands for none */
	assert_int_equal(h.v[0].peak_count, 10);

	/* now: nine alive, fc1's two walked standing for 10 */
	assert_int_equal(mt_peak_foreach_now(s->live, hand, &now), 0);
	assert_int_equal(now.n, 3);
	assert_int_equal(now.v[0].peak_count, 9);
	assert_int_equal(now.v[0].count + now.v[1].count + now.v[2].count, 9);
	assert_true(now.v[0].count >= 2 && now.v[1].count >= 1);
}

/* sites told apart by their module, "s0", "s1", ... */
static struct mt_site **numbered_sites(struct sim *s, int n, char (**names)[16])
{
	struct mt_site **v = calloc((size_t)n, sizeof(*v));
	bool is_new;

	*names = calloc((size_t)n, sizeof(**names));
	assert_non_null(v);
	assert_non_null(*names);
	for (int i = 0; i < n; i++) {
		struct mt_site key = { .pid = 1, .module = (*names)[i] };

		snprintf((*names)[i], sizeof((*names)[i]), "s%d", i);
		v[i] = mt_sites_get(s->sites, &key, &is_new);
		assert_true(is_new);
	}
	return v;
}

/*
 * Random traffic over many sites and several peaks, against a brute force
 * record of every allocation's life: each site's group at the last peak.
 */
#define R_SITES 3000
#define R_SLOTS 4000
#define R_OPS 200000

struct life {
	__u64 alloc_seq, free_seq; /* free_seq 0: alive */
	__u64 size;
	int site;
};

static void test_random_against_brute_force(void **state)
{
	struct sim *s = *state;
	char(*names)[16];
	struct mt_site **sites = numbered_sites(s, R_SITES, &names);
	struct life *lives = calloc(R_OPS, sizeof(*lives));
	int *slot = calloc(R_SLOTS, sizeof(*slot)); /* life index + 1 */
	__u64 *want = calloc(R_SITES, sizeof(*want));
	__u64 cur = 0, peak = 0, peak_seq = 0, total = 0;
	size_t nlives = 0, ngroups = 0, peaks = 0;
	struct handed h = { 0 };
	const char *out, *line;

	assert_non_null(lives);
	assert_non_null(slot);
	assert_non_null(want);
	srand(7);
	for (int op = 0; op < R_OPS; op++) {
		int k = rand() % R_SLOTS;
		/* a slow upward drift makes new peaks now and then */
		bool grow = rand() % 1000 < 505;

		if (slot[k] && !grow) {
			struct life *l = &lives[slot[k] - 1];

			release(s, 0x10000 + (__u64)k * 0x100);
			l->free_seq = s->seq;
			cur -= l->size;
			slot[k] = 0;
		} else if (!slot[k]) {
			struct life *l = &lives[nlives];

			l->site = rand() % R_SITES;
			l->size = 1 + (__u64)(rand() % 4096);
			alloc(s, 0x10000 + (__u64)k * 0x100, l->size,
			      sites[l->site]);
			l->alloc_seq = s->seq;
			slot[k] = (int)++nlives;
			cur += l->size;
			if (cur > peak) {
				peak = cur;
				peak_seq = s->seq;
				peaks++;
			}
		}
	}
	assert_true(peaks > 100);
	for (size_t i = 0; i < nlives; i++) {
		const struct life *l = &lives[i];

		if (l->alloc_seq <= peak_seq &&
		    (!l->free_seq || l->free_seq > peak_seq)) {
			ngroups += !want[l->site];
			want[l->site] += l->size;
			total += l->size;
		}
	}
	assert_int_equal(total, peak);
	h.by_site = calloc(R_SITES, sizeof(*h.by_site));
	assert_non_null(h.by_site);
	foreach(s, &h)
		;
	assert_int_equal(h.n, ngroups);
	assert_int_equal(h.bytes, peak);
	assert_int_equal(h.unfit_n, 0);
	assert_memory_equal(h.by_site, want, R_SITES * sizeof(*want));
	free(h.by_site);
	out = print(s, R_SITES, false);
	line = strstr(out, " bytes=");
	assert_non_null(line);
	assert_int_equal(strtoull(line + 7, NULL, 10), peak);
	assert_null(strstr(out, "mismatch"));
	assert_null(strstr(out, "no group"));
	assert_int_equal(group_sum(out), peak);
	for (line = strchr(out, '\n') + 1; *line;
	     line = strchr(line, '\n') + 1) {
		__u64 bytes = strtoull(strstr(line, " bytes=") + 7, NULL, 10);
		int i = atoi(strstr(line, " module=s") + 9);

		assert_int_equal(bytes, want[i]);
		want[i] = 0;
		ngroups--;
	}
	assert_int_equal(ngroups, 0);
	free(sites);
	free(names);
	free(lives);
	free(slot);
	free(want);
}

/* more freed groups than the table holds: the rest still adds up */
static void test_group_table_full(void **state)
{
	struct sim *s = *state;
	const int n = 70000;
	char(*names)[16];
	struct mt_site **sites = numbered_sites(s, n, &names);
	struct handed h = { 0 };
	const char *out;

	for (int i = 0; i < n; i++)
		alloc(s, 0x1000 + (__u64)i * 0x10, 2, sites[i]);
	for (int i = 0; i < n; i++)
		release(s, 0x1000 + (__u64)i * 0x10);
	out = print(s, 1, false);
	assert_non_null(strstr(
		out, "bytes=140000 groups=65536 allocs=70000 sum=140000\n"));
	assert_non_null(strstr(out, "#   ... 65535 more groups: "));
	assert_non_null(strstr(out, "#   ... in no group (group table full): "
				    "8.72 KiB bytes=8928 count=4464\n"));
	assert_int_equal(group_sum(out), 140000);
	/* handed out too, the groupless bytes last */
	foreach(s, &h)
		;
	assert_int_equal(h.n, 65536 + 1);
	assert_int_equal(h.bytes, 140000);
	assert_int_equal(h.unfit_n, 1);
	assert_int_equal(h.unfit_bytes, 8928);
	free(sites);
	free(names);
}

/* a live table of two: the third allocation marks its account's peak */
static void test_live_table_full(void **state)
{
	struct sim *s = *state;
	struct mt_site *a = site(s, 1, MOD_FC1, PH_FWD, NULL, 0);
	struct mt_live e;
	const char *out;

	mt_live_free(s->live);
	s->live = mt_live_new(2);
	assert_non_null(s->live);
	alloc(s, 0x1000, 100, a);
	alloc(s, 0x2000, 200, a);
	out = print(s, 10, false);
	assert_null(strstr(out, "incomplete="));

	e = entry(s, 1, MT_SP_C10, 0x3000, 400, a);
	assert_int_equal(mt_live_insert(s->live, &e), -ENOSPC);
	mt_peak_untracked(s->peak, &e);
	/* another account's refusal is not this one's */
	e = entry(s, 1, MT_SP_CPU, 0x4000, 50, a);
	assert_int_equal(mt_live_insert(s->live, &e), -ENOSPC);
	mt_peak_untracked(s->peak, &e);

	out = print(s, 10, false);
	assert_non_null(strstr(
		out,
		" bytes=300 groups=1 allocs=2 sum=300 incomplete=live_table"
		" untracked_allocs=1 untracked_bytes=400"
		" advise_max_live=6\n"));
	/* the CPU account has no peak of its own: no title, no mark */
	assert_null(strstr(out, " untracked_bytes=50 "));
	out = print_now(s, T0 + 10 * MS, 10);
	assert_non_null(
		strstr(out, " incomplete=live_table advise_max_live=6\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alive_at_peak, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_higher_peak_resets, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_top_and_rest_add_up, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_site, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_accounts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampled_exact, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sampled_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_random_against_brute_force,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_table_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_live_table_full, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
