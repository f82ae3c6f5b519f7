// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include "export/export.h"
#include "cli/options.h"
#include "analysis/session.h"

static const struct mt_exporter *const exporters[] = {
	&mt_export_memviz, &mt_export_perfetto, &mt_export_speedscope,
	&mt_export_folded, &mt_export_json,	&mt_export_svg,
};

#define NEXPORTERS (sizeof(exporters) / sizeof(exporters[0]))

const struct mt_exporter *mt_exporter_find(const char *name)
{
	for (size_t i = 0; i < NEXPORTERS; i++)
		if (!strcmp(exporters[i]->name, name))
			return exporters[i];
	return NULL;
}

bool mt_export_conf_from(struct mt_export_conf *c, const struct mt_options *o)
{
	*c = (struct mt_export_conf){ .kind = o->export_kind,
				      .path = o->output,
				      .at_peak = o->at_peak,
				      .folded_prefix = o->folded_prefix };
	return o->export_kind != NULL;
}

const char *mt_export_names(void)
{
	return "memviz, perfetto, speedscope, folded, json, svg";
}

int mt_export_start(struct mt_session *s, const struct mt_export_conf *c,
		    char *err, size_t errlen)
{
	const struct mt_exporter *e = mt_exporter_find(c->kind);
	FILE *f;

	if (!e) {
		snprintf(err, errlen, "no export '%s' (there are: %s)", c->kind,
			 mt_export_names());
		return -EINVAL;
	}
	f = fopen(c->path, "we");
	if (!f) {
		int ret = -errno;

		snprintf(err, errlen, "cannot write %s: %s", c->path,
			 strerror(errno));
		return ret;
	}
	s->exp_state = e->open(f, c, err, errlen);
	if (!s->exp_state) {
		fclose(f);
		return -EINVAL;
	}
	s->exp = e;
	s->exp_file = f;
	s->exp_path = c->path;
	return 0;
}

int mt_export_finish(struct mt_session *s, char *err, size_t errlen)
{
	int ret;
	bool bad;

	if (!s->exp)
		return 0;
	ret = s->exp->close(s->exp_state, s, err, errlen);
	s->exp = NULL;
	bad = ferror(s->exp_file);
	if ((fclose(s->exp_file) || bad) && !ret) {
		ret = errno ? -errno : -EIO;
		snprintf(err, errlen, "write %s: %s", s->exp_path,
			 strerror(-ret));
	}
	return ret;
}
