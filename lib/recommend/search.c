/*
 * search.c - the recommender's search: over type sets (one type, or a
 * pair), device counts per type and packings onto the pool's nodes, the
 * configuration of least energy that meets the deadline, or the fastest
 * when none does.  Nodes with identical free devices, links and base
 * power form a class; a packing is found exactly by fixing its node
 * count and its slowest intra-node and network links (thresholds) and
 * choosing the cheapest nodes by depth-first search with bounds.
 * docs/recommender.md proves that nothing pruned can be strictly better.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/recommend_int.h"
#include "util/banned.h"

/* Nodes that are alike for the search. */
struct cls {
	double base, intra, netbw, lat;
	int mult;
	int *free;  /* per model type */
	int *nodes; /* pool indices, mult of them */
	int maxfree;
};

struct ctx {
	const struct hp__rec_model *m;
	const struct hp_pool *pool;
	const struct hp__rec_params *q;
	struct hp__rec_tuning tune;
	struct cls *cls;
	int ncls;
	int *nodefree; /* pool.n x ntypes */
	/* Per type: free counts of nodes sorted down, prefix sums. */
	int64_t **pref; /* pref[t][r]: free of the r fullest nodes */
	int *nnodes_t;	/* nodes with free of t */
	int **mm;	/* mm[t][n], n <= nmm[t]: fewest nodes for n */
	int *nmm;
	double *basemin_t;
	double *bwmax_t, *latmin_t; /* best network figures of t's nodes */
	double thr[64];		    /* per type: largest samples/s per device */
	double eps[64]; /* per type: least device energy per sample, J */
	/* Per type: a device's energy over a step at local batch b is at
	 * least alpha + beta b (J). */
	double alpha[64], beta[64];
	struct hp__rec_stats *st;
	/* Results. */
	struct hp_rec_config *evald; /* every evaluated count's best */
	int nevald, aevald;
	struct pk *pk; /* the last type set's packing state */
};

/* The packing problem of one (types, counts). */
struct pk {
	struct ctx *c;
	int ty[HP_REC_MAX_MIX];
	int n[HP_REC_MAX_MIX];
	int k;
	int *rel; /* class indices, base ascending */
	int nrel;
	int m; /* nodes to use */
	/* Per relevant class (nrel, + 1 for the suffixes). */
	int (*cap)[2], (*capmax_suf)[2], *avail_suf;
	int (*y)[2], (*ybest)[2];
	/* Groups: the eligible classes with equal caps at the current
	 * levels, each a run of segments (classes, base ascending). */
	int ng, vmax, *gkey;
	int (*gcap)[2], *gsize, *gseg0, *gnseg, (*gy)[2], (*gybest)[2];
	int *seg;	 /* rel indices, grouped */
	double *gbase0;	 /* cheapest base of each group */
	double *gminsuf; /* least gbase0 of groups g.. */
	int *gcnt; /* [(g * (vmax + 1) + v) * 2 + j]: nodes of groups g.. with
		      cap v for type j */
	bool first_only; /* stop at the first packing (feasibility) */
	double best;	 /* best base so far (strict improvement) */
	bool found;
	/* Nodes the DFS may visit before the DP takes over (0: none). */
	long budget, visits;
	bool aborted;
	bool nomem; /* the DP ran out of memory */
	bool no_dp; /* a hard DFS is left aborted (the caller bounds) */
	int *dpbuf; /* the DP's choices, kept across calls */
	size_t dpcap;
	/* Of the type set, whatever the counts. */
	int nrelnodes;
	double bmin_all; /* least base of a relevant node */
	double *lv1;	 /* intra levels, ascending */
	int nlv1;
	double *rr; /* per class, from roff: intra term by count */
	int *roff;
	double *ilb;	/* [kk]: least intra term of kk devices */
	double **gm_m;	/* [m]: each class's network term, or NULL */
	double **lv2_m; /* [m]: network levels, ascending */
	int *nlv2_m, mcap;
};

static int cmp_cls(const void *a, const void *b)
{
	const struct cls *x = a, *y = b;
	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	if (x->maxfree != y->maxfree)
		return y->maxfree - x->maxfree;
	if (x->intra != y->intra)
		return x->intra > y->intra ? -1 : 1;
	if (x->netbw != y->netbw)
		return x->netbw > y->netbw ? -1 : 1;
	if (x->lat != y->lat)
		return x->lat < y->lat ? -1 : 1;
	return 0;
}

/* A node's sort key for grouping: its figures, then its free vector;
 * each key carries what the comparison needs (no shared context). */
struct node_key {
	double base_w, intra_gbps, net_gbps, net_latency_us;
	const int *free; /* per model type */
	int ntypes;
	int node;
};

static int cmp_node(const void *a, const void *b)
{
	const struct node_key *x = a, *y = b;
	if (x->base_w != y->base_w)
		return x->base_w < y->base_w ? -1 : 1;
	if (x->intra_gbps != y->intra_gbps)
		return x->intra_gbps < y->intra_gbps ? -1 : 1;
	if (x->net_gbps != y->net_gbps)
		return x->net_gbps < y->net_gbps ? -1 : 1;
	if (x->net_latency_us != y->net_latency_us)
		return x->net_latency_us < y->net_latency_us ? -1 : 1;
	for (int t = 0; t < x->ntypes; t++)
		if (x->free[t] != y->free[t])
			return x->free[t] - y->free[t];
	return x->node - y->node;
}

static int cmp_int_desc(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

static void pk_free(struct pk *P);

static void ctx_release(struct ctx *c)
{
	for (int i = 0; i < c->ncls; i++) {
		free(c->cls[i].free);
		free(c->cls[i].nodes);
	}
	free(c->cls);
	free(c->nodefree);
	if (c->pref)
		for (int t = 0; t < c->m->ntypes; t++)
			free(c->pref[t]);
	free(c->pref);
	if (c->mm)
		for (int t = 0; t < c->m->ntypes; t++)
			free(c->mm[t]);
	free(c->mm);
	free(c->nmm);
	free(c->nnodes_t);
	free(c->basemin_t);
	free(c->bwmax_t);
	free(c->latmin_t);
	for (int i = 0; i < c->nevald; i++)
		hp_rec_config_release(&c->evald[i]);
	free(c->evald);
	pk_free(c->pk);
}

/*
 * Bounds of one type that hold for any split of the batch.  A device at
 * local batch b in a configuration whose step is c has b <= ceil of its
 * type's share, so c >= t(bhi) >= u(b), u(b) = min t(b' >= b) (the
 * suffix minimum; the tables are not assumed monotone).  Hence:
 *   thr: b <= c x max(b / u(b)): samples per second per device;
 *   eps: its energy over the step p(b) c >= b x min(p(b) u(b) / b);
 *   alpha + beta b <= phi(b) = p(b) u(b): the line through phi(1) with
 *   the least slope to any later point lies below phi everywhere.
 */
static int per_type_bounds(const struct hp__rec_tt *tt, double *thr,
			   double *eps, double *alpha, double *beta)
{
	double *u = malloc(((size_t)tt->local_max + 2) * sizeof(double));
	double phi1, sl = INFINITY;

	if (!u)
		return HP_ENOMEM;
	u[tt->local_max + 1] = INFINITY;
	for (int64_t x = tt->local_max; x >= 1; x--)
		u[x] = tt->step_s[x] < u[x + 1] ? tt->step_s[x] : u[x + 1];
	*thr = 0;
	*eps = INFINITY;
	phi1 = tt->power_w[1] * u[1];
	for (int64_t x = 1; x <= tt->local_max; x++) {
		double v = (double)x / u[x],
		       e = tt->power_w[x] * u[x] / (double)x;
		if (v > *thr)
			*thr = v;
		if (e < *eps)
			*eps = e;
		if (x >= 2) {
			double d =
			    (tt->power_w[x] * u[x] - phi1) / (double)(x - 1);
			if (d < sl)
				sl = d;
		}
	}
	if (sl == INFINITY)
		sl = 0;
	*beta = sl;
	*alpha = phi1 - sl;
	free(u);
	return 0;
}

static int ctx_init(struct ctx *c, struct hp_error *err)
{
	const struct hp_pool *p = c->pool;
	int nt = c->m->ntypes, *order = NULL, *tmp = NULL;
	struct node_key *keys = NULL;
	size_t npool = p->n > 0 ? (size_t)p->n : 0;

	c->nodefree = calloc(npool * (size_t)(nt ? nt : 1), sizeof(int));
	order = malloc((npool + 1) * sizeof(int));
	c->pref = calloc((size_t)(nt ? nt : 1), sizeof(*c->pref));
	c->nnodes_t = calloc((size_t)(nt ? nt : 1), sizeof(int));
	c->mm = calloc((size_t)(nt ? nt : 1), sizeof(*c->mm));
	c->nmm = calloc((size_t)(nt ? nt : 1), sizeof(int));
	c->basemin_t = calloc((size_t)(nt ? nt : 1), sizeof(double));
	c->bwmax_t = calloc((size_t)(nt ? nt : 1), sizeof(double));
	c->latmin_t = calloc((size_t)(nt ? nt : 1), sizeof(double));
	tmp = malloc((npool + 1) * sizeof(int));
	if (!c->nodefree || !order || !c->pref || !c->nnodes_t || !c->mm ||
	    !c->nmm || !c->basemin_t || !c->bwmax_t || !c->latmin_t || !tmp)
		goto nomem;
	for (int i = 0; i < p->n; i++)
		for (int d = 0; d < p->nodes[i].ndevs; d++) {
			int t =
			    hp__rec_type_index(c->m, p->nodes[i].devs[d].type);
			if (t >= 0 && c->m->tt[t].ok)
				c->nodefree[i * nt + t] =
				    p->nodes[i].devs[d].free;
		}
	/* Classes: sort node indices, group equal ones. */
	keys = malloc((npool + 1) * sizeof(*keys));
	if (!keys)
		goto nomem;
	for (int i = 0; i < p->n; i++) {
		const struct hp_pool_node *x = &p->nodes[i];
		keys[i] = (struct node_key){x->base_power_w,
					    x->intra_bw_gbps,
					    x->net_bw_gbps,
					    x->net_latency_us,
					    &c->nodefree[(size_t)i * nt],
					    nt,
					    i};
	}
	qsort(keys, npool, sizeof(*keys), cmp_node);
	for (int i = 0; i < p->n; i++)
		order[i] = keys[i].node;
	free(keys);
	keys = NULL;
	c->cls = calloc(npool + 1, sizeof(*c->cls));
	if (!c->cls)
		goto nomem;
	for (int a = 0; a < p->n;) {
		int b = a + 1, any = 0;
		const struct hp_pool_node *x = &p->nodes[order[a]];
		struct cls *k;
		while (b < p->n) {
			const struct hp_pool_node *y = &p->nodes[order[b]];
			if (x->base_power_w != y->base_power_w ||
			    x->intra_bw_gbps != y->intra_bw_gbps ||
			    x->net_bw_gbps != y->net_bw_gbps ||
			    x->net_latency_us != y->net_latency_us ||
			    memcmp(&c->nodefree[order[a] * nt],
				   &c->nodefree[order[b] * nt],
				   (size_t)nt * sizeof(int)))
				break;
			b++;
		}
		for (int t = 0; t < nt; t++)
			any |= c->nodefree[order[a] * nt + t] > 0;
		if (any) {
			k = &c->cls[c->ncls];
			k->base = x->base_power_w;
			k->intra = x->intra_bw_gbps;
			k->netbw = x->net_bw_gbps;
			k->lat = x->net_latency_us;
			k->mult = b - a;
			k->free = malloc((size_t)(nt ? nt : 1) * sizeof(int));
			k->nodes = malloc((size_t)(b - a) * sizeof(int));
			if (!k->free || !k->nodes) {
				c->ncls++;
				goto nomem;
			}
			memcpy(k->free, &c->nodefree[order[a] * nt],
			       (size_t)nt * sizeof(int));
			for (int t = 0; t < nt; t++)
				if (k->free[t] > k->maxfree)
					k->maxfree = k->free[t];
			memcpy(k->nodes, &order[a],
			       (size_t)(b - a) * sizeof(int));
			c->ncls++;
		}
		a = b;
	}
	qsort(c->cls, (size_t)c->ncls, sizeof(*c->cls), cmp_cls);
	/* Per type: fullest nodes first. */
	for (int t = 0; t < nt; t++) {
		int r = 0;
		c->basemin_t[t] = INFINITY;
		c->latmin_t[t] = INFINITY;
		for (int i = 0; i < p->n; i++)
			if (c->nodefree[i * nt + t] > 0) {
				tmp[r++] = c->nodefree[i * nt + t];
				if (p->nodes[i].net_bw_gbps > c->bwmax_t[t])
					c->bwmax_t[t] = p->nodes[i].net_bw_gbps;
				if (p->nodes[i].net_latency_us < c->latmin_t[t])
					c->latmin_t[t] =
					    p->nodes[i].net_latency_us;
				if (p->nodes[i].base_power_w < c->basemin_t[t])
					c->basemin_t[t] =
					    p->nodes[i].base_power_w;
			}
		qsort(tmp, (size_t)r, sizeof(int), cmp_int_desc);
		c->pref[t] = malloc(((size_t)r + 1) * sizeof(int64_t));
		if (!c->pref[t])
			goto nomem;
		c->pref[t][0] = 0;
		for (int i = 0; i < r; i++)
			c->pref[t][i + 1] = c->pref[t][i] + tmp[i];
		c->nnodes_t[t] = r;
		/* The fewest nodes for each count up to the global batch
		 * (no configuration has more devices of a type). */
		{
			int64_t top = c->pref[t][r] < c->q->global_batch
					  ? c->pref[t][r]
					  : c->q->global_batch;
			int x = 0;
			c->mm[t] = malloc(((size_t)top + 1) * sizeof(int));
			if (!c->mm[t])
				goto nomem;
			c->nmm[t] = (int)top;
			c->mm[t][0] = 0;
			for (int n = 1; n <= top; n++) {
				while (c->pref[t][x] < n)
					x++;
				c->mm[t][n] = x;
			}
		}
		if (c->m->tt[t].ok &&
		    per_type_bounds(&c->m->tt[t], &c->thr[t], &c->eps[t],
				    &c->alpha[t], &c->beta[t]))
			goto nomem;
	}
	free(order);
	free(tmp);
	return 0;
nomem:
	free(keys);
	free(order);
	free(tmp);
	return hp_error_set(err, HP_ENOMEM, "out of memory");
}

/* Fewest nodes that hold n free devices of type t, or -1: the table up
 * to the global batch, a binary search past it. */
static int mmin_of(const struct ctx *c, int t, int n)
{
	int lo = 1, hi = c->nnodes_t[t];
	if (n <= c->nmm[t])
		return c->mm[t][n];
	if (hi == 0 || c->pref[t][hi] < n)
		return -1;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (c->pref[t][mid] >= n)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static double intra_of(const struct ctx *c, const struct cls *k, int kk)
{
	return hp__rec_intra_s(k->intra, kk, c->m->grad_bytes);
}

static double inter_of(const struct ctx *c, const struct cls *k, int m)
{
	return hp__rec_inter_s(k->netbw, k->lat, m, c->m->grad_bytes);
}

/* Base of the y cheapest nodes of group g. */
static double gcost(const struct pk *P, int g, int y)
{
	double v = 0;
	for (int s = P->gseg0[g]; s < P->gseg0[g] + P->gnseg[g] && y > 0; s++) {
		const struct cls *k = &P->c->cls[P->rel[P->seg[s]]];
		int t = k->mult < y ? k->mult : y;
		v += t * k->base;
		y -= t;
	}
	return v;
}

/*
 * Least base of m nodes over the groups: nodes of a group are alike but
 * for their base, so the y a group gives are its y cheapest.  Cut: the
 * base so far plus the remaining nodes at the least base left reaches the
 * best; the remaining nodes cannot add the capacity or nodes a type
 * needs.
 */
static void dfs(struct pk *P, int g, int used, double cost, const int *ytot,
		const int64_t *capsum)
{
	int left = P->m - used, hi;

	if (P->aborted)
		return;
	if (P->budget > 0 && ++P->visits > P->budget) {
		P->aborted = true;
		return;
	}
	if (left == 0) {
		for (int j = 0; j < P->k; j++)
			if (capsum[j] < P->n[j] || ytot[j] < 1)
				return;
		if (cost < P->best) {
			P->best = cost;
			P->found = true;
			memcpy(P->gybest, P->gy,
			       (size_t)P->ng * sizeof(*P->gy));
		}
		return;
	}
	if (g >= P->ng || P->avail_suf[g] < left)
		return;
	if (cost + left * P->gminsuf[g] >= P->best)
		return;
	if (P->first_only && P->found)
		return;
	for (int j = 0; j < P->k; j++) {
		int need_nodes = ytot[j] < 1 ? 1 : 0, r = left;
		int64_t most = 0;
		if (capsum[j] + (int64_t)left * P->capmax_suf[g][j] < P->n[j] ||
		    (need_nodes && P->capmax_suf[g][j] < 1))
			return;
		/* The largest caps the remaining nodes have. */
		for (int v = P->vmax; v >= 1 && r > 0; v--) {
			int cn =
			    P->gcnt[((size_t)g * (P->vmax + 1) + v) * 2 + j];
			int t = cn < r ? cn : r;
			most += (int64_t)t * v;
			r -= t;
		}
		if (capsum[j] + most < P->n[j])
			return;
	}
	hi = P->gsize[g] < left ? P->gsize[g] : left;
	for (int yt = hi; yt >= 0; yt--) {
		double cst = cost + gcost(P, g, yt);
		int y0 = P->gcap[g][0] > 0 ? yt : 0;
		if (cst >= P->best)
			continue;
		if (y0 > P->n[0] - ytot[0])
			y0 = P->n[0] - ytot[0];
		for (; y0 >= 0; y0--) {
			int y1 = yt - y0;
			int yn[2] = {ytot[0] + y0, 0};
			int64_t cs[2] = {
			    capsum[0] + (int64_t)y0 * P->gcap[g][0], 0};
			if (P->k == 1) {
				if (y1 != 0)
					break;
			} else {
				if (y1 > 0 && (P->gcap[g][1] < 1 ||
					       y1 > P->n[1] - ytot[1]))
					continue;
				yn[1] = ytot[1] + y1;
				cs[1] = capsum[1] + (int64_t)y1 * P->gcap[g][1];
			}
			P->gy[g][0] = y0;
			P->gy[g][1] = y1;
			dfs(P, g + 1, used + yt, cst, yn, cs);
			if (P->aborted)
				return;
		}
	}
	P->gy[g][0] = P->gy[g][1] = 0;
}

/* The actual cost of a configuration whose groups are set. */
static void cost_actual(const struct ctx *c, const struct hp__rec_comp *cp,
			struct hp_rec_config *cfg)
{
	const struct hp_pool *p = c->pool;
	const struct hp__rec_params *q = c->q;
	double intra = 0, inter = 0, base = 0, g = c->m->grad_bytes;
	int m = 0;

	/* Groups are sorted by node: count distinct nodes. */
	for (int i = 0; i < cfg->ngroups; i++) {
		int node = cfg->groups[i].node, kk = 0;
		if (i > 0 && cfg->groups[i - 1].node == node)
			continue;
		for (int j = i; j < cfg->ngroups && cfg->groups[j].node == node;
		     j++)
			kk += cfg->groups[j].count;
		m++;
		base += p->nodes[node].base_power_w;
		{
			double r = hp__rec_intra_s(p->nodes[node].intra_bw_gbps,
						   kk, g);
			if (r > intra)
				intra = r;
		}
	}
	for (int i = 0; i < cfg->ngroups; i++) {
		const struct hp_pool_node *nd = &p->nodes[cfg->groups[i].node];
		double x =
		    hp__rec_inter_s(nd->net_bw_gbps, nd->net_latency_us, m, g);
		if (x > inter)
			inter = x;
	}
	cfg->nnodes = m;
	cfg->intra_time_s = intra;
	cfg->inter_time_s = inter;
	cfg->comm_time_s = (intra + inter) * (1 - HP_REC_OVERLAP);
	cfg->compute_time_s = cp->compute_s;
	cfg->step_time_s = cp->compute_s + cfg->comm_time_s;
	cfg->step_time_lo_s = cp->compute_lo_s + cfg->comm_time_s;
	cfg->step_time_hi_s = cp->compute_hi_s + cfg->comm_time_s;
	cfg->startup_s = HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * m;
	cfg->steps = q->steps;
	cfg->global_batch = q->global_batch;
	cfg->time_s = (double)q->steps * cfg->step_time_s + cfg->startup_s;
	cfg->time_lo_s =
	    (double)q->steps * cfg->step_time_lo_s + cfg->startup_s;
	cfg->time_hi_s =
	    (double)q->steps * cfg->step_time_hi_s + cfg->startup_s;
	cfg->power_w = cp->devices_power_w + base;
	cfg->energy_j = cfg->time_s * cfg->power_w;
	cfg->energy_lo_j = cfg->time_lo_s * cfg->power_w;
	cfg->energy_hi_j = cfg->time_hi_s * cfg->power_w;
	cfg->meets_deadline = cfg->time_s <= q->deadline_s;
}

static int cmp_group(const void *a, const void *b)
{
	const struct hp_rec_group *x = a, *y = b;
	if (x->node != y->node)
		return x->node - y->node;
	if (x->local_batch != y->local_batch)
		return x->local_batch > y->local_batch ? -1 : 1;
	return strcmp(x->type, y->type);
}

/* Turn the DFS's class counts into groups on nodes: each chosen node gets
 * one device, then the rest are spread round-robin within caps. */
static int build_config(const struct pk *P, const struct hp__rec_comp *cp,
			struct hp_rec_config *cfg)
{
	struct ctx *c = P->c;
	int total = 0, ng = 0, *cnt = NULL, *nodes = NULL, *capn = NULL;
	int *tyn = NULL;

	memset(cfg, 0, sizeof(*cfg));
	for (int i = 0; i < P->nrel; i++)
		for (int j = 0; j < P->k; j++)
			total += P->ybest[i][j];
	cnt = calloc((size_t)total + 1, sizeof(int));
	nodes = calloc((size_t)total + 1, sizeof(int));
	capn = calloc((size_t)total + 1, sizeof(int));
	tyn = calloc((size_t)total + 1, sizeof(int));
	cfg->groups = calloc((size_t)total * 2 + 2, sizeof(*cfg->groups));
	if (!cnt || !nodes || !capn || !tyn || !cfg->groups)
		goto nomem;
	for (int j = 0; j < P->k; j++) {
		int first = ng, left = P->n[j];
		for (int i = 0; i < P->nrel; i++) {
			const struct cls *k = &c->cls[P->rel[i]];
			int used = 0;
			/* Nodes of the class already taken by the other
			 * type come first in its list. */
			for (int jj = 0; jj < j; jj++)
				used += P->ybest[i][jj];
			for (int y = 0; y < P->ybest[i][j]; y++) {
				nodes[ng] = k->nodes[used + y];
				capn[ng] = P->cap[i][j];
				tyn[ng] = j;
				cnt[ng] = 1;
				ng++;
				left--;
			}
		}
		while (left > 0) {
			int moved = 0;
			for (int x = first; x < ng && left > 0; x++)
				if (cnt[x] < capn[x]) {
					cnt[x]++;
					left--;
					moved = 1;
				}
			if (!moved)
				break;
		}
	}
	/* Local batches: the first nhi devices of each type at bhi. */
	{
		int hileft[HP_REC_MAX_MIX];
		for (int j = 0; j < P->k; j++)
			hileft[j] = cp->n_at_hi[j];
		for (int x = 0; x < ng; x++) {
			int j = tyn[x],
			    h = cnt[x] < hileft[j] ? cnt[x] : hileft[j];
			const char *tn = c->m->tt[P->ty[j]].name;
			hileft[j] -= h;
			if (h > 0) {
				struct hp_rec_group *g =
				    &cfg->groups[cfg->ngroups++];
				g->node = nodes[x];
				snprintf(g->type, sizeof(g->type), "%s", tn);
				g->count = h;
				g->local_batch = cp->local_hi[j];
			}
			if (cnt[x] - h > 0) {
				struct hp_rec_group *g =
				    &cfg->groups[cfg->ngroups++];
				g->node = nodes[x];
				snprintf(g->type, sizeof(g->type), "%s", tn);
				g->count = cnt[x] - h;
				g->local_batch = cp->local_hi[j] - 1;
			}
		}
	}
	for (int i = 0; i < cfg->ngroups; i++)
		cfg->groups[i].grad_weight =
		    (double)cfg->groups[i].local_batch /
		    (double)c->q->global_batch;
	qsort(cfg->groups, (size_t)cfg->ngroups, sizeof(*cfg->groups),
	      cmp_group);
	cfg->ntypes = P->k;
	cfg->ndevices = 0;
	for (int j = 0; j < P->k; j++) {
		struct hp_rec_type *t = &cfg->types[j];
		snprintf(t->type, sizeof(t->type), "%s",
			 c->m->tt[P->ty[j]].name);
		t->count = P->n[j];
		t->batch = cp->samples[j];
		t->local_max = cp->local_hi[j];
		t->step_time_s = cp->step_s[j];
		t->power_w = cp->power_w[j];
		cfg->ndevices += P->n[j];
	}
	free(cnt);
	free(nodes);
	free(capn);
	free(tyn);
	cost_actual(c, cp, cfg);
	return 0;
nomem:
	free(cnt);
	free(nodes);
	free(capn);
	free(tyn);
	free(cfg->groups);
	cfg->groups = NULL;
	return HP_ENOMEM;
}

/* Levels of the intra-node term over the relevant classes, ascending. */
static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int uniq(double *v, int n)
{
	int r = 0;
	qsort(v, (size_t)n, sizeof(double), cmp_dbl);
	for (int i = 0; i < n; i++)
		if (r == 0 || v[i] != v[r - 1])
			v[r++] = v[i];
	return r;
}

/* Caps of the relevant classes at levels (tau1, tau2); whether any cap
 * changed, and whether every eligible class is at its free count. */
static bool set_caps(struct pk *P, const double *gm, const double *rr,
		     const int *roff, double tau1, double tau2, bool *all_full)
{
	const struct ctx *c = P->c;
	bool changed = false;

	*all_full = true;
	for (int i = 0; i < P->nrel; i++) {
		const struct cls *kc = &c->cls[P->rel[i]];
		const double *r = rr + roff[i];
		bool el = gm[i] <= tau2;
		int kmax = 1;
		while (kmax < kc->maxfree && r[kmax + 1] <= tau1)
			kmax++;
		if (el && kmax < kc->maxfree)
			*all_full = false;
		for (int j = 0; j < P->k; j++) {
			int f = kc->free[P->ty[j]];
			int v = el ? (f < kmax ? f : kmax) : 0;
			changed |= v != P->cap[i][j];
			P->cap[i][j] = v;
		}
	}
	return changed;
}

/* Group the classes by caps (base order kept within a group), order
 * the groups by their cheapest base, and the DFS's suffix bounds. */
static void set_suffix(struct pk *P)
{
	int nk = (P->vmax + 1) * (P->vmax + 1), ns = 0;
	int *cnt = P->gkey + nk; /* segments per key */

	P->ng = 0;
	for (int x = 0; x < nk; x++) {
		P->gkey[x] = -1;
		cnt[x] = 0;
	}
	for (int i = 0; i < P->nrel; i++) {
		int c0 = P->cap[i][0], c1 = P->k > 1 ? P->cap[i][1] : 0;
		if (c0 > 0 || c1 > 0)
			cnt[c0 * (P->vmax + 1) + c1]++;
	}
	/* Groups in order of their first (cheapest) class. */
	for (int i = 0; i < P->nrel; i++) {
		int c0 = P->cap[i][0], c1 = P->k > 1 ? P->cap[i][1] : 0;
		int key = c0 * (P->vmax + 1) + c1, g;
		if (c0 == 0 && c1 == 0)
			continue;
		if (P->gkey[key] < 0) {
			g = P->ng++;
			P->gkey[key] = g;
			P->gcap[g][0] = c0;
			P->gcap[g][1] = c1;
			P->gseg0[g] = ns;
			P->gnseg[g] = 0;
			P->gsize[g] = 0;
			P->gbase0[g] = P->c->cls[P->rel[i]].base;
			ns += cnt[key];
		}
		g = P->gkey[key];
		P->seg[P->gseg0[g] + P->gnseg[g]++] = i;
		P->gsize[g] += P->c->cls[P->rel[i]].mult;
	}
	for (int j = 0; j < 2; j++)
		P->capmax_suf[P->ng][j] = 0;
	P->avail_suf[P->ng] = 0;
	P->gminsuf[P->ng] = INFINITY;
	for (int g = P->ng - 1; g >= 0; g--) {
		for (int j = 0; j < 2; j++) {
			int v = j < P->k ? P->gcap[g][j] : 0;
			P->capmax_suf[g][j] = v > P->capmax_suf[g + 1][j]
						  ? v
						  : P->capmax_suf[g + 1][j];
		}
		P->avail_suf[g] = P->avail_suf[g + 1] + P->gsize[g];
		P->gminsuf[g] = P->gbase0[g] < P->gminsuf[g + 1]
				    ? P->gbase0[g]
				    : P->gminsuf[g + 1];
	}
	{
		size_t w = ((size_t)P->vmax + 1) * 2;
		memset(&P->gcnt[(size_t)P->ng * w], 0, w * sizeof(int));
		for (int g = P->ng - 1; g >= 0; g--) {
			memcpy(&P->gcnt[(size_t)g * w],
			       &P->gcnt[((size_t)g + 1) * w], w * sizeof(int));
			for (int j = 0; j < P->k; j++)
				P->gcnt[(size_t)g * w +
					(size_t)P->gcap[g][j] * 2 +
					(size_t)j] += P->gsize[g];
		}
	}
}

/* The DFS's choice per group back to counts per class and type. */
static void to_classes(struct pk *P)
{
	memset(P->ybest, 0, ((size_t)P->nrel + 1) * sizeof(*P->ybest));
	for (int g = 0; g < P->ng; g++) {
		int want[2] = {P->gybest[g][0], P->gybest[g][1]};
		for (int s = P->gseg0[g]; s < P->gseg0[g] + P->gnseg[g]; s++) {
			int i = P->seg[s], room = P->c->cls[P->rel[i]].mult;
			for (int j = 0; j < 2; j++) {
				int t = want[j] < room ? want[j] : room;
				P->ybest[i][j] += t;
				want[j] -= t;
				room -= t;
			}
		}
	}
}

/*
 * The same problem by dynamic programming, for the packings the DFS
 * finds hard (many alike groups, many nodes): exact, in time polynomial
 * in the groups, nodes and devices.  It needs each group to serve one
 * type (true of one type, and of two whose nodes hold one of them each).
 *
 * For type j over its groups: F[u][s], the least base of u nodes of the
 * groups so far with capacity s (capacity past n[j] counted as n[j]).  A
 * group's nodes are alike but for their base, so y of them cost its y
 * cheapest (gcost).  Then the least base of m nodes is F0[m][n0], or for
 * two types the least F0[u][n0] + F1[m - u][n1].
 */
struct dpt {
	int *gl, ngl;	/* the type's groups */
	int mu, n;	/* most nodes, capacity needed */
	double *F;	/* (mu + 1) x (n + 1), the last layer */
	int *ych, *sch; /* per group layer: y taken and capacity before
			   (in the packing's buffer) */
};

static size_t dp_cells(int mu, int n)
{
	return ((size_t)mu + 1) * ((size_t)n + 1);
}

static void dpt_release(struct dpt *d)
{
	free(d->gl);
	free(d->F);
	memset(d, 0, sizeof(*d));
}

/* Fill d for type j with at most mu nodes, costs below `below`; its
 * choices go to buf (2 x layers x cells ints). */
static int dp_type(const struct pk *P, int j, int mu, double below, int *buf,
		   struct dpt *d)
{
	size_t cells;
	double *F2 = NULL, *cost = NULL;
	int rc = 0;

	d->n = P->n[j];
	d->mu = mu < d->n ? mu : d->n;
	cells = dp_cells(d->mu, d->n);
	d->gl = malloc(((size_t)P->ng + 1) * sizeof(int));
	d->F = malloc(cells * sizeof(double));
	F2 = malloc(cells * sizeof(double));
	cost = malloc(((size_t)d->mu + 1) * sizeof(double));
	if (!d->gl || !d->F || !F2 || !cost) {
		rc = HP_ENOMEM;
		goto out;
	}
	for (int g = 0; g < P->ng; g++)
		if (P->gcap[g][j] > 0)
			d->gl[d->ngl++] = g;
	d->ych = buf;
	d->sch = buf + cells * ((size_t)d->ngl + 1);
	for (size_t x = 0; x < cells; x++)
		d->F[x] = INFINITY;
	d->F[0] = 0;
	for (int q = 0; q < d->ngl; q++) {
		int g = d->gl[q], v = P->gcap[g][j];
		int ymax = P->gsize[g] < d->mu ? P->gsize[g] : d->mu;
		int *yc = d->ych + (size_t)q * cells, *sc = d->sch + q * cells;
		/* The group's y cheapest, by walking its segments once. */
		{
			int y = 0;
			cost[0] = 0;
			for (int sg = P->gseg0[g];
			     sg < P->gseg0[g] + P->gnseg[g] && y < ymax; sg++) {
				const struct cls *k =
				    &P->c->cls[P->rel[P->seg[sg]]];
				for (int t = 0; t < k->mult && y < ymax; t++) {
					cost[y + 1] = cost[y] + k->base;
					y++;
				}
			}
			ymax = y;
		}
		for (size_t x = 0; x < cells; x++)
			F2[x] = INFINITY;
		for (int u = 0; u <= d->mu; u++)
			for (int sv = 0; sv <= d->n; sv++) {
				double f = d->F[(size_t)u * (d->n + 1) + sv];
				if (f >= below)
					continue;
				for (int y = 0; y <= ymax && u + y <= d->mu;
				     y++) {
					double nf = f + cost[y];
					int64_t ns = sv + (int64_t)v * y;
					size_t at;
					if (nf >= below)
						break;
					if (ns > d->n)
						ns = d->n;
					at = (size_t)(u + y) * (d->n + 1) +
					     (size_t)ns;
					if (nf < F2[at]) {
						F2[at] = nf;
						yc[at] = y;
						sc[at] = sv;
					}
				}
			}
		memcpy(d->F, F2, cells * sizeof(double));
	}
out:
	free(F2);
	free(cost);
	return rc;
}

/* Set gybest[.][j] from type j's table at u nodes, full capacity. */
static void dp_back(struct pk *P, const struct dpt *d, int j, int u)
{
	int sv = d->n;
	size_t cells = dp_cells(d->mu, d->n);
	for (int q = d->ngl - 1; q >= 0; q--) {
		size_t at = (size_t)u * (d->n + 1) + (size_t)sv;
		int y = d->ych[(size_t)q * cells + at];
		P->gybest[d->gl[q]][j] = y;
		sv = d->sch[(size_t)q * cells + at];
		u -= y;
	}
}

/* Whether the DP applies here, and its tables are of a sane size. */
static bool dp_able(const struct pk *P)
{
	size_t cells = 0;
	for (int g = 0; g < P->ng; g++)
		if (P->k == 2 && P->gcap[g][0] > 0 && P->gcap[g][1] > 0)
			return false;
	for (int j = 0; j < P->k; j++)
		cells += dp_cells(P->m, P->n[j]) * ((size_t)P->ng + 2);
	return cells <= (size_t)1 << 22;
}

/* 1 and gybest when a packing below P->best exists, 0 when none. */
static int dp_solve(struct pk *P)
{
	struct dpt d[2] = {{0}};
	int rc = 0, ubest = -1;
	double best = P->best;

	size_t need = 0, off = 0;

	for (int j = 0; j < P->k; j++) {
		int mu =
		    P->m - (P->k - 1) < P->n[j] ? P->m - (P->k - 1) : P->n[j];
		need += 2 * dp_cells(mu, P->n[j]) * ((size_t)P->ng + 1);
	}
	if (need > P->dpcap) {
		free(P->dpbuf);
		P->dpbuf = malloc(need * sizeof(int));
		P->dpcap = P->dpbuf ? need : 0;
		if (!P->dpbuf)
			return HP_ENOMEM;
	}
	for (int j = 0; j < P->k && !rc; j++) {
		int mu =
		    P->m - (P->k - 1) < P->n[j] ? P->m - (P->k - 1) : P->n[j];
		rc = dp_type(P, j, mu, P->best, P->dpbuf + off, &d[j]);
		off += 2 * dp_cells(mu, P->n[j]) * ((size_t)P->ng + 1);
	}
	if (rc)
		goto out;
	if (P->k == 1) {
		if (P->m <= d[0].mu) {
			double f = d[0].F[(size_t)P->m * (d[0].n + 1) + d[0].n];
			if (f < best) {
				best = f;
				ubest = P->m;
			}
		}
	} else {
		for (int u = 1; u < P->m; u++) {
			double f;
			if (u > d[0].mu || P->m - u > d[1].mu)
				continue;
			f = d[0].F[(size_t)u * (d[0].n + 1) + d[0].n] +
			    d[1].F[(size_t)(P->m - u) * (d[1].n + 1) + d[1].n];
			if (f < best) {
				best = f;
				ubest = u;
			}
		}
	}
	if (ubest >= 0) {
		memset(P->gybest, 0,
		       ((size_t)P->nrel + 1) * sizeof(*P->gybest));
		dp_back(P, &d[0], 0, ubest);
		if (P->k == 2)
			dp_back(P, &d[1], 1, P->m - ubest);
		P->best = best;
		P->found = true;
		rc = 1;
	}
out:
	dpt_release(&d[0]);
	dpt_release(&d[1]);
	return rc;
}

/* Least base of m nodes at caps already set (INFINITY: none): the DFS,
 * or the DP when the DFS runs past its budget. */
static double least_base(struct pk *P, double below)
{
	int zero[2] = {0, 0};
	int64_t zc[2] = {0, 0};
	bool able = dp_able(P);

	P->found = false;
	P->best = below;
	P->visits = 0;
	P->aborted = false;
	P->budget =
	    able ? (P->c->tune.dfs_max_visits > 0 ? P->c->tune.dfs_max_visits
						  : 1)
		 : 0;
	memset(P->gy, 0, ((size_t)P->nrel + 1) * sizeof(*P->gy));
	P->c->st->leaves++;
	dfs(P, 0, 0, 0, zero, zc);
	if (P->aborted && P->no_dp)
		return INFINITY;
	if (P->aborted) {
		/* Start again: the DFS's best so far is not proven. */
		P->c->st->dp++;
		P->found = false;
		P->best = below;
		if (dp_solve(P) < 0)
			P->nomem = true;
	}
	if (!P->found)
		return INFINITY;
	to_classes(P);
	return P->best;
}

enum { PH_ENERGY = 0, PH_TIME = 1 };

/* The level search of one node count: rectangles of (intra, network)
 * levels, each bounded by its least time and the least base at its
 * highest levels (the least base in it). */
struct rs {
	struct pk *P;
	const double *gm, *rr;
	const int *roff;
	const double *lv1, *lv2;
	const struct hp__rec_comp *cp;
	const struct hp__rec_params *q;
	int phase;
	double *best;
	struct hp_rec_config *cfg;
	int m;
	bool found;
};

static double rs_time(const struct rs *R, int i1, int i2)
{
	return (double)R->q->steps *
		   (R->cp->compute_s +
		    (R->lv1[i1] + R->lv2[i2]) * (1 - HP_REC_OVERLAP)) +
	       HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * R->m;
}

/* Least base at levels (i1, i2) below `below` (INFINITY: none). */
static double rs_base(struct rs *R, int i1, int i2, double below)
{
	bool af;
	set_caps(R->P, R->gm, R->rr, R->roff, R->lv1[i1], R->lv2[i2], &af);
	set_suffix(R->P);
	/* On time, only whether a packing exists matters. */
	R->P->first_only = R->phase == PH_TIME;
	return least_base(R->P, below);
}

/* The same over a small grid, level by level (fewer packings solved
 * than halving when there are few levels): network levels ascending,
 * then intra levels ascending, each loop ended by its bound; a level that
 * changes no cap is skipped (same packings, more time). */
static int grid(struct rs *R, int nlv1, int nlv2, double bfull)
{
	struct pk *P = R->P;
	double pdev = R->cp->devices_power_w;

	for (int a2 = 0; a2 < nlv2; a2++) {
		double t2 = rs_time(R, 0, a2), bel = INFINITY;
		bool first = true;
		if (R->phase == PH_ENERGY ? t2 > R->q->deadline_s ||
						t2 * (pdev + bfull) >= *R->best
					  : t2 >= *R->best)
			break;
		for (int i = 0; i < P->nrel; i++)
			if (R->gm[i] <= R->lv2[a2] &&
			    P->c->cls[P->rel[i]].base < bel)
				bel = P->c->cls[P->rel[i]].base;
		bel = R->m * bel > bfull ? R->m * bel : bfull;
		for (int a1 = 0; a1 < nlv1; a1++) {
			double t = rs_time(R, a1, a2), b, v;
			bool all_full;
			if (R->phase == PH_ENERGY
				? t > R->q->deadline_s ||
				      t * (pdev + bel) >= *R->best
				: t >= *R->best)
				break;
			if (!set_caps(P, R->gm, R->rr, R->roff, R->lv1[a1],
				      R->lv2[a2], &all_full) &&
			    !first) {
				if (all_full)
					break;
				continue;
			}
			first = false;
			set_suffix(P);
			b = least_base(P, R->phase == PH_ENERGY
					      ? *R->best / t - pdev
					      : INFINITY);
			if (b < INFINITY) {
				v = R->phase == PH_ENERGY ? t * (pdev + b) : t;
				if (v < *R->best) {
					*R->best = v;
					R->found = true;
					hp_rec_config_release(R->cfg);
					if (build_config(P, R->cp, R->cfg))
						return HP_ENOMEM;
				}
			}
			if (all_full)
				break;
		}
	}
	return 0;
}

/*
 * A lower bound of the least base in the cells at or below levels
 * (i1, i2) (fewer nodes eligible, smaller caps), INFINITY when none packs
 * below `below`: the least base at (i1, i2).  While there is no best to
 * beat, only whether (i1, i2) packs at all matters, and the first packing
 * found says so (the DFS's capacity cuts make that quick where the least
 * base is not); the bound is then the enclosing rectangle's, bhi.
 */
static double rs_bound(struct rs *R, int i1, int i2, double below, double bhi)
{
	double b;
	bool af;

	if (R->phase != PH_ENERGY || *R->best < INFINITY)
		return rs_base(R, i1, i2, below);
	set_caps(R->P, R->gm, R->rr, R->roff, R->lv1[i1], R->lv2[i2], &af);
	set_suffix(R->P);
	R->P->first_only = true;
	b = least_base(R->P, INFINITY);
	R->P->first_only = false;
	return b == INFINITY ? INFINITY : bhi;
}

static int rect(struct rs *R, int a1, int b1, int a2, int b2, double bhi)
{
	double t = rs_time(R, a1, a2), below;
	int rc;

	if (R->phase == PH_ENERGY) {
		if (t > R->q->deadline_s ||
		    t * (R->cp->devices_power_w + bhi) >= *R->best)
			return 0;
		below = *R->best / t - R->cp->devices_power_w;
	} else {
		if (t >= *R->best)
			return 0;
		below = INFINITY;
	}
	if (a1 == b1 && a2 == b2) {
		/* One cell: its packing, at its own levels. */
		double b = rs_base(R, a1, a2, below);
		double v;
		if (b == INFINITY)
			return 0;
		v = R->phase == PH_ENERGY ? t * (R->cp->devices_power_w + b)
					  : t;
		if (v >= *R->best)
			return 0;
		*R->best = v;
		R->found = true;
		hp_rec_config_release(R->cfg);
		if (build_config(R->P, R->cp, R->cfg))
			return HP_ENOMEM;
		return 0;
	}
	if (b1 - a1 >= b2 - a2) {
		int mid = a1 + (b1 - a1) / 2;
		double bm = rs_bound(R, mid, b2, below, bhi);
		/* None below the bound at the lower half's top: no cell of
		 * it can beat the best. */
		if (bm < INFINITY && (rc = rect(R, a1, mid, a2, b2, bm)))
			return rc;
		return rect(R, mid + 1, b1, a2, b2, bhi);
	} else {
		int mid = a2 + (b2 - a2) / 2;
		double bm = rs_bound(R, b1, mid, below, bhi);
		if (bm < INFINITY && (rc = rect(R, a1, b1, a2, mid, bm)))
			return rc;
		return rect(R, a1, b1, mid + 1, b2, bhi);
	}
}

static void pk_free(struct pk *P)
{
	if (!P)
		return;
	if (P->gm_m)
		for (int m = 0; m < P->mcap; m++) {
			free(P->gm_m[m]);
			free(P->lv2_m[m]);
		}
	free(P->gm_m);
	free(P->lv2_m);
	free(P->nlv2_m);
	free(P->ilb);
	free(P->lv1);
	free(P->rr);
	free(P->roff);
	free(P->rel);
	free(P->cap);
	free(P->capmax_suf);
	free(P->avail_suf);
	free(P->y);
	free(P->ybest);
	free(P->gkey);
	free(P->gcap);
	free(P->gsize);
	free(P->gseg0);
	free(P->gnseg);
	free(P->gy);
	free(P->gybest);
	free(P->seg);
	free(P->gbase0);
	free(P->gminsuf);
	free(P->gcnt);
	free(P->dpbuf);
	free(P);
}

/*
 * What the packings of one type set share, whatever the counts: the
 * relevant classes, the working arrays, the intra-node levels and terms,
 * and (filled as node counts come up) each node count's network terms
 * and levels.  NULL on ENOMEM.
 */
static struct pk *pk_new(struct ctx *c, const int *ty, int k)
{
	struct pk *P = calloc(1, sizeof(*P));
	int cnt = 0;

	if (!P)
		return NULL;
	P->c = c;
	P->k = k;
	for (int j = 0; j < k; j++)
		P->ty[j] = ty[j];
	P->rel = malloc((size_t)(c->ncls ? c->ncls : 1) * sizeof(int));
	if (!P->rel)
		goto nomem;
	P->bmin_all = INFINITY;
	for (int i = 0; i < c->ncls; i++) {
		int any = 0;
		for (int j = 0; j < k; j++)
			any |= c->cls[i].free[ty[j]] > 0;
		if (any) {
			P->rel[P->nrel++] = i;
			P->nrelnodes += c->cls[i].mult;
			if (c->cls[i].base < P->bmin_all)
				P->bmin_all = c->cls[i].base;
		}
	}
	P->cap = calloc((size_t)P->nrel + 1, sizeof(*P->cap));
	P->capmax_suf = calloc((size_t)P->nrel + 1, sizeof(*P->capmax_suf));
	P->avail_suf = calloc((size_t)P->nrel + 1, sizeof(*P->avail_suf));
	P->y = calloc((size_t)P->nrel + 1, sizeof(*P->y));
	P->ybest = calloc((size_t)P->nrel + 1, sizeof(*P->ybest));
	P->vmax = 1;
	for (int i = 0; i < P->nrel; i++)
		for (int j = 0; j < k; j++)
			if (c->cls[P->rel[i]].free[ty[j]] > P->vmax)
				P->vmax = c->cls[P->rel[i]].free[ty[j]];
	P->gkey = malloc(2 * ((size_t)P->vmax + 1) * ((size_t)P->vmax + 1) *
			 sizeof(int));
	P->gcap = calloc((size_t)P->nrel + 1, sizeof(*P->gcap));
	P->gsize = calloc((size_t)P->nrel + 1, sizeof(int));
	P->gseg0 = calloc((size_t)P->nrel + 1, sizeof(int));
	P->gnseg = calloc((size_t)P->nrel + 1, sizeof(int));
	P->gy = calloc((size_t)P->nrel + 1, sizeof(*P->gy));
	P->gybest = calloc((size_t)P->nrel + 1, sizeof(*P->gybest));
	P->seg = calloc((size_t)P->nrel + 1, sizeof(int));
	P->gbase0 = calloc((size_t)P->nrel + 1, sizeof(double));
	P->gminsuf = calloc((size_t)P->nrel + 1, sizeof(double));
	P->gcnt = calloc(((size_t)P->nrel + 1) * ((size_t)P->vmax + 1) * 2,
			 sizeof(int));
	P->mcap = P->nrelnodes + 1;
	P->gm_m = calloc((size_t)P->mcap, sizeof(*P->gm_m));
	P->lv2_m = calloc((size_t)P->mcap, sizeof(*P->lv2_m));
	P->nlv2_m = calloc((size_t)P->mcap, sizeof(int));
	if (!P->cap || !P->capmax_suf || !P->avail_suf || !P->y || !P->ybest ||
	    !P->gkey || !P->gcap || !P->gsize || !P->gseg0 || !P->gnseg ||
	    !P->gy || !P->gybest || !P->seg || !P->gbase0 || !P->gminsuf ||
	    !P->gcnt || !P->gm_m || !P->lv2_m || !P->nlv2_m)
		goto nomem;
	/* Intra levels: every r(kk) a relevant class can reach; each
	 * relevant class's intra term by device count. */
	for (int i = 0; i < P->nrel; i++) {
		const struct cls *kc = &c->cls[P->rel[i]];
		int mf = 0;
		for (int j = 0; j < k; j++)
			if (kc->free[ty[j]] > mf)
				mf = kc->free[ty[j]];
		cnt += mf;
	}
	P->lv1 = malloc(((size_t)cnt + 1) * sizeof(double));
	P->roff = malloc(((size_t)P->nrel + 1) * sizeof(int));
	{
		size_t tot = 1;
		for (int i = 0; i < P->nrel; i++)
			tot += (size_t)c->cls[P->rel[i]].maxfree + 1;
		P->rr = malloc(tot * sizeof(double));
	}
	P->ilb = malloc(((size_t)P->vmax + 1) * sizeof(double));
	if (!P->lv1 || !P->roff || !P->rr || !P->ilb)
		goto nomem;
	for (int kk = 0; kk <= P->vmax; kk++)
		P->ilb[kk] = INFINITY;
	{
		int o = 0;
		for (int i = 0; i < P->nrel; i++) {
			const struct cls *kc = &c->cls[P->rel[i]];
			int mf = 0;
			for (int j = 0; j < k; j++)
				if (kc->free[ty[j]] > mf)
					mf = kc->free[ty[j]];
			P->roff[i] = o;
			P->rr[o] = 0;
			for (int kk = 1; kk <= kc->maxfree; kk++)
				P->rr[o + kk] = intra_of(c, kc, kk);
			/* ilb[kk]: the least intra-node term of kk devices
			 * on any relevant node that has them free. */
			for (int kk = 1; kk <= mf; kk++) {
				P->lv1[P->nlv1++] = P->rr[o + kk];
				if (P->rr[o + kk] < P->ilb[kk])
					P->ilb[kk] = P->rr[o + kk];
			}
			o += kc->maxfree + 1;
		}
	}
	P->nlv1 = uniq(P->lv1, P->nlv1);
	return P;
nomem:
	pk_free(P);
	return NULL;
}

/* The network term of each relevant class at m nodes, and its levels
 * (ascending, distinct); 0 or HP_ENOMEM. */
static int pk_levels_m(struct pk *P, int m)
{
	const struct ctx *c = P->c;
	double *gm, *lv2;
	int n = 0;

	if (P->gm_m[m])
		return 0;
	gm = malloc(((size_t)P->nrel + 1) * sizeof(double));
	lv2 = malloc(((size_t)P->nrel + 1) * sizeof(double));
	if (!gm || !lv2) {
		free(gm);
		free(lv2);
		return HP_ENOMEM;
	}
	for (int i = 0; i < P->nrel; i++) {
		gm[i] = inter_of(c, &c->cls[P->rel[i]], m);
		lv2[n++] = gm[i];
	}
	P->nlv2_m[m] = uniq(lv2, n);
	P->gm_m[m] = gm;
	P->lv2_m[m] = lv2;
	return 0;
}

/*
 * Solve the packing of (types, counts) whose compute part is cp: phase
 * PH_ENERGY, the least energy meeting the deadline with energy below
 * *bound; PH_TIME, the least time below *bound.  1 and cfg when one is
 * found, 0 when none, negative on ENOMEM.  The type set's shared part is
 * kept in c->pk for the next counts of the same set.
 */
static int pack(struct ctx *c, const int *ty, const int *n, int k,
		const struct hp__rec_comp *cp, int phase, double bound,
		struct hp_rec_config *cfg)
{
	const struct hp__rec_params *q = c->q;
	struct pk *P = c->pk;
	double best = bound;
	int ntot = 0, mlo, mhi, rc = 0;

	if (!P || P->k != k || P->ty[0] != ty[0] ||
	    (k == 2 && P->ty[1] != ty[1])) {
		pk_free(P);
		c->pk = P = pk_new(c, ty, k);
		if (!P)
			return HP_ENOMEM;
	}
	/* A session's searches each work on their own copy of the ctx. */
	P->c = c;
	P->first_only = phase == PH_TIME;
	P->n[1] = 0;
	for (int j = 0; j < k; j++) {
		P->n[j] = n[j];
		ntot += n[j];
	}
	mlo = k;
	mhi = ntot < P->nrelnodes ? ntot : P->nrelnodes;
	if (q->nnodes > 0) {
		mlo = mlo > q->nnodes ? mlo : q->nnodes;
		mhi = mhi < q->nnodes ? mhi : q->nnodes;
	}
	{
		int ml = 0;
		for (int j = 0; j < k; j++) {
			int x = mmin_of(c, ty[j], n[j]);
			if (x < 0)
				return 0;
			ml += x;
		}
		if (ml > mlo)
			mlo = ml;
	}
	for (int m = mlo; m <= mhi; m++) {
		int nlv2;
		double tmin, bfull, *gm, *lv2;
		P->m = m;
		if (pk_levels_m(P, m))
			return HP_ENOMEM;
		gm = P->gm_m[m];
		lv2 = P->lv2_m[m];
		nlv2 = P->nlv2_m[m];
		/* Time and energy only grow with m from here on. */
		tmin = (double)q->steps *
			   (cp->compute_s + lv2[0] * (1 - HP_REC_OVERLAP)) +
		       HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * m;
		if (phase == PH_ENERGY &&
		    (tmin > q->deadline_s ||
		     tmin * (cp->devices_power_w + m * P->bmin_all) >= best))
			break;
		if (phase == PH_TIME && tmin >= best)
			break;
		/* Some node of m holds ceil(ntot / m) devices or more: its
		 * intra-node term is at least ilb of that.  This one m only
		 * (fewer devices a node with more nodes). */
		{
			int kn = (ntot + m - 1) / m;
			double ti;
			if (kn > P->vmax || P->ilb[kn] == INFINITY)
				continue;
			ti = tmin + (double)q->steps * P->ilb[kn] *
					(1 - HP_REC_OVERLAP);
			if (phase == PH_ENERGY ? ti > q->deadline_s ||
						     ti * (cp->devices_power_w +
							   m * P->bmin_all) >=
							 best
					       : ti >= best)
				continue;
		}
		/* The least base m nodes can have at any level: every node
		 * eligible, every cap full.  None: no packing of m nodes.
		 * It only bounds the levels' search, so when the DFS finds it
		 * hard, the m cheapest nodes' base stands in. */
		{
			bool af;
			bool cheap = phase == PH_ENERGY && best == INFINITY;
			set_caps(P, gm, P->rr, P->roff, INFINITY, INFINITY,
				 &af);
			set_suffix(P);
			/* With nothing to beat yet the bound cuts nothing:
			 * whether m nodes pack at all is enough. */
			P->no_dp = true;
			P->first_only |= cheap;
			bfull = least_base(P, INFINITY);
			P->no_dp = false;
			P->first_only = phase == PH_TIME;
			if (P->aborted || (cheap && bfull < INFINITY)) {
				int left = m;
				bfull = 0;
				for (int i = 0; i < P->nrel && left > 0; i++) {
					const struct cls *kc =
					    &c->cls[P->rel[i]];
					int t =
					    kc->mult < left ? kc->mult : left;
					bfull += t * kc->base;
					left -= t;
				}
			} else if (bfull == INFINITY)
				continue;
		}
		{
			struct rs R = {P,   gm, P->rr, P->roff, P->lv1,
				       lv2, cp, q,     phase,	&best,
				       cfg, m,	0};
			int r2 =
			    (long)P->nlv1 * nlv2 <= c->tune.level_grid_max_cells
				? grid(&R, P->nlv1, nlv2, bfull)
				: rect(&R, 0, P->nlv1 - 1, 0, nlv2 - 1, bfull);
			if (r2 < 0 || P->nomem)
				return r2 < 0 ? r2 : HP_ENOMEM;
			if (R.found)
				rc = 1;
		}
	}
	return rc;
}

/* Remember an evaluated configuration (for the front). */
static int keep(struct ctx *c, const struct hp_rec_config *cfg)
{
	struct hp_rec_config *d;
	if (c->nevald == c->aevald) {
		int na = c->aevald ? c->aevald * 2 : 64;
		void *p = realloc(c->evald, (size_t)na * sizeof(*c->evald));
		if (!p)
			return HP_ENOMEM;
		c->evald = p;
		c->aevald = na;
	}
	d = &c->evald[c->nevald];
	if (hp__rec_config_copy(d, cfg))
		return HP_ENOMEM;
	c->nevald++;
	return 0;
}

int hp__rec_config_copy(struct hp_rec_config *d, const struct hp_rec_config *s)
{
	*d = *s;
	d->groups =
	    malloc((size_t)(s->ngroups ? s->ngroups : 1) * sizeof(*d->groups));
	if (!d->groups)
		return HP_ENOMEM;
	memcpy(d->groups, s->groups, (size_t)s->ngroups * sizeof(*d->groups));
	return 0;
}

/* A candidate (types, counts) with its lower bounds. */
struct cand {
	int n[2];
	double tlb, elb;
	struct hp__rec_comp cp;
};

static int cmp_cand_e(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->elb > y->elb) - (x->elb < y->elb);
}
static int cmp_cand_t(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->tlb > y->tlb) - (x->tlb < y->tlb);
}

/* Lower bounds of time and energy of (types, counts) from its compute
 * part: fewest nodes, cheapest base, slowest link not below the fastest. */
static bool bounds(const struct ctx *c, const int *ty, const int *n, int k,
		   const struct hp__rec_comp *cp, double *tlb, double *elb)
{
	const struct hp__rec_params *q = c->q;
	int mlb = 0;
	double base = 0, x = INFINITY;

	for (int j = 0; j < k; j++) {
		int mm = mmin_of(c, ty[j], n[j]);
		if (mm < 0)
			return false;
		mlb += mm;
		base += mm * c->basemin_t[ty[j]];
	}
	if (q->nnodes > 0) {
		if (q->nnodes < mlb || q->nnodes > n[0] + (k > 1 ? n[1] : 0))
			return false;
		if (q->nnodes > mlb) {
			double bm = INFINITY;
			for (int j = 0; j < k; j++)
				if (c->basemin_t[ty[j]] < bm)
					bm = c->basemin_t[ty[j]];
			base += (q->nnodes - mlb) * bm;
		}
		mlb = q->nnodes;
	}
	if (mlb >= 2) {
		/* Every used node's link is no better than the best of the
		 * types' nodes: bandwidth at most, latency at least. */
		double bw = 0, lat = INFINITY;
		for (int j = 0; j < k; j++) {
			if (c->bwmax_t[ty[j]] > bw)
				bw = c->bwmax_t[ty[j]];
			if (c->latmin_t[ty[j]] < lat)
				lat = c->latmin_t[ty[j]];
		}
		x = hp__rec_inter_s(bw, lat, mlb, c->m->grad_bytes);
	} else {
		x = 0;
	}
	*tlb = (double)q->steps * (cp->compute_s + x * (1 - HP_REC_OVERLAP)) +
	       HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * mlb;
	*elb = *tlb * (cp->devices_power_w + base);
	return true;
}

/* Best of one type set. */
struct setbest {
	struct hp_rec_config cfg;
	bool have;
	char why[160];
};

/* Evaluate candidates of one type set in order of their bounds. */
static int run_cands(struct ctx *c, const int *ty, int k, struct cand *cv,
		     int nc, int phase, double *gbest, struct setbest *sb,
		     bool prune_by_global)
{
	if (nc > 0)
		qsort(cv, (size_t)nc, sizeof(*cv),
		      phase == PH_ENERGY ? cmp_cand_e : cmp_cand_t);
	for (int i = 0; i < nc; i++) {
		struct hp_rec_config cfg = {0};
		double own = sb->have ? (phase == PH_ENERGY ? sb->cfg.energy_j
							    : sb->cfg.time_s)
				      : INFINITY;
		double bound = prune_by_global && *gbest < own ? *gbest : own;
		double lb = phase == PH_ENERGY ? cv[i].elb : cv[i].tlb;
		int rc;
		if (phase == PH_ENERGY && cv[i].tlb > c->q->deadline_s)
			continue;
		if (lb >= bound)
			break;
		c->st->evaluated++;
		rc = pack(c, ty, cv[i].n, k, &cv[i].cp, phase, bound, &cfg);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			if (keep(c, &cfg)) {
				hp_rec_config_release(&cfg);
				return HP_ENOMEM;
			}
			hp_rec_config_release(&sb->cfg);
			sb->cfg = cfg;
			sb->have = true;
			{
				double v = phase == PH_ENERGY ? cfg.energy_j
							      : cfg.time_s;
				if (v < *gbest)
					*gbest = v;
			}
		}
	}
	return 0;
}

/* Candidates of one type: every count the batch, memory and constraints
 * allow. */
static int cands_one(struct ctx *c, int t, struct cand **out, int *nout,
		     char *why, size_t whylen)
{
	const struct hp__rec_params *q = c->q;
	const struct hp__rec_tt *tt = &c->m->tt[t];
	int64_t nmax = c->nnodes_t[t] ? c->pref[t][c->nnodes_t[t]] : 0;
	int lo = 1, nc = 0;
	struct cand *cv;

	*out = NULL;
	*nout = 0;
	if (nmax > q->global_batch)
		nmax = q->global_batch;
	if (q->ndevices > 0) {
		if (q->ndevices > nmax) {
			if (q->ndevices > q->global_batch)
				snprintf(why, whylen,
					 "%d devices for a global batch of "
					 "%lld: each needs a sample",
					 q->ndevices,
					 (long long)q->global_batch);
			else
				snprintf(
				    why, whylen,
				    "not enough free devices: %d asked, "
				    "%lld free",
				    q->ndevices,
				    (long long)(c->nnodes_t[t]
						    ? c->pref[t][c->nnodes_t[t]]
						    : 0));
			return 0;
		}
		lo = q->ndevices;
		nmax = q->ndevices;
	}
	if (nmax < 1) {
		snprintf(why, whylen, "no free devices in the pool");
		return 0;
	}
	cv = calloc((size_t)nmax, sizeof(*cv));
	if (!cv)
		return HP_ENOMEM;
	for (int n = lo; n <= nmax; n++) {
		struct cand *x = &cv[nc];
		int ty[1] = {t};
		x->n[0] = n;
		if (hp__rec_compute(c->m, ty, x->n, 1, q->global_batch, &x->cp))
			continue;
		c->st->candidates++;
		if (!bounds(c, ty, x->n, 1, &x->cp, &x->tlb, &x->elb))
			continue;
		nc++;
	}
	if (nc == 0) {
		int64_t b = (q->global_batch + nmax - 1) / nmax;
		if (b > tt->local_fit_max)
			snprintf(why, whylen,
				 "does not fit in memory at local batch %lld "
				 "(at most %lld)",
				 (long long)b, (long long)tt->local_fit_max);
		else if (q->nnodes > 0)
			snprintf(why, whylen,
				 "cannot be spread over exactly %d nodes",
				 q->nnodes);
		else
			snprintf(why, whylen, "no configuration fits");
	}
	*out = cv;
	*nout = nc;
	return 0;
}

/* Candidates of a pair: counts whose bounds could beat bound (energy
 * phase: also meet the deadline); rows and columns are cut with bounds
 * that hold for every count beyond the cut. */
static int cands_pair(struct ctx *c, int t0, int t1, int phase, double bound,
		      struct cand **out, int *nout)
{
	const struct hp__rec_params *q = c->q;
	int64_t f0 = c->nnodes_t[t0] ? c->pref[t0][c->nnodes_t[t0]] : 0;
	int64_t f1 = c->nnodes_t[t1] ? c->pref[t1][c->nnodes_t[t1]] : 0;
	double cfloor, epsmin, bmn, a0, a1, bw, lat;
	double pm0 = c->m->tt[t0].power_min_w, pm1 = c->m->tt[t1].power_min_w;
	double bmin0 = c->basemin_t[t0], bmin1 = c->basemin_t[t1];
	double bminx = bmin0 < bmin1 ? bmin0 : bmin1;
	double steps = (double)q->steps;
	int nc = 0, ac = 0, rc = 0;
	const int *mm0, *mm1;
	struct cand *cv = NULL;

	*out = NULL;
	*nout = 0;
	if (f0 > q->global_batch)
		f0 = q->global_batch;
	if (f1 > q->global_batch)
		f1 = q->global_batch;
	if (f0 < 1 || f1 < 1)
		return 0;
	/* Every device of both types takes at least one sample, and a
	 * table's time does not fall with the batch: no split's compute is
	 * below the slower type's time at batch 1. */
	cfloor = fmax(c->m->tt[t0].step_s[1], c->m->tt[t1].step_s[1]);
	/* Each device's energy over a step is at least its samples times
	 * its type's least energy per sample: no split does better. */
	epsmin = c->eps[t0] < c->eps[t1] ? c->eps[t0] : c->eps[t1];
	if (phase == PH_ENERGY &&
	    steps * (double)q->global_batch * epsmin >= bound)
		return 0;
	bmn = c->beta[t0] < c->beta[t1] ? c->beta[t0] : c->beta[t1];
	if (bmn < 0)
		bmn = 0;
	a0 = c->alpha[t0] + c->beta[t0];
	a1 = c->alpha[t1] + c->beta[t1];
	/* The best network figures any used node can have. */
	bw = c->bwmax_t[t0] > c->bwmax_t[t1] ? c->bwmax_t[t0] : c->bwmax_t[t1];
	lat = c->latmin_t[t0] < c->latmin_t[t1] ? c->latmin_t[t0]
						: c->latmin_t[t1];
	/* Fewest nodes for n devices of each type (one type per node):
	 * f0, f1 <= B, within the tables. */
	mm0 = c->mm[t0];
	mm1 = c->mm[t1];
	for (int n0 = 1; n0 <= f0 && n0 < q->global_batch; n0++) {
		int n1s = 1;
		/* Rows beyond: every cell has at least these nodes, this
		 * power and no less than the floor of compute. */
		{
			int ml = mm0[n0] + 1;
			double tn, tfl;
			if (q->nnodes > 0) {
				if (ml > q->nnodes)
					break;
				ml = q->nnodes;
			}
			tn = HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * ml +
			     steps *
				 hp__rec_inter_s(bw, lat, ml, c->m->grad_bytes);
			tfl = steps * cfloor + tn;
			if (phase == PH_ENERGY) {
				double bl = mm0[n0] * bmin0 + bmin1;
				double ef =
				    steps *
					(n0 * a0 + a1 +
					 (double)(q->global_batch - n0 - 1) *
					     bmn) +
				    tfl * bl;
				if (tfl > q->deadline_s ||
				    tfl * (n0 * pm0 + pm1 + bl) >= bound ||
				    (ef >= bound && a0 >= bmn && a1 >= bmn))
					break;
			} else if (tfl >= bound) {
				break;
			}
		}
		if (phase == PH_ENERGY) {
			/* The fewest n1 whose compute bound meets the
			 * deadline (one less, for rounding). */
			double cd = (q->deadline_s - HP_REC_STARTUP_S -
				     2 * HP_REC_STARTUP_NODE_S) /
				    steps;
			double need =
			    ((double)q->global_batch / cd - n0 * c->thr[t0]) /
			    c->thr[t1];
			if (!(cd > 0) || need > (double)f1 + 1)
				continue;
			if (need > 2)
				n1s = (int)need - 1;
		}
		for (int n1 = n1s; n1 <= f1 && n0 + n1 <= q->global_batch;
		     n1++) {
			int ty[2] = {t0, t1}, ml = mm0[n0] + mm1[n1];
			double cthr, clb, tn, tlb, tfl, bl, plb, elb, es, es2;
			bool floor_now;
			struct cand x;
			if (q->ndevices > 0 && n0 + n1 != q->ndevices) {
				if (n0 + n1 > q->ndevices)
					break;
				continue;
			}
			bl = mm0[n0] * bmin0 + mm1[n1] * bmin1;
			if (q->nnodes > 0) {
				/* More devices need no fewer nodes. */
				if (ml > q->nnodes)
					break;
				bl += (q->nnodes - ml) * bminx;
				ml = q->nnodes;
			}
			tn = HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * ml +
			     steps *
				 hp__rec_inter_s(bw, lat, ml, c->m->grad_bytes);
			cthr = (double)q->global_batch /
			       (n0 * c->thr[t0] + n1 * c->thr[t1]);
			floor_now = cthr <= cfloor;
			clb = floor_now ? cfloor : cthr;
			tlb = steps * clb + tn;
			tfl = steps * cfloor + tn;
			plb = n0 * pm0 + n1 * pm1 + bl;
			elb = tlb * plb;
			/* Devices' energy: at least the lines under it,
			 * every device with one sample and the rest at the
			 * cheaper slope; plus the nodes' base power. */
			es = steps *
				 (n0 * a0 + n1 * a1 +
				  (double)(q->global_batch - n0 - n1) * bmn) +
			     tlb * bl;
			es2 = steps * (n0 * c->eps[t0] + n1 * c->eps[t1] +
				       (double)(q->global_batch - n0 - n1) *
					   epsmin) +
			      tlb * bl;
			if (es2 > es)
				es = es2;
			/* Once compute is at its floor, nodes, power and
			 * the line bound only grow with n1: stop. */
			if (phase == PH_ENERGY) {
				double ef =
				    steps *
					(n0 * a0 + n1 * a1 +
					 (double)(q->global_batch - n0 - n1) *
					     bmn) +
				    tfl * bl;
				if (floor_now &&
				    (tlb > q->deadline_s || elb >= bound))
					break;
				if (ef >= bound && a1 >= bmn)
					break;
				if (tlb > q->deadline_s || elb >= bound ||
				    es >= bound)
					continue;
			} else {
				if (floor_now && tlb >= bound)
					break;
				if (tlb >= bound)
					continue;
			}
			memset(&x, 0, sizeof(x));
			x.n[0] = n0;
			x.n[1] = n1;
			if (hp__rec_compute(c->m, ty, x.n, 2, q->global_batch,
					    &x.cp))
				continue;
			c->st->candidates++;
			if (!bounds(c, ty, x.n, 2, &x.cp, &x.tlb, &x.elb))
				continue;
			if (phase == PH_ENERGY
				? x.tlb > q->deadline_s || x.elb >= bound
				: x.tlb >= bound)
				continue;
			if (nc == ac) {
				int na = ac ? ac * 2 : 256;
				void *p = realloc(cv, (size_t)na * sizeof(*cv));
				if (!p) {
					rc = HP_ENOMEM;
					goto out;
				}
				cv = p;
				ac = na;
			}
			cv[nc++] = x;
		}
	}
out:
	if (rc) {
		free(cv);
		return rc;
	}
	*out = cv;
	*nout = nc;
	return 0;
}

static int add_reject(struct hp_rec_result *r, const char *what,
		      const struct hp_rec_config *cfg, const char *reason)
{
	struct hp_rec_reject *x;
	void *p = realloc(r->rejected,
			  ((size_t)r->nrejected + 1) * sizeof(*r->rejected));
	if (!p)
		return HP_ENOMEM;
	r->rejected = p;
	x = &r->rejected[r->nrejected];
	memset(x, 0, sizeof(*x));
	if (cfg && hp__rec_config_copy(&x->cfg, cfg))
		return HP_ENOMEM;
	snprintf(x->what, sizeof(x->what), "%s", what);
	snprintf(x->reason, sizeof(x->reason), "%s", reason);
	r->nrejected++;
	return 0;
}

static void dur_text(double s, char *buf, size_t n)
{
	if (s < 120)
		snprintf(buf, n, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, n, "%.0f min", s / 60);
	else
		snprintf(buf, n, "%.1f h", s / 3600);
}

static int cmp_cfg_time(const void *a, const void *b)
{
	const struct hp_rec_config *x = a, *y = b;
	if (x->time_s != y->time_s)
		return x->time_s < y->time_s ? -1 : 1;
	return (x->energy_j > y->energy_j) - (x->energy_j < y->energy_j);
}

int hp__rec_set_front(struct hp_rec_result *out, struct hp_rec_config *cfgs,
		      int n)
{
	struct hp_rec_config *pa;
	double emin = INFINITY;
	int np = 0;

	if (n > 0)
		qsort(cfgs, (size_t)n, sizeof(*cfgs), cmp_cfg_time);
	pa = calloc((size_t)n + 1, sizeof(*pa));
	if (!pa)
		return HP_ENOMEM;
	/* A configuration stays if it uses less energy than every faster
	 * one (the same time and energy once). */
	for (int i = 0; i < n; i++) {
		if (!(cfgs[i].energy_j < emin))
			continue;
		emin = cfgs[i].energy_j;
		if (hp__rec_config_copy(&pa[np], &cfgs[i])) {
			while (np > 0)
				hp_rec_config_release(&pa[--np]);
			free(pa);
			return HP_ENOMEM;
		}
		np++;
	}
	for (int i = 0; i < out->npareto; i++)
		hp_rec_config_release(&out->pareto[i]);
	free(out->pareto);
	out->pareto = pa;
	out->npareto = np;
	return 0;
}

/* A single type's candidates: they do not depend on the deadline or the
 * phase, so a session makes them once. */
struct c1ent {
	struct cand *cv;
	int n;
	bool done;
	char why[160];
};

struct hp__rec_session {
	struct ctx c;
	struct hp__rec_params q;
	struct hp__rec_stats dummy;
	struct c1ent *c1; /* per type set; pairs unused */
	int nc1;
};

int hp__rec_session_new(const struct hp__rec_model *m,
			const struct hp_pool *pool,
			const struct hp__rec_params *q,
			struct hp__rec_stats *st, struct hp__rec_session **out,
			struct hp_error *err)
{
	struct hp__rec_session *S;
	int nt = m->ntypes, rc;

	*out = NULL;
	if (nt > 64)
		return hp_error_set(err, HP_EINVAL,
				    "more than 64 device types");
	S = calloc(1, sizeof(*S));
	if (!S)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	S->q = *q;
	S->c.m = m;
	S->c.pool = pool;
	S->c.q = &S->q;
	if (q->tuning)
		S->c.tune = *q->tuning;
	else
		S->c.tune = (struct hp__rec_tuning){
		    HP__REC_LEVEL_GRID_MAX_CELLS, HP__REC_DFS_MAX_VISITS};
	S->q.tuning = NULL; /* the session keeps its own copy */
	S->c.st = st ? st : &S->dummy;
	S->nc1 = nt + nt * nt + 1;
	S->c1 = calloc((size_t)S->nc1, sizeof(*S->c1));
	if (!S->c1) {
		free(S);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	if ((rc = ctx_init(&S->c, err))) {
		hp__rec_session_free(S);
		return rc;
	}
	*out = S;
	return 0;
}

void hp__rec_session_free(struct hp__rec_session *S)
{
	if (!S)
		return;
	for (int s = 0; s < S->nc1; s++)
		free(S->c1[s].cv);
	free(S->c1);
	ctx_release(&S->c);
	free(S);
}

int hp__rec_search(const struct hp__rec_model *m, const struct hp_pool *pool,
		   const struct hp__rec_params *q, struct hp_rec_result *out,
		   struct hp__rec_stats *st, struct hp_error *err)
{
	struct hp__rec_session *S;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = hp__rec_session_new(m, pool, q, st, &S, err)))
		return rc;
	rc = hp__rec_session_search(S, q->deadline_s, out, err);
	hp__rec_session_free(S);
	return rc;
}

int hp__rec_session_search(struct hp__rec_session *S, double deadline_s,
			   struct hp_rec_result *out, struct hp_error *err)
{
	const struct hp__rec_params *q = &S->q;
	const struct hp__rec_model *m = S->c.m;
	struct ctx c;
	struct setbest *sb = NULL;
	int nt = m->ntypes, nsets = 0, rc = 0, phase, npairs_none = 0;
	int(*sets)[2] = NULL;
	double gbest;
	int *ord = NULL;    /* order of the sets in a phase */
	double *olb = NULL; /* a single type's least time bound */
	struct c1ent *c1 = S->c1;

	memset(out, 0, sizeof(*out));
	S->q.deadline_s = deadline_s;
	out->deadline_s = deadline_s;
	/* The configurations costed are this search's own. */
	for (int i = 0; i < S->c.nevald; i++)
		hp_rec_config_release(&S->c.evald[i]);
	S->c.nevald = 0;
	c = S->c;
	sets = calloc((size_t)(nt + nt * nt + 1), sizeof(*sets));
	sb = calloc((size_t)(nt + nt * nt + 1), sizeof(*sb));
	ord = calloc((size_t)(nt + nt * nt + 1), sizeof(*ord));
	olb = calloc((size_t)(nt + nt * nt + 1), sizeof(*olb));
	if (!sets || !sb || !ord || !olb) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int t = 0; t < nt; t++)
		if (q->only_type < 0 || q->only_type == t) {
			sets[nsets][0] = t;
			sets[nsets][1] = -1;
			nsets++;
		}
	if (q->only_type < 0 && q->max_mix >= 2)
		for (int a = 0; a < nt; a++)
			for (int b = a + 1; b < nt; b++) {
				sets[nsets][0] = a;
				sets[nsets][1] = b;
				nsets++;
			}
	/* Phase 1: least energy among configurations meeting the deadline;
	 * phase 2 (none does): the fastest. */
	for (phase = PH_ENERGY; phase <= PH_TIME; phase++) {
		gbest = INFINITY;
		/* Fastest: the single types whose bounds promise the least
		 * time first, so the best so far cuts the others early. */
		for (int s = 0; s < nsets; s++) {
			ord[s] = s;
			olb[s] = INFINITY;
			if (phase == PH_TIME && sets[s][1] < 0 && c1[s].done)
				for (int i = 0; i < c1[s].n; i++)
					olb[s] = fmin(olb[s], c1[s].cv[i].tlb);
		}
		if (phase == PH_TIME)
			for (int a = 1; a < nsets && sets[a][1] < 0; a++)
				for (int b = a;
				     b > 0 && olb[ord[b]] < olb[ord[b - 1]];
				     b--) {
					int x = ord[b];
					ord[b] = ord[b - 1];
					ord[b - 1] = x;
				}
		for (int oi = 0; oi < nsets; oi++) {
			int s = ord[oi];
			int ty[2] = {sets[s][0], sets[s][1]};
			int k = ty[1] < 0 ? 1 : 2;
			struct cand *cv = NULL;
			int ncv = 0;
			hp_rec_config_release(&sb[s].cfg);
			sb[s].have = false;
			if (!m->tt[ty[0]].ok || (k == 2 && !m->tt[ty[1]].ok)) {
				snprintf(
				    sb[s].why, sizeof(sb[s].why), "%s",
				    m->tt[m->tt[ty[0]].ok ? ty[1] : ty[0]].why);
				continue;
			}
			if (k == 1 && c1[s].done) {
				/* a single type's candidates do not depend on
				 * the phase: made once */
				cv = c1[s].cv;
				ncv = c1[s].n;
				snprintf(sb[s].why, sizeof(sb[s].why), "%s",
					 c1[s].why);
				rc = 0;
			} else if (k == 1) {
				rc = cands_one(&c, ty[0], &cv, &ncv, sb[s].why,
					       sizeof(sb[s].why));
				if (rc >= 0) {
					c1[s].cv = cv;
					c1[s].n = ncv;
					c1[s].done = true;
					snprintf(c1[s].why, sizeof(c1[s].why),
						 "%s", sb[s].why);
				}
			} else
				rc = cands_pair(&c, ty[0], ty[1], phase, gbest,
						&cv, &ncv);
			if (rc < 0) {
				rc = hp_error_set(err, rc, "out of memory");
				goto out;
			}
			/* Single types are solved to their own best for
			 * `rejected`, except when only the fastest counts:
			 * then every set is cut by the best so far. */
			rc = run_cands(&c, ty, k, cv, ncv, phase, &gbest,
				       &sb[s], k == 2 || phase == PH_TIME);
			if (k == 2)
				free(cv);
			if (rc < 0) {
				rc = hp_error_set(err, rc, "out of memory");
				goto out;
			}
			if (!sb[s].have && !sb[s].why[0]) {
				if (k == 2)
					snprintf(
					    sb[s].why, sizeof(sb[s].why),
					    phase == PH_ENERGY
						? "no mix of the two beats "
						  "the choice within the "
						  "deadline (bounds)"
						: "no mix of the two is "
						  "faster (bounds)");
				else if (phase == PH_ENERGY)
					snprintf(sb[s].why, sizeof(sb[s].why),
						 "misses the deadline with "
						 "any count");
				else if (ncv > 0)
					snprintf(sb[s].why, sizeof(sb[s].why),
						 "no count of it is faster "
						 "than the choice (bounds)");
				else
					snprintf(sb[s].why, sizeof(sb[s].why),
						 "no configuration fits");
			}
		}
		if (gbest < INFINITY)
			break;
	}
	/* The choice. */
	{
		int bi = -1;
		for (int s = 0; s < nsets; s++) {
			double v, bv;
			if (!sb[s].have)
				continue;
			if (bi < 0) {
				bi = s;
				continue;
			}
			v = phase == PH_ENERGY ? sb[s].cfg.energy_j
					       : sb[s].cfg.time_s;
			bv = phase == PH_ENERGY ? sb[bi].cfg.energy_j
						: sb[bi].cfg.time_s;
			if (v < bv)
				bi = s;
		}
		if (bi >= 0) {
			out->found = true;
			if ((rc = hp__rec_config_copy(&out->choice,
						      &sb[bi].cfg))) {
				rc = hp_error_set(err, rc, "out of memory");
				goto out;
			}
			out->feasible = phase == PH_ENERGY;
			if (!out->feasible) {
				char a[32];
				dur_text(out->choice.time_s - q->deadline_s, a,
					 sizeof(a));
				snprintf(out->reason, sizeof(out->reason),
					 "no configuration meets the deadline: "
					 "the fastest misses it by %s",
					 a);
			}
		} else {
			/* Nothing can run: say why, from the first set. */
			out->found = false;
			out->feasible = false;
			snprintf(out->reason, sizeof(out->reason),
				 "no configuration can run");
			for (int s = 0; s < nsets; s++)
				if (sb[s].why[0]) {
					snprintf(out->reason,
						 sizeof(out->reason), "%s: %s",
						 m->tt[sets[s][0]].name,
						 sb[s].why);
					break;
				}
		}
		/* Rejected: each other type set's best, or why none. */
		for (int s = 0; s < nsets; s++) {
			char what[64], reason[160];
			if (s == bi)
				continue;
			if (sets[s][1] < 0)
				snprintf(what, sizeof(what), "%s",
					 m->tt[sets[s][0]].name);
			else
				snprintf(what, sizeof(what), "%s+%s",
					 m->tt[sets[s][0]].name,
					 m->tt[sets[s][1]].name);
			if (!sb[s].have) {
				/* Pairs without a configuration are summed
				 * up below; types that cannot be used are
				 * listed once, alone. */
				if (sets[s][1] >= 0) {
					npairs_none++;
					continue;
				}
				snprintf(reason, sizeof(reason), "%s",
					 sb[s].why);
				rc = add_reject(out, what, NULL, reason);
			} else if (bi >= 0) {
				const struct hp_rec_config *x = &sb[s].cfg,
							   *y = &out->choice;
				if (phase == PH_ENERGY)
					snprintf(
					    reason, sizeof(reason),
					    "uses %.0f%% more energy",
					    100 * (x->energy_j / y->energy_j -
						   1));
				else {
					char a[32];
					dur_text(x->time_s - q->deadline_s, a,
						 sizeof(a));
					snprintf(reason, sizeof(reason),
						 "misses the deadline by %s",
						 a);
				}
				rc = add_reject(out, what, x, reason);
			}
			if (rc) {
				rc = hp_error_set(err, rc, "out of memory");
				goto out;
			}
		}
	}
	if (npairs_none > 0 &&
	    add_reject(out, "pairs of types", NULL,
		       phase == PH_ENERGY
			   ? "no mix of two usable types beats the choice "
			     "within the deadline (lower bounds)"
			   : "no mix of two usable types is faster (lower "
			     "bounds)")) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	/* Pareto: the non-dominated evaluated configurations by time. */
	if (hp__rec_set_front(out, c.evald, c.nevald)) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}

	out->evaluated = c.st->evaluated;
out:
	if (sb)
		for (int s = 0; s < nsets; s++)
			hp_rec_config_release(&sb[s].cfg);
	free(sb);
	free(ord);
	free(olb);
	free(sets);
	/* What the search grew (costed configurations, packing state) stays
	 * with the session. */
	S->c = c;
	return rc;
}
