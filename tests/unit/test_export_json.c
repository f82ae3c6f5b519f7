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
#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>
#include "export/export.h"
#include "harness.h"

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
	struct harness h; /* first: harness_teardown frees the whole */
	struct mt_site *site[NSITES];
	struct mt_site *free_site;
	char frames[NSITES][48];
	const char *stacks[NSITES][2];
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

	return harness_site(&m->h, &key);
}

static int setup(void **state)
{
	struct mt_session_conf c = { .max_live = 1 << 20,
				     .max_sites = 1024,
				     .top_live = 5,
				     .top_ops = 5 };
	struct sim *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	if (harness_init(&m->h, &c, stderr))
		return -1;
	for (int i = 0; i < NSITES; i++) {
		snprintf(m->frames[i], sizeof(m->frames[i]),
			 "f%d (model.py:%d)", i, 100 + i);
		m->stacks[i][0] = m->frames[i];
		m->stacks[i][1] = OUTER;
		m->site[i] = site_of(m, EV_ALLOC, m->stacks[i], 2);
	}
	m->free_site = site_of(m, EV_FREE, NULL, 0);
	if (harness_file(&m->h, "test_export"))
		return -1;
	*state = m;
	return 0;
}

static void feed(struct sim *m, bool alloc, __u64 ptr, __u64 size, int site)
{
	harness_cpu(&m->h, alloc ? m->site[site] : m->free_site, PID, alloc,
		    ptr, size, 0);
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
				    .path = m->h.path,
				    .at_peak = at_peak };

	assert_int_equal(mt_export_start(&m->h.s, &c), 0);
	run_ops(m, 7);
	assert_int_equal(mt_export_finish(&m->h.s), 0);
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
	speedscope_weights(m->h.path, w);
	for (int i = 0; i < NSITES; i++)
		assert_int_equal(w[i], m->alloc_bytes[i]);
}

static void test_speedscope_at_peak(void **state)
{
	struct sim *m = *state;
	__u64 w[NSITES] = { 0 }, sum = 0;

	export(m, "speedscope", true);
	speedscope_weights(m->h.path, w);
	for (int i = 0; i < NSITES; i++) {
		assert_int_equal(w[i], m->at_peak[i]);
		sum += w[i];
	}
	assert_int_equal(sum, m->peak);
}

/*
 * perfetto's counters, read with yajl's event parser: the export holds an
 * element per allocation and free, and yajl_tree grows an array by one
 * element a time, which under ASan (a realloc always moves) took minutes.
 * Nesting: 1 the document, 2 traceEvents, 3 an event, 4 its args.
 */
#define EVENT_DEPTH 3
#define MAX_DEPTH 8

struct counters {
	int depth;
	bool in_events, saw_events;
	char key[MAX_DEPTH][16]; /* the current key of the map at each depth */
	char ph[8], name[32];
	bool has_bytes;
	long long bytes;
	long long kinds; /* the sum of a kinds counter's args */
	/* what the test checks */
	size_t n, no_ph, bad_name, no_bytes;
	__u64 last, max;
	size_t kinds_n; /* "cpu by kind" counters, and the last one's sum */
	__u64 kinds_last;
};

static void copy(char *dst, size_t cap, const unsigned char *s, size_t len)
{
	/* a longer one is cut, and then compares unequal to what we want */
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
}

static bool key_is(const struct counters *c, int depth, const char *key)
{
	return depth < MAX_DEPTH && !strcmp(c->key[depth], key);
}

static int on_key(void *ctx, const unsigned char *s, size_t len)
{
	struct counters *c = ctx;

	if (c->depth < MAX_DEPTH)
		copy(c->key[c->depth], sizeof(c->key[0]), s, len);
	return 1;
}

static int on_start_map(void *ctx)
{
	struct counters *c = ctx;

	if (++c->depth < MAX_DEPTH)
		c->key[c->depth][0] = '\0';
	if (c->in_events && c->depth == EVENT_DEPTH) {
		c->ph[0] = c->name[0] = '\0';
		c->has_bytes = false;
		c->kinds = 0;
	}
	return 1;
}

static int on_end_map(void *ctx)
{
	struct counters *c = ctx;

	if (c->in_events && c->depth == EVENT_DEPTH) {
		if (!c->ph[0])
			c->no_ph++;
		if (!strcmp(c->ph, "C") && !strcmp(c->name, "cpu by kind")) {
			c->kinds_last = (__u64)c->kinds;
			c->kinds_n++;
		} else if (!strcmp(c->ph, "C")) {
			if (strcmp(c->name, "cpu allocated"))
				c->bad_name++;
			if (!c->has_bytes)
				c->no_bytes++;
			c->last = (__u64)c->bytes;
			c->max = c->last > c->max ? c->last : c->max;
			c->n++;
		}
	}
	c->depth--;
	return 1;
}

static int on_start_array(void *ctx)
{
	struct counters *c = ctx;

	if (++c->depth < MAX_DEPTH)
		c->key[c->depth][0] = '\0';
	if (c->depth == EVENT_DEPTH - 1 && key_is(c, 1, "traceEvents"))
		c->in_events = c->saw_events = true;
	return 1;
}

static int on_end_array(void *ctx)
{
	struct counters *c = ctx;

	if (c->depth-- == EVENT_DEPTH - 1)
		c->in_events = false;
	return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
	struct counters *c = ctx;

	if (c->in_events && c->depth == EVENT_DEPTH) {
		if (key_is(c, EVENT_DEPTH, "ph"))
			copy(c->ph, sizeof(c->ph), s, len);
		else if (key_is(c, EVENT_DEPTH, "name"))
			copy(c->name, sizeof(c->name), s, len);
	}
	return 1;
}

static int on_integer(void *ctx, long long v)
{
	struct counters *c = ctx;

	if (c->in_events && c->depth == EVENT_DEPTH + 1 &&
	    key_is(c, EVENT_DEPTH, "args") &&
	    key_is(c, EVENT_DEPTH + 1, "bytes")) {
		c->bytes = v;
		c->has_bytes = true;
	} else if (c->in_events && c->depth == EVENT_DEPTH + 1 &&
		   key_is(c, EVENT_DEPTH, "args")) {
		c->kinds += v;
	}
	return 1;
}

/* parse path whole (it must be valid JSON) and count its counter events */
static void perfetto_counters(const char *path, struct counters *c)
{
	static const yajl_callbacks cb = {
		.yajl_integer = on_integer,
		.yajl_string = on_string,
		.yajl_start_map = on_start_map,
		.yajl_map_key = on_key,
		.yajl_end_map = on_end_map,
		.yajl_start_array = on_start_array,
		.yajl_end_array = on_end_array,
	};
	yajl_handle h = yajl_alloc(&cb, NULL, c);
	FILE *f = fopen(path, "r");
	unsigned char buf[65536];
	yajl_status st = yajl_status_ok;
	size_t len;

	assert_non_null(h);
	assert_non_null(f);
	while (st == yajl_status_ok && (len = fread(buf, 1, sizeof(buf), f)))
		st = yajl_parse(h, buf, len);
	assert_false(ferror(f));
	fclose(f);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st != yajl_status_ok) {
		unsigned char *e = yajl_get_error(h, 0, NULL, 0);

		fprintf(stderr, "%s: %s\n", path, e ? (char *)e : "?");
		yajl_free_error(h, e);
	}
	yajl_free(h);
	assert_int_equal(st, yajl_status_ok);
}

static void test_perfetto_counters(void **state)
{
	struct sim *m = *state;
	struct counters c = { 0 };

	export(m, "perfetto", false);
	perfetto_counters(m->h.path, &c);
	assert_true(c.saw_events);
	assert_int_equal(c.no_ph, 0);
	assert_int_equal(c.bad_name, 0);
	assert_int_equal(c.no_bytes, 0);
	/* a counter value at each change: every event here is one */
	assert_int_equal(c.n, NOPS);
	assert_int_equal(c.last, m->cur);
	assert_int_equal(c.max, m->peak);
	/* the CPU tensors by kind, at each change, adding up to them */
	assert_true(c.kinds_n > 0);
	assert_int_equal(c.kinds_last, m->cur);
}

static void test_json_lines(void **state)
{
	struct sim *m = *state;
	char line[512];
	size_t n = 0;
	FILE *f;

	export(m, "json", false);
	f = fopen(m->h.path, "r");
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

/* a free of memory allocated before the attach: size null, not "?" */
static void test_json_unknown_size(void **state)
{
	struct sim *m = *state;
	struct mt_export_conf c = { .kind = "json", .path = m->h.path };
	char err[256], line[512];
	yajl_val v, size;
	FILE *f;

	assert_int_equal(mt_export_start(&m->h.s, &c), 0);
	feed(m, false, 0xbef0e, 0, 0);
	assert_int_equal(mt_export_finish(&m->h.s), 0);
	f = fopen(m->h.path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_non_null(strstr(line, "\"size\":null,"));
	v = yajl_tree_parse(line, err, sizeof(err));
	assert_non_null(v);
	size = get(v, "size");
	assert_non_null(size);
	assert_true(YAJL_IS_NULL(size));
	yajl_tree_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_speedscope_allocated,
						setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_speedscope_at_peak, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_perfetto_counters, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_json_lines, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_json_unknown_size, setup,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
