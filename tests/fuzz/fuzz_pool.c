/*
 * fuzz_pool.c - libFuzzer target for pool files (JSON): any bytes must
 * parse or fail cleanly with a message that starts "pool"; a pool that
 * parses has unique node names free of control characters, catalog ids,
 * free <= count and every number within its range, and a small one goes
 * through the recommender's search (synthetic step-time tables) whose
 * choice uses only free devices and sums to the batch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/recommend/recommend_int.h"
#include "hetpool/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char catalog_csv[] =
    "name,kind,vendor,arch,product,fp32_tflops,tf32_tflops,fp16_tflops,"
    "mem_gb,mem_bw_gbs,tdp_w,idle_w,devices_per_board,aliases,src_compute,"
    "src_memory,src_power,src_idle\n"
    "cpu,cpu,,,host,1,,,64,,,,1,,a,b,c,d\n"
    "v100,gpu,nvidia,volta,Tesla V100 SXM2 16GB,15.7,,125,16,900,300,40,1,"
    "Tesla V100,a,b,c,d\n"
    "t4,gpu,nvidia,turing,Tesla T4,8.1,,65,16,320,70,10,1,T4,a,b,c,d\n"
    "a100-80,gpu,nvidia,ampere,A100 80GB,19.5,156,312,80,2039,400,60,1,"
    "a100,a,b,c,d\n";

enum { B = 32 };
static const char *const names[3] = {"v100", "t4", "a100-80"};

/* Step time a + b x local batch, power rising with it; memory caps. */
static void fake_model(struct hp__rec_model *m)
{
	static double t[3][B + 1], lo[3][B + 1], hi[3][B + 1], p[3][B + 1];
	static struct hp__rec_tt tt[3];
	for (int i = 0; i < 3; i++) {
		snprintf(tt[i].name, sizeof(tt[i].name), "%s", names[i]);
		tt[i].ok = true;
		tt[i].local_fit_max = tt[i].local_max = i == 1 ? 12 : B;
		tt[i].step_s = t[i];
		tt[i].step_lo_s = lo[i];
		tt[i].step_hi_s = hi[i];
		tt[i].power_w = p[i];
		tt[i].power_min_w = INFINITY;
		for (int b = 1; b <= B; b++) {
			t[i][b] = 0.01 * (i + 1) + 0.002 * b / (i + 1);
			lo[i][b] = 0.9 * t[i][b];
			hi[i][b] = 1.2 * t[i][b];
			p[i][b] = 50 + 100 * i + 3.0 * b;
			if (p[i][b] < tt[i].power_min_w)
				tt[i].power_min_w = p[i][b];
		}
	}
	m->tt = tt;
	m->ntypes = 3;
	m->grad_bytes = 1e8;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hp_catalog *cat;
	static struct hp__rec_model m;
	struct hp_error err = {0};
	struct hp_pool *p;
	long total = 0;

	if (!cat) {
		cat = hp_catalog_parse(catalog_csv, sizeof(catalog_csv) - 1,
				       "fuzz.csv", &err);
		if (!cat)
			abort();
		fake_model(&m);
	}
	p = hp_pool_parse((const char *)data, size, "fuzz.json", cat, &err);
	if (!p) {
		if (err.code != HP_ENOMEM && strncmp(err.msg, "pool", 4) != 0) {
			fprintf(stderr, "error without 'pool': %s\n", err.msg);
			abort();
		}
		return 0;
	}
	for (int i = 0; i < p->n; i++) {
		const struct hp_pool_node *nd = &p->nodes[i];
		if (hp_str_has_control(nd->name) || nd->cpu_cores < 1 ||
		    !(nd->memory_gb > 0) || !(nd->intra_bw_gbps > 0) ||
		    !(nd->net_bw_gbps > 0) || nd->net_bw_gbps > 10000 ||
		    !(nd->net_latency_us >= 0) || !(nd->base_power_w >= 0) ||
		    nd->base_power_w > 100000)
			abort();
		for (int j = 0; j < i; j++)
			if (!strcmp(p->nodes[j].name, nd->name))
				abort();
		for (int d = 0; d < nd->ndevs; d++) {
			if (nd->devs[d].free < 0 ||
			    nd->devs[d].free > nd->devs[d].count ||
			    hp_catalog_find(cat, nd->devs[d].type) == NULL)
				abort();
			total += nd->devs[d].free;
		}
	}
	if (p->n <= 12 && total <= 40) {
		struct hp__rec_params q = {0};
		struct hp_rec_result r;
		q.global_batch = B;
		q.steps = 1000;
		q.deadline_s = 60 + 1000 * 0.05;
		q.only_type = -1;
		q.max_mix = 2;
		if (hp__rec_search(&m, p, &q, &r, NULL, &err) == 0) {
			if (r.found) {
				int64_t sum = 0;
				for (int i = 0; i < r.choice.ngroups; i++)
					sum += r.choice.groups[i].count *
					       r.choice.groups[i].local_batch;
				if (sum != B)
					abort();
				if (r.feasible &&
				    r.choice.time_s > q.deadline_s)
					abort();
			}
			hp_rec_result_release(&r);
		}
	}
	hp_pool_free(p);
	return 0;
}
