/*
 * workload.c - what a training step does, per layer, as the estimator's
 * models read it: each layer's class (conv, fully connected, other), its
 * FLOPs over the forward and both backward passes, and the bytes it reads
 * and writes, from the graph's shapes and hp_analyze()'s features.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

void hp_workload_release(struct hp_workload *w)
{
	if (!w)
		return;
	free(w->cls);
	free(w->flops);
	free(w->bytes);
	free(w->wbytes);
	free(w->width);
	free(w->in_bytes);
	free(w->out_bytes);
	free(w->cin);
	free(w->cout);
	free(w->hw);
	free(w->after_bn);
	free(w->red);
	free(w->karea);
	free(w->valid);
	free(w->pool);
	memset(w, 0, sizeof(*w));
}

int hp_workload_at_batch(const struct hp_workload *w1, int64_t batch,
			 struct hp_workload *out, struct hp_error *err)
{
	double k;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!w1 || w1->batch != 1)
		return hp_error_set(err, HP_EINVAL,
				    "workload must be analysed at batch 1");
	if (batch < 1 || batch > ((int64_t)1 << 30))
		return hp_error_set(err, HP_ERANGE,
				    "batch %lld: give 1 to 2^30",
				    (long long)batch);
	if (w1->activations_bytes > INT64_MAX / batch ||
	    w1->input_bytes > INT64_MAX / batch ||
	    w1->peak_act_bytes > INT64_MAX / batch)
		return hp_error_set(err, HP_ERANGE,
				    "batch %lld: activation bytes overflow",
				    (long long)batch);
	*out = *w1;
	/* Every array is the copy's own (none may alias w1's). */
	out->cls = out->after_bn = out->pool = NULL;
	out->flops = out->bytes = out->wbytes = out->width = NULL;
	out->in_bytes = out->out_bytes = out->cin = out->cout = out->hw = NULL;
	out->red = out->karea = out->valid = NULL;
	n = (size_t)w1->nlayers + 1;
	out->cls = malloc(n * sizeof(*out->cls));
	out->flops = malloc(n * sizeof(*out->flops));
	out->bytes = malloc(n * sizeof(*out->bytes));
	out->wbytes = malloc(n * sizeof(*out->wbytes));
	out->width = malloc(n * sizeof(*out->width));
	/* the layout arrays only where w1 has them (hand-made workloads
	 * may not: the model then uses `bytes`) */
	if ((w1->in_bytes &&
	     !(out->in_bytes = calloc(n, sizeof(*out->in_bytes)))) ||
	    (w1->out_bytes &&
	     !(out->out_bytes = calloc(n, sizeof(*out->out_bytes)))) ||
	    (w1->cin && !(out->cin = calloc(n, sizeof(*out->cin)))) ||
	    (w1->cout && !(out->cout = calloc(n, sizeof(*out->cout)))) ||
	    (w1->hw && !(out->hw = calloc(n, sizeof(*out->hw)))) ||
	    (w1->red && !(out->red = calloc(n, sizeof(*out->red)))) ||
	    (w1->karea && !(out->karea = calloc(n, sizeof(*out->karea)))) ||
	    (w1->valid && !(out->valid = calloc(n, sizeof(*out->valid)))) ||
	    (w1->after_bn &&
	     !(out->after_bn = calloc(n, sizeof(*out->after_bn)))) ||
	    (w1->pool && !(out->pool = calloc(n, sizeof(*out->pool)))) ||
	    !out->cls || !out->flops || !out->bytes || !out->wbytes ||
	    !out->width) {
		hp_workload_release(out);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	k = (double)batch;
	out->flops_total = 0;
	for (int i = 0; i < w1->nlayers; i++) {
		out->cls[i] = w1->cls[i];
		out->flops[i] = w1->flops[i] * k;
		out->bytes[i] = w1->bytes[i] * k;
		out->wbytes[i] = w1->wbytes[i];
		out->width[i] = w1->width[i];
		if (w1->in_bytes)
			out->in_bytes[i] = w1->in_bytes[i] * k;
		if (w1->out_bytes)
			out->out_bytes[i] = w1->out_bytes[i] * k;
		if (w1->cin)
			out->cin[i] = w1->cin[i];
		if (w1->cout)
			out->cout[i] = w1->cout[i];
		if (w1->hw)
			out->hw[i] = w1->hw[i];
		if (w1->red)
			out->red[i] = w1->red[i];
		if (w1->karea)
			out->karea[i] = w1->karea[i];
		if (w1->valid)
			out->valid[i] = w1->valid[i];
		if (w1->after_bn)
			out->after_bn[i] = w1->after_bn[i];
		if (w1->pool)
			out->pool[i] = w1->pool[i];
		out->flops_total += out->flops[i];
	}
	out->batch = batch;
	out->activations_bytes = w1->activations_bytes * batch;
	out->input_bytes = w1->input_bytes * batch;
	out->peak_act_bytes = w1->peak_act_bytes * batch;
	return 0;
}

static double tensor_bytes(const struct hp_graph *g, int t)
{
	int64_t n;
	int sz;

	if (t < 0 || t >= g->ntensors)
		return 0;
	n = hp_tensor_numel(&g->tensors[t]);
	sz = hp_dtype_size(g->tensors[t].dtype);
	if (n <= 0)
		return 0;
	return (double)n * (sz > 0 ? sz : 4);
}

/* What node k pools (a layer of kind pool). */
static unsigned char pool_kind(const struct hp_graph *g, int k)
{
	const char *op;

	if (k < 0 || k >= g->nnodes || !(op = g->nodes[k].op))
		return HP_POOL_NONE;
	if (!strcmp(op, "MaxPool") || !strcmp(op, "GlobalMaxPool"))
		return HP_POOL_MAX;
	return HP_POOL_AVG;
}

/*
 * A Conv node's reduction length (input channels per group x kernel
 * area) and kernel area, from its weight's shape [C_out, C_in / groups,
 * k...]; 0 when the node is not a Conv or the shape is not known.
 */
static void conv_reduction(const struct hp_graph *g, int k, double *red,
			   double *karea)
{
	const struct hp_node *nd;
	const struct hp_tensor *W;
	double a = 1;

	*red = *karea = 0;
	if (k < 0 || k >= g->nnodes)
		return;
	nd = &g->nodes[k];
	if (!nd->op || strcmp(nd->op, "Conv") || nd->ninputs < 2 ||
	    nd->inputs[1] < 0 || nd->inputs[1] >= g->ntensors)
		return;
	W = &g->tensors[nd->inputs[1]];
	if (W->rank < 3 || W->rank > HP_MAX_RANK)
		return;
	for (int d = 1; d < W->rank; d++)
		if (W->dims[d] <= 0)
			return;
	for (int d = 2; d < W->rank; d++)
		a *= (double)W->dims[d];
	*karea = a;
	*red = a * (double)W->dims[1];
}

/* One dimension's share of kernel taps that land inside the input:
 * out outputs at stride s from pad p before, kernel k dilated by dl, over
 * an input of n. */
static double taps_inside(int64_t n, int64_t out, int64_t k, int64_t s,
			  int64_t p, int64_t dl)
{
	int64_t in = 0;

	for (int64_t o = 0; o < out; o++)
		for (int64_t j = 0; j < k; j++) {
			int64_t x = o * s - p + j * dl;
			in += x >= 0 && x < n;
		}
	return out > 0 && k > 0 ? (double)in / (double)(out * k) : 0;
}

/*
 * A 2-D Conv's share of kernel taps inside its input (direct convolutions
 * skip those on the padding; the analysis counts every tap); 0 when not a
 * 2-D Conv with known shapes and explicit pads.
 */
static double conv_valid(const struct hp_graph *g, int k)
{
	const struct hp_node *nd;
	const struct hp_tensor *X, *W, *Y;
	const struct hp_attr *a;
	int64_t st[2] = {1, 1}, pb[2] = {0, 0}, dl[2] = {1, 1};
	double v = 1;

	if (k < 0 || k >= g->nnodes)
		return 0;
	nd = &g->nodes[k];
	if (!nd->op || strcmp(nd->op, "Conv") || nd->ninputs < 2 ||
	    nd->noutputs < 1 || nd->inputs[0] < 0 ||
	    nd->inputs[0] >= g->ntensors || nd->inputs[1] < 0 ||
	    nd->inputs[1] >= g->ntensors || nd->outputs[0] < 0 ||
	    nd->outputs[0] >= g->ntensors)
		return 0;
	X = &g->tensors[nd->inputs[0]];
	W = &g->tensors[nd->inputs[1]];
	Y = &g->tensors[nd->outputs[0]];
	if (X->rank != 4 || W->rank != 4 || Y->rank != 4)
		return 0;
	if ((a = hp_node_attr(nd, "auto_pad")) && a->s &&
	    strcmp(a->s, "NOTSET") && strcmp(a->s, "VALID"))
		return 0;
	if ((a = hp_node_attr(nd, "strides")) && a->n == 2)
		st[0] = a->ints[0], st[1] = a->ints[1];
	if ((a = hp_node_attr(nd, "pads")) && a->n == 4)
		pb[0] = a->ints[0], pb[1] = a->ints[1];
	if ((a = hp_node_attr(nd, "dilations")) && a->n == 2)
		dl[0] = a->ints[0], dl[1] = a->ints[1];
	for (int d = 0; d < 2; d++) {
		int64_t n = X->dims[2 + d], o = Y->dims[2 + d],
			kk = W->dims[2 + d];
		if (n <= 0 || o <= 0 || kk <= 0 || st[d] <= 0 || dl[d] <= 0 ||
		    o > 1 << 16 || kk > 1 << 10)
			return 0;
		v *= taps_inside(n, o, kk, st[d], pb[d], dl[d]);
	}
	return v;
}

/* Whether node k is a Relu on a BatchNormalization's output that nothing
 * else reads (a pair engines fuse: oneDNN's bn with a relu post-op). */
static unsigned char relu_after_bn(const struct hp_graph *g, int k)
{
	const struct hp_node *nd;
	int t, p, readers = 0;

	if (k < 0 || k >= g->nnodes)
		return 0;
	nd = &g->nodes[k];
	if (!nd->op || strcmp(nd->op, "Relu") || nd->ninputs < 1)
		return 0;
	t = nd->inputs[0];
	if (t < 0 || t >= g->ntensors)
		return 0;
	p = g->tensors[t].producer;
	if (p < 0 || p >= g->nnodes || !g->nodes[p].op ||
	    strcmp(g->nodes[p].op, "BatchNormalization"))
		return 0;
	for (int j = 0; j < g->nnodes; j++)
		for (int i = 0; i < g->nodes[j].ninputs; i++)
			readers += g->nodes[j].inputs[i] == t;
	return readers == 1;
}

/* Channels of tensor t when it is 4-D, else 0. */
static double chan4(const struct hp_graph *g, int t)
{
	if (t < 0 || t >= g->ntensors || g->tensors[t].rank != 4 ||
	    g->tensors[t].dims[1] <= 0)
		return 0;
	return (double)g->tensors[t].dims[1];
}

/*
 * Channels of the 4-D tensor a layer's input t was computed from: t
 * itself, or what a chain of reshapes (Flatten) started from; 0 for the
 * model's input (fed plain, never padded) and for 2-D data.
 */
static double chan_from(const struct hp_graph *g, int t)
{
	for (int hops = 0; hops < 8; hops++) {
		const struct hp_node *nd;
		int p;
		if (t < 0 || t >= g->ntensors || g->tensors[t].graph_input)
			return 0;
		if (g->tensors[t].rank == 4)
			return chan4(g, t);
		p = g->tensors[t].producer;
		if (p < 0 || p >= g->nnodes)
			return 0;
		nd = &g->nodes[p];
		if (!nd->op || nd->ninputs < 1 ||
		    (strcmp(nd->op, "Flatten") && strcmp(nd->op, "Reshape") &&
		     strcmp(nd->op, "Squeeze") && strcmp(nd->op, "Identity")))
			return 0;
		t = nd->inputs[0];
	}
	return 0;
}

/*
 * Whether a node of the reshape kind copies its data: a Transpose whose
 * permutation moves an axis longer than 1 (PyTorch's channel shuffle is a
 * transpose made contiguous; the engine's shuffle a permuting copy) and a
 * Slice (the engine copies its channels out; in PyTorch a view, but one
 * that the conv or concat reading it copies).  Reshapes and squeezes are
 * views.  Measured on the public GPU rows (hetpool validate, ShuffleNetV2
 * in Zeus's): k-fold 12.5% -> 11.6%, leave-one-type-out 29.2% -> 28.3%.
 */
static bool moves_data(const struct hp_graph *g, int node)
{
	const struct hp_node *nd;
	const struct hp_attr *p;
	const struct hp_tensor *x;
	int last = -1;

	if (node < 0 || node >= g->nnodes)
		return false;
	nd = &g->nodes[node];
	if (!strcmp(nd->op, "Slice"))
		return true;
	if (strcmp(nd->op, "Transpose") || nd->ninputs < 1 || nd->inputs[0] < 0)
		return false;
	x = &g->tensors[nd->inputs[0]];
	p = hp_node_attr(nd, "perm");
	if (!p || p->type != HP_ATTR_INTS || (int)p->n != x->rank)
		return x->rank > 1;
	/* the axes longer than 1 keep their order: no data moves */
	for (int i = 0; i < x->rank; i++) {
		int64_t a = p->ints[i];
		if (a < 0 || a >= x->rank || x->dims[a] == 1)
			continue;
		if (a < last)
			return true;
		last = (int)a;
	}
	return false;
}

int hp_workload_from_features(const struct hp_graph *g,
			      const struct hp_features *f,
			      struct hp_workload *w, struct hp_error *err)
{
	int n = 0;

	memset(w, 0, sizeof(*w));
	w->cls = calloc((size_t)f->nlayers + 1, sizeof(*w->cls));
	w->flops = calloc((size_t)f->nlayers + 1, sizeof(*w->flops));
	w->bytes = calloc((size_t)f->nlayers + 1, sizeof(*w->bytes));
	w->wbytes = calloc((size_t)f->nlayers + 1, sizeof(*w->wbytes));
	w->width = calloc((size_t)f->nlayers + 1, sizeof(*w->width));
	w->in_bytes = calloc((size_t)f->nlayers + 1, sizeof(*w->in_bytes));
	w->out_bytes = calloc((size_t)f->nlayers + 1, sizeof(*w->out_bytes));
	w->cin = calloc((size_t)f->nlayers + 1, sizeof(*w->cin));
	w->cout = calloc((size_t)f->nlayers + 1, sizeof(*w->cout));
	w->hw = calloc((size_t)f->nlayers + 1, sizeof(*w->hw));
	w->after_bn = calloc((size_t)f->nlayers + 1, sizeof(*w->after_bn));
	w->pool = calloc((size_t)f->nlayers + 1, sizeof(*w->pool));
	w->red = calloc((size_t)f->nlayers + 1, sizeof(*w->red));
	w->karea = calloc((size_t)f->nlayers + 1, sizeof(*w->karea));
	w->valid = calloc((size_t)f->nlayers + 1, sizeof(*w->valid));
	if (!w->cls || !w->flops || !w->bytes || !w->wbytes || !w->width ||
	    !w->in_bytes || !w->out_bytes || !w->cin || !w->cout || !w->hw ||
	    !w->after_bn || !w->pool || !w->red || !w->karea || !w->valid) {
		hp_workload_release(w);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int i = 0; i < f->nlayers; i++) {
		const struct hp_layer_stats *L = &f->layers[i];
		const struct hp_node *nd;
		double in = 0, out = 0, wb = 4.0 * (double)L->params;
		double cin = 0, cout = 0;
		int cls;

		switch (L->kind) {
		case HP_KIND_CONSTANT:
			continue;
		case HP_KIND_RESHAPE:
			/* a view, but for a transpose that moves data (a
			 * channel shuffle) and a slice */
			if (!moves_data(g, L->node))
				continue;
			cls = HP_EST_OTHER;
			break;
		case HP_KIND_CONV:
			cls = HP_EST_CONV;
			break;
		case HP_KIND_FC:
		case HP_KIND_ATTN_MATMUL:
			cls = HP_EST_FC;
			break;
		default:
			cls = HP_EST_OTHER;
			break;
		}
		if (L->node >= 0 && L->node < g->nnodes) {
			nd = &g->nodes[L->node];
			for (int k = 0; k < nd->ninputs; k++) {
				int t = nd->inputs[k];
				if (t >= 0 && t < g->ntensors &&
				    !g->tensors[t].initializer) {
					in += tensor_bytes(g, t);
					if (k == 0)
						cin = chan_from(g, t);
				}
			}
			for (int k = 0; k < nd->noutputs; k++)
				out += tensor_bytes(g, nd->outputs[k]);
			if (nd->noutputs > 0)
				cout = chan4(g, nd->outputs[0]);
		}
		w->cls[n] = (unsigned char)cls;
		w->flops[n] =
		    L->flops_fwd + L->flops_bwd_input + L->flops_bwd_weight;
		/* Forward: read the input, write the output; backward:
		 * read the output's gradient and the input, write the
		 * input's gradient.  Weights: read forward and backward,
		 * write the gradient; the update reads weights, gradient
		 * and momentum and writes two. */
		w->bytes[n] = 3 * in + 2 * out;
		w->wbytes[n] = 8 * wb;
		w->width[n] =
		    L->out_rank >= 2 && L->out_dims[1] > 0
			? (double)L
			      ->out_dims[L->kind == HP_KIND_FC ? L->out_rank - 1
							       : 1]
			: 0;
		w->in_bytes[n] = in;
		w->out_bytes[n] = out;
		w->cin[n] = cin;
		w->cout[n] = cout;
		w->after_bn[n] = relu_after_bn(g, L->node);
		w->pool[n] = L->kind == HP_KIND_POOL ? pool_kind(g, L->node)
						     : HP_POOL_NONE;
		if (cls == HP_EST_CONV) {
			conv_reduction(g, L->node, &w->red[n], &w->karea[n]);
			w->valid[n] = conv_valid(g, L->node);
		}
		w->hw[n] =
		    L->out_rank == 4 && L->out_dims[2] > 0 && L->out_dims[3] > 0
			? (double)(L->out_dims[2] * L->out_dims[3])
			: 0;
		w->flops_total += w->flops[n];
		n++;
	}
	w->nlayers = n;
	w->batch = f->batch;
	w->params = f->params;
	w->state_bytes = f->weights_bytes + f->gradients_bytes +
			 f->buffers_bytes + f->sgd_state_bytes;
	w->activations_bytes = f->activations_bytes;
	w->input_bytes = f->input_bytes;
	w->peak_act_bytes = f->peak_act_bytes;
	w->conv_layers = f->conv_layers;
	w->fc_layers = f->fc_layers;
	w->filters = f->max_filters;
	w->fc_width = f->max_fc_width;
	w->input_size = f->input_hw;
	return 0;
}

int hp_workload_from_graph(struct hp_graph *g, int64_t batch,
			   const int64_t *input_shape, int input_rank,
			   struct hp_workload *w, struct hp_error *err)
{
	struct hp_features f;
	int rc;

	memset(w, 0, sizeof(*w));
	rc = hp_analyze(g, batch, input_shape, input_rank, &f, err);
	if (rc)
		return rc;
	rc = hp_workload_from_features(g, &f, w, err);
	hp_features_release(&f);
	return rc;
}

double hp_roofline_time_s(const struct hp_workload *w,
			  const struct hp_device_type *t)
{
	if (!t || !(t->fp32_tflops > 0))
		return NAN;
	return w->flops_total / (t->fp32_tflops * 1e12);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y ? 1 : 0;
}

double hp__quantile(double *v, int n, double q)
{
	double pos;
	int i;

	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	pos = q * (n - 1);
	i = (int)pos;
	if (i >= n - 1)
		return v[n - 1];
	return v[i] + (pos - i) * (v[i + 1] - v[i]);
}
