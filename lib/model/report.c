/* report.c - the analysis as JSON, the shape `hetpool analyze --json` and
 * the service return. */
#include <jansson.h>

#include "hetpool/model.h"
#include "util/banned.h"

/* A JSON string of s; names from a file may not be UTF-8 (protobuf-c does
 * not check), so bytes outside ASCII are replaced rather than dropping the
 * value. */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char buf[512];
	size_t i = 0;

	if (j || !s)
		return j;
	for (; *s && i + 1 < sizeof(buf); s++)
		buf[i++] = (unsigned char)*s < 0x80 ? *s : '?';
	buf[i] = '\0';
	return json_string(buf);
}

static json_t *dims_json(const int64_t *d, int rank)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (int i = 0; i < rank; i++)
		json_array_append_new(a, json_integer(d[i]));
	return a;
}

struct json_t *hp_features_json(const struct hp_graph *g,
				const struct hp_features *f)
{
	json_t *root, *flops, *mem, *kinds, *layers, *skipped, *model;

	root = json_object();
	if (!root)
		return NULL;
	model = json_pack("{s:o, s:o, s:I}", "name", jstr(g->name), "source",
			  jstr(g->source), "opset", (json_int_t)g->opset);
	json_object_set_new(root, "model", model);
	json_object_set_new(root, "batch", json_integer(f->batch));
	json_object_set_new(root, "params", json_integer(f->params));
	json_object_set_new(root, "nontrainable_params",
			    json_integer(f->nontrainable));
	json_object_set_new(root, "macs", json_integer(f->macs_per_sample));
	json_object_set_new(root, "macs_batch",
			    json_integer(f->macs_per_sample * f->batch));
	flops = json_pack(
	    "{s:f, s:f, s:f, s:f, s:f}", "forward", f->flops_fwd, "backward",
	    f->flops_bwd_input + f->flops_bwd_weight, "backward_input",
	    f->flops_bwd_input, "backward_weight", f->flops_bwd_weight, "total",
	    f->flops_fwd + f->flops_bwd_input + f->flops_bwd_weight);
	json_object_set_new(root, "flops", flops);
	mem = json_pack(
	    "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "activations_bytes", (json_int_t)f->activations_bytes,
	    "input_bytes", (json_int_t)f->input_bytes, "weights_bytes",
	    (json_int_t)f->weights_bytes, "gradients_bytes",
	    (json_int_t)f->gradients_bytes, "buffers_bytes",
	    (json_int_t)f->buffers_bytes, "sgd_momentum_bytes",
	    (json_int_t)f->sgd_state_bytes, "adam_bytes",
	    (json_int_t)f->adam_state_bytes, "largest_activation_bytes",
	    (json_int_t)f->peak_act_bytes, "train_sgd_bytes",
	    (json_int_t)hp_features_train_bytes(f, false), "train_adam_bytes",
	    (json_int_t)hp_features_train_bytes(f, true));
	json_object_set_new(root, "memory", mem);
	kinds = json_object();
	for (int k = 0; k < HP_KIND__COUNT; k++)
		if (f->kind_count[k] && k != HP_KIND_CONSTANT)
			json_object_set_new(kinds, hp_kind_name(k),
					    json_integer(f->kind_count[k]));
	json_object_set_new(root, "layers", kinds);
	json_object_set_new(
	    root, "structure",
	    json_pack("{s:i, s:i, s:I, s:I, s:I}", "conv_layers",
		      f->conv_layers, "fc_layers", f->fc_layers, "max_filters",
		      (json_int_t)f->max_filters, "max_fc_width",
		      (json_int_t)f->max_fc_width, "input_size",
		      (json_int_t)f->input_hw));
	layers = json_array();
	for (int i = 0; i < f->nlayers; i++) {
		const struct hp_layer_stats *L = &f->layers[i];
		const struct hp_node *n = &g->nodes[L->node];
		json_t *row;
		if (L->kind == HP_KIND_CONSTANT)
			continue;
		row = json_pack(
		    "{s:o, s:o, s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "name",
		    jstr(n->name), "op", jstr(n->op), "kind",
		    hp_kind_name(L->kind), "params", (json_int_t)L->params,
		    "macs", (json_int_t)(L->macs / f->batch), "flops_forward",
		    L->flops_fwd, "flops_backward_input", L->flops_bwd_input,
		    "flops_backward_weight", L->flops_bwd_weight, "saved_bytes",
		    (json_int_t)L->act_bytes);
		if (row)
			json_object_set_new(
			    row, "output_shape",
			    L->out_rank >= 0
				? dims_json(L->out_dims, L->out_rank)
				: json_null());
		json_array_append_new(layers, row);
	}
	json_object_set_new(root, "per_layer", layers);
	skipped = json_array();
	for (int i = 0; i < f->nskipped; i++)
		json_array_append_new(skipped, jstr(f->skipped[i]));
	json_object_set_new(root, "skipped_ops", skipped);
	return root;
}
