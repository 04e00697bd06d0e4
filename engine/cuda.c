/*
 * cuda.c - the GPU backend of the training-step engine: cuDNN for conv
 * (grouped and depthwise included), batch norm, relu, pooling and softmax,
 * cuBLAS for fc layers, and a few kernels of our own (cuda_kernels.cu) for
 * dropout, clip, global average pooling, add, concat, the loss and the
 * optimizer.  Same semantics as the CPU backend (engine/cpu_dnnl.c): plain
 * NCHW everywhere (so parameter and activation copies are plain memcpys),
 * batch norm in training mode with PyTorch's running statistics, dropout
 * masks from the same splitmix stream indexed by plain NCHW offset, SGD
 * with momentum and Adam as PyTorch writes them.
 *
 * An activation read by several layers (a residual block's input, a
 * concat's branch) gets the sum of their input gradients: the plan says
 * per input whether a layer adds its gradient to what the readers whose
 * backward ran before wrote (acc) or writes over it; cuDNN and cuBLAS take
 * that as beta = 1 or 0, our kernels as their acc argument, so no
 * gradient needs a buffer of its own (see acc_of() for in-place layers).
 *
 * Everything lives in one device allocation (the arena) sized at create,
 * conv workspaces included, so peak_bytes is exact for what we allocate
 * (cuDNN and cuBLAS handles hold a few MiB more of their own).  Every op
 * ends with a stream synchronize, so a step is synchronous and the
 * profiler's timers need nothing more.  Nothing in a step copies
 * parameters or gradients to the host; the forward copies back only the
 * per-sample losses (batch doubles).
 *
 * Convolutions run in strict FP32 (CUDNN_FMA_MATH: no TF32 tensor cores)
 * to match the CPU backend and the reference tests.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "cuda_kernels.h"
#include "engine_int.h"
#include "nvml.h"
#include "util/banned.h"

#define ARENA_ALIGN 256 /* bytes, for every buffer in the arena */
#define PARAM_ALIGN 64	/* floats, between parameter tensors */
/* Largest conv workspace an algorithm may ask for. */
#define WS_CAP_BYTES ((size_t)1 << 30)

/* An activation: data, gradient (NULL when none), its cuDNN descriptor. */
struct cact {
	float *d, *g;
	cudnnTensorDescriptor_t t;
	int64_t n;
};

struct clayer {
	cudnnFilterDescriptor_t f;
	cudnnConvolutionDescriptor_t conv;
	cudnnConvolutionFwdAlgo_t fa;
	cudnnConvolutionBwdDataAlgo_t da;
	cudnnConvolutionBwdFilterAlgo_t wa;
	cudnnTensorDescriptor_t c; /* 1,C,1,1: bias, bn parameters */
	cudnnPoolingDescriptor_t pool;
	int pw;		     /* index of the weight; the bias is pw + 1 */
	float *mean, *ivar;  /* bn: batch statistics kept for backward */
	float *rmean, *rvar; /* bn: running statistics */
	float *mask;	     /* dropout */
	float *ykeep;	     /* max pool: its output, before in-place ops */
};

/* A buffer to carve out of the arena once all sizes are known. */
struct req {
	void **slot;
	size_t bytes;
};

struct cuda {
	struct hp_engine *e;
	const struct hp__plan *p;
	const struct hp_engine_opts *o;
	int dev;
	cudaStream_t strm;
	cudnnHandle_t dnn;
	cublasHandle_t blas;
	cudnnActivationDescriptor_t relu;
	struct cact *acts;
	struct clayer *ls;
	int64_t *poff;	/* parameter i at w + poff[i] (and g, m1, m2) */
	int64_t pelems; /* arena elements of each of w, g, m1, m2 */
	float *w, *g, *m1, *m2;
	void *ws;
	size_t ws_bytes;
	float *scratch; /* bn input gradient nobody reads */
	int64_t scratch_elems;
	int32_t *labels;
	double *dloss, *hloss; /* per-sample losses: device, host */
	struct req *reqs;
	int nreqs, areqs;
	void *arena;
	size_t total_bytes;
	struct hp__nvml *nvml;
	uint64_t fwd_count; /* forwards run (dropout masks) */
	int64_t t;	    /* optimizer steps */
	bool fwd_done, bwd_done;
	char name[128];
	char driver[64];
	char desc[512];
};

static const float one = 1.0f, zero = 0.0f;

static int cu_fail(struct hp_error *err, cudaError_t st, const char *what)
{
	return hp_error_set(
	    err, st == cudaErrorMemoryAllocation ? HP_ENOMEM : HP_EINTERNAL,
	    "cuda %s: %s", what, cudaGetErrorString(st));
}

static int dnn_fail(struct hp_error *err, cudnnStatus_t st, const char *what)
{
	int code = st == CUDNN_STATUS_NOT_SUPPORTED  ? HP_EUNSUPP
		   : st == CUDNN_STATUS_ALLOC_FAILED ? HP_ENOMEM
						     : HP_EINTERNAL;
	return hp_error_set(err, code, "cuDNN %s: %s", what,
			    cudnnGetErrorString(st));
}

static int blas_fail(struct hp_error *err, cublasStatus_t st, const char *what)
{
	return hp_error_set(
	    err, st == CUBLAS_STATUS_ALLOC_FAILED ? HP_ENOMEM : HP_EINTERNAL,
	    "cuBLAS %s: %s", what, cublasGetStatusString(st));
}

#define CU(call, what)                                                         \
	do {                                                                   \
		cudaError_t st_ = (call);                                      \
		if (st_ != cudaSuccess)                                        \
			return cu_fail(err, st_, what);                        \
	} while (0)
#define DNN(call, what)                                                        \
	do {                                                                   \
		cudnnStatus_t st_ = (call);                                    \
		if (st_ != CUDNN_STATUS_SUCCESS)                               \
			return dnn_fail(err, st_, what);                       \
	} while (0)
#define BLAS(call, what)                                                       \
	do {                                                                   \
		cublasStatus_t st_ = (call);                                   \
		if (st_ != CUBLAS_STATUS_SUCCESS)                              \
			return blas_fail(err, st_, what);                      \
	} while (0)
/* Our kernels return a cudaError_t as an int. */
#define KERN(call, what) CU((cudaError_t)(call), what)

static int nomem(struct hp_error *err)
{
	return hp_error_set(err, HP_ENOMEM, "out of memory");
}

/* Ask for bytes of device memory, written to *slot by materialize(). */
static int want(struct cuda *b, void *slot, size_t bytes, struct hp_error *err)
{
	if (b->nreqs == b->areqs) {
		int na = b->areqs ? 2 * b->areqs : 64;
		struct req *v = realloc(b->reqs, (size_t)na * sizeof(*v));
		if (!v)
			return nomem(err);
		b->reqs = v;
		b->areqs = na;
	}
	b->reqs[b->nreqs++] = (struct req){slot, bytes};
	return 0;
}

static int64_t elems(const struct hp__plan_act *a)
{
	return a->dims[0] * a->dims[1] * a->dims[2] * a->dims[3];
}

static int set_4d(cudnnTensorDescriptor_t t, int64_t n, int64_t c, int64_t h,
		  int64_t w, struct hp_error *err)
{
	DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
				       (int)n, (int)c, (int)h, (int)w),
	    "tensor descriptor");
	return 0;
}

/* Not a tensor-core math type: the descriptor's FMA_MATH then holds. */
static bool fp32(cudnnMathType_t m)
{
	return m != CUDNN_TENSOR_OP_MATH &&
	       m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* Fastest algorithms that fit WS_CAP_BYTES in strict FP32 (cudnnFind*
 * lists them fastest first); the heuristics when cudnnFind* fails. */
static int pick_fwd(struct cuda *b, struct clayer *l, const struct cact *x,
		    const struct cact *y, size_t *ws, struct hp_error *err)
{
	cudnnConvolutionFwdAlgoPerf_t perf[16];
	int n = 0;
	cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithm(
	    b->dnn, x->t, l->f, l->conv, y->t, 16, &n, perf);

	if (st != CUDNN_STATUS_SUCCESS)
		DNN(cudnnGetConvolutionForwardAlgorithm_v7(
			b->dnn, x->t, l->f, l->conv, y->t, 16, &n, perf),
		    "conv forward algorithm");
	for (int i = 0; i < n; i++)
		if (perf[i].status == CUDNN_STATUS_SUCCESS &&
		    perf[i].memory <= WS_CAP_BYTES && fp32(perf[i].mathType)) {
			l->fa = perf[i].algo;
			DNN(cudnnGetConvolutionForwardWorkspaceSize(
				b->dnn, x->t, l->f, l->conv, y->t, l->fa, ws),
			    "conv forward workspace");
			return 0;
		}
	return hp_error_set(err, HP_EUNSUPP,
			    "cuDNN: no FP32 conv forward algorithm");
}

static int pick_bwd_filter(struct cuda *b, struct clayer *l,
			   const struct cact *x, const struct cact *y,
			   size_t *ws, struct hp_error *err)
{
	cudnnConvolutionBwdFilterAlgoPerf_t perf[16];
	int n = 0;
	cudnnStatus_t st = cudnnFindConvolutionBackwardFilterAlgorithm(
	    b->dnn, x->t, y->t, l->conv, l->f, 16, &n, perf);

	if (st != CUDNN_STATUS_SUCCESS)
		DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
			b->dnn, x->t, y->t, l->conv, l->f, 16, &n, perf),
		    "conv backward filter algorithm");
	for (int i = 0; i < n; i++)
		if (perf[i].status == CUDNN_STATUS_SUCCESS &&
		    perf[i].memory <= WS_CAP_BYTES && fp32(perf[i].mathType)) {
			l->wa = perf[i].algo;
			DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(
				b->dnn, x->t, y->t, l->conv, l->f, l->wa, ws),
			    "conv backward filter workspace");
			return 0;
		}
	return hp_error_set(err, HP_EUNSUPP,
			    "cuDNN: no FP32 conv backward filter algorithm");
}

static int pick_bwd_data(struct cuda *b, struct clayer *l, const struct cact *x,
			 const struct cact *y, size_t *ws, struct hp_error *err)
{
	cudnnConvolutionBwdDataAlgoPerf_t perf[16];
	int n = 0;
	cudnnStatus_t st = cudnnFindConvolutionBackwardDataAlgorithm(
	    b->dnn, l->f, y->t, l->conv, x->t, 16, &n, perf);

	if (st != CUDNN_STATUS_SUCCESS)
		DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
			b->dnn, l->f, y->t, l->conv, x->t, 16, &n, perf),
		    "conv backward data algorithm");
	for (int i = 0; i < n; i++)
		if (perf[i].status == CUDNN_STATUS_SUCCESS &&
		    perf[i].memory <= WS_CAP_BYTES && fp32(perf[i].mathType)) {
			l->da = perf[i].algo;
			DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(
				b->dnn, l->f, y->t, l->conv, x->t, l->da, ws),
			    "conv backward data workspace");
			return 0;
		}
	return hp_error_set(err, HP_EUNSUPP,
			    "cuDNN: no FP32 conv backward data algorithm");
}

static int build_conv(struct cuda *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct clayer *l = &b->ls[i];
	const struct cact *x = &b->acts[pl->x], *y = &b->acts[pl->y];
	const int64_t *xd = b->p->acts[pl->x].dims,
		      *yd = b->p->acts[pl->y].dims;
	int k = (int)pl->L.kernel, s = (int)pl->L.stride, pad = (int)pl->L.pad;
	int g = pl->L.groups > 1 ? (int)pl->L.groups : 1;
	int on, oc, oh, ow, rc;
	size_t ws = 0;

	/* grouped (depthwise: g == C): K filters of C/g channels each, plain
	 * KCRS with C/g, the layout of the CPU backend's and ONNX's weights;
	 * the spec checked that g divides C and K */
	DNN(cudnnCreateFilterDescriptor(&l->f), "filter descriptor");
	DNN(cudnnSetFilter4dDescriptor(l->f, CUDNN_DATA_FLOAT,
				       CUDNN_TENSOR_NCHW, (int)pl->L.filters,
				       (int)(xd[1] / g), k, k),
	    "filter descriptor");
	DNN(cudnnCreateConvolutionDescriptor(&l->conv), "conv descriptor");
	DNN(cudnnSetConvolution2dDescriptor(l->conv, pad, pad, s, s, 1, 1,
					    CUDNN_CROSS_CORRELATION,
					    CUDNN_DATA_FLOAT),
	    "conv descriptor");
	if (g > 1)
		DNN(cudnnSetConvolutionGroupCount(l->conv, g), "conv groups");
	DNN(cudnnSetConvolutionMathType(l->conv, CUDNN_FMA_MATH),
	    "conv math type");
	DNN(cudnnGetConvolution2dForwardOutputDim(l->conv, x->t, l->f, &on, &oc,
						  &oh, &ow),
	    "conv output size");
	if (on != yd[0] || oc != yd[1] || oh != yd[2] || ow != yd[3])
		return hp_error_set(err, HP_EINTERNAL,
				    "cuDNN conv output %dx%dx%dx%d, plan "
				    "%lldx%lldx%lldx%lld",
				    on, oc, oh, ow, (long long)yd[0],
				    (long long)yd[1], (long long)yd[2],
				    (long long)yd[3]);
	if ((rc = pick_fwd(b, l, x, y, &ws, err)))
		return rc;
	b->ws_bytes = ws > b->ws_bytes ? ws : b->ws_bytes;
	if ((rc = pick_bwd_filter(b, l, x, y, &ws, err)))
		return rc;
	b->ws_bytes = ws > b->ws_bytes ? ws : b->ws_bytes;
	if (pl->need_dsrc) {
		if ((rc = pick_bwd_data(b, l, x, y, &ws, err)))
			return rc;
		b->ws_bytes = ws > b->ws_bytes ? ws : b->ws_bytes;
	}
	return 0;
}

/*
 * The kernels of add, concat and gap index flat NCHW buffers: check that
 * the plan's shapes are what they assume (add: inputs of the output's
 * size; concat: inputs of the output's H and W whose channels sum to its
 * channels; gap: one output per input plane).
 */
static int check_shapes(const struct cuda *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *ya = &b->p->acts[pl->y];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	int64_t c = 0;

	if (pl->L.type == HP_LAYER_GAP) {
		if (elems(ya) != xa->dims[0] * xa->dims[1])
			return hp_error_set(
			    err, HP_EINTERNAL,
			    "gap output of %lld elements for "
			    "%lld planes",
			    (long long)elems(ya),
			    (long long)(xa->dims[0] * xa->dims[1]));
		return 0;
	}
	for (int k = 0; k < pl->nin; k++) {
		const struct hp__plan_act *a = &b->p->acts[pl->xs[k]];
		bool ok = pl->L.type == HP_LAYER_ADD
			      ? elems(a) == elems(ya)
			      : a->dims[0] == ya->dims[0] &&
				    a->dims[2] == ya->dims[2] &&
				    a->dims[3] == ya->dims[3];
		if (!ok)
			return hp_error_set(
			    err, HP_EUNSUPP,
			    "%s input %d is %lldx%lldx%lldx%lld, the output "
			    "%lldx%lldx%lldx%lld",
			    pl->L.type == HP_LAYER_ADD ? "add" : "concat", k,
			    (long long)a->dims[0], (long long)a->dims[1],
			    (long long)a->dims[2], (long long)a->dims[3],
			    (long long)ya->dims[0], (long long)ya->dims[1],
			    (long long)ya->dims[2], (long long)ya->dims[3]);
		c += a->dims[1];
	}
	if (pl->L.type == HP_LAYER_CONCAT && c != ya->dims[1])
		return hp_error_set(err, HP_EINTERNAL,
				    "concat of %lld channels into %lld",
				    (long long)c, (long long)ya->dims[1]);
	return 0;
}

/* Per-layer descriptors and buffers. */
static int build_layer(struct cuda *b, int i, int *pidx, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	struct clayer *l = &b->ls[i];
	int64_t c;
	int rc;

	if (pl->has_params) {
		l->pw = *pidx;
		*pidx += pl->nparams;
		c = pl->L.type == HP_LAYER_CONV ? pl->L.filters
		    : pl->L.type == HP_LAYER_FC ? pl->L.units
						: xa->dims[1];
		DNN(cudnnCreateTensorDescriptor(&l->c), "tensor descriptor");
		if ((rc = set_4d(l->c, 1, c, 1, 1, err)))
			return rc;
	}
	switch (pl->L.type) {
	case HP_LAYER_CONV:
		return build_conv(b, i, err);
	case HP_LAYER_BN:
		c = xa->dims[1];
		if ((rc = want(b, &l->mean, (size_t)c * 4, err)) ||
		    (rc = want(b, &l->ivar, (size_t)c * 4, err)) ||
		    (rc = want(b, &l->rmean, (size_t)c * 4, err)) ||
		    (rc = want(b, &l->rvar, (size_t)c * 4, err)))
			return rc;
		if (!pl->need_dsrc && elems(xa) > b->scratch_elems)
			b->scratch_elems = elems(xa);
		return 0;
	case HP_LAYER_POOL: {
		int k = (int)pl->L.kernel, s = (int)pl->L.stride,
		    pad = (int)pl->L.pad;
		/* cuDNN pads both sides alike; a ceil-mode pool needs more on
		 * the right */
		if (pl->L.ceil_mode || pl->L.pool_exclude)
			return hp_error_set(err, HP_EUNSUPP,
					    "layer %d: a pool in ceil mode, or "
					    "an average leaving its padding "
					    "out, runs on the CPU backend only",
					    i);
		DNN(cudnnCreatePoolingDescriptor(&l->pool),
		    "pooling descriptor");
		/* max: padding never wins; avg: padding counts, as the CPU
		 * backend's pooling_avg_include_padding */
		DNN(cudnnSetPooling2dDescriptor(
			l->pool,
			pl->L.pool_max
			    ? CUDNN_POOLING_MAX_DETERMINISTIC
			    : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
			CUDNN_NOT_PROPAGATE_NAN, k, k, pad, pad, s, s),
		    "pooling descriptor");
		/* cuDNN's max-pool backward finds the maximum by comparing
		 * input and output: keep the output if an in-place layer
		 * (relu, dropout) will change it */
		if (pl->L.pool_max && pl->need_dsrc)
			for (int j = i + 1; j < b->p->nlayers; j++)
				if (b->p->layers[j].inplace &&
				    b->p->layers[j].x == pl->y)
					return want(
					    b, &l->ykeep,
					    (size_t)elems(&b->p->acts[pl->y]) *
						4,
					    err);
		return 0;
	}
	case HP_LAYER_DROPOUT:
		return want(b, &l->mask, (size_t)elems(xa) * 4, err);
	case HP_LAYER_ADD:
	case HP_LAYER_CONCAT:
	case HP_LAYER_GAP:
		return check_shapes(b, i, err);
	default: /* fc (cuBLAS), relu, clip, softmax: nothing more */
		return 0;
	}
}

/* Check the exact total against the limits, allocate it, hand it out. */
static int materialize(struct cuda *b, struct hp_error *err)
{
	size_t total = 0, free_b = 0, total_b = 0;
	char *p;

	for (int i = 0; i < b->nreqs; i++)
		total += (b->reqs[i].bytes + ARENA_ALIGN - 1) / ARENA_ALIGN *
			 ARENA_ALIGN;
	if (total > b->o->max_bytes)
		return hp_error_set(err, HP_ETOOBIG,
				    "batch %lld needs %.1f MiB, over the limit "
				    "of %.1f MiB",
				    (long long)b->p->batch,
				    (double)total / 1048576.0,
				    (double)b->o->max_bytes / 1048576.0);
	if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && total > free_b)
		return hp_error_set(err, HP_ETOOBIG,
				    "batch %lld needs %.1f MiB, over the "
				    "%.1f MiB free on cuda:%d",
				    (long long)b->p->batch,
				    (double)total / 1048576.0,
				    (double)free_b / 1048576.0, b->dev);
	CU(cudaMalloc(&b->arena, total ? total : ARENA_ALIGN),
	   "allocating the arena");
	CU(cudaMemsetAsync(b->arena, 0, total, b->strm), "clearing the arena");
	p = b->arena;
	for (int i = 0; i < b->nreqs; i++) {
		*b->reqs[i].slot = b->reqs[i].bytes ? p : NULL;
		p += (b->reqs[i].bytes + ARENA_ALIGN - 1) / ARENA_ALIGN *
		     ARENA_ALIGN;
	}
	b->total_bytes = total;
	free(b->reqs);
	b->reqs = NULL;
	b->nreqs = b->areqs = 0;
	return 0;
}

/* The calling thread may not be the one that made the engine. */
static int use_dev(const struct cuda *b, struct hp_error *err)
{
	CU(cudaSetDevice(b->dev), "device");
	return 0;
}

static int cuda_param_io(void *be, int i, int what, int dir, float *buf,
			 struct hp_error *err)
{
	struct cuda *b = be;
	float *base = what == PARAM_IO_GRAD   ? b->g
		      : what == PARAM_IO_OPT1 ? b->m1
		      : what == PARAM_IO_OPT2 ? b->m2
					      : b->w;
	float *d;
	size_t bytes = (size_t)b->e->params[i].numel * sizeof(float);
	int rc = use_dev(b, err);

	if (rc)
		return rc;
	if (!base)
		return hp_error_set(err, HP_EINVAL,
				    "no such optimizer state with SGD");
	d = base + b->poff[i];
	if (dir)
		CU(cudaMemcpyAsync(d, buf, bytes, cudaMemcpyHostToDevice,
				   b->strm),
		   "copy");
	else
		CU(cudaMemcpyAsync(buf, d, bytes, cudaMemcpyDeviceToHost,
				   b->strm),
		   "copy");
	CU(cudaStreamSynchronize(b->strm), "copy");
	return 0;
}

static int cuda_bn_io(void *be, int layer, int which, int dir, float *buf,
		      struct hp_error *err)
{
	struct cuda *b = be;
	float *d = which ? b->ls[layer].rvar : b->ls[layer].rmean;
	size_t bytes =
	    (size_t)b->p->acts[b->p->layers[layer].x].dims[1] * sizeof(float);
	int rc = use_dev(b, err);

	if (rc)
		return rc;
	if (!d)
		return hp_error_set(err, HP_EINVAL,
				    "layer %d is not a batch norm", layer);
	CU(cudaMemcpyAsync(
	       dir ? d : buf, dir ? buf : d, bytes,
	       dir ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, b->strm),
	   "copy");
	CU(cudaStreamSynchronize(b->strm), "copy");
	return 0;
}

/* Every gradient at once: each tensor is plain at g + poff[i]. */
static int cuda_grads_io(void *be, float *flat, int dir, struct hp_error *err)
{
	struct cuda *b = be;
	int64_t off = 0;
	int rc = use_dev(b, err);

	if (rc)
		return rc;
	for (int i = 0; i < b->p->nparams; i++) {
		float *d = b->g + b->poff[i];
		int64_t n = b->e->params[i].numel;
		CU(cudaMemcpyAsync(dir ? d : flat + off, dir ? flat + off : d,
				   (size_t)n * sizeof(float),
				   dir ? cudaMemcpyHostToDevice
				       : cudaMemcpyDeviceToHost,
				   b->strm),
		   "copy");
		off += n;
	}
	CU(cudaStreamSynchronize(b->strm), "copy");
	return 0;
}

static int cuda_grads_device(void *be, void **ptr, int64_t *nfloats,
			     void **stream)
{
	struct cuda *b = be;

	*ptr = b->g;
	*nfloats = b->pelems;
	*stream = (void *)b->strm;
	return 0;
}

static void cuda_counters(void *be, struct hp_engine_counters *c, int dir)
{
	struct cuda *b = be;

	if (dir) {
		b->t = c->updates;
		b->fwd_count = c->forwards;
	} else {
		c->updates = b->t;
		c->forwards = b->fwd_count;
	}
}

/* hp__param_init()'s values, the CPU backend's; running variance 1. */
static int init_params(struct cuda *b, struct hp_error *err)
{
	uint64_t st = hp__rng_mix(b->o->seed ^ 0x5eedull);

	for (int i = 0; i < b->p->nparams; i++) {
		float *v = malloc((size_t)b->e->params[i].numel * sizeof(*v));
		int rc;
		if (!v)
			return nomem(err);
		hp__param_init(b->e->params, b->p, i, &st, v);
		rc = cuda_param_io(b, i, 0, 1, v, err);
		free(v);
		if (rc)
			return rc;
	}
	for (int i = 0; i < b->p->nlayers; i++)
		if (b->ls[i].rvar)
			KERN(hp__cu_fill(b->ls[i].rvar, 1.0f,
					 b->p->acts[b->p->layers[i].x].dims[1],
					 b->strm),
			     "running variance");
	CU(cudaStreamSynchronize(b->strm), "init");
	return 0;
}

static void cuda_destroy(void *be)
{
	struct cuda *b = be;

	if (!b)
		return;
	for (int i = 0; b->ls && i < b->p->nlayers; i++) {
		struct clayer *l = &b->ls[i];
		if (l->f)
			cudnnDestroyFilterDescriptor(l->f);
		if (l->conv)
			cudnnDestroyConvolutionDescriptor(l->conv);
		if (l->c)
			cudnnDestroyTensorDescriptor(l->c);
		if (l->pool)
			cudnnDestroyPoolingDescriptor(l->pool);
	}
	for (int i = 0; b->acts && i < b->p->nacts; i++)
		if (b->acts[i].t)
			cudnnDestroyTensorDescriptor(b->acts[i].t);
	if (b->relu)
		cudnnDestroyActivationDescriptor(b->relu);
	if (b->arena)
		cudaFree(b->arena);
	if (b->blas)
		cublasDestroy(b->blas);
	if (b->dnn)
		cudnnDestroy(b->dnn);
	if (b->strm)
		cudaStreamDestroy(b->strm);
	hp__nvml_close(b->nvml);
	free(b->reqs);
	free(b->acts);
	free(b->ls);
	free(b->poff);
	free(b->hloss);
	free(b);
}

/* Is device K there?  Touches the CUDA runtime only now, when a GPU was
 * asked for: the CPU path never loads a driver. */
static int open_device(struct cuda *b, struct cudaDeviceProp *prop,
		       struct hp_error *err)
{
	int n = 0;
	cudaError_t st = cudaGetDeviceCount(&n);

	if (st != cudaSuccess) {
		int dv = 0, rv = 0;
		char why[96] = "";
		(void)cudaGetLastError();
		cudaRuntimeGetVersion(&rv);
		if (cudaDriverGetVersion(&dv) != cudaSuccess || dv == 0)
			snprintf(why, sizeof(why), " (no NVIDIA driver found)");
		else if (dv < rv)
			snprintf(why, sizeof(why),
				 " (the driver runs CUDA %d.%d, this build "
				 "needs %d.%d)",
				 dv / 1000, dv % 1000 / 10, rv / 1000,
				 rv % 1000 / 10);
		return hp_error_set(err, HP_EDEVICE,
				    "device 'cuda:%d': no CUDA device %d: %s%s",
				    b->dev, b->dev, cudaGetErrorString(st),
				    why);
	}
	if (b->dev >= n)
		return hp_error_set(err, HP_EDEVICE,
				    "device 'cuda:%d': no CUDA device %d: %d "
				    "device%s present",
				    b->dev, b->dev, n, n == 1 ? "" : "s");
	if ((st = cudaSetDevice(b->dev)) != cudaSuccess ||
	    (st = cudaGetDeviceProperties(prop, b->dev)) != cudaSuccess)
		return hp_error_set(err, HP_EDEVICE, "CUDA device %d: %s",
				    b->dev, cudaGetErrorString(st));
	return 0;
}

static void describe(struct cuda *b, const struct cudaDeviceProp *prop)
{
	char bus[32] = "";
	int dv = 0, bv = 0;
	size_t cv = cudnnGetVersion();
	struct hp_error nerr = {0};

	if (cudaDeviceGetPCIBusId(bus, sizeof(bus), b->dev) != cudaSuccess)
		bus[0] = '\0';
	if (hp__nvml_open(NULL, bus[0] ? bus : NULL, b->dev, &b->nvml, &nerr) ==
		0 &&
	    hp__nvml_driver(b->nvml)[0])
		snprintf(b->driver, sizeof(b->driver), "%.63s",
			 hp__nvml_driver(b->nvml));
	else if (cudaDriverGetVersion(&dv) == cudaSuccess)
		snprintf(b->driver, sizeof(b->driver), "CUDA %d.%d", dv / 1000,
			 dv % 1000 / 10);
	snprintf(b->name, sizeof(b->name), "%.127s", prop->name);
	if (cublasGetVersion(b->blas, &bv) != CUBLAS_STATUS_SUCCESS)
		bv = 0;
	snprintf(b->desc, sizeof(b->desc),
		 "cuda:%d %.127s (sm_%d%d), driver %.63s, cuDNN %zu.%zu.%zu, "
		 "cuBLAS %d.%d.%d",
		 b->dev, prop->name, prop->major, prop->minor,
		 b->driver[0] ? b->driver : "unknown", cv / 10000,
		 cv % 10000 / 100, cv % 100, bv / 10000, bv % 10000 / 100,
		 bv % 100);
}

static int build(struct cuda *b, struct hp_error *err)
{
	const struct hp__plan *p = b->p;
	struct cudaDeviceProp prop;
	int64_t off = 0, n = p->batch;
	int pidx = 0, rc;

	if ((rc = open_device(b, &prop, err)))
		return rc;
	CU(cudaStreamCreateWithFlags(&b->strm, cudaStreamNonBlocking),
	   "stream");
	DNN(cudnnCreate(&b->dnn), "handle");
	DNN(cudnnSetStream(b->dnn, b->strm), "stream");
	BLAS(cublasCreate(&b->blas), "handle");
	BLAS(cublasSetStream(b->blas, b->strm), "stream");
	BLAS(cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH), "math mode");
	DNN(cudnnCreateActivationDescriptor(&b->relu), "relu");
	DNN(cudnnSetActivationDescriptor(b->relu, CUDNN_ACTIVATION_RELU,
					 CUDNN_NOT_PROPAGATE_NAN, 0.0),
	    "relu");
	b->acts = calloc((size_t)p->nacts, sizeof(*b->acts));
	b->ls = calloc((size_t)p->nlayers + 1, sizeof(*b->ls));
	b->poff = calloc((size_t)p->nparams + 1, sizeof(*b->poff));
	b->hloss = calloc((size_t)n, sizeof(*b->hloss));
	if (!b->acts || !b->ls || !b->poff || !b->hloss)
		return nomem(err);

	for (int i = 0; i < p->nacts; i++) {
		const struct hp__plan_act *a = &p->acts[i];
		struct cact *A = &b->acts[i];
		A->n = elems(a);
		if (A->n > INT_MAX ||
		    a->dims[1] * a->dims[2] * a->dims[3] > INT_MAX)
			return hp_error_set(err, HP_ETOOBIG,
					    "activation %d has %lld elements, "
					    "more than cuDNN takes",
					    i, (long long)A->n);
		DNN(cudnnCreateTensorDescriptor(&A->t), "tensor descriptor");
		if ((rc = set_4d(A->t, a->dims[0], a->dims[1], a->dims[2],
				 a->dims[3], err)) ||
		    (rc = want(b, &A->d, (size_t)A->n * 4, err)) ||
		    (a->diff && (rc = want(b, &A->g, (size_t)A->n * 4, err))))
			return rc;
	}
	for (int i = 0; i < p->nlayers; i++) {
		if (p->layers[i].noop) {
			pidx += p->layers[i].nparams;
			continue;
		}
		if ((rc = build_layer(b, i, &pidx, err))) {
			hp_error_prefix(err, "layer %d", i);
			return rc;
		}
	}
	for (int i = 0; i < p->nparams; i++) {
		b->poff[i] = off;
		off += (b->e->params[i].numel + PARAM_ALIGN - 1) / PARAM_ALIGN *
		       PARAM_ALIGN;
	}
	b->pelems = off;
	if ((rc = want(b, &b->w, (size_t)off * 4, err)) ||
	    (rc = want(b, &b->g, (size_t)off * 4, err)) ||
	    (rc = want(b, &b->m1, (size_t)off * 4, err)) ||
	    (b->o->opt == HP_OPT_ADAM &&
	     (rc = want(b, &b->m2, (size_t)off * 4, err))) ||
	    (rc = want(b, &b->labels, (size_t)n * sizeof(int32_t), err)) ||
	    (rc = want(b, &b->dloss, (size_t)n * sizeof(double), err)) ||
	    (rc = want(b, &b->scratch, (size_t)b->scratch_elems * 4, err)) ||
	    (rc = want(b, &b->ws, b->ws_bytes, err)) ||
	    (rc = materialize(b, err)) || (rc = init_params(b, err)))
		return rc;
	describe(b, &prop);
	return 0;
}

/* What this backend runs: every layer type of the spec, in chains and
 * DAGs, as the CPU backend does. */
static int check_supported(const struct hp__plan *p, struct hp_error *err)
{
	for (int i = 0; i < p->nlayers; i++) {
		if (p->layers[i].L.rect)
			return hp_error_set(err, HP_EUNSUPP,
					    "layer %d (conv): a non-square "
					    "kernel or unequal pads run on the "
					    "CPU backend only",
					    i);
		if (hp_spec_dilation(&p->layers[i].L) > 1)
			return hp_error_set(err, HP_EUNSUPP,
					    "layer %d (conv): a dilated conv "
					    "runs on the CPU backend only",
					    i);
		switch (p->layers[i].L.type) {
		case HP_LAYER_CONV:
		case HP_LAYER_BN:
		case HP_LAYER_RELU:
		case HP_LAYER_POOL:
		case HP_LAYER_DROPOUT:
		case HP_LAYER_FC:
		case HP_LAYER_SOFTMAX:
		case HP_LAYER_CLIP:
		case HP_LAYER_GAP:
		case HP_LAYER_ADD:
		case HP_LAYER_CONCAT:
		case HP_LAYER_FLATTEN:
			break;
		default:
			return hp_error_set(
			    err, HP_EUNSUPP,
			    "layer %d (%s) runs on the CPU backend only", i,
			    hp_spec_layer_name(p->layers[i].L.type));
		}
	}
	return 0;
}

static int cuda_create(struct hp_engine *e, struct hp_error *err)
{
	struct cuda *b;
	int rc;

	if ((rc = check_supported(&e->plan, err)))
		return rc;
	b = calloc(1, sizeof(*b));
	if (!b)
		return nomem(err);
	b->e = e;
	b->p = &e->plan;
	b->o = &e->o;
	b->dev = e->device_index;
	rc = build(b, err);
	if (rc) {
		cuda_destroy(b);
		return rc;
	}
	e->be = b;
	return 0;
}

static int cuda_set_input(void *be, const float *x, const int32_t *labels,
			  struct hp_error *err)
{
	struct cuda *b = be;
	int rc = use_dev(b, err);

	if (rc)
		return rc;
	CU(cudaMemcpyAsync(b->acts[0].d, x, (size_t)b->acts[0].n * 4,
			   cudaMemcpyHostToDevice, b->strm),
	   "input");
	if (labels && b->p->classes > 0)
		CU(cudaMemcpyAsync(b->labels, labels,
				   (size_t)b->p->batch * sizeof(int32_t),
				   cudaMemcpyHostToDevice, b->strm),
		   "labels");
	CU(cudaStreamSynchronize(b->strm), "input");
	return 0;
}

/*
 * Whether layer pl adds its input k's gradient to what is there.  An
 * in-place layer (relu, clip, dropout: y == x) is its input's only reader
 * and turns the one gradient buffer into its input's gradient in place;
 * the plan's acc[] is set there only because the readers of its output
 * wrote that same buffer first, so it is read as "write", as the CPU
 * backend reads it (its swap test in build()).
 */
static bool acc_of(const struct hp__plan_layer *pl, int k)
{
	return pl->acc[k] && !pl->inplace;
}

/*
 * fc, row-major: y[N][u] = x[N][in] W^T + b with W [u][in].  cuBLAS is
 * column-major, where these arrays read as their transposes.
 */
static int fc_fwd(struct cuda *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct clayer *l = &b->ls[i];
	const struct cact *x = &b->acts[pl->x], *y = &b->acts[pl->y];
	int u = (int)pl->L.units, in = (int)(x->n / b->p->batch),
	    n = (int)b->p->batch;

	BLAS(cublasSgemm(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, u, n, in, &one,
			 b->w + b->poff[l->pw], in, x->d, in, &zero, y->d, u),
	     "fc forward");
	DNN(cudnnAddTensor(b->dnn, &one, l->c, b->w + b->poff[l->pw + 1], &one,
			   y->t, y->d),
	    "fc bias");
	return 0;
}

static int fc_bwd(struct cuda *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct clayer *l = &b->ls[i];
	const struct cact *x = &b->acts[pl->x], *y = &b->acts[pl->y];
	int u = (int)pl->L.units, in = (int)(x->n / b->p->batch),
	    n = (int)b->p->batch;

	/* dW^T[in][u] (column-major) = X^T dY */
	BLAS(cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_T, in, u, n, &one,
			 x->d, in, y->g, u, &zero, b->g + b->poff[l->pw], in),
	     "fc weight gradient");
	DNN(cudnnConvolutionBackwardBias(b->dnn, &one, y->t, y->g, &zero, l->c,
					 b->g + b->poff[l->pw + 1]),
	    "fc bias gradient");
	/* dX^T[in][N] (column-major) = W^T dY^T, added where acc */
	if (pl->need_dsrc)
		BLAS(cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, in, n, u,
				 &one, b->w + b->poff[l->pw], in, y->g, u,
				 acc_of(pl, 0) ? &one : &zero, x->g, in),
		     "fc input gradient");
	return 0;
}

/* add: y = x0 + x1 + ..., in that order (add never runs in place). */
static int add_fwd(struct cuda *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct cact *y = &b->acts[pl->y];

	for (int k = 0; k < pl->nin; k++)
		KERN(hp__cu_copy2d(b->acts[pl->xs[k]].d, y->n, y->d, y->n, y->n,
				   1, k > 0, b->strm),
		     "add forward");
	return 0;
}

/*
 * concat along the channels: per sample, input k's C_k*H*W elements go
 * at channel offset sum_{j<k} C_j of the output's C*H*W; backward, the
 * same slices of dy go back.  Inputs in descending order backward: the
 * plan set acc[] in that order (an activation given twice is written by
 * its last slot, added to by the earlier ones).
 */
static int concat_run(struct cuda *b, int i, bool bwd, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct cact *y = &b->acts[pl->y];
	int64_t n = b->p->batch, yrow = y->n / n, off[HP_SPEC_MAX_INPUTS];

	off[0] = 0;
	for (int k = 1; k < pl->nin; k++)
		off[k] = off[k - 1] + b->acts[pl->xs[k - 1]].n / n;
	for (int k = pl->nin - 1; k >= 0; k--) {
		const struct cact *x = &b->acts[pl->xs[k]];
		int64_t xrow = x->n / n;
		if (!bwd)
			KERN(hp__cu_copy2d(x->d, xrow, y->d + off[k], yrow,
					   xrow, n, 0, b->strm),
			     "concat forward");
		else if (pl->need[k])
			KERN(hp__cu_copy2d(y->g + off[k], yrow, x->g, xrow,
					   xrow, n, acc_of(pl, k), b->strm),
			     "concat backward");
	}
	return 0;
}

static int layer_fwd(struct cuda *b, int i, bool infer, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct clayer *l = &b->ls[i];
	const struct cact *x = &b->acts[pl->x], *y = &b->acts[pl->y];

	switch (pl->L.type) {
	case HP_LAYER_CONV:
		DNN(cudnnConvolutionForward(
			b->dnn, &one, x->t, x->d, l->f, b->w + b->poff[l->pw],
			l->conv, l->fa, b->ws, b->ws_bytes, &zero, y->t, y->d),
		    "conv forward");
		DNN(cudnnAddTensor(b->dnn, &one, l->c,
				   b->w + b->poff[l->pw + 1], &one, y->t, y->d),
		    "conv bias");
		return 0;
	case HP_LAYER_FC:
		return fc_fwd(b, i, err);
	case HP_LAYER_BN:
		if (infer)
			DNN(cudnnBatchNormalizationForwardInference(
				b->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
				x->t, x->d, y->t, y->d, l->c,
				b->w + b->poff[l->pw],
				b->w + b->poff[l->pw + 1], l->rmean, l->rvar,
				b->o->bn_eps),
			    "batch norm inference");
		else
			DNN(cudnnBatchNormalizationForwardTraining(
				b->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
				x->t, x->d, y->t, y->d, l->c,
				b->w + b->poff[l->pw],
				b->w + b->poff[l->pw + 1], b->o->bn_momentum,
				l->rmean, l->rvar, b->o->bn_eps, l->mean,
				l->ivar),
			    "batch norm forward");
		if (pl->fuse_relu)
			DNN(cudnnActivationForward(b->dnn, b->relu, &one, y->t,
						   y->d, &zero, y->t, y->d),
			    "relu forward");
		return 0;
	case HP_LAYER_RELU:
		DNN(cudnnActivationForward(b->dnn, b->relu, &one, x->t, x->d,
					   &zero, y->t, y->d),
		    "relu forward");
		return 0;
	case HP_LAYER_POOL:
		DNN(cudnnPoolingForward(b->dnn, l->pool, &one, x->t, x->d,
					&zero, y->t, y->d),
		    "pool forward");
		if (l->ykeep)
			CU(cudaMemcpyAsync(l->ykeep, y->d, (size_t)y->n * 4,
					   cudaMemcpyDeviceToDevice, b->strm),
			   "pool output");
		return 0;
	case HP_LAYER_DROPOUT: {
		double p = pl->L.p;
		uint64_t key =
		    hp__rng_mix(b->o->seed ^ hp__rng_mix(((uint64_t)i << 40) ^
							 b->fwd_count));
		if (infer) {
			if (x->d != y->d)
				CU(cudaMemcpyAsync(
				       y->d, x->d, (size_t)x->n * sizeof(float),
				       cudaMemcpyDeviceToDevice, b->strm),
				   "dropout inference");
			return 0;
		}
		/* sample s draws sample first + s of the global batch */
		key += (uint64_t)b->e->sample_offset *
		       (uint64_t)(x->n / b->p->batch);
		KERN(hp__cu_dropout_fwd(x->d, y->d, l->mask, x->n, key,
					(uint32_t)(p * 16777216.0),
					(float)(1 / (1 - p)), b->strm),
		     "dropout forward");
		return 0;
	}
	case HP_LAYER_SOFTMAX:
		DNN(cudnnSoftmaxForward(b->dnn, CUDNN_SOFTMAX_ACCURATE,
					CUDNN_SOFTMAX_MODE_CHANNEL, &one, x->t,
					x->d, &zero, y->t, y->d),
		    "softmax forward");
		return 0;
	case HP_LAYER_CLIP: /* in place (y == x) when the plan says so */
		KERN(hp__cu_clip_fwd(x->d, y->d, x->n, (float)pl->L.lo,
				     (float)pl->L.hi, b->strm),
		     "clip forward");
		return 0;
	case HP_LAYER_GAP: {
		const int64_t *xd = b->p->acts[pl->x].dims;
		KERN(hp__cu_gap_fwd(x->d, y->d, xd[0] * xd[1], xd[2] * xd[3],
				    b->strm),
		     "gap forward");
		return 0;
	}
	case HP_LAYER_ADD:
		return add_fwd(b, i, err);
	case HP_LAYER_CONCAT:
		return concat_run(b, i, false, err);
	case HP_LAYER_FLATTEN: /* a noop in every plan: nothing to move */
		return 0;
	default:
		break;
	}
	return hp_error_set(err, HP_EINTERNAL, "unknown layer type %d",
			    (int)pl->L.type);
}

/* A layer's backward: parameter gradients written over, its inputs'
 * gradients written or added to (beta) as the plan's acc[] says. */
static int layer_bwd(struct cuda *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct clayer *l = &b->ls[i];
	const struct cact *x = &b->acts[pl->x], *y = &b->acts[pl->y];
	const float *beta = acc_of(pl, 0) ? &one : &zero;

	switch (pl->L.type) {
	case HP_LAYER_CONV:
		DNN(cudnnConvolutionBackwardBias(b->dnn, &one, y->t, y->g,
						 &zero, l->c,
						 b->g + b->poff[l->pw + 1]),
		    "conv bias gradient");
		DNN(cudnnConvolutionBackwardFilter(
			b->dnn, &one, x->t, x->d, y->t, y->g, l->conv, l->wa,
			b->ws, b->ws_bytes, &zero, l->f, b->g + b->poff[l->pw]),
		    "conv weight gradient");
		if (pl->need_dsrc)
			DNN(cudnnConvolutionBackwardData(
				b->dnn, &one, l->f, b->w + b->poff[l->pw], y->t,
				y->g, l->conv, l->da, b->ws, b->ws_bytes, beta,
				x->t, x->g),
			    "conv input gradient");
		return 0;
	case HP_LAYER_FC:
		return fc_bwd(b, i, err);
	case HP_LAYER_BN:
		/* the fused relu first, in place on the gradient */
		if (pl->fuse_relu)
			DNN(cudnnActivationBackward(b->dnn, b->relu, &one, y->t,
						    y->d, y->t, y->g, y->t,
						    y->d, &zero, y->t, y->g),
			    "relu backward");
		DNN(cudnnBatchNormalizationBackward(
			b->dnn, CUDNN_BATCHNORM_SPATIAL, &one,
			pl->need_dsrc ? beta : &zero, &one, &zero, x->t, x->d,
			y->t, y->g, x->t, pl->need_dsrc ? x->g : b->scratch,
			l->c, b->w + b->poff[l->pw], b->g + b->poff[l->pw],
			b->g + b->poff[l->pw + 1], b->o->bn_eps, l->mean,
			l->ivar),
		    "batch norm backward");
		return 0;
	case HP_LAYER_RELU:
		/* relu's output stands in for its input (same sign) */
		DNN(cudnnActivationBackward(b->dnn, b->relu, &one, y->t, y->d,
					    y->t, y->g, y->t, y->d, beta, x->t,
					    x->g),
		    "relu backward");
		return 0;
	case HP_LAYER_POOL:
		DNN(cudnnPoolingBackward(b->dnn, l->pool, &one, y->t,
					 l->ykeep ? l->ykeep : y->d, y->t, y->g,
					 x->t, x->d, beta, x->t, x->g),
		    "pool backward");
		return 0;
	case HP_LAYER_DROPOUT:
		KERN(hp__cu_mul(y->g, l->mask, x->g, x->n, acc_of(pl, 0),
				b->strm),
		     "dropout backward");
		return 0;
	case HP_LAYER_SOFTMAX:
		DNN(cudnnSoftmaxBackward(b->dnn, CUDNN_SOFTMAX_ACCURATE,
					 CUDNN_SOFTMAX_MODE_CHANNEL, &one, y->t,
					 y->d, y->t, y->g, beta, x->t, x->g),
		    "softmax backward");
		return 0;
	case HP_LAYER_CLIP:
		/* clip's output stands in for its input: inside the bounds
		 * exactly where the input was (and x is y in place) */
		KERN(hp__cu_clip_bwd(y->d, y->g, x->g, x->n, (float)pl->L.lo,
				     (float)pl->L.hi, acc_of(pl, 0), b->strm),
		     "clip backward");
		return 0;
	case HP_LAYER_GAP: {
		const int64_t *xd = b->p->acts[pl->x].dims;
		KERN(hp__cu_gap_bwd(y->g, x->g, xd[0] * xd[1], xd[2] * xd[3],
				    acc_of(pl, 0), b->strm),
		     "gap backward");
		return 0;
	}
	case HP_LAYER_ADD:
		/* the gradient goes to each input unchanged; descending, the
		 * order the plan set acc[] in */
		for (int k = pl->nin - 1; k >= 0; k--)
			if (pl->need[k])
				KERN(hp__cu_copy2d(
					 y->g, y->n, b->acts[pl->xs[k]].g, y->n,
					 y->n, 1, acc_of(pl, k), b->strm),
				     "add backward");
		return 0;
	case HP_LAYER_CONCAT:
		return concat_run(b, i, true, err);
	default:
		break;
	}
	return hp_error_set(err, HP_EINTERNAL, "unknown layer type %d",
			    (int)pl->L.type);
}

static int forward(struct cuda *b, bool infer, double *loss,
		   struct hp_error *err)
{
	const struct cact *z = &b->acts[b->p->out];
	int64_t n = b->p->batch;
	double sum = 0;
	int rc;

	if ((rc = use_dev(b, err)))
		return rc;
	if (!infer)
		b->fwd_count++;
	b->fwd_done = b->bwd_done = false;
	for (int i = 0; i < b->p->nlayers; i++) {
		if (b->p->layers[i].noop)
			continue;
		if ((rc = layer_fwd(b, i, infer, err))) {
			hp_error_prefix(err, "layer %d", i);
			return rc;
		}
	}
	/* the loss and d loss / d logits, on the device */
	KERN(hp__cu_loss(z->d, b->p->classes > 0 ? b->labels : NULL, z->g,
			 b->dloss, n, z->n / n, b->strm),
	     "loss");
	CU(cudaMemcpyAsync(b->hloss, b->dloss, (size_t)n * sizeof(double),
			   cudaMemcpyDeviceToHost, b->strm),
	   "loss");
	CU(cudaStreamSynchronize(b->strm), "forward");
	for (int64_t i = 0; i < n; i++)
		sum += b->hloss[i];
	*loss = sum / (double)n;
	b->fwd_done = !infer;
	return 0;
}

static int cuda_forward(void *be, double *loss, struct hp_error *err)
{
	return forward(be, false, loss, err);
}

static int cuda_infer(void *be, double *loss, struct hp_error *err)
{
	return forward(be, true, loss, err);
}

static int cuda_backward(void *be, struct hp_error *err)
{
	struct cuda *b = be;
	int rc;

	if ((rc = use_dev(b, err)))
		return rc;
	if (!b->fwd_done)
		return hp_error_set(err, HP_EINVAL, "backward before forward");
	for (int i = b->p->nlayers - 1; i >= 0; i--) {
		const struct hp__plan_layer *pl = &b->p->layers[i];
		if (pl->noop || !pl->bwd)
			continue;
		if ((rc = layer_bwd(b, i, err))) {
			hp_error_prefix(err, "layer %d", i);
			return rc;
		}
	}
	CU(cudaStreamSynchronize(b->strm), "backward");
	b->bwd_done = true;
	return 0;
}

/* One launch over all parameters: they sit in one arena per role. */
static int cuda_update(void *be, struct hp_error *err)
{
	struct cuda *b = be;
	const struct hp_engine_opts *o = b->o;
	int rc = use_dev(b, err);

	if (rc)
		return rc;
	if (!b->bwd_done)
		return hp_error_set(err, HP_EINVAL, "update before backward");
	b->t++;
	if (o->opt == HP_OPT_SGD) {
		KERN(hp__cu_sgd(b->w, b->g, b->m1, b->pelems, (float)o->lr,
				(float)o->weight_decay, (float)o->momentum,
				b->strm),
		     "sgd");
	} else {
		double bc1 = 1 - pow(o->beta1, (double)b->t);
		double bc2 = 1 - pow(o->beta2, (double)b->t);
		KERN(hp__cu_adam(b->w, b->g, b->m1, b->m2, b->pelems,
				 (float)(o->lr / bc1), (float)(1 / sqrt(bc2)),
				 (float)o->beta1, (float)o->beta2,
				 (float)o->eps, (float)o->weight_decay,
				 b->strm),
		     "adam");
	}
	CU(cudaStreamSynchronize(b->strm), "update");
	return 0;
}

static int copy_out(struct cuda *b, float *out, const float *d, int64_t n,
		    struct hp_error *err)
{
	int rc = use_dev(b, err);

	if (rc)
		return rc;
	CU(cudaMemcpyAsync(out, d, (size_t)n * sizeof(float),
			   cudaMemcpyDeviceToHost, b->strm),
	   "copy");
	CU(cudaStreamSynchronize(b->strm), "copy");
	return 0;
}

static int cuda_output_get(void *be, float *out, struct hp_error *err)
{
	struct cuda *b = be;
	const struct cact *z = &b->acts[b->p->out];

	return copy_out(b, out, z->d, z->n, err);
}

static int cuda_input_grad_get(void *be, float *out, struct hp_error *err)
{
	struct cuda *b = be;

	if (!b->acts[0].g)
		return hp_error_set(err, HP_EINVAL, "no input gradient kept");
	return copy_out(b, out, b->acts[0].g, b->acts[0].n, err);
}

static int cuda_mask_get(void *be, int layer, float *out, struct hp_error *err)
{
	struct cuda *b = be;
	const struct cact *x = &b->acts[b->p->layers[layer].x];

	if (!b->ls[layer].mask) { /* p = 0: keeps everything */
		for (int64_t i = 0; i < x->n; i++)
			out[i] = 1.0f;
		return 0;
	}
	return copy_out(b, out, b->ls[layer].mask, x->n, err);
}

static size_t cuda_peak_bytes(const void *be)
{
	return ((const struct cuda *)be)->total_bytes;
}

static const char *cuda_desc(const void *be)
{
	return ((const struct cuda *)be)->desc;
}

static int cuda_energy_mj(void *be, uint64_t *mj)
{
	return hp__nvml_energy_mj(((struct cuda *)be)->nvml, mj);
}

static int cuda_device_info(const void *be, struct hp_engine_device_info *out)
{
	const struct cuda *b = be;

	snprintf(out->name, sizeof(out->name), "%.127s", b->name);
	snprintf(out->driver, sizeof(out->driver), "%.63s", b->driver);
	return 0;
}

const struct hp__engine_ops hp__engine_cuda_ops = {
    .name = "cuda",
    .create = cuda_create,
    .destroy = cuda_destroy,
    .set_input = cuda_set_input,
    .forward = cuda_forward,
    .backward = cuda_backward,
    .update = cuda_update,
    .infer = cuda_infer,
    .param_io = cuda_param_io,
    .bn_io = cuda_bn_io,
    .grads_io = cuda_grads_io,
    .grads_device = cuda_grads_device,
    .counters = cuda_counters,
    .output_get = cuda_output_get,
    .input_grad_get = cuda_input_grad_get,
    .mask_get = cuda_mask_get,
    .peak_bytes = cuda_peak_bytes,
    .desc = cuda_desc,
    .energy_mj = cuda_energy_mj,
    .device_info = cuda_device_info,
};
