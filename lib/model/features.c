/*
 * features.c - quantify a model: trainable parameters, MACs (the
 * torchvision convention: Conv, ConvTranspose, Gemm and MatMul only),
 * FLOPs forward and backward (input- and weight-gradient work, all ops),
 * memory for training, layer counts by kind and a per-layer table.
 *
 * The costing rules are documented in docs/analysis.md; keep them in step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/banned.h"

const char *hp_kind_name(enum hp_kind k)
{
	static const char *const names[] = {
#define HP_KIND_STR(name, str) str,
	    HP_KIND_MAP(HP_KIND_STR)
#undef HP_KIND_STR
	};
	return (unsigned)k < HP_KIND__COUNT ? names[k] : "other";
}

static bool is_float(int dtype)
{
	return dtype == HP_DT_FLOAT || dtype == HP_DT_FLOAT16 ||
	       dtype == HP_DT_DOUBLE || dtype == HP_DT_BFLOAT16;
}

/* Ops that pass a weight through unchanged in value or layout. */
static bool weight_view_op(const char *op)
{
	return !strcmp(op, "Identity") || !strcmp(op, "Transpose") ||
	       !strcmp(op, "Reshape") || !strcmp(op, "Cast") ||
	       !strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze");
}

/* The initializer behind a weight (through views), or -1. */
static int weight_source(const struct hp_graph *g, int t)
{
	for (int hops = 0; t >= 0 && hops < 8; hops++) {
		const struct hp_tensor *x = &g->tensors[t];
		const struct hp_node *p;
		if (x->initializer)
			return is_float(x->dtype) ? t : -1;
		if (x->producer < 0)
			return -1;
		p = &g->nodes[x->producer];
		if (!weight_view_op(p->op) || p->ninputs < 1)
			return -1;
		t = p->inputs[0];
	}
	return -1;
}

bool hp__is_weight(const struct hp_graph *g, int t)
{
	return weight_source(g, t) >= 0;
}

/* Input slots that hold fixed arguments, not learnable tensors. */
static bool buffer_slot(const char *op, int k)
{
	if (!strcmp(op, "BatchNormalization"))
		return k == 3 || k == 4;
	if (!strcmp(op, "Resize") || !strcmp(op, "Upsample"))
		return k >= 1;
	if (!strcmp(op, "Clip"))
		return k >= 1;
	if (!strcmp(op, "Pad") || !strcmp(op, "Dropout") ||
	    !strcmp(op, "Pow") || !strcmp(op, "Reshape") ||
	    !strcmp(op, "Expand") || !strcmp(op, "Tile") ||
	    !strcmp(op, "Slice") || !strcmp(op, "ConstantOfShape"))
		return k >= 1;
	return false;
}

static enum hp_kind classify(const struct hp_graph *g, const struct hp_node *n,
			     bool folded)
{
	const struct hp__op *op = hp__op_find(n->op);

	if (weight_view_op(n->op) && n->noutputs > 0 && n->outputs[0] >= 0 &&
	    hp__is_weight(g, n->outputs[0]))
		return HP_KIND_CONSTANT; /* a view of a stored weight */
	if (folded)
		return HP_KIND_CONSTANT;
	if (!op) /* an unknown pooling op still pools */
		return strstr(n->op, "Pool") ? HP_KIND_POOL : HP_KIND_OTHER;
	if (!strcmp(n->op, "MatMul")) {
		bool w = (n->ninputs > 0 && hp__is_weight(g, n->inputs[0])) ||
			 (n->ninputs > 1 && hp__is_weight(g, n->inputs[1]));
		return w ? HP_KIND_FC : HP_KIND_ATTN_MATMUL;
	}
	return op->kind;
}

/* FLOPs per output element of an activation, forward. */
static double act_cost(const char *name)
{
	const struct hp__op *op = hp__op_find(name);

	return op && op->act_flops ? op->act_flops : 4;
}

/* *acc += v, stopping at INT64_MAX instead of overflowing. */
static void sat_add(int64_t *acc, int64_t v)
{
	if (!hp_add_i64(*acc, v, acc))
		*acc = INT64_MAX;
}

static int64_t numel(const struct hp_tensor *t)
{
	int64_t e = hp_tensor_numel(t);
	return e < 0 ? 0 : e;
}

static int64_t tbytes(const struct hp_tensor *t)
{
	int sz = hp_dtype_size(t->dtype);
	int64_t e = numel(t), b;

	if (!hp_mul_i64(e, sz ? sz : 4, &b))
		return INT64_MAX / 4;
	return b;
}

static const struct hp_tensor *tin(const struct hp_graph *g,
				   const struct hp_node *n, int k)
{
	if (k >= n->ninputs || n->inputs[k] < 0)
		return NULL;
	return &g->tensors[n->inputs[k]];
}

static const struct hp_tensor *tout(const struct hp_graph *g,
				    const struct hp_node *n, int k)
{
	if (k >= n->noutputs || n->outputs[k] < 0)
		return NULL;
	return &g->tensors[n->outputs[k]];
}

/* Forward MACs of a Conv/ConvTranspose/Gemm/MatMul node, whole batch. */
static int64_t node_macs(const struct hp_graph *g, const struct hp_node *n,
			 enum hp_kind kind)
{
	const struct hp_tensor *y = tout(g, n, 0), *x = tin(g, n, 0),
			       *w = tin(g, n, 1);
	int64_t m = 0, k = 1;

	if (!y || !x || !w || y->rank < 0 || x->rank < 0 || w->rank < 0)
		return 0;
	/* Sizes come from the file: every product is checked; -1 means
	 * the count overflows. */
	if (!strcmp(n->op, "Conv") || !strcmp(n->op, "ConvTranspose")) {
		for (int i = 1; i < w->rank; i++)
			if (!hp_mul_i64(k, w->dims[i], &k))
				return -1;
		/* Conv: per output element; ConvTranspose: per input. */
		if (!hp_mul_i64(numel(strcmp(n->op, "Conv") ? x : y), k, &m))
			return -1;
	} else if (!strcmp(n->op, "Gemm") && x->rank == 2) {
		int64_t kk =
		    hp_node_attr_i(n, "transA", 0) ? x->dims[0] : x->dims[1];
		if (!hp_mul_i64(numel(y), kk, &m))
			return -1;
	} else if ((kind == HP_KIND_FC || kind == HP_KIND_ATTN_MATMUL) &&
		   x->rank >= 1) {
		if (!hp_mul_i64(numel(y), x->dims[x->rank - 1], &m))
			return -1;
	}
	return m;
}

struct state {
	struct hp_graph *g;
	struct hp_features *f;
	bool *needs_grad; /* per tensor: gradient flows through it */
	bool *saved;	  /* per tensor: kept for backward */
	bool *counted;	  /* per tensor: weight already attributed */
	char **skipped;
	int nskipped, askipped;
	bool nhwc; /* the first input is N, H, W, C (hp__input_nhwc()) */
};

static int add_skipped(struct state *s, const char *what)
{
	char **p;

	for (int i = 0; i < s->nskipped; i++)
		if (!strcmp(s->skipped[i], what))
			return 0;
	if (s->nskipped == s->askipped) {
		int na = s->askipped ? s->askipped * 2 : 8;
		p = realloc(s->skipped, (size_t)na * sizeof(*p));
		if (!p)
			return HP_ENOMEM;
		s->skipped = p;
		s->askipped = na;
	}
	s->skipped[s->nskipped] = hp_strdup(what);
	if (!s->skipped[s->nskipped])
		return HP_ENOMEM;
	s->nskipped++;
	return 0;
}

static int64_t save(struct state *s, int t)
{
	if (t < 0 || s->saved[t] || !s->g->tensors[t].rank ||
	    s->g->tensors[t].initializer || hp__is_weight(s->g, t))
		return 0;
	s->saved[t] = true;
	return tbytes(&s->g->tensors[t]);
}

static void cost_node(struct state *s, int ni, struct hp_layer_stats *L)
{
	struct hp_graph *g = s->g;
	const struct hp_node *n = &g->nodes[ni];
	const struct hp_tensor *y = tout(g, n, 0), *x = tin(g, n, 0);
	double E = y ? (double)numel(y) : 0, I = x ? (double)numel(x) : 0;
	bool grad_in = false, has_w = false, grad_out;
	int64_t macs = L->macs;

	/* Which inputs carry gradients, and does the node own weights? */
	for (int k = 0; k < n->ninputs; k++) {
		int t = n->inputs[k];
		if (t < 0 || buffer_slot(n->op, k))
			continue;
		if (hp__is_weight(g, t))
			has_w = true;
		else if (s->needs_grad[t])
			grad_in = true;
	}
	grad_out = grad_in || has_w;
	for (int k = 0; k < n->noutputs; k++)
		if (n->outputs[k] >= 0 &&
		    is_float(g->tensors[n->outputs[k]].dtype))
			s->needs_grad[n->outputs[k]] = grad_out;

	switch (L->kind) {
	case HP_KIND_CONV:
	case HP_KIND_FC: {
		bool bias = (!strcmp(n->op, "Gemm") || !strcmp(n->op, "Conv") ||
			     !strcmp(n->op, "ConvTranspose")) &&
			    tin(g, n, 2);
		L->flops_fwd = 2.0 * (double)macs + (bias ? E : 0);
		if (grad_in)
			L->flops_bwd_input = 2.0 * (double)macs;
		if (has_w)
			L->flops_bwd_weight =
			    2.0 * (double)macs + (bias ? E : 0);
		if (grad_out) {
			/* The weight gradient needs the input activation. */
			for (int k = 0; k < 2 && k < n->ninputs; k++)
				L->act_bytes += save(s, n->inputs[k]);
		}
		break;
	}
	case HP_KIND_ATTN_MATMUL:
		L->flops_fwd = 2.0 * (double)macs;
		if (grad_in) {
			L->flops_bwd_input = 4.0 * (double)macs;
			L->act_bytes += save(s, n->inputs[0]);
			L->act_bytes += save(s, n->inputs[1]);
		}
		break;
	case HP_KIND_NORM:
		L->flops_fwd = 8.0 * E;
		if (grad_out) {
			L->flops_bwd_input = grad_in ? 10.0 * E : 0;
			L->flops_bwd_weight = has_w ? 2.0 * E : 0;
			L->act_bytes += save(s, n->inputs[0]);
		}
		break;
	case HP_KIND_POOL: {
		const struct hp_attr *ks = hp_node_attr(n, "kernel_shape");
		double k = 1;
		if (ks && ks->type == HP_ATTR_INTS)
			for (size_t i = 0; i < ks->n; i++)
				k *= (double)ks->ints[i];
		L->flops_fwd = strstr(n->op, "Global") ? I : E * k;
		if (grad_in) {
			L->flops_bwd_input =
			    strstr(n->op, "Global") ? I : E * k;
			/* Max pooling keeps its input (or indices). */
			if (strstr(n->op, "Max"))
				L->act_bytes += save(s, n->inputs[0]);
		}
		break;
	}
	case HP_KIND_ACTIVATION:
		L->flops_fwd = act_cost(n->op) * E;
		if (grad_in) {
			L->flops_bwd_input = act_cost(n->op) * E;
			L->act_bytes += save(s, n->outputs[0]);
		}
		break;
	case HP_KIND_SOFTMAX:
		L->flops_fwd = 5.0 * E;
		if (grad_in) {
			L->flops_bwd_input = 4.0 * E;
			L->act_bytes += save(s, n->outputs[0]);
		}
		break;
	case HP_KIND_DROPOUT:
		L->flops_fwd = 2.0 * E;
		if (grad_in) {
			L->flops_bwd_input = E;
			L->act_bytes += (int64_t)E; /* one-byte mask */
		}
		break;
	case HP_KIND_LOSS:
		L->flops_fwd = 5.0 * I;
		if (grad_in) {
			L->flops_bwd_input = 2.0 * I;
			L->act_bytes += x ? tbytes(x) : 0;
		}
		break;
	case HP_KIND_ELEMENTWISE: {
		int nin = 0;
		for (int k = 0; k < n->ninputs; k++)
			nin += n->inputs[k] >= 0;
		L->flops_fwd = E * (nin > 1 ? nin - 1 : 1);
		if (grad_out) {
			L->flops_bwd_input = E * (nin > 0 ? nin : 1);
			/* Products and quotients keep their operands. */
			if (!strcmp(n->op, "Mul") || !strcmp(n->op, "Div") ||
			    !strcmp(n->op, "Pow"))
				for (int k = 0; k < n->ninputs; k++)
					L->act_bytes += save(s, n->inputs[k]);
			else if (nin == 1 && strcmp(n->op, "Neg"))
				L->act_bytes += save(s, n->inputs[0]);
		}
		break;
	}
	case HP_KIND_RESIZE:
		L->flops_fwd = 4.0 * E;
		if (grad_in)
			L->flops_bwd_input = 4.0 * E;
		break;
	case HP_KIND_REDUCE:
		L->flops_fwd = I;
		if (grad_in)
			L->flops_bwd_input = I;
		break;
	case HP_KIND_CONCAT_SPLIT:
	case HP_KIND_RESHAPE:
		/* Data movement: no arithmetic; a copy in each direction. */
		break;
	case HP_KIND_CONSTANT:
	case HP_KIND_OTHER:
	case HP_KIND__COUNT:
		break;
	}
}

/*
 * Whether node ni is arithmetic with a stored constant on the network
 * input itself, directly or after more of it, that begins with a Sub or
 * Div: an input normalization, (x - mean) / std with a mean and std per
 * channel (PyTorch buffers, not parameters; ONNX cannot say which, and a
 * subtraction or division is how preprocessing is written, while a
 * learned shift or scale is an Add or Mul).
 */
static bool on_input_arith(const struct hp_graph *g, int ni)
{
	bool sub_div = false;

	for (int hops = 0; ni >= 0 && hops < 8; hops++) {
		const struct hp_node *n = &g->nodes[ni];
		int x = -1;
		if (strcmp(n->op, "Sub") && strcmp(n->op, "Div") &&
		    strcmp(n->op, "Mul") && strcmp(n->op, "Add"))
			return false;
		if (n->ninputs != 2)
			return false;
		sub_div =
		    sub_div || !strcmp(n->op, "Sub") || !strcmp(n->op, "Div");
		for (int k = 0; k < 2; k++)
			if (n->inputs[k] >= 0 &&
			    weight_source(g, n->inputs[k]) < 0)
				x = n->inputs[k];
		if (x < 0)
			return false;
		if (g->ninputs > 0 && x == g->inputs[0])
			return sub_div;
		ni = g->tensors[x].producer;
	}
	return false;
}

static void attribute_params(struct state *s, int ni, struct hp_layer_stats *L)
{
	struct hp_graph *g = s->g;
	const struct hp_node *n = &g->nodes[ni];

	if (weight_view_op(n->op) && n->noutputs > 0 && n->outputs[0] >= 0 &&
	    hp__is_weight(g, n->outputs[0]))
		return; /* counted where the weight is used */
	for (int k = 0; k < n->ninputs; k++) {
		int src =
		    n->inputs[k] >= 0 ? weight_source(g, n->inputs[k]) : -1;
		const struct hp_tensor *w;
		if (src < 0 || s->counted[src])
			continue;
		w = &g->tensors[src];
		if (!is_float(w->dtype))
			continue;
		/* Exporter-made scalars are constants, not parameters. */
		if (w->rank == 0 ||
		    (numel(w) == 1 && !strncmp(w->name, "onnx::", 6)))
			continue;
		s->counted[src] = true;
		if (on_input_arith(g, ni)) {
			sat_add(&s->f->nontrainable, numel(w));
			sat_add(&s->f->buffers_bytes, tbytes(w));
			continue;
		}
		if (buffer_slot(n->op, k)) {
			if (!strcmp(n->op, "BatchNormalization")) {
				sat_add(&s->f->nontrainable, numel(w));
				sat_add(&s->f->buffers_bytes, tbytes(w));
			}
			continue;
		}
		L->params += numel(w);
	}
}

static int propagate(struct state *s, const int *order, int64_t batch,
		     const int64_t *input_shape, int input_rank,
		     struct hp_error *err)
{
	struct hp_graph *g = s->g;

	/* Forget what an earlier analysis (another batch size) computed:
	 * every tensor a node other than Constant writes is recomputed. */
	for (int i = 0; i < g->ntensors; i++) {
		struct hp_tensor *t = &g->tensors[i];
		if (t->producer < 0 ||
		    !strcmp(g->nodes[t->producer].op, "Constant"))
			continue;
		t->rank = -1;
		free(t->ival);
		t->ival = NULL;
		t->nival = -1;
		free(t->fvals);
		t->fvals = NULL;
		t->nfvals = -1;
	}
	for (int i = 0; i < g->ninputs; i++) {
		struct hp_tensor *t = &g->tensors[g->inputs[i]];
		if (t->rank < 0)
			return hp_error_set(err, HP_ESHAPE,
					    "input '%s' has no shape", t->name);
		if (i == 0 && input_shape) {
			int b = t->batch_axis >= 0 ? t->batch_axis : 0;
			if (input_rank != t->rank - 1)
				return hp_error_set(
				    err, HP_EINVAL,
				    "input shape has %d dimensions, model "
				    "input '%s' takes %d besides the batch",
				    input_rank, t->name, t->rank - 1);
			if (input_rank == 3 && b == 0 && s->nhwc) {
				/* C x H x W given, N, H, W, C taken */
				t->dims[1] = input_shape[1];
				t->dims[2] = input_shape[2];
				t->dims[3] = input_shape[0];
			} else {
				for (int d = 0, k = 0; d < t->rank; d++)
					if (d != b)
						t->dims[d] = input_shape[k++];
			}
		}
		if (t->batch_axis >= 0)
			t->dims[t->batch_axis] = batch;
		for (int d = 0; d < t->rank; d++)
			if (t->dims[d] < 0)
				return hp_error_set(
				    err, HP_ESHAPE,
				    "input '%s' has an unknown dimension "
				    "%d: give it with --input-shape",
				    t->name, d);
		if (hp_tensor_numel(t) < 0 ||
		    hp_tensor_numel(t) > HP_MODEL_MAX_ELEMS)
			return hp_error_set(err, HP_ESHAPE,
					    "input '%s' has more than 2^50 "
					    "elements at batch %lld",
					    t->name, (long long)batch);
	}
	for (int i = 0; i < g->nnodes; i++) {
		struct hp_node *n = &g->nodes[order[i]];
		int rc = hp__shape_node(g, n, err);
		if (rc == 1) {
			hp_log(HP_LOG_WARN,
			       "%s: unknown op '%s' (node '%s'): "
			       "skipped, its output shape is guessed",
			       g->source ? g->source : g->name, n->op, n->name);
			if (add_skipped(s, n->op))
				return hp_error_set(err, HP_ENOMEM,
						    "out of memory");
		} else if (rc == 2) {
			char what[160];
			snprintf(what, sizeof(what), "%s (input shape unknown)",
				 n->op);
			if (add_skipped(s, what))
				return hp_error_set(err, HP_ENOMEM,
						    "out of memory");
		} else if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

int hp_shape_infer(struct hp_graph *g, int64_t batch,
		   const int64_t *input_shape, int input_rank,
		   struct hp_error *err)
{
	struct hp_features f;
	int rc = hp_analyze(g, batch, input_shape, input_rank, &f, err);

	hp_features_release(&f);
	return rc;
}

int hp_analyze(struct hp_graph *g, int64_t batch, const int64_t *input_shape,
	       int input_rank, struct hp_features *f, struct hp_error *err)
{
	struct state s = {0};
	int *order = NULL, rc;

	memset(f, 0, sizeof(*f));
	if (batch < 1 || batch > (1 << 24))
		return hp_error_set(err, HP_EINVAL,
				    "batch size %lld out of range (1..%d)",
				    (long long)batch, 1 << 24);
	if (g->nnodes == 0)
		return hp_error_set(err, HP_EINVAL,
				    "graph has no nodes: nothing to train");
	f->batch = batch;
	order = malloc((size_t)(g->nnodes ? g->nnodes : 1) * sizeof(int));
	s.g = g;
	s.f = f;
	s.needs_grad = calloc((size_t)g->ntensors + 1, sizeof(bool));
	s.saved = calloc((size_t)g->ntensors + 1, sizeof(bool));
	s.counted = calloc((size_t)g->ntensors + 1, sizeof(bool));
	f->layers = calloc((size_t)g->nnodes + 1, sizeof(*f->layers));
	if (!order || !s.needs_grad || !s.saved || !s.counted || !f->layers) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	rc = hp__graph_topo(g, order, err);
	if (rc)
		goto out;
	s.nhwc = g->ninputs > 0 && hp__input_nhwc(g, g->inputs[0]);
	rc = propagate(&s, order, batch, input_shape, input_rank, err);
	if (rc)
		goto out;

	for (int i = 0; i < g->nnodes; i++) {
		int ni = order[i];
		const struct hp_node *n = &g->nodes[ni];
		struct hp_layer_stats *L = &f->layers[f->nlayers++];
		const struct hp_tensor *y = tout(g, n, 0);
		bool folded = n->noutputs > 0;

		for (int k = 0; k < n->noutputs; k++)
			if (n->outputs[k] >= 0 &&
			    g->tensors[n->outputs[k]].nival < 0)
				folded = false;
		L->node = ni;
		L->kind = classify(g, n, folded);
		if (y && y->rank >= 0) {
			L->out_rank = y->rank;
			memcpy(L->out_dims, y->dims, sizeof(L->out_dims));
		} else {
			L->out_rank = -1;
		}
		attribute_params(&s, ni, L);
		if (L->kind == HP_KIND_CONV || L->kind == HP_KIND_FC ||
		    L->kind == HP_KIND_ATTN_MATMUL)
			L->macs = node_macs(g, n, L->kind);
		if (L->macs < 0) {
			rc = hp_error_set(err, HP_ERANGE,
					  "node '%s': MAC count overflows",
					  n->name);
			goto out;
		}
		cost_node(&s, ni, L);

		if (!hp_add_i64(f->macs_per_sample, L->macs,
				&f->macs_per_sample) ||
		    !hp_add_i64(f->params, L->params, &f->params) ||
		    !hp_add_i64(f->activations_bytes, L->act_bytes,
				&f->activations_bytes) ||
		    f->params > ((int64_t)1 << 56) ||
		    f->activations_bytes > ((int64_t)1 << 60)) {
			rc = hp_error_set(err, HP_ERANGE,
					  "node '%s': counts overflow (a model "
					  "this large cannot be trained)",
					  n->name);
			goto out;
		}
		f->flops_fwd += L->flops_fwd;
		f->flops_bwd_input += L->flops_bwd_input;
		f->flops_bwd_weight += L->flops_bwd_weight;
		if (L->kind != HP_KIND_CONSTANT) {
			f->kind_count[L->kind]++;
			if (y && tbytes(y) > f->peak_act_bytes &&
			    L->kind != HP_KIND_RESHAPE)
				f->peak_act_bytes = tbytes(y);
		}
		if (L->kind == HP_KIND_CONV) {
			const struct hp_tensor *w = tin(g, n, 1);
			f->conv_layers++;
			if (y && y->rank >= 2 && y->dims[1] > f->max_filters)
				f->max_filters = y->dims[1];
			(void)w;
		} else if (L->kind == HP_KIND_FC) {
			f->fc_layers++;
			if (y && y->rank >= 1 &&
			    y->dims[y->rank - 1] > f->max_fc_width)
				f->max_fc_width = y->dims[y->rank - 1];
		}
	}
	f->macs_per_sample /= batch;
	for (int i = 0; i < g->ninputs; i++)
		sat_add(&f->input_bytes, tbytes(&g->tensors[g->inputs[i]]));
	if (g->ninputs > 0) {
		const struct hp_tensor *t = &g->tensors[g->inputs[0]];
		/* the width: N, C, H, W's last, N, H, W, C's third */
		if (t->rank >= 3)
			f->input_hw = t->dims[t->rank - 1 - s.nhwc];
	}
	f->weights_bytes = f->params * 4;
	f->gradients_bytes = f->params * 4;
	f->sgd_state_bytes = f->params * 4;
	f->adam_state_bytes = f->params * 8;
	f->skipped = s.skipped;
	f->nskipped = s.nskipped;
	s.skipped = NULL;
	s.nskipped = 0;
	rc = 0;
out:
	for (int i = 0; i < s.nskipped; i++)
		free(s.skipped[i]);
	free(s.skipped);
	free(order);
	free(s.needs_grad);
	free(s.saved);
	free(s.counted);
	if (rc) {
		hp_features_release(f);
		f->batch = batch;
	}
	return rc;
}

void hp_features_release(struct hp_features *f)
{
	if (!f)
		return;
	free(f->layers);
	for (int i = 0; i < f->nskipped; i++)
		free(f->skipped[i]);
	free(f->skipped);
	memset(f, 0, sizeof(*f));
}

int64_t hp_features_train_bytes(const struct hp_features *f, bool adam)
{
	/* Weights, gradients, optimizer state, saved activations, the input
	 * batch, and one transient buffer the size of the largest activation
	 * (the gradient being propagated).  Saturates instead of overflowing.
	 */
	int64_t parts[] = {f->weights_bytes,
			   f->gradients_bytes,
			   f->buffers_bytes,
			   adam ? f->adam_state_bytes : f->sgd_state_bytes,
			   f->activations_bytes,
			   f->input_bytes,
			   f->peak_act_bytes,
			   f->peak_act_bytes};
	int64_t sum = 0;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (!hp_add_i64(sum, parts[i], &sum))
			return INT64_MAX;
	return sum;
}
