/*
 * engine.h - the training-step engine: builds a network from a hetpool
 * model spec (struct hp_spec) and runs training steps on it (forward,
 * backward with input and weight gradients, and the optimizer update: SGD
 * with momentum or Adam).  The profiler times these steps.
 *
 * Backends fill one ops table (engine/engine_int.h): "cpu" runs on oneDNN;
 * "cuda:K" needs a CUDA backend, refused with HP_EDEVICE in builds without
 * one.  Everything a step needs is created and allocated once, in
 * hp_engine_new(); a step allocates nothing.
 *
 * Threads: the CPU backend runs on OpenMP (oneDNN's runtime); every call
 * sets the thread count of the calling thread (opts.threads).  An engine
 * is not safe to share between threads without a lock.
 *
 * Ownership: hp_engine_new() returns an engine the caller frees with
 * hp_engine_free(); it copies what it needs from the spec and the options,
 * which the caller may release afterwards.  Arrays passed in or out are the
 * caller's.  Strings returned by the engine live as long as the engine.
 *
 * Layouts at the API: activations are plain NCHW (or NC after an fc layer),
 * conv weights OIHW, fc weights [units][in] with "in" in C,H,W order (the
 * flatten order), bn scale/shift and biases [C].
 */
#ifndef HETPOOL_ENGINE_H
#define HETPOOL_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/model.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

enum hp_optimizer {
	HP_OPT_SGD,  /* SGD with momentum (PyTorch's formula, no dampening) */
	HP_OPT_ADAM, /* Adam with bias correction (PyTorch's formula) */
};

struct hp_engine_opts {
	const char *device; /* "cpu" (default when NULL) or "cuda:K" */
	int threads;	    /* OpenMP threads; 0: all cores */
	int64_t batch;	    /* samples per step (default 32) */
	enum hp_optimizer opt;
	double lr;	     /* learning rate (default 0.01) */
	double momentum;     /* SGD (default 0.9) */
	double beta1, beta2; /* Adam (0.9, 0.999) */
	double eps;	     /* Adam (1e-8) */
	double weight_decay; /* L2 added to the gradient (default 0) */
	double bn_eps;	     /* batch norm epsilon (1e-5) */
	double bn_momentum;  /* running statistics update (0.1) */
	uint64_t seed;	     /* weight init, dropout masks */
	size_t max_bytes;    /* refuse nets that need more; 0: 80% of RAM */
	bool input_grad;     /* also compute d loss / d input (tests) */
	bool layer_times;    /* time every layer (hp_engine_layer_times) */
};

/* Fill o with the defaults above. */
void hp_engine_opts_init(struct hp_engine_opts *o);

struct hp_engine;

/*
 * Build an engine for spec at o->batch (o NULL: defaults).  The memory the
 * net needs is estimated first and a net over the limit is refused with
 * HP_ETOOBIG before anything large is allocated; an unknown device gives
 * HP_EINVAL, a device without a backend HP_EDEVICE.  Returns NULL with err
 * set on failure.  Parameters are initialized as PyTorch does (uniform
 * +-1/sqrt(fan_in) for conv and fc, 1 and 0 for bn) from o->seed.
 */
struct hp_engine *hp_engine_new(const struct hp_spec *spec,
				const struct hp_engine_opts *o,
				struct hp_error *err);
/* Free the engine and everything it allocated; NULL is a no-op. */
void hp_engine_free(struct hp_engine *e);

/*
 * Load one batch: x is batch*C*H*W floats (NCHW); labels is batch class
 * indices in [0, classes) (ignored, may be NULL, when the spec has no
 * "classes").  Both are copied.
 */
int hp_engine_set_input(struct hp_engine *e, const float *x,
			const int32_t *labels, struct hp_error *err);
/* Load a batch of standard normal inputs and uniform labels from seed. */
int hp_engine_fill_synthetic(struct hp_engine *e, uint64_t seed,
			     struct hp_error *err);

/*
 * One training step on the loaded batch: forward, backward, update.  The
 * loss is the mean softmax cross-entropy over the batch when the spec has
 * "classes" (a softmax as the last layer is then taken as the loss's own),
 * else 0.5 * sum(y^2) / batch of the last layer's output y.  loss may be
 * NULL.  BatchNorm runs in training mode (batch statistics; the running
 * statistics are updated) and dropout draws a new mask each forward.
 */
int hp_engine_step(struct hp_engine *e, double *loss, struct hp_error *err);
/* The three parts of a step, for tests. */
int hp_engine_forward(struct hp_engine *e, double *loss, struct hp_error *err);
int hp_engine_backward(struct hp_engine *e, struct hp_error *err);
int hp_engine_update(struct hp_engine *e, struct hp_error *err);

/* A trainable tensor, in the order PyTorch's parameters() lists them. */
struct hp_engine_param {
	const char *name; /* e.g. "conv0.weight", "bn1.bias"; the engine's */
	int layer;	  /* index into spec->layers */
	int rank;
	int64_t dims[4];
	int64_t numel;
};
int hp_engine_param_count(const struct hp_engine *e);
/* Describe parameter i; HP_ERANGE if i is out of range. */
int hp_engine_param_info(const struct hp_engine *e, int i,
			 struct hp_engine_param *out);
/* Copy parameter i, or its gradient from the last backward, to out
 * (numel floats, plain layout), or set it from in. */
int hp_engine_param_get(struct hp_engine *e, int i, float *out,
			struct hp_error *err);
int hp_engine_param_set(struct hp_engine *e, int i, const float *in,
			struct hp_error *err);
int hp_engine_grad_get(struct hp_engine *e, int i, float *out,
		       struct hp_error *err);

/*
 * The last layer's output (the logits before the loss) from the last
 * forward: dims gets N, C, H, W (H = W = 1 after an fc) and the return is
 * the element count; hp_engine_output_get() copies it as plain NCHW.
 */
int64_t hp_engine_output_dims(const struct hp_engine *e, int64_t dims[4]);
int hp_engine_output_get(struct hp_engine *e, float *out, struct hp_error *err);
/* d loss / d input (batch*C*H*W floats) from the last backward; needs
 * opts.input_grad, else HP_EINVAL. */
int hp_engine_input_grad_get(struct hp_engine *e, float *out,
			     struct hp_error *err);
/*
 * The mask the last forward drew for dropout layer `layer` (an index into
 * spec->layers), as plain NCHW floats: 0 or 1/(1-p); the layer's output is
 * its input times the mask.
 */
int hp_engine_dropout_mask_get(struct hp_engine *e, int layer, float *out,
			       struct hp_error *err);

/*
 * Where a step's time went, with opts.layer_times: out[i] (i < n, n <=
 * spec->nlayers + 1) gets the seconds layer i of the spec spent in forward,
 * backward and its parameters' update, summed over the steps since the
 * engine was built or hp_engine_layer_times_reset(); out[spec->nlayers]
 * is the loss and its gradient.  *steps gets the number of steps summed.
 * Each layer is timed with the stream drained, so the times add up to the
 * step.  HP_EINVAL without opts.layer_times, HP_EUNSUPP where the backend
 * cannot time layers (GPUs).
 */
int hp_engine_layer_times(const struct hp_engine *e, double *out, int n,
			  int *steps, struct hp_error *err);
void hp_engine_layer_times_reset(struct hp_engine *e);

/* Bytes the engine allocated: all tensors, workspaces, the scratchpad and
 * the optimizer state (a step allocates nothing more). */
size_t hp_engine_peak_bytes(const struct hp_engine *e);
/* e.g. "cpu: oneDNN 2.6.3 avx512_core, 2 threads" */
const char *hp_engine_device_desc(const struct hp_engine *e);

/* The device behind an engine, where its backend can say (GPUs). */
struct hp_engine_device_info {
	char name[128];	 /* e.g. "NVIDIA H200" */
	char driver[64]; /* driver version, e.g. "570.86.15" */
};
/* Fill out; HP_EUNSUPP for the CPU backend (the host's CPU model is
 * known without the engine). */
int hp_engine_device_info(const struct hp_engine *e,
			  struct hp_engine_device_info *out);
/*
 * The device's energy counter in millijoules (NVML on GPUs): the
 * difference of two readings is the energy used between them.  HP_EUNSUPP
 * where energy is not measured (the CPU; a GPU without NVML).
 */
int hp_engine_energy_mj(struct hp_engine *e, uint64_t *mj);

/*
 * Estimate of the bytes hp_engine_new() would allocate for spec at batch
 * with optimizer opt, without allocating; negative code on an invalid spec
 * or batch, or on overflow (HP_ETOOBIG).
 */
int64_t hp_engine_estimate_bytes(const struct hp_spec *s, int64_t batch,
				 enum hp_optimizer opt);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_ENGINE_H */
