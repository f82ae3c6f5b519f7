/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The strings a traced process chooses (its thread names, command line,
 * executable and library paths, Python names, exception types) as they
 * are printed: one event stays one line, no byte reaches a terminal as a
 * control, and a key=value's value stays one value, as perf script and ps
 * print a comm. Records and exports keep them raw: they are escaped where
 * a line is written, so a record read back prints the same.
 *
 * Escaped: a byte below 0x20, DEL, a backslash, a C1 control (U+0080 to
 * U+009F, which terminals may obey) and every byte that is not part of a
 * valid UTF-8 sequence, each as \n, \t, \r, \\ or \xHH (a byte each);
 * valid UTF-8 stays as it is, readable. In a field, a blank and '=' too
 * (\x20, \x3d), so that a reader splitting on blanks and '=' finds the
 * fields the tool wrote. A string with none of these prints unchanged.
 */
#ifndef __ESCAPE_H
#define __ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

enum mt_esc_how {
	MT_ESC_TEXT, /* within a line's text: a frame, a message */
	MT_ESC_FIELD, /* a key=value's value, or a blank-separated token */
};

/*
 * s escaped into buf (len bytes, NUL-ended when len > 0), cut before an
 * escape or a character that does not fit. Returns the length of the
 * whole escape, as snprintf does: len > the return value means all of it.
 */
size_t mt_escape(char *buf, size_t len, const char *s, enum mt_esc_how how);

/*
 * Room for the escaped strings of one printed line, handed out in turn:
 * set used to 0 before a line's first mt_esc().
 */
#define MT_ESC_ROOM 8192
struct mt_esc {
	size_t used;
	char room[MT_ESC_ROOM];
};

/*
 * s escaped into e's room, valid until used is set to 0 again; cut short
 * when the room is full (a line of hostile names, never an ordinary one).
 */
const char *mt_esc(struct mt_esc *e, const char *s, enum mt_esc_how how);

/*
 * s (n bytes) is valid UTF-8, C1 controls included: what a format that
 * holds text as UTF-8 (a pickle's strings) can carry as it is
 */
bool mt_utf8_valid(const char *s, size_t n);

#endif /* __ESCAPE_H */
