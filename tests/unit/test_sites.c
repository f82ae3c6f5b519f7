// SPDX-License-Identifier: GPL-2.0
/* user/analysis/sites.c: call sites, interned. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include "analysis/sites.h"

#define N 5000 /* several growths of the table */

static const char *const frames[][3] = {
	{ "f (a.py:1)", "g (a.py:2)", "<module> (a.py:3)" },
	{ "f (a.py:1)", "h (a.py:9)", "<module> (a.py:3)" },
};

/* the i-th of N different keys: pids, frames and their hash vary */
static struct mt_site key(unsigned int i, bool with_hash)
{
	struct mt_site k = {
		.pid = 100 + i / 2,
		.event = "c10:cpu_alloc",
		.caller = "libc10.so",
		.phase = "forward",
		.module = "encoder.0",
		.depth = 3,
		.frames = (const char **)frames[i % 2],
	};

	if (with_hash)
		k.frames_hash = mt_frames_hash(frames[i % 2], 3);
	return k;
}

static void test_intern_across_growth(void **state)
{
	struct mt_sites *s = mt_sites_new(N);
	static struct mt_site *got[N];
	bool is_new;

	assert_non_null(s);
	for (unsigned int i = 0; i < N; i++) {
		struct mt_site k = key(i, i % 3 == 0);

		got[i] = mt_sites_get(s, &k, &is_new);
		assert_true(is_new);
		assert_int_equal(got[i]->id, i + 1);
		assert_int_equal(got[i]->pid, k.pid);
		assert_ptr_equal(got[i]->frames[1], frames[i % 2][1]);
	}
	assert_int_equal(mt_sites_count(s), N);
	/* each key finds its site again, with its frames' hash or without */
	for (unsigned int i = 0; i < N; i++) {
		struct mt_site k = key(i, i % 2 == 0);

		assert_ptr_equal(mt_sites_get(s, &k, &is_new), got[i]);
		assert_false(is_new);
	}
	mt_sites_free(s);
}

static void test_overflow_when_full(void **state)
{
	struct mt_sites *s = mt_sites_new(700);
	struct mt_site *first, *over;
	struct mt_site k;
	bool is_new;

	assert_non_null(s);
	k = key(0, true);
	first = mt_sites_get(s, &k, &is_new);
	for (unsigned int i = 1; i < 700; i++) {
		k = key(i, false);
		mt_sites_get(s, &k, &is_new);
	}
	k = key(700, false);
	over = mt_sites_get(s, &k, &is_new);
	assert_false(is_new);
	assert_int_equal(over->id, 0);
	assert_string_equal(over->event, "[sites table full]");
	/* the sites made before are still found */
	k = key(0, false);
	assert_ptr_equal(mt_sites_get(s, &k, &is_new), first);
	assert_int_equal(mt_sites_count(s), 700);
	mt_sites_free(s);
}

/* what a site's lines print of the names its process gave, escaped */
static void test_print(void **state)
{
	const char *fr[] = { "f\n# OOM pid=1 (x.py\x1b[2J:1)", "g (b.py:2)" };
	const struct mt_site site = {
		.event = "c10:cpu_alloc",
		.module = "enc\n# leak",
		.phase = "forward",
		.node = "N x=1",
		.recompute = true,
		.truncated = true,
		.depth = 2,
		.frames = fr,
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	mt_site_print_keys(&site, f);
	fputc('\n', f);
	mt_site_print_keys(NULL, f);
	fputc('\n', f);
	mt_site_print_stack(&site, "#\t", f);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text,
			    " event=c10:cpu_alloc module=enc\\n#\\x20leak "
			    "phase=forward node=N\\x20x\\x3d1 recompute\n"
			    " event=- module=- phase=- node=-\n"
			    "#\tf\\n# OOM pid=1 (x.py\\x1b[2J:1)\n"
			    "#\tg (b.py:2)\n"
			    "#\t[truncated at 2 frames]\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern_across_growth),
		cmocka_unit_test(test_overflow_when_full),
		cmocka_unit_test(test_print),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
