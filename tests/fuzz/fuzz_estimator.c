/*
 * fuzz_estimator.c - libFuzzer target for estimator JSON: any bytes must
 * load or fail cleanly; an estimator that loads must predict without
 * crashing and give an interval around its step time, and must survive
 * a save/load round trip.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/estimate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char catalog_csv[] =
    "name,kind,vendor,arch,product,fp32_tflops,tf32_tflops,fp16_tflops,"
    "mem_gb,mem_bw_gbs,tdp_w,idle_w,devices_per_board,aliases,src_compute,"
    "src_memory,src_power,src_idle\n"
    "cpu,cpu,,,host,1,,,64,,,,1,,a,b,c,d\n"
    "v100,gpu,nvidia,volta,Tesla V100 SXM2 16GB,15.7,,125,16,900,300,40,1,"
    ",a,b,c,d\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hp_catalog *cat;
	struct hp_error err = {0};
	struct hp_estimator *est, *back;
	struct hp_workload w;
	unsigned char cls[3] = {HP_EST_CONV, HP_EST_OTHER, HP_EST_FC};
	double flops[3] = {1e9, 1e6, 1e7}, bytes[3] = {1e7, 1e7, 1e6};
	double wbytes[3] = {1e5, 0, 1e6}, width[3] = {16, 16, 10};
	char *text;

	if (!cat)
		cat = hp_catalog_parse(catalog_csv, strlen(catalog_csv), "fuzz",
				       &err);
	if (!cat)
		abort();
	est = hp_estimator_loads((const char *)data, size, &err);
	if (!est)
		return 0;
	memset(&w, 0, sizeof(w));
	w.batch = 8;
	w.nlayers = 3;
	w.cls = cls;
	w.flops = flops;
	w.bytes = bytes;
	w.wbytes = wbytes;
	w.width = width;
	w.flops_total = 1.017e9;
	w.params = 1000;
	w.state_bytes = 12000;
	w.activations_bytes = 1 << 20;
	w.conv_layers = w.fc_layers = 1;
	w.filters = 16;
	w.fc_width = 10;
	w.input_size = 32;
	for (int f = 0; f < 3; f++) {
		static const char *const devs[] = {"cpu", "v100"};
		for (int k = 0; k < 2; k++) {
			struct hp_prediction p;
			if (hp_estimator_predict(est, cat, &w, devs[k], 2, f,
						 &p, &err))
				continue;
			if (!(p.step_time_lo_s <= p.step_time_s &&
			      p.step_time_s <= p.step_time_hi_s)) {
				fprintf(stderr, "interval [%g, %g] misses %g\n",
					p.step_time_lo_s, p.step_time_hi_s,
					p.step_time_s);
				abort();
			}
		}
	}
	text = hp_estimator_dumps(est);
	if (text) {
		back = hp_estimator_loads(text, strlen(text), &err);
		if (!back) {
			fprintf(stderr, "saved estimator does not reload: %s\n",
				err.msg);
			abort();
		}
		hp_estimator_free(back);
		free(text);
	}
	hp_estimator_free(est);
	return 0;
}
