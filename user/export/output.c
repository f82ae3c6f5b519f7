// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "analysis/lines.h"
#include "export/output.h"

struct mt_session *mt_output_open(const struct mt_output_conf *c, FILE *out,
				  char *err, size_t errlen)
{
	struct mt_session *s = calloc(1, sizeof(*s));

	if (!s || mt_session_init(s, &c->ses, out) || mt_lines_observe(s)) {
		snprintf(err, errlen, "out of memory");
		if (s)
			mt_session_free(s);
		free(s);
		return NULL;
	}
	if (c->exp.kind && mt_export_start(s, &c->exp, err, errlen)) {
		mt_session_free(s);
		free(s);
		return NULL;
	}
	return s;
}

int mt_output_close(struct mt_session *s, char *err, size_t errlen)
{
	int ret;

	if (!s)
		return 0;
	ret = mt_export_finish(s, err, errlen);
	mt_session_free(s);
	free(s);
	return ret;
}
