/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The end of a session in the view its configuration asks for: the report
 * for people (analysis/report.h), or with conf.keys the '#' key=value
 * lines. The session counts and the views print; the choice is made here,
 * so that the session never calls the report that reads it.
 */
#ifndef __VIEW_H
#define __VIEW_H

#include "analysis/session.h"

/* the session ended (mt_session_end), then its view printed on s->out */
void mt_view_end(struct mt_session *s, const struct mt_summary_end *end);

/* report --at: what lives now, as the peak view shows it */
void mt_view_now(const struct mt_session *s);

#endif /* __VIEW_H */
