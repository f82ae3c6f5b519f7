// SPDX-License-Identifier: GPL-2.0
/* The JSON writer of the exporters (jsonw.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "export/jsonw.h"

static void check(struct mt_jw *w, yajl_gen_status st)
{
	if (!w->st)
		w->st = st;
}

int mt_jw_open(struct mt_jw *w, FILE *f, const char *what, char *err,
	       size_t errlen)
{
	w->f = f;
	w->what = what;
	w->g = yajl_gen_alloc(NULL);
	if (!w->g || !yajl_gen_config(w->g, yajl_gen_validate_utf8, 1)) {
		if (w->g)
			yajl_gen_free(w->g);
		snprintf(err, errlen, "%s: out of memory", what);
		return -ENOMEM;
	}
	return 0;
}

void mt_jw_free(struct mt_jw *w)
{
	yajl_gen_free(w->g);
}

void mt_jw_strn(struct mt_jw *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char c[1024];
	yajl_gen_status st;

	if (w->st)
		return;
	st = yajl_gen_string(w->g, u, n);
	if (st == yajl_gen_invalid_string) {
		/* not UTF-8 (a file name, a comm): bytes above 0x7f as '?' */
		n = n < sizeof(c) ? n : sizeof(c);
		for (size_t i = 0; i < n; i++)
			c[i] = u[i] < 0x80 ? u[i] : '?';
		st = yajl_gen_string(w->g, c, n);
	}
	check(w, st);
}

void mt_jw_str(struct mt_jw *w, const char *s)
{
	mt_jw_strn(w, s, strlen(s));
}

void mt_jw_int(struct mt_jw *w, long long v)
{
	if (!w->st)
		check(w, yajl_gen_integer(w->g, v));
}

void mt_jw_bool(struct mt_jw *w, bool v)
{
	if (!w->st)
		check(w, yajl_gen_bool(w->g, v));
}

void mt_jw_null(struct mt_jw *w)
{
	if (!w->st)
		check(w, yajl_gen_null(w->g));
}

void mt_jw_number(struct mt_jw *w, const char *num, size_t n)
{
	if (!w->st)
		check(w, yajl_gen_number(w->g, num, n));
}

size_t mt_jw_digits(char *end, __u64 v, unsigned int base)
{
	char *p = end;

	/* several per event: printf's parsing would cost more than the rest */
	do {
		*--p = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	return (size_t)(end - p);
}

void mt_jw_u64(struct mt_jw *w, __u64 v)
{
	char b[24];
	size_t n = mt_jw_digits(b + sizeof(b), v, 10);

	mt_jw_number(w, b + sizeof(b) - n, n);
}

void mt_jw_hex(struct mt_jw *w, __u64 v)
{
	char b[24];
	size_t n = mt_jw_digits(b + sizeof(b), v, 16);

	b[sizeof(b) - n - 2] = '0';
	b[sizeof(b) - n - 1] = 'x';
	mt_jw_strn(w, b + sizeof(b) - n - 2, n + 2);
}

void mt_jw_open_close(struct mt_jw *w, char c)
{
	if (w->st)
		return;
	switch (c) {
	case '{':
		check(w, yajl_gen_map_open(w->g));
		break;
	case '}':
		check(w, yajl_gen_map_close(w->g));
		break;
	case '[':
		check(w, yajl_gen_array_open(w->g));
		break;
	default:
		check(w, yajl_gen_array_close(w->g));
		break;
	}
}

void mt_jw_key_str(struct mt_jw *w, const char *key, const char *value)
{
	mt_jw_str(w, key);
	mt_jw_str(w, value);
}

void mt_jw_key_u64(struct mt_jw *w, const char *key, __u64 value)
{
	mt_jw_str(w, key);
	mt_jw_u64(w, value);
}

void mt_jw_flush(struct mt_jw *w)
{
	const unsigned char *buf;
	size_t len;

	if (w->st || w->io)
		return;
	check(w, yajl_gen_get_buf(w->g, &buf, &len));
	if (w->st)
		return;
	errno = 0;
	if (len && fwrite(buf, 1, len, w->f) != len)
		w->io = errno ? -errno : -EIO;
	yajl_gen_clear(w->g);
}

int mt_jw_error(const struct mt_jw *w, char *err, size_t errlen)
{
	if (w->io) {
		snprintf(err, errlen, "%s: write: %s", w->what,
			 strerror(-w->io));
		return w->io;
	}
	if (w->st) {
		snprintf(err, errlen, "%s: JSON generator status %d", w->what,
			 (int)w->st);
		return w->st == yajl_gen_no_buf ? -ENOMEM : -EINVAL;
	}
	return 0;
}
