/*
 * test_recommend.c - the recommender: the fast search finds the same
 * energy (or, when nothing meets the deadline, the same time) as an
 * exhaustive enumeration of every subset of free devices on 3,000 random
 * small pools, with the cost of a configuration computed here a second
 * time independently; the batch split is the brute-force min-max; a mixed
 * split's types differ by at most 5% in step time; the deadline parser
 * and hp_workload_at_batch refuse bad input by name (the pool parser's
 * tests are in test_pool.c).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/estimate.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"
#include "recommend/recommend_int.h"
#include "test.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}
static double urnd(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}
static int irnd(int lo, int hi) /* inclusive */
{
	return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

struct env {
	struct hp_catalog *cat;
	struct hp_estimator *est;
	struct hp_graph *g;
	struct hp_workload w1;
};

static void env_load(struct env *e, const char *model)
{
	struct hp_error err = {0};
	memset(e, 0, sizeof(*e));
	e->cat = hp_catalog_load(hp_test_path("data/devices.csv"), &err);
	ASSERT(e->cat);
	e->est = hp_estimator_load(hp_test_path("data/estimators/default.json"),
				   &err);
	ASSERT(e->est);
	e->g = hp_model_load(hp_test_path(model), &err);
	ASSERT(e->g);
	ASSERT_EQ_INT(hp_workload_from_graph(e->g, 1, NULL, 0, &e->w1, &err),
		      0);
}

static void env_free(struct env *e)
{
	hp_workload_release(&e->w1);
	hp_graph_free(e->g);
	hp_estimator_free(e->est);
	hp_catalog_free(e->cat);
}

/* ---- The exhaustive reference ---------------------------------------- */

struct ref {
	const struct hp__rec_model *m;
	const struct hp_pool *pool;
	const struct hp__rec_params *q;
	int choice_ty[16], choice_n[16]; /* per node: type (-1) and count */
	bool feasible;
	double best_e, best_t; /* least energy meeting; least time */
	long configs;
	double (*te)[2]; /* when set: every configuration's time, energy */
	long nte, ate;
};

/* DDP's all-reduce written out again, bucket by bucket: a ring inside a
 * node; across nodes the better of a ring and recursive doubling. */
static double ref_intra(double bw, double k, double g)
{
	double t = 0;

	for (double left = g; k > 1 && left > 0; left -= 25 * 1048576.0) {
		double b = fmin(left, 25 * 1048576.0);
		t += 2 * (k - 1) / k * b / bw + 2 * (k - 1) * 5e-6;
	}
	return t;
}

/* Node nd's transport's efficiency and cost of a message: said, or NCCL's
 * sockets on a node with a GPU, MPI over TCP on a CPU-only node. */
static void ref_transport(const struct hp_pool_node *nd,
			  const struct hp_catalog *cat, double *eff,
			  double *msg)
{
	enum hp_net_transport t = nd->net_transport;

	if (t == HP_NET_AUTO) {
		t = HP_NET_TCP;
		for (int d = 0; d < nd->ndevs; d++) {
			const struct hp_device_type *dt =
			    hp_catalog_find(cat, nd->devs[d].type);
			if (!dt || dt->kind != HP_DEVICE_CPU)
				t = HP_NET_SOCKET;
		}
	}
	*eff = t == HP_NET_SOCKET ? HP_COMM_SOCKET_EFFICIENCY
	       : t == HP_NET_RDMA ? HP_COMM_RDMA_EFFICIENCY
				  : HP_COMM_NET_EFFICIENCY;
	*msg = t == HP_NET_SOCKET ? HP_COMM_SOCKET_MSG_S
	       : t == HP_NET_RDMA ? HP_COMM_RDMA_MSG_S
				  : HP_COMM_NET_MSG_S;
}

static double ref_inter(double bw, double lat, double eff, double msg, int m,
			double g)
{
	double t = 0, step = 2 * lat + msg, rounds = 0;

	bw *= eff;
	while (m > 1 && (1 << (int)rounds) < m)
		rounds++;
	for (double left = g; m > 1 && left > 0; left -= 25 * 1048576.0) {
		double b = fmin(left, 25 * 1048576.0);
		double ring = 2.0 * (m - 1) / m * b / bw + 2.0 * (m - 1) * step;
		double tree = rounds * (b / bw + step);
		t += fmin(ring, tree);
	}
	return t;
}

/* The all-reduce and the job's time and energy, written out again. */
static void ref_cost(struct ref *r, const int *ty, const int *cnt)
{
	const struct hp_pool *p = r->pool;
	const struct hp__rec_params *q = r->q;
	double g = r->m->grad_bytes, intra = 0, inter = 0, base = 0;
	int types[2], nt = 0, n[2] = {0, 0}, m = 0;
	struct hp__rec_comp cp;
	double step, time, energy;

	for (int i = 0; i < p->n; i++) {
		int j;
		if (cnt[i] == 0)
			continue;
		for (j = 0; j < nt; j++)
			if (types[j] == ty[i])
				break;
		if (j == nt) {
			if (nt == 2)
				return; /* three types: outside the space */
			types[nt++] = ty[i];
		}
		n[j] += cnt[i];
		m++;
	}
	if (m == 0)
		return;
	if (q->only_type >= 0 && (nt != 1 || types[0] != q->only_type))
		return;
	if (q->ndevices > 0 && n[0] + n[1] != q->ndevices)
		return;
	if (q->nnodes > 0 && m != q->nnodes)
		return;
	if (nt == 2 && types[0] > types[1]) {
		int t = types[0], c = n[0];
		types[0] = types[1];
		n[0] = n[1];
		types[1] = t;
		n[1] = c;
	}
	if (hp__rec_compute(r->m, types, n, nt, q->global_batch, &cp))
		return;
	r->configs++;
	for (int i = 0; i < p->n; i++) {
		const struct hp_pool_node *nd = &p->nodes[i];
		double k = cnt[i], bw, x, eff, msg;
		if (cnt[i] == 0)
			continue;
		base += nd->base_power_w;
		bw = nd->intra_bw_gbps * 1e9 / 8;
		x = ref_intra(bw, k, g);
		intra = fmax(intra, x);
		bw = nd->net_bw_gbps * 1e9 / 8;
		ref_transport(nd, r->m->cat, &eff, &msg);
		x = ref_inter(bw, nd->net_latency_us * 1e-6, eff, msg, m, g);
		inter = fmax(inter, x);
	}
	step = cp.compute_s + intra + inter;
	time = (double)q->steps * step + 60 + 5.0 * m;
	energy = time * (cp.devices_power_w + base);
	if (r->te) {
		if (r->nte == r->ate) {
			r->ate = r->ate ? 2 * r->ate : 1024;
			r->te = realloc(r->te, (size_t)r->ate * sizeof(*r->te));
			ASSERT(r->te);
		}
		r->te[r->nte][0] = time;
		r->te[r->nte][1] = energy;
		r->nte++;
	}
	if (time < r->best_t)
		r->best_t = time;
	if (time <= q->deadline_s) {
		r->feasible = true;
		if (energy < r->best_e)
			r->best_e = energy;
	}
}

/* Every subset of free devices: per node unused, or one of its types with
 * 1..free devices. */
static void ref_walk(struct ref *r, int node, int *ty, int *cnt)
{
	const struct hp_pool_node *nd;
	if (node == r->pool->n) {
		ref_cost(r, ty, cnt);
		return;
	}
	nd = &r->pool->nodes[node];
	ty[node] = -1;
	cnt[node] = 0;
	ref_walk(r, node + 1, ty, cnt);
	for (int d = 0; d < nd->ndevs; d++) {
		int t = hp__rec_type_index(r->m, nd->devs[d].type);
		if (t < 0 || !r->m->tt[t].ok)
			continue;
		for (int k = 1; k <= nd->devs[d].free; k++) {
			ty[node] = t;
			cnt[node] = k;
			ref_walk(r, node + 1, ty, cnt);
		}
	}
	ty[node] = -1;
	cnt[node] = 0;
}

/* A random pool: 1-4 nodes, 1-3 types among the model's, up to 4 free
 * devices each, random links and base power. */
static void random_pool(struct hp_pool *p, const struct hp__rec_model *m)
{
	static struct hp_pool_node nodes[4];
	static struct hp_pool_dev devs[4][2];
	static char names[4][16];
	int ntypes = irnd(1, 3), use[3];

	for (int j = 0; j < ntypes; j++)
		use[j] = irnd(0, m->ntypes - 1);
	memset(nodes, 0, sizeof(nodes));
	p->n = urnd() < 0.2 ? irnd(1, 2) : irnd(3, 4);
	p->nodes = nodes;
	p->path = NULL;
	for (int i = 0; i < p->n; i++) {
		struct hp_pool_node *nd = &nodes[i];
		int nd_types = urnd() < 0.15 && ntypes > 1 ? 2 : 1;
		snprintf(names[i], sizeof(names[i]), "n%d", i);
		nd->name = names[i];
		nd->devs = devs[i];
		nd->ndevs = 0;
		for (int k = 0; k < nd_types; k++) {
			int t = use[irnd(0, ntypes - 1)];
			if (k == 1 && !strcmp(devs[i][0].type, m->tt[t].name))
				continue;
			snprintf(devs[i][k].type, sizeof(devs[i][k].type), "%s",
				 m->tt[t].name);
			devs[i][k].free = urnd() < 0.15 ? 0 : irnd(1, 4);
			devs[i][k].count = devs[i][k].free + irnd(0, 2);
			if (devs[i][k].count == 0)
				devs[i][k].count = 1;
			nd->ndevs++;
		}
		nd->intra_bw_gbps = 64 * pow(75, urnd()); /* 64-4800 */
		nd->net_bw_gbps = 10 * pow(40, urnd());	  /* 10-400 */
		nd->net_latency_us = 1 + 29 * urnd();	  /* 1-30 */
		nd->base_power_w = urnd() < 0.2 ? 0 : 2000 * urnd();
		/* Every transport, from the bandwidth's digits (the random
		 * stream, and so the pools, stay as they were). */
		nd->net_transport = (enum hp_net_transport)(
		    (unsigned)(nd->net_bw_gbps * 1000) % 4);
		/* Identical nodes now and then, to exercise classes. */
		if (i > 0 && urnd() < 0.25) {
			struct hp_pool_node *pr = &nodes[i - 1];
			nd->intra_bw_gbps = pr->intra_bw_gbps;
			nd->net_bw_gbps = pr->net_bw_gbps;
			nd->net_latency_us = pr->net_latency_us;
			nd->net_transport = pr->net_transport;
			nd->base_power_w = pr->base_power_w;
			nd->ndevs = pr->ndevs;
			memcpy(devs[i], devs[i - 1], sizeof(devs[i]));
		}
	}
}

/* The choice is a configuration of the pool: free devices respected, one
 * type per node, local batches summing to the global batch. */
static void check_choice(const struct hp_rec_config *c, const struct hp_pool *p,
			 int64_t B)
{
	int64_t sum = 0;
	for (int i = 0; i < c->ngroups; i++) {
		const struct hp_rec_group *g = &c->groups[i];
		const struct hp_pool_node *nd = &p->nodes[g->node];
		int used = 0, fr = -1;
		for (int j = 0; j < c->ngroups; j++)
			if (c->groups[j].node == g->node) {
				ASSERT_STR_EQ(c->groups[j].type, g->type);
				used += c->groups[j].count;
			}
		for (int d = 0; d < nd->ndevs; d++)
			if (!strcmp(nd->devs[d].type, g->type))
				fr = nd->devs[d].free;
		ASSERT(used <= fr);
		ASSERT(g->local_batch >= 1);
		sum += g->count * g->local_batch;
	}
	ASSERT_EQ_INT(sum, B);
}

/* Enumerate every configuration of pool for q (collect: keep each one's
 * time and energy in r->te, which the caller frees). */
static void ref_run(struct ref *r, const struct hp__rec_model *m,
		    const struct hp_pool *pool, const struct hp__rec_params *q,
		    bool collect)
{
	int ty[4], cnt[4];

	memset(r, 0, sizeof(*r));
	r->m = m;
	r->pool = pool;
	r->q = q;
	r->best_e = r->best_t = INFINITY;
	if (collect) {
		r->te = malloc(sizeof(*r->te));
		ASSERT(r->te);
		r->ate = 1;
	}
	ref_walk(r, 0, ty, cnt);
}

/*
 * The search's answer against the exhaustive reference's: nothing when
 * the reference has nothing (0), else the same feasibility and, to 1e-9,
 * the least energy (1) or, when nothing meets the deadline, the least
 * time (2), with a choice that is a configuration of the pool.
 */
static int same_as_ref(int seed, const struct hp_rec_result *res,
		       const struct ref *r, const struct hp_pool *pool,
		       const struct hp__rec_params *q)
{
	const struct hp_rec_config *c = &res->choice;

	if (r->best_t == INFINITY) {
		if (res->found)
			HP_FAIL("seed %d: the search found a configuration, "
				"the reference none",
				seed);
		return 0;
	}
	if (!res->found)
		HP_FAIL("seed %d: the search found none, the reference %ld "
			"configurations",
			seed, r->configs);
	check_choice(c, pool, q->global_batch);
	if (res->feasible != r->feasible)
		HP_FAIL("seed %d: feasible %d, reference %d (time %.9g, "
			"reference fastest %.9g, deadline %.9g)",
			seed, res->feasible, r->feasible, c->time_s, r->best_t,
			q->deadline_s);
	if (r->feasible) {
		if (!(fabs(c->energy_j - r->best_e) <= 1e-9 * r->best_e))
			HP_FAIL("seed %d: energy %.12g, exhaustive %.12g", seed,
				c->energy_j, r->best_e);
		ASSERT(c->time_s <= q->deadline_s);
		return 1;
	}
	if (!(fabs(c->time_s - r->best_t) <= 1e-9 * r->best_t))
		HP_FAIL("seed %d: fastest %.12g s, exhaustive %.12g s", seed,
			c->time_s, r->best_t);
	return 2;
}

/* What the exhaustive tests count. */
struct tally {
	long configs;
	int none, feasible, infeasible, mixed;
};

/* Search q on pool and compare with the reference, counting in t. */
static void search_vs_ref(int seed, const struct hp__rec_model *m,
			  const struct hp_pool *pool,
			  const struct hp__rec_params *q,
			  struct hp__rec_stats *st, struct tally *t)
{
	struct hp_error err = {0};
	struct hp_rec_result res;
	struct ref r;

	ref_run(&r, m, pool, q, false);
	t->configs += r.configs;
	ASSERT_EQ_INT(hp__rec_search(m, pool, q, &res, st, &err), 0);
	switch (same_as_ref(seed, &res, &r, pool, q)) {
	case 0:
		t->none++;
		break;
	case 1:
		t->feasible++;
		break;
	default:
		t->infeasible++;
	}
	t->mixed += res.found && res.choice.ntypes == 2;
	hp_rec_result_release(&res);
}

HP_TEST(recommend_search_matches_exhaustive_on_2000_pools)
{
	static const char *const types[] = {"v100", "a100-80", "t4",
					    "h100-sxm"};
	struct hp_error err = {0};
	struct hp__rec_model m;
	struct env e;
	int constrained = 0;
	struct tally t = {0};
	struct hp__rec_stats st = {0};
	struct hp__rec_tuning tune;
	enum { POOLS = 2000 };

	env_load(&e, "data/models/resnet18.train.onnx");
	ASSERT_EQ_INT(
	    hp__rec_model_build(e.est, e.cat, &e.w1, types, 4, 64, &m, &err),
	    0);
	for (int i = 0; i < 4; i++)
		ASSERT(m.tt[i].ok);
	for (int seed = 1; seed <= POOLS; seed++) {
		struct hp_pool pool;
		struct hp__rec_params q = {0};
		double tref;

		/* Odd seeds search levels by halving, even ones level by
		 * level; half the seeds pack by dynamic programming wherever
		 * it applies, half by the DFS within its budget. */
		tune.level_grid_max_cells =
		    seed % 2 ? 0 : HP__REC_LEVEL_GRID_MAX_CELLS;
		tune.dfs_max_visits =
		    seed % 4 >= 2 ? 0 : HP__REC_DFS_MAX_VISITS;
		rs = 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)seed * 0x2545f4914f6cdd1dull);
		rnd();
		random_pool(&pool, &m);
		q.global_batch = 64;
		q.steps = irnd(100, 20000);
		q.only_type = -1;
		q.max_mix = 2;
		q.tuning = &tune;
		if (urnd() < 0.1)
			q.only_type = irnd(0, 3);
		if (urnd() < 0.1)
			q.ndevices = irnd(1, 8);
		if (urnd() < 0.1)
			q.nnodes = irnd(1, 3);
		constrained += q.only_type >= 0 || q.ndevices || q.nnodes;
		/* Deadlines around what a few devices need. */
		tref = 65 + (double)q.steps * m.tt[0].step_s[16] * 2;
		q.deadline_s = tref * pow(10, -1.3 + 1.6 * urnd());
		search_vs_ref(seed, &m, &pool, &q, &st, &t);
	}
	fprintf(stderr,
		"exhaustive: %d pools, %ld configurations; %d feasible, %d "
		"infeasible (fastest compared), %d with nothing to run, %d "
		"mixed choices, %d constrained, %lld of %lld packings by "
		"DP; 0 mismatches\n",
		POOLS, t.configs, t.feasible, t.infeasible, t.none, t.mixed,
		constrained, (long long)st.dp, (long long)st.leaves);
	/* Both kinds of answer were exercised, and both packers. */
	ASSERT(t.feasible >= 100 && t.infeasible >= 100);
	ASSERT(t.mixed >= 10);
	ASSERT(st.dp >= 1000 && st.dp < st.leaves);
	hp__rec_model_release(&m);
	env_free(&e);
}

/* The exact front on the same random pools: its first point is the
 * fastest configuration, its last the least energy of all, energy falls
 * strictly along it, and no configuration of the pool is at least as
 * fast as a point with less energy (checked against every configuration,
 * enumerated). */
HP_TEST(recommend_exact_front_matches_exhaustive)
{
	static const char *const types[] = {"v100", "a100-80", "t4",
					    "h100-sxm"};
	struct hp_error err = {0};
	struct hp__rec_model m;
	struct env e;
	int pools = 0, points = 0;

	env_load(&e, "data/models/resnet18.train.onnx");
	ASSERT_EQ_INT(
	    hp__rec_model_build(e.est, e.cat, &e.w1, types, 4, 64, &m, &err),
	    0);
	for (int seed = 1; seed <= 600; seed++) {
		struct hp_pool pool;
		struct hp__rec_params q = {0};
		struct hp_rec_result res;
		struct ref r;
		struct hp__rec_session *S;
		double emin = INFINITY;

		rs = 0x6a09e667f3bcc909ull ^ ((uint64_t)seed * 0x9e3779b9ull);
		rnd();
		random_pool(&pool, &m);
		q.global_batch = 64;
		q.steps = irnd(100, 20000);
		q.only_type = urnd() < 0.1 ? irnd(0, 3) : -1;
		q.ndevices = urnd() < 0.1 ? irnd(1, 8) : 0;
		q.nnodes = urnd() < 0.1 ? irnd(1, 3) : 0;
		q.max_mix = 2;
		q.deadline_s = (65 + (double)q.steps * m.tt[0].step_s[16] * 2) *
			       pow(10, -1.3 + 1.6 * urnd());
		ref_run(&r, &m, &pool, &q, true);
		ASSERT_EQ_INT(
		    hp__rec_session_new(&m, &pool, &q, NULL, &S, &err), 0);
		ASSERT_EQ_INT(
		    hp__rec_session_search(S, q.deadline_s, &res, &err), 0);
		if (!res.found) {
			ASSERT(r.nte == 0);
			hp_rec_result_release(&res);
			hp__rec_session_free(S);
			free(r.te);
			continue;
		}
		ASSERT_EQ_INT(hp__rec_front(S, 2 + seed % 5, &res, &err), 0);
		hp__rec_session_free(S);
		ASSERT(res.pareto_exact && res.npareto >= 1);
		for (long i = 0; i < r.nte; i++)
			emin = fmin(emin, r.te[i][1]);
		if (!(fabs(res.pareto[0].time_s - r.best_t) <= 1e-9 * r.best_t))
			HP_FAIL("seed %d: front starts at %.12g s, fastest "
				"%.12g s",
				seed, res.pareto[0].time_s, r.best_t);
		if (!(fabs(res.pareto[res.npareto - 1].energy_j - emin) <=
		      1e-9 * emin))
			HP_FAIL("seed %d: front ends at %.12g J, least %.12g J",
				seed, res.pareto[res.npareto - 1].energy_j,
				emin);
		for (int i = 0; i < res.npareto; i++) {
			const struct hp_rec_config *x = &res.pareto[i];
			check_choice(x, &pool, q.global_batch);
			if (i > 0) {
				ASSERT(x->time_s >= res.pareto[i - 1].time_s);
				ASSERT(x->energy_j <
				       res.pareto[i - 1].energy_j);
			}
			for (long c = 0; c < r.nte; c++)
				if (r.te[c][0] <= x->time_s * (1 + 1e-12) &&
				    r.te[c][1] < x->energy_j * (1 - 1e-9))
					HP_FAIL("seed %d: front point %d (%.9g "
						"s, %.9g J) dominated by %.9g "
						"s, %.9g J",
						seed, i, x->time_s, x->energy_j,
						r.te[c][0], r.te[c][1]);
			points++;
		}
		pools++;
		hp_rec_result_release(&res);
		free(r.te);
	}
	fprintf(stderr,
		"exact front: %d pools, %d points, none dominated by any "
		"configuration\n",
		pools, points);
	ASSERT(pools >= 400 && points >= 2 * pools);
	hp__rec_model_release(&m);
	env_free(&e);
}

/* The same against synthetic tables the estimator would never give: step
 * times with jumps and plateaus, power that falls and rises with the
 * batch, types that fit few samples, larger batches and devices. */
HP_TEST(recommend_search_matches_exhaustive_on_synthetic_tables)
{
	static double t[4][129], lo[4][129], hi[4][129], p[4][129];
	static struct hp__rec_tt tt[4];
	static const char *const names[4] = {"v100", "a100-80", "t4",
					     "h100-sxm"};
	struct tally tl = {0};
	struct hp__rec_stats st = {0};
	struct hp__rec_tuning tune;
	enum { POOLS = 1000 };

	for (int seed = 1; seed <= POOLS; seed++) {
		struct hp__rec_model m = {.tt = tt,
					  .ntypes = 4,
					  .comm_scale = 1,
					  .net_scale = 1,
					  .confidence = 0.5};
		struct hp_pool pool;
		struct hp__rec_params q = {0};

		/* Odd seeds search levels by halving, even ones level by
		 * level; half the seeds pack by dynamic programming wherever
		 * it applies, half by the DFS within its budget. */
		tune.level_grid_max_cells =
		    seed % 2 ? 0 : HP__REC_LEVEL_GRID_MAX_CELLS;
		tune.dfs_max_visits =
		    seed % 4 >= 2 ? 0 : HP__REC_DFS_MAX_VISITS;
		rs = 0x51ed270b27e2d3a5ull ^
		     ((uint64_t)seed * 0x9e3779b97f4a7c15ull);
		rnd();
		m.grad_bytes = 1e6 * pow(1000, urnd());
		for (int i = 0; i < 4; i++) {
			double acc = 0.005 + 0.05 * urnd();
			snprintf(tt[i].name, sizeof(tt[i].name), "%s",
				 names[i]);
			tt[i].ok = urnd() > 0.05;
			tt[i].local_fit_max = tt[i].local_max = irnd(2, 128);
			tt[i].step_s = t[i];
			tt[i].step_lo_s = lo[i];
			tt[i].step_hi_s = hi[i];
			tt[i].power_w = p[i];
			tt[i].power_min_w = INFINITY;
			for (int b = 1; b <= tt[i].local_max; b++) {
				/* Nondecreasing, with plateaus and jumps. */
				acc +=
				    urnd() < 0.3 ? 0 : 0.004 * urnd() * (i + 1);
				if (urnd() < 0.05)
					acc += 0.05 * urnd();
				t[i][b] = acc;
				lo[i][b] = 0.8 * acc;
				hi[i][b] = 1.3 * acc;
				p[i][b] = 30 + 500 * urnd();
				tt[i].power_min_w =
				    fmin(tt[i].power_min_w, p[i][b]);
			}
		}
		random_pool(&pool, &m);
		q.global_batch = irnd(8, 128);
		q.steps = irnd(10, 20000);
		q.only_type = urnd() < 0.1 ? irnd(0, 3) : -1;
		q.ndevices = urnd() < 0.1 ? irnd(1, 10) : 0;
		q.nnodes = urnd() < 0.1 ? irnd(1, 4) : 0;
		q.max_mix = 2;
		q.tuning = &tune;
		q.deadline_s = (65 + q.steps * t[irnd(0, 3)][1] * 4) *
			       pow(10, -1 + 1.5 * urnd());
		search_vs_ref(seed, &m, &pool, &q, &st, &tl);
	}
	fprintf(stderr,
		"synthetic: %d pools, %ld configurations; %d feasible, %d "
		"infeasible, %d mixed choices, %lld of %lld packings by DP; "
		"0 mismatches\n",
		POOLS, tl.configs, tl.feasible, tl.infeasible, tl.mixed,
		(long long)st.dp, (long long)st.leaves);
	ASSERT(tl.feasible >= 100 && tl.infeasible >= 100 && tl.mixed >= 20);
	ASSERT(st.dp >= 500 && st.dp < st.leaves);
}

/* ---- The batch split ------------------------------------------------- */

/* Pools too large to enumerate (12-40 nodes, up to 8 free devices, every
 * node's figures its own, a few nodes with two types): the packings by
 * dynamic programming give the same energy or time as the DFS run to the
 * end. */
HP_TEST(recommend_dp_matches_dfs_on_larger_pools)
{
	static const char *const types[] = {"v100", "a100-80", "t4",
					    "h100-sxm"};
	static struct hp_pool_node nodes[40];
	static struct hp_pool_dev devs[40][2];
	static char names[40][16];
	struct hp_error err = {0};
	struct hp__rec_model m;
	struct env e;
	long dp = 0, leaves = 0;
	int feasible = 0;
	struct hp__rec_tuning tune;

	env_load(&e, "data/models/resnet18.train.onnx");
	ASSERT_EQ_INT(
	    hp__rec_model_build(e.est, e.cat, &e.w1, types, 4, 128, &m, &err),
	    0);
	for (int seed = 1; seed <= 300; seed++) {
		struct hp_pool pool = {0};
		struct hp__rec_params q = {0};
		struct hp_rec_result a, b;
		struct hp__rec_stats sa = {0}, sb = {0};

		rs = 0x2545f4914f6cdd1dull ^ ((uint64_t)seed * 0x9e3779b9ull);
		rnd();
		pool.n = irnd(12, 40);
		pool.nodes = nodes;
		for (int i = 0; i < pool.n; i++) {
			struct hp_pool_node *nd = &nodes[i];
			memset(nd, 0, sizeof(*nd));
			snprintf(names[i], sizeof(names[i]), "n%d", i);
			nd->name = names[i];
			nd->devs = devs[i];
			nd->ndevs = urnd() < 0.1 ? 2 : 1;
			for (int k = 0; k < nd->ndevs; k++) {
				snprintf(devs[i][k].type,
					 sizeof(devs[i][k].type), "%s",
					 types[(i + k) % 4]);
				devs[i][k].free = irnd(0, 8);
				devs[i][k].count = 8;
			}
			nd->intra_bw_gbps = 64 * pow(75, urnd());
			nd->net_bw_gbps = 10 * pow(40, urnd());
			nd->net_latency_us = 1 + 29 * urnd();
			nd->base_power_w = 2000 * urnd();
		}
		q.global_batch = 128;
		q.steps = irnd(1000, 20000);
		q.only_type = -1;
		q.max_mix = 2;
		q.deadline_s = (65 + (double)q.steps * m.tt[0].step_s[16] * 2) *
			       pow(10, -1.3 + 1.6 * urnd());
		/* The DFS run to the end, then the DP wherever it applies. */
		tune.level_grid_max_cells =
		    seed % 2 ? 0 : HP__REC_LEVEL_GRID_MAX_CELLS;
		tune.dfs_max_visits = 1L << 40;
		q.tuning = &tune;
		ASSERT_EQ_INT(hp__rec_search(&m, &pool, &q, &a, &sa, &err), 0);
		tune.dfs_max_visits = 0;
		ASSERT_EQ_INT(hp__rec_search(&m, &pool, &q, &b, &sb, &err), 0);
		ASSERT_EQ_INT(sa.dp, 0);
		dp += sb.dp;
		leaves += sb.leaves;
		ASSERT_EQ_INT(a.found, b.found);
		ASSERT_EQ_INT(a.feasible, b.feasible);
		if (a.found) {
			double x =
			    a.feasible ? a.choice.energy_j : a.choice.time_s;
			double y =
			    b.feasible ? b.choice.energy_j : b.choice.time_s;
			check_choice(&b.choice, &pool, q.global_batch);
			if (!(fabs(x - y) <= 1e-9 * x))
				HP_FAIL("seed %d: DFS %.12g, DP %.12g", seed, x,
					y);
			feasible += a.feasible;
		}
		hp_rec_result_release(&a);
		hp_rec_result_release(&b);
	}
	fprintf(stderr,
		"DP vs DFS: 300 pools of 12-40 nodes, %d feasible, %ld of %ld "
		"packings by DP; 0 mismatches\n",
		feasible, dp, leaves);
	ASSERT(dp >= 500 && feasible >= 30 && feasible <= 270);
	hp__rec_model_release(&m);
	env_free(&e);
}

HP_TEST(recommend_split_is_brute_force_min_max)
{
	static const char *const types[] = {"t4", "a100-80"};
	struct hp_error err = {0};
	struct hp__rec_model m;
	struct env e;

	env_load(&e, "data/models/resnet18.train.onnx");
	ASSERT_EQ_INT(
	    hp__rec_model_build(e.est, e.cat, &e.w1, types, 2, 512, &m, &err),
	    0);
	rs = 12345;
	for (int it = 0; it < 400; it++) {
		int ty[2] = {0, 1}, n[2] = {irnd(1, 12), irnd(1, 12)};
		int64_t B = irnd(n[0] + n[1], 512);
		struct hp__rec_comp cp;
		double best = INFINITY, p = 0;
		int rc = hp__rec_compute(&m, ty, n, 2, B, &cp);
		for (int64_t s = n[0]; s <= B - n[1]; s++) {
			int64_t b0 = (s + n[0] - 1) / n[0];
			int64_t b1 = (B - s + n[1] - 1) / n[1];
			if (b0 > m.tt[0].local_max || b1 > m.tt[1].local_max)
				continue;
			best = fmin(
			    best, fmax(m.tt[0].step_s[b0], m.tt[1].step_s[b1]));
		}
		if (best == INFINITY) {
			ASSERT(rc != 0);
			continue;
		}
		ASSERT_EQ_INT(rc, 0);
		ASSERT_NEAR(cp.compute_s, best, 1e-12);
		ASSERT_EQ_INT(cp.samples[0] + cp.samples[1], B);
		/* Within a type local batches differ by at most one. */
		for (int j = 0; j < 2; j++) {
			ASSERT(cp.n_at_hi[j] >= 1 && cp.n_at_hi[j] <= n[j]);
			ASSERT_EQ_INT(cp.n_at_hi[j] * cp.local_hi[j] +
					  (n[j] - cp.n_at_hi[j]) *
					      (cp.local_hi[j] - 1),
				      cp.samples[j]);
			p += cp.n_at_hi[j] * m.tt[j].power_w[cp.local_hi[j]] +
			     (n[j] - cp.n_at_hi[j]) *
				 (cp.local_hi[j] > 1
				      ? m.tt[j].power_w[cp.local_hi[j] - 1]
				      : 0);
		}
		ASSERT_NEAR(cp.devices_power_w, p, 1e-12);
	}
	hp__rec_model_release(&m);
	env_free(&e);
}

/* Mixed split of ResNet-50 over V100s and A100s: the types' predicted step
 * times, in the recommender's tables and from the estimator itself at the
 * local batches chosen, differ by at most 5%. */
HP_TEST(recommend_mixed_split_equalises_step_times)
{
	static const char *const types[] = {"v100", "a100-80"};
	struct hp_error err = {0};
	struct hp__rec_model m;
	struct env e;
	double worst = 0;
	struct {
		int n0, n1;
		int64_t B;
	} cases[] = {{4, 4, 256}, {8, 2, 256}, {2, 6, 512}, {16, 8, 1024}};

	env_load(&e, "data/models/resnet50.train.onnx");
	ASSERT_EQ_INT(
	    hp__rec_model_build(e.est, e.cat, &e.w1, types, 2, 1024, &m, &err),
	    0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ty[2] = {0, 1}, n[2] = {cases[i].n0, cases[i].n1};
		struct hp__rec_comp cp;
		struct hp_prediction p[2];
		double d, dd;
		ASSERT_EQ_INT(hp__rec_compute(&m, ty, n, 2, cases[i].B, &cp),
			      0);
		d = fabs(cp.step_s[0] - cp.step_s[1]) /
		    fmin(cp.step_s[0], cp.step_s[1]);
		for (int j = 0; j < 2; j++) {
			struct hp_workload w;
			ASSERT_EQ_INT(hp_workload_at_batch(
					  &e.w1, cp.local_hi[j], &w, &err),
				      0);
			ASSERT_EQ_INT(hp_estimator_predict(e.est, e.cat, &w,
							   types[j], 1, -1,
							   &p[j], &err),
				      0);
			hp_workload_release(&w);
		}
		dd = fabs(p[0].step_time_s - p[1].step_time_s) /
		     fmin(p[0].step_time_s, p[1].step_time_s);
		fprintf(stderr,
			"mixed %d v100 + %d a100-80, B %lld: local %lld / "
			"%lld, step %.5g / %.5g s (%.2f%%), estimator %.5g / "
			"%.5g s (%.2f%%)\n",
			n[0], n[1], (long long)cases[i].B,
			(long long)cp.local_hi[0], (long long)cp.local_hi[1],
			cp.step_s[0], cp.step_s[1], 100 * d, p[0].step_time_s,
			p[1].step_time_s, 100 * dd);
		ASSERT(d <= 0.05);
		ASSERT(dd <= 0.05);
		/* The faster type takes more of the batch. */
		ASSERT(cp.local_hi[1] > cp.local_hi[0]);
		worst = fmax(worst, fmax(d, dd));
	}
	ASSERT(worst > 0); /* a real difference was measured */
	hp__rec_model_release(&m);
	env_free(&e);
}

/* The tables are the estimator at the grid points and close to it in
 * between; step time and throughput do not fall with the local batch
 * (the search's bounds use both). */
HP_TEST(recommend_tables_follow_the_estimator)
{
	static const char *const types[] = {"v100",	"a100-80", "t4",
					    "h100-sxm", "l4",	   "a10"};
	struct hp_error err = {0};
	struct hp__rec_model m;
	struct env e;
	double worst = 0;

	env_load(&e, "data/models/resnet50.train.onnx");
	ASSERT_EQ_INT(
	    hp__rec_model_build(e.est, e.cat, &e.w1, types, 6, 600, &m, &err),
	    0);
	for (int i = 0; i < 6; i++) {
		const struct hp__rec_tt *tt = &m.tt[i];
		ASSERT(tt->ok);
		for (int64_t b = 1; b <= tt->local_max; b += 7) {
			struct hp_workload w;
			struct hp_prediction p;
			ASSERT_EQ_INT(hp_workload_at_batch(&e.w1, b, &w, &err),
				      0);
			ASSERT_EQ_INT(hp_estimator_predict(e.est, e.cat, &w,
							   tt->name, 1, -1, &p,
							   &err),
				      0);
			ASSERT(p.fits_in_memory);
			worst = fmax(worst,
				     fabs(tt->step_s[b] / p.step_time_s - 1));
			worst =
			    fmax(worst, fabs(tt->power_w[b] / p.power_w - 1));
			hp_workload_release(&w);
		}
		for (int64_t b = 2; b <= tt->local_max; b++) {
			ASSERT(tt->step_s[b] >= tt->step_s[b - 1]);
			ASSERT(b / tt->step_s[b] >=
			       (b - 1) / tt->step_s[b - 1]);
		}
		/* bmem is the memory limit, unless capped. */
		if (tt->local_fit_max < 600) {
			struct hp_workload w;
			struct hp_prediction p;
			ASSERT_EQ_INT(
			    hp_workload_at_batch(&e.w1, tt->local_fit_max + 1,
						 &w, &err),
			    0);
			ASSERT_EQ_INT(hp_estimator_predict(e.est, e.cat, &w,
							   tt->name, 1, -1, &p,
							   &err),
				      0);
			ASSERT(!p.fits_in_memory);
			hp_workload_release(&w);
		}
	}
	fprintf(stderr, "tables vs estimator: worst %.3f%%\n", 100 * worst);
	ASSERT(worst < 0.01);
	hp__rec_model_release(&m);
	env_free(&e);
}

/* ---- Whole recommendations ------------------------------------------- */

static struct hp_pool *pool_text(const char *text, const struct env *e,
				 struct hp_error *err)
{
	return hp_pool_parse(text, strlen(text), "t.json", e->cat, err);
}

HP_TEST(recommend_sample_pool_meets_deadline_and_explains)
{
	struct hp_error err = {0};
	struct hp_rec_job job = {0};
	struct hp_rec_result r;
	struct hp_pool *pool;
	struct env e;
	char *js;

	env_load(&e, "data/models/resnet50.train.onnx");
	pool =
	    hp_pool_load(hp_test_path("data/pools/sample.json"), e.cat, &err);
	ASSERT(pool);
	job.samples = 1281167;
	job.epochs = 1;
	job.batch = 256;
	job.ref_batch = 128;
	job.deadline_s = 3600;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && r.feasible);
	ASSERT(r.choice.time_s <= 3600);
	ASSERT_NEAR(r.choice.lr_scale, 2.0, 1e-12);
	ASSERT(r.choice.warmup_steps > 0);
	ASSERT(r.npareto >= 1 && r.nrejected >= 1);
	/* The CPU type has no power figure: left out, and said so. */
	ASSERT(r.nnotes >= 1 && strstr(r.notes[0], "cpu"));
	for (int i = 0; i < r.npareto; i++)
		ASSERT(r.pareto[i].energy_j >= r.choice.energy_j ||
		       r.pareto[i].time_s > 3600);
	/* every group says its node's network, as the search costed it */
	for (int i = 0; i < r.npareto; i++)
		for (int k = 0; k < r.pareto[i].ngroups; k++) {
			const struct hp_rec_group *g = &r.pareto[i].groups[k];
			ASSERT_EQ_INT(g->transport,
				      hp_pool_node_transport(
					  &pool->nodes[g->node], e.cat));
			ASSERT(g->transport != HP_NET_AUTO);
		}
	js = hp_rec_result_json(&r, &job, pool);
	ASSERT(js);
	ASSERT(strstr(js, "\"predicted_energy_interval_j\""));
	ASSERT(strstr(js, "\"grad_weight\""));
	{
		/* The compact form the service sends: the same document,
		 * without the indentation. */
		char *cs =
		    hp_rec_result_json_ex(&r, &job, pool, HP_REC_JSON_COMPACT);
		json_t *a = json_loads(js, 0, NULL),
		       *b = json_loads(cs, 0, NULL);
		ASSERT(cs && a && b);
		ASSERT(!strchr(cs, '\n') && strlen(cs) < strlen(js));
		ASSERT(json_equal(a, b));
		json_decref(a);
		json_decref(b);
		free(cs);
	}
	free(js);
	hp_rec_result_release(&r);

	/* A deadline nothing meets: the fastest, and by how much. */
	job.deadline_s = 60;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && !r.feasible);
	ASSERT(strstr(r.reason, "misses it by"));
	hp_rec_result_release(&r);

	/* Constraints that cannot be met are a reason, not an error. */
	job.deadline_s = 3600;
	job.device_type = "h200";
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(!r.found && strstr(r.reason, "no free h200"));
	hp_rec_result_release(&r);
	job.device_type = "v100";
	job.ndevices = 100;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(!r.found && strstr(r.reason, "not enough free devices"));
	hp_rec_result_release(&r);
	job.device_type = NULL;
	job.ndevices = 0;

	/* Batch bounds: the powers of two within are tried. */
	job.batch = 0;
	job.batch_min = 100;
	job.batch_max = 600;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found);
	ASSERT(r.choice.global_batch == 128 || r.choice.global_batch == 256 ||
	       r.choice.global_batch == 512);
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	env_free(&e);
}

/* Two V100 nodes cannot meet a tight deadline alone, nor can one A100
 * node: the choice mixes them, and the step times are equalised.  (3 free
 * A100s: 4 of them alone came within 3% of the deadline.) */
HP_TEST(recommend_chooses_a_mix_when_one_type_is_not_enough)
{
	struct hp_error err = {0};
	struct hp_rec_job job = {0};
	struct hp_rec_result r;
	struct hp_pool *pool;
	struct env e;
	const char *text =
	    "{\"nodes\": ["
	    "{\"name\": \"v\", \"devices\": [{\"type\": \"v100\", \"count\": "
	    "8}], \"cpu_cores\": 40, \"memory_gb\": 512, \"intra_bw_gbps\": "
	    "1200, \"net_bw_gbps\": 400, \"net_latency_us\": 3, "
	    "\"base_power_w\": 1000},"
	    "{\"name\": \"a\", \"devices\": [{\"type\": \"a100\", \"count\": "
	    "8, \"free\": 3}], \"cpu_cores\": 128, \"memory_gb\": 1024, "
	    "\"intra_bw_gbps\": 2400, \"net_bw_gbps\": 400, "
	    "\"net_latency_us\": 3, \"base_power_w\": 1500}]}";

	env_load(&e, "data/models/resnet50.train.onnx");
	pool = pool_text(text, &e, &err);
	ASSERT(pool);
	job.samples = 1281167;
	job.epochs = 1;
	job.batch = 256;
	job.confidence = 0.5; /* judged on the point: 0.92 x its time */
	/* What 8 V100s alone need, less 8% (the A100s are on the other node:
	 * the all-reduce across the two costs the mix about 10%). */
	job.deadline_s = 1e9;
	job.device_type = "v100";
	job.ndevices = 8;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found);
	{
		double t8 = r.choice.time_s;
		hp_rec_result_release(&r);
		job.device_type = NULL;
		job.ndevices = 0;
		job.deadline_s = 0.92 * t8;
	}
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && r.feasible);
	ASSERT_EQ_INT(r.choice.ntypes, 2);
	{
		double a = r.choice.types[0].step_time_s,
		       b = r.choice.types[1].step_time_s;
		fprintf(stderr, "mix: %d %s + %d %s, steps %.5g / %.5g s\n",
			r.choice.types[0].count, r.choice.types[0].type,
			r.choice.types[1].count, r.choice.types[1].type, a, b);
		ASSERT(fabs(a - b) / fmin(a, b) <= 0.05);
	}
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	env_free(&e);
}

/* ---- Inputs ---------------------------------------------------------- */

/* The global batches searched: the batch alone, or each power of two
 * within the bounds (edges included); none when the bounds hold none. */
HP_TEST(recommend_batches_are_the_powers_of_two_within)
{
	static const struct {
		int64_t batch, lo, hi;
		int n;
		int64_t first, last;
	} c[] = {
	    {300, 0, 0, 1, 300, 300},	     {0, 100, 600, 3, 128, 512},
	    {0, 128, 512, 3, 128, 512},	     {0, 1, 1, 1, 1, 1},
	    {0, 129, 255, 0, 0, 0},	     {0, 3, 3, 0, 0, 0},
	    {0, 1, 1 << 24, 25, 1, 1 << 24}, {0, 257, 511, 0, 0, 0},
	};
	int64_t bs[HP_REC_MAX_BATCHES];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct hp_rec_job job = {0};
		int n;
		job.batch = c[i].batch;
		job.batch_min = c[i].lo;
		job.batch_max = c[i].hi;
		n = hp_rec_batches(&job, bs);
		if (n != c[i].n)
			HP_FAIL("case %zu: %d batches, expected %d", i, n,
				c[i].n);
		if (n && (bs[0] != c[i].first || bs[n - 1] != c[i].last))
			HP_FAIL("case %zu: %lld..%lld", i, (long long)bs[0],
				(long long)bs[n - 1]);
		for (int k = 1; k < n; k++)
			ASSERT(bs[k] == 2 * bs[k - 1]);
	}
}

/* Bounds without a power of two, and a batch larger than the data, are
 * refused by name (they were searched at batch_min and run, before). */
HP_TEST(recommend_refuses_batches_it_cannot_search)
{
	struct hp_error err = {0};
	struct hp_rec_job job = {0};
	struct hp_rec_result r;
	struct hp_pool *pool;
	struct env e;
	const char *text =
	    "{\"nodes\": [{\"name\": \"v\", \"devices\": [{\"type\": \"v100\", "
	    "\"count\": 8}], \"cpu_cores\": 40, \"memory_gb\": 512, "
	    "\"intra_bw_gbps\": 1200, \"net_bw_gbps\": 100, "
	    "\"net_latency_us\": 3, \"base_power_w\": 1000}]}";

	env_load(&e, "data/models/resnet18.train.onnx");
	pool = pool_text(text, &e, &err);
	ASSERT(pool);
	job.samples = 12500;
	job.epochs = 1;
	job.deadline_s = 86400;
	job.batch_min = 129;
	job.batch_max = 255;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      HP_EINVAL);
	if (!strstr(err.msg, "batch bounds [129, 255] hold no power of two") ||
	    !strstr(err.msg, "the nearest are 128 and 256"))
		HP_FAIL("%s", err.msg);
	ASSERT(!r.found);
	job.batch_min = 3;
	job.batch_max = 3;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "nearest are 2 and 4"));
	job.batch_max = 0;
	job.batch = 16384;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "batch 16384 is more than samples 12500"));
	job.batch = 0;
	job.batch_min = 4096;
	job.batch_max = 16384;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "batch_max 16384 is more than samples 12500"));
	/* A bound that is a power of two is searched. */
	job.batch_min = 129;
	job.batch_max = 256;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && r.choice.global_batch == 256);
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	env_free(&e);
}

/* A type whose memory is not known is left out with the reason, not
 * taken to hold any batch (the estimator calls unknown memory "fits"). */
/* The input pipeline caps a GPU's step at local batch x one core's
 * seconds a sample / the cores each device has (a node's cpu_cores over
 * all its devices): 4 A100s on a node of 8 cores at 0.2 s a sample a core
 * take 64 x 0.2 / 2 = 6.4 s a step at local batch 64; with 4000 cores the
 * pipeline keeps up and nothing changes. */
HP_TEST(recommend_input_pipeline_caps_steps)
{
	struct hp_error err = {0};
	struct hp_rec_job job = {0};
	struct hp_rec_result r, free_r;
	struct hp_pool *pool;
	struct env e;
	char text[512];

	env_load(&e, "data/models/resnet50.train.onnx");
	job.samples = 1281167;
	job.steps = 100;
	job.batch = 256;
	job.deadline_s = 86400;
	job.device_type = "a100-80";
	job.ndevices = 4;
	for (int k = 0; k < 2; k++) {
		int cores = k ? 4000 : 8;
		snprintf(text, sizeof(text),
			 "{\"nodes\": [{\"name\": \"n\", \"devices\": "
			 "[{\"type\": \"a100-80\", \"count\": 4}], "
			 "\"cpu_cores\": %d, \"memory_gb\": 512, "
			 "\"intra_bw_gbps\": 600, \"net_bw_gbps\": 25, "
			 "\"net_latency_us\": 5, \"base_power_w\": 300}]}",
			 cores);
		pool = pool_text(text, &e, &err);
		ASSERT(pool);
		job.input_sample_s = 0;
		ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job,
					   &free_r, &err),
			      0);
		job.input_sample_s = 0.2;
		ASSERT_EQ_INT(
		    hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err), 0);
		ASSERT(r.found && free_r.found);
		ASSERT_EQ_INT(r.choice.ntypes, 1);
		ASSERT_EQ_INT(r.choice.types[0].local_max, 64);
		if (k == 0) {
			ASSERT(free_r.choice.types[0].step_time_s < 6.4);
			ASSERT_NEAR(r.choice.types[0].step_time_s, 6.4, 1e-9);
			ASSERT(r.choice.power_w < free_r.choice.power_w);
		} else {
			ASSERT(r.choice.types[0].step_time_s ==
			       free_r.choice.types[0].step_time_s);
		}
		hp_rec_result_release(&r);
		hp_rec_result_release(&free_r);
		hp_pool_free(pool);
	}
	job.input_sample_s = -1;
	pool = pool_text(text, &e, &err);
	ASSERT(pool);
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "input_sample_s"));
	hp_pool_free(pool);
	env_free(&e);
}

HP_TEST(recommend_leaves_out_a_type_of_unknown_memory)
{
	static const char csv[] =
	    "name,kind,fp32_tflops,mem_gb,mem_bw_gbs,tdp_w,idle_w\n"
	    "cpu,cpu,2,,,300,100\n"
	    "v100,gpu,15.7,16,900,300,40\n";
	struct hp_error err = {0};
	struct hp_rec_job job = {0};
	struct hp_rec_result r;
	struct hp_catalog *cat;
	struct hp_pool *pool;
	struct env e;
	const char *text =
	    "{\"nodes\": [{\"name\": \"c\", \"devices\": [{\"type\": \"cpu\", "
	    "\"count\": 1}], \"cpu_cores\": 40, \"memory_gb\": 512, "
	    "\"intra_bw_gbps\": 100, \"net_bw_gbps\": 25, "
	    "\"net_latency_us\": 15, \"base_power_w\": 300}]}";
	bool said = false;

	env_load(&e, "data/models/resnet18.train.onnx");
	cat = hp_catalog_parse(csv, sizeof(csv) - 1, "m.csv", &err);
	if (!cat)
		HP_FAIL("%s", err.msg);
	ASSERT(isnan(cat->types[0].mem_gb));
	pool = hp_pool_parse(text, strlen(text), "m.json", cat, &err);
	ASSERT(pool);
	job.samples = 12500;
	job.epochs = 1;
	job.batch = 12500;
	job.deadline_s = 86400;
	ASSERT_EQ_INT(hp_recommend(e.est, cat, &e.w1, pool, &job, &r, &err), 0);
	ASSERT(!r.found);
	for (int i = 0; i < r.nnotes; i++)
		said |= strstr(r.notes[i], "memory not known") != NULL;
	for (int i = 0; i < r.nrejected; i++)
		said |=
		    strstr(r.rejected[i].reason, "memory not known") != NULL;
	if (!said)
		HP_FAIL("no 'memory not known' (reason: %s)", r.reason);
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	hp_catalog_free(cat);
	env_free(&e);
}

HP_TEST(recommend_parse_duration)
{
	struct hp_error err = {0};
	double s;
	struct {
		const char *in;
		double want;
	} ok[] = {{"90m", 5400},  {"2h", 7200},	      {"1h30m", 5400},
		  {"45s", 45},	  {"3600", 3600},     {"1d", 86400},
		  {"1.5h", 5400}, {"1d2h3m4s", 93784}};
	const char *bad[] = {
	    "",	    "-5m",  "0",   "0h",  "abc",	  "5x",	  "m",
	    "1m2h", "1h1h", "1e3", "5m ", "99999999999d", "1..2h"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ASSERT_EQ_INT(hp_parse_duration(ok[i].in, &s, &err), 0);
		ASSERT_NEAR(s, ok[i].want, 1e-12);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT(hp_parse_duration(bad[i], &s, &err) != 0);
		/* the value named, for the caller to prefix with its
		 * option */
		ASSERT(err.msg[0] == '\'' &&
		       !strncmp(err.msg + 1, bad[i],
				strlen(bad[i]) > 20 ? 20 : strlen(bad[i])));
	}
	ASSERT_EQ_INT(hp_parse_duration("99999999999d", &s, &err), HP_ERANGE);
}

HP_TEST(recommend_workload_at_batch_matches_analysis)
{
	struct hp_error err = {0};
	struct env e;

	env_load(&e, "data/models/resnet50.train.onnx");
	for (int64_t b = 2; b <= 96; b *= 3) {
		struct hp_workload wa, wb;
		ASSERT_EQ_INT(
		    hp_workload_from_graph(e.g, b, NULL, 0, &wa, &err), 0);
		ASSERT_EQ_INT(hp_workload_at_batch(&e.w1, b, &wb, &err), 0);
		ASSERT_EQ_INT(wa.nlayers, wb.nlayers);
		ASSERT_EQ_INT(wb.batch, b);
		ASSERT_NEAR(wb.flops_total, wa.flops_total, 1e-12);
		for (int i = 0; i < wa.nlayers; i++) {
			ASSERT_EQ_INT(wa.cls[i], wb.cls[i]);
			ASSERT_NEAR(wb.flops[i], wa.flops[i], 1e-12);
			/* Normalisation layers read per-channel tensors that
			 * do not grow with the batch but scale here: a few
			 * percent of their traffic at most. */
			ASSERT(fabs(wb.bytes[i] / wa.bytes[i] - 1) < 0.04);
			ASSERT_NEAR(wb.wbytes[i], wa.wbytes[i], 1e-12);
			ASSERT_NEAR(wb.width[i], wa.width[i], 1e-12);
			/* (a norm layer's per-channel outputs scale too: 7%
			 * of a 7x7 map's bytes at batch 6) */
			ASSERT(fabs(wb.in_bytes[i] - wa.in_bytes[i]) <=
			       0.1 * wa.in_bytes[i]);
			/* (a loss's scalar output is scaled too: 4 bytes) */
			if (!(fabs(wb.out_bytes[i] - wa.out_bytes[i]) <=
			      0.1 * wa.out_bytes[i] + 4.0 * (double)b))
				HP_FAIL("layer %d (class %d): out bytes %g at "
					"batch 1 x %lld, %g analysed",
					i, wa.cls[i], wb.out_bytes[i],
					(long long)b, wa.out_bytes[i]);
			ASSERT(wb.cin[i] == wa.cin[i] &&
			       wb.cout[i] == wa.cout[i] &&
			       wb.hw[i] == wa.hw[i] &&
			       wb.after_bn[i] == wa.after_bn[i]);
			/* the copy owns its arrays */
			ASSERT(wb.cin != e.w1.cin && wb.hw != e.w1.hw);
		}
		ASSERT_EQ_INT(wb.activations_bytes, wa.activations_bytes);
		ASSERT_EQ_INT(wb.input_bytes, wa.input_bytes);
		ASSERT_EQ_INT(wb.peak_act_bytes, wa.peak_act_bytes);
		ASSERT_EQ_INT(wb.params, wa.params);
		ASSERT_EQ_INT(wb.state_bytes, wa.state_bytes);
		/* What the estimator makes of it: the same memory, the
		 * step time within 0.5% on every type the pool uses. */
		for (int t = 0; t < 4; t++) {
			static const char *const ty[] = {"v100", "a100-80",
							 "t4", "h100-sxm"};
			struct hp_prediction pa, pb;
			ASSERT_EQ_INT(hp_estimator_predict(e.est, e.cat, &wa,
							   ty[t], 1, -1, &pa,
							   &err),
				      0);
			ASSERT_EQ_INT(hp_estimator_predict(e.est, e.cat, &wb,
							   ty[t], 1, -1, &pb,
							   &err),
				      0);
			ASSERT_EQ_INT(pb.peak_memory_bytes,
				      pa.peak_memory_bytes);
			ASSERT(fabs(pb.step_time_s / pa.step_time_s - 1) <
			       0.005);
		}
		hp_workload_release(&wa);
		hp_workload_release(&wb);
	}
	/* Refused: not at batch 1, a batch out of range. */
	{
		struct hp_workload w2, x;
		ASSERT_EQ_INT(hp_workload_at_batch(&e.w1, 2, &w2, &err), 0);
		ASSERT_EQ_INT(hp_workload_at_batch(&w2, 4, &x, &err),
			      HP_EINVAL);
		ASSERT_EQ_INT(hp_workload_at_batch(&e.w1, 0, &x, &err),
			      HP_ERANGE);
		hp_workload_release(&w2);
	}
	env_free(&e);
}

/* ---- Confidence ------------------------------------------------------ */

/* One node of 4 V100s and a job held to them: one configuration, whose
 * deadline is judged on a quantile of its predicted time. */
static void one_config(struct env *e, struct hp_pool **pool,
		       struct hp_rec_job *job)
{
	struct hp_error err = {0};
	const char *text =
	    "{\"nodes\": [{\"name\": \"v\", \"devices\": [{\"type\": "
	    "\"v100\", \"count\": 4}], \"cpu_cores\": 40, \"memory_gb\": "
	    "512, \"intra_bw_gbps\": 1200, \"net_bw_gbps\": 100, "
	    "\"net_latency_us\": 3, \"base_power_w\": 800}]}";

	env_load(e, "data/models/resnet18.train.onnx");
	*pool = pool_text(text, e, &err);
	ASSERT(*pool);
	memset(job, 0, sizeof(*job));
	job->samples = 1281167;
	job->epochs = 2;
	job->batch = 256;
	job->device_type = "v100";
	job->ndevices = 4;
	job->deadline_s = 1e9;
}

HP_TEST(recommend_deadline_judged_on_the_quantile)
{
	struct hp_error err = {0};
	struct hp_rec_job job;
	struct hp_rec_result r;
	struct hp_pool *pool;
	struct env e;
	double pt, q90, mid;

	one_config(&e, &pool, &job);
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && r.feasible);
	ASSERT(r.confidence == HP_REC_CONFIDENCE);
	pt = r.choice.time_s;
	q90 = r.choice.time_judged_s;
	/* The judged time is above the point, within the interval's top
	 * (the all-reduce's own spread comes on top of the compute's). */
	ASSERT(q90 > pt);
	ASSERT(r.comm_log_q90 >= HP_REC_COMM_LOG_Q90);
	ASSERT(q90 <= r.choice.time_hi_s * exp(r.comm_log_q90) + 1e-9);
	hp_rec_result_release(&r);
	/* A deadline between the point and the 90th percentile: refused at
	 * 0.9, met at 0.5 (where the judged time is the point). */
	mid = (pt + q90) / 2;
	job.deadline_s = mid;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && !r.feasible && !r.choice.meets_deadline);
	ASSERT(r.choice.deadline_probability > 0.5 &&
	       r.choice.deadline_probability < 0.9);
	hp_rec_result_release(&r);
	job.confidence = 0.5;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(r.found && r.feasible && r.choice.meets_deadline);
	ASSERT(fabs(r.choice.time_judged_s - pt) <= 1e-9 * pt);
	ASSERT(fabs(r.choice.time_s - pt) <= 1e-9 * pt);
	hp_rec_result_release(&r);
	/* Out of (0, 1): refused by name. */
	job.confidence = 1;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "confidence"));
	hp_pool_free(pool);
	env_free(&e);
}

/* Four nodes of 4 T4s over 50 Gbit/s, the transport as given. */
static void transport_run(const struct env *e, const char *transport,
			  const char *type, struct hp_rec_result *r)
{
	struct hp_error err = {0};
	struct hp_rec_job job = {0};
	struct hp_pool *pool;
	char text[2048], tr[64] = "";
	int len = 0;

	if (transport)
		snprintf(tr, sizeof(tr), ", \"net_transport\": \"%s\"",
			 transport);
	len +=
	    snprintf(text + len, sizeof(text) - (size_t)len, "{\"nodes\": [");
	for (int i = 0; i < 4; i++)
		len += snprintf(
		    text + len, sizeof(text) - (size_t)len,
		    "%s{\"name\": \"n%d\", \"devices\": [{\"type\": \"%s\", "
		    "\"count\": 4}], \"cpu_cores\": 32, \"memory_gb\": 256, "
		    "\"intra_bw_gbps\": 128, \"net_bw_gbps\": 50, "
		    "\"net_latency_us\": 10, \"base_power_w\": 300%s}",
		    i ? ", " : "", i, type, tr);
	snprintf(text + len, sizeof(text) - (size_t)len, "]}");
	pool = pool_text(text, e, &err);
	ASSERT(pool);
	job.samples = 50000;
	job.epochs = 1;
	job.batch = 1024;
	job.ndevices = 16; /* all four nodes */
	job.deadline_s = 1e7;
	ASSERT_EQ_INT(hp_recommend(e->est, e->cat, &e->w1, pool, &job, r, &err),
		      0);
	ASSERT(r->found && r->choice.nnodes == 4);
	hp_pool_free(pool);
}

HP_TEST(recommend_transport_sets_the_all_reduce)
{
	struct hp_rec_result a, s, t, d;
	struct env e;
	double x;

	env_load(&e, "data/models/resnet50.train.onnx");
	transport_run(&e, NULL, "t4", &a);
	transport_run(&e, "socket", "t4", &s);
	transport_run(&e, "tcp", "t4", &t);
	transport_run(&e, "rdma", "t4", &d);
	/* A GPU node that does not say is NCCL over sockets. */
	ASSERT_NEAR(a.choice.inter_time_s, s.choice.inter_time_s, 1e-12);
	ASSERT_NEAR(a.comm_log_q90, HP_COMM_SOCKET_LOG_Q90, 1e-12);
	ASSERT_NEAR(t.comm_log_q90, HP_COMM_TCP_LOG_Q90, 1e-12);
	ASSERT_NEAR(d.comm_log_q90, HP_COMM_RDMA_LOG_Q90, 1e-12);
	/* 102 MB of ResNet-50 gradients, mostly bandwidth-bound: the times
	 * follow the shares of the line rate (0.90 / 0.43) less the
	 * messages' part, as DDP's buckets written out again give them;
	 * RDMA's cheap messages more than make up its 0.84. */
	x = s.choice.inter_time_s / t.choice.inter_time_s;
	fprintf(stderr,
		"transports: all-reduce socket / tcp %.3f, rdma / tcp "
		"%.3f\n",
		x, d.choice.inter_time_s / t.choice.inter_time_s);
	{
		double g = 4.0 * (double)e.w1.params, bw = 50e9 / 8;
		double rt = ref_inter(bw, 10e-6, HP_COMM_NET_EFFICIENCY,
				      HP_COMM_NET_MSG_S, 4, g);
		ASSERT_NEAR(t.choice.inter_time_s, rt, 1e-9 * rt);
		ASSERT_NEAR(x,
			    ref_inter(bw, 10e-6, HP_COMM_SOCKET_EFFICIENCY,
				      HP_COMM_SOCKET_MSG_S, 4, g) /
				rt,
			    1e-9);
		ASSERT_NEAR(d.choice.inter_time_s / rt,
			    ref_inter(bw, 10e-6, HP_COMM_RDMA_EFFICIENCY,
				      HP_COMM_RDMA_MSG_S, 4, g) /
				rt,
			    1e-9);
	}
	ASSERT(x > 1.4 &&
	       x < HP_COMM_NET_EFFICIENCY / HP_COMM_SOCKET_EFFICIENCY + 1e-9);
	ASSERT(d.choice.inter_time_s < t.choice.inter_time_s);
	/* The judged time carries the transport's spread. */
	ASSERT(s.choice.time_judged_s > t.choice.time_judged_s);
	hp_rec_result_release(&a);
	hp_rec_result_release(&s);
	hp_rec_result_release(&t);
	hp_rec_result_release(&d);
	env_free(&e);
}

HP_TEST(recommend_deadline_probability_is_monotone)
{
	struct hp_error err = {0};
	struct hp_rec_job job;
	struct hp_rec_result r;
	struct hp_pool *pool;
	struct env e;
	double pt, q90, prev = -1;
	int n = 0;

	one_config(&e, &pool, &job);
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	pt = r.choice.time_s;
	q90 = r.choice.time_judged_s;
	hp_rec_result_release(&r);
	for (double f = 0.5; f <= 3; f *= 1.05, n++) {
		double p;
		job.deadline_s = f * pt;
		ASSERT_EQ_INT(
		    hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err), 0);
		ASSERT(r.found);
		p = r.choice.deadline_probability;
		ASSERT(p >= 0 && p <= 1);
		if (!(p >= prev))
			HP_FAIL("deadline %.4g s: probability %.4f after %.4f",
				job.deadline_s, p, prev);
		/* Meets the deadline exactly when the probability reaches
		 * the confidence. */
		ASSERT(r.choice.meets_deadline == (p >= 0.9 - 1e-6) ||
		       fabs(p - 0.9) < 1e-6);
		prev = p;
		hp_rec_result_release(&r);
	}
	ASSERT(prev > 0.99);
	/* At the point, one half; at the judged 90th percentile, 0.9. */
	job.deadline_s = pt;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(fabs(r.choice.deadline_probability - 0.5) < 1e-3);
	hp_rec_result_release(&r);
	job.deadline_s = q90;
	ASSERT_EQ_INT(hp_recommend(e.est, e.cat, &e.w1, pool, &job, &r, &err),
		      0);
	ASSERT(fabs(r.choice.deadline_probability - 0.9) < 1e-3);
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	env_free(&e);
}
