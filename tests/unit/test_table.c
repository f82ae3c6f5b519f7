// SPDX-License-Identifier: GPL-2.0
/* user/lib/table.c: a column's least width and a table into a buffer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include "lib/table.h"

static const struct mt_table_col cols[] = {
	{ "PID", MT_TABLE_RIGHT, false, 0 },
	{ "NOW", MT_TABLE_RIGHT, false, 0 },
	{ "NAME", MT_TABLE_LEFT, true, 0 },
};

static char *format(const struct mt_table *t, size_t width)
{
	struct mt_table_style st = { .width = width };
	size_t len = 0;
	char *s = mt_table_format(t, &st, &len);

	assert_non_null(s);
	assert_int_equal(strlen(s), len);
	return s;
}

/* a column with a width keeps it for short cells, grows for long ones */
static void test_width(void **state)
{
	const char *r1[] = { "42", "1 B", "encoder.layers.0.self_attn" };
	const char *r2[] = { "123456789", "2 KiB", NULL };
	struct mt_table *t = mt_table_new(cols, 3);
	char *s;

	(void)state;
	assert_non_null(t);
	mt_table_set_width(t, 0, 7);
	/* no such column: nothing */
	mt_table_set_width(t, 3, 99);
	assert_int_equal(mt_table_add(t, MT_TONE_PLAIN, r1), 0);
	s = format(t, 200);
	assert_string_equal(s, "    PID  NOW  NAME\n"
			       "     42  1 B  encoder.layers.0.self_attn\n");
	free(s);
	assert_int_equal(mt_table_add(t, MT_TONE_DIM, r2), 0);
	/* 9 + 2 + 5 + 2 leave 20 for the name: "..." and its tail */
	s = format(t, 38);
	assert_string_equal(s, "      PID    NOW  NAME\n"
			       "       42    1 B  ...ayers.0.self_attn\n"
			       "123456789  2 KiB  \n");
	free(s);
	mt_table_free(t);
}

/* a cell the target named prints escaped, measured as it prints */
static void test_escaped_cells(void **state)
{
	const char *r1[] = { "1", "2 B", "m\n# OOM\x1b[2J" };
	const char *r2[] = { "3", "4 B", "caf\xc3\xa9" };
	struct mt_table *t = mt_table_new(cols, 3);
	char *s;

	(void)state;
	assert_non_null(t);
	assert_int_equal(mt_table_add(t, MT_TONE_PLAIN, r1), 0);
	assert_int_equal(mt_table_add(t, MT_TONE_PLAIN, r2), 0);
	s = format(t, 200);
	assert_string_equal(s, "PID  NOW  NAME\n"
			       "  1  2 B  m\\n# OOM\\x1b[2J\n"
			       "  3  4 B  caf\xc3\xa9\n");
	free(s);
	mt_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_width),
		cmocka_unit_test(test_escaped_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
