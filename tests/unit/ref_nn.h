/*
 * ref_nn.h - a naive reference for the training-step engine's tests: every
 * layer of a hetpool spec (conv with groups, bn in training mode, relu,
 * clip, max/avg pool, global average pool, add, concat, flatten, dropout
 * with a given mask, fc, softmax, softmax cross-entropy), in the spec's
 * DAG (a value read by several layers gets their gradients summed), as plain
 * loops in double precision, forward and backward, with no code shared
 * with the engine.
 *
 * Layouts: activations NCHW; conv weights OIHW; fc weights [units][in]
 * with "in" in C,H,W order; parameters in the order conv/bn/fc layers
 * appear, weight then bias (bn: scale then shift).  All arrays belong to
 * the caller.
 */
#ifndef HP_REF_NN_H
#define HP_REF_NN_H

#include <stdint.h>

#include "hetpool/model.h"

/* One net evaluation.  masks[i] is the dropout mask of layer i (0 or
 * 1/(1-p) per element of its input), NULL for other layers or p = 0. */
struct ref_net {
	const struct hp_spec *spec;
	int64_t batch;
	double bn_eps;
	double *const *params; /* as hp_engine_param_info() lists them */
	const double *const *masks;
	const int32_t *labels;
};

/* Number of parameter tensors and the elements of tensor i. */
int ref_nparams(const struct hp_spec *s);
int64_t ref_param_numel(const struct hp_spec *s, int i);
/* Elements of the last layer's output for one sample. */
int64_t ref_out_numel(const struct hp_spec *s);

/*
 * Forward (and backward when dparams or dx is not NULL): returns the loss
 * (mean softmax cross-entropy with "classes", else 0.5 sum(y^2) / batch;
 * a last softmax layer is the loss's own), fills logits (batch *
 * ref_out_numel) when not NULL, dparams[i] (ref_param_numel(i) each) and
 * dx (the input's size).  Returns NaN on a spec it does not handle.
 */
double ref_net_run(const struct ref_net *r, const double *x, double *logits,
		   double **dparams, double *dx);

/* Single layers, exposed for direct use. */
void ref_conv_fwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  const double *wt, const double *b, int64_t o, int64_t k,
		  int64_t s, int64_t p, double *y);
void ref_conv_bwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  const double *wt, int64_t o, int64_t k, int64_t s, int64_t p,
		  const double *dy, double *dx, double *dw, double *db);
/* Grouped convolution: g groups of c/g input and o/g output channels;
 * weights [o][c/g][k][k]. */
void ref_gconv_fwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		   const double *wt, const double *b, int64_t o, int64_t k,
		   int64_t s, int64_t p, int64_t g, double *y);
void ref_gconv_bwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		   const double *wt, int64_t o, int64_t k, int64_t s, int64_t p,
		   int64_t g, const double *dy, double *dx, double *dw,
		   double *db);
/* exclude: an average over the window's taps inside the input, not
 * k x k (PyTorch's count_include_pad=False, and its ceil-mode overhang) */
void ref_pool_fwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  int64_t k, int64_t s, int64_t p, int ceil_mode, int is_max,
		  int exclude, double *y);
void ref_pool_bwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  int64_t k, int64_t s, int64_t p, int ceil_mode, int is_max,
		  int exclude, const double *dy, double *dx);
void ref_bn_fwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, const double *b, double eps, double *y);
void ref_bn_bwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, double eps, const double *dy, double *dx,
		double *dg, double *db);
/* Layer norm over the c channels at each (sample, position); dg and db
 * are written, not added to. */
void ref_ln_fwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, const double *b, double eps, double *y);
void ref_ln_bwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, double eps, const double *dy, double *dx,
		double *dg, double *db);
/* Group norm of g groups: each sample's group of c / g channels normalized
 * over its channels and positions; scale and shift per channel. */
void ref_gn_fwd(const double *x, int64_t n, int64_t c, int64_t hw, int64_t g,
		const double *sc, const double *sh, double eps, double *y);
void ref_gn_bwd(const double *x, int64_t n, int64_t c, int64_t hw, int64_t g,
		const double *sc, double eps, const double *dy, double *dx,
		double *dsc, double *dsh);

#endif
