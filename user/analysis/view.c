// SPDX-License-Identifier: GPL-2.0
#include "analysis/report.h"
#include "analysis/view.h"

void mt_view_end(struct mt_session *s, const struct mt_summary_end *end)
{
	mt_session_end(s);
	if (s->conf.keys)
		mt_session_print_keys(s, end);
	else
		mt_report_print(s, end);
}
