// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "export/export.h"
#include "analysis/sample.h"
#include "analysis/session.h"
#include "lib/err.h"
#include "lib/outfile.h"

static const struct mt_exporter *const exporters[] = {
	&mt_export_memviz, &mt_export_perfetto, &mt_export_speedscope,
	&mt_export_folded, &mt_export_json,	&mt_export_svg,
};

#define NEXPORTERS (sizeof(exporters) / sizeof(exporters[0]))

/* one export under way: the session's observer context */
struct export_run {
	const struct mt_exporter *e;
	void *state;
	FILE *f;
	const char *path;
};

const struct mt_exporter *mt_exporter_find(const char *name)
{
	for (size_t i = 0; i < NEXPORTERS; i++)
		if (!strcmp(exporters[i]->name, name))
			return exporters[i];
	return NULL;
}

const char *mt_export_names(void)
{
	return "memviz, perfetto, speedscope, folded, json, svg";
}

const char *mt_export_sample_note(const struct mt_session *s, char *buf,
				  size_t len)
{
	char rate[128];

	if (!len)
		return buf;
	buf[0] = '\0';
	if (!s->conf.sample_bytes)
		return buf;
	snprintf(buf, len,
		 "%s, --sample-bytes %llu: every size, time and total exact; "
		 "an event without a stack is drawn as \"" MT_SAMPLE_NO_STACK
		 "\"",
		 mt_session_sample_rate(s, rate, sizeof(rate)),
		 (unsigned long long)s->conf.sample_bytes);
	return buf;
}

/*
 * An export that failed (a full disk, mostly) is no file a viewer can
 * load: remove it rather than leave a truncated one where the user looks.
 * Only a regular file (a device or a pipe keeps nothing), and only while
 * path still names it; what became of it is added to err.
 */
static void drop_partial(FILE *f, const char *path, char *err, size_t errlen)
{
	size_t n = strlen(err);
	struct stat mine, now;
	const char *why = NULL;

	if (fstat(fileno(f), &mine) || !S_ISREG(mine.st_mode))
		return;
	if (stat(path, &now) || now.st_dev != mine.st_dev ||
	    now.st_ino != mine.st_ino)
		why = "its path names another file now";
	else if (unlink(path))
		why = strerror(errno);
	if (n >= errlen)
		return;
	if (why)
		snprintf(err + n, errlen - n,
			 " (the partial %s not removed: %s)", path, why);
	else
		snprintf(err + n, errlen - n, " (the partial %s removed)",
			 path);
}

static void on_event(void *ctx, const struct mt_session *s,
		     const struct mt_call *r, const struct mt_site *site)
{
	struct export_run *x = ctx;

	x->e->event(x->state, s, r, site);
}

int mt_export_start(struct mt_session *s, const struct mt_export_conf *c)
{
	const struct mt_exporter *e = mt_exporter_find(c->kind);
	struct export_run *x;
	char why[512], err[512];
	FILE *f;
	int ret;

	if (!e) {
		mt_err("no export '%s' (there are: %s)", c->kind,
		       mt_export_names());
		return -EINVAL;
	}
	f = mt_create_output_file(c->path, MT_OUT_PRIVATE, why, sizeof(why));
	if (!f) {
		ret = -errno;
		mt_err("cannot write %s", why);
		return ret;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		fclose(f);
		mt_err("out of memory");
		return -ENOMEM;
	}
	*x = (struct export_run){ .e = e, .f = f, .path = c->path };
	/* a slot first: an export opened is only closed by its finish */
	ret = mt_session_observe(s, &(struct mt_session_observer){
					    .event = on_event, .ctx = x });
	if (ret)
		snprintf(err, sizeof(err),
			 "export %s: the session has no observer slot left",
			 c->kind);
	else if (!(x->state = e->open(f, c, err, sizeof(err))))
		ret = -EINVAL;
	if (ret) {
		mt_session_unobserve(s, on_event);
		drop_partial(f, c->path, err, sizeof(err));
		mt_err("%s", err);
		fclose(f);
		free(x);
	}
	return ret;
}

int mt_export_finish(struct mt_session *s)
{
	/* an export observes the session only if we put it there */
	struct export_run *x = mt_session_unobserve(s, on_event);
	char err[512];
	int ret;
	bool bad;

	if (!x)
		return 0;
	ret = x->e->close(x->state, s, err, sizeof(err));
	/* flushed here, while the file can still be removed by its path */
	bad = fflush(x->f) || ferror(x->f);
	if (bad && !ret) {
		ret = errno ? -errno : -EIO;
		snprintf(err, sizeof(err), "write %s: %s", x->path,
			 strerror(-ret));
	}
	if (ret)
		drop_partial(x->f, x->path, err, sizeof(err));
	if (fclose(x->f) && !ret) {
		ret = errno ? -errno : -EIO;
		snprintf(err, sizeof(err), "write %s: %s", x->path,
			 strerror(-ret));
	}
	if (ret)
		mt_err("export: %s", err);
	free(x);
	return ret;
}
