// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include "export.h"

static void *open_memviz(FILE *f, const struct mt_export_conf *c, char *err,
			 size_t errlen)
{
	snprintf(err, errlen, "export memviz: not built yet");
	return NULL;
}

static void event_memviz(void *x, const struct mt_session *s,
			 const struct mt_rec *r, const struct mt_site *site)
{
}

static int close_memviz(void *x, const struct mt_session *s, char *err,
			size_t errlen)
{
	return -ENOSYS;
}

const struct mt_exporter mt_export_memviz = {
	.name = "memviz",
	.what = "not built yet",
	.open = open_memviz,
	.event = event_memviz,
	.close = close_memviz,
};
