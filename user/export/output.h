/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A session and the export that observes it, made and ended in one place
 * for the live trace's sinks and for report and script. It lives in
 * export/, the lowest layer that sees both the session (analysis/) and
 * the exporters. --watch and --metrics stay with the live run loop: they
 * read all of a trace's sessions at once and exist only while tracing.
 */
#ifndef __OUTPUT_H
#define __OUTPUT_H

#include <stdio.h>
#include "analysis/session.h"
#include "export/export.h"

struct mt_output_conf {
	struct mt_session_conf ses;
	struct mt_export_conf exp; /* exp.kind NULL: no export */
};

/*
 * A session of c->ses printing into out, its export started. NULL after
 * mt_err() on failure; what was made is freed.
 */
struct mt_session *mt_output_open(const struct mt_output_conf *c, FILE *out);

/*
 * Finish s's export and free s (NULL: nothing to do). 0, or -errno after
 * mt_err() when the export could not be written; s is freed anyway.
 */
int mt_output_close(struct mt_session *s);

#endif /* __OUTPUT_H */
