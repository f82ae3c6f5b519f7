/*
 * cudnn_model.h - the sizes the stand-in cuDNN (user/standin/cudnn.c)
 * answers, in one place, and the line the dry run prints about them.
 *
 * A real cuDNN's workspace and reserve sizes depend on the engine its
 * heuristics pick for the GPU at hand, which nothing here can know.  The
 * stand-in answers a stated, deterministic model instead, computed from
 * the shapes; the dry run prints MT_CUDNN_RULE so that its user knows
 * the figures rest on it.  Change a size here and the text with it.
 *
 * Convolution (v8 engines and the v7 algorithms alike): the engine the
 * heuristics offer first lowers one image at a time (im2col), so its
 * workspace is the lowered input of one image, C/groups x kernel volume
 * x output positions x element size, capped at 64 MiB; a 1x1 kernel
 * whose output has as many positions as its input needs no lowering and
 * no workspace.  A second engine, offered after it and alone by the
 * fallback heuristics, needs no workspace: it is what PyTorch falls back
 * to when the first one's workspace cannot be allocated.
 *
 * Batch norm: no workspace, and no reserve for CUDNN_BATCHNORM_OPS_BN
 * (the only ops PyTorch asks for); the activation variants reserve one
 * bit per element of x (the activation mask), in whole 4-byte words.
 *
 * RNN (cuDNN's documentation: the reserve space keeps what the backward
 * passes need): training reserves, for every layer and direction, every
 * step and every sequence of the batch, the gates' pre-activations
 * (4, 3 or 1 times hidden for LSTM, GRU, RNN), the hidden output and,
 * for LSTM, the cell state; inference reserves nothing.  The workspace
 * holds one layer's input projection for every step: steps x batch x
 * gates x hidden x directions elements.
 *
 * CTC: the forward and backward variables (alpha and beta) in float,
 * 2 x T x N x (2 x max label length + 1) x 4 bytes.
 *
 * Dropout: a Philox state of 64 bytes for each thread the device holds
 * at once (multiprocessors x 2048), as cuRAND's dropout kernels keep.
 */
#ifndef MT_CUDNN_MODEL_H
#define MT_CUDNN_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* What the dry run says it assumed (one line, no newline). */
#define MT_CUDNN_RULE                                                     \
	"convolution = one image's im2col (C/groups x kernel x output "   \
	"positions), at most 64 MiB, 0 for 1x1, with a 0-byte fallback; " \
	"batch norm 0; RNN reserve = every layer's gates and states"

#define MT_CUDNN_CONV_WS_MAX (64ull << 20)

/*
 * Workspace of a convolution's first engine: cin_g input channels per
 * group, kvol the kernel's volume, opos and ipos the output's and the
 * input's positions (spatial volume), elem the bytes of an element.
 */
static inline uint64_t mt_cudnn_conv_ws(uint64_t cin_g, uint64_t kvol,
					uint64_t opos, uint64_t ipos,
					uint64_t elem)
{
	uint64_t ws;

	if (kvol <= 1 && opos == ipos)
		return 0;
	/* saturate instead of wrapping: any factor may be large */
	ws = cin_g * elem;
	if (kvol && ws > MT_CUDNN_CONV_WS_MAX / kvol)
		return MT_CUDNN_CONV_WS_MAX;
	ws *= kvol;
	if (opos && ws > MT_CUDNN_CONV_WS_MAX / opos)
		return MT_CUDNN_CONV_WS_MAX;
	ws *= opos;
	return ws > MT_CUDNN_CONV_WS_MAX ? MT_CUDNN_CONV_WS_MAX : ws;
}

/* gates of an RNN cell: cuDNN's cudnnRNNMode_t (relu, tanh, LSTM, GRU) */
static inline uint64_t mt_cudnn_rnn_gates(int mode)
{
	return mode == 2 ? 4 : mode == 3 ? 3 : 1;
}

/* reserve of a training forward: see the comment at the top */
static inline uint64_t mt_cudnn_rnn_reserve(int mode, uint64_t layers,
					    uint64_t dirs, uint64_t steps,
					    uint64_t batch, uint64_t hidden,
					    uint64_t elem)
{
	uint64_t per = mt_cudnn_rnn_gates(mode) * hidden + hidden +
		       (mode == 2 ? hidden : 0);

	return layers * dirs * steps * batch * per * elem;
}

static inline uint64_t mt_cudnn_rnn_ws(int mode, uint64_t dirs, uint64_t steps,
				       uint64_t batch, uint64_t hidden,
				       uint64_t elem)
{
	return steps * batch * mt_cudnn_rnn_gates(mode) * hidden * dirs * elem;
}

static inline uint64_t mt_cudnn_ctc_ws(uint64_t t, uint64_t n, uint64_t label)
{
	return 2 * t * n * (2 * label + 1) * 4;
}

static inline uint64_t mt_cudnn_dropout_states(uint64_t sms)
{
	return sms * 2048 * 64;
}

#endif /* MT_CUDNN_MODEL_H */
