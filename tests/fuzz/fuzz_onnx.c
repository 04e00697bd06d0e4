/*
 * fuzz_onnx.c - libFuzzer target for the ONNX importer, shape propagation
 * and feature counting: any bytes must parse or fail cleanly, and a graph
 * that parses must analyse or fail cleanly, at two batch sizes, and
 * convert to the engine's spec or be refused cleanly.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "hetpool/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_graph *g = hp_onnx_parse(data, size, &err);

	if (!g)
		return 0;
	for (int64_t batch = 1; batch <= 3; batch += 2) {
		struct hp_features f;
		if (hp_analyze(g, batch, NULL, 0, &f, &err) == 0) {
			json_t *j = hp_features_json(g, &f);
			json_decref(j);
			hp_features_release(&f);
		}
	}
	{
		struct hp_spec s;
		int64_t shape[3] = {3, 16, 16};
		if (hp_spec_from_graph(g, NULL, true, &s, &err) == 0)
			hp_spec_release(&s);
		if (hp_spec_from_graph(g, shape, false, &s, &err) == 0)
			hp_spec_release(&s);
	}
	hp_graph_free(g);
	return 0;
}
