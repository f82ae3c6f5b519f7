// SPDX-License-Identifier: GPL-2.0
/* Stack lines read back (frames.h), for the exporters that split them. */
#include <string.h>
#include "export/frames.h"

int mt_frame_parse(const char *s, struct mt_frame_parts *fp)
{
	size_t len = strlen(s);
	const char *open = NULL, *colon = NULL, *end = len ? s + len - 1 : s;
	const char *c;
	__u64 line = 0;

	*fp = (struct mt_frame_parts){ .name = s, .name_len = len };
	for (c = s; c < end; c++)
		if (c[0] == ' ' && c[1] == '(')
			open = c;
	if (!open || *end != ')')
		return -1;
	for (c = open + 2; c < end; c++)
		if (*c == ':')
			colon = c;
	for (c = colon ? colon + 1 : end; c < end && *c >= '0' && *c <= '9';
	     c++)
		line = line * 10 + (__u64)(*c - '0');
	fp->name_len = (size_t)(open - s);
	fp->file = open + 2;
	if (!colon || colon + 1 == end || c != end) {
		fp->file_len = (size_t)(end - fp->file);
		return 0;
	}
	fp->file_len = (size_t)(colon - fp->file);
	fp->line = line;
	return 1;
}
