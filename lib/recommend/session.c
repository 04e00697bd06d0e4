/*
 * session.c - the search's driver.  A session holds everything one
 * search (or several over one pool, model and job that differ only in
 * the deadline: the exact front) works on: the pool's classes, the single
 * types' candidates, the packing state of the last type set, the
 * configurations costed.  A search goes over the type sets (one type, or
 * a pair) in two phases: the least energy among configurations meeting
 * the deadline, then, when none does, the fastest; then it picks the
 * choice, says why each other set lost, and makes the front of what it
 * costed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

int hp__rec_session_new(const struct hp__rec_model *m,
			const struct hp_pool *pool,
			const struct hp__rec_params *q,
			struct hp__rec_stats *st, struct hp__rec_session **out,
			struct hp_error *err)
{
	struct hp__rec_session *S;
	int nt = m->ntypes, rc;

	*out = NULL;
	if (nt > HP__REC_MAX_TYPES)
		return hp_error_set(err, HP_EINVAL, "more than %d device types",
				    HP__REC_MAX_TYPES);
	S = calloc(1, sizeof(*S));
	if (!S)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	S->m = m;
	S->pool = pool;
	S->q = *q;
	S->q.tuning = NULL; /* the session keeps its own copy */
	if (q->tuning)
		S->tune = *q->tuning;
	else
		S->tune = (struct hp__rec_tuning){HP__REC_LEVEL_GRID_MAX_CELLS,
						  HP__REC_DFS_MAX_VISITS};
	S->st = st ? st : &S->own_stats;
	S->nsingle = nt + nt * nt + 1;
	S->single = calloc((size_t)S->nsingle, sizeof(*S->single));
	if (!S->single) {
		free(S);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	if ((rc =
		 hp__rec_classes_init(&S->cl, m, pool, q->global_batch, err))) {
		hp__rec_session_free(S);
		return rc;
	}
	*out = S;
	return 0;
}

static void costed_clear(struct hp__rec_session *S)
{
	for (int i = 0; i < S->ncosted; i++)
		hp_rec_config_release(&S->costed[i]);
	S->ncosted = 0;
}

void hp__rec_session_free(struct hp__rec_session *S)
{
	if (!S)
		return;
	for (int s = 0; s < S->nsingle; s++)
		free(S->single[s].cv);
	free(S->single);
	hp__rec_classes_release(&S->cl);
	costed_clear(S);
	free(S->costed);
	hp__rec_pack_free(S->pk);
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

/* One search's working state. */
struct search {
	struct hp__rec_session *S;
	int (*sets)[2]; /* type sets: a type and -1, or a pair */
	int nsets;
	struct hp__rec_set_best *best; /* per set */
	int *order;	    /* the order a phase solves the sets in */
	double *time_lb_s;  /* per set: a single type's least time bound */
	int phase;	    /* enum hp__rec_phase; past HP__REC_TIME when
			       neither found a configuration */
	double global_best; /* the phase's objective so far */
};

static const char *type_name(const struct search *X, int t)
{
	return X->S->m->tt[t].name;
}

/* The type sets: each type (or the job's), then each pair unless the job
 * has one type or no mixing. */
static int search_init(struct search *X, struct hp__rec_session *S)
{
	const struct hp__rec_params *q = &S->q;
	int nt = S->m->ntypes;
	size_t most = (size_t)(nt + nt * nt + 1);

	memset(X, 0, sizeof(*X));
	X->S = S;
	X->sets = calloc(most, sizeof(*X->sets));
	X->best = calloc(most, sizeof(*X->best));
	X->order = calloc(most, sizeof(*X->order));
	X->time_lb_s = calloc(most, sizeof(*X->time_lb_s));
	if (!X->sets || !X->best || !X->order || !X->time_lb_s)
		return HP_ENOMEM;
	for (int t = 0; t < nt; t++)
		if (q->only_type < 0 || q->only_type == t) {
			X->sets[X->nsets][0] = t;
			X->sets[X->nsets][1] = -1;
			X->nsets++;
		}
	if (q->only_type < 0 && q->max_mix >= 2)
		for (int a = 0; a < nt; a++)
			for (int b = a + 1; b < nt; b++) {
				X->sets[X->nsets][0] = a;
				X->sets[X->nsets][1] = b;
				X->nsets++;
			}
	return 0;
}

static void search_release(struct search *X)
{
	if (X->best)
		for (int s = 0; s < X->nsets; s++)
			hp_rec_config_release(&X->best[s].cfg);
	free(X->best);
	free(X->order);
	free(X->time_lb_s);
	free(X->sets);
}

/* The order of the sets in a phase.  Fastest: the single types whose
 * bounds promise the least time first, so the best so far cuts the
 * others early. */
static void order_sets(struct search *X)
{
	const struct hp__rec_single *c1 = X->S->single;
	int *ord = X->order;
	double *lb = X->time_lb_s;

	for (int s = 0; s < X->nsets; s++) {
		ord[s] = s;
		lb[s] = INFINITY;
		if (X->phase == HP__REC_TIME && X->sets[s][1] < 0 && c1[s].done)
			for (int i = 0; i < c1[s].n; i++)
				lb[s] = fmin(lb[s], c1[s].cv[i].time_lb_s);
	}
	if (X->phase != HP__REC_TIME)
		return;
	for (int a = 1; a < X->nsets && X->sets[a][1] < 0; a++)
		for (int b = a; b > 0 && lb[ord[b]] < lb[ord[b - 1]]; b--) {
			int x = ord[b];
			ord[b] = ord[b - 1];
			ord[b - 1] = x;
		}
}

/* Set s's candidates: a single type's are made once per session and
 * stay there (*own false); a pair's depend on the phase and the best so
 * far, and are the caller's. */
static int set_cands(struct search *X, int s, struct hp__rec_cand **cv,
		     int *ncv, bool *own)
{
	struct hp__rec_single *c1 = &X->S->single[s];
	struct hp__rec_set_best *sb = &X->best[s];
	const int *ty = X->sets[s];
	int rc;

	*own = false;
	if (ty[1] >= 0) {
		*own = true;
		return hp__rec_cands_pair(X->S, ty[0], ty[1], X->phase,
					  X->global_best, cv, ncv);
	}
	if (!c1->done) {
		rc = hp__rec_cands_single(X->S, ty[0], &c1->cv, &c1->n, c1->why,
					  sizeof(c1->why));
		if (rc < 0)
			return rc;
		c1->done = true;
	}
	*cv = c1->cv;
	*ncv = c1->n;
	snprintf(sb->why, sizeof(sb->why), "%s", c1->why);
	return 0;
}

/* Why set s has no configuration, unless a reason is already known. */
static void set_why_none(struct search *X, int s, int ncv)
{
	struct hp__rec_set_best *sb = &X->best[s];
	bool energy = X->phase == HP__REC_ENERGY;

	if (sb->have || sb->why[0])
		return;
	if (X->sets[s][1] >= 0)
		snprintf(sb->why, sizeof(sb->why), "%s",
			 energy ? "no mix of the two beats the choice within "
				  "the deadline (bounds)"
				: "no mix of the two is faster (bounds)");
	else if (energy)
		snprintf(sb->why, sizeof(sb->why),
			 "misses the deadline with any count");
	else if (ncv > 0)
		snprintf(sb->why, sizeof(sb->why),
			 "no count of it is faster than the choice (bounds)");
	else
		snprintf(sb->why, sizeof(sb->why), "no configuration fits");
}

/* Solve set s in this phase: its candidates, packed in bound order.
 * Single types are solved to their own best for `rejected`, except when
 * only the fastest counts: then every set is cut by the best so far. */
static int solve_set(struct search *X, int s)
{
	const struct hp__rec_model *m = X->S->m;
	struct hp__rec_set_best *sb = &X->best[s];
	const int *ty = X->sets[s];
	int k = ty[1] < 0 ? 1 : 2, ncv = 0, rc;
	struct hp__rec_cand *cv = NULL;
	bool own;

	hp_rec_config_release(&sb->cfg);
	sb->have = false;
	if (!m->tt[ty[0]].ok || (k == 2 && !m->tt[ty[1]].ok)) {
		snprintf(sb->why, sizeof(sb->why), "%s",
			 m->tt[m->tt[ty[0]].ok ? ty[1] : ty[0]].why);
		return 0;
	}
	if ((rc = set_cands(X, s, &cv, &ncv, &own)) < 0)
		return rc;
	rc = hp__rec_cands_run(X->S, ty, k, cv, ncv, X->phase, &X->global_best,
			       sb, k == 2 || X->phase == HP__REC_TIME);
	if (own)
		free(cv);
	if (rc < 0)
		return rc;
	set_why_none(X, s, ncv);
	return 0;
}

/* The phases: the least energy meeting the deadline; when nothing does,
 * the fastest. */
static int run_phases(struct search *X)
{
	int rc;

	for (X->phase = HP__REC_ENERGY; X->phase <= HP__REC_TIME; X->phase++) {
		X->global_best = INFINITY;
		order_sets(X);
		for (int oi = 0; oi < X->nsets; oi++)
			if ((rc = solve_set(X, X->order[oi])))
				return rc;
		if (X->global_best < INFINITY)
			break;
	}
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

/* The best set's configuration into out (the set's index, or -1 and why
 * nothing can run). */
static int choose(struct search *X, struct hp_rec_result *out, int *chosen)
{
	bool energy = X->phase == HP__REC_ENERGY;
	int bi = -1;

	for (int s = 0; s < X->nsets; s++) {
		const struct hp_rec_config *c = &X->best[s].cfg;
		if (!X->best[s].have)
			continue;
		if (bi < 0 || (energy ? c->energy_j < X->best[bi].cfg.energy_j
				      : c->time_s < X->best[bi].cfg.time_s))
			bi = s;
	}
	*chosen = bi;
	if (bi < 0) {
		/* Nothing can run: say why, from the first set. */
		out->found = false;
		out->feasible = false;
		snprintf(out->reason, sizeof(out->reason),
			 "no configuration can run");
		for (int s = 0; s < X->nsets; s++)
			if (X->best[s].why[0]) {
				snprintf(out->reason, sizeof(out->reason),
					 "%s: %s", type_name(X, X->sets[s][0]),
					 X->best[s].why);
				break;
			}
		return 0;
	}
	out->found = true;
	if (hp__rec_config_copy(&out->choice, &X->best[bi].cfg))
		return HP_ENOMEM;
	out->feasible = energy;
	if (!out->feasible) {
		char a[32];
		dur_text(out->choice.time_s - X->S->q.deadline_s, a, sizeof(a));
		snprintf(out->reason, sizeof(out->reason),
			 "no configuration meets the deadline: the fastest "
			 "misses it by %s",
			 a);
	}
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

/* Why set s lost to the choice (bi), into out->rejected; pairs without a
 * configuration are counted in *pairs_none, summed up by the caller. */
static int reject_set(struct search *X, int s, int bi,
		      struct hp_rec_result *out, int *pairs_none)
{
	const struct hp__rec_set_best *sb = &X->best[s];
	const int *ty = X->sets[s];
	char what[64], reason[160];

	if (ty[1] < 0)
		snprintf(what, sizeof(what), "%s", type_name(X, ty[0]));
	else
		snprintf(what, sizeof(what), "%s+%s", type_name(X, ty[0]),
			 type_name(X, ty[1]));
	if (!sb->have) {
		/* Types that cannot be used are listed once, alone. */
		if (ty[1] >= 0) {
			(*pairs_none)++;
			return 0;
		}
		snprintf(reason, sizeof(reason), "%s", sb->why);
		return add_reject(out, what, NULL, reason);
	}
	if (bi < 0)
		return 0;
	if (X->phase == HP__REC_ENERGY) {
		/* ranked on the judged time's energy, not the point's the
		 * JSON lists (which may order them the other way) */
		double q = X->S->m->confidence;
		char at[64] = "";
		if (q > 0 && q != 0.5)
			snprintf(at, sizeof(at),
				 " at its time judged at confidence %g", q);
		snprintf(reason, sizeof(reason), "uses %.0f%% more energy%s",
			 100 * (sb->cfg.energy_j / out->choice.energy_j - 1),
			 at);
	} else {
		char a[32];
		dur_text(sb->cfg.time_s - X->S->q.deadline_s, a, sizeof(a));
		snprintf(reason, sizeof(reason), "misses the deadline by %s",
			 a);
	}
	return add_reject(out, what, &sb->cfg, reason);
}

/* Rejected: each other type set's best, or why none. */
static int reject_others(struct search *X, int bi, struct hp_rec_result *out)
{
	int pairs_none = 0;

	for (int s = 0; s < X->nsets; s++)
		if (s != bi && reject_set(X, s, bi, out, &pairs_none))
			return HP_ENOMEM;
	if (pairs_none > 0 &&
	    add_reject(out, "pairs of types", NULL,
		       X->phase == HP__REC_ENERGY
			   ? "no mix of two usable types beats the choice "
			     "within the deadline (lower bounds)"
			   : "no mix of two usable types is faster (lower "
			     "bounds)"))
		return HP_ENOMEM;
	return 0;
}

int hp__rec_session_search(struct hp__rec_session *S, double deadline_s,
			   struct hp_rec_result *out, struct hp_error *err)
{
	struct search X;
	int rc, bi;

	memset(out, 0, sizeof(*out));
	S->q.deadline_s = deadline_s;
	out->deadline_s = deadline_s;
	/* The configurations costed are this search's own. */
	costed_clear(S);
	if ((rc = search_init(&X, S)) || (rc = run_phases(&X)) ||
	    (rc = choose(&X, out, &bi)) || (rc = reject_others(&X, bi, out)) ||
	    (rc = hp__rec_set_front(out, S->costed, S->ncosted)))
		rc = hp_error_set(err, rc, "out of memory");
	else
		out->evaluated = S->st->evaluated;
	/* What the search grew (costed configurations, packing state)
	 * stays with the session. */
	search_release(&X);
	return rc;
}
