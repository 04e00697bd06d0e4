/*
 * bench_recommend.c - time hp_recommend() after the estimator and the
 * model are loaded, on synthetic pools of N nodes x 8 GPUs over six types
 * (v100, a100-80, h100-sxm, t4, a10, l40s) with varied free counts:
 * median over repeated calls per pool size, each building the per-type
 * tables (estimator calls) and searching.  Goal: 10 ms at
 * 2000 x 8.  Usage: bench_recommend [MODEL [BATCH [DEADLINE_S [KIND]]]]
 * KIND: "distinct", "two" or "distinct,two".
 * BENCH_REPS calls per size (default 21).
 * ("distinct": every node's links and base power differ a little, so
 * nodes do not group into classes: the search's worst case; "two":
 * every other node also holds 4 GPUs of the next type, so a pair can
 * share nodes.)  BENCH_NODES=10,2000 picks the pool sizes; BENCH_FRONT=K
 * adds the exact time-energy front at K deadlines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/estimate.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"

static uint64_t rs = 42;
static int irnd(int n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (int)(rs % (uint64_t)n);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A pool of n nodes, each 8 GPUs of one type with a server like it. */
static struct hp_pool *make_pool(int n, int distinct, int two)
{
	static const struct {
		const char *type;
		double intra, net, lat, base;
	} sku[6] = {
	    {"v100", 1200, 100, 3, 1000},     {"a100-80", 2400, 200, 2, 1500},
	    {"h100-sxm", 3600, 400, 2, 2000}, {"t4", 128, 25, 15, 350},
	    {"a10", 256, 100, 5, 500},	      {"l40s", 512, 200, 4, 800}};
	struct hp_pool *p = calloc(1, sizeof(*p));
	char name[32];

	if (!p || !(p->nodes = calloc((size_t)n, sizeof(*p->nodes))))
		abort();
	/* The same pool for a size whatever the sizes before it. */
	rs = 42 + (uint64_t)n * 0x9e3779b97f4a7c15ull;
	p->n = n;
	for (int i = 0; i < n; i++) {
		struct hp_pool_node *nd = &p->nodes[i];
		int s = i % 6;
		snprintf(name, sizeof(name), "node-%05d", i);
		nd->name = strdup(name);
		nd->devs = calloc(2, sizeof(*nd->devs));
		if (!nd->name || !nd->devs)
			abort();
		nd->ndevs = 1;
		if (two && i % 2) {
			/* Every other node also holds 4 of the next type. */
			nd->ndevs = 2;
			snprintf(nd->devs[1].type, sizeof(nd->devs[1].type),
				 "%s", sku[(s + 1) % 6].type);
			nd->devs[1].count = 4;
			nd->devs[1].free = irnd(5);
		}
		snprintf(nd->devs[0].type, sizeof(nd->devs[0].type), "%s",
			 sku[s].type);
		nd->devs[0].count = 8;
		/* Busy pools: most nodes partly taken, some idle, some
		 * full. */
		nd->devs[0].free = irnd(9);
		nd->cpu_cores = 64;
		nd->memory_gb = 512;
		nd->intra_bw_gbps = sku[s].intra;
		nd->net_bw_gbps = sku[s].net;
		nd->net_latency_us = sku[s].lat;
		nd->base_power_w = sku[s].base;
		if (distinct) {
			/* Every node its own: links and base power vary
			 * by a few percent, so no two nodes form a class. */
			nd->intra_bw_gbps *= 0.95 + 0.1 * irnd(1000) / 1000.0;
			nd->net_bw_gbps *= 0.95 + 0.1 * irnd(1000) / 1000.0;
			nd->base_power_w *= 0.95 + 0.1 * irnd(1000) / 1000.0;
		}
	}
	return p;
}

int main(int argc, char **argv)
{
	const char *model =
	    argc > 1 ? argv[1] : "data/models/resnet50.train.onnx";
	int64_t batch = argc > 2 ? atoll(argv[2]) : 512;
	double deadline = argc > 3 ? atof(argv[3]) : 4 * 3600.0;
	int distinct = argc > 4 && strstr(argv[4], "distinct");
	int two = argc > 4 && strstr(argv[4], "two");
	int sizes[16] = {10, 100, 1000, 2000, 4000}, nsizes = 5;
	int reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 21;
	struct hp_error err = {0};
	struct hp_catalog *cat;
	struct hp_estimator *est;
	struct hp_graph *g;
	struct hp_workload w;
	struct hp_rec_job job = {0};

	cat = hp_catalog_load("data/devices.csv", &err);
	est = cat ? hp_estimator_load("data/estimators/default.json", &err)
		  : NULL;
	if (!cat || !est) {
		fprintf(stderr,
			"bench_recommend: %s (run from the source "
			"tree)\n",
			err.msg);
		return 1;
	}
	if (reps < 1 || reps > 101)
		reps = 21;
	if (getenv("BENCH_NODES")) {
		/* A comma-separated list of pool sizes instead. */
		char *e = getenv("BENCH_NODES"), *end;
		nsizes = 0;
		while (*e && nsizes < 16) {
			long v = strtol(e, &end, 10);
			if (end == e || v < 1 || v > 100000) {
				fprintf(stderr,
					"bench_recommend: BENCH_NODES: "
					"expected sizes like 10,2000\n");
				return 2;
			}
			sizes[nsizes++] = (int)v;
			e = *end == ',' ? end + 1 : end;
		}
	}
	g = hp_model_load(model, &err);
	if (!g || hp_workload_from_graph(g, 1, NULL, 0, &w, &err)) {
		fprintf(stderr, "bench_recommend: '%s': %s\n", model, err.msg);
		return 1;
	}
	job.samples = 1281167;
	job.epochs = 10;
	job.batch = batch;
	job.deadline_s = deadline;
	/* BENCH_FRONT=K: the exact front at K deadlines too (the CLI's
	 * default is 5; the library's 0). */
	job.front = getenv("BENCH_FRONT") ? atoi(getenv("BENCH_FRONT")) : 0;
	printf("model %s, global batch %lld, %lld epochs of %lld samples, "
	       "deadline %.0f s\n",
	       model, (long long)batch, (long long)job.epochs,
	       (long long)job.samples, deadline);
	printf("%8s %8s %10s %10s %10s  %s\n", "nodes", "gpus", "median_ms",
	       "min_ms", "max_ms", "choice");
	for (int k = 0; k < nsizes; k++) {
		struct hp_pool *p = make_pool(sizes[k], distinct, two);
		double ms[101];
		long gpus = 0;
		char choice[160] = "";
		for (int i = 0; i < p->n; i++)
			for (int d = 0; d < p->nodes[i].ndevs; d++)
				gpus += p->nodes[i].devs[d].free;
		for (int r = 0; r < reps; r++) {
			struct hp_rec_result res;
			double t0 = hp_now_s();
			if (hp_recommend(est, cat, &w, p, &job, &res, &err)) {
				fprintf(stderr, "bench_recommend: %s\n",
					err.msg);
				return 1;
			}
			ms[r] = (hp_now_s() - t0) * 1e3;
			if (r == 0 && res.found) {
				const struct hp_rec_config *c = &res.choice;
				int o =
				    snprintf(choice, sizeof(choice), "%s ",
					     res.feasible ? "meets" : "misses");
				for (int j = 0; j < c->ntypes && o < 100; j++)
					o += snprintf(
					    choice + o,
					    sizeof(choice) - (size_t)o,
					    "%s%d x %s", j ? " + " : "",
					    c->types[j].count,
					    c->types[j].type);
				snprintf(choice + o, sizeof(choice) - (size_t)o,
					 " on %d nodes, %.0f s, %.1f kWh "
					 "(%lld evaluated)",
					 c->nnodes, c->time_s,
					 c->energy_j / 3.6e6,
					 (long long)res.evaluated);
			}
			hp_rec_result_release(&res);
		}
		qsort(ms, (size_t)reps, sizeof(ms[0]), cmp);
		printf("%8d %8ld %10.3f %10.3f %10.3f  %s\n", sizes[k], gpus,
		       ms[reps / 2], ms[0], ms[reps - 1], choice);
		fflush(stdout);
		hp_pool_free(p);
	}
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return 0;
}
