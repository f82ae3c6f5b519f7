/* SPDX-License-Identifier: GPL-2.0 */
/* What must hold before anything is loaded: privileges, kernel support. */
#ifndef __PREFLIGHT_H
#define __PREFLIGHT_H

#include <stddef.h>

/* 0 when tracing can work here; else -errno and a one-line way out. */
int mt_preflight(char *err, size_t errlen);

#endif /* __PREFLIGHT_H */
