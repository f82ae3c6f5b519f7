// SPDX-License-Identifier: GPL-2.0
/*
 * --export json: JSON lines, one object per event with every key of its
 * event line (README) and the Python stack as an array, innermost first.
 * Every event is written, --min-size or not; the comm is the thread's own
 * name (the event line replaces its blanks).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include "cudaerr.h"
#include "format.h"
#include "session.h"

struct jw {
	yajl_gen g;
	FILE *f;
	const char *what; /* "export json", for messages */
	yajl_gen_status st; /* the first failure; later calls do nothing */
	int io; /* -errno of the first failed write */
};

static void jw_check(struct jw *w, yajl_gen_status st)
{
	if (!w->st)
		w->st = st;
}

static void jw_strn(struct jw *w, const char *s, size_t n)
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
	jw_check(w, st);
}

static void jw_str(struct jw *w, const char *s)
{
	jw_strn(w, s, strlen(s));
}

static void jw_int(struct jw *w, long long v)
{
	if (!w->st)
		jw_check(w, yajl_gen_integer(w->g, v));
}

static void jw_bool(struct jw *w, bool v)
{
	if (!w->st)
		jw_check(w, yajl_gen_bool(w->g, v));
}

static void jw_number(struct jw *w, const char *num, size_t n)
{
	if (!w->st)
		jw_check(w, yajl_gen_number(w->g, num, n));
}

static void jw_u64(struct jw *w, __u64 v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRIu64, (uint64_t)v);

	jw_number(w, b, (size_t)n);
}

/* '{', '}', '[' or ']' */
static void jw_open_close(struct jw *w, char c)
{
	if (w->st)
		return;
	switch (c) {
	case '{':
		jw_check(w, yajl_gen_map_open(w->g));
		break;
	case '}':
		jw_check(w, yajl_gen_map_close(w->g));
		break;
	case '[':
		jw_check(w, yajl_gen_array_open(w->g));
		break;
	default:
		jw_check(w, yajl_gen_array_close(w->g));
		break;
	}
}

static void jw_hex(struct jw *w, __u64 v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%" PRIx64, (uint64_t)v);
	jw_str(w, b);
}

/* the buffered output into the file */
static void jw_flush(struct jw *w)
{
	const unsigned char *buf;
	size_t len;

	if (w->st || w->io)
		return;
	jw_check(w, yajl_gen_get_buf(w->g, &buf, &len));
	if (w->st)
		return;
	errno = 0;
	if (len && fwrite(buf, 1, len, w->f) != len)
		w->io = errno ? -errno : -EIO;
	yajl_gen_clear(w->g);
}

static int jw_open(struct jw *w, FILE *f, const char *what, char *err,
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

/* the first failure, with context; 0 if none */
static int jw_error(const struct jw *w, char *err, size_t errlen)
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

static void *open_json(FILE *f, const struct mt_export_conf *c, char *err,
		       size_t errlen)
{
	struct jw *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(err, errlen, "export json: out of memory");
		return NULL;
	}
	if (jw_open(w, f, "export json", err, errlen)) {
		free(w);
		return NULL;
	}
	return w;
}

static void key_str(struct jw *w, const char *key, const char *value)
{
	jw_str(w, key);
	jw_str(w, value);
}

static void key_u64(struct jw *w, const char *key, __u64 value)
{
	jw_str(w, key);
	jw_u64(w, value);
}

/* the line's keys, in its order (format.c) */
static void put_keys(struct jw *w, const struct mt_rec *r,
		     const struct mt_site *site)
{
	char dev[32];

	if (r->has_ptr) {
		jw_str(w, r->ki->handle ? "handle" : "ptr");
		jw_hex(w, r->ptr);
	}
	if (r->size_state == MT_SIZE_KNOWN)
		key_u64(w, "size", r->size);
	else if (r->size_state == MT_SIZE_UNKNOWN)
		key_str(w, "size", "?");
	if (r->dev_type != MT_DT_NONE)
		key_str(w, "dev",
			mt_format_dev(dev, sizeof(dev), r->dev_type,
				      r->dev_index));
	if (r->has_ret) {
		jw_str(w, "ret");
		jw_int(w, r->ret);
		if (r->failed) {
			const char *name =
				mt_cuda_err_name(r->ki->errdomain, r->ret);

			key_str(w, "err", name ? name : "unknown");
		}
	}
	if (r->has_totals) {
		key_u64(w, "allocated", r->allocated);
		key_u64(w, "reserved", r->reserved);
	}
	if (r->has_stream) {
		jw_str(w, "stream");
		jw_hex(w, r->stream);
	}
	/* a handle key is never twice in one object */
	if (r->has_handle && !(r->has_ptr && r->ki->handle)) {
		jw_str(w, "handle");
		jw_hex(w, r->handle);
	}
	if (site->detail)
		key_str(w, "type", site->detail);
	key_str(w, "caller", site->caller ? site->caller : "?");
	if (site->phase)
		key_str(w, "phase", site->phase);
	if (site->module)
		key_str(w, "module", site->module);
	if (site->node)
		key_str(w, "node", site->node);
}

static void event_json(void *p, const struct mt_session *s,
		       const struct mt_rec *r, const struct mt_site *site)
{
	struct jw *w = p;
	const struct mt_event *ev = r->ev;
	char ts[32];
	int n;

	if (w->st || w->io)
		return;
	jw_open_close(w, '{');
	jw_str(w, "comm");
	jw_strn(w, ev->comm, strnlen(ev->comm, MT_COMM_LEN));
	key_u64(w, "pid", ev->pid);
	key_u64(w, "tid", ev->tid);
	key_u64(w, "cpu", ev->cpu);
	/* the line's <secs>.<usecs>, exactly, and the nanoseconds */
	n = snprintf(ts, sizeof(ts), "%" PRIu64 ".%06" PRIu64,
		     (uint64_t)(ev->ts / 1000000000ULL),
		     (uint64_t)(ev->ts % 1000000000ULL / 1000));
	jw_str(w, "ts");
	jw_number(w, ts, (size_t)n);
	key_u64(w, "ts_ns", ev->ts);
	key_str(w, "event", r->event);
	put_keys(w, r, site);
	if (site->recompute) {
		jw_str(w, "recompute");
		jw_bool(w, true);
	}
	jw_str(w, "stack");
	jw_open_close(w, '[');
	for (int i = 0; !s->conf.no_stack && i < site->depth; i++)
		jw_str(w, site->frames[i]);
	jw_open_close(w, ']');
	if (site->truncated && !s->conf.no_stack) {
		jw_str(w, "truncated");
		jw_bool(w, true);
	}
	jw_open_close(w, '}');
	jw_flush(w);
	errno = 0;
	if (!w->st && !w->io && fputc('\n', w->f) == EOF)
		w->io = errno ? -errno : -EIO;
	/* the next object is a new top-level value */
	yajl_gen_reset(w->g, NULL);
}

static int close_json(void *p, const struct mt_session *s, char *err,
		      size_t errlen)
{
	struct jw *w = p;
	int ret = jw_error(w, err, errlen);

	yajl_gen_free(w->g);
	free(w);
	return ret;
}

const struct mt_exporter mt_export_json = {
	.name = "json",
	.what = "JSON lines, one object per event with its keys and stack",
	.open = open_json,
	.event = event_json,
	.close = close_json,
};
