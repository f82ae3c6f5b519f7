/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __CUDAERR_H
#define __CUDAERR_H

#include <stdbool.h>
#include "event/kinds.h"

/* The name of a CUDA runtime or driver error code, or NULL if unknown. */
const char *mt_cuda_err_name(enum mt_errdomain domain, int code);

/*
 * Whether a call of domain that returned code ran out of memory:
 * cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY. Any other failure
 * (no driver, a bad argument, an NCCL error that does not say why) is a
 * failed call, not an OOM.
 */
bool mt_cuda_err_is_oom(enum mt_errdomain domain, int code);

#endif /* __CUDAERR_H */
