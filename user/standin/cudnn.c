/*
 * cudnn.c - libcudnn.so.9 of the CUDA stand-in (see standin.h).
 *
 * libtorch_cuda and libtorch_python link cuDNN 9 (the symbols below, in
 * the version node "libcudnn.so.9"), and PyTorch 2.6 calls it for every
 * convolution, batch norm, RNN/LSTM/GRU, CTC loss, and cuDNN's grid
 * sampler and affine grid.  The stand-in accepts all of it and computes
 * nothing: kernels never run on the stand-in anyway.  What it must get
 * right is what PyTorch allocates because of cuDNN's answers: workspaces,
 * reserve spaces, RNN weight buffers and dropout states, whose sizes come
 * from cudnn_model.h, and the RNN weight layout, which PyTorch checks.
 *
 * Two APIs:
 *  - the legacy one (tensor, filter, convolution, RNN, ... descriptors;
 *    cudnnGet*Algorithm_v7, cudnnFind*AlgorithmEx, cudnnConvolution*):
 *    descriptors are one heap struct that keeps what it was set to;
 *  - the backend ("graph") API, which PyTorch's default convolution path
 *    (Conv_v8.cpp) drives through cudnn_frontend's v0.x classes: every
 *    descriptor is a heap object that keeps the attributes it was given
 *    and answers them back; the derived ones (heuristics' results, an
 *    engine config's engine, knobs, notes, a plan's workspace and JSON)
 *    are computed from the operation graph when it is finalized.
 * Every list is bounded: a descriptor keeps at most MAX_ATTRS attributes
 * of at most MAX_ATTR_BYTES each, and asks beyond that are BAD_PARAM.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the model is the dry run's to state: it lives beside it */
#include "../dryrun/cudnn_model.h"
#include "standin.h"

typedef int cudnnStatus_t;

#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_NOT_INITIALIZED 1001
#define CUDNN_STATUS_BAD_PARAM 2000
#define CUDNN_STATUS_BAD_PARAM_NULL_POINTER 2002
#define CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED 2004
#define CUDNN_STATUS_NOT_SUPPORTED 3000
#define CUDNN_STATUS_ALLOC_FAILED 4000

/* libraryPropertyType */
#define MAJOR_VERSION 0
#define MINOR_VERSION 1
#define PATCH_LEVEL 2

#define VERSION_MAJOR 9
#define VERSION_MINOR 0
#define VERSION_PATCH 0

/* cudnnDataType_t */
#define DATA_FLOAT 0
#define DATA_DOUBLE 1
#define DATA_HALF 2
#define DATA_INT8 3
#define DATA_INT32 4
#define DATA_UINT8 6
#define DATA_BFLOAT16 9
#define DATA_INT64 10
#define DATA_BOOLEAN 11

/* bytes of an element of a cudnnDataType_t; 4 for what is not listed */
static uint64_t data_size(int type)
{
	switch (type) {
	case DATA_DOUBLE:
	case DATA_INT64:
		return 8;
	case DATA_HALF:
	case DATA_BFLOAT16:
		return 2;
	case DATA_INT8:
	case DATA_UINT8:
	case DATA_BOOLEAN:
		return 1;
	default:
		return 4;
	}
}

MT_API size_t cudnnGetVersion(void)
{
	return VERSION_MAJOR * 10000 + VERSION_MINOR * 100 + VERSION_PATCH;
}

MT_API size_t cudnnGetCudartVersion(void)
{
	return MT_CUDA_VERSION;
}

MT_API cudnnStatus_t cudnnGetProperty(int type, int *value)
{
	if (!value)
		return CUDNN_STATUS_BAD_PARAM;
	if (type == MAJOR_VERSION)
		*value = VERSION_MAJOR;
	else if (type == MINOR_VERSION)
		*value = VERSION_MINOR;
	else if (type == PATCH_LEVEL)
		*value = VERSION_PATCH;
	else
		return CUDNN_STATUS_BAD_PARAM;
	return CUDNN_STATUS_SUCCESS;
}

MT_API const char *cudnnGetErrorString(cudnnStatus_t status)
{
	switch (status) {
	case CUDNN_STATUS_SUCCESS:
		return "CUDNN_STATUS_SUCCESS";
	case CUDNN_STATUS_NOT_INITIALIZED:
		return "CUDNN_STATUS_NOT_INITIALIZED";
	case CUDNN_STATUS_BAD_PARAM:
		return "CUDNN_STATUS_BAD_PARAM";
	case CUDNN_STATUS_BAD_PARAM_NULL_POINTER:
		return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
	case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED:
		return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
	case CUDNN_STATUS_NOT_SUPPORTED:
		return "CUDNN_STATUS_NOT_SUPPORTED";
	case CUDNN_STATUS_ALLOC_FAILED:
		return "CUDNN_STATUS_ALLOC_FAILED";
	default:
		return "CUDNN_UNKNOWN_STATUS_FOUND";
	}
}

/* the last failure's reason, for cudnnGetLastErrorString */
static _Thread_local const char *last_error = "";

static cudnnStatus_t fail(cudnnStatus_t status, const char *why)
{
	last_error = why;
	return status;
}

MT_API void cudnnGetLastErrorString(char *message, size_t max_size)
{
	if (message && max_size)
		snprintf(message, max_size, "%s: %s", MT_DEVICE_NAME,
			 last_error);
	last_error = "";
}

/* ---- the handle ------------------------------------------------------ */

#define HANDLE_MAGIC 0x68646e6eu /* "nndh" */

struct handle {
	unsigned int magic;
	void *stream;
};

MT_API cudnnStatus_t cudnnCreate(struct handle **out)
{
	struct handle *h;

	if (!out)
		return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUDNN_STATUS_ALLOC_FAILED;
	h->magic = HANDLE_MAGIC;
	*out = h;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnDestroy(struct handle *h)
{
	if (!h || h->magic != HANDLE_MAGIC)
		return CUDNN_STATUS_BAD_PARAM;
	h->magic = 0;
	free(h);
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetStream(struct handle *h, void *stream)
{
	if (!h || h->magic != HANDLE_MAGIC)
		return CUDNN_STATUS_BAD_PARAM;
	h->stream = stream;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnGetStream(struct handle *h, void **stream)
{
	if (!h || h->magic != HANDLE_MAGIC || !stream)
		return CUDNN_STATUS_BAD_PARAM;
	*stream = h->stream;
	return CUDNN_STATUS_SUCCESS;
}

/* ---- legacy descriptors ---------------------------------------------- */

#define LEGACY_MAGIC 0x6c646e6eu /* "nndl" */
/* CUDNN_DIM_MAX: the most dimensions a legacy tensor has */
#define MAX_DIMS 8

enum legacy_kind {
	L_TENSOR,
	L_FILTER,
	L_CONV,
	L_ACTIVATION,
	L_POOLING,
	L_DROPOUT,
	L_RNN,
	L_RNN_DATA,
	L_CTC,
	L_SPATIAL_TF,
};

/*
 * One struct for every legacy descriptor: each kind reads its own
 * fields.  The descriptors are small and few (PyTorch caches them).
 */
struct legacy {
	unsigned int magic;
	enum legacy_kind kind;
	int dtype;
	int nb_dims;
	int dims[MAX_DIMS];
	int strides[MAX_DIMS];
	/* convolution */
	int groups;
	/* RNN */
	int rnn_mode, bias_mode, dir_mode, input_size, hidden, proj, layers;
	/* RNN data */
	int max_seq, batch, vector;
	/* CTC */
	int max_label;
};

static cudnnStatus_t legacy_create(struct legacy **out, enum legacy_kind kind)
{
	struct legacy *d;

	if (!out)
		return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
	d = calloc(1, sizeof(*d));
	if (!d)
		return CUDNN_STATUS_ALLOC_FAILED;
	d->magic = LEGACY_MAGIC;
	d->kind = kind;
	d->groups = 1;
	*out = d;
	return CUDNN_STATUS_SUCCESS;
}

static struct legacy *legacy_of(void *p, enum legacy_kind kind)
{
	struct legacy *d = p;

	return d && d->magic == LEGACY_MAGIC && d->kind == kind ? d : NULL;
}

static cudnnStatus_t legacy_destroy(void *p, enum legacy_kind kind)
{
	struct legacy *d = legacy_of(p, kind);

	/* cuDNN accepts destroying NULL */
	if (!p)
		return CUDNN_STATUS_SUCCESS;
	if (!d)
		return CUDNN_STATUS_BAD_PARAM;
	d->magic = 0;
	free(d);
	return CUDNN_STATUS_SUCCESS;
}

#define LEGACY(Name, kind)                                        \
	MT_API cudnnStatus_t cudnnCreate##Name(struct legacy **d) \
	{                                                         \
		return legacy_create(d, kind);                    \
	}                                                         \
	MT_API cudnnStatus_t cudnnDestroy##Name(void *d)          \
	{                                                         \
		return legacy_destroy(d, kind);                   \
	}

LEGACY(TensorDescriptor, L_TENSOR)
LEGACY(FilterDescriptor, L_FILTER)
LEGACY(ConvolutionDescriptor, L_CONV)
LEGACY(ActivationDescriptor, L_ACTIVATION)
LEGACY(PoolingDescriptor, L_POOLING)
LEGACY(DropoutDescriptor, L_DROPOUT)
LEGACY(RNNDescriptor, L_RNN)
LEGACY(RNNDataDescriptor, L_RNN_DATA)
LEGACY(CTCLossDescriptor, L_CTC)
LEGACY(SpatialTransformerDescriptor, L_SPATIAL_TF)

static cudnnStatus_t set_dims(struct legacy *d, int dtype, int nb,
			      const int *dims, const int *strides)
{
	int i;

	if (!d || nb < 0 || nb > MAX_DIMS || (nb && !dims))
		return fail(CUDNN_STATUS_BAD_PARAM, "bad tensor dimensions");
	d->dtype = dtype;
	d->nb_dims = nb;
	for (i = 0; i < nb; i++) {
		if (dims[i] <= 0)
			return fail(CUDNN_STATUS_BAD_PARAM,
				    "a dimension is not positive");
		d->dims[i] = dims[i];
		d->strides[i] = strides ? strides[i] : 0;
	}
	/* packed strides where none were given (filters) */
	if (!strides && nb) {
		d->strides[nb - 1] = 1;
		for (i = nb - 2; i >= 0; i--)
			d->strides[i] = d->strides[i + 1] * d->dims[i + 1];
	}
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetTensorNdDescriptor(void *p, int dtype, int nb,
						const int *dims,
						const int *strides)
{
	if (!strides)
		return CUDNN_STATUS_BAD_PARAM;
	return set_dims(legacy_of(p, L_TENSOR), dtype, nb, dims, strides);
}

MT_API cudnnStatus_t cudnnGetTensorNdDescriptor(void *p, int requested,
						int *dtype, int *nb, int *dims,
						int *strides)
{
	struct legacy *d = legacy_of(p, L_TENSOR);
	int i;

	if (!d || !dtype || !nb || requested < 0)
		return CUDNN_STATUS_BAD_PARAM;
	*dtype = d->dtype;
	*nb = d->nb_dims;
	for (i = 0; i < d->nb_dims && i < requested; i++) {
		if (dims)
			dims[i] = d->dims[i];
		if (strides)
			strides[i] = d->strides[i];
	}
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetFilterNdDescriptor(void *p, int dtype, int format,
						int nb, const int *dims)
{
	(void)format;
	return set_dims(legacy_of(p, L_FILTER), dtype, nb, dims, NULL);
}

MT_API cudnnStatus_t cudnnGetFilterNdDescriptor(void *p, int requested,
						int *dtype, int *format,
						int *nb, int *dims)
{
	struct legacy *d = legacy_of(p, L_FILTER);
	int i;

	if (!d || !dtype || !format || !nb || requested < 0)
		return CUDNN_STATUS_BAD_PARAM;
	*dtype = d->dtype;
	*format = 0; /* CUDNN_TENSOR_NCHW */
	*nb = d->nb_dims;
	for (i = 0; i < d->nb_dims && i < requested && dims; i++)
		dims[i] = d->dims[i];
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetConvolutionNdDescriptor(void *p, int len,
						     const int *pad,
						     const int *stride,
						     const int *dilation,
						     int mode, int dtype)
{
	struct legacy *d = legacy_of(p, L_CONV);

	(void)mode;
	if (!d || len <= 0 || len > MAX_DIMS || !pad || !stride || !dilation)
		return CUDNN_STATUS_BAD_PARAM;
	d->dtype = dtype;
	d->nb_dims = len;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetConvolutionGroupCount(void *p, int groups)
{
	struct legacy *d = legacy_of(p, L_CONV);

	if (!d || groups <= 0)
		return CUDNN_STATUS_BAD_PARAM;
	d->groups = groups;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetConvolutionMathType(void *p, int math)
{
	(void)math;
	return legacy_of(p, L_CONV) ? CUDNN_STATUS_SUCCESS :
				      CUDNN_STATUS_BAD_PARAM;
}

MT_API cudnnStatus_t cudnnSetActivationDescriptor(void *p, int mode, int nan,
						  double coef)
{
	(void)mode;
	(void)nan;
	(void)coef;
	return legacy_of(p, L_ACTIVATION) ? CUDNN_STATUS_SUCCESS :
					    CUDNN_STATUS_BAD_PARAM;
}

MT_API cudnnStatus_t cudnnSetPooling2dDescriptor(void *p, int mode, int nan,
						 int wh, int ww, int vpad,
						 int hpad, int vstride,
						 int hstride)
{
	(void)mode;
	(void)nan;
	if (!legacy_of(p, L_POOLING) || wh <= 0 || ww <= 0 || vpad < 0 ||
	    hpad < 0 || vstride <= 0 || hstride <= 0)
		return CUDNN_STATUS_BAD_PARAM;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetSpatialTransformerNdDescriptor(void *p,
							    int sampler,
							    int dtype, int nb,
							    const int *dims)
{
	(void)sampler;
	return set_dims(legacy_of(p, L_SPATIAL_TF), dtype, nb, dims, NULL);
}

MT_API cudnnStatus_t cudnnSetCTCLossDescriptorEx(void *p, int comp, int norm,
						 int grad)
{
	struct legacy *d = legacy_of(p, L_CTC);

	(void)norm;
	(void)grad;
	if (!d)
		return CUDNN_STATUS_BAD_PARAM;
	d->dtype = comp;
	/* cuDNN's default when no maximum is set */
	d->max_label = 256;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetCTCLossDescriptor_v9(void *p, int comp, int norm,
						  int grad, int max_label)
{
	struct legacy *d = legacy_of(p, L_CTC);

	(void)norm;
	(void)grad;
	if (!d || max_label < 0)
		return CUDNN_STATUS_BAD_PARAM;
	d->dtype = comp;
	d->max_label = max_label;
	return CUDNN_STATUS_SUCCESS;
}

/* ---- dropout --------------------------------------------------------- */

MT_API cudnnStatus_t cudnnDropoutGetStatesSize(struct handle *h, size_t *size)
{
	const struct mt_standin_api *api = mt_standin_api();
	int sms = 0;

	if (!h || !size)
		return CUDNN_STATUS_BAD_PARAM;
	if (!api->attribute(MT_ATTR_MULTIPROCESSOR_COUNT, api->current(),
			    &sms) ||
	    sms <= 0)
		return fail(CUDNN_STATUS_NOT_INITIALIZED,
			    "no multiprocessor count for the device");
	*size = mt_cudnn_dropout_states((uint64_t)sms);
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetDropoutDescriptor(void *p, struct handle *h,
					       float dropout, void *states,
					       size_t size,
					       unsigned long long seed)
{
	(void)dropout;
	(void)states;
	(void)size;
	(void)seed;
	return legacy_of(p, L_DROPOUT) && h ? CUDNN_STATUS_SUCCESS :
					      CUDNN_STATUS_BAD_PARAM;
}

MT_API cudnnStatus_t cudnnRestoreDropoutDescriptor(void *p, struct handle *h,
						   float dropout, void *states,
						   size_t size,
						   unsigned long long seed)
{
	return cudnnSetDropoutDescriptor(p, h, dropout, states, size, seed);
}

/* ---- RNN (the v8 API) ------------------------------------------------ */

/* cudnnRNNMode_t, cudnnRNNBiasMode_t, cudnnDirectionMode_t */
#define RNN_LSTM 2
#define RNN_NO_BIAS 0
#define RNN_DOUBLE_BIAS 2
#define RNN_BIDIRECTIONAL 1

MT_API cudnnStatus_t cudnnSetRNNDescriptor_v8(
	void *p, int algo, int mode, int bias, int dir, int input_mode,
	int dtype, int math_prec, int math, int32_t input_size, int32_t hidden,
	int32_t proj, int32_t layers, void *dropout, uint32_t aux)
{
	struct legacy *d = legacy_of(p, L_RNN);

	(void)algo;
	(void)input_mode;
	(void)math_prec;
	(void)math;
	(void)dropout;
	(void)aux;
	if (!d || mode < 0 || mode > 3 || bias < 0 || bias > 3 || dir < 0 ||
	    dir > 1 || input_size <= 0 || hidden <= 0 || layers <= 0 ||
	    proj <= 0 || proj > hidden || (proj < hidden && mode != RNN_LSTM))
		return fail(CUDNN_STATUS_BAD_PARAM, "bad RNN descriptor");
	d->rnn_mode = mode;
	d->bias_mode = bias;
	d->dir_mode = dir;
	d->dtype = dtype;
	d->input_size = input_size;
	d->hidden = hidden;
	d->proj = proj;
	d->layers = layers;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnSetRNNDataDescriptor(void *p, int dtype, int layout,
					       int max_seq, int batch,
					       int vector, const int *lengths,
					       void *fill)
{
	struct legacy *d = legacy_of(p, L_RNN_DATA);

	(void)layout;
	(void)lengths;
	(void)fill;
	if (!d || max_seq <= 0 || batch <= 0 || vector <= 0)
		return CUDNN_STATUS_BAD_PARAM;
	d->dtype = dtype;
	d->max_seq = max_seq;
	d->batch = batch;
	d->vector = vector;
	return CUDNN_STATUS_SUCCESS;
}

/*
 * The weight space, cuDNN's canonical layout: for each pseudo-layer
 * (layer x direction, direction fastest) the input matrices of every
 * gate (hidden x input), the recurrent ones (hidden x output), the input
 * biases, the recurrent biases (hidden each, as the bias mode says), and
 * for an LSTM with projection the projection matrix (output x hidden).
 * PyTorch checks that the matrices of one kind follow one another.
 */
struct rnn_shape {
	uint64_t gates, dirs, out; /* out: hidden, or the projection */
	uint64_t in_bias, rec_bias; /* 0 or 1 */
};

static struct rnn_shape rnn_shape(const struct legacy *d)
{
	struct rnn_shape s;

	s.gates = mt_cudnn_rnn_gates(d->rnn_mode);
	s.dirs = d->dir_mode == RNN_BIDIRECTIONAL ? 2 : 1;
	s.out = (uint64_t)d->proj;
	s.in_bias = d->bias_mode == RNN_DOUBLE_BIAS || d->bias_mode == 1;
	s.rec_bias = d->bias_mode == RNN_DOUBLE_BIAS || d->bias_mode == 3;
	return s;
}

/* elements of a pseudo-layer's block, whose input is in wide */
static uint64_t rnn_block(const struct legacy *d, const struct rnn_shape *s,
			  uint64_t in)
{
	uint64_t h = (uint64_t)d->hidden;
	uint64_t n = s->gates * h * in + s->gates * h * s->out;

	n += (s->in_bias + s->rec_bias) * s->gates * h;
	if (s->out < h)
		n += s->out * h;
	return n;
}

static uint64_t rnn_input(const struct legacy *d, const struct rnn_shape *s,
			  int pseudo)
{
	return pseudo < (int)s->dirs ? (uint64_t)d->input_size :
				       s->out * s->dirs;
}

MT_API cudnnStatus_t cudnnGetRNNWeightSpaceSize(struct handle *h, void *p,
						size_t *size)
{
	struct legacy *d = legacy_of(p, L_RNN);
	struct rnn_shape s;
	uint64_t n = 0;
	int i;

	if (!h || !d || !size)
		return CUDNN_STATUS_BAD_PARAM;
	s = rnn_shape(d);
	for (i = 0; i < d->layers * (int)s.dirs; i++)
		n += rnn_block(d, &s, rnn_input(d, &s, i));
	*size = n * data_size(d->dtype);
	return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t set_vector(void *desc, int dtype, uint64_t rows,
				uint64_t cols)
{
	int dims[3] = { 1, (int)rows, (int)cols };
	int strides[3] = { (int)(rows * cols), (int)cols, 1 };

	return set_dims(legacy_of(desc, L_TENSOR), dtype, 3, dims, strides);
}

MT_API cudnnStatus_t cudnnGetRNNWeightParams(struct handle *h, void *p,
					     int32_t pseudo, size_t wsize,
					     const void *w, int32_t lin,
					     void *mdesc, void **maddr,
					     void *bdesc, void **baddr)
{
	struct legacy *d = legacy_of(p, L_RNN);
	struct rnn_shape s;
	uint64_t off = 0, hid, in, elem, g;
	int i;

	if (!h || !d || pseudo < 0)
		return CUDNN_STATUS_BAD_PARAM;
	s = rnn_shape(d);
	if (pseudo >= d->layers * (int)s.dirs || lin < 0 ||
	    (uint64_t)lin >= 2 * s.gates + (s.out < (uint64_t)d->hidden))
		return fail(CUDNN_STATUS_BAD_PARAM, "no such RNN weight");
	for (i = 0; i < pseudo; i++)
		off += rnn_block(d, &s, rnn_input(d, &s, i));
	hid = (uint64_t)d->hidden;
	in = rnn_input(d, &s, pseudo);
	elem = data_size(d->dtype);
	if (off * elem + rnn_block(d, &s, in) * elem > wsize)
		return fail(CUDNN_STATUS_BAD_PARAM, "weight space too small");
	g = (uint64_t)lin % s.gates;
	if (mdesc && maddr) {
		uint64_t m = off, rows = hid, cols;

		if ((uint64_t)lin < s.gates) {
			cols = in;
			m += g * hid * in;
		} else if ((uint64_t)lin < 2 * s.gates) {
			cols = s.out;
			m += s.gates * hid * in + g * hid * s.out;
		} else { /* the projection */
			rows = s.out;
			cols = hid;
			m += s.gates * hid * (in + s.out) +
			     (s.in_bias + s.rec_bias) * s.gates * hid;
		}
		if (set_vector(mdesc, d->dtype, rows, cols))
			return CUDNN_STATUS_BAD_PARAM;
		*maddr = (char *)w + m * elem;
	}
	if (bdesc && baddr) {
		uint64_t b = off + s.gates * hid * (in + s.out);
		bool rec = (uint64_t)lin >= s.gates;
		bool has = (uint64_t)lin < 2 * s.gates &&
			   (rec ? s.rec_bias : s.in_bias);

		if (!has) {
			/* cuDNN: no such bias, a NULL address */
			*baddr = NULL;
			return set_vector(bdesc, d->dtype, 1, 1);
		}
		b += (rec ? s.in_bias * s.gates * hid : 0) + g * hid;
		if (set_vector(bdesc, d->dtype, hid, 1))
			return CUDNN_STATUS_BAD_PARAM;
		*baddr = (char *)w + b * elem;
	}
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnGetRNNTempSpaceSizes(struct handle *h, void *p,
					       int fwd_mode, void *x,
					       size_t *ws, size_t *reserve)
{
	struct legacy *d = legacy_of(p, L_RNN);
	struct legacy *xd = legacy_of(x, L_RNN_DATA);
	struct rnn_shape s;
	uint64_t elem;

	if (!h || !d || !xd)
		return CUDNN_STATUS_BAD_PARAM;
	s = rnn_shape(d);
	elem = data_size(d->dtype);
	if (ws)
		*ws = mt_cudnn_rnn_ws(
			d->rnn_mode, s.dirs, (uint64_t)xd->max_seq,
			(uint64_t)xd->batch, (uint64_t)d->hidden, elem);
	if (reserve)
		*reserve = fwd_mode == 1 /* CUDNN_FWD_MODE_TRAINING */ ?
				   mt_cudnn_rnn_reserve(
					   d->rnn_mode, (uint64_t)d->layers,
					   s.dirs, (uint64_t)xd->max_seq,
					   (uint64_t)xd->batch,
					   (uint64_t)d->hidden, elem) :
				   0;
	return CUDNN_STATUS_SUCCESS;
}

/* ---- what computes: accepted, run never ------------------------------ */

/*
 * The compute entry points only check the handle: kernels are no-ops on
 * the stand-in, and PyTorch has checked the shapes before calling.
 */
#define ACCEPT(name)                                                           \
	MT_API cudnnStatus_t name(struct handle *h)                            \
	{                                                                      \
		return h && h->magic == HANDLE_MAGIC ? CUDNN_STATUS_SUCCESS :  \
						       CUDNN_STATUS_BAD_PARAM; \
	}

ACCEPT(cudnnRNNForward)
ACCEPT(cudnnRNNBackwardData_v8)
ACCEPT(cudnnRNNBackwardWeights_v8)
ACCEPT(cudnnBatchNormalizationForwardTrainingEx)
ACCEPT(cudnnBatchNormalizationBackwardEx)
ACCEPT(cudnnBatchNormalizationForwardInference)
ACCEPT(cudnnCTCLoss)
ACCEPT(cudnnCTCLoss_v8)
ACCEPT(cudnnConvolutionForward)
ACCEPT(cudnnConvolutionBackwardData)
ACCEPT(cudnnConvolutionBackwardFilter)
ACCEPT(cudnnConvolutionBiasActivationForward)
ACCEPT(cudnnPoolingForward)
ACCEPT(cudnnSpatialTfGridGeneratorForward)
ACCEPT(cudnnSpatialTfGridGeneratorBackward)
ACCEPT(cudnnSpatialTfSamplerForward)
ACCEPT(cudnnSpatialTfSamplerBackward)

/* ---- batch norm ------------------------------------------------------ */

MT_API cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
	struct handle *h, int mode, int ops, void *x, void *z, void *y,
	void *bn, void *act, size_t *size)
{
	(void)mode;
	(void)ops;
	(void)x;
	(void)z;
	(void)y;
	(void)bn;
	(void)act;
	if (!h || !size)
		return CUDNN_STATUS_BAD_PARAM;
	*size = 0;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
	struct handle *h, int mode, int ops, void *x, void *y, void *dy,
	void *dz, void *dx, void *dbn, void *act, size_t *size)
{
	(void)mode;
	(void)ops;
	(void)x;
	(void)y;
	(void)dy;
	(void)dz;
	(void)dx;
	(void)dbn;
	(void)act;
	if (!h || !size)
		return CUDNN_STATUS_BAD_PARAM;
	*size = 0;
	return CUDNN_STATUS_SUCCESS;
}

/* elements of a legacy tensor */
static uint64_t numel(const struct legacy *d)
{
	uint64_t n = 1;
	int i;

	for (i = 0; i < d->nb_dims; i++)
		n *= (uint64_t)d->dims[i];
	return n;
}

MT_API cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
	struct handle *h, int mode, int ops, void *act, void *x, size_t *size)
{
	struct legacy *xd = legacy_of(x, L_TENSOR);

	(void)mode;
	(void)act;
	if (!h || !size || !xd)
		return CUDNN_STATUS_BAD_PARAM;
	/* CUDNN_BATCHNORM_OPS_BN: nothing; with activation, its mask */
	*size = ops == 0 ? 0 : (numel(xd) + 31) / 32 * 4;
	return CUDNN_STATUS_SUCCESS;
}

/* ---- CTC ------------------------------------------------------------- */

static cudnnStatus_t ctc_ws(void *ctc, void *probs, size_t *size)
{
	struct legacy *c = legacy_of(ctc, L_CTC);
	struct legacy *p = legacy_of(probs, L_TENSOR);

	if (!c || !p || p->nb_dims < 2 || !size)
		return CUDNN_STATUS_BAD_PARAM;
	*size = mt_cudnn_ctc_ws((uint64_t)p->dims[0], (uint64_t)p->dims[1],
				(uint64_t)c->max_label);
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnGetCTCLossWorkspaceSize(
	struct handle *h, void *probs, void *grads, const int *labels,
	const int *label_lengths, const int *input_lengths, int algo, void *ctc,
	size_t *size)
{
	(void)grads;
	(void)labels;
	(void)label_lengths;
	(void)input_lengths;
	(void)algo;
	if (!h)
		return CUDNN_STATUS_BAD_PARAM;
	return ctc_ws(ctc, probs, size);
}

MT_API cudnnStatus_t cudnnGetCTCLossWorkspaceSize_v8(struct handle *h, int algo,
						     void *ctc, void *probs,
						     void *grads, size_t *size)
{
	(void)algo;
	(void)grads;
	if (!h)
		return CUDNN_STATUS_BAD_PARAM;
	return ctc_ws(ctc, probs, size);
}

/* ---- convolutions, the v7 API ---------------------------------------- */

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: one layout */
struct algo_perf {
	int algo;
	cudnnStatus_t status;
	float time;
	size_t memory;
	int determinism;
	int math_type;
	int reserved[3];
};

/* the model's workspace for x (N, C, ...), w (K, C/g, ...), y (N, K, ...) */
static uint64_t conv_ws(const int *xdims, int xnb, const int *wdims, int wnb,
			const int *ydims, int ynb, int wtype)
{
	uint64_t kvol = 1, opos = 1, ipos = 1;
	int i;

	if (wnb < 3 || xnb != wnb || ynb != wnb)
		return 0;
	for (i = 2; i < wnb; i++) {
		kvol *= (uint64_t)wdims[i];
		ipos *= (uint64_t)xdims[i];
		opos *= (uint64_t)ydims[i];
	}
	return mt_cudnn_conv_ws((uint64_t)wdims[1], kvol, opos, ipos,
				data_size(wtype));
}

static cudnnStatus_t legacy_conv_ws(void *x, void *w, void *y, uint64_t *ws)
{
	struct legacy *xd = legacy_of(x, L_TENSOR);
	struct legacy *wd = legacy_of(w, L_FILTER);
	struct legacy *yd = legacy_of(y, L_TENSOR);

	if (!xd || !wd || !yd)
		return fail(CUDNN_STATUS_BAD_PARAM, "bad convolution operands");
	*ws = conv_ws(xd->dims, xd->nb_dims, wd->dims, wd->nb_dims, yd->dims,
		      yd->nb_dims, wd->dtype);
	return CUDNN_STATUS_SUCCESS;
}

/*
 * The algorithms offered, best first: algorithm 1 (IMPLICIT_PRECOMP_GEMM
 * forward, ALGO_1 backward) with the model's workspace, then algorithm 0
 * with none, as the v8 engines are.
 */
static cudnnStatus_t perf(void *x, void *w, void *y, int requested,
			  int *returned, struct algo_perf *out)
{
	uint64_t ws;
	cudnnStatus_t st;
	int n, i;

	if (!returned || !out || requested <= 0)
		return CUDNN_STATUS_BAD_PARAM;
	st = legacy_conv_ws(x, w, y, &ws);
	if (st)
		return st;
	n = requested < 2 ? requested : 2;
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].algo = i == 0 ? 1 : 0;
		out[i].time = (float)(i + 1);
		out[i].memory = i == 0 ? ws : 0;
		out[i].determinism = 1; /* CUDNN_DETERMINISTIC */
	}
	*returned = n;
	return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t algo_ws(void *x, void *w, void *y, int algo, size_t *size)
{
	uint64_t ws;
	cudnnStatus_t st;

	if (!size)
		return CUDNN_STATUS_BAD_PARAM;
	st = legacy_conv_ws(x, w, y, &ws);
	if (st)
		return st;
	*size = algo == 1 ? ws : 0;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
	struct handle *h, void *x, void *w, void *conv, void *y, int requested,
	int *returned, struct algo_perf *out)
{
	(void)h;
	(void)conv;
	return perf(x, w, y, requested, returned, out);
}

MT_API cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
	struct handle *h, void *w, void *dy, void *conv, void *dx,
	int requested, int *returned, struct algo_perf *out)
{
	(void)h;
	(void)conv;
	return perf(dx, w, dy, requested, returned, out);
}

MT_API cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
	struct handle *h, void *x, void *dy, void *conv, void *dw,
	int requested, int *returned, struct algo_perf *out)
{
	(void)h;
	(void)conv;
	return perf(x, dw, dy, requested, returned, out);
}

MT_API cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
	struct handle *h, void *x, const void *xp, void *w, const void *wp,
	void *conv, void *y, void *yp, int requested, int *returned,
	struct algo_perf *out, void *ws, size_t wsize)
{
	(void)h;
	(void)xp;
	(void)wp;
	(void)conv;
	(void)yp;
	(void)ws;
	(void)wsize;
	return perf(x, w, y, requested, returned, out);
}

MT_API cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
	struct handle *h, void *w, const void *wp, void *dy, const void *dyp,
	void *conv, void *dx, void *dxp, int requested, int *returned,
	struct algo_perf *out, void *ws, size_t wsize)
{
	(void)h;
	(void)wp;
	(void)dyp;
	(void)conv;
	(void)dxp;
	(void)ws;
	(void)wsize;
	return perf(dx, w, dy, requested, returned, out);
}

MT_API cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
	struct handle *h, void *x, const void *xp, void *dy, const void *dyp,
	void *conv, void *dw, void *dwp, int requested, int *returned,
	struct algo_perf *out, void *ws, size_t wsize)
{
	(void)h;
	(void)xp;
	(void)dyp;
	(void)conv;
	(void)dwp;
	(void)ws;
	(void)wsize;
	return perf(x, dw, dy, requested, returned, out);
}

MT_API cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(struct handle *h,
							     void *x, void *w,
							     void *conv,
							     void *y, int algo,
							     size_t *size)
{
	(void)h;
	(void)conv;
	return algo_ws(x, w, y, algo, size);
}

MT_API cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
	struct handle *h, void *w, void *dy, void *conv, void *dx, int algo,
	size_t *size)
{
	(void)h;
	(void)conv;
	return algo_ws(dx, w, dy, algo, size);
}

MT_API cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
	struct handle *h, void *x, void *dy, void *conv, void *dw, int algo,
	size_t *size)
{
	(void)h;
	(void)conv;
	return algo_ws(x, dw, dy, algo, size);
}

/* ---- the backend API ------------------------------------------------- */

#define BACKEND_MAGIC 0x62646e6eu /* "nndb" */
#define MAX_ATTRS 32
#define MAX_ATTR_BYTES 65536
/* engines the heuristics know: the model's engine and the fallback */
#define N_ENGINES 2

/* cudnnBackendDescriptorType_t */
#define D_ENGINE 2
#define D_ENGINECFG 3
#define D_ENGINEHEUR 4
#define D_EXECUTION_PLAN 5
#define D_OP_CONV_FWD 10
#define D_OP_CONV_BWD_FILTER 11
#define D_OP_CONV_BWD_DATA 12
#define D_OPERATIONGRAPH 15
#define D_TENSOR 17
#define D_KNOWN_TYPES 40 /* past the last of cuDNN 9.x */

/* cudnnBackendAttributeType_t whose size is not 4 */
#define T_HANDLE 0
#define T_BOOLEAN 2
#define T_INT64 3
#define T_DOUBLE 5
#define T_VOID_PTR 6
#define T_BACKEND_DESCRIPTOR 15
#define T_CHAR 24
#define T_FRACTION 26

/* cudnnBackendAttributeName_t */
#define A_ENGINEHEUR_MODE 200
#define A_ENGINEHEUR_OPERATION_GRAPH 201
#define A_ENGINEHEUR_RESULTS 202
#define A_ENGINECFG_ENGINE 300
#define A_ENGINECFG_INTERMEDIATE_INFO 301
#define A_ENGINECFG_KNOB_CHOICES 302
#define A_ENGINECFG_WORKSPACE_SIZE 303
#define A_PLAN_ENGINE_CONFIG 401
#define A_PLAN_WORKSPACE_SIZE 402
#define A_PLAN_COMPUTED_INTERMEDIATE_UIDS 403
#define A_PLAN_RUN_ONLY_INTERMEDIATE_UIDS 404
#define A_PLAN_JSON 405
#define A_CONV_FWD_W 703
#define A_CONV_FWD_X 704
#define A_CONV_FWD_Y 705
#define A_CONV_BWD_DATA_W 709
#define A_CONV_BWD_DATA_DX 710
#define A_CONV_BWD_DATA_DY 711
#define A_CONV_BWD_FILTER_DW 715
#define A_CONV_BWD_FILTER_X 716
#define A_CONV_BWD_FILTER_DY 717
#define A_OPERATIONGRAPH_OPS 801
#define A_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT 802
#define A_TENSOR_DATA_TYPE 901
#define A_TENSOR_DIMENSIONS 902
#define A_ENGINE_OPERATION_GRAPH 1300
#define A_ENGINE_GLOBAL_INDEX 1301
#define A_ENGINE_KNOB_INFO 1302
#define A_ENGINE_NUMERICAL_NOTE 1303
#define A_ENGINE_LAYOUT_INFO 1304
#define A_ENGINE_BEHAVIOR_NOTE 1305
#define A_ENGINE_SM_COUNT_TARGET 1306

/* cudnnBackendHeurMode_t */
#define HEUR_MODE_FALLBACK 2

struct attr {
	int name;
	int type;
	int64_t count;
	void *data; /* count elements of type's size */
};

/*
 * A backend descriptor: its attributes as set, and what finalizing it
 * derived.  engine is the global index of an engine, an engine config or
 * a plan (-1 until known); ws the workspace of an operation (its engine
 * 0's), of a graph (its operations' largest), of an engine config or a
 * plan (its engine's).
 */
struct backend {
	unsigned int magic;
	int type;
	bool finalized;
	int engine;
	int64_t ws;
	int n_attrs;
	struct attr attrs[MAX_ATTRS];
};

static struct backend *backend_of(void *p)
{
	struct backend *d = p;

	return d && d->magic == BACKEND_MAGIC ? d : NULL;
}

static size_t attr_size(int type)
{
	switch (type) {
	case T_HANDLE:
	case T_INT64:
	case T_DOUBLE:
	case T_VOID_PTR:
	case T_BACKEND_DESCRIPTOR:
		return 8;
	case T_BOOLEAN:
	case T_CHAR:
		return 1;
	case T_FRACTION:
		return 16;
	default:
		return 4; /* every enum and INT32, FLOAT */
	}
}

static struct attr *attr_find(struct backend *d, int name)
{
	int i;

	for (i = 0; i < d->n_attrs; i++)
		if (d->attrs[i].name == name)
			return &d->attrs[i];
	return NULL;
}

static void attrs_free(struct backend *d)
{
	int i;

	for (i = 0; i < d->n_attrs; i++)
		free(d->attrs[i].data);
	d->n_attrs = 0;
}

/* d's attribute name, replaced by count elements at data */
static cudnnStatus_t attr_set(struct backend *d, int name, int type,
			      int64_t count, const void *data)
{
	struct attr *a = attr_find(d, name);
	size_t bytes;
	void *copy;

	if (count < 0 || (uint64_t)count > MAX_ATTR_BYTES / attr_size(type) ||
	    (count && !data))
		return fail(CUDNN_STATUS_BAD_PARAM, "bad attribute value");
	bytes = (size_t)count * attr_size(type);
	copy = malloc(bytes ? bytes : 1);
	if (!copy)
		return CUDNN_STATUS_ALLOC_FAILED;
	if (bytes)
		memcpy(copy, data, bytes);
	if (!a) {
		if (d->n_attrs == MAX_ATTRS) {
			free(copy);
			return fail(CUDNN_STATUS_BAD_PARAM,
				    "too many attributes");
		}
		a = &d->attrs[d->n_attrs++];
	} else {
		free(a->data);
	}
	a->name = name;
	a->type = type;
	a->count = count;
	a->data = copy;
	return CUDNN_STATUS_SUCCESS;
}

/* dst becomes a copy of src (GetAttribute of a descriptor fills one) */
static cudnnStatus_t backend_copy(struct backend *dst,
				  const struct backend *src)
{
	cudnnStatus_t st;
	int i;

	if (dst == src)
		return CUDNN_STATUS_SUCCESS;
	attrs_free(dst);
	dst->type = src->type;
	dst->finalized = src->finalized;
	dst->engine = src->engine;
	dst->ws = src->ws;
	for (i = 0; i < src->n_attrs; i++) {
		const struct attr *a = &src->attrs[i];

		st = attr_set(dst, a->name, a->type, a->count, a->data);
		if (st)
			return st;
	}
	return CUDNN_STATUS_SUCCESS;
}

/* the descriptor that d's attribute name holds, if it holds one */
static struct backend *attr_desc(struct backend *d, int name)
{
	struct attr *a = attr_find(d, name);

	if (!a || a->type != T_BACKEND_DESCRIPTOR || a->count < 1)
		return NULL;
	return backend_of(*(void **)a->data);
}

/* a tensor's dimensions, at most MAX_DIMS, and its data type */
static int tensor_dims(struct backend *op, int name, int64_t *dims, int *dtype)
{
	struct backend *t = attr_desc(op, name);
	struct attr *a, *ty;
	int64_t n;

	if (!t || t->type != D_TENSOR)
		return -1;
	a = attr_find(t, A_TENSOR_DIMENSIONS);
	ty = attr_find(t, A_TENSOR_DATA_TYPE);
	if (!a || a->type != T_INT64 || a->count > MAX_DIMS)
		return -1;
	n = a->count;
	memcpy(dims, a->data, (size_t)n * sizeof(*dims));
	*dtype = ty && ty->count == 1 ? *(int *)ty->data : DATA_FLOAT;
	return (int)n;
}

/* a convolution operation's workspace, from its X, W and Y tensors */
static int64_t op_ws(struct backend *op)
{
	int64_t x[MAX_DIMS], w[MAX_DIMS], y[MAX_DIMS];
	int xi[MAX_DIMS], wi[MAX_DIMS], yi[MAX_DIMS];
	int nx, nw, ny, tx, tw, ty, i;
	int ax, aw, ay;

	switch (op->type) {
	case D_OP_CONV_FWD:
		ax = A_CONV_FWD_X, aw = A_CONV_FWD_W, ay = A_CONV_FWD_Y;
		break;
	case D_OP_CONV_BWD_DATA:
		ax = A_CONV_BWD_DATA_DX, aw = A_CONV_BWD_DATA_W;
		ay = A_CONV_BWD_DATA_DY;
		break;
	case D_OP_CONV_BWD_FILTER:
		ax = A_CONV_BWD_FILTER_X, aw = A_CONV_BWD_FILTER_DW;
		ay = A_CONV_BWD_FILTER_DY;
		break;
	default:
		return 0; /* other operations: no workspace modelled */
	}
	nx = tensor_dims(op, ax, x, &tx);
	nw = tensor_dims(op, aw, w, &tw);
	ny = tensor_dims(op, ay, y, &ty);
	if (nx < 0 || nw < 0 || ny < 0)
		return 0;
	for (i = 0; i < MAX_DIMS; i++) {
		xi[i] = i < nx && x[i] <= INT32_MAX ? (int)x[i] : 1;
		wi[i] = i < nw && w[i] <= INT32_MAX ? (int)w[i] : 1;
		yi[i] = i < ny && y[i] <= INT32_MAX ? (int)y[i] : 1;
	}
	return (int64_t)conv_ws(xi, nx, wi, nw, yi, ny, tw);
}

/* what finalizing d derives, where it derives anything */
static cudnnStatus_t backend_derive(struct backend *d)
{
	struct backend *g, *cfg;
	struct attr *a;
	int64_t i;

	switch (d->type) {
	case D_OP_CONV_FWD:
	case D_OP_CONV_BWD_DATA:
	case D_OP_CONV_BWD_FILTER:
		d->ws = op_ws(d);
		break;
	case D_OPERATIONGRAPH:
		a = attr_find(d, A_OPERATIONGRAPH_OPS);
		if (!a || a->type != T_BACKEND_DESCRIPTOR || a->count < 1)
			return fail(CUDNN_STATUS_BAD_PARAM,
				    "an operation graph without operations");
		d->ws = 0;
		for (i = 0; i < a->count; i++) {
			struct backend *op = backend_of(((void **)a->data)[i]);

			if (!op)
				return fail(CUDNN_STATUS_BAD_PARAM,
					    "an operation is no descriptor");
			if (op->ws > d->ws)
				d->ws = op->ws;
		}
		break;
	case D_ENGINEHEUR:
		g = attr_desc(d, A_ENGINEHEUR_OPERATION_GRAPH);
		if (!g || !g->finalized)
			return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
				    "heuristics need a finalized graph");
		d->ws = g->ws;
		break;
	case D_EXECUTION_PLAN:
		cfg = attr_desc(d, A_PLAN_ENGINE_CONFIG);
		if (cfg) {
			d->engine = cfg->engine;
			d->ws = cfg->ws;
		} else if ((a = attr_find(d, A_PLAN_JSON)) &&
			   a->type == T_CHAR) {
			/* a plan loaded from the JSON we wrote */
			char buf[128];
			long long ws = 0;
			int eng = -1;
			size_t n = (size_t)a->count < sizeof(buf) - 1 ?
					   (size_t)a->count :
					   sizeof(buf) - 1;

			memcpy(buf, a->data, n);
			buf[n] = '\0';
			if (sscanf(buf, "{\"engine\":%d,\"workspace\":%lld}",
				   &eng, &ws) != 2 ||
			    eng < 0 || eng >= N_ENGINES || ws < 0)
				return fail(CUDNN_STATUS_BAD_PARAM,
					    "not a plan of this cuDNN");
			d->engine = eng;
			d->ws = ws;
		} else {
			return fail(CUDNN_STATUS_BAD_PARAM,
				    "a plan needs an engine config");
		}
		break;
	case D_ENGINE:
	case D_ENGINECFG:
		if (d->engine < 0)
			d->engine = 0;
		break;
	default:
		break;
	}
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnBackendCreateDescriptor(int type, void **out)
{
	struct backend *d;

	if (!out)
		return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
	if (type < 0 || type >= D_KNOWN_TYPES)
		return fail(CUDNN_STATUS_NOT_SUPPORTED, "no such descriptor");
	d = calloc(1, sizeof(*d));
	if (!d)
		return CUDNN_STATUS_ALLOC_FAILED;
	d->magic = BACKEND_MAGIC;
	d->type = type;
	d->engine = -1;
	*out = d;
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnBackendDestroyDescriptor(void *p)
{
	struct backend *d = backend_of(p);

	if (!d)
		return CUDNN_STATUS_BAD_PARAM;
	attrs_free(d);
	d->magic = 0;
	free(d);
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnBackendInitialize(void *p, int type, size_t size)
{
	(void)p;
	(void)type;
	(void)size;
	return fail(CUDNN_STATUS_NOT_SUPPORTED, "in-place descriptors");
}

MT_API cudnnStatus_t cudnnBackendSetAttribute(void *p, int name, int type,
					      int64_t count, const void *data)
{
	struct backend *d = backend_of(p);

	if (!d)
		return CUDNN_STATUS_BAD_PARAM;
	if (d->finalized)
		return fail(CUDNN_STATUS_BAD_PARAM,
			    "the descriptor is finalized");
	return attr_set(d, name, type, count, data);
}

MT_API cudnnStatus_t cudnnBackendFinalize(void *p)
{
	struct backend *d = backend_of(p);
	cudnnStatus_t st;

	if (!d)
		return CUDNN_STATUS_BAD_PARAM;
	if (d->finalized)
		return CUDNN_STATUS_SUCCESS;
	st = backend_derive(d);
	if (st)
		return st;
	d->finalized = true;
	return CUDNN_STATUS_SUCCESS;
}

/* out[0..count) = value as an INT64 attribute with one element */
static cudnnStatus_t get_int64(int type, int64_t requested, int64_t *count,
			       void *out, int64_t value)
{
	if (type != T_INT64)
		return fail(CUDNN_STATUS_BAD_PARAM, "wrong attribute type");
	if (count)
		*count = 1;
	if (requested >= 1 && out)
		*(int64_t *)out = value;
	else if (requested >= 1)
		return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
	return CUDNN_STATUS_SUCCESS;
}

/* an engine config or engine of index eng with workspace ws */
static cudnnStatus_t make_engine(void *p, int type, int eng, int64_t ws)
{
	struct backend *d = backend_of(p);

	if (!d)
		return CUDNN_STATUS_BAD_PARAM;
	attrs_free(d);
	d->type = type;
	d->engine = eng;
	d->ws = ws;
	d->finalized = true;
	return CUDNN_STATUS_SUCCESS;
}

/* the engines the heuristics offer, best first */
static int heur_engines(struct backend *d, int *engines)
{
	struct attr *mode = attr_find(d, A_ENGINEHEUR_MODE);

	if (mode && mode->count == 1 &&
	    *(int *)mode->data == HEUR_MODE_FALLBACK) {
		engines[0] = 1;
		return 1;
	}
	engines[0] = 0;
	engines[1] = 1;
	return 2;
}

/* the attributes that are answers, not what was set; -1: not one */
static int derived_get(struct backend *d, int name, int type, int64_t requested,
		       int64_t *count, void *out, cudnnStatus_t *st)
{
	int engines[N_ENGINES], n, i;
	char json[96];

	switch (name) {
	case A_ENGINEHEUR_RESULTS:
		if (d->type != D_ENGINEHEUR)
			return -1;
		if (!d->finalized) {
			*st = CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
			return 0;
		}
		n = heur_engines(d, engines);
		if (count)
			*count = requested < n && out ? requested : n;
		for (i = 0; out && i < n && i < requested; i++) {
			*st = make_engine(((void **)out)[i], D_ENGINECFG,
					  engines[i],
					  engines[i] == 0 ? d->ws : 0);
			if (*st)
				return 0;
		}
		*st = CUDNN_STATUS_SUCCESS;
		return 0;
	case A_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
		if (d->type != D_OPERATIONGRAPH)
			return -1;
		*st = get_int64(type, requested, count, out, N_ENGINES);
		return 0;
	case A_ENGINECFG_ENGINE:
	case A_PLAN_ENGINE_CONFIG:
		if (d->type != D_ENGINECFG && d->type != D_EXECUTION_PLAN)
			return -1;
		if (count)
			*count = 1;
		*st = requested >= 1 && out ?
			      make_engine(*(void **)out,
					  name == A_ENGINECFG_ENGINE ?
						  D_ENGINE :
						  D_ENGINECFG,
					  d->engine, d->ws) :
			      CUDNN_STATUS_SUCCESS;
		return 0;
	case A_ENGINECFG_WORKSPACE_SIZE:
	case A_PLAN_WORKSPACE_SIZE:
		if (d->type != D_ENGINECFG && d->type != D_EXECUTION_PLAN)
			return -1;
		*st = get_int64(type, requested, count, out, d->ws);
		return 0;
	case A_ENGINE_GLOBAL_INDEX:
		if (d->type != D_ENGINE)
			return -1;
		*st = get_int64(type, requested, count, out, d->engine);
		return 0;
	case A_ENGINE_SM_COUNT_TARGET:
		if (d->type != D_ENGINE)
			return -1;
		*st = get_int64(type, requested, count, out, 0);
		return 0;
	/* no knobs, notes, layouts or intermediates: empty lists */
	case A_ENGINECFG_KNOB_CHOICES:
	case A_ENGINECFG_INTERMEDIATE_INFO:
	case A_ENGINE_KNOB_INFO:
	case A_ENGINE_NUMERICAL_NOTE:
	case A_ENGINE_BEHAVIOR_NOTE:
	case A_ENGINE_LAYOUT_INFO:
	case A_PLAN_COMPUTED_INTERMEDIATE_UIDS:
	case A_PLAN_RUN_ONLY_INTERMEDIATE_UIDS:
		if (attr_find(d, name))
			return -1;
		if (count)
			*count = 0;
		*st = CUDNN_STATUS_SUCCESS;
		return 0;
	case A_PLAN_JSON:
		if (d->type != D_EXECUTION_PLAN)
			return -1;
		if (type != T_CHAR) {
			*st = CUDNN_STATUS_BAD_PARAM;
			return 0;
		}
		n = snprintf(json, sizeof(json),
			     "{\"engine\":%d,\"workspace\":%" PRId64 "}",
			     d->engine, d->ws);
		if (n < 0 || (size_t)n >= sizeof(json)) {
			*st = CUDNN_STATUS_BAD_PARAM;
			return 0;
		}
		if (count)
			*count = n;
		if (out && requested > 0)
			memcpy(out, json,
			       (size_t)(requested < n ? requested : n));
		*st = CUDNN_STATUS_SUCCESS;
		return 0;
	default:
		return -1;
	}
}

MT_API cudnnStatus_t cudnnBackendGetAttribute(void *p, int name, int type,
					      int64_t requested, int64_t *count,
					      void *out)
{
	struct backend *d = backend_of(p);
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	struct attr *a;
	int64_t n, i;

	if (!d || requested < 0)
		return CUDNN_STATUS_BAD_PARAM;
	if (derived_get(d, name, type, requested, count, out, &st) == 0)
		return st;
	a = attr_find(d, name);
	if (!a)
		return fail(CUDNN_STATUS_BAD_PARAM, "attribute not set");
	if (a->type != type)
		return fail(CUDNN_STATUS_BAD_PARAM, "wrong attribute type");
	n = requested < a->count ? requested : a->count;
	if (count)
		*count = a->count;
	if (!out || !n)
		return CUDNN_STATUS_SUCCESS;
	if (type != T_BACKEND_DESCRIPTOR) {
		memcpy(out, a->data, (size_t)n * attr_size(type));
		return CUDNN_STATUS_SUCCESS;
	}
	/* descriptors: the caller's, filled with copies of ours */
	for (i = 0; i < n; i++) {
		struct backend *src = backend_of(((void **)a->data)[i]);
		struct backend *dst = backend_of(((void **)out)[i]);

		if (!src || !dst)
			return CUDNN_STATUS_BAD_PARAM;
		st = backend_copy(dst, src);
		if (st)
			return st;
	}
	return CUDNN_STATUS_SUCCESS;
}

MT_API cudnnStatus_t cudnnBackendExecute(struct handle *h, void *plan,
					 void *pack)
{
	struct backend *p = backend_of(plan), *v = backend_of(pack);

	if (!h || h->magic != HANDLE_MAGIC || !p || !v)
		return CUDNN_STATUS_BAD_PARAM;
	if (!p->finalized || !v->finalized)
		return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
	return CUDNN_STATUS_SUCCESS;
}
