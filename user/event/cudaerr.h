/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __CUDAERR_H
#define __CUDAERR_H

#include "event/kinds.h"

/* The name of a CUDA runtime or driver error code, or NULL if unknown. */
const char *mt_cuda_err_name(enum mt_errdomain domain, int code);

#endif /* __CUDAERR_H */
