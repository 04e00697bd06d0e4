/* load.c - open a model file and pick the importer from its content. */
#include <stdlib.h>
#include <string.h>

#include "hetpool/model.h"
#include "util/banned.h"

static bool looks_like_json(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')
			continue;
		return p[i] == '{';
	}
	return false;
}

struct hp_graph *hp_model_load(const char *path, struct hp_error *err)
{
	struct hp_graph *g;
	char *data;
	size_t len;

	if (hp_read_file(path, HP_MODEL_MAX_FILE_BYTES, &data, &len, err))
		return NULL;
	if (looks_like_json(data, len))
		g = hp_spec_parse(data, len, err);
	else
		g = hp_onnx_parse(data, len, err);
	free(data);
	if (g) {
		g->source = hp_strdup(path);
		if (!g->source) {
			hp_graph_free(g);
			hp_error_set(err, HP_ENOMEM, "out of memory");
			return NULL;
		}
	}
	return g;
}
