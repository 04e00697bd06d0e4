/*
 * classes.c - the pool as the search sees it.  Nodes with the same base
 * power, links and free devices of every type form a class (the search
 * picks how many nodes of a class, not which).  Per device type: the
 * free counts of its nodes, fullest first, the fewest nodes that hold a
 * count, the best network figures and least base power of its nodes, and
 * bounds on a device's throughput and energy that hold whatever the
 * batch split.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

/* A node's sort key for grouping: its figures, then its free vector;
 * each key carries what the comparison needs (no shared context). */
struct node_key {
	double base_w, intra_gbps, net_payload_gbps, net_msg_s;
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
	if (x->net_payload_gbps != y->net_payload_gbps)
		return x->net_payload_gbps < y->net_payload_gbps ? -1 : 1;
	if (x->net_msg_s != y->net_msg_s)
		return x->net_msg_s < y->net_msg_s ? -1 : 1;
	for (int t = 0; t < x->ntypes; t++)
		if (x->free[t] != y->free[t])
			return x->free[t] - y->free[t];
	return x->node - y->node;
}

/* Classes: base ascending, then the fullest, then the best links. */
static int cmp_class(const void *a, const void *b)
{
	const struct hp__rec_class *x = a, *y = b;
	if (x->base_w != y->base_w)
		return x->base_w < y->base_w ? -1 : 1;
	if (x->free_max != y->free_max)
		return y->free_max - x->free_max;
	if (x->intra_gbps != y->intra_gbps)
		return x->intra_gbps > y->intra_gbps ? -1 : 1;
	if (x->net_payload_gbps != y->net_payload_gbps)
		return x->net_payload_gbps > y->net_payload_gbps ? -1 : 1;
	if (x->net_msg_s != y->net_msg_s)
		return x->net_msg_s < y->net_msg_s ? -1 : 1;
	return 0;
}

static int cmp_int_desc(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

void hp__rec_classes_release(struct hp__rec_classes *cl)
{
	for (int i = 0; i < cl->ncls; i++) {
		free(cl->cls[i].free);
		free(cl->cls[i].nodes);
	}
	free(cl->cls);
	free(cl->node_free);
	if (cl->free_top)
		for (int t = 0; t < cl->ntypes; t++)
			free(cl->free_top[t]);
	free(cl->free_top);
	if (cl->fewest_nodes)
		for (int t = 0; t < cl->ntypes; t++)
			free(cl->fewest_nodes[t]);
	free(cl->fewest_nodes);
	free(cl->fewest_nodes_max);
	free(cl->nodes_with);
	free(cl->base_min_w);
	free(cl->net_payload_max_gbps);
	free(cl->net_msg_min_s);
	free(cl->node_payload_gbps);
	free(cl->node_msg_s);
	memset(cl, 0, sizeof(*cl));
}

/*
 * Bounds of one type that hold for any split of the batch.  A device at
 * local batch b in a configuration whose step is c has b <= ceil of its
 * type's share, so c >= t(b_hi) >= u(b), u(b) = min t(b' >= b) (the
 * suffix minimum; the tables are not assumed monotone).  Hence:
 *   samples_per_s: b <= c x max(b / u(b)), per device;
 *   j_per_sample: its energy over the step p(b) c >= b x min(p(b) u(b) /
 *   b);
 *   at0 + per_sample b <= phi(b) = p(b) u(b): the line through phi(1)
 *   with the least slope to any later point lies below phi everywhere.
 */
static int type_bounds(const struct hp__rec_tt *tt, double *samples_per_s,
		       double *j_per_sample, double *at0_j,
		       double *per_sample_j)
{
	double *u = malloc(((size_t)tt->local_max + 2) * sizeof(double));
	double phi1, sl = INFINITY;

	if (!u)
		return HP_ENOMEM;
	u[tt->local_max + 1] = INFINITY;
	for (int64_t x = tt->local_max; x >= 1; x--)
		u[x] = tt->step_s[x] < u[x + 1] ? tt->step_s[x] : u[x + 1];
	*samples_per_s = 0;
	*j_per_sample = INFINITY;
	phi1 = tt->power_w[1] * u[1];
	for (int64_t x = 1; x <= tt->local_max; x++) {
		double v = (double)x / u[x],
		       e = tt->power_w[x] * u[x] / (double)x;
		if (v > *samples_per_s)
			*samples_per_s = v;
		if (e < *j_per_sample)
			*j_per_sample = e;
		if (x >= 2) {
			double d =
			    (tt->power_w[x] * u[x] - phi1) / (double)(x - 1);
			if (d < sl)
				sl = d;
		}
	}
	if (sl == INFINITY)
		sl = 0;
	*per_sample_j = sl;
	*at0_j = phi1 - sl;
	free(u);
	return 0;
}

/* Free devices of each usable type on each node. */
static void fill_node_free(struct hp__rec_classes *cl,
			   const struct hp__rec_model *m,
			   const struct hp_pool *p)
{
	int nt = cl->ntypes;

	for (int i = 0; i < p->n; i++)
		for (int d = 0; d < p->nodes[i].ndevs; d++) {
			int t = hp__rec_type_index(m, p->nodes[i].devs[d].type);
			if (t >= 0 && m->tt[t].ok)
				cl->node_free[i * nt + t] =
				    p->nodes[i].devs[d].free;
		}
}

/* Nodes in class order (figures, then free vector) into order[]. */
static int sort_nodes(const struct hp__rec_classes *cl, const struct hp_pool *p,
		      int *order)
{
	size_t npool = p->n > 0 ? (size_t)p->n : 0;
	struct node_key *keys = malloc((npool + 1) * sizeof(*keys));
	int nt = cl->ntypes;

	if (!keys)
		return HP_ENOMEM;
	for (int i = 0; i < p->n; i++) {
		const struct hp_pool_node *x = &p->nodes[i];
		keys[i] = (struct node_key){x->base_power_w,
					    x->intra_bw_gbps,
					    cl->node_payload_gbps[i],
					    cl->node_msg_s[i],
					    &cl->node_free[(size_t)i * nt],
					    nt,
					    i};
	}
	qsort(keys, npool, sizeof(*keys), cmp_node);
	for (int i = 0; i < p->n; i++)
		order[i] = keys[i].node;
	free(keys);
	return 0;
}

/* Runs of alike nodes in order[] into classes (nodes with no free device
 * of a usable type left out), sorted by cmp_class. */
static int group_classes(struct hp__rec_classes *cl, const struct hp_pool *p,
			 const int *order)
{
	size_t npool = p->n > 0 ? (size_t)p->n : 0;
	int nt = cl->ntypes;

	cl->cls = calloc(npool + 1, sizeof(*cl->cls));
	if (!cl->cls)
		return HP_ENOMEM;
	for (int a = 0; a < p->n;) {
		int b = a + 1, any = 0;
		const struct hp_pool_node *x = &p->nodes[order[a]];
		struct hp__rec_class *k;
		while (b < p->n) {
			const struct hp_pool_node *y = &p->nodes[order[b]];
			if (x->base_power_w != y->base_power_w ||
			    x->intra_bw_gbps != y->intra_bw_gbps ||
			    cl->node_payload_gbps[order[a]] !=
				cl->node_payload_gbps[order[b]] ||
			    cl->node_msg_s[order[a]] !=
				cl->node_msg_s[order[b]] ||
			    memcmp(&cl->node_free[order[a] * nt],
				   &cl->node_free[order[b] * nt],
				   (size_t)nt * sizeof(int)))
				break;
			b++;
		}
		for (int t = 0; t < nt; t++)
			any |= cl->node_free[order[a] * nt + t] > 0;
		if (any) {
			k = &cl->cls[cl->ncls];
			k->base_w = x->base_power_w;
			k->intra_gbps = x->intra_bw_gbps;
			k->net_payload_gbps = cl->node_payload_gbps[order[a]];
			k->net_msg_s = cl->node_msg_s[order[a]];
			k->nnodes = b - a;
			k->free = malloc((size_t)(nt ? nt : 1) * sizeof(int));
			k->nodes = malloc((size_t)(b - a) * sizeof(int));
			cl->ncls++;
			if (!k->free || !k->nodes)
				return HP_ENOMEM;
			memcpy(k->free, &cl->node_free[order[a] * nt],
			       (size_t)nt * sizeof(int));
			for (int t = 0; t < nt; t++)
				if (k->free[t] > k->free_max)
					k->free_max = k->free[t];
			memcpy(k->nodes, &order[a],
			       (size_t)(b - a) * sizeof(int));
		}
		a = b;
	}
	qsort(cl->cls, (size_t)cl->ncls, sizeof(*cl->cls), cmp_class);
	return 0;
}

/* Type t's tables: its nodes' best figures, their free counts fullest
 * first (prefix sums), the fewest nodes for each count up to the global
 * batch (no configuration has more devices of a type).  tmp: room for
 * every node. */
static int type_tables(struct hp__rec_classes *cl, const struct hp_pool *p,
		       int t, int64_t global_batch, int *tmp)
{
	int nt = cl->ntypes, r = 0, x = 0;
	int64_t top;

	cl->base_min_w[t] = INFINITY;
	cl->net_msg_min_s[t] = INFINITY;
	for (int i = 0; i < p->n; i++) {
		const struct hp_pool_node *nd = &p->nodes[i];
		if (cl->node_free[i * nt + t] <= 0)
			continue;
		tmp[r++] = cl->node_free[i * nt + t];
		if (cl->node_payload_gbps[i] > cl->net_payload_max_gbps[t])
			cl->net_payload_max_gbps[t] = cl->node_payload_gbps[i];
		if (cl->node_msg_s[i] < cl->net_msg_min_s[t])
			cl->net_msg_min_s[t] = cl->node_msg_s[i];
		if (nd->base_power_w < cl->base_min_w[t])
			cl->base_min_w[t] = nd->base_power_w;
	}
	qsort(tmp, (size_t)r, sizeof(int), cmp_int_desc);
	cl->free_top[t] = malloc(((size_t)r + 1) * sizeof(int64_t));
	if (!cl->free_top[t])
		return HP_ENOMEM;
	cl->free_top[t][0] = 0;
	for (int i = 0; i < r; i++)
		cl->free_top[t][i + 1] = cl->free_top[t][i] + tmp[i];
	cl->nodes_with[t] = r;
	top = cl->free_top[t][r] < global_batch ? cl->free_top[t][r]
						: global_batch;
	cl->fewest_nodes[t] = malloc(((size_t)top + 1) * sizeof(int));
	if (!cl->fewest_nodes[t])
		return HP_ENOMEM;
	cl->fewest_nodes_max[t] = (int)top;
	cl->fewest_nodes[t][0] = 0;
	for (int n = 1; n <= top; n++) {
		while (cl->free_top[t][x] < n)
			x++;
		cl->fewest_nodes[t][n] = x;
	}
	return 0;
}

int hp__rec_classes_init(struct hp__rec_classes *cl,
			 const struct hp__rec_model *m, const struct hp_pool *p,
			 int64_t global_batch, struct hp_error *err)
{
	size_t npool = p->n > 0 ? (size_t)p->n : 0;
	size_t nt1 = (size_t)(m->ntypes ? m->ntypes : 1);
	int *order = NULL, *tmp = NULL, rc;

	memset(cl, 0, sizeof(*cl));
	if (m->ntypes > HP__REC_MAX_TYPES)
		return hp_error_set(err, HP_EINVAL, "more than %d device types",
				    HP__REC_MAX_TYPES);
	cl->ntypes = m->ntypes;
	cl->node_free = calloc(npool * nt1, sizeof(int));
	cl->free_top = calloc(nt1, sizeof(*cl->free_top));
	cl->nodes_with = calloc(nt1, sizeof(int));
	cl->fewest_nodes = calloc(nt1, sizeof(*cl->fewest_nodes));
	cl->fewest_nodes_max = calloc(nt1, sizeof(int));
	cl->base_min_w = calloc(nt1, sizeof(double));
	cl->net_payload_max_gbps = calloc(nt1, sizeof(double));
	cl->net_msg_min_s = calloc(nt1, sizeof(double));
	cl->node_payload_gbps = calloc(npool + 1, sizeof(double));
	cl->node_msg_s = calloc(npool + 1, sizeof(double));
	order = malloc((npool + 1) * sizeof(int));
	tmp = malloc((npool + 1) * sizeof(int));
	rc = HP_ENOMEM;
	if (!cl->node_free || !cl->free_top || !cl->nodes_with ||
	    !cl->fewest_nodes || !cl->fewest_nodes_max || !cl->base_min_w ||
	    !cl->net_payload_max_gbps || !cl->net_msg_min_s ||
	    !cl->node_payload_gbps || !cl->node_msg_s || !order || !tmp)
		goto fail;
	for (int i = 0; i < p->n; i++)
		hp__rec_node_net(m, &p->nodes[i], &cl->node_payload_gbps[i],
				 &cl->node_msg_s[i]);
	fill_node_free(cl, m, p);
	if ((rc = sort_nodes(cl, p, order)) ||
	    (rc = group_classes(cl, p, order)))
		goto fail;
	for (int t = 0; t < cl->ntypes; t++) {
		if ((rc = type_tables(cl, p, t, global_batch, tmp)))
			goto fail;
		if (m->tt[t].ok &&
		    (rc = type_bounds(&m->tt[t], &cl->dev_samples_per_s_max[t],
				      &cl->dev_j_per_sample_min[t],
				      &cl->dev_step_j_at0[t],
				      &cl->dev_step_j_per_sample[t])))
			goto fail;
	}
	free(order);
	free(tmp);
	return 0;
fail:
	free(order);
	free(tmp);
	hp__rec_classes_release(cl);
	return hp_error_set(err, rc, "out of memory");
}

/* The table up to the global batch, a binary search past it. */
int hp__rec_fewest_nodes(const struct hp__rec_classes *cl, int t, int n)
{
	int lo = 1, hi = cl->nodes_with[t];

	if (n <= cl->fewest_nodes_max[t])
		return cl->fewest_nodes[t][n];
	if (hi == 0 || cl->free_top[t][hi] < n)
		return -1;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (cl->free_top[t][mid] >= n)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int64_t hp__rec_free_total(const struct hp__rec_classes *cl, int t)
{
	return cl->nodes_with[t] ? cl->free_top[t][cl->nodes_with[t]] : 0;
}
