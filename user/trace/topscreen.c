// SPDX-License-Identifier: GPL-2.0
/*
 * memtrace-bpf top, a feature of the live trace (feature.h), on its
 * output: on a terminal, a screen redrawn in place (the alternate screen,
 * cursor home and clear, as py-spy top and htop do; plain ANSI, no
 * curses) with q to quit; to a pipe or a file, one frame after another
 * below a line of dashes, for a log. The trace loop calls its tick on
 * every turn; no thread of its own.
 *
 * The terminal side of memtrace-bpf top. ANSI escapes only (alternate
 * screen, cursor home, clear to the end of each line and of the screen),
 * which every terminal over ssh and in tmux or screen understands: curses
 * would add a dependency and a terminfo lookup for four sequences. The
 * size comes from TIOCGWINSZ at each frame, and SIGWINCH redraws at once.
 * Keys are read without echo and without waiting for a newline (termios),
 * with the signal keys left on: Ctrl-C stops the trace as it always does,
 * Ctrl-Z is turned off while the screen is up (a stopped top would leave
 * the terminal in its mode under the shell).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <linux/types.h>
#include "memtrace.h" /* the types of its globals, before the skeleton */
#include "memtrace.skel.h"
#include "analysis/top.h"
#include "lib/err.h"
#include "trace/feature.h"
#include "trace/tracer.h"

#define ESC "\033"
#define ENTER_SCREEN ESC "[?1049h" ESC "[?25l" /* alternate, no cursor */
#define LEAVE_SCREEN ESC "[?25h" ESC "[?1049l"
#define DEFAULT_COLS 80
#define DEFAULT_ROWS 24

/* set by SIGWINCH: the terminal's size changed (a signal's flag) */
static volatile sig_atomic_t resized;

struct mt_topscreen {
	struct mt_top *top;
	double interval;
	bool tty; /* stdout is a terminal: a screen, else frames in a row */
	bool keys; /* stdin is one too: q is read */
	bool started, in_screen, raw, winch;
	__u64 start, last; /* ns: the first turn, the last frame */
	int frames;
	FILE *screen; /* the terminal (stdout as it was), or stdout */
	int saved_out, saved_err; /* fds 1 and 2 as they were; -1: none */
	FILE *kept_out, *kept_err; /* what was printed meanwhile */
	struct termios tio; /* stdin's mode as it was */
	struct sigaction old_winch;
};

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

/* fd (1 or 2) into a new temporary file; its old self in *saved */
static FILE *keep_aside(int fd, int *saved)
{
	FILE *f = tmpfile();

	if (!f)
		return NULL;
	*saved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (*saved < 0 || fcntl(fileno(f), F_SETFD, FD_CLOEXEC) < 0 ||
	    dup2(fileno(f), fd) < 0) {
		if (*saved >= 0)
			close(*saved);
		*saved = -1;
		fclose(f);
		return NULL;
	}
	return f;
}

static void topscreen_close(struct mt_topscreen *ts, struct mt_tracer *tr);

/*
 * Before the trace starts anything (a command to trace inherits its
 * output): on a terminal, what the tool and the command print from here
 * to topscreen_close is kept aside and printed after it, so that it does
 * not run over the screen. Also makes the session of tr's shared sink
 * note each step's memory. NULL and err filled on failure.
 */
static struct mt_topscreen *
topscreen_open(struct mt_tracer *tr, double interval, char *err, size_t len)
{
	struct mt_topscreen *ts = calloc(1, sizeof(*ts));

	if (!ts || !(ts->top = mt_top_new())) {
		snprintf(err, len, "out of memory");
		free(ts);
		return NULL;
	}
	ts->interval = interval;
	ts->saved_out = ts->saved_err = -1;
	ts->screen = stdout;
	ts->tty = isatty(STDOUT_FILENO);
	ts->keys = ts->tty && isatty(STDIN_FILENO);
	if (ts->tty) {
		fflush(stdout);
		fflush(stderr);
		ts->kept_out = keep_aside(STDOUT_FILENO, &ts->saved_out);
		ts->kept_err = ts->kept_out ? keep_aside(STDERR_FILENO,
							 &ts->saved_err) :
					      NULL;
		if (ts->kept_err)
			ts->screen = fdopen(ts->saved_out, "w");
		if (!ts->kept_err || !ts->screen) {
			snprintf(err, len, "top: set the terminal aside: %s",
				 strerror(errno));
			topscreen_close(ts, tr);
			return NULL;
		}
	}
	if (mt_session_observe(tr->sink.ses, &(struct mt_session_observer){
						     .event = mt_top_event,
						     .ctx = ts->top })) {
		snprintf(err, len,
			 "top: the session has no observer slot left");
		topscreen_close(ts, tr);
		return NULL;
	}
	return ts;
}

/* the alternate screen, keys without echo, and a redraw on resize */
static void enter(struct mt_topscreen *ts)
{
	struct sigaction sa = { .sa_handler = on_winch };
	struct termios raw;

	if (!ts->tty)
		return;
	if (ts->keys && !tcgetattr(STDIN_FILENO, &ts->tio)) {
		raw = ts->tio;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		raw.c_cc[VSUSP] = _POSIX_VDISABLE;
		ts->raw = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	ts->keys = ts->raw;
	/* no SA_RESTART: the loop's poll returns and the screen is redrawn */
	sigemptyset(&sa.sa_mask);
	ts->winch = !sigaction(SIGWINCH, &sa, &ts->old_winch);
	fputs(ENTER_SCREEN, ts->screen);
	ts->in_screen = true;
}

static void leave(struct mt_topscreen *ts)
{
	if (ts->in_screen) {
		fputs(LEAVE_SCREEN, ts->screen);
		fflush(ts->screen);
	}
	if (ts->raw && tcsetattr(STDIN_FILENO, TCSANOW, &ts->tio))
		fprintf(ts->screen, "memtrace-bpf: restore the terminal: %s\n",
			strerror(errno));
	if (ts->winch)
		sigaction(SIGWINCH, &ts->old_winch, NULL);
	/* q is read no more: the last frame does not offer it */
	ts->in_screen = ts->raw = ts->winch = ts->keys = false;
}

static void terminal_size(const struct mt_topscreen *ts, int *cols, int *rows)
{
	struct winsize ws;

	*cols = DEFAULT_COLS;
	*rows = DEFAULT_ROWS;
	if (!ioctl(fileno(ts->screen), TIOCGWINSZ, &ws) && ws.ws_col &&
	    ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/*
 * The frame's text (malloc'd, *len bytes), NULL when out of memory: as
 * wide and as high as the terminal when sized, else uncut; whole: as long
 * as its tables are, whatever the terminal's height.
 */
static char *compose(struct mt_topscreen *ts, struct mt_tracer *tr, __u64 now,
		     bool sized, bool whole, size_t *len)
{
	const struct mt_traced *t = tr->ntargets ? &tr->targets[0] : NULL;
	struct mt_top_status st = {
		.elapsed = (double)(now - ts->start) / 1e9,
		.interval = ts->interval,
		.lost = tr->skel->bss->lost_events +
			tr->skel->bss->lost_inflight,
		.stacks_lost = tr->unseen.stacks_lost,
		.nprocs = tr->ntargets,
		.pid = t ? (__u32)t->proc.pid : 0,
		.comm = t ? t->proc.comm : NULL,
		.keys = ts->keys,
	};
	char *buf = NULL;
	int cols = 0, rows = 0;
	FILE *f;

	if (sized)
		terminal_size(ts, &cols, &rows);
	if (whole)
		rows = 0;
	for (int i = 0; i < tr->ntargets; i++)
		st.nexited += tr->targets[i].proc.exited;
	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	mt_top_frame(ts->top, tr->sink.ses, &st, cols, rows, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* in place: each line cleared to its end, then the rest of the screen */
static void draw_screen(struct mt_topscreen *ts, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	fputs(ESC "[H", ts->screen);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		fwrite(p, 1, n, ts->screen);
		fputs(ESC "[K", ts->screen);
		p += n + 1;
		/* no newline after the last row: the screen would scroll */
		if (p < end)
			fputc('\n', ts->screen);
	}
	fputs(ESC "[J", ts->screen);
}

/* a frame below the last one, for a log: a line of dashes between */
static void draw_log(struct mt_topscreen *ts, const char *text, size_t len)
{
	if (ts->frames)
		fputs("--------\n", ts->screen);
	fwrite(text, 1, len, ts->screen);
}

/*
 * A frame: in place on the screen while it is up, else below the last one
 * for a log. The last one, as the trace ended, goes on a terminal below
 * what the shell showed, as wide as it is and as long as the tables are.
 */
static void draw(struct mt_topscreen *ts, struct mt_tracer *tr, __u64 now,
		 bool last)
{
	bool sized = last ? ts->tty : ts->in_screen;
	size_t len = 0;
	char *text = compose(ts, tr, now, sized, last, &len);

	if (!text) {
		fputs("memtrace-bpf: top: out of memory for a frame\n",
		      ts->screen);
		return;
	}
	if (!sized)
		draw_log(ts, text, len);
	else if (last)
		fwrite(text, 1, len, ts->screen);
	else
		draw_screen(ts, text, len);
	fflush(ts->screen);
	ts->frames++;
	ts->last = now;
	free(text);
}

/* q or Q typed since the last turn */
static bool quit_typed(const struct mt_topscreen *ts)
{
	char keys[64];
	ssize_t n;

	if (!ts->keys)
		return false;
	while ((n = read(STDIN_FILENO, keys, sizeof(keys))) > 0)
		if (memchr(keys, 'q', (size_t)n) ||
		    memchr(keys, 'Q', (size_t)n))
			return true;
	return false;
}

/*
 * A turn of the trace loop at now (ns): keys read, a frame drawn when the
 * interval passed or the terminal was resized. Returns true when q asked
 * to quit.
 */
static bool topscreen_tick(void *st, struct mt_tracer *tr, __u64 now)
{
	struct mt_topscreen *ts = st;
	__u64 interval = (__u64)(ts->interval * 1e9);

	if (!ts->started) {
		ts->started = true;
		ts->start = now;
		enter(ts);
		draw(ts, tr, now, false);
		return false;
	}
	if (quit_typed(ts))
		return true;
	if (resized || now < ts->last || now - ts->last >= interval) {
		resized = 0;
		draw(ts, tr, now, false);
	}
	return false;
}

/* what was kept aside in f, onto fd's FILE */
static void replay(FILE *f, FILE *to)
{
	char buf[65536];
	size_t n;

	if (!f)
		return;
	rewind(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (fwrite(buf, 1, n, to) != n)
			break;
	fclose(f);
	fflush(to);
}

/*
 * The terminal as it was, the last frame (if one was drawn) printed below
 * what the shell showed, then what was kept aside; ts freed.
 */
static void topscreen_close(struct mt_topscreen *ts, struct mt_tracer *tr)
{
	if (tr->sink.ses)
		mt_session_unobserve(tr->sink.ses, mt_top_event);
	leave(ts);
	if (ts->started && tr->sink.ses)
		draw(ts, tr, mt_now_ns(), true);
	if (ts->saved_out >= 0) {
		fflush(stdout);
		fflush(stderr);
		if (dup2(ts->saved_out, STDOUT_FILENO) < 0 ||
		    (ts->saved_err >= 0 &&
		     dup2(ts->saved_err, STDERR_FILENO) < 0))
			fprintf(ts->screen,
				"memtrace-bpf: restore stdout: %s\n",
				strerror(errno));
	}
	if (ts->screen != stdout)
		fclose(ts->screen);
	else if (ts->saved_out >= 0)
		close(ts->saved_out);
	if (ts->saved_err >= 0)
		close(ts->saved_err);
	replay(ts->kept_out, stdout);
	replay(ts->kept_err, stderr);
	mt_top_free(ts->top);
	free(ts);
}

/* top: its screen, before anything prints or a command starts */
static int top_open(struct mt_tracer *tr, unsigned int slot, void **st)
{
	char err[512];

	if (!tr->conf->top)
		return 0;
	*st = topscreen_open(tr, tr->conf->top, err, sizeof(err));
	if (!*st) {
		mt_err("%s", err);
		return -1;
	}
	/* its last frame is the trace's last word, not a summary */
	tr->no_summary = true;
	return 0;
}

static int top_close(void *st, struct mt_tracer *tr)
{
	topscreen_close(st, tr);
	return 0;
}

const struct mt_feature mt_top_feature = {
	.name = "top",
	.open = top_open,
	.tick = topscreen_tick,
	.close = top_close,
};
