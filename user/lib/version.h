/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tool's version. In lib/, the lowest layer, because the exports
 * (perfetto, speedscope) and the record header write it into their files,
 * not only the command line's --version.
 */
#ifndef __VERSION_H
#define __VERSION_H

#define MT_VERSION "0.1.0"

#endif /* __VERSION_H */
