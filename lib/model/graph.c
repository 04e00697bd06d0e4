/* graph.c - the graph type both importers produce: tensors, nodes, attrs. */
#include <stdlib.h>
#include <string.h>

#include "hetpool/model.h"
#include "util/banned.h"

int hp_dtype_size(int dtype)
{
	switch (dtype) {
	case HP_DT_FLOAT:
	case HP_DT_INT32:
	case HP_DT_UINT32:
		return 4;
	case HP_DT_UINT8:
	case HP_DT_INT8:
	case HP_DT_BOOL:
		return 1;
	case HP_DT_UINT16:
	case HP_DT_INT16:
	case HP_DT_FLOAT16:
	case HP_DT_BFLOAT16:
		return 2;
	case HP_DT_INT64:
	case HP_DT_DOUBLE:
	case HP_DT_UINT64:
		return 8;
	default:
		return 0;
	}
}

struct hp_graph *hp_graph_new(const char *name)
{
	struct hp_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->name = hp_strdup(name ? name : "model");
	if (!g->name) {
		free(g);
		return NULL;
	}
	return g;
}

static void attr_release(struct hp_attr *a)
{
	free(a->name);
	free(a->s);
	free(a->ints);
	free(a->floats);
}

void hp_graph_free(struct hp_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->ntensors; i++) {
		free(g->tensors[i].name);
		free(g->tensors[i].ival);
		free(g->tensors[i].fvals);
	}
	for (int i = 0; i < g->nnodes; i++) {
		struct hp_node *n = &g->nodes[i];
		free(n->name);
		free(n->op);
		free(n->inputs);
		free(n->outputs);
		for (int k = 0; k < n->nattrs; k++)
			attr_release(&n->attrs[k]);
		free(n->attrs);
	}
	free(g->tensors);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g->name_index);
	free(g->source);
	free(g->name);
	free(g);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int index_insert(int *idx, int cap, const struct hp_tensor *t, int i)
{
	uint64_t h = hash_str(t[i].name);

	for (int k = 0; k < cap; k++) {
		int slot = (int)((h + (uint64_t)k) & (uint64_t)(cap - 1));
		if (idx[slot] < 0) {
			idx[slot] = i;
			return 0;
		}
	}
	return HP_EINTERNAL;
}

static int index_grow(struct hp_graph *g)
{
	int cap = g->name_index_cap ? g->name_index_cap * 2 : 256;
	int *idx = malloc((size_t)cap * sizeof(*idx));

	if (!idx)
		return HP_ENOMEM;
	for (int i = 0; i < cap; i++)
		idx[i] = -1;
	for (int i = 0; i < g->ntensors; i++)
		index_insert(idx, cap, g->tensors, i);
	free(g->name_index);
	g->name_index = idx;
	g->name_index_cap = cap;
	return 0;
}

int hp_graph_find_tensor(const struct hp_graph *g, const char *name)
{
	uint64_t h;

	if (!g->name_index_cap)
		return -1;
	h = hash_str(name);
	for (int k = 0; k < g->name_index_cap; k++) {
		int slot = (int)((h + (uint64_t)k) &
				 (uint64_t)(g->name_index_cap - 1));
		int i = g->name_index[slot];
		if (i < 0)
			return -1;
		if (strcmp(g->tensors[i].name, name) == 0)
			return i;
	}
	return -1;
}

int hp_graph_tensor(struct hp_graph *g, const char *name)
{
	struct hp_tensor *t;
	int i = hp_graph_find_tensor(g, name);

	if (i >= 0)
		return i;
	if (g->ntensors >= HP_MODEL_MAX_NODES * 4)
		return HP_ETOOBIG;
	if ((g->ntensors + 1) * 2 > g->name_index_cap) {
		int rc = index_grow(g);
		if (rc)
			return rc;
	}
	if (g->ntensors == g->atensors) {
		int na = g->atensors ? g->atensors * 2 : 64;
		t = realloc(g->tensors, (size_t)na * sizeof(*t));
		if (!t)
			return HP_ENOMEM;
		g->tensors = t;
		g->atensors = na;
	}
	t = &g->tensors[g->ntensors];
	memset(t, 0, sizeof(*t));
	t->name = hp_strdup(name);
	if (!t->name)
		return HP_ENOMEM;
	t->rank = -1;
	t->batch_axis = -1;
	t->producer = -1;
	t->nival = -1;
	t->nfvals = -1;
	index_insert(g->name_index, g->name_index_cap, g->tensors, g->ntensors);
	return g->ntensors++;
}

int hp_graph_add_node(struct hp_graph *g, const char *name, const char *op,
		      const int *inputs, int ninputs, const int *outputs,
		      int noutputs)
{
	struct hp_node *n;

	if (g->nnodes >= HP_MODEL_MAX_NODES)
		return HP_ETOOBIG;
	if (g->nnodes == g->anodes) {
		int na = g->anodes ? g->anodes * 2 : 64;
		n = realloc(g->nodes, (size_t)na * sizeof(*n));
		if (!n)
			return HP_ENOMEM;
		g->nodes = n;
		g->anodes = na;
	}
	n = &g->nodes[g->nnodes];
	memset(n, 0, sizeof(*n));
	n->name = hp_strdup(name ? name : "");
	n->op = hp_strdup(op ? op : "");
	n->inputs = malloc((size_t)(ninputs ? ninputs : 1) * sizeof(int));
	n->outputs = malloc((size_t)(noutputs ? noutputs : 1) * sizeof(int));
	if (!n->name || !n->op || !n->inputs || !n->outputs) {
		free(n->name);
		free(n->op);
		free(n->inputs);
		free(n->outputs);
		return HP_ENOMEM;
	}
	if (ninputs)
		memcpy(n->inputs, inputs, (size_t)ninputs * sizeof(int));
	if (noutputs)
		memcpy(n->outputs, outputs, (size_t)noutputs * sizeof(int));
	n->ninputs = ninputs;
	n->noutputs = noutputs;
	return g->nnodes++;
}

struct hp_attr *hp_node_add_attr(struct hp_node *n, const char *name, int type)
{
	struct hp_attr *a =
	    realloc(n->attrs, (size_t)(n->nattrs + 1) * sizeof(*a));

	if (!a)
		return NULL;
	n->attrs = a;
	a = &n->attrs[n->nattrs];
	memset(a, 0, sizeof(*a));
	a->name = hp_strdup(name);
	if (!a->name)
		return NULL;
	a->type = type;
	a->tensor = -1;
	n->nattrs++;
	return a;
}

const struct hp_attr *hp_node_attr(const struct hp_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

int64_t hp_node_attr_i(const struct hp_node *n, const char *name, int64_t def)
{
	const struct hp_attr *a = hp_node_attr(n, name);
	return a && a->type == HP_ATTR_INT ? a->i : def;
}

double hp_node_attr_f(const struct hp_node *n, const char *name, double def)
{
	const struct hp_attr *a = hp_node_attr(n, name);
	return a && a->type == HP_ATTR_FLOAT ? a->f : def;
}

const char *hp_node_attr_s(const struct hp_node *n, const char *name,
			   const char *def)
{
	const struct hp_attr *a = hp_node_attr(n, name);
	return a && a->type == HP_ATTR_STRING && a->s ? a->s : def;
}

int hp_tensor_set_ival(struct hp_tensor *t, const int64_t *v, int64_t n)
{
	int64_t *p;

	if (n < 0 || n > HP_MODEL_MAX_CONST_ELEMS)
		return HP_ETOOBIG;
	p = malloc((size_t)(n ? n : 1) * sizeof(*p));
	if (!p)
		return HP_ENOMEM;
	if (n)
		memcpy(p, v, (size_t)n * sizeof(*p));
	free(t->ival);
	t->ival = p;
	t->nival = n;
	return 0;
}

int hp_tensor_set_fvals(struct hp_tensor *t, const double *v, int64_t n)
{
	double *p;

	if (n < 0 || n > HP_MODEL_MAX_CONST_ELEMS)
		return HP_ETOOBIG;
	p = malloc((size_t)(n ? n : 1) * sizeof(*p));
	if (!p)
		return HP_ENOMEM;
	if (n)
		memcpy(p, v, (size_t)n * sizeof(*p));
	free(t->fvals);
	t->fvals = p;
	t->nfvals = n;
	return 0;
}

int64_t hp_tensor_numel(const struct hp_tensor *t)
{
	return t ? hp_dims_numel(t->dims, t->rank) : -1;
}
