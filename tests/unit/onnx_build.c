/* onnx_build.c - see onnx_build.h. Test code: aborts on ENOMEM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx_build.h"

struct ob {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset;
	Onnx__OperatorSetIdProto *opsets[1];
	void **arena;
	size_t narena;
};

static void *keep(struct ob *b, void *p)
{
	if (!p)
		abort();
	b->arena = realloc(b->arena, (b->narena + 1) * sizeof(void *));
	if (!b->arena)
		abort();
	b->arena[b->narena++] = p;
	return p;
}

static void *zalloc(struct ob *b, size_t n)
{
	return keep(b, calloc(1, n));
}

static char *sdup(struct ob *b, const char *s)
{
	return keep(b, strdup(s));
}

#define PUSH(b, arr, n, item)                                                  \
	do {                                                                   \
		void *np_ = realloc((arr), ((n) + 1) * sizeof(*(arr)));        \
		if (!np_)                                                      \
			abort();                                               \
		(arr) = np_;                                                   \
		(arr)[(n)++] = (item);                                         \
	} while (0)

struct ob *ob_new(int64_t opset)
{
	struct ob *b = calloc(1, sizeof(*b));

	if (!b)
		abort();
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->opset);
	b->m.has_ir_version = 1;
	b->m.ir_version = 7;
	b->opset.domain = sdup(b, "");
	b->opset.has_version = 1;
	b->opset.version = opset;
	b->opsets[0] = &b->opset;
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opsets;
	b->g.name = sdup(b, "test");
	b->m.graph = &b->g;
	return b;
}

void ob_input(struct ob *b, const char *name, int rank, const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = zalloc(b, sizeof(*vi));
	Onnx__TypeProto *tp = zalloc(b, sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = zalloc(b, sizeof(*tt));
	Onnx__TensorShapeProto *sh = zalloc(b, sizeof(*sh));

	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	vi->name = sdup(b, name);
	vi->type = tp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	tt->has_elem_type = 1;
	tt->elem_type = 1;
	tt->shape = sh;
	sh->n_dim = (size_t)rank;
	sh->dim = zalloc(b, (size_t)(rank ? rank : 1) * sizeof(void *));
	for (int i = 0; i < rank; i++) {
		Onnx__TensorShapeProto__Dimension *d = zalloc(b, sizeof(*d));
		onnx__tensor_shape_proto__dimension__init(d);
		if (dims[i] >= 0) {
			d->value_case =
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = dims[i];
		} else {
			d->value_case =
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = sdup(b, "batch");
		}
		sh->dim[i] = d;
	}
	PUSH(b, b->g.input, b->g.n_input, vi);
}

static Onnx__TensorProto *tensor(struct ob *b, const char *name, int rank,
				 const int64_t *dims, int dtype)
{
	Onnx__TensorProto *t = zalloc(b, sizeof(*t));

	onnx__tensor_proto__init(t);
	t->name = sdup(b, name);
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = (size_t)rank;
	t->dims = zalloc(b, (size_t)(rank ? rank : 1) * sizeof(int64_t));
	memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
	return t;
}

void ob_init(struct ob *b, const char *name, int rank, const int64_t *dims)
{
	Onnx__TensorProto *t = tensor(b, name, rank, dims, 1);
	PUSH(b, b->g.initializer, b->g.n_initializer, t);
}

void ob_init_i64(struct ob *b, const char *name, int n, const int64_t *v)
{
	int64_t d = n;
	Onnx__TensorProto *t = tensor(b, name, 1, &d, 7);

	t->n_int64_data = (size_t)n;
	t->int64_data = zalloc(b, (size_t)(n ? n : 1) * sizeof(int64_t));
	memcpy(t->int64_data, v, (size_t)n * sizeof(int64_t));
	PUSH(b, b->g.initializer, b->g.n_initializer, t);
}

static void split_names(struct ob *b, const char *list, char ***out, size_t *n)
{
	const char *p = list;

	*out = NULL;
	*n = 0;
	if (!*list)
		return;
	for (;;) {
		size_t len = strcspn(p, ",");
		char *s = keep(b, strndup(p, len));
		PUSH(b, *out, *n, s);
		if (!p[len])
			break;
		p += len + 1;
	}
	keep(b, *out);
}

int ob_node(struct ob *b, const char *op, const char *inputs,
	    const char *outputs)
{
	Onnx__NodeProto *n = zalloc(b, sizeof(*n));
	char nm[64];

	onnx__node_proto__init(n);
	snprintf(nm, sizeof(nm), "n%zu_%s", b->g.n_node, op);
	n->name = sdup(b, nm);
	n->op_type = sdup(b, op);
	split_names(b, inputs, &n->input, &n->n_input);
	split_names(b, outputs, &n->output, &n->n_output);
	PUSH(b, b->g.node, b->g.n_node, n);
	return (int)b->g.n_node - 1;
}

static Onnx__AttributeProto *attr(struct ob *b, int node, const char *name,
				  Onnx__AttributeProto__AttributeType type)
{
	Onnx__NodeProto *n = b->g.node[node];
	Onnx__AttributeProto *a = zalloc(b, sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = sdup(b, name);
	a->has_type = 1;
	a->type = type;
	PUSH(b, n->attribute, n->n_attribute, a);
	return a;
}

void ob_attr_i(struct ob *b, int node, const char *name, int64_t v)
{
	Onnx__AttributeProto *a =
	    attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = 1;
	a->i = v;
}

void ob_attr_f(struct ob *b, int node, const char *name, float v)
{
	Onnx__AttributeProto *a =
	    attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = v;
}

void ob_attr_s(struct ob *b, int node, const char *name, const char *v)
{
	Onnx__AttributeProto *a =
	    attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.data = (uint8_t *)sdup(b, v);
	a->s.len = strlen(v);
}

void ob_attr_ints(struct ob *b, int node, const char *name, int n,
		  const int64_t *v)
{
	Onnx__AttributeProto *a =
	    attr(b, node, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	a->n_ints = (size_t)n;
	a->ints = zalloc(b, (size_t)(n ? n : 1) * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
}

void ob_const_i64(struct ob *b, const char *output, int n, const int64_t *v)
{
	int node = ob_node(b, "Constant", "", output);
	Onnx__AttributeProto *a = attr(
	    b, node, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	int64_t d = n < 0 ? 1 : n;

	/* n < 0: a scalar (rank 0) holding v[0]. */
	a->t = tensor(b, output, n < 0 ? 0 : 1, &d, 7);
	n = (int)d;
	a->t->n_int64_data = (size_t)n;
	a->t->int64_data = zalloc(b, (size_t)(n ? n : 1) * sizeof(int64_t));
	memcpy(a->t->int64_data, v, (size_t)n * sizeof(int64_t));
}

void ob_const_f32(struct ob *b, const char *output, float v)
{
	int node = ob_node(b, "Constant", "", output);
	Onnx__AttributeProto *a = attr(
	    b, node, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	int64_t d = 1;

	/* a scalar (rank 0) float */
	a->t = tensor(b, output, 0, &d, 1);
	a->t->n_float_data = 1;
	a->t->float_data = zalloc(b, sizeof(float));
	a->t->float_data[0] = v;
}

void ob_const_f32v(struct ob *b, const char *output, int n, float v)
{
	int node = ob_node(b, "Constant", "", output);
	Onnx__AttributeProto *a = attr(
	    b, node, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	int64_t d = n;

	a->t = tensor(b, output, 1, &d, 1);
	a->t->n_float_data = (size_t)n;
	a->t->float_data = zalloc(b, (size_t)n * sizeof(float));
	for (int i = 0; i < n; i++)
		a->t->float_data[i] = v;
}

int ob_conv(struct ob *b, const char *inputs, const char *output, int64_t k,
	    int64_t pad)
{
	int n = ob_node(b, "Conv", inputs, output);

	ob_attr_ints(b, n, "kernel_shape", 2, (int64_t[2]){k, k});
	if (pad)
		ob_attr_ints(b, n, "pads", 4, (int64_t[4]){pad, pad, pad, pad});
	return n;
}

void ob_classifier(struct ob *b, const char *in)
{
	int n;

	ob_node(b, "GlobalAveragePool", in, "gp");
	n = ob_node(b, "Flatten", "gp", "fl");
	ob_attr_i(b, n, "axis", 1);
	n = ob_node(b, "Gemm", "fl,fw,fb", "y");
	ob_attr_i(b, n, "transB", 1);
	ob_output(b, "y");
}

void ob_output(struct ob *b, const char *name)
{
	Onnx__ValueInfoProto *vi = zalloc(b, sizeof(*vi));

	onnx__value_info_proto__init(vi);
	vi->name = sdup(b, name);
	PUSH(b, b->g.output, b->g.n_output, vi);
}

uint8_t *ob_finish(struct ob *b, size_t *len)
{
	size_t n = onnx__model_proto__get_packed_size(&b->m);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		abort();
	*len = onnx__model_proto__pack(&b->m, buf);
	/* Arrays grown with PUSH are owned here too. */
	free(b->g.input);
	free(b->g.output);
	free(b->g.initializer);
	for (size_t i = 0; i < b->g.n_node; i++)
		free(b->g.node[i]->attribute);
	free(b->g.node);
	for (size_t i = 0; i < b->narena; i++)
		free(b->arena[i]);
	free(b->arena);
	free(b);
	return buf;
}
