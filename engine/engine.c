/*
 * engine.c - front end of the training-step engine: options, the plan
 * (shapes, in-place and backward decisions, memory estimate) shared by all
 * backends, device selection, and the public calls, which check their
 * arguments and hand over to the backend's ops table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_int.h"
#include "util/banned.h"

/* Above this a batch is refused outright (dims stay far from overflow). */
#define ENGINE_MAX_BATCH ((int64_t)1 << 31)

/* The most elements one sample of a value may have: oneDNN's inner product
 * counts a sample's inputs (C*H*W) in an int (2^32 of them end in a
 * division by zero inside it, more give wrong sizes), and cuDNN takes a
 * tensor's strides, a sample's elements among them, as ints. */
#define ENGINE_MAX_SAMPLE_ELEMS ((int64_t)INT32_MAX)

/* Whether one sample of value a is over ENGINE_MAX_SAMPLE_ELEMS; its count
 * in *n (or a saturated one). */
static bool sample_too_big(const struct hp__plan_act *a, int64_t *n)
{
	if (!hp_mul_i64(a->dims[1], a->dims[2], n) ||
	    !hp_mul_i64(*n, a->dims[3], n)) {
		*n = INT64_MAX;
		return true;
	}
	return *n > ENGINE_MAX_SAMPLE_ELEMS;
}

void hp_engine_opts_init(struct hp_engine_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->device = "cpu";
	o->batch = 32;
	o->opt = HP_OPT_SGD;
	o->lr = 0.01;
	o->momentum = 0.9;
	o->beta1 = 0.9;
	o->beta2 = 0.999;
	o->eps = 1e-8;
	o->bn_eps = 1e-5;
	o->bn_momentum = 0.1;
	o->seed = 1;
}

void hp__plan_release(struct hp__plan *p)
{
	free(p->layers);
	free(p->acts);
	memset(p, 0, sizeof(*p));
}

static int64_t round_up(int64_t v, int64_t m)
{
	return (v + m - 1) / m * m;
}

/* Layer i's input k (-1: the network input). */
static int input_of(const struct hp_spec_layer *L, int i, int k)
{
	return L->ninputs ? L->inputs[k] : i - 1;
}

/* Scratch of hp__plan_build(), per value (v = layer + 1; 0: the input). */
struct plan_tmp {
	int64_t (*sh)[3];
	int *uses;    /* spec layers reading layer i's output */
	int *src;     /* the value a noop layer passes on (else itself) */
	int *readers; /* running layers reading a value (+ the loss) */
	int *act;     /* the activation holding a value */
	int *ptype;   /* type of the layer that computed it (-1: input) */
	bool *up;     /* a trainable layer (or the input's gradient) is
			 upstream: its gradient is needed */
};

static void plan_tmp_free(struct plan_tmp *t)
{
	free(t->sh);
	free(t->uses);
	free(t->src);
	free(t->readers);
	free(t->act);
	free(t->ptype);
	free(t->up);
}

static int plan_checks(const struct hp_spec_layer *L, int i, const char *tn,
		       struct hp_error *err)
{
	switch (L->type) {
	case HP_LAYER_CONV:
	case HP_LAYER_POOL:
		if (L->kernel < 1 || L->stride < 1 || L->pad < 0 ||
		    (L->asym && (L->type != HP_LAYER_CONV || L->pad_b < 0 ||
				 L->pad_r < 0)) ||
		    L->groups < 0 ||
		    (L->type == HP_LAYER_CONV && L->filters < 1))
			return hp_error_set(err, HP_EINVAL,
					    "layer %d (%s): sizes must be "
					    "positive",
					    i, tn);
		if (L->dilation < 0 || L->dilation > 4096 ||
		    (L->type == HP_LAYER_POOL && L->dilation > 1))
			return hp_error_set(err, HP_EINVAL,
					    "layer %d (%s): dilation %lld (a "
					    "conv's, 1 to 4096)",
					    i, tn, (long long)L->dilation);
		if (L->rect && (L->type == HP_LAYER_POOL || L->kernel_w < 1 ||
				L->pad_w < 0))
			return hp_error_set(err, HP_EINVAL,
					    "layer %d (%s): a non-square "
					    "window is for convs only, sizes "
					    "positive",
					    i, tn);
		if (L->type == HP_LAYER_POOL && !L->pool_max && L->ceil_mode &&
		    !L->pool_exclude && L->pad > 0)
			return hp_error_set(err, HP_EINVAL,
					    "layer %d (pool): an average in "
					    "ceil mode with its padding "
					    "counted (count_include_pad false "
					    "needed)",
					    i);
		if (L->type == HP_LAYER_POOL && 2 * L->pad > L->kernel)
			return hp_error_set(err, HP_EINVAL,
					    "layer %d (pool): pad %lld is more "
					    "than half the kernel",
					    i, (long long)L->pad);
		break;
	case HP_LAYER_DROPOUT:
		if (!(L->p >= 0 && L->p < 1))
			return hp_error_set(err, HP_ERANGE,
					    "layer %d (dropout): p %g not in "
					    "[0, 1)",
					    i, L->p);
		break;
	case HP_LAYER_FC:
		if (L->units < 1)
			return hp_error_set(err, HP_EINVAL,
					    "layer %d (fc): units must be "
					    "positive",
					    i);
		break;
	case HP_LAYER_CLIP:
		if (!(L->lo < L->hi))
			return hp_error_set(err, HP_ERANGE,
					    "layer %d (clip): min must be less "
					    "than max",
					    i);
		break;
	case HP_LAYER_BN:
	case HP_LAYER_RELU:
	case HP_LAYER_SOFTMAX:
	case HP_LAYER_GAP:
	case HP_LAYER_ADD:
	case HP_LAYER_CONCAT:
	case HP_LAYER_FLATTEN:
	case HP_LAYER_SIGMOID:
	case HP_LAYER_MUL:
	case HP_LAYER_SLICE:   /* its channels: hp_spec_shapes() */
	case HP_LAYER_SHUFFLE: /* its groups: hp_spec_shapes() */
	case HP_LAYER_GELU:
	case HP_LAYER_TANH:
	case HP_LAYER_SOFTPLUS:
	case HP_LAYER_PRELU:
		break;
	case HP_LAYER_SCALE: /* its channels: hp_spec_shapes() */
		if (L->nch < 0 || L->nch > HP_SPEC_SCALE_CH)
			return hp_error_set(err, HP_ERANGE,
					    "layer %d (scale): %d channels' "
					    "factors (0 to %d)",
					    i, L->nch, HP_SPEC_SCALE_CH);
		for (int k = 0; k <= L->nch; k++) {
			double f = k < L->nch ? L->chf[k] : L->alpha,
			       s = k < L->nch ? L->chs[k] : L->beta;
			if (!(f != 0 && fabs(f) <= 1e6 && fabs(s) <= 1e6))
				return hp_error_set(err, HP_ERANGE,
						    "layer %d (scale): factor "
						    "must not be 0, factor and "
						    "shift within +-1e6",
						    i);
		}
		break;
	case HP_LAYER_LEAKYRELU:
	case HP_LAYER_ELU:
		/* the gradient comes from the output: alpha >= 0 keeps its
		 * sign the input's */
		if (!(L->alpha >= 0 && L->alpha <= 1e6))
			return hp_error_set(err, HP_ERANGE,
					    "layer %d (%s): alpha %g not in "
					    "[0, 1e6]",
					    i, hp_spec_layer_name(L->type),
					    L->alpha);
		break;
	case HP_LAYER_LAYERNORM:
	case HP_LAYER_GROUPNORM: /* its groups: hp_spec_shapes() */
		if (!(L->eps > 0 && L->eps <= 1))
			return hp_error_set(err, HP_ERANGE,
					    "layer %d (%s): eps %g not in (0, "
					    "1]",
					    i, hp_spec_layer_name(L->type),
					    L->eps);
		break;
	case HP_LAYER_HARDSIGMOID:
		if (!(L->alpha != 0 && isfinite(L->alpha) && isfinite(L->beta)))
			return hp_error_set(err, HP_ERANGE,
					    "layer %d (hardsigmoid): alpha "
					    "must be finite and not 0",
					    i);
		break;
	default:
		return hp_error_set(err, HP_EINVAL, "layer %d: unknown type %d",
				    i, (int)L->type);
	}
	return 0;
}

/*
 * Layer L's parameters as PyTorch lists them (a conv's or an fc's weight
 * and bias, a norm's scale and shift, a prelu's weight alone) on an input
 * of x's shape: their ranks and dims in w and b (the rest zero), and how
 * many there are (2, 1: w only, 0).  The one list of which layers have
 * which: the plan's count, the flat gradient buffer and
 * hp_engine_param_info() all read it.
 */
static int layer_params(const struct hp_spec_layer *L,
			const struct hp__plan_act *x, struct hp_engine_param *w,
			struct hp_engine_param *b)
{
	memset(w, 0, sizeof(*w));
	memset(b, 0, sizeof(*b));
	b->rank = 1;
	switch (L->type) {
	case HP_LAYER_CONV:
		w->rank = 4;
		w->dims[0] = b->dims[0] = L->filters;
		w->dims[1] = x->dims[1] / (L->groups > 1 ? L->groups : 1);
		w->dims[2] = L->kernel;
		w->dims[3] = hp_spec_kernel_w(L);
		return 2;
	case HP_LAYER_BN:
	case HP_LAYER_LAYERNORM:
	case HP_LAYER_GROUPNORM:
		w->rank = 1;
		w->dims[0] = b->dims[0] = x->dims[1];
		return 2;
	case HP_LAYER_PRELU:
		/* one slope, or one a channel (PyTorch's num_parameters) */
		w->rank = 1;
		w->dims[0] = L->per_channel ? x->dims[1] : 1;
		b->rank = 0;
		return 1;
	case HP_LAYER_FC:
		w->rank = 2;
		w->dims[0] = b->dims[0] = L->units;
		w->dims[1] = x->dims[1] * x->dims[2] * x->dims[3];
		return 2;
	default:
		return 0;
	}
}

int hp__plan_build(const struct hp_spec *s, int64_t batch, bool input_grad,
		   struct hp__plan *p, struct hp_error *err)
{
	struct plan_tmp t = {0};
	int nl, rc = 0;
	bool any_params = false;
	int64_t n;

	memset(p, 0, sizeof(*p));
	if (!s || s->nlayers < 0 || (s->nlayers > 0 && !s->layers))
		return hp_error_set(err, HP_EINVAL, "no spec");
	if (batch < 1 || batch > ENGINE_MAX_BATCH)
		return hp_error_set(
		    err, HP_ERANGE, "batch %lld out of range 1..%lld",
		    (long long)batch, (long long)ENGINE_MAX_BATCH);
	if (s->input[0] < 1 || s->input[1] < 1 || s->input[2] < 1)
		return hp_error_set(
		    err, HP_EINVAL, "input %lldx%lldx%lld must be positive",
		    (long long)s->input[0], (long long)s->input[1],
		    (long long)s->input[2]);
	if (s->classes < 0)
		return hp_error_set(err, HP_EINVAL, "classes is negative");
	nl = s->nlayers;
	for (int i = 0; i < nl; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		const char *tn = hp_spec_layer_name(L->type);
		if ((rc = plan_checks(L, i, tn, err)))
			return rc;
	}
	t.sh = calloc((size_t)nl + 1, sizeof(*t.sh));
	t.uses = calloc((size_t)nl + 2, sizeof(int));
	t.src = calloc((size_t)nl + 2, sizeof(int));
	t.readers = calloc((size_t)nl + 2, sizeof(int));
	t.act = calloc((size_t)nl + 2, sizeof(int));
	t.ptype = calloc((size_t)nl + 2, sizeof(int));
	t.up = calloc((size_t)nl + 2, sizeof(bool));
	p->layers = calloc((size_t)nl + 1, sizeof(*p->layers));
	p->acts = calloc((size_t)nl + 1, sizeof(*p->acts));
	if (!t.sh || !t.uses || !t.src || !t.readers || !t.act || !t.ptype ||
	    !t.up || !p->layers || !p->acts) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = hp_spec_shapes(s, t.sh, NULL, err)))
		goto fail;
	p->batch = batch;
	p->classes = s->classes;
	p->nlayers = nl;
	for (int i = 0; i < nl; i++)
		for (int k = 0;
		     k < (s->layers[i].ninputs ? s->layers[i].ninputs : 1); k++)
			t.uses[input_of(&s->layers[i], i, k) + 1]++;
	/* Which layers run; which value each passes on. */
	for (int i = 0; i < nl; i++) {
		struct hp__plan_layer *pl = &p->layers[i];
		const struct hp_spec_layer *L = &s->layers[i];
		int j = input_of(L, i, 0);
		pl->L = *L;
		pl->nin = L->ninputs ? L->ninputs : 1;
		switch (L->type) {
		case HP_LAYER_BN:
			pl->fuse_relu =
			    i + 1 < nl &&
			    s->layers[i + 1].type == HP_LAYER_RELU &&
			    input_of(&s->layers[i + 1], i + 1, 0) == i &&
			    t.uses[i + 1] == 1;
			break;
		case HP_LAYER_RELU:
			pl->noop = j >= 0 && p->layers[j].fuse_relu;
			break;
		case HP_LAYER_DROPOUT:
			pl->noop = L->p == 0;
			break;
		case HP_LAYER_SOFTMAX:
			pl->noop = i == nl - 1 && s->classes > 0;
			break;
		case HP_LAYER_FLATTEN:
			pl->noop = true;
			break;
		default:
			break;
		}
		t.src[i + 1] = pl->noop ? t.src[j + 1] : i + 1;
	}
	t.readers[t.src[nl]]++; /* the loss */
	for (int i = 0; i < nl; i++)
		if (!p->layers[i].noop)
			for (int k = 0; k < p->layers[i].nin; k++)
				t.readers[t.src[input_of(&s->layers[i], i, k) +
						1]]++;
	/* Activations, in place where nothing else reads the input. */
	p->acts[0] = (struct hp__plan_act){
	    {batch, s->input[0], s->input[1], s->input[2]}, 4, input_grad};
	p->nacts = 1;
	if (sample_too_big(&p->acts[0], &n)) {
		rc =
		    hp_error_set(err, HP_ETOOBIG,
				 "input %lldx%lldx%lld too large: %lld "
				 "elements a sample, the engine takes at "
				 "most %lld",
				 (long long)s->input[0], (long long)s->input[1],
				 (long long)s->input[2], (long long)n,
				 (long long)ENGINE_MAX_SAMPLE_ELEMS);
		goto fail;
	}
	t.act[0] = 0;
	t.ptype[0] = -1;
	t.up[0] = input_grad;
	for (int i = 0; i < nl; i++) {
		struct hp__plan_layer *pl = &p->layers[i];
		const struct hp_spec_layer *L = &s->layers[i];
		const char *tn = hp_spec_layer_name(L->type);
		int v0 = t.src[input_of(L, i, 0) + 1];
		const struct hp__plan_act *xa;
		bool up = false;

		for (int k = 0; k < pl->nin; k++) {
			int v = t.src[input_of(L, i, k) + 1];
			pl->xs[k] = t.act[v];
			pl->need[k] = t.up[v];
			up = up || t.up[v];
		}
		pl->x = pl->xs[0];
		xa = &p->acts[pl->x];
		{
			struct hp_engine_param pw, pb;
			pl->nparams = layer_params(L, xa, &pw, &pb);
			pl->has_params = pl->nparams > 0;
		}
		pl->need_dsrc = up;
		pl->bwd = pl->has_params || pl->need_dsrc;
		if (pl->noop) {
			pl->y = pl->x;
			continue;
		}
		if (pl->has_params) {
			p->nparams += pl->nparams;
			any_params = true;
		}
		if ((L->type == HP_LAYER_RELU || L->type == HP_LAYER_DROPOUT ||
		     L->type == HP_LAYER_CLIP) &&
		    pl->x != 0 && t.readers[v0] == 1 &&
		    t.ptype[v0] != HP_LAYER_SOFTMAX &&
		    t.ptype[v0] != HP_LAYER_CLIP &&
		    t.ptype[v0] != HP_LAYER_SIGMOID &&
		    t.ptype[v0] != HP_LAYER_HARDSIGMOID &&
		    /* these take their gradients from their outputs,
		     * which a dropout in place would scale */
		    t.ptype[v0] != HP_LAYER_TANH &&
		    t.ptype[v0] != HP_LAYER_LEAKYRELU &&
		    t.ptype[v0] != HP_LAYER_ELU &&
		    (L->type != HP_LAYER_CLIP || t.ptype[v0] != HP_LAYER_RELU))
			pl->inplace = true;
		if (pl->inplace) {
			pl->y = pl->x;
		} else {
			struct hp__plan_act *a = &p->acts[p->nacts];
			if (L->type == HP_LAYER_FC) {
				*a = (struct hp__plan_act){
				    {batch, L->units, 1, 1}, 2, false};
			} else if (L->type == HP_LAYER_CONV ||
				   L->type == HP_LAYER_POOL ||
				   L->type == HP_LAYER_GAP) {
				*a = (struct hp__plan_act){
				    {batch, t.sh[i][0], t.sh[i][1], t.sh[i][2]},
				    4,
				    false};
			} else if (L->type == HP_LAYER_CONCAT) {
				*a = *xa;
				a->diff = false;
				a->dims[1] = 0;
				for (int k = 0; k < pl->nin; k++)
					a->dims[1] +=
					    p->acts[pl->xs[k]].dims[1];
			} else if (L->type == HP_LAYER_SLICE) {
				*a = *xa;
				a->diff = false;
				a->dims[1] = L->channels;
			} else {
				/* elementwise: the input's own shape */
				*a = *xa;
				a->diff = false;
			}
			if (!hp_mul_i64(a->dims[0], a->dims[1], &n) ||
			    !hp_mul_i64(n, a->dims[2], &n) ||
			    !hp_mul_i64(n, a->dims[3], &n) ||
			    n > HP_MODEL_MAX_ELEMS) {
				rc = hp_error_set(err, HP_ETOOBIG,
						  "layer %d (%s): output too "
						  "large",
						  i, tn);
				goto fail;
			}
			if (sample_too_big(a, &n)) {
				rc = hp_error_set(
				    err, HP_ETOOBIG,
				    "layer %d (%s): output %lldx%lldx%lld too "
				    "large: %lld elements a sample, the engine "
				    "takes at most %lld",
				    i, tn, (long long)a->dims[1],
				    (long long)a->dims[2],
				    (long long)a->dims[3], (long long)n,
				    (long long)ENGINE_MAX_SAMPLE_ELEMS);
				goto fail;
			}
			pl->y = p->nacts++;
		}
		if (pl->bwd)
			p->acts[pl->y].diff = true;
		t.act[i + 1] = pl->y;
		t.ptype[i + 1] = (int)L->type;
		t.up[i + 1] = up || pl->has_params;
	}
	for (int i = 0; i < nl; i++)
		if (p->layers[i].noop) {
			int v = t.src[i + 1];
			t.act[i + 1] = t.act[v];
		}
	/* Gradients of a value read by several layers are summed: the
	 * reader whose backward runs first (the last one) writes, the
	 * others add. */
	{
		bool *written = calloc((size_t)p->nacts + 1, sizeof(bool));
		if (!written) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto fail;
		}
		for (int i = nl - 1; i >= 0; i--) {
			struct hp__plan_layer *pl = &p->layers[i];
			if (pl->noop)
				continue;
			for (int k = pl->nin - 1; k >= 0; k--) {
				if (!pl->need[k])
					continue;
				pl->acc[k] = written[pl->xs[k]];
				written[pl->xs[k]] = true;
			}
		}
		free(written);
	}
	p->out = t.act[t.src[nl]];
	{
		const int64_t *o = nl ? t.sh[nl - 1] : s->input;
		if (s->classes > 0 && o[0] * o[1] * o[2] != s->classes) {
			rc = hp_error_set(err, HP_ESHAPE,
					  "the last layer gives %lld outputs, "
					  "but \"classes\" is %lld",
					  (long long)(o[0] * o[1] * o[2]),
					  (long long)s->classes);
			goto fail;
		}
	}
	if (!any_params) {
		rc = hp_error_set(err, HP_EINVAL,
				  "the spec has no trainable layer (conv, bn, "
				  "layernorm, groupnorm, prelu or fc)");
		goto fail;
	}
	/* Parameter elements (overflow-checked: sizes come from input). */
	for (int i = 0; i < p->nlayers; i++) {
		const struct hp__plan_layer *pl = &p->layers[i];
		struct hp_engine_param w, b;
		int64_t nw, nb;
		if (pl->noop || !pl->has_params)
			continue;
		nb = layer_params(&pl->L, &p->acts[pl->x], &w, &b) > 1
			 ? hp_dims_numel(b.dims, b.rank)
			 : 0;
		nw = hp_dims_numel(w.dims, w.rank);
		if (nw < 0 || nb < 0 ||
		    !hp_add_i64(p->param_elems, nw, &p->param_elems) ||
		    !hp_add_i64(p->param_elems, nb, &p->param_elems) ||
		    p->param_elems > HP_MODEL_MAX_ELEMS) {
			rc = hp_error_set(err, HP_ETOOBIG,
					  "layer %d: too many parameters", i);
			goto fail;
		}
	}
	plan_tmp_free(&t);
	return 0;
fail:
	plan_tmp_free(&t);
	hp__plan_release(p);
	return rc;
}

void hp__param_init(const struct hp_engine_param *ps, const struct hp__plan *p,
		    int i, uint64_t *st, float *v)
{
	const struct hp_engine_param *pi = &ps[i];
	const struct hp_engine_param *w = pi->slot ? &ps[i - 1] : pi;
	enum hp_spec_layer_type lt = p->layers[pi->layer].L.type;
	double bound = 1 / sqrt((double)(w->numel / w->dims[0]));

	for (int64_t j = 0; j < pi->numel; j++)
		switch (lt) {
		case HP_LAYER_BN:
		case HP_LAYER_LAYERNORM:
		case HP_LAYER_GROUPNORM:
			v[j] = pi->slot ? 0.0f : 1.0f;
			break;
		case HP_LAYER_PRELU:
			v[j] = 0.25f;
			break;
		default:
			v[j] = (float)((2 * hp__rng_uniform(st) - 1) * bound);
		}
}

/* Elements of an activation as a backend stores it: channels padded to 16
 * for the blocked layouts oneDNN picks. */
static int64_t act_elems(const struct hp__plan_act *a, bool blocked)
{
	int64_t c =
	    blocked && a->rank == 4 ? round_up(a->dims[1], 16) : a->dims[1];
	return a->dims[0] * c * a->dims[2] * a->dims[3];
}

int64_t hp__plan_bytes(const struct hp__plan *p, enum hp_optimizer opt)
{
	double b = 0, pbytes = 0, maxw = 0;

	for (int i = 0; i < p->nacts; i++) {
		double e = (double)act_elems(&p->acts[i], i > 0);
		b += 4 * e * (p->acts[i].diff ? 2 : 1);
	}
	for (int i = 0; i < p->nlayers; i++) {
		const struct hp__plan_layer *pl = &p->layers[i];
		const struct hp__plan_act *x = &p->acts[pl->x];
		const struct hp__plan_act *y = &p->acts[pl->y];
		double ex = (double)act_elems(x, pl->x > 0);
		double ey = (double)act_elems(y, true), wb = 0;
		int64_t c16 = round_up(x->dims[1], 16);
		if (pl->noop)
			continue;
		/* a gradient added to another reader's goes through a
		 * buffer of its own; an add's inputs may be reordered */
		for (int k = 0; k < pl->nin; k++)
			if (pl->acc[k] || (k > 0 && pl->L.type == HP_LAYER_ADD))
				b += 4.0 * (double)act_elems(
					       &p->acts[pl->xs[k]], true);
		switch (pl->L.type) {
		case HP_LAYER_CONV:
			if (pl->x == 0)
				b += 4 * ex; /* input reordered to blocked */
			wb = 4.0 * (double)round_up(pl->L.filters, 16) *
				 (double)(pl->L.groups > 1
					      ? x->dims[1] / pl->L.groups
					      : c16) *
				 (double)pl->L.kernel *
				 (double)hp_spec_kernel_w(&pl->L) +
			     4.0 * (double)round_up(pl->L.filters, 16);
			break;
		case HP_LAYER_BN:
			b += 4.0 * 4 * (double)x->dims[1] + ey / 8;
			wb = 4.0 * 2 * (double)x->dims[1];
			break;
		case HP_LAYER_LAYERNORM:
			/* its input and input gradient in nhwc, a mean and
			 * a variance a position */
			b += 2 * 4 * ex + 2.0 * 4 * (double)x->dims[0] *
					      (double)x->dims[2] *
					      (double)x->dims[3];
			wb = 4.0 * 2 * (double)x->dims[1];
			break;
		case HP_LAYER_GROUPNORM:
			/* its input and input gradient in nchw, a mean and
			 * an inverse deviation a sample's group, two sums a
			 * sample's channel (doubles) */
			b += 2 * 4 * ex +
			     2.0 * 4 * (double)x->dims[0] *
				 (double)pl->L.groups +
			     2.0 * 8 * (double)x->dims[0] * (double)x->dims[1];
			wb = 4.0 * 2 * (double)x->dims[1];
			break;
		case HP_LAYER_POOL:
			if (pl->L.pool_max)
				b +=
				    ey *
				    (pl->L.kernel * pl->L.kernel < 256 ? 1 : 4);
			break;
		case HP_LAYER_DROPOUT:
			b += 4 * ex;
			break;
		case HP_LAYER_MUL:
			/* the gradient products of both inputs */
			b += 2 * 4 * ey;
			break;
		case HP_LAYER_HARDSIGMOID:
			/* alpha x + beta, and its gradient */
			b += 2 * 4 * ex;
			break;
		case HP_LAYER_FC:
			wb = 4.0 * (double)pl->L.units *
				 (double)(x->rank == 4 ? c16 : x->dims[1]) *
				 (double)x->dims[2] * (double)x->dims[3] +
			     4.0 * (double)pl->L.units;
			break;
		default:
			break;
		}
		pbytes += wb;
		if (wb > maxw)
			maxw = wb;
	}
	/* values, gradients and optimizer state */
	b += pbytes * (opt == HP_OPT_ADAM ? 4 : 3);
	/* logits and their gradient, labels */
	b += 2.0 * 4 * (double)act_elems(&p->acts[p->out], false) +
	     4.0 * (double)p->batch;
	/* scratchpad: per-thread weight-gradient reductions and the like */
	b += 2 * maxw + (1 << 20);
	if (b > 9.0e18)
		return HP_ETOOBIG;
	return (int64_t)b;
}

int64_t hp_engine_estimate_bytes(const struct hp_spec *s, int64_t batch,
				 enum hp_optimizer opt)
{
	struct hp_engine_opts o;
	struct hp__plan p;
	size_t exact;
	int64_t b;
	int rc = hp__plan_build(s, batch, false, &p, NULL);

	if (rc) {
		hp__plan_release(&p);
		return rc;
	}
	b = hp__plan_bytes(&p, opt);
	/* The CPU backend's own count, layouts and scratchpads included;
	 * where it cannot build the net, the plan's figure. */
	hp_engine_opts_init(&o);
	o.batch = batch;
	o.opt = opt;
	if (b >= 0 && hp__engine_cpu_ops.estimate &&
	    !hp__engine_cpu_ops.estimate(&p, &o, &exact, NULL) &&
	    exact <= (size_t)INT64_MAX)
		b = (int64_t)exact;
	hp__plan_release(&p);
	return b;
}

static size_t default_max_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || psz <= 0)
		return (size_t)4 << 30;
	return (size_t)((double)pages * (double)psz * 0.8);
}

/* "cpu" -> 0; "cuda" / "cuda:K" -> 1 with *index = K; else -1. */
static int parse_device(const char *d, int *index)
{
	int64_t k = 0;

	*index = 0;
	if (!d || !strcmp(d, "cpu"))
		return 0;
	if (!strcmp(d, "cuda"))
		return 1;
	if (!strncmp(d, "cuda:", 5) && !hp_parse_i64(d + 5, 0, 1023, &k)) {
		*index = (int)k;
		return 1;
	}
	return -1;
}

static int check_opts(const struct hp_engine_opts *o, struct hp_error *err)
{
	if (o->threads < 0 || o->threads > 4096)
		return hp_error_set(err, HP_ERANGE,
				    "threads %d out of range 0..4096",
				    o->threads);
	if (o->opt != HP_OPT_SGD && o->opt != HP_OPT_ADAM)
		return hp_error_set(err, HP_EINVAL, "unknown optimizer %d",
				    (int)o->opt);
	if (!(o->lr >= 0) || !(o->momentum >= 0 && o->momentum < 1) ||
	    !(o->beta1 >= 0 && o->beta1 < 1) ||
	    !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0) ||
	    !(o->weight_decay >= 0) || !(o->bn_eps > 0) ||
	    !(o->bn_momentum >= 0 && o->bn_momentum <= 1))
		return hp_error_set(err, HP_ERANGE,
				    "optimizer settings out of range (lr >= 0, "
				    "momentum and betas in [0, 1), eps > 0)");
	return 0;
}

static int copy_spec(struct hp_engine *e, const struct hp_spec *s)
{
	e->spec.input[0] = s->input[0];
	e->spec.input[1] = s->input[1];
	e->spec.input[2] = s->input[2];
	e->spec.classes = s->classes;
	e->spec.nlayers = s->nlayers;
	e->spec.layers = calloc((size_t)s->nlayers + 1, sizeof(*s->layers));
	if (!e->spec.layers)
		return HP_ENOMEM;
	if (s->nlayers)
		memcpy(e->spec.layers, s->layers,
		       (size_t)s->nlayers * sizeof(*s->layers));
	return 0;
}

/* Names and plain shapes of the parameters, in PyTorch's order. */
static int list_params(struct hp_engine *e)
{
	const struct hp__plan *p = &e->plan;
	int k = 0;

	e->params = calloc((size_t)p->nparams + 1, sizeof(*e->params));
	e->param_names =
	    calloc((size_t)p->nparams + 1, sizeof(*e->param_names));
	if (!e->params || !e->param_names)
		return HP_ENOMEM;
	for (int i = 0; i < p->nlayers; i++) {
		const struct hp__plan_layer *pl = &p->layers[i];
		const struct hp__plan_act *x = &p->acts[pl->x];
		struct hp_engine_param w, b;
		static const char *const sfx[2] = {"weight", "bias"};
		if (!pl->has_params)
			continue;
		layer_params(&pl->L, x, &w, &b);
		for (int j = 0; j < pl->nparams; j++) {
			struct hp_engine_param *q = &e->params[k + j];
			*q = j ? b : w;
			q->layer = i;
			q->slot = j;
			/* checked when the plan was built */
			q->numel = hp_dims_numel(q->dims, q->rank);
			snprintf(e->param_names[k + j],
				 sizeof(e->param_names[0]), "%s%d.%s",
				 hp_spec_layer_name(pl->L.type), i, sfx[j]);
			q->name = e->param_names[k + j];
		}
		k += pl->nparams;
	}
	return 0;
}

/* The state tensors: parameters, their optimizer state, then each batch
 * norm's running statistics (hp_engine_state_info()). */
static int list_state(struct hp_engine *e)
{
	const struct hp__plan *p = &e->plan;
	int slots = e->o.opt == HP_OPT_ADAM ? 2 : 1, nbn = 0, k = 0;
	static const char *const sgd_sfx[1] = {"momentum_buffer"};
	static const char *const adam_sfx[2] = {"exp_avg", "exp_avg_sq"};
	const char *const *sfx = slots == 2 ? adam_sfx : sgd_sfx;

	for (int i = 0; i < p->nlayers; i++)
		nbn += p->layers[i].L.type == HP_LAYER_BN;
	e->nstate = p->nparams * (1 + slots) + 2 * nbn;
	e->state = calloc((size_t)e->nstate + 1, sizeof(*e->state));
	e->state_names = calloc((size_t)e->nstate + 1, sizeof(*e->state_names));
	e->state_role = calloc((size_t)e->nstate + 1, sizeof(*e->state_role));
	if (!e->state || !e->state_names || !e->state_role)
		return HP_ENOMEM;
	for (int s = 0; s <= slots; s++)
		for (int i = 0; i < p->nparams; i++, k++) {
			const struct hp_engine_param *q = &e->params[i];
			if (s == 0)
				snprintf(e->state_names[k],
					 sizeof(e->state_names[0]), "%s",
					 q->name);
			else
				snprintf(e->state_names[k],
					 sizeof(e->state_names[0]), "%s.%s",
					 q->name, sfx[s - 1]);
			e->state[k] = (struct hp_engine_state_info){
			    e->state_names[k], q->numel, i, q->layer};
			e->state_role[k] =
			    s == 0 ? PARAM_IO_VALUE : PARAM_IO_OPT1 + s - 1;
		}
	for (int i = 0; i < p->nlayers; i++) {
		if (p->layers[i].L.type != HP_LAYER_BN)
			continue;
		for (int w = 0; w < 2; w++, k++) {
			snprintf(e->state_names[k], sizeof(e->state_names[0]),
				 "bn%d.%s", i,
				 w ? "running_var" : "running_mean");
			e->state[k] = (struct hp_engine_state_info){
			    e->state_names[k], p->acts[p->layers[i].x].dims[1],
			    -1, i};
			e->state_role[k] = 4 + w;
		}
	}
	return 0;
}

struct hp_engine *hp_engine_new(const struct hp_spec *spec,
				const struct hp_engine_opts *o,
				struct hp_error *err)
{
	struct hp_engine *e;
	struct hp_engine_opts def;
	int64_t need;
	size_t limit, exact;
	int kind, rc;

	if (!o) {
		hp_engine_opts_init(&def);
		o = &def;
	}
	if (!spec) {
		hp_error_set(err, HP_EINVAL, "no spec");
		return NULL;
	}
	if (check_opts(o, err))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	e->o = *o;
	kind = parse_device(o->device, &e->device_index);
	if (kind < 0) {
		hp_error_set(err, HP_EINVAL,
			     "unknown device '%s' (cpu or cuda:K)", o->device);
		goto fail;
	}
	if (kind == 1) {
#ifdef HP_HAVE_CUDA
		e->ops = &hp__engine_cuda_ops;
		e->o.device = "cuda"; /* the caller's string may go */
#else
		hp_error_set(err, HP_EDEVICE,
			     "device '%s': no CUDA backend in this build",
			     o->device);
		goto fail;
#endif
	} else {
		e->ops = &hp__engine_cpu_ops;
		e->o.device = "cpu";
	}
	if (hp__plan_build(spec, o->batch, o->input_grad, &e->plan, err))
		goto fail;
	/* A GPU engine's own limit is the device's free memory, which the
	 * backend checks against its exact total (cuda.c); the host's RAM
	 * says nothing about it. */
	limit = o->max_bytes ? o->max_bytes
		: kind == 1  ? SIZE_MAX
			     : default_max_bytes();
	e->o.max_bytes = limit;
	need = hp__plan_bytes(&e->plan, o->opt);
	/* The plan's figure is rough: a net it puts over the limit is
	 * refused on the backend's own count where the backend has one. */
	if (need >= 0 && (uint64_t)need > (uint64_t)limit && e->ops->estimate &&
	    !e->ops->estimate(&e->plan, &e->o, &exact, NULL))
		need = exact > (size_t)INT64_MAX ? -1 : (int64_t)exact;
	if (need < 0 || (uint64_t)need > (uint64_t)limit) {
		hp_error_set(err, HP_ETOOBIG,
			     "batch %lld needs about %.1f MiB, over the limit "
			     "of %.1f MiB",
			     (long long)o->batch,
			     need < 0 ? 1e12 : (double)need / 1048576.0,
			     (double)limit / 1048576.0);
		goto fail;
	}
	if (copy_spec(e, spec) || list_params(e) || list_state(e)) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	rc = e->ops->create(e, err);
	if (rc)
		goto fail;
	return e;
fail:
	hp_engine_free(e);
	return NULL;
}

void hp_engine_free(struct hp_engine *e)
{
	if (!e)
		return;
	if (e->be && e->ops)
		e->ops->destroy(e->be);
	hp__plan_release(&e->plan);
	free(e->spec.layers);
	free(e->params);
	free(e->param_names);
	free(e->state);
	free(e->state_names);
	free(e->state_role);
	free(e);
}

int hp_engine_set_input(struct hp_engine *e, const float *x,
			const int32_t *labels, struct hp_error *err)
{
	if (!e || !x)
		return hp_error_set(err, HP_EINVAL, "no engine or input");
	if (e->plan.classes > 0) {
		if (!labels)
			return hp_error_set(err, HP_EINVAL, "labels missing");
		for (int64_t i = 0; i < e->plan.batch; i++)
			if (labels[i] < 0 || labels[i] >= e->plan.classes)
				return hp_error_set(
				    err, HP_ERANGE,
				    "label %lld is %d, not in 0..%lld",
				    (long long)i, (int)labels[i],
				    (long long)e->plan.classes - 1);
	}
	return e->ops->set_input(e->be, x, labels, err);
}

int hp_engine_fill_synthetic(struct hp_engine *e, uint64_t seed,
			     struct hp_error *err)
{
	const int64_t *d;
	int64_t n;
	float *x;
	int32_t *lab;
	uint64_t st = seed;
	int rc;

	if (!e)
		return hp_error_set(err, HP_EINVAL, "no engine");
	d = e->plan.acts[0].dims;
	n = d[0] * d[1] * d[2] * d[3];
	x = malloc((size_t)n * sizeof(*x));
	lab = malloc((size_t)d[0] * sizeof(*lab));
	if (!x || !lab) {
		free(x);
		free(lab);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < n; i++) {
		/* sum of 4 uniforms, scaled to unit variance: normal enough */
		double s = hp__rng_uniform(&st) + hp__rng_uniform(&st) +
			   hp__rng_uniform(&st) + hp__rng_uniform(&st) - 2;
		x[i] = (float)(s * 1.7320508);
	}
	for (int64_t i = 0; i < d[0]; i++)
		lab[i] = e->plan.classes > 0
			     ? (int32_t)(hp__rng_uniform(&st) *
					 (double)e->plan.classes)
			     : 0;
	rc = e->ops->set_input(e->be, x, lab, err);
	free(x);
	free(lab);
	return rc;
}

int hp_engine_forward(struct hp_engine *e, double *loss, struct hp_error *err)
{
	double l = 0;
	int rc;

	if (!e)
		return hp_error_set(err, HP_EINVAL, "no engine");
	rc = e->ops->forward(e->be, &l, err);
	if (loss)
		*loss = l;
	return rc;
}

int hp_engine_backward(struct hp_engine *e, struct hp_error *err)
{
	if (!e)
		return hp_error_set(err, HP_EINVAL, "no engine");
	return e->ops->backward(e->be, err);
}

int hp_engine_update(struct hp_engine *e, struct hp_error *err)
{
	if (!e)
		return hp_error_set(err, HP_EINVAL, "no engine");
	return e->ops->update(e->be, err);
}

int hp_engine_step(struct hp_engine *e, double *loss, struct hp_error *err)
{
	int rc;

	if ((rc = hp_engine_forward(e, loss, err)) ||
	    (rc = hp_engine_backward(e, err)) ||
	    (rc = hp_engine_update(e, err)))
		return rc;
	return 0;
}

int hp_engine_param_count(const struct hp_engine *e)
{
	return e ? e->plan.nparams : 0;
}

int hp_engine_param_info(const struct hp_engine *e, int i,
			 struct hp_engine_param *out)
{
	if (!e || i < 0 || i >= e->plan.nparams)
		return HP_ERANGE;
	*out = e->params[i];
	return 0;
}

static int param_io(struct hp_engine *e, int i, int what, int dir, float *buf,
		    struct hp_error *err)
{
	if (!e || !buf)
		return hp_error_set(err, HP_EINVAL, "no engine or buffer");
	if (i < 0 || i >= e->plan.nparams)
		return hp_error_set(err, HP_ERANGE,
				    "parameter %d out of range 0..%d", i,
				    e->plan.nparams - 1);
	return e->ops->param_io(e->be, i, what, dir, buf, err);
}

int hp_engine_param_get(struct hp_engine *e, int i, float *out,
			struct hp_error *err)
{
	return param_io(e, i, 0, 0, out, err);
}

int hp_engine_param_set(struct hp_engine *e, int i, const float *in,
			struct hp_error *err)
{
	/* the backend only reads the buffer when dir is 1 */
	return param_io(e, i, 0, 1, (float *)(uintptr_t)in, err);
}

int hp_engine_grad_get(struct hp_engine *e, int i, float *out,
		       struct hp_error *err)
{
	return param_io(e, i, 1, 0, out, err);
}

int64_t hp_engine_output_dims(const struct hp_engine *e, int64_t dims[4])
{
	const struct hp__plan_act *a;

	if (!e)
		return HP_EINVAL;
	a = &e->plan.acts[e->plan.out];
	memcpy(dims, a->dims, 4 * sizeof(int64_t));
	return a->dims[0] * a->dims[1] * a->dims[2] * a->dims[3];
}

int hp_engine_output_get(struct hp_engine *e, float *out, struct hp_error *err)
{
	if (!e || !out)
		return hp_error_set(err, HP_EINVAL, "no engine or buffer");
	return e->ops->output_get(e->be, out, err);
}

int hp_engine_input_grad_get(struct hp_engine *e, float *out,
			     struct hp_error *err)
{
	if (!e || !out)
		return hp_error_set(err, HP_EINVAL, "no engine or buffer");
	if (!e->o.input_grad)
		return hp_error_set(err, HP_EINVAL,
				    "input gradient not kept (set "
				    "opts.input_grad)");
	return e->ops->input_grad_get(e->be, out, err);
}

int hp_engine_dropout_mask_get(struct hp_engine *e, int layer, float *out,
			       struct hp_error *err)
{
	if (!e || !out)
		return hp_error_set(err, HP_EINVAL, "no engine or buffer");
	if (layer < 0 || layer >= e->plan.nlayers ||
	    e->plan.layers[layer].L.type != HP_LAYER_DROPOUT)
		return hp_error_set(err, HP_EINVAL,
				    "layer %d is not a dropout layer", layer);
	return e->ops->mask_get(e->be, layer, out, err);
}

size_t hp_engine_peak_bytes(const struct hp_engine *e)
{
	return e ? e->ops->peak_bytes(e->be) : 0;
}

const char *hp_engine_device_desc(const struct hp_engine *e)
{
	return e ? e->ops->desc(e->be) : "";
}

int hp_engine_device_info(const struct hp_engine *e,
			  struct hp_engine_device_info *out)
{
	if (!e || !out)
		return HP_EINVAL;
	memset(out, 0, sizeof(*out));
	if (!e->ops->device_info)
		return HP_EUNSUPP;
	return e->ops->device_info(e->be, out);
}

int hp_engine_layer_times(const struct hp_engine *e, double *out, int n,
			  int *steps, struct hp_error *err)
{
	if (!e || !out || !steps || n < 0)
		return hp_error_set(err, HP_EINVAL, "invalid argument");
	if (!e->ops->layer_times)
		return hp_error_set(err, HP_EUNSUPP,
				    "the %s backend does not time layers",
				    e->ops->name);
	if (!e->o.layer_times)
		return hp_error_set(err, HP_EINVAL,
				    "layer times need opts.layer_times");
	return e->ops->layer_times(e->be, out, n, steps);
}

void hp_engine_layer_times_reset(struct hp_engine *e)
{
	if (e && e->ops->layer_times_reset)
		e->ops->layer_times_reset(e->be);
}

int hp_engine_energy_mj(struct hp_engine *e, uint64_t *mj)
{
	if (!e || !mj)
		return HP_EINVAL;
	if (!e->ops->energy_mj)
		return HP_EUNSUPP;
	return e->ops->energy_mj(e->be, mj);
}

int hp_engine_infer(struct hp_engine *e, double *loss, struct hp_error *err)
{
	double l = 0;
	int rc;

	if (!e)
		return hp_error_set(err, HP_EINVAL, "no engine");
	rc = e->ops->infer(e->be, &l, err);
	if (loss)
		*loss = l;
	return rc;
}

int hp_engine_set_lr(struct hp_engine *e, double lr)
{
	if (!e || !(lr >= 0) || lr > 1e30)
		return HP_ERANGE;
	e->o.lr = lr;
	return 0;
}

void hp_engine_set_sample_offset(struct hp_engine *e, int64_t first)
{
	if (e && first >= 0)
		e->sample_offset = first;
}

int64_t hp_engine_param_elems(const struct hp_engine *e)
{
	return e ? e->plan.param_elems : 0;
}

static int grads_io(struct hp_engine *e, float *flat, int dir,
		    struct hp_error *err)
{
	int64_t off = 0;
	int rc;

	if (!e || !flat)
		return hp_error_set(err, HP_EINVAL, "no engine or buffer");
	if (e->ops->grads_io)
		return e->ops->grads_io(e->be, flat, dir, err);
	for (int i = 0; i < e->plan.nparams; i++) {
		rc = e->ops->param_io(e->be, i, PARAM_IO_GRAD, dir, flat + off,
				      err);
		if (rc)
			return rc;
		off += e->params[i].numel;
	}
	return 0;
}

int hp_engine_grads_get(struct hp_engine *e, float *out, struct hp_error *err)
{
	return grads_io(e, out, 0, err);
}

int hp_engine_grads_set(struct hp_engine *e, const float *in,
			struct hp_error *err)
{
	/* the backend only reads the buffer when dir is 1 */
	return grads_io(e, (float *)(uintptr_t)in, 1, err);
}

int hp_engine_grads_device(struct hp_engine *e, void **ptr, int64_t *nfloats,
			   void **stream)
{
	if (!e || !ptr || !nfloats || !stream)
		return HP_EINVAL;
	if (!e->ops->grads_device)
		return HP_EUNSUPP;
	return e->ops->grads_device(e->be, ptr, nfloats, stream);
}

int hp_engine_state_count(const struct hp_engine *e)
{
	return e ? e->nstate : 0;
}

int hp_engine_state_info(const struct hp_engine *e, int k,
			 struct hp_engine_state_info *out)
{
	if (!e || !out || k < 0 || k >= e->nstate)
		return HP_ERANGE;
	*out = e->state[k];
	return 0;
}

static int state_io(struct hp_engine *e, int k, int dir, float *buf,
		    struct hp_error *err)
{
	int role;

	if (!e || !buf)
		return hp_error_set(err, HP_EINVAL, "no engine or buffer");
	if (k < 0 || k >= e->nstate)
		return hp_error_set(err, HP_ERANGE,
				    "state tensor %d out of range 0..%d", k,
				    e->nstate - 1);
	role = e->state_role[k];
	if (role >= 4)
		return e->ops->bn_io(e->be, e->state[k].layer, role - 4, dir,
				     buf, err);
	return e->ops->param_io(e->be, e->state[k].param, role, dir, buf, err);
}

int hp_engine_state_get(struct hp_engine *e, int k, float *out,
			struct hp_error *err)
{
	return state_io(e, k, 0, out, err);
}

int hp_engine_state_set(struct hp_engine *e, int k, const float *in,
			struct hp_error *err)
{
	return state_io(e, k, 1, (float *)(uintptr_t)in, err);
}

void hp_engine_counters_get(const struct hp_engine *e,
			    struct hp_engine_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (e)
		e->ops->counters(e->be, out, 0);
}

int hp_engine_counters_set(struct hp_engine *e,
			   const struct hp_engine_counters *in)
{
	struct hp_engine_counters c;

	if (!e || !in || in->updates < 0)
		return HP_EINVAL;
	c = *in;
	e->ops->counters(e->be, &c, 1);
	return 0;
}
