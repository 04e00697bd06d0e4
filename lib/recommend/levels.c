/*
 * levels.c - the packing search of one (types, counts): over node counts
 * m, and for each over levels of the intra-node and network terms (the
 * slowest link used), the packing of least base power at those levels
 * (pack.c).  A level is searched level by level when there are few, by
 * halving rectangles of levels when there are many; each cell and
 * rectangle is cut by its least time and by the least base it can have.
 * docs/recommender.md proves that nothing cut can be strictly better.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

/* The level search of one node count: rectangles of (intra, network)
 * levels, each bounded by its least time and the least base at its
 * highest levels (the least base in it). */
struct level_search {
	struct hp__rec_pack *P;
	const double *net_s; /* each relevant class's network term */
	const double *intra_levels_s, *net_levels_s;
	const struct hp__rec_comp *cp;
	const struct hp__rec_params *q;
	enum hp__rec_phase phase;
	double *best; /* the objective to beat: J (energy) or s (time) */
	struct hp_rec_config *cfg;
	int nnodes;
	bool found;
};

/* The job's time at levels (i1, i2). */
static double level_time_s(const struct level_search *R, int i1, int i2)
{
	return (double)R->q->steps *
		   (R->cp->compute_s +
		    (R->intra_levels_s[i1] + R->net_levels_s[i2]) *
			(1 - HP_REC_OVERLAP)) +
	       HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * R->nnodes;
}

/* Caps at levels (i1, i2); whether one changed. */
static bool set_levels(struct level_search *R, int i1, int i2, bool *all_full)
{
	return hp__rec_set_caps(R->P, R->net_s, R->intra_levels_s[i1],
				R->net_levels_s[i2], all_full);
}

/* Least base at levels (i1, i2) below below_w (INFINITY: none). */
static double level_base(struct level_search *R, int i1, int i2, double below_w)
{
	bool af;

	set_levels(R, i1, i2, &af);
	hp__rec_set_groups(R->P);
	/* On time, only whether a packing exists matters. */
	R->P->first_only = R->phase == HP__REC_TIME;
	return hp__rec_least_base(R->P, below_w);
}

/* A cell's packing of base base_w at time t_s: kept when it beats the
 * best.  0 or HP_ENOMEM. */
static int offer(struct level_search *R, double t_s, double base_w)
{
	double v = R->phase == HP__REC_ENERGY
		       ? t_s * (R->cp->devices_power_w + base_w)
		       : t_s;

	if (v >= *R->best)
		return 0;
	*R->best = v;
	R->found = true;
	hp_rec_config_release(R->cfg);
	return hp__rec_build_config(R->P, R->cp, R->cfg) ? HP_ENOMEM : 0;
}

/* Whether a cell at time t_s with base at least base_w cannot beat the
 * best (energy: or misses the deadline). */
static bool cut(const struct level_search *R, double t_s, double base_w)
{
	if (R->phase == HP__REC_ENERGY)
		return t_s > R->q->deadline_s ||
		       t_s * (R->cp->devices_power_w + base_w) >= *R->best;
	return t_s >= *R->best;
}

/* The base below which a cell at time t_s beats the best. */
static double base_below(const struct level_search *R, double t_s)
{
	return R->phase == HP__REC_ENERGY
		   ? *R->best / t_s - R->cp->devices_power_w
		   : INFINITY;
}

/* The least base of m nodes eligible at network level i2. */
static double net_level_base_min(const struct level_search *R, int i2,
				 double full_w)
{
	const struct hp__rec_pack *P = R->P;
	double b = INFINITY;

	for (int i = 0; i < P->nrel; i++)
		if (R->net_s[i] <= R->net_levels_s[i2] &&
		    P->S->cl.cls[P->rel[i]].base_w < b)
			b = P->S->cl.cls[P->rel[i]].base_w;
	return R->nnodes * b > full_w ? R->nnodes * b : full_w;
}

/* The levels over a small grid, level by level (fewer packings solved
 * than halving when there are few levels): network levels ascending,
 * then intra levels ascending, each loop ended by its bound; a level that
 * changes no cap is skipped (same packings, more time). */
static int grid(struct level_search *R, int nintra, int nnet, double full_w)
{
	for (int a2 = 0; a2 < nnet; a2++) {
		double base_w;
		bool first = true;
		if (cut(R, level_time_s(R, 0, a2), full_w))
			break;
		base_w = net_level_base_min(R, a2, full_w);
		for (int a1 = 0; a1 < nintra; a1++) {
			double t = level_time_s(R, a1, a2), b;
			bool all_full;
			int rc;
			if (cut(R, t, base_w))
				break;
			if (!set_levels(R, a1, a2, &all_full) && !first) {
				if (all_full)
					break;
				continue;
			}
			first = false;
			hp__rec_set_groups(R->P);
			b = hp__rec_least_base(R->P, base_below(R, t));
			if (b < INFINITY && (rc = offer(R, t, b)))
				return rc;
			if (all_full)
				break;
		}
	}
	return 0;
}

/*
 * A lower bound of the least base in the cells at or below levels
 * (i1, i2) (fewer nodes eligible, smaller caps), INFINITY when none packs
 * below below_w: the least base at (i1, i2).  While there is no best to
 * beat, only whether (i1, i2) packs at all matters, and the first packing
 * found says so (the DFS's capacity cuts make that quick where the least
 * base is not); the bound is then the enclosing rectangle's, outer_w.
 */
static double rect_bound(struct level_search *R, int i1, int i2, double below_w,
			 double outer_w)
{
	double b;
	bool af;

	if (R->phase != HP__REC_ENERGY || *R->best < INFINITY)
		return level_base(R, i1, i2, below_w);
	set_levels(R, i1, i2, &af);
	hp__rec_set_groups(R->P);
	R->P->first_only = true;
	b = hp__rec_least_base(R->P, INFINITY);
	R->P->first_only = false;
	return b == INFINITY ? INFINITY : outer_w;
}

/* The levels [a1, b1] x [a2, b2] whose least base is at least base_w, by
 * halving the longer side. */
static int rect(struct level_search *R, int a1, int b1, int a2, int b2,
		double base_w)
{
	double t = level_time_s(R, a1, a2), below;
	int rc;

	if (cut(R, t, base_w))
		return 0;
	below = base_below(R, t);
	if (a1 == b1 && a2 == b2) {
		/* One cell: its packing, at its own levels. */
		double b = level_base(R, a1, a2, below);
		return b == INFINITY ? 0 : offer(R, t, b);
	}
	if (b1 - a1 >= b2 - a2) {
		int mid = a1 + (b1 - a1) / 2;
		double bm = rect_bound(R, mid, b2, below, base_w);
		/* None below the bound at the lower half's top: no cell of
		 * it can beat the best. */
		if (bm < INFINITY && (rc = rect(R, a1, mid, a2, b2, bm)))
			return rc;
		return rect(R, mid + 1, b1, a2, b2, base_w);
	} else {
		int mid = a2 + (b2 - a2) / 2;
		double bm = rect_bound(R, b1, mid, below, base_w);
		if (bm < INFINITY && (rc = rect(R, a1, b1, a2, mid, bm)))
			return rc;
		return rect(R, a1, b1, mid + 1, b2, base_w);
	}
}

/* The session's packing state for the type set, made anew when the set
 * changed; NULL on ENOMEM. */
static struct hp__rec_pack *pack_for(struct hp__rec_session *S, const int *type,
				     int ntypes)
{
	struct hp__rec_pack *P = S->pk;

	if (!P || P->ntypes != ntypes || P->type[0] != type[0] ||
	    (ntypes == 2 && P->type[1] != type[1])) {
		hp__rec_pack_free(P);
		S->pk = P = hp__rec_pack_new(S, type, ntypes);
	}
	return P;
}

/* The node counts to search: at least one per type (and the fewest that
 * hold the counts), at most one per device; the job's count when given.
 * False when there is none. */
static bool node_counts(const struct hp__rec_session *S,
			const struct hp__rec_pack *P, int ndevices, int *lo,
			int *hi)
{
	int nn = S->q.nnodes, fewest = 0;

	*lo = P->ntypes;
	*hi = ndevices < P->rel_nodes ? ndevices : P->rel_nodes;
	if (nn > 0) {
		*lo = *lo > nn ? *lo : nn;
		*hi = *hi < nn ? *hi : nn;
	}
	for (int j = 0; j < P->ntypes; j++) {
		int x = hp__rec_fewest_nodes(&S->cl, P->type[j], P->count[j]);
		if (x < 0)
			return false;
		fewest += x;
	}
	if (fewest > *lo)
		*lo = fewest;
	return true;
}

enum { M_SEARCH, M_SKIP, M_STOP };

/*
 * Whether node count m can beat best: its least time (the fastest
 * network level) only grows with m (M_STOP); and some node of m holds
 * ceil(ndevices / m) devices or more, whose intra-node term is at least
 * intra_min_s of that (M_SKIP: this m only, fewer devices a node with more
 * nodes).
 */
static int node_count_cut(const struct hp__rec_pack *P,
			  const struct hp__rec_comp *cp,
			  enum hp__rec_phase phase, double best, int m,
			  int ndevices)
{
	const struct hp__rec_params *q = &P->S->q;
	double tmin, ti, pw = cp->devices_power_w + m * P->rel_base_min_w;
	int kn = (ndevices + m - 1) / m;

	tmin = (double)q->steps * (cp->compute_s + P->net_levels_s_at[m][0] *
						       (1 - HP_REC_OVERLAP)) +
	       HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * m;
	if (phase == HP__REC_ENERGY &&
	    (tmin > q->deadline_s || tmin * pw >= best))
		return M_STOP;
	if (phase == HP__REC_TIME && tmin >= best)
		return M_STOP;
	if (kn > P->cap_max || P->intra_min_s[kn] == INFINITY)
		return M_SKIP;
	ti =
	    tmin + (double)q->steps * P->intra_min_s[kn] * (1 - HP_REC_OVERLAP);
	if (phase == HP__REC_ENERGY ? ti > q->deadline_s || ti * pw >= best
				    : ti >= best)
		return M_SKIP;
	return M_SEARCH;
}

/*
 * The least base m nodes can have at any level: every node eligible,
 * every cap full; INFINITY: no packing of m nodes.  It only bounds the
 * levels' search, so when the DFS finds it hard, the m cheapest nodes'
 * base stands in; with nothing to beat yet the bound cuts nothing, and
 * whether m nodes pack at all is enough.
 */
static double full_caps_base(struct hp__rec_pack *P, enum hp__rec_phase phase,
			     double best, int m)
{
	bool af, cheap = phase == HP__REC_ENERGY && best == INFINITY;
	double full_w;

	hp__rec_set_caps(P, P->net_s_at[m], INFINITY, INFINITY, &af);
	hp__rec_set_groups(P);
	P->no_dp = true;
	P->first_only |= cheap;
	full_w = hp__rec_least_base(P, INFINITY);
	P->no_dp = false;
	P->first_only = phase == HP__REC_TIME;
	if (P->aborted || (cheap && full_w < INFINITY)) {
		int left = m;
		full_w = 0;
		for (int i = 0; i < P->nrel && left > 0; i++) {
			const struct hp__rec_class *k =
			    &P->S->cl.cls[P->rel[i]];
			int t = k->nnodes < left ? k->nnodes : left;
			full_w += t * k->base_w;
			left -= t;
		}
	}
	return full_w;
}

int hp__rec_pack_solve(struct hp__rec_session *S, const int *type,
		       const int *count, int ntypes,
		       const struct hp__rec_comp *cp, enum hp__rec_phase phase,
		       double bound, struct hp_rec_config *cfg)
{
	struct hp__rec_pack *P = pack_for(S, type, ntypes);
	double best = bound;
	int ndevices = 0, mlo, mhi, rc;
	bool found = false;

	if (!P)
		return HP_ENOMEM;
	P->first_only = phase == HP__REC_TIME;
	P->count[1] = 0;
	for (int j = 0; j < ntypes; j++) {
		P->count[j] = count[j];
		ndevices += count[j];
	}
	if (!node_counts(S, P, ndevices, &mlo, &mhi))
		return 0;
	for (int m = mlo; m <= mhi; m++) {
		struct level_search R;
		double full_w;
		int how, nnet;
		P->nnodes = m;
		if (hp__rec_pack_net_levels(P, m))
			return HP_ENOMEM;
		how = node_count_cut(P, cp, phase, best, m, ndevices);
		if (how == M_STOP)
			break;
		if (how == M_SKIP)
			continue;
		full_w = full_caps_base(P, phase, best, m);
		if (full_w == INFINITY)
			continue;
		R = (struct level_search){P,
					  P->net_s_at[m],
					  P->intra_levels_s,
					  P->net_levels_s_at[m],
					  cp,
					  &S->q,
					  phase,
					  &best,
					  cfg,
					  m,
					  false};
		nnet = P->nnet_levels_at[m];
		rc = (long)P->nintra_levels * nnet <=
			     S->tune.level_grid_max_cells
			 ? grid(&R, P->nintra_levels, nnet, full_w)
			 : rect(&R, 0, P->nintra_levels - 1, 0, nnet - 1,
				full_w);
		if (rc < 0 || P->nomem)
			return rc < 0 ? rc : HP_ENOMEM;
		found |= R.found;
	}
	return found ? 1 : 0;
}
