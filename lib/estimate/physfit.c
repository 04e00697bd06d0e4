/*
 * physfit.c - fitting the physical model: robust non-linear least squares
 * of log step time (GSL's trust-region Levenberg-Marquardt, Huber-
 * reweighted twice), with a prior on every free parameter and optional
 * per-device log scales.
 *
 * What makes its cost grow gently with rows.  The points are compiled once
 * per fit: each distinct (workload, device figures) into its layers'
 * padded FLOPs and traffic (a key: one sum of layer times per evaluation
 * however many rows share it).  When the points outnumber their distinct
 * predictions (key, source, devices, device scale) at least twice, the
 * points of one prediction enter the solver as one weighted residual,
 *   sum_i w_i (p - y_i)^2 = W (p - ybar)^2 + sum_i w_i (y_i - ybar)^2,
 * the last term a constant residual of its own: the same norm, gradient
 * and Gauss-Newton matrix as the rows', so the same solver steps up to
 * rounding.  Otherwise each point is its own residual, as before.
 *
 * The Jacobian is GSL's forward difference, column by column, from the
 * parts of each layer's time at the last evaluation: a parameter
 * recomputes only the parts it moves (a class's efficiency its layers'
 * compute time, the cache term their traffic), a source's or a device's
 * parameter only its groups.  It is the matrix gsl_multifit_nlinear_df()
 * computes by evaluating everything once per parameter, to the bit
 * (tests/unit/test_estimate.c).
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

/* Weight of a layer class's measured time (the profiler's split) against
 * the step's: each class counts half a measurement. */
#define CLASS_WEIGHT 0.5
/* Weight of the prior on each free parameter (log units) against one
 * measurement's log residual: keeps parameters the data cannot see at
 * their physical defaults. */
#define PRIOR_WEIGHT 0.05

/* A distinct (workload, device figures): one sum of layer times. */
struct key {
	const struct hp_workload *w;
	const struct hp__dev_spec *d;
	int l0, nl;	/* its layers, in order: lay[u0 + seq[l0 .. l0 + nl)] */
	int u0, nu;	/* its distinct layers: lay[u0 .. u0 + nu) */
	unsigned cmask; /* layer classes it has (bit k) */
	bool tf32;	/* its peak moves with kappa */
	bool amp;	/* ... with kappa_amp */
};

/* Points whose predictions are equal: one residual per group. */
struct group {
	int key, src, ndev;
	int dev; /* index of its log scale; -1: none */
	double link_bw;
	int ci;	   /* index among the groups with class times; -1: none */
	double y0; /* the first member's log time */
	double yc0[HP_EST_NCLASS]; /* ... and class times (the first
				      that measured each) */
	double w, y; /* sum of the members' weights, their mean log time */
	double wc[HP_EST_NCLASS], yc[HP_EST_NCLASS]; /* the same per class,
							over members that
							measured it */
};

struct nl_ctx {
	const struct hp__fitpt *pts;
	int n;
	double *y;	  /* log of each point's time */
	double *yc;	  /* ... and of its class times (NaN: none) */
	int *grp;	  /* each point's group */
	const double *wt; /* each point's weight */
	struct key *keys;
	int nkeys;
	struct hp__layer *lay; /* each key's distinct layers */
	int nlay, nuniq;
	int *seq; /* each key's layers in order, as indices of its distinct
		     ones (a ResNet-50 has 174 layers, 54 distinct) */
	struct group *grps;
	int ngrp, ncls;
	/* Groups of more than one point: the spread of their members around
	 * their means is one more residual, constant, so that the residuals'
	 * norm is the rows' (the solver's tests and steps use it). */
	bool spread;
	double spread_sq;
	/* the problem */
	double th[HP__NTH];
	double prior[HP__NTH];
	int idx[HP__NTH];
	int nfree;
	int nscale; /* per-device log scales, fitted with the rest */
	double *scale;
	double shrink; /* their ridge: as if this many rows said 0 */
	size_t nres;
	double h; /* the solver's forward-difference step */
	/* The last evaluation: its parameters, layer times, per-key sums,
	 * per-group times and residuals. */
	bool have;
	double cth[HP__NTH];
	double *csc;
	struct hp__layer_parts *parts;	    /* each layer's */
	double *tl, *ksum, *kcls, *gt, *f0; /* tl, parts: per distinct layer */
	double *vbuf; /* one key's distinct layers' times */
	/* scratch */
	double *ksum2, *kcls2, *sc;
	unsigned char *kchg;
};

static double clamp_th(double v)
{
	/* Keep exp() finite whatever the solver tries. */
	return v > 30 ? 30 : v < -60 ? -60 : v;
}

static double clamp_sc(double v)
{
	return v > 20 ? 20 : v < -20 ? -20 : v;
}

/* --- compiling the points ------------------------------------------- */

/* An index of distinct fixed-size ids (hash table of positions). */
struct dedup {
	unsigned char *ids;
	size_t size; /* bytes per id */
	int n;
	int *slot; /* -1: empty */
	size_t mask;
};

static int dedup_init(struct dedup *t, size_t size, int max)
{
	size_t ns = 16;

	while (ns < 2 * (size_t)max)
		ns *= 2;
	t->size = size;
	t->n = 0;
	t->mask = ns - 1;
	t->ids = malloc((size_t)(max ? max : 1) * size);
	t->slot = malloc(ns * sizeof(*t->slot));
	if (!t->ids || !t->slot)
		return HP_ENOMEM;
	memset(t->slot, 0xff, ns * sizeof(*t->slot));
	return 0;
}

static void dedup_release(struct dedup *t)
{
	free(t->ids);
	free(t->slot);
}

/* The index of id, added when new (*added); room for max ids is there. */
static int dedup_find(struct dedup *t, const void *id, bool *added)
{
	const unsigned char *b = id;
	uint64_t h = 1469598103934665603ull;
	size_t s;

	for (size_t i = 0; i < t->size; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	for (s = (size_t)(h ^ h >> 29) & t->mask; t->slot[s] >= 0;
	     s = (s + 1) & t->mask)
		if (!memcmp(t->ids + (size_t)t->slot[s] * t->size, id,
			    t->size)) {
			*added = false;
			return t->slot[s];
		}
	memcpy(t->ids + (size_t)t->n * t->size, id, t->size);
	t->slot[s] = t->n;
	*added = true;
	return t->n++;
}

/* What makes two points' layer sums equal (no padding bytes: hashed). */
struct key_id {
	const struct hp_workload *w;
	double fp32, tf32, bw, fp16;
	int chan_block, fuse, prec, pad;
};
/* What makes two points' predictions equal (own: the point's index + 1
 * when points are not merged, else 0). */
struct group_id {
	double link_bw;
	int key, src, ndev, dev, own;
};

/* Points are merged into their groups when there are at least this many
 * times as many points as groups; below, each point is its own residual
 * (merging would save little, and the solver's path stays the points'
 * own, to the bit). */
#define MERGE_MIN_RATIO 2

static void group_id_of(const struct nl_ctx *c, int i, int key, bool merge,
			struct group_id *gid)
{
	const struct hp__fitpt *p = &c->pts[i];

	memset(gid, 0, sizeof(*gid));
	gid->key = key;
	gid->src = p->src;
	gid->ndev = p->ndev;
	gid->dev =
	    c->nscale > 0 && p->dev >= 0 && p->dev < c->nscale ? p->dev : -1;
	gid->link_bw = p->d.link_bw;
	gid->own = merge ? 0 : i + 1;
}

static int ctx_alloc_keys(struct nl_ctx *c)
{
	size_t nk = (size_t)c->nkeys + 1, ng = (size_t)c->ngrp + 1;

	int maxnu = 0;

	for (int k = 0; k < c->nkeys; k++)
		if (c->keys[k].nu > maxnu)
			maxnu = c->keys[k].nu;
	c->tl = malloc(((size_t)c->nuniq + 1) * sizeof(*c->tl));
	c->parts = malloc(((size_t)c->nuniq + 1) * sizeof(*c->parts));
	c->vbuf = malloc(((size_t)maxnu + 1) * sizeof(*c->vbuf));
	c->ksum = malloc(nk * sizeof(*c->ksum));
	c->kcls = malloc(nk * HP_EST_NCLASS * sizeof(*c->kcls));
	c->ksum2 = malloc(nk * sizeof(*c->ksum2));
	c->kcls2 = malloc(nk * HP_EST_NCLASS * sizeof(*c->kcls2));
	c->kchg = malloc(nk);
	c->gt = malloc(ng * sizeof(*c->gt));
	c->csc = calloc((size_t)c->nscale + 1, sizeof(*c->csc));
	c->sc = calloc((size_t)c->nscale + 1, sizeof(*c->sc));
	if (!c->tl || !c->parts || !c->vbuf || !c->ksum || !c->kcls ||
	    !c->ksum2 || !c->kcls2 || !c->kchg || !c->gt || !c->csc || !c->sc)
		return HP_ENOMEM;
	return 0;
}

/*
 * Compile pts into keys, layers and groups (c->pts, c->n and c->nscale
 * set).  Points of one group predict the same time whatever the
 * parameters: same workload, device figures, source, devices and scale.
 */
static int build(struct nl_ctx *c)
{
	struct dedup kt = {0}, gt = {0};
	int *pkey = NULL, rc = HP_ENOMEM;
	bool merge;

	c->grp = malloc(((size_t)c->n + 1) * sizeof(*c->grp));
	c->y = malloc(((size_t)c->n + 1) * sizeof(*c->y));
	c->yc = malloc(((size_t)c->n + 1) * HP_EST_NCLASS * sizeof(*c->yc));
	pkey = malloc(((size_t)c->n + 1) * sizeof(*pkey));
	if (!c->grp || !c->y || !c->yc || !pkey ||
	    dedup_init(&kt, sizeof(struct key_id), c->n) ||
	    dedup_init(&gt, sizeof(struct group_id), c->n))
		goto out;
	c->keys = calloc((size_t)c->n + 1, sizeof(*c->keys));
	c->grps = calloc((size_t)c->n + 1, sizeof(*c->grps));
	if (!c->keys || !c->grps)
		goto out;
	for (int i = 0; i < c->n; i++) {
		const struct hp__fitpt *p = &c->pts[i];
		struct key_id kid;
		bool added;

		memset(&kid, 0, sizeof(kid));
		kid.w = p->w;
		kid.fp32 = p->d.fp32;
		kid.tf32 = p->d.tf32;
		kid.bw = p->d.bw;
		kid.chan_block = p->d.chan_block;
		kid.fuse = p->d.fuse_bn_relu;
		kid.fp16 = p->d.fp16;
		kid.prec = p->d.prec;
		pkey[i] = dedup_find(&kt, &kid, &added);
		if (added) {
			struct key *K = &c->keys[pkey[i]];
			K->w = p->w;
			K->d = &p->d;
			K->nl = 0;
			for (int l = 0; l < p->w->nlayers; l++)
				K->nl += !(p->d.fuse_bn_relu &&
					   p->w->after_bn && p->w->after_bn[l]);
			K->l0 = c->nlay;
			if (c->nlay > INT32_MAX - K->nl) {
				rc = HP_ETOOBIG;
				goto out;
			}
			c->nlay += K->nl;
			K->tf32 =
			    p->d.prec == HP_PREC_FP32 && p->d.tf32 > p->d.fp32;
			K->amp =
			    p->d.prec == HP_PREC_AMP && p->d.fp16 > p->d.fp32;
		}
	}
	c->nkeys = kt.n;
	c->lay = malloc(((size_t)c->nlay + 1) * sizeof(*c->lay));
	c->seq = malloc(((size_t)c->nlay + 1) * sizeof(*c->seq));
	if (!c->lay || !c->seq)
		goto out;
	/* Layers of a key equal in every figure (a network's repeated
	 * blocks) take equal times: each is computed once per evaluation,
	 * and added in its place. */
	for (int k = 0; k < c->nkeys; k++) {
		struct key *K = &c->keys[k];
		int m = 0;
		K->u0 = c->nuniq;
		for (int l = 0; l < K->w->nlayers; l++) {
			struct hp__layer L;
			int u;
			memset(&L, 0, sizeof(L)); /* padding too: memcmp */
			if (!hp__layer_of(K->w, l, K->d, &L))
				continue;
			for (u = 0; u < K->nu; u++)
				if (!memcmp(&c->lay[K->u0 + u], &L, sizeof(L)))
					break;
			if (u == K->nu) {
				c->lay[K->u0 + K->nu++] = L;
				K->cmask |= 1u << L.cls;
			}
			c->seq[K->l0 + m++] = u;
		}
		c->nuniq += K->nu;
	}
	/* merge only when the points outnumber their groups enough */
	for (int i = 0; i < c->n; i++) {
		struct group_id gid;
		bool added;
		group_id_of(c, i, pkey[i], true, &gid);
		dedup_find(&gt, &gid, &added);
	}
	merge = (int64_t)gt.n * MERGE_MIN_RATIO <= c->n;
	gt.n = 0;
	memset(gt.slot, 0xff, (gt.mask + 1) * sizeof(*gt.slot));
	c->ncls = 0;
	for (int i = 0; i < c->n; i++) {
		const struct hp__fitpt *p = &c->pts[i];
		struct group_id gid;
		bool added, any = false;

		group_id_of(c, i, pkey[i], merge, &gid);
		c->grp[i] = dedup_find(&gt, &gid, &added);
		c->y[i] = log(p->t);
		for (int k = 0; k < HP_EST_NCLASS; k++)
			c->yc[(size_t)i * HP_EST_NCLASS + k] =
			    p->tcls[k] > 0 ? log(p->tcls[k]) : NAN;
		if (added) {
			struct group *G = &c->grps[c->grp[i]];
			G->key = gid.key;
			G->src = gid.src;
			G->ndev = gid.ndev;
			G->dev = gid.dev;
			G->link_bw = gid.link_bw;
			G->ci = -1;
			G->y0 = c->y[i];
			for (int k = 0; k < HP_EST_NCLASS; k++)
				G->yc0[k] = NAN;
		}
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			struct group *G = &c->grps[c->grp[i]];
			if (!(p->tcls[k] > 0))
				continue;
			any = true;
			if (isnan(G->yc0[k]))
				G->yc0[k] =
				    c->yc[(size_t)i * HP_EST_NCLASS + k];
		}
		if (any && c->grps[c->grp[i]].ci < 0)
			c->grps[c->grp[i]].ci = c->ncls++;
	}
	c->ngrp = gt.n;
	c->spread = c->ngrp < c->n;
	rc = ctx_alloc_keys(c);
out:
	dedup_release(&kt);
	dedup_release(&gt);
	free(pkey);
	return rc;
}

static void ctx_release(struct nl_ctx *c)
{
	free(c->grp);
	free(c->y);
	free(c->yc);
	free(c->keys);
	free(c->lay);
	free(c->seq);
	free(c->grps);
	free(c->tl);
	free(c->parts);
	free(c->vbuf);
	free(c->ksum);
	free(c->kcls);
	free(c->ksum2);
	free(c->kcls2);
	free(c->kchg);
	free(c->gt);
	free(c->csc);
	free(c->sc);
	free(c->f0);
}

/*
 * Each group's weight and weighted mean log time (and per class) from the
 * points' weights, as sums of w (y - y0) around the first member's y0: a
 * group of one point gets exactly its weight and its log time.
 */
static void group_weights(struct nl_ctx *c)
{
	for (int g = 0; g < c->ngrp; g++) {
		struct group *G = &c->grps[g];
		G->w = G->y = 0;
		for (int k = 0; k < HP_EST_NCLASS; k++)
			G->wc[k] = G->yc[k] = 0;
	}
	for (int i = 0; i < c->n; i++) {
		const double *yc = &c->yc[(size_t)i * HP_EST_NCLASS];
		struct group *G = &c->grps[c->grp[i]];
		G->w += c->wt[i];
		G->y += c->wt[i] * (c->y[i] - G->y0);
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			if (isnan(yc[k]))
				continue;
			G->wc[k] += c->wt[i];
			G->yc[k] += c->wt[i] * (yc[k] - G->yc0[k]);
		}
	}
	for (int g = 0; g < c->ngrp; g++) {
		struct group *G = &c->grps[g];
		G->y = G->y0 + G->y / G->w;
		for (int k = 0; k < HP_EST_NCLASS; k++)
			if (G->wc[k] > 0)
				G->yc[k] = G->yc0[k] + G->yc[k] / G->wc[k];
	}
	c->spread_sq = 0;
	for (int i = 0; c->spread && i < c->n; i++) {
		const double *yc = &c->yc[(size_t)i * HP_EST_NCLASS];
		const struct group *G = &c->grps[c->grp[i]];
		double d = c->y[i] - G->y;
		c->spread_sq += c->wt[i] * d * d;
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			if (isnan(yc[k]))
				continue;
			d = yc[k] - G->yc[k];
			c->spread_sq +=
			    CLASS_WEIGHT * CLASS_WEIGHT * c->wt[i] * d * d;
		}
	}
	c->have = false; /* the residuals move with the weights */
}

/* --- evaluating ------------------------------------------------------- */

/* One layer's time with the parts in pmask recomputed at r (P: its
 * parts at the last evaluation; with store, what is computed replaces
 * them and its time *tl). */
static double layer_one(const struct hp__layer *L, struct hp__layer_parts *P,
			const struct hp__dev_rates *r, unsigned pmask,
			bool store, double *tl)
{
	struct hp__layer_parts p = *P;
	double v;

	hp__layer_parts(L, r, pmask, &p);
	v = hp__layer_combine(&p);
	if (store) {
		*P = p;
		*tl = v;
	}
	return v;
}

/*
 * Sum of key K's layer times and overhead (t0), and per class (cls): the
 * layers of the classes in cmask with their parts in pmask recomputed at
 * rates r, the other parts and layers as at the last evaluation; with
 * store, what is computed becomes the last evaluation's.  The sum runs
 * in layer order whatever is recomputed.
 */
static void key_sum(struct nl_ctx *c, const struct key *K,
		    const struct hp__dev_rates *r, double t0, unsigned cmask,
		    unsigned pmask, bool store, double *sum, double *cls)
{
	const struct hp__layer *L = &c->lay[K->u0];
	struct hp__layer_parts *P = &c->parts[K->u0];
	const int *seq = &c->seq[K->l0];
	double *tl = &c->tl[K->u0], *v = c->vbuf;
	double t = t0, c0 = 0, c1 = 0, c2 = 0;

	for (int u = 0; u < K->nu; u++)
		v[u] = cmask >> L[u].cls & 1
			   ? layer_one(&L[u], &P[u], r, pmask, store, &tl[u])
			   : tl[u];
	for (int l = 0; l < K->nl; l++) {
		double x = v[seq[l]];
		t += x;
		/* each class's sum in a register: in memory, each addition
		 * would wait for the store of the one before */
		if (L[seq[l]].cls == HP_EST_CONV)
			c0 += x;
		else if (L[seq[l]].cls == HP_EST_FC)
			c1 += x;
		else
			c2 += x;
	}
	cls[HP_EST_CONV] = c0;
	cls[HP_EST_FC] = c1;
	cls[HP_EST_OTHER] = c2;
	*sum = t;
}

/* Group G's predicted time from its key's sum at e and scales sc. */
static double group_time(const struct nl_ctx *c, const struct group *G,
			 const struct hp__th_exp *e, const double *sc,
			 double ksum)
{
	const struct hp_workload *w = c->keys[G->key].w;

	/* the type's scale corrects its compute, before the all-reduce (as
	 * hp__phys_time_cls() applies it) */
	if (G->dev >= 0)
		ksum *= exp(sc[G->dev]);
	return hp__step_post(e, ksum, G->src, w->batch, G->ndev, w->params,
			     G->link_bw, NULL);
}

static double step_res(const struct group *G, double t)
{
	double r = log(t) - G->y;

	if (!isfinite(r))
		r = 50;
	return sqrt(G->w) * r;
}

/* Where the step went, where measured: class k's own time. */
static double class_res(const struct group *G, int k, double pc)
{
	double r = 0;

	if (G->wc[k] > 0 && pc > 0)
		r = log(pc) - G->yc[k];
	if (!isfinite(r))
		r = 50;
	return CLASS_WEIGHT * sqrt(G->wc[k]) * r;
}

/* Rows of the residual vector: the groups' step times, 3 class times of
 * each group with class times, a prior per free parameter, a ridge per
 * scale, and the groups' spread when a group has more than one point. */
static size_t row_cls(const struct nl_ctx *c, const struct group *G, int k)
{
	return (size_t)c->ngrp + (size_t)G->ci * HP_EST_NCLASS + (size_t)k;
}

static size_t row_prior(const struct nl_ctx *c, int j)
{
	return (size_t)c->ngrp + (size_t)c->ncls * HP_EST_NCLASS + (size_t)j;
}

/* Evaluate everything at th and sc into c's cache (f0: the residuals). */
static void eval_full(struct nl_ctx *c, const double *th, const double *sc)
{
	struct hp__th_exp e;

	hp__th_exp_init(&e, th);
	for (int k = 0; k < c->nkeys; k++) {
		const struct key *K = &c->keys[k];
		struct hp__dev_rates r;
		hp__dev_rates_init(&r, &e, th, K->d);
		key_sum(c, K, &r, e.t0, ~0u, HP__PART_ALL, true, &c->ksum[k],
			&c->kcls[(size_t)k * HP_EST_NCLASS]);
	}
	for (int g = 0; g < c->ngrp; g++) {
		const struct group *G = &c->grps[g];
		c->gt[g] = group_time(c, G, &e, sc, c->ksum[G->key]);
		if (!c->f0)
			continue;
		c->f0[g] = step_res(G, c->gt[g]);
		if (G->ci >= 0)
			for (int k = 0; k < HP_EST_NCLASS; k++)
				c->f0[row_cls(c, G, k)] = class_res(
				    G, k,
				    c->kcls[(size_t)G->key * HP_EST_NCLASS +
					    k]);
	}
	if (c->f0) {
		for (int j = 0; j < c->nfree; j++)
			c->f0[row_prior(c, j)] =
			    PRIOR_WEIGHT *
			    (th[c->idx[j]] - c->prior[c->idx[j]]);
		for (int d = 0; d < c->nscale; d++)
			c->f0[row_prior(c, c->nfree + d)] =
			    sqrt(c->shrink) * sc[d];
		if (c->spread)
			c->f0[row_prior(c, c->nfree + c->nscale)] =
			    sqrt(c->spread_sq);
	}
	memcpy(c->cth, th, sizeof(c->cth));
	if (c->nscale)
		memcpy(c->csc, sc, (size_t)c->nscale * sizeof(*sc));
	c->have = c->f0 != NULL;
}

/* The parameters and scales the solver's x stands for. */
static void decode(const struct nl_ctx *c, const gsl_vector *x, double *th,
		   double *sc)
{
	memcpy(th, c->th, sizeof(c->th));
	for (int j = 0; j < c->nfree; j++)
		th[c->idx[j]] = clamp_th(gsl_vector_get(x, (size_t)j));
	for (int d = 0; d < c->nscale; d++)
		sc[d] = clamp_sc(gsl_vector_get(x, (size_t)(c->nfree + d)));
}

static int nl_f(const gsl_vector *x, void *ud, gsl_vector *f)
{
	struct nl_ctx *c = ud;
	double th[HP__NTH];

	decode(c, x, th, c->sc);
	eval_full(c, th, c->sc);
	for (size_t i = 0; i < c->nres; i++)
		gsl_vector_set(f, i, c->f0[i]);
	return GSL_SUCCESS;
}

/* Which layer classes parameter j moves (bits) and which parts of their
 * times (HP__PART_*), and whether only in keys whose peak has a TF32
 * part (kappa) or an FP16 one (kappa_amp); 0: none (t0, and what applies
 * after the layer sum). */
static unsigned param_classes(int j, unsigned *parts, bool *tf32_only,
			      bool *amp_only)
{
	*tf32_only = false;
	*amp_only = false;
	*parts = HP__PART_TC0;
	switch (j) {
	case HP__TH_EMAX + HP_EST_CONV:
	case HP__TH_TAU + HP_EST_CONV:
		return 1u << HP_EST_CONV;
	case HP__TH_EMAX + HP_EST_FC:
	case HP__TH_TAU + HP_EST_FC:
		return 1u << HP_EST_FC;
	case HP__TH_EMAX + HP_EST_OTHER:
	case HP__TH_TAU + HP_EST_OTHER:
		return 1u << HP_EST_OTHER;
	case HP__TH_KAPPA:
		*tf32_only = true;
		return ~0u;
	case HP__TH_KAPPA_AMP:
		*amp_only = true;
		return ~0u;
	case HP__TH_CHALF:
		*parts = HP__PART_F1;
		return 1u << HP_EST_CONV;
	case HP__TH_SHALF:
		*parts = HP__PART_F2;
		return 1u << HP_EST_CONV;
	case HP__TH_KHALF:
		*parts = HP__PART_F3;
		return 1u << HP_EST_CONV;
	case HP__TH_EM:
		*parts = HP__PART_TA;
		return ~0u;
	case HP__TH_EMW:
		*parts = HP__PART_TW0;
		return ~0u;
	case HP__TH_IDX: /* pooling is of class other */
		*parts = HP__PART_TA;
		return 1u << HP_EST_OTHER;
	case HP__TH_CACHE:
	case HP__TH_CACHEX:
		*parts = HP__PART_CACHE;
		return ~0u;
	default:
		*parts = 0;
		return 0;
	}
}

/* Whether parameter j moves group G's time after its layer sum. */
static bool param_moves_post(int j, const struct group *G)
{
	switch (j) {
	case HP__TH_SRC:
	case HP__TH_SRC_T0:
	case HP__TH_SRC_TS:
		return G->src == HP__SRC_GAVEL;
	case HP__TH_SRC + 1:
	case HP__TH_SRC_T0 + 1:
	case HP__TH_SRC_TS + 1:
		return G->src == HP__SRC_ZEUS;
	case HP__TH_COMM:
		return G->ndev > 1;
	default:
		return false;
	}
}

/* Column j of the Jacobian, free parameter pj moved to v (x_j + delta),
 * inv = 1 / delta; the other rows of the column are left 0: their
 * residuals do not move. */
static void column_param(struct nl_ctx *c, gsl_matrix *J, int j,
			 const double *th, double v, double inv)
{
	int pj = c->idx[j];
	double th2[HP__NTH];
	struct hp__th_exp e2;
	bool tf32_only, amp_only;
	unsigned parts, mask = param_classes(pj, &parts, &tf32_only, &amp_only);

	memcpy(th2, th, sizeof(th2));
	th2[pj] = v;
	if (v == th[pj])
		return; /* clamped: nothing moves */
	hp__th_exp_init(&e2, th2);
	for (int k = 0; k < c->nkeys; k++) {
		const struct key *K = &c->keys[k];
		struct hp__dev_rates r;
		c->kchg[k] = pj == HP__TH_T0 ||
			     ((K->cmask & mask) && (!tf32_only || K->tf32) &&
			      (!amp_only || K->amp));
		if (!c->kchg[k])
			continue;
		hp__dev_rates_init(&r, &e2, th2, K->d);
		key_sum(c, K, &r, e2.t0, mask, parts, false, &c->ksum2[k],
			&c->kcls2[(size_t)k * HP_EST_NCLASS]);
	}
	for (int g = 0; g < c->ngrp; g++) {
		const struct group *G = &c->grps[g];
		bool kc = c->kchg[G->key];
		double t;
		if (!kc && !param_moves_post(pj, G))
			continue;
		t = group_time(c, G, &e2, c->csc,
			       kc ? c->ksum2[G->key] : c->ksum[G->key]);
		gsl_matrix_set(J, (size_t)g, (size_t)j,
			       (step_res(G, t) - c->f0[g]) * inv);
		if (G->ci < 0 || !kc)
			continue;
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			size_t row = row_cls(c, G, k);
			double f = class_res(
			    G, k, c->kcls2[(size_t)G->key * HP_EST_NCLASS + k]);
			gsl_matrix_set(J, row, (size_t)j,
				       (f - c->f0[row]) * inv);
		}
	}
	gsl_matrix_set(
	    J, row_prior(c, j), (size_t)j,
	    (PRIOR_WEIGHT * (th2[pj] - c->prior[pj]) - c->f0[row_prior(c, j)]) *
		inv);
}

/* Column of scale d, moved to v. */
static void column_scale(struct nl_ctx *c, gsl_matrix *J, int d, double v,
			 double inv)
{
	size_t col = (size_t)(c->nfree + d), prow = row_prior(c, c->nfree + d);
	struct hp__th_exp e;

	if (v == c->csc[d])
		return;
	memcpy(c->sc, c->csc, (size_t)c->nscale * sizeof(*c->sc));
	c->sc[d] = v;
	hp__th_exp_init(&e, c->cth);
	for (int g = 0; g < c->ngrp; g++) {
		const struct group *G = &c->grps[g];
		if (G->dev != d)
			continue;
		gsl_matrix_set(
		    J, (size_t)g, col,
		    (step_res(G, group_time(c, G, &e, c->sc, c->ksum[G->key])) -
		     c->f0[g]) *
			inv);
	}
	gsl_matrix_set(J, prow, col,
		       (sqrt(c->shrink) * c->sc[d] - c->f0[prow]) * inv);
}

/*
 * The Jacobian: GSL's forward difference (gsl_multifit_nlinear_df(),
 * multifit_nlinear/fdjac.c: delta = h |x_j|, or h at 0; column j =
 * (f(x + delta e_j) - f(x)) * (1 / delta)), with f(x + delta e_j)
 * recomputed only where parameter j reaches.
 */
static int nl_df(const gsl_vector *x, void *ud, gsl_matrix *J)
{
	struct nl_ctx *c = ud;
	double th[HP__NTH];

	decode(c, x, th, c->sc);
	if (!c->have || memcmp(th, c->cth, sizeof(th)) ||
	    (c->nscale &&
	     memcmp(c->sc, c->csc, (size_t)c->nscale * sizeof(*c->sc))))
		eval_full(c, th, c->sc);
	gsl_matrix_set_zero(J);
	for (int j = 0; j < c->nfree + c->nscale; j++) {
		double xj = gsl_vector_get(x, (size_t)j);
		double delta = c->h * fabs(xj), inv;
		if (delta == 0.0)
			delta = c->h;
		inv = 1.0 / delta;
		if (j < c->nfree)
			column_param(c, J, j, c->cth, clamp_th(xj + delta),
				     inv);
		else
			column_scale(c, J, j - c->nfree, clamp_sc(xj + delta),
				     inv);
	}
	return GSL_SUCCESS;
}

static int nl_solve(struct nl_ctx *c, struct hp_error *err)
{
	const gsl_multifit_nlinear_type *T = gsl_multifit_nlinear_trust;
	gsl_multifit_nlinear_parameters par =
	    gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_multifit_nlinear_workspace *ws;
	gsl_vector *x;
	size_t np = (size_t)(c->nfree + c->nscale);
	int info, status;

	x = gsl_vector_alloc(np);
	if (!x)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	ws = gsl_multifit_nlinear_alloc(T, &par, c->nres, np);
	if (!ws) {
		gsl_vector_free(x);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	c->h = par.h_df;
	for (int j = 0; j < c->nfree; j++)
		gsl_vector_set(x, (size_t)j, c->th[c->idx[j]]);
	for (int d = 0; d < c->nscale; d++)
		gsl_vector_set(x, (size_t)(c->nfree + d), c->scale[d]);
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = nl_f;
	fdf.df = nl_df;
	fdf.n = c->nres;
	fdf.p = np;
	fdf.params = c;
	gsl_multifit_nlinear_init(x, &fdf, ws);
	status = gsl_multifit_nlinear_driver(200, 1e-8, 1e-8, 1e-8, NULL, NULL,
					     &info, ws);
	/* GSL_EMAXITER still leaves the best point found. */
	if (status != GSL_SUCCESS && status != GSL_EMAXITER &&
	    status != GSL_ENOPROG) {
		gsl_multifit_nlinear_free(ws);
		gsl_vector_free(x);
		return hp_error_set(err, HP_EINTERNAL,
				    "non-linear fit failed: %s",
				    gsl_strerror(status));
	}
	for (int j = 0; j < c->nfree; j++)
		c->th[c->idx[j]] = clamp_th(gsl_vector_get(ws->x, (size_t)j));
	for (int d = 0; d < c->nscale; d++)
		c->scale[d] =
		    clamp_sc(gsl_vector_get(ws->x, (size_t)(c->nfree + d)));
	gsl_multifit_nlinear_free(ws);
	gsl_vector_free(x);
	return 0;
}

/* Set up c for pts (all but the parameters). */
static int ctx_init(struct nl_ctx *c, const struct hp__fitpt *pts, int n,
		    int nscale, double *scale, const double *wt,
		    struct hp_error *err)
{
	memset(c, 0, sizeof(*c));
	c->pts = pts;
	c->n = n;
	c->nscale = scale ? nscale : 0;
	c->scale = scale;
	c->wt = wt;
	if (build(c))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

/* The parameters of c's problem (after ctx_init()): start th, prior
 * (NULL: th), which are free, the scales' ridge. */
static int problem_init(struct nl_ctx *c, const double *th, const double *prior,
			const bool *free_params, double shrink,
			struct hp_error *err)
{
	memcpy(c->th, th, sizeof(c->th));
	memcpy(c->prior, prior ? prior : th, sizeof(c->prior));
	for (int j = 0; j < HP__NTH; j++)
		if (free_params[j])
			c->idx[c->nfree++] = j;
	c->shrink = shrink;
	c->nres = (size_t)c->ngrp + (size_t)c->ncls * HP_EST_NCLASS +
		  (size_t)(c->nfree + c->nscale) + c->spread;
	c->f0 = malloc(c->nres * sizeof(*c->f0));
	if (!c->f0)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

/* Huber weights of the points from their residuals at c's parameters
 * (r: scratch of n): past 1.5 x the robust scale a residual counts
 * linearly. */
static void huber_weights(struct nl_ctx *c, double *r, double *wt)
{
	double s;

	eval_full(c, c->th, c->scale);
	for (int i = 0; i < c->n; i++) {
		r[i] = fabs(log(c->gt[c->grp[i]]) - c->y[i]);
		wt[i] = r[i];
	}
	s = 1.4826 * hp__quantile(wt, c->n, 0.5);
	if (!(s > 1e-3))
		s = 1e-3;
	for (int i = 0; i < c->n; i++)
		wt[i] = r[i] <= 1.5 * s ? 1 : 1.5 * s / r[i];
	group_weights(c);
}

/* hp__phys_fit(); warm: start from th and scale with the Huber weights
 * of their residuals, one solve (hp__phys_refit()). */
static int phys_fit(const struct hp__fitpt *pts, int n, double *th,
		    const double *prior, const bool *free_params, int nscale,
		    double *scale, double shrink, bool warm,
		    struct hp_error *err)
{
	struct nl_ctx c;
	double *wt, *r;
	int rc = 0;

	if (n < 1)
		return hp_error_set(err, HP_EINVAL, "no measurements to fit");
	hp__gsl_quiet();
	wt = malloc((size_t)n * sizeof(*wt));
	r = malloc((size_t)n * sizeof(*r));
	if (!wt || !r || (rc = ctx_init(&c, pts, n, nscale, scale, wt, err))) {
		free(wt);
		free(r);
		if (!rc)
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		ctx_release(&c);
		return rc;
	}
	if ((rc = problem_init(&c, th, prior, free_params, shrink, err)))
		goto out;
	for (int d = 0; d < c.nscale && !warm; d++)
		scale[d] = 0;
	for (int i = 0; i < n; i++)
		wt[i] = 1;
	group_weights(&c);
	if (c.nfree + c.nscale == 0)
		goto out;
	/* Huber-reweighted: a few noisy measurements (a busy host) must
	 * not pull the curve. */
	for (int pass = warm ? 2 : 0; pass < 3; pass++) {
		if (warm)
			huber_weights(&c, r, wt);
		if ((rc = nl_solve(&c, err)))
			goto out;
		if (pass == 2)
			break;
		huber_weights(&c, r, wt);
	}
	memcpy(th, c.th, sizeof(c.th));
out:
	ctx_release(&c);
	free(wt);
	free(r);
	return rc;
}

int hp__phys_fit(const struct hp__fitpt *pts, int n, double *th,
		 const double *prior, const bool *free_params, int nscale,
		 double *scale, double shrink, struct hp_error *err)
{
	return phys_fit(pts, n, th, prior, free_params, nscale, scale, shrink,
			false, err);
}

int hp__phys_refit(const struct hp__fitpt *pts, int n, double *th,
		   const double *prior, const bool *free_params, int nscale,
		   double *scale, double shrink, struct hp_error *err)
{
	return phys_fit(pts, n, th, prior, free_params, nscale, scale, shrink,
			true, err);
}

int hp__phys_times(const struct hp__fitpt *pts, int n, const double *th,
		   int nscale, const double *scale, double *out,
		   struct hp_error *err)
{
	struct nl_ctx c;
	int rc;

	if (n < 1)
		return 0;
	if ((rc = ctx_init(&c, pts, n, nscale, (double *)scale, NULL, err))) {
		ctx_release(&c);
		return rc;
	}
	eval_full(&c, th, scale);
	for (int i = 0; i < n; i++)
		out[i] = c.gt[c.grp[i]];
	ctx_release(&c);
	return 0;
}

int hp__phys_check_jacobian(const struct hp__fitpt *pts, int n,
			    const double *th, const bool *free_params,
			    int nscale, const double *scale, const double *wt,
			    double *max_diff, struct hp_error *err)
{
	gsl_multifit_nlinear_parameters par =
	    gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_vector *x = NULL, *f = NULL, *work = NULL;
	gsl_matrix *J = NULL, *Jfd = NULL;
	double *sc = NULL, *w1 = NULL;
	struct nl_ctx c;
	size_t np;
	int rc;

	*max_diff = INFINITY;
	sc = calloc((size_t)nscale + 1, sizeof(*sc));
	w1 = malloc((size_t)n * sizeof(*w1));
	if (!sc || !w1) {
		free(sc);
		free(w1);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++)
		w1[i] = wt ? wt[i] : 1;
	if ((rc = ctx_init(&c, pts, n, nscale, scale ? sc : NULL, w1, err)) ||
	    (rc = problem_init(&c, th, NULL, free_params, 0.5, err)))
		goto out;
	group_weights(&c);
	c.h = par.h_df;
	np = (size_t)(c.nfree + c.nscale);
	x = gsl_vector_alloc(np);
	f = gsl_vector_alloc(c.nres);
	work = gsl_vector_alloc(c.nres);
	J = gsl_matrix_alloc(c.nres, np);
	Jfd = gsl_matrix_alloc(c.nres, np);
	if (!x || !f || !work || !J || !Jfd) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int j = 0; j < c.nfree; j++)
		gsl_vector_set(x, (size_t)j, th[c.idx[j]]);
	for (int d = 0; d < c.nscale; d++)
		gsl_vector_set(x, (size_t)(c.nfree + d), scale[d]);
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = nl_f;
	fdf.n = c.nres;
	fdf.p = np;
	fdf.params = &c;
	nl_f(x, &c, f);
	nl_df(x, &c, J);
	gsl_multifit_nlinear_df(par.h_df, par.fdtype, x, NULL, &fdf, f, Jfd,
				work);
	*max_diff = 0;
	for (size_t i = 0; i < c.nres; i++)
		for (size_t j = 0; j < np; j++) {
			double d = fabs(gsl_matrix_get(J, i, j) -
					gsl_matrix_get(Jfd, i, j));
			if (!(d <= *max_diff))
				*max_diff = d;
		}
out:
	gsl_vector_free(x);
	gsl_vector_free(f);
	gsl_vector_free(work);
	gsl_matrix_free(J);
	gsl_matrix_free(Jfd);
	ctx_release(&c);
	free(sc);
	free(w1);
	return rc;
}
