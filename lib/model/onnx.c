/*
 * onnx.c - ONNX importer: a ModelProto (parsed by protobuf-c from the schema
 * Debian's libonnx-dev ships) into struct hp_graph.  Shapes come from
 * tensor dims and the graph inputs' types, never from tensor data, so
 * files whose weights were stripped work.  Small integer constants (shape
 * vectors) keep their values for constant folding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "onnx.pb-c.h"
#include "util/banned.h"

#define ONNX_MAX_ATTRS 1024 /* per node */

struct ctx {
	struct hp_graph *g;
	struct hp_error *err;
};

static int check_dims(struct ctx *c, const char *what, const char *name,
		      size_t n, const int64_t *dims, int64_t *numel)
{
	int64_t e = 1;

	if (n > HP_MAX_RANK)
		return hp_error_set(c->err, HP_ETOOBIG,
				    "%s '%s' has rank %zu (at most %d)", what,
				    name, n, HP_MAX_RANK);
	for (size_t i = 0; i < n; i++) {
		if (dims[i] < 0 || dims[i] > HP_MODEL_MAX_DIM)
			return hp_error_set(c->err, HP_ERANGE,
					    "%s '%s' has dimension %zu = %lld",
					    what, name, i, (long long)dims[i]);
		if (!hp_mul_i64(e, dims[i], &e) || e > HP_MODEL_MAX_ELEMS)
			return hp_error_set(c->err, HP_ERANGE,
					    "%s '%s' has too many elements",
					    what, name);
	}
	if (numel)
		*numel = e;
	return 0;
}

/* Copy a TensorProto's type, dims and (small integer) value into t. */
static int load_tensor(struct ctx *c, struct hp_tensor *t,
		       const Onnx__TensorProto *tp, const char *what)
{
	int64_t numel = 0;
	int rc;

	rc = check_dims(c, what, t->name, tp->n_dims, tp->dims, &numel);
	if (rc)
		return rc;
	t->dtype = tp->has_data_type ? tp->data_type : HP_DT_UNDEFINED;
	t->rank = (int)tp->n_dims;
	for (size_t i = 0; i < tp->n_dims; i++)
		t->dims[i] = tp->dims[i];
	if (numel > HP_MODEL_MAX_CONST_ELEMS)
		return 0;
	if (t->dtype == HP_DT_INT64 || t->dtype == HP_DT_INT32) {
		int64_t v[HP_MODEL_MAX_CONST_ELEMS];
		int64_t have = -1;
		int sz = t->dtype == HP_DT_INT64 ? 8 : 4;

		if (t->dtype == HP_DT_INT64 &&
		    tp->n_int64_data == (size_t)numel) {
			if (numel)
				memcpy(v, tp->int64_data, (size_t)numel * 8);
			have = numel;
		} else if (t->dtype == HP_DT_INT32 &&
			   tp->n_int32_data == (size_t)numel) {
			for (int64_t i = 0; i < numel; i++)
				v[i] = tp->int32_data[i];
			have = numel;
		} else if (tp->has_raw_data &&
			   tp->raw_data.len == (size_t)numel * (size_t)sz) {
			for (int64_t i = 0; i < numel; i++) {
				if (sz == 8) {
					int64_t x;
					memcpy(&x, tp->raw_data.data + i * 8,
					       8);
					v[i] = x;
				} else {
					int32_t x;
					memcpy(&x, tp->raw_data.data + i * 4,
					       4);
					v[i] = x;
				}
			}
			have = numel;
		}
		if (have >= 0) {
			rc = hp_tensor_set_ival(t, v, have);
			if (rc)
				return hp_error_set(c->err, rc,
						    "out of memory");
		}
	} else if (t->dtype == HP_DT_FLOAT && numel <= 64) {
		double v[64];
		int64_t have = -1;

		if (tp->n_float_data == (size_t)numel) {
			for (int64_t i = 0; i < numel; i++)
				v[i] = tp->float_data[i];
			have = numel;
		} else if (tp->has_raw_data &&
			   tp->raw_data.len == (size_t)numel * 4) {
			for (int64_t i = 0; i < numel; i++) {
				float x;
				memcpy(&x, tp->raw_data.data + i * 4, 4);
				v[i] = x;
			}
			have = numel;
		}
		if (have >= 0) {
			rc = hp_tensor_set_fvals(t, v, have);
			if (rc)
				return hp_error_set(c->err, rc,
						    "out of memory");
		}
	}
	return 0;
}

static int load_value_info(struct ctx *c, struct hp_tensor *t,
			   const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto__Tensor *tt;

	if (!vi->type ||
	    vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type)
		return 0;
	tt = vi->type->tensor_type;
	t->dtype = tt->has_elem_type ? tt->elem_type : HP_DT_UNDEFINED;
	if (!tt->shape)
		return 0;
	if (tt->shape->n_dim > HP_MAX_RANK)
		return hp_error_set(c->err, HP_ETOOBIG,
				    "input '%s' has rank %zu (at most %d)",
				    t->name, tt->shape->n_dim, HP_MAX_RANK);
	t->rank = (int)tt->shape->n_dim;
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		if (d &&
		    d->value_case ==
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0 || d->dim_value > HP_MODEL_MAX_DIM)
				return hp_error_set(
				    c->err, HP_ERANGE,
				    "input '%s' has dimension %zu = %lld",
				    t->name, i, (long long)d->dim_value);
			t->dims[i] = d->dim_value;
		} else {
			t->dims[i] = -1;
			if (t->batch_axis < 0)
				t->batch_axis = (int)i;
		}
	}
	return 0;
}

static int load_attr(struct ctx *c, struct hp_node *n, int node_idx,
		     const Onnx__AttributeProto *ap)
{
	struct hp_attr *a;
	int type;

	if (!ap->name)
		return hp_error_set(c->err, HP_EPARSE,
				    "node '%s' has an attribute without a name",
				    n->name);
	/* Which of two values counts is nowhere defined: refuse both. */
	if (hp_node_attr(n, ap->name))
		return hp_error_set(c->err, HP_EPARSE,
				    "node '%s' (%s): attribute '%s' is given "
				    "twice",
				    n->name, n->op, ap->name);
	switch (ap->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		type = (int)ap->type;
		break;
	default:
		type = HP_ATTR_OTHER;
	}
	a = hp_node_add_attr(n, ap->name, type);
	if (!a)
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	a->f = ap->f;
	a->i = ap->i;
	if (type == HP_ATTR_STRING) {
		a->s = hp_strndup((const char *)ap->s.data, ap->s.len);
		if (!a->s)
			return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	} else if (type == HP_ATTR_INTS && ap->n_ints) {
		if (ap->n_ints > HP_MODEL_MAX_CONST_ELEMS)
			return hp_error_set(c->err, HP_ETOOBIG,
					    "node '%s': attribute '%s' has %zu "
					    "values",
					    n->name, ap->name, ap->n_ints);
		a->ints = malloc(ap->n_ints * sizeof(*a->ints));
		if (!a->ints)
			return hp_error_set(c->err, HP_ENOMEM, "out of memory");
		memcpy(a->ints, ap->ints, ap->n_ints * sizeof(*a->ints));
		a->n = ap->n_ints;
	} else if (type == HP_ATTR_FLOATS && ap->n_floats) {
		if (ap->n_floats > HP_MODEL_MAX_CONST_ELEMS)
			return hp_error_set(c->err, HP_ETOOBIG,
					    "node '%s': attribute '%s' has %zu "
					    "values",
					    n->name, ap->name, ap->n_floats);
		a->floats = malloc(ap->n_floats * sizeof(*a->floats));
		if (!a->floats)
			return hp_error_set(c->err, HP_ENOMEM, "out of memory");
		for (size_t i = 0; i < ap->n_floats; i++)
			a->floats[i] = ap->floats[i];
		a->n = ap->n_floats;
	} else if (type == HP_ATTR_TENSOR && ap->t) {
		/* Constant's value lands on its output; other ops' tensor
		 * attributes (ConstantOfShape's fill value) get a tensor of
		 * their own, named so that it cannot clash with the graph's. */
		struct hp_tensor *t;
		int ti, rc;

		if (strcmp(n->op, "Constant") == 0 && n->noutputs == 1 &&
		    n->outputs[0] >= 0) {
			ti = n->outputs[0];
		} else {
			char nm[96];
			snprintf(nm, sizeof(nm), "\x01attr%d:%.40s", node_idx,
				 ap->name);
			ti = hp_graph_tensor(c->g, nm);
			if (ti < 0)
				return hp_error_set(c->err, ti,
						    "too many tensors");
		}
		t = &c->g->tensors[ti];
		rc = load_tensor(c, t, ap->t, "constant");
		if (rc)
			return rc;
		a->tensor = ti;
	}
	(void)node_idx;
	return 0;
}

/*
 * auto_pad means the same on every default-domain op that has it (Conv,
 * ConvTranspose, the pools): one of four values.  Checked here, not only
 * where a window is computed, so that a node whose input shape is never
 * known is refused as well.
 */
static int check_auto_pad(struct ctx *c, const struct hp_node *n)
{
	const struct hp_attr *a = hp_node_attr(n, "auto_pad");

	if (!a || strstr(n->op, "::"))
		return 0;
	if (a->type != HP_ATTR_STRING || !a->s)
		return hp_error_set(c->err, HP_EPARSE,
				    "node '%s' (%s): auto_pad is not a string",
				    n->name, n->op);
	if (!hp__auto_pad_known(a->s))
		return hp_error_set(c->err, HP_EPARSE,
				    "node '%s' (%s): unknown auto_pad '%.40s' "
				    "(NOTSET, SAME_UPPER, SAME_LOWER or VALID)",
				    n->name, n->op, a->s);
	return 0;
}

/* Constant's value_int/value_ints/value_float forms. */
static int constant_scalar_forms(struct ctx *c, struct hp_node *n)
{
	struct hp_tensor *t;
	const struct hp_attr *a;

	if (strcmp(n->op, "Constant") != 0 || n->noutputs != 1 ||
	    n->outputs[0] < 0)
		return 0;
	t = &c->g->tensors[n->outputs[0]];
	if ((a = hp_node_attr(n, "value_int")) && a->type == HP_ATTR_INT) {
		t->dtype = HP_DT_INT64;
		t->rank = 0;
		return hp_tensor_set_ival(t, &a->i, 1);
	}
	if ((a = hp_node_attr(n, "value_ints")) && a->type == HP_ATTR_INTS) {
		t->dtype = HP_DT_INT64;
		t->rank = 1;
		t->dims[0] = (int64_t)a->n;
		return hp_tensor_set_ival(t, a->ints, (int64_t)a->n);
	}
	if ((a = hp_node_attr(n, "value_float")) && a->type == HP_ATTR_FLOAT) {
		t->dtype = HP_DT_FLOAT;
		t->rank = 0;
		return hp_tensor_set_fvals(t, &a->f, 1);
	}
	return 0;
}

/* Whether input k of an op is one of its weights (a Conv's or Gemm's
 * weight and bias, a norm's scale, shift and statistics, a MatMul's second
 * operand, PRelu's slope). */
static bool weight_slot(const char *op, int k)
{
	if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") ||
	    !strcmp(op, "Gemm") || !strcmp(op, "InstanceNormalization") ||
	    !strcmp(op, "LayerNormalization"))
		return k == 1 || k == 2;
	if (!strcmp(op, "BatchNormalization"))
		return k >= 1 && k <= 4;
	return (!strcmp(op, "MatMul") || !strcmp(op, "PRelu")) && k == 1;
}

/*
 * A model exported without its parameters (PyTorch's export_params=False)
 * has them as graph inputs with no initializer: an input after the first
 * that only ops' weight slots read is a stored weight whose values are not
 * in the file (as a stripped initializer), not data fed at run time.
 */
static int weights_as_inputs(struct hp_graph *g, struct hp_error *err)
{
	/* per tensor, bits: 1 read, 2 read other than as a weight */
	uint8_t *use = calloc((size_t)g->ntensors + 1, 1);
	int kept = 0;

	if (!use)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (int j = 0; j < g->nnodes; j++) {
		const struct hp_node *n = &g->nodes[j];
		for (int k = 0; k < n->ninputs; k++)
			if (n->inputs[k] >= 0)
				use[n->inputs[k]] |=
				    weight_slot(n->op, k) ? 1 : 3;
	}
	for (int i = 0; i < g->ninputs; i++) {
		struct hp_tensor *t = &g->tensors[g->inputs[i]];
		if (i > 0 && use[g->inputs[i]] == 1 && t->rank >= 1) {
			t->graph_input = false;
			t->initializer = true;
			t->batch_axis = -1;
			continue;
		}
		g->inputs[kept++] = g->inputs[i];
	}
	g->ninputs = kept;
	free(use);
	return 0;
}

static int load_graph(struct ctx *c, const Onnx__GraphProto *gp)
{
	struct hp_graph *g = c->g;
	int rc, *ins = NULL, *outs = NULL;

	if (gp->n_node > HP_MODEL_MAX_NODES)
		return hp_error_set(c->err, HP_ETOOBIG,
				    "graph has %zu nodes (at most %d)",
				    gp->n_node, HP_MODEL_MAX_NODES);
	if (gp->n_node == 0)
		return hp_error_set(c->err, HP_EPARSE,
				    "graph has no nodes: nothing to train");
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		int ti;

		if (!tp->name || !*tp->name)
			return hp_error_set(c->err, HP_EPARSE,
					    "initializer %zu has no name", i);
		ti = hp_graph_tensor(g, tp->name);
		if (ti < 0)
			return hp_error_set(c->err, ti, "too many tensors");
		if (g->tensors[ti].initializer)
			return hp_error_set(c->err, HP_EPARSE,
					    "initializer '%s' is defined twice",
					    tp->name);
		g->tensors[ti].initializer = true;
		rc = load_tensor(c, &g->tensors[ti], tp, "initializer");
		if (rc)
			return rc;
	}
	g->inputs = calloc(gp->n_input ? gp->n_input : 1, sizeof(int));
	g->outputs = calloc(gp->n_output ? gp->n_output : 1, sizeof(int));
	if (!g->inputs || !g->outputs)
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		int ti;

		if (!vi->name || !*vi->name)
			return hp_error_set(c->err, HP_EPARSE,
					    "graph input %zu has no name", i);
		ti = hp_graph_tensor(g, vi->name);
		if (ti < 0)
			return hp_error_set(c->err, ti, "too many tensors");
		if (g->tensors[ti].initializer)
			continue; /* old exporters list weights as inputs */
		if (g->tensors[ti].graph_input)
			return hp_error_set(c->err, HP_EPARSE,
					    "graph input '%s' is listed twice",
					    vi->name);
		g->tensors[ti].graph_input = true;
		rc = load_value_info(c, &g->tensors[ti], vi);
		if (rc)
			return rc;
		g->inputs[g->ninputs++] = ti;
	}
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		char fallback[32];
		const char *name = np->name;
		struct hp_node *n;
		int ni;

		if (!np->op_type || !*np->op_type)
			return hp_error_set(c->err, HP_EPARSE,
					    "node %zu has no op_type", i);
		if (!name || !*name) {
			snprintf(fallback, sizeof(fallback), "%s_%zu",
				 np->op_type, i);
			name = fallback;
		}
		ins = malloc((np->n_input ? np->n_input : 1) * sizeof(int));
		outs = malloc((np->n_output ? np->n_output : 1) * sizeof(int));
		if (!ins || !outs) {
			rc = hp_error_set(c->err, HP_ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t k = 0; k < np->n_input; k++) {
			if (!np->input[k] || !*np->input[k]) {
				ins[k] = -1;
				continue;
			}
			ins[k] = hp_graph_tensor(g, np->input[k]);
			if (ins[k] < 0) {
				rc = hp_error_set(c->err, ins[k],
						  "too many tensors");
				goto fail;
			}
		}
		for (size_t k = 0; k < np->n_output; k++) {
			struct hp_tensor *t;

			if (!np->output[k] || !*np->output[k]) {
				outs[k] = -1;
				continue;
			}
			outs[k] = hp_graph_tensor(g, np->output[k]);
			if (outs[k] < 0) {
				rc = hp_error_set(c->err, outs[k],
						  "too many tensors");
				goto fail;
			}
			t = &g->tensors[outs[k]];
			if (t->producer >= 0 || t->initializer ||
			    t->graph_input) {
				rc =
				    hp_error_set(c->err, HP_EPARSE,
						 "tensor '%s' is written by "
						 "node '%s' and also elsewhere",
						 t->name, name);
				goto fail;
			}
			t->producer = g->nnodes;
		}
		ni = hp_graph_add_node(g, name, np->op_type, ins,
				       (int)np->n_input, outs,
				       (int)np->n_output);
		free(ins);
		free(outs);
		ins = outs = NULL;
		if (ni < 0)
			return hp_error_set(c->err, ni, "cannot add node '%s'",
					    name);
		n = &g->nodes[ni];
		if (np->domain && *np->domain &&
		    strcmp(np->domain, "ai.onnx")) {
			/* Keep the domain visible: "com.microsoft::Foo". */
			size_t l = strlen(np->domain) + strlen(np->op_type) + 3;
			char *op = malloc(l);
			if (!op)
				return hp_error_set(c->err, HP_ENOMEM,
						    "out of memory");
			snprintf(op, l, "%s::%s", np->domain, np->op_type);
			free(n->op);
			n->op = op;
		}
		/* Ops have a few attributes; thousands would make the
		 * duplicate check below quadratic. */
		if (np->n_attribute > ONNX_MAX_ATTRS)
			return hp_error_set(c->err, HP_ETOOBIG,
					    "node '%s' has %zu attributes (at "
					    "most %d)",
					    name, np->n_attribute,
					    ONNX_MAX_ATTRS);
		for (size_t k = 0; k < np->n_attribute; k++) {
			rc = load_attr(c, n, ni, np->attribute[k]);
			if (rc)
				return rc;
		}
		rc = check_auto_pad(c, n);
		if (rc)
			return rc;
		rc = constant_scalar_forms(c, n);
		if (rc)
			return hp_error_set(c->err, rc,
					    "node '%s': bad constant", name);
	}
	/* Every tensor that is read must come from somewhere. */
	for (int i = 0; i < g->nnodes; i++) {
		const struct hp_node *n = &g->nodes[i];
		for (int k = 0; k < n->ninputs; k++) {
			const struct hp_tensor *t;
			if (n->inputs[k] < 0)
				continue;
			t = &g->tensors[n->inputs[k]];
			if (t->producer < 0 && !t->initializer &&
			    !t->graph_input)
				return hp_error_set(
				    c->err, HP_EPARSE,
				    "node '%s' (%s) reads '%s', which no "
				    "node, initializer or input provides",
				    n->name, n->op, t->name);
		}
	}
	if ((rc = weights_as_inputs(g, c->err)))
		return rc;
	for (size_t i = 0; i < gp->n_output; i++) {
		const char *nm = gp->output[i]->name;
		int ti = nm ? hp_graph_find_tensor(g, nm) : -1;
		if (ti < 0 || (g->tensors[ti].producer < 0 &&
			       !g->tensors[ti].initializer &&
			       !g->tensors[ti].graph_input))
			return hp_error_set(c->err, HP_EPARSE,
					    "graph output '%s' is not produced",
					    nm ? nm : "");
		g->outputs[g->noutputs++] = ti;
	}
	if (g->ninputs == 0)
		return hp_error_set(c->err, HP_EPARSE,
				    "graph has no inputs besides initializers");
	return 0;
fail:
	free(ins);
	free(outs);
	return rc;
}

/*
 * protobuf-c's unpacker recurses once per nested message with no limit, so
 * a small file of deeply nested subgraphs would exhaust the stack.  Walk
 * the wire format first: a length-delimited field that itself parses as a
 * message counts as one level deeper.  Work is bounded by MAX_DEPTH passes
 * over the bytes.
 */
#define ONNX_MAX_DEPTH 48

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Depth of the deepest message nested in [p, end), or -1 if the bytes are
 * not a well-formed message (then they are a string or bytes field). */
static int wire_depth(const uint8_t *p, const uint8_t *end, int depth)
{
	int deepest = depth;

	while (p < end) {
		uint64_t key, v;
		if (!varint(&p, end, &key) || (key >> 3) == 0)
			return -1;
		switch (key & 7) {
		case 0:
			if (!varint(&p, end, &v))
				return -1;
			break;
		case 1:
			if (end - p < 8)
				return -1;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return -1;
			p += 4;
			break;
		case 2: {
			int d;
			if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -1;
			if (depth + 1 > ONNX_MAX_DEPTH)
				return depth + 1;
			d = v ? wire_depth(p, p + v, depth + 1) : -1;
			if (d > deepest)
				deepest = d;
			if (deepest > ONNX_MAX_DEPTH)
				return deepest;
			p += v;
			break;
		}
		default:
			return -1;
		}
	}
	return deepest;
}

struct hp_graph *hp_onnx_parse(const void *data, size_t len,
			       struct hp_error *err)
{
	Onnx__ModelProto *m;
	struct ctx c;
	int rc;

	if (len == 0) {
		hp_error_set(err, HP_EPARSE, "empty file");
		return NULL;
	}
	if (wire_depth(data, (const uint8_t *)data + len, 0) > ONNX_MAX_DEPTH) {
		hp_error_set(err, HP_EPARSE,
			     "ONNX messages nested more than %d deep",
			     ONNX_MAX_DEPTH);
		return NULL;
	}
	m = onnx__model_proto__unpack(NULL, len, data);
	if (!m) {
		hp_error_set(err, HP_EPARSE,
			     "not a valid ONNX model (truncated or not "
			     "protobuf)");
		return NULL;
	}
	if (!m->graph) {
		onnx__model_proto__free_unpacked(m, NULL);
		hp_error_set(err, HP_EPARSE, "ONNX model has no graph");
		return NULL;
	}
	c.err = err;
	c.g = hp_graph_new(m->graph->name && *m->graph->name ? m->graph->name
							     : "model");
	if (!c.g) {
		onnx__model_proto__free_unpacked(m, NULL);
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[i];
		if (!o->domain || !*o->domain ||
		    strcmp(o->domain, "ai.onnx") == 0)
			c.g->opset = o->version;
	}
	rc = load_graph(&c, m->graph);
	onnx__model_proto__free_unpacked(m, NULL);
	if (rc) {
		hp_graph_free(c.g);
		return NULL;
	}
	return c.g;
}
