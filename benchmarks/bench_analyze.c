/*
 * bench_analyze.c - how long model analysis takes: loading (ONNX parse)
 * and analysing (shape propagation + features), median of repeated runs.
 * Usage: bench_analyze [--json] MODEL... (default: the shipped resnet50)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/model.h"

#define REPS 41

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *def[] = {"data/models/resnet50.train.onnx"};
	const char **models = def;
	int nmodels = 1, first = 1;
	bool json = false;

	if (argc > 1 && !strcmp(argv[1], "--json")) {
		json = true;
		first = 2;
	}
	if (argc > first) {
		models = (const char **)argv + first;
		nmodels = argc - first;
	}
	for (int m = 0; m < nmodels; m++) {
		double total[REPS], an[REPS];
		struct hp_error err = {0};

		for (int r = 0; r < REPS; r++) {
			double t0 = hp_now_s(), t1;
			struct hp_graph *g = hp_model_load(models[m], &err);
			struct hp_features f;

			if (!g) {
				fprintf(stderr, "bench_analyze: '%s': %s\n",
					models[m], err.msg);
				return 2;
			}
			t1 = hp_now_s();
			if (hp_analyze(g, 32, NULL, 0, &f, &err)) {
				fprintf(stderr, "bench_analyze: '%s': %s\n",
					models[m], err.msg);
				return 2;
			}
			an[r] = hp_now_s() - t1;
			total[r] = hp_now_s() - t0;
			hp_features_release(&f);
			hp_graph_free(g);
		}
		qsort(total, REPS, sizeof(double), cmp_double);
		qsort(an, REPS, sizeof(double), cmp_double);
		if (json)
			printf(
			    "{\"bench\":\"analyze\",\"model\":\"%s\","
			    "\"load_and_analyze_ms\":%.3f,\"analyze_ms\":%.3f,"
			    "\"goal_ms\":50}\n",
			    models[m], total[REPS / 2] * 1e3,
			    an[REPS / 2] * 1e3);
		else
			printf("analyze %-50s load+analyze %8.3f ms  analyze "
			       "%8.3f ms  (median of %d; goal < 50 ms)\n",
			       models[m], total[REPS / 2] * 1e3,
			       an[REPS / 2] * 1e3, REPS);
	}
	return 0;
}
