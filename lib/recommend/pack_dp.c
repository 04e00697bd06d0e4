/*
 * pack_dp.c - the packing of pack.c by dynamic programming, for the
 * packings the DFS finds hard (many alike groups, many nodes): exact, in
 * time polynomial in the groups, nodes and devices.  It needs each group
 * to serve one type (true of one type, and of two whose nodes hold one of
 * them each).
 *
 * For type j over its groups: F[u][s], the least base of u nodes of the
 * groups so far with capacity s (capacity past count[j] counted as
 * count[j]).  A group's nodes are alike but for their base, so y of them
 * cost its y cheapest.  Then the least base of m nodes is F0[m][n0], or
 * for two types the least F0[u][n0] + F1[m - u][n1].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

/* One type's table. */
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
static int dp_type(const struct hp__rec_pack *P, int j, int mu, double below,
		   int *buf, struct dpt *d)
{
	size_t cells;
	double *F2 = NULL, *cost = NULL;
	int rc = 0;

	d->n = P->count[j];
	d->mu = mu < d->n ? mu : d->n;
	cells = dp_cells(d->mu, d->n);
	d->gl = malloc(((size_t)P->ngroups + 1) * sizeof(int));
	d->F = malloc(cells * sizeof(double));
	F2 = malloc(cells * sizeof(double));
	cost = malloc(((size_t)d->mu + 1) * sizeof(double));
	if (!d->gl || !d->F || !F2 || !cost) {
		rc = HP_ENOMEM;
		goto out;
	}
	for (int g = 0; g < P->ngroups; g++)
		if (P->group_cap[g][j] > 0)
			d->gl[d->ngl++] = g;
	d->ych = buf;
	d->sch = buf + cells * ((size_t)d->ngl + 1);
	for (size_t x = 0; x < cells; x++)
		d->F[x] = INFINITY;
	d->F[0] = 0;
	for (int q = 0; q < d->ngl; q++) {
		int g = d->gl[q], v = P->group_cap[g][j];
		int ymax =
		    P->group_nodes[g] < d->mu ? P->group_nodes[g] : d->mu;
		int *yc = d->ych + (size_t)q * cells, *sc = d->sch + q * cells;
		/* The group's y cheapest, by walking its segments once. */
		{
			int y = 0;
			cost[0] = 0;
			for (int sg = P->group_seg0[g];
			     sg < P->group_seg0[g] + P->group_nseg[g] &&
			     y < ymax;
			     sg++) {
				const struct hp__rec_class *k =
				    &P->S->cl.cls[P->rel[P->seg_rel[sg]]];
				for (int t = 0; t < k->nnodes && y < ymax;
				     t++) {
					cost[y + 1] = cost[y] + k->base_w;
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

/* Set group_take_best[.][j] from type j's table at u nodes, full capacity. */
static void dp_back(struct hp__rec_pack *P, const struct dpt *d, int j, int u)
{
	int sv = d->n;
	size_t cells = dp_cells(d->mu, d->n);
	for (int q = d->ngl - 1; q >= 0; q--) {
		size_t at = (size_t)u * (d->n + 1) + (size_t)sv;
		int y = d->ych[(size_t)q * cells + at];
		P->group_take_best[d->gl[q]][j] = y;
		sv = d->sch[(size_t)q * cells + at];
		u -= y;
	}
}

/* Whether the DP applies here, and its tables are of a sane size. */
bool hp__rec_dp_able(const struct hp__rec_pack *P)
{
	size_t cells = 0;
	for (int g = 0; g < P->ngroups; g++)
		if (P->ntypes == 2 && P->group_cap[g][0] > 0 &&
		    P->group_cap[g][1] > 0)
			return false;
	for (int j = 0; j < P->ntypes; j++)
		cells +=
		    dp_cells(P->nnodes, P->count[j]) * ((size_t)P->ngroups + 2);
	return cells <= (size_t)1 << 22;
}

/* 1 and group_take_best when a packing below P->best_base_w exists, 0
 * when none. */
int hp__rec_dp_solve(struct hp__rec_pack *P)
{
	struct dpt d[2] = {{0}};
	int rc = 0, ubest = -1;
	double best = P->best_base_w;

	size_t need = 0, off = 0;

	for (int j = 0; j < P->ntypes; j++) {
		int mu = P->nnodes - (P->ntypes - 1) < P->count[j]
			     ? P->nnodes - (P->ntypes - 1)
			     : P->count[j];
		need +=
		    2 * dp_cells(mu, P->count[j]) * ((size_t)P->ngroups + 1);
	}
	if (need > P->dp_cap) {
		free(P->dp_buf);
		P->dp_buf = malloc(need * sizeof(int));
		P->dp_cap = P->dp_buf ? need : 0;
		if (!P->dp_buf)
			return HP_ENOMEM;
	}
	for (int j = 0; j < P->ntypes && !rc; j++) {
		int mu = P->nnodes - (P->ntypes - 1) < P->count[j]
			     ? P->nnodes - (P->ntypes - 1)
			     : P->count[j];
		rc = dp_type(P, j, mu, P->best_base_w, P->dp_buf + off, &d[j]);
		off += 2 * dp_cells(mu, P->count[j]) * ((size_t)P->ngroups + 1);
	}
	if (rc)
		goto out;
	if (P->ntypes == 1) {
		if (P->nnodes <= d[0].mu) {
			double f =
			    d[0].F[(size_t)P->nnodes * (d[0].n + 1) + d[0].n];
			if (f < best) {
				best = f;
				ubest = P->nnodes;
			}
		}
	} else {
		for (int u = 1; u < P->nnodes; u++) {
			double f;
			if (u > d[0].mu || P->nnodes - u > d[1].mu)
				continue;
			f = d[0].F[(size_t)u * (d[0].n + 1) + d[0].n] +
			    d[1].F[(size_t)(P->nnodes - u) * (d[1].n + 1) +
				   d[1].n];
			if (f < best) {
				best = f;
				ubest = u;
			}
		}
	}
	if (ubest >= 0) {
		memset(P->group_take_best, 0,
		       ((size_t)P->nrel + 1) * sizeof(*P->group_take_best));
		dp_back(P, &d[0], 0, ubest);
		if (P->ntypes == 2)
			dp_back(P, &d[1], 1, P->nnodes - ubest);
		P->best_base_w = best;
		P->found = true;
		rc = 1;
	}
out:
	dpt_release(&d[0]);
	dpt_release(&d[1]);
	return rc;
}
