/*
 * cands.c - the candidates of a type set: the device counts (one type, or
 * a pair) whose batch split fits, each with lower bounds of its time and
 * energy that hold for any packing onto the pool (fewest nodes, cheapest
 * base, the best links any node of the types has); pairs are cut by rows
 * and columns with bounds that hold past the cut.  Candidates are then
 * packed in order of their bounds until a bound reaches the best so far.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

/* Remember a costed configuration (for the front). */
static int keep(struct hp__rec_session *S, const struct hp_rec_config *cfg)
{
	struct hp_rec_config *d;
	if (S->ncosted == S->acosted) {
		int na = S->acosted ? S->acosted * 2 : 64;
		void *p = realloc(S->costed, (size_t)na * sizeof(*S->costed));
		if (!p)
			return HP_ENOMEM;
		S->costed = p;
		S->acosted = na;
	}
	d = &S->costed[S->ncosted];
	if (hp__rec_config_copy(d, cfg))
		return HP_ENOMEM;
	S->ncosted++;
	return 0;
}

static int cmp_cand_e(const void *a, const void *b)
{
	const struct hp__rec_cand *x = a, *y = b;
	return (x->energy_lb_j > y->energy_lb_j) -
	       (x->energy_lb_j < y->energy_lb_j);
}

static int cmp_cand_t(const void *a, const void *b)
{
	const struct hp__rec_cand *x = a, *y = b;
	return (x->time_lb_s > y->time_lb_s) - (x->time_lb_s < y->time_lb_s);
}

/* Lower bounds of time and energy of (types, counts) from its compute
 * part: fewest nodes, cheapest base, slowest link not below the fastest. */
static bool bounds(const struct hp__rec_session *S, const int *ty, const int *n,
		   int k, const struct hp__rec_comp *cp, double *time_lb_s,
		   double *energy_lb_j)
{
	const struct hp__rec_params *q = &S->q;
	int mlb = 0;
	double base = 0, x = INFINITY;

	for (int j = 0; j < k; j++) {
		int mm = hp__rec_fewest_nodes(&S->cl, ty[j], n[j]);
		if (mm < 0)
			return false;
		mlb += mm;
		base += mm * S->cl.base_min_w[ty[j]];
	}
	if (q->nnodes > 0) {
		if (q->nnodes < mlb || q->nnodes > n[0] + (k > 1 ? n[1] : 0))
			return false;
		if (q->nnodes > mlb) {
			double bm = INFINITY;
			for (int j = 0; j < k; j++)
				if (S->cl.base_min_w[ty[j]] < bm)
					bm = S->cl.base_min_w[ty[j]];
			base += (q->nnodes - mlb) * bm;
		}
		mlb = q->nnodes;
	}
	if (mlb >= 2) {
		/* Every used node's link is no better than the best of the
		 * types' nodes: payload at most, message cost at least. */
		double bw = 0, msg = INFINITY;
		for (int j = 0; j < k; j++) {
			if (S->cl.net_payload_max_gbps[ty[j]] > bw)
				bw = S->cl.net_payload_max_gbps[ty[j]];
			if (S->cl.net_msg_min_s[ty[j]] < msg)
				msg = S->cl.net_msg_min_s[ty[j]];
		}
		x = S->m->net_scale *
		    hp__rec_inter_s(bw, msg, mlb, S->m->grad_bytes);
	} else {
		x = 0;
	}
	*time_lb_s =
	    (double)q->steps * (cp->compute_s + x * (1 - HP_REC_OVERLAP)) +
	    HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * mlb;
	*energy_lb_j = *time_lb_s * (cp->devices_power_w + base);
	return true;
}

int hp__rec_cands_run(struct hp__rec_session *S, const int *ty, int k,
		      struct hp__rec_cand *cv, int nc, enum hp__rec_phase phase,
		      double *gbest, struct hp__rec_set_best *sb,
		      bool prune_by_global)
{
	if (nc > 0)
		qsort(cv, (size_t)nc, sizeof(*cv),
		      phase == HP__REC_ENERGY ? cmp_cand_e : cmp_cand_t);
	for (int i = 0; i < nc; i++) {
		struct hp_rec_config cfg = {0};
		double own = sb->have
				 ? (phase == HP__REC_ENERGY ? sb->cfg.energy_j
							    : sb->cfg.time_s)
				 : INFINITY;
		double bound = prune_by_global && *gbest < own ? *gbest : own;
		double lb = phase == HP__REC_ENERGY ? cv[i].energy_lb_j
						    : cv[i].time_lb_s;
		int rc;
		if (phase == HP__REC_ENERGY &&
		    cv[i].time_lb_s > S->q.deadline_s)
			continue;
		if (lb >= bound)
			break;
		S->st->evaluated++;
		rc = hp__rec_pack_solve(S, ty, cv[i].count, k, &cv[i].cp, phase,
					bound, &cfg);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			if (keep(S, &cfg)) {
				hp_rec_config_release(&cfg);
				return HP_ENOMEM;
			}
			hp_rec_config_release(&sb->cfg);
			sb->cfg = cfg;
			sb->have = true;
			{
				double v = phase == HP__REC_ENERGY
					       ? cfg.energy_j
					       : cfg.time_s;
				if (v < *gbest)
					*gbest = v;
			}
		}
	}
	return 0;
}

int hp__rec_cands_single(struct hp__rec_session *S, int t,
			 struct hp__rec_cand **out, int *nout, char *why,
			 size_t whylen)
{
	const struct hp__rec_params *q = &S->q;
	const struct hp__rec_tt *tt = &S->m->tt[t];
	int64_t nmax = hp__rec_free_total(&S->cl, t);
	int lo = 1, nc = 0;
	struct hp__rec_cand *cv;

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
				    (long long)hp__rec_free_total(&S->cl, t));
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
		struct hp__rec_cand *x = &cv[nc];
		int ty[1] = {t};
		x->count[0] = n;
		if (hp__rec_compute(S->m, ty, x->count, 1, q->global_batch,
				    &x->cp))
			continue;
		S->st->candidates++;
		if (!bounds(S, ty, x->count, 1, &x->cp, &x->time_lb_s,
			    &x->energy_lb_j))
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

/* What bounds every count of a pair (t0, t1). */
struct pair {
	const struct hp__rec_session *S;
	int t0, t1;
	enum hp__rec_phase phase;
	double bound;	/* the objective to beat */
	int64_t f0, f1; /* free devices of each, at most the batch */
	double steps;
	/* Every device of both types takes at least one sample, and a
	 * table's time does not fall with the batch: no split's compute is
	 * below the slower type's time at batch 1. */
	double compute_floor_s;
	/* Each device's energy over a step is at least its samples times
	 * its type's least energy per sample: no split does better. */
	double j_per_sample_min;
	/* The lines under a step's energy: the cheaper slope, and each
	 * type's energy of a device with one sample. */
	double j_per_sample_line, j_one0, j_one1;
	double power_min0_w, power_min1_w; /* per device */
	double base_min0_w, base_min1_w, base_min_w;
	double net_payload_gbps, net_msg_s; /* the best any used node has */
	const int *fewest0, *fewest1;	    /* nodes for n devices of each */
};

/* The pair's figures; false when one type has no free device. */
static bool pair_init(struct pair *pr, const struct hp__rec_session *S, int t0,
		      int t1, enum hp__rec_phase phase, double bound)
{
	const struct hp__rec_classes *cl = &S->cl;
	int64_t B = S->q.global_batch;

	memset(pr, 0, sizeof(*pr));
	pr->S = S;
	pr->t0 = t0;
	pr->t1 = t1;
	pr->phase = phase;
	pr->bound = bound;
	pr->f0 = hp__rec_free_total(cl, t0);
	pr->f1 = hp__rec_free_total(cl, t1);
	if (pr->f0 > B)
		pr->f0 = B;
	if (pr->f1 > B)
		pr->f1 = B;
	if (pr->f0 < 1 || pr->f1 < 1)
		return false;
	pr->steps = (double)S->q.steps;
	pr->compute_floor_s =
	    fmax(S->m->tt[t0].step_s[1], S->m->tt[t1].step_s[1]);
	pr->j_per_sample_min =
	    cl->dev_j_per_sample_min[t0] < cl->dev_j_per_sample_min[t1]
		? cl->dev_j_per_sample_min[t0]
		: cl->dev_j_per_sample_min[t1];
	pr->j_per_sample_line =
	    cl->dev_step_j_per_sample[t0] < cl->dev_step_j_per_sample[t1]
		? cl->dev_step_j_per_sample[t0]
		: cl->dev_step_j_per_sample[t1];
	if (pr->j_per_sample_line < 0)
		pr->j_per_sample_line = 0;
	pr->j_one0 = cl->dev_step_j_at0[t0] + cl->dev_step_j_per_sample[t0];
	pr->j_one1 = cl->dev_step_j_at0[t1] + cl->dev_step_j_per_sample[t1];
	pr->power_min0_w = S->m->tt[t0].power_min_w;
	pr->power_min1_w = S->m->tt[t1].power_min_w;
	pr->base_min0_w = cl->base_min_w[t0];
	pr->base_min1_w = cl->base_min_w[t1];
	pr->base_min_w = pr->base_min0_w < pr->base_min1_w ? pr->base_min0_w
							   : pr->base_min1_w;
	pr->net_payload_gbps =
	    cl->net_payload_max_gbps[t0] > cl->net_payload_max_gbps[t1]
		? cl->net_payload_max_gbps[t0]
		: cl->net_payload_max_gbps[t1];
	pr->net_msg_s = cl->net_msg_min_s[t0] < cl->net_msg_min_s[t1]
			    ? cl->net_msg_min_s[t0]
			    : cl->net_msg_min_s[t1];
	/* f0, f1 <= B: within the tables. */
	pr->fewest0 = cl->fewest_nodes[t0];
	pr->fewest1 = cl->fewest_nodes[t1];
	return true;
}

/* Start-up and network time of a job on m nodes, at the best links. */
static double nodes_time_s(const struct pair *pr, int m)
{
	return HP_REC_STARTUP_S + HP_REC_STARTUP_NODE_S * m +
	       pr->steps * pr->S->m->net_scale *
		   hp__rec_inter_s(pr->net_payload_gbps, pr->net_msg_s, m,
				   pr->S->m->grad_bytes);
}

/* Whether the rows n0.. can hold no candidate: every cell of them has at
 * least these nodes, this power and no less than the floor of compute. */
static bool rows_cut(const struct pair *pr, int n0)
{
	const struct hp__rec_params *q = &pr->S->q;
	int ml = pr->fewest0[n0] + 1;
	double tfl;

	if (q->nnodes > 0) {
		if (ml > q->nnodes)
			return true;
		ml = q->nnodes;
	}
	tfl = pr->steps * pr->compute_floor_s + nodes_time_s(pr, ml);
	if (pr->phase == HP__REC_ENERGY) {
		double bl = pr->fewest0[n0] * pr->base_min0_w + pr->base_min1_w;
		double ef = pr->steps * (n0 * pr->j_one0 + pr->j_one1 +
					 (double)(q->global_batch - n0 - 1) *
					     pr->j_per_sample_line) +
			    tfl * bl;
		return tfl > q->deadline_s ||
		       tfl * (n0 * pr->power_min0_w + pr->power_min1_w + bl) >=
			   pr->bound ||
		       (ef >= pr->bound &&
			pr->j_one0 >= pr->j_per_sample_line &&
			pr->j_one1 >= pr->j_per_sample_line);
	}
	return tfl >= pr->bound;
}

/* The first n1 of row n0 worth a look (energy: the fewest whose compute
 * bound meets the deadline, one less for rounding), or 0: none. */
static int row_first(const struct pair *pr, int n0)
{
	const struct hp__rec_params *q = &pr->S->q;
	const struct hp__rec_classes *cl = &pr->S->cl;
	double cd, need;

	if (pr->phase != HP__REC_ENERGY)
		return 1;
	cd = (q->deadline_s - HP_REC_STARTUP_S - 2 * HP_REC_STARTUP_NODE_S) /
	     pr->steps;
	need = ((double)q->global_batch / cd -
		n0 * cl->dev_samples_per_s_max[pr->t0]) /
	       cl->dev_samples_per_s_max[pr->t1];
	if (!(cd > 0) || need > (double)pr->f1 + 1)
		return 0;
	return need > 2 ? (int)need - 1 : 1;
}

enum { CELL_TAKE, CELL_SKIP, CELL_ROW_DONE };

/* Whether cell (n0, n1) can beat the bound: CELL_ROW_DONE when no later
 * n1 of the row can either (once compute is at its floor, nodes, power
 * and the line bound only grow with n1). */
static int cell_cut(const struct pair *pr, int n0, int n1)
{
	const struct hp__rec_params *q = &pr->S->q;
	const struct hp__rec_classes *cl = &pr->S->cl;
	int ml = pr->fewest0[n0] + pr->fewest1[n1];
	double cthr, clb, tn, tlb, tfl, bl, elb, es, es2;
	bool floor_now;

	if (q->ndevices > 0 && n0 + n1 != q->ndevices)
		return n0 + n1 > q->ndevices ? CELL_ROW_DONE : CELL_SKIP;
	bl = pr->fewest0[n0] * pr->base_min0_w +
	     pr->fewest1[n1] * pr->base_min1_w;
	if (q->nnodes > 0) {
		/* More devices need no fewer nodes. */
		if (ml > q->nnodes)
			return CELL_ROW_DONE;
		bl += (q->nnodes - ml) * pr->base_min_w;
		ml = q->nnodes;
	}
	tn = nodes_time_s(pr, ml);
	cthr =
	    (double)q->global_batch / (n0 * cl->dev_samples_per_s_max[pr->t0] +
				       n1 * cl->dev_samples_per_s_max[pr->t1]);
	floor_now = cthr <= pr->compute_floor_s;
	clb = floor_now ? pr->compute_floor_s : cthr;
	tlb = pr->steps * clb + tn;
	tfl = pr->steps * pr->compute_floor_s + tn;
	elb = tlb * (n0 * pr->power_min0_w + n1 * pr->power_min1_w + bl);
	if (pr->phase != HP__REC_ENERGY) {
		if (floor_now && tlb >= pr->bound)
			return CELL_ROW_DONE;
		return tlb >= pr->bound ? CELL_SKIP : CELL_TAKE;
	}
	/* Devices' energy: at least the lines under it, every device with
	 * one sample and the rest at the cheaper slope; plus the nodes'
	 * base power. */
	es = pr->steps *
		 (n0 * pr->j_one0 + n1 * pr->j_one1 +
		  (double)(q->global_batch - n0 - n1) * pr->j_per_sample_line) +
	     tlb * bl;
	es2 = pr->steps *
		  (n0 * cl->dev_j_per_sample_min[pr->t0] +
		   n1 * cl->dev_j_per_sample_min[pr->t1] +
		   (double)(q->global_batch - n0 - n1) * pr->j_per_sample_min) +
	      tlb * bl;
	if (es2 > es)
		es = es2;
	if (floor_now && (tlb > q->deadline_s || elb >= pr->bound))
		return CELL_ROW_DONE;
	{
		double ef = pr->steps * (n0 * pr->j_one0 + n1 * pr->j_one1 +
					 (double)(q->global_batch - n0 - n1) *
					     pr->j_per_sample_line) +
			    tfl * bl;
		if (ef >= pr->bound && pr->j_one1 >= pr->j_per_sample_line)
			return CELL_ROW_DONE;
	}
	if (tlb > q->deadline_s || elb >= pr->bound || es >= pr->bound)
		return CELL_SKIP;
	return CELL_TAKE;
}

/* Cell (n0, n1) as a candidate into *x; false when its split does not
 * fit or its own bounds cannot beat the pair's. */
static bool cell_cand(struct hp__rec_session *S, const struct pair *pr, int n0,
		      int n1, struct hp__rec_cand *x)
{
	int ty[2] = {pr->t0, pr->t1};

	memset(x, 0, sizeof(*x));
	x->count[0] = n0;
	x->count[1] = n1;
	if (hp__rec_compute(S->m, ty, x->count, 2, S->q.global_batch, &x->cp))
		return false;
	S->st->candidates++;
	if (!bounds(S, ty, x->count, 2, &x->cp, &x->time_lb_s, &x->energy_lb_j))
		return false;
	return pr->phase == HP__REC_ENERGY ? !(x->time_lb_s > S->q.deadline_s ||
					       x->energy_lb_j >= pr->bound)
					   : !(x->time_lb_s >= pr->bound);
}

int hp__rec_cands_pair(struct hp__rec_session *S, int t0, int t1,
		       enum hp__rec_phase phase, double bound,
		       struct hp__rec_cand **out, int *nout)
{
	const struct hp__rec_params *q = &S->q;
	struct hp__rec_cand *cv = NULL;
	struct pair pr;
	int nc = 0, ac = 0;

	*out = NULL;
	*nout = 0;
	if (!pair_init(&pr, S, t0, t1, phase, bound))
		return 0;
	if (phase == HP__REC_ENERGY &&
	    pr.steps * (double)q->global_batch * pr.j_per_sample_min >= bound)
		return 0;
	for (int n0 = 1; n0 <= pr.f0 && n0 < q->global_batch; n0++) {
		int n1s;
		if (rows_cut(&pr, n0))
			break;
		if (!(n1s = row_first(&pr, n0)))
			continue;
		for (int n1 = n1s; n1 <= pr.f1 && n0 + n1 <= q->global_batch;
		     n1++) {
			struct hp__rec_cand x;
			int how = cell_cut(&pr, n0, n1);
			if (how == CELL_ROW_DONE)
				break;
			if (how == CELL_SKIP || !cell_cand(S, &pr, n0, n1, &x))
				continue;
			if (nc == ac) {
				int na = ac ? ac * 2 : 256;
				void *p = realloc(cv, (size_t)na * sizeof(*cv));
				if (!p) {
					free(cv);
					return HP_ENOMEM;
				}
				cv = p;
				ac = na;
			}
			cv[nc++] = x;
		}
	}
	*out = cv;
	*nout = nc;
	return 0;
}
