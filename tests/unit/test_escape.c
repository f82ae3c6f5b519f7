// SPDX-License-Identifier: GPL-2.0
/* user/lib/escape.c: what a target's names look like once printed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/escape.h"

static const char *esc(const char *s, enum mt_esc_how how)
{
	static char buf[1024];
	size_t n = mt_escape(buf, sizeof(buf), s, how);

	assert_int_equal(n, strlen(buf));
	return buf;
}

static void test_ordinary_unchanged(void **state)
{
	const char *const same[] = {
		"encoder.layers.3.self_attn",
		"libc10_cuda.so",
		"/usr/lib/x86_64-linux-gnu/libcudart.so.13",
		"pt_autograd_0",
		"",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		assert_string_equal(esc(same[i], MT_ESC_TEXT), same[i]);
		assert_string_equal(esc(same[i], MT_ESC_FIELD), same[i]);
	}
	assert_string_equal(
		esc("Linear.forward (torch/nn/modules/linear.py:114)",
		    MT_ESC_TEXT),
		"Linear.forward (torch/nn/modules/linear.py:114)");
	/* a blank and '=' are text, not a field's */
	assert_string_equal(esc("a b=c", MT_ESC_TEXT), "a b=c");
	assert_string_equal(esc("a b=c", MT_ESC_FIELD), "a\\x20b\\x3dc");
}

static void test_controls(void **state)
{
	(void)state;
	assert_string_equal(esc("a\nb\tc\rd\\e", MT_ESC_TEXT),
			    "a\\nb\\tc\\rd\\\\e");
	assert_string_equal(esc("\x1b[2J\x1b]0;x\x07", MT_ESC_TEXT),
			    "\\x1b[2J\\x1b]0;x\\x07");
	assert_string_equal(esc("\x7f\x01\x1f", MT_ESC_TEXT),
			    "\\x7f\\x01\\x1f");
	/* a forged line stays in its field */
	assert_string_equal(esc("x.py\n# OOM pid=1", MT_ESC_FIELD),
			    "x.py\\n#\\x20OOM\\x20pid\\x3d1");
}

static void test_utf8(void **state)
{
	(void)state;
	/* valid UTF-8 stays readable: 2, 3 and 4 bytes, the edges */
	assert_string_equal(
		esc("caf\xc3\xa9 \xe6\xa8\xa1 \xf0\x9f\x98\x80", MT_ESC_TEXT),
		"caf\xc3\xa9 \xe6\xa8\xa1 \xf0\x9f\x98\x80");
	assert_string_equal(esc("\xc2\xa0\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"
				"\xf4\x8f\xbf\xbf",
				MT_ESC_FIELD),
			    "\xc2\xa0\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"
			    "\xf4\x8f\xbf\xbf");
	/* C1 controls: CSI (U+009B) would start a terminal sequence */
	assert_string_equal(esc("\xc2\x9b"
				"2J\xc2\x80",
				MT_ESC_TEXT),
			    "\\xc2\\x9b2J\\xc2\\x80");
	/* not UTF-8: a byte alone, cut short, overlong, surrogate, too big */
	assert_string_equal(esc("\xff\x9b", MT_ESC_TEXT), "\\xff\\x9b");
	assert_string_equal(esc("a\xc3", MT_ESC_TEXT), "a\\xc3");
	assert_string_equal(esc("\xe6\xa8x", MT_ESC_TEXT), "\\xe6\\xa8x");
	assert_string_equal(esc("\xc0\xaf", MT_ESC_TEXT), "\\xc0\\xaf");
	assert_string_equal(esc("\xe0\x9f\xbf", MT_ESC_TEXT),
			    "\\xe0\\x9f\\xbf");
	assert_string_equal(esc("\xed\xa0\x80", MT_ESC_TEXT),
			    "\\xed\\xa0\\x80");
	assert_string_equal(esc("\xf4\x90\x80\x80", MT_ESC_TEXT),
			    "\\xf4\\x90\\x80\\x80");
}

/* whether a string can go as it is where UTF-8 is required */
static void test_utf8_valid(void **state)
{
	(void)state;
	assert_true(mt_utf8_valid("", 0));
	assert_true(mt_utf8_valid("a\x1b\n", 3));
	assert_true(mt_utf8_valid("\xc3\xa9\xf0\x9f\x98\x80", 6));
	/* a C1 control is UTF-8, if no text to print */
	assert_true(mt_utf8_valid("\xc2\x9b", 2));
	assert_false(mt_utf8_valid("a\xff", 2));
	assert_false(mt_utf8_valid("\xc0\xaf", 2));
	assert_false(mt_utf8_valid("\xed\xa0\x80", 3));
	/* cut short by its length, whatever follows */
	assert_false(mt_utf8_valid("\xc3\xa9", 1));
	assert_true(mt_utf8_valid("\xc3\xa9", 2));
	/* a NUL within the length is a byte like another */
	assert_true(mt_utf8_valid("a\0b", 3));
}

static void test_cut(void **state)
{
	char buf[8];

	(void)state;
	/* the whole length, as snprintf; nothing written with no room */
	assert_int_equal(mt_escape(NULL, 0, "a\x1b", MT_ESC_TEXT), 5);
	/* ASCII is cut anywhere */
	assert_int_equal(mt_escape(buf, 3, "abcdef", MT_ESC_TEXT), 6);
	assert_string_equal(buf, "ab");
	/* an escape or a character whole or not at all */
	assert_int_equal(mt_escape(buf, 5, "ab\x1b", MT_ESC_TEXT), 6);
	assert_string_equal(buf, "ab");
	assert_int_equal(mt_escape(buf, 3, "a\xc3\xa9", MT_ESC_TEXT), 3);
	assert_string_equal(buf, "a");
	assert_int_equal(mt_escape(buf, 1, "abc", MT_ESC_TEXT), 3);
	assert_string_equal(buf, "");
	/* what fits after a cut is not written either */
	assert_int_equal(mt_escape(buf, 4,
				   "a\x1b"
				   "b",
				   MT_ESC_TEXT),
			 6);
	assert_string_equal(buf, "a");
}

static void test_room(void **state)
{
	struct mt_esc *e = calloc(1, sizeof(*e));
	char *big = malloc(MT_ESC_ROOM);
	const char *a, *b, *c;

	(void)state;
	assert_non_null(e);
	assert_non_null(big);
	a = mt_esc(e, "x y", MT_ESC_FIELD);
	b = mt_esc(e, "\n", MT_ESC_TEXT);
	assert_string_equal(a, "x\\x20y");
	assert_string_equal(b, "\\n");
	/* a full room cuts the string that overflows it, then gives "" */
	memset(big, 'z', MT_ESC_ROOM - 1);
	big[MT_ESC_ROOM - 1] = '\0';
	c = mt_esc(e, big, MT_ESC_TEXT);
	assert_int_equal(strlen(c), MT_ESC_ROOM - 1 - (size_t)(c - a));
	assert_string_equal(mt_esc(e, "more", MT_ESC_TEXT), "");
	assert_string_equal(a, "x\\x20y");
	e->used = 0;
	assert_string_equal(mt_esc(e, "again", MT_ESC_TEXT), "again");
	free(big);
	free(e);
}

/* the inverse, to show that nothing is lost: -1 on a malformed escape */
static int unescape(const char *s, char *out)
{
	for (; *s; s++) {
		unsigned int x;

		if (*s != '\\') {
			*out++ = *s;
			continue;
		}
		s++;
		if (*s == 'n' || *s == 't' || *s == 'r' || *s == '\\') {
			*out++ = *s == 'n' ? '\n' :
				 *s == 't' ? '\t' :
				 *s == 'r' ? '\r' :
					     '\\';
			continue;
		}
		if (*s != 'x' || sscanf(s + 1, "%2x", &x) != 1)
			return -1;
		*out++ = (char)x;
		s += 2;
	}
	*out = '\0';
	return 0;
}

/* every string of up to two bytes, and random ones */
static void check_any(const unsigned char *s, size_t n)
{
	char in[16], out[128], back[16];

	memcpy(in, s, n);
	in[n] = '\0';
	for (int how = MT_ESC_TEXT; how <= MT_ESC_FIELD; how++) {
		mt_escape(out, sizeof(out), in, (enum mt_esc_how)how);
		for (const unsigned char *p = (unsigned char *)out; *p; p++) {
			/* no control, and no field's separator */
			assert_true(*p >= 0x20 && *p != 0x7F);
			if (how == MT_ESC_FIELD)
				assert_true(*p != ' ' && *p != '=');
			if (*p == 0xC2)
				assert_true(p[1] >= 0xA0);
		}
		assert_int_equal(unescape(out, back), 0);
		assert_string_equal(back, in);
	}
}

static void test_any_bytes(void **state)
{
	unsigned char s[8];

	(void)state;
	for (unsigned int a = 1; a < 256; a++) {
		s[0] = (unsigned char)a;
		check_any(s, 1);
		for (unsigned int b = 1; b < 256; b++) {
			s[1] = (unsigned char)b;
			check_any(s, 2);
		}
	}
	srand(7);
	for (int i = 0; i < 200000; i++) {
		size_t n = 1 + (size_t)rand() % sizeof(s);

		for (size_t j = 0; j < n; j++)
			s[j] = (unsigned char)(1 + rand() % 255);
		check_any(s, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordinary_unchanged),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_any_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
