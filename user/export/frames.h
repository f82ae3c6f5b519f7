/* SPDX-License-Identifier: GPL-2.0 */
/* A site's Python stack lines (pystack.c), read back into their parts. */
#ifndef __FRAMES_H
#define __FRAMES_H

#include <stddef.h>
#include <linux/types.h>

/* the parts of a stack line: pointers into it, not NUL-terminated */
struct mt_frame_parts {
	const char *name, *file;
	size_t name_len, file_len;
	__u64 line;
};

/*
 * Split s, "qualname (file:line)", at its last " (". 1: name, file and
 * line; 0: no line, file is what the parentheses hold ("[unknown] (code
 * 0x...)", a line of -1) and line 0; -1: no parentheses, name is all of s.
 */
int mt_frame_parse(const char *s, struct mt_frame_parts *fp);

#endif /* __FRAMES_H */
