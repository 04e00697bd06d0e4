/*
 * fuzz_sweep.c - libFuzzer target for the sweep file (hetpool profile
 * --sweep): any bytes must parse or fail cleanly, and every configuration
 * a sweep generates must be a CNN that analyses (the generator checks its
 * variables up front), lists of sweeps (unions) included.  Inputs naming
 * spec files ("specs", in any part of a list) are skipped:
 * they would read files of this machine.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_sweep s;

	json_t *j = json_loadb((const char *)data, size, 0, NULL), *v;
	bool files = json_is_object(j) && json_object_get(j, "specs");
	size_t i;

	/* a list of sweeps: any part naming spec files */
	for (i = 0; json_is_array(j) && i < json_array_size(j); i++) {
		v = json_array_get(j, i);
		files |= json_is_object(v) && json_object_get(v, "specs");
	}

	json_decref(j);
	if (files)
		return 0;
	if (hp_sweep_parse((const char *)data, size, NULL, &s, &err))
		return 0;
	for (int i = 0; i < s.n && i < 8; i++) {
		struct hp_graph *g = hp_spec_to_graph(&s.configs[i].spec, &err);
		struct hp_features f;
		if (!g) {
			if (err.code == HP_ESHAPE) {
				fprintf(stderr, "%s: no graph: %s\n",
					s.configs[i].id, err.msg);
				abort();
			}
			continue;
		}
		if (hp_analyze(g, s.configs[i].batch, NULL, 0, &f, &err) == 0)
			hp_features_release(&f);
		else if (err.code == HP_ESHAPE) {
			fprintf(stderr, "%s: does not analyse: %s\n",
				s.configs[i].id, err.msg);
			abort();
		}
		hp_graph_free(g);
	}
	hp_sweep_release(&s);
	return 0;
}
