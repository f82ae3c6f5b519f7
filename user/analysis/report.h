/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The report for people, printed at the end of a trace and by report:
 * a headline (the peak of each device with when, in which step and phase,
 * and the module and line that held most of it; the leak verdict; OOMs;
 * what could not be seen), then aligned tables in human units with a
 * percentage column, largest first: the module tree, the phases and the
 * lines alive at each peak, the top call sites, what was still alive when
 * the trace ended and the leak suspects. It reads what the analyses kept;
 * the '#' key=value lines (--keys) stay the machine format.
 */
#ifndef __REPORT_H
#define __REPORT_H

#include "analysis/session.h"

/* the report of session s on s->out */
void mt_report_print(struct mt_session *s, const struct mt_summary_end *end);

/*
 * --at: the report's tables of what was alive at one moment, at_secs after
 * the first event (the session read up to then), or at each account's
 * peak: per account, the module tree, the phases and the lines.
 */
void mt_report_print_at(struct mt_session *s, bool at_peak, double at_secs);

#endif /* __REPORT_H */
