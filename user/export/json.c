// SPDX-License-Identifier: GPL-2.0
/*
 * --export json: JSON lines, one object per event with every key of its
 * event line (docs/OUTPUT.md) and the Python stack as an array, innermost first.
 * Every event is written, --min-size or not; the comm is the thread's own
 * name (the event line replaces its blanks). What comes from the site
 * (caller, phase, module, node, stack) is rendered once per site and
 * copied after each event's own keys: the stack is most of a line.
 *
 * A sampled trace (--sample-bytes): each line says so, "sample_bytes": R,
 * and whether its stack was walked, "stack_sampled" (a free's never is;
 * an event without one has "stack": [] and none of the keys that come
 * from it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "event/cudaerr.h"
#include "event/format.h"
#include "lib/grow.h"
#include "export/jsonw.h"
#include "analysis/sample.h"
#include "analysis/session.h"
#include "export/export.h"

/* a site's keys, as ",\"caller\":...}": where in the arena */
struct tail {
	size_t off, len; /* len 0: not rendered yet */
};

struct jexp {
	struct mt_jw w; /* the lines */
	struct mt_jw t; /* the tails, never flushed: read from its buffer */
	char *arena; /* the tails, one after the other */
	size_t used, cap;
	struct tail *tails; /* by site id */
	size_t ntails;
};

static void *open_json(FILE *f, const struct mt_export_conf *c, char *err,
		       size_t errlen)
{
	struct jexp *j = calloc(1, sizeof(*j));

	if (!j) {
		snprintf(err, errlen, "export json: out of memory");
		return NULL;
	}
	if (mt_jw_open(&j->w, f, "export json", err, errlen)) {
		free(j);
		return NULL;
	}
	if (mt_jw_open(&j->t, NULL, "export json", err, errlen)) {
		mt_jw_free(&j->w);
		free(j);
		return NULL;
	}
	return j;
}

/* the line's keys, in its order (format.c) */
static void put_keys(struct mt_jw *w, const struct mt_call *r)
{
	char dev[32];

	if (r->has_ptr) {
		mt_jw_str(w, r->ki->handle ? "handle" : "ptr");
		mt_jw_hex(w, r->ptr);
	}
	if (r->size_state == MT_SIZE_KNOWN)
		mt_jw_key_u64(w, "size", r->size);
	else if (r->size_state == MT_SIZE_UNKNOWN) {
		/* the line's size=?: a number or nothing, never a string */
		mt_jw_str(w, "size");
		mt_jw_null(w);
	}
	if (r->dev_type != MT_DT_NONE)
		mt_jw_key_str(w, "dev",
			      mt_format_dev(dev, sizeof(dev), r->dev_type,
					    r->dev_index));
	if (r->has_ret) {
		mt_jw_str(w, "ret");
		mt_jw_int(w, r->ret);
		if (r->failed) {
			const char *name =
				mt_cuda_err_name(r->ki->errdomain, r->ret);

			mt_jw_key_str(w, "err", name ? name : "unknown");
		}
	}
	if (r->has_totals) {
		mt_jw_key_u64(w, "allocated", r->allocated);
		mt_jw_key_u64(w, "reserved", r->reserved);
	}
	if (r->has_stream) {
		mt_jw_str(w, "stream");
		mt_jw_hex(w, r->stream);
	}
	/* a handle key is never twice in one object */
	if (r->has_handle && !(r->has_ptr && r->ki->handle)) {
		mt_jw_str(w, "handle");
		mt_jw_hex(w, r->handle);
	}
}

/* the keys that come from the site, and the object's end */
static void put_site(struct mt_jw *w, const struct mt_site *site, bool no_stack)
{
	if (site->detail)
		mt_jw_key_str(w, "type", site->detail);
	mt_jw_key_str(w, "caller", site->caller ? site->caller : "?");
	if (site->phase)
		mt_jw_key_str(w, "phase", site->phase);
	if (site->module)
		mt_jw_key_str(w, "module", site->module);
	if (site->node)
		mt_jw_key_str(w, "node", site->node);
	if (site->recompute) {
		mt_jw_str(w, "recompute");
		mt_jw_bool(w, true);
	}
	mt_jw_str(w, "stack");
	mt_jw_open_close(w, '[');
	for (int i = 0; !no_stack && i < site->depth; i++)
		mt_jw_str(w, site->frames[i]);
	mt_jw_open_close(w, ']');
	if (site->truncated && !no_stack) {
		mt_jw_str(w, "truncated");
		mt_jw_bool(w, true);
	}
	mt_jw_open_close(w, '}');
}

/* the site's tail, rendered on its first event; NULL on failure */
static const struct tail *site_tail(struct jexp *j, const struct mt_site *site,
				    bool no_stack)
{
	const unsigned char *buf;
	size_t len, n = j->ntails;
	struct tail *t;

	if (site->id < j->ntails && j->tails[site->id].len)
		return &j->tails[site->id];
	if (mt_grow((void **)&j->tails, &n, (size_t)site->id + 1,
		    sizeof(*j->tails)))
		return NULL;
	memset(j->tails + j->ntails, 0, (n - j->ntails) * sizeof(*j->tails));
	j->ntails = n;
	mt_jw_open_close(&j->t, '{');
	put_site(&j->t, site, no_stack);
	if (j->t.st ||
	    yajl_gen_get_buf(j->t.g, &buf, &len) != yajl_gen_status_ok ||
	    mt_grow((void **)&j->arena, &j->cap, j->used + len, 1))
		return NULL;
	/* "{...}" follows the event's own keys as ",...}" */
	memcpy(j->arena + j->used, buf, len);
	j->arena[j->used] = ',';
	t = &j->tails[site->id];
	t->off = j->used;
	t->len = len;
	j->used += len;
	yajl_gen_clear(j->t.g);
	yajl_gen_reset(j->t.g, NULL);
	return t;
}

static void event_json(void *p, const struct mt_session *s,
		       const struct mt_call *r, const struct mt_site *site)
{
	struct jexp *j = p;
	struct mt_jw *w = &j->w;
	const struct mt_event *ev = r->ev;
	const struct tail *t;
	char ts[32];
	size_t n;

	if (w->st || w->io)
		return;
	t = site_tail(j, site, s->conf.no_stack);
	if (!t) {
		w->st = j->t.st ? j->t.st : yajl_gen_no_buf;
		return;
	}
	mt_jw_open_close(w, '{');
	mt_jw_str(w, "comm");
	mt_jw_strn(w, ev->comm, strnlen(ev->comm, MT_COMM_LEN));
	mt_jw_key_u64(w, "pid", ev->pid);
	mt_jw_key_u64(w, "tid", ev->tid);
	mt_jw_key_u64(w, "cpu", ev->cpu);
	/* the line's <secs>.<usecs>, exactly, and the nanoseconds */
	n = mt_jw_digits(ts + sizeof(ts),
			 ev->ts % 1000000000ULL / 1000 + 1000000, 10);
	ts[sizeof(ts) - n] = '.'; /* over the 1 that kept the zeros */
	n += mt_jw_digits(ts + sizeof(ts) - n, ev->ts / 1000000000ULL, 10);
	mt_jw_str(w, "ts");
	mt_jw_number(w, ts + sizeof(ts) - n, n);
	mt_jw_key_u64(w, "ts_ns", ev->ts);
	mt_jw_key_str(w, "event", r->event);
	put_keys(w, r);
	if (s->conf.sample_bytes) {
		mt_jw_key_u64(w, "sample_bytes", s->conf.sample_bytes);
		mt_jw_str(w, "stack_sampled");
		mt_jw_bool(w, !mt_sample_unwalked(s->conf.sample_bytes, r));
	}
	mt_jw_flush(w);
	errno = 0;
	if (!w->st && !w->io &&
	    (fwrite(j->arena + t->off, 1, t->len, w->f) != t->len ||
	     fputc('\n', w->f) == EOF))
		w->io = errno ? -errno : -EIO;
	/* the object was closed by its tail: the next is a new value */
	yajl_gen_reset(w->g, NULL);
}

static int close_json(void *p, const struct mt_session *s, char *err,
		      size_t errlen)
{
	struct jexp *j = p;
	int ret = mt_jw_error(&j->w, err, errlen);

	mt_jw_free(&j->w);
	mt_jw_free(&j->t);
	free(j->arena);
	free(j->tails);
	free(j);
	return ret;
}

const struct mt_exporter mt_export_json = {
	.name = "json",
	.what = "JSON lines, one object per event with its keys and stack",
	.open = open_json,
	.event = event_json,
	.close = close_json,
};
