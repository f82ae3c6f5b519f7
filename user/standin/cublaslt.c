/*
 * cublaslt.c - libcublasLt.so.12 of the CUDA stand-in (see standin.h).
 *
 * What libtorch_cuda and libcusolver import from cuBLASLt, in the version
 * node "libcublasLt.so.12".  PyTorch passes its cuBLAS handle as the Lt
 * handle, so handles are not looked into.  Descriptors, layouts and
 * preferences are small heap objects that accept any attribute; the
 * heuristic offers one algorithm that needs no workspace, and matmuls
 * succeed and compute nothing, as kernels do not run on the stand-in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

typedef int cublasStatus_t;

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_STATUS_NOT_INITIALIZED 1
#define CUBLAS_STATUS_ALLOC_FAILED 3
#define CUBLAS_STATUS_INVALID_VALUE 7

typedef struct {
	uint64_t data[8];
} cublasLtMatmulAlgo_t;

typedef struct {
	cublasLtMatmulAlgo_t algo;
	size_t workspaceSize;
	cublasStatus_t state;
	float wavesCount;
	int reserved[4];
} cublasLtMatmulHeuristicResult_t;

_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96,
	       "cublasLtMatmulHeuristicResult_t");

/* What an object is, so that a destroy of the wrong kind is refused. */
enum kind { HANDLE = 1, DESC, LAYOUT, PREF };

struct obj {
	enum kind kind;
};

static cublasStatus_t create(struct obj **out, enum kind kind)
{
	if (!out)
		return CUBLAS_STATUS_INVALID_VALUE;
	*out = malloc(sizeof(**out));
	if (!*out)
		return CUBLAS_STATUS_ALLOC_FAILED;
	(*out)->kind = kind;
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t destroy(struct obj *o, enum kind kind)
{
	if (o && o->kind != kind)
		return CUBLAS_STATUS_INVALID_VALUE;
	free(o);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t set_attr(const struct obj *o, enum kind kind,
			       const void *buf, size_t size)
{
	if (!o || o->kind != kind || (size && !buf))
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

MT_API cublasStatus_t cublasLtCreate(struct obj **h)
{
	return create(h, HANDLE);
}

MT_API cublasStatus_t cublasLtDestroy(struct obj *h)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	return destroy(h, HANDLE);
}

MT_API cublasStatus_t cublasLtMatmulDescCreate(struct obj **desc,
					       int compute_type, int scale_type)
{
	(void)compute_type;
	(void)scale_type;
	return create(desc, DESC);
}

MT_API cublasStatus_t cublasLtMatmulDescDestroy(struct obj *desc)
{
	return destroy(desc, DESC);
}

MT_API cublasStatus_t cublasLtMatmulDescSetAttribute(struct obj *desc, int attr,
						     const void *buf,
						     size_t size)
{
	(void)attr;
	return set_attr(desc, DESC, buf, size);
}

MT_API cublasStatus_t cublasLtMatrixLayoutCreate(struct obj **layout, int type,
						 uint64_t rows, uint64_t cols,
						 int64_t ld)
{
	(void)type;
	(void)rows;
	(void)cols;
	(void)ld;
	return create(layout, LAYOUT);
}

MT_API cublasStatus_t cublasLtMatrixLayoutDestroy(struct obj *layout)
{
	return destroy(layout, LAYOUT);
}

MT_API cublasStatus_t cublasLtMatrixLayoutSetAttribute(struct obj *layout,
						       int attr,
						       const void *buf,
						       size_t size)
{
	(void)attr;
	return set_attr(layout, LAYOUT, buf, size);
}

MT_API cublasStatus_t cublasLtMatmulPreferenceCreate(struct obj **pref)
{
	return create(pref, PREF);
}

MT_API cublasStatus_t cublasLtMatmulPreferenceDestroy(struct obj *pref)
{
	return destroy(pref, PREF);
}

MT_API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(struct obj *pref,
							   int attr,
							   const void *buf,
							   size_t size)
{
	(void)attr;
	return set_attr(pref, PREF, buf, size);
}

MT_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
	void *h, const struct obj *desc, const struct obj *a,
	const struct obj *b, const struct obj *c, const struct obj *d,
	const struct obj *pref, int requested,
	cublasLtMatmulHeuristicResult_t *results, int *returned)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!desc || !a || !b || !c || !d || !pref || requested < 1 ||
	    !results || !returned)
		return CUBLAS_STATUS_INVALID_VALUE;
	memset(results, 0, sizeof(*results));
	results[0].state = CUBLAS_STATUS_SUCCESS;
	results[0].wavesCount = 1.0f;
	*returned = 1;
	return CUBLAS_STATUS_SUCCESS;
}

MT_STUB(cublasStatus_t, cublasLtMatmul, CUBLAS_STATUS_SUCCESS)
