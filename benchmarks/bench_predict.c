/*
 * bench_predict.c - time one prediction (hp_estimator_predict) after the
 * estimator and the model are loaded: median over many calls.  Goal:
 * under 1000 us.  Usage: bench_predict [ESTIMATOR [MODEL [DEVICE]]]
 * (defaults: the shipped default estimator, ResNet-50, v100).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/estimate.h"

#ifndef HP_BENCH_ROOT
#define HP_BENCH_ROOT "."
#endif

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *estp = argc > 1 ? argv[1] : "data/estimators/default.json";
	const char *model =
	    argc > 2 ? argv[2] : "data/models/resnet50.train.onnx";
	const char *dev = argc > 3 ? argv[3] : "v100";
	enum { CALLS = 2000, BATCH = 100 };
	static double us[CALLS / BATCH];
	struct hp_error err = {0};
	struct hp_catalog *cat;
	struct hp_estimator *est;
	struct hp_graph *g;
	struct hp_workload w;
	struct hp_prediction p;
	double sink = 0;

	cat = hp_catalog_load("data/devices.csv", &err);
	if (!cat) {
		fprintf(stderr,
			"bench_predict: %s (run from the source tree)\n",
			err.msg);
		return 1;
	}
	est = hp_estimator_load(estp, &err);
	if (!est) {
		fprintf(stderr, "bench_predict: %s\n", err.msg);
		return 1;
	}
	g = hp_model_load(model, &err);
	if (!g || hp_workload_from_graph(g, 64, NULL, 0, &w, &err)) {
		fprintf(stderr, "bench_predict: '%s': %s\n", model, err.msg);
		return 1;
	}
	for (int r = 0; r < CALLS / BATCH; r++) {
		double t0 = hp_now_s();
		for (int i = 0; i < BATCH; i++) {
			if (hp_estimator_predict(est, cat, &w, dev, 1 + i % 2,
						 -1, &p, &err)) {
				fprintf(stderr, "bench_predict: %s\n", err.msg);
				return 1;
			}
			sink += p.step_time_s;
		}
		us[r] = (hp_now_s() - t0) / BATCH * 1e6;
	}
	qsort(us, CALLS / BATCH, sizeof(us[0]), cmp);
	printf("predict %s on %s (%d layers): median %.1f us per prediction "
	       "(goal < 1000 us)%s\n",
	       model, dev, w.nlayers, us[CALLS / BATCH / 2],
	       sink > 0 ? "" : " ?");
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return 0;
}
