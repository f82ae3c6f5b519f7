// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "analysis/view.h"
#include "proc/procinfo.h"
#include "python/pyproc.h"
#include "record/record.h"
#include "trace/sink.h"
#include "trace/tracer.h"
#include "proc/target.h"
#include "lib/err.h"
#include "lib/outfile.h"

static void write_failed(struct mt_sink *k, int err)
{
	if (k->failed)
		return;
	mt_err("write %s: %s", k->path, strerror(err));
	k->failed = true;
}

int mt_sink_open(struct mt_sink *k, const struct mt_output_conf *c, bool record,
		 const char *path)
{
	char err[512];

	*k = (struct mt_sink){ .out = stdout };
	snprintf(k->path, sizeof(k->path), "%s", path ? path : "");
	if (path && record) {
		k->rec = mt_recorder_open(path, err, sizeof(err));
		if (!k->rec) {
			mt_err("%s", err);
			return -1;
		}
		/* how every event is to be read: before the first */
		if (c->ses.sample_bytes)
			mt_sink_meta(k, MT_REC_SAMPLE_KEY, "%llu",
				     (unsigned long long)c->ses.sample_bytes);
	} else if (path) {
		k->out = mt_create_output_file(path, MT_OUT_PRIVATE, err,
					       sizeof(err));
		if (!k->out) {
			k->out = stdout;
			mt_err("cannot write %s", err);
			return -1;
		}
	}
	k->ses = mt_output_open(c, k->out);
	if (!k->ses)
		return -1;
	return 0;
}

void mt_sink_meta(struct mt_sink *k, const char *key, const char *fmt, ...)
{
	char value[4096];
	va_list ap;
	int ret;

	if (!k->rec)
		return;
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	ret = mt_recorder_meta(k->rec, key, value);
	if (ret)
		write_failed(k, -ret);
}

static void header_meta(void *k, const char *key, const char *value)
{
	mt_sink_meta(k, key, "%s", value);
}

struct mt_header mt_sink_header(struct mt_sink *k)
{
	return (struct mt_header){ .meta = header_meta, .out = k };
}

void mt_sink_describe(struct mt_sink *k, const struct mt_traced *t, char **argv)
{
	const struct mt_header h = mt_sink_header(k);

	if (!k->rec)
		return;
	if (t->sink == k)
		mt_header_tool(&h);
	mt_header_target(&h, t, argv);
	/* the shared sink had it from find_python already */
	if (t->py && t->sink == k)
		mt_header_python(&h, t);
}

void mt_sink_library(struct mt_sink *k, int pid, const char *path, int probes)
{
	const struct mt_header h = mt_sink_header(k);
	char ver[256];

	if (!k->rec)
		return;
	mt_header_library(&h, pid, path, probes);
	if (mt_torch_version(pid, path, ver, sizeof(ver)))
		mt_sink_meta(k, "torch", "pid=%d version=%s", pid, ver);
}

bool mt_sink_event(struct mt_sink *k, const struct mt_event *ev, bool default0,
		   struct mt_call *r, struct mt_site *site)
{
	int ret;

	if (!mt_session_event(k->ses, r, site))
		return false;
	if (k->rec && !k->failed) {
		ret = mt_recorder_event(k->rec, ev, default0, site);
		if (ret)
			write_failed(k, -ret);
	}
	return true;
}

void mt_sink_exec(struct mt_sink *k, const struct mt_event *ev,
		  const struct mt_site *site, struct mt_exec_freed *freed)
{
	int ret;

	mt_session_exec(k->ses, ev->pid, ev->ts, freed);
	if (k->rec && !k->failed) {
		ret = mt_recorder_event(k->rec, ev, false, site);
		if (ret)
			write_failed(k, -ret);
	}
}

void mt_sink_flush(struct mt_sink *k)
{
	int ret;

	fflush(k->out);
	if (!k->rec || k->failed)
		return;
	ret = mt_recorder_flush(k->rec);
	if (ret)
		write_failed(k, -ret);
}

static int close_record(struct mt_sink *k, const struct mt_summary_end *end,
			bool note)
{
	const struct mt_rec_end re = { .seconds = end->seconds,
				       .lost = end->lost,
				       .unseen = end->unseen };
	__u64 events = mt_recorder_events(k->rec);
	int ret = mt_recorder_close(k->rec, &re);
	struct stat st;

	k->rec = NULL;
	if (ret) {
		write_failed(k, -ret);
		return -1;
	}
	if (!note)
		return 0;
	if (stat(k->path, &st))
		st.st_size = 0;
	mt_err("recorded %llu events in %.3f s to %s: %lld "
	       "bytes, %.1f bytes per event, lost %llu",
	       (unsigned long long)events, end->seconds, k->path,
	       (long long)st.st_size,
	       events ? (double)st.st_size / (double)events : 0.0,
	       (unsigned long long)end->lost);
	return 0;
}

int mt_sink_close(struct mt_sink *k, const struct mt_summary_end *end)
{
	static const struct mt_summary_end none;
	int ret = 0;

	/* without an end (a failed start) a record still gets closed */
	if (k->rec) {
		ret = close_record(k, end ? end : &none, end);
	} else if (k->ses && end) {
		/* a live trace ran: what no event had is said, not fatal */
		if (k->ses->filter)
			(void)mt_filter_check_seen(k->ses->filter,
						   k->ses->sites);
		mt_view_end(k->ses, end);
	}
	if (mt_output_close(k->ses))
		ret = -1;
	k->ses = NULL;
	if (k->out != stdout && fclose(k->out) && !ret) {
		write_failed(k, errno);
		ret = -1;
	}
	k->out = stdout;
	return ret || k->failed ? -1 : 0;
}
