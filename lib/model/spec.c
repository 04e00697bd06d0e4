/*
 * spec.c - the hetpool model spec: a JSON "customized CNN" that the
 * profiler generates and users can write by hand, e.g.
 *
 *   {"name":"cnn-a","input":[3,32,32],"classes":10,"layers":[
 *     {"type":"conv","filters":32,"kernel":3,"stride":1,"pad":1},
 *     {"type":"bn"},{"type":"relu"},
 *     {"type":"pool","op":"max","kernel":2,"stride":2},
 *     {"type":"dropout","p":0.5},{"type":"fc","units":128},
 *     {"type":"relu"},{"type":"fc","units":10}]}
 *
 * "classes" adds the final softmax cross-entropy.  The spec is checked
 * layer by layer (sizes, shrinking images) before any graph is built, and
 * then turned into the same struct hp_graph the ONNX importer makes.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/banned.h"

#define SPEC_MAX_LAYERS 1024
#define SPEC_MAX_SIZE 1048576 /* filters, units, image side */
#define SPEC_MAX_JSON (16u << 20)

static const char *const layer_names[] = {
    [HP_LAYER_CONV] = "conv",
    [HP_LAYER_BN] = "bn",
    [HP_LAYER_RELU] = "relu",
    [HP_LAYER_POOL] = "pool",
    [HP_LAYER_DROPOUT] = "dropout",
    [HP_LAYER_FC] = "fc",
    [HP_LAYER_SOFTMAX] = "softmax",
    [HP_LAYER_CLIP] = "clip",
    [HP_LAYER_GAP] = "gap",
    [HP_LAYER_ADD] = "add",
    [HP_LAYER_CONCAT] = "concat",
    [HP_LAYER_FLATTEN] = "flatten",
    [HP_LAYER_SIGMOID] = "sigmoid",
    [HP_LAYER_MUL] = "mul",
    [HP_LAYER_HARDSIGMOID] = "hardsigmoid",
    [HP_LAYER_SLICE] = "slice",
    [HP_LAYER_SHUFFLE] = "shuffle",
    [HP_LAYER_LAYERNORM] = "layernorm",
    [HP_LAYER_GELU] = "gelu",
    [HP_LAYER_LEAKYRELU] = "leakyrelu",
    [HP_LAYER_TANH] = "tanh",
    [HP_LAYER_ELU] = "elu",
    [HP_LAYER_SCALE] = "scale",
    [HP_LAYER_SOFTPLUS] = "softplus",
    [HP_LAYER_GROUPNORM] = "groupnorm",
    [HP_LAYER_PRELU] = "prelu",
};

const char *hp_spec_layer_name(enum hp_spec_layer_type t)
{
	return (unsigned)t <= HP_LAYER_LAST ? layer_names[t] : "?";
}

size_t hp__utf8_bom_len(const char *p, size_t n)
{
	return n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3) ? 3 : 0;
}

static int get_int(json_t *o, const char *key, int64_t def, int64_t min,
		   int64_t max, int64_t *out, const char *where,
		   struct hp_error *err)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		if (def < min)
			return hp_error_set(err, HP_EINVAL,
					    "%s: missing \"%s\"", where, key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return hp_error_set(err, HP_EINVAL,
				    "%s: \"%s\" must be an integer", where,
				    key);
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return hp_error_set(err, HP_ERANGE,
				    "%s: \"%s\" is %lld, must be %lld..%lld",
				    where, key, (long long)*out, (long long)min,
				    (long long)max);
	return 0;
}

/*
 * An integer, or a pair [height, width] of them (a conv's "kernel" and
 * "pad"): *h and *w get it (both the same for one integer), def when key
 * is absent (def < min: required).
 */
static int get_hw(json_t *o, const char *key, int64_t def, int64_t min,
		  int64_t max, int64_t *h, int64_t *w, int64_t *end,
		  const char *where, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);
	int64_t x[4];
	size_t n = json_array_size(v);

	if (!json_is_array(v)) {
		int rc = get_int(o, key, def, min, max, h, where, err);
		*w = *h;
		if (end)
			end[0] = end[1] = *h;
		return rc;
	}
	if (n != 2 && !(n == 4 && end))
		return hp_error_set(
		    err, HP_EINVAL,
		    "%s: \"%s\" must be an integer or a pair [height, "
		    "width]%s",
		    where, key, end ? ", or [top, left, bottom, right]" : "");
	for (size_t k = 0; k < n; k++) {
		json_t *e = json_array_get(v, (size_t)k);
		if (!json_is_integer(e))
			return hp_error_set(err, HP_EINVAL,
					    "%s: \"%s\"[%zu] must be an "
					    "integer",
					    where, key, k);
		x[k] = json_integer_value(e);
		if (x[k] < min || x[k] > max)
			return hp_error_set(err, HP_ERANGE,
					    "%s: \"%s\"[%zu] is %lld, must be "
					    "%lld..%lld",
					    where, key, k, (long long)x[k],
					    (long long)min, (long long)max);
	}
	*h = x[0];
	*w = x[1];
	if (end) {
		end[0] = n == 4 ? x[2] : x[0];
		end[1] = n == 4 ? x[3] : x[1];
	}
	return 0;
}

/* An optional finite number: *out keeps its default when key is absent. */
static int get_num(json_t *o, const char *key, double *out, const char *where,
		   struct hp_error *err)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return hp_error_set(err, HP_EINVAL,
				    "%s: \"%s\" must be a finite number", where,
				    key);
	*out = json_number_value(v);
	return 0;
}

/* A scale layer's "factor" and "shift" per channel: arrays of the same
 * length, 1 to HP_SPEC_SCALE_CH numbers (an absent one: factors 1, shifts
 * 0), factors not 0, all within +-1e6. */
static int scale_channels(json_t *lj, struct hp_spec_layer *L,
			  const char *where, struct hp_error *err)
{
	json_t *fa = json_object_get(lj, "factor");
	json_t *sa = json_object_get(lj, "shift");
	size_t n = json_array_size(fa ? fa : sa);

	if ((fa && !json_is_array(fa)) || (sa && !json_is_array(sa)) ||
	    (fa && sa && json_array_size(sa) != n) || n < 1 ||
	    n > HP_SPEC_SCALE_CH)
		return hp_error_set(err, HP_EINVAL,
				    "%s: \"factor\" and \"shift\" per channel "
				    "are arrays of the same length, 1 to %d",
				    where, HP_SPEC_SCALE_CH);
	L->nch = (int)n;
	for (size_t i = 0; i < n; i++) {
		json_t *f = fa ? json_array_get(fa, i) : NULL;
		json_t *s = sa ? json_array_get(sa, i) : NULL;
		L->chf[i] = f ? json_number_value(f) : 1;
		L->chs[i] = s ? json_number_value(s) : 0;
		if ((f && !json_is_number(f)) || (s && !json_is_number(s)) ||
		    !(L->chf[i] != 0 && fabs(L->chf[i]) <= 1e6 &&
		      fabs(L->chs[i]) <= 1e6))
			return hp_error_set(
			    err, HP_ERANGE,
			    "%s: channel %zu: \"factor\" must be a number "
			    "other than 0, and \"factor\" and \"shift\" "
			    "within +-1e6",
			    where, i);
	}
	return 0;
}

static int check_keys(json_t *o, const char *const *allowed, const char *where,
		      struct hp_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(o, key, v)
	{
		bool ok = false;
		(void)v;
		for (int i = 0; allowed[i]; i++)
			if (!strcmp(key, allowed[i]))
				ok = true;
		if (!ok)
			return hp_error_set(err, HP_EINVAL,
					    "%s: unknown key \"%s\"", where,
					    key);
	}
	return 0;
}

static int parse_layer(json_t *lj, int idx, struct hp_spec_layer *L,
		       struct hp_error *err)
{
	static const char *const k_conv[] = {"type",	 "filters", "kernel",
					     "stride",	 "pad",	    "groups",
					     "dilation", "inputs",  NULL};
	static const char *const k_pool[] = {"type",
					     "op",
					     "kernel",
					     "stride",
					     "pad",
					     "ceil_mode",
					     "count_include_pad",
					     "inputs",
					     NULL};
	static const char *const k_fc[] = {"type", "units", "inputs", NULL};
	static const char *const k_drop[] = {"type", "p", "inputs", NULL};
	static const char *const k_hsig[] = {"type", "alpha", "beta", "inputs",
					     NULL};
	static const char *const k_clip[] = {"type", "min", "max", "inputs",
					     NULL};
	static const char *const k_plain[] = {"type", "inputs", NULL};
	static const char *const k_slice[] = {"type", "start", "channels",
					      "inputs", NULL};
	static const char *const k_shuffle[] = {"type", "groups", "inputs",
						NULL};
	static const char *const k_lnorm[] = {"type", "eps", "inputs", NULL};
	static const char *const k_gnorm[] = {"type", "groups", "eps", "inputs",
					      NULL};
	static const char *const k_prelu[] = {"type", "per_channel", "inputs",
					      NULL};
	static const char *const k_alpha[] = {"type", "alpha", "inputs", NULL};
	static const char *const k_scale[] = {"type", "factor", "shift",
					      "inputs", NULL};
	char where[64];
	const char *type;
	json_t *t, *ins;
	int64_t end[2]; /* a conv's bottom and right pads */
	int rc;

	snprintf(where, sizeof(where), "layer %d", idx);
	if (!json_is_object(lj))
		return hp_error_set(err, HP_EINVAL, "%s: must be an object",
				    where);
	t = json_object_get(lj, "type");
	if (!json_is_string(t))
		return hp_error_set(err, HP_EINVAL,
				    "%s: missing string \"type\"", where);
	type = json_string_value(t);
	memset(L, 0, sizeof(*L));
	snprintf(where, sizeof(where), "layer %d (%.16s)", idx, type);
	ins = json_object_get(lj, "inputs");
	if (ins) {
		size_t k;
		json_t *v;
		if (!json_is_array(ins) || json_array_size(ins) < 1 ||
		    json_array_size(ins) > HP_SPEC_MAX_INPUTS)
			return hp_error_set(err, HP_EINVAL,
					    "%s: \"inputs\" must be an array "
					    "of 1..%d layer indices",
					    where, HP_SPEC_MAX_INPUTS);
		json_array_foreach(ins, k, v)
		{
			if (!json_is_integer(v) || json_integer_value(v) < -1 ||
			    json_integer_value(v) >= idx)
				return hp_error_set(
				    err, HP_EINVAL,
				    "%s: \"inputs\"[%zu] must be an "
				    "earlier layer's index (or -1, the "
				    "network input)",
				    where, k);
			L->inputs[k] = (int)json_integer_value(v);
		}
		L->ninputs = (int)json_array_size(ins);
	}
	if (!strcmp(type, "conv")) {
		L->type = HP_LAYER_CONV;
		if ((rc = check_keys(lj, k_conv, where, err)) ||
		    (rc = get_int(lj, "filters", -1, 1, SPEC_MAX_SIZE,
				  &L->filters, where, err)) ||
		    (rc = get_hw(lj, "kernel", -1, 1, 4096, &L->kernel,
				 &L->kernel_w, NULL, where, err)) ||
		    (rc = get_int(lj, "stride", 1, 1, 4096, &L->stride, where,
				  err)) ||
		    (rc = get_hw(lj, "pad", 0, 0, 4096, &L->pad, &L->pad_w, end,
				 where, err)) ||
		    (rc = get_int(lj, "groups", 1, 1, SPEC_MAX_SIZE, &L->groups,
				  where, err)) ||
		    (rc = get_int(lj, "dilation", 1, 1, 4096, &L->dilation,
				  where, err)))
			return rc;
		L->asym = end[0] != L->pad || end[1] != L->pad_w;
		L->rect =
		    L->kernel_w != L->kernel || L->pad_w != L->pad || L->asym;
		if (L->asym) {
			L->pad_b = end[0];
			L->pad_r = end[1];
		}
		if (!L->rect)
			L->kernel_w = L->pad_w = 0;
	} else if (!strcmp(type, "clip")) {
		L->type = HP_LAYER_CLIP;
		L->lo = 0;
		L->hi = 6;
		if ((rc = check_keys(lj, k_clip, where, err)) ||
		    (rc = get_num(lj, "min", &L->lo, where, err)) ||
		    (rc = get_num(lj, "max", &L->hi, where, err)))
			return rc;
		if (!(L->lo < L->hi))
			return hp_error_set(err, HP_ERANGE,
					    "%s: \"min\" must be less than "
					    "\"max\"",
					    where);
	} else if (!strcmp(type, "gap") || !strcmp(type, "add") ||
		   !strcmp(type, "concat") || !strcmp(type, "flatten")) {
		L->type = !strcmp(type, "gap")	    ? HP_LAYER_GAP
			  : !strcmp(type, "add")    ? HP_LAYER_ADD
			  : !strcmp(type, "concat") ? HP_LAYER_CONCAT
						    : HP_LAYER_FLATTEN;
		if ((rc = check_keys(lj, k_plain, where, err)))
			return rc;
		if ((L->type == HP_LAYER_ADD || L->type == HP_LAYER_CONCAT) &&
		    L->ninputs < 2)
			return hp_error_set(err, HP_EINVAL,
					    "%s: needs \"inputs\" with at "
					    "least two layers",
					    where);
	} else if (!strcmp(type, "pool")) {
		json_t *op = json_object_get(lj, "op"), *cm;
		L->type = HP_LAYER_POOL;
		L->pool_max = true;
		if (op) {
			if (!json_is_string(op) ||
			    (strcmp(json_string_value(op), "max") &&
			     strcmp(json_string_value(op), "avg")))
				return hp_error_set(
				    err, HP_EINVAL,
				    "%s: \"op\" must be \"max\" "
				    "or \"avg\"",
				    where);
			L->pool_max = !strcmp(json_string_value(op), "max");
		}
		if ((rc = check_keys(lj, k_pool, where, err)) ||
		    (rc = get_int(lj, "kernel", -1, 1, 4096, &L->kernel, where,
				  err)) ||
		    (rc = get_int(lj, "stride", L->kernel, 1, 4096, &L->stride,
				  where, err)) ||
		    (rc = get_int(lj, "pad", 0, 0, 4096, &L->pad, where, err)))
			return rc;
		if (L->pad * 2 > L->kernel)
			return hp_error_set(err, HP_EINVAL,
					    "%s: pad %lld is more than half "
					    "the kernel %lld",
					    where, (long long)L->pad,
					    (long long)L->kernel);
		if ((cm = json_object_get(lj, "ceil_mode"))) {
			if (!json_is_boolean(cm))
				return hp_error_set(err, HP_EINVAL,
						    "%s: \"ceil_mode\" must be "
						    "true or false",
						    where);
			L->ceil_mode = json_is_true(cm);
		}
		if ((cm = json_object_get(lj, "count_include_pad"))) {
			if (!json_is_boolean(cm) || L->pool_max)
				return hp_error_set(err, HP_EINVAL,
						    "%s: \"count_include_pad\" "
						    "is true or false, on an "
						    "average pool",
						    where);
			L->pool_exclude = json_is_false(cm);
		}
		/* an average's last window in ceil mode is cut at the input
		 * (PyTorch's divisor): with padding counted that is neither
		 * of the averages the engine has */
		if (L->ceil_mode && !L->pool_max && !L->pool_exclude &&
		    L->pad > 0)
			return hp_error_set(err, HP_EINVAL,
					    "%s: \"ceil_mode\" on an average "
					    "pool with padding needs "
					    "\"count_include_pad\": false",
					    where);
	} else if (!strcmp(type, "fc")) {
		L->type = HP_LAYER_FC;
		if ((rc = check_keys(lj, k_fc, where, err)) ||
		    (rc = get_int(lj, "units", -1, 1, SPEC_MAX_SIZE, &L->units,
				  where, err)))
			return rc;
	} else if (!strcmp(type, "dropout")) {
		json_t *p = json_object_get(lj, "p");
		L->type = HP_LAYER_DROPOUT;
		L->p = 0.5;
		if ((rc = check_keys(lj, k_drop, where, err)))
			return rc;
		if (p) {
			if (!json_is_number(p))
				return hp_error_set(
				    err, HP_EINVAL,
				    "%s: \"p\" must be a number", where);
			L->p = json_number_value(p);
			if (!(L->p >= 0 && L->p < 1))
				return hp_error_set(
				    err, HP_ERANGE,
				    "%s: \"p\" must be in [0, 1)", where);
		}
	} else if (!strcmp(type, "bn") || !strcmp(type, "relu") ||
		   !strcmp(type, "softmax") || !strcmp(type, "sigmoid") ||
		   !strcmp(type, "gelu") || !strcmp(type, "tanh") ||
		   !strcmp(type, "softplus")) {
		L->type = !strcmp(type, "bn")	      ? HP_LAYER_BN
			  : !strcmp(type, "relu")     ? HP_LAYER_RELU
			  : !strcmp(type, "sigmoid")  ? HP_LAYER_SIGMOID
			  : !strcmp(type, "gelu")     ? HP_LAYER_GELU
			  : !strcmp(type, "tanh")     ? HP_LAYER_TANH
			  : !strcmp(type, "softplus") ? HP_LAYER_SOFTPLUS
						      : HP_LAYER_SOFTMAX;
		if ((rc = check_keys(lj, k_plain, where, err)))
			return rc;
	} else if (!strcmp(type, "leakyrelu") || !strcmp(type, "elu")) {
		/* PyTorch's and ONNX's defaults: LeakyReLU 0.01, ELU 1 */
		bool leaky = !strcmp(type, "leakyrelu");
		L->type = leaky ? HP_LAYER_LEAKYRELU : HP_LAYER_ELU;
		L->alpha = leaky ? 0.01 : 1;
		if ((rc = check_keys(lj, k_alpha, where, err)) ||
		    (rc = get_num(lj, "alpha", &L->alpha, where, err)))
			return rc;
		/* the engine takes the gradient from the output, which a
		 * negative alpha would make ambiguous */
		if (!(L->alpha >= 0 && L->alpha <= 1e6))
			return hp_error_set(err, HP_ERANGE,
					    "%s: \"alpha\" must be in [0, 1e6]",
					    where);
	} else if (!strcmp(type, "layernorm") || !strcmp(type, "groupnorm")) {
		/* PyTorch's nn.LayerNorm and nn.GroupNorm (its groups
		 * required): eps 1e-5 */
		bool gn = !strcmp(type, "groupnorm");
		L->type = gn ? HP_LAYER_GROUPNORM : HP_LAYER_LAYERNORM;
		L->eps = 1e-5;
		if ((rc = check_keys(lj, gn ? k_gnorm : k_lnorm, where, err)) ||
		    (gn && (rc = get_int(lj, "groups", -1, 1, SPEC_MAX_SIZE,
					 &L->groups, where, err))) ||
		    (rc = get_num(lj, "eps", &L->eps, where, err)))
			return rc;
		if (!(L->eps > 0 && L->eps <= 1))
			return hp_error_set(err, HP_ERANGE,
					    "%s: \"eps\" must be in (0, 1]",
					    where);
	} else if (!strcmp(type, "prelu")) {
		/* PyTorch's nn.PReLU: one slope unless per channel */
		json_t *pc = json_object_get(lj, "per_channel");
		L->type = HP_LAYER_PRELU;
		if ((rc = check_keys(lj, k_prelu, where, err)))
			return rc;
		if (pc && !json_is_boolean(pc))
			return hp_error_set(err, HP_EINVAL,
					    "%s: \"per_channel\" must be true "
					    "or false",
					    where);
		L->per_channel = pc && json_is_true(pc);
	} else if (!strcmp(type, "scale")) {
		/* factor x + shift: a model's constant arithmetic on its
		 * data (x / 255, (x - 0.5) / 0.5, a residual branch * 0.2);
		 * or a factor and a shift per channel, as arrays (an image's
		 * input normalization) */
		L->type = HP_LAYER_SCALE;
		L->alpha = 1;
		L->beta = 0;
		if ((rc = check_keys(lj, k_scale, where, err)))
			return rc;
		if (json_is_array(json_object_get(lj, "factor")) ||
		    json_is_array(json_object_get(lj, "shift")))
			return scale_channels(lj, L, where, err);
		if ((rc = get_num(lj, "factor", &L->alpha, where, err)) ||
		    (rc = get_num(lj, "shift", &L->beta, where, err)))
			return rc;
		if (L->alpha == 0 || fabs(L->alpha) > 1e6 ||
		    fabs(L->beta) > 1e6)
			return hp_error_set(err, HP_ERANGE,
					    "%s: \"factor\" must not be 0, and "
					    "\"factor\" and \"shift\" must be "
					    "within +-1e6",
					    where);
	} else if (!strcmp(type, "hardsigmoid")) {
		/* ONNX's defaults; PyTorch's hardsigmoid is alpha 1/6 */
		L->type = HP_LAYER_HARDSIGMOID;
		L->alpha = 0.2;
		L->beta = 0.5;
		if ((rc = check_keys(lj, k_hsig, where, err)) ||
		    (rc = get_num(lj, "alpha", &L->alpha, where, err)) ||
		    (rc = get_num(lj, "beta", &L->beta, where, err)))
			return rc;
		if (L->alpha == 0)
			return hp_error_set(err, HP_ERANGE,
					    "%s: \"alpha\" must not be 0",
					    where);
		if (fabs(L->alpha) > 1e6 || fabs(L->beta) > 1e6)
			return hp_error_set(
			    err, HP_ERANGE,
			    "%s: \"alpha\" and \"beta\" must be "
			    "within +-1e6",
			    where);
	} else if (!strcmp(type, "mul")) {
		L->type = HP_LAYER_MUL;
		if ((rc = check_keys(lj, k_plain, where, err)))
			return rc;
		if (L->ninputs != 2)
			return hp_error_set(err, HP_EINVAL,
					    "%s: needs \"inputs\" with two "
					    "layers",
					    where);
	} else if (!strcmp(type, "slice")) {
		L->type = HP_LAYER_SLICE;
		if ((rc = check_keys(lj, k_slice, where, err)) ||
		    (rc = get_int(lj, "start", 0, 0, SPEC_MAX_SIZE, &L->start,
				  where, err)) ||
		    (rc = get_int(lj, "channels", -1, 1, SPEC_MAX_SIZE,
				  &L->channels, where, err)))
			return rc;
	} else if (!strcmp(type, "shuffle")) {
		L->type = HP_LAYER_SHUFFLE;
		if ((rc = check_keys(lj, k_shuffle, where, err)) ||
		    (rc = get_int(lj, "groups", -1, 2, SPEC_MAX_SIZE,
				  &L->groups, where, err)))
			return rc;
	} else {
		return hp_error_set(
		    err, HP_EINVAL,
		    "%s: unknown type (conv, bn, layernorm, "
		    "groupnorm, relu, leakyrelu, prelu, elu, clip, sigmoid, "
		    "tanh, "
		    "hardsigmoid, gelu, softplus, scale, "
		    "pool, gap, dropout, fc, softmax, add, mul, "
		    "concat, flatten, slice, shuffle)",
		    where);
	}
	return 0;
}

/* Layer i's input k (-1: the network input). */
static int input_of(const struct hp_spec_layer *L, int i, int k)
{
	return L->ninputs ? L->inputs[k] : i - 1;
}

int hp_spec_shapes(const struct hp_spec *s, int64_t (*out)[3], bool *flat,
		   struct hp_error *err)
{
	int *uses = calloc((size_t)s->nlayers + 1, sizeof(*uses));
	bool *fl = calloc((size_t)s->nlayers + 1, sizeof(*fl));
	int rc = 0;

	if (!uses || !fl) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < s->nlayers; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		const char *tn = hp_spec_layer_name(L->type);
		int nin = L->ninputs ? L->ninputs : 1;
		int64_t c = 0, h = 0, w = 0;
		bool f = false;

		if (L->ninputs < 0 || L->ninputs > HP_SPEC_MAX_INPUTS ||
		    (nin > 1 && L->type != HP_LAYER_ADD &&
		     L->type != HP_LAYER_CONCAT && L->type != HP_LAYER_MUL)) {
			rc = hp_error_set(err, HP_EINVAL,
					  "layer %d (%s): takes one input", i,
					  tn);
			goto out;
		}
		if ((L->type == HP_LAYER_ADD || L->type == HP_LAYER_CONCAT) &&
		    nin < 2) {
			rc = hp_error_set(err, HP_EINVAL,
					  "layer %d (%s): needs two or more "
					  "inputs",
					  i, tn);
			goto out;
		}
		if (L->type == HP_LAYER_MUL && nin != 2) {
			rc =
			    hp_error_set(err, HP_EINVAL,
					 "layer %d (mul): needs two inputs", i);
			goto out;
		}
		for (int k = 0; k < nin; k++) {
			int j = input_of(L, i, k);
			int64_t ic, ih, iw;
			bool ifl;
			if (j < -1 || j >= i) {
				rc = hp_error_set(err, HP_EINVAL,
						  "layer %d (%s): input %d is "
						  "not an earlier layer",
						  i, tn, j);
				goto out;
			}
			uses[j + 1]++;
			ic = j < 0 ? s->input[0] : out[j][0];
			ih = j < 0 ? s->input[1] : out[j][1];
			iw = j < 0 ? s->input[2] : out[j][2];
			ifl = j >= 0 && fl[j + 1];
			if (k == 0) {
				c = ic;
				h = ih;
				w = iw;
				f = ifl;
				continue;
			}
			/* mul: the second of the first's shape, or C x 1 x 1
			 * broadcast over the image */
			if (L->type == HP_LAYER_MUL && !f && !ifl && ic == c &&
			    ih == 1 && iw == 1)
				continue;
			if (ih != h || iw != w || ifl != f ||
			    ((L->type == HP_LAYER_ADD ||
			      L->type == HP_LAYER_MUL) &&
			     ic != c)) {
				rc = hp_error_set(
				    err, HP_ESHAPE,
				    "layer %d (%s): input %d is %lldx%lldx"
				    "%lld, input %d %lldx%lldx%lld",
				    i, tn, input_of(L, i, 0), (long long)c,
				    (long long)h, (long long)w, j,
				    (long long)ic, (long long)ih,
				    (long long)iw);
				goto out;
			}
			if (L->type == HP_LAYER_CONCAT)
				c += ic;
		}
		switch (L->type) {
		case HP_LAYER_CONV:
		case HP_LAYER_POOL: {
			/* a dilated kernel spans d (k - 1) + 1 */
			int64_t d = hp_spec_dilation(L),
				kh = d * (L->kernel - 1) + 1,
				ph = h + L->pad + hp_spec_pad_b(L),
				pw = w + hp_spec_pad_w(L) + hp_spec_pad_r(L),
				kw = d * (hp_spec_kernel_w(L) - 1) + 1;
			int64_t g = L->groups > 1 ? L->groups : 1;
			if (f) {
				rc = hp_error_set(err, HP_EINVAL,
						  "layer %d (%s): comes after "
						  "an fc layer",
						  i, tn);
				goto out;
			}
			if (L->type == HP_LAYER_CONV &&
			    (c % g || L->filters % g)) {
				rc = hp_error_set(
				    err, HP_EINVAL,
				    "layer %d (conv): groups %lld do not "
				    "divide %lld input channels and %lld "
				    "filters",
				    i, (long long)g, (long long)c,
				    (long long)L->filters);
				goto out;
			}
			if (kh > ph || kw > pw) {
				rc = hp_error_set(
				    err, HP_ESHAPE,
				    "layer %d (%s): kernel %lldx%lld%s larger "
				    "than input %lldx%lld (padded)",
				    i, tn, (long long)kh, (long long)kw,
				    d > 1 ? " (dilated)" : "", (long long)ph,
				    (long long)pw);
				goto out;
			}
			{
				/* the analysis's rule (ceil mode: a last
				 * window starts inside the input) */
				int64_t pt = L->pad, pb = hp_spec_pad_b(L),
					pl = hp_spec_pad_w(L),
					pr = hp_spec_pad_r(L);
				if (hp__window_out(h, L->kernel, L->stride, d,
						   &pt, &pb, "NOTSET",
						   L->ceil_mode, &h) ||
				    hp__window_out(
					w, hp_spec_kernel_w(L), L->stride, d,
					&pl, &pr, "NOTSET", L->ceil_mode, &w)) {
					rc = hp_error_set(
					    err, HP_ESHAPE,
					    "layer %d (%s): no window fits its "
					    "input",
					    i, tn);
					goto out;
				}
			}
			if (L->type == HP_LAYER_CONV)
				c = L->filters;
			break;
		}
		case HP_LAYER_GAP:
			if (f) {
				rc = hp_error_set(err, HP_EINVAL,
						  "layer %d (gap): comes after "
						  "an fc layer",
						  i);
				goto out;
			}
			h = w = 1;
			break;
		case HP_LAYER_FC:
			f = true;
			c = L->units;
			h = w = 1;
			break;
		case HP_LAYER_FLATTEN:
			f = true;
			c = c * h * w;
			h = w = 1;
			break;
		case HP_LAYER_SLICE:
			if (f || L->start < 0 || L->channels < 1 ||
			    L->start > c - L->channels) {
				rc = hp_error_set(
				    err, HP_ESHAPE,
				    "layer %d (slice): channels %lld..%lld "
				    "of %s%lld",
				    i, (long long)L->start,
				    (long long)(L->start + L->channels - 1),
				    f ? "a flat input of " : "", (long long)c);
				goto out;
			}
			c = L->channels;
			break;
		case HP_LAYER_SCALE:
			if (L->nch > 0 && (f || c != L->nch)) {
				rc = hp_error_set(
				    err, HP_ESHAPE,
				    "layer %d (scale): %d factors for %s%lld "
				    "channels",
				    i, L->nch, f ? "a flat input of " : "",
				    (long long)c);
				goto out;
			}
			break;
		case HP_LAYER_GROUPNORM:
			if (L->groups < 1 || c % L->groups) {
				rc = hp_error_set(
				    err, HP_ESHAPE,
				    "layer %d (groupnorm): %lld groups of "
				    "%lld channels (must divide them)",
				    i, (long long)L->groups, (long long)c);
				goto out;
			}
			break;
		case HP_LAYER_SHUFFLE:
			if (f || L->groups < 2 || c % L->groups) {
				rc = hp_error_set(
				    err, HP_ESHAPE,
				    "layer %d (shuffle): %lld groups of "
				    "%s%lld channels (must be 2 or more and "
				    "divide them)",
				    i, (long long)L->groups,
				    f ? "a flat input of " : "", (long long)c);
				goto out;
			}
			break;
		default:
			break;
		}
		if (h < 1 || w < 1) {
			rc = hp_error_set(err, HP_ESHAPE,
					  "layer %d (%s) shrinks the image to "
					  "nothing",
					  i, tn);
			goto out;
		}
		/* Padding grows the image: keep every layer's output, and so
		 * the flatten before an fc, within the model limits. */
		{
			int64_t e;
			if (!hp_mul_i64(c, h, &e) || !hp_mul_i64(e, w, &e) ||
			    e > ((int64_t)1 << 40)) {
				rc = hp_error_set(err, HP_ESHAPE,
						  "layer %d (%s): output of "
						  "more than 2^40 values",
						  i, tn);
				goto out;
			}
		}
		out[i][0] = c;
		out[i][1] = h;
		out[i][2] = w;
		fl[i + 1] = f;
		if (flat)
			flat[i] = f;
	}
	for (int i = 0; i + 1 < s->nlayers; i++)
		if (!uses[i + 1]) {
			rc = hp_error_set(err, HP_EINVAL,
					  "layer %d: no layer reads its output "
					  "(only the last layer may end the "
					  "net)",
					  i);
			goto out;
		}
out:
	free(uses);
	free(fl);
	return rc;
}

/* Walk the spec's shapes; refuse layers that shrink the image to nothing. */
static int check_shapes(const struct hp_spec *s, struct hp_error *err)
{
	int64_t(*sh)[3] = calloc((size_t)s->nlayers + 1, sizeof(*sh));
	int64_t c;
	int rc;

	if (!sh)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = hp_spec_shapes(s, sh, NULL, err);
	if (!rc && s->classes > 0 && s->nlayers > 0) {
		const int64_t *o = sh[s->nlayers - 1];
		c = o[0] * o[1] * o[2];
		if (c != s->classes)
			rc = hp_error_set(err, HP_ESHAPE,
					  "the last layer gives %lld outputs, "
					  "but \"classes\" is %lld",
					  (long long)c, (long long)s->classes);
	}
	free(sh);
	return rc;
}

void hp_spec_release(struct hp_spec *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->layers);
	memset(s, 0, sizeof(*s));
}

int hp_spec_parse_only(const char *text, size_t len, struct hp_spec *s,
		       struct hp_error *err)
{
	static const char *const k_top[] = {"name", "input", "classes",
					    "layers", NULL};
	json_error_t jerr;
	json_t *root, *in, *layers, *name;
	size_t bom;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	if (len > SPEC_MAX_JSON)
		return hp_error_set(err, HP_ETOOBIG,
				    "spec larger than %u bytes", SPEC_MAX_JSON);
	/* Editors may save a byte order mark; JSON has no use for one. */
	bom = hp__utf8_bom_len(text, len);
	root = json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return hp_error_set(err, HP_EPARSE,
				    "invalid JSON at line %d column %d: %s",
				    jerr.line, jerr.column, jerr.text);
	if (!json_is_object(root)) {
		/* jansson reads nothing else at the top level. */
		rc = hp_error_set(err, HP_EINVAL,
				  "spec: the top level must be an object "
				  "{...}, not an array");
		goto out;
	}
	if ((rc = check_keys(root, k_top, "spec", err)))
		goto out;
	name = json_object_get(root, "name");
	if (name && !json_is_string(name)) {
		rc = hp_error_set(err, HP_EINVAL, "\"name\" must be a string");
		goto out;
	}
	s->name = hp_strdup(name ? json_string_value(name) : "spec");
	if (!s->name) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	in = json_object_get(root, "input");
	if (!json_is_array(in) || json_array_size(in) != 3) {
		rc = hp_error_set(err, HP_EINVAL,
				  "\"input\" must be [channels, height, "
				  "width]");
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		json_t *v = json_array_get(in, (size_t)i);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > SPEC_MAX_SIZE) {
			rc = hp_error_set(err, HP_ERANGE,
					  "\"input\"[%d] must be an integer in "
					  "1..%d",
					  i, SPEC_MAX_SIZE);
			goto out;
		}
		s->input[i] = json_integer_value(v);
	}
	if ((rc = get_int(root, "classes", 0, 0, SPEC_MAX_SIZE, &s->classes,
			  "spec", err)))
		goto out;
	layers = json_object_get(root, "layers");
	if (!json_is_array(layers) || json_array_size(layers) == 0) {
		rc = hp_error_set(err, HP_EINVAL,
				  "\"layers\" must be a non-empty array");
		goto out;
	}
	if (json_array_size(layers) > SPEC_MAX_LAYERS) {
		rc = hp_error_set(err, HP_ETOOBIG, "more than %d layers",
				  SPEC_MAX_LAYERS);
		goto out;
	}
	s->layers = calloc(json_array_size(layers), sizeof(*s->layers));
	if (!s->layers) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < json_array_size(layers); i++) {
		rc = parse_layer(json_array_get(layers, i), (int)i,
				 &s->layers[i], err);
		if (rc)
			goto out;
		s->nlayers++;
	}
	rc = check_shapes(s, err);
out:
	json_decref(root);
	if (rc)
		hp_spec_release(s);
	return rc;
}

/* Add an initializer of the given dims. */
static int add_init(struct hp_graph *g, const char *name, int rank,
		    const int64_t *dims, int dtype)
{
	int t = hp_graph_tensor(g, name);

	if (t < 0)
		return t;
	g->tensors[t].initializer = true;
	g->tensors[t].dtype = dtype;
	g->tensors[t].rank = rank;
	memcpy(g->tensors[t].dims, dims, (size_t)rank * sizeof(int64_t));
	return t;
}

/* A norm's "NAME.weight" and "NAME.bias", c values each, into ins[0] and
 * ins[1]; < 0 on ENOMEM. */
static int add_scale_shift(struct hp_graph *g, const char *nm, int64_t c,
			   int *ins)
{
	char wn[112];

	for (int k = 0; k < 2; k++) {
		snprintf(wn, sizeof(wn), "%s.%s", nm, k ? "bias" : "weight");
		if ((ins[k] = add_init(g, wn, 1, &c, HP_DT_FLOAT)) < 0)
			return -1;
	}
	return 0;
}

/* An int64 constant of n values (a shape, a slice's bounds) whose value
 * shape propagation reads; < 0 on ENOMEM. */
static int add_ints(struct hp_graph *g, const char *name, const int64_t *v,
		    int n)
{
	int64_t d = n;
	int t = add_init(g, name, 1, &d, HP_DT_INT64);

	if (t < 0 || hp_tensor_set_ival(&g->tensors[t], v, n))
		return -1;
	return t;
}

/* A float scalar v made by a Constant node (a constant of the model's
 * arithmetic, not a parameter, as exporters write x / 255); < 0 on
 * ENOMEM. */
static int add_const_f(struct hp_graph *g, const char *name, double v)
{
	int t = hp_graph_tensor(g, name), ni;

	if (t < 0 ||
	    (ni = hp_graph_add_node(g, name, "Constant", NULL, 0, &t, 1)) < 0)
		return -1;
	g->tensors[t].producer = ni;
	g->tensors[t].dtype = HP_DT_FLOAT;
	g->tensors[t].rank = 0;
	return hp_tensor_set_fvals(&g->tensors[t], &v, 1) ? -1 : t;
}

/* A Constant node's output: n floats v of shape n, 1, 1 (a value per
 * channel, broadcast over an image); < 0 on ENOMEM. */
static int add_const_ch(struct hp_graph *g, const char *name, const double *v,
			int n)
{
	int t = add_const_f(g, name, v[0]);

	if (t < 0 || hp_tensor_set_fvals(&g->tensors[t], v, n))
		return -1;
	g->tensors[t].rank = 3;
	g->tensors[t].dims[0] = n;
	g->tensors[t].dims[1] = g->tensors[t].dims[2] = 1;
	return t;
}

/* Node n's integer-list attribute name: the cnt values v. */
static struct hp_attr *set_list(struct hp_node *n, const char *name,
				const int64_t *v, int cnt)
{
	struct hp_attr *at = hp_node_add_attr(n, name, HP_ATTR_INTS);

	if (!at)
		return NULL;
	at->ints = malloc((size_t)cnt * sizeof(int64_t));
	if (!at->ints)
		return NULL;
	memcpy(at->ints, v, (size_t)cnt * sizeof(int64_t));
	at->n = (size_t)cnt;
	return at;
}

/* The same of a, b (cnt 2), or a, b, a, b (cnt 4: ONNX's pads). */
static struct hp_attr *set_ints(struct hp_node *n, const char *name, int64_t a,
				int64_t b, int cnt)
{
	return set_list(n, name, (int64_t[4]){a, b, a, b}, cnt);
}

struct hp_graph *hp_spec_to_graph(const struct hp_spec *s, struct hp_error *err)
{
	struct hp_graph *g = hp_graph_new(s->name);
	int64_t(*sh)[3] = calloc((size_t)s->nlayers + 1, sizeof(*sh));
	bool *flat = calloc((size_t)s->nlayers + 1, sizeof(*flat));
	int *outt = calloc((size_t)s->nlayers + 1, sizeof(*outt));
	int cur, in0, rc = HP_ENOMEM;
	char nm[96];

	if (!g || !sh || !flat || !outt)
		goto nomem;
	if ((rc = hp_spec_shapes(s, sh, flat, err)))
		goto fail;
	g->opset = 13;
	g->inputs = calloc(2, sizeof(int));
	g->outputs = calloc(1, sizeof(int));
	if (!g->inputs || !g->outputs)
		goto nomem;
	cur = in0 = hp_graph_tensor(g, "input");
	if (cur < 0)
		goto nomem;
	{
		struct hp_tensor *t = &g->tensors[cur];
		t->graph_input = true;
		t->dtype = HP_DT_FLOAT;
		t->rank = 4;
		t->dims[0] = -1;
		t->dims[1] = s->input[0];
		t->dims[2] = s->input[1];
		t->dims[3] = s->input[2];
		t->batch_axis = 0;
		g->inputs[g->ninputs++] = cur;
	}
	for (int i = 0; i < s->nlayers; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		int ins[HP_SPEC_MAX_INPUTS + 4], outs[2], nin = 1, nout = 1;
		int ni, y, j0 = L->ninputs ? L->inputs[0] : i - 1;
		int64_t c = j0 < 0 ? s->input[0] : sh[j0][0];
		bool in_flat = j0 >= 0 && flat[j0];
		const char *op = NULL;
		struct hp_node *n;

		for (int k = 0; k < (L->ninputs ? L->ninputs : 1); k++) {
			int j = L->ninputs ? L->inputs[k] : i - 1;
			ins[k] = j < 0 ? in0 : outt[j];
			nin = k + 1;
		}
		if (L->type == HP_LAYER_FC && !in_flat) {
			snprintf(nm, sizeof(nm), "flatten%d", i);
			y = hp_graph_tensor(g, nm);
			if (y < 0)
				goto nomem;
			ni = hp_graph_add_node(g, nm, "Flatten", ins, 1, &y, 1);
			if (ni < 0)
				goto nomem;
			g->tensors[y].producer = ni;
			ins[0] = y;
			c = j0 < 0 ? s->input[0] * s->input[1] * s->input[2]
				   : sh[j0][0] * sh[j0][1] * sh[j0][2];
		}
		snprintf(nm, sizeof(nm), "%s%d", layer_names[L->type], i);
		switch (L->type) {
		case HP_LAYER_CONV: {
			int64_t gr = L->groups > 1 ? L->groups : 1;
			int64_t wd[4] = {L->filters, c / gr, L->kernel,
					 hp_spec_kernel_w(L)};
			char wn[112];
			op = "Conv";
			snprintf(wn, sizeof(wn), "%s.weight", nm);
			if ((ins[1] = add_init(g, wn, 4, wd, HP_DT_FLOAT)) < 0)
				goto nomem;
			snprintf(wn, sizeof(wn), "%s.bias", nm);
			if ((ins[2] = add_init(g, wn, 1, wd, HP_DT_FLOAT)) < 0)
				goto nomem;
			nin = 3;
			break;
		}
		case HP_LAYER_BN: {
			static const char *const sfx[] = {
			    "weight", "bias", "running_mean", "running_var"};
			char wn[112];
			op = "BatchNormalization";
			for (int k = 0; k < 4; k++) {
				snprintf(wn, sizeof(wn), "%s.%s", nm, sfx[k]);
				if ((ins[1 + k] = add_init(g, wn, 1, &c,
							   HP_DT_FLOAT)) < 0)
					goto nomem;
			}
			nin = 5;
			break;
		}
		case HP_LAYER_RELU:
			op = "Relu";
			break;
		case HP_LAYER_SIGMOID:
			op = "Sigmoid";
			break;
		case HP_LAYER_HARDSIGMOID:
			op = "HardSigmoid";
			break;
		case HP_LAYER_GELU:
			op = "Gelu";
			break;
		case HP_LAYER_LEAKYRELU:
			op = "LeakyRelu";
			break;
		case HP_LAYER_SCALE: {
			/* Mul by the factor and Add of the shift, as exported
			 * (either left out when it does nothing) */
			char wn[112];
			int ln, ni2;
			bool ch = L->nch > 0;
			op = "Identity";
			if (ch || L->alpha != 1) {
				snprintf(wn, sizeof(wn), "%s.factor", nm);
				if ((ins[1] =
					 ch ? add_const_ch(g, wn, L->chf,
							   L->nch)
					    : add_const_f(g, wn, L->alpha)) < 0)
					goto nomem;
				op = "Mul";
				nin = 2;
			}
			if (!ch && L->beta == 0)
				break;
			if (ch || L->alpha != 1) {
				snprintf(wn, sizeof(wn), "%s.mul", nm);
				if ((ln = hp_graph_tensor(g, wn)) < 0 ||
				    (ni2 = hp_graph_add_node(g, wn, "Mul", ins,
							     2, &ln, 1)) < 0)
					goto nomem;
				g->tensors[ln].producer = ni2;
				ins[0] = ln;
			}
			snprintf(wn, sizeof(wn), "%s.shift", nm);
			if ((ins[1] = ch ? add_const_ch(g, wn, L->chs, L->nch)
					 : add_const_f(g, wn, L->beta)) < 0)
				goto nomem;
			op = "Add";
			nin = 2;
			break;
		}
		case HP_LAYER_TANH:
			op = "Tanh";
			break;
		case HP_LAYER_SOFTPLUS:
			op = "Softplus";
			break;
		case HP_LAYER_ELU:
			op = "Elu";
			break;
		case HP_LAYER_LAYERNORM: {
			/* as PyTorch runs it on an image: Transpose to
			 * channels-last, LayerNormalization over the last
			 * axis, Transpose back (the engine's reorders) */
			char wn[112];
			int ln, ni2;
			struct hp_attr *a;
			if (!in_flat) {
				snprintf(wn, sizeof(wn), "%s.nhwc", nm);
				if ((ln = hp_graph_tensor(g, wn)) < 0 ||
				    (ni2 = hp_graph_add_node(g, wn, "Transpose",
							     ins, 1, &ln, 1)) <
					0)
					goto nomem;
				g->tensors[ln].producer = ni2;
				if (!set_list(&g->nodes[ni2], "perm",
					      (int64_t[4]){0, 2, 3, 1}, 4))
					goto nomem;
				ins[0] = ln;
			}
			if (add_scale_shift(g, nm, c, ins + 1))
				goto nomem;
			op = "LayerNormalization";
			nin = 3;
			if (in_flat)
				break;
			snprintf(wn, sizeof(wn), "%s.norm", nm);
			if ((ln = hp_graph_tensor(g, wn)) < 0 ||
			    (ni2 = hp_graph_add_node(g, wn, op, ins, 3, &ln,
						     1)) < 0)
				goto nomem;
			g->tensors[ln].producer = ni2;
			if (!(a = hp_node_add_attr(&g->nodes[ni2], "epsilon",
						   HP_ATTR_FLOAT)))
				goto nomem;
			a->f = L->eps;
			ins[0] = ln;
			op = "Transpose";
			nin = 1;
			break;
		}
		case HP_LAYER_GROUPNORM:
			/* ONNX's GroupNormalization (opset 21: a scale and
			 * a bias per channel) */
			if (add_scale_shift(g, nm, c, ins + 1))
				goto nomem;
			op = "GroupNormalization";
			nin = 3;
			break;
		case HP_LAYER_PRELU: {
			/* its slope broadcast over the image: C, 1, 1 as
			 * PyTorch exports it, or one value */
			char wn[112];
			int64_t wd[3] = {L->per_channel ? c : 1, 1, 1};
			snprintf(wn, sizeof(wn), "%s.weight", nm);
			if ((ins[1] = add_init(
				 g, wn, L->per_channel && !in_flat ? 3 : 1, wd,
				 HP_DT_FLOAT)) < 0)
				goto nomem;
			op = "PRelu";
			nin = 2;
			break;
		}
		case HP_LAYER_MUL:
			op = "Mul";
			break;
		case HP_LAYER_CLIP:
			op = "Clip";
			break;
		case HP_LAYER_SOFTMAX:
			op = "Softmax";
			break;
		case HP_LAYER_DROPOUT:
			op = "Dropout";
			break;
		case HP_LAYER_POOL:
			op = L->pool_max ? "MaxPool" : "AveragePool";
			break;
		case HP_LAYER_GAP:
			op = "GlobalAveragePool";
			break;
		case HP_LAYER_ADD:
			op = nin > 2 ? "Sum" : "Add";
			break;
		case HP_LAYER_CONCAT:
			op = "Concat";
			break;
		case HP_LAYER_FLATTEN:
			op = "Flatten";
			break;
		case HP_LAYER_SLICE: {
			/* Slice(x, starts, ends, axes) on the channels */
			int64_t b[3] = {L->start, L->start + L->channels, 1};
			char wn[112];
			op = "Slice";
			for (int k = 0; k < 3; k++) {
				snprintf(wn, sizeof(wn), "%s.%s", nm,
					 k == 0	  ? "starts"
					 : k == 1 ? "ends"
						  : "axes");
				if ((ins[1 + k] = add_ints(g, wn, &b[k], 1)) <
				    0)
					goto nomem;
			}
			nin = 4;
			break;
		}
		case HP_LAYER_SHUFFLE: {
			/* as exported: Reshape to N, g, C/g, H, W, Transpose
			 * (0, 2, 1, 3, 4), Reshape back to N, C, H, W */
			int64_t hw[2] = {j0 < 0 ? s->input[1] : sh[j0][1],
					 j0 < 0 ? s->input[2] : sh[j0][2]};
			int64_t s5[5] = {-1, L->groups, c / L->groups, hw[0],
					 hw[1]};
			int64_t s4[4] = {-1, c, hw[0], hw[1]};
			int t5, tt, ni2, sh5;
			char wn[112];
			snprintf(wn, sizeof(wn), "%s.split", nm);
			if ((sh5 = add_ints(g, wn, s5, 5)) < 0)
				goto nomem;
			snprintf(wn, sizeof(wn), "%s.grouped", nm);
			ins[1] = sh5;
			if ((t5 = hp_graph_tensor(g, wn)) < 0 ||
			    (ni2 = hp_graph_add_node(g, wn, "Reshape", ins, 2,
						     &t5, 1)) < 0)
				goto nomem;
			g->tensors[t5].producer = ni2;
			snprintf(wn, sizeof(wn), "%s.transposed", nm);
			if ((tt = hp_graph_tensor(g, wn)) < 0 ||
			    (ni2 = hp_graph_add_node(g, wn, "Transpose", &t5, 1,
						     &tt, 1)) < 0)
				goto nomem;
			g->tensors[tt].producer = ni2;
			if (!set_list(&g->nodes[ni2], "perm",
				      (int64_t[5]){0, 2, 1, 3, 4}, 5))
				goto nomem;
			snprintf(wn, sizeof(wn), "%s.shape", nm);
			ins[0] = tt;
			if ((ins[1] = add_ints(g, wn, s4, 4)) < 0)
				goto nomem;
			op = "Reshape";
			nin = 2;
			break;
		}
		case HP_LAYER_FC: {
			int64_t wd[2] = {L->units, c};
			char wn[112];
			op = "Gemm";
			snprintf(wn, sizeof(wn), "%s.weight", nm);
			if ((ins[1] = add_init(g, wn, 2, wd, HP_DT_FLOAT)) < 0)
				goto nomem;
			snprintf(wn, sizeof(wn), "%s.bias", nm);
			if ((ins[2] = add_init(g, wn, 1, wd, HP_DT_FLOAT)) < 0)
				goto nomem;
			nin = 3;
			break;
		}
		}
		y = hp_graph_tensor(g, nm);
		if (y < 0)
			goto nomem;
		outs[0] = y;
		ni = hp_graph_add_node(g, nm, op, ins, nin, outs, nout);
		if (ni < 0)
			goto nomem;
		g->tensors[y].producer = ni;
		n = &g->nodes[ni];
		if (L->type == HP_LAYER_CONV || L->type == HP_LAYER_POOL) {
			if (!set_ints(n, "kernel_shape", L->kernel,
				      hp_spec_kernel_w(L), 2) ||
			    !set_ints(n, "strides", L->stride, L->stride, 2) ||
			    !set_list(n, "pads",
				      (int64_t[4]){L->pad, hp_spec_pad_w(L),
						   hp_spec_pad_b(L),
						   hp_spec_pad_r(L)},
				      4) ||
			    (hp_spec_dilation(L) > 1 &&
			     !set_ints(n, "dilations", hp_spec_dilation(L),
				       hp_spec_dilation(L), 2)))
				goto nomem;
			if (L->type == HP_LAYER_CONV && L->groups > 1) {
				struct hp_attr *a =
				    hp_node_add_attr(n, "group", HP_ATTR_INT);
				if (!a)
					goto nomem;
				a->i = L->groups;
			}
			if (L->type == HP_LAYER_POOL && L->ceil_mode) {
				struct hp_attr *a = hp_node_add_attr(
				    n, "ceil_mode", HP_ATTR_INT);
				if (!a)
					goto nomem;
				a->i = 1;
			}
			if (L->type == HP_LAYER_POOL && !L->pool_max) {
				struct hp_attr *a = hp_node_add_attr(
				    n, "count_include_pad", HP_ATTR_INT);
				if (!a)
					goto nomem;
				a->i = !L->pool_exclude;
			}
		} else if (L->type == HP_LAYER_FC) {
			struct hp_attr *a =
			    hp_node_add_attr(n, "transB", HP_ATTR_INT);
			if (!a)
				goto nomem;
			a->i = 1;
		} else if (L->type == HP_LAYER_DROPOUT) {
			struct hp_attr *a =
			    hp_node_add_attr(n, "ratio", HP_ATTR_FLOAT);
			if (!a)
				goto nomem;
			a->f = L->p;
		} else if (L->type == HP_LAYER_LAYERNORM) {
			struct hp_attr *a;
			if (in_flat) {
				if (!(a = hp_node_add_attr(n, "epsilon",
							   HP_ATTR_FLOAT)))
					goto nomem;
				a->f = L->eps;
			} else if (!set_list(n, "perm",
					     (int64_t[4]){0, 3, 1, 2}, 4)) {
				goto nomem;
			}
		} else if (L->type == HP_LAYER_GROUPNORM) {
			struct hp_attr *a =
			    hp_node_add_attr(n, "num_groups", HP_ATTR_INT);
			if (!a)
				goto nomem;
			a->i = L->groups;
			if (!(a = hp_node_add_attr(n, "epsilon",
						   HP_ATTR_FLOAT)))
				goto nomem;
			a->f = L->eps;
		} else if (L->type == HP_LAYER_LEAKYRELU ||
			   L->type == HP_LAYER_ELU) {
			struct hp_attr *a =
			    hp_node_add_attr(n, "alpha", HP_ATTR_FLOAT);
			if (!a)
				goto nomem;
			a->f = L->alpha;
		} else if (L->type == HP_LAYER_HARDSIGMOID) {
			struct hp_attr *a =
			    hp_node_add_attr(n, "alpha", HP_ATTR_FLOAT);
			if (!a)
				goto nomem;
			a->f = L->alpha;
			if (!(a = hp_node_add_attr(n, "beta", HP_ATTR_FLOAT)))
				goto nomem;
			a->f = L->beta;
		} else if (L->type == HP_LAYER_CONCAT ||
			   L->type == HP_LAYER_FLATTEN) {
			struct hp_attr *a =
			    hp_node_add_attr(n, "axis", HP_ATTR_INT);
			if (!a)
				goto nomem;
			a->i = 1;
		}
		cur = outt[i] = y;
	}
	if (s->classes > 0) {
		int ins[2], y, ni;
		struct hp_tensor *lab;
		/* a net that ends in 4-D (a 1x1 conv to the classes and a
		 * global pooling, say) gives its C x H x W outputs as the
		 * logits, as the engine takes them: flattened */
		if (s->nlayers == 0 || !flat[s->nlayers - 1]) {
			y = hp_graph_tensor(g, "flatten_logits");
			if (y < 0)
				goto nomem;
			ni = hp_graph_add_node(g, "flatten_logits", "Flatten",
					       &cur, 1, &y, 1);
			if (ni < 0)
				goto nomem;
			g->tensors[y].producer = ni;
			cur = y;
		}
		ins[0] = cur;
		ins[1] = hp_graph_tensor(g, "labels");
		if (ins[1] < 0)
			goto nomem;
		lab = &g->tensors[ins[1]];
		lab->graph_input = true;
		lab->dtype = HP_DT_INT64;
		lab->rank = 1;
		lab->dims[0] = -1;
		lab->batch_axis = 0;
		g->inputs[g->ninputs++] = ins[1];
		y = hp_graph_tensor(g, "loss");
		if (y < 0)
			goto nomem;
		ni = hp_graph_add_node(g, "loss", "SoftmaxCrossEntropyLoss",
				       ins, 2, &y, 1);
		if (ni < 0)
			goto nomem;
		g->tensors[y].producer = ni;
		cur = y;
	}
	g->outputs[g->noutputs++] = cur;
	free(sh);
	free(flat);
	free(outt);
	return g;
nomem:
	hp_error_set(err, HP_ENOMEM, "out of memory building the spec's graph");
fail:
	hp_graph_free(g);
	free(sh);
	free(flat);
	free(outt);
	return NULL;
}

struct hp_graph *hp_spec_parse(const char *json, size_t len,
			       struct hp_error *err)
{
	struct hp_spec s;
	struct hp_graph *g;

	if (hp_spec_parse_only(json, len, &s, err))
		return NULL;
	g = hp_spec_to_graph(&s, err);
	hp_spec_release(&s);
	return g;
}

char *hp_spec_to_json(const struct hp_spec *s)
{
	json_t *root, *layers;
	char *out;

	root = json_pack("{s:s, s:[I,I,I]}", "name", s->name ? s->name : "spec",
			 "input", (json_int_t)s->input[0],
			 (json_int_t)s->input[1], (json_int_t)s->input[2]);
	if (!root)
		return NULL;
	if (s->classes > 0)
		json_object_set_new(root, "classes", json_integer(s->classes));
	layers = json_array();
	for (int i = 0; i < s->nlayers; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		json_t *o = NULL;
		switch (L->type) {
		case HP_LAYER_CONV:
			o = json_pack("{s:s, s:I, s:I, s:I, s:I}", "type",
				      "conv", "filters", (json_int_t)L->filters,
				      "kernel", (json_int_t)L->kernel, "stride",
				      (json_int_t)L->stride, "pad",
				      (json_int_t)L->pad);
			if (o && L->groups > 1)
				json_object_set_new(o, "groups",
						    json_integer(L->groups));
			if (o && hp_spec_dilation(L) > 1)
				json_object_set_new(o, "dilation",
						    json_integer(L->dilation));
			if (o && L->rect) {
				json_object_set_new(
				    o, "kernel",
				    json_pack("[I,I]", (json_int_t)L->kernel,
					      (json_int_t)L->kernel_w));
				json_object_set_new(
				    o, "pad",
				    L->asym
					? json_pack("[I,I,I,I]",
						    (json_int_t)L->pad,
						    (json_int_t)L->pad_w,
						    (json_int_t)L->pad_b,
						    (json_int_t)L->pad_r)
					: json_pack("[I,I]", (json_int_t)L->pad,
						    (json_int_t)L->pad_w));
			}
			break;
		case HP_LAYER_CLIP:
			o = json_pack("{s:s, s:f, s:f}", "type", "clip", "min",
				      L->lo, "max", L->hi);
			break;
		case HP_LAYER_HARDSIGMOID:
			o = json_pack("{s:s, s:f, s:f}", "type", "hardsigmoid",
				      "alpha", L->alpha, "beta", L->beta);
			break;
		case HP_LAYER_LEAKYRELU:
		case HP_LAYER_ELU:
			o = json_pack("{s:s, s:f}", "type",
				      layer_names[L->type], "alpha", L->alpha);
			break;
		case HP_LAYER_POOL:
			o = json_pack("{s:s, s:s, s:I, s:I, s:I}", "type",
				      "pool", "op", L->pool_max ? "max" : "avg",
				      "kernel", (json_int_t)L->kernel, "stride",
				      (json_int_t)L->stride, "pad",
				      (json_int_t)L->pad);
			if (o && L->ceil_mode)
				json_object_set_new(o, "ceil_mode",
						    json_true());
			if (o && L->pool_exclude)
				json_object_set_new(o, "count_include_pad",
						    json_false());
			break;
		case HP_LAYER_FC:
			o = json_pack("{s:s, s:I}", "type", "fc", "units",
				      (json_int_t)L->units);
			break;
		case HP_LAYER_DROPOUT:
			o = json_pack("{s:s, s:f}", "type", "dropout", "p",
				      L->p);
			break;
		case HP_LAYER_SLICE:
			o = json_pack("{s:s, s:I, s:I}", "type", "slice",
				      "start", (json_int_t)L->start, "channels",
				      (json_int_t)L->channels);
			break;
		case HP_LAYER_SHUFFLE:
			o = json_pack("{s:s, s:I}", "type", "shuffle", "groups",
				      (json_int_t)L->groups);
			break;
		case HP_LAYER_LAYERNORM:
			o = json_pack("{s:s, s:f}", "type", "layernorm", "eps",
				      L->eps);
			break;
		case HP_LAYER_PRELU:
			o = json_pack("{s:s, s:b}", "type", "prelu",
				      "per_channel", L->per_channel);
			break;
		case HP_LAYER_SCALE:
			if (L->nch > 0) {
				json_t *f = json_array(), *sh = json_array();
				for (int k = 0; k < L->nch; k++) {
					json_array_append_new(
					    f, json_real(L->chf[k]));
					json_array_append_new(
					    sh, json_real(L->chs[k]));
				}
				o = json_pack("{s:s, s:o, s:o}", "type",
					      "scale", "factor", f, "shift",
					      sh);
			} else {
				o = json_pack("{s:s, s:f, s:f}", "type",
					      "scale", "factor", L->alpha,
					      "shift", L->beta);
			}
			break;
		case HP_LAYER_GROUPNORM:
			o = json_pack("{s:s, s:I, s:f}", "type", "groupnorm",
				      "groups", (json_int_t)L->groups, "eps",
				      L->eps);
			break;
		default:
			o = json_pack("{s:s}", "type", layer_names[L->type]);
		}
		if (o && L->ninputs > 0) {
			json_t *a = json_array();
			for (int k = 0; k < L->ninputs; k++)
				json_array_append_new(
				    a, json_integer(L->inputs[k]));
			json_object_set_new(o, "inputs", a);
		}
		json_array_append_new(layers, o);
	}
	json_object_set_new(root, "layers", layers);
	out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	return out;
}
