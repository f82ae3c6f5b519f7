// SPDX-License-Identifier: GPL-2.0
/* user/export/pickle.c: protocol 2 bytes, exactly, and what Python loads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/pickle.h"

struct buf {
	FILE *f;
	char *data;
	size_t len;
};

static void buf_open(struct buf *b, struct mt_pickle *p)
{
	b->f = open_memstream(&b->data, &b->len);
	assert_non_null(b->f);
	mt_pk_start(p, b->f);
}

/* finish, and compare with want (n bytes) */
static void buf_check(struct buf *b, struct mt_pickle *p, const char *want,
		      size_t n)
{
	assert_int_equal(mt_pk_finish(p), 0);
	assert_int_equal(fclose(b->f), 0);
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, want, n);
	free(b->data);
}

/* {'a': [1, -2, 300, 70000, 2**40, 2**64 - 1], 'b': True, 'c': None} */
static void test_bytes(void **state)
{
	static const char want[] =
		"\x80\x02}(X\x01\x00\x00\x00"
		"a](K\x01J\xfe\xff\xff\xffM\x2c\x01J\x70\x11\x01\x00"
		"\x8a\x06\x00\x00\x00\x00\x00\x01"
		"\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"
		"eX\x01\x00\x00\x00"
		"b\x88X\x01\x00\x00\x00"
		"cNu.";
	struct mt_pickle p;
	struct buf b;

	buf_open(&b, &p);
	mt_pk_dict(&p);
	mt_pk_str(&p, "a");
	mt_pk_list(&p);
	mt_pk_int(&p, 1);
	mt_pk_int(&p, -2);
	mt_pk_int(&p, 300);
	mt_pk_int(&p, 70000);
	mt_pk_uint(&p, 1ULL << 40);
	mt_pk_uint(&p, UINT64_MAX);
	mt_pk_end(&p);
	mt_pk_str(&p, "b");
	mt_pk_bool(&p, true);
	mt_pk_str(&p, "c");
	mt_pk_none(&p);
	mt_pk_end(&p);
	buf_check(&b, &p, want, sizeof(want) - 1);
}

/* a memoized list referenced again: [[], <the same>], and big ints */
static void test_memo_and_long1(void **state)
{
	static const char want[] = "\x80\x02](](eq\x00h\x00"
				   "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"
				   "\x8a\x05\x00\x00\x00\x80\x00"
				   "\x8a\x05\xff\xff\xff\x7f\xff"
				   "e.";
	struct mt_pickle p;
	struct buf b;
	__u32 i;

	buf_open(&b, &p);
	mt_pk_list(&p);
	mt_pk_list(&p);
	mt_pk_end(&p);
	i = mt_pk_put(&p);
	assert_int_equal(i, 0);
	mt_pk_get(&p, i);
	mt_pk_int(&p, INT64_MIN);
	mt_pk_int(&p, 0x80000000LL);
	mt_pk_int(&p, -0x80000001LL);
	mt_pk_end(&p);
	buf_check(&b, &p, want, sizeof(want) - 1);
}

/* lists and dicts are cut in batches of 1000 items, as Python does */
static void test_batches(void **state)
{
	struct mt_pickle p;
	struct buf b;
	size_t marks = 0;

	buf_open(&b, &p);
	mt_pk_list(&p);
	for (int i = 0; i < 2500; i++)
		mt_pk_bool(&p, false);
	mt_pk_end(&p);
	assert_int_equal(mt_pk_finish(&p), 0);
	assert_int_equal(fclose(b.f), 0);
	/* proto, ], 3 batches: ( 1000 or 500 x \x89 e, STOP */
	assert_int_equal(b.len, 2 + 1 + 3 * 2 + 2500 + 1);
	for (size_t i = 0; i < b.len; i++)
		marks += b.data[i] == '(';
	assert_int_equal(marks, 3);
	assert_memory_equal(b.data + 3 + 1000 + 1, "e(", 2);
	free(b.data);
}

static void test_misuse(void **state)
{
	struct mt_pickle p, q;
	struct buf b, c;

	/* a key without its value */
	buf_open(&b, &p);
	mt_pk_dict(&p);
	mt_pk_str(&p, "k");
	mt_pk_end(&p);
	assert_int_equal(mt_pk_finish(&p), -EINVAL);
	assert_int_equal(fclose(b.f), 0);
	free(b.data);
	/* a list left open */
	buf_open(&c, &q);
	mt_pk_list(&q);
	assert_int_equal(mt_pk_finish(&q), -EINVAL);
	assert_int_equal(fclose(c.f), 0);
	free(c.data);
}

/* a str that is not UTF-8 (a library's file name): '?' for its bytes */
static void test_not_utf8(void **state)
{
	static const char want[] = "\x80\x02](X\x04\x00\x00\x00"
				   "a?\nb"
				   "X\x03\x00\x00\x00"
				   "\x1b\xc3\xa9"
				   "e.";
	struct mt_pickle p;
	struct buf b;

	(void)state;
	buf_open(&b, &p);
	mt_pk_list(&p);
	mt_pk_str(&p, "a\xff\nb");
	/* UTF-8, a control in it: as it is */
	mt_pk_str(&p, "\x1b\xc3\xa9");
	mt_pk_end(&p);
	buf_check(&b, &p, want, sizeof(want) - 1);
}

/* Python's own pickle reads what we write */
static void test_python_loads(void **state)
{
	struct mt_pickle p;
	FILE *f = popen("python3 -c 'import pickle,sys; "
			"print(pickle.load(sys.stdin.buffer))' > /dev/null"
			" && echo ok",
			"w");
	FILE *out;
	char *text = NULL;
	size_t tlen = 0;

	assert_non_null(f);
	out = open_memstream(&text, &tlen);
	assert_non_null(out);
	mt_pk_start(&p, out);
	mt_pk_dict(&p);
	mt_pk_str(&p, "segments");
	mt_pk_list(&p);
	for (int i = 0; i < 3000; i++) {
		mt_pk_dict(&p);
		mt_pk_str(&p, "addr");
		mt_pk_uint(&p, 0x7f0000000000ULL + (__u64)i);
		mt_pk_str(&p, "name");
		mt_pk_str(&p, "f\xc3\xa9");
		mt_pk_str(&p, "lib");
		mt_pk_str(&p, "lib\xff.so");
		mt_pk_end(&p);
	}
	mt_pk_end(&p);
	mt_pk_end(&p);
	assert_int_equal(mt_pk_finish(&p), 0);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(fwrite(text, 1, tlen, f), tlen);
	assert_int_equal(pclose(f), 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_memo_and_long1),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_not_utf8),
		cmocka_unit_test(test_python_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
