/*
 * cpu_dnnl.c - the CPU backend of the training-step engine, on oneDNN's C
 * API.  Every primitive is created once, when the engine is made: conv
 * lets oneDNN pick its layouts (format_tag_any), the layers that follow
 * keep the layout they get, and a reorder is added only where two
 * primitives disagree.  All buffers are ours (user scratchpad mode), so
 * the bytes reported are the bytes used; a step allocates nothing.
 *
 * The work is kept as lists of operations per layer: forward runs the
 * layers in order, backward in reverse; inside a layer the list runs in
 * order (reorders before and after the primitive that needs them).
 */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "engine_int.h"
#include "util/banned.h"

/* a primitive's arguments: add and concat read up to HP_SPEC_MAX_INPUTS
 * sources, and write a destination; the scratchpad comes on top */
#define MAX_ARGS (HP_SPEC_MAX_INPUTS + 4)
/* Channels a block of the layout dw_wgrad reads (nChw16c). */
#define DW_BLOCK 16

/* A buffer and the oneDNN memory over it. */
struct mem {
	dnnl_memory_desc_t md;
	size_t bytes;
	bool raw;	   /* a plain buffer: no oneDNN memory */
	bool scratch;	   /* lives in the shared scratchpad */
	struct mem *alias; /* another view of this buffer (made earlier) */
	void *p;
	dnnl_memory_t m;
};

enum op_kind {
	OP_DNNL,
	OP_DROPOUT_FWD,
	OP_DROPOUT_BWD,
	OP_BN_STATS,
	OP_COPY,
	OP_DW_WGRAD,
	OP_GN_FWD,
	OP_GN_BWD,
	OP_CHSCALE_FWD, /* a: x, b: y; the layer's factor and shift */
	OP_CHSCALE_BWD, /* a: dy, b: dx; the layer's factor */
	OP_ZERO		/* a: set to 0 */
};

struct op {
	enum op_kind kind;
	dnnl_primitive_t prim;
	int nargs;
	int arg_id[MAX_ARGS];
	struct mem *arg[MAX_ARGS];
	dnnl_exec_arg_t exec[MAX_ARGS];
	/* custom ops */
	int layer;
	struct mem *a, *b, *c, *d, *e, *f, *g, *h;
};

struct oplist {
	struct op *v;
	int n, alloc;
};

struct act {
	struct mem *d, *g; /* data, gradient (same layout) */
};

struct param {
	struct mem *w, *g, *m1, *m2; /* value, gradient, optimizer state */
	dnnl_memory_desc_t plain;    /* the layout at the API */
	/* the gradient to and from a plain buffer (hp_engine_grads_get()),
	 * made on first use; NULL when the gradient is plain already */
	dnnl_primitive_t g_out, g_in;
	dnnl_memory_t g_plain;
};

struct lstate {
	struct oplist fwd, bwd;
	struct oplist inf; /* inference, where it differs from fwd */
	bool has_inf;
	struct mem *mask;	  /* dropout */
	struct mem *rmean, *rvar; /* bn running statistics */
};

struct cpu {
	struct hp_engine *e;
	const struct hp__plan *p;
	const struct hp_engine_opts *o;
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	dnnl_primitive_attr_t attr;
	dnnl_primitive_attr_t attr_sum; /* reorders that add to their dst */
	int threads;
	struct mem **mems;
	int nmems, amems;
	dnnl_primitive_desc_t *pds;
	int npds, apds;
	size_t scratch_bytes;
	void *scratch;
	size_t total_bytes;
	bool dry; /* count the buffers only (cpu_estimate()) */
	struct act *acts;
	struct lstate *ls;
	struct param *params;
	int nparams;
	struct mem *logits, *dlogits, *labels;
	struct oplist out_fwd, out_bwd;
	uint64_t fwd_count; /* forwards run (dropout masks) */
	int64_t t;	    /* optimizer steps */
	double *lt;	    /* opts.layer_times: seconds per layer, +1 loss */
	int lt_steps;	    /* updates summed into lt */
	bool fwd_done, bwd_done;
	char impl[64];
	char desc[160];
};

static int dnnl_fail(struct hp_error *err, dnnl_status_t st, const char *what)
{
	int code = st == dnnl_unimplemented   ? HP_EUNSUPP
		   : st == dnnl_out_of_memory ? HP_ENOMEM
					      : HP_EINTERNAL;
	return hp_error_set(err, code, "oneDNN %s: %s", what,
			    dnnl_status2str(st));
}

#define CK(call, what)                                                         \
	do {                                                                   \
		dnnl_status_t st_ = (call);                                    \
		if (st_ != dnnl_success)                                       \
			return dnnl_fail(err, st_, what);                      \
	} while (0)

static int nomem(struct hp_error *err)
{
	return hp_error_set(err, HP_ENOMEM, "out of memory");
}

/* Register a buffer of layout md (allocated later, in materialize()). */
static struct mem *mem_md(struct cpu *b, const dnnl_memory_desc_t *md,
			  bool scratch)
{
	struct mem *m;

	if (b->nmems == b->amems) {
		int na = b->amems ? 2 * b->amems : 64;
		struct mem **v = realloc(b->mems, (size_t)na * sizeof(*v));
		if (!v)
			return NULL;
		b->mems = v;
		b->amems = na;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->md = *md;
	m->bytes = dnnl_memory_desc_get_size(md);
	m->scratch = scratch;
	if (scratch && m->bytes > b->scratch_bytes)
		b->scratch_bytes = m->bytes;
	b->mems[b->nmems++] = m;
	return m;
}

/* A view of buffer `of` in layout md (same size: a reshape). */
static struct mem *mem_alias(struct cpu *b, struct mem *of,
			     const dnnl_memory_desc_t *md)
{
	struct mem *m = mem_md(b, md, false);

	if (m)
		m->alias = of;
	return m;
}

static struct mem *mem_raw(struct cpu *b, size_t bytes)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {(dnnl_dim_t)bytes};
	struct mem *m;

	if (dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_u8, dnnl_a) !=
	    dnnl_success)
		return NULL;
	m = mem_md(b, &md, false);
	if (m)
		m->raw = true;
	return m;
}

static int pd_keep(struct cpu *b, dnnl_primitive_desc_t pd)
{
	if (b->npds == b->apds) {
		int na = b->apds ? 2 * b->apds : 64;
		dnnl_primitive_desc_t *v =
		    realloc(b->pds, (size_t)na * sizeof(*v));
		if (!v)
			return HP_ENOMEM;
		b->pds = v;
		b->apds = na;
	}
	b->pds[b->npds++] = pd;
	return 0;
}

static int pd_make(struct cpu *b, dnnl_primitive_desc_t *pd,
		   const void *op_desc, const_dnnl_primitive_desc_t hint,
		   const char *what, struct hp_error *err)
{
	CK(dnnl_primitive_desc_create(pd, op_desc, b->attr, b->eng, hint),
	   what);
	if (pd_keep(b, *pd)) {
		dnnl_primitive_desc_destroy(*pd);
		return nomem(err);
	}
	return 0;
}

static const dnnl_memory_desc_t *qmd(const_dnnl_primitive_desc_t pd, int arg)
{
	return dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
}

static bool md_eq(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
	return dnnl_memory_desc_equal(a, b) != 0;
}

static struct op *op_new(struct oplist *l)
{
	if (l->n == l->alloc) {
		int na = l->alloc ? 2 * l->alloc : 4;
		struct op *v = realloc(l->v, (size_t)na * sizeof(*v));
		if (!v)
			return NULL;
		l->v = v;
		l->alloc = na;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	return &l->v[l->n++];
}

/*
 * Append a primitive made from pd, with n arguments ids[k], mems[k]; a NULL
 * mem is skipped.  The scratchpad argument is added here.
 */
static int prim_op_args(struct cpu *b, struct oplist *l,
			dnnl_primitive_desc_t pd, const char *what,
			struct hp_error *err, int n, const int *ids,
			struct mem *const *mems)
{
	struct op *op;
	const dnnl_memory_desc_t *smd;

	if (n > MAX_ARGS - 1)
		return hp_error_set(err, HP_EINTERNAL, "%s: %d arguments", what,
				    n);
	if (!(op = op_new(l)))
		return nomem(err);
	op->kind = OP_DNNL;
	if (!b->dry)
		CK(dnnl_primitive_create(&op->prim, pd), what);
	for (int i = 0; i < n; i++) {
		if (!mems[i])
			continue;
		op->arg_id[op->nargs] = ids[i];
		op->arg[op->nargs++] = mems[i];
	}
	smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	if (smd && dnnl_memory_desc_get_size(smd) > 0) {
		struct mem *s = mem_md(b, smd, true);
		if (!s)
			return nomem(err);
		op->arg_id[op->nargs] = DNNL_ARG_SCRATCHPAD;
		op->arg[op->nargs++] = s;
	}
	return 0;
}

/* prim_op_args() with n (int arg, struct mem *) pairs. */
static int prim_op(struct cpu *b, struct oplist *l, dnnl_primitive_desc_t pd,
		   const char *what, struct hp_error *err, int n, ...)
{
	int ids[MAX_ARGS];
	struct mem *mems[MAX_ARGS];
	va_list ap;

	if (n > MAX_ARGS - 1)
		return hp_error_set(err, HP_EINTERNAL, "%s: %d arguments", what,
				    n);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		ids[i] = va_arg(ap, int);
		mems[i] = va_arg(ap, struct mem *);
	}
	va_end(ap);
	return prim_op_args(b, l, pd, what, err, n, ids, mems);
}

/* A primitive reading srcs[0..n) as its multiple sources and writing dst. */
static int prim_op_multi(struct cpu *b, struct oplist *l,
			 dnnl_primitive_desc_t pd, const char *what,
			 struct hp_error *err, int n, struct mem *const *srcs,
			 struct mem *dst)
{
	int ids[HP_SPEC_MAX_INPUTS + 1];
	struct mem *mems[HP_SPEC_MAX_INPUTS + 1];

	if (n > HP_SPEC_MAX_INPUTS)
		return hp_error_set(err, HP_EINTERNAL, "%s: %d sources", what,
				    n);
	for (int k = 0; k < n; k++) {
		ids[k] = DNNL_ARG_MULTIPLE_SRC + k;
		mems[k] = srcs[k];
	}
	ids[n] = DNNL_ARG_DST;
	mems[n] = dst;
	return prim_op_args(b, l, pd, what, err, n + 1, ids, mems);
}

static int reorder_op(struct cpu *b, struct oplist *l, struct mem *from,
		      struct mem *to, struct hp_error *err)
{
	dnnl_primitive_desc_t pd;

	CK(dnnl_reorder_primitive_desc_create(&pd, &from->md, b->eng, &to->md,
					      b->eng, b->attr),
	   "reorder");
	if (pd_keep(b, pd)) {
		dnnl_primitive_desc_destroy(pd);
		return nomem(err);
	}
	return prim_op(b, l, pd, "reorder", err, 2, DNNL_ARG_FROM, from,
		       DNNL_ARG_TO, to);
}

/*
 * `have` in layout `want`: have itself when the layouts agree, else a new
 * buffer, filled by a reorder appended to l when to_want (an input), or
 * reordered back into have when not (an output; the caller appends that
 * after its primitive, see reorder_back()).
 */
static int as_md(struct cpu *b, struct oplist *l, struct mem *have,
		 const dnnl_memory_desc_t *want, bool to_want, struct mem **out,
		 struct hp_error *err)
{
	if (md_eq(&have->md, want)) {
		*out = have;
		return 0;
	}
	*out = mem_md(b, want, false);
	if (!*out)
		return nomem(err);
	return to_want ? reorder_op(b, l, have, *out, err) : 0;
}

/* to += from, whatever their layouts (a gradient's second reader). */
static int reorder_acc_op(struct cpu *b, struct oplist *l, struct mem *from,
			  struct mem *to, struct hp_error *err)
{
	dnnl_primitive_desc_t pd;

	CK(dnnl_reorder_primitive_desc_create(&pd, &from->md, b->eng, &to->md,
					      b->eng, b->attr_sum),
	   "reorder (sum)");
	if (pd_keep(b, pd)) {
		dnnl_primitive_desc_destroy(pd);
		return nomem(err);
	}
	return prim_op(b, l, pd, "reorder (sum)", err, 2, DNNL_ARG_FROM, from,
		       DNNL_ARG_TO, to);
}

/* A gradient passed on: written over `to`, or added to it. */
static int grad_out(struct cpu *b, struct oplist *l, struct mem *from,
		    struct mem *to, bool acc, struct hp_error *err)
{
	return acc ? reorder_acc_op(b, l, from, to, err)
		   : reorder_op(b, l, from, to, err);
}

static int reorder_back(struct cpu *b, struct oplist *l, struct mem *tmp,
			struct mem *have, struct hp_error *err)
{
	return tmp == have ? 0 : reorder_op(b, l, tmp, have, err);
}

/* An f32 memory descriptor of dims in layout tag (any: oneDNN's pick). */
static void md_tag(dnnl_memory_desc_t *md, int rank, const int64_t *dims,
		   dnnl_format_tag_t tag)
{
	dnnl_dims_t d;

	for (int i = 0; i < rank; i++)
		d[i] = dims[i];
	dnnl_memory_desc_init_by_tag(md, rank, d, dnnl_f32, tag);
}

static void md_any(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
	md_tag(md, rank, dims, dnnl_format_tag_any);
}

static void md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
	static const dnnl_format_tag_t tags[6] = {dnnl_format_tag_undef,
						  dnnl_a,
						  dnnl_ab,
						  dnnl_abc,
						  dnnl_abcd,
						  dnnl_abcde};

	md_tag(md, rank, dims, tags[rank]);
}

/* Whether md keeps channels in vector-wide blocks (nChw8c or nChw16c),
 * the layouts oneDNN's batch norm and pooling have JIT kernels for
 * (nhwc too, but not nchw or blocks of 4). */
static bool md_channel_blocked(const dnnl_memory_desc_t *md)
{
	const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;

	return md->format_kind == dnnl_blocked && bd->inner_nblks == 1 &&
	       bd->inner_idxs[0] == 1 && bd->inner_blks[0] >= 8;
}

/* Create the buffers of activation y in layout md. */
static int act_make(struct cpu *b, int y, const dnnl_memory_desc_t *md,
		    struct hp_error *err)
{
	struct act *a = &b->acts[y];

	a->d = mem_md(b, md, false);
	if (!a->d)
		return nomem(err);
	if (b->p->acts[y].diff) {
		a->g = mem_md(b, md, false);
		if (!a->g)
			return nomem(err);
	}
	return 0;
}

static int add_param(struct cpu *b, const dnnl_memory_desc_t *md,
		     const dnnl_memory_desc_t *plain, struct mem **w,
		     struct mem **g, struct hp_error *err)
{
	struct param *P = &b->params[b->nparams++];

	P->w = mem_md(b, md, false);
	P->g = mem_md(b, md, false);
	if (!P->w || !P->g)
		return nomem(err);
	P->m1 = mem_raw(b, P->w->bytes);
	if (!P->m1)
		return nomem(err);
	if (b->o->opt == HP_OPT_ADAM) {
		P->m2 = mem_raw(b, P->w->bytes);
		if (!P->m2)
			return nomem(err);
	}
	P->plain = *plain;
	*w = P->w;
	*g = P->g;
	return 0;
}

/* The name of oneDNN's implementation of pd, e.g. "jit:avx512_core";
 * NULL when it does not say. */
static const char *pd_impl(const_dnnl_primitive_desc_t pd)
{
	const char *s = NULL;

	return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) ==
		       dnnl_success
		   ? s
		   : NULL;
}

static void note_impl(struct cpu *b, const_dnnl_primitive_desc_t pd)
{
	const char *s = pd_impl(pd);

	if (!b->impl[0] && s)
		snprintf(b->impl, sizeof(b->impl), "%s", s);
}

/* Whether oneDNN implements pd with a GEMM (im2col). */
static bool pd_is_gemm(const_dnnl_primitive_desc_t pd)
{
	const char *s = pd_impl(pd);

	return s && strstr(s, "gemm");
}

/* conv and fc: forward, weight gradients, input gradient. */
static int build_weighted(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	const struct hp__plan_act *ya = &b->p->acts[pl->y];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	bool conv = pl->L.type == HP_LAYER_CONV;
	dnnl_memory_desc_t src_any, w_any, bias_md, dst_any, plain_w, plain_b;
	const dnnl_memory_desc_t *S, *W, *D, *q;
	dnnl_primitive_desc_t fpd, wpd, dpd;
	dnnl_dims_t st = {pl->L.stride, pl->L.stride};
	dnnl_dims_t pad = {pl->L.pad, hp_spec_pad_w(&pl->L)};
	dnnl_dims_t pad_r = {hp_spec_pad_b(&pl->L), hp_spec_pad_r(&pl->L)};
	/* oneDNN counts the gaps between taps: 0 for a plain kernel */
	dnnl_dims_t dil = {hp_spec_dilation(&pl->L) - 1,
			   hp_spec_dilation(&pl->L) - 1};
	int64_t wd[5], od;
	int wr, rc;
	union {
		dnnl_convolution_desc_t c;
		dnnl_inner_product_desc_t ip;
	} d;
	struct mem *src, *w, *bias, *gw, *gb, *t, *ddst, *wsrc, *dw;
	struct mem *xd = X->d, *xg = X->g, *g4 = NULL;

	od = conv ? pl->L.filters : pl->L.units;
	if (!conv && xa->rank == 4) {
		/* Flatten, as PyTorch does: the input in plain NCHW is the
		 * same buffer as [N, C*H*W], and the layer runs as a 2-D
		 * inner product.  (oneDNN's inner product on a blocked 4-D
		 * source is several times slower.) */
		dnnl_memory_desc_t p4, p2;
		int64_t d2[2] = {xa->dims[0],
				 xa->dims[1] * xa->dims[2] * xa->dims[3]};
		struct mem *x4;
		md_plain(&p4, 4, xa->dims);
		md_plain(&p2, 2, d2);
		if ((rc = as_md(b, &ls->fwd, X->d, &p4, true, &x4, err)))
			return rc;
		if (!(xd = mem_alias(b, x4, &p2)))
			return nomem(err);
		if (pl->need_dsrc) {
			if (md_eq(&X->g->md, &p4))
				g4 = X->g;
			else if (!(g4 = mem_md(b, &p4, false)))
				return nomem(err);
			if (!(xg = mem_alias(b, g4, &p2)))
				return nomem(err);
		}
	}
	if (conv && pl->L.groups > 1) {
		/* grouped: G, O/G, I/G, KH, KW (plain: OIHW with I/G) */
		wr = 5;
		wd[0] = pl->L.groups;
		wd[1] = od / pl->L.groups;
		wd[2] = xa->dims[1] / pl->L.groups;
		wd[3] = pl->L.kernel;
		wd[4] = hp_spec_kernel_w(&pl->L);
		md_any(&src_any, 4, xa->dims);
		md_any(&dst_any, 4, ya->dims);
	} else if (conv) {
		wr = 4;
		wd[0] = od;
		wd[1] = xa->dims[1];
		wd[2] = pl->L.kernel;
		wd[3] = hp_spec_kernel_w(&pl->L);
		md_any(&src_any, 4, xa->dims);
		md_any(&dst_any, 4, ya->dims);
	} else {
		wr = xd->md.ndims;
		wd[0] = od;
		for (int k = 1; k < wr; k++)
			wd[k] = xd->md.dims[k];
		src_any = xd->md;
		md_any(&dst_any, 2, ya->dims);
	}
	md_any(&w_any, wr, wd);
	md_plain(&plain_w, wr, wd);
	md_plain(&bias_md, 1, &od);
	plain_b = bias_md;

	/* forward */
	if (conv) {
		CK(dnnl_dilated_convolution_forward_desc_init(
		       &d.c, dnnl_forward_training, dnnl_convolution_direct,
		       &src_any, &w_any, &bias_md, &dst_any, st, dil, pad,
		       pad_r),
		   "conv forward");
		rc = pd_make(b, &fpd, &d, NULL, "conv forward", err);
		if (!rc && pl->L.groups > 1 && (wd[1] > 1 || wd[2] > 1) &&
		    !md_channel_blocked(qmd(fpd, DNNL_ARG_DST))) {
			/* A grouped conv of a few channels a group (not a
			 * multiple of the vector) that oneDNN runs as GEMMs
			 * in plain NCHW or blocks of 4, where the batch norm
			 * and pooling after it have only reference kernels
			 * (10x the conv's own time, measured): channels-last
			 * has JIT kernels for all three. */
			md_tag(&src_any, 4, xa->dims, dnnl_acdb);
			md_tag(&dst_any, 4, ya->dims, dnnl_acdb);
			CK(dnnl_dilated_convolution_forward_desc_init(
			       &d.c, dnnl_forward_training,
			       dnnl_convolution_direct, &src_any, &w_any,
			       &bias_md, &dst_any, st, dil, pad, pad_r),
			   "conv forward");
			rc = pd_make(b, &fpd, &d, NULL, "conv forward", err);
		}
	} else {
		CK(dnnl_inner_product_forward_desc_init(
		       &d.ip, dnnl_forward_training, &src_any, &w_any, &bias_md,
		       &dst_any),
		   "fc forward");
		rc = pd_make(b, &fpd, &d, NULL, "fc forward", err);
		if (rc) {
			/* the input's layout is refused: let oneDNN pick */
			md_any(&src_any, wr, wd);
			src_any.dims[0] = xa->dims[0];
			CK(dnnl_inner_product_forward_desc_init(
			       &d.ip, dnnl_forward_training, &src_any, &w_any,
			       &bias_md, &dst_any),
			   "fc forward");
			rc = pd_make(b, &fpd, &d, NULL, "fc forward", err);
		}
	}
	if (rc)
		return rc;
	note_impl(b, fpd);
	S = qmd(fpd, DNNL_ARG_SRC);
	W = qmd(fpd, DNNL_ARG_WEIGHTS);
	D = qmd(fpd, DNNL_ARG_DST);
	if ((rc = as_md(b, &ls->fwd, xd, S, true, &src, err)) ||
	    (rc = add_param(b, W, &plain_w, &w, &gw, err)) ||
	    (rc = add_param(b, &bias_md, &plain_b, &bias, &gb, err)) ||
	    (rc = act_make(b, pl->y, D, err)))
		return rc;
	if ((rc = prim_op(b, &ls->fwd, fpd, "forward", err, 4, DNNL_ARG_SRC,
			  src, DNNL_ARG_WEIGHTS, w, DNNL_ARG_BIAS, bias,
			  DNNL_ARG_DST, Y->d)))
		return rc;

	/* weight gradients */
	if (conv)
		CK(dnnl_dilated_convolution_backward_weights_desc_init(
		       &d.c, dnnl_convolution_direct, &src_any, &w_any,
		       &bias_md, &dst_any, st, dil, pad, pad_r),
		   "conv backward weights");
	else
		CK(dnnl_inner_product_backward_weights_desc_init(
		       &d.ip, S, &w_any, &bias_md, &dst_any),
		   "fc backward weights");
	if ((rc = pd_make(b, &wpd, &d, fpd, "backward weights", err)))
		return rc;
	if (conv && pl->L.groups > 1 && wd[1] == 1 && wd[2] == 1 &&
	    !pl->L.rect && hp_spec_dilation(&pl->L) == 1 && pd_is_gemm(wpd)) {
		/* A depthwise conv whose weight gradient oneDNN would do as
		 * one GEMM per channel (im2col): ours instead (dw_wgrad). */
		dnnl_memory_desc_t px, py;
		struct op *op;
		md_tag(&px, 4, xa->dims, dnnl_aBcd16b);
		md_tag(&py, 4, ya->dims, dnnl_aBcd16b);
		if ((rc = as_md(b, &ls->bwd, xd, &px, true, &wsrc, err)) ||
		    (rc = as_md(b, &ls->bwd, Y->g, &py, true, &ddst, err)) ||
		    (rc = as_md(b, NULL, gw, &plain_w, false, &dw, err)))
			return rc;
		if (!(op = op_new(&ls->bwd)))
			return nomem(err);
		op->kind = OP_DW_WGRAD;
		op->layer = i;
		op->a = wsrc;
		op->b = ddst;
		op->c = dw;
		op->d = gb;
		/* each block's sums (dw_wgrad) */
		op->e = mem_raw(b, (size_t)((wd[0] + DW_BLOCK - 1) / DW_BLOCK) *
				       (size_t)(wd[3] * wd[4] + 1) * DW_BLOCK *
				       sizeof(float));
		if (!op->e)
			return nomem(err);
		if ((rc = reorder_back(b, &ls->bwd, dw, gw, err)))
			return rc;
		goto input_gradient;
	}
	q = qmd(wpd, DNNL_ARG_SRC);
	if (md_eq(q, S))
		wsrc = src;
	else if ((rc = as_md(b, &ls->bwd, xd, q, true, &wsrc, err)))
		return rc;
	if ((rc = as_md(b, &ls->bwd, Y->g, qmd(wpd, DNNL_ARG_DIFF_DST), true,
			&ddst, err)) ||
	    (rc = as_md(b, NULL, gw, qmd(wpd, DNNL_ARG_DIFF_WEIGHTS), false,
			&dw, err)))
		return rc;
	if ((rc = prim_op(b, &ls->bwd, wpd, "backward weights", err, 4,
			  DNNL_ARG_SRC, wsrc, DNNL_ARG_DIFF_DST, ddst,
			  DNNL_ARG_DIFF_WEIGHTS, dw, DNNL_ARG_DIFF_BIAS, gb)) ||
	    (rc = reorder_back(b, &ls->bwd, dw, gw, err)))
		return rc;

input_gradient:
	if (!pl->need_dsrc)
		return 0;
	if (conv)
		CK(dnnl_dilated_convolution_backward_data_desc_init(
		       &d.c, dnnl_convolution_direct, &src_any, &w_any,
		       &dst_any, st, dil, pad, pad_r),
		   "conv backward data");
	else
		CK(dnnl_inner_product_backward_data_desc_init(&d.ip, S, &w_any,
							      &dst_any),
		   "fc backward data");
	if ((rc = pd_make(b, &dpd, &d, fpd, "backward data", err)))
		return rc;
	q = qmd(dpd, DNNL_ARG_DIFF_DST);
	if (md_eq(q, &ddst->md))
		t = ddst;
	else if ((rc = as_md(b, &ls->bwd, Y->g, q, true, &t, err)))
		return rc;
	ddst = t;
	q = qmd(dpd, DNNL_ARG_WEIGHTS);
	if ((rc = as_md(b, &ls->bwd, w, q, true, &t, err)))
		return rc;
	w = t;
	if ((rc = as_md(b, NULL, xg, qmd(dpd, DNNL_ARG_DIFF_SRC), false, &t,
			err)) ||
	    (rc = prim_op(b, &ls->bwd, dpd, "backward data", err, 3,
			  DNNL_ARG_DIFF_DST, ddst, DNNL_ARG_WEIGHTS, w,
			  DNNL_ARG_DIFF_SRC, t)) ||
	    (rc = reorder_back(b, &ls->bwd, t, xg, err)))
		return rc;
	/* A flattened input's gradient back in the input's layout. */
	if (g4 && g4 != X->g && (rc = reorder_op(b, &ls->bwd, g4, X->g, err)))
		return rc;
	return 0;
}

static int build_bn(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_batch_normalization_desc_t d;
	dnnl_primitive_desc_t fpd, bpd, ipd;
	dnnl_memory_desc_t cmd;
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	float eps = (float)b->o->bn_eps;
	struct mem *scale, *shift, *gscale, *gshift, *mean, *var, *ws = NULL;
	struct mem *ddst, *dsrc;
	struct op *op;
	int64_t c = b->p->acts[pl->x].dims[1];
	int rc;

	if (pl->fuse_relu)
		flags |= dnnl_fuse_norm_relu;
	md_plain(&cmd, 1, &c);
	CK(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training,
						      &X->d->md, eps, flags),
	   "batch norm forward");
	if ((rc = pd_make(b, &fpd, &d, NULL, "batch norm forward", err)) ||
	    (rc = act_make(b, pl->y, qmd(fpd, DNNL_ARG_DST), err)) ||
	    (rc = add_param(b, &cmd, &cmd, &scale, &gscale, err)) ||
	    (rc = add_param(b, &cmd, &cmd, &shift, &gshift, err)))
		return rc;
	mean = mem_md(b, qmd(fpd, DNNL_ARG_MEAN), false);
	var = mem_md(b, qmd(fpd, DNNL_ARG_VARIANCE), false);
	if (!mean || !var)
		return nomem(err);
	if (pl->fuse_relu) {
		ws = mem_md(b, qmd(fpd, DNNL_ARG_WORKSPACE), false);
		if (!ws)
			return nomem(err);
	}
	if ((rc =
		 prim_op(b, &ls->fwd, fpd, "batch norm forward", err, 7,
			 DNNL_ARG_SRC, X->d, DNNL_ARG_DST, Y->d, DNNL_ARG_SCALE,
			 scale, DNNL_ARG_SHIFT, shift, DNNL_ARG_MEAN, mean,
			 DNNL_ARG_VARIANCE, var, DNNL_ARG_WORKSPACE, ws)))
		return rc;
	/* running statistics, as PyTorch keeps them */
	op = op_new(&ls->fwd);
	if (!op)
		return nomem(err);
	op->kind = OP_BN_STATS;
	op->layer = i;
	op->a = mean;
	op->b = var;
	op->c = ls->rmean = mem_md(b, &cmd, false);
	op->d = ls->rvar = mem_md(b, &cmd, false);
	if (!op->c || !op->d)
		return nomem(err);

	/* inference: the running statistics normalize */
	CK(dnnl_batch_normalization_forward_desc_init(
	       &d, dnnl_forward_inference, &X->d->md, eps,
	       flags | dnnl_use_global_stats),
	   "batch norm inference");
	if ((rc = pd_make(b, &ipd, &d, NULL, "batch norm inference", err)))
		return rc;
	if (!md_eq(qmd(ipd, DNNL_ARG_DST), &Y->d->md))
		return hp_error_set(err, HP_EINTERNAL,
				    "batch norm inference picked another "
				    "layout than training");
	if ((rc =
		 prim_op(b, &ls->inf, ipd, "batch norm inference", err, 6,
			 DNNL_ARG_SRC, X->d, DNNL_ARG_DST, Y->d, DNNL_ARG_SCALE,
			 scale, DNNL_ARG_SHIFT, shift, DNNL_ARG_MEAN, ls->rmean,
			 DNNL_ARG_VARIANCE, ls->rvar)))
		return rc;
	ls->has_inf = true;

	CK(dnnl_batch_normalization_backward_desc_init(
	       &d, dnnl_backward, &X->d->md, &X->d->md, eps, flags),
	   "batch norm backward");
	if ((rc = pd_make(b, &bpd, &d, fpd, "batch norm backward", err)) ||
	    (rc = as_md(b, &ls->bwd, Y->g, qmd(bpd, DNNL_ARG_DIFF_DST), true,
			&ddst, err)))
		return rc;
	/* without an input gradient to keep, write it over diff_dst */
	if (pl->need_dsrc)
		rc = as_md(b, NULL, X->g, qmd(bpd, DNNL_ARG_DIFF_SRC), false,
			   &dsrc, err);
	else
		dsrc = ddst;
	if (rc || (rc = prim_op(b, &ls->bwd, bpd, "batch norm backward", err,
				10, DNNL_ARG_SRC, X->d, DNNL_ARG_MEAN, mean,
				DNNL_ARG_VARIANCE, var, DNNL_ARG_DIFF_DST, ddst,
				DNNL_ARG_SCALE, scale, DNNL_ARG_SHIFT, shift,
				DNNL_ARG_WORKSPACE, ws, DNNL_ARG_DIFF_SRC, dsrc,
				DNNL_ARG_DIFF_SCALE, gscale,
				DNNL_ARG_DIFF_SHIFT, gshift)))
		return rc;
	if (pl->need_dsrc)
		return reorder_back(b, &ls->bwd, dsrc, X->g, err);
	return 0;
}

/*
 * layernorm: each position's channels normalized, scaled and shifted.
 * oneDNN normalizes over the last logical axis, so an image goes through
 * in nhwc, viewed as N, H, W, C; its output stays nhwc (a conv after it
 * reorders as it likes).  A flat input is N, C already.
 */
static int build_lnorm(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_layer_normalization_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	dnnl_memory_desc_t cmd, nhwc, view;
	const unsigned flags = dnnl_use_scale | dnnl_use_shift;
	const int64_t c = xa->dims[1];
	struct mem *xs, *xv, *yv, *gv, *dsrc, *dv, *mean, *var;
	struct mem *scale, *shift, *gscale, *gshift;
	int rc;

	md_plain(&cmd, 1, &c);
	if (xa->rank == 4) {
		const int64_t nhwc_dims[4] = {xa->dims[0], xa->dims[2],
					      xa->dims[3], c};
		md_tag(&nhwc, 4, xa->dims, dnnl_acdb);
		md_tag(&view, 4, nhwc_dims, dnnl_abcd);
	} else {
		nhwc = view = X->d->md;
	}
	if ((rc = as_md(b, &ls->fwd, X->d, &nhwc, true, &xs, err)) ||
	    (rc = act_make(b, pl->y, &nhwc, err)))
		return rc;
	xv = mem_alias(b, xs, &view);
	yv = mem_alias(b, Y->d, &view);
	if (!xv || !yv)
		return nomem(err);
	CK(dnnl_layer_normalization_forward_desc_init(
	       &d, dnnl_forward_training, &view, NULL, (float)pl->L.eps, flags),
	   "layer norm forward");
	if ((rc = pd_make(b, &fpd, &d, NULL, "layer norm forward", err)) ||
	    (rc = add_param(b, &cmd, &cmd, &scale, &gscale, err)) ||
	    (rc = add_param(b, &cmd, &cmd, &shift, &gshift, err)))
		return rc;
	mean = mem_md(b, qmd(fpd, DNNL_ARG_MEAN), false);
	var = mem_md(b, qmd(fpd, DNNL_ARG_VARIANCE), false);
	if (!mean || !var)
		return nomem(err);
	if ((rc = prim_op(b, &ls->fwd, fpd, "layer norm forward", err, 6,
			  DNNL_ARG_SRC, xv, DNNL_ARG_DST, yv, DNNL_ARG_SCALE,
			  scale, DNNL_ARG_SHIFT, shift, DNNL_ARG_MEAN, mean,
			  DNNL_ARG_VARIANCE, var)))
		return rc;
	CK(dnnl_layer_normalization_backward_desc_init(
	       &d, dnnl_backward, &view, &view, NULL, (float)pl->L.eps, flags),
	   "layer norm backward");
	if ((rc = pd_make(b, &bpd, &d, fpd, "layer norm backward", err)))
		return rc;
	/* the input gradient in nhwc: X's own buffer when it is nhwc, else
	 * one of its own (reordered into X's after; a buffer to drop when
	 * nothing upstream needs it) */
	if (pl->need_dsrc)
		rc = as_md(b, NULL, X->g, &nhwc, false, &dsrc, err);
	else if (!(dsrc = mem_md(b, &nhwc, false)))
		rc = nomem(err);
	if (rc)
		return rc;
	gv = mem_alias(b, Y->g, &view);
	dv = mem_alias(b, dsrc, &view);
	if (!gv || !dv)
		return nomem(err);
	if ((rc = prim_op(b, &ls->bwd, bpd, "layer norm backward", err, 9,
			  DNNL_ARG_SRC, xv, DNNL_ARG_MEAN, mean,
			  DNNL_ARG_VARIANCE, var, DNNL_ARG_DIFF_DST, gv,
			  DNNL_ARG_SCALE, scale, DNNL_ARG_SHIFT, shift,
			  DNNL_ARG_DIFF_SRC, dv, DNNL_ARG_DIFF_SCALE, gscale,
			  DNNL_ARG_DIFF_SHIFT, gshift)))
		return rc;
	if (pl->need_dsrc)
		return reorder_back(b, &ls->bwd, dsrc, X->g, err);
	return 0;
}

/*
 * groupnorm: each sample's channels in groups, each group normalized over
 * its channels and positions, then scaled and shifted per channel.
 * oneDNN 2.6 has no group norm: the engine's own loops (gn_fwd(),
 * gn_bwd()) on plain nchw (nc for flat data), a group's channels and
 * positions one contiguous run.
 */
static int build_gnorm(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	const int64_t c = xa->dims[1];
	dnnl_memory_desc_t cmd, plain;
	struct mem *xs, *dsrc = NULL, *stats, *scale, *shift, *gscale, *gshift;
	struct op *op;
	int rc;

	md_plain(&cmd, 1, &c);
	md_plain(&plain, xa->rank, xa->dims);
	if ((rc = as_md(b, &ls->fwd, X->d, &plain, true, &xs, err)) ||
	    (rc = act_make(b, pl->y, &plain, err)) ||
	    (rc = add_param(b, &cmd, &cmd, &scale, &gscale, err)) ||
	    (rc = add_param(b, &cmd, &cmd, &shift, &gshift, err)))
		return rc;
	/* a mean and an inverse deviation per sample and group */
	stats = mem_raw(b, 2 * sizeof(float) * (size_t)xa->dims[0] *
			       (size_t)pl->L.groups);
	if (!stats || !(op = op_new(&ls->fwd)))
		return nomem(err);
	op->kind = OP_GN_FWD;
	op->layer = i;
	op->a = xs;
	op->b = Y->d;
	op->c = scale;
	op->d = shift;
	op->e = stats;
	if (pl->need_dsrc &&
	    (rc = as_md(b, NULL, X->g, &plain, false, &dsrc, err)))
		return rc;
	if (!(op = op_new(&ls->bwd)))
		return nomem(err);
	op->kind = OP_GN_BWD;
	op->layer = i;
	op->a = xs;
	op->b = Y->g;
	op->c = scale;
	op->d = stats;
	op->e = dsrc;
	op->f = gscale;
	op->g = gshift;
	/* per sample and channel, two partial sums (gn_bwd()) */
	op->h =
	    mem_raw(b, 2 * sizeof(double) * (size_t)xa->dims[0] * (size_t)c);
	if (!op->h)
		return nomem(err);
	if (dsrc)
		return reorder_back(b, &ls->bwd, dsrc, X->g, err);
	return 0;
}

/*
 * prelu: oneDNN's.  Its weight (one slope, or one a channel) is 1, C, 1, 1
 * for the broadcast, stored in the layout oneDNN's kernel picks (the
 * source's channel blocks: its JIT kernel takes no other, and the
 * reference one is 80x slower); plain, that is the parameter's C values.
 * Its gradient comes from its input.
 */
static int build_prelu(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	int64_t nw = pl->L.per_channel ? xa->dims[1] : 1, wd[4] = {1, nw, 1, 1};
	dnnl_memory_desc_t wplain, wany, wmd;
	dnnl_prelu_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	struct mem *w, *gw, *dw, *dsrc;
	int rc;

	md_plain(&wplain, xa->rank, wd);
	md_any(&wany, xa->rank, wd);
	CK(dnnl_prelu_forward_desc_init(&d, dnnl_forward_training, &X->d->md,
					&wany),
	   "prelu forward");
	if ((rc = pd_make(b, &fpd, &d, NULL, "prelu forward", err)))
		return rc;
	wmd = *qmd(fpd, DNNL_ARG_WEIGHTS);
	if ((rc = add_param(b, &wmd, &wplain, &w, &gw, err)) ||
	    (rc = act_make(b, pl->y, qmd(fpd, DNNL_ARG_DST), err)) ||
	    (rc = prim_op(b, &ls->fwd, fpd, "prelu forward", err, 3,
			  DNNL_ARG_SRC, X->d, DNNL_ARG_WEIGHTS, w, DNNL_ARG_DST,
			  Y->d)))
		return rc;
	CK(dnnl_prelu_backward_desc_init(&d, &X->d->md, &wmd, &X->d->md, &wany),
	   "prelu backward");
	if ((rc = pd_make(b, &bpd, &d, fpd, "prelu backward", err)) ||
	    (rc = as_md(b, NULL, gw, qmd(bpd, DNNL_ARG_DIFF_WEIGHTS), false,
			&dw, err)))
		return rc;
	/* oneDNN computes the input's gradient either way: a buffer of its
	 * own when nothing upstream needs it */
	dsrc = pl->need_dsrc ? X->g : mem_md(b, &X->d->md, false);
	if (!dsrc)
		return nomem(err);
	if ((rc = prim_op(b, &ls->bwd, bpd, "prelu backward", err, 5,
			  DNNL_ARG_SRC, X->d, DNNL_ARG_WEIGHTS, w,
			  DNNL_ARG_DIFF_DST, Y->g, DNNL_ARG_DIFF_SRC, dsrc,
			  DNNL_ARG_DIFF_WEIGHTS, dw)))
		return rc;
	return reorder_back(b, &ls->bwd, dw, gw, err);
}

/*
 * scale with a factor and a shift per channel (an image's input
 * normalization): y = f[c] x + s[c] on plain nchw, and the input's
 * gradient f[c] dy when one is wanted (the network input's is not, as a
 * rule).  The engine's own loop (chscale()).
 */
static int build_chscale(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_memory_desc_t plain;
	struct mem *xs, *dsrc;
	struct op *op;
	int rc;

	md_plain(&plain, xa->rank, xa->dims);
	if ((rc = as_md(b, &ls->fwd, X->d, &plain, true, &xs, err)) ||
	    (rc = act_make(b, pl->y, &plain, err)))
		return rc;
	if (!(op = op_new(&ls->fwd)))
		return nomem(err);
	op->kind = OP_CHSCALE_FWD;
	op->layer = i;
	op->a = xs;
	op->b = Y->d;
	if (!pl->need_dsrc)
		return 0;
	if ((rc = as_md(b, NULL, X->g, &plain, false, &dsrc, err)) ||
	    !(op = op_new(&ls->bwd)))
		return rc ? rc : nomem(err);
	op->kind = OP_CHSCALE_BWD;
	op->layer = i;
	op->a = Y->g;
	op->b = dsrc;
	return reorder_back(b, &ls->bwd, dsrc, X->g, err);
}

/* gelu (the erf form), softplus (log(1 + e^x)) and scale (alpha x + beta,
 * oneDNN's linear): each takes its gradient from its input, so it never
 * runs in place. */
static int build_eltwise_src(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_eltwise_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	dnnl_alg_kind_t alg =
	    pl->L.type == HP_LAYER_GELU	      ? dnnl_eltwise_gelu_erf
	    : pl->L.type == HP_LAYER_SOFTPLUS ? dnnl_eltwise_soft_relu
					      : dnnl_eltwise_linear;
	float a = 0, c = 0; /* oneDNN's alpha and beta */
	const char *name = hp_spec_layer_name(pl->L.type);
	char what[48];
	int rc;

	if (pl->L.type == HP_LAYER_SCALE) {
		a = (float)pl->L.alpha;
		c = (float)pl->L.beta;
	}
	snprintf(what, sizeof(what), "%s forward", name);
	CK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_training, alg,
					  &X->d->md, a, c),
	   what);
	if ((rc = pd_make(b, &fpd, &d, NULL, what, err)) ||
	    (rc = act_make(b, pl->y, &X->d->md, err)) ||
	    (rc = prim_op(b, &ls->fwd, fpd, what, err, 2, DNNL_ARG_SRC, X->d,
			  DNNL_ARG_DST, Y->d)))
		return rc;
	if (!pl->need_dsrc)
		return 0;
	snprintf(what, sizeof(what), "%s backward", name);
	CK(dnnl_eltwise_backward_desc_init(&d, alg, &X->d->md, &X->d->md, a, c),
	   what);
	if ((rc = pd_make(b, &bpd, &d, fpd, what, err)))
		return rc;
	return prim_op(b, &ls->bwd, bpd, what, err, 3, DNNL_ARG_SRC, X->d,
		       DNNL_ARG_DIFF_DST, Y->g, DNNL_ARG_DIFF_SRC, X->g);
}

/* relu, leaky relu, clip (ReLU6), sigmoid, tanh and elu: each takes its
 * gradient from the output. */
static int build_relu(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_eltwise_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	dnnl_alg_kind_t alg = dnnl_eltwise_relu_use_dst_for_bwd;
	float lo = 0, hi = 0; /* oneDNN's alpha and beta */
	char fw[48], bw[48];
	int rc;

	switch (pl->L.type) {
	case HP_LAYER_CLIP:
		alg = dnnl_eltwise_clip_v2_use_dst_for_bwd;
		lo = (float)pl->L.lo;
		hi = (float)pl->L.hi;
		break;
	case HP_LAYER_SIGMOID:
		alg = dnnl_eltwise_logistic_use_dst_for_bwd;
		break;
	case HP_LAYER_TANH:
		alg = dnnl_eltwise_tanh_use_dst_for_bwd;
		break;
	case HP_LAYER_LEAKYRELU: /* relu's alpha: the negative slope */
		lo = (float)pl->L.alpha;
		break;
	case HP_LAYER_ELU:
		alg = dnnl_eltwise_elu_use_dst_for_bwd;
		lo = (float)pl->L.alpha;
		break;
	default:
		break;
	}

	snprintf(fw, sizeof(fw), "%s forward", hp_spec_layer_name(pl->L.type));
	snprintf(bw, sizeof(bw), "%s backward", hp_spec_layer_name(pl->L.type));
	CK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_training, alg,
					  &X->d->md, lo, hi),
	   fw);
	if ((rc = pd_make(b, &fpd, &d, NULL, fw, err)))
		return rc;
	if (!pl->inplace && (rc = act_make(b, pl->y, &X->d->md, err)))
		return rc;
	if ((rc = prim_op(b, &ls->fwd, fpd, fw, err, 2, DNNL_ARG_SRC, X->d,
			  DNNL_ARG_DST, Y->d)))
		return rc;
	if (!pl->need_dsrc)
		return 0;
	CK(dnnl_eltwise_backward_desc_init(&d, alg, &X->d->md, &X->d->md, lo,
					   hi),
	   bw);
	if ((rc = pd_make(b, &bpd, &d, fpd, bw, err)))
		return rc;
	return prim_op(b, &ls->bwd, bpd, bw, err, 3, DNNL_ARG_DST, Y->d,
		       DNNL_ARG_DIFF_DST, Y->g, DNNL_ARG_DIFF_SRC, X->g);
}

/*
 * hardsigmoid: min(1, max(0, alpha x + beta)), as a linear map into a
 * buffer of its own and a clip to [0, 1]; backward, the clip's gradient
 * (from its output) and the linear map's (alpha times it).
 */
static int build_hardsigmoid(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	const dnnl_memory_desc_t *md = &X->d->md;
	float alpha = (float)pl->L.alpha, beta = (float)pl->L.beta;
	dnnl_eltwise_desc_t d;
	dnnl_primitive_desc_t lin, clip, pd;
	struct mem *t = mem_md(b, md, false), *dt;
	int rc;

	if (!t)
		return nomem(err);
	CK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_training,
					  dnnl_eltwise_linear, md, alpha, beta),
	   "hardsigmoid forward");
	if ((rc = pd_make(b, &lin, &d, NULL, "hardsigmoid forward", err)) ||
	    (rc = prim_op(b, &ls->fwd, lin, "hardsigmoid forward", err, 2,
			  DNNL_ARG_SRC, X->d, DNNL_ARG_DST, t)))
		return rc;
	CK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_training,
					  dnnl_eltwise_clip_v2_use_dst_for_bwd,
					  md, 0.0f, 1.0f),
	   "hardsigmoid forward");
	if ((rc = pd_make(b, &clip, &d, NULL, "hardsigmoid forward", err)) ||
	    (rc = act_make(b, pl->y, md, err)) ||
	    (rc = prim_op(b, &ls->fwd, clip, "hardsigmoid forward", err, 2,
			  DNNL_ARG_SRC, t, DNNL_ARG_DST, Y->d)))
		return rc;
	if (!pl->need_dsrc)
		return 0;
	if (!(dt = mem_md(b, md, false)))
		return nomem(err);
	CK(dnnl_eltwise_backward_desc_init(
	       &d, dnnl_eltwise_clip_v2_use_dst_for_bwd, md, md, 0.0f, 1.0f),
	   "hardsigmoid backward");
	if ((rc = pd_make(b, &pd, &d, clip, "hardsigmoid backward", err)) ||
	    (rc = prim_op(b, &ls->bwd, pd, "hardsigmoid backward", err, 3,
			  DNNL_ARG_DST, Y->d, DNNL_ARG_DIFF_DST, Y->g,
			  DNNL_ARG_DIFF_SRC, dt)))
		return rc;
	CK(dnnl_eltwise_backward_desc_init(&d, dnnl_eltwise_linear, md, md,
					   alpha, beta),
	   "hardsigmoid backward");
	if ((rc = pd_make(b, &pd, &d, lin, "hardsigmoid backward", err)))
		return rc;
	return prim_op(b, &ls->bwd, pd, "hardsigmoid backward", err, 3,
		       DNNL_ARG_SRC, X->d, DNNL_ARG_DIFF_DST, dt,
		       DNNL_ARG_DIFF_SRC, X->g);
}

static int build_pool(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_pooling_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	dnnl_memory_desc_t dst_any;
	const int64_t *xd = b->p->acts[pl->x].dims;
	bool gap = pl->L.type == HP_LAYER_GAP;
	dnnl_dims_t st = {gap ? 1 : pl->L.stride, gap ? 1 : pl->L.stride};
	dnnl_dims_t k = {gap ? xd[2] : pl->L.kernel,
			 gap ? xd[3] : pl->L.kernel};
	dnnl_dims_t pad = {gap ? 0 : pl->L.pad, gap ? 0 : pl->L.pad};
	/* ceil mode: the right padding reaches the last window's end (a max
	 * pool never takes its padding) */
	dnnl_dims_t pad_r = {pad[0], pad[1]};
	/* an average in ceil mode leaves the last window's overhang out
	 * (PyTorch's divisor; the spec allows it with no padding or with the
	 * padding left out too) */
	dnnl_alg_kind_t alg = !gap && pl->L.pool_max ? dnnl_pooling_max
			      : !gap && (pl->L.pool_exclude || pl->L.ceil_mode)
				  ? dnnl_pooling_avg_exclude_padding
				  : dnnl_pooling_avg_include_padding;
	const dnnl_memory_desc_t *q;
	struct mem *ws = NULL, *ddst;
	int rc;

	if (!gap && pl->L.ceil_mode)
		for (int a = 0; a < 2; a++) {
			int64_t o = b->p->acts[pl->y].dims[2 + a];
			pad_r[a] = (o - 1) * st[a] + k[a] - xd[2 + a] - pad[a];
			if (pad_r[a] < pad[a])
				pad_r[a] = pad[a];
		}
	md_any(&dst_any, 4, b->p->acts[pl->y].dims);
	CK(dnnl_pooling_forward_desc_init(&d, dnnl_forward_training, alg,
					  &X->d->md, &dst_any, st, k, pad,
					  pad_r),
	   "pool forward");
	if ((rc = pd_make(b, &fpd, &d, NULL, "pool forward", err)) ||
	    (rc = act_make(b, pl->y, qmd(fpd, DNNL_ARG_DST), err)))
		return rc;
	q = qmd(fpd, DNNL_ARG_WORKSPACE);
	if (q && dnnl_memory_desc_get_size(q) > 0) {
		ws = mem_md(b, q, false);
		if (!ws)
			return nomem(err);
	}
	if ((rc =
		 prim_op(b, &ls->fwd, fpd, "pool forward", err, 3, DNNL_ARG_SRC,
			 X->d, DNNL_ARG_DST, Y->d, DNNL_ARG_WORKSPACE, ws)))
		return rc;
	if (!pl->need_dsrc)
		return 0;
	CK(dnnl_pooling_backward_desc_init(&d, alg, &X->d->md, &Y->d->md, st, k,
					   pad, pad_r),
	   "pool backward");
	if ((rc = pd_make(b, &bpd, &d, fpd, "pool backward", err)) ||
	    (rc = as_md(b, &ls->bwd, Y->g, qmd(bpd, DNNL_ARG_DIFF_DST), true,
			&ddst, err)))
		return rc;
	return prim_op(b, &ls->bwd, bpd, "pool backward", err, 3,
		       DNNL_ARG_DIFF_DST, ddst, DNNL_ARG_DIFF_SRC, X->g,
		       DNNL_ARG_WORKSPACE, ws);
}

/* add: a sum of its inputs in the first one's layout; the gradient goes
 * to each input unchanged. */
static int build_add(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	const dnnl_memory_desc_t *md0 = &b->acts[pl->xs[0]].d->md;
	dnnl_memory_desc_t mds[HP_SPEC_MAX_INPUTS];
	float sc[HP_SPEC_MAX_INPUTS];
	struct mem *src[HP_SPEC_MAX_INPUTS] = {NULL};
	dnnl_primitive_desc_t pd;
	int rc;

	for (int k = 0; k < pl->nin; k++) {
		if ((rc = as_md(b, &ls->fwd, b->acts[pl->xs[k]].d, md0, true,
				&src[k], err)))
			return rc;
		mds[k] = *md0;
		sc[k] = 1.0f;
	}
	CK(dnnl_sum_primitive_desc_create(&pd, md0, pl->nin, sc, mds, b->attr,
					  b->eng),
	   "add forward");
	if (pd_keep(b, pd)) {
		dnnl_primitive_desc_destroy(pd);
		return nomem(err);
	}
	if ((rc = act_make(b, pl->y, md0, err)) ||
	    (rc = prim_op_multi(b, &ls->fwd, pd, "add forward", err, pl->nin,
				src, Y->d)))
		return rc;
	for (int k = pl->nin - 1; k >= 0; k--)
		if (pl->need[k] &&
		    (rc = grad_out(b, &ls->bwd, Y->g, b->acts[pl->xs[k]].g,
				   pl->acc[k], err)))
			return rc;
	return 0;
}

/* The channel block oneDNN picks for activations on this CPU (16 with
 * AVX-512, else 8): elementwise binary ops and batch norm have kernels for
 * it; a binary op on another blocking runs the reference kernel, 20x
 * slower (aBcd8b from a grouped conv of 8-channel groups, on AVX-512). */
static int64_t native_block(void)
{
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();

	return ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core) ==
		       (unsigned)dnnl_cpu_isa_avx512_core
		   ? 16
		   : 8;
}

/* Whether md is rank 4 in blocks of blk channels. */
static bool md_is_blocked(const dnnl_memory_desc_t *a, int64_t blk)
{
	const dnnl_blocking_desc_t *bl = &a->format_desc.blocking;

	return a->format_kind == dnnl_blocked && a->ndims == 4 &&
	       bl->inner_nblks == 1 && bl->inner_idxs[0] == 1 &&
	       bl->inner_blks[0] == blk;
}

/* out = x * y (y of x's shape or broadcast), a primitive appended to l. */
static int mul_op(struct cpu *b, struct oplist *l, struct mem *x, struct mem *y,
		  struct mem *out, const char *what, struct hp_error *err)
{
	dnnl_binary_desc_t d;
	dnnl_primitive_desc_t pd;
	int rc;

	CK(dnnl_binary_desc_init(&d, dnnl_binary_mul, &x->md, &y->md, &out->md),
	   what);
	if ((rc = pd_make(b, &pd, &d, NULL, what, err)))
		return rc;
	return prim_op(b, l, pd, what, err, 3, DNNL_ARG_SRC_0, x,
		       DNNL_ARG_SRC_1, y, DNNL_ARG_DST, out);
}

/*
 * mul: y = a * b, b of a's shape or N,C,1,1 (broadcast over the image),
 * all in the CPU's native channel blocks (4-D; a and b reordered where
 * they are not).  Backward: da = dy * b, and db = dy * a, summed
 * over the image when b is broadcast; each written over its input's
 * gradient or added to it (the plan's acc[]), the second input first (the
 * order acc[] was set in).
 */
static int build_mul(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *A = &b->acts[pl->xs[0]], *B = &b->acts[pl->xs[1]],
		   *Y = &b->acts[pl->y];
	const struct hp__plan_act *aa = &b->p->acts[pl->xs[0]],
				  *ba = &b->p->acts[pl->xs[1]];
	struct lstate *ls = &b->ls[i];
	bool bcast = ba->dims[2] * ba->dims[3] != aa->dims[2] * aa->dims[3];
	int64_t blk = native_block();
	dnnl_format_tag_t tag = blk == 16 ? dnnl_aBcd16b : dnnl_aBcd8b;
	dnnl_primitive_desc_t pd;
	dnnl_memory_desc_t amd, bmd;
	struct mem *prod, *av, *bv;
	int rc;

	amd = A->d->md;
	if (aa->rank == 4 && !md_is_blocked(&amd, blk))
		md_tag(&amd, 4, aa->dims, tag);
	if (bcast)
		md_tag(&bmd, 4, ba->dims, tag);
	else
		bmd = amd;
	if ((rc = as_md(b, &ls->fwd, A->d, &amd, true, &av, err)) ||
	    (rc = as_md(b, &ls->fwd, B->d, &bmd, true, &bv, err)))
		return rc;
	if ((rc = act_make(b, pl->y, &amd, err)) ||
	    (rc = mul_op(b, &ls->fwd, av, bv, Y->d, "mul forward", err)))
		return rc;
	if (!Y->g)
		return 0;
	if (pl->need[1]) {
		/* dy * a, in dy's layout, then summed to b's shape */
		if (!(prod = mem_md(b, &Y->g->md, false)))
			return nomem(err);
		if ((rc = mul_op(b, &ls->bwd, Y->g, av, prod, "mul backward",
				 err)))
			return rc;
		if (bcast) {
			/* the sum over the image as a global average pool
			 * times its size: oneDNN 2.6's reduction has only a
			 * reference kernel for blocked layouts (3 ms where
			 * the pool takes 0.05) */
			dnnl_pooling_desc_t pl_d;
			dnnl_eltwise_desc_t sc;
			dnnl_dims_t one = {1, 1},
				    k = {aa->dims[2], aa->dims[3]},
				    zero = {0, 0};
			struct mem *avg = mem_md(b, &bmd, false),
				   *sum = mem_md(b, &bmd, false);
			if (!avg || !sum)
				return nomem(err);
			CK(dnnl_pooling_forward_desc_init(
			       &pl_d, dnnl_forward_inference,
			       dnnl_pooling_avg_include_padding, &prod->md,
			       &avg->md, one, k, zero, zero),
			   "mul backward (sum)");
			if ((rc = pd_make(b, &pd, &pl_d, NULL,
					  "mul backward (sum)", err)) ||
			    (rc = prim_op(b, &ls->bwd, pd, "mul backward (sum)",
					  err, 2, DNNL_ARG_SRC, prod,
					  DNNL_ARG_DST, avg)))
				return rc;
			CK(dnnl_eltwise_forward_desc_init(
			       &sc, dnnl_forward_inference, dnnl_eltwise_linear,
			       &avg->md, (float)(aa->dims[2] * aa->dims[3]),
			       0.0f),
			   "mul backward (sum)");
			if ((rc = pd_make(b, &pd, &sc, NULL,
					  "mul backward (sum)", err)) ||
			    (rc = prim_op(b, &ls->bwd, pd, "mul backward (sum)",
					  err, 2, DNNL_ARG_SRC, avg,
					  DNNL_ARG_DST, sum)))
				return rc;
			prod = sum;
		}
		if ((rc = grad_out(b, &ls->bwd, prod, B->g, pl->acc[1], err)))
			return rc;
	}
	if (pl->need[0]) {
		/* dy * b, b broadcast */
		if (!(prod = mem_md(b, &Y->g->md, false)))
			return nomem(err);
		if ((rc = mul_op(b, &ls->bwd, Y->g, bv, prod, "mul backward",
				 err)) ||
		    (rc = grad_out(b, &ls->bwd, prod, A->g, pl->acc[0], err)))
			return rc;
	}
	return 0;
}

/* concat: along the channels into a plain output, or a blocked one (the
 * CPU's native channel blocks) when every input's channels fill whole
 * blocks, as a DenseNet's do (a batch norm on the plain layout costs 5x the
 * blocked one); its gradient is split by views of the output's gradient. */
static int build_concat(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *ya = &b->p->acts[pl->y];
	struct act *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_memory_desc_t mds[HP_SPEC_MAX_INPUTS], dmd;
	struct mem *src[HP_SPEC_MAX_INPUTS] = {NULL};
	dnnl_primitive_desc_t pd;
	int64_t c0 = 0;
	int rc;

	int64_t blk = native_block();
	bool blocked = ya->rank == 4;

	for (int k = 0; k < pl->nin; k++) {
		src[k] = b->acts[pl->xs[k]].d;
		mds[k] = src[k]->md;
		blocked = blocked && b->p->acts[pl->xs[k]].dims[1] % blk == 0;
	}
	if (blocked)
		md_tag(&dmd, 4, ya->dims,
		       blk == 16 ? dnnl_aBcd16b : dnnl_aBcd8b);
	else
		md_plain(&dmd, ya->rank, ya->dims);
	CK(dnnl_concat_primitive_desc_create(&pd, &dmd, pl->nin, 1, mds,
					     b->attr, b->eng),
	   "concat forward");
	if (pd_keep(b, pd)) {
		dnnl_primitive_desc_destroy(pd);
		return nomem(err);
	}
	if ((rc = act_make(b, pl->y, &dmd, err)) ||
	    (rc = prim_op_multi(b, &ls->fwd, pd, "concat forward", err, pl->nin,
				src, Y->d)))
		return rc;
	/* descending, the order the plan set acc[] in: an activation given
	 * twice is written by its last slot and added to by the earlier */
	for (int k = 0; k < pl->nin; k++)
		c0 += b->p->acts[pl->xs[k]].dims[1];
	for (int k = pl->nin - 1; k >= 0; k--) {
		const struct hp__plan_act *xa = &b->p->acts[pl->xs[k]];
		dnnl_dims_t dims, offs = {0, 0, 0, 0};
		dnnl_memory_desc_t sub;
		struct mem *view;
		for (int r = 0; r < ya->rank; r++)
			dims[r] = xa->dims[r];
		c0 -= xa->dims[1];
		offs[1] = c0;
		if (!pl->need[k] || !Y->g)
			continue;
		CK(dnnl_memory_desc_init_submemory(&sub, &Y->g->md, dims, offs),
		   "concat backward");
		if (!(view = mem_alias(b, Y->g, &sub)))
			return nomem(err);
		if ((rc = grad_out(b, &ls->bwd, view, b->acts[pl->xs[k]].g,
				   pl->acc[k], err)))
			return rc;
	}
	return 0;
}

/* An op that sets m to zero (a gradient a slice writes part of). */
static int zero_op(struct oplist *l, struct mem *m, struct hp_error *err)
{
	struct op *op = op_new(l);

	if (!op)
		return nomem(err);
	op->kind = OP_ZERO;
	op->a = m;
	return 0;
}

/*
 * slice: channels start .. start + channels - 1 of its input, reordered
 * from a view of them into an output of its own (in the CPU's channel
 * blocks when the input has them).  A view cuts a blocked layout only at
 * whole blocks, so a slice that does not fall on them reads a plain copy
 * of its input.  Backward, its gradient goes into the same view of the
 * input's gradient, set to zero first (its other channels get none from
 * here); through a plain buffer where the view needs one.  A gradient
 * other readers add to is handled by build(), as for any one-input layer.
 */
static int build_slice(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	const struct hp__plan_act *ya = &b->p->acts[pl->y];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_dims_t dims, offs = {0, 0, 0, 0};
	dnnl_memory_desc_t sub, ymd, plain;
	struct mem *xd = X->d, *view, *g = NULL;
	const dnnl_blocking_desc_t *bd = &X->d->md.format_desc.blocking;
	int64_t blk = native_block();
	/* the input's channel block (1: strides alone, as nchw and nhwc) */
	int64_t xblk = X->d->md.format_kind != dnnl_blocked ? 0
		       : bd->inner_nblks == 0		    ? 1
		       : bd->inner_nblks == 1 && bd->inner_idxs[0] == 1
			   ? bd->inner_blks[0]
			   : 0;
	bool x_blocked = xblk > 1;
	bool direct = xblk == 1 || (xblk > 1 && pl->L.start % xblk == 0 &&
				    pl->L.channels % xblk == 0);
	int rc;

	for (int r = 0; r < ya->rank; r++)
		dims[r] = ya->dims[r];
	offs[1] = pl->L.start;
	if (x_blocked && ya->rank == 4)
		md_tag(&ymd, 4, ya->dims,
		       blk == 16 ? dnnl_aBcd16b : dnnl_aBcd8b);
	else
		md_plain(&ymd, ya->rank, ya->dims);
	md_plain(&plain, xa->rank, xa->dims);
	if (!direct && (rc = as_md(b, &ls->fwd, X->d, &plain, true, &xd, err)))
		return rc;
	CK(dnnl_memory_desc_init_submemory(&sub, &xd->md, dims, offs),
	   "slice forward");
	if (!(view = mem_alias(b, xd, &sub)))
		return nomem(err);
	if ((rc = act_make(b, pl->y, &ymd, err)) ||
	    (rc = reorder_op(b, &ls->fwd, view, Y->d, err)))
		return rc;
	if (!pl->need[0] || !Y->g)
		return 0;
	g = X->g;
	if (!direct && !(g = mem_md(b, &plain, false)))
		return nomem(err);
	CK(dnnl_memory_desc_init_submemory(&sub, &g->md, dims, offs),
	   "slice backward");
	if (!(view = mem_alias(b, g, &sub)))
		return nomem(err);
	if ((rc = zero_op(&ls->bwd, g, err)) ||
	    (rc = reorder_op(b, &ls->bwd, Y->g, view, err)))
		return rc;
	return direct ? 0 : reorder_op(b, &ls->bwd, g, X->g, err);
}

/*
 * shuffle: ShuffleNet's channel shuffle, oneDNN's shuffle primitive.  Its
 * group_size is the size of a group of the output's channels, C / groups
 * in ONNX's and PyTorch's terms (N, g, C/g, H, W transposed to N, C/g,
 * g, H, W): dst channel i + j g is src channel i C/g + j.
 */
static int build_shuffle(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	const struct hp__plan_act *xa = &b->p->acts[pl->x];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_dim_t gs = xa->dims[1] / pl->L.groups;
	dnnl_shuffle_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	int rc;

	CK(dnnl_shuffle_forward_desc_init(&d, dnnl_forward_training, &X->d->md,
					  1, gs),
	   "shuffle forward");
	if ((rc = pd_make(b, &fpd, &d, NULL, "shuffle forward", err)) ||
	    (rc = act_make(b, pl->y, &X->d->md, err)) ||
	    (rc = prim_op(b, &ls->fwd, fpd, "shuffle forward", err, 2,
			  DNNL_ARG_SRC, X->d, DNNL_ARG_DST, Y->d)))
		return rc;
	if (!pl->need[0] || !Y->g)
		return 0;
	CK(dnnl_shuffle_backward_desc_init(&d, &X->d->md, 1, gs),
	   "shuffle backward");
	if ((rc = pd_make(b, &bpd, &d, fpd, "shuffle backward", err)))
		return rc;
	return prim_op(b, &ls->bwd, bpd, "shuffle backward", err, 2,
		       DNNL_ARG_DIFF_DST, Y->g, DNNL_ARG_DIFF_SRC, X->g);
}

static int build_softmax(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	dnnl_softmax_desc_t d;
	dnnl_primitive_desc_t fpd, bpd;
	int rc;

	CK(dnnl_softmax_forward_desc_init(&d, dnnl_forward_training, &X->d->md,
					  1),
	   "softmax forward");
	if ((rc = pd_make(b, &fpd, &d, NULL, "softmax forward", err)) ||
	    (rc = act_make(b, pl->y, qmd(fpd, DNNL_ARG_DST), err)) ||
	    (rc = prim_op(b, &ls->fwd, fpd, "softmax forward", err, 2,
			  DNNL_ARG_SRC, X->d, DNNL_ARG_DST, Y->d)))
		return rc;
	if (!pl->need_dsrc)
		return 0;
	CK(dnnl_softmax_backward_desc_init(&d, &Y->d->md, &Y->d->md, 1),
	   "softmax backward");
	if ((rc = pd_make(b, &bpd, &d, fpd, "softmax backward", err)))
		return rc;
	return prim_op(b, &ls->bwd, bpd, "softmax backward", err, 3,
		       DNNL_ARG_DST, Y->d, DNNL_ARG_DIFF_DST, Y->g,
		       DNNL_ARG_DIFF_SRC, X->g);
}

static int build_dropout(struct cpu *b, int i, struct hp_error *err)
{
	const struct hp__plan_layer *pl = &b->p->layers[i];
	struct act *X = &b->acts[pl->x], *Y = &b->acts[pl->y];
	struct lstate *ls = &b->ls[i];
	struct op *op;
	int rc;

	if (!pl->inplace && (rc = act_make(b, pl->y, &X->d->md, err)))
		return rc;
	ls->mask = mem_md(b, &X->d->md, false);
	op = op_new(&ls->fwd);
	if (!ls->mask || !op)
		return nomem(err);
	op->kind = OP_DROPOUT_FWD;
	op->layer = i;
	op->a = X->d;
	op->b = Y->d;
	op->c = ls->mask;
	/* inference: the identity */
	op = op_new(&ls->inf);
	if (!op)
		return nomem(err);
	op->kind = OP_COPY;
	op->a = X->d;
	op->b = Y->d;
	ls->has_inf = true;
	if (!pl->need_dsrc)
		return 0;
	op = op_new(&ls->bwd);
	if (!op)
		return nomem(err);
	op->kind = OP_DROPOUT_BWD;
	op->layer = i;
	op->a = Y->g;
	op->b = X->g;
	op->c = ls->mask;
	return 0;
}

/* The loss reads a plain copy of the last activation. */
static int build_output(struct cpu *b, struct hp_error *err)
{
	const struct hp__plan_act *za = &b->p->acts[b->p->out];
	struct act *Z = &b->acts[b->p->out];
	dnnl_memory_desc_t plain;
	int rc;

	md_plain(&plain, za->rank, za->dims);
	if ((rc = as_md(b, &b->out_fwd, Z->d, &plain, true, &b->logits, err)))
		return rc;
	if (Z->g) {
		if ((rc = as_md(b, NULL, Z->g, &plain, false, &b->dlogits,
				err)) ||
		    (rc = reorder_back(b, &b->out_bwd, b->dlogits, Z->g, err)))
			return rc;
	}
	b->labels = mem_raw(b, (size_t)za->dims[0] * sizeof(int32_t));
	return b->labels ? 0 : nomem(err);
}

static void *alloc_zeroed(size_t bytes)
{
	size_t n = (bytes + 63) / 64 * 64;
	void *p = aligned_alloc(64, n ? n : 64);

	if (p)
		memset(p, 0, n ? n : 64);
	return p;
}

static void fill_args(struct oplist *l)
{
	for (int i = 0; i < l->n; i++) {
		struct op *op = &l->v[i];
		for (int j = 0; j < op->nargs; j++) {
			op->exec[j].arg = op->arg_id[j];
			op->exec[j].memory = op->arg[j]->m;
		}
	}
}

/* The bytes materialize() allocates: every buffer but views, and the
 * scratchpad once, each rounded up to the 64 bytes of alloc_zeroed(). */
static size_t buffer_bytes(const struct cpu *b)
{
	size_t total = (b->scratch_bytes + 63) / 64 * 64;

	for (int i = 0; i < b->nmems; i++)
		if (!b->mems[i]->scratch && !b->mems[i]->alias)
			total += (b->mems[i]->bytes + 63) / 64 * 64;
	return total;
}

/* Check the exact total against the limit, then allocate everything. */
static int materialize(struct cpu *b, struct hp_error *err)
{
	size_t total = buffer_bytes(b);

	if (total > b->o->max_bytes)
		return hp_error_set(err, HP_ETOOBIG,
				    "batch %lld needs %.1f MiB, over the limit "
				    "of %.1f MiB",
				    (long long)b->p->batch,
				    (double)total / 1048576.0,
				    (double)b->o->max_bytes / 1048576.0);
	if (b->scratch_bytes && !(b->scratch = alloc_zeroed(b->scratch_bytes)))
		return nomem(err);
	for (int i = 0; i < b->nmems; i++) {
		struct mem *m = b->mems[i];
		if (m->scratch) {
			m->p = b->scratch;
		} else if (m->alias) {
			m->p = m->alias->p;
		} else if (!(m->p = alloc_zeroed(m->bytes))) {
			return nomem(err);
		}
		if (!m->raw)
			CK(dnnl_memory_create(&m->m, &m->md, b->eng, m->p),
			   "memory");
	}
	b->total_bytes = total;
	for (int i = 0; i < b->p->nlayers; i++) {
		fill_args(&b->ls[i].fwd);
		fill_args(&b->ls[i].bwd);
		fill_args(&b->ls[i].inf);
	}
	fill_args(&b->out_fwd);
	fill_args(&b->out_bwd);
	return 0;
}

/* Copy between a buffer of layout smd and one of layout dmd. */
static int copy_md_omp(struct cpu *b, const dnnl_memory_desc_t *smd, void *sp,
		       const dnnl_memory_desc_t *dmd, void *dp,
		       struct hp_error *err)
{
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_t prim = NULL;
	dnnl_memory_t sm = NULL, dm = NULL;
	dnnl_status_t st;
	dnnl_exec_arg_t args[2];

	if (md_eq(smd, dmd)) {
		memcpy(dp, sp, dnnl_memory_desc_get_size(smd));
		return 0;
	}
	omp_set_num_threads(b->threads);
	st = dnnl_memory_create(&sm, smd, b->eng, sp);
	if (st == dnnl_success)
		st = dnnl_memory_create(&dm, dmd, b->eng, dp);
	if (st == dnnl_success)
		st = dnnl_reorder_primitive_desc_create(&pd, smd, b->eng, dmd,
							b->eng, NULL);
	if (st == dnnl_success)
		st = dnnl_primitive_create(&prim, pd);
	if (st == dnnl_success) {
		args[0] = (dnnl_exec_arg_t){DNNL_ARG_FROM, sm};
		args[1] = (dnnl_exec_arg_t){DNNL_ARG_TO, dm};
		st = dnnl_primitive_execute(prim, b->strm, 2, args);
	}
	if (st == dnnl_success)
		st = dnnl_stream_wait(b->strm);
	if (prim)
		dnnl_primitive_destroy(prim);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (sm)
		dnnl_memory_destroy(sm);
	if (dm)
		dnnl_memory_destroy(dm);
	return st == dnnl_success ? 0 : dnnl_fail(err, st, "copy");
}

/* copy_md on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int copy_md(struct cpu *b, const dnnl_memory_desc_t *smd, void *sp,
		   const dnnl_memory_desc_t *dmd, void *dp,
		   struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = copy_md_omp(b, smd, sp, dmd, dp, err);

	omp_set_num_threads(omp0);
	return rc;
}

static int cpu_param_io(void *be, int i, int what, int dir, float *buf,
			struct hp_error *err)
{
	struct cpu *b = be;
	struct param *P = &b->params[i];
	struct mem *m = what == PARAM_IO_GRAD	? P->g
			: what == PARAM_IO_OPT1 ? P->m1
			: what == PARAM_IO_OPT2 ? P->m2
						: P->w;
	/* the optimizer state is stored in the value's layout */
	const dnnl_memory_desc_t *md =
	    what >= PARAM_IO_OPT1 ? &P->w->md : &m->md;

	if (!m)
		return hp_error_set(err, HP_EINVAL,
				    "no such optimizer state with SGD");
	if (dir)
		return copy_md(b, &P->plain, buf, md, m->p, err);
	return copy_md(b, md, m->p, &P->plain, buf, err);
}

static int cpu_bn_io(void *be, int layer, int which, int dir, float *buf,
		     struct hp_error *err)
{
	struct cpu *b = be;
	struct mem *m = which ? b->ls[layer].rvar : b->ls[layer].rmean;

	if (!m)
		return hp_error_set(err, HP_EINVAL,
				    "layer %d is not a batch norm", layer);
	if (dir)
		memcpy(m->p, buf, m->bytes);
	else
		memcpy(buf, m->p, m->bytes);
	return 0;
}

/* The reorders between gradient i and a plain buffer, made once. */
static int grad_reorders(struct cpu *b, struct param *P, struct hp_error *err)
{
	dnnl_primitive_desc_t pd;
	dnnl_status_t st;

	CK(dnnl_memory_create(&P->g_plain, &P->plain, b->eng, DNNL_MEMORY_NONE),
	   "memory");
	for (int dir = 0; dir < 2; dir++) {
		const dnnl_memory_desc_t *from = dir ? &P->plain : &P->g->md;
		const dnnl_memory_desc_t *to = dir ? &P->g->md : &P->plain;
		CK(dnnl_reorder_primitive_desc_create(&pd, from, b->eng, to,
						      b->eng, NULL),
		   "reorder");
		st = dnnl_primitive_create(dir ? &P->g_in : &P->g_out, pd);
		dnnl_primitive_desc_destroy(pd);
		CK(st, "reorder");
	}
	return 0;
}

static int cpu_grads_io_omp(void *be, float *flat, int dir,
			    struct hp_error *err)
{
	struct cpu *b = be;
	int64_t off = 0;
	int rc;

	omp_set_num_threads(b->threads);
	for (int i = 0; i < b->nparams; i++) {
		struct param *P = &b->params[i];
		float *buf = flat + off;
		dnnl_exec_arg_t args[2];
		off += b->e->params[i].numel;
		if (md_eq(&P->g->md, &P->plain)) {
			if (dir)
				memcpy(P->g->p, buf, P->g->bytes);
			else
				memcpy(buf, P->g->p, P->g->bytes);
			continue;
		}
		if (!P->g_plain && (rc = grad_reorders(b, P, err)))
			return rc;
		CK(dnnl_memory_set_data_handle(P->g_plain, buf), "memory");
		args[0] = (dnnl_exec_arg_t){DNNL_ARG_FROM,
					    dir ? P->g_plain : P->g->m};
		args[1] =
		    (dnnl_exec_arg_t){DNNL_ARG_TO, dir ? P->g->m : P->g_plain};
		CK(dnnl_primitive_execute(dir ? P->g_in : P->g_out, b->strm, 2,
					  args),
		   "reorder");
	}
	CK(dnnl_stream_wait(b->strm), "wait");
	return 0;
}

/* cpu_grads_io on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int cpu_grads_io(void *be, float *flat, int dir, struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = cpu_grads_io_omp(be, flat, dir, err);

	omp_set_num_threads(omp0);
	return rc;
}

static void cpu_counters(void *be, struct hp_engine_counters *c, int dir)
{
	struct cpu *b = be;

	if (dir) {
		b->t = c->updates;
		b->fwd_count = c->forwards;
	} else {
		c->updates = b->t;
		c->forwards = b->fwd_count;
	}
}

/* hp__param_init()'s values; running variance 1. */
static int init_params(struct cpu *b, struct hp_error *err)
{
	uint64_t st = hp__rng_mix(b->o->seed ^ 0x5eedull);

	for (int i = 0; i < b->nparams; i++) {
		struct param *P = &b->params[i];
		float *v;
		int rc;
		size_t bytes = (size_t)b->e->params[i].numel * sizeof(*v);
		/* no buffer beyond those materialize() counted: a value
		 * stored plain is made in place, one in a blocked layout in
		 * its gradient's memory (unused yet, zeroed after), then
		 * reordered.  A copy of VGG16's first fc is 392 MiB. */
		if (md_eq(&P->w->md, &P->plain)) {
			hp__param_init(b->e->params, b->p, i, &st, P->w->p);
			continue;
		}
		bool in_grad = P->g && P->g->p && !P->g->scratch &&
			       !P->g->alias && P->g->bytes >= bytes;
		v = in_grad ? P->g->p : malloc(bytes);
		if (!v)
			return nomem(err);
		hp__param_init(b->e->params, b->p, i, &st, v);
		rc = cpu_param_io(b, i, 0, 1, v, err);
		if (in_grad)
			memset(P->g->p, 0, P->g->bytes);
		else
			free(v);
		if (rc)
			return rc;
	}
	for (int i = 0; i < b->p->nlayers; i++)
		for (int j = 0; j < b->ls[i].fwd.n; j++) {
			struct op *op = &b->ls[i].fwd.v[j];
			if (op->kind != OP_BN_STATS)
				continue;
			float *rv = op->d->p;
			for (size_t k = 0; k < op->d->bytes / sizeof(float);
			     k++)
				rv[k] = 1.0f;
		}
	return 0;
}

static void cpu_destroy(void *be)
{
	struct cpu *b = be;
	struct oplist *lists[3];

	if (!b)
		return;
	for (int i = -1; b->ls && i < b->p->nlayers; i++) {
		lists[0] = i < 0 ? &b->out_fwd : &b->ls[i].fwd;
		lists[1] = i < 0 ? &b->out_bwd : &b->ls[i].bwd;
		lists[2] = i < 0 ? NULL : &b->ls[i].inf;
		for (int k = 0; k < 3 && lists[k]; k++) {
			for (int j = 0; j < lists[k]->n; j++)
				if (lists[k]->v[j].prim)
					dnnl_primitive_destroy(
					    lists[k]->v[j].prim);
			free(lists[k]->v);
		}
	}
	for (int i = 0; b->params && i < b->nparams; i++) {
		struct param *P = &b->params[i];
		if (P->g_out)
			dnnl_primitive_destroy(P->g_out);
		if (P->g_in)
			dnnl_primitive_destroy(P->g_in);
		if (P->g_plain)
			dnnl_memory_destroy(P->g_plain);
	}
	for (int i = 0; i < b->npds; i++)
		dnnl_primitive_desc_destroy(b->pds[i]);
	for (int i = 0; i < b->nmems; i++) {
		struct mem *m = b->mems[i];
		if (m->m)
			dnnl_memory_destroy(m->m);
		if (!m->scratch && !m->alias)
			free(m->p);
		free(m);
	}
	free(b->scratch);
	free(b->mems);
	free(b->pds);
	free(b->acts);
	free(b->ls);
	free(b->params);
	if (b->attr)
		dnnl_primitive_attr_destroy(b->attr);
	if (b->attr_sum)
		dnnl_primitive_attr_destroy(b->attr_sum);
	if (b->strm)
		dnnl_stream_destroy(b->strm);
	if (b->eng)
		dnnl_engine_destroy(b->eng);
	free(b->lt);
	free(b);
}

static int build(struct cpu *b, struct hp_error *err)
{
	const struct hp__plan *p = b->p;
	const dnnl_version_t *v = dnnl_version();
	dnnl_memory_desc_t in;
	int rc = 0;

	CK(dnnl_engine_create(&b->eng, dnnl_cpu, 0), "engine");
	CK(dnnl_stream_create(&b->strm, b->eng, dnnl_stream_default_flags),
	   "stream");
	CK(dnnl_primitive_attr_create(&b->attr), "attributes");
	CK(dnnl_primitive_attr_set_scratchpad_mode(b->attr,
						   dnnl_scratchpad_mode_user),
	   "attributes");
	{
		dnnl_post_ops_t po;
		dnnl_status_t st;
		CK(dnnl_primitive_attr_clone(&b->attr_sum, b->attr),
		   "attributes");
		CK(dnnl_post_ops_create(&po), "post-ops");
		st = dnnl_post_ops_append_sum(po, 1.0f);
		if (st == dnnl_success)
			st = dnnl_primitive_attr_set_post_ops(b->attr_sum, po);
		dnnl_post_ops_destroy(po);
		CK(st, "post-ops");
	}
	b->acts = calloc((size_t)p->nacts, sizeof(*b->acts));
	b->ls = calloc((size_t)p->nlayers + 1, sizeof(*b->ls));
	b->params = calloc((size_t)p->nparams + 1, sizeof(*b->params));
	if (!b->acts || !b->ls || !b->params)
		return nomem(err);
	md_plain(&in, 4, p->acts[0].dims);
	if ((rc = act_make(b, 0, &in, err)))
		return rc;
	for (int i = 0; i < p->nlayers && !rc; i++) {
		const struct hp__plan_layer *pl = &p->layers[i];
		struct act *X = &b->acts[pl->x];
		struct mem *xg = X->g;
		bool swap = pl->nin == 1 && pl->acc[0] && !pl->inplace;
		if (pl->noop)
			continue;
		/* A one-input layer whose input gradient is added to another
		 * reader's writes it to a buffer of its own first. */
		if (swap && !(X->g = mem_md(b, &xg->md, false)))
			return nomem(err);
		switch (pl->L.type) {
		case HP_LAYER_CONV:
		case HP_LAYER_FC:
			rc = build_weighted(b, i, err);
			break;
		case HP_LAYER_BN:
			rc = build_bn(b, i, err);
			break;
		case HP_LAYER_LAYERNORM:
			rc = build_lnorm(b, i, err);
			break;
		case HP_LAYER_GROUPNORM:
			rc = build_gnorm(b, i, err);
			break;
		case HP_LAYER_PRELU:
			rc = build_prelu(b, i, err);
			break;
		case HP_LAYER_SCALE:
			rc = pl->L.nch > 0 ? build_chscale(b, i, err)
					   : build_eltwise_src(b, i, err);
			break;
		case HP_LAYER_GELU:
		case HP_LAYER_SOFTPLUS:
			rc = build_eltwise_src(b, i, err);
			break;
		case HP_LAYER_RELU:
		case HP_LAYER_LEAKYRELU:
		case HP_LAYER_CLIP:
		case HP_LAYER_SIGMOID:
		case HP_LAYER_TANH:
		case HP_LAYER_ELU:
			rc = build_relu(b, i, err);
			break;
		case HP_LAYER_MUL:
			rc = build_mul(b, i, err);
			break;
		case HP_LAYER_HARDSIGMOID:
			rc = build_hardsigmoid(b, i, err);
			break;
		case HP_LAYER_POOL:
		case HP_LAYER_GAP:
			rc = build_pool(b, i, err);
			break;
		case HP_LAYER_ADD:
			rc = build_add(b, i, err);
			break;
		case HP_LAYER_CONCAT:
			rc = build_concat(b, i, err);
			break;
		case HP_LAYER_SLICE:
			rc = build_slice(b, i, err);
			break;
		case HP_LAYER_SHUFFLE:
			rc = build_shuffle(b, i, err);
			break;
		case HP_LAYER_FLATTEN:
			break;
		case HP_LAYER_DROPOUT:
			rc = build_dropout(b, i, err);
			break;
		case HP_LAYER_SOFTMAX:
			rc = build_softmax(b, i, err);
			break;
		}
		if (swap) {
			if (!rc)
				rc = reorder_acc_op(b, &b->ls[i].bwd, X->g, xg,
						    err);
			X->g = xg;
		}
		if (rc)
			hp_error_prefix(err, "layer %d", i);
	}
	if (rc || (rc = build_output(b, err)))
		return rc;
	if (b->dry) {
		b->total_bytes = buffer_bytes(b);
		return 0;
	}
	if ((rc = materialize(b, err)) || (rc = init_params(b, err)))
		return rc;
	snprintf(b->desc, sizeof(b->desc),
		 "cpu: oneDNN %d.%d.%d %s, %d thread%s", v->major, v->minor,
		 v->patch, b->impl[0] ? b->impl : "", b->threads,
		 b->threads == 1 ? "" : "s");
	return 0;
}

static int cpu_create_omp(struct hp_engine *e, struct hp_error *err)
{
	struct cpu *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return nomem(err);
	b->e = e;
	b->p = &e->plan;
	b->o = &e->o;
	b->threads = e->o.threads > 0 ? e->o.threads : omp_get_num_procs();
	/* oneDNN sizes its kernels for the threads it will get */
	omp_set_num_threads(b->threads);
	if (e->o.layer_times) {
		b->lt = calloc((size_t)b->p->nlayers + 1, sizeof(*b->lt));
		if (!b->lt) {
			cpu_destroy(b);
			return nomem(err);
		}
	}
	rc = build(b, err);
	if (rc) {
		cpu_destroy(b);
		return rc;
	}
	e->be = b;
	return 0;
}

/* cpu_create on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int cpu_create(struct hp_engine *e, struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = cpu_create_omp(e, err);

	omp_set_num_threads(omp0);
	return rc;
}

/*
 * The bytes cpu_create() would allocate for plan p with options o: the same
 * build, primitive descriptors and all (so the layouts, reorders and
 * scratchpad sizes are oneDNN's own), without creating the primitives or
 * allocating the buffers.  The calling thread's OpenMP thread count is
 * left as it was.
 */
static int cpu_estimate(const struct hp__plan *p,
			const struct hp_engine_opts *o, size_t *bytes,
			struct hp_error *err)
{
	struct cpu *b = calloc(1, sizeof(*b));
	int omp0 = omp_get_max_threads(), rc;

	if (!b)
		return nomem(err);
	b->p = p;
	b->o = o;
	b->dry = true;
	b->threads = o->threads > 0 ? o->threads : omp_get_num_procs();
	omp_set_num_threads(b->threads);
	rc = build(b, err);
	*bytes = b->total_bytes;
	cpu_destroy(b);
	omp_set_num_threads(omp0);
	return rc;
}

static int cpu_set_input(void *be, const float *x, const int32_t *labels,
			 struct hp_error *err)
{
	struct cpu *b = be;

	(void)err;
	memcpy(b->acts[0].d->p, x, b->acts[0].d->bytes);
	if (labels && b->p->classes > 0)
		memcpy(b->labels->p, labels, b->labels->bytes);
	return 0;
}

static void dropout_fwd(struct cpu *b, const struct op *op)
{
	const float *x = op->a->p;
	float *y = op->b->p, *m = op->c->p;
	double p = b->p->layers[op->layer].L.p;
	float scale = (float)(1 / (1 - p));
	int64_t n = (int64_t)(op->c->bytes / sizeof(float));
	uint64_t key =
	    hp__rng_mix(b->o->seed ^ hp__rng_mix(((uint64_t)op->layer << 40) ^
						 b->fwd_count));
	uint32_t thr = (uint32_t)(p * 16777216.0);

	/* sample s of the batch draws sample first + s of the global one */
	key += (uint64_t)b->e->sample_offset * (uint64_t)(n / b->p->batch);

#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)(hp__rng_mix(key + (uint64_t)i) >> 40);
		m[i] = u >= thr ? scale : 0.0f;
		y[i] = x[i] * m[i];
	}
}

/* A group norm's shape: samples, groups, channels a group, the elements
 * of a channel (its positions) and of a group. */
struct gn_dims {
	int64_t n, g, cg, hw, k;
};

static struct gn_dims gn_dims(const struct cpu *b, const struct op *op)
{
	const struct hp__plan_layer *pl = &b->p->layers[op->layer];
	const struct hp__plan_act *x = &b->p->acts[pl->x];
	struct gn_dims d;

	d.n = x->dims[0];
	d.g = pl->L.groups;
	d.cg = x->dims[1] / d.g;
	d.hw = x->rank == 4 ? x->dims[2] * x->dims[3] : 1;
	d.k = d.cg * d.hw;
	return d;
}

/* The sum of a channel's hw values, and of their squares about m: one
 * vector pass each (a group is a few rows of a channel's positions, in
 * cache after the first), in float within a row, in double across. */
static float row_sum(const float *r, int64_t hw)
{
	float s = 0;

#pragma omp simd reduction(+ : s)
	for (int64_t j = 0; j < hw; j++)
		s += r[j];
	return s;
}

static float row_sq(const float *r, int64_t hw, float m)
{
	float q = 0;

#pragma omp simd reduction(+ : q)
	for (int64_t j = 0; j < hw; j++)
		q += (r[j] - m) * (r[j] - m);
	return q;
}

/* y = (x - mean) / sqrt(var + eps) * scale + shift over each sample's
 * group; the mean and 1 / sqrt(var + eps) kept for the backward (the
 * variance about the mean, not E[x^2] - mean^2). */
static void gn_fwd(struct cpu *b, const struct op *op)
{
	const struct gn_dims d = gn_dims(b, op);
	const double eps = b->p->layers[op->layer].L.eps;
	const float *x = op->a->p, *sc = op->c->p, *sh = op->d->p;
	float *y = op->b->p, *st = op->e->p;

#pragma omp parallel for schedule(static)
	for (int64_t ng = 0; ng < d.n * d.g; ng++) {
		const float *xg = x + ng * d.k;
		float *yg = y + ng * d.k;
		int64_t c0 = (ng % d.g) * d.cg;
		double sum = 0, sq = 0;
		float m, is;
		for (int64_t c = 0; c < d.cg; c++)
			sum += row_sum(xg + c * d.hw, d.hw);
		m = (float)(sum / (double)d.k);
		for (int64_t c = 0; c < d.cg; c++)
			sq += row_sq(xg + c * d.hw, d.hw, m);
		is = (float)(1 / sqrt(sq / (double)d.k + eps));
		st[2 * ng] = m;
		st[2 * ng + 1] = is;
		for (int64_t c = 0; c < d.cg; c++) {
			const float *r = xg + c * d.hw;
			float *o = yg + c * d.hw, a = is * sc[c0 + c],
			      s0 = sh[c0 + c];
#pragma omp simd
			for (int64_t j = 0; j < d.hw; j++)
				o[j] = (r[j] - m) * a + s0;
		}
	}
}

/*
 * Per sample and channel, the sums of dy and of dy xhat (kept in h); the
 * scale's and shift's gradients are their sums over the samples.  When
 * wanted, the input's: with dxh = dy scale, dx = is (dxh - mean(dxh) -
 * xhat mean(dxh xhat)) over the group, the means from the same sums.
 */
static void gn_bwd(struct cpu *b, const struct op *op)
{
	const struct gn_dims d = gn_dims(b, op);
	const int64_t nc = d.g * d.cg;
	const float *x = op->a->p, *dy = op->b->p, *sc = op->c->p,
		    *st = op->d->p;
	float *dsc = op->f->p, *dsh = op->g->p;
	double *part = op->h->p; /* n, c: sum dy, sum dy xhat */

#pragma omp parallel for schedule(static)
	for (int64_t ng = 0; ng < d.n * d.g; ng++) {
		const float *xg = x + ng * d.k, *dyg = dy + ng * d.k;
		int64_t c0 = (ng % d.g) * d.cg, in = ng / d.g;
		float m = st[2 * ng], is = st[2 * ng + 1], b1, b2;
		double s1 = 0, s2 = 0;
		for (int64_t c = 0; c < d.cg; c++) {
			const float *r = xg + c * d.hw, *g = dyg + c * d.hw;
			float sdy = 0, sdx = 0;
			double *pc = part + 2 * (in * nc + c0 + c);
#pragma omp simd reduction(+ : sdy, sdx)
			for (int64_t j = 0; j < d.hw; j++) {
				sdy += g[j];
				sdx += g[j] * (r[j] - m);
			}
			pc[0] = sdy;
			pc[1] = (double)sdx * is;
			s1 += (double)sc[c0 + c] * pc[0];
			s2 += (double)sc[c0 + c] * pc[1];
		}
		if (!op->e)
			continue;
		/* dx = is dxh - is mean(dxh) - xhat is mean(dxh xhat) */
		b1 = (float)(is * s1 / (double)d.k);
		b2 = (float)(is * s2 / (double)d.k);
		for (int64_t c = 0; c < d.cg; c++) {
			const float *r = xg + c * d.hw, *g = dyg + c * d.hw;
			float *o = (float *)op->e->p + ng * d.k + c * d.hw;
			float gs = is * sc[c0 + c], xs = is * b2;
#pragma omp simd
			for (int64_t j = 0; j < d.hw; j++)
				o[j] = g[j] * gs - (r[j] - m) * xs - b1;
		}
	}
	for (int64_t c = 0; c < nc; c++) {
		double a = 0, s = 0;
		for (int64_t in = 0; in < d.n; in++) {
			s += part[2 * (in * nc + c)];
			a += part[2 * (in * nc + c) + 1];
		}
		dsc[c] = (float)a;
		dsh[c] = (float)s;
	}
}

/* y = f[c] x + s[c], or the backward's dx = f[c] dy (bwd), over plain
 * N, C, H, W. */
static void chscale(struct cpu *b, const struct op *op, bool bwd)
{
	const struct hp__plan_layer *pl = &b->p->layers[op->layer];
	const struct hp__plan_act *x = &b->p->acts[pl->x];
	const int64_t c = x->dims[1],
		      hw = x->rank == 4 ? x->dims[2] * x->dims[3] : 1;
	const float *in = op->a->p;
	float *out = op->b->p;

#pragma omp parallel for schedule(static)
	for (int64_t nc = 0; nc < x->dims[0] * c; nc++) {
		float f = (float)pl->L.chf[nc % c],
		      s = bwd ? 0.0f : (float)pl->L.chs[nc % c];
		const float *r = in + nc * hw;
		float *o = out + nc * hw;
#pragma omp simd
		for (int64_t j = 0; j < hw; j++)
			o[j] = r[j] * f + s;
	}
}

static void dropout_bwd(const struct op *op)
{
	const float *dy = op->a->p, *m = op->c->p;
	float *dx = op->b->p;
	int64_t n = (int64_t)(op->c->bytes / sizeof(float));

#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < n; i++)
		dx[i] = dy[i] * m[i];
}

/* One block's 16 lanes (GCC's vector extension: one AVX-512 register,
 * two AVX2 ones, four SSE ones).  The sums (op->e) are read and written
 * as such vectors: each buffer is 64-byte aligned (alloc_zeroed()) and
 * each block's sums are a whole number of vectors. */
typedef float dw_vec __attribute__((vector_size(DW_BLOCK * sizeof(float))));

/* The shapes dw_wgrad works on. */
struct dw_shape {
	int64_t N, CB, IH, IW, OH, OW, K, S, P;
};

/*
 * Block cb's sums into acc (K x K vectors, then the bias's).  Inlined into
 * one function per vector ISA below, each compiled for its ISA: the vector
 * type becomes one AVX-512 register, two AVX2 ones or four SSE ones.
 */
static inline __attribute__((always_inline)) void
dw_block(const struct dw_shape *sh, int64_t cb, const float *x, const float *dy,
	 dw_vec *acc)
{
	const int64_t K = sh->K, S = sh->S, P = sh->P;
	dw_vec bias = {0};

	for (int64_t k = 0; k < K * K; k++)
		acc[k] = bias;
	for (int64_t n = 0; n < sh->N; n++) {
		const float *xp =
		    x + (n * sh->CB + cb) * sh->IH * sh->IW * DW_BLOCK;
		const float *gp =
		    dy + (n * sh->CB + cb) * sh->OH * sh->OW * DW_BLOCK;
		for (int64_t o = 0; o < sh->OH * sh->OW; o++) {
			dw_vec g;
			memcpy(&g, gp + o * DW_BLOCK, sizeof(g));
			bias += g;
		}
		for (int64_t oh = 0; oh < sh->OH; oh++)
			for (int64_t kh = 0; kh < K; kh++) {
				int64_t ih = oh * S - P + kh;
				const float *g = gp + oh * sh->OW * DW_BLOCK;
				const float *xr;
				if (ih < 0 || ih >= sh->IH)
					continue;
				xr = xp + ih * sh->IW * DW_BLOCK;
				for (int64_t kw = 0; kw < K; kw++) {
					/* the columns whose input is inside:
					 * 0 <= ow S - P + kw < IW */
					int64_t lo = P - kw > 0
							 ? (P - kw + S - 1) / S
							 : 0;
					int64_t hi =
					    sh->IW - 1 + P - kw < 0
						? 0
						: (sh->IW - 1 + P - kw) / S + 1;
					dw_vec v = acc[kh * K + kw];
					if (hi > sh->OW)
						hi = sh->OW;
					for (int64_t ow = lo; ow < hi; ow++) {
						dw_vec gv, xv;
						memcpy(&gv, g + ow * DW_BLOCK,
						       sizeof(gv));
						memcpy(&xv,
						       xr + (ow * S - P + kw) *
								DW_BLOCK,
						       sizeof(xv));
						v += gv * xv;
					}
					acc[kh * K + kw] = v;
				}
			}
	}
	acc[K * K] = bias;
}

/* dw_block for each vector ISA, chosen by dw_wgrad at run time (not GCC's
 * target_clones: its load-time resolver runs before a sanitizer's runtime
 * is up, and crashed the ThreadSanitizer build). */
__attribute__((target("avx512f"))) static void
dw_block_avx512(const struct dw_shape *sh, int64_t cb, const float *x,
		const float *dy, dw_vec *acc)
{
	dw_block(sh, cb, x, dy, acc);
}

__attribute__((target("avx2"))) static void
dw_block_avx2(const struct dw_shape *sh, int64_t cb, const float *x,
	      const float *dy, dw_vec *acc)
{
	dw_block(sh, cb, x, dy, acc);
}

static void dw_block_plain(const struct dw_shape *sh, int64_t cb,
			   const float *x, const float *dy, dw_vec *acc)
{
	dw_block(sh, cb, x, dy, acc);
}

/*
 * A depthwise conv's weight and bias gradients: op->a the source and op->b
 * the output's gradient, in blocks of 16 channels (nChw16c, the channels
 * padded with zeros); op->c the weight gradient, plain [C, 1, 1, K, K];
 * op->d the bias gradient [C].  oneDNN 2.6's depthwise kernel (jit_dw)
 * computes this only for 3x3 kernels on inputs of at least stride + 2
 * pixels a side; elsewhere it runs one GEMM per channel after an im2col,
 * which took 11-13 ms a layer for MobileNetV2's last 960-channel convs at
 * 2x2 (batch 32-64), a tenth of its step, and 440 ms a step for a net of
 * 7x7 depthwise convs on 64 channels at 48x48.  Here each block of 16
 * channels is one thread's, the 16 lanes summed independently (they
 * vectorize without reassociating a sum) in a fixed order: the result
 * does not depend on the threads.
 */
static void dw_wgrad(struct cpu *b, const struct op *op)
{
	const struct hp__plan_layer *pl = &b->p->layers[op->layer];
	const int64_t *xd = b->p->acts[pl->x].dims,
		      *yd = b->p->acts[pl->y].dims;
	const int64_t C = xd[1], K = pl->L.kernel;
	const struct dw_shape sh = {
	    .N = xd[0],
	    .CB = (C + DW_BLOCK - 1) / DW_BLOCK,
	    .IH = xd[2],
	    .IW = xd[3],
	    .OH = yd[2],
	    .OW = yd[3],
	    .K = K,
	    .S = pl->L.stride,
	    .P = pl->L.pad,
	};
	float *dw = op->c->p, *db = op->d->p;
	dw_vec *accs = op->e->p;
	void (*block)(const struct dw_shape *, int64_t, const float *,
		      const float *, dw_vec *) = dw_block_plain;

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		block = dw_block_avx512;
	else if (__builtin_cpu_supports("avx2"))
		block = dw_block_avx2;

#pragma omp parallel for schedule(dynamic)
	for (int64_t cb = 0; cb < sh.CB; cb++) {
		dw_vec *acc = accs + cb * (K * K + 1);
		block(&sh, cb, op->a->p, op->b->p, acc);
		for (int l = 0; l < DW_BLOCK && cb * DW_BLOCK + l < C; l++) {
			int64_t c = cb * DW_BLOCK + l;
			db[c] = acc[K * K][l];
			for (int64_t k = 0; k < K * K; k++)
				dw[c * K * K + k] = acc[k][l];
		}
	}
}

static void bn_stats(struct cpu *b, const struct op *op)
{
	const struct hp__plan_act *x = &b->p->acts[b->p->layers[op->layer].x];
	const float *mean = op->a->p, *var = op->b->p;
	float *rm = op->c->p, *rv = op->d->p;
	double n = (double)(x->dims[0] * x->dims[2] * x->dims[3]);
	double mom = b->o->bn_momentum, unb = n > 1 ? n / (n - 1) : 1;

	for (int64_t c = 0; c < x->dims[1]; c++) {
		rm[c] = (float)((1 - mom) * rm[c] + mom * mean[c]);
		rv[c] = (float)((1 - mom) * rv[c] + mom * var[c] * unb);
	}
}

static int run(struct cpu *b, struct oplist *l, struct hp_error *err)
{
	for (int i = 0; i < l->n; i++) {
		struct op *op = &l->v[i];
		switch (op->kind) {
		case OP_DNNL:
			CK(dnnl_primitive_execute(op->prim, b->strm, op->nargs,
						  op->exec),
			   "execute");
			break;
		case OP_DROPOUT_FWD:
			dropout_fwd(b, op);
			break;
		case OP_DROPOUT_BWD:
			dropout_bwd(op);
			break;
		case OP_BN_STATS:
			bn_stats(b, op);
			break;
		case OP_COPY:
			if (op->a->p != op->b->p)
				memcpy(op->b->p, op->a->p, op->a->bytes);
			break;
		case OP_DW_WGRAD:
			dw_wgrad(b, op);
			break;
		case OP_GN_FWD:
			gn_fwd(b, op);
			break;
		case OP_GN_BWD:
			gn_bwd(b, op);
			break;
		case OP_CHSCALE_FWD:
		case OP_CHSCALE_BWD:
			chscale(b, op, op->kind == OP_CHSCALE_BWD);
			break;
		case OP_ZERO:
			memset(op->a->p, 0, op->a->bytes);
			break;
		}
	}
	return 0;
}

/* Mean softmax cross-entropy (or 0.5 sum y^2 / N) and its gradient. */
static double loss_and_grad(struct cpu *b)
{
	const struct hp__plan_act *za = &b->p->acts[b->p->out];
	int64_t n = za->dims[0], k = za->dims[1] * za->dims[2] * za->dims[3];
	const float *z = b->logits->p;
	float *g = b->dlogits ? b->dlogits->p : NULL;
	const int32_t *lab = b->labels->p;
	double loss = 0, inv = 1.0 / (double)n;

	for (int64_t i = 0; i < n; i++) {
		const float *zi = z + i * k;
		float *gi = g ? g + i * k : NULL;
		if (b->p->classes > 0) {
			double mx = zi[0], s = 0, lse;
			for (int64_t j = 1; j < k; j++)
				mx = zi[j] > mx ? zi[j] : mx;
			for (int64_t j = 0; j < k; j++)
				s += exp(zi[j] - mx);
			lse = mx + log(s);
			loss += lse - zi[lab[i]];
			for (int64_t j = 0; gi && j < k; j++)
				gi[j] = (float)((exp(zi[j] - lse) -
						 (j == lab[i] ? 1 : 0)) *
						inv);
		} else {
			for (int64_t j = 0; j < k; j++) {
				loss += 0.5 * (double)zi[j] * zi[j];
				if (gi)
					gi[j] = (float)(zi[j] * inv);
			}
		}
	}
	return loss * inv;
}

/*
 * run() with the layer's time added to b->lt[slot] when layers are timed:
 * the stream is drained first so the time is the layer's own (the CPU
 * stream is synchronous; the wait costs nothing there).
 */
static int run_timed(struct cpu *b, struct oplist *l, int slot,
		     struct hp_error *err)
{
	double t0;
	int rc;

	if (!b->lt)
		return run(b, l, err);
	t0 = hp_now_s();
	if ((rc = run(b, l, err)))
		return rc;
	CK(dnnl_stream_wait(b->strm), "wait");
	b->lt[slot] += hp_now_s() - t0;
	return 0;
}

static int cpu_forward_omp(void *be, double *loss, struct hp_error *err)
{
	struct cpu *b = be;
	double t0;
	int rc;

	omp_set_num_threads(b->threads);
	b->fwd_count++;
	for (int i = 0; i < b->p->nlayers; i++)
		if ((rc = run_timed(b, &b->ls[i].fwd, i, err)))
			return rc;
	t0 = b->lt ? hp_now_s() : 0;
	if ((rc = run(b, &b->out_fwd, err)))
		return rc;
	CK(dnnl_stream_wait(b->strm), "wait");
	*loss = loss_and_grad(b);
	if (b->lt)
		b->lt[b->p->nlayers] += hp_now_s() - t0;
	b->fwd_done = true;
	return 0;
}

/* cpu_forward on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int cpu_forward(void *be, double *loss, struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = cpu_forward_omp(be, loss, err);

	omp_set_num_threads(omp0);
	return rc;
}

static int cpu_infer_omp(void *be, double *loss, struct hp_error *err)
{
	struct cpu *b = be;
	int rc;

	omp_set_num_threads(b->threads);
	b->fwd_done = b->bwd_done = false;
	for (int i = 0; i < b->p->nlayers; i++) {
		struct lstate *ls = &b->ls[i];
		if ((rc = run(b, ls->has_inf ? &ls->inf : &ls->fwd, err)))
			return rc;
	}
	if ((rc = run(b, &b->out_fwd, err)))
		return rc;
	CK(dnnl_stream_wait(b->strm), "wait");
	*loss = loss_and_grad(b);
	return 0;
}

/* cpu_infer on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int cpu_infer(void *be, double *loss, struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = cpu_infer_omp(be, loss, err);

	omp_set_num_threads(omp0);
	return rc;
}

static int cpu_backward_omp(void *be, struct hp_error *err)
{
	struct cpu *b = be;
	int rc;

	if (!b->fwd_done)
		return hp_error_set(err, HP_EINVAL, "backward before forward");
	omp_set_num_threads(b->threads);
	if ((rc = run_timed(b, &b->out_bwd, b->p->nlayers, err)))
		return rc;
	for (int i = b->p->nlayers - 1; i >= 0; i--)
		if ((rc = run_timed(b, &b->ls[i].bwd, i, err)))
			return rc;
	CK(dnnl_stream_wait(b->strm), "wait");
	b->bwd_done = true;
	return 0;
}

/* cpu_backward on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int cpu_backward(void *be, struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = cpu_backward_omp(be, err);

	omp_set_num_threads(omp0);
	return rc;
}

static int cpu_update_omp(void *be, struct hp_error *err)
{
	struct cpu *b = be;
	const struct hp_engine_opts *o = b->o;
	float lr = (float)o->lr, wd = (float)o->weight_decay;

	if (!b->bwd_done)
		return hp_error_set(err, HP_EINVAL, "update before backward");
	omp_set_num_threads(b->threads);
	b->t++;
	for (int k = 0; k < b->nparams; k++) {
		struct param *P = &b->params[k];
		float *w = P->w->p, *g = P->g->p, *m = P->m1->p;
		int64_t n = (int64_t)(P->w->bytes / sizeof(float));
		double t0 = b->lt ? hp_now_s() : 0;
		if (o->opt == HP_OPT_SGD) {
			float mu = (float)o->momentum;
#pragma omp parallel for simd schedule(static) if (n > 65536)
			for (int64_t i = 0; i < n; i++) {
				float d = g[i] + wd * w[i];
				m[i] = mu * m[i] + d;
				w[i] -= lr * m[i];
			}
		} else {
			float b1 = (float)o->beta1, b2 = (float)o->beta2;
			float *v = P->m2->p;
			double bc1 = 1 - pow(o->beta1, (double)b->t);
			double bc2 = 1 - pow(o->beta2, (double)b->t);
			float step = (float)(o->lr / bc1);
			float rbc2 = (float)(1 / sqrt(bc2)),
			      eps = (float)o->eps;
#pragma omp parallel for simd schedule(static) if (n > 65536)
			for (int64_t i = 0; i < n; i++) {
				float d = g[i] + wd * w[i];
				m[i] = b1 * m[i] + (1 - b1) * d;
				v[i] = b2 * v[i] + (1 - b2) * d * d;
				w[i] -=
				    step * m[i] / (sqrtf(v[i]) * rbc2 + eps);
			}
		}
		if (b->lt)
			b->lt[b->e->params[k].layer] += hp_now_s() - t0;
	}
	if (b->lt)
		b->lt_steps++;
	return 0;
}

/* cpu_update on the engine's threads, leaving the calling thread's
 * OpenMP thread count as it was */
static int cpu_update(void *be, struct hp_error *err)
{
	int omp0 = omp_get_max_threads();
	int rc = cpu_update_omp(be, err);

	omp_set_num_threads(omp0);
	return rc;
}

static int cpu_layer_times(const void *be, double *out, int n, int *steps)
{
	const struct cpu *b = be;

	if (!b->lt)
		return HP_EINVAL;
	for (int i = 0; i < n && i <= b->p->nlayers; i++)
		out[i] = b->lt[i];
	*steps = b->lt_steps;
	return 0;
}

static void cpu_layer_times_reset(void *be)
{
	struct cpu *b = be;

	if (b->lt)
		memset(b->lt, 0, ((size_t)b->p->nlayers + 1) * sizeof(*b->lt));
	b->lt_steps = 0;
}

static int cpu_output_get(void *be, float *out, struct hp_error *err)
{
	struct cpu *b = be;

	(void)err;
	memcpy(out, b->logits->p, b->logits->bytes);
	return 0;
}

static int cpu_input_grad_get(void *be, float *out, struct hp_error *err)
{
	struct cpu *b = be;

	(void)err;
	memcpy(out, b->acts[0].g->p, b->acts[0].g->bytes);
	return 0;
}

static int cpu_mask_get(void *be, int layer, float *out, struct hp_error *err)
{
	struct cpu *b = be;
	const struct hp__plan_act *x = &b->p->acts[b->p->layers[layer].x];
	struct mem *m = b->ls[layer].mask;
	dnnl_memory_desc_t plain;

	if (!m) { /* p = 0: keeps everything */
		int64_t n = x->dims[0] * x->dims[1] * x->dims[2] * x->dims[3];
		for (int64_t i = 0; i < n; i++)
			out[i] = 1.0f;
		return 0;
	}
	md_plain(&plain, x->rank, x->dims);
	return copy_md(b, &m->md, m->p, &plain, out, err);
}

static size_t cpu_peak_bytes(const void *be)
{
	return ((const struct cpu *)be)->total_bytes;
}

static const char *cpu_desc(const void *be)
{
	return ((const struct cpu *)be)->desc;
}

const struct hp__engine_ops hp__engine_cpu_ops = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .set_input = cpu_set_input,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .update = cpu_update,
    .infer = cpu_infer,
    .param_io = cpu_param_io,
    .bn_io = cpu_bn_io,
    .grads_io = cpu_grads_io,
    .counters = cpu_counters,
    .output_get = cpu_output_get,
    .input_grad_get = cpu_input_grad_get,
    .mask_get = cpu_mask_get,
    .peak_bytes = cpu_peak_bytes,
    .estimate = cpu_estimate,
    .desc = cpu_desc,
    .layer_times = cpu_layer_times,
    .layer_times_reset = cpu_layer_times_reset,
};
