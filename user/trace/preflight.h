/* SPDX-License-Identifier: GPL-2.0 */
/* What must hold before anything is loaded: privileges, kernel support. */
#ifndef __PREFLIGHT_H
#define __PREFLIGHT_H

/* 0 when tracing can work here; else -errno after mt_err() with the way out */
int mt_preflight(void);

#endif /* __PREFLIGHT_H */
