/*
 * onnx_spec.c - the engine's spec (struct hp_spec, a DAG of layers) of an
 * ONNX CNN: each node that computes on the activations becomes one layer,
 * its inputs the layers that made them.  Only the architecture is taken;
 * the weights are the engine's own.  Sizes come from shape propagation at
 * the requested input, so a model exported at 224x224 runs at 64x64.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/banned.h"

#define VAL_NONE (-2) /* not an activation (a weight, a shape) */

struct conv_ctx {
	struct hp_graph *g;
	struct hp_spec *s;
	int *val; /* per tensor: the layer that made it, -1 input, VAL_NONE */
	/* per tensor: a channel shuffle under way (ShuffleNet's Reshape to
	 * N, g, C/g, H, W: g; then its Transpose (0, 2, 1, 3, 4): -g; the
	 * Reshape back makes the layer); 0 for the rest */
	int64_t *shuf;
	/* per tensor: the zeros a Pad put around its image (a side, H and W
	 * alike), for the AveragePool after it to take as its own padding;
	 * 0 for the rest */
	int64_t *padded;
	char bad[256];
	size_t nbad;
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
	if (bad)
		note_bad(c, bad);
	for (int k = 0; k < n->noutputs; k++)
		if (n->outputs[k] >= 0)
			c->val[n->outputs[k]] = in;
	return 0;
}

/* A kernel with equal strides and pads alike on both sides of each axis:
 * the height's in *k and *pad; the width's in *kw and *padw, which NULL
 * refuses when they differ (a square kernel, equal pads: pools).  *ceil
 * (NULL: refused) gets ceil_mode. */
static int window(const struct hp_node *n, bool need_kernel, int64_t *k,
		  int64_t *st, int64_t *pad, int64_t *kw, int64_t *padw,
		  bool *ceil, struct hp_error *err)
{
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

	*k = 0;
	*st = 1;
	*pad = 0;
	if (kw)
		*kw = *padw = 0;
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
		return hp_error_set(
		    err, HP_EUNSUPP,
		    "node %s (%s): auto_pad %s is not supported", n->name,
		    n->op, ap);
	if (ks && ks->n == 2 && (kw || ks->ints[0] == ks->ints[1])) {
		*k = ks->ints[0];
		if (kw)
			*kw = ks->ints[1];
	} else if (need_kernel || ks) {
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
	if (ps) {
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
	if (ds)
		for (size_t i = 0; i < ds->n; i++)
			if (ds->ints[i] != 1)
				return hp_error_set(
				    err, HP_EUNSUPP,
				    "node %s (%s): dilation is not supported",
				    n->name, n->op);
	if (ceil)
		*ceil = hp_node_attr_i(n, "ceil_mode", 0) != 0;
	else if (hp_node_attr_i(n, "ceil_mode", 0))
		return hp_error_set(err, HP_EUNSUPP,
				    "node %s (%s): ceil_mode is not supported",
				    n->name, n->op);
	if (*k < 0 || *k > 4096 || *st < 1 || *st > 4096 || *pad < 0 ||
	    *pad > 4096 ||
	    (kw && (*kw < 0 || *kw > 4096 || *padw < 0 || *padw > 4096)))
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

/* A ReduceMean of a 4-D input over exactly axes 2 and 3 (or -2 and -1). */
static bool mean_over_hw(const struct hp_graph *g, const struct hp_node *n)
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

/*
 * A Pad's zeros around an N, C, H, W image: the amount on every side of
 * H and W when it is the same on all four and N and C get none, 0 for no
 * padding at all, -1 for anything else (another mode, a value other than
 * 0, uneven sides).
 */
static int64_t zero_pads(const struct hp_graph *g, const struct hp_node *n)
{
	const char *mode = hp_node_attr_s(n, "mode", "constant");
	const int64_t *p;
	int64_t np, side;

	if (!const_ints(g, n, "pads", 1, &p, &np) || np < 1)
		return -1;
	side = np == 8 ? p[2] : 0;
	for (int64_t i = 0; i < np; i++)
		if (p[i] != (np == 8 && i % 4 >= 2 ? side : 0))
			return -1;
	if (side > 0 && (strcmp(mode, "constant") ||
			 const_f(g, n, 2, hp_node_attr_f(n, "value", 0)) != 0 ||
			 (n->ninputs > 2 && n->inputs[2] >= 0 &&
			  g->tensors[n->inputs[2]].nfvals != 1)))
		return -1;
	return side < 0 || side > 4096 ? -1 : side;
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
	if (n->noutputs > 0 && n->outputs[0] >= 0)
		c->val[n->outputs[0]] = i;
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
	     !strcmp(op, "Slice") || !strcmp(op, "Split") ||
	     !strcmp(op, "Transpose") || !strcmp(op, "Reshape") ||
	     !strcmp(op, "Pad")) &&
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
		if (c->padded[t] && (k > 0 || strcmp(op, "AveragePool")))
			return pass_through(c, n, ins[0], "Pad (not of zeros)");
		if (c->shuf[t] &&
		    (k > 0 ||
		     strcmp(op, c->shuf[t] > 0 ? "Transpose" : "Reshape")))
			return pass_through(c, n, ins[0],
					    "Reshape (not to 2-D)");
	}
	if (!strcmp(op, "Identity"))
		return pass_through(c, n, ins[0], NULL);
	if (!strcmp(op, "Conv")) {
		int w = n->ninputs > 1 ? n->inputs[1] : -1;
		L.type = HP_LAYER_CONV;
		if ((rc = window(n, true, &L.kernel, &L.stride, &L.pad,
				 &L.kernel_w, &L.pad_w, NULL, err)))
			return rc;
		L.rect = L.kernel_w != L.kernel || L.pad_w != L.pad;
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
	} else if (!strcmp(op, "BatchNormalization")) {
		L.type = HP_LAYER_BN;
	} else if (!strcmp(op, "Relu")) {
		L.type = HP_LAYER_RELU;
	} else if (!strcmp(op, "Sigmoid")) {
		L.type = HP_LAYER_SIGMOID;
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
		if ((rc = window(n, true, &L.kernel, &L.stride, &L.pad, NULL,
				 NULL, &L.ceil_mode, err)))
			return rc;
		if (L.ceil_mode && !L.pool_max)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (AveragePool): ceil_mode "
					    "is supported on max pools only",
					    n->name);
		if (!L.pool_max && L.pad > 0 &&
		    !hp_node_attr_i(n, "count_include_pad", 0))
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (AveragePool): padding "
					    "left out of the average is not "
					    "supported",
					    n->name);
		/* the Pad's zeros before it, for a pool without padding of
		 * its own (nor ceil mode, which max pools alone have) */
		if (c->padded[x0] > 0) {
			if (L.pad > 0)
				return pass_through(c, n, ins[0],
						    "Pad (not of zeros)");
			L.pad = c->padded[x0];
		}
		if (2 * L.pad > L.kernel)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): pad more than half "
					    "the kernel",
					    n->name, op);
	} else if (!strcmp(op, "GlobalAveragePool")) {
		L.type = HP_LAYER_GAP;
	} else if (!strcmp(op, "ReduceMean")) {
		/* the mean over H and W (x.mean([2, 3]) in PyTorch): a global
		 * average pool; without keepdims the next layer reads it flat,
		 * as an fc reads any input */
		if (!mean_over_hw(g, n))
			return pass_through(c, n, ins[0],
					    "ReduceMean (not over H and W)");
		L.type = HP_LAYER_GAP;
	} else if (!strcmp(op, "Pad")) {
		/* PyTorch exports an average pool with padding as a Pad of
		 * zeros and the pool: the pool takes the padding (the
		 * engine's average counts it, as count_include_pad does);
		 * DenseNet's pads nothing */
		int64_t side = zero_pads(g, n);
		if (side > 0)
			c->padded[n->outputs[0]] = side;
		return pass_through(c, n, ins[0],
				    side >= 0 ? NULL : "Pad (not of zeros)");
	} else if (!strcmp(op, "Add") || !strcmp(op, "Sum")) {
		L.type = HP_LAYER_ADD;
		if (nin != n->ninputs || nin < 2)
			return hp_error_set(err, HP_EUNSUPP,
					    "node %s (%s): only sums of "
					    "activations (no constants)",
					    n->name, op);
	} else if (!strcmp(op, "Concat")) {
		L.type = HP_LAYER_CONCAT;
		if (hp_node_attr_i(n, "axis", 0) != 1 || nin != n->ninputs)
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

int hp_spec_from_graph(struct hp_graph *g, const int64_t *input_shape,
		       bool with_loss, struct hp_spec *s, struct hp_error *err)
{
	struct conv_ctx c = {0};
	int *order = NULL, in, out, rc = 0;
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
		struct hp_error ignored = {0};
		hp_shape_infer(g, 1, input_shape, input_shape ? 3 : 0,
			       &ignored);
	}
	in = g->inputs[0];
	x = &g->tensors[in];
	if (input_shape && x->rank == 4)
		for (int k = 0; k < 3; k++)
			g->tensors[in].dims[k + 1] = input_shape[k];
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
	order = malloc((size_t)(g->nnodes + 1) * sizeof(*order));
	/* a layer a node, but a Split's for each of its outputs */
	s->layers = calloc((size_t)g->nnodes + (size_t)g->ntensors + 1,
			   sizeof(*s->layers));
	s->name = hp_strdup(g->name ? g->name : "onnx");
	if (!c.val || !c.shuf || !c.padded || !order || !s->layers ||
	    !s->name) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int t = 0; t < g->ntensors; t++)
		c.val[t] = VAL_NONE;
	c.val[in] = -1;
	for (int k = 0; k < 3; k++)
		s->input[k] = x->dims[k + 1];
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
	if (!rc)
		hp_spec_release(&tmp);
out:
	free(json);
	free(c.val);
	free(c.shuf);
	free(c.padded);
	free(order);
	if (rc)
		hp_spec_release(s);
	return rc;
}
