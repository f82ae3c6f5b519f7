// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "analysis/lines.h"
#include "export/output.h"
#include "lib/err.h"

struct mt_session *mt_output_open(const struct mt_output_conf *c, FILE *out)
{
	struct mt_session *s = calloc(1, sizeof(*s));

	if (!s || mt_session_init(s, &c->ses, out) || mt_lines_observe(s)) {
		mt_err("out of memory");
		if (s)
			mt_session_free(s);
		free(s);
		return NULL;
	}
	if (c->exp.kind && mt_export_start(s, &c->exp)) {
		mt_session_free(s);
		free(s);
		return NULL;
	}
	return s;
}

int mt_output_close(struct mt_session *s)
{
	int ret;

	if (!s)
		return 0;
	ret = mt_export_finish(s);
	mt_session_free(s);
	free(s);
	return ret;
}
