// SPDX-License-Identifier: GPL-2.0
#include "analysis/keys.h"
#include "analysis/report.h"
#include "analysis/view.h"

void mt_view_end(struct mt_session *s, const struct mt_summary_end *end)
{
	mt_session_end(s);
	if (s->conf.keys)
		mt_keys_print(s, end);
	else
		mt_report_print(s, end);
}

void mt_view_now(const struct mt_session *s)
{
	mt_peak_print_now(s->live, s->t0, s->last_ts, s->conf.top_live,
			  !s->conf.no_stack, s->out);
}
