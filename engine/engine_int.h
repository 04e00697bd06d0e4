/*
 * engine_int.h - internals of the training-step engine: the plan every
 * backend builds from (shapes, which layers run in place, which run
 * backward) and the ops table a backend fills (after curl's vtls_int.h).
 */
#ifndef HP_ENGINE_INT_H
#define HP_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/engine.h"

/* One layer of the plan. */
struct hp__plan_layer {
	struct hp_spec_layer L;
	int x, y; /* input and output activation (index into acts) */
	/* all inputs (add, concat read several; xs[0] == x), whether each
	 * needs its gradient, and whether that gradient is added to what
	 * other readers of the same activation wrote before it in the
	 * backward pass (acc) or written over it */
	int nin;
	int xs[HP_SPEC_MAX_INPUTS];
	bool need[HP_SPEC_MAX_INPUTS];
	bool acc[HP_SPEC_MAX_INPUTS];
	bool noop;	 /* y == x: relu fused into bn, final softmax, p=0,
			    flatten */
	bool inplace;	 /* y == x, but the layer runs (relu, clip, dropout) */
	bool fuse_relu;	 /* bn: fused with the relu that follows */
	bool bwd;	 /* runs backward at all */
	bool need_dsrc;	 /* computes the gradient of its input */
	bool has_params; /* conv, bn, fc, ... */
	int nparams;	 /* 2 (weight, bias), 1 (prelu's weight) or 0 */
};

/* An activation tensor: N, C, H, W (H = W = 1 and rank 2 after an fc). */
struct hp__plan_act {
	int64_t dims[4];
	int rank;
	bool diff; /* has a gradient buffer */
};

struct hp__plan {
	int64_t batch;
	int nlayers;
	struct hp__plan_layer *layers;
	int nacts;
	struct hp__plan_act *acts; /* acts[0]: the network input */
	int out;		   /* activation the loss reads */
	int64_t classes;
	int nparams;	     /* parameter tensors */
	int64_t param_elems; /* their elements */
};

/* Walk spec at batch; fill p (release with hp__plan_release()). */
int hp__plan_build(const struct hp_spec *s, int64_t batch, bool input_grad,
		   struct hp__plan *p, struct hp_error *err);
void hp__plan_release(struct hp__plan *p);
/* Parameter i's first values into v (its numel floats), as PyTorch
 * draws them: uniform(+-1/sqrt(fan_in)) for conv and fc weights and
 * biases, 1 and 0 for a norm's scale and shift, 0.25 for a prelu's
 * slope; the random ones from *st, so that every backend, drawing the
 * parameters in order, starts from the same weights. */
void hp__param_init(const struct hp_engine_param *ps, const struct hp__plan *p,
		    int i, uint64_t *st, float *v);
/* A rough figure of the bytes a plan needs with optimizer opt, from its
 * shapes alone: the first check of hp_engine_new() and the estimate of
 * backends without an estimate op. */
int64_t hp__plan_bytes(const struct hp__plan *p, enum hp_optimizer opt);

/*
 * A backend.  create() builds its state from the plan (it may keep a
 * pointer to *p and to *o, which outlive it) and returns 0 or a negative
 * code with err set; every other op gets that state.
 */
/* Roles of a parameter's tensors for param_io. */
enum {
	PARAM_IO_VALUE = 0,
	PARAM_IO_GRAD = 1,
	PARAM_IO_OPT1 = 2, /* SGD's momentum, Adam's first moment */
	PARAM_IO_OPT2 = 3, /* Adam's second moment */
};

struct hp__engine_ops {
	const char *name;
	int (*create)(struct hp_engine *e, struct hp_error *err);
	void (*destroy)(void *be);
	int (*set_input)(void *be, const float *x, const int32_t *labels,
			 struct hp_error *err);
	int (*forward)(void *be, double *loss, struct hp_error *err);
	int (*backward)(void *be, struct hp_error *err);
	int (*update)(void *be, struct hp_error *err);
	/* forward in inference mode (hp_engine_infer()) */
	int (*infer)(void *be, double *loss, struct hp_error *err);
	/* what: a PARAM_IO_* role; dir 0: get, 1: set; plain layout */
	int (*param_io)(void *be, int i, int what, int dir, float *buf,
			struct hp_error *err);
	/* batch norm layer `layer`'s running mean (which 0) or variance (1) */
	int (*bn_io)(void *be, int layer, int which, int dir, float *buf,
		     struct hp_error *err);
	/* optional: every gradient at once, flat (NULL: param_io per tensor) */
	int (*grads_io)(void *be, float *flat, int dir, struct hp_error *err);
	/* optional: the device gradient arena (NULL: HP_EUNSUPP) */
	int (*grads_device)(void *be, void **ptr, int64_t *nfloats,
			    void **stream);
	/* the counters; dir 0: get, 1: set */
	void (*counters)(void *be, struct hp_engine_counters *c, int dir);
	int (*output_get)(void *be, float *out, struct hp_error *err);
	int (*input_grad_get)(void *be, float *out, struct hp_error *err);
	int (*mask_get)(void *be, int layer, float *out, struct hp_error *err);
	size_t (*peak_bytes)(const void *be);
	/* optional: the bytes create() would allocate for plan p with
	 * options o, found without allocating them (NULL: the plan's
	 * hp__plan_bytes() is the estimate) */
	int (*estimate)(const struct hp__plan *p,
			const struct hp_engine_opts *o, size_t *bytes,
			struct hp_error *err);
	const char *(*desc)(const void *be);
	/* optional (NULL: unsupported, as on the CPU) */
	int (*energy_mj)(void *be, uint64_t *mj);
	int (*device_info)(const void *be, struct hp_engine_device_info *out);
	/* seconds per plan layer (+1: the loss) and steps summed; reset */
	int (*layer_times)(const void *be, double *out, int n, int *steps);
	void (*layer_times_reset)(void *be);
};

struct hp_engine {
	const struct hp__engine_ops *ops;
	void *be; /* backend state */
	struct hp_engine_opts o;
	int device_index; /* K of "cuda:K"; 0 for the CPU */
	struct hp__plan plan;
	struct hp_spec spec;		/* copy: no name; layers owned */
	struct hp_engine_param *params; /* plan.nparams */
	char (*param_names)[48];
	int64_t sample_offset; /* dropout: first sample of the loaded batch */
	/* the state tensors (hp_engine_state_info()) and what each is */
	struct hp_engine_state_info *state;
	char (*state_names)[64];
	int *state_role; /* PARAM_IO_* for a parameter's, 4 + which for bn */
	int nstate;
};

extern const struct hp__engine_ops hp__engine_cpu_ops;
#ifdef HP_HAVE_CUDA
extern const struct hp__engine_ops hp__engine_cuda_ops;
#endif

/* Deterministic random numbers (splitmix64). */
static inline uint64_t hp__rng_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
/* Uniform in [0, 1) from the state *s, which it advances. */
static inline double hp__rng_uniform(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return (double)(hp__rng_mix(*s) >> 11) * 0x1.0p-53;
}

#endif /* HP_ENGINE_INT_H */
