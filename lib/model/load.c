/* load.c - open a model file and pick the importer from its content. */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/banned.h"

/*
 * A spec is JSON text: '{' or '[' after an optional UTF-8 byte order mark
 * and whitespace.  No ONNX file starts so: 0x7b and 0x5b would open
 * protobuf groups and 0xef has an invalid wire type, so an array or a
 * BOM goes to the spec parser, which names what is wrong with it.
 */
static bool looks_like_json(const char *p, size_t n)
{
	size_t i = hp__utf8_bom_len(p, n);

	for (; i < n; i++) {
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')
			continue;
		return p[i] == '{' || p[i] == '[';
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
