// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "lib/escape.h"

/*
 * The length of the UTF-8 character at s (left > 0 bytes there), 0 where
 * s starts none: an ASCII byte, a byte that starts no valid sequence
 * (overlong forms, surrogates, past U+10FFFF) or a sequence cut short.
 */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n;

	if (s[0] < 0xC2 || s[0] > 0xF4)
		return 0;
	n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
	if (n > left)
		return 0;
	if (s[0] == 0xE0)
		lo = 0xA0; /* overlong */
	else if (s[0] == 0xED)
		hi = 0x9F; /* surrogates */
	else if (s[0] == 0xF0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xF4)
		hi = 0x8F; /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/* the printable UTF-8 character at s: not U+0080..U+009F, C1 controls */
static size_t printable_len(const unsigned char *s, size_t left)
{
	size_t n = utf8_len(s, left);

	return n == 2 && s[0] == 0xC2 && s[1] < 0xA0 ? 0 : n;
}

bool mt_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, k; i < n; i += k) {
		k = p[i] < 0x80 ? 1 : utf8_len(p + i, n - i);
		if (!k)
			return false;
	}
	return true;
}

/* how many bytes from s stand for themselves, as one copy: ASCII */
static size_t plain_run(const unsigned char *s, enum mt_esc_how how)
{
	const unsigned char *p = s;

	while (*p >= 0x20 && *p < 0x7F && *p != '\\' &&
	       (how == MT_ESC_TEXT || (*p != ' ' && *p != '=')))
		p++;
	return (size_t)(p - s);
}

/* the escape of a byte that cannot stand for itself, in esc (5 bytes) */
static const char *escape_of(unsigned char c, char esc[5])
{
	switch (c) {
	case '\n':
		return "\\n";
	case '\t':
		return "\\t";
	case '\r':
		return "\\r";
	case '\\':
		return "\\\\";
	default:
		snprintf(esc, 5, "\\x%02x", c);
		return esc;
	}
}

size_t mt_escape(char *buf, size_t len, const char *s, enum mt_esc_how how)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 0, pos = 0, left = strlen(s);
	bool full = !len;

	while (*p) {
		size_t run = plain_run(p, how),
		       step = run ? run : printable_len(p, left);
		const char *piece = (const char *)p;
		size_t n = step;
		char esc[5];

		if (!step) {
			piece = escape_of(*p, esc);
			step = 1;
			n = strlen(piece);
		}
		if (!full && pos + n < len) {
			memcpy(buf + pos, piece, n);
			pos += n;
		} else if (!full) {
			/* full: ASCII is cut anywhere, the rest whole or left out */
			if (run) {
				memcpy(buf + pos, piece, len - 1 - pos);
				pos = len - 1;
			}
			full = true;
		}
		total += n;
		p += step;
		left -= step;
	}
	if (len)
		buf[pos] = '\0';
	return total;
}

const char *mt_esc(struct mt_esc *e, const char *s, enum mt_esc_how how)
{
	char *out = e->room + e->used;
	size_t left = sizeof(e->room) - e->used, n;

	if (!left)
		return "";
	n = mt_escape(out, left, s, how);
	/* what it wrote, and its NUL */
	e->used += (n < left ? n : strlen(out)) + 1;
	return out;
}
