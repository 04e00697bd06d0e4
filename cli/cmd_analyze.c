/* cmd_analyze.c - `hetpool analyze`: quantify a model. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hetpool/model.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool analyze MODEL [--batch N] [--input-shape CxHxW] "
    "[--json] [--summary]\n"
    "\n"
    "Quantify a model: trainable parameters, multiply-accumulates, FLOPs "
    "for the\n"
    "forward and backward passes, memory for training, and layer counts "
    "by kind.\n"
    "\n"
    "  MODEL               an ONNX file (.onnx) or a hetpool JSON spec\n"
    "  --batch N           batch size for FLOPs and memory (default 1); "
    "'macs' is\n"
    "                      always per sample\n"
    "  --input-shape DIMS  the model input's dimensions without the "
    "batch,\n"
    "                      e.g. 3x299x299 (default: from the model)\n"
    "  --json              print JSON (params, macs, flops, memory, "
    "layers,\n"
    "                      per_layer, skipped_ops) for scripts\n"
    "  --summary           the totals only, without the per-layer table\n"
    "\n"
    "examples:\n"
    "  hetpool analyze resnet50.onnx --batch 32\n"
    "  hetpool analyze cnn.json --json | jq .flops\n";

static void print_shape(const struct hp_layer_stats *L, char *buf, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	if (L->out_rank < 0) {
		snprintf(buf, n, "?");
		return;
	}
	for (int i = 0; i < L->out_rank && off < n; i++)
		off +=
		    (size_t)snprintf(buf + off, n - off, "%s%lld", i ? "x" : "",
				     (long long)L->out_dims[i]);
}

/* The model's, its layers' and its ops' names come from the file: they
 * are escaped before they reach the terminal. */
static void print_table(const struct hp_graph *g, const struct hp_features *f,
			bool summary)
{
	char a[32], b[32], c[32], d[32], e1[1024], e2[1024];

	printf("model        %s (%s)\n", cli_esc(g->name, e1, sizeof(e1)),
	       cli_esc(g->source ? g->source : "", e2, sizeof(e2)));
	printf("batch        %lld\n", (long long)f->batch);
	printf("params       %lld (%s)\n", (long long)f->params,
	       cli_si((double)f->params, a, sizeof(a)));
	if (f->nontrainable)
		printf("buffers      %lld non-trainable (running statistics)\n",
		       (long long)f->nontrainable);
	printf("macs         %lld per sample (%sMAC)\n",
	       (long long)f->macs_per_sample,
	       cli_si((double)f->macs_per_sample, a, sizeof(a)));
	printf("flops        forward %sFLOP, backward %sFLOP "
	       "(input %sFLOP, weight %sFLOP)\n",
	       cli_si(f->flops_fwd, a, sizeof(a)),
	       cli_si(f->flops_bwd_input + f->flops_bwd_weight, b, sizeof(b)),
	       cli_si(f->flops_bwd_input, c, sizeof(c)),
	       cli_si(f->flops_bwd_weight, d, sizeof(d)));
	printf("memory       activations %s, weights %s, gradients %s\n",
	       cli_bytes(f->activations_bytes, a, sizeof(a)),
	       cli_bytes(f->weights_bytes, b, sizeof(b)),
	       cli_bytes(f->gradients_bytes, c, sizeof(c)));
	printf("training     %s with SGD+momentum, %s with Adam\n",
	       cli_bytes(hp_features_train_bytes(f, false), a, sizeof(a)),
	       cli_bytes(hp_features_train_bytes(f, true), b, sizeof(b)));
	printf("layers      ");
	for (int k = 0; k < HP_KIND__COUNT; k++)
		if (f->kind_count[k] && k != HP_KIND_CONSTANT)
			printf(" %s=%d", hp_kind_name(k), f->kind_count[k]);
	printf("\n");
	if (f->nskipped) {
		printf("skipped     ");
		for (int i = 0; i < f->nskipped; i++)
			printf(" %s%s", cli_esc(f->skipped[i], e1, sizeof(e1)),
			       i + 1 < f->nskipped ? "," : "");
		printf("\n");
	}
	if (summary)
		return;
	printf("\n%-32s %-20s %-17s %-18s %12s %12s %12s\n", "layer", "op",
	       "kind", "output", "params", "macs/sample", "fwd flops");
	for (int i = 0; i < f->nlayers; i++) {
		const struct hp_layer_stats *L = &f->layers[i];
		const struct hp_node *n = &g->nodes[L->node];
		char shape[96];
		if (L->kind == HP_KIND_CONSTANT)
			continue;
		print_shape(L, shape, sizeof(shape));
		printf("%-32.32s %-20.20s %-17s %-18.18s %12lld %12s %12s\n",
		       cli_esc(n->name, e1, sizeof(e1)),
		       cli_esc(n->op, e2, sizeof(e2)), hp_kind_name(L->kind),
		       shape, (long long)L->params,
		       cli_si((double)(L->macs / f->batch), a, sizeof(a)),
		       cli_si(L->flops_fwd, b, sizeof(b)));
	}
}

struct analyze_args {
	int64_t batch;
	struct cli_dims shape;
	bool json, summary;
};

static const struct cli_opt analyze_opts[] = {
    CLI_OPT_INT("batch", struct analyze_args, batch, 1, 1 << 24),
    CLI_OPT_DIMS("input-shape", struct analyze_args, shape),
    CLI_OPT_FLAG("json", struct analyze_args, json),
    CLI_OPT_FLAG("summary", struct analyze_args, summary),
    CLI_OPT_END,
};

static int cmd_analyze(int argc, char **argv)
{
	struct analyze_args a = {.batch = 1};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	const char *path;
	int first, rc, status = EXIT_OK;

	if ((rc = cli_parse(&cli_cmd_analyze, argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1)
		return cli_error(EXIT_USAGE,
				 "analyze: give one MODEL file; see "
				 "'hetpool analyze --help'");
	path = argv[first];
	if (!(g = cli_load_graph("analyze", path, &status)))
		return status;
	rc = hp_analyze(g, a.batch, a.shape.rank ? a.shape.d : NULL,
			a.shape.rank, &f, &err);
	if (rc) {
		hp_graph_free(g);
		return cli_error(cli_status_for(rc), "analyze: model '%s': %s",
				 path, err.msg);
	}
	if (a.json) {
		json_t *j = hp_features_json(g, &f);
		if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) != 0) {
			json_decref(j);
			hp_features_release(&f);
			hp_graph_free(g);
			return cli_error(EXIT_FAIL,
					 "analyze: cannot write JSON");
		}
		fputc('\n', stdout);
		json_decref(j);
	} else {
		print_table(g, &f, a.summary);
	}
	hp_features_release(&f);
	hp_graph_free(g);
	return EXIT_OK;
}

const struct cli_cmd cli_cmd_analyze = {
    .name = "analyze",
    .run = cmd_analyze,
    .help = help,
    .opts = analyze_opts,
};
