/*
 * shape.c - shape propagation over a graph, op by op, without value_info.
 *
 * Every tensor gets a rank and dims at the chosen batch size.  Small
 * integer tensors (shape vectors) also get their values, so the
 * Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains that exporters
 * emit fold to constants.  The ops it knows are one table, ops[] below,
 * which also gives the kind features.c counts each as.  An op that is not
 * known is skipped with a warning: its first output takes its first
 * input's shape so the rest of the graph can still be counted.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/banned.h"

#define MAXC HP_MODEL_MAX_CONST_ELEMS

struct shp {
	int rank;
	int64_t d[HP_MAX_RANK];
};

static struct hp_tensor *in(struct hp_graph *g, const struct hp_node *n, int k)
{
	if (k < 0 || k >= n->ninputs || n->inputs[k] < 0)
		return NULL;
	return &g->tensors[n->inputs[k]];
}

static struct hp_tensor *out(struct hp_graph *g, const struct hp_node *n, int k)
{
	if (k < 0 || k >= n->noutputs || n->outputs[k] < 0)
		return NULL;
	return &g->tensors[n->outputs[k]];
}

static bool known(const struct hp_tensor *t)
{
	if (!t || t->rank < 0)
		return false;
	for (int i = 0; i < t->rank; i++)
		if (t->dims[i] < 0)
			return false;
	return true;
}

/* Integer element types (values of these are folded; bool is apart). */
static bool int_dtype(int dtype)
{
	switch (dtype) {
	case HP_DT_UINT8:
	case HP_DT_INT8:
	case HP_DT_UINT16:
	case HP_DT_INT16:
	case HP_DT_INT32:
	case HP_DT_INT64:
	case HP_DT_UINT32:
	case HP_DT_UINT64:
		return true;
	default:
		return false;
	}
}

static bool has_val(const struct hp_tensor *t)
{
	return t && t->nival >= 0;
}

static int bad(struct hp_error *err, const struct hp_node *n, const char *what)
{
	return hp_error_set(err, HP_ESHAPE, "node '%s' (%s): %s", n->name,
			    n->op, what);
}

/* Set output k's shape; checks dims and element count. */
static int set_shape(struct hp_graph *g, struct hp_node *n, int k, int dtype,
		     int rank, const int64_t *d, struct hp_error *err)
{
	struct hp_tensor *t = out(g, n, k);
	int64_t e = 1;

	if (!t)
		return 0;
	if (rank < 0 || rank > HP_MAX_RANK)
		return bad(err, n, "output rank out of range");
	for (int i = 0; i < rank; i++) {
		if (d[i] < 0 || d[i] > HP_MODEL_MAX_DIM)
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (%s): output dimension "
					    "%d is %lld",
					    n->name, n->op, i, (long long)d[i]);
		if (!hp_mul_i64(e, d[i], &e) || e > HP_MODEL_MAX_ELEMS)
			return bad(err, n, "output has too many elements");
	}
	t->rank = rank;
	if (rank)
		memcpy(t->dims, d, (size_t)rank * sizeof(*d));
	if (dtype)
		t->dtype = dtype;
	return 0;
}

static int set_like(struct hp_graph *g, struct hp_node *n, int k,
		    const struct hp_tensor *src, struct hp_error *err)
{
	return set_shape(g, n, k, src->dtype, src->rank, src->dims, err);
}

static int set_val(struct hp_graph *g, struct hp_node *n, int k,
		   const int64_t *v, int64_t nv, struct hp_error *err)
{
	struct hp_tensor *t = out(g, n, k);
	int rc;

	if (!t)
		return 0;
	if (nv > MAXC) { /* too large to keep: forget any older value */
		free(t->ival);
		t->ival = NULL;
		t->nival = -1;
		return 0;
	}
	rc = hp_tensor_set_ival(t, v, nv);
	return rc ? hp_error_set(err, rc, "out of memory") : 0;
}

/* Normalise an axis in [-rank, rank) to [0, rank). */
static int axis_of(int64_t a, int rank, int *out_axis)
{
	if (a < -rank || a >= rank)
		return -1;
	*out_axis = (int)(a < 0 ? a + rank : a);
	return 0;
}

/* Ints from attribute name, or from input k when present (newer opsets),
 * into v (room for cap values). */
static int ints_arg(struct hp_graph *g, const struct hp_node *n,
		    const char *attr, int k, int64_t *v, int64_t cap,
		    int64_t *nv)
{
	const struct hp_attr *a = hp_node_attr(n, attr);
	const struct hp_tensor *t = in(g, n, k);

	if (k >= 0 && t) {
		if (!has_val(t) || t->nival > cap)
			return -1;
		*nv = t->nival;
		memcpy(v, t->ival, (size_t)t->nival * sizeof(*v));
		return 1;
	}
	if (a && a->type == HP_ATTR_INTS) {
		if ((int64_t)a->n > cap)
			return -1;
		*nv = (int64_t)a->n;
		if (a->n)
			memcpy(v, a->ints, a->n * sizeof(*v));
		return 1;
	}
	*nv = 0;
	return 0;
}

static int broadcast(const struct hp_tensor *a, const struct hp_tensor *b,
		     struct shp *o)
{
	int r = a->rank > b->rank ? a->rank : b->rank;

	o->rank = r;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;
		if (da == db || db == 1)
			o->d[i] = da;
		else if (da == 1)
			o->d[i] = db;
		else
			return -1;
	}
	return 0;
}

static int64_t ival_at(const struct hp_tensor *t, const struct shp *o,
		       int64_t flat)
{
	/* Broadcast index of flat (in o) into t. */
	int64_t idx = 0, stride = 1, rem = flat;
	int64_t coord[HP_MAX_RANK];

	for (int i = o->rank - 1; i >= 0; i--) {
		coord[i] = o->d[i] ? rem % o->d[i] : 0;
		rem = o->d[i] ? rem / o->d[i] : 0;
	}
	for (int i = t->rank - 1; i >= 0; i--) {
		int oi = i + (o->rank - t->rank);
		int64_t c = t->dims[i] == 1 ? 0 : coord[oi];
		idx += c * stride;
		stride *= t->dims[i];
	}
	return idx < t->nival ? t->ival[idx] : 0;
}

static int64_t numel_of(const struct shp *s)
{
	return hp_dims_numel(s->d, s->rank);
}

/*
 * x / y (Div) or x mod y (Mod) of integers as ONNX defines them: Div
 * truncates; Mod takes the divisor's sign, or the dividend's (C's %) with
 * fmod=1.  A zero divisor, or INT64_MIN / -1, traps at run time: the file
 * is wrong, and folding it to some number would hide that.
 */
static int int_divide(const struct hp_node *n, int64_t x, int64_t y, int64_t *r,
		      struct hp_error *err)
{
	bool mod = !strcmp(n->op, "Mod");

	if (y == 0)
		return bad(err, n, "integer division by zero");
	if (x == INT64_MIN && y == -1) {
		if (!mod)
			return bad(err, n, "integer division overflows");
		*r = 0;
		return 0;
	}
	if (!mod) {
		*r = x / y;
		return 0;
	}
	*r = x % y;
	if (hp_node_attr_i(n, "fmod", 0) == 0 && *r != 0 && (*r < 0) != (y < 0))
		*r += y;
	return 0;
}

/* Elementwise ops with numpy broadcasting, folding integer values. */
static int op_elementwise(struct hp_graph *g, struct hp_node *n,
			  struct hp_error *err)
{
	struct hp_tensor *a = NULL;
	struct shp o = {0};
	bool first = true, fold = true;
	int dtype = 0;
	bool cmp = false;
	const char *op = n->op;
	int arity, rc;

	for (int k = 0; k < n->ninputs; k++) {
		struct hp_tensor *t = in(g, n, k);
		struct hp_tensor tmp;

		if (!t)
			continue;
		if (!known(t))
			return 1 + 1; /* input shape unknown */
		if (strcmp(op, "Where") != 0 || k > 0) {
			if (!dtype)
				dtype = t->dtype;
		}
		/* Fold only values that cover the tensor, so that no
		 * operand reads as a 0 it does not hold. */
		if (!has_val(t) || t->nival != hp_tensor_numel(t))
			fold = false;
		if (first) {
			o.rank = t->rank;
			memcpy(o.d, t->dims, sizeof(o.d));
			first = false;
			a = t;
			continue;
		}
		memset(&tmp, 0, sizeof(tmp));
		tmp.rank = o.rank;
		memcpy(tmp.dims, o.d, sizeof(o.d));
		if (broadcast(&tmp, t, &o))
			return bad(err, n, "input shapes do not broadcast");
	}
	if (first)
		return bad(err, n, "no inputs");
	(void)a;
	if (!strcmp(op, "Equal") || !strcmp(op, "Less") ||
	    !strcmp(op, "Greater") || !strcmp(op, "LessOrEqual") ||
	    !strcmp(op, "GreaterOrEqual") || !strcmp(op, "And") ||
	    !strcmp(op, "Or") || !strcmp(op, "Xor") || !strcmp(op, "Not"))
		cmp = true;
	rc = set_shape(g, n, 0, cmp ? HP_DT_BOOL : dtype, o.rank, o.d, err);
	if (rc)
		return rc;
	/* A known integer divisor with a 0 in it traps whatever it
	 * divides. */
	if ((!strcmp(op, "Div") || !strcmp(op, "Mod")) && numel_of(&o) > 0) {
		const struct hp_tensor *d = in(g, n, 1);
		bool ints = d && has_val(d) && int_dtype(d->dtype);
		for (int64_t i = 0; ints && i < d->nival; i++)
			if (d->ival[i] == 0)
				return bad(err, n, "integer division by zero");
	}
	/* Fold only with exactly the operands the op reads, all present:
	 * one for Neg and Not, three for Where, two for the rest. */
	arity = !strcmp(op, "Neg") || !strcmp(op, "Not") ? 1
		: !strcmp(op, "Where")			 ? 3
							 : 2;
	if (n->ninputs != arity)
		fold = false;
	for (int k = 0; k < arity && fold; k++)
		if (!in(g, n, k))
			fold = false;
	if (fold) {
		int64_t ne = numel_of(&o), v[MAXC];
		if (ne < 0 || ne > MAXC)
			return 0;
		for (int64_t i = 0; i < ne; i++) {
			int64_t x = ival_at(in(g, n, 0), &o, i);
			int64_t y = arity > 1 ? ival_at(in(g, n, 1), &o, i) : 0;
			int64_t r = 0;
			if (!strcmp(op, "Add"))
				r = (int64_t)((uint64_t)x + (uint64_t)y);
			else if (!strcmp(op, "Sub"))
				r = (int64_t)((uint64_t)x - (uint64_t)y);
			else if (!strcmp(op, "Mul"))
				r = (int64_t)((uint64_t)x * (uint64_t)y);
			else if (!strcmp(op, "Div") || !strcmp(op, "Mod")) {
				rc = int_divide(n, x, y, &r, err);
				if (rc)
					return rc;
			} else if (!strcmp(op, "Equal"))
				r = x == y;
			else if (!strcmp(op, "Less"))
				r = x < y;
			else if (!strcmp(op, "Greater"))
				r = x > y;
			else if (!strcmp(op, "Max"))
				r = x > y ? x : y;
			else if (!strcmp(op, "Min"))
				r = x < y ? x : y;
			else if (!strcmp(op, "Neg"))
				r = (int64_t)(0 - (uint64_t)x);
			else if (!strcmp(op, "Not"))
				r = !x;
			else if (!strcmp(op, "Where")) {
				int64_t z = ival_at(in(g, n, 2), &o, i);
				r = x ? y : z;
			} else
				return 0; /* shape only */
			v[i] = r;
		}
		return set_val(g, n, 0, v, ne, err);
	}
	return 0;
}

static int op_unary(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int rc;

	if (!known(x))
		return 2;
	rc = set_like(g, n, 0, x, err);
	if (rc)
		return rc;
	/* Dropout's mask, BatchNorm's extra outputs are handled elsewhere. */
	if (!strcmp(n->op, "Identity") && has_val(x))
		return set_val(g, n, 0, x->ival, x->nival, err);
	return 0;
}

static int op_cast(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int to = (int)hp_node_attr_i(n, "to", x ? x->dtype : 0);
	int rc;

	if (!known(x))
		return 2;
	rc = set_shape(g, n, 0, to, x->rank, x->dims, err);
	if (rc)
		return rc;
	if (has_val(x) && to == HP_DT_FLOAT && x->nival <= 64) {
		double v[64];
		struct hp_tensor *o = out(g, n, 0);
		for (int64_t i = 0; i < x->nival; i++)
			v[i] = (double)x->ival[i];
		if (o && hp_tensor_set_fvals(o, v, x->nival))
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		return 0;
	}
	if (has_val(x) && to == HP_DT_BOOL) {
		int64_t v[MAXC];
		for (int64_t i = 0; i < x->nival; i++)
			v[i] = x->ival[i] != 0;
		return set_val(g, n, 0, v, x->nival, err);
	}
	if (has_val(x) && int_dtype(to))
		return set_val(g, n, 0, x->ival, x->nival, err);
	if (x->nfvals >= 0 && x->nfvals <= 64 &&
	    (to == HP_DT_INT64 || to == HP_DT_INT32)) {
		int64_t v[64];
		for (int64_t i = 0; i < x->nfvals; i++) {
			double f = x->fvals[i];
			if (!(f > -9e18 && f < 9e18))
				return 0;
			v[i] = (int64_t)f;
		}
		return set_val(g, n, 0, v, x->nfvals, err);
	}
	return 0;
}

int hp__window_out(int64_t in_sz, int64_t k, int64_t s, int64_t dil,
		   int64_t *pb, int64_t *pe, const char *auto_pad,
		   bool ceil_mode, int64_t *out_sz)
{
	int64_t ek, o;

	/* Inputs are at most 2^40 each: only the dilated kernel can
	 * overflow, and one past 2^42 is larger than any padded input. */
	if (!hp_mul_i64(k - 1, dil, &ek) || ek > ((int64_t)1 << 42))
		return -1;
	ek += 1;
	if (!strcmp(auto_pad, "SAME_UPPER") ||
	    !strcmp(auto_pad, "SAME_LOWER")) {
		int64_t total;
		o = (in_sz + s - 1) / s;
		total = (o - 1) * s + ek - in_sz;
		if (total < 0)
			total = 0;
		if (!strcmp(auto_pad, "SAME_UPPER")) {
			*pb = total / 2;
			*pe = total - *pb;
		} else {
			*pe = total / 2;
			*pb = total - *pe;
		}
	} else if (!strcmp(auto_pad, "VALID")) {
		*pb = *pe = 0;
		if (in_sz < ek)
			return -1;
		o = (in_sz - ek) / s + 1;
	} else {
		int64_t span = in_sz + *pb + *pe - ek;
		if (span < 0)
			return -1;
		o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
		/* The last window must start inside the input or left pad. */
		if (ceil_mode && (o - 1) * s >= in_sz + *pb)
			o--;
	}
	if (o < 1)
		return -1;
	*out_sz = o;
	return 0;
}

bool hp__auto_pad_known(const char *s)
{
	return !strcmp(s, "NOTSET") || !strcmp(s, "SAME_UPPER") ||
	       !strcmp(s, "SAME_LOWER") || !strcmp(s, "VALID");
}

/* Common window attributes for Conv/ConvTranspose/pools. */
struct win {
	int nsp;
	int64_t k[HP_MAX_RANK], s[HP_MAX_RANK], d[HP_MAX_RANK];
	int64_t pads[2 * HP_MAX_RANK];
	const char *auto_pad;
};

static int read_window(const struct hp_node *n, int nsp, const int64_t *kdef,
		       struct win *w, struct hp_error *err)
{
	const struct hp_attr *a;

	w->nsp = nsp;
	w->auto_pad = hp_node_attr_s(n, "auto_pad", "NOTSET");
	if (!hp__auto_pad_known(w->auto_pad))
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (%s): unknown auto_pad '%.40s' "
				    "(NOTSET, SAME_UPPER, SAME_LOWER or VALID)",
				    n->name, n->op, w->auto_pad);
	for (int i = 0; i < nsp; i++) {
		w->k[i] = kdef ? kdef[i] : -1;
		w->s[i] = 1;
		w->d[i] = 1;
		w->pads[i] = w->pads[i + nsp] = 0;
	}
	if ((a = hp_node_attr(n, "kernel_shape")) && a->type == HP_ATTR_INTS) {
		if ((int)a->n != nsp)
			return bad(err, n,
				   "kernel_shape does not match input rank");
		memcpy(w->k, a->ints, a->n * sizeof(int64_t));
	}
	if ((a = hp_node_attr(n, "strides")) && a->type == HP_ATTR_INTS) {
		if ((int)a->n != nsp)
			return bad(err, n, "strides do not match input rank");
		memcpy(w->s, a->ints, a->n * sizeof(int64_t));
	}
	if ((a = hp_node_attr(n, "dilations")) && a->type == HP_ATTR_INTS) {
		if ((int)a->n != nsp)
			return bad(err, n, "dilations do not match input rank");
		memcpy(w->d, a->ints, a->n * sizeof(int64_t));
	}
	if ((a = hp_node_attr(n, "pads")) && a->type == HP_ATTR_INTS) {
		if ((int)a->n != 2 * nsp)
			return bad(err, n, "pads do not match input rank");
		memcpy(w->pads, a->ints, a->n * sizeof(int64_t));
	}
	for (int i = 0; i < nsp; i++) {
		if (w->k[i] < 1 || w->k[i] > HP_MODEL_MAX_DIM)
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (%s): kernel size %lld",
					    n->name, n->op, (long long)w->k[i]);
		if (w->s[i] < 1 || w->s[i] > HP_MODEL_MAX_DIM)
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (%s): stride %lld",
					    n->name, n->op, (long long)w->s[i]);
		if (w->d[i] < 1 || w->d[i] > HP_MODEL_MAX_DIM)
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (%s): dilation %lld",
					    n->name, n->op, (long long)w->d[i]);
		if (w->pads[i] < 0 || w->pads[i + nsp] < 0 ||
		    w->pads[i] > HP_MODEL_MAX_DIM ||
		    w->pads[i + nsp] > HP_MODEL_MAX_DIM)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "node '%s' (%s): negative or huge "
			    "pad %lld",
			    n->name, n->op,
			    (long long)(w->pads[i] < 0 ? w->pads[i]
						       : w->pads[i + nsp]));
	}
	return 0;
}

static int op_conv(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	bool transpose = !strcmp(n->op, "ConvTranspose");
	struct hp_tensor *x = in(g, n, 0), *w = in(g, n, 1);
	int64_t group = hp_node_attr_i(n, "group", 1);
	struct win win;
	int64_t o[HP_MAX_RANK];
	int nsp, rc;

	if (!w)
		return bad(err, n, "missing weight input");
	if (!known(x) || !known(w))
		return 2;
	if (x->rank < 3 || w->rank != x->rank)
		return bad(err, n, "input and weight ranks do not match");
	if (group < 1 || group > x->dims[1])
		return bad(err, n, "bad group count");
	nsp = x->rank - 2;
	rc = read_window(n, nsp, w->dims + 2, &win, err);
	if (rc)
		return rc;
	for (int i = 0; i < nsp; i++)
		if (win.k[i] != w->dims[2 + i])
			return bad(err, n,
				   "kernel_shape does not match weight");
	o[0] = x->dims[0];
	if (!transpose) {
		int64_t cin;
		if (!hp_mul_i64(w->dims[1], group, &cin) || cin != x->dims[1] ||
		    w->dims[0] % group)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "node '%s' (Conv): input has %lld channels but "
			    "weight expects %lld x %lld groups",
			    n->name, (long long)x->dims[1],
			    (long long)w->dims[1], (long long)group);
		o[1] = w->dims[0];
		for (int i = 0; i < nsp; i++) {
			if (hp__window_out(x->dims[2 + i], win.k[i], win.s[i],
					   win.d[i], &win.pads[i],
					   &win.pads[i + nsp], win.auto_pad,
					   false, &o[2 + i]))
				return hp_error_set(
				    err, HP_ESHAPE,
				    "node '%s' (Conv): kernel %lld larger "
				    "than padded input %lld",
				    n->name, (long long)win.k[i],
				    (long long)x->dims[2 + i]);
		}
	} else {
		const struct hp_attr *os = hp_node_attr(n, "output_shape");
		const struct hp_attr *op = hp_node_attr(n, "output_padding");
		if (w->dims[0] != x->dims[1])
			return bad(err, n,
				   "input channels do not match weight");
		if (!hp_mul_i64(w->dims[1], group, &o[1]))
			return bad(err, n, "output channels overflow");
		for (int i = 0; i < nsp; i++) {
			int64_t opad =
			    op && op->type == HP_ATTR_INTS && (int)op->n == nsp
				? op->ints[i]
				: 0;
			int64_t ek = 0, v = 0;
			bool ok = opad >= 0 && opad <= HP_MODEL_MAX_DIM &&
				  hp_mul_i64(win.k[i] - 1, win.d[i], &ek);
			if (os && os->type == HP_ATTR_INTS &&
			    (int)os->n >= nsp) {
				v = os->ints[os->n - (size_t)nsp + (size_t)i];
			} else if (!strcmp(win.auto_pad, "SAME_UPPER") ||
				   !strcmp(win.auto_pad, "SAME_LOWER")) {
				ok = ok &&
				     hp_mul_i64(x->dims[2 + i], win.s[i], &v);
			} else {
				/* s * (in - 1) + opad + ek + 1 - pads */
				ok = ok &&
				     hp_mul_i64(win.s[i], x->dims[2 + i] - 1,
						&v) &&
				     hp_add_i64(v, opad + ek + 1, &v);
				v = ok ? v - win.pads[i] - win.pads[i + nsp]
				       : 0;
			}
			if (!ok)
				return bad(err, n, "output size overflows");
			if (v < 1)
				return bad(err, n, "output shrinks to nothing");
			o[2 + i] = v;
		}
	}
	return set_shape(g, n, 0, x->dtype, x->rank, o, err);
}

static int op_pool(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	bool global = !strncmp(n->op, "Global", 6);
	struct hp_tensor *x = in(g, n, 0);
	int64_t o[HP_MAX_RANK];
	struct win win;
	int nsp, rc;

	if (!known(x))
		return 2;
	if (x->rank < 3)
		return bad(err, n, "input must have rank 3 or more");
	nsp = x->rank - 2;
	o[0] = x->dims[0];
	o[1] = x->dims[1];
	if (global) {
		for (int i = 0; i < nsp; i++)
			o[2 + i] = 1;
	} else {
		const struct hp_attr *ks = hp_node_attr(n, "kernel_shape");
		bool ceil_mode = hp_node_attr_i(n, "ceil_mode", 0) != 0;
		if (!ks)
			return bad(err, n, "missing kernel_shape");
		rc = read_window(n, nsp, NULL, &win, err);
		if (rc)
			return rc;
		for (int i = 0; i < nsp; i++)
			if (hp__window_out(x->dims[2 + i], win.k[i], win.s[i],
					   win.d[i], &win.pads[i],
					   &win.pads[i + nsp], win.auto_pad,
					   ceil_mode, &o[2 + i]))
				return hp_error_set(
				    err, HP_ESHAPE,
				    "node '%s' (%s): window %lld larger "
				    "than input %lld",
				    n->name, n->op, (long long)win.k[i],
				    (long long)x->dims[2 + i]);
	}
	rc = set_shape(g, n, 0, x->dtype, x->rank, o, err);
	if (rc)
		return rc;
	return set_shape(g, n, 1, HP_DT_INT64, x->rank, o, err); /* indices */
}

static int op_gemm(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *a = in(g, n, 0), *b = in(g, n, 1);
	bool ta = hp_node_attr_i(n, "transA", 0),
	     tb = hp_node_attr_i(n, "transB", 0);
	int64_t o[2], ka, kb;

	if (!b)
		return bad(err, n, "missing input B");
	if (!known(a) || !known(b))
		return 2;
	if (a->rank != 2 || b->rank != 2)
		return bad(err, n, "inputs must be matrices");
	o[0] = ta ? a->dims[1] : a->dims[0];
	ka = ta ? a->dims[0] : a->dims[1];
	kb = tb ? b->dims[1] : b->dims[0];
	o[1] = tb ? b->dims[0] : b->dims[1];
	if (ka != kb)
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (Gemm): inner dimensions %lld "
				    "and %lld differ",
				    n->name, (long long)ka, (long long)kb);
	return set_shape(g, n, 0, a->dtype, 2, o, err);
}

static int op_matmul(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err)
{
	struct hp_tensor *a = in(g, n, 0), *b = in(g, n, 1);
	struct hp_tensor ba, bb;
	struct shp bo;
	int64_t o[HP_MAX_RANK], m, k1, k2, nn;
	int r = 0;

	if (!b)
		return bad(err, n, "missing input B");
	if (!known(a) || !known(b))
		return 2;
	if (a->rank < 1 || b->rank < 1)
		return bad(err, n, "inputs must have rank 1 or more");
	m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	k1 = a->dims[a->rank - 1];
	k2 = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
	nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	if (k1 != k2)
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (MatMul): inner dimensions %lld "
				    "and %lld differ",
				    n->name, (long long)k1, (long long)k2);
	memset(&ba, 0, sizeof(ba));
	memset(&bb, 0, sizeof(bb));
	ba.rank = a->rank > 2 ? a->rank - 2 : 0;
	bb.rank = b->rank > 2 ? b->rank - 2 : 0;
	memcpy(ba.dims, a->dims, (size_t)ba.rank * sizeof(int64_t));
	memcpy(bb.dims, b->dims, (size_t)bb.rank * sizeof(int64_t));
	if (broadcast(&ba, &bb, &bo))
		return bad(err, n, "batch dimensions do not broadcast");
	for (int i = 0; i < bo.rank; i++)
		o[r++] = bo.d[i];
	if (a->rank >= 2)
		o[r++] = m;
	if (b->rank >= 2)
		o[r++] = nn;
	return set_shape(g, n, 0, a->dtype, r, o, err);
}

static int op_norm(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int rc;

	if (!known(x))
		return 2;
	rc = set_like(g, n, 0, x, err);
	if (rc)
		return rc;
	if (!strcmp(n->op, "BatchNormalization")) {
		int64_t c = x->rank >= 2 ? x->dims[1] : 1;
		for (int k = 1; k < n->noutputs; k++)
			if ((rc = set_shape(g, n, k, x->dtype, 1, &c, err)))
				return rc;
		return 0;
	}
	if (!strcmp(n->op, "LayerNormalization")) {
		int ax;
		int64_t d[HP_MAX_RANK];
		if (axis_of(hp_node_attr_i(n, "axis", -1), x->rank, &ax))
			return bad(err, n, "axis out of range");
		for (int i = 0; i < x->rank; i++)
			d[i] = i < ax ? x->dims[i] : 1;
		for (int k = 1; k < n->noutputs; k++)
			if ((rc =
				 set_shape(g, n, k, x->dtype, x->rank, d, err)))
				return rc;
	}
	return 0;
}

static int op_dropout(struct hp_graph *g, struct hp_node *n,
		      struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int rc;

	if (!known(x))
		return 2;
	rc = set_like(g, n, 0, x, err);
	if (rc)
		return rc;
	return set_shape(g, n, 1, HP_DT_BOOL, x->rank, x->dims, err);
}

static int op_concat(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err)
{
	struct hp_tensor *x0 = NULL;
	int64_t o[HP_MAX_RANK], v[MAXC], nv = 0;
	bool fold = true;
	int ax = 0;

	for (int k = 0; k < n->ninputs; k++) {
		struct hp_tensor *t = in(g, n, k);
		if (!t)
			continue;
		if (!known(t))
			return 2;
		if (!x0) {
			x0 = t;
			if (axis_of(hp_node_attr_i(n, "axis", 0), t->rank, &ax))
				return bad(err, n, "axis out of range");
			memcpy(o, t->dims, sizeof(o));
			o[ax] = 0;
		}
		if (t->rank != x0->rank)
			return bad(err, n, "inputs differ in rank");
		for (int i = 0; i < t->rank; i++)
			if (i != ax && t->dims[i] != x0->dims[i])
				return bad(err, n,
					   "inputs differ off the axis");
		if (!hp_add_i64(o[ax], t->dims[ax], &o[ax]))
			return bad(err, n, "concatenated axis overflows");
		if (has_val(t) && fold && nv + t->nival <= MAXC &&
		    t->rank <= 1) {
			memcpy(v + nv, t->ival, (size_t)t->nival * sizeof(*v));
			nv += t->nival;
		} else {
			fold = false;
		}
	}
	if (!x0)
		return bad(err, n, "no inputs");
	{
		int rc = set_shape(g, n, 0, x0->dtype, x0->rank, o, err);
		if (rc)
			return rc;
	}
	return fold ? set_val(g, n, 0, v, nv, err) : 0;
}

/*
 * Split as ONNX defines it.  Sizes from the 'split' input (or attribute,
 * before opset 13) are each >= 0 and add up to the axis.  Without sizes,
 * num_outputs (opset 18) cuts ceil(dim / n) per part and leaves the rest,
 * at least 1 (onnxruntime refuses n > dim), to the last; without either,
 * the parts are equal and must divide the axis.
 */
static int op_split(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	const struct hp_attr *num = hp_node_attr(n, "num_outputs");
	int64_t sp[MAXC], nsp = 0, o[HP_MAX_RANK], sum = 0, dim;
	int64_t parts = n->noutputs;
	int ax, rc;

	if (!known(x))
		return 2;
	if (axis_of(hp_node_attr_i(n, "axis", 0), x->rank, &ax))
		return bad(err, n, "axis out of range");
	dim = x->dims[ax];
	if (parts < 1)
		return bad(err, n, "no outputs");
	if (parts > MAXC)
		return bad(err, n, "too many outputs");
	rc = ints_arg(g, n, "split", in(g, n, 1) ? 1 : -1, sp, MAXC, &nsp);
	if (rc < 0)
		return bad(err, n, "split sizes are not constant");
	if (rc > 0 && num)
		return bad(err, n,
			   "both split sizes and num_outputs are given");
	if (rc == 0 && num) {
		int64_t each, last;
		if (num->type != HP_ATTR_INT || num->i != parts)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "node '%s' (Split): num_outputs %lld "
			    "does not match its %lld outputs",
			    n->name, (long long)num->i, (long long)parts);
		if (parts > dim)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "node '%s' (Split): num_outputs %lld "
			    "is more than axis %d's size %lld",
			    n->name, (long long)parts, ax, (long long)dim);
		each = (dim + parts - 1) / parts;
		last = dim - each * (parts - 1);
		if (last < 1)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "node '%s' (Split): num_outputs %lld "
			    "cuts axis %d's size %lld into parts "
			    "of %lld and leaves none for the last",
			    n->name, (long long)parts, ax, (long long)dim,
			    (long long)each);
		for (int64_t i = 0; i < parts; i++)
			sp[i] = i < parts - 1 ? each : last;
		nsp = parts;
	} else if (rc == 0) {
		if (dim % parts)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "node '%s' (Split): axis %d's size "
			    "%lld does not split evenly into %lld "
			    "outputs",
			    n->name, ax, (long long)dim, (long long)parts);
		for (int64_t i = 0; i < parts; i++)
			sp[i] = dim / parts;
		nsp = parts;
	}
	if (nsp != parts)
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (Split): %lld split sizes for "
				    "%lld outputs",
				    n->name, (long long)nsp, (long long)parts);
	for (int64_t i = 0; i < nsp; i++) {
		if (sp[i] < 0)
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (Split): negative split "
					    "size %lld",
					    n->name, (long long)sp[i]);
		if (!hp_add_i64(sum, sp[i], &sum))
			return bad(err, n, "split sizes overflow");
	}
	if (sum != dim)
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (Split): split sizes add up to "
				    "%lld, not axis %d's size %lld",
				    n->name, (long long)sum, ax,
				    (long long)dim);
	memcpy(o, x->dims, sizeof(o));
	for (int k = 0; k < n->noutputs; k++) {
		o[ax] = sp[k];
		if ((rc = set_shape(g, n, k, x->dtype, x->rank, o, err)))
			return rc;
	}
	return 0;
}

static int op_flatten(struct hp_graph *g, struct hp_node *n,
		      struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int64_t a = hp_node_attr_i(n, "axis", 1), o[2] = {1, 1};
	int ax;

	if (!known(x))
		return 2;
	if (a == x->rank)
		ax = x->rank;
	else if (axis_of(a, x->rank, &ax))
		return bad(err, n, "axis out of range");
	for (int i = 0; i < x->rank; i++)
		if (!hp_mul_i64(o[i < ax ? 0 : 1], x->dims[i],
				&o[i < ax ? 0 : 1]))
			return bad(err, n, "output size overflows");
	return set_shape(g, n, 0, x->dtype, 2, o, err);
}

static int op_reshape(struct hp_graph *g, struct hp_node *n,
		      struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0), *s = in(g, n, 1);
	bool allowzero = hp_node_attr_i(n, "allowzero", 0) != 0;
	int64_t o[HP_MAX_RANK], known_prod = 1, total;
	int neg = -1, rc;

	if (!known(x))
		return 2;
	total = hp_tensor_numel(x);
	if (!s || !has_val(s))
		return bad(err, n,
			   "target shape is not a constant (cannot be "
			   "folded)");
	if (s->nival > HP_MAX_RANK)
		return bad(err, n, "target rank too large");
	for (int i = 0; i < s->nival; i++) {
		int64_t d = s->ival[i];
		if (d == 0 && !allowzero) {
			if (i >= x->rank)
				return bad(err, n, "0 refers past input rank");
			d = x->dims[i];
		}
		if (d == -1) {
			if (neg >= 0)
				return bad(err, n, "more than one -1");
			neg = i;
			o[i] = 1;
			continue;
		}
		if (d < 0)
			return bad(err, n, "negative target dimension");
		o[i] = d;
		if (!hp_mul_i64(known_prod, d, &known_prod))
			return bad(err, n, "target shape overflows");
	}
	if (neg >= 0) {
		if (known_prod == 0 || total % known_prod)
			return bad(err, n, "cannot infer -1 dimension");
		o[neg] = total / known_prod;
	} else if (known_prod != total) {
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (Reshape): %lld elements into "
				    "shape of %lld",
				    n->name, (long long)total,
				    (long long)known_prod);
	}
	rc = set_shape(g, n, 0, x->dtype, (int)s->nival, o, err);
	if (rc)
		return rc;
	return has_val(x) ? set_val(g, n, 0, x->ival, x->nival, err) : 0;
}

/*
 * Output 0's value from input 0's, when that is known whole and small
 * (shape arithmetic: the pads PyTorch computes for F.pad go through a
 * Reshape to pairs, a reversing Slice and a Transpose): output element j
 * (a multi-index over o, row-major) is input element first[a] + j[a] x
 * step[a] on each axis a (a Slice), or, with perm, the one at j[i] on
 * axis perm[i] (a Transpose).  0 when nothing is known.
 */
static int gather_val(struct hp_graph *g, struct hp_node *n, const int64_t *o,
		      const int64_t *first, const int64_t *step,
		      const int64_t *perm, struct hp_error *err)
{
	const struct hp_tensor *x = in(g, n, 0);
	int64_t ne = 1, v[MAXC];

	if (!has_val(x) || x->nival != hp_tensor_numel(x))
		return 0;
	for (int a = 0; a < x->rank; a++)
		if ((ne *= o[a]) > MAXC)
			return 0;
	for (int64_t k = 0; k < ne; k++) {
		int64_t rem = k, idx[HP_MAX_RANK], src = 0;
		for (int a = x->rank - 1; a >= 0; a--) {
			int64_t j = rem % o[a];
			rem /= o[a];
			if (perm)
				idx[perm[a]] = j;
			else
				idx[a] = first[a] + j * step[a];
		}
		for (int a = 0; a < x->rank; a++) {
			if (idx[a] < 0 || idx[a] >= x->dims[a])
				return 0;
			src = src * x->dims[a] + idx[a];
		}
		v[k] = x->ival[src];
	}
	return set_val(g, n, 0, v, ne, err);
}

static int op_transpose(struct hp_graph *g, struct hp_node *n,
			struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	const struct hp_attr *p = hp_node_attr(n, "perm");
	int64_t o[HP_MAX_RANK], perm[HP_MAX_RANK];
	bool seen[HP_MAX_RANK] = {0};
	int rc;

	if (!known(x))
		return 2;
	for (int i = 0; i < x->rank; i++) {
		int64_t pi = x->rank - 1 - i;
		if (p && p->type == HP_ATTR_INTS) {
			if ((int)p->n != x->rank)
				return bad(err, n, "perm does not match rank");
			pi = p->ints[i];
		}
		if (pi < 0 || pi >= x->rank || seen[pi])
			return bad(err, n, "perm is not a permutation");
		seen[pi] = true;
		o[i] = x->dims[pi];
		perm[i] = pi;
	}
	rc = set_shape(g, n, 0, x->dtype, x->rank, o, err);
	return rc ? rc : gather_val(g, n, o, NULL, NULL, perm, err);
}

static int op_squeeze(struct hp_graph *g, struct hp_node *n,
		      struct hp_error *err)
{
	bool unsq = !strcmp(n->op, "Unsqueeze");
	struct hp_tensor *x = in(g, n, 0);
	int64_t axes[MAXC], na = 0, o[HP_MAX_RANK];
	bool mark[HP_MAX_RANK + HP_MAX_RANK] = {0};
	int r = 0, orank, rc;

	if (!known(x))
		return 2;
	rc = ints_arg(g, n, "axes", g->opset >= 13 || in(g, n, 1) ? 1 : -1,
		      axes, MAXC, &na);
	if (rc < 0)
		return bad(err, n, "axes are not constant");
	orank = unsq ? x->rank + (int)na : x->rank;
	if (orank > HP_MAX_RANK)
		return bad(err, n, "rank too large");
	for (int64_t i = 0; i < na; i++) {
		int ax;
		if (axis_of(axes[i], orank, &ax) || mark[ax])
			return bad(err, n, "axis out of range or repeated");
		if (!unsq && x->dims[ax] != 1)
			return bad(err, n, "squeezed axis is not 1");
		mark[ax] = true;
	}
	if (unsq) {
		int k = 0;
		for (int i = 0; i < orank; i++)
			o[r++] = mark[i] ? 1 : x->dims[k++];
	} else {
		for (int i = 0; i < x->rank; i++) {
			bool drop = na ? mark[i] : x->dims[i] == 1;
			if (!drop)
				o[r++] = x->dims[i];
		}
	}
	rc = set_shape(g, n, 0, x->dtype, r, o, err);
	if (rc)
		return rc;
	return has_val(x) ? set_val(g, n, 0, x->ival, x->nival, err) : 0;
}

static int op_slice(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int64_t st[HP_MAX_RANK], en[HP_MAX_RANK], ax[HP_MAX_RANK],
	    sp[HP_MAX_RANK];
	int64_t nst = 0, nen = 0, nax = 0, nsp = 0, o[HP_MAX_RANK];
	int64_t first[HP_MAX_RANK], step[HP_MAX_RANK];
	bool new_form = g->opset >= 10 || n->ninputs > 1;
	int rc;

	if (!known(x))
		return 2;
	for (int k = 1; k < 5 && k < n->ninputs; k++) {
		struct hp_tensor *t = in(g, n, k);
		if (t && (!has_val(t) || t->nival > HP_MAX_RANK))
			return bad(err, n,
				   "starts/ends/axes/steps are not "
				   "constant");
	}
	if (ints_arg(g, n, "starts", new_form ? 1 : -1, st, HP_MAX_RANK, &nst) <
		0 ||
	    ints_arg(g, n, "ends", new_form ? 2 : -1, en, HP_MAX_RANK, &nen) <
		0 ||
	    ints_arg(g, n, "axes", new_form ? 3 : -1, ax, HP_MAX_RANK, &nax) <
		0 ||
	    ints_arg(g, n, "steps", new_form ? 4 : -1, sp, HP_MAX_RANK, &nsp) <
		0)
		return bad(err, n, "bad slice arguments");
	if (nst != nen || nst > x->rank || (nax && nax != nst) ||
	    (nsp && nsp != nst))
		return bad(err, n, "starts/ends/axes/steps disagree");
	memcpy(o, x->dims, sizeof(o));
	for (int i = 0; i < x->rank; i++) {
		first[i] = 0;
		step[i] = 1;
	}
	for (int64_t i = 0; i < nst; i++) {
		int a;
		int64_t d, s = nsp ? sp[i] : 1, b = st[i], e = en[i], len;
		if (axis_of(nax ? ax[i] : i, x->rank, &a))
			return bad(err, n, "axis out of range");
		d = x->dims[a];
		if (s == 0 || s == INT64_MIN)
			return bad(err, n, "step is 0 or out of range");
		if (b < 0)
			b += d;
		if (e < 0 && e > INT64_MIN + d)
			e += d;
		if (s > 0) {
			b = b < 0 ? 0 : (b > d ? d : b);
			e = e < 0 ? 0 : (e > d ? d : e);
			len = e > b ? (e - b - 1) / s + 1 : 0;
		} else {
			b = b < 0 ? -1 : (b > d - 1 ? d - 1 : b);
			e = e < -1 ? -1 : (e > d - 1 ? d - 1 : e);
			len = b > e ? (b - e - 1) / (-s) + 1 : 0;
		}
		o[a] = len;
		first[a] = b;
		step[a] = s;
	}
	rc = set_shape(g, n, 0, x->dtype, x->rank, o, err);
	if (rc)
		return rc;
	return gather_val(g, n, o, first, step, NULL, err);
}

static int op_pad(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int64_t p[MAXC], np = 0, o[HP_MAX_RANK];

	if (!known(x))
		return 2;
	if (ints_arg(g, n, "pads", in(g, n, 1) ? 1 : -1, p, MAXC, &np) < 0)
		return bad(err, n, "pads are not constant");
	if (np != 2 * x->rank)
		return bad(err, n, "pads do not match rank");
	for (int i = 0; i < x->rank; i++) {
		int64_t a = p[i], b = p[i + x->rank];
		if (a < -HP_MODEL_MAX_DIM || a > HP_MODEL_MAX_DIM ||
		    b < -HP_MODEL_MAX_DIM || b > HP_MODEL_MAX_DIM)
			return bad(err, n, "pads out of range");
		o[i] = x->dims[i] + a + b;
		if (o[i] < 0)
			return bad(err, n, "pads shrink an axis below 0");
	}
	return set_shape(g, n, 0, x->dtype, x->rank, o, err);
}

static int op_resize(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	struct hp_tensor *scales = NULL, *sizes = NULL;
	int64_t o[HP_MAX_RANK];

	if (!known(x))
		return 2;
	if (!strcmp(n->op, "Upsample") || g->opset < 11 || n->ninputs == 2)
		scales = in(g, n, 1);
	else {
		scales = in(g, n, 2);
		sizes = in(g, n, 3);
	}
	if (sizes && has_val(sizes) && sizes->nival == x->rank) {
		memcpy(o, sizes->ival, (size_t)x->rank * sizeof(int64_t));
	} else if (scales && scales->nfvals == x->rank) {
		for (int i = 0; i < x->rank; i++) {
			double v = floor((double)x->dims[i] * scales->fvals[i]);
			if (!(v >= 0 && v <= (double)HP_MODEL_MAX_DIM))
				return bad(err, n, "scale out of range");
			o[i] = (int64_t)v;
		}
	} else {
		return bad(err, n, "scales/sizes are not constant");
	}
	return set_shape(g, n, 0, x->dtype, x->rank, o, err);
}

static int op_reduce(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int64_t axes[MAXC], na = 0, o[HP_MAX_RANK];
	bool keep = hp_node_attr_i(n, "keepdims", 1) != 0,
	     mark[HP_MAX_RANK] = {0};
	bool noop = hp_node_attr_i(n, "noop_with_empty_axes", 0) != 0;
	int r = 0, rc;

	if (!known(x))
		return 2;
	if (!strcmp(n->op, "ArgMax") || !strcmp(n->op, "ArgMin")) {
		axes[0] = hp_node_attr_i(n, "axis", 0);
		na = 1;
	} else if (ints_arg(g, n, "axes", in(g, n, 1) ? 1 : -1, axes, MAXC,
			    &na) < 0)
		return bad(err, n, "axes are not constant");
	for (int64_t i = 0; i < na; i++) {
		int a;
		if (axis_of(axes[i], x->rank, &a))
			return bad(err, n, "axis out of range");
		mark[a] = true;
	}
	for (int i = 0; i < x->rank; i++) {
		bool red = na ? mark[i] : !noop;
		if (!red)
			o[r++] = x->dims[i];
		else if (keep)
			o[r++] = 1;
	}
	rc = set_shape(g, n, 0, n->op[0] == 'A' ? HP_DT_INT64 : x->dtype, r, o,
		       err);
	if (rc)
		return rc;
	if (!strcmp(n->op, "ReduceProd") && has_val(x) && r <= 1 &&
	    (r == 0 || o[0] == 1)) {
		int64_t p = 1;
		for (int64_t i = 0; i < x->nival; i++)
			p = (int64_t)((uint64_t)p * (uint64_t)x->ival[i]);
		return set_val(g, n, 0, &p, 1, err);
	}
	return 0;
}

static int op_shape(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int64_t start = hp_node_attr_i(n, "start", 0);
	int64_t end = hp_node_attr_i(n, "end", x ? x->rank : 0), len;
	int rc;

	if (!x || x->rank < 0)
		return 2;
	if (start < 0)
		start += x->rank;
	if (end < 0)
		end += x->rank;
	start = start < 0 ? 0 : (start > x->rank ? x->rank : start);
	end = end < 0 ? 0 : (end > x->rank ? x->rank : end);
	len = end > start ? end - start : 0;
	rc = set_shape(g, n, 0, HP_DT_INT64, 1, &len, err);
	if (rc)
		return rc;
	if (known(x))
		return set_val(g, n, 0, x->dims + start, len, err);
	return 0;
}

static int op_size(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0);
	int64_t e;
	int rc;

	if (!known(x))
		return 2;
	rc = set_shape(g, n, 0, HP_DT_INT64, 0, NULL, err);
	if (rc)
		return rc;
	e = hp_tensor_numel(x);
	return e >= 0 ? set_val(g, n, 0, &e, 1, err) : 0;
}

static int op_gather(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0), *idx = in(g, n, 1);
	int64_t o[HP_MAX_RANK];
	int ax, r = 0, rc;

	if (!idx)
		return bad(err, n, "missing indices");
	if (!known(x) || !known(idx))
		return 2;
	if (axis_of(hp_node_attr_i(n, "axis", 0), x->rank, &ax))
		return bad(err, n, "axis out of range");
	if (x->rank - 1 + idx->rank > HP_MAX_RANK)
		return bad(err, n, "rank too large");
	for (int i = 0; i < ax; i++)
		o[r++] = x->dims[i];
	for (int i = 0; i < idx->rank; i++)
		o[r++] = idx->dims[i];
	for (int i = ax + 1; i < x->rank; i++)
		o[r++] = x->dims[i];
	rc = set_shape(g, n, 0, x->dtype, r, o, err);
	if (rc)
		return rc;
	if (has_val(x) && has_val(idx) && x->rank == 1) {
		int64_t v[MAXC];
		for (int64_t i = 0; i < idx->nival; i++) {
			int64_t j = idx->ival[i];
			if (j < 0)
				j += x->nival;
			if (j < 0 || j >= x->nival)
				return bad(err, n, "index out of range");
			v[i] = x->ival[j];
		}
		return set_val(g, n, 0, v, idx->nival, err);
	}
	return 0;
}

static int op_constant_of_shape(struct hp_graph *g, struct hp_node *n,
				struct hp_error *err)
{
	struct hp_tensor *s = in(g, n, 0);
	const struct hp_attr *a = hp_node_attr(n, "value");
	int dtype = HP_DT_FLOAT;
	int64_t fill = 0;
	int rc;

	if (!s || !has_val(s))
		return bad(err, n, "shape is not a constant");
	if (s->nival > HP_MAX_RANK)
		return bad(err, n, "rank too large");
	if (a && a->tensor >= 0) {
		const struct hp_tensor *vt = &g->tensors[a->tensor];
		dtype = vt->dtype;
		if (has_val(vt) && vt->nival == 1)
			fill = vt->ival[0];
	}
	rc = set_shape(g, n, 0, dtype, (int)s->nival, s->ival, err);
	if (rc)
		return rc;
	if (dtype == HP_DT_INT64 || dtype == HP_DT_INT32) {
		int64_t e = hp_tensor_numel(out(g, n, 0)), v[MAXC];
		if (e < 0 || e > MAXC)
			return 0;
		for (int64_t i = 0; i < e; i++)
			v[i] = fill;
		return set_val(g, n, 0, v, e, err);
	}
	return 0;
}

static int op_range(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *a = in(g, n, 0), *b = in(g, n, 1), *d = in(g, n, 2);
	int64_t len, v[MAXC];
	int rc;

	if (!has_val(a) || !has_val(b) || !has_val(d) || a->nival != 1 ||
	    b->nival != 1 || d->nival != 1)
		return bad(err, n, "start/limit/delta are not constant");
	if (d->ival[0] == 0)
		return bad(err, n, "delta is 0");
	{
		double l = ceil(((double)b->ival[0] - (double)a->ival[0]) /
				(double)d->ival[0]);
		if (l > (double)HP_MODEL_MAX_DIM)
			return bad(err, n, "range too long");
		len = l > 0 ? (int64_t)l : 0;
	}
	rc = set_shape(g, n, 0, a->dtype, 1, &len, err);
	if (rc || len > MAXC)
		return rc;
	for (int64_t i = 0; i < len; i++)
		v[i] = a->ival[0] + i * d->ival[0];
	return set_val(g, n, 0, v, len, err);
}

static int op_expand(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0), *s = in(g, n, 1), st;
	struct shp o;
	int rc;

	if (!known(x))
		return 2;
	if (!s || !has_val(s) || s->nival > HP_MAX_RANK)
		return bad(err, n, "target shape is not a constant");
	memset(&st, 0, sizeof(st));
	st.rank = (int)s->nival;
	for (int i = 0; i < st.rank; i++) {
		if (s->ival[i] < 0)
			return bad(err, n, "negative target dimension");
		st.dims[i] = s->ival[i];
	}
	if (broadcast(x, &st, &o))
		return bad(err, n, "shape does not broadcast");
	rc = set_shape(g, n, 0, x->dtype, o.rank, o.d, err);
	if (rc)
		return rc;
	if (has_val(x)) {
		int64_t e = numel_of(&o), v[MAXC];
		if (e < 0 || e > MAXC)
			return 0;
		for (int64_t i = 0; i < e; i++)
			v[i] = ival_at(x, &o, i);
		return set_val(g, n, 0, v, e, err);
	}
	return 0;
}

static int op_tile(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0), *r = in(g, n, 1);
	int64_t o[HP_MAX_RANK];

	if (!known(x))
		return 2;
	if (!r || !has_val(r) || r->nival != x->rank)
		return bad(err, n, "repeats are not constant");
	for (int i = 0; i < x->rank; i++)
		if (r->ival[i] < 0 ||
		    !hp_mul_i64(x->dims[i], r->ival[i], &o[i]))
			return bad(err, n, "bad repeats");
	return set_shape(g, n, 0, x->dtype, x->rank, o, err);
}

/*
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: scores [N, C] or
 * [N, C, d1, ...], labels [N] or [N, d1, ...] (the scores without C).
 * Labels for another batch than the scores' would fail at run time.
 */
static int op_loss(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0), *lab = in(g, n, 1);
	const char *red = hp_node_attr_s(n, "reduction", "mean");
	int64_t o[HP_MAX_RANK];
	int r = 0, rc;

	if (!lab)
		return bad(err, n, "missing labels");
	if (!known(x))
		return 2;
	if (x->rank < 2)
		return bad(err, n,
			   "scores must have rank 2 or more (N, C, ...)");
	if (strcmp(red, "none") && strcmp(red, "mean") && strcmp(red, "sum"))
		return hp_error_set(err, HP_ESHAPE,
				    "node '%s' (%s): unknown reduction '%.40s' "
				    "(none, mean or sum)",
				    n->name, n->op, red);
	if (known(lab)) {
		if (lab->rank != x->rank - 1)
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (%s): labels have rank "
					    "%d, scores %d (labels take the "
					    "scores' shape without C)",
					    n->name, n->op, lab->rank, x->rank);
		if (lab->dims[0] != x->dims[0])
			return hp_error_set(err, HP_ESHAPE,
					    "node '%s' (%s): labels have batch "
					    "%lld, scores %lld",
					    n->name, n->op,
					    (long long)lab->dims[0],
					    (long long)x->dims[0]);
		for (int i = 1; i < lab->rank; i++)
			if (lab->dims[i] != x->dims[i + 1])
				return hp_error_set(
				    err, HP_ESHAPE,
				    "node '%s' (%s): labels' dimension %d is "
				    "%lld, scores' %d is %lld",
				    n->name, n->op, i, (long long)lab->dims[i],
				    i + 1, (long long)x->dims[i + 1]);
	}
	if (!strcmp(red, "none")) {
		o[r++] = x->dims[0];
		for (int i = 2; i < x->rank; i++)
			o[r++] = x->dims[i];
	}
	rc = set_shape(g, n, 0, x->dtype, r, o, err);
	if (rc)
		return rc;
	return set_like(g, n, 1, x, err); /* log-probabilities */
}

static int op_topk(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	struct hp_tensor *x = in(g, n, 0), *k = in(g, n, 1);
	int64_t o[HP_MAX_RANK];
	int ax, rc;

	if (!known(x))
		return 2;
	if (!k || !has_val(k) || k->nival != 1)
		return bad(err, n, "k is not constant");
	if (axis_of(hp_node_attr_i(n, "axis", -1), x->rank, &ax))
		return bad(err, n, "axis out of range");
	memcpy(o, x->dims, sizeof(o));
	o[ax] = k->ival[0];
	if ((rc = set_shape(g, n, 0, x->dtype, x->rank, o, err)))
		return rc;
	return set_shape(g, n, 1, HP_DT_INT64, x->rank, o, err);
}

/* Constant's output was filled by the importer. */
static int op_constant(struct hp_graph *g, struct hp_node *n,
		       struct hp_error *err)
{
	(void)g;
	(void)n;
	(void)err;
	return 0;
}

#define K(kind) HP_KIND_##kind
/*
 * The ONNX ops hetpool knows, one row each: the shape rule, the kind the
 * op is counted as (features.c), and for activations the forward FLOPs
 * per element.  An op without a row is skipped with a warning.
 */
static const struct hp__op ops[] = {
    /* Constants and shape arithmetic. */
    {"Constant", op_constant, K(CONSTANT), 0},
    {"ConstantOfShape", op_constant_of_shape, K(CONSTANT), 0},
    {"Range", op_range, K(CONSTANT), 0},
    {"Shape", op_shape, K(CONSTANT), 0},
    {"Size", op_size, K(CONSTANT), 0},
    /* Layers with weights.  A MatMul with no weight operand is an
     * attention product (features.c tells them apart). */
    {"Conv", op_conv, K(CONV), 0},
    {"ConvTranspose", op_conv, K(CONV), 0},
    {"Gemm", op_gemm, K(FC), 0},
    {"MatMul", op_matmul, K(FC), 0},
    {"BatchNormalization", op_norm, K(NORM), 0},
    {"LayerNormalization", op_norm, K(NORM), 0},
    {"GroupNormalization", op_unary, K(NORM), 0},
    {"InstanceNormalization", op_unary, K(NORM), 0},
    {"LRN", op_unary, K(NORM), 0},
    {"LpNormalization", op_unary, K(NORM), 0},
    {"MeanVarianceNormalization", op_unary, K(NORM), 0},
    /* Pooling. */
    {"AveragePool", op_pool, K(POOL), 0},
    {"LpPool", op_pool, K(POOL), 0},
    {"MaxPool", op_pool, K(POOL), 0},
    {"GlobalAveragePool", op_pool, K(POOL), 0},
    {"GlobalLpPool", op_pool, K(POOL), 0},
    {"GlobalMaxPool", op_pool, K(POOL), 0},
    /* Activations, with forward FLOPs per element. */
    {"Clip", op_unary, K(ACTIVATION), 1},
    {"LeakyRelu", op_unary, K(ACTIVATION), 1},
    {"PRelu", op_elementwise, K(ACTIVATION), 1},
    {"Relu", op_unary, K(ACTIVATION), 1},
    {"Shrink", op_unary, K(ACTIVATION), 1},
    {"ThresholdedRelu", op_unary, K(ACTIVATION), 1},
    {"HardSigmoid", op_unary, K(ACTIVATION), 2},
    {"HardSwish", op_unary, K(ACTIVATION), 3},
    {"Celu", op_unary, K(ACTIVATION), 4},
    {"Elu", op_unary, K(ACTIVATION), 4},
    {"Gelu", op_unary, K(ACTIVATION), 4},
    {"Mish", op_unary, K(ACTIVATION), 4},
    {"Selu", op_unary, K(ACTIVATION), 4},
    {"Sigmoid", op_unary, K(ACTIVATION), 4},
    {"Softplus", op_unary, K(ACTIVATION), 4},
    {"Softsign", op_unary, K(ACTIVATION), 4},
    {"Tanh", op_unary, K(ACTIVATION), 4},
    {"Hardmax", op_unary, K(SOFTMAX), 0},
    {"LogSoftmax", op_unary, K(SOFTMAX), 0},
    {"Softmax", op_unary, K(SOFTMAX), 0},
    {"Dropout", op_dropout, K(DROPOUT), 0},
    {"NegativeLogLikelihoodLoss", op_loss, K(LOSS), 0},
    {"SoftmaxCrossEntropyLoss", op_loss, K(LOSS), 0},
    /* Views and copies. */
    {"Cast", op_cast, K(RESHAPE), 0},
    {"CastLike", op_cast, K(RESHAPE), 0},
    {"Expand", op_expand, K(RESHAPE), 0},
    {"Flatten", op_flatten, K(RESHAPE), 0},
    {"Gather", op_gather, K(RESHAPE), 0},
    {"Identity", op_unary, K(RESHAPE), 0},
    {"Pad", op_pad, K(RESHAPE), 0},
    {"Reshape", op_reshape, K(RESHAPE), 0},
    {"Slice", op_slice, K(RESHAPE), 0},
    {"Squeeze", op_squeeze, K(RESHAPE), 0},
    {"Tile", op_tile, K(RESHAPE), 0},
    {"Transpose", op_transpose, K(RESHAPE), 0},
    {"Unsqueeze", op_squeeze, K(RESHAPE), 0},
    {"Concat", op_concat, K(CONCAT_SPLIT), 0},
    {"Split", op_split, K(CONCAT_SPLIT), 0},
    {"Resize", op_resize, K(RESIZE), 0},
    {"Upsample", op_resize, K(RESIZE), 0},
    /* Reductions. */
    {"ArgMax", op_reduce, K(REDUCE), 0},
    {"ArgMin", op_reduce, K(REDUCE), 0},
    {"CumSum", op_unary, K(REDUCE), 0},
    {"ReduceL1", op_reduce, K(REDUCE), 0},
    {"ReduceL2", op_reduce, K(REDUCE), 0},
    {"ReduceLogSum", op_reduce, K(REDUCE), 0},
    {"ReduceLogSumExp", op_reduce, K(REDUCE), 0},
    {"ReduceMax", op_reduce, K(REDUCE), 0},
    {"ReduceMean", op_reduce, K(REDUCE), 0},
    {"ReduceMin", op_reduce, K(REDUCE), 0},
    {"ReduceProd", op_reduce, K(REDUCE), 0},
    {"ReduceSum", op_reduce, K(REDUCE), 0},
    {"ReduceSumSquare", op_reduce, K(REDUCE), 0},
    {"TopK", op_topk, K(REDUCE), 0},
    /* Elementwise, with numpy broadcasting and integer folding. */
    {"Add", op_elementwise, K(ELEMENTWISE), 0},
    {"And", op_elementwise, K(ELEMENTWISE), 0},
    {"Div", op_elementwise, K(ELEMENTWISE), 0},
    {"Equal", op_elementwise, K(ELEMENTWISE), 0},
    {"Greater", op_elementwise, K(ELEMENTWISE), 0},
    {"GreaterOrEqual", op_elementwise, K(ELEMENTWISE), 0},
    {"Less", op_elementwise, K(ELEMENTWISE), 0},
    {"LessOrEqual", op_elementwise, K(ELEMENTWISE), 0},
    {"Max", op_elementwise, K(ELEMENTWISE), 0},
    {"Mean", op_elementwise, K(ELEMENTWISE), 0},
    {"Min", op_elementwise, K(ELEMENTWISE), 0},
    {"Mod", op_elementwise, K(ELEMENTWISE), 0},
    {"Mul", op_elementwise, K(ELEMENTWISE), 0},
    {"Neg", op_elementwise, K(ELEMENTWISE), 0},
    {"Not", op_elementwise, K(ELEMENTWISE), 0},
    {"Or", op_elementwise, K(ELEMENTWISE), 0},
    {"Pow", op_elementwise, K(ELEMENTWISE), 0},
    {"Sub", op_elementwise, K(ELEMENTWISE), 0},
    {"Sum", op_elementwise, K(ELEMENTWISE), 0},
    {"Where", op_elementwise, K(ELEMENTWISE), 0},
    {"Abs", op_unary, K(ELEMENTWISE), 0},
    {"Ceil", op_unary, K(ELEMENTWISE), 0},
    {"Cos", op_unary, K(ELEMENTWISE), 0},
    {"Erf", op_unary, K(ELEMENTWISE), 0},
    {"Exp", op_unary, K(ELEMENTWISE), 0},
    {"Floor", op_unary, K(ELEMENTWISE), 0},
    {"Log", op_unary, K(ELEMENTWISE), 0},
    {"Reciprocal", op_unary, K(ELEMENTWISE), 0},
    {"Round", op_unary, K(ELEMENTWISE), 0},
    {"Sign", op_unary, K(ELEMENTWISE), 0},
    {"Sin", op_unary, K(ELEMENTWISE), 0},
    {"Sqrt", op_unary, K(ELEMENTWISE), 0},
    /* Shaped, but counted as other work. */
    {"BitShift", op_elementwise, K(OTHER), 0},
    {"IsInf", op_unary, K(OTHER), 0},
    {"IsNaN", op_unary, K(OTHER), 0},
    {"Xor", op_elementwise, K(OTHER), 0},
};
#undef K

const struct hp__op *hp__op_find(const char *name)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	return NULL;
}

int hp__shape_node(struct hp_graph *g, struct hp_node *n, struct hp_error *err)
{
	const struct hp__op *op = hp__op_find(n->op);
	struct hp_tensor *x;
	int rc;

	if (op)
		return op->shape(g, n, err);
	/* Not known: guess the first output from the first input. */
	x = in(g, n, 0);
	rc = known(x) ? set_like(g, n, 0, x, err) : 0;
	return rc ? rc : 1;
}

/* Whether node n is arithmetic of its input k and a constant scalar
 * (Keras's Rescaling: x / 255). */
static bool scalar_arith(const struct hp_graph *g, const struct hp_node *n,
			 int k)
{
	int o = n->ninputs == 2 ? n->inputs[1 - k] : -1;

	return o >= 0 && k >= 0 && k <= 1 && n->noutputs == 1 &&
	       g->tensors[o].nfvals == 1 &&
	       (!strcmp(n->op, "Mul") || !strcmp(n->op, "Div") ||
		!strcmp(n->op, "Add") || !strcmp(n->op, "Sub"));
}

/* Whether every reader of t is a Transpose to N, C, H, W, or scalar
 * arithmetic whose output is so read (depth more of it). */
static bool read_as_nhwc(const struct hp_graph *g, int t, int depth)
{
	int readers = 0;

	for (int i = 0; i < g->nnodes; i++) {
		const struct hp_node *n = &g->nodes[i];
		for (int k = 0; k < n->ninputs; k++) {
			const struct hp_attr *p;
			if (n->inputs[k] != t)
				continue;
			readers++;
			if (depth > 0 &&
			    (scalar_arith(g, n, k) ||
			     (!strcmp(n->op, "Identity") && k == 0 &&
			      n->noutputs == 1)) &&
			    n->outputs[0] >= 0 &&
			    read_as_nhwc(g, n->outputs[0], depth - 1))
				continue;
			p = hp_node_attr(n, "perm");
			if (strcmp(n->op, "Transpose") || k != 0 || !p ||
			    p->type != HP_ATTR_INTS || p->n != 4 ||
			    p->ints[0] != 0 || p->ints[1] != 3 ||
			    p->ints[2] != 1 || p->ints[3] != 2)
				return false;
		}
	}
	return readers > 0;
}

bool hp__input_nhwc(const struct hp_graph *g, int t)
{
	return t >= 0 && g->tensors[t].rank == 4 && read_as_nhwc(g, t, 3);
}

int hp__graph_topo(const struct hp_graph *g, int *order, struct hp_error *err)
{
	int *indeg = calloc((size_t)g->nnodes + 1, sizeof(int));
	int *cons_start = calloc((size_t)g->ntensors + 1, sizeof(int));
	int *cons = NULL;
	int nedges = 0, head = 0, tail = 0;

	if (!indeg || !cons_start)
		goto nomem;
	/* Consumers of each tensor, as a CSR list. */
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].ninputs; k++) {
			int t = g->nodes[i].inputs[k];
			if (t >= 0 && g->tensors[t].producer >= 0) {
				cons_start[t + 1]++;
				indeg[i]++;
				nedges++;
			}
		}
	for (int t = 0; t < g->ntensors; t++)
		cons_start[t + 1] += cons_start[t];
	cons = malloc((size_t)(nedges ? nedges : 1) * sizeof(int));
	if (!cons)
		goto nomem;
	{
		int *fill = calloc((size_t)g->ntensors + 1, sizeof(int));
		if (!fill)
			goto nomem;
		for (int i = 0; i < g->nnodes; i++)
			for (int k = 0; k < g->nodes[i].ninputs; k++) {
				int t = g->nodes[i].inputs[k];
				if (t >= 0 && g->tensors[t].producer >= 0)
					cons[cons_start[t] + fill[t]++] = i;
			}
		free(fill);
	}
	for (int i = 0; i < g->nnodes; i++)
		if (indeg[i] == 0)
			order[tail++] = i;
	while (head < tail) {
		const struct hp_node *n = &g->nodes[order[head++]];
		for (int k = 0; k < n->noutputs; k++) {
			int t = n->outputs[k];
			if (t < 0)
				continue;
			for (int c = cons_start[t]; c < cons_start[t + 1]; c++)
				if (--indeg[cons[c]] == 0)
					order[tail++] = cons[c];
		}
	}
	if (tail < g->nnodes) {
		int stuck = 0;
		for (int i = 0; i < g->nnodes; i++)
			if (indeg[i] > 0) {
				stuck = i;
				break;
			}
		hp_error_set(err, HP_ECYCLE,
			     "graph has a cycle through node '%s' (%s)",
			     g->nodes[stuck].name, g->nodes[stuck].op);
		free(indeg);
		free(cons_start);
		free(cons);
		return HP_ECYCLE;
	}
	free(indeg);
	free(cons_start);
	free(cons);
	return 0;
nomem:
	free(indeg);
	free(cons_start);
	free(cons);
	return hp_error_set(err, HP_ENOMEM, "out of memory");
}
