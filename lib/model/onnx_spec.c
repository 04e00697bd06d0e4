/*
 * onnx_spec.c - the engine's spec (struct hp_spec, a DAG of layers) of an
 * ONNX CNN: each node that computes on the activations becomes one layer,
 * its inputs the layers that made them.  Only the architecture is taken;
 * the weights are the engine's own.  Sizes come from shape propagation at
 * the requested input, so a model exported at 224x224 runs at 64x64.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/banned.h"

#define VAL_NONE (-2) /* not an activation (a weight, a shape) */

/*
 * A tensor's part in a layer norm or a gelu as PyTorch exports them at
 * opset 13, op by op: LayerNorm over the last axis is ReduceMean, Sub,
 * Pow 2, ReduceMean, Add eps, Sqrt, Div (then Mul by its weight and Add
 * its bias); gelu is Div by sqrt(2), Erf, Add 1, Mul by x, Mul by 0.5.
 * The parts between are not layers: each may be read only by the next
 * op of its pattern.
 */
enum part {
	P_NONE,
	P_MEAN,	     /* ReduceMean over the channels of src */
	P_CENT,	     /* src - its mean */
	P_SQ,	     /* (src - mean)^2 */
	P_VAR,	     /* its mean */
	P_VAREPS,    /* + eps */
	P_STD,	     /* sqrt */
	P_GDIV,	     /* src / sqrt(2) */
	P_GERF,	     /* erf of it */
	P_GERF1,     /* + 1 */
	P_GHALF,     /* src * (1 + erf(src / sqrt(2))) */
	P_MEAN_W,    /* src's mean over W or H: x.mean(3), .mean(2) to come */
	P_GN_GROUPS, /* src reshaped to N, groups, the rest */
	P_GN_NORM,   /* its InstanceNormalization (scale 1, bias 0) */
	P_PARTIAL,   /* the last of those */
	P_LN_OUT,    /* a layernorm layer's output: its weight's Mul to come */
	P_LN_SCALE,  /* and its bias's Add */
	P_MM_OUT,    /* a MatMul's conv or fc: its bias's Add to come */
	P_GN_OUT,    /* a groupnorm layer's output: its weight's Mul to come */
	P_GN_SCALE   /* and its bias's Add */
};

/* The op that may read a tensor of each partial part. */
static const char *const part_next[P_PARTIAL] = {
    [P_MEAN] = "Sub",	     [P_SQ] = "ReduceMean",
    [P_VAR] = "Add",	     [P_VAREPS] = "Sqrt",
    [P_STD] = "Div",	     [P_GDIV] = "Erf",
    [P_GERF] = "Add",	     [P_GERF1] = "Mul",
    [P_GHALF] = "Mul",	     [P_GN_GROUPS] = "InstanceNormalization",
    [P_GN_NORM] = "Reshape", [P_MEAN_W] = "ReduceMean",
};

struct tinfo {
	bool cl;	/* an activation transposed to channels-last (N, H,
			   W, C: ConvNeXt's blocks, around its layer norms
			   and 1x1 layers) */
	bool excl;	/* no other reader saw its layer's output on the way
			   from the layer to it (a layer scale may fold) */
	int8_t part;	/* enum part */
	int src;	/* the tensor a layer norm or gelu is of */
	int readers;	/* nodes reading it */
	double eps;	/* P_VAREPS, P_STD, P_GN_NORM */
	int64_t groups; /* P_GN_GROUPS, P_GN_NORM */
	int8_t axis;	/* P_MEAN_W: the axis src's mean was over (2, 3) */
};

struct conv_ctx {
	struct hp_graph *g;
	struct hp_spec *s;
	int *val; /* per tensor: the layer that made it, -1 input, VAL_NONE */
	/* per tensor: a channel shuffle under way (ShuffleNet's Reshape to
	 * N, g, C/g, H, W: g; then its Transpose (0, 2, 1, 3, 4): -g; the
	 * Reshape back makes the layer); 0 for the rest */
	int64_t *shuf;
	/* per tensor: the zeros a Pad put around its image (top, left,
	 * bottom, right), for the Conv or AveragePool after it to take as
	 * its own padding; zeros for the rest */
	int64_t (*padded)[4];
	struct tinfo *ti; /* per tensor */
	char bad[256];
	size_t nbad;
	/* what was taken otherwise than written, for the spec's notes */
	const char *final_softmax; /* the op, or NULL */
	int scales_folded, ceil_pads, cl_flattens;
	/* per-channel constants on the input averaged: --input-shape gave it
	 * other channels than they are for */
	int in_consts_averaged;
	/* the input's channels as the file gives them (0: not given):
	 * --input-shape may give the data others, which the first conv then
	 * takes, so a conv on the input is checked against the file's */
	int64_t file_channels;
	/* group norms made of PyTorch's pattern, and those of them with
	 * their scale's Mul; instance norms with constant scale and bias */
	int gn_made, gn_affine, in_plain;
};

static void note_bad(struct conv_ctx *c, const char *op)
{
	size_t len = strlen(op);

	if (strstr(c->bad, op))
		return;
	if (c->nbad + len + 3 >= sizeof(c->bad))
		return;
	if (c->nbad) {
		memcpy(c->bad + c->nbad, ", ", 2);
		c->nbad += 2;
	}
	memcpy(c->bad + c->nbad, op, len + 1);
	c->nbad += len;
}

/*
 * Node n's outputs are the activation `in`: the node does nothing to it
 * (an Identity, a Pad of zeros), or it is not run and `bad` names it (NULL:
 * nothing to name); converting goes on, to name every op not run at once.
 */
static int pass_through(struct conv_ctx *c, const struct hp_node *n, int in,
			const char *bad)
{
	int x = -1;

	/* the first activation it reads */
	for (int k = 0; k < n->ninputs && x < 0; k++)
		if (n->inputs[k] >= 0 && c->val[n->inputs[k]] != VAL_NONE)
			x = n->inputs[k];
	if (bad)
		note_bad(c, bad);
	for (int k = 0; k < n->noutputs; k++) {
		int t = n->outputs[k];
		if (t < 0)
			continue;
		c->val[t] = in;
		/* past an op not run, its data is taken as plain: one
		 * refusal, not one for every op after it */
		if (x >= 0 && !bad) {
			c->ti[t].cl = c->ti[x].cl;
			c->ti[t].excl = c->ti[x].excl && c->ti[x].readers == 1;
		}
	}
	return 0;
}

/* Node n's output continues a layer norm's or gelu's pattern: part p of
 * src (pass_through's view of the activations, nothing run). */
static int part_of(struct conv_ctx *c, const struct hp_node *n, int in,
		   enum part p, int src, double eps)
{
	struct tinfo *o = &c->ti[n->outputs[0]];

	pass_through(c, n, in, NULL);
	o->part = (int8_t)p;
	o->src = src;
	o->eps = eps;
	return 0;
}

/*
 * Whether a max pool's pads (b, b, e, e: more at the end of each axis) on
 * an input of H x W (hw) give the outputs of a ceil-mode pool padded b on
 * both sides: older exporters (PyTorch at opset 9, before ONNX had
 * ceil_mode) and "same" padding write ceil mode so, and a max pool's extra
 * end padding holds nothing it could pick.
 */
static bool pads_are_ceil(const int64_t *p, const int64_t *hw, int64_t k,
			  int64_t st)
{
	if (p[0] != p[1] || p[2] != p[3] || p[2] <= p[0] || p[0] < 0 ||
	    p[2] > 4096 || k < 1 || k > 4096 || st < 1 || st > 4096 ||
	    2 * p[0] > k)
		return false;
	for (int a = 0; a < 2; a++) {
		int64_t b = p[0], e = p[2], b2 = p[0], e2 = p[0], o, oc;
		if (hw[a] < 1 || hw[a] > ((int64_t)1 << 40) ||
		    hp__window_out(hw[a], k, st, 1, &b, &e, "NOTSET", false,
				   &o) ||
		    hp__window_out(hw[a], k, st, 1, &b2, &e2, "NOTSET", true,
				   &oc) ||
		    o != oc)
			return false;
	}
	return true;
}

/* A kernel with equal strides and pads alike on both sides of each axis:
 * the height's in *k and *pad; the width's in *kw and *padw, which NULL
 * refuses when they differ (a square kernel, equal pads: pools).  *ceil
 * (NULL: refused) gets ceil_mode; given the input's size (hw, or NULL),
 * a max pool's pads longer at the ends that are its ceil mode are taken
 * so, and auto_pad SAME_* is worked out.  Without kernel_shape the kernel
 * is kernel0 (square), or refused when that is 0.
 * *dil (NULL: refused) gets dilations alike on both axes; pend (NULL:
 * refused) the bottom's and right's pads where they differ from the top's
 * and left's (a conv's). */
static int window(const struct hp_node *n, int64_t kernel0, int64_t *k,
		  int64_t *st, int64_t *pad, int64_t *kw, int64_t *padw,
		  bool *ceil, const int64_t *hw, int64_t *dil, int64_t *pend,
		  struct hp_error *err)
{
	bool as_ceil = false, same;
	const struct hp_attr *ks = hp_node_attr(n, "kernel_shape");
	const struct hp_attr *ss = hp_node_attr(n, "strides");
	const struct hp_attr *ps = hp_node_attr(n, "pads");
	const struct hp_attr *ds = hp_node_attr(n, "dilations");
	const char *ap = hp_node_attr_s(n, "auto_pad", "NOTSET");

	if ((ks && (ks->type != HP_ATTR_INTS || !ks->ints)) ||
	    (ss && (ss->type != HP_ATTR_INTS || !ss->ints)) ||
	    (ps && (ps->type != HP_ATTR_INTS || !ps->ints)) ||
	    (ds && (ds->type != HP_ATTR_INTS || (ds->n && !ds->ints))))
		return hp_error_set(err, HP_EINVAL,
				    "node %s (%s): kernel_shape, strides, "
				    "pads and dilations must be lists of "
				    "integers",
				    n->name, n->op);

	*k = kernel0;
	*st = 1;
	*pad = 0;
	if (kw)
		*kw = *padw = 0;
	same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && !same)
		return hp_error_set(
		    err, HP_EUNSUPP,
		    "node %s (%s): auto_pad %s is not supported", n->name,
		    n->op, ap);
	if (ks && ks->n == 2 && (kw || ks->ints[0] == ks->ints[1])) {
		*k = ks->ints[0];
		if (kw)
			*kw = ks->ints[1];
	} else if (!kernel0 || ks) {
		return hp_error_set(err, HP_EUNSUPP,
				    "node %s (%s): only %s2-D kernels", n->name,
				    n->op, kw ? "" : "square ");
	}
	if (ss) {
		if (ss->n != 2 || ss->ints[0] != ss->ints[1])
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): only equal strides",
					    n->name, n->op);
		*st = ss->ints[0];
	}
	if (ps && ps->n == 4 && !kw && ceil && hw &&
	    !strcmp(n->op, "MaxPool") && !hp_node_attr_i(n, "ceil_mode", 0) &&
	    pads_are_ceil(ps->ints, hw, *k, *st)) {
		as_ceil = true;
		*pad = ps->ints[0];
	} else if (ps && pend && kw && ps->n == 4) {
		/* ONNX: h begin, w begin, h end, w end */
		*pad = ps->ints[0];
		*padw = ps->ints[1];
		pend[0] = ps->ints[2];
		pend[1] = ps->ints[3];
	} else if (ps) {
		/* ONNX: h begin, w begin, h end, w end */
		if (ps->n != 4 || ps->ints[0] != ps->ints[2] ||
		    ps->ints[1] != ps->ints[3] ||
		    (!kw && ps->ints[0] != ps->ints[1]))
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): only equal pads on "
					    "%s",
					    n->name, n->op,
					    kw ? "both sides of each axis"
					       : "all sides");
		*pad = ps->ints[0];
		if (kw)
			*padw = ps->ints[1];
	}
	if (kw && !ks)
		*kw = *k;
	if (pend && !(ps && kw && ps->n == 4)) {
		pend[0] = *pad;
		pend[1] = kw ? *padw : *pad;
	}
	if (dil)
		*dil = 1;
	if (ds && dil && ds->n == 2 && ds->ints[0] == ds->ints[1] &&
	    ds->ints[0] >= 1 && ds->ints[0] <= 4096) {
		*dil = ds->ints[0];
	} else if (ds) {
		for (size_t i = 0; i < ds->n; i++)
			if (ds->ints[i] != 1)
				return hp_error_set(
				    err, HP_EUNSUPP,
				    "node %s (%s): dilation %s", n->name, n->op,
				    dil ? "only alike on both axes, 1 to "
					  "4096"
					: "is for convs only");
	}
	if (same) {
		/* "same" padding (tf2onnx's where it did not write pads):
		 * the analysis's split of it between the sides, which a pool
		 * needs alike on all four */
		int64_t b[2], e[2];
		for (int a = 0; a < 2; a++) {
			int64_t kk = a && kw ? *kw : *k, o;
			if (!hw || hw[a] < 1 || hw[a] > ((int64_t)1 << 40) ||
			    *st < 1 || kk < 1 || kk > 4096 ||
			    hp__window_out(hw[a], kk, *st, dil ? *dil : 1,
					   &b[a], &e[a], ap, false, &o))
				return hp_error_set(
				    err, HP_EUNSUPP,
				    "node %s (%s): auto_pad %s of an input of "
				    "unknown size",
				    n->name, n->op, ap);
		}
		if (!(pend && kw) &&
		    (b[0] != e[0] || b[1] != e[1] || (!kw && b[0] != b[1])))
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): auto_pad %s pads "
					    "%lld and %lld, not alike on both "
					    "sides of each axis",
					    n->name, n->op, ap,
					    (long long)(b[0] + e[0]),
					    (long long)(b[1] + e[1]));
		*pad = b[0];
		if (kw)
			*padw = b[1];
		if (pend && kw) {
			pend[0] = e[0];
			pend[1] = e[1];
		}
	}
	if (ceil)
		*ceil = as_ceil || hp_node_attr_i(n, "ceil_mode", 0) != 0;
	else if (hp_node_attr_i(n, "ceil_mode", 0))
		return hp_error_set(err, HP_EUNSUPP,
				    "node %s (%s): ceil_mode is not supported",
				    n->name, n->op);
	if (*k < 0 || *k > 4096 || *st < 1 || *st > 4096 || *pad < 0 ||
	    *pad > 4096 ||
	    (kw && (*kw < 0 || *kw > 4096 || *padw < 0 || *padw > 4096)) ||
	    (pend &&
	     (pend[0] < 0 || pend[0] > 4096 || pend[1] < 0 || pend[1] > 4096)))
		return hp_error_set(err, HP_ERANGE,
				    "node %s (%s): window out of range",
				    n->name, n->op);
	return 0;
}

/* A float constant input's single value, or def. */
static double const_f(const struct hp_graph *g, const struct hp_node *n, int k,
		      double def)
{
	int t = k < n->ninputs ? n->inputs[k] : -1;

	if (t < 0 || g->tensors[t].nfvals != 1)
		return def;
	return g->tensors[t].fvals[0];
}

/* The integer list of attribute name, else of constant input k: its
 * values in *v (n of them); false when neither is known. */
static bool const_ints(const struct hp_graph *g, const struct hp_node *n,
		       const char *name, int k, const int64_t **v, int64_t *nv)
{
	const struct hp_attr *a = hp_node_attr(n, name);
	int t = k < n->ninputs ? n->inputs[k] : -1;

	if (a && a->type == HP_ATTR_INTS && (a->ints || !a->n)) {
		*v = a->ints;
		*nv = (int64_t)a->n;
		return true;
	}
	if (t >= 0 && g->tensors[t].nival >= 0) {
		*v = g->tensors[t].ival;
		*nv = g->tensors[t].nival;
		return true;
	}
	return false;
}

/* The one axis node n reduces or squeezes (of an input of rank r), in
 * 0 .. r - 1; false when it names none or several. */
static bool one_axis(const struct hp_graph *g, const struct hp_node *n, int r,
		     int64_t *ax)
{
	const int64_t *v;
	int64_t nv;

	if (!const_ints(g, n, "axes", 1, &v, &nv) || nv != 1 || v[0] < -r ||
	    v[0] >= r)
		return false;
	*ax = v[0] < 0 ? v[0] + r : v[0];
	return true;
}

/* A ReduceMean or ReduceMax of a 4-D input over exactly axes 2 and 3 (or
 * -2 and -1). */
static bool over_hw(const struct hp_graph *g, const struct hp_node *n)
{
	const int64_t *ax;
	int64_t na;
	bool h = false, w = false;

	if (!const_ints(g, n, "axes", 1, &ax, &na) || na != 2)
		return false;
	for (int64_t i = 0; i < na; i++) {
		h = h || ax[i] == 2 || ax[i] == -2;
		w = w || ax[i] == 3 || ax[i] == -1;
	}
	return h && w && n->ninputs > 0 && n->inputs[0] >= 0 &&
	       g->tensors[n->inputs[0]].rank == 4;
}

/* A Pad of zeros on H and W of a 4-D tensor (none on N and C): its pads
 * (top, left, bottom, right) in p; -1 for another Pad (other values,
 * reflect or edge mode, pads on N or C, a pad removed). */
static int zero_pads(const struct hp_graph *g, const struct hp_node *n,
		     int64_t p[4])
{
	const char *mode = hp_node_attr_s(n, "mode", "constant");
	const int64_t *v;
	int64_t np;

	memset(p, 0, 4 * sizeof(p[0]));
	if (!const_ints(g, n, "pads", 1, &v, &np) || np < 1)
		return -1;
	if (np != 8) {
		/* padding nothing (DenseNet's), or not an image's */
		for (int64_t i = 0; i < np; i++)
			if (v[i])
				return -1;
		return 0;
	}
	/* ONNX: x1_begin .. x4_begin, x1_end .. x4_end */
	p[0] = v[2];
	p[1] = v[3];
	p[2] = v[6];
	p[3] = v[7];
	if (v[0] || v[1] || v[4] || v[5])
		return -1;
	for (int i = 0; i < 4; i++)
		if (p[i] < 0 || p[i] > 4096)
			return -1;
	if (strcmp(mode, "constant") ||
	    const_f(g, n, 2, hp_node_attr_f(n, "value", 0)) != 0 ||
	    (n->ninputs > 2 && n->inputs[2] >= 0 &&
	     g->tensors[n->inputs[2]].nfvals != 1))
		return -1;
	return 0;
}

static bool is_padded(const struct conv_ctx *c, int t)
{
	const int64_t *p = c->padded[t];

	return p[0] || p[1] || p[2] || p[3];
}

static int add_layer(struct conv_ctx *c, const struct hp_node *n,
		     const struct hp_spec_layer *L, const int *ins, int nin,
		     struct hp_error *err)
{
	struct hp_spec *s = c->s;
	struct hp_spec_layer *d;
	int i = s->nlayers;

	if (i >= 4096)
		return hp_error_set(err, HP_ETOOBIG, "more than 4096 layers");
	d = &s->layers[i];
	*d = *L;
	if (!(nin == 1 && ins[0] == i - 1)) {
		d->ninputs = nin;
		memcpy(d->inputs, ins, (size_t)nin * sizeof(int));
	}
	s->nlayers++;
	if (n->noutputs > 0 && n->outputs[0] >= 0) {
		struct tinfo *o = &c->ti[n->outputs[0]];
		c->val[n->outputs[0]] = i;
		o->excl = true;
		/* channels-last in, channels-last out (the layers made of
		 * the patterns above set theirs; flat data has no layout) */
		for (int k = 0; k < n->ninputs && L->type != HP_LAYER_FLATTEN;
		     k++)
			if (n->inputs[k] >= 0 &&
			    c->val[n->inputs[k]] != VAL_NONE)
				o->cl = o->cl || c->ti[n->inputs[k]].cl;
	}
	return 0;
}

/* A Reshape of a 4-D N, C, H, W to N, g, C/g, H, W (g 2 or more): the
 * first step of a channel shuffle as PyTorch exports it. */
static bool shuffle_split(const struct hp_graph *g, const struct hp_node *n)
{
	const struct hp_tensor *x = &g->tensors[n->inputs[0]];
	const struct hp_tensor *y = n->noutputs > 0 && n->outputs[0] >= 0
					? &g->tensors[n->outputs[0]]
					: NULL;

	return y && x->rank == 4 && y->rank == 5 && y->dims[0] == x->dims[0] &&
	       y->dims[1] >= 2 && y->dims[2] >= 1 &&
	       y->dims[1] * y->dims[2] == x->dims[1] &&
	       y->dims[3] == x->dims[2] && y->dims[4] == x->dims[3];
}

/*
 * A Slice of a 4-D activation along the channels (axis 1, step 1; any
 * other axis it names taken whole): *L's start and channels.  Its bounds
 * are constants or folded shape arithmetic (torch.chunk exports them from
 * the input's Shape).
 */
static int slice_channels(const struct hp_graph *g, const struct hp_node *n,
			  struct hp_spec_layer *L, struct hp_error *err)
{
	const struct hp_tensor *x = &g->tensors[n->inputs[0]];
	const struct hp_tensor *y = &g->tensors[n->outputs[0]];
	const int64_t *st, *en, *ax = NULL, *sp = NULL;
	int64_t nst, nen, nax = 0, nsp = 0;
	bool found = false;

	if (x->rank != 4 || y->rank != 4 ||
	    !const_ints(g, n, "starts", 1, &st, &nst) ||
	    !const_ints(g, n, "ends", 2, &en, &nen) || nst != nen ||
	    /* axes and steps are optional, but must be known if given */
	    (!const_ints(g, n, "axes", 3, &ax, &nax) &&
	     (hp_node_attr(n, "axes") ||
	      (n->ninputs > 3 && n->inputs[3] >= 0))) ||
	    (!const_ints(g, n, "steps", 4, &sp, &nsp) && n->ninputs > 4 &&
	     n->inputs[4] >= 0))
		goto refuse;
	if ((ax && nax != nst) || (sp && nsp != nst))
		goto refuse;
	for (int64_t i = 0; i < nst; i++) {
		int64_t a = ax ? ax[i] : i, b = st[i], d;
		if (a < 0)
			a += 4;
		if (a < 0 || a > 3 || (sp && sp[i] != 1))
			goto refuse;
		d = x->dims[a];
		if (b < 0)
			b += d;
		b = b < 0 ? 0 : b > d ? d : b;
		if (a != 1) {
			/* another axis: only the whole of it */
			if (b != 0 || y->dims[a] != d)
				goto refuse;
			continue;
		}
		found = true;
		L->start = b;
		L->channels = y->dims[1];
	}
	if (found && L->channels >= 1 && L->start + L->channels <= x->dims[1] &&
	    y->dims[0] == x->dims[0] && y->dims[2] == x->dims[2] &&
	    y->dims[3] == x->dims[3])
		return 0;
refuse:
	return hp_error_set(err, HP_EUNSUPP,
			    "node %s (Slice): only a range of the channels "
			    "of an image batch, step 1, with constant bounds",
			    n->name);
}

/*
 * A Split of a 4-D activation along the channels: a slice layer for each
 * output, their starts one after the other and their sizes the outputs'
 * (as shape propagation found them, from the split sizes or an even
 * split).  An output nobody reads is refused when the spec is checked.
 */
static int split_channels(struct conv_ctx *c, const struct hp_node *n, int in,
			  struct hp_error *err)
{
	const struct hp_graph *g = c->g;
	const struct hp_tensor *x = &g->tensors[n->inputs[0]];
	int64_t axis = hp_node_attr_i(n, "axis", 0), start = 0;
	int first = -1, rc;

	if (axis < 0)
		axis += x->rank;
	if (x->rank != 4 || axis != 1 || n->noutputs < 1)
		goto refuse;
	for (int k = 0; k < n->noutputs; k++) {
		const struct hp_tensor *y;
		struct hp_spec_layer L;
		if (n->outputs[k] < 0)
			goto refuse;
		y = &g->tensors[n->outputs[k]];
		if (y->rank != 4 || y->dims[1] < 1 ||
		    y->dims[0] != x->dims[0] || y->dims[2] != x->dims[2] ||
		    y->dims[3] != x->dims[3] || start + y->dims[1] > x->dims[1])
			goto refuse;
		memset(&L, 0, sizeof(L));
		L.type = HP_LAYER_SLICE;
		L.start = start;
		L.channels = y->dims[1];
		start += y->dims[1];
		if ((rc = add_layer(c, n, &L, &in, 1, err)))
			return rc;
		c->val[n->outputs[k]] = c->s->nlayers - 1;
		if (k == 0)
			first = c->s->nlayers - 1;
	}
	c->val[n->outputs[0]] = first;
	return 0;
refuse:
	return hp_error_set(err, HP_EUNSUPP,
			    "node %s (Split): only of an image batch's "
			    "channels (axis 1) into outputs of known size",
			    n->name);
}

/* A whole activation: not a part of a layer norm or gelu under way. */
static bool whole(const struct conv_ctx *c, int t)
{
	return t >= 0 && c->val[t] != VAL_NONE &&
	       (c->ti[t].part == P_NONE || c->ti[t].part > P_PARTIAL);
}

/* An activation whose last axis is its channels: channels-last, or flat. */
static bool chan_last(const struct conv_ctx *c, int t)
{
	const struct hp_tensor *x = &c->g->tensors[t];

	return (x->rank == 4 && c->ti[t].cl) || x->rank == 2;
}

/* A constant's single value, NAN when it has not one known value. */
static double tconst(const struct conv_ctx *c, int t)
{
	const struct hp_tensor *x;

	if (t < 0 || c->val[t] != VAL_NONE)
		return NAN;
	x = &c->g->tensors[t];
	return x->nfvals == 1 ? x->fvals[0] : NAN;
}

/* Whether x, of n values, lines up with n channels: with img, of an
 * N, C, H, W image, as C, 1, 1 or 1, C, 1, 1 (broadcast over H and W: a
 * layer scale, a PReLU slope, a per-channel constant); else as C (an
 * op's own per-channel input; channels-last or flat data, whose last axis
 * is the channels). */
static bool along_channels(const struct hp_tensor *x, int64_t n, bool img)
{
	if (n < 1 || hp_tensor_numel(x) != n)
		return false;
	if (!img)
		return x->rank == 1;
	return (x->rank == 3 && x->dims[0] == n) ||
	       (x->rank == 4 && x->dims[1] == n);
}

/* A stored vector (a weight, not computed) along_channels(). */
static bool stored_vec(const struct conv_ctx *c, int t, int64_t n, bool img)
{
	return t >= 0 && c->val[t] == VAL_NONE &&
	       along_channels(&c->g->tensors[t], n, img);
}

static int add_layer(struct conv_ctx *c, const struct hp_node *n,
		     const struct hp_spec_layer *L, const int *ins, int nin,
		     struct hp_error *err);

/* add_layer() of one input, src's layer, its output part p and, like
 * src, channels-last or not. */
static int add_layer_of(struct conv_ctx *c, const struct hp_node *n,
			struct hp_spec_layer *L, int src, enum part p,
			struct hp_error *err)
{
	int in = c->val[src], rc = add_layer(c, n, L, &in, 1, err);

	if (!rc) {
		c->ti[n->outputs[0]].part = (int8_t)p;
		c->ti[n->outputs[0]].cl = c->ti[src].cl;
	}
	return rc;
}

/*
 * ConvNeXt's forms, as PyTorch exports them (opset 13): a Transpose to
 * channels-last and back around layer norms (the ops of `enum part`),
 * MatMuls by stored weights (1x1 convs; fc layers on flat data) with their
 * bias Adds, gelu's ops, and a layer scale (a stored factor per channel)
 * on a conv's output, which the conv's weights take (the same functions;
 * the engine skips one elementwise pass).  Returns 0 when node n was one
 * of them, 1 when it was not, < 0 on error.
 */
static int convnext_node(struct conv_ctx *c, const struct hp_node *n,
			 struct hp_error *err)
{
	struct hp_graph *g = c->g;
	struct hp_spec_layer L;
	const char *op = n->op;
	int a = n->ninputs > 0 ? n->inputs[0] : -1;
	int b = n->ninputs > 1 ? n->inputs[1] : -1;
	bool act_a = a >= 0 && c->val[a] != VAL_NONE;
	bool act_b = b >= 0 && c->val[b] != VAL_NONE;
	/* the activation of a two-input op with one, and the other input */
	int t = act_a ? a : b, k = act_a ? b : a;
	struct tinfo *tt = t >= 0 ? &c->ti[t] : NULL;
	const struct hp_tensor *x = t >= 0 ? &g->tensors[t] : NULL;
	int64_t clast = x && x->rank >= 1 ? x->dims[x->rank - 1] : -1;

	memset(&L, 0, sizeof(L));
	if ((!act_a && !act_b) || n->noutputs < 1 || n->outputs[0] < 0)
		return 1;
	if (!strcmp(op, "Transpose") && act_a && x->rank == 4 && whole(c, a)) {
		const struct hp_attr *p = hp_node_attr(n, "perm");
		static const int64_t to_cl[4] = {0, 2, 3, 1};
		static const int64_t from_cl[4] = {0, 3, 1, 2};
		const int64_t *want = tt->cl ? from_cl : to_cl;
		if (!p || p->type != HP_ATTR_INTS || p->n != 4 ||
		    memcmp(p->ints, want, sizeof(to_cl)))
			return 1;
		pass_through(c, n, c->val[a], NULL);
		c->ti[n->outputs[0]].cl = !tt->cl;
		return 0;
	}
	if (!strcmp(op, "ReduceMean") && act_a) {
		const int64_t *ax;
		int64_t na;
		if (!const_ints(g, n, "axes", 1, &ax, &na) || na != 1 ||
		    (ax[0] != -1 && ax[0] != x->rank - 1) ||
		    hp_node_attr_i(n, "keepdims", 1) != 1)
			return 1;
		if (tt->part == P_SQ)
			return part_of(c, n, c->val[a], P_VAR, tt->src, 0);
		if (whole(c, a) && chan_last(c, a))
			return part_of(c, n, c->val[a], P_MEAN, a, 0);
		return 1;
	}
	if (!strcmp(op, "Sub") && act_b && n->ninputs == 2 && whole(c, a) &&
	    c->ti[b].part == P_MEAN && c->ti[b].src == a)
		return part_of(c, n, c->val[a], P_CENT, a, 0);
	if (!strcmp(op, "Pow") && tt->part == P_CENT && !act_b &&
	    tconst(c, b) == 2)
		return part_of(c, n, c->val[a], P_SQ, tt->src, 0);
	if (!strcmp(op, "Sqrt") && tt->part == P_VAREPS)
		return part_of(c, n, c->val[a], P_STD, tt->src, tt->eps);
	if (!strcmp(op, "Erf") && tt->part == P_GDIV)
		return part_of(c, n, c->val[a], P_GERF, tt->src, 0);
	if (!strcmp(op, "Div") && act_b && tt->part == P_CENT &&
	    c->ti[b].part == P_STD && c->ti[b].src == tt->src) {
		/* the mean and variance over the channels: a layer norm */
		L.type = HP_LAYER_LAYERNORM;
		L.eps = c->ti[b].eps;
		return add_layer_of(c, n, &L, tt->src, P_LN_OUT, err);
	}
	if (!strcmp(op, "Div") && !act_b && whole(c, a) &&
	    fabs(tconst(c, b) - sqrt(2.0)) < 1e-4)
		return part_of(c, n, c->val[a], P_GDIV, a, 0);
	if (!strcmp(op, "MatMul") && !act_b && whole(c, a) && chan_last(c, a) &&
	    b >= 0 && g->tensors[b].rank == 2 &&
	    g->tensors[b].dims[0] == clast && g->tensors[b].dims[1] >= 1) {
		/* x W on the channels: a 1x1 conv, or an fc of flat data */
		if (x->rank == 4) {
			L.type = HP_LAYER_CONV;
			L.filters = g->tensors[b].dims[1];
			L.kernel = L.stride = 1;
		} else {
			L.type = HP_LAYER_FC;
			L.units = g->tensors[b].dims[1];
		}
		return add_layer_of(c, n, &L, a, P_MM_OUT, err);
	}
	if (!strcmp(op, "LayerNormalization") && act_a && whole(c, a) &&
	    chan_last(c, a)) {
		/* opset 17's one op: over the channels (the last axis), with
		 * stored scale and bias (the engine's layer has both; a
		 * missing bias is its zeros) */
		int64_t axis = hp_node_attr_i(n, "axis", -1);
		bool reads_more = false;
		for (int k2 = 1; k2 < n->noutputs; k2++)
			reads_more =
			    reads_more || (n->outputs[k2] >= 0 &&
					   c->ti[n->outputs[k2]].readers);
		L.type = HP_LAYER_LAYERNORM;
		L.eps = hp_node_attr_f(n, "epsilon", 1e-5);
		if ((axis != -1 && axis != x->rank - 1) || reads_more ||
		    !stored_vec(c, b, clast, false) ||
		    (n->ninputs > 2 && n->inputs[2] >= 0 &&
		     !stored_vec(c, n->inputs[2], clast, false)) ||
		    !(L.eps > 0 && L.eps <= 1))
			return 1;
		return add_layer_of(c, n, &L, a, P_NONE, err);
	}
	if (!strcmp(op, "Gelu") && act_a && n->ninputs == 1 && whole(c, a)) {
		/* opset 20's one op, the erf form (the tanh form differs by
		 * up to 1e-3 and is not the engine's) */
		if (strcmp(hp_node_attr_s(n, "approximate", "none"), "none")) {
			pass_through(c, n, c->val[a],
				     "Gelu (tanh approximation)");
			return 0;
		}
		L.type = HP_LAYER_GELU;
		return add_layer_of(c, n, &L, a, P_NONE, err);
	}
	if (n->ninputs != 2)
		return 1;
	if (!strcmp(op, "Add") && act_a != act_b) {
		double v = tconst(c, k);
		if (tt->part == P_VAR && v > 0 && v <= 1)
			return part_of(c, n, c->val[t], P_VAREPS, tt->src, v);
		if (tt->part == P_GERF && v == 1)
			return part_of(c, n, c->val[t], P_GERF1, tt->src, 0);
		/* the bias of a layer norm or of a MatMul: the layer's own */
		if ((tt->part == P_LN_SCALE || tt->part == P_MM_OUT) &&
		    tt->readers == 1 && stored_vec(c, k, clast, false))
			return pass_through(c, n, c->val[t], NULL);
		return 1;
	}
	if (strcmp(op, "Mul"))
		return 1;
	if (act_a && act_b) {
		/* gelu's x (1 + erf(x / sqrt(2))), either way round */
		int h = c->ti[a].part == P_GERF1 ? a : b, o = h == a ? b : a;
		if (c->ti[h].part == P_GERF1 && c->ti[h].src == o &&
		    whole(c, o))
			return part_of(c, n, c->val[o], P_GHALF, o, 0);
		return 1;
	}
	if (tt->part == P_GHALF && tconst(c, k) == 0.5) {
		L.type = HP_LAYER_GELU;
		return add_layer_of(c, n, &L, tt->src, P_NONE, err);
	}
	if (tt->part == P_LN_OUT && tt->readers == 1 &&
	    stored_vec(c, k, clast, false)) {
		/* the layer norm's weight: the layer's own */
		pass_through(c, n, c->val[t], NULL);
		c->ti[n->outputs[0]].part = P_LN_SCALE;
		return 0;
	}
	if (x->rank == 4 && !tt->cl && tt->excl && tt->readers == 1 &&
	    c->val[t] == c->s->nlayers - 1 &&
	    c->s->layers[c->val[t]].type == HP_LAYER_CONV &&
	    stored_vec(c, k, x->dims[1], true)) {
		/* a layer scale on the conv that made t (and nothing read
		 * in between): folded into the conv */
		c->scales_folded++;
		return pass_through(c, n, c->val[t], NULL);
	}
	return 1;
}

/* Whether t is a constant (not an activation) of n known values, all v;
 * with fixed, not a stored weight (an initializer) that training would
 * move from its first value (a model trained at its start has weights of
 * 1 and 0 too). */
static bool const_all(const struct conv_ctx *c, int t, int64_t n, double v,
		      bool fixed)
{
	const struct hp_tensor *x;

	if (t < 0 || c->val[t] != VAL_NONE)
		return false;
	x = &c->g->tensors[t];
	if (x->nfvals != n || hp_tensor_numel(x) != n ||
	    (fixed && (x->initializer || x->graph_input)))
		return false;
	for (int64_t i = 0; i < n; i++)
		if (x->fvals[i] != v)
			return false;
	return true;
}

/*
 * Group and instance norms.  PyTorch exports nn.GroupNorm (before opset
 * 18) as a Reshape to N, G, the rest; an InstanceNormalization of that
 * with scale 1 and bias 0; a Reshape back (to the Shape of its input); a
 * Mul by its weight and an Add of its bias (C, 1, 1 each).  An
 * InstanceNormalization of an image with a scale and bias per channel is
 * nn.InstanceNorm2d; GroupNormalization (opset 21: scale and bias per
 * channel) is the one op.  Returns 0 when node n was one of these forms,
 * 1 when not, < 0 on error.
 */
static int groupnorm_node(struct conv_ctx *c, const struct hp_node *n,
			  struct hp_error *err)
{
	const struct hp_graph *g = c->g;
	const char *op = n->op;
	int a = n->ninputs > 0 ? n->inputs[0] : -1;
	int b = n->ninputs > 1 ? n->inputs[1] : -1;
	int bias = n->ninputs > 2 ? n->inputs[2] : -1;
	bool act_a = a >= 0 && c->val[a] != VAL_NONE;
	bool act_b = b >= 0 && c->val[b] != VAL_NONE;
	int t = act_a ? a : b, k = act_a ? b : a;
	const struct hp_tensor *x, *y;
	struct tinfo *tt;
	struct hp_spec_layer L;
	int64_t ch;
	bool img;

	if (act_a == act_b || n->noutputs < 1 || n->outputs[0] < 0)
		return 1;
	x = &g->tensors[t];
	y = &g->tensors[n->outputs[0]];
	tt = &c->ti[t];
	ch = x->rank >= 2 ? x->dims[1] : -1;
	memset(&L, 0, sizeof(L));
	L.type = HP_LAYER_GROUPNORM;
	if (!strcmp(op, "Reshape") && act_a && whole(c, a) && !tt->cl &&
	    (x->rank == 4 || x->rank == 2) && y->rank == 3 && x->dims[0] >= 1 &&
	    ch >= 1 && y->dims[0] == x->dims[0] && y->dims[1] >= 1 &&
	    ch % y->dims[1] == 0 &&
	    y->dims[2] == hp_tensor_numel(x) / x->dims[0] / y->dims[1] &&
	    c->ti[n->outputs[0]].readers == 1) {
		/* perhaps a group norm's first step: only its
		 * InstanceNormalization may read it (part_next) */
		part_of(c, n, c->val[a], P_GN_GROUPS, a, 0);
		c->ti[n->outputs[0]].groups = y->dims[1];
		return 0;
	}
	if (!strcmp(op, "InstanceNormalization") && act_a &&
	    tt->part == P_GN_GROUPS) {
		L.eps = hp_node_attr_f(n, "epsilon", 1e-5);
		if (!const_all(c, b, tt->groups, 1, false) ||
		    !const_all(c, bias, tt->groups, 0, false) ||
		    !(L.eps > 0 && L.eps <= 1))
			return 1;
		part_of(c, n, c->val[a], P_GN_NORM, tt->src, L.eps);
		c->ti[n->outputs[0]].groups = tt->groups;
		return 0;
	}
	if (!strcmp(op, "Reshape") && act_a && tt->part == P_GN_NORM) {
		const struct hp_tensor *src = &g->tensors[tt->src];
		if (y->rank != src->rank ||
		    memcmp(y->dims, src->dims,
			   (size_t)y->rank * sizeof(y->dims[0])))
			return 1;
		L.groups = tt->groups;
		L.eps = tt->eps;
		c->gn_made++;
		return add_layer_of(c, n, &L, tt->src, P_GN_OUT, err);
	}
	if (((!strcmp(op, "InstanceNormalization") && x->rank == 4) ||
	     !strcmp(op, "GroupNormalization")) &&
	    act_a && whole(c, a) && !tt->cl && n->ninputs == 3) {
		/* nn.InstanceNorm2d: a group per channel; or the one op */
		bool gn = !strcmp(op, "GroupNormalization");
		L.groups = gn ? hp_node_attr_i(n, "num_groups", 0) : ch;
		L.eps = hp_node_attr_f(n, "epsilon", 1e-5);
		if (L.groups < 1 || ch % L.groups || !(L.eps > 0 && L.eps <= 1))
			return 1;
		if (gn && L.groups < ch && stored_vec(c, b, L.groups, false)) {
			pass_through(c, n, c->val[a],
				     "GroupNormalization (a scale per group: "
				     "opset 18)");
			return 0;
		}
		if (!gn && const_all(c, b, ch, 1, true) &&
		    const_all(c, bias, ch, 0, true))
			c->in_plain++;
		else if (!stored_vec(c, b, ch, false) ||
			 !stored_vec(c, bias, ch, false))
			return 1;
		return add_layer_of(c, n, &L, a, P_NONE, err);
	}
	if (n->ninputs != 2 || tt->readers != 1 ||
	    (tt->part != P_GN_OUT && tt->part != P_GN_SCALE))
		return 1;
	img = x->rank == 4;
	/* without affine (PyTorch's affine=False), the Mul is by a
	 * constant 1 and the Add of a 0 */
	if (!strcmp(op, "Mul") && tt->part == P_GN_OUT &&
	    (const_all(c, k, 1, 1, true) || stored_vec(c, k, ch, img))) {
		/* the group norm's weight: the layer's own */
		c->gn_affine += stored_vec(c, k, ch, img);
		pass_through(c, n, c->val[t], NULL);
		c->ti[n->outputs[0]].part = P_GN_SCALE;
		return 0;
	}
	if (!strcmp(op, "Add") && tt->part == P_GN_SCALE &&
	    (const_all(c, k, 1, 0, true) || stored_vec(c, k, ch, img)))
		return pass_through(c, n, c->val[t], NULL);
	return 1;
}

/*
 * An activation times, over, plus or minus a constant scalar (x / 255,
 * (x - 0.5) / 0.5, a residual branch * 0.2): a scale layer, or folded
 * into the scale layer just before it that nothing else reads.  On the
 * network input, a constant of a value per channel (C, 1, 1 or 1, C, 1,
 * 1; up to HP_SPEC_SCALE_CH) too: an input normalization, (x - mean) /
 * std, a factor and a shift per channel.  (Deeper in a net such a stored
 * vector is as likely a weight that trains.)  Returns 0 when node n was
 * one, 1 when not, < 0 on error.
 */
static int scale_node(struct conv_ctx *c, const struct hp_node *n, int in,
		      struct hp_error *err)
{
	const char *op = n->op;
	int a = n->ninputs == 2 ? n->inputs[0] : -1;
	int b = n->ninputs == 2 ? n->inputs[1] : -1;
	bool act_a = a >= 0 && c->val[a] != VAL_NONE;
	bool act_b = b >= 0 && c->val[b] != VAL_NONE;
	int x = act_a ? a : b, k = act_a ? b : a, nch = 0, nv = 1;
	double v[HP_SPEC_SCALE_CH], f[HP_SPEC_SCALE_CH], sh[HP_SPEC_SCALE_CH];
	struct hp_spec_layer L, *p = NULL;
	struct hp_spec *sp = c->s;

	/* a whole activation: a part of a layer norm or gelu under way
	 * (its pattern's view of the input, nothing computed) is not */
	if (a < 0 || b < 0 || act_a == act_b || !whole(c, x))
		return 1;
	if (c->val[x] == sp->nlayers - 1 && c->val[x] >= 0 &&
	    sp->layers[c->val[x]].type == HP_LAYER_SCALE &&
	    c->ti[x].readers == 1 && c->ti[x].excl)
		p = &sp->layers[c->val[x]];
	v[0] = tconst(c, k);
	if (!isfinite(v[0])) {
		/* a value per channel, on the input (or its scale) */
		const struct hp_tensor *xt = &c->g->tensors[x];
		const struct hp_tensor *kt = &c->g->tensors[k];
		int64_t ch = xt->rank == 4 && !c->ti[x].cl ? xt->dims[1] : 0;
		bool on_input =
		    c->val[x] == -1 ||
		    (p && (p->ninputs ? p->inputs[0] == -1 : c->val[x] == 0));
		int64_t kn = kt->nfvals;
		/* the input's channels are the spec's (a broadcast with a
		 * constant of other channels widens the tensor's) */
		if (on_input && ch && sp->input[0] > 0)
			ch = sp->input[0];
		if (on_input && ch >= 1 && kn >= 2 && kn != ch &&
		    kn <= HP_SPEC_SCALE_CH && along_channels(kt, kn, true)) {
			/* --input-shape gave the input other channels than
			 * these constants are for (a 3-channel
			 * normalization on 1-channel data): their mean, on
			 * every channel */
			double m = 0;
			for (int64_t i = 0; i < kn; i++)
				m += kt->fvals[i];
			v[0] = m / (double)kn;
			c->in_consts_averaged++;
		} else if (!on_input || ch < 2 || ch > HP_SPEC_SCALE_CH ||
			   kn != ch || !along_channels(kt, ch, true)) {
			return 1;
		} else {
			nch = nv = (int)ch;
			for (int i = 0; i < nv; i++)
				v[i] = kt->fvals[i];
		}
	}
	for (int i = 0; i < nv; i++) {
		f[i] = 1;
		sh[i] = 0;
		if (!isfinite(v[i]))
			return 1;
		if (!strcmp(op, "Mul"))
			f[i] = v[i];
		else if (!strcmp(op, "Div") && act_a && v[i] != 0)
			f[i] = 1 / v[i];
		else if (!strcmp(op, "Add"))
			sh[i] = v[i];
		else if (!strcmp(op, "Sub") && act_a) /* x - v */
			sh[i] = -v[i];
		else if (!strcmp(op, "Sub")) { /* v - x */
			f[i] = -1;
			sh[i] = v[i];
		} else
			return 1;
	}
	memset(&L, 0, sizeof(L));
	L.type = HP_LAYER_SCALE;
	L.alpha = f[0];
	L.beta = sh[0];
	if (p) {
		/* f (the scale before) + s, channel by channel when either
		 * has a value per channel */
		L = *p;
		if (nch || p->nch) {
			int m = nch ? nch : p->nch;
			if (p->nch && nch && p->nch != nch)
				return 1;
			for (int i = 0; i < m; i++) {
				double pf = p->nch ? p->chf[i] : p->alpha,
				       ps = p->nch ? p->chs[i] : p->beta,
				       fi = f[nch ? i : 0],
				       si = sh[nch ? i : 0];
				L.chf[i] = pf * fi;
				L.chs[i] = ps * fi + si;
			}
			L.nch = m;
			L.alpha = 1;
			L.beta = 0;
		} else {
			L.alpha = p->alpha * f[0];
			L.beta = p->beta * f[0] + sh[0];
		}
	} else if (nch) {
		L.nch = nch;
		memcpy(L.chf, f, sizeof(f));
		memcpy(L.chs, sh, sizeof(sh));
	}
	for (int i = 0; i <= L.nch; i++) {
		double fi = i < L.nch ? L.chf[i] : L.alpha,
		       si = i < L.nch ? L.chs[i] : L.beta;
		if (!(fi != 0 && fabs(fi) <= 1e6 && fabs(si) <= 1e6))
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): a scale of %g and "
					    "shift of %g (the engine's are "
					    "within +-1e6, not 0)",
					    n->name, op, fi, si);
	}
	if (p) {
		*p = L;
		return pass_through(c, n, c->val[x], NULL);
	}
	return add_layer(c, n, &L, &in, 1, err);
}

/* Whether tensor t is an output of the graph. */
static bool graph_output(const struct hp_graph *g, int t)
{
	for (int k = 0; k < g->noutputs; k++)
		if (g->outputs[k] == t)
			return true;
	return false;
}

/*
 * Layer L of node n, then, for a global pool that ONNX gives as N, C (a
 * Reduce without keepdims) that anything but a Gemm reads (a Concat with
 * flattened data, a scale), a flatten (no work): the flat data those
 * readers take; a Gemm reads any input as it is.
 */
static int add_reduce(struct conv_ctx *c, const struct hp_node *n,
		      const struct hp_spec_layer *L, const int *ins, int nin,
		      struct hp_error *err)
{
	const struct hp_graph *g = c->g;
	int t = n->outputs[0], rc = add_layer(c, n, L, ins, nin, err), last;
	struct hp_spec_layer F = {.type = HP_LAYER_FLATTEN};
	bool other = false;

	if (rc || g->tensors[t].rank != 2)
		return rc;
	for (int i = 0; i < g->nnodes && !other; i++)
		for (int k = 0; k < g->nodes[i].ninputs; k++)
			if (g->nodes[i].inputs[k] == t &&
			    strcmp(g->nodes[i].op, "Gemm"))
				other = true;
	last = c->s->nlayers - 1;
	return other ? add_layer(c, n, &F, &last, 1, err) : 0;
}

static int convert_node(struct conv_ctx *c, const struct hp_node *n,
			struct hp_error *err)
{
	struct hp_graph *g = c->g;
	struct hp_spec_layer L;
	int ins[HP_SPEC_MAX_INPUTS], nin = 0, rc;
	const char *op = n->op;
	int x0 = n->ninputs > 0 ? n->inputs[0] : -1; /* the data input */
	bool any = false;

	memset(&L, 0, sizeof(L));
	for (int k = 0; k < n->ninputs; k++)
		if (n->inputs[k] >= 0 && c->val[n->inputs[k]] != VAL_NONE)
			any = true;
	/* Shape arithmetic and constants: not activations. */
	if (!any || !strcmp(op, "Shape") || !strcmp(op, "Constant")) {
		for (int k = 0; k < n->noutputs; k++)
			if (n->outputs[k] >= 0)
				c->val[n->outputs[k]] = VAL_NONE;
		return 0;
	}
	if (n->noutputs < 1 || n->outputs[0] < 0)
		return hp_error_set(err, HP_EINVAL,
				    "node %s (%s): computes on activations "
				    "but has no output",
				    n->name, op);
	/* The activation inputs, in order. */
	for (int k = 0; k < n->ninputs; k++) {
		int t = n->inputs[k];
		if (t < 0 || c->val[t] == VAL_NONE)
			continue;
		if (nin == HP_SPEC_MAX_INPUTS)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): more than %d inputs",
					    n->name, op, HP_SPEC_MAX_INPUTS);
		ins[nin++] = c->val[t];
	}
	/* the ops below that look at their data input's tensor need it to be
	 * an activation */
	if ((!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") ||
	     !strcmp(op, "GlobalMaxPool") || !strcmp(op, "ReduceMax") ||
	     !strcmp(op, "ReduceMean") || !strcmp(op, "ReduceSum") ||
	     !strcmp(op, "Squeeze") || !strcmp(op, "Slice") ||
	     !strcmp(op, "Split") || !strcmp(op, "Transpose") ||
	     !strcmp(op, "Reshape") || !strcmp(op, "Pad")) &&
	    (x0 < 0 || c->val[x0] == VAL_NONE))
		return hp_error_set(err, HP_EUNSUPP,
				    "node %s (%s): its data input is not an "
				    "activation",
				    n->name, op);
	/* a Pad's zeros go only to an average pool (which takes them as its
	 * padding, below) and a shuffle's 5-D tensors only to the shuffle's
	 * next step */
	for (int k = 0; k < n->ninputs; k++) {
		int t = n->inputs[k];
		if (t < 0)
			continue;
		if (is_padded(c, t) && (k > 0 || (strcmp(op, "AveragePool") &&
						  strcmp(op, "Conv"))))
			return pass_through(c, n, ins[0],
					    "Pad (of zeros, before an op that "
					    "does not take it as padding)");
		if (c->shuf[t] &&
		    (k > 0 ||
		     strcmp(op, c->shuf[t] > 0 ? "Transpose" : "Reshape")))
			return pass_through(c, n, ins[0],
					    "Reshape (not to 2-D)");
		/* a layer norm's or gelu's parts go to its next op only */
		if (c->ti[t].part > P_NONE && c->ti[t].part < P_PARTIAL &&
		    (c->ti[t].part == P_CENT
			 ? strcmp(op, "Pow") && strcmp(op, "Div")
			 : strcmp(op, part_next[c->ti[t].part])))
			return pass_through(
			    c, n, ins[0],
			    c->ti[t].part == P_MEAN_W
				? "ReduceMean (not over H and W)"
			    : c->ti[t].part == P_GN_GROUPS
				? "Reshape (to 3-D, not followed by a "
				  "group norm's InstanceNormalization)"
				: "a layer or group norm or "
				  "gelu in another form");
	}
	if ((rc = convnext_node(c, n, err)) <= 0 ||
	    (rc = groupnorm_node(c, n, err)) <= 0)
		return rc;
	/* arithmetic with a scalar, on any layout */
	if ((rc = scale_node(c, n, ins[0], err)) <= 0)
		return rc;
	/* channels-last data goes only through the ops above, and the
	 * ones that do not care for the layout (a sum of channels-last
	 * data alone) */
	for (int k = 0; k < n->ninputs; k++) {
		int t = n->inputs[k];
		bool all_cl = true;
		if (t < 0 || c->val[t] == VAL_NONE || !c->ti[t].cl)
			continue;
		for (int j = 0; j < n->ninputs; j++)
			all_cl = all_cl && n->inputs[j] >= 0 &&
				 c->ti[n->inputs[j]].cl;
		if (!strcmp(op, "Identity") || !strcmp(op, "Dropout") ||
		    (!strcmp(op, "Add") && all_cl))
			continue;
		/* flattened: the same features in another order, which an
		 * fc's own weights (the engine's) take alike (Keras
		 * flattens N, H, W, C) */
		if (k == 0 && n->outputs[0] >= 0 &&
		    g->tensors[n->outputs[0]].rank == 2 &&
		    (!strcmp(op, "Flatten") || !strcmp(op, "Reshape"))) {
			c->cl_flattens++;
			continue;
		}
		{
			char what[96];
			snprintf(what, sizeof(what),
				 "%.40s (of channels-last data)", op);
			return pass_through(c, n, ins[0], what);
		}
	}
	if (!strcmp(op, "Identity"))
		return pass_through(c, n, ins[0], NULL);
	if (!strcmp(op, "Conv")) {
		int w = n->ninputs > 1 ? n->inputs[1] : -1;
		L.type = HP_LAYER_CONV;
		const struct hp_tensor *xt = x0 >= 0 ? &g->tensors[x0] : NULL;
		int64_t pend[2];
		/* kernel_shape may be left out: the weight's H and W say it
		 * (square kernels; others must name it) */
		bool wk = !hp_node_attr(n, "kernel_shape") && w >= 0 &&
			  g->tensors[w].rank == 4 &&
			  g->tensors[w].dims[2] > 0 &&
			  g->tensors[w].dims[2] == g->tensors[w].dims[3];
		if ((rc = window(n, wk ? g->tensors[w].dims[2] : 0, &L.kernel,
				 &L.stride, &L.pad, &L.kernel_w, &L.pad_w, NULL,
				 xt && xt->rank == 4 ? xt->dims + 2 : NULL,
				 &L.dilation, pend, err)))
			return rc;
		/* a Pad of zeros before it (nn.ZeroPad2d, TensorFlow's
		 * "same" as Keras ports write it): the conv's own padding */
		L.pad += c->padded[x0][0];
		L.pad_w += c->padded[x0][1];
		pend[0] += c->padded[x0][2];
		pend[1] += c->padded[x0][3];
		/* pads unlike on the sides of an axis: "same" padding of an
		 * even span */
		L.asym = pend[0] != L.pad || pend[1] != L.pad_w;
		if (L.asym) {
			L.pad_b = pend[0];
			L.pad_r = pend[1];
		}
		L.rect = L.kernel_w != L.kernel || L.pad_w != L.pad || L.asym;
		if (!L.rect)
			L.kernel_w = L.pad_w = 0;
		L.groups = hp_node_attr_i(n, "group", 1);
		if (w < 0 || g->tensors[w].rank != 4 ||
		    g->tensors[w].dims[0] < 1)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (Conv): weight of unknown "
					    "shape",
					    n->name);
		L.filters = g->tensors[w].dims[0];
		/* the file's weight is the layer: a kernel_shape or group
		 * that contradicts it is a broken model, not another conv */
		{
			const int64_t *wd = g->tensors[w].dims;
			int64_t kw = L.rect ? L.kernel_w : L.kernel;
			if (wd[2] != L.kernel || wd[3] != kw)
				return hp_error_set(
				    err, HP_ESHAPE,
				    "node %s (Conv): kernel_shape %lldx%lld, "
				    "the weight's kernel %lldx%lld",
				    n->name, (long long)L.kernel, (long long)kw,
				    (long long)wd[2], (long long)wd[3]);
			if (L.groups < 1 || wd[0] % L.groups)
				return hp_error_set(
				    err, HP_ESHAPE,
				    "node %s (Conv): %lld filters do not "
				    "make %lld groups",
				    n->name, (long long)wd[0],
				    (long long)L.groups);
			int64_t ch = x0 == g->inputs[0]	   ? c->file_channels
				     : xt && xt->rank == 4 ? xt->dims[1]
							   : 0;
			if (ch > 0 && wd[1] * L.groups != ch)
				return hp_error_set(
				    err, HP_ESHAPE,
				    "node %s (Conv): its input has %lld "
				    "channels, the weight takes %lld in each "
				    "of %lld groups",
				    n->name, (long long)ch, (long long)wd[1],
				    (long long)L.groups);
		}
	} else if (!strcmp(op, "BatchNormalization")) {
		L.type = HP_LAYER_BN;
	} else if (!strcmp(op, "Relu")) {
		L.type = HP_LAYER_RELU;
	} else if (!strcmp(op, "Sigmoid")) {
		L.type = HP_LAYER_SIGMOID;
	} else if (!strcmp(op, "Tanh")) {
		L.type = HP_LAYER_TANH;
	} else if (!strcmp(op, "Softplus")) {
		L.type = HP_LAYER_SOFTPLUS;
	} else if (!strcmp(op, "LeakyRelu") || !strcmp(op, "Elu")) {
		bool leaky = !strcmp(op, "LeakyRelu");
		L.type = leaky ? HP_LAYER_LEAKYRELU : HP_LAYER_ELU;
		L.alpha = hp_node_attr_f(n, "alpha", leaky ? 0.01 : 1.0);
		if (!(L.alpha >= 0 && L.alpha <= 1e6))
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): alpha %g (the "
					    "engine's is in [0, 1e6])",
					    n->name, op, L.alpha);
	} else if (!strcmp(op, "PRelu")) {
		/* nn.PReLU: a stored slope, one (its default) or one a
		 * channel, broadcast over the channels (C, 1, 1 on an
		 * image; C on flat data) */
		int sl = n->ninputs > 1 ? n->inputs[1] : -1;
		const struct hp_tensor *xt, *st;
		int64_t ns;
		if (x0 < 0 || c->val[x0] == VAL_NONE || sl < 0 ||
		    c->val[sl] != VAL_NONE)
			return pass_through(c, n, ins[0],
					    "PRelu (of a computed slope)");
		xt = &g->tensors[x0];
		st = &g->tensors[sl];
		ns = hp_tensor_numel(st);
		if (ns != 1 &&
		    !((xt->rank == 2 || xt->rank == 4) &&
		      along_channels(st, xt->dims[1], xt->rank == 4)))
			return pass_through(c, n, ins[0],
					    "PRelu (a slope not per channel)");
		L.type = HP_LAYER_PRELU;
		L.per_channel = ns != 1;
	} else if (!strcmp(op, "HardSigmoid")) {
		/* MobileNetV3's hardswish is x * HardSigmoid(x), alpha 1/6 */
		L.type = HP_LAYER_HARDSIGMOID;
		L.alpha = hp_node_attr_f(n, "alpha", 0.2);
		L.beta = hp_node_attr_f(n, "beta", 0.5);
		if (!(L.alpha != 0 && fabs(L.alpha) <= 1e6 &&
		      fabs(L.beta) <= 1e6))
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (HardSigmoid): alpha %g, "
					    "beta %g out of range",
					    n->name, L.alpha, L.beta);
	} else if (!strcmp(op, "HardSwish")) {
		/* opset 14's one op for x * HardSigmoid(x) at alpha 1/6,
		 * beta 1/2: the two layers the opset 13 form converts to */
		L.type = HP_LAYER_HARDSIGMOID;
		L.alpha = 1.0f / 6; /* as a float attribute holds it */
		L.beta = 0.5;
		if (nin != 1)
			return hp_error_set(
			    err, HP_EUNSUPP,
			    "node %s (%s): reads %d activations", n->name, op,
			    nin);
		if ((rc = add_layer(c, n, &L, ins, 1, err)))
			return rc;
		memset(&L, 0, sizeof(L));
		L.type = HP_LAYER_MUL;
		ins[1] = c->s->nlayers - 1;
		nin = 2;
	} else if (!strcmp(op, "Mul")) {
		/* the product of two activations (SiLU's x * sigmoid(x), a
		 * squeeze-and-excitation gate); the one broadcast over the
		 * image goes second */
		const struct hp_tensor *a, *b2;
		L.type = HP_LAYER_MUL;
		if (nin != 2 || n->ninputs != 2)
			return pass_through(c, n, ins[0],
					    "Mul (by a constant)");
		a = &g->tensors[n->inputs[0]];
		b2 = &g->tensors[n->inputs[1]];
		if (a->rank == 4 && b2->rank == 4 && a->dims[2] == 1 &&
		    a->dims[3] == 1 && b2->dims[2] * b2->dims[3] > 1) {
			int t = ins[0];
			ins[0] = ins[1];
			ins[1] = t;
		}
	} else if (!strcmp(op, "Clip")) {
		L.type = HP_LAYER_CLIP;
		/* opset 11+: min and max are inputs; the shared model files
		 * have their data cleared, and ReLU6 is what CNNs use. */
		L.lo = const_f(g, n, 1, hp_node_attr_f(n, "min", 0));
		L.hi = const_f(g, n, 2, hp_node_attr_f(n, "max", 6));
	} else if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) {
		L.type = HP_LAYER_POOL;
		L.pool_max = !strcmp(op, "MaxPool");
		const struct hp_tensor *xt = &g->tensors[x0];
		if ((rc = window(n, 0, &L.kernel, &L.stride, &L.pad, NULL, NULL,
				 &L.ceil_mode,
				 xt->rank == 4 ? xt->dims + 2 : NULL, NULL,
				 NULL, err)))
			return rc;
		if (L.ceil_mode && !hp_node_attr_i(n, "ceil_mode", 0))
			c->ceil_pads++;
		/* ONNX's default, and PyTorch's export of
		 * count_include_pad=False: the padding left out */
		L.pool_exclude = !L.pool_max && L.pad > 0 &&
				 !hp_node_attr_i(n, "count_include_pad", 0);
		if (L.ceil_mode && !L.pool_max && L.pad > 0 && !L.pool_exclude)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (AveragePool): ceil_mode "
					    "with the padding counted (the "
					    "engine's averages in ceil mode "
					    "leave it out)",
					    n->name);
		/* the Pad's zeros before it, the same on every side, for a
		 * pool without padding of its own (nor ceil mode, which max
		 * pools alone have) */
		if (is_padded(c, x0)) {
			const int64_t *pp = c->padded[x0];
			if (L.pad > 0 || pp[1] != pp[0] || pp[2] != pp[0] ||
			    pp[3] != pp[0])
				return pass_through(c, n, ins[0],
						    "Pad (of zeros, unlike on "
						    "the sides of a pool)");
			L.pad = pp[0];
		}
		if (2 * L.pad > L.kernel)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): pad more than half "
					    "the kernel",
					    n->name, op);
	} else if (!strcmp(op, "GlobalAveragePool")) {
		L.type = HP_LAYER_GAP;
	} else if (!strcmp(op, "GlobalMaxPool") || !strcmp(op, "ReduceMax")) {
		/* (adaptive_max_pool2d(x, 1), x.amax((2, 3))): a max pool of
		 * the whole square map; without keepdims the next layer
		 * reads it flat, as an fc reads any input */
		const struct hp_tensor *xt = &g->tensors[x0];
		if (!strcmp(op, "ReduceMax") && !over_hw(g, n))
			return pass_through(c, n, ins[0],
					    "ReduceMax (not over H and W)");
		if (xt->rank != 4 || xt->dims[2] < 1 ||
		    xt->dims[2] != xt->dims[3] || xt->dims[2] > 4096)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): only of a square "
					    "map of known size",
					    n->name, op);
		L.type = HP_LAYER_POOL;
		L.pool_max = true;
		L.kernel = L.stride = xt->dims[2];
		return add_reduce(c, n, &L, ins, nin, err);
	} else if (!strcmp(op, "ReduceMean") || !strcmp(op, "ReduceSum")) {
		/* the mean over H and W (x.mean([2, 3]) in PyTorch): a global
		 * average pool; without keepdims the next layer reads it flat,
		 * as an fc reads any input.  Older code's x.mean(3).mean(2)
		 * is the same pool in two steps; the sum over H and W, the
		 * pool times H x W (a scale after it). */
		const struct hp_tensor *xt = &g->tensors[x0];
		const struct tinfo *tx = &c->ti[x0];
		bool sum = !strcmp(op, "ReduceSum");
		int64_t ax;
		L.type = HP_LAYER_GAP;
		if (!sum && xt->rank == 4 && !tx->cl && tx->part == P_NONE &&
		    one_axis(g, n, 4, &ax) && ax >= 2) {
			part_of(c, n, ins[0], P_MEAN_W, x0, 0);
			c->ti[n->outputs[0]].axis = (int8_t)ax;
			return 0;
		}
		/* the other spatial axis: 2 of the 3 left without keepdims */
		if (!sum && tx->part == P_MEAN_W &&
		    one_axis(g, n, xt->rank, &ax) &&
		    ax == (xt->rank == 3 ? 2 : 5 - tx->axis)) {
			int src = c->val[tx->src];
			return add_reduce(c, n, &L, &src, 1, err);
		}
		if (!over_hw(g, n))
			return pass_through(
			    c, n, ins[0],
			    sum ? "ReduceSum (not over H and W)"
				: "ReduceMean (not over H and W)");
		if (sum) {
			struct hp_spec_layer S = {.type = HP_LAYER_SCALE};
			int gap = c->s->nlayers;
			S.alpha = (double)(xt->dims[2] * xt->dims[3]);
			if (xt->dims[2] < 1 || xt->dims[3] < 1)
				return hp_error_set(err, HP_EUNSUPP,
						    "node %s (ReduceSum): of a "
						    "map of unknown size",
						    n->name);
			if ((rc = add_layer(c, n, &L, ins, nin, err)))
				return rc;
			return add_reduce(c, n, &S, &gap, 1, err);
		}
		return add_reduce(c, n, &L, ins, nin, err);
	} else if (!strcmp(op, "Pad")) {
		/* PyTorch exports an average pool with padding as a Pad of
		 * zeros and the pool: the pool takes the padding (the
		 * engine's average counts it, as count_include_pad does);
		 * DenseNet's pads nothing; nn.ZeroPad2d before a conv is
		 * the conv's padding */
		int64_t p[4];
		int zp = zero_pads(g, n, p);
		if (zp == 0)
			memcpy(c->padded[n->outputs[0]], p, sizeof(p));
		return pass_through(c, n, ins[0],
				    zp == 0 ? NULL : "Pad (not of zeros)");
	} else if (!strcmp(op, "Add") || !strcmp(op, "Sum")) {
		L.type = HP_LAYER_ADD;
		if (nin != n->ninputs || nin < 2)
			return pass_through(c, n, ins[0],
					    "Add (of a constant)");
	} else if (!strcmp(op, "Concat")) {
		int64_t axis = hp_node_attr_i(n, "axis", 0);
		L.type = HP_LAYER_CONCAT;
		if (axis < 0 && x0 >= 0) /* from the end, as ONNX allows */
			axis += g->tensors[x0].rank;
		if (axis != 1 || nin != n->ninputs)
			return hp_error_set(
			    err, HP_EUNSUPP,
			    "node %s (Concat): only activations "
			    "along the channels (axis 1)",
			    n->name);
		if (nin == 1) /* DenseNet's torch.cat([x], 1) */
			return pass_through(c, n, ins[0], NULL);
	} else if (!strcmp(op, "Slice")) {
		L.type = HP_LAYER_SLICE;
		if ((rc = slice_channels(g, n, &L, err)))
			return rc;
	} else if (!strcmp(op, "Split")) {
		return split_channels(c, n, ins[0], err);
	} else if (!strcmp(op, "Transpose")) {
		const struct hp_attr *a = hp_node_attr(n, "perm");
		static const int64_t perm[5] = {0, 2, 1, 3, 4};
		if (c->shuf[x0] <= 0 || !a || a->type != HP_ATTR_INTS ||
		    a->n != 5 || memcmp(a->ints, perm, sizeof(perm)))
			return pass_through(c, n, ins[0], "Transpose");
		c->shuf[n->outputs[0]] = -c->shuf[x0];
		return pass_through(c, n, ins[0], NULL);
	} else if (!strcmp(op, "Reshape") && c->shuf[x0] < 0) {
		/* the shuffle's Reshape back to the input's N, C, H, W */
		const struct hp_tensor *y = &g->tensors[n->outputs[0]];
		const struct hp_tensor *x5 = &g->tensors[x0];
		L.type = HP_LAYER_SHUFFLE;
		L.groups = -c->shuf[x0];
		if (y->rank != 4 || x5->rank != 5 ||
		    y->dims[1] != x5->dims[1] * x5->dims[2] ||
		    y->dims[2] != x5->dims[3] || y->dims[3] != x5->dims[4])
			return pass_through(c, n, ins[0],
					    "Reshape (not to 2-D)");
	} else if (!strcmp(op, "Reshape") && shuffle_split(g, n)) {
		/* N, C, H, W to N, g, C/g, H, W: a shuffle begins */
		c->shuf[n->outputs[0]] = g->tensors[n->outputs[0]].dims[1];
		return pass_through(c, n, ins[0], NULL);
	} else if (!strcmp(op, "Squeeze")) {
		/* x.squeeze(-1).squeeze(-1) after a global pool: size-1 axes
		 * of the map dropped (never N or C); to N, C it is a flatten
		 * (no work), the step between passes the data through */
		const struct hp_tensor *xt = &g->tensors[x0];
		const struct hp_tensor *yt = &g->tensors[n->outputs[0]];
		const int64_t *v;
		int64_t nv;
		bool ok = const_ints(g, n, "axes", 1, &v, &nv) && nv >= 1 &&
			  xt->rank >= 3 && yt->rank >= 2 &&
			  yt->dims[1] == xt->dims[1];
		for (int64_t i = 0; ok && i < nv; i++) {
			int64_t a = v[i] < 0 ? v[i] + xt->rank : v[i];
			ok = a >= 2 && a < xt->rank && xt->dims[a] == 1;
		}
		if (!ok)
			return pass_through(
			    c, n, ins[0], "Squeeze (not of H or W of size 1)");
		if (yt->rank > 2)
			return pass_through(c, n, ins[0], NULL);
		L.type = HP_LAYER_FLATTEN;
	} else if (!strcmp(op, "Flatten") || !strcmp(op, "Reshape")) {
		int t = n->outputs[0];
		L.type = HP_LAYER_FLATTEN;
		if (!strcmp(op, "Flatten") ? hp_node_attr_i(n, "axis", 1) != 1
					   : g->tensors[t].rank != 2) {
			/* listed with the ops not run */
			return pass_through(c, n, ins[0],
					    !strcmp(op, "Flatten")
						? "Flatten (not to 2-D)"
						: "Reshape (not to 2-D)");
		}
		/* a Reshape to [-1, k] with k not every feature of a sample
		 * moves features into the batch: not a flatten */
		if (!strcmp(op, "Reshape") && x0 >= 0 &&
		    g->tensors[x0].rank >= 2 && g->tensors[t].dims[1] > 0) {
			int64_t feat = 1;
			for (int k = 1; k < g->tensors[x0].rank && feat > 0;
			     k++)
				feat = g->tensors[x0].dims[k] > 0
					   ? feat * g->tensors[x0].dims[k]
					   : -1;
			if (feat > 0 && feat != g->tensors[t].dims[1])
				return pass_through(
				    c, n, ins[0],
				    "Reshape (not keeping the batch)");
		}
	} else if (!strcmp(op, "Gemm")) {
		int w = n->ninputs > 1 ? n->inputs[1] : -1;
		bool tb = hp_node_attr_i(n, "transB", 0) != 0;
		L.type = HP_LAYER_FC;
		if (hp_node_attr_i(n, "transA", 0) ||
		    hp_node_attr_f(n, "alpha", 1) != 1 ||
		    hp_node_attr_f(n, "beta", 1) != 1 || w < 0 ||
		    g->tensors[w].rank != 2 || nin != 1)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (Gemm): only x * W^T + b "
					    "with a stored W",
					    n->name);
		L.units = g->tensors[w].dims[tb ? 0 : 1];
		if (L.units < 1)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (Gemm): weight of unknown "
					    "shape",
					    n->name);
	} else if ((!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) &&
		   graph_output(g, n->outputs[0]) && nin == 1 &&
		   (g->tensors[x0].rank == 2 ||
		    /* an fc's output is N x units, also when the graph's
		     * shapes, inferred at another --input-shape than the
		     * model's, lost it at a Gemm whose stored weight (of
		     * the model's own input size) no longer fits */
		    (c->val[x0] >= 0 &&
		     c->s->layers[c->val[x0]].type == HP_LAYER_FC)) &&
		   (hp_node_attr_i(n, "axis", -1) == 1 ||
		    hp_node_attr_i(n, "axis", -1) == -1)) {
		/* the classes' (log-)probabilities as the model's output
		 * (PyTorch's MNIST example ends in log_softmax, for its
		 * NLL loss): the engine's loss, a softmax cross-entropy of
		 * the logits, takes them (the same loss and gradient as
		 * NLL of log_softmax) */
		c->final_softmax =
		    !strcmp(op, "Softmax") ? "Softmax" : "LogSoftmax";
		return pass_through(c, n, ins[0], NULL);
	} else if (!strcmp(op, "Dropout")) {
		L.type = HP_LAYER_DROPOUT;
		L.p = const_f(g, n, 1, hp_node_attr_f(n, "ratio", 0.5));
		if (!(L.p >= 0 && L.p < 1))
			L.p = 0.5;
	} else {
		return pass_through(c, n, ins[0], op);
	}
	if (nin != 1 && L.type != HP_LAYER_ADD && L.type != HP_LAYER_CONCAT &&
	    L.type != HP_LAYER_MUL)
		return hp_error_set(err, HP_EUNSUPP,
				    "node %s (%s): reads %d activations",
				    n->name, op, nin);
	return add_layer(c, n, &L, ins, nin, err);
}

/* The spec's next note (there is room for each kind once). */
static void note(struct hp_spec *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct hp_spec *s, const char *fmt, ...)
{
	va_list ap;

	if (s->nnotes >= HP_SPEC_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(s->notes[s->nnotes++], sizeof(s->notes[0]), fmt, ap);
	va_end(ap);
}

/* The spec's notes: what the conversion took otherwise than written. */
static void notes(const struct conv_ctx *c, bool nhwc, struct hp_spec *s)
{
	if (c->final_softmax)
		note(s,
		     "the final %s over the classes is the loss's own "
		     "(softmax cross-entropy of the logits)",
		     c->final_softmax);
	if (c->scales_folded)
		note(s,
		     "%d layer scale%s folded into the conv before %s (the "
		     "same function, one elementwise pass fewer)",
		     c->scales_folded, c->scales_folded == 1 ? "" : "s",
		     c->scales_folded == 1 ? "it" : "each");
	if (c->ceil_pads)
		note(s,
		     "%d max pool%s padded longer at the end%s taken in ceil "
		     "mode (the same outputs)",
		     c->ceil_pads, c->ceil_pads == 1 ? "" : "s",
		     c->ceil_pads == 1 ? "" : "s");
	if (nhwc)
		note(s, "the input is N, H, W, C (read through a Transpose): "
			"the spec and --input-shape say C x H x W");
	for (int k = 0; k < 2; k++) {
		int m = k ? c->in_plain : c->gn_made - c->gn_affine;
		if (m > 0)
			note(s,
			     "%d %s norm%s without a scale and shift train%s "
			     "with them (the engine's group norm has both, "
			     "from 1 and 0)",
			     m, k ? "instance" : "group", m == 1 ? "" : "s",
			     m == 1 ? "s" : "");
	}
	if (c->in_consts_averaged)
		note(s,
		     "the input's per-channel constants (%d) are for other "
		     "channels than --input-shape gives: their mean is "
		     "taken on every channel",
		     c->in_consts_averaged);
	if (c->cl_flattens)
		note(s, "channels-last data flattened: the fc after it reads "
			"the same features in C, H, W order (its weights are "
			"the engine's own)");
}

int hp_spec_from_graph(struct hp_graph *g, const int64_t *input_shape,
		       bool with_loss, struct hp_spec *s, struct hp_error *err)
{
	struct conv_ctx c = {0};
	int *order = NULL, in, out, rc = 0;
	bool nhwc;
	const struct hp_tensor *x;
	char *json = NULL;
	struct hp_spec tmp;

	memset(s, 0, sizeof(*s));
	if (g->ninputs < 1 || g->noutputs < 1)
		return hp_error_set(err, HP_EINVAL,
				    "the graph has no input or no output");
	/* Sizes are the spec's own (a Gemm reads what comes): a model that
	 * does not fit its stored weights at this input shape (an adaptive
	 * pool exported as a fixed one) still converts. */
	{
		/* at the model's own input channels, when the file says
		 * them: the engine's first conv takes the spec's (a 3-channel
		 * model trained on 1-channel data), and every size after it
		 * is the same, which the patterns below read */
		struct hp_error ignored = {0};
		const struct hp_tensor *x0 = &g->tensors[g->inputs[0]];
		int ci = hp__input_nhwc(g, g->inputs[0]) ? 3 : 1;
		int64_t sh[3] = {0};
		if (input_shape) {
			memcpy(sh, input_shape, sizeof(sh));
			if (x0->rank == 4 && x0->dims[ci] > 0)
				sh[0] = x0->dims[ci];
		}
		hp_shape_infer(g, 1, input_shape ? sh : NULL,
			       input_shape ? 3 : 0, &ignored);
	}
	in = g->inputs[0];
	x = &g->tensors[in];
	/* an N, H, W, C input (Keras's, through tf2onnx) is channels-last
	 * data, which its Transpose to N, C, H, W brings back */
	nhwc = hp__input_nhwc(g, in);
	if (x->rank == 4 && x->dims[nhwc ? 3 : 1] > 0)
		c.file_channels = x->dims[nhwc ? 3 : 1];
	if (input_shape && x->rank == 4)
		for (int k = 0; k < 3; k++)
			g->tensors[in].dims[nhwc ? (k + 2) % 3 + 1 : k + 1] =
			    input_shape[k];
	if (x->rank != 4 && x->rank > 0)
		return hp_error_set(
		    err, HP_EUNSUPP,
		    "input %s has %d dimensions, not 4: the "
		    "engine trains image batches N,C,H,W "
		    "(--input-shape gives C,H,W of a 4-D input "
		    "of unknown size, it cannot add dimensions)",
		    x->name, x->rank);
	if (x->rank != 4 || x->dims[1] < 1 || x->dims[2] < 1 || x->dims[3] < 1)
		return hp_error_set(err, HP_EUNSUPP,
				    "input %s is not an image batch N,C,H,W "
				    "of known size (give --input-shape)",
				    x->name);
	c.g = g;
	c.s = s;
	c.val = malloc((size_t)g->ntensors * sizeof(*c.val));
	c.shuf = calloc((size_t)g->ntensors + 1, sizeof(*c.shuf));
	c.padded = calloc((size_t)g->ntensors + 1, sizeof(*c.padded));
	c.ti = calloc((size_t)g->ntensors + 1, sizeof(*c.ti));
	order = malloc((size_t)(g->nnodes + 1) * sizeof(*order));
	/* a layer a node, but a Split's for each of its outputs and a
	 * HardSwish's two (each with an output tensor of its own) */
	s->layers = calloc((size_t)g->nnodes + (size_t)g->ntensors + 1,
			   sizeof(*s->layers));
	{
		/* a graph's name need not be UTF-8, JSON's strings (the
		 * spec's, the trainer's checkpoint) must: escaped */
		char name[256];
		s->name = hp_strdup(hp_str_escape(g->name ? g->name : "onnx",
						  name, sizeof(name)));
	}
	if (!c.val || !c.shuf || !c.padded || !c.ti || !order || !s->layers ||
	    !s->name) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int t = 0; t < g->ntensors; t++)
		c.val[t] = VAL_NONE;
	for (int k = 0; k < g->nnodes; k++)
		for (int j = 0; j < g->nodes[k].ninputs; j++)
			if (g->nodes[k].inputs[j] >= 0)
				c.ti[g->nodes[k].inputs[j]].readers++;
	c.val[in] = -1;
	c.ti[in].cl = nhwc;
	for (int k = 0; k < 3; k++)
		s->input[k] = x->dims[nhwc ? (k + 2) % 3 + 1 : k + 1];
	if ((rc = hp__graph_topo(g, order, err)))
		goto out;
	for (int k = 0; k < g->nnodes; k++)
		if ((rc = convert_node(&c, &g->nodes[order[k]], err)))
			goto out;
	if (c.nbad) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "the engine does not run these ops: %s",
				  c.bad);
		goto out;
	}
	out = g->outputs[0];
	if (s->nlayers == 0 || c.val[out] != s->nlayers - 1) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "the graph's output %s is not made by its "
				  "last layer",
				  g->tensors[out].name);
		goto out;
	}
	if (with_loss) {
		int64_t(*sh)[3] = calloc((size_t)s->nlayers, sizeof(*sh));
		if (!sh) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		rc = hp_spec_shapes(s, sh, NULL, err);
		if (!rc) {
			const int64_t *o = sh[s->nlayers - 1];
			s->classes = o[0] * o[1] * o[2];
			/* a segmentation map's or a detector's output is
			 * not one score a class: say what it trains as */
			if (o[1] * o[2] > 1)
				note(s,
				     "the output %lldx%lldx%lld is a map, not "
				     "one score a class: trained as %lld "
				     "classes (the step's time and memory "
				     "hold, the task does not)",
				     (long long)o[0], (long long)o[1],
				     (long long)o[2], (long long)s->classes);
		}
		free(sh);
		if (rc)
			goto out;
	}
	/* Check it as a spec from a file would be (round trip). */
	json = hp_spec_to_json(s);
	if (!json) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	rc = hp_spec_parse_only(json, strlen(json), &tmp, err);
	if (!rc) {
		hp_spec_release(&tmp);
		notes(&c, nhwc, s);
	}
out:
	free(json);
	free(c.val);
	free(c.shuf);
	free(c.padded);
	free(c.ti);
	free(order);
	if (rc)
		hp_spec_release(s);
	return rc;
}

int hp_spec_for_training(const void *data, size_t len,
			 const int64_t *input_shape, struct hp_spec *out,
			 struct hp_error *err)
{
	const unsigned char *b = data;
	size_t i = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	while (i < len &&
	       (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r'))
		i++;
	if (i < len && b[i] != '{' && b[i] != '[' && b[i] != 0xef) {
		struct hp_graph *g = hp_onnx_parse(data, len, err);
		if (!g)
			return err && err->code ? err->code : HP_EINVAL;
		rc = hp_spec_from_graph(g, input_shape, true, out, err);
		hp_graph_free(g);
	} else if (input_shape) {
		return hp_error_set(err, HP_EINVAL,
				    "--input-shape is for ONNX models; a spec "
				    "says its own \"input\"");
	} else {
		rc = hp_spec_parse_only(data, len, out, err);
	}
	if (!rc && out->classes < 2) {
		hp_spec_release(out);
		rc = hp_error_set(err, HP_EINVAL,
				  "the model has no \"classes\" (at least 2): "
				  "the trainer trains classifiers");
	}
	return rc;
}
