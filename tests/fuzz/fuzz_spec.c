/*
 * fuzz_spec.c - libFuzzer target for the hetpool JSON model spec: any
 * bytes must parse or fail cleanly; a spec that parses must build a graph
 * that analyses without error (the spec checks its shapes up front).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hetpool/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g = hp_spec_parse((const char *)data, size, &err);

	if (!g)
		return 0;
	if (hp_analyze(g, 2, NULL, 0, &f, &err) != 0) {
		/* A spec that passed its checks must analyse: a disagreement
		 * between the two is a bug worth a crash report. */
		if (err.code != HP_ESHAPE || !getenv("HP_FUZZ_LENIENT")) {
			fprintf(stderr, "spec parsed but analysis failed: %s\n",
				err.msg);
			abort();
		}
	} else {
		hp_features_release(&f);
	}
	hp_graph_free(g);
	return 0;
}
