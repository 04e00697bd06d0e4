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
	size_t max_bytes;    /* refuse nets that need more; 0: 80% of RAM
				on the CPU, the device's free memory on a
				GPU */
	bool input_grad;     /* also compute d loss / d input (tests) */
	bool layer_times;    /* time every layer (hp_engine_layer_times) */
};

/* Fill o with the defaults above. */
void hp_engine_opts_init(struct hp_engine_opts *o);

struct hp_engine;

/*
 * Build an engine for spec at o->batch (o NULL: defaults).  The memory the
 * net needs is counted first (on the CPU exactly, from the primitives'
 * layouts and scratchpads; see hp_engine_estimate_bytes()) and a net over
 * the limit is refused with HP_ETOOBIG before anything large is
 * allocated; an unknown device gives HP_EINVAL, a device without a backend
 * HP_EDEVICE.  Returns NULL with err
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
	int slot;	  /* 0: the layer's weight (or scale), 1: its bias */
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
 * Inference: a forward pass with batch norm on its running statistics and
 * dropout off (evaluation), on the loaded batch.  loss as hp_engine_step();
 * the logits are read with hp_engine_output_get().  It does not count as a
 * training forward (dropout's random stream and the counters are left as
 * they were), and a backward after it is refused until the next
 * hp_engine_forward().
 */
int hp_engine_infer(struct hp_engine *e, double *loss, struct hp_error *err);

/* The learning rate of the following updates (schedules change it). */
int hp_engine_set_lr(struct hp_engine *e, double lr);

/*
 * Dropout's masks for data-parallel training: sample i of the loaded batch
 * draws the mask of sample first + i of a global batch, so ranks that
 * split one global batch draw the masks one engine on the whole batch
 * would (when the ranks' backends store the activation alike; see
 * docs/trainer.md).  0 (the default): the batch is the global batch.
 */
void hp_engine_set_sample_offset(struct hp_engine *e, int64_t first);

/*
 * All gradients of the last backward as one flat array: the parameters in
 * hp_engine_param_info() order, each in its plain layout,
 * hp_engine_param_elems() floats in all.  hp_engine_grads_set() replaces
 * them (an all-reduce's result) before hp_engine_update().
 */
int64_t hp_engine_param_elems(const struct hp_engine *e);
int hp_engine_grads_get(struct hp_engine *e, float *out, struct hp_error *err);
int hp_engine_grads_set(struct hp_engine *e, const float *in,
			struct hp_error *err);

/*
 * Where a device backend keeps the gradients, for a collective library
 * that reduces on the device (NCCL): *ptr is the device address of
 * *nfloats floats holding every gradient (with zero padding between
 * tensors, which a sum keeps zero) and *stream the backend's CUDA stream
 * (a cudaStream_t).  HP_EUNSUPP on the CPU backend.
 */
int hp_engine_grads_device(struct hp_engine *e, void **ptr, int64_t *nfloats,
			   void **stream);

/*
 * The engine's whole training state as named tensors, for checkpoints and
 * for moving a run to an engine at another batch: every parameter, then
 * the optimizer's state of each parameter (SGD: "<param>.momentum_buffer";
 * Adam: "<param>.exp_avg" and "<param>.exp_avg_sq"), then each batch
 * norm's "<layer>.running_mean" and "<layer>.running_var", all in plain
 * layouts.  Together with the counters below, setting it on an engine
 * built from the same spec and options (any batch) continues the run bit
 * for bit.
 */
struct hp_engine_state_info {
	const char *name; /* the engine's */
	int64_t numel;
	int param; /* index of the parameter it belongs to, or -1 */
	int layer; /* index into spec->layers */
};
int hp_engine_state_count(const struct hp_engine *e);
/* Describe state tensor k; HP_ERANGE if k is out of range. */
int hp_engine_state_info(const struct hp_engine *e, int k,
			 struct hp_engine_state_info *out);
int hp_engine_state_get(struct hp_engine *e, int k, float *out,
			struct hp_error *err);
int hp_engine_state_set(struct hp_engine *e, int k, const float *in,
			struct hp_error *err);

/* The counters a continued run needs: optimizer steps taken (Adam's bias
 * correction) and training forwards run (dropout's random stream). */
struct hp_engine_counters {
	int64_t updates;
	uint64_t forwards;
};
void hp_engine_counters_get(const struct hp_engine *e,
			    struct hp_engine_counters *out);
int hp_engine_counters_set(struct hp_engine *e,
			   const struct hp_engine_counters *in);

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
 * the optimizer state (a step allocates nothing more; oneDNN's, cuDNN's
 * and cuBLAS's own objects, such as JIT code and handles, are not in it). */
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
 * The bytes hp_engine_new() would allocate on the CPU for spec at batch
 * with optimizer opt and the default options (all cores), found without
 * allocating them: the CPU backend builds the net's oneDNN primitive
 * descriptors, as hp_engine_new() does, and adds up the buffers they call
 * for (activations and their gradients in oneDNN's padded layouts,
 * parameters, gradients and optimizer state, copies in the layouts the
 * backward primitives want, workspaces, batch norm statistics, dropout
 * masks, the largest scratchpad), so on the same host and thread count it
 * is what hp_engine_peak_bytes() then reports.  It takes about as long as
 * building the descriptors (tens of milliseconds for ResNet-50).  Where
 * oneDNN cannot build the net, a rougher figure from the shapes alone.
 * Negative code on an invalid spec or batch, or on overflow (HP_ETOOBIG).
 * Sets nothing in the calling thread (its OpenMP thread count is kept).
 */
int64_t hp_engine_estimate_bytes(const struct hp_spec *s, int64_t batch,
				 enum hp_optimizer opt);

/*
 * Measure this host's CPU peaks at `threads` (0: all CPUs), each figure
 * for about `seconds` (best of the runs in that time, at least 3):
 * FP32 FLOP/s of a compute-bound oneDNN sgemm (1024^3), and memory
 * bandwidth by a STREAM triad a[i] = b[i] + s c[i] on doubles over arrays
 * of each max(4 x l3_bytes, 64 MiB) (l3_bytes <= 0: 64 MiB), beside a
 * memcpy of the same arrays.  Fills out (when included); HP_ENOMEM,
 * HP_EINVAL for threads or seconds out of range, HP_EDEVICE when oneDNN
 * fails.
 */
struct hp_host_peaks;
int hp_engine_cpu_peaks(int threads, double seconds, int64_t l3_bytes,
			struct hp_host_peaks *out, struct hp_error *err);

/*
 * Measure one core's input pipeline (struct hp_loader_cost) for about
 * `seconds` of the calling thread's CPU time (at least 3 batches of 8
 * samples; the best batch).  HP_EINVAL for seconds out of (0, 600],
 * HP_ENOMEM, HP_EDEVICE when libjpeg fails.
 */
struct hp_loader_cost;
int hp_engine_loader_cost(double seconds, struct hp_loader_cost *out,
			  struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_ENGINE_H */
