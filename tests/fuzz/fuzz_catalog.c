/*
 * fuzz_catalog.c - libFuzzer target for the device catalog (CSV): any
 * bytes must parse or fail cleanly with a PATH:LINE:COLUMN message; a
 * catalog that parses must resolve each of its own ids and aliases, hold
 * every figure positive (or NaN: not known) with idle power at most board
 * power, give each GPU its memory, peak and bandwidth, and hold no control
 * character in a name.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_parse((const char *)data, size, "fuzz.csv", &err);

	if (!cat) {
		if (err.code != HP_ENOMEM &&
		    strncmp(err.msg, "fuzz.csv:", 9) != 0) {
			fprintf(stderr, "error without a position: %s\n",
				err.msg);
			abort();
		}
		return 0;
	}
	for (int i = 0; i < cat->n; i++) {
		const struct hp_device_type *t = &cat->types[i];
		const double fig[] = {t->fp32_tflops, t->tf32_tflops,
				      t->fp16_tflops, t->mem_gb,
				      t->mem_bw_gbs,  t->tdp_w};
		if (hp_catalog_find(cat, t->name) != t)
			abort();
		for (size_t k = 0; k < sizeof(fig) / sizeof(fig[0]); k++)
			if (!isnan(fig[k]) && !(fig[k] > 0 && fig[k] < 1e6))
				abort();
		if (!isnan(t->idle_w) && !(t->idle_w >= 0))
			abort();
		if (t->idle_w > t->tdp_w)
			abort();
		if (t->kind == HP_DEVICE_GPU &&
		    !(t->mem_gb > 0 && t->fp32_tflops > 0 && t->mem_bw_gbs > 0))
			abort();
		if (hp_str_has_control(t->vendor) ||
		    hp_str_has_control(t->arch) ||
		    hp_str_has_control(t->product))
			abort();
		for (int a = 0; a < t->naliases; a++)
			if (hp_str_has_control(t->aliases[a]))
				abort();
		for (int a = 0; a < t->naliases; a++)
			if (hp_catalog_find(cat, t->aliases[a]) != t)
				abort();
	}
	hp_catalog_free(cat);
	return 0;
}
