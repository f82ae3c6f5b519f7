// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "lib/escape.h"
#include "lib/grow.h"
#include "lib/table.h"

#define GAP 2 /* blanks between columns */
#define ELLIPSIS "..."

struct row {
	enum mt_table_tone tone;
	char *cells[MT_TABLE_MAX_COLS];
};

struct mt_table {
	struct mt_table_col cols[MT_TABLE_MAX_COLS];
	size_t ncols;
	size_t least[MT_TABLE_MAX_COLS]; /* a column's width at least */
	struct row *rows;
	size_t nrows, cap;
};

struct mt_table *mt_table_new(const struct mt_table_col *cols, size_t ncols)
{
	struct mt_table *t;

	if (!ncols || ncols > MT_TABLE_MAX_COLS)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	memcpy(t->cols, cols, ncols * sizeof(*cols));
	t->ncols = ncols;
	return t;
}

void mt_table_free(struct mt_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows; i++)
		for (size_t j = 0; j < t->ncols; j++)
			free(t->rows[i].cells[j]);
	free(t->rows);
	free(t);
}

/*
 * A copy of a cell, escaped: a module or a file the target named reaches
 * the terminal as text (and is measured as it will be printed)
 */
static char *escaped(const char *cell)
{
	size_t n = mt_escape(NULL, 0, cell, MT_ESC_TEXT) + 1;
	char *s = malloc(n);

	if (s)
		mt_escape(s, n, cell, MT_ESC_TEXT);
	return s;
}

int mt_table_add(struct mt_table *t, enum mt_table_tone tone,
		 const char *const *cells)
{
	struct row *r;

	if (t->nrows == MT_TABLE_MAX_ROWS)
		return -ENOSPC;
	if (mt_grow((void **)&t->rows, &t->cap, t->nrows + 1, sizeof(*r)))
		return -ENOMEM;
	r = &t->rows[t->nrows];
	memset(r, 0, sizeof(*r));
	r->tone = tone;
	for (size_t j = 0; j < t->ncols; j++) {
		r->cells[j] = escaped(cells[j] ? cells[j] : "");
		if (!r->cells[j]) {
			while (j--)
				free(r->cells[j]);
			return -ENOMEM;
		}
	}
	t->nrows++;
	return 0;
}

size_t mt_table_rows(const struct mt_table *t)
{
	return t->nrows;
}

void mt_table_set_width(struct mt_table *t, size_t col, size_t width)
{
	if (col < t->ncols)
		t->least[col] = width;
}

size_t mt_table_text_width(const char *s)
{
	size_t n = 0;

	/* a UTF-8 continuation byte adds nothing */
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* the byte offset in s after which `keep` characters remain */
static size_t tail_from(const char *s, size_t keep)
{
	size_t len = strlen(s), n = 0, i = len;

	while (i > 0 && n < keep) {
		i--;
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	}
	return i;
}

static void pad(size_t n, FILE *out)
{
	while (n--)
		fputc(' ', out);
}

/* s shortened to w characters: leading blanks, "...", its tail */
static void put_elided(const char *s, size_t w, FILE *out)
{
	size_t lead = strspn(s, " ");
	size_t room =
		w > lead + strlen(ELLIPSIS) ? w - lead - strlen(ELLIPSIS) : 0;

	if (!room) {
		/* too narrow for a tail: its first w characters */
		fprintf(out, "%.*s", (int)w, s);
		return;
	}
	fprintf(out, "%.*s%s%s", (int)lead, s, ELLIPSIS,
		s + lead + tail_from(s + lead, room));
}

const char *mt_table_elide(char *buf, size_t len, const char *s, size_t width)
{
	FILE *f;

	if (!len)
		return buf;
	if (mt_table_text_width(s) <= width) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	f = fmemopen(buf, len, "w");
	if (!f) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	put_elided(s, width, f);
	fclose(f);
	return buf;
}

/* cell in a column of width w; shortened from the left if it is wider */
static void put_cell(const char *cell, const struct mt_table_col *col, size_t w,
		     bool last, FILE *out)
{
	size_t cw = mt_table_text_width(cell);

	if (cw > w) {
		put_elided(cell, w, out);
		return;
	}
	if (col->align == MT_TABLE_RIGHT)
		pad(w - cw, out);
	fputs(cell, out);
	if (col->align == MT_TABLE_LEFT && !last)
		pad(w - cw, out);
}

static const char *const tone_codes[] = {
	[MT_TONE_PLAIN] = "",	      [MT_TONE_BOLD] = "\033[1m",
	[MT_TONE_DIM] = "\033[2m",    [MT_TONE_RED] = "\033[31m",
	[MT_TONE_GREEN] = "\033[32m", [MT_TONE_YELLOW] = "\033[33m",
};

const char *mt_table_tone_on(const struct mt_table_style *st,
			     enum mt_table_tone tone)
{
	if (!st->colour || tone < MT_TONE_PLAIN || tone > MT_TONE_YELLOW)
		return "";
	return tone_codes[tone];
}

const char *mt_table_tone_off(const struct mt_table_style *st)
{
	return st->colour ? "\033[0m" : "";
}

static void put_row(const struct mt_table *t, char *const *cells,
		    enum mt_table_tone tone, const size_t *w, const bool *shown,
		    const struct mt_table_style *st, FILE *out)
{
	const char *on = mt_table_tone_on(st, tone);
	size_t last = 0;
	bool first = true;

	for (size_t j = 0; j < t->ncols; j++)
		if (shown[j])
			last = j;
	fputs(on, out);
	for (size_t j = 0; j < t->ncols; j++) {
		if (!shown[j])
			continue;
		if (!first)
			pad(GAP, out);
		first = false;
		put_cell(cells[j], &t->cols[j], w[j], j == last, out);
	}
	if (*on)
		fputs(mt_table_tone_off(st), out);
	fputc('\n', out);
}

/* the shown column of the highest drop; ncols when none is left */
static size_t next_drop(const struct mt_table *t, const bool *shown)
{
	size_t k = t->ncols;

	for (size_t j = 0; j < t->ncols; j++)
		if (shown[j] && t->cols[j].drop &&
		    (k == t->ncols || t->cols[j].drop > t->cols[k].drop))
			k = j;
	return k;
}

void mt_table_print(const struct mt_table *t, const struct mt_table_style *st,
		    FILE *out)
{
	size_t w[MT_TABLE_MAX_COLS] = { 0 }, total = GAP * (t->ncols - 1);
	char *titles[MT_TABLE_MAX_COLS];
	bool shown[MT_TABLE_MAX_COLS] = { 0 }, titled = false;
	size_t e = t->ncols, want = 0, k;

	for (size_t j = 0; j < t->ncols; j++) {
		titled |= t->cols[j].title != NULL;
		titles[j] = (char *)(t->cols[j].title ? t->cols[j].title : "");
		w[j] = mt_table_text_width(titles[j]);
		if (w[j] < t->least[j])
			w[j] = t->least[j];
		for (size_t i = 0; i < t->nrows; i++) {
			size_t cw = mt_table_text_width(t->rows[i].cells[j]);

			if (cw > w[j])
				w[j] = cw;
		}
		total += w[j];
		shown[j] = true;
		if (t->cols[j].elide)
			e = j;
	}
	/* columns left out, while the elided one would fall below its want */
	if (e < t->ncols)
		want = w[e] < MT_TABLE_KEEP ? w[e] : MT_TABLE_KEEP;
	while (total - (e < t->ncols ? w[e] - want : 0) > st->width &&
	       (k = next_drop(t, shown)) < t->ncols) {
		shown[k] = false;
		total -= w[k] + GAP;
	}
	/* the column that gives way takes what is too much, to a minimum */
	if (e < t->ncols && total > st->width && w[e] > MT_TABLE_MIN_ELIDED) {
		size_t over = total - st->width;
		size_t keep = over < w[e] - MT_TABLE_MIN_ELIDED ?
				      w[e] - over :
				      MT_TABLE_MIN_ELIDED;

		total -= w[e] - keep;
		w[e] = keep;
	}
	if (titled)
		put_row(t, titles, MT_TONE_BOLD, w, shown, st, out);
	for (size_t i = 0; i < t->nrows; i++)
		put_row(t, t->rows[i].cells, t->rows[i].tone, w, shown, st,
			out);
}

char *mt_table_format(const struct mt_table *t, const struct mt_table_style *st,
		      size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	bool bad;

	if (!f)
		return NULL;
	mt_table_print(t, st, f);
	bad = ferror(f);
	if (fclose(f) || bad) {
		free(buf);
		return NULL;
	}
	return buf;
}

void mt_table_style_for(FILE *out, struct mt_table_style *st)
{
	const char *cols = getenv("COLUMNS"), *nc = getenv("NO_COLOR");
	int fd = fileno(out);
	bool tty = fd >= 0 && isatty(fd);
	struct winsize ws;
	char *end;
	long n;

	st->width = MT_TABLE_DEFAULT_WIDTH;
	st->colour = tty && !(nc && *nc);
	if (cols && *cols) {
		n = strtol(cols, &end, 10);
		if (!*end && n > 0 && n <= 10000) {
			st->width = (size_t)n;
			return;
		}
	}
	if (tty && !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col)
		st->width = ws.ws_col;
}
