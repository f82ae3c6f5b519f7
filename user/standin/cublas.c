/*
 * cublas.c - libcublas.so.12 of the CUDA stand-in (see standin.h).
 *
 * Every symbol libtorch_cuda imports from cuBLAS, and those libcusolver
 * imports (torch.linalg loads it), in the version node "libcublas.so.12"
 * their references name.  A handle keeps what it is given (stream,
 * workspace, modes) and hands it back; the computations succeed and
 * compute nothing, as kernels do not run on the stand-in.  The batched
 * factorisations also report success through their host info argument.
 *
 * A handle takes device memory of its own, from the driver, outside
 * PyTorch's caching allocator, as real cuBLAS does: on an H200, cuBLAS 13
 * called cuMemAlloc_v2 for 1024 and 131072 bytes and a 64 MiB workspace
 * per handle (PyTorch makes one a thread, at its first matmul there).
 * So free memory is no multiple of 2 MiB, and the driver holds ranges
 * that are no segment of PyTorch's.  The workspace here is 2 MiB, the
 * size of a small segment of the caching allocator, not 64 MiB: a dry run
 * of a small device (64 MiB) must still fail where PyTorch's own
 * allocator runs out.  The calls are the driver's public entry points,
 * which memtrace-bpf probes, as cuBLAS's are on a GPU.
 */
#include <stdlib.h>

#include "standin.h"

typedef unsigned long long CUdeviceptr;

/* the stand-in driver's (libcuda.so.1), 0 on success */
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t size);
int cuMemFree_v2(CUdeviceptr dptr);

static const size_t own_sizes[] = { 1024, 131072, 2 << 20 };
#define N_OWN (sizeof(own_sizes) / sizeof(own_sizes[0]))

typedef int cublasStatus_t;

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_STATUS_NOT_INITIALIZED 1
#define CUBLAS_STATUS_ALLOC_FAILED 3
#define CUBLAS_STATUS_INVALID_VALUE 7

struct handle {
	void *stream;
	void *workspace;
	size_t workspace_size;
	int math_mode;
	int pointer_mode;
	int atomics_mode;
	CUdeviceptr own[N_OWN]; /* its device memory, 0 where none */
};

typedef struct handle *cublasHandle_t;

/* Gives back the handle's own device memory and the handle. */
static void release(cublasHandle_t h)
{
	size_t i;

	for (i = 0; i < N_OWN; i++)
		if (h->own[i])
			cuMemFree_v2(h->own[i]);
	free(h);
}

MT_API cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
	size_t i;

	if (!h)
		return CUBLAS_STATUS_INVALID_VALUE;
	*h = calloc(1, sizeof(**h));
	if (!*h)
		return CUBLAS_STATUS_ALLOC_FAILED;
	for (i = 0; i < N_OWN; i++) {
		if (cuMemAlloc_v2(&(*h)->own[i], own_sizes[i]) != 0) {
			(*h)->own[i] = 0;
			release(*h);
			*h = NULL;
			return CUBLAS_STATUS_ALLOC_FAILED;
		}
	}
	return CUBLAS_STATUS_SUCCESS;
}

MT_API cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	release(h);
	return CUBLAS_STATUS_SUCCESS;
}

MT_API cublasStatus_t cublasSetStream_v2(cublasHandle_t h, void *stream)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->stream = stream;
	return CUBLAS_STATUS_SUCCESS;
}

MT_API cublasStatus_t cublasGetStream_v2(cublasHandle_t h, void **stream)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!stream)
		return CUBLAS_STATUS_INVALID_VALUE;
	*stream = h->stream;
	return CUBLAS_STATUS_SUCCESS;
}

MT_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *workspace,
					    size_t size)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (size && !workspace)
		return CUBLAS_STATUS_INVALID_VALUE;
	h->workspace = workspace;
	h->workspace_size = size;
	return CUBLAS_STATUS_SUCCESS;
}

/* The modes are stored as given: each getter hands back its setter's. */
#define MODE(field, set, get)                                  \
	MT_API cublasStatus_t set(cublasHandle_t h, int mode)  \
	{                                                      \
		if (!h)                                        \
			return CUBLAS_STATUS_NOT_INITIALIZED;  \
		h->field = mode;                               \
		return CUBLAS_STATUS_SUCCESS;                  \
	}                                                      \
	MT_API cublasStatus_t get(cublasHandle_t h, int *mode) \
	{                                                      \
		if (!h)                                        \
			return CUBLAS_STATUS_NOT_INITIALIZED;  \
		if (!mode)                                     \
			return CUBLAS_STATUS_INVALID_VALUE;    \
		*mode = h->field;                              \
		return CUBLAS_STATUS_SUCCESS;                  \
	}

MODE(math_mode, cublasSetMathMode, cublasGetMathMode)
MODE(pointer_mode, cublasSetPointerMode_v2, cublasGetPointerMode_v2)
MODE(atomics_mode, cublasSetAtomicsMode, cublasGetAtomicsMode)

/*
 * The factorisations that report through a host int: the real parameter
 * lists, as the info pointer comes after the six register arguments.
 */
#define GELS_BATCHED(name)                                                    \
	MT_API cublasStatus_t name(cublasHandle_t h, int trans, int m, int n, \
				   int nrhs, void *a, int lda, void *c,       \
				   int ldc, int *info, int *dev_info,         \
				   int batch)                                 \
	{                                                                     \
		(void)trans, (void)m, (void)n, (void)nrhs, (void)a;           \
		(void)lda, (void)c, (void)ldc, (void)dev_info, (void)batch;   \
		if (!h)                                                       \
			return CUBLAS_STATUS_NOT_INITIALIZED;                 \
		if (!info)                                                    \
			return CUBLAS_STATUS_INVALID_VALUE;                   \
		*info = 0;                                                    \
		return CUBLAS_STATUS_SUCCESS;                                 \
	}

#define GETRS_BATCHED(name)                                            \
	MT_API cublasStatus_t name(cublasHandle_t h, int trans, int n, \
				   int nrhs, const void *a, int lda,   \
				   const int *ipiv, void *b, int ldb,  \
				   int *info, int batch)               \
	{                                                              \
		(void)trans, (void)n, (void)nrhs, (void)a, (void)lda;  \
		(void)ipiv, (void)b, (void)ldb, (void)batch;           \
		if (!h)                                                \
			return CUBLAS_STATUS_NOT_INITIALIZED;          \
		if (!info)                                             \
			return CUBLAS_STATUS_INVALID_VALUE;            \
		*info = 0;                                             \
		return CUBLAS_STATUS_SUCCESS;                          \
	}

#define GEQRF_BATCHED(name)                                                  \
	MT_API cublasStatus_t name(cublasHandle_t h, int m, int n, void *a,  \
				   int lda, void *tau, int *info, int batch) \
	{                                                                    \
		(void)m, (void)n, (void)a, (void)lda, (void)tau;             \
		(void)batch;                                                 \
		if (!h)                                                      \
			return CUBLAS_STATUS_NOT_INITIALIZED;                \
		if (!info)                                                   \
			return CUBLAS_STATUS_INVALID_VALUE;                  \
		*info = 0;                                                   \
		return CUBLAS_STATUS_SUCCESS;                                \
	}

GELS_BATCHED(cublasSgelsBatched)
GELS_BATCHED(cublasDgelsBatched)
GELS_BATCHED(cublasCgelsBatched)
GELS_BATCHED(cublasZgelsBatched)
GETRS_BATCHED(cublasSgetrsBatched)
GETRS_BATCHED(cublasDgetrsBatched)
GETRS_BATCHED(cublasCgetrsBatched)
GETRS_BATCHED(cublasZgetrsBatched)
GEQRF_BATCHED(cublasSgeqrfBatched)
GEQRF_BATCHED(cublasDgeqrfBatched)
GEQRF_BATCHED(cublasCgeqrfBatched)
GEQRF_BATCHED(cublasZgeqrfBatched)

/* The rest compute nothing and succeed. */
MT_STUB(cublasStatus_t, cublasCaxpy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCcopy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCdgmm, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCdotc_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCdotu_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgeam_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgemmStridedBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgemm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgemm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgemv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgemv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgerc_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgeru_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCgetrfBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasChemm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasChemv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCher2k_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCherk_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCscal_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCsrot_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCsscal_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCswap_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCsyrkx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCtrmm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCtrmv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCtrsmBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCtrsm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasCtrsm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDaxpy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDcopy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDdgmm, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDdot_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgeam_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgemmStridedBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgemm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgemm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgemv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgemv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDger_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDger_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDgetrfBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDnrm2_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDotEx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDrot_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDscal_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDscal_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDswap_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDsymm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDsymv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDsyr2k_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDsyrk_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDsyrkx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDtrmm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDtrmv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDtrsmBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDtrsm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDtrsm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDtrsv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasDznrm2_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasGemmEx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasGemmStridedBatchedEx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasIcamax_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasIdamax_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasIsamax_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasIzamax_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSaxpy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasScnrm2_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasScopy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSdgmm, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSdot_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSetMatrixAsync, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgeam_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgemmEx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgemmStridedBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgemm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgemm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgemv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgemv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSger_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSgetrfBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSnrm2_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSrot_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSscal_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSswap_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSsymm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSsymv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSsyr2k_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSsyrk_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasSsyrkx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasStrmm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasStrmv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasStrsmBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasStrsm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasStrsm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZaxpy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZcopy_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZdgmm, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZdotc_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZdotu_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZdrot_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZdscal_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgeam_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgemmStridedBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgemm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgemm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgemv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgemv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgerc_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgeru_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZgetrfBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZhemm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZhemv_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZher2k_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZherk_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZscal_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZswap_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZsyrkx, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZtrmm_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZtrmv_v2_64, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZtrsmBatched, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZtrsm_v2, CUBLAS_STATUS_SUCCESS)
MT_STUB(cublasStatus_t, cublasZtrsm_v2_64, CUBLAS_STATUS_SUCCESS)
