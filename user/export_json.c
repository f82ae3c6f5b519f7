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
#include "cudaerr.h"
#include "format.h"
#include "jsonw.h"
#include "session.h"

static void *open_json(FILE *f, const struct mt_export_conf *c, char *err,
		       size_t errlen)
{
	struct mt_jw *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(err, errlen, "export json: out of memory");
		return NULL;
	}
	if (mt_jw_open(w, f, "export json", err, errlen)) {
		free(w);
		return NULL;
	}
	return w;
}

/* the line's keys, in its order (format.c) */
static void put_keys(struct mt_jw *w, const struct mt_rec *r,
		     const struct mt_site *site)
{
	char dev[32];

	if (r->has_ptr) {
		mt_jw_str(w, r->ki->handle ? "handle" : "ptr");
		mt_jw_hex(w, r->ptr);
	}
	if (r->size_state == MT_SIZE_KNOWN)
		mt_jw_key_u64(w, "size", r->size);
	else if (r->size_state == MT_SIZE_UNKNOWN)
		mt_jw_key_str(w, "size", "?");
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
	if (site->detail)
		mt_jw_key_str(w, "type", site->detail);
	mt_jw_key_str(w, "caller", site->caller ? site->caller : "?");
	if (site->phase)
		mt_jw_key_str(w, "phase", site->phase);
	if (site->module)
		mt_jw_key_str(w, "module", site->module);
	if (site->node)
		mt_jw_key_str(w, "node", site->node);
}

static void event_json(void *p, const struct mt_session *s,
		       const struct mt_rec *r, const struct mt_site *site)
{
	struct mt_jw *w = p;
	const struct mt_event *ev = r->ev;
	char ts[32];
	int n;

	if (w->st || w->io)
		return;
	mt_jw_open_close(w, '{');
	mt_jw_str(w, "comm");
	mt_jw_strn(w, ev->comm, strnlen(ev->comm, MT_COMM_LEN));
	mt_jw_key_u64(w, "pid", ev->pid);
	mt_jw_key_u64(w, "tid", ev->tid);
	mt_jw_key_u64(w, "cpu", ev->cpu);
	/* the line's <secs>.<usecs>, exactly, and the nanoseconds */
	n = snprintf(ts, sizeof(ts), "%" PRIu64 ".%06" PRIu64,
		     (uint64_t)(ev->ts / 1000000000ULL),
		     (uint64_t)(ev->ts % 1000000000ULL / 1000));
	mt_jw_str(w, "ts");
	mt_jw_number(w, ts, (size_t)n);
	mt_jw_key_u64(w, "ts_ns", ev->ts);
	mt_jw_key_str(w, "event", r->event);
	put_keys(w, r, site);
	if (site->recompute) {
		mt_jw_str(w, "recompute");
		mt_jw_bool(w, true);
	}
	mt_jw_str(w, "stack");
	mt_jw_open_close(w, '[');
	for (int i = 0; !s->conf.no_stack && i < site->depth; i++)
		mt_jw_str(w, site->frames[i]);
	mt_jw_open_close(w, ']');
	if (site->truncated && !s->conf.no_stack) {
		mt_jw_str(w, "truncated");
		mt_jw_bool(w, true);
	}
	mt_jw_open_close(w, '}');
	mt_jw_flush(w);
	errno = 0;
	if (!w->st && !w->io && fputc('\n', w->f) == EOF)
		w->io = errno ? -errno : -EIO;
	/* the next object is a new top-level value */
	yajl_gen_reset(w->g, NULL);
}

static int close_json(void *p, const struct mt_session *s, char *err,
		      size_t errlen)
{
	struct mt_jw *w = p;
	int ret = mt_jw_error(w, err, errlen);

	mt_jw_free(w);
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
