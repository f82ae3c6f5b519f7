/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Aligned text tables for people: columns left or right aligned, at most
 * a given width (one column gives way, its cells shortened from the left,
 * where a path keeps its most telling part), colour only when asked. The
 * cells are strings: the caller formats sizes (event/format.h) and
 * percentages, so that every table writes them the same way.
 */
#ifndef __MT_TABLE_H
#define __MT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* rows a table holds at most: a report's tables are cut long before */
#define MT_TABLE_MAX_ROWS 65536
#define MT_TABLE_MAX_COLS 16
/* the width when the output is no terminal and COLUMNS is not set */
#define MT_TABLE_DEFAULT_WIDTH 120
/* a column that gives way keeps at least this many characters */
#define MT_TABLE_MIN_ELIDED 12
/* what columns with a drop are left out for it to keep, where it has it */
#define MT_TABLE_KEEP 28

enum mt_table_align { MT_TABLE_LEFT, MT_TABLE_RIGHT };

struct mt_table_col {
	const char *title;
	enum mt_table_align align;
	/*
	 * The column shortened when a row is wider than the table may be:
	 * "..." and the cell's tail, after its leading blanks (an indented
	 * tree keeps its indentation). At most one column per table.
	 */
	bool elide;
	/*
	 * 0: always shown. Otherwise the column may be left out when the
	 * table is too wide for its elided column to keep MT_TABLE_KEEP
	 * characters: the highest drop first.
	 */
	int drop;
};

/* how a row is drawn, when colour is on */
enum mt_table_tone {
	MT_TONE_PLAIN,
	MT_TONE_BOLD, /* a total, a headline */
	MT_TONE_DIM, /* a "... more" row */
	MT_TONE_RED, /* a verdict to act on: growth, an OOM */
	MT_TONE_GREEN, /* all clear */
	MT_TONE_YELLOW, /* a figure something is missing from */
};

struct mt_table_style {
	size_t width; /* characters a line may take */
	bool colour; /* ANSI colour and bold */
};

struct mt_table;

/* ncols columns (1..MT_TABLE_MAX_COLS), copied; NULL: no memory or bad */
struct mt_table *mt_table_new(const struct mt_table_col *cols, size_t ncols);
void mt_table_free(struct mt_table *t);

/*
 * A row of ncols cells (NULL: empty), copied escaped as text (lib/escape.h):
 * callers pass the target's names raw. 0, -ENOMEM, or -ENOSPC past
 * MT_TABLE_MAX_ROWS.
 */
int mt_table_add(struct mt_table *t, enum mt_table_tone tone,
		 const char *const *cells);

size_t mt_table_rows(const struct mt_table *t);

/*
 * Column col (< ncols, else nothing) takes at least width characters: a
 * view drawn again and again (memtrace-bpf top) keeps its columns in place
 * from one frame to the next while its figures change length.
 */
void mt_table_set_width(struct mt_table *t, size_t col, size_t width);

/*
 * The title line (none when every column's title is NULL), then the rows,
 * each line at most st->width wide.
 */
void mt_table_print(const struct mt_table *t, const struct mt_table_style *st,
		    FILE *out);

/*
 * What mt_table_print writes, into a buffer of *len bytes (NUL-ended, to
 * free) for a caller that places the lines itself (a frame that counts
 * its rows). NULL: no memory.
 */
char *mt_table_format(const struct mt_table *t, const struct mt_table_style *st,
		      size_t *len);

/*
 * The style for out: its width from COLUMNS when set, else the terminal's
 * (TIOCGWINSZ) when out is one, else MT_TABLE_DEFAULT_WIDTH; colour only
 * on a terminal and never when NO_COLOR is set and not empty.
 */
void mt_table_style_for(FILE *out, struct mt_table_style *st);

/* the escape that starts tone, and the one that ends it; "" without colour */
const char *mt_table_tone_on(const struct mt_table_style *st,
			     enum mt_table_tone tone);
const char *mt_table_tone_off(const struct mt_table_style *st);

/* characters s takes on a terminal (UTF-8 sequences count one) */
size_t mt_table_text_width(const char *s);

/*
 * s into buf (len bytes), shortened from the left to at most width
 * characters as a column that gives way shortens it. Returns buf.
 */
const char *mt_table_elide(char *buf, size_t len, const char *s, size_t width);

#endif /* __MT_TABLE_H */
