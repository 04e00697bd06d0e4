/*
 * pack.c - the packing of one (types, counts) onto the pool's classes:
 * at given levels of the intra-node and network terms (the slowest link a
 * configuration may use), which nodes may take how many devices (caps),
 * the eligible classes grouped by caps, the least base power of the node
 * count by depth-first search with bounds (or by dynamic programming when
 * the DFS finds it hard, pack_dp.c), and the configuration it makes with
 * its actual cost.  A type set's shared part (relevant classes, intra-node
 * terms, the network terms of each node count) is made once and kept in
 * the session for the next counts of the same set.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

static double intra_of(const struct hp__rec_session *S,
		       const struct hp__rec_class *k, int kk)
{
	return S->m->comm_scale *
	       hp__rec_intra_s(k->intra_gbps, kk, S->m->grad_bytes);
}

static double inter_of(const struct hp__rec_session *S,
		       const struct hp__rec_class *k, int m)
{
	return S->m->net_scale * hp__rec_inter_s(k->net_payload_gbps,
						 k->net_msg_s, m,
						 S->m->grad_bytes);
}

/* Base of the y cheapest nodes of group g. */
static double group_cost_w(const struct hp__rec_pack *P, int g, int y)
{
	double v = 0;
	for (int s = P->group_seg0[g];
	     s < P->group_seg0[g] + P->group_nseg[g] && y > 0; s++) {
		const struct hp__rec_class *k =
		    &P->S->cl.cls[P->rel[P->seg_rel[s]]];
		int t = k->nnodes < y ? k->nnodes : y;
		v += t * k->base_w;
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
static void dfs(struct hp__rec_pack *P, int g, int used, double cost,
		const int *ytot, const int64_t *capsum)
{
	int left = P->nnodes - used, hi;

	if (P->aborted)
		return;
	if (P->max_visits > 0 && ++P->visits > P->max_visits) {
		P->aborted = true;
		return;
	}
	if (left == 0) {
		for (int j = 0; j < P->ntypes; j++)
			if (capsum[j] < P->count[j] || ytot[j] < 1)
				return;
		if (cost < P->best_base_w) {
			P->best_base_w = cost;
			P->found = true;
			memcpy(P->group_take_best, P->group_take,
			       (size_t)P->ngroups * sizeof(*P->group_take));
		}
		return;
	}
	if (g >= P->ngroups || P->nodes_from[g] < left)
		return;
	if (cost + left * P->base_min_from_w[g] >= P->best_base_w)
		return;
	if (P->first_only && P->found)
		return;
	for (int j = 0; j < P->ntypes; j++) {
		int need_nodes = ytot[j] < 1 ? 1 : 0, r = left;
		int64_t most = 0;
		if (capsum[j] + (int64_t)left * P->cap_max_from[g][j] <
			P->count[j] ||
		    (need_nodes && P->cap_max_from[g][j] < 1))
			return;
		/* The largest caps the remaining nodes have. */
		for (int v = P->cap_max; v >= 1 && r > 0; v--) {
			int cn =
			    P->cap_count_from
				[((size_t)g * (P->cap_max + 1) + v) * 2 + j];
			int t = cn < r ? cn : r;
			most += (int64_t)t * v;
			r -= t;
		}
		if (capsum[j] + most < P->count[j])
			return;
	}
	hi = P->group_nodes[g] < left ? P->group_nodes[g] : left;
	for (int yt = hi; yt >= 0; yt--) {
		double cst = cost + group_cost_w(P, g, yt);
		int y0 = P->group_cap[g][0] > 0 ? yt : 0;
		if (cst >= P->best_base_w)
			continue;
		if (y0 > P->count[0] - ytot[0])
			y0 = P->count[0] - ytot[0];
		for (; y0 >= 0; y0--) {
			int y1 = yt - y0;
			int yn[2] = {ytot[0] + y0, 0};
			int64_t cs[2] = {
			    capsum[0] + (int64_t)y0 * P->group_cap[g][0], 0};
			if (P->ntypes == 1) {
				if (y1 != 0)
					break;
			} else {
				if (y1 > 0 && (P->group_cap[g][1] < 1 ||
					       y1 > P->count[1] - ytot[1]))
					continue;
				yn[1] = ytot[1] + y1;
				cs[1] = capsum[1] +
					(int64_t)y1 * P->group_cap[g][1];
			}
			P->group_take[g][0] = y0;
			P->group_take[g][1] = y1;
			dfs(P, g + 1, used + yt, cst, yn, cs);
			if (P->aborted)
				return;
		}
	}
	P->group_take[g][0] = P->group_take[g][1] = 0;
}

/* The DFS's choice per group back to counts per class and type. */
static void to_classes(struct hp__rec_pack *P)
{
	memset(P->take_best, 0, ((size_t)P->nrel + 1) * sizeof(*P->take_best));
	for (int g = 0; g < P->ngroups; g++) {
		int want[2] = {P->group_take_best[g][0],
			       P->group_take_best[g][1]};
		for (int s = P->group_seg0[g];
		     s < P->group_seg0[g] + P->group_nseg[g]; s++) {
			int i = P->seg_rel[s],
			    room = P->S->cl.cls[P->rel[i]].nnodes;
			for (int j = 0; j < 2; j++) {
				int t = want[j] < room ? want[j] : room;
				P->take_best[i][j] += t;
				want[j] -= t;
				room -= t;
			}
		}
	}
}

/* Least base of m nodes at caps already set (INFINITY: none): the DFS,
 * or the DP when the DFS runs past its budget. */
double hp__rec_least_base(struct hp__rec_pack *P, double below_w)
{
	int zero[2] = {0, 0};
	int64_t zc[2] = {0, 0};
	bool able = hp__rec_dp_able(P);

	P->found = false;
	P->best_base_w = below_w;
	P->visits = 0;
	P->aborted = false;
	P->max_visits =
	    able ? (P->S->tune.dfs_max_visits > 0 ? P->S->tune.dfs_max_visits
						  : 1)
		 : 0;
	memset(P->group_take, 0,
	       ((size_t)P->nrel + 1) * sizeof(*P->group_take));
	P->S->st->leaves++;
	dfs(P, 0, 0, 0, zero, zc);
	if (P->aborted && P->no_dp)
		return INFINITY;
	if (P->aborted) {
		/* Start again: the DFS's best so far is not proven. */
		P->S->st->dp++;
		P->found = false;
		P->best_base_w = below_w;
		if (hp__rec_dp_solve(P) < 0)
			P->nomem = true;
	}
	if (!P->found)
		return INFINITY;
	to_classes(P);
	return P->best_base_w;
}

/*
 * Caps of the relevant classes at levels (intra_max_s, net_max_s): a
 * class whose network term (net_s, this node count's) is above net_max_s
 * takes nothing, the others as many devices as keep their intra-node term
 * within intra_max_s.  Whether any cap changed, and whether every eligible
 * class is at its free count.
 */
bool hp__rec_set_caps(struct hp__rec_pack *P, const double *net_s,
		      double intra_max_s, double net_max_s, bool *all_full)
{
	const struct hp__rec_session *S = P->S;
	bool changed = false;

	*all_full = true;
	for (int i = 0; i < P->nrel; i++) {
		const struct hp__rec_class *kc = &S->cl.cls[P->rel[i]];
		const double *r = P->intra_s + P->intra_s_at[i];
		bool el = net_s[i] <= net_max_s;
		int kmax = 1;
		while (kmax < kc->free_max && r[kmax + 1] <= intra_max_s)
			kmax++;
		if (el && kmax < kc->free_max)
			*all_full = false;
		for (int j = 0; j < P->ntypes; j++) {
			int f = kc->free[P->type[j]];
			int v = el ? (f < kmax ? f : kmax) : 0;
			changed |= v != P->cap[i][j];
			P->cap[i][j] = v;
		}
	}
	return changed;
}

/* The caps table's slot for key: where it is, or the empty one where
 * it goes (the table is never full: over twice the classes). */
static int caps_slot(const struct hp__rec_pack *P, int64_t key)
{
	unsigned mask = (unsigned)P->caps_n - 1;
	unsigned h = (unsigned)((uint64_t)key * 0x9E3779B97F4A7C15u >> 32);

	for (unsigned k = h & mask;; k = (k + 1) & mask)
		if (P->caps_key[k] == key || P->caps_key[k] < 0)
			return (int)k;
}

/* Group the eligible classes by caps (base order kept within a group),
 * order the groups by their cheapest base, and the DFS's suffix bounds. */
void hp__rec_set_groups(struct hp__rec_pack *P)
{
	int ns = 0;

	P->ngroups = 0;
	for (int x = 0; x < P->caps_n; x++)
		P->caps_key[x] = -1;
	for (int i = 0; i < P->nrel; i++) {
		int c0 = P->cap[i][0], c1 = P->ntypes > 1 ? P->cap[i][1] : 0;
		int64_t key = (int64_t)c0 * (P->cap_max + 1) + c1;
		int k;
		if (c0 == 0 && c1 == 0)
			continue;
		k = caps_slot(P, key);
		if (P->caps_key[k] < 0) {
			P->caps_key[k] = key;
			P->caps_group[k] = -1;
			P->caps_cnt[k] = 0;
		}
		P->caps_cnt[k]++;
	}
	/* Groups in order of their first (cheapest) class. */
	for (int i = 0; i < P->nrel; i++) {
		int c0 = P->cap[i][0], c1 = P->ntypes > 1 ? P->cap[i][1] : 0;
		int64_t key = (int64_t)c0 * (P->cap_max + 1) + c1;
		int g, k;
		if (c0 == 0 && c1 == 0)
			continue;
		k = caps_slot(P, key);
		if (P->caps_group[k] < 0) {
			g = P->ngroups++;
			P->caps_group[k] = g;
			P->group_cap[g][0] = c0;
			P->group_cap[g][1] = c1;
			P->group_seg0[g] = ns;
			P->group_nseg[g] = 0;
			P->group_nodes[g] = 0;
			P->group_base_min_w[g] = P->S->cl.cls[P->rel[i]].base_w;
			ns += P->caps_cnt[k];
		}
		g = P->caps_group[k];
		P->seg_rel[P->group_seg0[g] + P->group_nseg[g]++] = i;
		P->group_nodes[g] += P->S->cl.cls[P->rel[i]].nnodes;
	}
	for (int j = 0; j < 2; j++)
		P->cap_max_from[P->ngroups][j] = 0;
	P->nodes_from[P->ngroups] = 0;
	P->base_min_from_w[P->ngroups] = INFINITY;
	for (int g = P->ngroups - 1; g >= 0; g--) {
		for (int j = 0; j < 2; j++) {
			int v = j < P->ntypes ? P->group_cap[g][j] : 0;
			P->cap_max_from[g][j] = v > P->cap_max_from[g + 1][j]
						    ? v
						    : P->cap_max_from[g + 1][j];
		}
		P->nodes_from[g] = P->nodes_from[g + 1] + P->group_nodes[g];
		P->base_min_from_w[g] =
		    P->group_base_min_w[g] < P->base_min_from_w[g + 1]
			? P->group_base_min_w[g]
			: P->base_min_from_w[g + 1];
	}
	{
		size_t w = ((size_t)P->cap_max + 1) * 2;
		memset(&P->cap_count_from[(size_t)P->ngroups * w], 0,
		       w * sizeof(int));
		for (int g = P->ngroups - 1; g >= 0; g--) {
			memcpy(&P->cap_count_from[(size_t)g * w],
			       &P->cap_count_from[((size_t)g + 1) * w],
			       w * sizeof(int));
			for (int j = 0; j < P->ntypes; j++)
				P->cap_count_from[(size_t)g * w +
						  (size_t)P->group_cap[g][j] *
						      2 +
						  (size_t)j] +=
				    P->group_nodes[g];
		}
	}
}

/* The actual cost of a configuration whose groups are set. */
static void cost_actual(const struct hp__rec_session *S,
			const struct hp__rec_comp *cp,
			struct hp_rec_config *cfg)
{
	const struct hp_pool *p = S->pool;
	const struct hp__rec_params *q = &S->q;
	double intra = 0, inter = 0, base = 0, g = S->m->grad_bytes;
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
			double r = S->m->comm_scale *
				   hp__rec_intra_s(p->nodes[node].intra_bw_gbps,
						   kk, g);
			if (r > intra)
				intra = r;
		}
	}
	for (int i = 0; i < cfg->ngroups; i++) {
		int node = cfg->groups[i].node;
		double x = S->m->net_scale *
			   hp__rec_inter_s(S->cl.node_payload_gbps[node],
					   S->cl.node_msg_s[node], m, g);
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
int hp__rec_build_config(const struct hp__rec_pack *P,
			 const struct hp__rec_comp *cp,
			 struct hp_rec_config *cfg)
{
	struct hp__rec_session *S = P->S;
	int total = 0, ng = 0, *cnt = NULL, *nodes = NULL, *capn = NULL;
	int *tyn = NULL;

	memset(cfg, 0, sizeof(*cfg));
	for (int i = 0; i < P->nrel; i++)
		for (int j = 0; j < P->ntypes; j++)
			total += P->take_best[i][j];
	cnt = calloc((size_t)total + 1, sizeof(int));
	nodes = calloc((size_t)total + 1, sizeof(int));
	capn = calloc((size_t)total + 1, sizeof(int));
	tyn = calloc((size_t)total + 1, sizeof(int));
	cfg->groups = calloc((size_t)total * 2 + 2, sizeof(*cfg->groups));
	if (!cnt || !nodes || !capn || !tyn || !cfg->groups)
		goto nomem;
	for (int j = 0; j < P->ntypes; j++) {
		int first = ng, left = P->count[j];
		for (int i = 0; i < P->nrel; i++) {
			const struct hp__rec_class *k = &S->cl.cls[P->rel[i]];
			int used = 0;
			/* Nodes of the class already taken by the other
			 * type come first in its list. */
			for (int jj = 0; jj < j; jj++)
				used += P->take_best[i][jj];
			for (int y = 0; y < P->take_best[i][j]; y++) {
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
	/* Local batches: the first n_at_hi devices of each type at local_hi. */
	{
		int hileft[HP_REC_MAX_MIX];
		for (int j = 0; j < P->ntypes; j++)
			hileft[j] = cp->n_at_hi[j];
		for (int x = 0; x < ng; x++) {
			int j = tyn[x],
			    h = cnt[x] < hileft[j] ? cnt[x] : hileft[j];
			const char *tn = S->m->tt[P->type[j]].name;
			enum hp_net_transport tr = hp_pool_node_transport(
			    &S->pool->nodes[nodes[x]], S->m->cat);
			hileft[j] -= h;
			if (h > 0) {
				struct hp_rec_group *g =
				    &cfg->groups[cfg->ngroups++];
				g->node = nodes[x];
				g->transport = tr;
				snprintf(g->type, sizeof(g->type), "%s", tn);
				g->count = h;
				g->local_batch = cp->local_hi[j];
				g->memory_bytes = hp__rec_tt_memory(
				    &S->m->tt[P->type[j]], g->local_batch);
			}
			if (cnt[x] - h > 0) {
				struct hp_rec_group *g =
				    &cfg->groups[cfg->ngroups++];
				g->node = nodes[x];
				g->transport = tr;
				snprintf(g->type, sizeof(g->type), "%s", tn);
				g->count = cnt[x] - h;
				g->local_batch = cp->local_hi[j] - 1;
				g->memory_bytes = hp__rec_tt_memory(
				    &S->m->tt[P->type[j]], g->local_batch);
			}
		}
	}
	for (int i = 0; i < cfg->ngroups; i++)
		cfg->groups[i].grad_weight =
		    (double)cfg->groups[i].local_batch /
		    (double)S->q.global_batch;
	qsort(cfg->groups, (size_t)cfg->ngroups, sizeof(*cfg->groups),
	      cmp_group);
	cfg->ntypes = P->ntypes;
	cfg->ndevices = 0;
	for (int j = 0; j < P->ntypes; j++) {
		struct hp_rec_type *t = &cfg->types[j];
		snprintf(t->type, sizeof(t->type), "%s",
			 S->m->tt[P->type[j]].name);
		t->count = P->count[j];
		t->batch = cp->samples[j];
		t->local_max = cp->local_hi[j];
		t->step_time_s = cp->step_s[j];
		t->power_w = cp->power_w[j];
		t->memory_bytes =
		    hp__rec_tt_memory(&S->m->tt[P->type[j]], t->local_max);
		cfg->ndevices += P->count[j];
	}
	free(cnt);
	free(nodes);
	free(capn);
	free(tyn);
	cost_actual(S, cp, cfg);
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

void hp__rec_pack_free(struct hp__rec_pack *P)
{
	if (!P)
		return;
	if (P->net_s_at)
		for (int m = 0; m < P->max_nodes; m++) {
			free(P->net_s_at[m]);
			free(P->net_levels_s_at[m]);
		}
	free(P->net_s_at);
	free(P->net_levels_s_at);
	free(P->nnet_levels_at);
	free(P->intra_min_s);
	free(P->intra_levels_s);
	free(P->intra_s);
	free(P->intra_s_at);
	free(P->rel);
	free(P->cap);
	free(P->cap_max_from);
	free(P->nodes_from);
	free(P->take_best);
	free(P->caps_key);
	free(P->caps_group);
	free(P->caps_cnt);
	free(P->group_cap);
	free(P->group_nodes);
	free(P->group_seg0);
	free(P->group_nseg);
	free(P->group_take);
	free(P->group_take_best);
	free(P->seg_rel);
	free(P->group_base_min_w);
	free(P->base_min_from_w);
	free(P->cap_count_from);
	free(P->dp_buf);
	free(P);
}

/*
 * What the packings of one type set share, whatever the counts: the
 * relevant classes, the working arrays, the intra-node levels and terms,
 * and (filled as node counts come up) each node count's network terms
 * and levels.  NULL on ENOMEM.
 */
struct hp__rec_pack *hp__rec_pack_new(struct hp__rec_session *S,
				      const int *type, int ntypes)
{
	struct hp__rec_pack *P = calloc(1, sizeof(*P));
	int cnt = 0;

	if (!P)
		return NULL;
	P->S = S;
	P->ntypes = ntypes;
	for (int j = 0; j < ntypes; j++)
		P->type[j] = type[j];
	P->rel = malloc((size_t)(S->cl.ncls ? S->cl.ncls : 1) * sizeof(int));
	if (!P->rel)
		goto nomem;
	P->rel_base_min_w = INFINITY;
	for (int i = 0; i < S->cl.ncls; i++) {
		int any = 0;
		for (int j = 0; j < ntypes; j++)
			any |= S->cl.cls[i].free[type[j]] > 0;
		if (any) {
			P->rel[P->nrel++] = i;
			P->rel_nodes += S->cl.cls[i].nnodes;
			if (S->cl.cls[i].base_w < P->rel_base_min_w)
				P->rel_base_min_w = S->cl.cls[i].base_w;
		}
	}
	P->cap = calloc((size_t)P->nrel + 1, sizeof(*P->cap));
	P->cap_max_from = calloc((size_t)P->nrel + 1, sizeof(*P->cap_max_from));
	P->nodes_from = calloc((size_t)P->nrel + 1, sizeof(*P->nodes_from));
	P->take_best = calloc((size_t)P->nrel + 1, sizeof(*P->take_best));
	P->cap_max = 1;
	for (int i = 0; i < P->nrel; i++)
		for (int j = 0; j < ntypes; j++)
			if (S->cl.cls[P->rel[i]].free[type[j]] > P->cap_max)
				P->cap_max = S->cl.cls[P->rel[i]].free[type[j]];
	for (P->caps_n = 4; P->caps_n < 2 * (P->nrel + 1); P->caps_n *= 2)
		;
	P->caps_key = malloc((size_t)P->caps_n * sizeof(*P->caps_key));
	P->caps_group = malloc((size_t)P->caps_n * sizeof(int));
	P->caps_cnt = malloc((size_t)P->caps_n * sizeof(int));
	P->group_cap = calloc((size_t)P->nrel + 1, sizeof(*P->group_cap));
	P->group_nodes = calloc((size_t)P->nrel + 1, sizeof(int));
	P->group_seg0 = calloc((size_t)P->nrel + 1, sizeof(int));
	P->group_nseg = calloc((size_t)P->nrel + 1, sizeof(int));
	P->group_take = calloc((size_t)P->nrel + 1, sizeof(*P->group_take));
	P->group_take_best =
	    calloc((size_t)P->nrel + 1, sizeof(*P->group_take_best));
	P->seg_rel = calloc((size_t)P->nrel + 1, sizeof(int));
	P->group_base_min_w = calloc((size_t)P->nrel + 1, sizeof(double));
	P->base_min_from_w = calloc((size_t)P->nrel + 1, sizeof(double));
	P->cap_count_from = calloc(
	    ((size_t)P->nrel + 1) * ((size_t)P->cap_max + 1) * 2, sizeof(int));
	P->max_nodes = P->rel_nodes + 1;
	P->net_s_at = calloc((size_t)P->max_nodes, sizeof(*P->net_s_at));
	P->net_levels_s_at =
	    calloc((size_t)P->max_nodes, sizeof(*P->net_levels_s_at));
	P->nnet_levels_at = calloc((size_t)P->max_nodes, sizeof(int));
	if (!P->cap || !P->cap_max_from || !P->nodes_from || !P->take_best ||
	    !P->caps_key || !P->caps_group || !P->caps_cnt || !P->group_cap ||
	    !P->group_nodes || !P->group_seg0 || !P->group_nseg ||
	    !P->group_take || !P->group_take_best || !P->seg_rel ||
	    !P->group_base_min_w || !P->base_min_from_w || !P->cap_count_from ||
	    !P->net_s_at || !P->net_levels_s_at || !P->nnet_levels_at)
		goto nomem;
	/* Intra levels: every intra-node term a relevant class can reach;
	 * each relevant class's intra term by device count. */
	for (int i = 0; i < P->nrel; i++) {
		const struct hp__rec_class *kc = &S->cl.cls[P->rel[i]];
		int mf = 0;
		for (int j = 0; j < ntypes; j++)
			if (kc->free[type[j]] > mf)
				mf = kc->free[type[j]];
		cnt += mf;
	}
	P->intra_levels_s = malloc(((size_t)cnt + 1) * sizeof(double));
	P->intra_s_at = malloc(((size_t)P->nrel + 1) * sizeof(int));
	{
		size_t tot = 1;
		for (int i = 0; i < P->nrel; i++)
			tot += (size_t)S->cl.cls[P->rel[i]].free_max + 1;
		P->intra_s = malloc(tot * sizeof(double));
	}
	P->intra_min_s = malloc(((size_t)P->cap_max + 1) * sizeof(double));
	if (!P->intra_levels_s || !P->intra_s_at || !P->intra_s ||
	    !P->intra_min_s)
		goto nomem;
	for (int kk = 0; kk <= P->cap_max; kk++)
		P->intra_min_s[kk] = INFINITY;
	{
		int o = 0;
		for (int i = 0; i < P->nrel; i++) {
			const struct hp__rec_class *kc = &S->cl.cls[P->rel[i]];
			int mf = 0;
			for (int j = 0; j < ntypes; j++)
				if (kc->free[type[j]] > mf)
					mf = kc->free[type[j]];
			P->intra_s_at[i] = o;
			P->intra_s[o] = 0;
			for (int kk = 1; kk <= kc->free_max; kk++)
				P->intra_s[o + kk] = intra_of(S, kc, kk);
			/* the least intra-node term of kk devices on any
			 * relevant node that has them free */
			for (int kk = 1; kk <= mf; kk++) {
				P->intra_levels_s[P->nintra_levels++] =
				    P->intra_s[o + kk];
				if (P->intra_s[o + kk] < P->intra_min_s[kk])
					P->intra_min_s[kk] = P->intra_s[o + kk];
			}
			o += kc->free_max + 1;
		}
	}
	P->nintra_levels = uniq(P->intra_levels_s, P->nintra_levels);
	return P;
nomem:
	hp__rec_pack_free(P);
	return NULL;
}

/* The network term of each relevant class at m nodes, and its levels
 * (distinct, ascending), made once per node count; 0 or HP_ENOMEM. */
int hp__rec_pack_net_levels(struct hp__rec_pack *P, int m)
{
	const struct hp__rec_session *S = P->S;
	double *net_s, *levels;
	int n = 0;

	if (P->net_s_at[m])
		return 0;
	net_s = malloc(((size_t)P->nrel + 1) * sizeof(double));
	levels = malloc(((size_t)P->nrel + 1) * sizeof(double));
	if (!net_s || !levels) {
		free(net_s);
		free(levels);
		return HP_ENOMEM;
	}
	for (int i = 0; i < P->nrel; i++) {
		net_s[i] = inter_of(S, &S->cl.cls[P->rel[i]], m);
		levels[n++] = net_s[i];
	}
	P->nnet_levels_at[m] = uniq(levels, n);
	P->net_s_at[m] = net_s;
	P->net_levels_s_at[m] = levels;
	return 0;
}
