/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The end of a session as '#' key=value lines (--keys; docs/OUTPUT.md),
 * the stable machine format: the summary and every analysis, one key line
 * each, on s->out.
 */
#ifndef __KEYS_H
#define __KEYS_H

#include "analysis/session.h"

void mt_keys_print(struct mt_session *s, const struct mt_summary_end *end);

#endif /* __KEYS_H */
