// SPDX-License-Identifier: GPL-2.0
/*
 * The JSON exports fed by a session: speedscope's weights against a brute
 * force (bytes allocated per site; bytes per site alive at the peak, which
 * the session's peak view hands over at close, over many allocations and
 * frees and peaks), perfetto's counters against the summary, one JSON line
 * per event.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "export/export.h"
#include "analysis/session.h"

#define NSITES 40
#define NOPS 200000
#define MAXLIVE 5000
#define PID 4242

static const char EV_ALLOC[] = "c10:cpu_alloc";
static const char EV_FREE[] = "c10:cpu_free";
static const char CALLER[] = "libc10.so";
static const char PHASE[] = "forward";
static const char OUTER[] = "main (train.py:9)";

struct sim {
	struct mt_session s;
	struct mt_site *site[NSITES];
	struct mt_site *free_site;
	char frames[NSITES][48];
	const char *stacks[NSITES][2];
	char path[64];
	__u64 ts;
	/* the brute force */
	__u64 ptr[MAXLIVE], size[MAXLIVE];
	int owner[MAXLIVE];
	size_t nlive;
	__u64 alloc_bytes[NSITES], live[NSITES], at_peak[NSITES];
	__u64 cur, peak;
};

static struct mt_site *site_of(struct sim *m, const char *event,
			       const char **frames, int depth)
{
	struct mt_site key = { .pid = PID,
			       .event = event,
			       .caller = CALLER,
			       .phase = PHASE,
			       .depth = depth,
			       .frames = frames };
	bool is_new;

	return mt_sites_get(m->s.sites, &key, &is_new);
}

static int setup(void **state)
{
	struct mt_session_conf c = { .max_live = 1 << 20,
				     .max_sites = 1024,
				     .top_live = 5,
				     .top_ops = 5 };
	struct sim *m = calloc(1, sizeof(*m));
	int fd;

	if (!m)
		return -1;
	if (mt_session_init(&m->s, &c, stderr))
		return -1;
	for (int i = 0; i < NSITES; i++) {
		snprintf(m->frames[i], sizeof(m->frames[i]),
			 "f%d (model.py:%d)", i, 100 + i);
		m->stacks[i][0] = m->frames[i];
		m->stacks[i][1] = OUTER;
		m->site[i] = site_of(m, EV_ALLOC, m->stacks[i], 2);
	}
	m->free_site = site_of(m, EV_FREE, NULL, 0);
	snprintf(m->path, sizeof(m->path), "/tmp/test_export_XXXXXX");
	fd = mkstemp(m->path);
	if (fd < 0)
		return -1;
	close(fd);
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	struct sim *m = *state;

	mt_session_free(&m->s);
	unlink(m->path);
	free(m);
	return 0;
}

static void feed(struct sim *m, bool alloc, __u64 ptr, __u64 size, int site)
{
	struct mt_event ev = { .ts = (m->ts += 1000),
			       .pid = PID,
			       .tid = PID,
			       .cpu = 1,
			       .comm = "python3" };
	struct mt_call r = {
		.ev = &ev,
		.ki = mt_kind(alloc ? MT_K_CPU_NEW : MT_K_CPU_DELETE),
		.event = alloc ? EV_ALLOC : EV_FREE,
		.role = alloc ? MT_ROLE_ALLOC : MT_ROLE_FREE,
		.has_ptr = true,
		.ptr = ptr,
		.size_state = alloc ? MT_SIZE_KNOWN : MT_SIZE_UNKNOWN,
		.size = size,
		.dev_type = MT_DT_CPU,
		.dev_index = -1,
	};

	assert_true(mt_session_event(&m->s, &r,
				     alloc ? m->site[site] : m->free_site));
}

/* random allocations and frees, kept by the brute force too */
static void run_ops(struct sim *m, unsigned int seed)
{
	__u64 next_ptr = 0x10000;

	srand(seed);
	for (int op = 0; op < NOPS; op++) {
		bool alloc = m->nlive < 16 ||
			     (m->nlive < MAXLIVE && rand() % 100 < 52);

		if (alloc) {
			int site = rand() % NSITES;
			__u64 size = 1 + (__u64)(rand() % 4096) * (site + 1);

			m->ptr[m->nlive] = next_ptr += 64;
			m->size[m->nlive] = size;
			m->owner[m->nlive++] = site;
			feed(m, true, next_ptr, size, site);
			m->alloc_bytes[site] += size;
			m->live[site] += size;
			m->cur += size;
			if (m->cur > m->peak) {
				m->peak = m->cur;
				memcpy(m->at_peak, m->live, sizeof(m->live));
			}
		} else {
			size_t i = (size_t)rand() % m->nlive;

			feed(m, false, m->ptr[i], 0, 0);
			m->live[m->owner[i]] -= m->size[i];
			m->cur -= m->size[i];
			m->nlive--;
			m->ptr[i] = m->ptr[m->nlive];
			m->size[i] = m->size[m->nlive];
			m->owner[i] = m->owner[m->nlive];
		}
	}
}

static yajl_val load(const char *path)
{
	FILE *f = fopen(path, "r");
	char err[256], *text;
	yajl_val v;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	text = malloc((size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	text[len] = '\0';
	v = yajl_tree_parse(text, err, sizeof(err));
	free(text);
	return v;
}

static yajl_val get(yajl_val v, const char *key)
{
	const char *p[] = { key, NULL };

	return yajl_tree_get(v, p, yajl_t_any);
}

static const char *str(yajl_val v)
{
	const char *s = YAJL_GET_STRING(v);

	assert_non_null(s);
	return s ? s : "";
}

static void export(struct sim *m, const char *kind, bool at_peak)
{
	struct mt_export_conf c = { .kind = kind,
				    .path = m->path,
				    .at_peak = at_peak };
	char err[256];

	assert_int_equal(mt_export_start(&m->s, &c, err, sizeof(err)), 0);
	run_ops(m, 7);
	assert_int_equal(mt_export_finish(&m->s, err, sizeof(err)), 0);
}

/* per site (its innermost Python frame "f<i>"), the speedscope weights */
static void speedscope_weights(const char *path, __u64 *w)
{
	yajl_val d = load(path), frames, profiles, p, samples, weights;

	assert_non_null(d);
	frames = get(get(d, "shared"), "frames");
	profiles = get(d, "profiles");
	assert_true(YAJL_IS_ARRAY(profiles));
	assert_int_equal(YAJL_GET_ARRAY(profiles)->len, 1);
	p = YAJL_GET_ARRAY(profiles)->values[0];
	samples = get(p, "samples");
	weights = get(p, "weights");
	assert_int_equal(YAJL_GET_ARRAY(samples)->len,
			 YAJL_GET_ARRAY(weights)->len);
	for (size_t i = 0; i < YAJL_GET_ARRAY(samples)->len; i++) {
		yajl_val s = YAJL_GET_ARRAY(samples)->values[i];
		size_t depth = YAJL_GET_ARRAY(s)->len;
		/* outermost first: main, f<i>, then the call */
		yajl_val inner = YAJL_GET_ARRAY(s)->values[depth - 2];
		yajl_val f =
			YAJL_GET_ARRAY(frames)->values[YAJL_GET_INTEGER(inner)];
		const char *name = str(get(f, "name"));
		int site;

		assert_int_equal(depth, 3);
		assert_int_equal(sscanf(name, "f%d", &site), 1);
		assert_int_equal(YAJL_GET_INTEGER(get(f, "line")), 100 + site);
		w[site] += (__u64)YAJL_GET_INTEGER(
			YAJL_GET_ARRAY(weights)->values[i]);
	}
	yajl_tree_free(d);
}

static void test_speedscope_allocated(void **state)
{
	struct sim *m = *state;
	__u64 w[NSITES] = { 0 };

	export(m, "speedscope", false);
	speedscope_weights(m->path, w);
	for (int i = 0; i < NSITES; i++)
		assert_int_equal(w[i], m->alloc_bytes[i]);
}

static void test_speedscope_at_peak(void **state)
{
	struct sim *m = *state;
	__u64 w[NSITES] = { 0 }, sum = 0;

	export(m, "speedscope", true);
	speedscope_weights(m->path, w);
	for (int i = 0; i < NSITES; i++) {
		assert_int_equal(w[i], m->at_peak[i]);
		sum += w[i];
	}
	assert_int_equal(sum, m->peak);
}

static void test_perfetto_counters(void **state)
{
	struct sim *m = *state;
	yajl_val d, ev;
	__u64 last = 0, max = 0;
	size_t n = 0;

	export(m, "perfetto", false);
	d = load(m->path);
	assert_non_null(d);
	ev = get(d, "traceEvents");
	for (size_t i = 0; i < YAJL_GET_ARRAY(ev)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(ev)->values[i];

		if (strcmp(str(get(e, "ph")), "C"))
			continue;
		assert_string_equal(str(get(e, "name")), "cpu allocated");
		last = (__u64)YAJL_GET_INTEGER(get(get(e, "args"), "bytes"));
		max = last > max ? last : max;
		n++;
	}
	yajl_tree_free(d);
	/* a counter value at each change: every event here is one */
	assert_int_equal(n, NOPS);
	assert_int_equal(last, m->cur);
	assert_int_equal(max, m->peak);
}

static void test_json_lines(void **state)
{
	struct sim *m = *state;
	char line[512];
	size_t n = 0;
	FILE *f;

	export(m, "json", false);
	f = fopen(m->path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char err[128];
		yajl_val v = yajl_tree_parse(line, err, sizeof(err));

		assert_non_null(v);
		assert_true(YAJL_IS_ARRAY(get(v, "stack")));
		assert_int_equal(YAJL_GET_INTEGER(get(v, "pid")), PID);
		yajl_tree_free(v);
		n++;
	}
	fclose(f);
	assert_int_equal(n, NOPS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_speedscope_allocated,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_speedscope_at_peak, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_perfetto_counters, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_lines, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
