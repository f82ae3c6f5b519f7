// SPDX-License-Identifier: GPL-2.0
#include <stddef.h>
#include "event/cudaerr.h"

#define CUDART_MEMORY_ALLOCATION 2 /* cudaErrorMemoryAllocation */
#define CU_OUT_OF_MEMORY 2 /* CUDA_ERROR_OUT_OF_MEMORY */

struct err_name {
	int code;
	const char *name;
};

#define MT_CUDART_ERR(n, v) { v, #n },
#define MT_CU_ERR(n, v)
static const struct err_name cudart_errs[] = {
#include "event/cuda_errors.def"
};
#undef MT_CUDART_ERR
#undef MT_CU_ERR

#define MT_CUDART_ERR(n, v)
#define MT_CU_ERR(n, v) { v, #n },
static const struct err_name cu_errs[] = {
#include "event/cuda_errors.def"
};
#undef MT_CUDART_ERR
#undef MT_CU_ERR

/* nccl.h's ncclResult_t */
static const struct err_name nccl_errs[] = {
	{ 0, "ncclSuccess" },	      { 1, "ncclUnhandledCudaError" },
	{ 2, "ncclSystemError" },     { 3, "ncclInternalError" },
	{ 4, "ncclInvalidArgument" }, { 5, "ncclInvalidUsage" },
	{ 6, "ncclRemoteError" },     { 7, "ncclInProgress" },
};

static const char *lookup(const struct err_name *t, size_t n, int code)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

const char *mt_cuda_err_name(enum mt_errdomain domain, int code)
{
	switch (domain) {
	case MT_ERR_CUDART:
		return lookup(cudart_errs,
			      sizeof(cudart_errs) / sizeof(cudart_errs[0]),
			      code);
	case MT_ERR_CU:
		return lookup(cu_errs, sizeof(cu_errs) / sizeof(cu_errs[0]),
			      code);
	case MT_ERR_NCCL:
		return lookup(nccl_errs,
			      sizeof(nccl_errs) / sizeof(nccl_errs[0]), code);
	default:
		return NULL;
	}
}

bool mt_cuda_err_is_oom(enum mt_errdomain domain, int code)
{
	switch (domain) {
	case MT_ERR_CUDART:
		return code == CUDART_MEMORY_ALLOCATION;
	case MT_ERR_CU:
		return code == CU_OUT_OF_MEMORY;
	default:
		return false;
	}
}
